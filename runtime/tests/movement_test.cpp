//===- movement_test.cpp - the CPU tier's movement and cast kernels -------===//
//
// Each kernel against an independent reference: plain index loops for the
// movement ops, and for cast known IEEE bit patterns plus the rounding
// references of tests/support (TestTensor.h), computed in double arithmetic
// (never through half.h).
//
//===----------------------------------------------------------------------===//
#include "TestTensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace tessel::test {
namespace {

using cpu::Attrs;
using cpu::DType;
using cpu::KernelStatus;

template <typename T> std::vector<T> randomValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (T &x : v)
    x = static_cast<T>(rng());
  return v;
}

TEST(RuntimeMovement, RegistersEveryMovementKernel) {
  for (const char *op : {"identity", "copy", "reshape", "cast", "transpose", "concat", "slice",
                         "pad", "gather", "expand", "tile"})
    EXPECT_NE(cpu::findKernel(op), nullptr) << op;
}

//===----------------------------------------------------------------------===//
// identity, copy, reshape
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, CopiesBytes) {
  std::vector<uint16_t> values = randomValues<uint16_t>(12, 1);
  Tensor in = makeTensor(DType::F16, {3, 4}, values);
  for (const char *op : {"identity", "copy"}) {
    Tensor out(DType::F16, {3, 4});
    ASSERT_TRUE(run(op, {}, {&in}, out).ok()) << op;
    EXPECT_EQ(out.values<uint16_t>(), values) << op;
  }
  Tensor reshaped(DType::F16, {2, 6});
  ASSERT_TRUE(run("reshape", {}, {&in}, reshaped).ok());
  EXPECT_EQ(reshaped.values<uint16_t>(), values);

  Tensor wrongShape(DType::F16, {2, 6});
  EXPECT_EQ(run("identity", {}, {&in}, wrongShape).error,
            "identity: input shape [3, 4] does not match output shape [2, 6]");
  Tensor wrongCount(DType::F16, {5});
  EXPECT_EQ(run("reshape", {}, {&in}, wrongCount).error,
            "reshape: input shape [3, 4] does not match output shape [5]");
  Tensor wrongType(DType::I16, {12});
  EXPECT_EQ(run("reshape", {}, {&in}, wrongType).error,
            "reshape: input dtype f16 differs from output dtype i16");
  EXPECT_EQ(run("copy", {}, {nullptr}, reshaped).error,
            "copy: input 0 is missing, unbound, of a negative dim or of rank > 16");
  EXPECT_FALSE(run("copy", {}, {}, reshaped).ok());
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

template <typename S, typename D>
std::vector<D> cast(DType from, DType to, const std::vector<S> &values) {
  Tensor in = makeTensor(from, {static_cast<int64_t>(values.size())}, values);
  Tensor out(to, {static_cast<int64_t>(values.size())});
  KernelStatus s = run("cast", {}, {&in}, out);
  EXPECT_TRUE(s.ok()) << s.error;
  return out.values<D>();
}

bool isHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

TEST(RuntimeMovement, CastsF32ToF16KnownPatterns) {
  const float tie = 1.0f + std::ldexp(1.0f, -11); // halfway between 1 and 1+2^-10
  struct Case {
    float value;
    uint16_t bits;
  } cases[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {65504.0f, 0x7bff},                      // largest finite
      {65519.99f, 0x7bff},                     // just below the rounding boundary
      {65520.0f, 0x7c00},                      // rounds to infinity
      {1e10f, 0x7c00},
      {1.0f / 3.0f, 0x3555},
      {std::ldexp(1.0f, -14), 0x0400},         // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},         // smallest subnormal
      {std::ldexp(1023.0f, -24), 0x03ff},      // largest subnormal
      {std::ldexp(1.0f, -25), 0x0000},         // tie between 0 and 2^-24: even
      {std::ldexp(1.5f, -25), 0x0001},         // above the tie
      {std::ldexp(3.0f, -25), 0x0002},         // tie between 1 and 2 ulps: even
      {std::ldexp(2047.0f, -25), 0x0400},      // subnormal rounding up to normal
      {tie, 0x3c00},                           // tie: even (down)
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02}, // tie: even (up)
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
  };
  std::vector<float> values;
  for (const Case &c : cases)
    values.push_back(c.value);
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  std::vector<uint16_t> bits = cast<float, uint16_t>(DType::F32, DType::F16, values);
  for (size_t i = 0; i + 1 < values.size(); ++i)
    EXPECT_EQ(bits[i], cases[i].bits) << "value " << values[i];
  EXPECT_TRUE(isHalfNaN(bits.back()));
}

