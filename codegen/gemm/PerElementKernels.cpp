//===- PerElementKernels.cpp - kernels of one thread per output element ---===//
//
// The kernels without tiles or a main loop, each followed by the shared
// epilogue: the direct convs (grouped convs with fewer than 8 filters per
// group, which a tile of the GEMM would mostly waste): the depthwise kernel
// (a run of outputs along W of several channels a thread) and a thread per
// output element for the rest; and split-K's reduction, which sums the
// workspace's partial sums in split order.
//
//===----------------------------------------------------------------------===//
#include "gemm/PerElementKernels.h"

#include "gemm/Epilogue.h"

#include "gemm/Common.h"
#include "gemm/Staging.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

class PerElementKernel : public KernelIr {
public:
  PerElementKernel(OpBuilder &b, const GemmKernel &kernel, BlockCoords &coords)
      : KernelIr(b, kernel, coords), epilogue(b, kernel, coords) {}

  LogicalResult buildDirect(gpu::GPUModuleOp module);
  LogicalResult buildDepthwise(gpu::GPUModuleOp module);
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

/// The depthwise kernel (TileConfig::dwLanes): a block stages its slab's
/// filters in shared memory as f32, [tap][slab channel] (the OHWI weight is
/// [channel][tap], so a thread's lanes would otherwise be taps apart), then
/// each thread sums dwWidth outputs along W of dwLanes channels. Each input
/// column of a window row is loaded once, as one vector of the lanes (zeros
/// in the padding), for every output that reads it; the sums run in (kh, kw)
/// order, as the CPU tier's. Consecutive threads take consecutive channel
/// groups, so a warp's loads and stores are contiguous runs of channels.
LogicalResult PerElementKernel::buildDepthwise(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  const ConvShape &cv = p.conv;
  const int64_t lanes = t.dwLanes, width = t.dwWidth, taps = cv.kH * cv.kW;
  const int64_t slabChannels = t.dwVectors * lanes, slabs = cv.outC / slabChannels;
  const int64_t runsPerRow = ceilDiv(cv.outW, width);
  const int64_t runs = t.depthwiseRuns(cv);

  atModuleEnd(module);
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto filtersType =
      MemRefType::get({taps * slabChannels}, b.getF32Type(), AffineMap(), workgroup);
  std::string filtersName = kernel.name + "_filters";
  b.create<memref::GlobalOp>(loc, filtersName, b.getStringAttr("private"), filtersType,
                             Attribute(), /*constant=*/false, b.getI64IntegerAttr(kSharedAlignment));

  SmallVector<llvm::StringRef> params = kernel.parameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.name, params, t.threads());
  Type runType = VectorType::get({lanes}, elemType(p.a));
  Value aRuns = view(func.getArgument(0), 0, {operandElements(p, "a") / lanes}, runType);
  Value bElems = elementView(func, params, "b", p.b);
  epilogue.declareViews(func, params);
  Value filters = b.create<memref::GetGlobalOp>(loc, filtersType, filtersName);

  block.tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  block.z = c(0); // the runs cross groups: n is the channel
  Value blockId = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value slab = rem(blockId, slabs), runBlock = div(blockId, slabs);
  // The slab's filters, read along the weight's [channel][tap] rows.
  Value first = mul(slab, slabChannels * taps);
  b.create<scf::ForOp>(loc, block.tid, c(taps * slabChannels), c(t.threads()), ValueRange{},
                       [&](OpBuilder &, Location, Value e, ValueRange) {
                         Value w = toF32(b.create<memref::LoadOp>(loc, bElems, add(first, e)));
                         Value at = add(mul(rem(e, taps), slabChannels), div(e, taps));
                         b.create<memref::StoreOp>(loc, w, filters, at);
                         b.create<scf::YieldOp>(loc);
                       });
  b.create<gpu::BarrierOp>(loc);

