//===- Tiling.cpp - the tiling heuristic: a cost model, no GPU timing -----===//
//
// Which tile configuration a kernel gets (chooseTiles): every candidate the
// main loop of the tier allows, with every split-K choice, is checked for
// feasibility (shared memory, gather length, prefetch registers, grid
// limits) and priced by a one-line model of a reference GPU; the cheapest
// wins. Grouped convs with few filters per group get the direct kernel.
//
//===----------------------------------------------------------------------===//
#include "gemm/Tiling.h"

#include "gemm/Common.h"
#include "gemm/Staging.h"

#include "mlir/Support/LLVM.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tessel::codegen {

using namespace gemm;

llvm::StringRef tierName(GemmTier tier) {
  switch (tier) {
  case GemmTier::TensorCore: return "tc-sm70";
  case GemmTier::TensorCoreSm80: return "tc-sm80";
  case GemmTier::TensorCoreSm90: return "tc-sm90";
  case GemmTier::Simt: return "simt";
  }
  return "";
}

int64_t TileConfig::threads() const {
  if (direct)
    return dwLanes ? dwVectors * dwRows : kElementwiseThreads;
  if (tier == GemmTier::TensorCoreSm90)
    return mathThreads() * (pingpong ? 2 : 1) + (warpSpecialized ? kWarpgroupSize : 0);
  return onTensorCores(tier) ? warpsM * warpsN * kWarpSize : threadsM * threadsN;
}

int64_t TileConfig::mathThreads() const {
  return tier == GemmTier::TensorCoreSm90 && !direct ? warpsM * warpsN * kWarpgroupSize
                                                     : threads();
}

int64_t TileConfig::depthwiseRuns(const ConvShape &conv) const {
  return conv.batch * conv.outH * ceilDiv(conv.outW, dwWidth);
}

int64_t TileConfig::stepsPerSplit(int64_t k) const {
  return ceilDiv(ceilDiv(k, blockK), splitK);
}

//===----------------------------------------------------------------------===//
// The cost model
//===----------------------------------------------------------------------===//
//
// No timing on a GPU: each candidate tiling gets a cost from a one-line model
// of a reference GPU (108 SMs, as an A100; the choice moves little between
// 80 and 132), and the cheapest wins:
//   blocks = ceil(M / blockM) * ceil(N / blockN) * batch
//   loads  = (blockM + blockN) * blockK * bytes / 64  one step's operand loads
//   cost   = ceil(blocks / SMs)                       waves of blocks
//          * (loads                                   the prologue's step 0
//             + ceil(K / blockK)                      K steps per block
//             * (max(blockM * blockN * blockK / math, loads)
//                + 64))                               barrier, shared stores
// with math = 1024 f16 MACs per clock per SM on Tensor Cores (16x16x16 per
// 4 clocks per sub-core), 64 f32 FMAs per clock on CUDA cores, 64 bytes per
// clock per SM from L2. The max is the software pipeline: step i+1's loads
// are in flight during step i's math, so a step costs the longer of the two;
// only the prologue's loads are exposed. Large problems get large tiles
// (fewer loads per MAC); small ones get smaller tiles, because a grid that
// does not fill the SMs leaves them idle. A deeper blockK (64 beside 32 on
// Tensor Cores, 32 beside 16 on SIMT) halves the steps, so the per-step
// overhead, but doubles the shared memory (two buffers) and the prefetch
// registers: where those no longer fit (feasible), the shallower or smaller
// tile wins. Ties go to the larger tile, then to fewer threads, then to the
// shallower blockK.
//
// The WMMA fragment comes first, from the padded work alone: 16x16x16
// unless 32x8x16 (N small) or 8x32x16 (M small) pads M x N to at most 3/4 of
// what 16x16 pads it to, e.g. N <= 8 (a 1-column matmul, 8 padded channels)
// or M <= 8 (a batch-1 classifier GEMM).
//
// Split-K: where the grid leaves SMs idle and K is long (a batch-1 conv
// late in a CNN: 49 x 512 outputs, K = 4608), each tile's K steps are
// divided among splitK blocks, so blocks = tiles * splitK and each runs
// ceil(steps / splitK) steps; the partial sums go through the workspace to
// a second kernel, which costs
//   reduce = 3000                                     its launch and ramp
//          + batch * M * N * (8 * splitK + 4) / (64 * SMs)   partials written
//                                                     and read, result
// clocks. splitK is chosen with the tile, from 1, 2, 3, 4, 6, 8, 12, 16, 24,
// 32, 48, 64, with at least two K steps per split.
//
// tc-sm90 is priced on an H100 instead (ReferenceGpu kWgmmaGpu): 132 SMs,
// 2048 MACs per clock, the reduction's launch 6000 clocks.

