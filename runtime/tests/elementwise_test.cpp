//===- elementwise_test.cpp - unary, clip, binary and where kernels -------===//
//
// The elementwise kernels (elementwise.cpp) against float64 references: every
// unary op in f32, f64 and f16, integer unary ops, clip's bounds in the
// tensor's dtype, binary arithmetic, comparisons and logic with broadcasting,
// and where.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

struct UnaryCase {
  const char *op;
  double lo, hi;
  std::function<double(double)> ref;
  // Magnitude of the largest intermediate term (cancellation-prone formulas).
  std::function<double(double)> mag;
  Attrs attrs;
};

std::vector<UnaryCase> unaryCases() {
  auto none = [](double) { return 0.0; };
  auto absx = [](double x) { return std::fabs(x); };
  std::vector<UnaryCase> c;
  auto add = [&](const char *op, double lo, double hi, std::function<double(double)> f,
                 std::function<double(double)> mag = nullptr, Attrs a = {}) {
    c.push_back({op, lo, hi, std::move(f), mag ? std::move(mag) : none, std::move(a)});
  };
  add("relu", -5, 5, [](double x) { return x > 0 ? x : 0; });
  add("sigmoid", -20, 20, [](double x) { return 1 / (1 + std::exp(-x)); });
  add("tanh", -6, 6, [](double x) { return std::tanh(x); });
  add("abs", -5, 5, [](double x) { return x < 0 ? -x : x; });
  add("neg", -5, 5, [](double x) { return -x; });
  add("exp", -10, 10, [](double x) { return std::exp(x); });
  add("log", 0.01, 50, [](double x) { return std::log(x); });
  add("sqrt", 0, 50, [](double x) { return std::sqrt(x); });
  add("reciprocal", 0.1, 5, [](double x) { return 1 / x; });
  add("floor", -8, 8, [](double x) { return std::floor(x); });
  add("ceil", -8, 8, [](double x) { return std::ceil(x); });
  add("round", -8, 8, [](double x) { return std::nearbyint(x); });
  add("sign", -3, 3, [](double x) { return double((x > 0) - (x < 0)); });
  add("erf", -3, 3, [](double x) { return std::erf(x); });
  add("sin", -7, 7, [](double x) { return std::sin(x); });
  add("cos", -7, 7, [](double x) { return std::cos(x); });
  add("tan", -1.5, 1.5, [](double x) { return std::tan(x); });
  add("asin", -0.99, 0.99, [](double x) { return std::asin(x); });
  add("acos", -0.99, 0.99, [](double x) { return std::acos(x); });
  add("atan", -5, 5, [](double x) { return std::atan(x); });
  add("sinh", -8, 8, [](double x) { return std::sinh(x); });
  add("cosh", -8, 8, [](double x) { return std::cosh(x); });
  add("asinh", -5, 5, [](double x) { return std::asinh(x); });
  add("acosh", 1.01, 8, [](double x) { return std::acosh(x); });
  add("atanh", -0.99, 0.99, [](double x) { return std::atanh(x); });
  add("softplus", -30, 30, [](double x) { return std::log1p(std::exp(x)); });
  add("softsign", -5, 5, [](double x) { return x / (1 + std::fabs(x)); });
  add("silu", -30, 30, [](double x) { return x / (1 + std::exp(-x)); },
      [](double x) { return std::fabs(x); });
  add("hard_swish", -5, 5, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); },
      [](double x) { return std::fabs(x) * (std::fabs(x) / 6 + 0.5); });
  // GELU by its definitions in double, x * Phi(x) and the tanh
  // approximation; the left tail down to -10, where x * Phi(x) is about
  // -8e-23 and only a relative error shows (Phi by erfc there: 1 + erf
  // would cancel to 0 in double too). Its magnitude term is the condition:
  // the kernel's argument x / sqrt 2, rounded in the math type, moves Phi by
  // x * phi(x) per unit of relative error, x^2 phi(x) in the result, which
  // in the tail is x^2 times the result itself.
  add("gelu", -10, 6, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
      [](double x) { return x * x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); });
  // 1 + tanh(u) as e^u / cosh(u), which does not cancel where u << 0. The
  // magnitude term is the condition: u takes a few roundings in the math
  // type (the cube, two products, a sum), and a relative error in u moves
  // the result by about 2u times itself where u << 0 (x e^2u there).
  const auto geluTanhU = [](double x) {
    return std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  };
  add("gelu_tanh", -6, 6,
      [=](double x) {
        const double u = geluTanhU(x);
        return 0.5 * x * std::exp(u) / std::cosh(u);
      },
      [=](double x) {
        const double u = geluTanhU(x);
        return 4 * std::fabs(u) * std::fabs(0.5 * x * std::exp(u) / std::cosh(u));
      });
  {
    Attrs a;
    a.set("alpha", 0.1);
    add("leaky_relu", -5, 5, [](double x) { return x >= 0 ? x : 0.1 * x; }, absx, a);
  }
  {
    Attrs a;
    a.set("alpha", 0.7);
    add("elu", -5, 5, [](double x) { return x >= 0 ? x : 0.7 * std::expm1(x); }, nullptr, a);
  }
  {
    Attrs a;
    a.set("alpha", 1.5);
    add("celu", -5, 5,
        [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5 * std::expm1(x / 1.5)); },
        nullptr, a);
  }
  {
    Attrs a;
    a.set("alpha", 1.6732632423543772);
    a.set("gamma", 1.0507009873554805);
    add("selu", -5, 5,
        [](double x) {
          return x > 0 ? 1.0507009873554805 * x
                       : 1.0507009873554805 * 1.6732632423543772 * std::expm1(x);
        },
        nullptr, a);
  }
  {
    Attrs a;
    a.set("alpha", 0.5);
    add("thresholded_relu", -3, 3, [](double x) { return x > 0.5 ? x : 0; }, nullptr, a);
  }
  {
    Attrs a;
    a.set("alpha", 0.3);
    a.set("beta", 0.4);
    add("hard_sigmoid", -5, 5, [](double x) { return std::max(0.0, std::min(1.0, 0.3 * x + 0.4)); },
        [](double x) { return 0.3 * std::fabs(x) + 0.4; }, a);
  }
  {
    Attrs a;
    a.set("bias", 0.25);
    a.set("lambd", 0.75);
    add("shrink", -3, 3,
        [](double x) { return x < -0.75 ? x + 0.25 : (x > 0.75 ? x - 0.25 : 0.0); },
        [](double x) { return std::fabs(x) + 0.25; }, a);
  }
  return c;
}

