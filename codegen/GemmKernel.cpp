//===- GemmKernel.cpp - one implicit-GEMM kernel, tiled, as MLIR ----------===//
//
// The kernel, outermost first:
//   grid    x: ceil(M / blockM) row tiles, y: ceil(N / blockN) column tiles,
//           z: matmul batches or conv groups
//   prologue  the block's threads gather K step 0's A tile (blockM x
//           blockK) and B tile (blockN x blockK) from the operands into
//           shared buffer 0, zero where a row, a column or k is out of range
//           and where the conv window reads padding; barrier.
//   K loop  software-pipelined over two shared buffers; step i:
//     prefetch  where a step i+1 exists, each thread loads its runs of it
//           from global memory into registers (the loads are in flight
//           during the math);
//     tc    each warp loads its fragsM A and fragsN B fragments from buffer
//           i % 2 (gpu.subgroup_mma_load_matrix) per k16 and accumulates
//           fragsM x fragsN f32 fragments (gpu.subgroup_mma_compute);
//     simt  each thread accumulates a microM x microN register tile with
//           scalar f32 FMAs from buffer i % 2;
//     store the prefetched runs into buffer (i+1) % 2, which no warp reads
//           in step i; barrier (one per step: it both publishes buffer
//           (i+1) % 2 and frees buffer i % 2 for step i+1's stores).
//   epilogue  the accumulators go through shared memory as f32 (tc: one band
//           of fragment rows at a time, simt: the whole tile), then every
//           thread takes elements in row-major order (coalesced stores):
//           alpha *, + bias / beta * C, + residual, activation, one rounding
//           to the result's type, stored where the element is in range.
//
// Gathers move 16 bytes per load where the operand allows it (a run of 8 f16
// or 4 f32 along the operand's contiguous dimension that is either wholly in
// range or wholly out: conv channels per group a multiple of it, gemm and
// matmul extents a multiple of it); shared memory keeps the operand's
// contiguous dimension contiguous, so those runs are stored as one 16-byte
// store too, and WMMA loads the fragment row- or column-major accordingly.
//
//===----------------------------------------------------------------------===//
#include "GemmKernel.h"

#include "WmmaGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;

namespace tessel::codegen {

namespace {
constexpr int64_t kWarpSize = 32;
constexpr int64_t kSharedAlignment = 128;
/// Static shared memory a kernel may declare without opting in.
constexpr int64_t kMaxSharedBytes = 48 * 1024;
/// Warps per SM the Tensor Core kernels ask room for (KernelBuilder::build).
constexpr int64_t kWarpsPerSM = 16;
constexpr int64_t kMaxGridYZ = 65535;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
} // namespace

std::optional<Activation> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Cases("", "none", Activation::None)
      .Case("relu", Activation::Relu)
      .Case("clip", Activation::Clip)
      .Case("leaky_relu", Activation::LeakyRelu)
      .Case("sigmoid", Activation::Sigmoid)
      .Case("tanh", Activation::Tanh)
      .Case("hard_swish", Activation::HardSwish)
      .Default(std::nullopt);
}

llvm::StringRef activationName(Activation act) {
  switch (act) {
  case Activation::None: return "none";
  case Activation::Relu: return "relu";
  case Activation::Clip: return "clip";
  case Activation::LeakyRelu: return "leaky_relu";
  case Activation::Sigmoid: return "sigmoid";
  case Activation::Tanh: return "tanh";
  case Activation::HardSwish: return "hard_swish";
  }
  return "none";
}

int64_t elemBytes(ElemType type) { return type == ElemType::F16 ? 2 : 4; }

static const char *elemName(ElemType type) { return type == ElemType::F16 ? "f16" : "f32"; }

static uint32_t floatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

GemmProblem GemmProblem::forConv(const ConvShape &conv, ElemType type) {
  GemmProblem p;
  p.op = GemmOpKind::Conv;
  p.a = p.b = p.out = type;
  p.conv = conv;
  p.m = conv.batch * conv.outH * conv.outW;
  p.n = conv.outC / conv.group;
  p.k = conv.kH * conv.kW * (conv.inC / conv.group);
  p.batch = conv.group;
  return p;
}

std::string GemmProblem::key() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << int(op) << ":" << m << "x" << n << "x" << k << "x" << batch << ":" << elemName(a)
     << elemName(b) << elemName(out) << ":" << (addend ? elemName(*addend) : "-")
     << (residual ? elemName(*residual) : "-");
  if (op == GemmOpKind::Conv)
    os << ":conv" << conv.batch << "," << conv.inH << "," << conv.inW << "," << conv.inC << ","
       << conv.outC << "," << conv.kH << "," << conv.kW << "," << conv.strideH << ","
       << conv.strideW << "," << conv.padH << "," << conv.padW << "," << conv.dilH << ","
       << conv.dilW << "," << conv.group << "," << conv.outH << "," << conv.outW;
  if (op == GemmOpKind::Gemm)
    os << ":gemm" << transA << transB << "," << floatBits(alpha) << "," << floatBits(beta) << ","
       << addendRowStride << "," << addendColStride;
  for (const BatchDim &d : batchDims)
    os << ":b" << d.extent << "," << d.aStride << "," << d.bStride;
  os << ":" << activationName(act) << "," << floatBits(actAlpha) << "," << floatBits(actBeta);
  return text;
}

/// Elements of each kernel parameter (the extent the kernel may address).
static int64_t operandElements(const GemmProblem &p, llvm::StringRef param) {
  const ConvShape &c = p.conv;
  int64_t batchA = 1, batchB = 1;
  for (const BatchDim &d : p.batchDims) {
    batchA += (d.extent - 1) * d.aStride;
    batchB += (d.extent - 1) * d.bStride;
  }
  if (param == "a")
    return p.op == GemmOpKind::Conv ? c.batch * c.inH * c.inW * c.inC : batchA * p.m * p.k;
  if (param == "b")
    return p.op == GemmOpKind::Conv ? c.outC * p.k : batchB * p.k * p.n;
  if (param == "addend")
    return p.op == GemmOpKind::Conv
               ? c.outC
               : (p.m - 1) * p.addendRowStride + (p.n - 1) * p.addendColStride + 1;
  // residual and out
  return p.op == GemmOpKind::Conv ? c.batch * c.outH * c.outW * c.outC : p.batch * p.m * p.n;
}

bool GemmProblem::needsWideIndex() const {
  constexpr int64_t kLimit = int64_t(1) << 31;
  for (llvm::StringRef param : {"a", "b", "addend", "out"})
    if (operandElements(*this, param) >= kLimit)
      return true;
  return false;
}

llvm::StringRef tierName(GemmTier tier) {
  return tier == GemmTier::TensorCore ? "tc-sm70" : "simt";
}

/// Threads per block of the direct conv and of the split-K reduction.
constexpr int64_t kElementwiseThreads = 256;

int64_t TileConfig::threads() const {
  if (direct)
    return kElementwiseThreads;
  return tier == GemmTier::TensorCore ? warpsM * warpsN * kWarpSize : threadsM * threadsN;
}

int64_t TileConfig::stepsPerSplit(int64_t k) const {
  return ceilDiv(ceilDiv(k, blockK), splitK);
}

//===----------------------------------------------------------------------===//
// Operand staging: how each operand's tile is read and kept in shared memory
//===----------------------------------------------------------------------===//

