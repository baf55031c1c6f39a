//===- Normalization.cuh - layer_norm, instance_norm, batch_norm, lrn -----===//
//
// The normalizations of runtime/kernels/src/normalization.cpp, formula for
// formula, in f32 (f16 tensors widen on load and round once on store).
//
// Precision: the CPU kernel accumulates in double; these accumulate in f32.
// The precision policy runs the norms in f32 (their statistics are what
// f16 cannot hold), and f32 is what a GPU has the throughput for: a
// layer_norm in double costs about ten FP64 operations an element, which
// leaves an H100 memory-bound but makes the kernel compute-bound by 3 to 20
// times on GPUs with 1/32 or 1/64 rate FP64 (T4, A10, L4, RTX). The
// statistics stay sound in f32: the variance is the CPU's two-pass
// sum((x - mean)^2) / n around the f32 mean, never E[x^2] - mean^2, which
// cancels; each sum runs over at most a few hundred values per thread and
// then a tree of at most 10 levels, so its relative error is far below the
// fp32 conformance tolerance (rtol 1e-3) and below f16's rounding.
// docs/architecture.md ("Kernels of the non-GEMM ops") has the measured
// differences.
//
// layer_norm and instance_norm normalize rows: `length` contiguous
// elements each (layer_norm's dims [axis, rank), instance_norm's spatial
// plane of one (n, c)). Three shapes of launch, by the row's length:
//   - a warp per row (_warp), rows up to 1024 elements (256 without
//     16-byte loads): the row is held in registers, at most 32 floats a
//     lane (8 without); 8 rows per 256-thread block;
//   - a block per row (_block), rows up to 16384 elements (4096): held in
//     registers likewise, at most 512 threads (kNormMaxBlock);
//   - a block per row that reads the row again in each pass (_stream), for
//     longer rows (three reads of the row, from L2 mostly, and one write).
// _vec kernels move 16 bytes (8 f16 or 4 f32) per load and store: the
// planner picks them when the row length is a multiple of that, so that
// every row starts 16-byte aligned (the simt tier's pointers are).
// Every sum is deterministic: each thread adds its elements in a fixed
// order, a warp adds its threads' sums by a butterfly (every lane gets the
// same bits: lanes l and l ^ o add the same two values) and a block adds
// its warps' sums in warp order.
//
// batch_norm is elementwise once each channel's factor is known: a first
// launch computes k[c] = scale[c] / sqrt(variance[c] + epsilon) into the
// workspace (in double, as the CPU does, rounded once to f32), the second
// y = (x - mean[c]) * k[c] + bias[c] per element. lrn is a thread per
// element summing the squares of its channel window in the CPU's order.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_NORMALIZATION_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_NORMALIZATION_CUH

#include "Common.cuh"

namespace tessel::kernels {

/// The sum of `v` over the warp, the same bits in every lane.
__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// A warp per row: lane `lane()` of `width()` threads in a row; the rows of
/// a thread are first(), first() + step(), ...
struct WarpRows {
  __device__ static int lane() { return static_cast<int>(threadIdx.x & 31); }
  __device__ static int width() { return 32; }
  __device__ static int64_t first() {
    return static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  }
  __device__ static int64_t step() { return static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5); }
  __device__ static float sum(float v) { return warpSum(v); }
};