TEST(RuntimeMovement, CastsEveryF16ToF32Exactly) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint16_t>(i);
  std::vector<float> floats = cast<uint16_t, float>(DType::F16, DType::F32, all);
  std::vector<double> doubles = cast<uint16_t, double>(DType::F16, DType::F64, all);
  std::vector<uint16_t> back = cast<float, uint16_t>(DType::F32, DType::F16, floats);
  for (size_t i = 0; i < all.size(); ++i) {
    double expected = refHalfToDouble(all[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(floats[i]) && std::isnan(doubles[i])) << i;
      EXPECT_TRUE(isHalfNaN(back[i])) << i;
      continue;
    }
    ASSERT_EQ(static_cast<double>(floats[i]), expected) << "bits " << i;
    ASSERT_EQ(doubles[i], expected) << "bits " << i;
    ASSERT_EQ(std::signbit(floats[i]), (all[i] & 0x8000) != 0) << i;
    ASSERT_EQ(back[i], all[i]) << "round trip of bits " << i;
  }
}

TEST(RuntimeMovement, CastsToF16AndBf16WithCorrectRounding) {
  // Random values across the whole f16 range, subnormals and overflow
  // included, as floats and as doubles (whose extra bits catch double
  // rounding through float).
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> halfExponent(-27, 16), bf16Exponent(-133, 127);
  std::vector<float> floats;
  std::vector<double> doubles, wide;
  for (int i = 0; i < 100000; ++i) {
    double sign = (rng() & 1) ? -1.0 : 1.0;
    double d = sign * std::ldexp(mantissa(rng), halfExponent(rng));
    doubles.push_back(d);
    floats.push_back(static_cast<float>(d));
    wide.push_back(sign * std::ldexp(mantissa(rng), bf16Exponent(rng)));
  }
  // Values just above and below ties, where double rounding goes wrong.
  doubles.push_back(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  doubles.push_back(1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40));
  wide.push_back(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30));
  wide.push_back(1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -30));

  std::vector<uint16_t> fromFloat = cast<float, uint16_t>(DType::F32, DType::F16, floats);
  for (size_t i = 0; i < floats.size(); ++i)
    ASSERT_EQ(fromFloat[i], refDoubleToHalf(floats[i])) << "f32 " << floats[i];
  std::vector<uint16_t> fromDouble = cast<double, uint16_t>(DType::F64, DType::F16, doubles);
  for (size_t i = 0; i < doubles.size(); ++i)
    ASSERT_EQ(fromDouble[i], refDoubleToHalf(doubles[i])) << "f64 " << doubles[i];
  EXPECT_EQ(fromDouble[fromDouble.size() - 2], 0x3c01);
  EXPECT_EQ(fromDouble.back(), 0x3c00);

  std::vector<float> wideFloats(wide.begin(), wide.end());
  std::vector<uint16_t> bf16FromFloat =
      cast<float, uint16_t>(DType::F32, DType::BF16, wideFloats);
  for (size_t i = 0; i < wideFloats.size(); ++i)
    ASSERT_EQ(bf16FromFloat[i], refDoubleToBf16(wideFloats[i])) << "f32 " << wideFloats[i];
  std::vector<uint16_t> bf16FromDouble = cast<double, uint16_t>(DType::F64, DType::BF16, wide);
  for (size_t i = 0; i < wide.size(); ++i)
    ASSERT_EQ(bf16FromDouble[i], refDoubleToBf16(wide[i])) << "f64 " << wide[i];
  EXPECT_EQ(bf16FromDouble[bf16FromDouble.size() - 2], 0x3f81);
  EXPECT_EQ(bf16FromDouble.back(), 0x3f80);
}