namespace {

/// One operand's tile, A (rows = m) or B (rows = n), both blockK deep.
struct Staging {
  ElemType type = ElemType::F16;
  int64_t rows = 0;
  /// In the operand, consecutive k are adjacent (else consecutive rows are).
  bool kContiguous = true;
  /// In shared memory, the tile is [rows][ld] (k contiguous) or [blockK][ld].
  bool sharedKContiguous = true;
  /// Elements per load: a run along the contiguous dimension, 16 bytes or 1.
  int64_t vector = 1;
  int64_t ld = 0;    ///< shared leading dimension, in elements
  int64_t bytes = 0; ///< shared bytes
};

/// Tile extents along a and b's rows, and blockK.
Staging stagingFor(const GemmProblem &p, const TileConfig &t, bool isA) {
  Staging s;
  s.type = isA ? p.a : p.b;
  s.rows = isA ? t.blockM : t.blockN;
  const int64_t runElems = 16 / elemBytes(s.type);
  const int64_t groupChannels = p.conv.inC / std::max<int64_t>(1, p.conv.group);
  bool runsFit = false; // runs of runElems never straddle the range's end
  switch (p.op) {
  case GemmOpKind::Conv:
    s.kContiguous = true; // input channels (A) and OHWI weights (B)
    runsFit = groupChannels % runElems == 0 && p.conv.inC % runElems == 0;
    break;
  case GemmOpKind::Gemm:
    s.kContiguous = isA ? !p.transA : p.transB;
    runsFit = (s.kContiguous ? p.k : (isA ? p.m : p.n)) % runElems == 0;
    break;
  case GemmOpKind::MatMul:
    s.kContiguous = isA; // A[..., M, K], B[..., K, N]
    runsFit = (isA ? p.k : p.n) % runElems == 0;
    break;
  }
  if (runsFit && (s.kContiguous ? t.blockK : s.rows) % runElems == 0)
    s.vector = runElems;
  s.sharedKContiguous = s.kContiguous;
  // A WMMA fragment must start on 32 bytes; a column-major A (row-major B)
  // fragment starts every fragM (fragN) elements along a shared row, which
  // is 16 bytes for the 8-wide fragments: keep those tiles k-contiguous.
  if (t.tier == GemmTier::TensorCore && !s.kContiguous && (isA ? t.fragM : t.fragN) < 16)
    s.sharedKContiguous = true;
  // 16 bytes of padding per shared row: rows stay 16-byte aligned for the
  // vector stores and WMMA's ldm (a multiple of 8 f16), and consecutive rows
  // start in different banks.
  const int64_t pad = 16 / elemBytes(s.type);
  s.ld = (s.sharedKContiguous ? t.blockK : s.rows) + pad;
  s.bytes = (s.sharedKContiguous ? s.rows : t.blockK) * s.ld * elemBytes(s.type);
  return s;
}

/// The f32 staging of the accumulators for the epilogue: tc stages one band
/// of fragment rows (warpsM * fragM rows), simt the whole tile.
int64_t stagingRows(const TileConfig &t) {
  return t.tier == GemmTier::TensorCore ? t.warpsM * t.fragM : t.blockM;
}
int64_t stagingLd(const TileConfig &t) { return t.blockN + 4; }

/// The block's shared memory: two buffers, each an A tile and a B tile (the
/// K loop stores step i+1 into one while the warps read step i from the
/// other), reused after the loop as the epilogue's f32 staging.
struct SharedPlan {
  Staging a, b;
  int64_t bOffset = 0;     ///< B's tile within a buffer
  int64_t bufferBytes = 0; ///< buffer i starts at i * bufferBytes
  int64_t bytes = 0;
};

SharedPlan sharedPlan(const GemmProblem &p, const TileConfig &t) {
  SharedPlan plan;
  plan.a = stagingFor(p, t, /*isA=*/true);
  plan.b = stagingFor(p, t, /*isA=*/false);
  plan.bOffset = roundUp(plan.a.bytes, kSharedAlignment);
  plan.bufferBytes = roundUp(plan.bOffset + plan.b.bytes, kSharedAlignment);
  int64_t staging = stagingRows(t) * stagingLd(t) * 4;
  plan.bytes = roundUp(std::max(2 * plan.bufferBytes, staging), kSharedAlignment);
  return plan;
}

/// Runs a thread moves per K step: ceil(runs of the tile / threads).
int64_t gatherSlots(const Staging &s, const TileConfig &t) {
  return ceilDiv(s.rows * t.blockK / s.vector, t.threads());
}

/// 32-bit registers that hold a thread's prefetched runs across the math.
int64_t prefetchRegisters(const SharedPlan &plan, const TileConfig &t) {
  int64_t registers = 0;
  for (const Staging &s : {plan.a, plan.b})
    registers += gatherSlots(s, t) * ceilDiv(s.vector * elemBytes(s.type), 4);
  return registers;
}

} // namespace

//===----------------------------------------------------------------------===//
// The tiling heuristic
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

namespace {
constexpr double kReferenceSMs = 108;
constexpr double kLoadBytesPerClock = 64;
constexpr double kStepOverhead = 64;
constexpr double kReduceLaunchClocks = 3000;
constexpr int64_t kMaxPrefetchRegisters = 32;
constexpr int64_t kSplitKChoices[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};

double tilingCost(const GemmProblem &p, const TileConfig &t, double macsPerClock) {
  double blocks = double(ceilDiv(p.m, t.blockM)) * ceilDiv(p.n, t.blockN) * p.batch * t.splitK;
  double waves = std::ceil(blocks / kReferenceSMs);
  double steps = double(t.stepsPerSplit(p.k));
  double math = double(t.blockM) * t.blockN * t.blockK / macsPerClock;
  double loads =
      double(t.blockM * elemBytes(p.a) + t.blockN * elemBytes(p.b)) * t.blockK / kLoadBytesPerClock;
  double cost = waves * (loads + steps * (std::max(math, loads) + kStepOverhead));
  if (t.splitK > 1)
    cost += kReduceLaunchClocks + double(p.batch) * p.m * p.n * (8.0 * t.splitK + 4) /
                                      (kLoadBytesPerClock * kReferenceSMs);
  return cost;
}

/// Whether the tiling fits the hardware and the generator's limits.
bool feasible(const GemmProblem &p, const TileConfig &t) {
  if (t.threads() > 1024 || t.threads() % kWarpSize != 0)
    return false;
  // Both buffers (or the epilogue's staging) within the static limit.
  SharedPlan plan = sharedPlan(p, t);
  if (plan.bytes > kMaxSharedBytes)
    return false;
  // Gathers are unrolled per thread: keep them short.
  for (const Staging &s : {plan.a, plan.b})
    if (gatherSlots(s, t) > 32)
      return false;
  // The prefetched runs stay live across the math, beside up to 128
  // accumulator registers and the fragments: at most 32 registers of them
  // keep every suite kernel within 255 registers a thread, without spills
  // (243 at most over the 511 rows; 128 for 8-fragment warp tiles).
  if (prefetchRegisters(plan, t) > kMaxPrefetchRegisters)
    return false;
  // Split-K: at least two K steps per split, none empty.
  if (t.splitK > 1) {
    int64_t steps = ceilDiv(p.k, t.blockK);
    if (t.stepsPerSplit(p.k) < 2 || (t.splitK - 1) * t.stepsPerSplit(p.k) >= steps)
      return false;
  }
  return ceilDiv(p.n, t.blockN) <= kMaxGridYZ && p.batch * t.splitK <= kMaxGridYZ &&
         ceilDiv(p.m, t.blockM) < (int64_t(1) << 31);
}

/// Whether a tile is mostly past the end of the problem even in its first
/// block: a tc fragment row or column entirely outside M or N, or half of a
/// simt tile.
bool idle(const GemmProblem &p, const TileConfig &t) {
  if (t.tier == GemmTier::TensorCore)
    return t.blockM > roundUp(p.m, t.fragM) || t.blockN > roundUp(p.n, t.fragN);
  return t.blockM >= 2 * p.m || t.blockN >= 2 * p.n;
}

/// The cheapest feasible candidate, each with every split-K choice, among
/// those not idle if any; ties go to the larger tile, then to fewer threads,
/// then to the first listed (the smaller split).
std::optional<TileConfig> cheapest(const GemmProblem &p, ArrayRef<TileConfig> tiles,
                                   double macsPerClock) {
  SmallVector<TileConfig> candidates;
  for (const TileConfig &tile : tiles)
    for (int64_t split : kSplitKChoices) {
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
      double cost = tilingCost(p, t, macsPerClock);
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

  SmallVector<int64_t> blockKs =
      p.k <= 16 ? SmallVector<int64_t>{16} : SmallVector<int64_t>{32, 64};
  SmallVector<TileConfig> candidates;
  for (int64_t warpsM : {1, 2, 4, 8})
    for (int64_t warpsN : {1, 2, 4, 8}) {
      if (warpsM * warpsN != 4 && warpsM * warpsN != 8)
        continue;
      for (int64_t fragsM : {1, 2, 4})
        for (int64_t fragsN : {1, 2, 4})
          for (int64_t blockK : blockKs) {
            // At most 8 accumulator fragments (64 f32 registers) per thread.
            // 64x64 warp tiles (16 fragments, ~240 registers, 8 warps per
            // SM) build and can be forced (--force-tiles), but measured on
            // the H100 they won 1% on the GEMM and conv suites and lost 5.4%
            // on ResNet-50 b256 (17.42 -> 18.41 ms, bench/NOTES.md).
            if (fragsM * fragsN > 8)
              continue;
            TileConfig t;
            t.tier = GemmTier::TensorCore;
            t.fragM = fragment.m;
            t.fragN = fragment.n;
            t.warpsM = warpsM;
            t.warpsN = warpsN;
            t.fragsM = fragsM;
            t.fragsN = fragsN;
            t.blockM = warpsM * fragsM * fragment.m;
            t.blockN = warpsN * fragsN * fragment.n;
            t.blockK = blockK;
            if (t.blockM <= 256 && t.blockN <= 256)
              candidates.push_back(t);
          }
    }
  return cheapest(p, candidates, 1024);
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
  return cheapest(p, candidates, 64);
}

} // namespace

/// Whether a conv is grouped with so few filters per group (depthwise: one)
/// that its GEMM is a few columns wide per group: the direct kernel's case.
static bool fewFiltersPerGroup(const GemmProblem &p) {
  return p.op == GemmOpKind::Conv && p.conv.group > 1 && p.n < 8;
}

std::optional<TileConfig> chooseTiles(const GemmProblem &p, GemmTier tier) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0)
    return std::nullopt;
  if (fewFiltersPerGroup(p)) {
    if (tier == GemmTier::TensorCore ||
        ceilDiv(p.m * p.conv.outC, kElementwiseThreads) >= (int64_t(1) << 31))
      return std::nullopt;
    TileConfig t;
    t.tier = GemmTier::Simt;
    t.direct = true;
    return t;
  }
  return tier == GemmTier::TensorCore ? chooseTensorCoreTiles(p) : chooseSimtTiles(p);
}