class KernelUnary : public ::testing::TestWithParam<DType> {};

TEST_P(KernelUnary, MatchesFloat64Reference) {
  const DType dtype = GetParam();
  std::mt19937 rng(42);
  const Shape shapes[] = {{}, {7}, {3, 5, 17}, {0, 4}};
  // Relative error allowed around the computed-in-float result (see header).
  const double rel = dtype == DType::F64 ? 1e-13
                   : dtype == DType::F32 ? std::ldexp(1.0, -20)
                                         : std::ldexp(1.0, -10);
  const double absFloor = dtype == DType::F16 ? std::ldexp(1.0, -25) : 1e-300;
  for (const UnaryCase &c : unaryCases()) {
    for (const Shape &shape : shapes) {
      Tensor x = randomTensor(dtype, shape, rng, c.lo, c.hi);
      // Exact halves exercise round-half-to-even; a few exact zeros.
      for (int64_t i = 0; i < x.size(); i += 5)
        x.set(i, std::round(x.get(i) * 2) / 2);
      Tensor y(dtype, shape);
      RUN_OK(c.op, c.attrs, {&x}, y);
      std::vector<double> ref(x.size()), tol(x.size());
      for (int64_t i = 0; i < x.size(); ++i) {
        ref[i] = c.ref(x.get(i));
        // f16: the float result is rounded to half; values beyond the half
        // range become inf.
        if (dtype == DType::F16 && std::fabs(ref[i]) >= 65520)
          ref[i] = std::copysign(std::numeric_limits<double>::infinity(), ref[i]);
        tol[i] = rel * (std::fabs(ref[i]) + c.mag(x.get(i))) + absFloor;
      }
      expectClose(y, ref, tol, std::string(c.op) + " " + dtypeName(dtype) + " " + shapeStr(shape));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KernelFloats, KernelUnary,
                         ::testing::Values(DType::F32, DType::F64, DType::F16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

TEST(KernelUnaryExact, RoundHalfToEvenAndSpecialValues) {
  Tensor x(DType::F32, {10});
  const float in[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 1e9f + 0.0f, -0.0f,
                      std::numeric_limits<float>::infinity()};
  const double want[] = {0, 2, 2, -0, -2, -2, 2, 1e9, -0.0, INFINITY};
  std::memcpy(x.as<float>(), in, sizeof in);
  Tensor y(DType::F32, {10});
  RUN_OK("round", Attrs{}, {&x}, y);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(y.get(i), want[i]) << i;
  // relu/sign/clip keep NaN; sigmoid/softplus do not overflow in the tails.
  Tensor n(DType::F32, {3});
  n.set(0, NAN);
  n.set(1, -1000);
  n.set(2, 1000);
  Tensor s(DType::F32, {3});
  RUN_OK("sigmoid", Attrs{}, {&n}, s);
  EXPECT_TRUE(std::isnan(s.get(0)));
  EXPECT_EQ(s.get(1), 0);
  EXPECT_EQ(s.get(2), 1);
  RUN_OK("softplus", Attrs{}, {&n}, s);
  EXPECT_EQ(s.get(1), 0);
  EXPECT_EQ(s.get(2), 1000);
  RUN_OK("relu", Attrs{}, {&n}, s);
  EXPECT_TRUE(std::isnan(s.get(0)));
}

TEST(KernelUnaryExact, NotOnBool) {
  Tensor x(DType::Bool, {5});
  for (int i = 0; i < 5; ++i)
    x.set(i, i % 2);
  Tensor y(DType::Bool, {5});
  RUN_OK("not", Attrs{}, {&x}, y);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(y.as<uint8_t>()[i], i % 2 ? 0 : 1);
}

TEST(KernelUnaryInt, AbsNegSignReluWrapAndSaturate) {
  std::mt19937 rng(7);
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                  DType::U64}) {
    const bool sgn = isSignedType(t);
    Tensor x = randomTensor(t, {50}, rng, sgn ? -100 : 0, 200);
    // The extremes: abs/neg of INT_MIN wrap to INT_MIN.
    const i128 lo = sgn ? -(i128(1) << (bitsOf(t) - 1)) : 0;
    const i128 hi = sgn ? (i128(1) << (bitsOf(t) - 1)) - 1 : (i128(1) << bitsOf(t)) - 1;
    x.setI(0, lo);
    x.setI(1, hi);
    x.setI(2, 0);
    for (const char *op : {"abs", "neg", "sign", "relu"}) {
      Tensor y(t, {50}), want(t, {50});
      RUN_OK(op, Attrs{}, {&x}, y);
      for (int64_t i = 0; i < 50; ++i) {
        i128 v = x.getI(i), r = 0;
        if (!std::strcmp(op, "abs")) r = v < 0 ? -v : v;
        if (!std::strcmp(op, "neg")) r = -v;
        if (!std::strcmp(op, "sign")) r = (v > 0) - (v < 0);
        if (!std::strcmp(op, "relu")) r = v > 0 ? v : 0;
        want.setI(i, r); // wraps modulo 2^bits
        ASSERT_TRUE(y.getI(i) == want.getI(i))
            << op << " " << dtypeName(t) << " at " << i << ": " << (long long)v;
      }
    }
  }
}

TEST(KernelClip, AllDtypesBoundsInTheTensorDtype) {
  std::mt19937 rng(11);
  struct Case {
    DType t;
    double lo, hi;
  } cases[] = {{DType::F32, -1.5, 2.25},  {DType::F64, -0.1, 0.3},  {DType::F16, -0.1, 0.3},
               {DType::I8, -3, 4},        {DType::I8, -1000, 1000}, {DType::U8, 10, 1e300},
               {DType::I32, -50, 20},     {DType::I64, -INFINITY, 7}, {DType::U16, 3, 90},
               {DType::F32, -INFINITY, INFINITY}};
  for (const Case &c : cases) {
    Tensor x = randomTensor(c.t, {4, 33}, rng, isSignedType(c.t) || !isIntType(c.t) ? -100 : 0, 100);
    if (!isIntType(c.t))
      for (int64_t i = 0; i < x.size(); ++i)
        x.set(i, x.get(i) / 100);
    Attrs a;
    a.set("min", c.lo);
    a.set("max", c.hi);
    Tensor y(c.t, {4, 33});
    RUN_OK("clip", a, {&x}, y);
    // Reference: bounds converted to the dtype (ints saturate), then clamp.
    Tensor bounds(c.t, {2});
    auto toDtype = [&](double b, int64_t slot) {
      if (isIntType(c.t)) {
        const i128 lo = isSignedType(c.t) ? -(i128(1) << (bitsOf(c.t) - 1)) : 0;
        const i128 hi = isSignedType(c.t) ? (i128(1) << (bitsOf(c.t) - 1)) - 1
                                          : (i128(1) << bitsOf(c.t)) - 1;
        bounds.setI(slot, b <= double(lo) ? lo : b >= double(hi) ? hi : i128(b));
      } else {
        bounds.set(slot, b);
      }
      return bounds.get(slot);
    };
    const double lo = toDtype(c.lo, 0), hi = toDtype(c.hi, 1);
    for (int64_t i = 0; i < x.size(); ++i) {
      double want = std::min(std::max(x.get(i), lo), hi);
      ASSERT_EQ(y.get(i), want) << dtypeName(c.t) << " " << i;
    }
  }
}

//===----------------------------------------------------------------------===//
// Binary (broadcast)
//===----------------------------------------------------------------------===//

const std::pair<Shape, Shape> kBroadcastShapes[] = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},        {{2, 1, 4}, {3, 1}},
    {{}, {5}},              {{1}, {2, 2}},           {{3, 1, 5, 1}, {1, 4, 1, 6}},
    {{6, 1}, {}},           {{0, 3}, {1, 3}},        {{4, 1, 1}, {1, 7, 1}},
};

