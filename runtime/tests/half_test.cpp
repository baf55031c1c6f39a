//===- half_test.cpp - half.h against reference conversions ---------------===//
//
// tessel/half.h's binary16 conversions (the CPU kernels' f16 storage) against
// the references of tests/support, which compute in double arithmetic.
//
//===----------------------------------------------------------------------===//
#include "TestTensor.h"
#include "tessel/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace tessel::test {
namespace {

using namespace cpu;

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

} // namespace
} // namespace tessel::test