TEST(RuntimeMovement, CastsBf16KnownPatterns) {
  std::vector<float> values = {1.0f, -2.0f, 1.0f + std::ldexp(1.0f, -8),
                               1.0f + 3 * std::ldexp(1.0f, -8),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
  std::vector<uint16_t> bits = cast<float, uint16_t>(DType::F32, DType::BF16, values);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0xc000);
  EXPECT_EQ(bits[2], 0x3f80); // tie: even
  EXPECT_EQ(bits[3], 0x3f82); // tie: even
  EXPECT_EQ(bits[4], 0x7f80); // rounds up to infinity
  EXPECT_EQ(bits[5], 0x7f80);
  EXPECT_EQ(bits[6] & 0x7f80, 0x7f80);
  EXPECT_NE(bits[6] & 0x7f, 0);

  std::vector<float> back =
      cast<uint16_t, float>(DType::BF16, DType::F32, std::vector<uint16_t>{0x3f80, 0xc049, 0x0001});
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -3.140625f);
  EXPECT_EQ(back[2], std::ldexp(1.0f, -133));
}

TEST(RuntimeMovement, CastsIntegersToNarrowFloatsWithOneRounding) {
  // 2^31 + 2^23 + 1 lies just above a bf16 tie; through float it would land
  // exactly on the tie (float keeps 24 bits) and round down to even.
  std::vector<int64_t> values = {(int64_t(1) << 31) + (1 << 23) + 1, (int64_t(1) << 31) + (1 << 23),
                                 -((int64_t(1) << 31) + (1 << 23) + 1), 65504, 65520, -7,
                                 std::numeric_limits<int64_t>::min()};
  std::vector<uint16_t> bf16 = cast<int64_t, uint16_t>(DType::I64, DType::BF16, values);
  EXPECT_EQ(bf16[0], 0x4f01);
  EXPECT_EQ(bf16[1], 0x4f00);
  EXPECT_EQ(bf16[2], 0xcf01);
  EXPECT_EQ(bf16[6], 0xdf00); // -2^63
  std::vector<uint16_t> f16 = cast<int64_t, uint16_t>(DType::I64, DType::F16, values);
  EXPECT_EQ(f16[3], 0x7bff);
  EXPECT_EQ(f16[4], 0x7c00);
  EXPECT_EQ(f16[5], 0xc700);
  EXPECT_EQ(f16[6], 0xfc00);
  std::vector<float> f32 = cast<uint64_t, float>(
      DType::U64, DType::F32, std::vector<uint64_t>{~uint64_t(0), (uint64_t(1) << 24) + 1});
  EXPECT_EQ(f32[0], 18446744073709551616.0f);
  EXPECT_EQ(f32[1], 16777216.0f);
}