std::array<uint32_t, 3> GemmKernel::grid() const {
  if (tiles.direct)
    return {uint32_t(ceilDiv(problem.m * problem.conv.outC, kElementwiseThreads)), 1, 1};
  return {uint32_t(ceilDiv(problem.m, tiles.blockM)), uint32_t(ceilDiv(problem.n, tiles.blockN)),
          uint32_t(problem.batch * tiles.splitK)};
}

uint64_t GemmKernel::workspaceBytes() const {
  if (!splitsK())
    return 0;
  return uint64_t(problem.batch) * tiles.splitK * problem.m * problem.n * 4;
}

std::array<uint32_t, 3> GemmKernel::reduceGrid() const {
  return {uint32_t(ceilDiv(problem.batch * problem.m * problem.n, kElementwiseThreads)), 1, 1};
}

std::array<uint32_t, 3> GemmKernel::reduceBlock() const {
  return {uint32_t(kElementwiseThreads), 1, 1};
}

/// `params`, then the epilogue's operands: "addend" and "residual" where the
/// problem has them, then "out".
static llvm::SmallVector<llvm::StringRef>
withEpilogueOperands(const GemmProblem &p, llvm::SmallVector<llvm::StringRef> params) {
  if (p.addend)
    params.push_back("addend");
  if (p.residual)
    params.push_back("residual");
  params.push_back("out");
  return params;
}

llvm::SmallVector<llvm::StringRef> GemmKernel::reduceParameters() const {
  return withEpilogueOperands(problem, {"workspace"});
}

std::array<uint32_t, 3> GemmKernel::block() const { return {uint32_t(tiles.threads()), 1, 1}; }

int GemmKernel::alignment() const {
  int64_t align = std::max(elemBytes(problem.a), elemBytes(problem.b));
  if (!tiles.direct) {
    SharedPlan plan = sharedPlan(problem, tiles);
    align = std::max(plan.a.vector * elemBytes(problem.a), plan.b.vector * elemBytes(problem.b));
  }
  for (ElemType t : {problem.out, problem.addend.value_or(problem.out),
                     problem.residual.value_or(problem.out)})
    align = std::max(align, elemBytes(t));
  return int(align);
}

