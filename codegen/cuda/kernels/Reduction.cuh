//===- Reduction.cuh - reduce_*, softmax, argmax, argmin, cumsum, cumprod -===//
//
// The reductions of runtime/kernels/src/reduction.cpp. Float reductions
// accumulate in double whatever the storage and round once into the result
// (through float for f16, as the CPU's store does); integer sums and
// products wrap in uint64 (exact in any order), and mean, l2, log_sum and
// log_sum_exp of integers run in double and truncate (saturating).
//
// Two shapes of each: a thread per result, which walks its elements in the
// CPU's row-major order (bit-identical sums), for many results whose
// elements lie apart (NHWC's global pools); and a block per result, which
// combines per-thread partials in a tree, for few results or contiguous
// ones. argmax/argmin and the scans are sequential per result (a thread each).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_REDUCTION_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_REDUCTION_CUH

#include "Common.cuh"

#include "tessel/elementwise_math.h"

namespace tessel::kernels {

enum class R { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// Combines the values of a block's threads with `combine`; every thread
/// gets the result. blockDim.x is a multiple of 32, at most 1024.
template <typename Acc, typename F>
__device__ __forceinline__ Acc blockReduce(Acc v, Acc identity, F &&combine) {
  __shared__ Acc partial[32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); // the previous call's readers are done with `partial`
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2)
      v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
    if (lane == 0)
      partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}

/// One reduce_* op on element type T: its accumulator, the step taking one
/// element (given the result's peak, for log_sum_exp), how two partial
/// accumulators combine, and the final value.
template <R op, typename T, bool = isFloat<T>()> struct Reducer;

template <R op, typename T> struct Reducer<op, T, true> {
  using Acc = double;
  static constexpr bool kPeak = op == R::LogSumExp;
  __device__ static double init() {
    return op == R::Max ? -kInf : op == R::Min ? kInf : op == R::Prod ? 1.0 : 0.0;
  }
  // NaN wins, as in the CPU's peak.
  __device__ static double peak(double a, double v) { return (v > a || isnan(v)) ? v : a; }
  __device__ static double step(double a, T raw, double peak) {
    const double v = load(raw);
    switch (op) {
    case R::Sum: case R::Mean: case R::LogSum: return a + v;
    case R::Max: return (v > a || isnan(v)) ? v : a;
    case R::Min: return (v < a || isnan(v)) ? v : a;
    case R::Prod: return a * v;
    case R::L1: return a + fabs(v);
    case R::L2: case R::SumSquare: return a + v * v;
    case R::LogSumExp: return isfinite(peak) ? a + exp(v - peak) : a;
    }
    return a;
  }
  __device__ static double combine(double a, double b) {
    switch (op) {
    case R::Max: return (b > a || isnan(b)) ? b : a;
    case R::Min: return (b < a || isnan(b)) ? b : a;
    case R::Prod: return a * b;
    default: return a + b;
    }
  }
  __device__ static T finish(double a, double peak, int64_t count) {
    switch (op) {
    case R::Mean: a = a / static_cast<double>(count); break;
    case R::L2: a = sqrt(a); break;
    case R::LogSum: a = log(a); break;
    case R::LogSumExp:
      a = isfinite(peak) ? log(a) + peak : peak;
      if (count == 0)
        a = -kInf;
      break;
    default: break;
    }
    return store<T>(static_cast<Math<T>>(a));
  }
};

template <R op, typename T> struct Reducer<op, T, false> {
  static constexpr bool kPeak = op == R::LogSumExp;
  static constexpr bool kSelect = op == R::Max || op == R::Min;
  using Wide = std::conditional_t<isSigned<T>(), int64_t, uint64_t>;
  using Acc = std::conditional_t<kSelect, T, std::conditional_t<kPeak, double, uint64_t>>;
  __device__ static Acc init() {
    if constexpr (kSelect)
      return op == R::Max ? Limits<T>::lowest : Limits<T>::max;
    else
      return op == R::Prod ? Acc(1) : Acc(0);
  }
  __device__ static double peak(double a, double v) { return a < v ? v : a; }
  __device__ static Acc step(Acc a, T x, double peak) {
    if constexpr (kSelect) {
      return (op == R::Max ? x > a : x < a) ? x : a;
    } else if constexpr (kPeak) {
      return a + exp(static_cast<double>(x) - peak);
    } else {
      const uint64_t v = static_cast<uint64_t>(static_cast<Wide>(x));
      switch (op) {
      case R::Prod: return a * v;
      case R::L1: return a + ((isSigned<T>() && x < 0) ? uint64_t(0) - v : v);
      case R::L2: case R::SumSquare: return a + v * v;
      default: return a + v;
      }
    }
  }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (kSelect)
      return (op == R::Max ? b > a : b < a) ? b : a;
    else if constexpr (op == R::Prod)
      return a * b;
    else
      return a + b;
  }
  __device__ static T finish(Acc a, double peak, int64_t count) {
    if constexpr (kSelect) {
      return a;
    } else if constexpr (kPeak) {
      return saturateInt<T>(count ? log(a) + peak : -kInf);
    } else {
      const double sum = static_cast<double>(static_cast<Wide>(a));
      switch (op) {
      case R::Mean: return saturateInt<T>(sum / static_cast<double>(count));
      case R::L2: return saturateInt<T>(sqrt(sum));
      case R::LogSum: return saturateInt<T>(log(sum));
      default: return static_cast<T>(a);
      }
    }
  }
};