double refBinaryFloat(const std::string &op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "pow") return std::pow(a, b);
  if (op == "max") return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  if (op == "min") return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  if (op == "prelu") return a < 0 ? b * a : a;
  return NAN;
}

TEST(KernelBinary, FloatArithmeticBroadcasts) {
  std::mt19937 rng(3);
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    for (const char *op : {"add", "sub", "mul", "div", "pow", "max", "min", "prelu"}) {
      for (const auto &[sa, sb] : kBroadcastShapes) {
        const std::string o = op;
        // pow: positive base; div: divisor away from 0.
        Tensor a = randomTensor(t, sa, rng, o == "pow" ? 0.1 : -4, 4);
        Tensor b = randomTensor(t, sb, rng, o == "div" ? 0.5 : -3, 3);
        if (o == "div")
          for (int64_t i = 0; i < b.size(); i += 2)
            b.set(i, -b.get(i));
        const Shape so = broadcastShape(sa, sb);
        if (o == "prelu" && so != sa)
          continue; // prelu's slope broadcasts to x
        Tensor y(t, so);
        RUN_OK(op, Attrs{}, {&a, &b}, y);
        std::vector<double> ref(numel(so)), tol(numel(so));
        for (int64_t i = 0; i < numel(so); ++i) {
          Shape idx = unravel(i, so);
          ref[i] = refBinaryFloat(o, a.get(broadcastIndex(idx, sa)), b.get(broadcastIndex(idx, sb)));
          if (t == DType::F16 && std::fabs(ref[i]) >= 65520)
            ref[i] = std::copysign(INFINITY, ref[i]);
          // One correctly rounded op (pow: a few ulp of float powf).
          double rel = t == DType::F64 ? 1e-15 : t == DType::F32 ? std::ldexp(1.0, -22)
                                                                 : std::ldexp(1.0, -10);
          tol[i] = rel * std::fabs(ref[i]) + (t == DType::F16 ? std::ldexp(1.0, -25) : 1e-300);
        }
        expectClose(y, ref, tol, o + " " + dtypeName(t) + " " + shapeStr(sa) + "x" + shapeStr(sb));
      }
    }
  }
}