llvm::SmallVector<llvm::StringRef> GemmKernel::parameters() const {
  if (splitsK())
    return {"a", "b", "workspace"};
  return withEpilogueOperands(problem, {"a", "b"});
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

namespace {

/// Where a gather slot's row of the operand starts, computed once per
/// thread before the K loop.
struct RowState {
  Value valid;   ///< the row (run of rows) is inside the GEMM
  Value address; ///< strided: element offset of (row, k = 0)
  // conv im2col: first pixel of the image, window origin (may be negative).
  Value imageBase, ihBase, iwBase;
};

/// One run a thread moves per K step: its place in the tile and its row.
struct GatherSlot {
  Value active; ///< null when every thread has this slot
  Value rowLocal, kLocal;
  RowState row;
};

/// One shared buffer's A and B tiles, as elements and, where runs are
/// vectors, as runs.
struct TileViews {
  Value a, aRuns, b, bRuns;
};

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, const GemmKernel &kernel)
      : b(b), loc(NameLoc::get(b.getStringAttr(kernel.name))), kernel(kernel), p(kernel.problem),
        t(kernel.tiles), plan(t.direct ? SharedPlan() : sharedPlan(p, t)) {}

  LogicalResult build(gpu::GPUModuleOp module);
  /// Split-K: the kernel that sums the workspace's splits and runs the
  /// epilogue.
  LogicalResult buildReduce(gpu::GPUModuleOp module);
  /// The direct conv (tiles.direct): one thread per output element.
  LogicalResult buildDirect(gpu::GPUModuleOp module);

private:
  // Index arithmetic, folded where constant.
  Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  Value add(Value x, Value y) { return b.createOrFold<arith::AddIOp>(loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, c(y)) : x; }
  Value sub(Value x, int64_t y) { return y ? b.createOrFold<arith::SubIOp>(loc, x, c(y)) : x; }
  Value mul(Value x, Value y) { return b.createOrFold<arith::MulIOp>(loc, x, y); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, c(y)); }
  Value div(Value x, int64_t y) {
    return y == 1 ? x : b.createOrFold<arith::DivUIOp>(loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return y == 1 ? c(0) : b.createOrFold<arith::RemUIOp>(loc, x, c(y));
  }
  Value cmp(arith::CmpIPredicate pred, Value x, int64_t y) {
    return b.createOrFold<arith::CmpIOp>(loc, pred, x, c(y));
  }
  Value below(Value x, int64_t y) { return cmp(arith::CmpIPredicate::ult, x, y); }
  Value both(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return b.createOrFold<arith::AndIOp>(loc, x, y);
  }
  // f32 arithmetic.
  Value f(float v) { return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v)); }
  Value fadd(Value x, Value y) { return b.create<arith::AddFOp>(loc, x, y); }
  Value fsub(Value x, Value y) { return b.create<arith::SubFOp>(loc, x, y); }
  Value fmul(Value x, Value y) { return b.create<arith::MulFOp>(loc, x, y); }
  Value fdiv(Value x, Value y) { return b.create<arith::DivFOp>(loc, x, y); }
  Value fcmp(arith::CmpFPredicate pred, Value x, Value y) {
    return b.create<arith::CmpFOp>(loc, pred, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return b.create<arith::SelectOp>(loc, cond, x, y);
  }
  Value fneg(Value x) { return b.create<arith::NegFOp>(loc, x); }
  /// x * y + z with one rounding (fma.rn.f32).
  Value fma(Value x, Value y, Value z) { return b.create<LLVM::FMAOp>(loc, x, y, z); }
  Value fabs(Value x) { return select(fcmp(arith::CmpFPredicate::OLT, x, f(0.0f)), fneg(x), x); }
  Value toF32(Value v) {
    return v.getType().isF32() ? v : b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
  }
  Value inlinePtx(llvm::StringRef text, llvm::StringRef constraints, ValueRange operands) {
    return b
        .create<LLVM::InlineAsmOp>(loc, b.getF32Type(), operands, text, constraints,
                                   /*has_side_effects=*/false, /*is_align_stack=*/false,
                                   LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }

  Type elemType(ElemType type) {
    return type == ElemType::F16 ? Type(b.getF16Type()) : Type(b.getF32Type());
  }
  Type runType(const Staging &s) {
    Type e = elemType(s.type);
    return s.vector == 1 ? e : Type(VectorType::get({s.vector}, e));
  }
  /// A typed view of a byte buffer.
  Value view(Value bytes, Value byteOffset, ArrayRef<int64_t> shape, Type element) {
    auto source = cast<MemRefType>(bytes.getType());
    auto type = MemRefType::get(shape, element, AffineMap(), source.getMemorySpace());
    return b.create<memref::ViewOp>(loc, type, bytes, byteOffset, ValueRange{});
  }
  Value view(Value bytes, int64_t byteOffset, ArrayRef<int64_t> shape, Type element) {
    return view(bytes, c(byteOffset), shape, element);
  }

  void declareViews(gpu::GPUFuncOp func, Value sharedBytes);
  TileViews tileViews(Value bufferOffset);
  GatherSlot slotSetup(bool isA, int64_t slot);
  RowState rowSetup(bool isA, Value row);
  Value loadRun(bool isA, const RowState &row, Value active, Value k);
  void storeRun(bool isA, const TileViews &tiles, Value rowLocal, Value kLocal, Value run);
  SmallVector<Value> loadSlots(bool isA, ArrayRef<GatherSlot> slots, Value k0);
  void storeSlots(bool isA, ArrayRef<GatherSlot> slots, ValueRange runs, const TileViews &tiles);
  SmallVector<Value> tensorCoreStep(const TileViews &tiles, ValueRange accs);
  SmallVector<Value> simtStep(const TileViews &tiles, ValueRange accs);
  void tensorCoreEpilogue(ValueRange accs);
  void simtEpilogue(ValueRange accs);
  void epilogueLoop(int64_t rows, function_ref<Value(Value)> tileRow);
  void epilogueElement(Value m, Value n, Value v);
  int64_t epilogueLanes() const;
  void epilogueRun(Value m, Value n, ArrayRef<Value> values);
  Value epilogueValue(Value v, Value addendTerm, Value residualTerm);
  Value outAddress(Value m, Value n);
  Value addendAddress(Value m, Value n);
  void storePartial(Value m, Value n, Value v);
  /// The byte buffer type of a parameter of either kernel.
  Type paramType(llvm::StringRef param);
  /// A new kernel function with `params`, the builder inside it.
  gpu::GPUFuncOp beginFunc(gpu::GPUModuleOp module, llvm::StringRef name,
                           ArrayRef<llvm::StringRef> params, int64_t threads);
  /// The f32 element view of the workspace argument.
  Value workspaceView(Value bytes);
  /// The epilogue's operand views (addend, residual, out) from `func`'s
  /// arguments named by `params`.
  void epilogueViews(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params);
  /// The element view of `func`'s argument `name` of `params`.
  Value elementView(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params,
                    llvm::StringRef name, ElemType type);
  Value activate(Value v);
  Value exp(Value x);

  OpBuilder &b;
  Location loc;
  const GemmKernel &kernel;
  const GemmProblem &p;
  const TileConfig &t;
  SharedPlan plan;

  Value tid, z, m0, n0;
  Value split; ///< this block's K split (split-K), else 0
  // Operands: element views and, where runs are vectors, run views.
  Value aElems, aRuns, bElems, bRuns, addend, residual, out, workspace;
  // The epilogue's vector views (epilogueLanes() > 1), null where its
  // operand is read element by element.
  Value outRuns, addendRuns, residualRuns;
  // Operand offsets of batch z (matmul) or group z (conv).
  Value aBatchOffset, bBatchOffset;
  // Shared memory: the whole buffer; the epilogue's f32 staging.
  Value shared, staging;
};

void KernelBuilder::declareViews(gpu::GPUFuncOp func, Value sharedBytes) {
  shared = sharedBytes;
  auto params = kernel.parameters();
  auto arg = [&](llvm::StringRef name) -> Value {
    auto it = llvm::find(params, name);
    return it == params.end() ? Value() : func.getArgument(it - params.begin());
  };
  auto elems = [&](llvm::StringRef name, ElemType type) {
    return view(arg(name), 0, {operandElements(p, name)}, elemType(type));
  };
  aElems = elems("a", p.a);
  bElems = elems("b", p.b);
  if (plan.a.vector > 1)
    aRuns = view(arg("a"), 0, {operandElements(p, "a") / plan.a.vector}, runType(plan.a));
  if (plan.b.vector > 1)
    bRuns = view(arg("b"), 0, {operandElements(p, "b") / plan.b.vector}, runType(plan.b));
  if (kernel.splitsK())
    workspace = workspaceView(arg("workspace"));
  else
    epilogueViews(func, params);

  staging = view(shared, 0, {stagingRows(t), stagingLd(t)}, b.getF32Type());
}

/// The tiles of the shared buffer that starts at byte `bufferOffset`.
TileViews KernelBuilder::tileViews(Value bufferOffset) {
  auto tileShape = [&](const Staging &s, int64_t perElem) -> SmallVector<int64_t> {
    return {s.sharedKContiguous ? s.rows : t.blockK, s.ld / perElem};
  };
  Value bAt = add(bufferOffset, plan.bOffset);
  TileViews v;
  v.a = view(shared, bufferOffset, tileShape(plan.a, 1), elemType(p.a));
  v.b = view(shared, bAt, tileShape(plan.b, 1), elemType(p.b));
  if (plan.a.vector > 1)
    v.aRuns = view(shared, bufferOffset, tileShape(plan.a, plan.a.vector), runType(plan.a));
  if (plan.b.vector > 1)
    v.bRuns = view(shared, bAt, tileShape(plan.b, plan.b.vector), runType(plan.b));
  return v;
}

/// Row (or run of rows) `row` of operand A (m) or B (n), before the K loop.
RowState KernelBuilder::rowSetup(bool isA, Value row) {
  RowState s;
  s.valid = below(row, isA ? p.m : p.n);
  const ConvShape &cv = p.conv;
  if (p.op == GemmOpKind::Conv && isA) {
    bool pointwise = cv.kH == 1 && cv.kW == 1 && cv.strideH == 1 && cv.strideW == 1 &&
                     cv.padH == 0 && cv.padW == 0;
    if (pointwise) {
      // The input is the A matrix itself: [M][inC], group z's channels.
      s.address = add(mul(row, cv.inC), aBatchOffset);
      return s;
    }
    Value image = div(row, cv.outH * cv.outW);
    Value pixel = rem(row, cv.outH * cv.outW);
    s.imageBase = mul(image, cv.inH * cv.inW);
    s.ihBase = sub(mul(div(pixel, cv.outW), cv.strideH), cv.padH);
    s.iwBase = sub(mul(rem(pixel, cv.outW), cv.strideW), cv.padW);
    return s;
  }
  // Strided operands: element (row, k) at offset + row * rowStride + k * kStride.
  int64_t rowStride = 1;
  switch (p.op) {
  case GemmOpKind::Conv: rowStride = p.k; break; // OHWI weights, [Cout][K]
  case GemmOpKind::Gemm:
    rowStride = isA ? (p.transA ? 1 : p.k) : (p.transB ? p.k : 1);
    break;
  case GemmOpKind::MatMul: rowStride = isA ? p.k : 1; break;
  }
  s.address = add(mul(row, rowStride), isA ? aBatchOffset : bBatchOffset);
  return s;
}

GatherSlot KernelBuilder::slotSetup(bool isA, int64_t slot) {
  const Staging &s = isA ? plan.a : plan.b;
  const int64_t runs = s.rows * t.blockK / s.vector;
  GatherSlot g;
  Value e = add(tid, slot * t.threads());
  if (runs % t.threads() != 0)
    g.active = below(e, runs);
  if (s.kContiguous) {
    // Consecutive threads take consecutive runs of a row's k.
    int64_t runsPerRow = t.blockK / s.vector;
    g.rowLocal = div(e, runsPerRow);
    g.kLocal = mul(rem(e, runsPerRow), s.vector);
  } else {
    // Consecutive threads take consecutive runs of rows at one k.
    int64_t runsPerK = s.rows / s.vector;
    g.kLocal = div(e, runsPerK);
    g.rowLocal = mul(rem(e, runsPerK), s.vector);
  }
  g.row = rowSetup(isA, add(isA ? m0 : n0, g.rowLocal));
  return g;
}

/// The run of operand elements at (row, k): a vector (or one element), zero
/// where it lies outside the GEMM or in the conv's padding, or where the
/// slot is not `active` (null: always active).
Value KernelBuilder::loadRun(bool isA, const RowState &row, Value active, Value k) {
  const Staging &s = isA ? plan.a : plan.b;
  Value inRange = both(active, both(row.valid, below(k, p.k)));
  Value address;
  if (row.imageBase) {
    // im2col: k = (kh * kW + kw) * groupChannels + c.
    const ConvShape &cv = p.conv;
    int64_t groupChannels = cv.inC / cv.group;
    Value tap = div(k, groupChannels), channel = rem(k, groupChannels);
    Value ih = add(row.ihBase, mul(div(tap, cv.kW), cv.dilH));
    Value iw = add(row.iwBase, mul(rem(tap, cv.kW), cv.dilW));
    using P = arith::CmpIPredicate;
    inRange = both(inRange, both(both(cmp(P::sge, ih, 0), cmp(P::slt, ih, cv.inH)),
                                 both(cmp(P::sge, iw, 0), cmp(P::slt, iw, cv.inW))));
    Value pixel = add(row.imageBase, add(mul(ih, cv.inW), iw));
    address = add(add(mul(pixel, cv.inC), aBatchOffset), channel);
  } else {
    int64_t kStride = 1;
    if (p.op == GemmOpKind::Gemm)
      kStride = isA ? (p.transA ? p.m : 1) : (p.transB ? 1 : p.n);
    else if (p.op == GemmOpKind::MatMul)
      kStride = isA ? 1 : p.n;
    address = add(row.address, mul(k, kStride));
  }
  Type type = runType(s);
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{type}, inRange, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value loaded = s.vector == 1
                       ? b.create<memref::LoadOp>(loc, isA ? aElems : bElems, address).getResult()
                       : b.create<memref::LoadOp>(loc, isA ? aRuns : bRuns,
                                                  div(address, s.vector))
                             .getResult();
    b.create<scf::YieldOp>(loc, loaded);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    Attribute zero = b.getZeroAttr(type);
    b.create<scf::YieldOp>(loc, b.create<arith::ConstantOp>(loc, cast<TypedAttr>(zero)).getResult());
  }
  return ifOp.getResult(0);
}

