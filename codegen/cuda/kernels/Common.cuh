//===- Common.cuh - element types, loops and indexing of the library ------===//
//
// What every library kernel shares: the element types (f16 as raw bits, as
// the CPU tier's Half; bool as one byte), "f16 storage, f32 math" loads and
// stores, grid-stride loops, the index arithmetic of strided shapes, and
// 16-byte loads and stores of consecutive elements.
//
// Semantics follow the CPU tier's kernels (runtime/kernels), the reference:
// f16 loads widen exactly to float, math runs in float (double for f64) and
// one round-to-nearest-even store ends it. The library is compiled with
// --fmad=false because the CPU kernels do not contract a * b + c either.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_COMMON_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_COMMON_CUH

#include "KernelParams.h"

#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

namespace tessel::kernels {

/// An f16 element: IEEE binary16 bits.
struct f16 {
  uint16_t bits;
};
/// A bool element: any nonzero byte reads as true; stores write 0 or 1.
struct b8 {
  uint8_t byte;
};

constexpr double kInf = __builtin_huge_val();

template <typename T> struct MathOf { using type = T; };
template <> struct MathOf<f16> { using type = float; };
/// The type an element computes in: float for f16, else itself.
template <typename T> using Math = typename MathOf<T>::type;

template <typename T> __device__ __forceinline__ T load(T v) { return v; }
__device__ __forceinline__ float load(f16 v) { return __half2float(__ushort_as_half(v.bits)); }

template <typename T> __device__ __forceinline__ T store(Math<T> v) { return v; }
template <> __device__ __forceinline__ f16 store<f16>(float v) {
  return f16{__half_as_ushort(__float2half_rn(v))};
}

template <typename T> __host__ __device__ constexpr bool isFloat() { return false; }
template <> __host__ __device__ constexpr bool isFloat<float>() { return true; }
template <> __host__ __device__ constexpr bool isFloat<double>() { return true; }
template <> __host__ __device__ constexpr bool isFloat<f16>() { return true; }

template <typename T> __host__ __device__ constexpr bool isSigned() { return T(-1) < T(0); }

template <typename T> struct Limits;
template <> struct Limits<int8_t> { static constexpr int8_t lowest = -128, max = 127; };
template <> struct Limits<uint8_t> { static constexpr uint8_t lowest = 0, max = 255; };
template <> struct Limits<int16_t> { static constexpr int16_t lowest = -32768, max = 32767; };
template <> struct Limits<int32_t> {
  static constexpr int32_t lowest = -2147483647 - 1, max = 2147483647;
};
template <> struct Limits<int64_t> {
  static constexpr int64_t lowest = -9223372036854775807ll - 1, max = 9223372036854775807ll;
};
template <> struct Limits<uint64_t> { static constexpr uint64_t lowest = 0, max = ~0ull; };

/// double -> integer T as the CPU's saturateCast: truncation toward zero,
/// saturating, NaN -> 0.
template <typename T> __device__ __forceinline__ T saturateInt(double v) {
  if (isnan(v))
    return 0;
  if (v <= static_cast<double>(Limits<T>::lowest))
    return Limits<T>::lowest;
  if (v >= static_cast<double>(Limits<T>::max))
    return Limits<T>::max;
  return static_cast<T>(v);
}

/// double -> T as the CPU's saturateCast: floats round through Math<T> (f16
/// thus rounds twice, double -> float -> f16, as the CPU does), integers
/// saturate.
template <typename T> __device__ __forceinline__ T saturateCast(double v) {
  if constexpr (isFloat<T>())
    return store<T>(static_cast<Math<T>>(v));
  else
    return saturateInt<T>(v);
}

/// The elements a thread of a grid-stride loop starts at and steps by.
__device__ __forceinline__ int64_t gridStart() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t gridStep() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// a / b for index arithmetic: 32-bit division when both fit (several times
/// cheaper), else a shared out-of-line 64-bit division (keeps every kernel
/// from inlining its own copies).
__device__ __noinline__ uint64_t divide64(uint64_t a, uint64_t b) { return a / b; }
__device__ __forceinline__ uint64_t divide(uint64_t a, uint64_t b) {
  return ((a | b) >> 32) == 0 ? static_cast<uint32_t>(a) / static_cast<uint32_t>(b)
                              : divide64(a, b);
}

/// Runs body(i) for every i in [0, n) over the grid.
template <typename F> __device__ __forceinline__ void forEachIndex(int64_t n, F &&body) {
  for (int64_t i = gridStart(); i < n; i += gridStep())
    body(static_cast<uint64_t>(i));
}

/// The offsets of row-major index `i` of `shape` under K stride sets.
template <int K>
__device__ __forceinline__ void stridedOffsets(uint64_t i, int rank, const int64_t *shape,
                                               const int64_t (*strides)[kMaxRank],
                                               int64_t (&offsets)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
    offsets[k] = 0;
#pragma unroll 1
  for (int d = rank - 1; d >= 0; --d) {
    const uint64_t extent = static_cast<uint64_t>(shape[d]);
    const uint64_t q = divide(i, extent);
    const int64_t c = static_cast<int64_t>(i - q * extent);
    i = q;
#pragma unroll
    for (int k = 0; k < K; ++k)
      offsets[k] += c * strides[k][d];
  }
}

/// The offset of row-major index `i` of `shape` under one stride set.
__device__ __forceinline__ int64_t stridedOffset(uint64_t i, int rank, const int64_t *shape,
                                                 const int64_t *stride) {
  int64_t offset = 0;
#pragma unroll 1
  for (int d = rank - 1; d >= 0; --d) {
    const uint64_t extent = static_cast<uint64_t>(shape[d]);
    const uint64_t q = divide(i, extent);
    offset += static_cast<int64_t>(i - q * extent) * stride[d];
    i = q;
  }
  return offset;
}

/// `Lanes` consecutive elements, one 16-byte word where Lanes > 1: what a
/// kernel that moves 16 bytes per thread loads and stores (the simt tier's
/// pointers are 16-byte aligned; the planner picks such a kernel only where
/// every word it touches lies at a multiple of 16 bytes).
template <typename T, int Lanes> struct LaneWord {
  T lane[Lanes];
};
template <typename T, int Lanes>
__device__ __forceinline__ LaneWord<T, Lanes> loadLanes(const T *x) {
  if constexpr (Lanes == 1) {
    return {{x[0]}};
  } else {
    static_assert(Lanes * sizeof(T) == 16, "one 16-byte word");
    union {
      uint4 word;
      LaneWord<T, Lanes> lanes;
    } u;
    u.word = *reinterpret_cast<const uint4 *>(x);
    return u.lanes;
  }
}
template <typename T, int Lanes>
__device__ __forceinline__ void storeLanes(T *y, const LaneWord<T, Lanes> &v) {
  if constexpr (Lanes == 1) {
    y[0] = v.lane[0];
  } else {
    union {
      uint4 word;
      LaneWord<T, Lanes> lanes;
    } u;
    u.lanes = v;
    *reinterpret_cast<uint4 *>(y) = u.word;
  }
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_COMMON_CUH
