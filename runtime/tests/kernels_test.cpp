//===- kernels_test.cpp - CPU reference kernels vs. float64 references ----===//
//
// Every kernel family runs on random data (fixed seeds) over several shapes
// and is compared with a float64 reference written here, independently of the
// kernel code, straight from the ONNX operator definitions (naive loops).
//
// Tolerances:
//  - f32 elementwise: the kernel computes in float; a correctly rounded float
//    op is within 2^-24 relative, libm float functions within a few ulp, so
//    we allow 2^-20 (16 ulp) of |result| (plus 2^-22 of the largest
//    intermediate term for formulas with cancellation).
//  - f32 accumulations (conv, gemm, matmul): the kernel sums n products in
//    float; the error of such a sum is bounded by ~n * 2^-24 * sum|terms|, and
//    with our n <= ~150 that stays below rtol = 1e-5 of sum|terms| (the
//    magnitude of the sum of |terms|, computed by the reference).
//  - reductions and norms accumulate in double: one final rounding to float,
//    2^-23 of |result| (plus a tiny absolute term).
//  - f16 (11-bit significand): the result is rounded once from float to half,
//    so it is within 2^-11 relative of the float result; we allow 2^-10 of
//    |result| plus the float accumulation error (as above) plus 2^-25 (half of
//    the smallest subnormal spacing) absolute.
//
//===----------------------------------------------------------------------===//
#include "tessel/half.h"
#include "tessel/cpu_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace tessel::cpu;

namespace {

using Shape = std::vector<int64_t>;
using i128 = __int128;

//===----------------------------------------------------------------------===//
// Independent f16 reference conversions (by arithmetic on doubles)
//===----------------------------------------------------------------------===//

double refHalfToDouble(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0)
    return sign * std::ldexp(static_cast<double>(mantissa), -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
}

// Round-to-nearest-even to binary16, by finding the quantum and rounding the
// quotient with nearbyint (default rounding mode: ties to even).
uint16_t refDoubleToHalf(double v) {
  if (std::isnan(v))
    return std::signbit(v) ? 0xfe00 : 0x7e00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a >= 65520.0)
    return sign | 0x7c00;
  if (a == 0)
    return sign;
  int e;
  std::frexp(a, &e); // a in [2^(e-1), 2^e)
  int exponent = std::max(e - 1, -14);
  const double quantum = std::ldexp(1.0, exponent - 10);
  const double m = std::nearbyint(a / quantum) * quantum; // a / quantum is exact
  if (m == 0)
    return sign;
  std::frexp(m, &e);
  exponent = e - 1;
  if (exponent < -14)
    return sign | static_cast<uint16_t>(m / std::ldexp(1.0, -24));
  const int mantissa = static_cast<int>(m / std::ldexp(1.0, exponent - 10)) - 1024;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | mantissa);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

Shape unravel(int64_t linear, const Shape &shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = linear % shape[d];
    linear /= shape[d];
  }
  return idx;
}

int64_t ravel(const Shape &idx, const Shape &shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    o = o * shape[d] + idx[d];
  return o;
}

bool isIntType(DType t) {
  switch (t) {
  case DType::I8: case DType::I16: case DType::I32: case DType::I64:
  case DType::U8: case DType::U16: case DType::U32: case DType::U64: return true;
  default: return false;
  }
}
bool isSignedType(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
int bitsOf(DType t) { return static_cast<int>(dtypeSize(t)) * 8; }

struct Tensor {
  Tensor() = default;
  Tensor(DType dtype, Shape shape) : bytes(static_cast<size_t>(numel(shape)) * dtypeSize(dtype) + 1) {
    view.dtype = dtype;
    view.shape = std::move(shape);
    view.data = bytes.data();
  }
  Tensor(const Tensor &other) : bytes(other.bytes), view(other.view) { view.data = bytes.data(); }
  Tensor &operator=(const Tensor &other) {
    bytes = other.bytes;
    view = other.view;
    view.data = bytes.data();
    return *this;
  }

  DType dtype() const { return view.dtype; }
  const Shape &shape() const { return view.shape; }
  int64_t size() const { return numel(view.shape); }
  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(bytes.data()); }

  double get(int64_t i) const {
    switch (dtype()) {
    case DType::F32: return as<float>()[i];
    case DType::F64: return as<double>()[i];
    case DType::F16: return refHalfToDouble(as<uint16_t>()[i]);
    case DType::Bool: return as<uint8_t>()[i];
    default: return static_cast<double>(getI(i));
    }
  }
  // Stores v rounded to the dtype (f16: RNE; ints: truncation toward zero).
  void set(int64_t i, double v) {
    switch (dtype()) {
    case DType::F32: as<float>()[i] = static_cast<float>(v); break;
    case DType::F64: as<double>()[i] = v; break;
    case DType::F16: as<uint16_t>()[i] = refDoubleToHalf(v); break;
    case DType::Bool: as<uint8_t>()[i] = v != 0; break;
    default: setI(i, static_cast<i128>(v)); break;
    }
  }
  i128 getI(int64_t i) const {
    switch (dtype()) {
    case DType::I8: return as<int8_t>()[i];
    case DType::I16: return as<int16_t>()[i];
    case DType::I32: return as<int32_t>()[i];
    case DType::I64: return as<int64_t>()[i];
    case DType::U8: return as<uint8_t>()[i];
    case DType::U16: return as<uint16_t>()[i];
    case DType::U32: return as<uint32_t>()[i];
    case DType::U64: return as<uint64_t>()[i];
    case DType::Bool: return as<uint8_t>()[i];
    default: return static_cast<i128>(get(i));
    }
  }
  // Stores v modulo 2^bits (two's complement wrap), written out explicitly.
  void setI(int64_t i, i128 v) {
    const int bits = bitsOf(dtype());
    const i128 modulus = i128(1) << bits;
    i128 r = v % modulus;
    if (r < 0)
      r += modulus;
    if (isSignedType(dtype()) && r >= modulus / 2)
      r -= modulus;
    switch (dtype()) {
    case DType::I8: as<int8_t>()[i] = static_cast<int8_t>(r); break;
    case DType::I16: as<int16_t>()[i] = static_cast<int16_t>(r); break;
    case DType::I32: as<int32_t>()[i] = static_cast<int32_t>(r); break;
    case DType::I64: as<int64_t>()[i] = static_cast<int64_t>(r); break;
    case DType::U8: as<uint8_t>()[i] = static_cast<uint8_t>(r); break;
    case DType::U16: as<uint16_t>()[i] = static_cast<uint16_t>(r); break;
    case DType::U32: as<uint32_t>()[i] = static_cast<uint32_t>(r); break;
    case DType::U64: as<uint64_t>()[i] = static_cast<uint64_t>(r); break;
    default: set(i, static_cast<double>(v)); break;
    }
  }

  std::vector<uint8_t> bytes;
  TensorView view;
};

// Uniform random values in [lo, hi), stored (rounded) in the tensor's dtype.
Tensor randomTensor(DType dtype, const Shape &shape, std::mt19937 &rng, double lo = -1,
                    double hi = 1) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (dtype == DType::Bool)
      t.set(i, dist(rng) >= (lo + hi) / 2 ? 1 : 0);
    else if (isIntType(dtype))
      t.setI(i, static_cast<i128>(std::floor(dist(rng))));
    else
      t.set(i, dist(rng));
  }
  return t;
}

KernelStatus run(const std::string &op, const Attrs &attrs, std::vector<const Tensor *> ins,
                 Tensor &out) {
  Kernel k = findKernel(op);
  if (!k)
    return KernelStatus{"no kernel " + op};
  std::vector<const TensorView *> views;
  for (const Tensor *t : ins)
    views.push_back(t ? &t->view : nullptr);
  std::vector<TensorView *> outs{&out.view};
  return k(attrs, views, outs);
}

#define RUN_OK(...)                                                                    \
  do {                                                                                 \
    KernelStatus status_ = run(__VA_ARGS__);                                           \
    ASSERT_TRUE(status_.ok()) << status_.error;                                        \
  } while (0)

// Compares got[i] against ref[i] with |got - ref| <= tol[i]; NaN matches NaN,
// inf matches the same inf. Reports the first few mismatches.
void expectClose(const Tensor &got, const std::vector<double> &ref, const std::vector<double> &tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(ref.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.get(i), r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r))
      ok = g == r;
    else
      ok = std::fabs(g - r) <= tol[i];
    if (!ok && ++failures <= 5)
      ADD_FAILURE() << what << ": element " << i << " got " << g << " expected " << r
                    << " (tol " << tol[i] << ", diff " << std::fabs(g - r) << ")";
  }
  EXPECT_EQ(failures, 0) << what;
}

// Tolerance for a float result of one rounding (or computed in double): rel of
// |ref| plus an absolute floor.
std::vector<double> relTol(const std::vector<double> &ref, double rel, double abs) {
  std::vector<double> t(ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    t[i] = rel * std::fabs(ref[i]) + abs;
  return t;
}

// Final-rounding relative error of a dtype (0 for f64: use a tiny one).
double roundingRel(DType t) {
  switch (t) {
  case DType::F16: return std::ldexp(1.0, -10);
  case DType::F32: return std::ldexp(1.0, -23);
  default: return 1e-14;
  }
}

// Accumulation tolerance: for a result of sum magnitude S = sum|terms|.
std::vector<double> accTol(DType t, const std::vector<double> &ref, const std::vector<double> &mag) {
  std::vector<double> tol(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    switch (t) {
    case DType::F32: tol[i] = 1e-5 * mag[i] + 1e-30; break;
    case DType::F16:
      tol[i] = std::ldexp(1.0, -10) * std::fabs(ref[i]) + 1e-5 * mag[i] + std::ldexp(1.0, -25);
      break;
    default: tol[i] = 1e-12 * mag[i] + 1e-300; break;
    }
  }
  return tol;
}

std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Broadcast shape of a and b (numpy rules; shapes in the tests are valid).
Shape broadcastShape(const Shape &a, const Shape &b) {
  Shape r(std::max(a.size(), b.size()));
  for (size_t j = 0; j < r.size(); ++j) {
    int64_t da = j < a.size() ? a[a.size() - 1 - j] : 1;
    int64_t db = j < b.size() ? b[b.size() - 1 - j] : 1;
    r[r.size() - 1 - j] = da == 1 ? db : da;
  }
  return r;
}

// The linear index into `in` of output multi-index `idx` under broadcasting.
int64_t broadcastIndex(const Shape &idx, const Shape &in) {
  int64_t o = 0;
  const size_t off = idx.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    o = o * in[d] + (in[d] == 1 ? 0 : idx[off + d]);
  return o;
}

//===----------------------------------------------------------------------===//
// half.h
//===----------------------------------------------------------------------===//

TEST(KernelHalf, EveryHalfConvertsExactlyAndRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const double r = refHalfToDouble(static_cast<uint16_t>(h));
    if (std::isnan(r)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(std::isnan(halfToFloat(floatToHalf(f)))) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), r) << std::hex << h;
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(KernelHalf, RoundsToNearestEven) {
  // Midpoints between consecutive finite halves tie to the even one; one float
  // ulp either side rounds to the nearer.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float a = halfToFloat(static_cast<uint16_t>(h));
    const float b = halfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2); // exact
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    ASSERT_EQ(floatToHalf(mid), even) << std::hex << h;
    ASSERT_EQ(floatToHalf(-mid), even | 0x8000) << std::hex << h;
    ASSERT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(floatToHalf(std::nextafter(mid, 1e9f)), h + 1) << std::hex << h;
  }
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);                 // tie -> even 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);                 // above the tie
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);                 // 1.5 ulp -> even 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400); // to min normal
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(KernelHalf, RandomFloatsMatchReferenceRounding) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    const uint16_t got = floatToHalf(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(halfToFloat(got)));
      continue;
    }
    ASSERT_EQ(got, refDoubleToHalf(f)) << f;
  }
  // Concentrated on the half range, where rounding matters most.
  std::uniform_real_distribution<double> exponent(-27, 17);
  for (int i = 0; i < 500000; ++i) {
    float f = static_cast<float>(std::exp2(exponent(rng))) * ((i & 1) ? -1.0f : 1.0f);
    ASSERT_EQ(floatToHalf(f), refDoubleToHalf(f)) << f;
  }
}

