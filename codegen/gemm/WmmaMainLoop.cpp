//===- WmmaMainLoop.cpp - the tc main loop: WMMA fragments per warp -------===//
//
// Tier tc (sm_70 and later): a warpsM x warpsN grid of warps, each holding
// fragsM x fragsN f32 accumulator fragments (!gpu.mma_matrix, fragM x fragN,
// 16x16 or the skinny 32x8 / 8x32). Per K step and k16, a warp loads its A
// and B fragments from the shared tiles (gpu.subgroup_mma_load_matrix,
// row- or column-major as the tile is staged) and accumulates
// (gpu.subgroup_mma_compute); the two-buffer K loop around it is the
// default's. The accumulators reach the epilogue one band of fragment rows
// at a time (the whole tile's f32 would not fit beside nothing else).
//
//===----------------------------------------------------------------------===//
#include "gemm/Epilogue.h"
#include "gemm/MainLoop.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <algorithm>

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

/// Warps per SM the Tensor Core kernels ask room for (decorate).
constexpr int64_t kWarpsPerSM = 16;

class WmmaMainLoop final : public MainLoop {
public:
  using MainLoop::MainLoop;

  void decorate(gpu::GPUFuncOp func) override;
  SmallVector<Value> initAccumulators() override;
  SmallVector<Value> computeStep(const TileViews &tiles, ValueRange accs) override;
  void toEpilogue(ValueRange accs, Epilogue &epilogue) override;
};

void WmmaMainLoop::decorate(gpu::GPUFuncOp func) {
  // Tensor Core kernels with at most 64 accumulator registers a thread ask
  // for 16 warps per SM (.minnctapersm: two blocks of 256 threads, four of
  // 128), so ptxas keeps them within 128 registers. Without it the
  // relocatable compile of nvJitLink gave the 128x128 tiles of 8 warps
  // 152-153 registers (whole-program ptxas: 125), one block per SM, and the
  // H100 profile found them latency-bound: tensor pipe 26-30% busy, issue
  // slots 20% (bench/NOTES.md, 2026-11-23). 64x64 warp tiles (128
  // accumulator registers, ~240 in all) would only spill under that cap.
  if (t.fragsM * t.fragsN <= 8)
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(int32_t(std::max<int64_t>(1, kWarpsPerSM * kWarpSize /
                                                                      t.threads()))));
}

SmallVector<Value> WmmaMainLoop::initAccumulators() {
  auto cFrag = gpu::MMAMatrixType::get({t.fragM, t.fragN}, b.getF32Type(), "COp");
  Value zero = b.create<gpu::SubgroupMmaConstantMatrixOp>(loc, cFrag, f(0.0f));
  return SmallVector<Value>(t.fragsM * t.fragsN, zero);
}

SmallVector<Value> WmmaMainLoop::computeStep(const TileViews &tiles, ValueRange accs) {
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  auto aFrag = gpu::MMAMatrixType::get({t.fragM, t.fragK}, f16, "AOp");
  auto bFrag = gpu::MMAMatrixType::get({t.fragK, t.fragN}, f16, "BOp");
  auto cFrag = gpu::MMAMatrixType::get({t.fragM, t.fragN}, f32, "COp");
  Value warp = div(block.tid, kWarpSize);
  Value warpRow = mul(div(warp, t.warpsN), t.fragsM * t.fragM);
  Value warpCol = mul(rem(warp, t.warpsN), t.fragsN * t.fragN);
  // A is row-major in a k-contiguous tile, column-major otherwise; B the
  // other way round.
  UnitAttr aTransposed = plan.a.sharedKContiguous ? UnitAttr() : b.getUnitAttr();
  UnitAttr bTransposed = plan.b.sharedKContiguous ? b.getUnitAttr() : UnitAttr();
  SmallVector<Value> next(accs.begin(), accs.end());
  for (int64_t ks = 0; ks < t.blockK; ks += t.fragK) {
    SmallVector<Value> as, bs;
    for (int64_t i = 0; i < t.fragsM; ++i) {
      Value r = add(warpRow, i * t.fragM);
      SmallVector<Value> at = plan.a.sharedKContiguous ? SmallVector<Value>{r, c(ks)}
                                                       : SmallVector<Value>{c(ks), r};
      as.push_back(b.create<gpu::SubgroupMmaLoadMatrixOp>(
          loc, aFrag, tiles.a, at, b.getIndexAttr(plan.a.ld), aTransposed));
    }
    for (int64_t j = 0; j < t.fragsN; ++j) {
      Value col = add(warpCol, j * t.fragN);
      SmallVector<Value> at = plan.b.sharedKContiguous ? SmallVector<Value>{col, c(ks)}
                                                       : SmallVector<Value>{c(ks), col};
      bs.push_back(b.create<gpu::SubgroupMmaLoadMatrixOp>(
          loc, bFrag, tiles.b, at, b.getIndexAttr(plan.b.ld), bTransposed));
    }
    for (int64_t i = 0; i < t.fragsM; ++i)
      for (int64_t j = 0; j < t.fragsN; ++j)
        next[i * t.fragsN + j] = b.create<gpu::SubgroupMmaComputeOp>(
            loc, cFrag, as[i], bs[j], next[i * t.fragsN + j], aTransposed, bTransposed);
  }
  return next;
}

void WmmaMainLoop::toEpilogue(ValueRange accs, Epilogue &epilogue) {
  Value warp = div(block.tid, kWarpSize);
  Value warpM = div(warp, t.warpsN);
  Value warpCol = mul(rem(warp, t.warpsN), t.fragsN * t.fragN);
  toEpilogueByBands(epilogue, [&](int64_t i) {
    for (int64_t j = 0; j < t.fragsN; ++j)
      b.create<gpu::SubgroupMmaStoreMatrixOp>(
          loc, accs[i * t.fragsN + j], epilogue.stagingView(),
          ValueRange{mul(warpM, t.fragM), add(warpCol, j * t.fragN)},
          b.getIndexAttr(stagingLd(t)), UnitAttr());
  });
}

} // namespace

std::unique_ptr<MainLoop> makeWmmaMainLoop(OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan) {
  return std::make_unique<WmmaMainLoop>(b, kernel, block, plan);
}

} // namespace tessel::codegen::gemm