/// f(offset) for every reduced element of the result whose first element is
/// at `base`, in row-major order; one index decomposition per row of the
/// innermost reduced dim.
template <typename F>
__device__ __forceinline__ void forEachReduced(const ReduceParams &p, int64_t base, F &&f) {
  if (p.count == 0)
    return;
  const int last = p.reducedRank - 1;
  const int64_t inner = p.reducedShape[last], innerStride = p.reducedStride[last];
  const int64_t rows = p.count / inner;
#pragma unroll 1
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t offset =
        base + stridedOffset(static_cast<uint64_t>(row), last, p.reducedShape, p.reducedStride);
#pragma unroll 1
    for (int64_t j = 0; j < inner; ++j)
      f(offset + j * innerStride);
  }
}

template <R op, typename T>
__device__ __forceinline__ void reduceThread(const T *x, T *y, const ReduceParams &p) {
  using Red = Reducer<op, T>;
  for (int64_t o = gridStart(); o < p.numOut; o += gridStep()) {
    const int64_t base =
        stridedOffset(static_cast<uint64_t>(o), p.keptRank, p.keptShape, p.keptStride);
    double peak = -kInf;
    if constexpr (Red::kPeak)
      forEachReduced(p, base, [&](int64_t i) {
        peak = Red::peak(peak, static_cast<double>(load(x[i])));
      });
    typename Red::Acc acc = Red::init();
    forEachReduced(p, base, [&](int64_t i) { acc = Red::step(acc, x[i], peak); });
    y[o] = Red::finish(acc, peak, p.count);
  }
}

template <R op, typename T>
__device__ __forceinline__ void reduceBlock(const T *x, T *y, const ReduceParams &p) {
  using Red = Reducer<op, T>;
  for (int64_t o = blockIdx.x; o < p.numOut; o += gridDim.x) {
    const int64_t base =
        stridedOffset(static_cast<uint64_t>(o), p.keptRank, p.keptShape, p.keptStride);
    auto each = [&](auto &&f) {
#pragma unroll 1
      for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x)
        f(base + stridedOffset(static_cast<uint64_t>(r), p.reducedRank, p.reducedShape,
                               p.reducedStride));
    };
    double peak = -kInf;
    if constexpr (Red::kPeak) {
      each([&](int64_t i) { peak = Red::peak(peak, static_cast<double>(load(x[i]))); });
      peak = blockReduce(peak, -kInf, [](double a, double b) { return Red::peak(a, b); });
    }
    typename Red::Acc acc = Red::init();
    each([&](int64_t i) { acc = Red::step(acc, x[i], peak); });
    acc = blockReduce(acc, Red::init(), [](auto a, auto b) { return Red::combine(a, b); });
    if (threadIdx.x == 0)
      y[o] = Red::finish(acc, peak, p.count);
  }
}

