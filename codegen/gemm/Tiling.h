//===- Tiling.h - how a GEMM kernel tiles its problem ----------*- C++ -*-===//
//
// The tile configuration of a kernel (block tile, the main loop's split of
// it among warps or threads, blockK, split-K, or the direct conv) and the
// heuristic that chooses it from a cost model, kept apart from the emitter
// as IREE keeps KernelConfig.cpp apart from its pipelines. Plain data.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_TILING_H
#define TESSEL_CODEGEN_GEMM_TILING_H

#include "gemm/Problem.h"

#include <cstdint>
#include <optional>

namespace tessel::codegen {

/// The main loops a kernel can have (gemm/MainLoop.h): WMMA fragments per
/// warp on Tensor Cores (sm_70), mma.sync fragments loaded by ldmatrix from
/// stages that cp.async fills (sm_80), wgmma per warpgroup reading swizzled
/// stages that cp.async fills (sm_90a), or scalar FMAs per thread on CUDA
/// cores.
enum class GemmTier { TensorCore, TensorCoreSm80, TensorCoreSm90, Simt };
llvm::StringRef tierName(GemmTier tier); ///< "tc-sm70", "tc-sm80", "tc-sm90", "simt"
/// Whether the tier's main loop runs on warps of Tensor Core fragments.
inline bool onTensorCores(GemmTier tier) { return tier != GemmTier::Simt; }

/// How the kernel tiles the problem (see chooseTiles for the heuristic).
struct TileConfig {
  GemmTier tier = GemmTier::TensorCore;
  int64_t blockM = 0, blockN = 0, blockK = 0;
  // tc: a warpsM x warpsN grid of warps, each fragsM x fragsN fragments
  // (tc-sm80: fragments of mma.sync.m16n8k16). tc-sm90: a warpsM x warpsN
  // grid of warpgroups (128 threads), each fragsM wgmma tiles of
  // m64 n(fragN) k16 stacked along M (fragM 64, fragsN 1).
  int64_t fragM = 16, fragN = 16, fragK = 16;
  int64_t warpsM = 1, warpsN = 1, fragsM = 1, fragsN = 1;
  // simt: a threadsM x threadsN grid of threads, each microM x microN sums;
  // thread (tm, tn) owns rows tm + i * threadsM and columns tn + j * threadsN.
  int64_t threadsM = 1, threadsN = 1, microM = 1, microN = 1;
  // Split-K: the K steps divided among splitK blocks (grid z = batch *
  // splitK), each writing its f32 partial sums to the workspace; a second
  // kernel sums the splits in order and runs the epilogue.
  int64_t splitK = 1;
  // tc-sm80, tc-sm90: shared buffers the cp.async pipeline cycles through
  // (K steps in flight: stages - 1); the others have two.
  int64_t stages = 2;
  // tc-sm80, tc-sm90: the grid's tiles taken in groups of rasterM row tiles,
  // every column tile of a group before the next group (0: column by column,
  // as launched), so that a wave of blocks reads fewer panels of A and B
  // (the operands' reuse caught in L2).
  int64_t rasterM = 0;
  // tc-sm90: a persistent grid of this many blocks (at most the tiles),
  // block b taking tiles b, b + persistent, ... in the raster's order; each
  // tile's last K steps copy the next tile's first ones, which land while
  // the tile's epilogue runs (its f32 staging then apart from the stages).
  // 0: a block a tile.
  int64_t persistent = 0;
  // tc-sm90: A and B tiles loaded by TMA (one thread issues a step's two
  // tensor copies, an mbarrier a stage says when they have landed) from
  // the kernel's a_map and b_map (CUtensorMaps in global memory, 128-byte
  // swizzle): each operand K-major or MN-major as it lies (a windowed
  // conv's A by the im2col mode), one batch, whole K. chooseTiles sets it
  // for the convs it fits and gemms on tiles of 128 columns or more; the
  // engine describes the maps (KernelArg.tensor_map) and the runtime makes
  // them.
  bool tma = false;
  // tc-sm90 with TMA: a producer warpgroup (its thread 0 issues the tensor
  // copies as buffers free up) beside the warpsM x warpsN math warpgroups,
  // which wait on a stage's full mbarrier, multiply and release it on its
  // empty one; the producer runs ahead of the math across K steps and, in a
  // persistent grid, across tiles (CUTLASS's warp-specialized kernels).
  bool warpSpecialized = false;
  // With warpSpecialized and a persistent grid: two math sides of warpsM x
  // warpsN warpgroups, taking the block's tiles in turn, each with its own
  // staging (CUTLASS's ping-pong kernel): one side's epilogue runs while the
  // other's wgmmas do.
  bool pingpong = false;
  // With warpSpecialized in a persistent grid, one warpgroup a side: each
  // band of 64 rows finished in registers (a conv's bias, the activation,
  // the one rounding to f16), staged in 128-byte swizzled boxes of 64 x 64
  // and stored by TMA from the kernel's out_map (one thread issues the
  // tensor stores; the side goes on to its next tile while they drain),
  // as CUTLASS's TMA epilogues. No residual, no gemm addend, one batch.
  bool tmaStore = false;
  // A direct convolution (simt only) for grouped convs with fewer than 8
  // filters per group: one thread per output element, no shared memory,
  // unless depthwise (below).
  bool direct = false;
  // The depthwise kernel (direct, one filter per input channel), where
  // dwLanes > 0: each thread dwWidth outputs along W of dwLanes channels
  // (one load of dwLanes elements per input column), a block dwVectors such
  // channel groups (a slab, its filters staged in shared memory as f32,
  // tap-major) by dwRows runs of outputs.
  int64_t dwLanes = 0, dwWidth = 1, dwVectors = 1, dwRows = 1;