namespace {
/// Static shared memory a kernel may declare without opting in.
constexpr int64_t kMaxSharedBytes = 48 * 1024;
/// Dynamic shared memory a tc-sm80 kernel may ask for: what the A100 grants
/// a block on opting in (163 KiB; H100 227), so that 128x256x64 tiles get 3
/// stages (156 KiB: 407 TFLOP/s on 4096^3 on the H100 against 361 for the
/// best tiling within 96 KiB, bench/NOTES.md). On sm_86/89 (99 KiB) the
/// runtime passes over such a variant and the step runs its tc-sm70 one.
constexpr int64_t kMaxDynamicSharedBytes = 160 * 1024;
/// tc-sm90's: what the H100 grants a block on opting in (227 KiB), less
/// what the runtime reserves.
constexpr int64_t kMaxSm90SharedBytes = 224 * 1024;
constexpr int64_t kMaxGridYZ = 65535;
/// The reference GPU a tier's candidates are priced on.
struct ReferenceGpu {
  double sms;          ///< SMs
  double macsPerClock; ///< f16 (Tensor Core) or f32 (CUDA core) MACs per clock per SM
  double reduceLaunch; ///< split-K's reduction kernel: launch and ramp, in clocks
  double l2Bytes;      ///< L2 cache
  /// Clocks a K step costs for each warpgroup of the block past two.
  double warpgroupStep = 0;
};
/// An A100's 108 SMs: mma.sync / WMMA Tensor Cores, and CUDA cores.
constexpr ReferenceGpu kTensorCoreGpu{108, 1024, 3000, 40e6};
constexpr ReferenceGpu kCudaCoreGpu{108, 64, 3000, 40e6};
/// tc-sm90: the H100's 132 SMs at wgmma's rate; the reduction's fixed cost
/// weighs twice as much beside main loops twice as fast (measured on the
/// H200: 1024x768x3072 in 15.0 us unsplit on 64x128 tiles, 20.9 us split in
/// two on 128x128, which the A100's 3000 clocks preferred). A block of
/// three warpgroups pays 85 clocks a step more: on 4096^3 on the H100 its
/// steps took 400-430 clocks beyond their math, one or two warpgroups'
/// 310-350 (bench/NOTES.md (22)); without it 192 x 192 would take
/// DeepBench's N = 24000 and 48000 rows from 128 x 256, which 4096^3 runs
/// 15% faster.
constexpr ReferenceGpu kWgmmaGpu{kSm90ReferenceSms, 2048, 6000, 50e6, 85};
constexpr double kLoadBytesPerClock = 64;
constexpr double kStepOverhead = 64;
constexpr int64_t kMaxPrefetchRegisters = 32;
constexpr int64_t kMaxSm80WindowSlots = 8;
constexpr int64_t kSplitKChoices[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
/// tc-sm90's short K loops, priced with the blocks an SM holds at once.
constexpr double kShortKSteps = 2;
constexpr int64_t kSm90SharedPerSm = 228 * 1024;
constexpr int64_t kRegistersPerSm = 64 * 1024;
constexpr int64_t kThreadRegisters = 64;
/// A load from device memory under load, in clocks.
constexpr double kMemoryLatency = 800;

/// tc-sm90 blocks of a short K loop (at most kShortKSteps steps) an SM
/// holds at once, by shared memory and by registers (the accumulators a
/// thread holds, plus kThreadRegisters of addresses and the epilogue's).
int64_t residentSm90Blocks(const GemmProblem &p, const TileConfig &t) {
  const int64_t registers =
      roundUp(t.blockM * t.blockN / t.threads() + kThreadRegisters, 8) * t.threads();
  return std::max<int64_t>(1, std::min(kSm90SharedPerSm / sharedPlan(p, t).bytes,
                                       kRegistersPerSm / registers));
}

double tilingCost(const GemmProblem &p, const TileConfig &t, const ReferenceGpu &gpu) {
  double blocks = double(ceilDiv(p.m, t.blockM)) * ceilDiv(p.n, t.blockN) * p.batch * t.splitK;
  double waves = std::ceil(blocks / gpu.sms);
  double steps = double(t.stepsPerSplit(p.k));
  double math = double(t.blockM) * t.blockN * t.blockK / gpu.macsPerClock;
  double loads =
      double(t.blockM * elemBytes(p.a) + t.blockN * elemBytes(p.b)) * t.blockK / kLoadBytesPerClock;
  double overhead =
      kStepOverhead + gpu.warpgroupStep * std::max<int64_t>(0, t.threads() / kWarpgroupSize - 2);
  // (Only where the output fills two waves of the largest tiles, so that
  // the batch-1 picks, latency-bound, are priced as before.)
  const bool manyBlocks = double(p.m) * p.n * p.batch >= 2 * gpu.sms * 128 * 256;
  if (t.tier == GemmTier::TensorCoreSm90 && t.splitK == 1 && steps <= kShortKSteps &&
      manyBlocks) {
    // A short K loop leaves the block's first loads and its epilogue (the
    // output written, the residual read) exposed, unless other blocks on
    // the SM run theirs meanwhile: priced once per round of resident
    // blocks, whose K loops take turns. ResNet-50 b256's 1x1 convs of K 64
    // (one step) with their residual: 128 x 256 (one block an SM) 0.337
    // ms, 128 x 128 in 2 stages 0.273, 64 x 128 0.284 (H200,
    // bench/NOTES.md (25)); the network 9.87 -> 7.95 ms with the residual
    // read in groups.
    const double resident =
        std::min(double(residentSm90Blocks(p, t)), std::ceil(blocks / gpu.sms));
    double epilogue = double(t.blockM) * t.blockN *
                      (elemBytes(p.out) + (p.residual ? elemBytes(*p.residual) : 0)) /
                      kLoadBytesPerClock;
    // The residual's reads wait: a round trip per group of a thread's
    // 16-byte runs (Epilogue::storeStaged). 128 x 128 on one warpgroup, two
    // a thread, 0.292 ms on the first of those convs against 0.273 on two
    // warpgroups, one a thread; without a residual one warpgroup's 0.194
    // against 0.226.
    if (p.residual) {
      const int64_t runs = t.blockM * t.blockN * elemBytes(p.out) / 16;
      epilogue += double(ceilDiv(ceilDiv(runs, t.threads()), kResidualGroup)) * kMemoryLatency;
    }
    return std::ceil(blocks / (gpu.sms * resident)) *
           (loads + epilogue + resident * steps * (std::max(math, loads) + overhead));
  }
  double cost = waves * (loads + steps * (std::max(math, loads) + overhead));
  if (t.splitK > 1)
    cost += gpu.reduceLaunch + double(p.batch) * p.m * p.n * (8.0 * t.splitK + 4) /
                                   (kLoadBytesPerClock * gpu.sms);
  return cost;
}

/// Whether TMA's im2col mode copies the windowed conv's A tiles
/// (GemmKernel::tensorMap): every K step one tap's run of blockK channels
/// (one group, channels a multiple of blockK), a box of at most 256
/// output positions, the box's corners within a 4-D map's [-128, 127]
/// (and the window's offsets, so that they fit too), element strides (the
/// conv's) of at most 8.
bool im2colCopies(const GemmProblem &p, const TileConfig &t) {
  const ConvShape &cv = p.conv;
  const Im2colBox box = im2colBox(cv);
  auto corner = [](int64_t v) { return v >= -128 && v <= 127; };
  return cv.group == 1 && cv.inC % t.blockK == 0 && t.blockM <= 256 && corner(box.lowerW) &&
         corner(box.lowerH) && corner(box.upperW) && corner(box.upperH) &&
         corner((cv.kW - 1) * cv.dilW) && corner((cv.kH - 1) * cv.dilH) && cv.strideW <= 8 &&
         cv.strideH <= 8;
}

/// Whether the tiling fits the hardware and the generator's limits.
bool feasible(const GemmProblem &p, const TileConfig &t) {
  if (t.threads() > 1024 || t.threads() % kWarpSize != 0)
    return false;
  // The buffers (or the epilogue's staging) within the static limit, or
  // tc-sm80's (tc-sm90's) dynamic one; both copy runs of 4, 8 or 16
  // bytes (cp.async), not single f16 elements.
  SharedPlan plan = sharedPlan(p, t);
  const bool sm90 = t.tier == GemmTier::TensorCoreSm90;
  const bool asyncCopies = t.tier == GemmTier::TensorCoreSm80 || sm90; // cp.async stages
  if (plan.bytes > (sm90   ? kMaxSm90SharedBytes
                    : asyncCopies ? kMaxDynamicSharedBytes
                           : kMaxSharedBytes))
    return false;
  if (asyncCopies && (plan.a.vector == 1 || plan.b.vector == 1))
    return false;
  // wgmma reads each operand K- or MN-major, 128-byte swizzled.
  if (sm90 && (!plan.a.swizzled || !plan.b.swizzled))
    return false;
  // tc-sm80's im2col copies keep each slot's window origin in registers
  // beside 128 accumulator and 32 double-buffered fragment registers: more
  // than 8 slots a thread (ResNet-50 b256's 256x64x64 3x3: 16) spill at 255.
  if (asyncCopies && p.im2col() && gatherSlots(plan.a, t) > kMaxSm80WindowSlots)
    return false;
  // Gathers are unrolled per thread: keep them short.
  for (const Staging &s : {plan.a, plan.b})
    if (gatherSlots(s, t) > 32)
      return false;
  // The prefetched runs stay live across the math, beside up to 128
  // accumulator registers and the fragments: at most 32 registers of them
  // keep every suite kernel within 255 registers a thread, without spills
  // (243 at most over the 511 rows; 128 for 8-fragment warp tiles).
  if (!asyncCopies && prefetchRegisters(plan, t) > kMaxPrefetchRegisters)
    return false;
  // TMA: tc-sm90, A and B staged as the operands lay them out (K-major,
  // a windowed conv's A by TMA's im2col mode, or MN-major in boxes of 64
  // rows), one batch, whole K, rows of 16-byte multiples (the tensor map's
  // stride: K, or M or N MN-major).
  // A persistent grid only with the producer warpgroup (its copies run
  // across tiles).
  auto mapped = [&](const Staging &s, int64_t rows) {
    return s.kContiguous == s.sharedKContiguous && (s.kContiguous ? p.k : rows) % 8 == 0;
  };
  if (t.tma && (!sm90 || (p.im2col() && !im2colCopies(p, t)) || p.batch != 1 || t.splitK > 1 ||
                p.aScale || (t.persistent && !t.warpSpecialized) || !mapped(plan.a, p.m) ||
                !mapped(plan.b, p.n)))
    return false;
  if ((t.warpSpecialized && !t.tma) || (t.pingpong && (!t.warpSpecialized || !t.persistent)))
    return false;
  // TMA stores: a persistent warp-specialized kernel of one warpgroup a
  // side, an f16 output whose rows are 16-byte multiples (the map's
  // stride), whole boxes of 64 columns, no residual or gemm addend (the
  // epilogue runs in registers), one batch.
  if (t.tmaStore &&
      (!t.warpSpecialized || !t.persistent || t.warpsM != 1 || t.warpsN != 1 ||
       p.out != ElemType::F16 || p.residual || (p.addend && p.op != GemmOpKind::Conv) ||
       p.batch != 1 || p.n % 8 != 0 || t.blockN % 64 != 0))
    return false;
  // A persistent grid: tc-sm90's loop, whole K, no input scale.
  if (t.persistent && (!sm90 || t.splitK > 1 || p.aScale || t.persistent < 0))
    return false;
  // Split-K: at least two K steps per split (tc-sm90: as many as its
  // stages, or its pipeline never fills: 128x768x3072 split 16 ways on
  // 128x128 tiles, 3 steps a split, took 11.5 us on the H200 against 8.7
  // for 4 ways on 64x64), none empty.
  if (t.splitK > 1) {
    int64_t steps = ceilDiv(p.k, t.blockK);
    int64_t least = sm90 ? std::max<int64_t>(2, t.stages) : 2;
    if (t.stepsPerSplit(p.k) < least || (t.splitK - 1) * t.stepsPerSplit(p.k) >= steps)
      return false;
  }
  return ceilDiv(p.n, t.blockN) <= kMaxGridYZ && p.batch * t.splitK <= kMaxGridYZ &&
         ceilDiv(p.m, t.blockM) < (int64_t(1) << 31);
}

/// Whether a tile is mostly past the end of the problem even in its first
/// block: a tc fragment row or column entirely outside M or N, or half of a
/// simt tile.
bool idle(const GemmProblem &p, const TileConfig &t) {
  if (onTensorCores(t.tier))
    return t.blockM > roundUp(p.m, t.fragM) || t.blockN > roundUp(p.n, t.fragN);
  return t.blockM >= 2 * p.m || t.blockN >= 2 * p.n;
}

/// The cheapest feasible candidate, each with every split-K choice, among
/// those not idle if any; ties go to the larger tile, then to fewer threads,
/// then to the first listed (the smaller split).
std::optional<TileConfig> cheapest(const GemmProblem &p, ArrayRef<TileConfig> tiles,
                                   const ReferenceGpu &gpu,
                                   ArrayRef<int64_t> splits = kSplitKChoices) {
  SmallVector<TileConfig> candidates;
  for (const TileConfig &tile : tiles)
    for (int64_t split : splits) {
      TileConfig t = tile;
      t.splitK = split;
      candidates.push_back(t);
    }
  for (bool allowIdle : {false, true}) {
    std::optional<TileConfig> best;
    double bestCost = 0;
    auto area = [](const TileConfig &t) { return t.blockM * t.blockN; };
    for (const TileConfig &t : candidates) {
      if (!feasible(p, t) || (!allowIdle && idle(p, t)))
        continue;
      double cost = tilingCost(p, t, gpu);
      if (!best || cost < bestCost ||
          (cost == bestCost &&
           (area(t) > area(*best) || (area(t) == area(*best) && t.threads() < best->threads())))) {
        best = t;
        bestCost = cost;
      }
    }
    if (best)
      return best;
  }
  return std::nullopt;
}

/// The Tensor Core tiers' candidates, in the order ties are broken: blocks
/// of 4 or 8 warps (warpsM x warpsN), each warp fragsM x fragsN fragments of
/// fragM x fragN (fragsM 1, 2 or 4; at most maxFragments; WMMA adds 3 for
/// M of 33 to 48), blockK 32 or 64
/// (16 where K <= 16), blocks up to 256 x 256.
SmallVector<TileConfig> warpTileCandidates(const GemmProblem &p, GemmTier tier, int64_t fragM,
                                           int64_t fragN, ArrayRef<int64_t> fragsNs,
                                           int64_t maxFragments) {
  SmallVector<int64_t> blockKs =
      p.k <= 16 ? SmallVector<int64_t>{16} : SmallVector<int64_t>{32, 64};
  SmallVector<TileConfig> candidates;
  for (int64_t warpsM : {1, 2, 4, 8})
    for (int64_t warpsN : {1, 2, 4, 8}) {
      if (warpsM * warpsN != 4 && warpsM * warpsN != 8)
        continue;
      for (int64_t fragsM : {1, 2, 4})
        for (int64_t fragsN : fragsNs)
          for (int64_t blockK : blockKs) {
            if (fragsM * fragsN > maxFragments)
              continue;
            TileConfig t;
            t.tier = tier;
            t.fragM = fragM;
            t.fragN = fragN;
            t.warpsM = warpsM;
            t.warpsN = warpsN;
            t.fragsM = fragsM;
            t.fragsN = fragsN;
            t.blockM = warpsM * fragsM * fragM;
            t.blockN = warpsN * fragsN * fragN;
            t.blockK = blockK;
            if (t.blockM <= 256 && t.blockN <= 256)
              candidates.push_back(t);
          }
    }
  return candidates;
}

std::optional<TileConfig> chooseTensorCoreTiles(const GemmProblem &p) {
  if (p.a != ElemType::F16 || p.b != ElemType::F16)
    return std::nullopt;
  // The fragment: the least padding of M x N, 16x16 unless another saves a
  // quarter of it.
  struct Fragment {
    int64_t m, n;
  };
  auto padded = [&](Fragment f) { return double(roundUp(p.m, f.m)) * roundUp(p.n, f.n); };
  Fragment fragment{16, 16};
  for (Fragment f : {Fragment{32, 8}, Fragment{8, 32}})
    if (padded(f) <= 0.75 * padded(Fragment{16, 16}) && padded(f) < padded(fragment))
      fragment = f;

  // At most 8 accumulator fragments (64 f32 registers) per thread. 64x64
  // warp tiles (16 fragments, ~240 registers, 8 warps per SM) build and can
  // be forced (--force-tiles), but measured on the H100 they won 1% on the
  // GEMM and conv suites and lost 5.4% on ResNet-50 b256 (17.42 -> 18.41
  // ms, bench/NOTES.md).
  SmallVector<TileConfig> candidates = warpTileCandidates(
      p, GemmTier::TensorCore, fragment.m, fragment.n, {1, 2, 4}, /*maxFragments=*/8);
  std::optional<TileConfig> best = cheapest(p, candidates, kTensorCoreGpu);
  // M of 33 to 48 in one row of warps of three 16-row fragments: one row
  // tile, so B is read once, where two of 32 rows read it twice; split
  // along K, since one row of tiles makes few blocks. DeepBench's 35 x
  // 8457 (odd N: B by element gathers, WMMA its only tier) on the H200:
  // 2560 deep 0.0675 ms on 32 x 128 split four ways, 0.0430 on 48 x 128
  // split eight ways; 1760 deep unsplit (67 blocks) it lost with the
  // inputs rotated, 0.0504 -> 0.0537 ms (bench/NOTES.md (38)).
  if (fragment.m == 16 && p.m > 32 && p.m <= 48) {
    SmallVector<TileConfig> threes;
    for (const TileConfig &t : candidates) {
      if (t.warpsM != 1 || t.fragsM != 2 || t.fragsN * 3 > 8)
        continue;
      TileConfig three = t;
      three.fragsM = 3;
      three.blockM = 48;
      threes.push_back(three);
    }
    std::optional<TileConfig> split =
        cheapest(p, threes, kTensorCoreGpu, ArrayRef<int64_t>(kSplitKChoices).drop_front());
    if (split && (!best || tilingCost(p, *split, kTensorCoreGpu) <=
                               tilingCost(p, *best, kTensorCoreGpu)))
      best = split;
  }
  return best;
}

/// `t` with its raster group for a wave of `gpu.sms` blocks (one block an
/// SM: the async tiers' tiles fill one). Launched column by column, a wave
/// takes every row tile of one or two columns: every panel of A (blockM x
/// K) and a few of B. Where those panels outgrow half the L2 the wave's
/// reuse of them is lost; a wave that takes a row tiles in each of c
/// columns (a x c = sms) reads a panels of A and c of B, fewest bytes at
/// a = sqrt(sms x blockN / blockM). On the H100 (bench/NOTES.md (20)),
/// 4096^3 on 128 x 256 tiles (45 MB of panels as launched, groups of 16):
/// 654 -> 689 TFLOP/s; 8192^3 644 -> 705. Not on blocks of one warpgroup
/// (tc-sm90's 128 x 128 of two m64 tiles): in groups of 11 ViT b32's QKV
/// projection (6304 x 2304 x 768, 10 MB of panels) went 0.061 -> 0.090 ms
/// and its MLP's down projection (6304 x 768 x 3072, 42 MB) 0.111 -> 0.149,
/// where two warpgroups of the same tile grouped lost nothing (0.061): not
/// understood, so those keep the launch order.
///
/// The group is the power of two nearest a (in ratio): on the H200 groups
/// of 16 beat their neighbours wherever measured, not understood either
/// (bench/NOTES.md (26)): tc-sm80's 4096^3 (32 row tiles) in groups of 15
/// 0.3054 ms, of 16, 8 or 4 0.2887-0.2900 (8192^3 2.471 -> 2.364);
/// tc-sm90's rows of 8448 (66 row tiles, 128 x 256) in groups of 16 (and
/// a last of 2) 1.15-1.36x faster than in near-equal groups of 17; 6144 x
/// 1500 and x 3000 on 128 x 192 1.10-1.14x faster in 16 than in 14.
std::optional<TileConfig> withRaster(const GemmProblem &p, std::optional<TileConfig> t,
                                     const ReferenceGpu &gpu) {
  if (!t)
    return t;
  const int64_t rows = ceilDiv(p.m, t->blockM), cols = ceilDiv(p.n, t->blockN);
  const double waveRows = std::min<double>(rows, gpu.sms),
               waveCols = std::ceil(gpu.sms / double(rows));
  const double panels = (waveRows * t->blockM * elemBytes(p.a) +
                         waveCols * t->blockN * elemBytes(p.b)) * double(p.k);
  const double best = std::sqrt(gpu.sms * double(t->blockN) / double(t->blockM));
  const int64_t group = int64_t(1) << std::max<int64_t>(0, std::llround(std::log2(best)));
  if (t->tier == GemmTier::TensorCoreSm90 && p.op == GemmOpKind::Conv && cols > 1 &&
      rows * cols > gpu.sms) {
    // A conv's grid as launched takes its column tiles one after another,
    // each a pass over all of A (the input, im2col'd): where A outgrows the
    // L2 it comes from DRAM once a column tile. In groups its panels are
    // read once, while every column tile of the group takes them. Measured
    // on ResNet-50 b256's 13 convs of more than one column tile (tc-sm90,
    // H200, bench/NOTES.md (28)): 1.01-1.25x (l4.reduce 0.0658 -> 0.0526
    // ms, l2.expand 0.1120 -> 0.1006); the group the panel rule's, but at
    // most the power of two that leaves 32 groups (rows of 98 tiles, 7x7
    // outputs: groups of 2; 16 lost up to 10% there, l4.3x3; 392 rows: 8).
    // Not tc-sm80: there the same groups won on 7 of 11 convs and lost on
    // 4 (l2.downsample 0.2324 -> 0.2443 ms).
    int64_t most = 1;
    while (2 * most * 32 <= rows)
      most *= 2;
    t->rasterM = std::min(group, most);
    return t;
  }
  if (cols > 1 && rows > group && rows * cols > gpu.sms && panels > gpu.l2Bytes / 2 &&
      t->threads() >= 256)
    t->rasterM = group;
  return t;
}

/// tc-sm80: warps of mma.sync.m16n8k16 fragments, warp tiles 16 to 64
/// square (at most 32 fragments: 128 accumulator registers), blocks of 4
/// or 8 warps up to 256 x 256, each with as many stages (4, 3, 2) as fit
/// the dynamic shared memory.
std::optional<TileConfig> chooseSm80Tiles(const GemmProblem &p) {
  if (p.a != ElemType::F16 || p.b != ElemType::F16)
    return std::nullopt;
  SmallVector<TileConfig> candidates =
      warpTileCandidates(p, GemmTier::TensorCoreSm80, 16, 8, {2, 4, 8}, /*maxFragments=*/32);
  for (TileConfig &t : candidates)
    for (int64_t stages : {4, 3, 2}) {
      t.stages = stages;
      if (sharedPlan(p, t).bytes <= kMaxDynamicSharedBytes)
        break;
    }
  return withRaster(p, cheapest(p, candidates, kTensorCoreGpu), kTensorCoreGpu);
}

/// tc-sm90: blocks of one to three warpgroups along M (or two along N), each
/// fragsM wgmma tiles m64 x fragN (64 to 256), at most 128
/// accumulator registers a thread; blockK 64 (one 128-byte swizzled row per
/// tile row); as many stages (4, 3, 2) as fit. Priced on kWgmmaGpu: 2048
/// f16 MACs per clock per SM (wgmma's dense rate on the H100: 989 TFLOP/s
/// at 1.83 GHz over 132 SMs).
std::optional<TileConfig> chooseSm90Tiles(const GemmProblem &p) {
  if (p.a != ElemType::F16 || p.b != ElemType::F16 || p.k < 16)
    return std::nullopt;
  struct Shape {
    int64_t warpgroupsM, warpgroupsN, fragsM, fragN;
  };
  // Three warpgroups along M make 192-row tiles: ViT b32's 6304 rows in 33
  // row tiles, its 768 columns 132 tiles of 192 x 192, one wave (the tiles
  // cuBLAS picks there; its four GEMMs 0.2449 -> 0.2005 ms a layer). The
  // last six: N of 192, 96 or 144, whose columns fit transformer GEMMs in
  // fewer or fuller waves (ViT b32's 6304 x 768 in 200 tiles of 128 x 192
  // instead of 300 of 128 x 128; BERT b8's 1024 x 2304 in 128 tiles of
  // 128 x 144 instead of 96 of 128 x 192, 0.0115 -> 0.0099 ms on the H100,
  // its 1024 x 768 in 128 of 64 x 96, 0.0145 -> 0.0142 with K 3072;
  // bench/NOTES.md (24)). One warpgroup of 64 x 192 is not offered: on
  // none of eleven GEMMs timed was it the fastest, on five the slowest
  // (bench/NOTES.md (22)).
  const Shape shapes[] = {{1, 1, 1, 64},  {1, 1, 1, 128}, {2, 1, 1, 64},  {1, 1, 1, 256},
                          {2, 1, 1, 128}, {1, 1, 2, 128}, {1, 2, 1, 128}, {2, 1, 1, 256},
                          {2, 1, 2, 128}, {3, 1, 1, 128}, {2, 1, 1, 192}, {3, 1, 1, 192},
                          {1, 1, 2, 96},  {2, 1, 1, 96},  {2, 1, 1, 144}, {1, 1, 1, 96}};
  constexpr size_t kWholeKShapes = 6;
  SmallVector<TileConfig> candidates;
  for (const Shape &shape : shapes) {
    TileConfig t;
    t.tier = GemmTier::TensorCoreSm90;
    t.fragM = 64;
    t.fragN = shape.fragN;
    t.fragK = 16;
    t.warpsM = shape.warpgroupsM;
    t.warpsN = shape.warpgroupsN;
    t.fragsM = shape.fragsM;
    t.fragsN = 1;
    t.blockM = t.warpsM * t.fragsM * t.fragM;
    t.blockN = t.warpsN * t.fragN;
    t.blockK = 64;
    // As many stages as fit, but no more buffers than K has steps (the
    // K loop then copies them all at once, Sm90MainLoop::emitKLoop): the
    // shared memory left lets more blocks share the SM.
    const int64_t steps = ceilDiv(p.k, t.blockK);
    for (int64_t stages : {4, 3, 2}) {
      t.stages = stages;
      if (stages <= std::max<int64_t>(2, steps) &&
          sharedPlan(p, t).bytes <= kMaxSm90SharedBytes)
        break;
    }
    candidates.push_back(t);
  }
  // Those take whole K: split four ways on 128 x 192 BERT b8's down
  // projection (1024 x 768 x 3072) took 0.024 ms against 0.015 unsplit on
  // 64 x 128, which the model priced the other way (bench/NOTES.md (21));
  // GPT-2 b1's (128 x 768 x 3072) split eight ways took 0.0103 ms on 64 x
  // 96 against 0.0096 on 64 x 128 (NOTES (24)).
  // The candidate of `shape` (a rule below starts from it).
  auto candidate = [&](Shape shape) {
    return *llvm::find_if(candidates, [&](const TileConfig &t) {
      return t.warpsM == shape.warpgroupsM && t.warpsN == shape.warpgroupsN &&
             t.fragsM == shape.fragsM && t.fragN == shape.fragN;
    });
  };
  ArrayRef<TileConfig> all(candidates);
  std::optional<TileConfig> best =
      cheapest(p, all.drop_back(kWholeKShapes), kWgmmaGpu);
  std::optional<TileConfig> wholeK =
      cheapest(p, all.take_back(kWholeKShapes), kWgmmaGpu, /*splits=*/{1});
  // A tie goes to fewer threads, as in cheapest().
  if (wholeK) {
    const double wholeKCost = tilingCost(p, *wholeK, kWgmmaGpu);
    const double bestCost = best ? tilingCost(p, *best, kWgmmaGpu) : 0;
    if (!best || wholeKCost < bestCost ||
        (wholeKCost == bestCost && wholeK->threads() < best->threads()))
      best = wholeK;
  }
  best = withRaster(p, best, kWgmmaGpu);
  // A conv loads its tiles by TMA where it can: 1x1 stride-1 convs (A the
  // input itself) on ResNet-50 b256's twelve 0.979-1.182x on the same
  // tiles, geomean 1.033 (H200, bench/NOTES.md (29)); windowed and strided
  // ones by the im2col mode (channels a multiple of 64) on its ten
  // 1.04-1.21x but l1.3x3's 0.99 (NOTES (32)). Gemms and matmuls (B mostly
  // MN-major, in boxes of 64 columns) on tiles of 128 columns or more:
  // 1.05-1.27x over the same tiles by cp.async on DeepBench's (4096^3
  // 0.1884 -> 0.1780 ms, 2048 x 7000 x 2048 0.1496 -> 0.1224, 7680 x 128 x
  // 2560 0.0183 -> 0.0147); on 64 x 64 (6144 x 32 x 2048) 0.0109 -> 0.0120
  // (NOTES (33)).
  if (best && (p.op == GemmOpKind::Conv || best->blockN >= 128)) {
    TileConfig tma = *best;
    tma.tma = true;
    if (tilingFits(p, tma))
      best = tma;
  }
  // A gemm of two waves of 256 x 128 tiles or more whose B rows (N, or K
  // with transB) are not whole 128-byte lines, as DeepBench's widths of
  // 7000, 3000 and 6000 columns: 256 x 128 tiles of two math warpgroups
  // beside a producer, in row groups of 4, the misaligned B the narrower
  // side. 0.93-0.98x cuBLAS on six such against 0.82-0.88x on the TMA
  // loop's 128 x 256 (7680 x 3000 x 2560 0.2027 -> 0.1789 ms, 4096 x 7000
  // x 4096 transA 0.3984 -> 0.3343); where B's rows are whole lines (4096^3,
  // 8192^3) 128 x 256 stayed 2-5% ahead (NOTES (33)).
  const bool bLines =
      best && (stagingFor(p, *best, false).kContiguous ? p.k : p.n) * elemBytes(p.b) % 128 == 0;
  if (best && best->tma && p.op != GemmOpKind::Conv && !bLines &&
      ceilDiv(p.m, 256) * ceilDiv(p.n, 128) >= 2 * kWgmmaGpu.sms) {
    TileConfig split = candidate({2, 1, 2, 128});
    split.stages = 4;
    split.tma = split.warpSpecialized = true;
    split.rasterM = 4;
    if (tilingFits(p, split))
      best = split;
  }
  // A gemm whose 64 x 64 tiles make between half a wave and one, each of
  // 8 K steps or more, takes them unsplit (in 8 stages, below) over a
  // split pick: 2560 x 128 x 2560 split six ways on 128 x 128 0.0147 ms,
  // on 64 x 64 (80 tiles) 0.0089; 4096 x 128 x 4096 (128 tiles) 0.0218 ->
  // 0.0145. With fewer tiles the splits won (4096 x 64 x 4096, 64 tiles:
  // 0.0122 split four ways on 128 x 64, 0.0126 unsplit; bench/NOTES.md
  // (37)).
  const int64_t tiles64 = ceilDiv(p.m, 64) * ceilDiv(p.n, 64) * p.batch;
  if (best && p.op != GemmOpKind::Conv && best->splitK > 1 && 2 * tiles64 >= kWgmmaGpu.sms &&
      tiles64 <= kWgmmaGpu.sms && ceilDiv(p.k, 64) >= 8) {
    TileConfig whole = candidate({1, 1, 1, 64});
    whole.splitK = 1;
    whole.rasterM = 0;
    if (tilingFits(p, whole))
      best = whole;
  }
  // A gemm on tiles of one warpgroup (64 x 64 or 64 x 128) in one wave or
  // less (the skinny ones: N of 16 to 128 by thousands of rows) holds a
  // block an SM whatever its stages: 8 of them, 6 K steps in flight
  // instead of 2, where each split has 8 steps. On the H200 1.05-1.63x
  // (7680 x 64 x 2560 0.0160 -> 0.0098 ms, 8448 x 32 x 2816 0.0215 ->
  // 0.0149, 2048 x 128 x 2048 0.0080 -> 0.0076; bench/NOTES.md (35)); 64 x
  // 128, 7680 x 128 x 2560 transA 0.0148 -> 0.0131 (NOTES (37)).
  if (best && p.op != GemmOpKind::Conv && best->blockM == 64 && best->blockN <= 128 &&
      best->threads() == kWarpgroupSize &&
      ceilDiv(p.m, 64) * ceilDiv(p.n, best->blockN) * p.batch * best->splitK <=
          kWgmmaGpu.sms) {
    TileConfig deep = *best;
    deep.stages = 8;
    if (deep.stepsPerSplit(p.k) >= deep.stages && tilingFits(p, deep))
      best = deep;
  }
  // A conv TMA loads that has four tiles of 128 x 128 an SM or more and
  // no residual: the ping-pong kernel on them, one warpgroup a side, 4
  // stages, a persistent grid, its own raster (a producer warpgroup copies
  // ahead of the math across tiles; one side's epilogue runs beside the
  // other's wgmmas). ResNet-50 b256's 1x1 convs of 128 channels out or
  // more on the H200 (bench/NOTES.md (31)): 0.98-1.20x over the picks
  // above, 1.01-1.17x with the model's bias and ReLU (l3.expand 0.0754 ->
  // 0.0627 ms, l4.expand 0.0546 -> 0.0469, l1.expand 0.1822 -> 0.1567,
  // l2.reduce 0.0749 -> 0.0658; l3.reduce 0.0476 -> 0.0484). With the
  // residual the expands lost up to 0.76x (a side's thread reads its
  // residual runs in twice the round trips). The windowed and strided
  // convs of 128 channels out or more (by im2col) 1.10-1.19x over the TMA
  // loop on the same pick's tiles, the 3x3s of layer 4 (fewer tiles)
  // 1.01-1.03x (NOTES (32)). 128 x 64 a side, 6 stages, where N has 64
  // columns and K eight steps or more: l1.3x3 (9 steps) 0.1689 -> 0.1413
  // ms; on 1x1 convs of 1 and 4 steps it lost. Their epilogue by TMA stores
  // where it can (TileConfig::tmaStore; NOTES (32)): l2.expand 0.0965 ->
  // 0.0773 ms, l3.expand 0.0628 -> 0.0485, l2.downsample 0.1243 -> 0.1031,
  // l1.expand 0.1601 -> 0.1474, the 3x3s 1.00-1.04x; 5 stages slower, but
  // l1.3x3's 128 x 64 in 8 (its boxes smaller than the f32 staging):
  // 0.1387 -> 0.1306. With TMA stores three waves of tiles are enough:
  // layer 4's 392 tiles (l4.reduce 0.0439 -> 0.0404 ms, l4.3x3 0.0772 ->
  // 0.0738, l4.3x3_s2 0.0853 -> 0.0821); without them, four tiles an SM.
  // Not the gemms: there ping-pong with TMA stores lost to the picks
  // above on eight of nine (4096^3 0.1767 -> 0.1918 ms; NOTES (33)).
  const bool wide = p.n >= 128, longK = p.n == 64 && ceilDiv(p.k, 64) >= 8;
  const int64_t tiles = ceilDiv(p.m, 128) * ceilDiv(p.n, wide ? 128 : 64);
  if (best && best->tma && p.op == GemmOpKind::Conv && (wide || longK) && !p.residual &&
      tiles > 2 * kWgmmaGpu.sms) {
    TileConfig pingpong = candidate({1, 1, 2, 128});
    if (!wide)
      pingpong.fragN = pingpong.blockN = 64;
    pingpong.stages = wide ? 4 : 6;
    pingpong.tma = pingpong.warpSpecialized = pingpong.pingpong = true;
    pingpong.rasterM = 0;
    pingpong = *withRaster(p, pingpong, kWgmmaGpu);
    pingpong.persistent = persistentGrid(p, pingpong);
    TileConfig stored = pingpong;
    stored.tmaStore = true;
    stored.stages = wide ? 4 : 8;
    stored.persistent = persistentGrid(p, stored);
    if (tilingFits(p, stored))
      best = stored;
    else if (tiles >= 4 * kWgmmaGpu.sms && tilingFits(p, pingpong))
      best = pingpong;
  }
  return best;
}

std::optional<TileConfig> chooseSimtTiles(const GemmProblem &p) {
  SmallVector<int64_t> blockKs =
      p.k <= 16 ? SmallVector<int64_t>{16} : SmallVector<int64_t>{16, 32};
  SmallVector<TileConfig> candidates;
  for (int64_t threads : {128, 256})
    for (int64_t threadsM = 1; threadsM <= threads; threadsM *= 2)
      for (int64_t microM : {1, 2, 4, 8})
        for (int64_t microN : {1, 2, 4, 8})
          for (int64_t blockK : blockKs) {
            // At most 32 f32 accumulators per thread.
            if (microM * microN > 32)
              continue;
            TileConfig t;
            t.tier = GemmTier::Simt;
            t.threadsM = threadsM;
            t.threadsN = threads / threadsM;
            t.microM = microM;
            t.microN = microN;
            t.blockM = threadsM * microM;
            t.blockN = t.threadsN * microN;
            t.blockK = blockK;
            if (t.blockM <= 256 && t.blockN <= 256)
              candidates.push_back(t);
          }
  return cheapest(p, candidates, kCudaCoreGpu);
}

} // namespace

/// Whether a conv is grouped with so few filters per group (depthwise: one)
/// that its GEMM is a few columns wide per group: the direct kernel's case.
static bool fewFiltersPerGroup(const GemmProblem &p) {
  return p.op == GemmOpKind::Conv && p.conv.group > 1 && p.n < 8;
}

std::optional<TileConfig> depthwiseTiles(const GemmProblem &p, int64_t lanes, int64_t width) {
  const ConvShape &cv = p.conv;
  const int64_t taps = cv.kH * cv.kW;
  if (p.op != GemmOpKind::Conv || cv.group != cv.inC || cv.outC != cv.inC || p.a != p.out ||
      lanes < 1 || 16 % (lanes * elemBytes(p.a)) != 0 || cv.inC % lanes != 0 || width < 1 ||
      width > cv.outW || taps * width * lanes > 1024 || p.needsWideIndex())
    return std::nullopt;
  TileConfig t;
  t.tier = GemmTier::Simt;
  t.direct = true;
  t.dwLanes = lanes;
  t.dwWidth = width;
  // The slab: the most channel groups up to a warp's worth that divide the
  // channels and whose f32 filters fit 32 KiB of shared memory.
  const int64_t groups = cv.inC / lanes;
  for (int64_t v = std::min<int64_t>(groups, kWarpSize); v >= 1; --v)
    if (groups % v == 0 && taps * v * lanes * 4 <= 32 * 1024) {
      t.dwVectors = v;
      break;
    }
  t.dwRows = kElementwiseThreads / t.dwVectors;
  return t;
}

/// The depthwise kernel's work per thread: 16 bytes of channels and 4
/// outputs along W (each input column loaded once for the outputs that read
/// it) where that still leaves enough threads to fill the GPU, else fewer
/// outputs, then fewer channels.
static std::optional<TileConfig> chooseDepthwiseTiles(const GemmProblem &p) {
  const ConvShape &cv = p.conv;
  constexpr int64_t kEnoughThreads = 32768;
  std::optional<TileConfig> last;
  for (int64_t lanes = 16 / elemBytes(p.a); lanes >= 1; lanes /= 2)
    for (int64_t width : {4, 2, 1}) {
      std::optional<TileConfig> t = depthwiseTiles(p, lanes, width);
      if (!t)
        continue;
      if (t->depthwiseRuns(cv) * (cv.inC / lanes) >= kEnoughThreads)
        return t;
      last = t;
    }
  return last;
}

bool tilingFits(const GemmProblem &p, const TileConfig &t) { return feasible(p, t); }

std::optional<TileConfig> chooseTiles(const GemmProblem &p, GemmTier tier) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0)
    return std::nullopt;
  if (fewFiltersPerGroup(p)) {
    if (onTensorCores(tier))
      return std::nullopt;
    if (std::optional<TileConfig> t = chooseDepthwiseTiles(p))
      return t;
    if (ceilDiv(p.m * p.conv.outC, kElementwiseThreads) >= (int64_t(1) << 31))
      return std::nullopt;
    TileConfig t;
    t.tier = GemmTier::Simt;
    t.direct = true;
    return t;
  }
  switch (tier) {
  case GemmTier::TensorCore: return chooseTensorCoreTiles(p);
  case GemmTier::TensorCoreSm80: return chooseSm80Tiles(p);
  case GemmTier::TensorCoreSm90: return chooseSm90Tiles(p);
  case GemmTier::Simt: return chooseSimtTiles(p);
  }
  return std::nullopt;
}

int64_t persistentGrid(const GemmProblem &p, const TileConfig &t) {
  // The blocks an SM holds with the persistent kernel's shared memory (its
  // staging apart from the stages).
  TileConfig persistent = t;
  persistent.persistent = 1;
  return kWgmmaGpu.sms * residentSm90Blocks(p, persistent);
}

} // namespace tessel::codegen