/// A block per row (blockDim.x a multiple of 32, at most 1024). Every
/// thread of a block walks the same rows, so sum() may synchronize.
struct BlockRows {
  __device__ static int lane() { return static_cast<int>(threadIdx.x); }
  __device__ static int width() { return static_cast<int>(blockDim.x); }
  __device__ static int64_t first() { return blockIdx.x; }
  __device__ static int64_t step() { return gridDim.x; }
  __device__ static float sum(float v) {
    __shared__ float partial[32];
    v = warpSum(v);
    __syncthreads(); // the previous sum's readers are done with `partial`
    if ((threadIdx.x & 31) == 0)
      partial[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = partial[0];
    for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
      total += partial[w];
    return total;
  }
};

/// V values of a per-element parameter from element e on, as stored: a
/// 16-byte load where the parameter has the row's shape (step 1), else its
/// one element V times.
template <typename T, int V>
__device__ __forceinline__ LaneWord<T, V> loadParam(const T *param, int32_t step, int64_t e) {
  if (step)
    return loadLanes<T, V>(param + e);
  LaneWord<T, V> w;
  const T value = param[0];
#pragma unroll
  for (int l = 0; l < V; ++l)
    w.lane[l] = value;
  return w;
}

/// layer_norm's last step, as the CPU writes it:
/// ((x - mean) * inv) * scale[i] + bias[i] with inv = 1 / sqrt(variance +
/// epsilon), and + 0 without a bias (so that -0 becomes +0 there too).
/// params() loads an element run's scale and bias, which the row kernels
/// issue beside the row's loads, before its statistics: they do not wait
/// for the reductions (a second memory round trip at the end of each row).
template <typename T, int V> struct LayerNormAffine {
  const T *scale, *bias;
  const NormParams &p;
  float inv = 0;

  struct Params {
    LaneWord<T, V> scale, bias;
  };
  __device__ Params params(int64_t e) const {
    Params q;
    q.scale = loadParam<T, V>(scale, p.scaleStep, e);
    if (bias)
      q.bias = loadParam<T, V>(bias, p.biasStep, e);
    return q;
  }
  __device__ void setRow(int64_t, float variance) { inv = 1.0f / sqrtf(variance + p.epsilon); }
  __device__ LaneWord<T, V> apply(const float (&centered)[V], const Params &q) const {
    LaneWord<T, V> out;
#pragma unroll
    for (int l = 0; l < V; ++l)
      out.lane[l] = store<T>(centered[l] * inv * load(q.scale.lane[l]) +
                             (bias ? load(q.bias.lane[l]) : 0.0f));
    return out;
  }
};

/// instance_norm's last step, as the CPU writes it: (x - mean) * k + bias[c]
/// with k = scale[c] / sqrt(variance + epsilon), c the row's channel.
template <typename T, int V> struct InstanceNormAffine {
  const T *scale, *bias;
  const NormParams &p;
  float k = 0, b = 0;

  __device__ void setRow(int64_t row, float variance) {
    const uint64_t r = static_cast<uint64_t>(row), channels = static_cast<uint64_t>(p.channels);
    const uint64_t c = r - divide(r, channels) * channels;
    k = load(scale[c]) / sqrtf(variance + p.epsilon);
    b = load(bias[c]);
  }
  struct Params {};
  __device__ Params params(int64_t) const { return {}; }
  __device__ LaneWord<T, V> apply(const float (&centered)[V], const Params &) const {
    LaneWord<T, V> out;
#pragma unroll
    for (int l = 0; l < V; ++l)
      out.lane[l] = store<T>(centered[l] * k + b);
    return out;
  }
};

/// Normalizes rows held in registers: thread lane() holds the row's
/// V-element vectors lane(), lane() + width(), ..., kHeld of them at most
/// (the planner sizes width() so that the row fits).
template <typename Rows, typename T, int V, typename Affine>
__device__ __forceinline__ void normalizeHeld(const T *x, T *y, const NormParams &p,
                                              Affine affine) {
  constexpr int kHeld = V == 1 ? kNormHeldElements : kNormHeldFloats / V;
  const int64_t vectors = p.length / V;
  const int lane = Rows::lane(), width = Rows::width();
  const float count = static_cast<float>(p.length);
  for (int64_t r = Rows::first(); r < p.rows; r += Rows::step()) {
    const T *xr = x + r * p.length;
    T *yr = y + r * p.length;
    float v[kHeld][V];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kHeld; ++k) {
      const int64_t j = lane + static_cast<int64_t>(k) * width;
      if (j < vectors) {
        const LaneWord<T, V> w = loadLanes<T, V>(xr + j * V);
#pragma unroll
        for (int l = 0; l < V; ++l) {
          v[k][l] = load(w.lane[l]);
          sum += v[k][l];
        }
      }
    }
    // The affine parameters of the thread's runs, in flight during the
    // reductions.
    typename Affine::Params params[kHeld];
#pragma unroll
    for (int k = 0; k < kHeld; ++k) {
      const int64_t j = lane + static_cast<int64_t>(k) * width;
      if (j < vectors)
        params[k] = affine.params(j * V);
    }
    const float mean = Rows::sum(sum) / count;
    float squares = 0.0f;
#pragma unroll
    for (int k = 0; k < kHeld; ++k) {
      const int64_t j = lane + static_cast<int64_t>(k) * width;
      if (j < vectors) {
#pragma unroll
        for (int l = 0; l < V; ++l) {
          v[k][l] -= mean;
          squares += v[k][l] * v[k][l];
        }
      }
    }
    affine.setRow(r, Rows::sum(squares) / count);
#pragma unroll
    for (int k = 0; k < kHeld; ++k) {
      const int64_t j = lane + static_cast<int64_t>(k) * width;
      if (j < vectors)
        storeLanes<T, V>(yr + j * V, affine.apply(v[k], params[k]));
    }
  }
}

/// Normalizes rows of any length, a block per row, reading the row from
/// memory in each of the three passes.
template <typename T, int V, typename Affine>
__device__ __forceinline__ void normalizeStreamed(const T *x, T *y, const NormParams &p,
                                                  Affine affine) {
  const int64_t vectors = p.length / V;
  const float count = static_cast<float>(p.length);
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const T *xr = x + r * p.length;
    T *yr = y + r * p.length;
    float sum = 0.0f;
#pragma unroll 1
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      const LaneWord<T, V> w = loadLanes<T, V>(xr + j * V);
#pragma unroll
      for (int l = 0; l < V; ++l)
        sum += load(w.lane[l]);
    }
    const float mean = BlockRows::sum(sum) / count;
    float squares = 0.0f;
