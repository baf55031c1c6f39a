//===- dispatch.h - dtype dispatch shared by the CPU kernels ----*- C++ -*-===//
//
// Maps a runtime DType to its C++ element type for templated kernels, plus the
// error helpers and the saturating conversion the elementwise and reduction
// kernels share. Internal to the CPU tier.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_DISPATCH_H
#define TESSEL_RUNTIME_CPU_DISPATCH_H

#include "tessel/half.h"
#include "tessel/cpu_kernels.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace tessel::cpu {

template <typename T> struct Tag { using type = T; };

inline KernelStatus fail(std::string message) { return KernelStatus{std::move(message)}; }

inline KernelStatus unsupported(const char *op, DType dtype) {
  return fail(std::string(op) + ": unsupported dtype " + dtypeName(dtype));
}

// Calls f(Tag<T>{}) for the element type of `dtype` if it is in the family;
// returns false when it is not.
enum Family : unsigned {
  kFloat = 1,    // f32 f64 f16
  kSigned = 2,   // i8 i16 i32 i64
  kUnsigned = 4, // u8 u16 u32 u64
  kBool = 8,
  kInt = kSigned | kUnsigned,
  kNumeric = kFloat | kInt,
  kAll = kNumeric | kBool,
};

// `Instantiable` limits which element types f is instantiated for at all (a
// kernel that cannot compile for bool excludes it); `families` chooses at run
// time among those.
template <unsigned Instantiable = kAll, typename F>
bool dispatch(DType dtype, unsigned families, F &&f) {
  switch (dtype) {
  case DType::F32: if constexpr ((Instantiable & kFloat) != 0) if (families & kFloat) { f(Tag<float>{}); return true; } break;
  case DType::F64: if constexpr ((Instantiable & kFloat) != 0) if (families & kFloat) { f(Tag<double>{}); return true; } break;
  case DType::F16: if constexpr ((Instantiable & kFloat) != 0) if (families & kFloat) { f(Tag<Half>{}); return true; } break;
  case DType::I8: if constexpr ((Instantiable & kSigned) != 0) if (families & kSigned) { f(Tag<int8_t>{}); return true; } break;
  case DType::I16: if constexpr ((Instantiable & kSigned) != 0) if (families & kSigned) { f(Tag<int16_t>{}); return true; } break;
  case DType::I32: if constexpr ((Instantiable & kSigned) != 0) if (families & kSigned) { f(Tag<int32_t>{}); return true; } break;
  case DType::I64: if constexpr ((Instantiable & kSigned) != 0) if (families & kSigned) { f(Tag<int64_t>{}); return true; } break;
  case DType::U8: if constexpr ((Instantiable & kUnsigned) != 0) if (families & kUnsigned) { f(Tag<uint8_t>{}); return true; } break;
  case DType::U16: if constexpr ((Instantiable & kUnsigned) != 0) if (families & kUnsigned) { f(Tag<uint16_t>{}); return true; } break;
  case DType::U32: if constexpr ((Instantiable & kUnsigned) != 0) if (families & kUnsigned) { f(Tag<uint32_t>{}); return true; } break;
  case DType::U64: if constexpr ((Instantiable & kUnsigned) != 0) if (families & kUnsigned) { f(Tag<uint64_t>{}); return true; } break;
  case DType::Bool: if constexpr ((Instantiable & kBool) != 0) if (families & kBool) { f(Tag<bool>{}); return true; } break;
  default: break;
  }
  return false;
}

/// Dispatch over `Families` only, for kernels written for exactly those types.
template <unsigned Families, typename F> bool dispatchOnly(DType dtype, F &&f) {
  return dispatch<Families>(dtype, Families, std::forward<F>(f));
}

template <typename T> constexpr bool isFloatElem() {
  return std::is_floating_point<T>::value || std::is_same<T, Half>::value;
}

// double -> T: floats round to nearest; integers truncate toward zero and
// saturate, NaN -> 0 (no UB for any input).
template <typename T> T saturateCast(double v) {
  if constexpr (std::is_integral<T>::value) {
    if (std::isnan(v))
      return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    // max() may round up when converted to double (int64/uint64): compare >=.
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return storeElem<T>(static_cast<MathType<T>>(v));
  }
}

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_DISPATCH_H