TEST(KernelBinary, IntegerArithmeticWrapsAndTruncates) {
  std::mt19937 rng(5);
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                  DType::U64}) {
    const bool sgn = isSignedType(t);
    const int bits = bitsOf(t);
    // Values spanning the whole range of narrow types (overflow happens), and
    // up to 2^40 for wide ones (products overflow 64 bits).
    const double span = bits <= 16 ? std::ldexp(1.0, sgn ? bits - 1 : bits) : std::ldexp(1.0, 40);
    for (const char *op : {"add", "sub", "mul", "div", "pow", "max", "min", "prelu"}) {
      const std::string o = op;
      for (const auto &[sa, sb] : kBroadcastShapes) {
        Tensor a = randomTensor(t, sa, rng, sgn ? -span : 0, span);
        Tensor b = randomTensor(t, sb, rng, sgn ? -span : 0, span);
        if (o == "pow") {
          a = randomTensor(t, sa, rng, sgn ? -6 : 0, 6);
          b = randomTensor(t, sb, rng, 0, bits <= 16 ? 9 : 20);
        }
        if (o == "div")
          for (int64_t i = 0; i < b.size(); ++i)
            if (b.getI(i) == 0)
              b.setI(i, 3);
        const Shape so = broadcastShape(sa, sb);
        if (o == "prelu" && so != sa)
          continue;
        Tensor y(t, so), want(t, so);
        RUN_OK(op, Attrs{}, {&a, &b}, y);
        for (int64_t i = 0; i < numel(so); ++i) {
          Shape idx = unravel(i, so);
          const i128 x = a.getI(broadcastIndex(idx, sa)), w = b.getI(broadcastIndex(idx, sb));
          i128 r = 0;
          if (o == "add") r = x + w;
          if (o == "sub") r = x - w;
          if (o == "mul") r = x * w; // |x*w| < 2^127: exact, then wrapped by setI
          if (o == "div") {
            // Truncation toward zero, computed on magnitudes.
            i128 q = (x < 0 ? -x : x) / (w < 0 ? -w : w);
            r = ((x < 0) != (w < 0)) ? -q : q;
          }
          if (o == "pow") {
            r = 1;
            for (i128 k = 0; k < w; ++k) {
              r *= x;
              // keep it bounded: reduce modulo 2^64 (does not change the
              // result modulo 2^bits)
              r %= (i128(1) << 64);
            }
          }
          if (o == "max") r = std::max(x, w);
          if (o == "min") r = std::min(x, w);
          if (o == "prelu") r = x < 0 ? w * x : x;
          want.setI(i, r);
          ASSERT_TRUE(y.getI(i) == want.getI(i))
              << o << " " << dtypeName(t) << " " << (long long)x << ", " << (long long)w << " got "
              << (long long)y.getI(i) << " want " << (long long)want.getI(i);
        }
      }
    }
  }
}

