//===- Elementwise.cuh - unary, binary, comparison, logic, where, clip ----===//
//
// The elementwise ops of runtime/src/cpu/elementwise.cpp, formula for
// formula: float math in float for f32 and f16 (double for f64), integer
// arithmetic wrapping through uint64, integer division and remainder by zero
// giving 0.
// Each thread reads its elements before it writes its result, so the result
// may alias an operand of the same shape (in-place steps).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH

#include "Common.cuh"

namespace tessel::kernels {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

enum class U {
  Relu, Sigmoid, Tanh, Abs, Neg, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round,
  Sign, Erf, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Softplus, Softsign, HardSwish, LeakyRelu, Elu, Celu, Selu, ThresholdedRelu,
  HardSigmoid, Shrink,
};

template <typename C> __device__ __forceinline__ C roundHalfEven(C x) {
  if (!isfinite(x))
    return x;
  C f = floor(x);
  C diff = x - f; // exact
  if (diff > C(0.5))
    return f + 1;
  if (diff < C(0.5))
    return f;
  return fmod(f, C(2)) == 0 ? f : f + 1;
}

// C is float (f32, f16) or double (f64); the overloads of the math functions
// pick the float or double implementation.
template <U op, typename C>
__device__ __forceinline__ C unaryFloat(C x, const UnaryParams &p) {
  const C alpha = static_cast<C>(p.alpha), beta = static_cast<C>(p.beta),
          gamma = static_cast<C>(p.gamma);
  switch (op) {
  case U::Relu: return x < 0 ? C(0) : x;
  case U::Sigmoid:
    if (x >= 0)
      return C(1) / (C(1) + exp(-x));
    else {
      C e = exp(x);
      return e / (C(1) + e);
    }
  case U::Tanh: return tanh(x);
  case U::Abs: return fabs(x);
  case U::Neg: return -x;
  case U::Exp: return exp(x);
  case U::Log: return log(x);
  case U::Sqrt: return sqrt(x);
  case U::Reciprocal: return C(1) / x;
  case U::Floor: return floor(x);
  case U::Ceil: return ceil(x);
  case U::Round: return roundHalfEven(x);
  case U::Sign: return x > 0 ? C(1) : x < 0 ? C(-1) : x;
  case U::Erf: return erf(x);
  case U::Sin: return sin(x);
  case U::Cos: return cos(x);
  case U::Tan: return tan(x);
  case U::Asin: return asin(x);
  case U::Acos: return acos(x);
  case U::Atan: return atan(x);
  case U::Sinh: return sinh(x);
  case U::Cosh: return cosh(x);
  case U::Asinh: return asinh(x);
  case U::Acosh: return acosh(x);
  case U::Atanh: return atanh(x);
  case U::Softplus:
    if (isnan(x))
      return x;
    return (x > 0 ? x : C(0)) + log1p(exp(-fabs(x)));
  case U::Softsign: return x / (C(1) + fabs(x));
  case U::HardSwish: {
    C t = x / C(6) + C(0.5);
    t = t < 0 ? C(0) : (t > 1 ? C(1) : t);
    return x * t;
  }
  case U::LeakyRelu: return x < 0 ? alpha * x : x;
  case U::Elu: return x < 0 ? alpha * expm1(x) : x;
  case U::Celu: {
    if (isnan(x))
      return x;
    C neg = alpha * expm1(x / alpha);
    return (x > 0 ? x : C(0)) + (neg < 0 ? neg : C(0));
  }
  case U::Selu: return x > 0 ? gamma * x : gamma * (alpha * expm1(x));
  case U::ThresholdedRelu: return x > alpha ? x : C(0);
  case U::HardSigmoid: {
    C t = alpha * x + beta;
    return t < 0 ? C(0) : (t > 1 ? C(1) : t);
  }
  case U::Shrink:
    // alpha = bias, beta = lambd.
    if (x < -beta)
      return x + alpha;
    if (x > beta)
      return x - alpha;
    return C(0);
  }
  return x;
}

template <U op, typename T> __device__ __forceinline__ T unaryInt(T x) {
  switch (op) {
  case U::Relu:
    if constexpr (isSigned<T>())
      return x < 0 ? T(0) : x;
    return x;
  case U::Abs:
    if constexpr (isSigned<T>())
      return x < 0 ? wrapNeg(x) : x;
    return x;
  case U::Neg: return wrapNeg(x);
  case U::Sign:
    if constexpr (isSigned<T>())
      return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
    return x > 0 ? T(1) : T(0);
  default: return x;
  }
}

template <U op, typename T>
__device__ __forceinline__ void unary(const T *x, T *y, const UnaryParams &p) {
  forEachIndex(p.n, [&](auto i) {
    if constexpr (isFloat<T>())
      y[i] = store<T>(unaryFloat<op, Math<T>>(load(x[i]), p));
    else
      y[i] = unaryInt<op, T>(x[i]);
  });
}

__device__ __forceinline__ void logicalNot(const uint8_t *x, uint8_t *y, const UnaryParams &p) {
  forEachIndex(p.n, [&](auto i) { y[i] = x[i] ? 0 : 1; });
}

template <typename T>
__device__ __forceinline__ void clip(const T *x, T *y, const ClipParams &p) {
  using C = Math<T>;
  C lo, hi;
  if constexpr (isFloat<T>()) {
    lo = static_cast<C>(p.lo);
    hi = static_cast<C>(p.hi);
  } else {
    lo = static_cast<C>(p.ilo);
    hi = static_cast<C>(p.ihi);
  }
  forEachIndex(p.n, [&](auto i) {
    C v = load(x[i]);
    // NaN passes through (both comparisons false).
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    y[i] = store<T>(v);
  });
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

// Mod: ONNX Mod with fmod=0, the sign of the divisor, integers only (Library.cu
// defines no float entry); FMod: fmod=1, the sign of the dividend.
enum class B { Add, Sub, Mul, Div, Pow, Mod, FMod, Max, Min, PRelu };

template <typename T> __device__ __forceinline__ T intPow(T base, T exponent) {
  if constexpr (isSigned<T>()) {
    if (exponent < 0) {
      if (base == 1)
        return 1;
      if (base == -1)
        return (exponent & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  uint64_t e = static_cast<uint64_t>(exponent);
  while (e) {
    if (e & 1)
      result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<T>(result);
}

template <B op, typename T> __device__ __forceinline__ T binaryOp(T a, T b) {
  if constexpr (isFloat<T>()) {
    using C = Math<T>;
    C x = load(a), y = load(b), r;
    switch (op) {
    case B::Add: r = x + y; break;
    case B::Sub: r = x - y; break;
    case B::Mul: r = x * y; break;
    case B::Div: r = x / y; break;
    case B::Pow: r = pow(x, y); break;
    case B::Mod: // integers only
    case B::FMod: r = fmod(x, y); break;
    case B::Max: r = (isnan(x) || isnan(y)) ? x + y : (x < y ? y : x); break;
    case B::Min: r = (isnan(x) || isnan(y)) ? x + y : (y < x ? y : x); break;
    case B::PRelu: r = x < 0 ? y * x : x; break;
    }
    return store<T>(r);
  } else {
    switch (op) {
    case B::Add: return wrapAdd(a, b);
    case B::Sub: return wrapSub(a, b);
    case B::Mul: return wrapMul(a, b);
    case B::Div:
      if (b == 0)
        return 0;
      if constexpr (isSigned<T>())
        if (b == -1)
          return wrapNeg(a);
      return static_cast<T>(a / b);
    case B::Pow: return intPow(a, b);
    case B::Mod:
    case B::FMod: {
      if (b == 0)
        return 0;
      if constexpr (isSigned<T>()) {
        if (b == -1)
          return 0;
        T r = static_cast<T>(a % b);
        if (op == B::Mod && r != 0 && (r < 0) != (b < 0))
          r = static_cast<T>(r + b);
        return r;
      }
      return static_cast<T>(a % b);
    }
    case B::Max: return a < b ? b : a;
    case B::Min: return b < a ? b : a;
    case B::PRelu:
      if constexpr (isSigned<T>())
        return a < 0 ? wrapMul(b, a) : a;
      return a;
    }
    return a;
  }
}

template <B op, typename T>
__device__ __forceinline__ void binary(const T *a, const T *b, T *y, const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    y[i] = binaryOp<op, T>(a[off[0]], b[off[1]]);
  });
}

/// pow with operands of different dtypes: in double, cast to the base's dtype.
template <typename T, typename E>
__device__ __forceinline__ void powMixed(const T *a, const E *b, T *y, const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    const double base = static_cast<double>(load(a[off[0]]));
    const double exponent = static_cast<double>(load(b[off[1]]));
    y[i] = saturateCast<T>(pow(base, exponent));
  });
}

enum class Cmp { Equal, Less, LessEqual, Greater, GreaterEqual };

template <Cmp op, typename T>
__device__ __forceinline__ void compare(const T *a, const T *b, uint8_t *y,
                                        const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    const auto l = load(a[off[0]]), r = load(b[off[1]]);
    bool v = false;
    switch (op) {
    case Cmp::Equal: v = l == r; break;
    case Cmp::Less: v = l < r; break;
    case Cmp::LessEqual: v = l <= r; break;
    case Cmp::Greater: v = l > r; break;
    case Cmp::GreaterEqual: v = l >= r; break;
    }
    y[i] = v ? 1 : 0;
  });
}

enum class L { And, Or, Xor };

template <L op>
__device__ __forceinline__ void logical(const uint8_t *a, const uint8_t *b, uint8_t *y,
                                        const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    const bool l = a[off[0]] != 0, r = b[off[1]] != 0;
    const bool v = op == L::And ? (l && r) : op == L::Or ? (l || r) : (l != r);
    y[i] = v ? 1 : 0;
  });
}

/// where, on the elements' bits (W: an unsigned type of the element's size).
template <typename W>
__device__ __forceinline__ void where(const uint8_t *c, const W *a, const W *b, W *y,
                                      const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[3];
    stridedOffsets<3>(i, p.rank, p.shape, p.stride, off);
    y[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH
