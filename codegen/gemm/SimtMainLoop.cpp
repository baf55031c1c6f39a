//===- SimtMainLoop.cpp - the simt main loop: FMAs on CUDA cores ----------===//
//
// Tier simt (f16 or f32 operands, sm_60 and later): a threadsM x threadsN
// grid of threads, thread (tm, tn) holding the f32 sums of rows
// tm + i * threadsM and columns tn + j * threadsN (i < microM, j < microN)
// in registers. Per K step, for each k of the buffer, it reads its microM A
// and microN B elements from the shared tiles and does microM x microN
// scalar FMAs (one rounding each, as fma.rn.f32); the two-buffer K loop
// around it is the default's. The whole tile's sums are staged for the
// epilogue at once.
//
//===----------------------------------------------------------------------===//
#include "gemm/Epilogue.h"
#include "gemm/MainLoop.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tessel::codegen::gemm {

namespace {

class SimtMainLoop final : public MainLoop {
public:
  using MainLoop::MainLoop;

  SmallVector<Value> initAccumulators() override;
  SmallVector<Value> computeStep(const TileViews &tiles, ValueRange accs) override;
  void toEpilogue(ValueRange accs, Epilogue &epilogue) override;
};

SmallVector<Value> SimtMainLoop::initAccumulators() {
  return SmallVector<Value>(t.microM * t.microN, f(0.0f));
}

SmallVector<Value> SimtMainLoop::computeStep(const TileViews &tiles, ValueRange accs) {
  Value tm = div(block.tid, t.threadsN), tn = rem(block.tid, t.threadsN);
  auto loop = b.create<scf::ForOp>(
      loc, c(0), c(t.blockK), c(1), accs,
      [&](OpBuilder &, Location, Value kk, ValueRange sums) {
        auto element = [&](const Staging &s, Value tile, Value row) {
          SmallVector<Value> at = s.sharedKContiguous ? SmallVector<Value>{row, kk}
                                                      : SmallVector<Value>{kk, row};
          return toF32(b.create<memref::LoadOp>(loc, tile, at));
        };
        SmallVector<Value> as, bs, next;
        for (int64_t i = 0; i < t.microM; ++i)
          as.push_back(element(plan.a, tiles.a, add(tm, i * t.threadsM)));
        for (int64_t j = 0; j < t.microN; ++j)
          bs.push_back(element(plan.b, tiles.b, add(tn, j * t.threadsN)));
        for (int64_t i = 0; i < t.microM; ++i)
          for (int64_t j = 0; j < t.microN; ++j)
            next.push_back(fma(as[i], bs[j], sums[i * t.microN + j]));
        b.create<scf::YieldOp>(loc, next);
      });
  return SmallVector<Value>(loop.getResults());
}

void SimtMainLoop::toEpilogue(ValueRange accs, Epilogue &epilogue) {
  Value tm = div(block.tid, t.threadsN), tn = rem(block.tid, t.threadsN);
  for (int64_t i = 0; i < t.microM; ++i)
    for (int64_t j = 0; j < t.microN; ++j)
      b.create<memref::StoreOp>(loc, accs[i * t.microN + j], epilogue.stagingView(),
                                ValueRange{add(tm, i * t.threadsM), add(tn, j * t.threadsN)});
  b.create<gpu::BarrierOp>(loc);
  epilogue.storeStaged(t.blockM, [](Value row) { return row; });
}

} // namespace

std::unique_ptr<MainLoop> makeSimtMainLoop(OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan) {
  return std::make_unique<SimtMainLoop>(b, kernel, block, plan);
}

} // namespace tessel::codegen::gemm