#pragma unroll 1
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      const LaneWord<T, V> w = loadLanes<T, V>(xr + j * V);
#pragma unroll
      for (int l = 0; l < V; ++l) {
        const float d = load(w.lane[l]) - mean;
        squares += d * d;
      }
    }
    affine.setRow(r, BlockRows::sum(squares) / count);
#pragma unroll 1
    for (int64_t j = threadIdx.x; j < vectors; j += blockDim.x) {
      const LaneWord<T, V> w = loadLanes<T, V>(xr + j * V);
      float centered[V];
#pragma unroll
      for (int l = 0; l < V; ++l)
        centered[l] = load(w.lane[l]) - mean;
      storeLanes<T, V>(yr + j * V, affine.apply(centered, affine.params(j * V)));
    }
  }
}

/// How a row kernel is launched (the entry point's suffix).
enum class RowShape { Warp, Block, Stream };

template <RowShape shape, typename T, int V, typename Affine>
__device__ __forceinline__ void normalizeRows(const T *x, T *y, const NormParams &p,
                                              Affine affine) {
  if constexpr (shape == RowShape::Warp)
    normalizeHeld<WarpRows, T, V>(x, y, p, affine);
  else if constexpr (shape == RowShape::Block)
    normalizeHeld<BlockRows, T, V>(x, y, p, affine);
  else
    normalizeStreamed<T, V>(x, y, p, affine);
}

template <RowShape shape, typename T, int V>
__device__ __forceinline__ void layerNorm(const T *x, const T *scale, const T *bias, T *y,
                                          const NormParams &p) {
  normalizeRows<shape, T, V>(x, y, p, LayerNormAffine<T, V>{scale, bias, p});
}

template <RowShape shape, typename T, int V>
__device__ __forceinline__ void instanceNorm(const T *x, const T *scale, const T *bias, T *y,
                                             const NormParams &p) {
  normalizeRows<shape, T, V>(x, y, p, InstanceNormAffine<T, V>{scale, bias, p});
}

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

/// k[c] = scale[c] / sqrt(variance[c] + epsilon), as the CPU computes it.
template <typename T>
__device__ __forceinline__ void batchNormFactor(const T *scale, const T *variance, float *k,
                                                const BatchNormParams &p) {
  forEachIndex(p.channels, [&](uint64_t c) {
    const double s = load(scale[c]), v = load(variance[c]);
    k[c] = static_cast<float>(s / sqrt(v + p.epsilon));
  });
}

/// y = (x - mean[c]) * k[c] + bias[c], V elements of one channel per thread
/// (V divides the inner extent).
template <typename T, int V>
__device__ __forceinline__ void batchNorm(const T *x, const T *bias, const T *mean,
                                          const float *k, T *y, const BatchNormParams &p) {
  const uint64_t inner = static_cast<uint64_t>(p.inner), channels = static_cast<uint64_t>(p.channels);
  forEachIndex(p.n / V, [&](uint64_t i) {
    const uint64_t e = i * V, t = divide(e, inner);
    const uint64_t c = t - divide(t, channels) * channels;
    const float m = load(mean[c]), factor = k[c], b = load(bias[c]);
    const LaneWord<T, V> w = loadLanes<T, V>(x + e);
    LaneWord<T, V> out;
#pragma unroll
    for (int l = 0; l < V; ++l)
      out.lane[l] = store<T>((load(w.lane[l]) - m) * factor + b);
    storeLanes<T, V>(y + e, out);
  });
}

//===----------------------------------------------------------------------===//
// lrn
//===----------------------------------------------------------------------===//

/// y = x / (bias + alpha / size * sum)^beta, the sum of the squares of the
/// channel window added from its first channel on, as the CPU adds them.
template <typename T>
__device__ __forceinline__ void lrn(const T *x, T *y, const LrnParams &p) {
  const uint64_t inner = static_cast<uint64_t>(p.inner), channels = static_cast<uint64_t>(p.channels);
  forEachIndex(p.n, [&](uint64_t e) {
    const uint64_t t = divide(e, inner);
    const uint64_t n = divide(t, channels);
    const int64_t c = static_cast<int64_t>(t - n * channels);
    const int64_t base = static_cast<int64_t>(n * channels * inner + (e - t * inner));
    const int64_t lo = max(int64_t(0), c - p.before), hi = min(p.channels - 1, c + p.after);
    float sum = 0.0f;
#pragma unroll 1
    for (int64_t cc = lo; cc <= hi; ++cc) {
      const float v = load(x[base + cc * p.inner]);
      sum += v * v;
    }
    y[e] = store<T>(load(x[e]) / powf(p.bias + p.coeff * sum, p.beta));
  });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_NORMALIZATION_CUH