TEST(RuntimeMovement, CastsFloatsToIntegersByTruncation) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {2.7f, -2.7f, -0.5f, 300.0f, -1.0f, nan, inf, -inf, 1e20f};
  std::vector<int32_t> i32 = cast<float, int32_t>(DType::F32, DType::I32, values);
  EXPECT_EQ(i32, (std::vector<int32_t>{2, -2, 0, 300, -1, 0, std::numeric_limits<int32_t>::max(),
                                       std::numeric_limits<int32_t>::min(),
                                       std::numeric_limits<int32_t>::max()}));
  // In int64 range, narrow targets wrap as numpy's astype does.
  std::vector<int8_t> i8 = cast<float, int8_t>(DType::F32, DType::I8, values);
  EXPECT_EQ(i8[3], 44);
  std::vector<uint8_t> u8 = cast<float, uint8_t>(DType::F32, DType::U8, values);
  EXPECT_EQ(u8[0], 2);
  EXPECT_EQ(u8[4], 255);
  std::vector<uint64_t> u64 = cast<double, uint64_t>(
      DType::F64, DType::U64, std::vector<double>{1.8e19, 3.5, -1.0, 1e30});
  EXPECT_EQ(u64, (std::vector<uint64_t>{18000000000000000000ull, 3, ~uint64_t(0), ~uint64_t(0)}));
  std::vector<int64_t> fromHalf =
      cast<uint16_t, int64_t>(DType::F16, DType::I64, std::vector<uint16_t>{0xc500, 0x3bff});
  EXPECT_EQ(fromHalf, (std::vector<int64_t>{-5, 0})); // -5.0, 0.99951171875
}

TEST(RuntimeMovement, CastsToAndFromBool) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ((cast<float, uint8_t>(DType::F32, DType::Bool, {0.0f, -0.0f, 0.5f, -3.0f, nan})),
            (std::vector<uint8_t>{0, 0, 1, 1, 1}));
  // 256 is nonzero even though its low byte is zero.
  EXPECT_EQ((cast<int32_t, uint8_t>(DType::I32, DType::Bool, {0, 256, -1})),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ((cast<uint16_t, uint8_t>(DType::F16, DType::Bool, {0x8000, 0x0001})),
            (std::vector<uint8_t>{0, 1}));
  // Any nonzero byte reads as true.
  EXPECT_EQ((cast<uint8_t, float>(DType::Bool, DType::F32, {0, 1, 2})),
            (std::vector<float>{0, 1, 1}));
  EXPECT_EQ((cast<uint8_t, uint16_t>(DType::Bool, DType::F16, {0, 7})),
            (std::vector<uint16_t>{0x0000, 0x3c00}));
}

TEST(RuntimeMovement, CastsIntegersModulo) {
  EXPECT_EQ((cast<int32_t, int8_t>(DType::I32, DType::I8, {300, -129, 127})),
            (std::vector<int8_t>{44, 127, 127}));
  EXPECT_EQ((cast<int64_t, uint32_t>(DType::I64, DType::U32, {-1, int64_t(1) << 32})),
            (std::vector<uint32_t>{0xffffffffu, 0}));
  EXPECT_EQ((cast<uint8_t, int64_t>(DType::U8, DType::I64, {255, 0})),
            (std::vector<int64_t>{255, 0}));
}