TEST(KernelRegistry, AllKernelsRegistered) {
  const char *names[] = {
      "relu", "sigmoid", "tanh", "abs", "neg", "exp", "log", "sqrt", "reciprocal", "floor",
      "ceil", "round", "sign", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
      "cosh", "asinh", "acosh", "atanh", "softplus", "softsign", "hard_swish", "not",
      "leaky_relu", "elu", "celu", "selu", "thresholded_relu", "hard_sigmoid", "shrink", "clip",
      "add", "sub", "mul", "div", "pow", "mod", "max", "min", "prelu", "equal", "less", "less_equal",
      "greater", "greater_equal", "and", "or", "xor", "where", "conv", "conv_transpose", "gemm",
      "matmul", "batch_norm", "instance_norm", "layer_norm", "lrn", "max_pool", "avg_pool",
      "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
      "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "softmax",
      "log_softmax", "argmax", "argmin"};
  for (const char *n : names)
    EXPECT_NE(findKernel(n), nullptr) << n;
}

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
  add("hard_swish", -5, 5, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); },
      [](double x) { return std::fabs(x) * (std::fabs(x) / 6 + 0.5); });
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

//===----------------------------------------------------------------------===//
// conv, conv_transpose
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, m, group;
  Shape in, kernel, strides, pads, dilations, outputPadding;
  bool bias;
};

const ConvCase kConvCases[] = {
    // 2-D, groups, asymmetric pads, strides and dilations
    {2, 4, 6, 2, {7, 9}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, {0, 0}, true},
    // 1-D
    {1, 3, 5, 1, {11}, {3}, {2}, {1, 1}, {2}, {1}, false},
    // 3-D
    {1, 2, 3, 1, {5, 4, 6}, {2, 3, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, {1, 1, 2}, {0, 1, 0}, true},
    // depthwise
    {2, 4, 4, 4, {6, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    // 1x1, no padding
    {1, 8, 5, 1, {4, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false},
    // stride larger than kernel, big padding
    {1, 3, 4, 1, {8, 8}, {2, 2}, {3, 3}, {2, 1, 0, 2}, {1, 1}, {2, 1}, true},
    // large enough (16*25 taps x 60x60 positions) for conv's im2col to work in
    // several row chunks
    {1, 16, 2, 1, {62, 60}, {5, 5}, {1, 1}, {1, 2, 1, 2}, {1, 1}, {0, 0}, true},
    // a long 1-D conv: its chunks end inside the one output row
    {1, 64, 3, 1, {2000}, {5}, {1}, {2, 2}, {1}, {0}, true},
};

TEST(KernelConv, MatchesNaiveReference) {
  std::mt19937 rng(23);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    int caseIndex = 0;
    for (const ConvCase &cc : kConvCases) {
      const size_t ns = cc.in.size();
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group}, os{cc.n, cc.m};
      for (size_t d = 0; d < ns; ++d) {
        xs.push_back(cc.in[d]);
        ws.push_back(cc.kernel[d]);
        const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
        os.push_back((cc.in[d] + cc.pads[d] + cc.pads[ns + d] - span) / cc.strides[d] + 1);
      }
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      Tensor y(t, os);
      Attrs a;
      a.set("strides", cc.strides);
      a.set("pads", cc.pads);
      a.set("dilations", cc.dilations);
      a.set("group", cc.group);
      RUN_OK("conv", a, {&x, &w, cc.bias ? &b : nullptr}, y);
      // Reference: y[n,m,o] = b[m] + sum_{c,k} x[n, g*Cg+c, o*s - pb + k*d] * w[m,c,k]
      const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
      const Shape outSp(os.begin() + 2, os.end()), kSp(cc.kernel);
      std::vector<double> ref(y.size()), mag(y.size());
      for (int64_t i = 0; i < y.size(); ++i) {
        const Shape oi = unravel(i, os);
        const int64_t n = oi[0], m = oi[1], g = m / mg;
        double acc = cc.bias ? b.get(m) : 0, s = std::fabs(acc);
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t kp = 0; kp < numel(kSp); ++kp) {
            const Shape k = unravel(kp, kSp);
            Shape xi{n, g * cg + c};
            bool inside = true;
            for (size_t d = 0; d < ns; ++d) {
              int64_t p = oi[2 + d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
              inside = inside && p >= 0 && p < cc.in[d];
              xi.push_back(p);
            }
            if (!inside)
              continue;
            Shape wi{m, c};
            wi.insert(wi.end(), k.begin(), k.end());
            const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
            acc += term;
            s += std::fabs(term);
          }
        ref[i] = acc;
        mag[i] = s;
      }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("conv ") + dtypeName(t) + " case " + std::to_string(caseIndex));
      ++caseIndex;
    }
  }
}

TEST(KernelConvTranspose, MatchesNaiveReference) {
  std::mt19937 rng(29);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    int caseIndex = 0;
    for (const ConvCase &cc : kConvCases) {
      const size_t ns = cc.in.size();
      // weight (C, M/group, k...); output extent from the ONNX formula plus
      // output_padding (the kernel must take it from the result view).
      Shape xs{cc.n, cc.c}, ws{cc.c, cc.m / cc.group}, os{cc.n, cc.m};
      for (size_t d = 0; d < ns; ++d) {
        xs.push_back(cc.in[d]);
        ws.push_back(cc.kernel[d]);
        const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
        os.push_back((cc.in[d] - 1) * cc.strides[d] - cc.pads[d] - cc.pads[ns + d] + span +
                     cc.outputPadding[d]);
      }
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      Tensor y(t, os);
      Attrs a;
      a.set("strides", cc.strides);
      a.set("pads", cc.pads);
      a.set("dilations", cc.dilations);
      a.set("group", cc.group);
      RUN_OK("conv_transpose", a, {&x, &w, cc.bias ? &b : nullptr}, y);
      const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
      const Shape inSp(cc.in), kSp(cc.kernel);
      std::vector<double> ref(y.size(), 0.0), mag(y.size(), 0.0);
      for (int64_t n = 0; n < cc.n; ++n)
        for (int64_t ci = 0; ci < cc.c; ++ci)
          for (int64_t ip = 0; ip < numel(inSp); ++ip)
            for (int64_t m = 0; m < mg; ++m)
              for (int64_t kp = 0; kp < numel(kSp); ++kp) {
                const Shape i = unravel(ip, inSp), k = unravel(kp, kSp);
                const int64_t g = ci / cg;
                Shape oi{n, g * mg + m};
                bool inside = true;
                for (size_t d = 0; d < ns; ++d) {
                  int64_t o = i[d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
                  inside = inside && o >= 0 && o < os[2 + d];
                  oi.push_back(o);
                }
                if (!inside)
                  continue;
                Shape xi{n, ci}, wi{ci, m};
                xi.insert(xi.end(), i.begin(), i.end());
                wi.insert(wi.end(), k.begin(), k.end());
                const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
                ref[ravel(oi, os)] += term;
                mag[ravel(oi, os)] += std::fabs(term);
              }
      if (cc.bias)
        for (int64_t i = 0; i < y.size(); ++i) {
          const double bv = b.get(unravel(i, os)[1]);
          ref[i] += bv;
          mag[i] += std::fabs(bv);
        }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("conv_transpose ") + dtypeName(t) + " case " +
                      std::to_string(caseIndex));
      ++caseIndex;
    }
  }
}

//===----------------------------------------------------------------------===//
// conv epilogue (bias, residual, activation) and the NHWC layout
//===----------------------------------------------------------------------===//

// The activations of the conv/gemm epilogue, with the parameters the tests
// use (clip: alpha = min, beta = max; leaky_relu: alpha = slope).
struct ActCase {
  const char *name;
  double alpha, beta;
};

const ActCase kActivations[] = {{"none", 0, 0},       {"relu", 0, 0},    {"clip", -0.3, 0.4},
                                {"leaky_relu", 0.1, 0}, {"sigmoid", 0, 0}, {"tanh", 0, 0},
                                {"hard_swish", 0, 0}};

// ONNX's definitions, in double.
double refActivation(const ActCase &a, double v) {
  const std::string n = a.name;
  if (n == "relu")
    return std::max(0.0, v);
  if (n == "clip")
    return std::min(std::max(v, a.alpha), a.beta);
  if (n == "leaky_relu")
    return v < 0 ? a.alpha * v : v;
  if (n == "sigmoid")
    return 1.0 / (1.0 + std::exp(-v));
  if (n == "tanh")
    return std::tanh(v);
  if (n == "hard_swish")
    return v * std::min(std::max(v / 6.0 + 0.5, 0.0), 1.0);
  return v;
}

// Tolerance of a fused conv/gemm result (float accumulation, one rounding):
//  - f32: the float accumulation error as in accTol (1e-5 of sum|terms|),
//    times 1.5, the steepest slope of any epilogue activation (hard_swish on
//    [-3, 3]), plus the activation's own float evaluation (a few ulp: 2^-20
//    of |result|).
//  - f16: f16 storage with f32 accumulation. The operands hold f16 values
//    exactly and the reference reads those values, so their rounding does
//    not enter here (against an f32 model it would add ~2^-11 * sum|x*w|, the
//    per-element bound 2^-11 * (|y| + sum|x*w|) of the precision policy).
//    What remains is the f32 error e32 above and ONE rounding of the result
//    to half: |round(v) - v| <= 2^-11 * |v| in the normal range and 2^-25
//    (half the subnormal spacing) below it, with |v| <= |ref| + e32. An f16
//    accumulation would be off by ~K * 2^-11 * sum|terms| and fails this.
//  - f64: 1.5e-12 of sum|terms|.
std::vector<double> fusedTol(DType t, const std::vector<double> &ref, const std::vector<double> &mag) {
  std::vector<double> tol(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = std::fabs(ref[i]);
    const double e32 = 1.5e-5 * mag[i] + std::ldexp(r, -20) + 1e-30;
    switch (t) {
    case DType::F32: tol[i] = e32; break;
    case DType::F16: tol[i] = std::ldexp(r + e32, -11) + e32 + std::ldexp(1.0, -25); break;
    default: tol[i] = 1.5e-12 * mag[i] + 1e-14 * r + 1e-300; break;
    }
  }
  return tol;
}

// Moves dim 1 to the end: N,C,spatial -> N,spatial,C; for conv weights
// M,C/group,k -> M,k,C/group (OIHW -> OHWI).
Tensor channelsLast(const Tensor &t) {
  const Shape &s = t.shape();
  Shape ls{s[0]};
  ls.insert(ls.end(), s.begin() + 2, s.end());
  ls.push_back(s[1]);
  Tensor r(t.dtype(), ls);
  const size_t e = dtypeSize(t.dtype());
  for (int64_t i = 0; i < t.size(); ++i) {
    const Shape idx = unravel(i, s);
    Shape li{idx[0]};
    li.insert(li.end(), idx.begin() + 2, idx.end());
    li.push_back(idx[1]);
    std::memcpy(r.as<uint8_t>() + ravel(li, ls) * e, t.as<uint8_t>() + i * e, e);
  }
  return r;
}

// The inverse: N,spatial,C -> N,C,spatial.
Tensor channelsFirst(const Tensor &t) {
  const Shape &s = t.shape();
  Shape fs{s[0], s.back()};
  fs.insert(fs.end(), s.begin() + 1, s.end() - 1);
  Tensor r(t.dtype(), fs);
  const size_t e = dtypeSize(t.dtype());
  for (int64_t i = 0; i < r.size(); ++i) {
    const Shape idx = unravel(i, fs);
    Shape li{idx[0]};
    li.insert(li.end(), idx.begin() + 2, idx.end());
    li.push_back(idx[1]);
    std::memcpy(r.as<uint8_t>() + i * e, t.as<uint8_t>() + ravel(li, s) * e, e);
  }
  return r;
}