void KernelBuilder::storeRun(bool isA, const TileViews &tiles, Value rowLocal, Value kLocal,
                             Value run) {
  const Staging &s = isA ? plan.a : plan.b;
  Value tile = isA ? tiles.a : tiles.b, tileRuns = isA ? tiles.aRuns : tiles.bRuns;
  if (s.sharedKContiguous == s.kContiguous) {
    // The run lies along the shared row too.
    Value rowIndex = s.sharedKContiguous ? rowLocal : kLocal;
    Value along = s.sharedKContiguous ? kLocal : rowLocal;
    if (s.vector == 1)
      b.create<memref::StoreOp>(loc, run, tile, ValueRange{rowIndex, along});
    else
      b.create<memref::StoreOp>(loc, run, tileRuns, ValueRange{rowIndex, div(along, s.vector)});
    return;
  }
  // A run of rows into a k-contiguous tile: one element per shared row.
  for (int64_t i = 0; i < s.vector; ++i) {
    Value element = s.vector == 1 ? run : b.create<vector::ExtractOp>(loc, run, i).getResult();
    b.create<memref::StoreOp>(loc, element, tile, ValueRange{add(rowLocal, i), kLocal});
  }
}

/// The thread's runs of the K step at k0, into registers.
SmallVector<Value> KernelBuilder::loadSlots(bool isA, ArrayRef<GatherSlot> slots, Value k0) {
  SmallVector<Value> runs;
  for (const GatherSlot &slot : slots)
    runs.push_back(loadRun(isA, slot.row, slot.active, add(k0, slot.kLocal)));
  return runs;
}