TEST(KernelBinary, IntegerDivisionEdgeCasesDoNotTrap) {
  Tensor a(DType::I32, {4}), b(DType::I32, {4}), y(DType::I32, {4});
  const int32_t av[] = {7, -7, std::numeric_limits<int32_t>::min(), 5};
  const int32_t bv[] = {-2, 2, -1, 0};
  std::memcpy(a.as<int32_t>(), av, sizeof av);
  std::memcpy(b.as<int32_t>(), bv, sizeof bv);
  RUN_OK("div", Attrs{}, {&a, &b}, y);
  EXPECT_EQ(y.as<int32_t>()[0], -3);
  EXPECT_EQ(y.as<int32_t>()[1], -3);
  EXPECT_EQ(y.as<int32_t>()[2], std::numeric_limits<int32_t>::min()); // wraps
  EXPECT_EQ(y.as<int32_t>()[3], 0);                                   // defined as 0
  // uint8 add wraps.
  Tensor u(DType::U8, {2}), v(DType::U8, {2}), w(DType::U8, {2});
  u.setI(0, 200);
  u.setI(1, 255);
  v.setI(0, 100);
  v.setI(1, 1);
  RUN_OK("add", Attrs{}, {&u, &v}, w);
  EXPECT_EQ(w.as<uint8_t>()[0], 44);
  EXPECT_EQ(w.as<uint8_t>()[1], 0);
}