Shape convOutShape(const ConvCase &cc) {
  const size_t ns = cc.in.size();
  Shape os{cc.n, cc.m};
  for (size_t d = 0; d < ns; ++d) {
    const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
    os.push_back((cc.in[d] + cc.pads[d] + cc.pads[ns + d] - span) / cc.strides[d] + 1);
  }
  return os;
}

// Naive float64 conv on NCHW operands: ref = act(conv(x, w) + bias +
// residual), mag = sum of |terms| (products, bias, residual) per element.
void refConv(const ConvCase &cc, const Tensor &x, const Tensor &w, const Tensor *bias,
             const Tensor *residual, const ActCase &act, std::vector<double> &ref,
             std::vector<double> &mag) {
  const size_t ns = cc.in.size();
  const Shape os = convOutShape(cc), &xs = x.shape(), &ws = w.shape();
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  const Shape kSp(cc.kernel);
  ref.assign(numel(os), 0);
  mag.assign(numel(os), 0);
  for (int64_t i = 0; i < numel(os); ++i) {
    const Shape oi = unravel(i, os);
    const int64_t n = oi[0], m = oi[1], g = m / mg;
    double acc = 0, s = 0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t kp = 0; kp < numel(kSp); ++kp) {
        const Shape k = unravel(kp, kSp);
        Shape xi{n, g * cg + c};
        bool inside = true;
        for (size_t d = 0; d < ns; ++d) {
          const int64_t p = oi[2 + d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
          inside = inside && p >= 0 && p < cc.in[d];
          xi.push_back(p);
        }
        if (!inside)
          continue;
        Shape wi{m, c};
        wi.insert(wi.end(), k.begin(), k.end());
        const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
        acc += term;
        s += std::fabs(term);
      }
    if (bias) {
      acc += bias->get(m);
      s += std::fabs(bias->get(m));
    }
    if (residual) {
      acc += residual->get(i);
      s += std::fabs(residual->get(i));
    }
    ref[i] = refActivation(act, acc);
    mag[i] = s;
  }
}

Attrs convAttrs(const ConvCase &cc, const char *layout, const ActCase &act) {
  Attrs a;
  a.set("strides", cc.strides);
  a.set("pads", cc.pads);
  a.set("dilations", cc.dilations);
  a.set("group", cc.group);
  if (layout)
    a.set("layout", std::string(layout));
  a.set("activation", std::string(act.name));
  a.set("alpha", act.alpha);
  a.set("beta", act.beta);
  return a;
}

// Random conv shapes: 1-3 spatial dims, strides, asymmetric pads, dilations,
// 1x1 kernels, groups and depthwise (with channel multipliers), channel counts
// past one 16-wide weight panel.
std::vector<ConvCase> randomConvCases(std::mt19937 &rng, int count) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<ConvCase> cases;
  for (int i = 0; i < count; ++i) {
    ConvCase cc;
    const int64_t kind = pick(0, 5); // 0-2 dense, 3 grouped, 4 depthwise, 5 1x1
    const size_t ns = static_cast<size_t>(pick(0, 5) == 0 ? pick(1, 3) : 2);
    cc.n = pick(1, 2);
    cc.group = kind == 3 ? pick(2, 3) : 1;
    int64_t cg = pick(1, 9), mg = pick(1, 40);
    if (kind == 4) {
      cc.group = pick(2, 12);
      cg = 1;
      mg = pick(1, 3);
    }
    cc.c = cg * cc.group;
    cc.m = mg * cc.group;
    cc.pads.assign(2 * ns, 0);
    for (size_t d = 0; d < ns; ++d) {
      const int64_t k = kind == 5 ? 1 : pick(1, 4);
      const int64_t dil = pick(0, 3) == 0 ? 2 : 1;
      const int64_t s = pick(0, 2) == 0 ? pick(2, 3) : 1;
      cc.kernel.push_back(k);
      cc.dilations.push_back(dil);
      cc.strides.push_back(kind == 5 && pick(0, 1) ? 1 : s);
      cc.pads[d] = kind == 5 ? 0 : pick(0, 2);
      cc.pads[ns + d] = kind == 5 ? 0 : pick(0, 2);
      const int64_t span = (k - 1) * dil + 1;
      cc.in.push_back(std::max<int64_t>(1, span - cc.pads[d] - cc.pads[ns + d]) + pick(0, ns == 1 ? 12 : 6));
      cc.outputPadding.push_back(0);
    }
    cc.bias = pick(0, 1) != 0;
    cases.push_back(cc);
  }
  return cases;
}

std::string convCaseName(const ConvCase &cc) {
  return "n" + std::to_string(cc.n) + " c" + std::to_string(cc.c) + " m" + std::to_string(cc.m) +
         " g" + std::to_string(cc.group) + " in" + shapeStr(cc.in) + " k" + shapeStr(cc.kernel) +
         " s" + shapeStr(cc.strides) + " p" + shapeStr(cc.pads) + " d" + shapeStr(cc.dilations);
}

// More fixed shapes for the NHWC paths: several 16-wide weight panels, a
// direct (1x1, stride 1) conv, a depthwise conv with channel multiplier 2, a
// strided 1x1 (ResNet downsample), ResNet's stem.
const ConvCase kNhwcCases[] = {
    {1, 8, 37, 1, {9, 7}, {3, 3}, {1, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    {2, 24, 40, 1, {5, 6}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, true},
    {1, 6, 12, 6, {7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    {1, 32, 48, 1, {8, 8}, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false},
    {1, 3, 16, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, {0, 0}, true},
    {1, 40, 20, 4, {6, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
};

// conv in NHWC (input N,spatial,C; weight OHWI; result N,spatial,M) is the
// NCHW conv on transposed data: the kernel runs on channelsLast operands and
// its result, moved back to channels-first, is compared with the float64
// reference of the NCHW operands.
TEST(KernelConvNhwc, MatchesReferenceOnTransposedData) {
  std::mt19937 rng(101);
  std::vector<ConvCase> cases(std::begin(kConvCases), std::end(kConvCases));
  cases.insert(cases.end(), std::begin(kNhwcCases), std::end(kNhwcCases));
  const std::vector<ConvCase> random = randomConvCases(rng, 40);
  cases.insert(cases.end(), random.begin(), random.end());
  const ActCase none = kActivations[0];
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const ConvCase &cc : cases) {
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
      xs.insert(xs.end(), cc.in.begin(), cc.in.end());
      ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
      const Shape os = convOutShape(cc);
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      std::vector<double> ref, mag;
      refConv(cc, x, w, cc.bias ? &b : nullptr, nullptr, none, ref, mag);
      const Tensor xl = channelsLast(x), wl = channelsLast(w);
      Tensor yl(t, channelsLast(Tensor(t, os)).shape());
      RUN_OK("conv", convAttrs(cc, "NHWC", none), {&xl, &wl, cc.bias ? &b : nullptr}, yl);
      expectClose(channelsFirst(yl), ref, fusedTol(t, ref, mag),
                  std::string("conv NHWC ") + dtypeName(t) + " " + convCaseName(cc));
    }
  }
}

// Timing, not correctness (run with --gtest_also_run_disabled_tests): the 53
// convolutions of ResNet-50 at batch 1 (4.1 GMAC), each with bias + relu
// (+ residual on the blocks' last conv), in both layouts and f32/f16.
TEST(KernelConvNhwc, DISABLED_ResNet50ConvStackTiming) {
  struct Layer {
    int64_t cin, cout, k, stride, pad, hw;
    bool residual;
  };
  std::vector<Layer> layers = {{3, 64, 7, 2, 3, 224, false}};
  int64_t in = 64, hw = 56;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int st = 0; st < 4; ++st)
    for (int64_t b = 0; b < blocks[st]; ++b) {
      const int64_t w = widths[st], s = st > 0 && b == 0 ? 2 : 1, out = hw / s;
      layers.push_back({in, w, 1, 1, 0, hw, false});
      layers.push_back({w, w, 3, s, 1, hw, false});
      layers.push_back({w, 4 * w, 1, 1, 0, out, true});
      if (b == 0)
        layers.push_back({in, 4 * w, 1, s, 0, hw, false});
      in = 4 * w;
      hw = out;
    }
  double macs = 0;
  for (const Layer &l : layers) {
    const int64_t o = (l.hw + 2 * l.pad - l.k) / l.stride + 1;
    macs += double(o * o) * l.cout * l.cin * l.k * l.k;
  }
  std::printf("%zu convs, %.2f GMAC\n", layers.size(), macs * 1e-9);
  std::mt19937 rng(1);
  for (DType t : {DType::F32, DType::F16})
    for (const char *layout : {"NHWC", "NCHW"}) {
      const bool nhwc = layout[1] == 'H';
      double seconds = 0;
      for (const Layer &l : layers) {
        const int64_t o = (l.hw + 2 * l.pad - l.k) / l.stride + 1;
        Tensor x = randomTensor(t, nhwc ? Shape{1, l.hw, l.hw, l.cin} : Shape{1, l.cin, l.hw, l.hw}, rng);
        Tensor w = randomTensor(t, nhwc ? Shape{l.cout, l.k, l.k, l.cin} : Shape{l.cout, l.cin, l.k, l.k}, rng);
        Tensor b = randomTensor(t, {l.cout}, rng);
        const Shape os = nhwc ? Shape{1, o, o, l.cout} : Shape{1, l.cout, o, o};
        Tensor r = randomTensor(t, os, rng), y(t, os);
        ConvCase cc{1, l.cin, l.cout, 1, {l.hw, l.hw}, {l.k, l.k}, {l.stride, l.stride},
                    {l.pad, l.pad, l.pad, l.pad}, {1, 1}, {0, 0}, true};
        const Attrs a = convAttrs(cc, layout, kActivations[1]);
        const auto start = std::chrono::steady_clock::now();
        RUN_OK("conv", a, {&x, &w, &b, l.residual ? &r : nullptr}, y);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      std::printf("%s %s: %.3f s (%.1f GFLOP/s)\n", dtypeName(t), layout, seconds,
                  2 * macs / seconds * 1e-9);
    }
}

// The epilogue y = act(conv + bias + residual), each activation, both
// layouts, with and without bias and residual (a missing residual given as
// nullptr or by a 3-operand list).
TEST(KernelConvEpilogue, BiasResidualAndEachActivation) {
  std::mt19937 rng(103);
  std::vector<ConvCase> cases = {kConvCases[0], kConvCases[2], kConvCases[3], kConvCases[4],
                                 kNhwcCases[0], kNhwcCases[2]};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const ConvCase &cc : cases) {
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
      xs.insert(xs.end(), cc.in.begin(), cc.in.end());
      ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
      const Shape os = convOutShape(cc);
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng);
      Tensor b = randomTensor(t, {cc.m}, rng), r = randomTensor(t, os, rng, -2, 2);
      const Tensor xl = channelsLast(x), wl = channelsLast(w), rl = channelsLast(r);
      for (const ActCase &act : kActivations)
        for (int operands = 0; operands < 4; ++operands) {
          const bool withBias = operands & 1, withResidual = operands & 2;
          std::vector<double> ref, mag;
          refConv(cc, x, w, withBias ? &b : nullptr, withResidual ? &r : nullptr, act, ref, mag);
          const std::string what = std::string("conv ") + dtypeName(t) + " " + act.name +
                                   (withBias ? " +bias" : "") + (withResidual ? " +residual" : "") +
                                   " " + convCaseName(cc);
          for (const char *layout : {"NCHW", "NHWC"}) {
            const bool nhwc = layout[1] == 'H';
            Tensor y(t, nhwc ? rl.shape() : os);
            std::vector<const Tensor *> ins{nhwc ? &xl : &x, nhwc ? &wl : &w,
                                            withBias ? &b : nullptr};
            if (withResidual || operands == 0) // operands == 0: explicit nullptr residual
              ins.push_back(withResidual ? (nhwc ? &rl : &r) : nullptr);
            RUN_OK("conv", convAttrs(cc, layout, act), ins, y);
            expectClose(nhwc ? channelsFirst(y) : y, ref, fusedTol(t, ref, mag),
                        what + " " + layout);
          }
        }
    }
  }
}

// An absent or empty layout attribute is NCHW: the three give the same bits.
TEST(KernelConvEpilogue, AbsentLayoutIsNchw) {
  std::mt19937 rng(107);
  const ConvCase &cc = kConvCases[0];
  Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
  xs.insert(xs.end(), cc.in.begin(), cc.in.end());
  ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
  Tensor x = randomTensor(DType::F32, xs, rng), w = randomTensor(DType::F32, ws, rng);
  Tensor y0(DType::F32, convOutShape(cc)), y1 = y0, y2 = y0;
  RUN_OK("conv", convAttrs(cc, "NCHW", kActivations[1]), {&x, &w}, y0);
  RUN_OK("conv", convAttrs(cc, "", kActivations[1]), {&x, &w}, y1);
  RUN_OK("conv", convAttrs(cc, nullptr, kActivations[1]), {&x, &w}, y2);
  EXPECT_EQ(y0.bytes, y1.bytes);
  EXPECT_EQ(y0.bytes, y2.bytes);
}

TEST(KernelConvEpilogue, BadAttributesAndOperandsReturnErrors) {
  Tensor x(DType::F32, {1, 4, 5, 5}), w(DType::F32, {6, 4, 3, 3}), y(DType::F32, {1, 6, 3, 3});
  Tensor res(DType::F32, {1, 6, 3, 3}), badRes(DType::F32, {1, 6, 9}), bias(DType::F32, {6});
  ConvCase cc{1, 4, 6, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false};
  EXPECT_TRUE(run("conv", convAttrs(cc, "NCHW", kActivations[0]), {&x, &w, &bias, &res}, y).ok());
  KernelStatus s = run("conv", convAttrs(cc, "NCWH", kActivations[0]), {&x, &w}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("layout"), std::string::npos) << s.error;
  s = run("conv", convAttrs(cc, "NCHW", ActCase{"gelu", 0, 0}), {&x, &w}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("gelu"), std::string::npos) << s.error;
  EXPECT_FALSE(run("conv", convAttrs(cc, "NCHW", kActivations[0]), {&x, &w, &bias, &badRes}, y).ok());
  // NHWC reads channels from the last dim: these NCHW shapes do not fit.
  EXPECT_FALSE(run("conv", convAttrs(cc, "NHWC", kActivations[0]), {&x, &w}, y).ok());
}

//===----------------------------------------------------------------------===//
// gemm, matmul
//===----------------------------------------------------------------------===//

TEST(KernelGemm, TransposesAlphaBetaAndBiasBroadcast) {
  std::mt19937 rng(31);
  const int64_t M = 5, N = 7, K = 33;
  const Shape cShapes[] = {{}, {N}, {1, N}, {M, 1}, {M, N}, {1}, {1, 1}};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (int transA = 0; transA < 2; ++transA)
      for (int transB = 0; transB < 2; ++transB)
        for (int ci = -1; ci < 7; ++ci) {
          const double alpha = ci % 2 ? 0.75 : 1.0, beta = ci % 3 ? -1.25 : 1.0;
          Tensor A = randomTensor(t, transA ? Shape{K, M} : Shape{M, K}, rng);
          Tensor B = randomTensor(t, transB ? Shape{N, K} : Shape{K, N}, rng);
          Tensor C = ci >= 0 ? randomTensor(t, cShapes[ci], rng) : Tensor(t, {});
          Tensor y(t, {M, N});
          Attrs a;
          a.set("alpha", alpha);
          a.set("beta", beta);
          a.set("transA", int64_t(transA));
          a.set("transB", int64_t(transB));
          RUN_OK("gemm", a, {&A, &B, ci >= 0 ? &C : nullptr}, y);
          std::vector<double> ref(M * N), mag(M * N);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0, s = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double term = A.get(transA ? k * M + i : i * K + k) *
                                    B.get(transB ? j * K + k : k * N + j);
                acc += term;
                s += std::fabs(term);
              }
              double r = alpha * acc, sm = std::fabs(alpha) * s;
              if (ci >= 0) {
                const double c = C.get(broadcastIndex({i, j}, cShapes[ci]));
                r += beta * c;
                sm += std::fabs(beta * c);
              }
              ref[i * N + j] = r;
              mag[i * N + j] = sm;
            }
          expectClose(y, ref, accTol(t, ref, mag),
                      std::string("gemm ") + dtypeName(t) + " tA=" + std::to_string(transA) +
                          " tB=" + std::to_string(transB) + " C#" + std::to_string(ci));
        }
  }
}