  Value vector = rem(block.tid, t.dwVectors);
  Value run = add(mul(runBlock, t.dwRows), div(block.tid, t.dwVectors));
  auto inside = b.create<scf::IfOp>(loc, below(run, runs), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value slabChannel = mul(vector, lanes);
  Value channel = add(mul(slab, slabChannels), slabChannel);
  Value image = div(run, cv.outH * runsPerRow), rowRun = rem(run, cv.outH * runsPerRow);
  Value oh = div(rowRun, runsPerRow), ow0 = mul(rem(rowRun, runsPerRow), width);
  Value ihBase = sub(mul(oh, cv.strideH), cv.padH);
  Value iwBase = sub(mul(ow0, cv.strideW), cv.padW);
  using P = arith::CmpIPredicate;
  auto within = [&](Value i, int64_t extent) {
    return both(cmp(P::sge, i, 0), cmp(P::slt, i, extent));
  };
  Value zeros = b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(runType)));
  const int64_t span = (width - 1) * cv.strideW + (cv.kW - 1) * cv.dilW + 1;
  // A loop over the window's rows (the sums carried), the columns unrolled:
  // a row's loads and filters are all a thread holds besides its sums.
  SmallVector<Value> init(width * lanes, f(0.0f));
  auto rows = b.create<scf::ForOp>(loc, c(0), c(cv.kH), c(1), init);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(rows.getBody());
    Value kh = rows.getInductionVar();
    SmallVector<Value> sums(rows.getRegionIterArgs());
    Value ih = add(ihBase, mul(kh, cv.dilH));
    Value rowIn = within(ih, cv.inH);
    Value rowBase = mul(add(mul(image, cv.inH), ih), cv.inW);
    Value rowFilters = add(mul(kh, cv.kW * slabChannels), slabChannel);
    SmallVector<SmallVector<Value>> tapFilters(cv.kW); // loaded when first used
    for (int64_t j = 0; j < span; ++j) {
      // The outputs reading input column j of the run: j = o * sW + kw * dW.
      SmallVector<std::pair<int64_t, int64_t>> readers;
      for (int64_t o = 0; o < width; ++o)
        for (int64_t kw = 0; kw < cv.kW; ++kw)
          if (o * cv.strideW + kw * cv.dilW == j)
            readers.push_back({o, kw});
      if (readers.empty())
        continue;
      Value iw = add(iwBase, j);
      auto load = b.create<scf::IfOp>(loc, TypeRange{runType}, both(rowIn, within(iw, cv.inW)),
                                      true);
      {
        OpBuilder::InsertionGuard branch(b);
        b.setInsertionPointToStart(&load.getThenRegion().front());
        Value at = add(mul(add(rowBase, iw), cv.inC / lanes), div(channel, lanes));
        b.create<scf::YieldOp>(loc, b.create<memref::LoadOp>(loc, aRuns, at).getResult());
        b.setInsertionPointToStart(&load.getElseRegion().front());
        b.create<scf::YieldOp>(loc, zeros); // padding
      }
      SmallVector<Value> x;
      for (int64_t l = 0; l < lanes; ++l)
        x.push_back(toF32(b.create<vector::ExtractOp>(loc, load.getResult(0), l)));
      for (auto [o, kw] : readers) {
        SmallVector<Value> &w = tapFilters[kw];
        if (w.empty()) {
          Value at = add(rowFilters, kw * slabChannels);
          for (int64_t l = 0; l < lanes; ++l)
            w.push_back(b.create<memref::LoadOp>(loc, filters, add(at, l)));
        }
        for (int64_t l = 0; l < lanes; ++l)
          sums[o * lanes + l] = fma(x[l], w[l], sums[o * lanes + l]);
      }
    }
    b.create<scf::YieldOp>(loc, sums);
  }
  for (int64_t o = 0; o < width; ++o) {
    Value ow = add(ow0, o);
    Value m = add(mul(add(mul(image, cv.outH), oh), cv.outW), ow);
    // The row's last run may be ragged.
    Value valid = cv.outW % width != 0 ? below(ow, cv.outW) : Value();
    if (lanes == 1)
      epilogue.storeElement(m, channel, rows.getResult(o), valid);
    else
      epilogue.storeRun(m, channel, SmallVector<Value>(rows.getResults().slice(o * lanes, lanes)),
                        valid);
  }
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
  PerElementKernel emitter(b, kernel, coords);
  return kernel.tiles.dwLanes ? emitter.buildDepthwise(module) : emitter.buildDirect(module);
}

LogicalResult buildSplitKReduceKernel(OpBuilder &b, gpu::GPUModuleOp module,
                                      const GemmKernel &kernel) {
  BlockCoords coords;
  return PerElementKernel(b, kernel, coords).buildReduce(module);
}

} // namespace tessel::codegen::gemm