/// The reduction of the middle dim of [outer, rows, inner] with the inner dim
/// contiguous (a global pool of NHWC), for the float sums: a block of 8
/// warps takes 32 columns (its lanes: coalesced rows) of one outer index
/// and one chunk of rows (blockIdx.y), each warp every 8th row of it; the 8
/// partial sums combine in warp order. One split: the result; several: the
/// chunk's partial sum (double) to `partial` [outer, splits, inner], which
/// reduceColumnsFinish sums in split order. Deterministic; a different
/// order of the same sums than the CPU's, as the block kernel's.
constexpr int kColumnLanes = 32, kColumnWarps = 8;

template <R op, typename T>
__device__ __forceinline__ void reduceColumns(const T *x, T *y, double *partial,
                                              const ColumnParams &p) {
  using Red = Reducer<op, T>;
  static_assert(!Red::kPeak && isFloat<T>(), "float sums only");
  __shared__ double sums[kColumnWarps][kColumnLanes];
  const int lane = threadIdx.x % kColumnLanes, warp = threadIdx.x / kColumnLanes;
  const int64_t tiles = (p.inner + kColumnLanes - 1) / kColumnLanes;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * p.chunk;
  const int64_t r1 = r0 + p.chunk < p.rows ? r0 + p.chunk : p.rows;
  for (int64_t t = blockIdx.x; t < p.outer * tiles; t += gridDim.x) {
    const int64_t o = static_cast<int64_t>(divide(t, tiles));
    const int64_t c = (t - o * tiles) * kColumnLanes + lane;
    double acc = Red::init();
    if (c < p.inner) {
      const T *column = x + o * p.rows * p.inner + c;
#pragma unroll 4
      for (int64_t r = r0 + warp; r < r1; r += kColumnWarps)
        acc = Red::step(acc, column[r * p.inner], 0.0);
    }
    sums[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && c < p.inner) {
      for (int w = 1; w < kColumnWarps; ++w)
        acc = Red::combine(acc, sums[w][lane]);
      if (p.splits == 1)
        y[o * p.inner + c] = Red::finish(acc, 0.0, p.rows);
      else
        partial[(o * p.splits + blockIdx.y) * p.inner + c] = acc;
    }
    __syncthreads();
  }
}

/// The f16 sums of [outer, rows, inner] with inner % 8 == 0 and not too
/// many rows (kColumnVecMaxRows), in one launch: a block of 1024 threads
/// takes 64 channels of one outer index, 8 threads a row, each 16 bytes (8
/// channels; the pointers are 16-byte aligned, inner % 8 == 0), its 128 row
/// groups each every 128th row, in double. A warp's 4 groups combine by
/// shuffles ((g0 + g1) + (g2 + g3)), then the 32 warps' sums in warp order
/// in shared memory. No partials and no second launch: a
/// squeeze-excitation block's pool (EfficientNetV2-S: 24 x 24 x 960) in one
/// short kernel where reduceColumns' 2-byte lanes needed row chunks and
/// reduceColumnsFinish. Deterministic; another order of the same sums than
/// the CPU's, as reduceColumns.
constexpr int kVecLanes = 8, kVecGroups = kColumnVecThreads / kVecLanes,
              kVecWarps = kColumnVecThreads / 32, kVecChannels = kVecLanes * 8;
static_assert(kVecChannels == kColumnVecChannels && kColumnVecMaxRows % kVecGroups == 0 &&
                  32 / kVecLanes == 4,
              "the planner's facts of reduceColumnsVec (KernelParams.h)");