Attrs fmodAttrs(int64_t fmod) {
  Attrs a;
  a.set("fmod", fmod);
  return a;
}

TEST(KernelBinary, ModTakesTheDivisorsSignAndFmodTheDividends) {
  // The ONNX spec's examples, both signs, a zero dividend, and the cases that
  // trap in C (x % 0, INT_MIN % -1): defined as 0, as integer division by 0.
  const int32_t av[] = {-4, 4, -4, 4, 0, 7, -7, 5, std::numeric_limits<int32_t>::min()};
  const int32_t bv[] = {3, -3, -3, 3, 5, 0, 0, -1, -1};
  const int32_t python[] = {2, -2, -1, 1, 0, 0, 0, 0, 0};
  const int32_t c[] = {-1, 1, -1, 1, 0, 0, 0, 0, 0};
  Tensor a(DType::I32, {9}), b(DType::I32, {9}), y(DType::I32, {9});
  std::memcpy(a.as<int32_t>(), av, sizeof av);
  std::memcpy(b.as<int32_t>(), bv, sizeof bv);
  RUN_OK("mod", Attrs{}, {&a, &b}, y); // fmod defaults to 0
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(y.as<int32_t>()[i], python[i]) << av[i] << " mod " << bv[i];
  RUN_OK("mod", fmodAttrs(1), {&a, &b}, y);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(y.as<int32_t>()[i], c[i]) << av[i] << " fmod " << bv[i];
  // INT64_MIN % -1 traps too.
  Tensor a64(DType::I64, {1}), b64(DType::I64, {1}), y64(DType::I64, {1});
  a64.as<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  b64.as<int64_t>()[0] = -1;
  for (int64_t fmod : {0, 1}) {
    y64.as<int64_t>()[0] = 7;
    RUN_OK("mod", fmodAttrs(fmod), {&a64, &b64}, y64);
    EXPECT_EQ(y64.as<int64_t>()[0], 0);
  }
}

TEST(KernelBinary, IntegerModBroadcasts) {
  std::mt19937 rng(31);
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32,
                  DType::U64}) {
    const bool sgn = isSignedType(t);
    const int bits = bitsOf(t);
    const double span = bits <= 16 ? std::ldexp(1.0, sgn ? bits - 1 : bits) : std::ldexp(1.0, 40);
    for (int64_t fmod : {0, 1}) {
      for (const auto &[sa, sb] : kBroadcastShapes) {
        Tensor a = randomTensor(t, sa, rng, sgn ? -span : 0, span);
        // Small divisors as well as large ones, zeros included.
        Tensor b = randomTensor(t, sb, rng, sgn ? -span : 0, span);
        for (int64_t i = 0; i < b.size(); i += 2)
          b.setI(i, b.getI(i) % 9);
        const Shape so = broadcastShape(sa, sb);
        Tensor y(t, so);
        RUN_OK("mod", fmodAttrs(fmod), {&a, &b}, y);
        for (int64_t i = 0; i < numel(so); ++i) {
          Shape idx = unravel(i, so);
          const i128 x = a.getI(broadcastIndex(idx, sa)), w = b.getI(broadcastIndex(idx, sb));
          i128 want = 0; // x mod 0
          if (w != 0) {
            // x - w * q with q the quotient rounded toward zero (fmod) or
            // toward -infinity (the divisor's sign).
            i128 q = (x < 0 ? -x : x) / (w < 0 ? -w : w);
            if ((x < 0) != (w < 0))
              q = -q;
            if (!fmod && q * w != x && (x < 0) != (w < 0))
              q -= 1;
            want = x - q * w;
          }
          ASSERT_TRUE(y.getI(i) == want)
              << "fmod=" << fmod << " " << dtypeName(t) << " " << (long long)x << " mod "
              << (long long)w << " got " << (long long)y.getI(i) << " want " << (long long)want;
        }
      }
    }
  }
}