TEST(RuntimeMovement, CastsBetweenEveryPairOfDTypes) {
  const std::vector<int> values = {0, 1, 2, 5, 100, 127};
  for (int from = 0; from <= static_cast<int>(DType::Bool); ++from) {
    for (int to = 0; to <= static_cast<int>(DType::Bool); ++to) {
      DType source = static_cast<DType>(from), target = static_cast<DType>(to);
      SCOPED_TRACE(std::string(cpu::dtypeName(source)) + " -> " + cpu::dtypeName(target));
      Tensor in(source, {static_cast<int64_t>(values.size())});
      for (size_t i = 0; i < values.size(); ++i)
        in.set(i, values[i]);
      Tensor out(target, in.shape());
      ASSERT_TRUE(run("cast", {}, {&in}, out).ok());
      for (size_t i = 0; i < values.size(); ++i) {
        double expected = in.get(i);
        if (target == DType::Bool)
          expected = expected != 0;
        EXPECT_EQ(out.get(i), expected) << "value " << values[i];
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// transpose, slice
//===----------------------------------------------------------------------===//

template <typename T> void checkTranspose(DType dtype) {
  const std::vector<int64_t> shape = {2, 3, 4, 5}, perm = {2, 0, 3, 1};
  std::vector<int64_t> outShape;
  for (int64_t p : perm)
    outShape.push_back(shape[p]);
  std::vector<T> values = randomValues<T>(numel(shape), 11);
  Tensor in = makeTensor(dtype, shape, values);
  Tensor out(dtype, outShape);
  ASSERT_TRUE(run("transpose", makeAttrs({{"perm", perm}}), {&in}, out).ok());
  std::vector<T> result = out.values<T>();
  for (int64_t o = 0; o < numel(outShape); ++o) {
    std::vector<int64_t> outIndex = unravel(o, outShape), inIndex(shape.size());
    for (size_t d = 0; d < perm.size(); ++d)
      inIndex[perm[d]] = outIndex[d];
    ASSERT_EQ(result[o], values[ravel(inIndex, shape)]) << o;
  }
}

TEST(RuntimeMovement, TransposesEveryElementSize) {
  checkTranspose<uint8_t>(DType::U8);
  checkTranspose<uint16_t>(DType::F16);
  checkTranspose<uint32_t>(DType::F32);
  checkTranspose<uint64_t>(DType::I64);
}

TEST(RuntimeMovement, TransposeRejectsBadPermutations) {
  Tensor in(DType::F32, {2, 3}), out(DType::F32, {3, 2});
  EXPECT_EQ(run("transpose", makeAttrs({{"perm", std::vector<int64_t>{0, 0}}}), {&in}, out).error,
            "transpose: perm [0, 0] is not a permutation");
  EXPECT_EQ(run("transpose", makeAttrs({{"perm", std::vector<int64_t>{0, 1}}}), {&in}, out).error,
            "transpose: output shape [3, 2] is not input shape [2, 3] permuted by [0, 1]");
  EXPECT_FALSE(run("transpose", makeAttrs({{"perm", std::vector<int64_t>{1}}}), {&in}, out).ok());
}

TEST(RuntimeMovement, SlicesWithPositiveAndNegativeSteps) {
  const std::vector<int64_t> shape = {5, 6, 7}, starts = {1, 5, 0}, steps = {2, -2, 3},
                             outShape = {2, 3, 3};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  Tensor in = makeTensor(DType::F32, shape, values);
  Tensor out(DType::F32, outShape);
  ASSERT_TRUE(run("slice", makeAttrs({{"starts", starts}, {"steps", steps}}), {&in}, out).ok());
  std::vector<float> result = out.values<float>();
  for (int64_t o = 0; o < numel(outShape); ++o) {
    std::vector<int64_t> index = unravel(o, outShape);
    for (size_t d = 0; d < shape.size(); ++d)
      index[d] = starts[d] + index[d] * steps[d];
    ASSERT_EQ(result[o], values[ravel(index, shape)]) << o;
  }

  Tensor tooLong(DType::F32, {3, 3, 3});
  EXPECT_EQ(run("slice", makeAttrs({{"starts", starts}, {"steps", steps}}), {&in}, tooLong).error,
            "slice: dim 0: start 1, step 2 and extent 3 read outside the input extent 5");
  Tensor one(DType::F32, {1, 1, 1});
  EXPECT_TRUE(run("slice",
                  makeAttrs({{"starts", std::vector<int64_t>{4, 0, 6}},
                             {"steps", std::vector<int64_t>{INT64_MAX, INT64_MIN, 1}}}),
                  {&in}, one)
                  .ok());
  EXPECT_EQ(one.values<float>()[0], values[ravel({4, 0, 6}, shape)]);
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, ConcatenatesAlongAnAxis) {
  Tensor a = makeTensor(DType::I32, {2, 1, 3}, randomValues<int32_t>(6, 1));
  Tensor b = makeTensor(DType::I32, {2, 4, 3}, randomValues<int32_t>(24, 2));
  Tensor c(DType::I32, {2, 0, 3});
  for (int64_t axis : {1, -2}) {
    Tensor out(DType::I32, {2, 5, 3});
    ASSERT_TRUE(run("concat", makeAttrs({{"axis", axis}}), {&a, &c, &b}, out).ok());
    std::vector<int32_t> result = out.values<int32_t>(), av = a.values<int32_t>(),
                         bv = b.values<int32_t>();
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 3; ++k)
          ASSERT_EQ(result[(i * 5 + j) * 3 + k],
                    j < 1 ? av[(i * 1 + j) * 3 + k] : bv[(i * 4 + j - 1) * 3 + k]);
  }
  Tensor wrong(DType::I32, {2, 6, 3});
  EXPECT_EQ(run("concat", makeAttrs({{"axis", int64_t(1)}}), {&a, &b}, wrong).error,
            "concat: inputs sum to 5 along axis 1, the output has 6");
  Tensor d(DType::I32, {3, 1, 3}), out(DType::I32, {2, 5, 3});
  EXPECT_FALSE(run("concat", makeAttrs({{"axis", int64_t(1)}}), {&a, &d}, out).ok());
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

// numpy's pad, one index at a time: mirror (reflect) or clamp (edge) until
// inside. Returns -1 for the constant value.
int64_t referencePadIndex(int64_t j, int64_t n, const std::string &mode) {
  if (j >= 0 && j < n)
    return j;
  if (mode == "constant")
    return -1;
  if (mode == "edge")
    return std::min(std::max<int64_t>(j, 0), n - 1);
  if (n == 1)
    return 0;
  while (j < 0 || j >= n) {
    if (j < 0)
      j = -j;
    if (j >= n)
      j = 2 * (n - 1) - j;
  }
  return j;
}

TEST(RuntimeMovement, PadsInEveryMode) {
  const std::vector<int64_t> shape = {3, 4}, pads = {1, -1, 2, 3}, outShape = {6, 6};
  std::vector<float> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i + 1);
  Tensor in = makeTensor(DType::F32, shape, values);
  for (std::string mode : {"constant", "reflect", "edge"}) {
    SCOPED_TRACE(mode);
    Tensor out(DType::F32, outShape);
    ASSERT_TRUE(
        run("pad", makeAttrs({{"pads", pads}, {"mode", mode}, {"value", 7.5}}), {&in}, out).ok());
    std::vector<float> result = out.values<float>();
    for (int64_t i = 0; i < outShape[0]; ++i) {
      for (int64_t j = 0; j < outShape[1]; ++j) {
        int64_t si = referencePadIndex(i - pads[0], shape[0], mode);
        int64_t sj = referencePadIndex(j - pads[1], shape[1], mode);
        float expected = si < 0 || sj < 0 ? 7.5f : values[si * shape[1] + sj];
        ASSERT_EQ(result[i * outShape[1] + j], expected) << i << "," << j;
      }
    }
  }
}

TEST(RuntimeMovement, ReflectsPadsWiderThanTheInput) {
  Tensor in = makeTensor(DType::I64, {3}, std::vector<int64_t>{10, 20, 30});
  Tensor out(DType::I64, {13});
  ASSERT_TRUE(run("pad",
                  makeAttrs({{"pads", std::vector<int64_t>{5, 5}},
                             {"mode", std::string("reflect")},
                             {"value", 0.0}}),
                  {&in}, out)
                  .ok());
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 13; ++i)
    expected.push_back(in.values<int64_t>()[referencePadIndex(i - 5, 3, "reflect")]);
  EXPECT_EQ(out.values<int64_t>(), expected);
}

TEST(RuntimeMovement, PadsWithTheValueInTheElementType) {
  auto padOne = [](DType dtype, double value) {
    Tensor in(dtype, {1}), out(dtype, {2});
    EXPECT_TRUE(run("pad",
                    makeAttrs({{"pads", std::vector<int64_t>{0, 1}},
                               {"mode", std::string("constant")},
                               {"value", value}}),
                    {&in}, out)
                    .ok());
    return out.get(1);
  };
  EXPECT_EQ(padOne(DType::I32, -3.0), -3.0);
  EXPECT_EQ(padOne(DType::U8, 200.0), 200.0);
  EXPECT_EQ(padOne(DType::F16, 1.5), 1.5);
  EXPECT_EQ(padOne(DType::F64, 0.1), 0.1);
  EXPECT_EQ(padOne(DType::Bool, 2.0), 1.0);

  Tensor in(DType::F32, {2}), out(DType::F32, {4});
  const Attrs wrap =
      makeAttrs({{"pads", std::vector<int64_t>{1, 0}}, {"mode", std::string("wrap")}});
  EXPECT_EQ(run("pad", wrap, {&in}, out).error,
            "pad: unsupported mode 'wrap' (constant, reflect or edge)");
  EXPECT_EQ(run("pad", makeAttrs({{"pads", std::vector<int64_t>{1, 0}}}), {&in}, out).error,
            "pad: input shape [2] padded by [1, 0] is not output shape [4]");
}

//===----------------------------------------------------------------------===//
// trilu
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, TriluKeepsATriangleOfEachMatrix) {
  // Two 3x5 matrices of i32, every k from past one corner to past the other.
  const std::vector<int64_t> shape = {2, 3, 5};
  std::vector<int32_t> values(numel(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<int32_t>(i) + 1;
  Tensor in = makeTensor(DType::I32, shape, values);
  for (int64_t upper : {0, 1})
    for (int64_t k = -4; k <= 6; ++k) {
      SCOPED_TRACE("upper " + std::to_string(upper) + " k " + std::to_string(k));
      Tensor out(DType::I32, shape);
      ASSERT_TRUE(run("trilu", makeAttrs({{"k", k}, {"upper", upper}}), {&in}, out).ok());
      std::vector<int32_t> result = out.values<int32_t>();
      for (int64_t m = 0; m < 2; ++m)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 5; ++j) {
            const size_t e = static_cast<size_t>((m * 3 + i) * 5 + j);
            const bool keep = upper ? j >= i + k : j <= i + k;
            ASSERT_EQ(result[e], keep ? values[e] : 0) << m << "," << i << "," << j;
          }
    }
  Tensor vector = makeTensor(DType::I32, {4}, std::vector<int32_t>{1, 2, 3, 4});
  Tensor vectorOut(DType::I32, {4});
  EXPECT_EQ(run("trilu", makeAttrs({{"k", int64_t(0)}}), {&vector}, vectorOut).error,
            "trilu: input [4] and output [4] must be one shape of rank 2 or more");
}

//===----------------------------------------------------------------------===//
// im2row
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, Im2RowUnfoldsTheWindowsAlongW) {
  // N 2, H 2, W 5, C 3; kernel 3 at stride 2, dilation 2, pad 2: result
  // column o, channel s * 3 + c reads input column 2o + 2s - 2 (zero outside
  // [0, 5)), and channels 9 to 15 are zero.
  const int64_t n = 2, h = 2, w = 5, c = 3, ow = 3, depth = 16;
  std::vector<float> values(n * h * w * c);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i + 1);
  Tensor in = makeTensor(DType::F32, {n, h, w, c}, values);
  Tensor out(DType::F32, {n, h, ow, depth});
  auto window = makeAttrs({{"kernel", int64_t(3)},
                           {"stride", int64_t(2)},
                           {"dilation", int64_t(2)},
                           {"pad", int64_t(2)}});
  ASSERT_TRUE(run("im2row", window, {&in}, out).ok());
  std::vector<float> result = out.values<float>();
  for (int64_t row = 0; row < n * h; ++row)
    for (int64_t o = 0; o < ow; ++o)
      for (int64_t j = 0; j < depth; ++j) {
        const int64_t tap = j / c, column = 2 * o + 2 * tap - 2;
        const float expected = tap < 3 && column >= 0 && column < w
                                   ? values[(row * w + column) * c + j % c]
                                   : 0.0f;
        ASSERT_EQ(result[(row * ow + o) * depth + j], expected) << row << "," << o << "," << j;
      }

  Tensor shallow(DType::F32, {n, h, ow, 8});
  EXPECT_EQ(run("im2row", window, {&in}, shallow).error,
            "im2row: input [2, 2, 5, 3] and result [2, 2, 3, 8] are not N x H x W x C and "
            "N x H x OW x D with D >= kernel x C");
  EXPECT_EQ(run("im2row",
                makeAttrs({{"kernel", int64_t(0)},
                           {"stride", int64_t(1)},
                           {"dilation", int64_t(1)},
                           {"pad", int64_t(0)}}),
                {&in}, out)
                .error,
            "im2row: kernel, stride and dilation must be positive, pad not negative");
  // A stride whose product with the output columns overflows int64 (2 x
  // 2^62; the engine fuzzer found 9 x 1.08e18): an error, not a wrapped
  // column.
  EXPECT_EQ(run("im2row",
                makeAttrs({{"kernel", int64_t(3)},
                           {"stride", int64_t(4611686018427387904)},
                           {"dilation", int64_t(1)},
                           {"pad", int64_t(0)}}),
                {&in}, out)
                .error,
            "im2row: stride 4611686018427387904, dilation 1 and kernel 3 overflow the columns "
            "of 3 outputs");
}