template <R op>
__device__ __forceinline__ void reduceColumnsVec(const f16 *x, f16 *y, const ColumnParams &p) {
  using Red = Reducer<op, f16>;
  static_assert(!Red::kPeak, "sums only");
  __shared__ double sums[kVecWarps][kVecChannels];
  const int lane = threadIdx.x % kVecLanes, group = threadIdx.x / kVecLanes;
  const int warp = threadIdx.x / 32;
  const int64_t tiles = (p.inner + kVecChannels - 1) / kVecChannels;
  for (int64_t t = blockIdx.x; t < p.outer * tiles; t += gridDim.x) {
    const int64_t o = static_cast<int64_t>(divide(t, tiles));
    const int64_t first = (t - o * tiles) * kVecChannels;
    const int64_t c = first + lane * 8;
    double acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[j] = Red::init();
    if (c < p.inner) {
      const f16 *column = x + o * p.rows * p.inner + c;
#pragma unroll 4
      for (int64_t r = group; r < p.rows; r += kVecGroups) {
        const uint4 word = *reinterpret_cast<const uint4 *>(column + r * p.inner);
        const f16 *h = reinterpret_cast<const f16 *>(&word);
#pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[j] = Red::step(acc[j], h[j], 0.0);
      }
    }
    // The warp's groups 4w..4w+3 (lanes 0-7, 8-15, 16-23, 24-31): pairs,
    // then the pairs' sums; lanes 0-7 hold the warp's.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      acc[j] = Red::combine(acc[j], __shfl_down_sync(0xffffffffu, acc[j], 8));
      acc[j] = Red::combine(acc[j], __shfl_down_sync(0xffffffffu, acc[j], 16));
    }
    if (threadIdx.x % 32 < kVecLanes)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        sums[warp][lane * 8 + j] = acc[j];
    __syncthreads();
    if (threadIdx.x < kVecChannels && first + threadIdx.x < p.inner) {
      double s = sums[0][threadIdx.x];
      for (int w = 1; w < kVecWarps; ++w)
        s = Red::combine(s, sums[w][threadIdx.x]);
      y[o * p.inner + first + threadIdx.x] = Red::finish(s, 0.0, p.rows);
    }
    __syncthreads();
  }
}

/// The second launch of a split reduceColumns: a thread per result sums its
/// splits' partials in order.
template <R op, typename T>
__device__ __forceinline__ void reduceColumnsFinish(const double *partial, T *y,
                                                    const ColumnParams &p) {
  using Red = Reducer<op, T>;
  forEachIndex(p.outer * p.inner, [&](uint64_t i) {
    const int64_t o = static_cast<int64_t>(divide(i, p.inner)), c = i - o * p.inner;
    const double *column = partial + o * p.splits * p.inner + c;
    double acc = column[0];
    for (int32_t s = 1; s < p.splits; ++s)
      acc = Red::combine(acc, column[s * p.inner]);
    y[i] = Red::finish(acc, 0.0, p.rows);
  });
}

//===----------------------------------------------------------------------===//
// pool_fc
//===----------------------------------------------------------------------===//

/// A squeeze-excitation block's global pool and first 1x1 conv of f16 NHWC
/// (PoolFcParams). The kernel is a chain of dependent memory round trips
/// (load the rows, store the parts, count the arrival, load the parts), so
/// each is one round trip: every thread loads what it needs in one batch.
/// Block (x, n), x = split * tiles + tile: thread m < M first loads its
/// output's 64 weights (eight 16-byte loads) and bias, which the rest does
/// not wait for; 8 threads a row of 64 channels, 16 bytes each, its 32 row
/// groups each at most 8 rows of the split's chunk (all in flight) in f32,
/// the groups' sums added in group order and divided by the rows (the mean,
/// f32); thread m's products added in channel order are the block's part of
/// output m, stored to `partial` [outer][blocks][M]. The image's last block
/// to arrive (a counter per image, which it sets back to 0 for the next
/// launch) adds the parts: 256 / M threads an output, each every
/// (256 / M)th part in block order, then those sums in order, and runs the
/// epilogue (bias, activation, one rounding). Deterministic: no sum
/// depends on which block finished first.
constexpr int kFcLanes = 8, kFcGroups = kPoolFcThreads / kFcLanes;
static_assert(kFcLanes * 8 == kPoolFcChannels && kPoolFcMaxRows == 8 * kFcGroups,
              "a block's 64 channels: 8 lanes of 8; at most 8 rows a row group");