  int64_t threads() const;
  /// The threads that multiply a tile and run its epilogue: threads() less
  /// the producer warpgroup of a warp-specialized kernel (and a ping-pong
  /// kernel's other math side).
  int64_t mathThreads() const;
  /// The depthwise kernel's runs of dwWidth outputs along W of `conv`.
  int64_t depthwiseRuns(const ConvShape &conv) const;
  /// K steps of blockK per block: ceil(ceil(K / blockK) / splitK).
  int64_t stepsPerSplit(int64_t k) const;
};

/// The SMs of the GPU tc-sm90's tilings are priced on (the H100's); the
/// planner's rules that count waves count them too.
constexpr int64_t kSm90ReferenceSms = 132;

/// The tile configuration for `problem` on `tier`, or std::nullopt when the
/// tier cannot run it (tc needs f16 A and B; tc-sm80 and tc-sm90 also runs
/// of 4 bytes or more of both, cp.async's; grid limits).
std::optional<TileConfig> chooseTiles(const GemmProblem &problem, GemmTier tier);

/// Whether `tiles` fits the hardware and the generator for `problem` (the
/// shared memory, runs cp.async takes where the tier copies asynchronously,
/// wgmma's swizzled layouts, registers, grid limits): what chooseTiles asks
/// of every candidate; tools that force a tiling ask it too.
bool tilingFits(const GemmProblem &problem, const TileConfig &tiles);

/// A persistent tc-sm90 grid for `tiles` (TileConfig::persistent): the
/// reference GPU's SMs times the blocks of `tiles` an SM holds.
int64_t persistentGrid(const GemmProblem &problem, const TileConfig &tiles);

/// The depthwise kernel's tiling with `lanes` channels and `width` outputs a
/// thread, or std::nullopt where the conv is not depthwise (multiplier 1),
/// `lanes` does not divide its channels, `width` exceeds its output width or
/// the unrolled window would be too large. chooseTiles picks the widest that
/// still gives enough threads; tools force others.
std::optional<TileConfig> depthwiseTiles(const GemmProblem &problem, int64_t lanes,
                                         int64_t width);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_GEMM_TILING_H
