//===- MainLoop.cpp - the default K loop, and the main loop of each tier --===//
//
// The K loop every main loop without a pipeline of its own runs: two shared
// buffers, the next step's runs loaded into registers while the current
// step's math runs on the other buffer (CUTLASS's MmaPipelined); and
// makeMainLoop, which picks a tier's main loop.
//
//===----------------------------------------------------------------------===//
#include "gemm/MainLoop.h"

#include "gemm/Epilogue.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tessel::codegen::gemm {

/// Prologue: step 0 into buffer 0, barrier. Step i then reads buffer i % 2,
/// with the loads of step i + 1 in flight during its math, stores them into
/// buffer (i + 1) % 2 and ends with the step's one barrier.
SmallVector<Value> MainLoop::emitKLoop(OperandGather &gather, ValueRange init) {
  // The block's K range: [kBase, kBase + kEnd), steps past K loading zeros.
  const int64_t kEnd = t.stepsPerSplit(p.k) * t.blockK;
  Value kBase = mul(block.split, kEnd);
  // The prologue: K step 0 into buffer 0.
  {
    TileViews first = gather.tileViews(c(0));
    gather.fill(kBase, first);
    b.create<gpu::BarrierOp>(loc);
  }
  auto kLoop = b.create<scf::ForOp>(
      loc, c(0), c(kEnd), c(t.blockK), init,
      [&](OpBuilder &, Location, Value k0, ValueRange accs) {
        // Step i reads buffer i % 2 and fills buffer (i + 1) % 2.
        Value current = mul(rem(div(k0, t.blockK), 2), plan.bufferBytes);
        TileViews tiles = gather.tileViews(current);
        // The next step's loads, issued before the math so that their
        // latency overlaps it; none after the last step.
        bool pipelined = kEnd > t.blockK;
        Value hasNext;
        SmallVector<Value> prefetched;
        if (pipelined) {
          hasNext = below(k0, kEnd - t.blockK);
          SmallVector<Type> types = gather.runTypes();
          auto prefetch = b.create<scf::IfOp>(loc, types, hasNext, /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&prefetch.getThenRegion().front());
          Value k1 = add(add(kBase, k0), t.blockK);
          b.create<scf::YieldOp>(loc, gather.load(k1));
          b.setInsertionPointToStart(&prefetch.getElseRegion().front());
          SmallVector<Value> zeros;
          for (Type type : types)
            zeros.push_back(
                b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(type))));
          b.create<scf::YieldOp>(loc, zeros);
          prefetched.assign(prefetch.getResults().begin(), prefetch.getResults().end());
        }
        SmallVector<Value> next = computeStep(tiles, accs);
        if (pipelined) {
          // No warp reads buffer (i + 1) % 2 in step i: the barrier that
          // ended step i - 1 saw every warp done with it.
          auto store = b.create<scf::IfOp>(loc, hasNext, /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&store.getThenRegion().front());
          TileViews following = gather.tileViews(b.createOrFold<arith::SubIOp>(
              loc, c(plan.bufferBytes), current));
          gather.store(prefetched, following);
        }
        // One barrier per step: buffer (i + 1) % 2 is complete before step
        // i + 1 reads it, and every warp is done with buffer i % 2 before
        // step i + 1 refills it (or, after the last step, the epilogue's
        // staging overwrites it).
        b.create<gpu::BarrierOp>(loc);
        b.create<scf::YieldOp>(loc, next);
      });
  b.setInsertionPointAfter(kLoop);
  return SmallVector<Value>(kLoop.getResults());
}

void MainLoop::toEpilogueByBands(Epilogue &epilogue,
                                 llvm::function_ref<void(int64_t band)> storeBand) {
  // Staging row warpM * fragM + r is tile row warpM * fragsM * fragM + i *
  // fragM + r.
  for (int64_t i = 0; i < t.fragsM; ++i) {
    storeBand(i);
    syncMath();
    epilogue.storeStaged(t.warpsM * t.fragM, [&](Value row) {
      return add(mul(div(row, t.fragM), t.fragsM * t.fragM), add(rem(row, t.fragM), i * t.fragM));
    });
    // The next band's stores wait until every thread has read this one.
    if (i + 1 < t.fragsM)
      syncMath();
  }
}

void MainLoop::syncMath() {
  if (!t.warpSpecialized) {
    b.create<gpu::BarrierOp>(loc);
    return;
  }
  b.create<LLVM::InlineAsmOp>(loc, TypeRange{}, ValueRange{},
                              "bar.sync " + std::to_string(mathBarrier) + ", " +
                                  std::to_string(t.mathThreads()) + ";",
                              "~{memory}", /*has_side_effects=*/true, /*is_align_stack=*/false,
                              LLVM::AsmDialectAttr(), ArrayAttr());
}

Value MainLoop::commitCopies() {
  return b.create<nvgpu::DeviceAsyncCreateGroupOp>(
      loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
}

void MainLoop::waitCopies(Value token, int64_t pending) {
  b.create<nvgpu::DeviceAsyncWaitOp>(loc, token, b.getI32IntegerAttr(int32_t(pending)));
}

std::unique_ptr<MainLoop> makeMainLoop(OpBuilder &b, const GemmKernel &kernel,
                                       BlockCoords &block, const SharedPlan &plan) {
  switch (kernel.tiles.tier) {
  case GemmTier::TensorCore: return makeWmmaMainLoop(b, kernel, block, plan);
  case GemmTier::TensorCoreSm80: return makeSm80MainLoop(b, kernel, block, plan);
  case GemmTier::TensorCoreSm90: return makeSm90MainLoop(b, kernel, block, plan);
  case GemmTier::Simt: return makeSimtMainLoop(b, kernel, block, plan);
  }
  return nullptr;
}

} // namespace tessel::codegen::gemm