__device__ __forceinline__ void poolFc(const f16 *x, const f16 *w, const f16 *bias, f16 *y,
                                       float *partial, unsigned *counters,
                                       const PoolFcParams &p) {
  __shared__ float sums[kFcGroups][kPoolFcChannels];
  __shared__ float mean[kPoolFcChannels];
  __shared__ float lastSums[kPoolFcThreads];
  __shared__ bool lastBlock;
  const int lane = threadIdx.x % kFcLanes, group = threadIdx.x / kFcLanes;
  const int64_t n = blockIdx.y, blocks = gridDim.x, outputs = p.outChannels;
  const int64_t tile = blockIdx.x % p.tiles, split = blockIdx.x / p.tiles;
  const int64_t first = tile * kPoolFcChannels, c = first + lane * 8;
  const int64_t begin = split * p.chunk, end = min(p.rows, begin + p.chunk);
  // Output m's weights for the block's channels, 16 bytes each (zero past
  // the channels); this thread's first output's (the first 256 outputs;
  // more load in the loop below) and its bias.
  uint4 weights[kFcLanes];
  auto loadWeights = [&](int64_t m) {
#pragma unroll
    for (int k = 0; k < kFcLanes; ++k)
      weights[k] = first + k * 8 < p.channels
                       ? *reinterpret_cast<const uint4 *>(w + m * p.channels + first + k * 8)
                       : make_uint4(0, 0, 0, 0);
  };
  const bool owns = threadIdx.x < outputs;
  if (owns)
    loadWeights(threadIdx.x);
  const float ownBias = owns && bias ? load(bias[threadIdx.x]) : 0.0f;
  float acc[8];
#pragma unroll
  for (int j = 0; j < 8; ++j)
    acc[j] = 0.0f;
  if (c < p.channels) {
    const f16 *column = x + n * p.rows * p.channels + c;
    uint4 words[kPoolFcMaxRows / kFcGroups];
#pragma unroll
    for (int i = 0; i < kPoolFcMaxRows / kFcGroups; ++i) {
      const int64_t r = begin + group + i * kFcGroups;
      words[i] = r < end ? *reinterpret_cast<const uint4 *>(column + r * p.channels)
                         : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kPoolFcMaxRows / kFcGroups; ++i) {
      const f16 *h = reinterpret_cast<const f16 *>(&words[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        acc[j] += load(h[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j)
    sums[group][lane * 8 + j] = acc[j];
  __syncthreads();
  if (threadIdx.x < kPoolFcChannels) {
    float s = sums[0][threadIdx.x];
    for (int g = 1; g < kFcGroups; ++g)
      s += sums[g][threadIdx.x];
    mean[threadIdx.x] = s / static_cast<float>(p.rows);
  }
  __syncthreads();
  float *part = partial + (n * blocks + blockIdx.x) * outputs;
  for (int64_t m = threadIdx.x; m < outputs; m += kPoolFcThreads) {
    if (m >= kPoolFcThreads)
      loadWeights(m);
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < kFcLanes; ++k) {
      const f16 *h = reinterpret_cast<const f16 *>(&weights[k]);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        v += load(h[j]) * mean[k * 8 + j]; // past the channels: 0 * 0
    }
    part[m] = v;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    lastBlock = atomicAdd(counters + n, 1u) == static_cast<unsigned>(blocks - 1);
  __syncthreads();
  if (!lastBlock)
    return;
  __threadfence();
  if (threadIdx.x == 0)
    counters[n] = 0;
  const float *parts = partial + n * blocks * outputs;
  const auto act = static_cast<elementwise::Activation>(p.activation);
  for (int64_t m0 = 0; m0 < outputs; m0 += kPoolFcThreads) {
    const int width = static_cast<int>(min(outputs - m0, kPoolFcThreads));
    const int sharers = kPoolFcThreads / width, q = threadIdx.x / width;
    const int64_t m = m0 + threadIdx.x % width;
    float v = 0.0f;
    if (q < sharers) {
#pragma unroll 16
      for (int64_t b = q; b < blocks; b += sharers)
        v += __ldcg(parts + b * outputs + m);
    }
    lastSums[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x < width) {
      float s = lastSums[threadIdx.x];
      for (int k = 1; k < sharers; ++k)
        s += lastSums[k * width + threadIdx.x];
      s += m0 == 0 ? ownBias : bias ? load(bias[m]) : 0.0f;
      y[n * outputs + m] = store<f16>(elementwise::activate(act, s, p.alpha, p.beta));
    }
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

// In double, as the CPU: peak (std::max, so NaN never becomes it), the shift
// (0 when the peak is infinite), the sum of exp(v - shift), one rounding.
template <bool isLog, typename T>
__device__ __forceinline__ T softmaxValue(double v, double shift, double sum, double logSum) {
  const double r = isLog ? v - shift - logSum : exp(v - shift) / sum;
  return store<T>(static_cast<Math<T>>(r));
}

template <bool isLog, typename T>
__device__ __forceinline__ void softmaxThread(const T *x, T *y, const AxisParams &p) {
  for (int64_t row = gridStart(); row < p.outer * p.inner; row += gridStep()) {
    const int64_t o = static_cast<int64_t>(divide(row, p.inner)), i = row - o * p.inner;
    const int64_t base = o * p.length * p.inner + i;
    double peak = -kInf;
#pragma unroll 1
    for (int64_t a = 0; a < p.length; ++a) {
      const double v = load(x[base + a * p.inner]);
      peak = peak < v ? v : peak;
    }
    const double shift = isfinite(peak) ? peak : 0.0;
    double sum = 0;
#pragma unroll 1
    for (int64_t a = 0; a < p.length; ++a)
      sum += exp(static_cast<double>(load(x[base + a * p.inner])) - shift);
    const double logSum = log(sum);
#pragma unroll 1
    for (int64_t a = 0; a < p.length; ++a) {
      const int64_t e = base + a * p.inner;
      y[e] = softmaxValue<isLog, T>(load(x[e]), shift, sum, logSum);
    }
  }
}

/// A block per row, for inner == 1 (the axis is the innermost dim).
template <bool isLog, typename T>
__device__ __forceinline__ void softmaxBlock(const T *x, T *y, const AxisParams &p) {
  for (int64_t o = blockIdx.x; o < p.outer; o += gridDim.x) {
    const T *xs = x + o * p.length;
    T *ys = y + o * p.length;
    double peak = -kInf;
#pragma unroll 1
    for (int64_t a = threadIdx.x; a < p.length; a += blockDim.x) {
      const double v = load(xs[a]);
      peak = peak < v ? v : peak;
    }
    peak = blockReduce(peak, -kInf, [](double a, double b) { return a < b ? b : a; });
    const double shift = isfinite(peak) ? peak : 0.0;
    double sum = 0;
#pragma unroll 1
    for (int64_t a = threadIdx.x; a < p.length; a += blockDim.x)
      sum += exp(static_cast<double>(load(xs[a])) - shift);
    sum = blockReduce(sum, 0.0, [](double a, double b) { return a + b; });
    const double logSum = log(sum);
#pragma unroll 1
    for (int64_t a = threadIdx.x; a < p.length; a += blockDim.x)
      ys[a] = softmaxValue<isLog, T>(load(xs[a]), shift, sum, logSum);
  }
}

//===----------------------------------------------------------------------===//
// argmax, argmin
//===----------------------------------------------------------------------===//

template <bool isMax, typename T>
__device__ __forceinline__ void argReduce(const T *x, int64_t *y, const AxisParams &p) {
  using C = Math<T>;
  const bool last = p.last != 0;
  for (int64_t row = gridStart(); row < p.outer * p.inner; row += gridStep()) {
    const int64_t o = static_cast<int64_t>(divide(row, p.inner)), i = row - o * p.inner;
    const int64_t base = o * p.length * p.inner + i;
    C best = load(x[base]);
    int64_t bestIndex = 0;
#pragma unroll 1
    for (int64_t a = 1; a < p.length; ++a) {
      const C v = load(x[base + a * p.inner]);
      if constexpr (isFloat<T>()) {
        // NaN wins: the first NaN, or the last with select_last_index.
        if (isnan(best)) {
          if (last && isnan(v))
            bestIndex = a;
          continue;
        }
        if (isnan(v)) {
          best = v;
          bestIndex = a;
          continue;
        }
      }
      const bool take = isMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (take) {
        best = v;
        bestIndex = a;
      }
    }
    y[row] = bestIndex;
  }
}

//===----------------------------------------------------------------------===//
// cumsum, cumprod
//===----------------------------------------------------------------------===//

/// Running sums (products with `product`) along the axis, a thread per line
/// (o, i) walking it in the CPU's order (from its end with `reverse`; without
/// the element itself with `exclusive`): floats in double, each result
/// rounded once as the CPU rounds it, so the tiers agree bit for bit;
/// integers wrap in uint64 (a product's low 64 bits are the signed one's).
/// Every element is read before its result is written.
template <typename T>
__device__ __forceinline__ void scan(const T *x, T *y, const ScanParams &p) {
  using Acc = std::conditional_t<isFloat<T>(), double, uint64_t>;
  for (int64_t line = gridStart(); line < p.outer * p.inner; line += gridStep()) {
    const int64_t o = static_cast<int64_t>(divide(line, p.inner)), i = line - o * p.inner;
    Acc sum = p.product ? Acc(1) : Acc(0);
#pragma unroll 1
    for (int64_t step = 0; step < p.length; ++step) {
      const int64_t a = p.reverse ? p.length - 1 - step : step;
      const int64_t e = (o * p.length + a) * p.inner + i;
      Acc v;
      if constexpr (isFloat<T>())
        v = static_cast<double>(load(x[e]));
      else
        v = static_cast<uint64_t>(static_cast<int64_t>(x[e]));
      if (!p.exclusive)
        sum = p.product ? sum * v : sum + v;
      if constexpr (isFloat<T>())
        y[e] = saturateCast<T>(sum);
      else
        y[e] = static_cast<T>(sum);
      if (p.exclusive)
        sum = p.product ? sum * v : sum + v;
    }
  }
}

//===----------------------------------------------------------------------===//
// top_k
//===----------------------------------------------------------------------===//

/// A thread per line along the axis: k rounds, each finding the first
/// element in top_k's order (elementwise::topKBefore) after the previous
/// round's, so that nothing but the last pick is kept: O(k * length) reads
/// a line, no memory. The CPU kernel's results exactly (ties by index).
template <typename T>
__device__ __forceinline__ void topK(const T *x, T *values, int64_t *indices,
                                     const TopKParams &p) {
  using V = std::conditional_t<isFloat<T>(), float, int64_t>;
  for (int64_t line = gridStart(); line < p.outer * p.inner; line += gridStep()) {
    const int64_t o = static_cast<int64_t>(divide(line, p.inner)), i = line - o * p.inner;
    const T *row = x + o * p.length * p.inner + i;
    V last = V(0);
    int64_t lastIndex = -1;
    for (int64_t j = 0; j < p.k; ++j) {
      V best = V(0);
      int64_t bestIndex = -1;
#pragma unroll 1
      for (int64_t a = 0; a < p.length; ++a) {
        const V v = static_cast<V>(load(row[a * p.inner]));
        const bool after =
            lastIndex < 0 || elementwise::topKBefore(last, lastIndex, v, a, p.largest != 0);
        if (after && (bestIndex < 0 || elementwise::topKBefore(v, a, best, bestIndex,
                                                               p.largest != 0))) {
          best = v;
          bestIndex = a;
        }
      }
      const int64_t e = (o * p.k + j) * p.inner + i;
      values[e] = row[bestIndex * p.inner];
      indices[e] = bestIndex;
      last = best;
      lastIndex = bestIndex;
    }
  }
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_REDUCTION_CUH