/// The thread's runs, from registers into a buffer's tile.
void KernelBuilder::storeSlots(bool isA, ArrayRef<GatherSlot> slots, ValueRange runs,
                               const TileViews &tiles) {
  for (auto [slot, run] : llvm::zip_equal(slots, runs)) {
    OpBuilder::InsertionGuard guard(b);
    if (slot.active) {
      auto ifOp = b.create<scf::IfOp>(loc, slot.active, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    storeRun(isA, tiles, slot.rowLocal, slot.kLocal, run);
  }
}

SmallVector<Value> KernelBuilder::tensorCoreStep(const TileViews &tiles, ValueRange accs) {
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  auto aFrag = gpu::MMAMatrixType::get({t.fragM, t.fragK}, f16, "AOp");
  auto bFrag = gpu::MMAMatrixType::get({t.fragK, t.fragN}, f16, "BOp");
  auto cFrag = gpu::MMAMatrixType::get({t.fragM, t.fragN}, f32, "COp");
  Value warp = div(tid, kWarpSize);
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

SmallVector<Value> KernelBuilder::simtStep(const TileViews &tiles, ValueRange accs) {
  Value tm = div(tid, t.threadsN), tn = rem(tid, t.threadsN);
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

void KernelBuilder::tensorCoreEpilogue(ValueRange accs) {
  Value warp = div(tid, kWarpSize);
  Value warpM = div(warp, t.warpsN);
  Value warpCol = mul(rem(warp, t.warpsN), t.fragsN * t.fragN);
  // Band i holds fragment row i of every warp: staging row warpM * fragM + r
  // is tile row warpM * fragsM * fragM + i * fragM + r.
  for (int64_t i = 0; i < t.fragsM; ++i) {
    for (int64_t j = 0; j < t.fragsN; ++j)
      b.create<gpu::SubgroupMmaStoreMatrixOp>(
          loc, accs[i * t.fragsN + j], staging,
          ValueRange{mul(warpM, t.fragM), add(warpCol, j * t.fragN)},
          b.getIndexAttr(stagingLd(t)), UnitAttr());
    b.create<gpu::BarrierOp>(loc);
    epilogueLoop(t.warpsM * t.fragM, [&](Value row) {
      return add(mul(div(row, t.fragM), t.fragsM * t.fragM), add(rem(row, t.fragM), i * t.fragM));
    });
    // The next band's stores wait until every thread has read this one.
    if (i + 1 < t.fragsM)
      b.create<gpu::BarrierOp>(loc);
  }
}

void KernelBuilder::simtEpilogue(ValueRange accs) {
  Value tm = div(tid, t.threadsN), tn = rem(tid, t.threadsN);
  for (int64_t i = 0; i < t.microM; ++i)
    for (int64_t j = 0; j < t.microN; ++j)
      b.create<memref::StoreOp>(loc, accs[i * t.microN + j], staging,
                                ValueRange{add(tm, i * t.threadsM), add(tn, j * t.threadsN)});
  b.create<gpu::BarrierOp>(loc);
  epilogueLoop(t.blockM, [](Value row) { return row; });
}

/// Every thread takes staged elements in row-major order, so that a warp
/// stores (and reads the residual) along contiguous output rows.
void KernelBuilder::epilogueLoop(int64_t rows, function_ref<Value(Value)> tileRow) {
  if (const int64_t lanes = epilogueLanes(); lanes > 1) {
    // Runs of `lanes` columns: one 16-byte store of the output per thread.
    const int64_t runsPerRow = t.blockN / lanes;
    b.create<scf::ForOp>(loc, tid, c(rows * runsPerRow), c(t.threads()), ValueRange{},
                         [&](OpBuilder &, Location, Value e, ValueRange) {
                           Value row = div(e, runsPerRow), col = mul(rem(e, runsPerRow), lanes);
                           SmallVector<Value> values;
                           for (int64_t l = 0; l < lanes; ++l)
                             values.push_back(b.create<memref::LoadOp>(
                                 loc, staging, ValueRange{row, add(col, l)}));
                           epilogueRun(add(m0, tileRow(row)), add(n0, col), values);
                           b.create<scf::YieldOp>(loc);
                         });
    return;
  }
  b.create<scf::ForOp>(loc, tid, c(rows * t.blockN), c(t.threads()), ValueRange{},
                       [&](OpBuilder &, Location, Value e, ValueRange) {
                         Value row = div(e, t.blockN), col = rem(e, t.blockN);
                         Value v = b.create<memref::LoadOp>(loc, staging, ValueRange{row, col});
                         Value m = add(m0, tileRow(row)), n = add(n0, col);
                         if (kernel.splitsK())
                           storePartial(m, n, v);
                         else
                           epilogueElement(m, n, v);
                         b.create<scf::YieldOp>(loc);
                       });
}

Value KernelBuilder::outAddress(Value m, Value n) {
  switch (p.op) {
  case GemmOpKind::Conv: // groups side by side in the channels
    return add(add(mul(m, p.conv.outC), mul(z, p.n)), n);
  case GemmOpKind::Gemm: return add(mul(m, p.n), n);
  case GemmOpKind::MatMul: return add(add(mul(z, p.m * p.n), mul(m, p.n)), n);
  }
  return Value();
}

Value KernelBuilder::addendAddress(Value m, Value n) {
  return p.op == GemmOpKind::Conv ? add(mul(z, p.n), n)
                                  : add(mul(m, p.addendRowStride), mul(n, p.addendColStride));
}

/// The CPU tier's order (nn.cpp, epilogueRow): alpha * acc, + the first
/// addend (bias, or beta * C), + the residual, activation, one rounding.
Value KernelBuilder::epilogueValue(Value v, Value addendTerm, Value residualTerm) {
  if (p.alpha != 1.0f)
    v = fmul(v, f(p.alpha));
  if (addendTerm) {
    Value term = toF32(addendTerm);
    if (p.op == GemmOpKind::Gemm && p.beta != 1.0f)
      term = fmul(f(p.beta), term);
    v = fadd(v, term);
  }
  if (residualTerm)
    v = fadd(v, toF32(residualTerm));
  v = activate(v);
  if (p.out == ElemType::F16)
    v = b.create<arith::TruncFOp>(loc, b.getF16Type(), v);
  return v;
}

void KernelBuilder::epilogueElement(Value m, Value n, Value v) {
  auto ifOp = b.create<scf::IfOp>(loc, both(below(m, p.m), below(n, p.n)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value at = outAddress(m, n);
  Value addendTerm =
      p.addend ? b.create<memref::LoadOp>(loc, addend, addendAddress(m, n)).getResult() : Value();
  Value residualTerm =
      p.residual ? b.create<memref::LoadOp>(loc, residual, at).getResult() : Value();
  b.create<memref::StoreOp>(loc, epilogueValue(v, addendTerm, residualTerm), out, at);
}

/// 16 bytes of output per thread where every run of that many columns is
/// wholly in or out of range and 16-byte aligned: N and the tile's width
/// multiples of the lanes (so are the conv's channel count and the
/// matmul's batch stride), and no split-K (whose partials stay f32).
int64_t KernelBuilder::epilogueLanes() const {
  const int64_t lanes = 16 / elemBytes(p.out);
  if (t.direct || kernel.splitsK() || t.blockN % lanes != 0 || p.n % lanes != 0)
    return 1;
  return lanes;
}

/// A run of epilogueLanes() columns from n: the addend (where contiguous
/// along n) and the residual (where of the output's type) read as vectors,
/// the output written as one.
void KernelBuilder::epilogueRun(Value m, Value n, ArrayRef<Value> values) {
  const int64_t lanes = int64_t(values.size());
  auto ifOp = b.create<scf::IfOp>(loc, both(below(m, p.m), below(n, p.n)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value at = outAddress(m, n);
  // Per lane: the element of a vector load, or a scalar load.
  auto operandLanes = [&](Value elems, Value runs, Value address, int64_t stride) {
    SmallVector<Value> lane;
    if (runs) {
      Value run = b.create<memref::LoadOp>(loc, runs, div(address, lanes));
      for (int64_t l = 0; l < lanes; ++l)
        lane.push_back(b.create<vector::ExtractOp>(loc, run, l));
    } else {
      for (int64_t l = 0; l < lanes; ++l)
        lane.push_back(b.create<memref::LoadOp>(loc, elems, add(address, l * stride)));
    }
    return lane;
  };
  SmallVector<Value> addendTerms(lanes), residualTerms(lanes);
  if (p.addend)
    addendTerms = operandLanes(addend, addendRuns, addendAddress(m, n),
                               p.op == GemmOpKind::Conv ? 1 : p.addendColStride);
  if (p.residual)
    residualTerms = operandLanes(residual, residualRuns, at, 1);
  Type outType = elemType(p.out);
  Value result = b.create<arith::ConstantOp>(
      loc, cast<TypedAttr>(b.getZeroAttr(VectorType::get({lanes}, outType))));
  for (int64_t l = 0; l < lanes; ++l)
    result = b.create<vector::InsertOp>(
        loc, epilogueValue(values[l], addendTerms[l], residualTerms[l]), result, l);
  b.create<memref::StoreOp>(loc, result, outRuns, div(at, lanes));
}

/// Split-K: the block's f32 partial sum of (m, n) into the workspace,
/// [batch][splitK][M][N].
void KernelBuilder::storePartial(Value m, Value n, Value v) {
  auto ifOp = b.create<scf::IfOp>(loc, both(below(m, p.m), below(n, p.n)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value plane = add(mul(z, t.splitK), split);
  b.create<memref::StoreOp>(loc, v, workspace, add(mul(add(mul(plane, p.m), m), p.n), n));
}

Type KernelBuilder::paramType(llvm::StringRef param) {
  if (param == "workspace")
    return MemRefType::get({int64_t(kernel.workspaceBytes())}, b.getI8Type());
  ElemType type = param == "a"          ? p.a
                  : param == "b"        ? p.b
                  : param == "addend"   ? *p.addend
                  : param == "residual" ? *p.residual
                                        : p.out;
  return MemRefType::get({operandElements(p, param) * elemBytes(type)}, b.getI8Type());
}

gpu::GPUFuncOp KernelBuilder::beginFunc(gpu::GPUModuleOp module, llvm::StringRef name,
                                        ArrayRef<llvm::StringRef> params, int64_t threads) {
  Block *body = module.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&body->back());
  else
    b.setInsertionPointToEnd(body);
  SmallVector<Type> types;
  for (llvm::StringRef param : params)
    types.push_back(paramType(param));
  auto func = b.create<gpu::GPUFuncOp>(loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

Value KernelBuilder::workspaceView(Value bytes) {
  return view(bytes, 0, {int64_t(kernel.workspaceBytes() / 4)}, b.getF32Type());
}

Value KernelBuilder::elementView(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params,
                                 llvm::StringRef name, ElemType type) {
  Value bytes = func.getArgument(llvm::find(params, name) - params.begin());
  return view(bytes, 0, {operandElements(p, name)}, elemType(type));
}

void KernelBuilder::epilogueViews(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params) {
  if (p.addend)
    addend = elementView(func, params, "addend", *p.addend);
  if (p.residual)
    residual = elementView(func, params, "residual", *p.residual);
  out = elementView(func, params, "out", p.out);
  const int64_t lanes = epilogueLanes();
  if (lanes == 1)
    return;
  // Vector views of 16-byte runs: the output, and the residual and addend
  // where they have the output's type (and the addend runs along n).
  auto runs = [&](llvm::StringRef name) {
    Value bytes = func.getArgument(llvm::find(params, name) - params.begin());
    return view(bytes, 0, {operandElements(p, name) / lanes},
                VectorType::get({lanes}, elemType(p.out)));
  };
  outRuns = runs("out");
  if (p.residual && *p.residual == p.out)
    residualRuns = runs("residual");
  bool addendAlongN = p.op == GemmOpKind::Conv ||
                      (p.addendColStride == 1 && p.addendRowStride % lanes == 0 &&
                       operandElements(p, "addend") % lanes == 0);
  if (p.addend && *p.addend == p.out && addendAlongN)
    addendRuns = runs("addend");
}

/// One thread per output element (m, channel), consecutive threads on
/// consecutive channels (contiguous in NHWC): the sum over the group's input
/// channels in the window, in (kh, kw, c) order, then the epilogue.
LogicalResult KernelBuilder::buildDirect(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<llvm::StringRef> params = kernel.parameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.name, params, kElementwiseThreads);
  aElems = elementView(func, params, "a", p.a);
  bElems = elementView(func, params, "b", p.b);
  epilogueViews(func, params);

  const ConvShape &cv = p.conv;
  const int64_t groupChannels = cv.inC / cv.group;
  tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value index =
      add(mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x), kElementwiseThreads), tid);
  auto inside = b.create<scf::IfOp>(loc, below(index, p.m * cv.outC), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value channel = rem(index, cv.outC), m = div(index, cv.outC);
  z = div(channel, p.n); // the group
  Value n = rem(channel, p.n);
  Value image = div(m, cv.outH * cv.outW), pixel = rem(m, cv.outH * cv.outW);
  Value ihBase = sub(mul(div(pixel, cv.outW), cv.strideH), cv.padH);
  Value iwBase = sub(mul(rem(pixel, cv.outW), cv.strideW), cv.padW);
  Value inputChannel0 = mul(z, groupChannels);
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
  epilogueElement(m, n, sum);
  b.setInsertionPointToEnd(&func.getBody().front());
  b.create<gpu::ReturnOp>(loc);
  return success();
}

/// One thread per output element (consecutive threads, consecutive n): the
/// splits' partial sums added in split order, so the result does not depend
/// on which block finished first, then the epilogue.
LogicalResult KernelBuilder::buildReduce(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<llvm::StringRef> params = kernel.reduceParameters();
  gpu::GPUFuncOp func = beginFunc(module, kernel.reduceName(), params, kElementwiseThreads);
  workspace = workspaceView(func.getArgument(0));
  epilogueViews(func, params);

  tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value index = add(mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x), kElementwiseThreads), tid);
  const int64_t plane = p.m * p.n;
  auto inside = b.create<scf::IfOp>(loc, below(index, p.batch * plane), false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());
  Value n = rem(index, p.n), m = rem(div(index, p.n), p.m);
  z = div(index, plane);
  Value first = add(mul(z, t.splitK * plane), add(mul(m, p.n), n));
  Value sum = b.create<memref::LoadOp>(loc, workspace, first);
  for (int64_t s = 1; s < t.splitK; ++s)
    sum = fadd(sum, b.create<memref::LoadOp>(loc, workspace, add(first, s * plane)));
  epilogueElement(m, n, sum);
  b.setInsertionPointToEnd(&func.getBody().front());
  b.create<gpu::ReturnOp>(loc);
  return success();
}

/// e^x as 2^(x log2 e) on the SFU (ex2.approx, 2 ulp), with the rounding
/// error of x * log2(e) added back to first order, so that the result is
/// within a few f32 ulp over the whole range (no libdevice needed).
Value KernelBuilder::exp(Value x) {
  const float log2e = 1.44269502f;         // log2(e) rounded to f32
  const float log2eLow = 1.925963033e-8f;  // log2(e) - log2e
  Value y = fmul(x, f(log2e));
  // err = x * log2(e) - y, exactly via FMA, plus the constant's own error.
  Value err = fma(x, f(log2eLow), fma(x, f(log2e), fneg(y)));
  Value r = inlinePtx("ex2.approx.f32 $0, $1;", "=f,f", ValueRange{y});
  // 2^(y + err) = 2^y (1 + err ln 2); skipped where 2^y is 0 or inf (err NaN).
  Value small = fcmp(arith::CmpFPredicate::OLT, fabs(y), f(126.0f));
  Value correction = select(small, fmul(err, f(0.693147182f)), f(0.0f));
  return fadd(r, fmul(r, correction));
}

/// The activations as the CPU tier computes them (nn.cpp, activateRow):
/// comparisons are false on NaN, so NaN passes through each of them.
Value KernelBuilder::activate(Value v) {
  using P = arith::CmpFPredicate;
  Value zero = f(0.0f), one = f(1.0f);
  switch (p.act) {
  case Activation::None: return v;
  case Activation::Relu: return select(fcmp(P::OLT, v, zero), zero, v);
  case Activation::Clip: {
    Value lo = f(p.actAlpha), hi = f(p.actBeta);
    Value x = select(fcmp(P::OLT, v, lo), lo, v);
    return select(fcmp(P::OGT, x, hi), hi, x);
  }
  case Activation::LeakyRelu:
    return select(fcmp(P::OLT, v, zero), fmul(f(p.actAlpha), v), v);
  case Activation::Sigmoid: {
    // x >= 0: 1 / (1 + e^-x); else e^x / (1 + e^x): no overflow either way.
    Value nonNegative = fcmp(P::OGE, v, zero);
    Value e = exp(fneg(fabs(v)));
    Value denominator = fadd(one, e);
    return select(nonNegative, fdiv(one, denominator), fdiv(e, denominator));
  }
  case Activation::Tanh: {
    // Cephes tanhf: an odd polynomial below |x| = 0.625 (no cancellation),
    // 1 - 2 / (e^2|x| + 1) with the sign of x above.
    Value ax = fabs(v);
    Value s = fmul(v, v);
    Value poly = f(-5.70498872745e-3f);
    for (float coefficient : {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                              -3.33332819422e-1f})
      poly = fadd(fmul(poly, s), f(coefficient));
    Value nearZero = fadd(fmul(fmul(poly, s), v), v);
    Value far = fsub(one, fdiv(f(2.0f), fadd(exp(fadd(ax, ax)), one)));
    far = select(fcmp(P::OLT, v, zero), fneg(far), far);
    return select(fcmp(P::OLT, ax, f(0.625f)), nearZero, far);
  }
  case Activation::HardSwish: {
    Value x = fadd(fdiv(v, f(6.0f)), f(0.5f));
    x = select(fcmp(P::OLT, x, zero), zero, select(fcmp(P::OGT, x, one), one, x));
    return fmul(v, x);
  }
  }
  return v;
}

LogicalResult KernelBuilder::build(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  Block *body = module.getBody();
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&body->back());
  else
    b.setInsertionPointToEnd(body);
  MLIRContext *ctx = b.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);

  // The block's shared memory: one aligned byte buffer, viewed as two
  // buffers of the A and B tiles during the K loop and as the f32 staging in
  // the epilogue.
  std::string sharedName = kernel.name + "_shared";
  auto sharedType = MemRefType::get({plan.bytes}, b.getI8Type(), AffineMap(), workgroup);
  b.create<memref::GlobalOp>(loc, sharedName, b.getStringAttr("private"), sharedType,
                             Attribute(), /*constant=*/false,
                             b.getI64IntegerAttr(kSharedAlignment));

  gpu::GPUFuncOp func = beginFunc(module, kernel.name, kernel.parameters(), t.threads());
  // Tensor Core kernels with at most 64 accumulator registers a thread ask
  // for 16 warps per SM (.minnctapersm: two blocks of 256 threads, four of
  // 128), so ptxas keeps them within 128 registers. Without it the
  // relocatable compile of nvJitLink gave the 128x128 tiles of 8 warps
  // 152-153 registers (whole-program ptxas: 125), one block per SM, and the
  // H100 profile found them latency-bound: tensor pipe 26-30% busy, issue
  // slots 20% (bench/NOTES.md, 2026-11-23). 64x64 warp tiles (128
  // accumulator registers, ~240 in all) would only spill under that cap.
  if (t.tier == GemmTier::TensorCore && t.fragsM * t.fragsN <= 8)
    func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(int32_t(std::max<int64_t>(1, kWarpsPerSM * kWarpSize /
                                                                      t.threads()))));

  tid = b.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  m0 = mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x), t.blockM);
  n0 = mul(b.create<gpu::BlockIdOp>(loc, gpu::Dimension::y), t.blockN);
  // grid z: batch (matmul batches, conv groups) times K splits.
  Value zSplit = p.batch * t.splitK > 1
                     ? b.create<gpu::BlockIdOp>(loc, gpu::Dimension::z).getResult()
                     : c(0);
  z = div(zSplit, t.splitK);
  split = rem(zSplit, t.splitK);
  declareViews(func, b.create<memref::GetGlobalOp>(loc, sharedType, sharedName));

  // Batch / group offsets of the operands.
  aBatchOffset = bBatchOffset = c(0);
  if (p.op == GemmOpKind::Conv && p.conv.group > 1) {
    aBatchOffset = mul(z, p.conv.inC / p.conv.group); // the group's channels
    bBatchOffset = mul(z, p.n * p.k);                 // the group's filters
  } else if (p.op == GemmOpKind::MatMul) {
    Value rest = z;
    for (size_t d = p.batchDims.size(); d-- > 0;) {
      const BatchDim &dim = p.batchDims[d];
      Value index = rem(rest, dim.extent);
      rest = div(rest, dim.extent);
      aBatchOffset = add(aBatchOffset, mul(index, dim.aStride * p.m * p.k));
      bBatchOffset = add(bBatchOffset, mul(index, dim.bStride * p.k * p.n));
    }
  }

  // Each thread's gather slots, with their rows' setup hoisted out of the K
  // loop.
  SmallVector<GatherSlot> aSlots, bSlots;
  for (bool isA : {true, false}) {
    const Staging &s = isA ? plan.a : plan.b;
    for (int64_t i = 0, slots = gatherSlots(s, t); i < slots; ++i)
      (isA ? aSlots : bSlots).push_back(slotSetup(isA, i));
  }

  SmallVector<Value> init;
  if (t.tier == GemmTier::TensorCore) {
    auto cFrag = gpu::MMAMatrixType::get({t.fragM, t.fragN}, b.getF32Type(), "COp");
    Value zero = b.create<gpu::SubgroupMmaConstantMatrixOp>(loc, cFrag, f(0.0f));
    init.assign(t.fragsM * t.fragsN, zero);
  } else {
    init.assign(t.microM * t.microN, f(0.0f));
  }
  // The block's K range: [kBase, kBase + kEnd), steps past K loading zeros.
  const int64_t kEnd = t.stepsPerSplit(p.k) * t.blockK;
  Value kBase = mul(split, kEnd);
  // The prologue: K step 0 into buffer 0.
  {
    TileViews first = tileViews(c(0));
    storeSlots(/*isA=*/true, aSlots, loadSlots(/*isA=*/true, aSlots, kBase), first);
    storeSlots(/*isA=*/false, bSlots, loadSlots(/*isA=*/false, bSlots, kBase), first);
    b.create<gpu::BarrierOp>(loc);
  }
  auto kLoop = b.create<scf::ForOp>(
      loc, c(0), c(kEnd), c(t.blockK), init,
      [&](OpBuilder &, Location, Value k0, ValueRange accs) {
        // Step i reads buffer i % 2 and fills buffer (i + 1) % 2.
        Value current = mul(rem(div(k0, t.blockK), 2), plan.bufferBytes);
        TileViews tiles = tileViews(current);
        // The next step's loads, issued before the math so that their
        // latency overlaps it; none after the last step.
        bool pipelined = kEnd > t.blockK;
        Value hasNext;
        SmallVector<Value> prefetched;
        if (pipelined) {
          hasNext = below(k0, kEnd - t.blockK);
          SmallVector<Type> types(aSlots.size(), runType(plan.a));
          types.append(bSlots.size(), runType(plan.b));
          auto prefetch = b.create<scf::IfOp>(loc, types, hasNext, /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&prefetch.getThenRegion().front());
          Value k1 = add(add(kBase, k0), t.blockK);
          SmallVector<Value> runs = loadSlots(/*isA=*/true, aSlots, k1);
          runs.append(loadSlots(/*isA=*/false, bSlots, k1));
          b.create<scf::YieldOp>(loc, runs);
          b.setInsertionPointToStart(&prefetch.getElseRegion().front());
          SmallVector<Value> zeros;
          for (Type type : types)
            zeros.push_back(
                b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(type))));
          b.create<scf::YieldOp>(loc, zeros);
          prefetched.assign(prefetch.getResults().begin(), prefetch.getResults().end());
        }
        SmallVector<Value> next = t.tier == GemmTier::TensorCore ? tensorCoreStep(tiles, accs)
                                                                 : simtStep(tiles, accs);
        if (pipelined) {
          // No warp reads buffer (i + 1) % 2 in step i: the barrier that
          // ended step i - 1 saw every warp done with it.
          auto store = b.create<scf::IfOp>(loc, hasNext, /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&store.getThenRegion().front());
          TileViews following = tileViews(b.createOrFold<arith::SubIOp>(
              loc, c(plan.bufferBytes), current));
          ArrayRef<Value> runs = prefetched;
          storeSlots(/*isA=*/true, aSlots, runs.take_front(aSlots.size()), following);
          storeSlots(/*isA=*/false, bSlots, runs.drop_front(aSlots.size()), following);
        }
        // One barrier per step: buffer (i + 1) % 2 is complete before step
        // i + 1 reads it, and every warp is done with buffer i % 2 before
        // step i + 1 refills it (or, after the last step, the epilogue's
        // staging overwrites it).
        b.create<gpu::BarrierOp>(loc);
        b.create<scf::YieldOp>(loc, next);
      });
  b.setInsertionPointAfter(kLoop);
  if (t.tier == GemmTier::TensorCore)
    tensorCoreEpilogue(kLoop.getResults());
  else
    simtEpilogue(kLoop.getResults());
  b.create<gpu::ReturnOp>(loc);
  return success();
}

} // namespace

