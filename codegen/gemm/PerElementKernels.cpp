//===- PerElementKernels.cpp - kernels of one thread per output element ---===//
//
// The two kernels without tiles or a main loop, each a thread per output
// element followed by the shared epilogue: the direct conv (grouped convs
// with fewer than 8 filters per group, depthwise above all, which a tile of
// the GEMM would mostly waste) and split-K's reduction, which sums the
// workspace's partial sums in split order.
//
//===----------------------------------------------------------------------===//
#include "gemm/PerElementKernels.h"

#include "gemm/Epilogue.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

class PerElementKernel : public KernelIr {
public:
  PerElementKernel(OpBuilder &b, const GemmKernel &kernel, BlockCoords &coords)
      : KernelIr(b, kernel, coords), epilogue(b, kernel, coords) {}

  LogicalResult buildDirect(gpu::GPUModuleOp module);
  LogicalResult buildReduce(gpu::GPUModuleOp module);

private:
  Epilogue epilogue;
};

/// One thread per output element (m, channel), consecutive threads on
/// consecutive channels (contiguous in NHWC): the sum over the group's input
/// channels in the window, in (kh, kw, c) order, then the epilogue.
LogicalResult PerElementKernel::buildDirect(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<llvm::StringRef> params = kernel.parameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.name, params, kElementwiseThreads);
  Value aElems = elementView(func, params, "a", p.a);
  Value bElems = elementView(func, params, "b", p.b);
  epilogue.declareViews(func, params);

  const ConvShape &cv = p.conv;
  const int64_t groupChannels = cv.inC / cv.group;
  block.tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value index = add(mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x), kElementwiseThreads),
                    block.tid);
  auto inside = b.create<scf::IfOp>(loc, below(index, p.m * cv.outC), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value channel = rem(index, cv.outC), m = div(index, cv.outC);
  block.z = div(channel, p.n); // the group
  Value n = rem(channel, p.n);
  Value image = div(m, cv.outH * cv.outW), pixel = rem(m, cv.outH * cv.outW);
  Value ihBase = sub(mul(div(pixel, cv.outW), cv.strideH), cv.padH);
  Value iwBase = sub(mul(rem(pixel, cv.outW), cv.strideW), cv.padW);
  Value inputChannel0 = mul(block.z, groupChannels);
  Value weightRow = mul(channel, cv.kH * cv.kW * groupChannels);
  using P = arith::CmpIPredicate;
  auto loop = [&](int64_t extent, Value acc, function_ref<Value(Value, Value)> body) {
    auto forOp = b.create<scf::ForOp>(loc, c(0), c(extent), c(1), ValueRange{acc},
                                      [&](OpBuilder &, Location, Value i, ValueRange accs) {
                                        b.create<scf::YieldOp>(loc, body(i, accs[0]));
                                      });
    return forOp.getResult(0);
  };
  Value sum = loop(cv.kH, f(0.0f), [&](Value kh, Value acc) {
    Value ih = add(ihBase, mul(kh, cv.dilH));
    return loop(cv.kW, acc, [&](Value kw, Value acc) {
      Value iw = add(iwBase, mul(kw, cv.dilW));
      Value inImage = both(both(cmp(P::sge, ih, 0), cmp(P::slt, ih, cv.inH)),
                           both(cmp(P::sge, iw, 0), cmp(P::slt, iw, cv.inW)));
      auto ifOp = b.create<scf::IfOp>(loc, TypeRange{b.getF32Type()}, inImage, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      b.create<scf::YieldOp>(loc, acc); // padding: zeros add nothing
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value pixelBase = add(mul(add(mul(image, cv.inH), ih), cv.inW), iw);
      Value xBase = add(mul(pixelBase, cv.inC), inputChannel0);
      Value wBase = add(weightRow, mul(add(mul(kh, cv.kW), kw), groupChannels));
      Value windowSum = loop(groupChannels, acc, [&](Value ci, Value acc) {
        Value x = toF32(b.create<memref::LoadOp>(loc, aElems, add(xBase, ci)));
        Value w = toF32(b.create<memref::LoadOp>(loc, bElems, add(wBase, ci)));
        return fma(x, w, acc);
      });
      b.create<scf::YieldOp>(loc, windowSum);
      return ifOp.getResult(0);
    });
  });
  epilogue.storeElement(m, n, sum);
  b.setInsertionPointToEnd(&func.getBody().front());
  b.create<gpu::ReturnOp>(loc);
  return success();
}

/// One thread per output element (consecutive threads, consecutive n): the
/// splits' partial sums added in split order, so the result does not depend
/// on which block finished first, then the epilogue.
LogicalResult PerElementKernel::buildReduce(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<llvm::StringRef> params = kernel.reduceParameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.reduceName(), params, kElementwiseThreads);
  Value workspace = workspaceView(func.getArgument(0));
  epilogue.declareViews(func, params);

  block.tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value index = add(mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x), kElementwiseThreads),
                    block.tid);
  const int64_t plane = p.m * p.n;
  auto inside = b.create<scf::IfOp>(loc, below(index, p.batch * plane), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value n = rem(index, p.n), m = rem(div(index, p.n), p.m);
  block.z = div(index, plane);
  Value first = add(mul(block.z, t.splitK * plane), add(mul(m, p.n), n));
  Value sum = b.create<memref::LoadOp>(loc, workspace, first);
  for (int64_t s = 1; s < t.splitK; ++s)
    sum = fadd(sum, b.create<memref::LoadOp>(loc, workspace, add(first, s * plane)));
  epilogue.storeElement(m, n, sum);
  b.setInsertionPointToEnd(&func.getBody().front());
  b.create<gpu::ReturnOp>(loc);
  return success();
}

} // namespace

LogicalResult buildDirectConvKernel(OpBuilder &b, gpu::GPUModuleOp module,
                                    const GemmKernel &kernel) {
  BlockCoords coords;
  return PerElementKernel(b, kernel, coords).buildDirect(module);
}

LogicalResult buildSplitKReduceKernel(OpBuilder &b, gpu::GPUModuleOp module,
                                      const GemmKernel &kernel) {
  BlockCoords coords;
  return PerElementKernel(b, kernel, coords).buildReduce(module);
}

} // namespace tessel::codegen::gemm
