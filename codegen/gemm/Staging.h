//===- Staging.h - operand tiles in shared memory, and their gathers -*- C++ -*-===//
//
// Operand staging, as CUTLASS's transform/threadblock iterators are: how each
// operand's tile (A: blockM rows, B: blockN rows, both blockK deep) is laid
// out in shared memory (Staging, SharedPlan: plain data the tiling heuristic
// weighs too), and the gathers that fill it (OperandGather: IR), on the
// operands as the op has them: im2col on NHWC for a conv's input, strided
// rows for weights, gemm and matmul operands with their transposes and batch
// strides. A run of 16 bytes along the operand's contiguous dimension (on
// the cp.async tiers 8 or 4 where 16 do not divide it) moves as one load and
// one store where it is wholly in or out of range.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_STAGING_H
#define TESSEL_CODEGEN_GEMM_STAGING_H

#include "gemm/KernelIr.h"

#include "llvm/ADT/SmallVector.h"

namespace tessel::codegen::gemm {

constexpr int64_t kSharedAlignment = 128;

/// One operand's tile, A (rows = m) or B (rows = n), both blockK deep.
struct Staging {
  ElemType type = ElemType::F16;
  int64_t rows = 0;
  /// In the operand, consecutive k are adjacent (else consecutive rows are).
  bool kContiguous = true;
  /// In shared memory, the tile is [rows][ld] (k contiguous) or [blockK][ld].
  bool sharedKContiguous = true;
  /// Elements per load: a run along the contiguous dimension, 16 bytes (on
  /// the cp.async tiers also 8 or 4) or one element.
  int64_t vector = 1;
  int64_t ld = 0;    ///< shared leading dimension, in elements
  int64_t bytes = 0; ///< shared bytes
  /// tc-sm90 and tc-sm80 at blockK 64: wgmma's 128-byte swizzle (tc-sm90's
  /// tiles 1024-byte aligned; tc-sm80 addresses them itself, through
  /// KernelIr::sharedIndex, on any 16 bytes). K-major (sharedKContiguous):
  /// rows of 64 f16 (128 bytes) unpadded, the 16-byte chunk j of row r
  /// stored at chunk j ^ (r % 8). MN-major (a gemm's A with transA, B
  /// without transB, a matmul's B): atoms of 64 rows (m or n) x 8 k, each k
  /// a 128-byte row whose chunk j is stored at j ^ (k % 8); atom (r / 64,
  /// k / 8) at (r / 64 * blockK / 8 + k / 8) * 1024 bytes.
  bool swizzled = false;
};

/// The alignment of a swizzled tile (one 8-row swizzle atom).
constexpr int64_t kSwizzleAtomBytes = 1024;

/// A's (isA) or B's tile for problem `p` tiled by `t`.
Staging stagingFor(const GemmProblem &p, const TileConfig &t, bool isA);

/// The f32 staging of the accumulators for the epilogue: tc stages one band
/// of fragment rows (warpsM * fragM rows), simt the whole tile.
int64_t stagingRows(const TileConfig &t);
int64_t stagingLd(const TileConfig &t);

/// The block's shared memory: two buffers (tc-sm80, tc-sm90: `stages`), each an A
/// tile and a B tile (the K loop stores step i+1 into one while the warps
/// read step i from the other; tc-sm80 has stages - 1 steps in flight),
/// reused after the loop as the epilogue's f32 staging.
struct SharedPlan {
  Staging a, b;
  int64_t bOffset = 0;     ///< B's tile within a buffer
  int64_t bufferBytes = 0; ///< buffer i starts at i * bufferBytes
  /// Swizzled tiles: the buffers start at the first 1024-byte aligned
  /// address of the shared memory (the kernel finds it), so the plan has
  /// that much slack more.
  int64_t alignSlack = 0;
  /// The epilogue's f32 staging: over the buffers (at 0: the K loop is
  /// over when it is written), or past them in a persistent kernel, whose
  /// next tile's copies land during the epilogue. TileConfig::tmaStore: the
  /// f16 boxes the tensor stores read, from the aligned buffers' start.
  int64_t stagingOffset = 0;
  /// A ping-pong kernel's second math side's staging starts this much
  /// further.
  int64_t stagingStride = 0;
  /// TileConfig::tma: the stages' full mbarriers (8 bytes each), then with
  /// TileConfig::warpSpecialized their empty ones, then with
  /// TileConfig::pingpong the two sides' turns, past the buffers and the
  /// staging.
  int64_t barrierOffset = 0;
  int64_t bytes = 0;
};

SharedPlan sharedPlan(const GemmProblem &p, const TileConfig &t);

/// Runs a thread moves per K step: ceil(runs of the tile / threads).
int64_t gatherSlots(const Staging &s, const TileConfig &t);

/// 32-bit registers that hold a thread's prefetched runs across the math.
int64_t prefetchRegisters(const SharedPlan &plan, const TileConfig &t);

/// One shared buffer's A and B tiles, as elements and, where runs are
/// vectors, as runs.
struct TileViews {
  mlir::Value a, aRuns, b, bRuns;
};

/// The block's threads gathering K steps of A and B into shared tiles: each
/// thread owns gatherSlots() runs of each tile per step, whose rows' address
/// arithmetic is set up once before the K loop (setupSlots), then per step
/// only k moves.
class OperandGather : public KernelIr {
public:
  OperandGather(mlir::OpBuilder &b, const GemmKernel &kernel, BlockCoords &block,
                const SharedPlan &plan)
      : KernelIr(b, kernel, block), plan(plan) {}