//===----------------------------------------------------------------------===//
// expand, tile
//===----------------------------------------------------------------------===//

TEST(RuntimeMovement, ExpandsByBroadcasting) {
  std::vector<uint16_t> values = randomValues<uint16_t>(3, 5);
  Tensor in = makeTensor(DType::F16, {3, 1}, values);
  Tensor out(DType::F16, {2, 3, 4});
  ASSERT_TRUE(run("expand", {}, {&in}, out).ok());
  std::vector<uint16_t> result = out.values<uint16_t>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        ASSERT_EQ(result[(i * 3 + j) * 4 + k], values[j]);

  Tensor scalar = makeTensor(DType::I8, {}, std::vector<int8_t>{-9});
  Tensor filled(DType::I8, {2, 2});
  ASSERT_TRUE(run("expand", {}, {&scalar}, filled).ok());
  EXPECT_EQ(filled.values<int8_t>(), (std::vector<int8_t>{-9, -9, -9, -9}));

  Tensor row = makeTensor(DType::I32, {1, 3}, std::vector<int32_t>{1, 2, 3});
  Tensor rows(DType::I32, {2, 3});
  ASSERT_TRUE(run("expand", {}, {&row}, rows).ok());
  EXPECT_EQ(rows.values<int32_t>(), (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));

  Tensor bad(DType::F16, {2, 4, 4});
  EXPECT_EQ(run("expand", {}, {&in}, bad).error,
            "expand: input shape [3, 1] does not broadcast to output shape [2, 4, 4]");
}

TEST(RuntimeMovement, TilesByRepeating) {
  std::vector<int64_t> values = {1, 2, 3, 4, 5, 6};
  Tensor in = makeTensor(DType::I64, {2, 3}, values);
  Tensor out(DType::I64, {4, 9});
  ASSERT_TRUE(run("tile", {}, {&in}, out).ok());
  std::vector<int64_t> result = out.values<int64_t>();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 9; ++j)
      ASSERT_EQ(result[i * 9 + j], values[(i % 2) * 3 + j % 3]);

  Tensor ragged(DType::I64, {4, 8});
  EXPECT_EQ(run("tile", {}, {&in}, ragged).error,
            "tile: output shape [4, 8] is not a whole repetition of input shape [2, 3]");
}

TEST(RuntimeMovement, RejectsRanksBeyondTheLimit) {
  std::vector<int64_t> shape(17, 1);
  Tensor in(DType::F32, shape), out(DType::F32, shape);
  EXPECT_FALSE(run("tile", {}, {&in}, out).ok());
}

} // namespace
} // namespace tessel::test