TEST(KernelBinary, FloatModIsFmodAndNeedsTheAttribute) {
  std::mt19937 rng(37);
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    for (const auto &[sa, sb] : kBroadcastShapes) {
      Tensor a = randomTensor(t, sa, rng, -40, 40);
      Tensor b = randomTensor(t, sb, rng, -6, 6);
      if (b.size() > 2)
        b.set(2, 0.0); // NaN
      const Shape so = broadcastShape(sa, sb);
      Tensor y(t, so);
      RUN_OK("mod", fmodAttrs(1), {&a, &b}, y);
      for (int64_t i = 0; i < numel(so); ++i) {
        Shape idx = unravel(i, so);
        const double x = a.get(broadcastIndex(idx, sa)), w = b.get(broadcastIndex(idx, sb));
        // fmod is exact: the remainder of two values of a format is one.
        const double want = std::fmod(x, w);
        if (std::isnan(want))
          ASSERT_TRUE(std::isnan(y.get(i))) << dtypeName(t) << " " << x << " fmod " << w;
        else
          ASSERT_EQ(y.get(i), want) << dtypeName(t) << " " << x << " fmod " << w;
      }
    }
    // fmod=0 (the divisor's sign) is an integer modulus: an error on floats.
    Tensor a(t, {2}), b(t, {2}), y(t, {2});
    const KernelStatus s = run("mod", Attrs{}, {&a, &b}, y);
    ASSERT_FALSE(s.ok()) << dtypeName(t);
    EXPECT_NE(s.error.find("fmod=0"), std::string::npos) << s.error;
  }
  // The spec's example, as float: the dividend's sign.
  Tensor a(DType::F32, {4}), b(DType::F32, {4}), y(DType::F32, {4});
  const float av[] = {-4.3f, 7.2f, 5.0f, 4.3f}, bv[] = {2.1f, -3.4f, 8.0f, -2.1f};
  std::memcpy(a.as<float>(), av, sizeof av);
  std::memcpy(b.as<float>(), bv, sizeof bv);
  RUN_OK("mod", fmodAttrs(1), {&a, &b}, y);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y.as<float>()[i], std::fmod(av[i], bv[i]));
  EXPECT_LT(y.as<float>()[0], 0);
  EXPECT_GT(y.as<float>()[1], 0);
}

TEST(KernelBinary, PowWithMixedExponentType) {
  std::mt19937 rng(9);
  struct Case {
    DType base, exponent;
  } cases[] = {{DType::F32, DType::I64}, {DType::F32, DType::I32}, {DType::F16, DType::I64},
               {DType::I32, DType::F32}, {DType::I64, DType::F64}, {DType::F32, DType::F64},
               {DType::U8, DType::F32}};
  for (const Case &c : cases) {
    const bool intBase = isIntType(c.base);
    Tensor a = randomTensor(c.base, {3, 4}, rng, intBase ? 1 : 0.2, intBase ? 7 : 3);
    Tensor b = randomTensor(c.exponent, {4}, rng, isIntType(c.exponent) ? -3 : -2,
                            isIntType(c.exponent) ? 4 : 2.5);
    Tensor y(c.base, {3, 4});
    RUN_OK("pow", Attrs{}, {&a, &b}, y);
    for (int64_t i = 0; i < 12; ++i) {
      const double r = std::pow(a.get(i), b.get(i % 4));
      if (intBase) {
        ASSERT_EQ(y.get(i), std::trunc(r)) << i; // r <= 6^2.5: in range
      } else {
        ASSERT_NEAR(y.get(i), r, roundingRel(c.base) * std::fabs(r) + 1e-30)
            << dtypeName(c.base) << "^" << dtypeName(c.exponent) << " " << i;
      }
    }
  }
}