  /// The element (and run) views of the kernel's "a" and "b" parameters.
  void declareViews(mlir::gpu::GPUFuncOp func, llvm::ArrayRef<llvm::StringRef> params);
  /// The shared byte buffer the tiles live in.
  void setShared(mlir::Value sharedBytes) { shared = sharedBytes; }
  /// The operands' offsets of batch z (matmul) or group z (conv).
  void setupBatchOffsets();
  /// Each thread's runs of A and B, their rows' setup hoisted out of the K
  /// loop (for the block's tile: BlockCoords).
  void setupSlots();

  /// The tiles of the shared buffer that starts at byte `bufferOffset`.
  TileViews tileViews(mlir::Value bufferOffset);
  /// The shared byte buffer the tiles live in.
  mlir::Value sharedBytes() const { return shared; }
  /// The K step at k0 into `tiles` through registers: A's runs loaded and
  /// stored, then B's (the prologue, which has nothing to overlap).
  void fill(mlir::Value k0, const TileViews &tiles);
  /// The types of a thread's runs of one K step, A's then B's.
  llvm::SmallVector<mlir::Type> runTypes();
  /// The thread's runs of the K step at k0 into registers, A's then B's.
  llvm::SmallVector<mlir::Value> load(mlir::Value k0);
  /// Runs from load() into a buffer's tiles.
  void store(mlir::ValueRange runs, const TileViews &tiles);
  /// The thread's runs of the K step at k0 copied into `tiles` without
  /// registers (cp.async, a run each, zero-filled where out of range),
  /// in flight until a wait for their group (the cp.async tiers; runs laid
  /// along the shared rows).
  void copyAsync(mlir::Value k0, const TileViews &tiles);
  /// A conv's input scale (GemmProblem::aScale) for the thread's A runs of
  /// the K step at k0, loaded into registers ahead of scaleLanded so that
  /// their latency hides behind the math: one run per A slot, or one for
  /// all where every slot reads the same (the block's rows in one image, the
  /// thread's runs at one k). Empty without a scale.
  llvm::SmallVector<mlir::Value> loadScales(mlir::Value k0);
  /// The input scale `scales` (loadScales of k0) on the thread's own A runs
  /// of the K step at k0 that copyAsync put in `tiles`, once they have
  /// landed (after the wait for their group, before the barrier that
  /// publishes them). Nothing without a scale. The register path (fill,
  /// load) scales as it loads.
  void scaleLanded(mlir::Value k0, const TileViews &tiles, mlir::ValueRange scales);

private:
  /// Where a gather slot's row of the operand starts, computed once per
  /// thread before the K loop.
  struct RowState {
    mlir::Value valid;   ///< the row (run of rows) is inside the GEMM
    mlir::Value address; ///< strided: element offset of (row, k = 0)
    // conv im2col: first pixel of the image, window origin (may be negative).
    mlir::Value imageBase, ihBase, iwBase;
    mlir::Value scaleBase; ///< conv A with an input scale: the image's row of it
  };

  /// One run a thread moves per K step: its place in the tile and its row.
  struct GatherSlot {
    mlir::Value active; ///< null when every thread has this slot
    mlir::Value rowLocal, kLocal;
    RowState row;
  };

public:
  /// What setupBatchOffsets and setupSlots set up for one tile: a
  /// persistent kernel sets the next tile up within a K step, then goes
  /// back to the current one's.
  struct TileState {
    llvm::SmallVector<GatherSlot> aSlots, bSlots;
    mlir::Value aBatchOffset, bBatchOffset, tileScaleBase;
    bool sharedScale = false;
  };
  TileState tileState() const {
    return {aSlots, bSlots, aBatchOffset, bBatchOffset, tileScaleBase, sharedScale};
  }
  void setTileState(const TileState &s) {
    aSlots = s.aSlots;
    bSlots = s.bSlots;
    aBatchOffset = s.aBatchOffset;
    bBatchOffset = s.bBatchOffset;
    tileScaleBase = s.tileScaleBase;
    sharedScale = s.sharedScale;
  }

private:
  /// Where a run lies in its operand (element offset) and whether it is in
  /// range: the address half of a load, apart so that a copy bypassing
  /// registers (cp.async with zero fill) can take the same addresses.
  struct RunAddress {
    mlir::Value inRange, address;
    mlir::Value scale; ///< A with an input scale: the run's offset in it
  };

  GatherSlot slotSetup(bool isA, int64_t slot);
  RowState rowSetup(bool isA, mlir::Value row);
  RunAddress runAddress(bool isA, const RowState &row, mlir::Value active, mlir::Value k);
  mlir::Value loadRun(bool isA, const RowState &row, mlir::Value active, mlir::Value k);
  void storeRun(bool isA, const TileViews &tiles, mlir::Value rowLocal, mlir::Value kLocal,
                mlir::Value run);
  /// The input scale's run (or element) at `scaleOffset`.
  mlir::Value loadScaleRun(mlir::Value scaleOffset);
  llvm::SmallVector<mlir::Value> loadSlots(bool isA, llvm::ArrayRef<GatherSlot> slots,
                                           mlir::Value k0);
  void storeSlots(bool isA, llvm::ArrayRef<GatherSlot> slots, mlir::ValueRange runs,
                  const TileViews &tiles);

  const SharedPlan &plan;
  // Operands: element views and, where runs are vectors, run views.
  mlir::Value aElems, aRuns, bElems, bRuns;
  mlir::Value scaleElems, scaleRuns; ///< the input scale's, where A has one
  /// The block's rows lie in one image: its row of the scale (else null,
  /// and each row finds its own).
  mlir::Value tileScaleBase;
  /// Every A slot of a thread reads the same scale run (loadScales).
  bool sharedScale = false;
  // Operand offsets of batch z (matmul) or group z (conv).
  mlir::Value aBatchOffset, bBatchOffset;
  mlir::Value shared;
  llvm::SmallVector<GatherSlot> aSlots, bSlots;
};

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_STAGING_H