// gemm's fused activation: act(alpha * op(A) op(B) + beta * C), each
// activation, shapes past one 16-wide panel and one 256-deep K block, and
// more rows than one 6-row tile.
TEST(KernelGemm, FusedActivations) {
  std::mt19937 rng(109);
  const struct {
    int64_t M, N, K;
  } sizes[] = {{5, 7, 33}, {13, 37, 300}, {1, 20, 9}};
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const auto &sz : sizes)
      for (const ActCase &act : kActivations)
        for (int variant = 0; variant < 4; ++variant) {
          const int64_t M = sz.M, N = sz.N, K = sz.K;
          const bool transA = variant & 1, transB = variant & 2, withC = variant != 3;
          const double alpha = variant == 2 ? 0.5 : 1.0, beta = variant == 1 ? -0.75 : 1.0;
          Tensor A = randomTensor(t, transA ? Shape{K, M} : Shape{M, K}, rng);
          Tensor B = randomTensor(t, transB ? Shape{N, K} : Shape{K, N}, rng);
          const Shape cs = variant == 0 ? Shape{N} : Shape{M, N};
          Tensor C = randomTensor(t, cs, rng, -2, 2);
          Tensor y(t, {M, N});
          Attrs a;
          a.set("alpha", alpha);
          a.set("beta", beta);
          a.set("transA", int64_t(transA));
          a.set("transB", int64_t(transB));
          a.set("activation", std::string(act.name));
          a.set("act_alpha", act.alpha);
          a.set("act_beta", act.beta);
          RUN_OK("gemm", a, {&A, &B, withC ? &C : nullptr}, y);
          std::vector<double> ref(M * N), mag(M * N);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0, s = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double term = A.get(transA ? k * M + i : i * K + k) *
                                    B.get(transB ? j * K + k : k * N + j);
                acc += term;
                s += std::fabs(term);
              }
              double r = alpha * acc, sm = std::fabs(alpha) * s;
              if (withC) {
                const double c = C.get(broadcastIndex({i, j}, cs));
                r += beta * c;
                sm += std::fabs(beta * c);
              }
              ref[i * N + j] = refActivation(act, r);
              mag[i * N + j] = sm;
            }
          expectClose(y, ref, fusedTol(t, ref, mag),
                      std::string("gemm ") + dtypeName(t) + " " + act.name + " M" +
                          std::to_string(M) + " N" + std::to_string(N) + " K" +
                          std::to_string(K) + " variant " + std::to_string(variant));
        }
  Tensor A(DType::F32, {2, 3}), B(DType::F32, {3, 2}), y(DType::F32, {2, 2});
  Attrs bad;
  bad.set("activation", std::string("softmax"));
  EXPECT_FALSE(run("gemm", bad, {&A, &B}, y).ok());
}

TEST(KernelMatMul, NumpySemanticsWithBatchBroadcast) {
  std::mt19937 rng(37);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 4}, {4, 5}},       {{4}, {4, 5}},          {{3, 4}, {4}},
      {{4}, {4}},             {{2, 3, 4}, {4, 5}},    {{2, 1, 3, 4}, {3, 4, 2}},
      {{5, 3, 4}, {1, 4, 6}}, {{7}, {2, 7, 3}},       {{2, 3, 9}, {9}},
      {{1, 1, 40}, {3, 40, 2}}};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const auto &[sa, sb] : cases) {
      // numpy: promote 1-D operands, broadcast batch dims, drop promoted dims.
      Shape a2 = sa.size() == 1 ? Shape{1, sa[0]} : sa;
      Shape b2 = sb.size() == 1 ? Shape{sb[0], 1} : sb;
      const int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
      Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
      Shape batch = broadcastShape(ba, bb);
      Shape os = batch;
      if (sa.size() != 1)
        os.push_back(M);
      if (sb.size() != 1)
        os.push_back(N);
      Tensor A = randomTensor(t, sa, rng), B = randomTensor(t, sb, rng);
      Tensor y(t, os);
      RUN_OK("matmul", Attrs{}, {&A, &B}, y);
      std::vector<double> ref, mag;
      for (int64_t bi = 0; bi < numel(batch); ++bi) {
        const Shape idx = unravel(bi, batch);
        const int64_t oa = broadcastIndex(idx, ba), ob = broadcastIndex(idx, bb);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0, s = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double term = A.get(oa * M * K + i * K + k) * B.get(ob * K * N + k * N + j);
              acc += term;
              s += std::fabs(term);
            }
            ref.push_back(acc);
            mag.push_back(s);
          }
      }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("matmul ") + dtypeName(t) + " " + shapeStr(sa) + "x" + shapeStr(sb));
    }
  }
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

TEST(KernelNorm, BatchNorm) {
  std::mt19937 rng(41);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const Shape &s : {Shape{2, 3, 4, 5}, Shape{3, 6}, Shape{1, 4, 3, 2, 2}}) {
      const int64_t C = s[1];
      Tensor x = randomTensor(t, s, rng, -3, 3);
      Tensor scale = randomTensor(t, {C}, rng, 0.5, 2), bias = randomTensor(t, {C}, rng);
      Tensor mean = randomTensor(t, {C}, rng), var = randomTensor(t, {C}, rng, 0.1, 2);
      Tensor y(t, s);
      Attrs a;
      a.set("epsilon", 1e-3);
      RUN_OK("batch_norm", a, {&x, &scale, &bias, &mean, &var}, y);
      const int64_t inner = numel(s) / (s[0] * C);
      std::vector<double> ref(x.size()), mag(x.size());
      for (int64_t i = 0; i < x.size(); ++i) {
        const int64_t c = (i / inner) % C;
        const double z = (x.get(i) - mean.get(c)) / std::sqrt(var.get(c) + 1e-3);
        ref[i] = z * scale.get(c) + bias.get(c);
        mag[i] = std::fabs(z * scale.get(c)) + std::fabs(bias.get(c));
      }
      std::vector<double> tol(ref.size());
      for (size_t i = 0; i < ref.size(); ++i)
        tol[i] = roundingRel(t) * std::fabs(ref[i]) + 1e-12 * mag[i] +
                 (t == DType::F16 ? std::ldexp(1.0, -25) : 0);
      expectClose(y, ref, tol, std::string("batch_norm ") + dtypeName(t) + shapeStr(s));
    }
  }
}

// Mean and population variance of v[begin + i*stride], i < n, in double.
void moments(const Tensor &x, const std::vector<int64_t> &index, double &mean, double &var) {
  mean = 0;
  for (int64_t i : index)
    mean += x.get(i);
  mean /= index.size();
  var = 0;
  for (int64_t i : index)
    var += (x.get(i) - mean) * (x.get(i) - mean);
  var /= index.size();
}

TEST(KernelNorm, InstanceNorm) {
  std::mt19937 rng(43);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const Shape &s : {Shape{2, 3, 4, 5}, Shape{1, 2, 7}, Shape{2, 2, 3, 2, 3}}) {
      const int64_t C = s[1], inner = numel(s) / (s[0] * s[1]);
      Tensor x = randomTensor(t, s, rng, -2, 5);
      Tensor scale = randomTensor(t, {C}, rng, 0.5, 2), bias = randomTensor(t, {C}, rng);
      Tensor y(t, s);
      Attrs a;
      a.set("epsilon", 1e-5);
      RUN_OK("instance_norm", a, {&x, &scale, &bias}, y);
      std::vector<double> ref(x.size()), tol(x.size());
      for (int64_t nc = 0; nc < s[0] * C; ++nc) {
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < inner; ++i)
          idx.push_back(nc * inner + i);
        double mean, var;
        moments(x, idx, mean, var);
        for (int64_t i : idx) {
          ref[i] = (x.get(i) - mean) / std::sqrt(var + 1e-5) * scale.get(nc % C) + bias.get(nc % C);
          tol[i] = roundingRel(t) * std::fabs(ref[i]) + 1e-10 +
                   (t == DType::F16 ? std::ldexp(1.0, -25) : 0);
        }
      }
      expectClose(y, ref, tol, std::string("instance_norm ") + dtypeName(t) + shapeStr(s));
    }
  }
}

