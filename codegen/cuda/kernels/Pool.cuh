//===- Pool.cuh - max_pool(_indices) and avg_pool, NCHW or NHWC ----------===//
//
// The pools of runtime/kernels/src/pool.cpp: a thread per result element, its
// window clipped to the input, taps in row-major order (max_pool keeps the
// first maximum and the first NaN, bit for bit; avg_pool sums in double and
// divides by the taps inside the input, or inside the padded input with
// count_include_pad). Spatial dims sit right-aligned in kMaxPoolDims slots,
// the unused leading ones of extent 1, so every pool is a 3-d pool.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_POOL_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_POOL_CUH

#include "Common.cuh"

namespace tessel::kernels {

// floor(a / b) and ceil(a / b) for b > 0.
__device__ __forceinline__ int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? static_cast<int64_t>(divide(a, b))
                : -static_cast<int64_t>(divide(-a + b - 1, b));
}
__device__ __forceinline__ int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? static_cast<int64_t>(divide(a + b - 1, b))
                : -static_cast<int64_t>(divide(-a, b));
}

/// One result element's window: its input base, the taps [lo, hi) per dim
/// at input position first + k * dilation, and the tap counts.
struct PoolWindow {
  int64_t inBase, n, c;
  int64_t first[kMaxPoolDims], lo[kMaxPoolDims], hi[kMaxPoolDims];
  int64_t count, padded;
};

// Out of line: one copy serves every pool kernel of the module.
__device__ __noinline__ PoolWindow poolWindow(const PoolParams &p, uint64_t e) {
  // The result is dense: e is (n, position, c) for NHWC (outC == 1), else
  // (n, c, position).
  int64_t outSize = 1;
#pragma unroll
  for (int d = 0; d < kMaxPoolDims; ++d)
    outSize *= p.outSpatial[d];
  const uint64_t channels = static_cast<uint64_t>(p.channels), outSize64 = outSize;
  uint64_t n, c, position;
  if (p.outC == 1) {
    const uint64_t t = divide(e, channels);
    c = e - t * channels;
    n = divide(t, outSize64);
    position = t - n * outSize64;
  } else {
    const uint64_t t = divide(e, outSize64);
    position = e - t * outSize64;
    n = divide(t, channels);
    c = t - n * channels;
  }
  PoolWindow w;
  w.inBase = static_cast<int64_t>(n) * p.inBatch + static_cast<int64_t>(c) * p.inC;
  w.n = static_cast<int64_t>(n);
  w.c = static_cast<int64_t>(c);
  w.count = 1;
  w.padded = 1;
  bool any = true;
#pragma unroll
  for (int d = kMaxPoolDims - 1; d >= 0; --d) {
    const uint64_t extent = static_cast<uint64_t>(p.outSpatial[d]);
    const uint64_t q = divide(position, extent);
    const int64_t o = static_cast<int64_t>(position - q * extent);
    position = q;
    const int64_t s = p.stride[d], dil = p.dilation[d], in = p.inSpatial[d], k = p.kernel[d];
    w.first[d] = o * s - p.padBegin[d];
    w.lo[d] = max(int64_t(0), ceilDiv(-w.first[d], dil));
    w.hi[d] = min(k, floorDiv(in - 1 - w.first[d], dil) + 1);
    any = any && w.lo[d] < w.hi[d];
    w.count *= max(int64_t(0), w.hi[d] - w.lo[d]);
    const int64_t padLo = max(int64_t(0), ceilDiv(-p.padBegin[d] - w.first[d], dil));
    const int64_t padHi = min(k, floorDiv(in + p.padEnd[d] - 1 - w.first[d], dil) + 1);
    w.padded *= max(int64_t(0), padHi - padLo);
  }
  if (!any)
    w.count = 0;
  return w;
}

/// f(offset) for every tap of the window inside the input, row-major.
template <typename F>
__device__ __forceinline__ void forEachTap(const PoolParams &p, const PoolWindow &w, F &&f) {
  if (w.count == 0)
    return;
  const int64_t stride1 = p.inSpatial[2], stride0 = p.inSpatial[1] * stride1;
#pragma unroll 1
  for (int64_t k0 = w.lo[0]; k0 < w.hi[0]; ++k0) {
    const int64_t row0 = (w.first[0] + k0 * p.dilation[0]) * stride0;
#pragma unroll 1
    for (int64_t k1 = w.lo[1]; k1 < w.hi[1]; ++k1) {
      const int64_t row1 = row0 + (w.first[1] + k1 * p.dilation[1]) * stride1;
#pragma unroll 1
      for (int64_t k2 = w.lo[2]; k2 < w.hi[2]; ++k2)
        f(w.inBase + (row1 + w.first[2] + k2 * p.dilation[2]) * p.inS);
    }
  }
}