TEST(KernelBinary, ComparisonsToBool) {
  std::mt19937 rng(13);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::U8, DType::I8}) {
    for (const char *op : {"equal", "less", "less_equal", "greater", "greater_equal"}) {
      const std::string o = op;
      for (const auto &[sa, sb] : kBroadcastShapes) {
        // Small integer-valued data so that ties occur.
        Tensor a = randomTensor(t, sa, rng, isSignedType(t) || !isIntType(t) ? -3 : 0, 4);
        Tensor b = randomTensor(t, sb, rng, isSignedType(t) || !isIntType(t) ? -3 : 0, 4);
        if (!isIntType(t))
          for (int64_t i = 0; i < a.size(); ++i)
            a.set(i, std::floor(a.get(i)));
        const Shape so = broadcastShape(sa, sb);
        Tensor y(DType::Bool, so);
        RUN_OK(op, Attrs{}, {&a, &b}, y);
        for (int64_t i = 0; i < numel(so); ++i) {
          Shape idx = unravel(i, so);
          const double x = a.get(broadcastIndex(idx, sa)), w = b.get(broadcastIndex(idx, sb));
          bool want = o == "equal" ? x == w : o == "less" ? x < w : o == "less_equal" ? x <= w
                    : o == "greater" ? x > w : x >= w;
          ASSERT_EQ(y.as<uint8_t>()[i], want ? 1 : 0) << o << " " << dtypeName(t) << " " << i;
        }
      }
    }
  }
  // NaN compares false (and unequal).
  Tensor n(DType::F32, {1}), z(DType::F32, {1}), r(DType::Bool, {1});
  n.set(0, NAN);
  z.set(0, 0);
  for (const char *op : {"equal", "less", "less_equal", "greater", "greater_equal"}) {
    RUN_OK(op, Attrs{}, {&n, &z}, r);
    EXPECT_EQ(r.as<uint8_t>()[0], 0) << op;
  }
}

TEST(KernelBinary, LogicalOnBool) {
  std::mt19937 rng(17);
  for (const char *op : {"and", "or", "xor"}) {
    const std::string o = op;
    for (const auto &[sa, sb] : kBroadcastShapes) {
      Tensor a = randomTensor(DType::Bool, sa, rng, 0, 2);
      Tensor b = randomTensor(DType::Bool, sb, rng, 0, 2);
      for (int64_t i = 0; i < a.size(); ++i)
        a.set(i, a.get(i) >= 0.5 ? 1 : 0);
      const Shape so = broadcastShape(sa, sb);
      Tensor y(DType::Bool, so);
      RUN_OK(op, Attrs{}, {&a, &b}, y);
      for (int64_t i = 0; i < numel(so); ++i) {
        Shape idx = unravel(i, so);
        const bool x = a.get(broadcastIndex(idx, sa)) != 0, w = b.get(broadcastIndex(idx, sb)) != 0;
        const bool want = o == "and" ? (x && w) : o == "or" ? (x || w) : (x != w);
        ASSERT_EQ(y.as<uint8_t>()[i], want ? 1 : 0) << o << " " << i;
      }
    }
  }
}

TEST(KernelWhere, TernaryBroadcastAllDtypes) {
  std::mt19937 rng(19);
  const Shape shapes[][3] = {{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                             {{3, 1}, {1, 4}, {}},
                             {{4}, {2, 1, 4}, {3, 1}},
                             {{}, {5}, {2, 5}},
                             {{2, 1, 1}, {1}, {1, 3, 2}}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::I8, DType::I16, DType::I64, DType::U8,
                  DType::Bool}) {
    for (const auto &s : shapes) {
      Tensor c = randomTensor(DType::Bool, s[0], rng, 0, 2);
      Tensor a = randomTensor(t, s[1], rng, 0, 100);
      Tensor b = randomTensor(t, s[2], rng, 0, 100);
      const Shape so = broadcastShape(broadcastShape(s[0], s[1]), s[2]);
      Tensor y(t, so);
      RUN_OK("where", Attrs{}, {&c, &a, &b}, y);
      for (int64_t i = 0; i < numel(so); ++i) {
        Shape idx = unravel(i, so);
        const bool cond = c.get(broadcastIndex(idx, s[0])) != 0;
        const double want = cond ? a.get(broadcastIndex(idx, s[1])) : b.get(broadcastIndex(idx, s[2]));
        ASSERT_EQ(y.get(i), want) << dtypeName(t) << " " << i;
      }
    }
  }
}

} // namespace
} // namespace tessel::test