TEST(KernelNorm, LayerNorm) {
  std::mt19937 rng(47);
  struct Case {
    Shape x;
    int64_t axis;
    Shape scale;
    bool bias;
  } cases[] = {{{4, 6}, 1, {6}, true},        {{2, 3, 5}, -1, {5}, true},
               {{2, 3, 5}, 1, {3, 5}, false}, {{2, 3, 4, 2}, 2, {1, 2}, true},
               {{3, 4}, 0, {3, 4}, true},     {{2, 3, 5}, 1, {3, 1}, true}};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const Case &c : cases) {
      const int64_t rank = c.x.size(), axis = c.axis < 0 ? c.axis + rank : c.axis;
      const Shape norm(c.x.begin() + axis, c.x.end());
      const int64_t inner = numel(norm), outer = numel(c.x) / inner;
      Tensor x = randomTensor(t, c.x, rng, -3, 4);
      Tensor scale = randomTensor(t, c.scale, rng, 0.5, 2), bias = randomTensor(t, c.scale, rng);
      Tensor y(t, c.x);
      Attrs a;
      a.set("axis", c.axis);
      a.set("epsilon", 1e-4);
      RUN_OK("layer_norm", a, {&x, &scale, c.bias ? &bias : nullptr}, y);
      std::vector<double> ref(x.size()), tol(x.size());
      for (int64_t r = 0; r < outer; ++r) {
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < inner; ++i)
          idx.push_back(r * inner + i);
        double mean, var;
        moments(x, idx, mean, var);
        for (int64_t i = 0; i < inner; ++i) {
          const Shape ni = unravel(i, norm);
          const int64_t si = broadcastIndex(ni, c.scale);
          const int64_t e = r * inner + i;
          ref[e] = (x.get(e) - mean) / std::sqrt(var + 1e-4) * scale.get(si) +
                   (c.bias ? bias.get(si) : 0);
          tol[e] = roundingRel(t) * std::fabs(ref[e]) + 1e-10 +
                   (t == DType::F16 ? std::ldexp(1.0, -25) : 0);
        }
      }
      expectClose(y, ref, tol, std::string("layer_norm ") + dtypeName(t) + shapeStr(c.x));
    }
  }
}

TEST(KernelNorm, Lrn) {
  std::mt19937 rng(53);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (int64_t size : {1, 2, 3, 4, 5}) {
      const Shape s{2, 7, 3, 2};
      Tensor x = randomTensor(t, s, rng, -3, 3);
      Tensor y(t, s);
      Attrs a;
      a.set("size", size);
      a.set("alpha", 0.02);
      a.set("beta", 0.75);
      a.set("bias", 1.5);
      RUN_OK("lrn", a, {&x}, y);
      std::vector<double> ref(x.size());
      for (int64_t i = 0; i < x.size(); ++i) {
        Shape idx = unravel(i, s);
        const int64_t c = idx[1];
        double sq = 0;
        for (int64_t cc = c - (size - 1) / 2; cc <= c + (size - 1 + 1) / 2; ++cc) {
          if (cc < 0 || cc >= s[1])
            continue;
          Shape j = idx;
          j[1] = cc;
          sq += x.get(ravel(j, s)) * x.get(ravel(j, s));
        }
        ref[i] = x.get(i) / std::pow(1.5 + 0.02 / size * sq, 0.75);
      }
      expectClose(y, ref, relTol(ref, roundingRel(t), t == DType::F16 ? std::ldexp(1.0, -25) : 1e-12),
                  std::string("lrn ") + dtypeName(t) + " size " + std::to_string(size));
    }
  }
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

struct PoolCase {
  Shape in, kernel, strides, pads, dilations;
  bool ceil;
};

const PoolCase kPoolCases[] = {
    {{5, 5}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
    {{4, 4}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true}, // ONNX averagepool_2d_ceil
    {{7, 6}, {3, 2}, {2, 2}, {1, 0, 1, 1}, {1, 1}, true},
    {{6, 7}, {2, 3}, {3, 2}, {1, 1, 0, 1}, {2, 1}, true},
    {{9}, {4}, {3}, {2, 1}, {1}, true},
    {{5, 4, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0, 0, 1, 1}, {1, 1, 2}, true},
    {{5, 5}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {1, 1}, false}, // averagepool_2d_pads
    {{3, 3}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}, // global
};

Shape poolOutShape(const PoolCase &p) {
  const size_t ns = p.in.size();
  Shape out;
  for (size_t d = 0; d < ns; ++d) {
    const int64_t span = (p.kernel[d] - 1) * p.dilations[d] + 1;
    const int64_t padded = p.in[d] + p.pads[d] + p.pads[ns + d];
    int64_t o = p.ceil ? (padded - span + p.strides[d] - 1) / p.strides[d] + 1
                       : (padded - span) / p.strides[d] + 1;
    // ONNX: the last window must start inside the input or the begin padding.
    if (p.ceil && (o - 1) * p.strides[d] >= p.in[d] + p.pads[d])
      --o;
    out.push_back(o);
  }
  return out;
}

// Pool reference per ONNX: taps at o*s - pb + k*d; a tap inside the input is
// a real element, inside [-pb, in + pe) but outside the input is padding
// (counted by count_include_pad=1), beyond that it does not exist.
void refPool(const PoolCase &p, const Tensor &x, const Shape &xs, const Shape &os, bool isMax,
             bool includePad, std::vector<double> &ref) {
  const size_t ns = p.in.size();
  ref.assign(numel(os), 0);
  for (int64_t i = 0; i < numel(os); ++i) {
    const Shape oi = unravel(i, os);
    double best = -INFINITY, sum = 0;
    int64_t real = 0, padded = 0;
    for (int64_t kp = 0; kp < numel(p.kernel); ++kp) {
      const Shape k = unravel(kp, p.kernel);
      Shape xi{oi[0], oi[1]};
      bool inInput = true, inPadded = true;
      for (size_t d = 0; d < ns; ++d) {
        const int64_t pos = oi[2 + d] * p.strides[d] - p.pads[d] + k[d] * p.dilations[d];
        inInput = inInput && pos >= 0 && pos < p.in[d];
        inPadded = inPadded && pos >= -p.pads[d] && pos < p.in[d] + p.pads[ns + d];
        xi.push_back(pos);
      }
      padded += inPadded;
      if (!inInput)
        continue;
      const double v = x.get(ravel(xi, xs));
      best = std::max(best, v);
      sum += v;
      ++real;
    }
    ref[i] = isMax ? best : sum / (includePad ? padded : real);
  }
}

TEST(KernelPool, MaxPool) {
  std::mt19937 rng(59);
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I8, DType::U8}) {
    int index = 0;
    for (const PoolCase &p : kPoolCases) {
      Shape xs{2, 3}, os{2, 3};
      xs.insert(xs.end(), p.in.begin(), p.in.end());
      const Shape osp = poolOutShape(p);
      os.insert(os.end(), osp.begin(), osp.end());
      Tensor x = randomTensor(t, xs, rng, t == DType::U8 ? 0 : -100, 100);
      Tensor y(t, os);
      Attrs a;
      a.set("kernel_shape", p.kernel);
      a.set("strides", p.strides);
      a.set("pads", p.pads);
      a.set("dilations", p.dilations);
      RUN_OK("max_pool", a, {&x}, y);
      std::vector<double> ref;
      refPool(p, x, xs, os, true, false, ref);
      expectClose(y, ref, std::vector<double>(ref.size(), 0.0),
                  std::string("max_pool ") + dtypeName(t) + " case " + std::to_string(index++));
    }
  }
}

TEST(KernelPool, AvgPool) {
  std::mt19937 rng(61);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (int includePad = 0; includePad < 2; ++includePad) {
      int index = 0;
      for (const PoolCase &p : kPoolCases) {
        Shape xs{2, 3}, os{2, 3};
        xs.insert(xs.end(), p.in.begin(), p.in.end());
        const Shape osp = poolOutShape(p);
        os.insert(os.end(), osp.begin(), osp.end());
        Tensor x = randomTensor(t, xs, rng, -2, 3);
        Tensor y(t, os);
        Attrs a;
        a.set("kernel_shape", p.kernel);
        a.set("strides", p.strides);
        a.set("pads", p.pads);
        a.set("dilations", p.dilations);
        a.set("count_include_pad", int64_t(includePad));
        RUN_OK("avg_pool", a, {&x}, y);
        std::vector<double> ref;
        refPool(p, x, xs, os, false, includePad, ref);
        // Accumulated in double: one rounding. Cancellation bound: the mean of
        // values of magnitude <= 3.
        expectClose(y, ref, relTol(ref, roundingRel(t), roundingRel(t) * 1e-3),
                    std::string("avg_pool ") + dtypeName(t) + " include_pad=" +
                        std::to_string(includePad) + " case " + std::to_string(index++));
      }
    }
  }
}

// NHWC pools are the NCHW pools on transposed data: the same windows, the
// same tap order and the same arithmetic, so the results agree bit for bit
// (the NCHW kernels are checked against the reference above).
TEST(KernelPool, NhwcMatchesNchwOnTransposedData) {
  std::mt19937 rng(113);
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I8, DType::U8, DType::I32}) {
    for (int op = 0; op < 3; ++op) { // max_pool, avg_pool, avg_pool count_include_pad
      if (op > 0 && (t != DType::F32 && t != DType::F16 && t != DType::F64))
        continue;
      int index = 0;
      for (const PoolCase &p : kPoolCases) {
        Shape xs{2, 5}, os{2, 5};
        xs.insert(xs.end(), p.in.begin(), p.in.end());
        const Shape osp = poolOutShape(p);
        os.insert(os.end(), osp.begin(), osp.end());
        Tensor x = randomTensor(t, xs, rng, t == DType::U8 ? 0 : -100, 100);
        Tensor y(t, os);
        Attrs a;
        a.set("kernel_shape", p.kernel);
        a.set("strides", p.strides);
        a.set("pads", p.pads);
        a.set("dilations", p.dilations);
        if (op > 0)
          a.set("count_include_pad", int64_t(op == 2));
        const char *name = op == 0 ? "max_pool" : "avg_pool";
        RUN_OK(name, a, {&x}, y); // no layout attribute: NCHW
        Attrs nhwc = a;
        nhwc.set("layout", std::string("NHWC"));
        const Tensor xl = channelsLast(x);
        Tensor yl(t, channelsLast(y).shape());
        RUN_OK(name, nhwc, {&xl}, yl);
        const Tensor back = channelsFirst(yl);
        EXPECT_EQ(back.bytes, y.bytes) << name << " " << op << " " << dtypeName(t) << " case "
                                       << index;
        Attrs nchw = a;
        nchw.set("layout", std::string("NCHW"));
        Tensor y2(t, os);
        RUN_OK(name, nchw, {&x}, y2);
        EXPECT_EQ(y2.bytes, y.bytes) << name << " explicit NCHW case " << index;
        ++index;
      }
    }
  }
  Tensor x(DType::F32, {1, 2, 4, 4}), y(DType::F32, {1, 2, 2, 2});
  Attrs bad;
  bad.set("kernel_shape", Shape{2, 2});
  bad.set("strides", Shape{2, 2});
  bad.set("layout", std::string("CHWN"));
  EXPECT_FALSE(run("max_pool", bad, {&x}, y).ok());
  bad.set("layout", std::string("NHWC")); // channels (last dim) 4 vs result's 2
  EXPECT_FALSE(run("avg_pool", bad, {&x}, y).ok());
}

