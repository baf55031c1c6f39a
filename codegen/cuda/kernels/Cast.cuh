//===- Cast.cuh - dtype conversion, as the CPU tier's cast ----------------===//
//
// The conversions of runtime/kernels/src/movement.cpp (castKernel), value for
// value: to f16 one correct rounding from the exact source (wide sources
// round to odd into float first, so the float -> f16 step cannot round
// twice); float to integer truncates toward zero, wrapping within int64 (as
// numpy on x86) and saturating beyond, NaN -> 0; integers wrap; bool reads
// nonzero as true and NaN as true.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_CAST_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_CAST_CUH

#include "Common.cuh"

namespace tessel::kernels {

__device__ __forceinline__ float roundToOddFloat(double d) {
  if (isnan(d))
    return static_cast<float>(d);
  constexpr double kFloatMax = 3.4028234663852886e38;
  if (fabs(d) > kFloatMax)
    return d < 0 ? -3.4028234663852886e38f : 3.4028234663852886e38f;
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d)
    return f;
  if (fabs(static_cast<double>(f)) > fabs(d))
    f = nextafterf(f, 0.0f);
  return __uint_as_float(__float_as_uint(f) | 1u);
}

__device__ __forceinline__ float roundToOddFloat(uint64_t magnitude) {
  if (magnitude < (uint64_t(1) << 24))
    return static_cast<float>(magnitude);
  const int shift = 64 - __clzll(static_cast<long long>(magnitude)) - 24;
  uint64_t kept = magnitude >> shift;
  if (magnitude & ((uint64_t(1) << shift) - 1))
    kept |= 1;
  return ldexpf(static_cast<float>(kept), shift);
}

// Exact for every float source.
template <typename S> __device__ __forceinline__ double toDouble(S v) {
  return static_cast<double>(load(v));
}

// The source rounded to float with round-to-odd (exact when representable).
template <typename S> __device__ __forceinline__ float toOddFloat(S v) {
  if constexpr (isFloat<S>()) {
    if constexpr (sizeof(S) == 8)
      return roundToOddFloat(static_cast<double>(v));
    else
      return load(v);
  } else if constexpr (isSigned<S>()) {
    return v < 0 ? -roundToOddFloat(uint64_t(0) - static_cast<uint64_t>(v))
                 : roundToOddFloat(static_cast<uint64_t>(v));
  } else {
    return roundToOddFloat(static_cast<uint64_t>(v));
  }
}

template <typename D> __device__ __forceinline__ D floatToInt(double d) {
  if (isnan(d))
    return 0;
  const double t = trunc(d);
  constexpr double kTwo63 = 9223372036854775808.0, kTwo64 = 18446744073709551616.0;
  if (t >= -kTwo63 && t < kTwo63)
    return static_cast<D>(static_cast<int64_t>(t));
  if constexpr (sizeof(D) == 8 && !isSigned<D>())
    if (t >= 0 && t < kTwo64)
      return static_cast<D>(static_cast<uint64_t>(t));
  return t < 0 ? Limits<D>::lowest : Limits<D>::max;
}

template <typename D, typename S> __device__ __forceinline__ D convert(S v) {
  if constexpr (std::is_same_v<S, b8>) {
    return convert<D>(static_cast<uint8_t>(v.byte != 0));
  } else if constexpr (std::is_same_v<D, b8>) {
    if constexpr (isFloat<S>())
      return b8{static_cast<uint8_t>(toDouble(v) != 0)};
    else
      return b8{static_cast<uint8_t>(v != 0)};
  } else if constexpr (std::is_same_v<D, f16>) {
    return store<f16>(toOddFloat(v));
  } else if constexpr (isFloat<D>()) {
    if constexpr (isFloat<S>())
      return static_cast<D>(toDouble(v));
    else
      return static_cast<D>(v);
  } else if constexpr (isFloat<S>()) {
    return floatToInt<D>(toDouble(v));
  } else {
    return static_cast<D>(v);
  }
}

template <typename S, typename D>
__device__ __forceinline__ void cast(const S *x, D *y, const UnaryParams &p) {
  forEachIndex(p.n, [&](auto i) { y[i] = convert<D>(x[i]); });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_CAST_CUH
