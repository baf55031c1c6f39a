//===- elementwise_math.h - the elementwise ops' scalar semantics -*- C++ -*-===//
//
// What each elementwise op computes on one element, written once and compiled
// twice: by the CPU kernels (runtime/kernels/src/elementwise.cpp, host C++)
// and by the CUDA kernel library (codegen/cuda/kernels/Elementwise.cuh, nvcc
// device code), as CUTLASS's host/device functors are. The tiers differ only
// in how they load and store an element (f16 storage widens exactly to float)
// and how they walk the tensor; the formulas are these.
//
// Float math runs in C: float for f32 and f16, double for f64, through the
// standard functions on the host and CUDA's overloads of the same names on
// the device. Integer arithmetic wraps (two's complement, through uint64: no
// signed-overflow UB), integer division truncates toward zero, and integer
// division and remainder by zero give 0 rather than trapping.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_ELEMENTWISE_MATH_H
#define TESSEL_ELEMENTWISE_MATH_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define TSL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#include <cmath>
#define TSL_HOST_DEVICE inline
#endif

// A math function of C: CUDA's device overload, or the standard one.
#if defined(__CUDA_ARCH__)
#define TSL_MATH(function) ::function
#else
#define TSL_MATH(function) std::function
#endif

namespace tessel::elementwise {

//===----------------------------------------------------------------------===//
// Integers
//===----------------------------------------------------------------------===//

template <typename T> TSL_HOST_DEVICE T wrapAdd(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T> TSL_HOST_DEVICE T wrapSub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T> TSL_HOST_DEVICE T wrapMul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename T> TSL_HOST_DEVICE T wrapNeg(T a) {
  return static_cast<T>(uint64_t(0) - static_cast<uint64_t>(a));
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

enum class Unary {
  Relu, Sigmoid, Tanh, Abs, Neg, Exp, Log, Sqrt, Reciprocal, Floor, Ceil, Round,
  Sign, Erf, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Softplus, Softsign, HardSwish, LeakyRelu, Elu, Celu, Selu, ThresholdedRelu,
  HardSigmoid, Shrink, Gelu, GeluTanh, Silu,
};

/// The unary ops with an integer form (the others are float only).
constexpr bool hasIntegerForm(Unary op) {
  return op == Unary::Relu || op == Unary::Abs || op == Unary::Neg || op == Unary::Sign;
}

template <typename C> TSL_HOST_DEVICE C roundHalfEven(C x) {
  if (!TSL_MATH(isfinite)(x))
    return x;
  C f = TSL_MATH(floor)(x);
  C diff = x - f; // exact
  if (diff > C(0.5))
    return f + 1;
  if (diff < C(0.5))
    return f;
  return TSL_MATH(fmod)(f, C(2)) == 0 ? f : f + 1;
}

/// `op` on x in C. `p` holds the op's constants as doubles: alpha, beta and
/// gamma (leaky_relu, elu, celu, thresholded_relu: alpha; selu: alpha and
/// gamma; hard_sigmoid: alpha and beta; shrink: alpha = bias, beta = lambd).
template <Unary op, typename C, typename Params>
TSL_HOST_DEVICE C unaryFloat(C x, const Params &p) {
  const C alpha = static_cast<C>(p.alpha), beta = static_cast<C>(p.beta),
          gamma = static_cast<C>(p.gamma);
  switch (op) {
  case Unary::Relu: return x < 0 ? C(0) : x;
  case Unary::Sigmoid:
    // Stable in both tails.
    if (x >= 0)
      return C(1) / (C(1) + TSL_MATH(exp)(-x));
    else {
      C e = TSL_MATH(exp)(x);
      return e / (C(1) + e);
    }
  case Unary::Tanh: return TSL_MATH(tanh)(x);
  case Unary::Abs: return TSL_MATH(fabs)(x);
  case Unary::Neg: return -x;
  case Unary::Exp: return TSL_MATH(exp)(x);
  case Unary::Log: return TSL_MATH(log)(x);
  case Unary::Sqrt: return TSL_MATH(sqrt)(x);
  case Unary::Reciprocal: return C(1) / x;
  case Unary::Floor: return TSL_MATH(floor)(x);
  case Unary::Ceil: return TSL_MATH(ceil)(x);
  case Unary::Round: return roundHalfEven(x);
  case Unary::Sign: return x > 0 ? C(1) : x < 0 ? C(-1) : x; // keeps 0, -0, nan
  case Unary::Erf: return TSL_MATH(erf)(x);
  case Unary::Sin: return TSL_MATH(sin)(x);
  case Unary::Cos: return TSL_MATH(cos)(x);
  case Unary::Tan: return TSL_MATH(tan)(x);
  case Unary::Asin: return TSL_MATH(asin)(x);
  case Unary::Acos: return TSL_MATH(acos)(x);
  case Unary::Atan: return TSL_MATH(atan)(x);
  case Unary::Sinh: return TSL_MATH(sinh)(x);
  case Unary::Cosh: return TSL_MATH(cosh)(x);
  case Unary::Asinh: return TSL_MATH(asinh)(x);
  case Unary::Acosh: return TSL_MATH(acosh)(x);
  case Unary::Atanh: return TSL_MATH(atanh)(x);
  case Unary::Softplus:
    // log(1 + e^x) = max(x, 0) + log1p(e^-|x|), no overflow.
    if (TSL_MATH(isnan)(x))
      return x;
    return (x > 0 ? x : C(0)) + TSL_MATH(log1p)(TSL_MATH(exp)(-TSL_MATH(fabs)(x)));
  case Unary::Softsign: return x / (C(1) + TSL_MATH(fabs)(x));
  case Unary::HardSwish: {
    C t = x / C(6) + C(0.5);
    t = t < 0 ? C(0) : (t > 1 ? C(1) : t);
    return x * t;
  }
  case Unary::LeakyRelu: return x < 0 ? alpha * x : x;
  case Unary::Elu: return x < 0 ? alpha * TSL_MATH(expm1)(x) : x;
  case Unary::Celu: {
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    if (TSL_MATH(isnan)(x))
      return x;
    C neg = alpha * TSL_MATH(expm1)(x / alpha);
    return (x > 0 ? x : C(0)) + (neg < 0 ? neg : C(0));
  }
  case Unary::Selu: return x > 0 ? gamma * x : gamma * (alpha * TSL_MATH(expm1)(x));
  case Unary::ThresholdedRelu: return x > alpha ? x : C(0);
  case Unary::HardSigmoid: {
    C t = alpha * x + beta;
    return t < 0 ? C(0) : (t > 1 ? C(1) : t);
  }
  case Unary::Gelu:
    // x * Phi(x) = x/2 * erfc(-x / sqrt 2): no cancellation in the left tail.
    return C(0.5) * x * TSL_MATH(erfc)(-x * C(0.70710678118654752440));
  case Unary::GeluTanh: {
    // ONNX Gelu approximate="tanh": x/2 (1 + tanh(u)), u = sqrt(2/pi) (x +
    // 0.044715 x^3), as x / (1 + e^-2u): 1 + tanh(u) cancels where u << 0.
    const C u = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return x / (C(1) + TSL_MATH(exp)(C(-2) * u));
  }
  case Unary::Silu:
    // SiLU (swish): x * sigmoid(x), the sigmoid above, so that it is what
    // Mul(x, Sigmoid(x)) computes.
    return x * unaryFloat<Unary::Sigmoid, C>(x, p);
  case Unary::Shrink:
    if (x < -beta)
      return x + alpha;
    if (x > beta)
      return x - alpha;
    return C(0);
  }
  return x;
}

/// The integer form of relu, abs, neg and sign; x for the others.
template <Unary op, typename T> TSL_HOST_DEVICE T unaryInt(T x) {
  switch (op) {
  case Unary::Relu:
    if constexpr (std::is_signed<T>::value)
      return x < 0 ? T(0) : x;
    return x;
  case Unary::Abs:
    if constexpr (std::is_signed<T>::value)
      return x < 0 ? wrapNeg(x) : x; // abs(INT_MIN) wraps to INT_MIN, as numpy
    return x;
  case Unary::Neg: return wrapNeg(x);
  case Unary::Sign:
    if constexpr (std::is_signed<T>::value)
      return x > 0 ? T(1) : x < 0 ? T(-1) : T(0);
    return x > 0 ? T(1) : T(0);
  default: return x;
  }
}

/// Clip: v bounded to [lo, hi] in C; NaN passes through (both comparisons
/// are false).
template <typename C> TSL_HOST_DEVICE C clip(C v, C lo, C hi) {
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return v;
}

//===----------------------------------------------------------------------===//
// Epilogue activations
//===----------------------------------------------------------------------===//

/// The activations a conv or gemm epilogue applies to its f32 (CPU: f32 or
/// double) sum, in the engine's order of their names (none, relu, clip,
/// ...; the graph dialect's Activation enum).
enum class Activation {
  None, Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSwish, Gelu, GeluTanh, Silu, HardSigmoid
};

/// Their names, in that order: the engine's `activation` attribute values.
inline constexpr const char *kActivationNames[] = {
    "none", "relu", "clip", "leaky_relu", "sigmoid", "tanh", "hard_swish",
    "gelu", "gelu_tanh", "silu", "hard_sigmoid"};
inline constexpr int kActivationCount = 11;

/// The index of the activation an engine attribute names (an empty name is
/// none), or -1 where it names none of them.
inline int activationIndex(const char *name) {
  if (!name || !*name)
    return 0;
  for (int i = 0; i < kActivationCount; ++i)
    if (std::strcmp(kActivationNames[i], name) == 0)
      return i;
  return -1;
}

/// `act` on x: the standalone ops' formulas above; clip bounds x to
/// [alpha, beta], leaky_relu's slope and hard_sigmoid's alpha and beta are
/// the activation's.
template <Activation act, typename C>
TSL_HOST_DEVICE C activate(C x, double alpha, double beta) {
  const struct {
    double alpha, beta, gamma;
  } p{alpha, beta, 0.0};
  switch (act) {
  case Activation::None: return x;
  case Activation::Relu: return unaryFloat<Unary::Relu, C>(x, p);
  case Activation::Clip: return clip(x, static_cast<C>(alpha), static_cast<C>(beta));
  case Activation::LeakyRelu: return unaryFloat<Unary::LeakyRelu, C>(x, p);
  case Activation::Sigmoid: return unaryFloat<Unary::Sigmoid, C>(x, p);
  case Activation::Tanh: return unaryFloat<Unary::Tanh, C>(x, p);
  case Activation::HardSwish: return unaryFloat<Unary::HardSwish, C>(x, p);
  case Activation::Gelu: return unaryFloat<Unary::Gelu, C>(x, p);
  case Activation::GeluTanh: return unaryFloat<Unary::GeluTanh, C>(x, p);
  case Activation::Silu: return unaryFloat<Unary::Silu, C>(x, p);
  case Activation::HardSigmoid: return unaryFloat<Unary::HardSigmoid, C>(x, p);
  }
  return x;
}

/// `act` chosen at run time (a kernel that takes it as a parameter).
template <typename C>
TSL_HOST_DEVICE C activate(Activation act, C x, double alpha, double beta) {
  switch (act) {
  case Activation::None: return x;
  case Activation::Relu: return activate<Activation::Relu, C>(x, alpha, beta);
  case Activation::Clip: return activate<Activation::Clip, C>(x, alpha, beta);
  case Activation::LeakyRelu: return activate<Activation::LeakyRelu, C>(x, alpha, beta);
  case Activation::Sigmoid: return activate<Activation::Sigmoid, C>(x, alpha, beta);
  case Activation::Tanh: return activate<Activation::Tanh, C>(x, alpha, beta);
  case Activation::HardSwish: return activate<Activation::HardSwish, C>(x, alpha, beta);
  case Activation::Gelu: return activate<Activation::Gelu, C>(x, alpha, beta);
  case Activation::GeluTanh: return activate<Activation::GeluTanh, C>(x, alpha, beta);
  case Activation::Silu: return activate<Activation::Silu, C>(x, alpha, beta);
  case Activation::HardSigmoid: return activate<Activation::HardSigmoid, C>(x, alpha, beta);
  }
  return x;
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

// Mod: ONNX Mod with fmod=0, the sign of the divisor (Python's %), integers
// only; FMod: fmod=1, the sign of the dividend (C's fmod and %).
enum class Binary { Add, Sub, Mul, Div, Pow, Mod, FMod, Max, Min, PRelu };

template <typename T> TSL_HOST_DEVICE T intPow(T base, T exponent) {
  if constexpr (std::is_signed<T>::value) {
    if (exponent < 0) {
      // Integer result of a fractional power: truncation toward zero.
      if (base == 1)
        return 1;
      if (base == -1)
        return (exponent & 1) ? T(-1) : T(1);
      return 0; // includes 0^negative (undefined; 0 rather than a trap)
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

/// `op` on x and y in C (float or double).
template <Binary op, typename C> TSL_HOST_DEVICE C binaryFloat(C x, C y) {
  switch (op) {
  case Binary::Add: return x + y;
  case Binary::Sub: return x - y;
  case Binary::Mul: return x * y;
  case Binary::Div: return x / y;
  case Binary::Pow: return TSL_MATH(pow)(x, y);
  case Binary::Mod: // integers only: the kernels reject floats
  case Binary::FMod: return TSL_MATH(fmod)(x, y);
  case Binary::Max: return (TSL_MATH(isnan)(x) || TSL_MATH(isnan)(y)) ? x + y : (x < y ? y : x);
  case Binary::Min: return (TSL_MATH(isnan)(x) || TSL_MATH(isnan)(y)) ? x + y : (y < x ? y : x);
  case Binary::PRelu: return x < 0 ? y * x : x;
  }
  return x;
}

/// `op` on integers a and b of type T.
template <Binary op, typename T> TSL_HOST_DEVICE T binaryInt(T a, T b) {
  switch (op) {
  case Binary::Add: return wrapAdd(a, b);
  case Binary::Sub: return wrapSub(a, b);
  case Binary::Mul: return wrapMul(a, b);
  case Binary::Div:
    if (b == 0)
      return 0; // undefined in ONNX; never trap
    if constexpr (std::is_signed<T>::value)
      if (b == -1)
        return wrapNeg(a); // INT_MIN / -1 would trap
    return static_cast<T>(a / b);
  case Binary::Pow: return intPow(a, b);
  case Binary::Mod:
  case Binary::FMod: {
    if (b == 0)
      return 0; // undefined in ONNX; never trap
    if constexpr (std::is_signed<T>::value) {
      if (b == -1)
        return 0; // INT_MIN % -1 would trap
      T r = static_cast<T>(a % b);
      if (op == Binary::Mod && r != 0 && (r < 0) != (b < 0))
        r = static_cast<T>(r + b); // opposite signs: no overflow
      return r;
    }
    return static_cast<T>(a % b);
  }
  case Binary::Max: return a < b ? b : a;
  case Binary::Min: return b < a ? b : a;
  case Binary::PRelu:
    if constexpr (std::is_signed<T>::value)
      return a < 0 ? wrapMul(b, a) : a;
    return a;
  }
  return a;
}

//===----------------------------------------------------------------------===//
// Comparisons and logic (bool results)
//===----------------------------------------------------------------------===//

enum class Compare { Equal, Less, LessEqual, Greater, GreaterEqual };

/// `op` on two loaded elements (C for floats, the integer itself otherwise).
template <Compare op, typename V> TSL_HOST_DEVICE bool compare(V l, V r) {
  switch (op) {
  case Compare::Equal: return l == r;
  case Compare::Less: return l < r;
  case Compare::LessEqual: return l <= r;
  case Compare::Greater: return l > r;
  case Compare::GreaterEqual: return l >= r;
  }
  return false;
}

enum class Logic { And, Or, Xor };

template <Logic op> TSL_HOST_DEVICE bool logic(bool l, bool r) {
  return op == Logic::And ? (l && r) : op == Logic::Or ? (l || r) : (l != r);
}

/// top_k's order: element (a, ia) comes before (b, ib) when it is larger
/// (smaller unless `largest`), and of two equal ones the lower index first,
/// as ONNX's TopK orders them.
template <typename V> TSL_HOST_DEVICE bool topKBefore(V a, int64_t ia, V b, int64_t ib,
                                                     bool largest) {
  if (a != b)
    return largest ? a > b : a < b;
  return ia < ib;
}

} // namespace tessel::elementwise

#endif // TESSEL_ELEMENTWISE_MATH_H