TEST(KernelPool, OnnxAveragePoolCeilExample) {
  // test_averagepool_2d_ceil: 1..16 in 4x4, kernel 3, stride 2, ceil_mode.
  Tensor x(DType::F32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i)
    x.set(i, i + 1);
  Tensor y(DType::F32, {1, 1, 2, 2});
  Attrs a;
  a.set("kernel_shape", Shape{3, 3});
  a.set("strides", Shape{2, 2});
  a.set("pads", Shape{0, 0, 0, 0});
  a.set("dilations", Shape{1, 1});
  a.set("count_include_pad", int64_t(0));
  RUN_OK("avg_pool", a, {&x}, y);
  const double want[] = {6, 7.5, 12, 13.5};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y.get(i), want[i]);
  RUN_OK("max_pool", a, {&x}, y);
  const double wantMax[] = {11, 12, 15, 16};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y.get(i), wantMax[i]);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

double refReduce(const std::string &op, const std::vector<double> &v) {
  double r = 0;
  if (op == "reduce_sum") { for (double x : v) r += x; }
  else if (op == "reduce_mean") { for (double x : v) r += x; r /= v.size(); }
  else if (op == "reduce_max") { r = -INFINITY; for (double x : v) r = std::max(r, x); }
  else if (op == "reduce_min") { r = INFINITY; for (double x : v) r = std::min(r, x); }
  else if (op == "reduce_prod") { r = 1; for (double x : v) r *= x; }
  else if (op == "reduce_l1") { for (double x : v) r += std::fabs(x); }
  else if (op == "reduce_l2") { for (double x : v) r += x * x; r = std::sqrt(r); }
  else if (op == "reduce_log_sum") { for (double x : v) r += x; r = std::log(r); }
  else if (op == "reduce_log_sum_exp") { for (double x : v) r += std::exp(x); r = std::log(r); }
  else if (op == "reduce_sum_square") { for (double x : v) r += x * x; }
  return r;
}

const char *kReduceOps[] = {"reduce_sum", "reduce_mean", "reduce_max",     "reduce_min",
                            "reduce_prod", "reduce_l1",  "reduce_l2",      "reduce_log_sum",
                            "reduce_log_sum_exp",        "reduce_sum_square"};

struct ReduceCase {
  Shape in;
  Shape axes;
};
const ReduceCase kReduceCases[] = {
    {{2, 3, 4, 5}, {1}},    {{2, 3, 4, 5}, {0, 2}}, {{2, 3, 4, 5}, {3}},  {{2, 3, 4, 5}, {}},
    {{2, 3, 4, 5}, {1, 2, 3}}, {{7}, {0}},          {{6, 1, 4}, {1}},     {{3, 4}, {0, 1}},
    {{3, 0, 2}, {1}}, // empty reduction
};

// Runs a reduction (keepdims 0 and 1) and returns reference values in
// output order; `inputs` feeds the reference.
void reduceReference(const ReduceCase &rc, const Tensor &x, const std::string &op,
                     std::vector<double> &ref, Shape &keep, Shape &drop) {
  const size_t rank = rc.in.size();
  std::vector<bool> reduced(rank, rc.axes.empty());
  for (int64_t a : rc.axes)
    reduced[a] = true;
  keep.clear();
  drop.clear();
  Shape kept;
  for (size_t d = 0; d < rank; ++d) {
    keep.push_back(reduced[d] ? 1 : rc.in[d]);
    if (!reduced[d]) {
      drop.push_back(rc.in[d]);
      kept.push_back(rc.in[d]);
    }
  }
  std::vector<std::vector<double>> groups(numel(kept));
  for (int64_t i = 0; i < x.size(); ++i) {
    const Shape idx = unravel(i, rc.in);
    Shape k;
    for (size_t d = 0; d < rank; ++d)
      if (!reduced[d])
        k.push_back(idx[d]);
    groups[ravel(k, kept)].push_back(x.get(i));
  }
  ref.clear();
  for (const auto &g : groups)
    ref.push_back(refReduce(op, g));
}

TEST(KernelReduce, FloatReductions) {
  std::mt19937 rng(67);
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    for (const char *opName : kReduceOps) {
      const std::string op = opName;
      for (const ReduceCase &rc : kReduceCases) {
        // prod: values near 1; log_sum: positive sums.
        double lo = -3, hi = 3;
        if (op == "reduce_prod") lo = 0.7, hi = 1.3;
        if (op == "reduce_log_sum") lo = 0.1, hi = 2;
        Tensor x = randomTensor(t, rc.in, rng, lo, hi);
        std::vector<double> ref;
        Shape keep, drop;
        reduceReference(rc, x, op, ref, keep, drop);
        if (t == DType::F16)
          for (double &r : ref)
            if (std::fabs(r) >= 65520)
              r = std::copysign(INFINITY, r);
        for (int keepdims = 0; keepdims < 2; ++keepdims) {
          Tensor y(t, keepdims ? keep : drop);
          Attrs a;
          a.set("axes", rc.axes);
          a.set("keepdims", int64_t(keepdims));
          RUN_OK(op, a, {&x}, y);
          // Double accumulation then a single rounding; mean of an empty set
          // is NaN (0/0), as numpy.
          std::vector<double> tol = relTol(ref, roundingRel(t), 1e-12);
          if (op == "reduce_sum" || op == "reduce_mean" || op == "reduce_log_sum_exp")
            for (double &v : tol)
              v += 1e-9; // cancellation in sums of signed values (double)
          expectClose(y, ref, tol, op + " " + dtypeName(t) + " " + shapeStr(rc.in) + " axes " +
                                       shapeStr(rc.axes) + " keepdims " + std::to_string(keepdims));
        }
      }
    }
  }
}

TEST(KernelReduce, IntegerReductions) {
  std::mt19937 rng(71);
  for (DType t : {DType::I32, DType::I64, DType::U8, DType::I16}) {
    for (const char *opName : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                               "reduce_prod", "reduce_l1", "reduce_sum_square", "reduce_l2"}) {
      const std::string op = opName;
      for (const ReduceCase &rc : kReduceCases) {
        if (rc.in == Shape{3, 0, 2} && op == "reduce_mean")
          continue; // 0/0 has no integer value
        const bool sgn = isSignedType(t);
        Tensor x = randomTensor(t, rc.in, rng, op == "reduce_prod" ? (sgn ? -3 : 0) : (sgn ? -1000 : 0),
                                op == "reduce_prod" ? 4 : 1000);
        // Group the exact input values by result.
        const size_t rank = rc.in.size();
        std::vector<bool> reduced(rank, rc.axes.empty());
        for (int64_t ax : rc.axes)
          reduced[ax] = true;
        Shape kept, keep;
        for (size_t d = 0; d < rank; ++d) {
          keep.push_back(reduced[d] ? 1 : rc.in[d]);
          if (!reduced[d])
            kept.push_back(rc.in[d]);
        }
        std::vector<std::vector<i128>> groups(numel(kept));
        for (int64_t i = 0; i < x.size(); ++i) {
          const Shape idx = unravel(i, rc.in);
          Shape k;
          for (size_t d = 0; d < rank; ++d)
            if (!reduced[d])
              k.push_back(idx[d]);
          groups[ravel(k, kept)].push_back(x.getI(i));
        }
        Tensor y(t, keep), want(t, keep);
        Attrs a;
        a.set("axes", rc.axes);
        a.set("keepdims", int64_t(1));
        RUN_OK(op, a, {&x}, y);
        const i128 mod64 = i128(1) << 64;
        const i128 lowest = sgn ? -(i128(1) << (bitsOf(t) - 1)) : 0;
        const i128 highest = sgn ? (i128(1) << (bitsOf(t) - 1)) - 1 : (i128(1) << bitsOf(t)) - 1;
        for (size_t o = 0; o < groups.size(); ++o) {
          const auto &g = groups[o];
          i128 r = 0;
          if (op == "reduce_max") { r = lowest; for (i128 v : g) r = std::max(r, v); }
          else if (op == "reduce_min") { r = highest; for (i128 v : g) r = std::min(r, v); }
          else if (op == "reduce_prod") { r = 1; for (i128 v : g) r = (r * v) % mod64; }
          else if (op == "reduce_l1") { for (i128 v : g) r += v < 0 ? -v : v; }
          else if (op == "reduce_sum_square" || op == "reduce_l2") { for (i128 v : g) r += v * v; }
          else { for (i128 v : g) r += v; }
          if (op == "reduce_mean")
            r = static_cast<i128>(std::trunc(static_cast<double>(r) / g.size()));
          if (op == "reduce_l2")
            r = static_cast<i128>(std::sqrt(static_cast<double>(r)));
          if (op == "reduce_l2" || op == "reduce_mean") // saturate into the dtype
            r = std::min(std::max(r, lowest), highest);
          want.setI(o, r); // sums and products wrap
          ASSERT_TRUE(y.getI(o) == want.getI(o))
              << op << " " << dtypeName(t) << " " << shapeStr(rc.in) << " axes "
              << shapeStr(rc.axes) << " at " << o << ": got " << (long long)y.getI(o)
              << " want " << (long long)want.getI(o);
        }
      }
    }
  }
}

TEST(KernelReduce, LogSumExpIsStable) {
  Tensor x(DType::F32, {2, 3});
  const float v[] = {1000, 1001, 1002, -1000, -1001, -1002};
  std::memcpy(x.as<float>(), v, sizeof v);
  Tensor y(DType::F32, {2});
  Attrs a;
  a.set("axes", Shape{1});
  a.set("keepdims", int64_t(0));
  RUN_OK("reduce_log_sum_exp", a, {&x}, y);
  const double l = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  EXPECT_NEAR(y.get(0), 1002 + l, 1e-3);
  EXPECT_NEAR(y.get(1), -1000 + l, 1e-3);
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax, argmax, argmin
//===----------------------------------------------------------------------===//

TEST(KernelSoftmax, SoftmaxAndLogSoftmax) {
  std::mt19937 rng(73);
  const std::pair<Shape, int64_t> cases[] = {{{2, 3, 4}, 2}, {{2, 3, 4}, 1}, {{2, 3, 4}, 0},
                                             {{2, 3, 4}, -1}, {{5, 17}, -2}, {{10}, 0}};
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    for (bool isLog : {false, true}) {
      for (const auto &[s, axisAttr] : cases) {
        for (double offset : {0.0, 1000.0}) { // large values: stability
          Tensor x = randomTensor(t, s, rng, -5, 5);
          if (t != DType::F16)
            for (int64_t i = 0; i < x.size(); ++i)
              x.set(i, x.get(i) + offset);
          Tensor y(t, s);
          Attrs a;
          a.set("axis", axisAttr);
          const char *op = isLog ? "log_softmax" : "softmax";
          RUN_OK(op, a, {&x}, y);
          const int64_t axis = axisAttr < 0 ? axisAttr + s.size() : axisAttr;
          std::vector<double> ref(x.size()), tol(x.size());
          for (int64_t i = 0; i < x.size(); ++i) {
            const Shape idx = unravel(i, s);
            // Reference in long double without max subtraction where safe.
            long double m = -INFINITY;
            for (int64_t k = 0; k < s[axis]; ++k) {
              Shape j = idx;
              j[axis] = k;
              m = std::max<long double>(m, x.get(ravel(j, s)));
            }
            long double sum = 0;
            for (int64_t k = 0; k < s[axis]; ++k) {
              Shape j = idx;
              j[axis] = k;
              sum += std::exp(static_cast<long double>(x.get(ravel(j, s))) - m);
            }
            const long double xv = x.get(i);
            ref[i] = isLog ? static_cast<double>(xv - m - std::log(sum))
                           : static_cast<double>(std::exp(xv - m) / sum);
            // log_softmax: cancellation in x - max (magnitude |x|).
            tol[i] = roundingRel(t) * (std::fabs(ref[i]) + (isLog ? 1e-6 * std::fabs(xv) : 0)) +
                     (t == DType::F16 ? std::ldexp(1.0, -25) : 1e-15);
          }
          expectClose(y, ref, tol, std::string(op) + " " + dtypeName(t) + " " + shapeStr(s) +
                                       " axis " + std::to_string(axisAttr) + " offset " +
                                       std::to_string(offset));
        }
      }
    }
  }
}

