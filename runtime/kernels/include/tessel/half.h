//===- half.h - IEEE binary16 storage for the CPU kernels -------*- C++ -*-===//
//
// f16 tensors are IEEE 754 binary16 bit patterns. The CPU kernels follow the
// "f16 storage, f32 math" policy: load -> float, compute in float (or wider),
// round back to half with round-to-nearest-even. Subnormals, infinities and
// NaNs are handled exactly (every half converts to the float of the same
// value; floatToHalf is correctly rounded).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_HALF_H
#define TESSEL_HALF_H

#include <cstdint>
#include <cstring>

namespace tessel::cpu {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Exact: every binary16 value is a binary32 value.
inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 (exact in float).
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return bitsFloat(floatBits(magnitude) | sign);
  }
  if (exponent == 0x1f) // inf / nan (payload kept)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
}

// Round to nearest, ties to even. Values of magnitude >= 65520 become inf;
// NaN stays NaN (quiet, top payload bits kept, sign kept).
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  uint32_t out;
  if (x >= 0x7f800000u) { // inf or nan
    out = x > 0x7f800000u ? (0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u;
  } else if (x >= 0x47800000u) { // >= 65536: overflow
    out = 0x7c00u;
  } else if (x < 0x38800000u) { // < 2^-14: half subnormal or zero
    // Shift the (implicit-one) mantissa into the 2^-24 grid, rounding to
    // nearest even on the bits shifted out. x < 2^-25 (shift > 24) -> 0.
    uint32_t exponent = x >> 23; // biased float exponent, <= 112
    if (exponent < 102) {        // below 2^-25: rounds to zero
      out = 0;
    } else {
      uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126 - exponent; // value = mantissa * 2^(exp-150); unit 2^-24
      uint32_t q = mantissa >> shift;
      uint32_t rem = mantissa & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (q & 1)))
        ++q; // may carry into the smallest normal: still the right encoding
      out = q;
    }
  } else { // normal range (may round up to inf at >= 65520)
    uint32_t mantissaOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mantissaOdd;
    out = x >> 13;
    if (out > 0x7c00u)
      out = 0x7c00u;
  }
  return static_cast<uint16_t>(out | sign);
}

// A tag type for f16 elements in kernel templates.
struct Half {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2, "Half must be 2 bytes");

// The arithmetic type of an element type: float for Half, else itself.
template <typename T> struct MathTypeOf { using type = T; };
template <> struct MathTypeOf<Half> { using type = float; };
template <typename T> using MathType = typename MathTypeOf<T>::type;

template <typename T> inline MathType<T> loadElem(T v) { return v; }
inline float loadElem(Half v) { return halfToFloat(v.bits); }

template <typename T> inline T storeElem(MathType<T> v) { return v; }
template <> inline Half storeElem<Half>(float v) { return Half{floatToHalf(v)}; }

} // namespace tessel::cpu

#endif // TESSEL_HALF_H
