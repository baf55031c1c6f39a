//===- MainLoop.h - the main loop of a tiled GEMM kernel -------*- C++ -*-===//
//
// The variation point of the tiled kernels: what differs between the tiers
// (and GPU generations) is the main loop, as in CUTLASS, where
// gemm/threadblock/mma_pipelined.h and mma_multistage.h (over the warp-level
// MmaSimt, MmaTensorOpWmma, MmaTensorOp) share the iterators before them
// and the epilogue after them. Here:
//
// A main loop owns
//   - its accumulators: their representation (WMMA: f32 !gpu.mma_matrix
//     fragments per warp; SIMT: f32 scalars per thread) and their zeros;
//   - the math of one K step on one buffer's shared A and B tiles;
//   - the K loop around it: how tiles reach shared memory from one step to
//     the next. The default (emitKLoop) is the two-buffer pipeline whose
//     next step's runs wait in registers during the math (CUTLASS's
//     MmaPipelined), which both tiers use today; a loop that copies global
//     to shared memory asynchronously (cp.async, TMA) overrides it;
//   - the hand-over to the epilogue: the accumulators staged in shared
//     memory as f32 (Epilogue::stagingView), read back by
//     Epilogue::storeStaged, with the barriers that needs;
//   - the kernel function's attributes it needs (occupancy hints).
// Shared by every main loop: the block tiling and its heuristic (Tiling.h,
// a tier's candidates there), the operand gathers and the shared-memory
// layout (Staging.h), the epilogue (Epilogue.h), and the kernel's frame
// (Kernel.cpp: grid coordinates, shared memory, views, the order of it all).
//
// Today's loops: WmmaMainLoop.cpp (tier tc-sm70, WMMA), Sm80MainLoop.cpp
// (tier tc-sm80: ldmatrix + mma.sync with a cp.async multistage K loop),
// Sm90MainLoop.cpp (tier tc-sm90: wgmma on 128-byte swizzled stages, the
// same cp.async K loop) and SimtMainLoop.cpp (tier simt). A new one is a
// class of its own file beside them, a GemmTier, its tile candidates in
// Tiling.cpp and a case in makeMainLoop; see docs/architecture.md.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_MAINLOOP_H
#define TESSEL_CODEGEN_GEMM_MAINLOOP_H

#include "gemm/KernelIr.h"
#include "gemm/Staging.h"

#include "llvm/Support/ErrorHandling.h"

#include <memory>

namespace tessel::codegen::gemm {

class Epilogue;

class MainLoop : protected KernelIr {
public:
  MainLoop(mlir::OpBuilder &b, const GemmKernel &kernel, BlockCoords &block,
           const SharedPlan &plan)
      : KernelIr(b, kernel, block), plan(plan) {}
  virtual ~MainLoop() = default;

  /// Attributes of the kernel function the loop needs (occupancy hints);
  /// none by default.
  virtual void decorate(mlir::gpu::GPUFuncOp func) {}
  /// The accumulators before the first K step (zeros), in the loop's own
  /// representation.
  virtual llvm::SmallVector<mlir::Value> initAccumulators() = 0;
  /// The block's K loop (its split's K range), from `init` to the
  /// accumulators after the last step, the builder after the loop; every
  /// thread's reads of the shared tiles are over when it returns. Default:
  /// the two-buffer, register-prefetched pipeline, calling computeStep.
  virtual llvm::SmallVector<mlir::Value> emitKLoop(OperandGather &gather, mlir::ValueRange init);
  /// One K step's math: `accs` plus the product of `tiles`' A and B
  /// (blockK deep), as the loop's accumulators.
  virtual llvm::SmallVector<mlir::Value> computeStep(const TileViews &tiles,
                                                     mlir::ValueRange accs) = 0;
  /// The final accumulators to the epilogue: staged as f32 in
  /// epilogue.stagingView() (one band of rows at a time where the tile's
  /// staging does not fit at once) and stored by epilogue.storeStaged.
  virtual void toEpilogue(mlir::ValueRange accs, Epilogue &epilogue) = 0;
  /// A persistent kernel's tiles (TileConfig::persistent, tc-sm90 only):
  /// `count` tiles in turn, each its K loop and epilogue; `place(i)` sets
  /// the block's coordinates and the gather up for tile i (also inside a
  /// step, for the next tile's copies: the loop restores the current one's
  /// after).
  virtual void emitTiles(OperandGather &gather, Epilogue &epilogue, mlir::Value count,
                         llvm::function_ref<void(mlir::Value)> place) {
    llvm_unreachable("a persistent kernel on a tier without one");
  }

protected:
  /// The Tensor Core tiers' hand-over: one band of fragment rows at a time
  /// (the whole tile's f32 would not fit beside nothing else). Band i holds
  /// fragment row i of every warp, which `storeBand(i)` stages at rows
  /// warpM * fragM + r; then a barrier, Epilogue::storeStaged, and a barrier
  /// before the next band's stores.
  void toEpilogueByBands(Epilogue &epilogue, llvm::function_ref<void(int64_t band)> storeBand);
  /// A barrier of the math threads: the block's (gpu.barrier), or with a
  /// producer warpgroup beside them, named barrier mathBarrier of
  /// mathThreads().
  void syncMath();
  int64_t mathBarrier = 1;

  // The cp.async pipelines' groups (tc-sm80, tc-sm90).
  /// Closes the thread's copies issued since the last group into a group.
  mlir::Value commitCopies();
  /// Waits until at most `pending` of the thread's groups are in flight.
  void waitCopies(mlir::Value token, int64_t pending);

  const SharedPlan &plan;
};

/// The main loop of `kernel`'s tier.
std::unique_ptr<MainLoop> makeMainLoop(mlir::OpBuilder &b, const GemmKernel &kernel,
                                       BlockCoords &block, const SharedPlan &plan);
/// tc: WMMA fragments per warp (gpu.subgroup_mma_*), sm_70 and later.
std::unique_ptr<MainLoop> makeWmmaMainLoop(mlir::OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan);
/// tc-sm80: mma.sync fragments loaded by ldmatrix, a cp.async multistage
/// K loop (sm_80 and later).
std::unique_ptr<MainLoop> makeSm80MainLoop(mlir::OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan);
/// tc-sm90: wgmma per warpgroup on 128-byte swizzled stages that cp.async
/// fills (sm_90a).
std::unique_ptr<MainLoop> makeSm90MainLoop(mlir::OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan);
/// simt: a register micro-tile of f32 FMAs per thread.
std::unique_ptr<MainLoop> makeSimtMainLoop(mlir::OpBuilder &b, const GemmKernel &kernel,
                                           BlockCoords &block, const SharedPlan &plan);

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_MAINLOOP_H