TEST(KernelCumSum, RunningSumsInEveryDirection) {
  std::mt19937 rng(83);
  const std::pair<Shape, int64_t> cases[] = {{{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, -1},
                                             {{7}, 0}, {{2, 1, 3}, 1}};
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (int exclusive = 0; exclusive < 2; ++exclusive)
      for (int reverse = 0; reverse < 2; ++reverse)
        for (const auto &[s, axisAttr] : cases) {
          // Small integers: every sum is exact, in any order and type.
          Tensor x = randomTensor(t, s, rng, -8, 8);
          if (!isIntType(t))
            for (int64_t i = 0; i < x.size(); ++i)
              x.set(i, std::floor(x.get(i)));
          const int64_t axis = axisAttr < 0 ? axisAttr + s.size() : axisAttr;
          Tensor y(t, s);
          Attrs a;
          a.set("axis", axisAttr);
          a.set("exclusive", int64_t(exclusive));
          a.set("reverse", int64_t(reverse));
          RUN_OK("cumsum", a, {&x}, y);
          for (int64_t e = 0; e < numel(s); ++e) {
            Shape idx = unravel(e, s);
            const int64_t at = idx[axis];
            double expected = 0;
            for (int64_t k = 0; k < s[axis]; ++k) {
              const bool counted = reverse ? (exclusive ? k > at : k >= at)
                                           : (exclusive ? k < at : k <= at);
              idx[axis] = k;
              if (counted)
                expected += x.get(ravel(idx, s));
            }
            ASSERT_EQ(y.get(e), expected) << dtypeName(t) << " exclusive " << exclusive
                                          << " reverse " << reverse << " element " << e;
          }
        }
  Tensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3});
  Attrs a;
  a.set("axis", int64_t(2));
  EXPECT_EQ(run("cumsum", a, {&x}, y).error, "cumsum: axis out of range");
}

TEST(KernelArg, ArgMaxArgMinWithTies) {
  std::mt19937 rng(79);
  const std::pair<Shape, int64_t> cases[] = {
      {{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, 2}, {{3, 4, 5}, -1}, {{9}, 0}, {{2, 1, 3}, 1}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::I32, DType::I64, DType::U8, DType::I8}) {
    for (bool isMax : {true, false})
      for (int last = 0; last < 2; ++last)
        for (int keepdims = 0; keepdims < 2; ++keepdims)
          for (const auto &[s, axisAttr] : cases) {
            // Few distinct values: plenty of ties.
            Tensor x = randomTensor(t, s, rng, 0, 4);
            if (!isIntType(t))
              for (int64_t i = 0; i < x.size(); ++i)
                x.set(i, std::floor(x.get(i)));
            const int64_t axis = axisAttr < 0 ? axisAttr + s.size() : axisAttr;
            Shape os;
            for (size_t d = 0; d < s.size(); ++d)
              if (static_cast<int64_t>(d) != axis)
                os.push_back(s[d]);
              else if (keepdims)
                os.push_back(1);
            Tensor y(DType::I64, os);
            Attrs a;
            a.set("axis", axisAttr);
            a.set("keepdims", int64_t(keepdims));
            a.set("select_last_index", int64_t(last));
            RUN_OK(isMax ? "argmax" : "argmin", a, {&x}, y);
            Shape rs = s;
            rs[axis] = 1;
            for (int64_t o = 0; o < numel(rs); ++o) {
              Shape idx = unravel(o, rs);
              double best = 0;
              int64_t bestK = -1;
              for (int64_t k = 0; k < s[axis]; ++k) {
                idx[axis] = k;
                const double v = x.get(ravel(idx, s));
                const bool better = bestK < 0 || (isMax ? v > best : v < best) ||
                                    (last && v == best);
                if (better) {
                  best = v;
                  bestK = k;
                }
              }
              ASSERT_EQ(y.as<int64_t>()[o], bestK)
                  << (isMax ? "argmax " : "argmin ") << dtypeName(t) << shapeStr(s) << " axis "
                  << axisAttr << " last " << last << " at " << o;
            }
          }
  }
}

//===----------------------------------------------------------------------===//
// f16 coverage: every kernel that takes float data runs on f16
//===----------------------------------------------------------------------===//

// At --precision fp16, f16 is the storage type of activations and weights,
// and the precision policy may leave any op in f16. Every CPU kernel follows
// "f16 storage, f32 (or f64) math, one rounding": on inputs that are f16
// values, the f16 kernel must give exactly the f32 kernel's result rounded to
// half (each f32 kernel is checked against float64 elsewhere in this file).
// The table covers every registered kernel except the bool-only ones; a new
// kernel must be added here (the test checks the registry against it).
struct F16Case {
  std::string op;
  Attrs attrs;
  // Per input: shape and kind: 'f' float in [-2, 2), 'p' positive float in
  // [0.25, 2), 'b' bool, 'i' i64 indices in [0, 3).
  std::vector<std::pair<Shape, char>> inputs;
  Shape out;
  char outKind = 'f'; // 'f' float, 'b' bool, 'i' i64
};

Attrs makeAttrs(std::initializer_list<std::pair<const char *, AttrValue>> values) {
  Attrs a;
  for (const auto &[name, value] : values)
    a.set(name, value);
  return a;
}