LogicalResult buildGemmKernel(OpBuilder &builder, gpu::GPUModuleOp module,
                              const GemmKernel &kernel) {
  if (kernel.tiles.direct)
    return KernelBuilder(builder, kernel).buildDirect(module);
  if (failed(KernelBuilder(builder, kernel).build(module)))
    return failure();
  return kernel.splitsK() ? KernelBuilder(builder, kernel).buildReduce(module) : success();
}

FailureOr<OwningOpRef<ModuleOp>> buildGemmModule(MLIRContext &ctx, llvm::StringRef name,
                                                 ArrayRef<GemmKernel> kernels) {
  // The dialects, the NVVM target and the translations the lowering needs.
  DialectRegistry registry;
  registerCodegenDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadDialect<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, scf::SCFDialect, vector::VectorDialect>();
  Location loc = NameLoc::get(StringAttr::get(&ctx, name));
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
  b.setInsertionPointToStart(module->getBody());
  auto gpuModule = b.create<gpu::GPUModuleOp>(loc, name);
  for (const GemmKernel &kernel : kernels)
    if (failed(buildGemmKernel(b, gpuModule, kernel)))
      return failure();
  if (failed(verify(*module)))
    return failure();
  // One constant per value and folded index arithmetic: the IR the tests
  // read is the IR that is lowered.
  PassManager pm(&ctx);
  pm.nest<gpu::GPUModuleOp>().addPass(createCanonicalizerPass());
  pm.nest<gpu::GPUModuleOp>().addPass(createCSEPass());
  if (failed(pm.run(*module)))
    return failure();
  return module;
}

} // namespace tessel::codegen