/// Lanes consecutive channels of an NHWC tensor, one 16-byte word where
/// Lanes > 1 (LaneWord, Common.cuh). A pool kernel with Lanes > 1 computes
/// that many channels of a result position per thread: the planner then
/// gives p.channels as the channel groups and p.inC = Lanes, so poolWindow's
/// (n, position, c) names a group and its inBase the group's first channel,
/// and result e's lanes are elements e * Lanes onward (KernelLibrary.cpp,
/// pool()).
template <typename T, int Lanes = 1>
__device__ __forceinline__ void maxPool(const T *x, T *y, const PoolParams &p) {
  using C = Math<T>;
  for (int64_t e = gridStart(); e < p.n; e += gridStep()) {
    const PoolWindow w = poolWindow(p, e);
    C best[Lanes];
    T bestRaw[Lanes];
#pragma unroll
    for (int l = 0; l < Lanes; ++l) {
      if constexpr (isFloat<T>())
        best[l] = static_cast<C>(-kInf);
      else
        best[l] = Limits<T>::lowest;
      bestRaw[l] = T{};
    }
    bool any = false;
    forEachTap(p, w, [&](int64_t i) {
      const LaneWord<T, Lanes> raw = loadLanes<T, Lanes>(x + i);
#pragma unroll
      for (int l = 0; l < Lanes; ++l) {
        const C v = load(raw.lane[l]);
        bool take = !any || v > best[l];
        if constexpr (isFloat<T>())
          take = take || (isnan(v) && !isnan(best[l]));
        if (take) {
          best[l] = v;
          bestRaw[l] = raw.lane[l];
        }
      }
      any = true;
    });
    LaneWord<T, Lanes> result;
#pragma unroll
    for (int l = 0; l < Lanes; ++l)
      result.lane[l] = any ? bestRaw[l] : store<T>(best[l]);
    storeLanes<T, Lanes>(y + e * Lanes, result);
  }
}

/// MaxPool's Indices (max_pool_indices): the flat NCHW index into x of the
/// tap maxPool takes (the first maximum, the first NaN), its spatial part
/// row-major, or column-major with p.columnMajor; -1 for an empty window.
/// A thread per result element, either layout (Lanes 1).
template <typename T>
__device__ __forceinline__ void maxPoolIndices(const T *x, int64_t *y, const PoolParams &p) {
  using C = Math<T>;
  const int64_t spatial = p.inSpatial[0] * p.inSpatial[1] * p.inSpatial[2];
  for (int64_t e = gridStart(); e < p.n; e += gridStep()) {
    const PoolWindow w = poolWindow(p, e);
    C best = C{};
    int64_t at = -1;
    forEachTap(p, w, [&](int64_t i) {
      const C v = load(x[i]);
      bool take = at < 0 || v > best;
      if constexpr (isFloat<T>())
        take = take || (isnan(v) && !isnan(best));
      if (take) {
        best = v;
        at = i;
      }
    });
    int64_t index = -1;
    if (at >= 0) {
      // The tap's spatial coordinates (slots right-aligned, leading ones 0).
      int64_t rest = (at - w.inBase) / p.inS;
      const int64_t s2 = p.inSpatial[2], s1 = p.inSpatial[1];
      const int64_t a0 = rest / (s1 * s2), a1 = rest / s2 % s1, a2 = rest % s2;
      const int64_t position =
          p.columnMajor ? a2 * p.inSpatial[0] * s1 + a1 * p.inSpatial[0] + a0 : rest;
      index = (w.n * p.channels + w.c) * spatial + position;
    }
    y[e] = index;
  }
}

template <typename T, int Lanes = 1>
__device__ __forceinline__ void avgPool(const T *x, T *y, const PoolParams &p) {
  for (int64_t e = gridStart(); e < p.n; e += gridStep()) {
    const PoolWindow w = poolWindow(p, e);
    double sum[Lanes];
#pragma unroll
    for (int l = 0; l < Lanes; ++l)
      sum[l] = 0;
    forEachTap(p, w, [&](int64_t i) {
      const LaneWord<T, Lanes> raw = loadLanes<T, Lanes>(x + i);
#pragma unroll
      for (int l = 0; l < Lanes; ++l)
        sum[l] += static_cast<double>(load(raw.lane[l]));
    });
    const int64_t divisor = p.includePad ? w.padded : w.count;
    LaneWord<T, Lanes> result;
#pragma unroll
    for (int l = 0; l < Lanes; ++l) {
      const double mean = divisor ? sum[l] / static_cast<double>(divisor)
                                  : __longlong_as_double(0x7ff8000000000000ll); // NaN
      result.lane[l] = store<T>(static_cast<Math<T>>(mean));
    }
    storeLanes<T, Lanes>(y + e * Lanes, result);
  }
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_POOL_CUH