std::vector<F16Case> f16Cases() {
  using V = std::vector<int64_t>;
  const Shape s{2, 3, 4, 5};
  std::vector<F16Case> cases;
  for (const char *op :
       {"relu", "sigmoid", "tanh", "abs", "neg", "exp", "floor", "ceil", "round", "sign", "erf",
        "sin", "cos", "tan", "atan", "sinh", "cosh", "asinh", "softplus", "softsign",
        "hard_swish", "identity", "copy"})
    cases.push_back({op, {}, {{s, 'f'}}, s});
  for (const char *op : {"log", "sqrt", "reciprocal"})
    cases.push_back({op, {}, {{s, 'p'}}, s});
  cases.push_back({"asin", {}, {{s, 'f'}}, s}); // NaN outside [-1, 1] on both sides
  cases.push_back({"acos", {}, {{s, 'f'}}, s});
  cases.push_back({"atanh", {}, {{s, 'f'}}, s});
  cases.push_back({"acosh", {}, {{s, 'p'}}, s});
  cases.push_back({"leaky_relu", makeAttrs({{"alpha", 0.1}}), {{s, 'f'}}, s});
  cases.push_back({"elu", makeAttrs({{"alpha", 1.0}}), {{s, 'f'}}, s});
  cases.push_back({"celu", makeAttrs({{"alpha", 0.7}}), {{s, 'f'}}, s});
  cases.push_back({"selu", makeAttrs({{"alpha", 1.67}, {"gamma", 1.05}}), {{s, 'f'}}, s});
  cases.push_back({"thresholded_relu", makeAttrs({{"alpha", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"hard_sigmoid", makeAttrs({{"alpha", 0.2}, {"beta", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"shrink", makeAttrs({{"bias", 0.1}, {"lambd", 0.5}}), {{s, 'f'}}, s});
  cases.push_back({"clip", makeAttrs({{"min", -0.3}, {"max", 0.7001}}), {{s, 'f'}}, s});
  for (const char *op : {"add", "sub", "mul", "div", "max", "min", "prelu"})
    cases.push_back({op, {}, {{s, 'f'}, {Shape{3, 1, 5}, 'f'}}, s});
  cases.push_back({"pow", {}, {{s, 'p'}, {Shape{5}, 'f'}}, s});
  cases.push_back({"mod", makeAttrs({{"fmod", int64_t(1)}}), {{s, 'f'}, {Shape{3, 1, 5}, 'p'}}, s});
  for (const char *op : {"equal", "less", "less_equal", "greater", "greater_equal"})
    cases.push_back({op, {}, {{s, 'f'}, {Shape{4, 1}, 'f'}}, s, 'b'});
  cases.push_back({"where", {}, {{Shape{3, 1, 5}, 'b'}, {s, 'f'}, {Shape{5}, 'f'}}, s});
  // conv in both layouts with its epilogue; conv_transpose; gemm; matmul.
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{1, 2}}, {"pads", V{1, 0, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(1)}, {"activation", std::string("relu")}}),
                   {{Shape{1, 6, 7, 8}, 'f'}, {Shape{20, 6, 3, 3}, 'f'}, {Shape{20}, 'f'},
                    {Shape{1, 20, 7, 4}, 'f'}},
                   Shape{1, 20, 7, 4}});
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{1, 1}}, {"pads", V{1, 1, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(2)}, {"layout", std::string("NHWC")},
                              {"activation", std::string("hard_swish")}}),
                   {{Shape{1, 7, 8, 6}, 'f'}, {Shape{20, 3, 3, 3}, 'f'}, {Shape{20}, 'f'},
                    {Shape{1, 7, 8, 20}, 'f'}},
                   Shape{1, 7, 8, 20}});
  cases.push_back({"conv",
                   makeAttrs({{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(6)}, {"layout", std::string("NHWC")},
                              {"activation", std::string("clip")}, {"alpha", 0.0}, {"beta", 6.0}}),
                   {{Shape{1, 7, 8, 6}, 'f'}, {Shape{6, 3, 3, 1}, 'f'}},
                   Shape{1, 4, 4, 6}});
  cases.push_back({"conv_transpose",
                   makeAttrs({{"strides", V{2, 1}}, {"pads", V{0, 1, 0, 1}}, {"dilations", V{1, 1}},
                              {"group", int64_t(1)}}),
                   {{Shape{1, 4, 3, 5}, 'f'}, {Shape{4, 3, 3, 3}, 'f'}, {Shape{3}, 'f'}},
                   Shape{1, 3, 7, 5}});
  cases.push_back({"gemm",
                   makeAttrs({{"alpha", 0.5}, {"beta", 1.0}, {"transA", int64_t(0)},
                              {"transB", int64_t(1)}, {"activation", std::string("tanh")}}),
                   {{Shape{7, 30}, 'f'}, {Shape{19, 30}, 'f'}, {Shape{19}, 'f'}},
                   Shape{7, 19}});
  cases.push_back({"matmul", {}, {{Shape{2, 5, 9}, 'f'}, {Shape{9, 17}, 'f'}}, Shape{2, 5, 17}});
  // Norms.
  cases.push_back({"batch_norm", makeAttrs({{"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'p'}},
                   s});
  cases.push_back({"instance_norm", makeAttrs({{"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{3}, 'f'}, {Shape{3}, 'f'}}, s});
  cases.push_back({"layer_norm", makeAttrs({{"axis", int64_t(2)}, {"epsilon", 1e-5}}),
                   {{s, 'f'}, {Shape{4, 5}, 'f'}, {Shape{5}, 'f'}}, s});
  cases.push_back({"lrn",
                   makeAttrs({{"size", int64_t(3)}, {"alpha", 1e-2}, {"beta", 0.75}, {"bias", 1.0}}),
                   {{s, 'f'}}, s});
  // Pools in both layouts.
  for (const char *op : {"max_pool", "avg_pool"}) {
    Attrs a = makeAttrs({{"kernel_shape", V{3, 2}}, {"strides", V{2, 1}}, {"pads", V{1, 0, 1, 1}},
                         {"dilations", V{1, 1}}, {"count_include_pad", int64_t(1)}});
    cases.push_back({op, a, {{s, 'f'}}, Shape{2, 3, 2, 5}});
    a.set("layout", std::string("NHWC"));
    cases.push_back({op, a, {{Shape{2, 4, 5, 3}, 'f'}}, Shape{2, 2, 5, 3}});
  }
  // Reductions, softmax, arg*.
  const Attrs axes = makeAttrs({{"axes", V{1, 3}}, {"keepdims", int64_t(1)}});
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                         "reduce_l1", "reduce_l2", "reduce_log_sum_exp", "reduce_sum_square"})
    cases.push_back({op, axes, {{s, 'f'}}, Shape{2, 1, 4, 1}});
  cases.push_back({"reduce_log_sum", axes, {{s, 'p'}}, Shape{2, 1, 4, 1}});
  cases.push_back({"softmax", makeAttrs({{"axis", int64_t(1)}}), {{s, 'f'}}, s});
  cases.push_back({"log_softmax", makeAttrs({{"axis", int64_t(3)}}), {{s, 'f'}}, s});
  for (const char *op : {"argmax", "argmin"})
    cases.push_back({op,
                     makeAttrs({{"axis", int64_t(2)}, {"keepdims", int64_t(0)},
                                {"select_last_index", int64_t(0)}}),
                     {{s, 'f'}}, Shape{2, 3, 5}, 'i'});
  // Data movement (bytewise, and pad's fill value converted to half).
  cases.push_back({"reshape", {}, {{s, 'f'}}, Shape{6, 20}});
  cases.push_back({"transpose", makeAttrs({{"perm", V{0, 2, 3, 1}}}), {{s, 'f'}}, Shape{2, 4, 5, 3}});
  cases.push_back({"slice", makeAttrs({{"starts", V{0, 1, 3, 0}}, {"steps", V{1, 1, -1, 2}}}),
                   {{s, 'f'}}, Shape{2, 2, 4, 3}});
  cases.push_back({"concat", makeAttrs({{"axis", int64_t(1)}}),
                   {{s, 'f'}, {Shape{2, 2, 4, 5}, 'f'}}, Shape{2, 5, 4, 5}});
  cases.push_back({"pad",
                   makeAttrs({{"pads", V{0, 1, 0, 2, 0, 0, 1, 0}}, {"mode", std::string("constant")},
                              {"value", 0.3}}),
                   {{s, 'f'}}, Shape{2, 4, 5, 7}});
  cases.push_back({"im2row",
                   makeAttrs({{"kernel", int64_t(3)}, {"stride", int64_t(2)},
                              {"dilation", int64_t(1)}, {"pad", int64_t(1)}}),
                   {{s, 'f'}}, Shape{2, 3, 2, 16}});
  cases.push_back({"trilu", makeAttrs({{"k", int64_t(-1)}, {"upper", int64_t(0)}}), {{s, 'f'}}, s});
  cases.push_back({"cumsum", makeAttrs({{"axis", int64_t(1)}, {"reverse", int64_t(1)}}),
                   {{s, 'f'}}, s});
  cases.push_back({"gather_elements", makeAttrs({{"axis", int64_t(2)}}),
                   {{s, 'f'}, {Shape{2, 3, 6, 5}, 'i'}}, Shape{2, 3, 6, 5}});
  cases.push_back({"gather", makeAttrs({{"axis", int64_t(1)}}), {{s, 'f'}, {Shape{4}, 'i'}},
                   Shape{2, 4, 4, 5}});
  cases.push_back({"expand", {}, {{Shape{3, 1, 5}, 'f'}}, s});
  cases.push_back({"tile", {}, {{Shape{1, 3, 2, 5}, 'f'}}, Shape{2, 3, 4, 5}});
  return cases;
}

TEST(KernelF16, EveryFloatKernelIsItsF32KernelRoundedOnce) {
  std::mt19937 rng(127);
  std::set<std::string> covered;
  for (const F16Case &c : f16Cases()) {
    covered.insert(c.op);
    std::vector<Tensor> in16, in32;
    for (const auto &[shape, kind] : c.inputs) {
      if (kind == 'f' || kind == 'p') {
        Tensor h = kind == 'f' ? randomTensor(DType::F16, shape, rng, -2, 2)
                               : randomTensor(DType::F16, shape, rng, 0.25, 2);
        Tensor f(DType::F32, shape);
        for (int64_t i = 0; i < h.size(); ++i)
          f.set(i, h.get(i)); // exact: every half is a float
        in16.push_back(h);
        in32.push_back(f);
      } else {
        Tensor t = kind == 'b' ? randomTensor(DType::Bool, shape, rng, 0, 2)
                               : randomTensor(DType::I64, shape, rng, 0, 3);
        in16.push_back(t);
        in32.push_back(t);
      }
    }
    const DType outType = c.outKind == 'b' ? DType::Bool : c.outKind == 'i' ? DType::I64 : DType::F16;
    Tensor y16(outType, c.out), y32(c.outKind == 'f' ? DType::F32 : outType, c.out);
    std::vector<const Tensor *> p16, p32;
    for (size_t i = 0; i < in16.size(); ++i) {
      p16.push_back(&in16[i]);
      p32.push_back(&in32[i]);
    }
    const KernelStatus s16 = run(c.op, c.attrs, p16, y16);
    ASSERT_TRUE(s16.ok()) << c.op << " f16: " << s16.error;
    RUN_OK(c.op, c.attrs, p32, y32);
    int failures = 0;
    for (int64_t i = 0; i < y16.size(); ++i) {
      bool same;
      if (c.outKind == 'f') {
        const uint16_t want = refDoubleToHalf(y32.get(i)), got = y16.as<uint16_t>()[i];
        same = got == want || (std::isnan(y32.get(i)) && std::isnan(y16.get(i)));
        if (!same && ++failures <= 3)
          ADD_FAILURE() << c.op << " element " << i << ": f16 " << y16.get(i) << ", f32 "
                        << y32.get(i) << " rounds to " << refHalfToDouble(want);
      } else {
        same = y16.getI(i) == y32.getI(i);
        if (!same && ++failures <= 3)
          ADD_FAILURE() << c.op << " element " << i;
      }
    }
    EXPECT_EQ(failures, 0) << c.op;
  }
  // cast f16 <-> f32: exact widening, and one correct rounding.
  Tensor h = randomTensor(DType::F16, {64}, rng, -70000, 70000), f(DType::F32, {64});
  RUN_OK("cast", Attrs{}, {&h}, f);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(f.get(i), h.get(i));
  Tensor g = randomTensor(DType::F32, {64}, rng, -70000, 70000), gh(DType::F16, {64});
  RUN_OK("cast", Attrs{}, {&g}, gh);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(gh.as<uint16_t>()[i], refDoubleToHalf(g.get(i)));
  covered.insert("cast");
  // The bool-only kernels have no f16 form; every other kernel is covered.
  for (const std::string &name : kernelNames())
    if (name != "and" && name != "or" && name != "xor" && name != "not")
      EXPECT_TRUE(covered.count(name)) << name << " has no f16 case";
}

//===----------------------------------------------------------------------===//
// Errors: unsupported dtypes and bad operands are reported, never crash
//===----------------------------------------------------------------------===//

TEST(KernelErrors, UnsupportedDtypesReturnErrors) {
  Tensor b(DType::Bool, {4}), bf(DType::BF16, {4}), i32(DType::I32, {2, 3, 4, 4}),
      bf4(DType::BF16, {2, 3, 4, 4}),
      f(DType::F32, {4}), w32(DType::I32, {2, 3, 1, 1});
  struct Case {
    const char *op;
    std::vector<const Tensor *> ins;
    Tensor out;
    Attrs attrs;
  };
  Attrs pool;
  pool.set("kernel_shape", Shape{2, 2});
  Attrs axes;
  axes.set("axes", Shape{0});
  std::vector<Case> cases = {
      {"relu", {&b}, Tensor(DType::Bool, {4}), {}},
      {"exp", {&i32}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"sigmoid", {&bf}, Tensor(DType::BF16, {4}), {}},
      {"not", {&f}, Tensor(DType::F32, {4}), {}},
      {"add", {&bf, &bf}, Tensor(DType::BF16, {4}), {}},
      {"add", {&b, &b}, Tensor(DType::Bool, {4}), {}},
      {"and", {&f, &f}, Tensor(DType::Bool, {4}), {}},
      {"less", {&bf, &bf}, Tensor(DType::Bool, {4}), {}},
      {"conv", {&i32, &w32}, Tensor(DType::I32, {2, 2, 4, 4}), {}},
      {"gemm", {&bf, &bf}, Tensor(DType::BF16, {2, 2}), {}},
      {"matmul", {&b, &b}, Tensor(DType::Bool, {}), {}},
      {"avg_pool", {&i32}, Tensor(DType::I32, {2, 3, 3, 3}), pool},
      {"max_pool", {&bf4}, Tensor(DType::BF16, {2, 3, 3, 3}), pool},
      {"reduce_sum", {&b}, Tensor(DType::Bool, {}), axes},
      {"reduce_mean", {&bf}, Tensor(DType::BF16, {}), axes},
      {"softmax", {&i32}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"argmax", {&bf}, Tensor(DType::I64, {}), {}},
      {"batch_norm", {&i32, &f, &f, &f, &f}, Tensor(DType::I32, {2, 3, 4, 4}), {}},
      {"layer_norm", {&b, &b}, Tensor(DType::Bool, {4}), {}},
  };
  for (Case &c : cases) {
    KernelStatus s = run(c.op, c.attrs, c.ins, c.out);
    EXPECT_FALSE(s.ok()) << c.op;
    EXPECT_NE(s.error.find(c.op), std::string::npos) << c.op << ": " << s.error;
  }
}

TEST(KernelErrors, BadShapesAndOperandsReturnErrors) {
  Tensor a(DType::F32, {2, 3}), b(DType::F32, {4}), c(DType::F32, {3, 5});
  Tensor y23(DType::F32, {2, 3}), y25(DType::F32, {2, 5}), yb(DType::Bool, {2, 3});
  Attrs none;
  EXPECT_FALSE(run("add", none, {&a, &b}, y23).ok());       // not broadcastable
  EXPECT_FALSE(run("add", none, {&a, &a}, y25).ok());       // result shape wrong
  EXPECT_FALSE(run("add", none, {&a, nullptr}, y23).ok());  // missing operand
  EXPECT_FALSE(run("add", none, {&a}, y23).ok());           // too few operands
  EXPECT_FALSE(run("matmul", none, {&a, &b}, y25).ok());    // inner dims differ
  EXPECT_TRUE(run("matmul", none, {&a, &c}, y25).ok());
  EXPECT_FALSE(run("gemm", none, {&a, &a}, y23).ok());      // 2x3 * 2x3
  EXPECT_FALSE(run("where", none, {&a, &a, &a}, y23).ok()); // condition not bool
  EXPECT_FALSE(run("equal", none, {&a, &a}, y23).ok());     // result not bool
  EXPECT_TRUE(run("equal", none, {&a, &a}, yb).ok());
  Tensor i(DType::I32, {2, 3});
  EXPECT_FALSE(run("add", none, {&a, &i}, y23).ok());       // mixed dtypes
  Attrs axis;
  axis.set("axis", int64_t(5));
  Tensor idx(DType::I64, {2});
  EXPECT_FALSE(run("softmax", axis, {&a}, y23).ok());       // axis out of range
  EXPECT_FALSE(run("argmax", axis, {&a}, idx).ok());
  Attrs ok0;
  ok0.set("axis", int64_t(1));
  Tensor f32idx(DType::F32, {2});
  EXPECT_FALSE(run("argmax", ok0, {&a}, f32idx).ok());      // result must be i64
  EXPECT_TRUE(run("argmax", ok0, {&a}, idx).ok());
  Attrs red;
  red.set("axes", Shape{1});
  Tensor wrong(DType::F32, {3});
  EXPECT_FALSE(run("reduce_sum", red, {&a}, wrong).ok());   // 2 results expected
  Attrs redBad;
  redBad.set("axes", Shape{4});
  EXPECT_FALSE(run("reduce_sum", redBad, {&a}, wrong).ok());
  // conv: channels do not match the group / weight.
  Tensor x(DType::F32, {1, 4, 5, 5}), w(DType::F32, {6, 3, 3, 3}), y(DType::F32, {1, 6, 3, 3});
  Attrs g;
  g.set("group", int64_t(1));
  EXPECT_FALSE(run("conv", g, {&x, &w}, y).ok());
  Attrs pool;
  pool.set("kernel_shape", Shape{2});
  EXPECT_FALSE(run("max_pool", pool, {&x}, y).ok());        // kernel rank mismatch
  EXPECT_FALSE(run("conv", g, {&x}, y).ok());               // weight missing
}

} // namespace
