//===- window_test.cpp - conv and pool windows read from attributes -------===//
//
// tessel/window.h, the one reader of the layout and window attributes that
// the CPU kernels and the CUDA planner share: defaults, the pads' order
// (begins, then ends), every error, and the pool's index mapping in both
// layouts.
//
//===----------------------------------------------------------------------===//
#include "TestTensor.h"
#include "tessel/window.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

std::vector<int64_t> values(const SpatialDims &dims) {
  return std::vector<int64_t>(dims.v, dims.v + dims.size());
}

TEST(KernelWindow, LayoutIsNchwUnlessNhwc) {
  bool nhwc = true;
  std::string error;
  EXPECT_TRUE(readLayout(Attrs{}, nhwc, error));
  EXPECT_FALSE(nhwc);
  nhwc = true;
  EXPECT_TRUE(readLayout(makeAttrs({{"layout", std::string("")}}), nhwc, error));
  EXPECT_FALSE(nhwc);
  EXPECT_TRUE(readLayout(makeAttrs({{"layout", std::string("NCHW")}}), nhwc, error));
  EXPECT_FALSE(nhwc);
  EXPECT_TRUE(readLayout(makeAttrs({{"layout", std::string("NHWC")}}), nhwc, error));
  EXPECT_TRUE(nhwc);
  EXPECT_FALSE(readLayout(makeAttrs({{"layout", std::string("nhwc")}}), nhwc, error));
  EXPECT_EQ(error, "unknown layout 'nhwc' (NCHW or NHWC)");
  EXPECT_EQ(channelDim(false, 4), 1u);
  EXPECT_EQ(channelDim(true, 4), 3u);
  EXPECT_EQ(firstSpatialDim(false), 2u);
  EXPECT_EQ(firstSpatialDim(true), 1u);
}

TEST(KernelWindow, DefaultsAndPadsBeginsThenEnds) {
  Window w;
  std::string error;
  ASSERT_TRUE(readWindow(Attrs{}, 3, w, error)) << error;
  EXPECT_EQ(values(w.strides), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(values(w.dilations), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(values(w.padBegin), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(values(w.padEnd), (std::vector<int64_t>{0, 0, 0}));
  const Attrs a = makeAttrs({{"strides", std::vector<int64_t>{2, 3}},
                             {"dilations", std::vector<int64_t>{1, 2}},
                             {"pads", std::vector<int64_t>{1, 0, 2, 3}}});
  ASSERT_TRUE(readWindow(a, 2, w, error)) << error;
  EXPECT_EQ(values(w.strides), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(w.dilations), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(w.padBegin), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values(w.padEnd), (std::vector<int64_t>{2, 3}));
}

TEST(KernelWindow, BadWindowsAreErrors) {
  Window w;
  std::string error;
  EXPECT_FALSE(readWindow(Attrs{}, kMaxSpatial + 1, w, error));
  EXPECT_EQ(error, "at most 8 spatial dims are supported");
  EXPECT_FALSE(readWindow(makeAttrs({{"strides", std::vector<int64_t>{1}}}), 2, w, error));
  EXPECT_EQ(error, "strides and dilations must hold 2 values");
  EXPECT_FALSE(readWindow(makeAttrs({{"dilations", std::vector<int64_t>{1, 1, 1}}}), 2, w, error));
  EXPECT_EQ(error, "strides and dilations must hold 2 values");
  EXPECT_FALSE(readWindow(makeAttrs({{"pads", std::vector<int64_t>{1, 1}}}), 2, w, error));
  EXPECT_EQ(error, "pads must hold 4 values");
  EXPECT_FALSE(readWindow(makeAttrs({{"strides", std::vector<int64_t>{1, 0}}}), 2, w, error));
  EXPECT_EQ(error, "strides and dilations must be positive");
  EXPECT_FALSE(readWindow(makeAttrs({{"dilations", std::vector<int64_t>{-1, 1}}}), 2, w, error));
  EXPECT_EQ(error, "strides and dilations must be positive");
}

TEST(KernelWindow, PoolGeometryMapsNchwAndNhwc) {
  const Attrs a = makeAttrs({{"kernel_shape", std::vector<int64_t>{3, 2}},
                             {"strides", std::vector<int64_t>{2, 1}},
                             {"pads", std::vector<int64_t>{1, 0, 1, 1}}});
  PoolGeometry g;
  std::string error;
  ASSERT_TRUE(readPoolGeometry(a, {2, 3, 7, 6}, {2, 3, 4, 6}, g, error)) << error;
  EXPECT_FALSE(g.nhwc);
  EXPECT_EQ(g.batch, 2);
  EXPECT_EQ(g.channels, 3);
  EXPECT_EQ(values(g.inSpatial), (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(values(g.outSpatial), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(values(g.kernel), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(g.window.padEnd), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(g.inBatch, 3 * 42);
  EXPECT_EQ(g.inC, 42);
  EXPECT_EQ(g.inS, 1);
  EXPECT_EQ(g.outBatch, 3 * 24);
  EXPECT_EQ(g.outC, 24);
  EXPECT_EQ(g.outS, 1);

  Attrs nhwc = a;
  nhwc.set("layout", std::string("NHWC"));
  ASSERT_TRUE(readPoolGeometry(nhwc, {2, 7, 6, 3}, {2, 4, 6, 3}, g, error)) << error;
  EXPECT_TRUE(g.nhwc);
  EXPECT_EQ(g.channels, 3);
  EXPECT_EQ(values(g.inSpatial), (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(g.inBatch, 3 * 42);
  EXPECT_EQ(g.inC, 1);
  EXPECT_EQ(g.inS, 3);
  EXPECT_EQ(g.outC, 1);
  EXPECT_EQ(g.outS, 3);
}

// The errors come in a fixed order (the CPU kernels report the first, the
// planner maps any of them to "no GPU kernel").
TEST(KernelWindow, BadPoolsAreErrorsInOrder) {
  PoolGeometry g;
  std::string error;
  const Attrs k2 = makeAttrs({{"kernel_shape", std::vector<int64_t>{2, 2}}});
  Attrs bad = k2;
  bad.set("layout", std::string("CHWN"));
  bad.set("strides", std::vector<int64_t>{0});
  EXPECT_FALSE(readPoolGeometry(bad, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "unknown layout 'CHWN' (NCHW or NHWC)");
  EXPECT_FALSE(readPoolGeometry(k2, {1, 2}, {1, 2}, g, error));
  EXPECT_EQ(error, "input [1,2] and result [1,2] must be N, C, spatial...");
  EXPECT_FALSE(readPoolGeometry(k2, {1, 2, 4, 4}, {1, 3, 2, 2}, g, error));
  EXPECT_EQ(error, "input [1,2,4,4] and result [1,3,2,2] must be N, C, spatial...");
  Attrs nhwc = k2;
  nhwc.set("layout", std::string("NHWC"));
  EXPECT_FALSE(readPoolGeometry(nhwc, {1, 4, 4, 2}, {2, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "input [1,4,4,2] and result [2,2,2,2] must be N, spatial..., C");
  EXPECT_FALSE(readPoolGeometry(Attrs{}, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "kernel_shape must hold 2 values");
  Attrs window = makeAttrs({{"kernel_shape", std::vector<int64_t>{0, 2}},
                            {"pads", std::vector<int64_t>{0, 0}}});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "pads must hold 4 values");
  window.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "kernel_shape must be in [1, 16777216]");
  // Windows an engine file could change into overflowing index arithmetic
  // or absurd scratch memory (issue 17's fuzzing).
  window.set("kernel_shape", std::vector<int64_t>{2, 2});
  window.set("pads", std::vector<int64_t>{0, -1, 0, 0});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "pads must not be negative");
  window.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  window.set("strides", std::vector<int64_t>{int64_t(1) << 40, 1});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "strides, dilations and pads must be at most 16777216");
  window.set("strides", std::vector<int64_t>{1, 1});
  window.set("kernel_shape", std::vector<int64_t>{5, 2});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 2, 2}, g, error));
  EXPECT_EQ(error, "the window (kernel_shape [5,2]) must fit the padded input and hold at most "
                   "16777216 taps");
  window.set("kernel_shape", std::vector<int64_t>{8192, 4096});
  EXPECT_FALSE(readPoolGeometry(window, {1, 2, 8192, 4096}, {1, 2, 1, 1}, g, error));
  EXPECT_EQ(error, "the window (kernel_shape [8192,4096]) must fit the padded input and hold at "
                   "most 16777216 taps");
  // The padded input holds the window: 5 taps over 4 + 1 of padding.
  window.set("kernel_shape", std::vector<int64_t>{5, 2});
  window.set("pads", std::vector<int64_t>{1, 0, 0, 0});
  EXPECT_TRUE(readPoolGeometry(window, {1, 2, 4, 4}, {1, 2, 1, 3}, g, error)) << error;
}


// conv's geometry: the weight's window, the group and the result's extents
// against the input (the verifier checks every conv step of an engine with
// it at open, the CPU kernel before it runs).
TEST(KernelWindow, ConvGeometryChecksWindowGroupAndResult) {
  ConvGeometry g;
  std::string error;
  const Attrs strided = makeAttrs({{"strides", std::vector<int64_t>{2, 2}},
                                   {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  // 7x7 input, 3x3 window, pads 1, stride 2: floor((9 - 3) / 2) + 1 = 4.
  ASSERT_TRUE(readConvGeometry(strided, {1, 4, 7, 7}, {8, 4, 3, 3}, {1, 8, 4, 4}, g, error))
      << error;
  EXPECT_EQ(g.inChannels, 4);
  EXPECT_EQ(g.outChannels, 8);
  EXPECT_EQ(g.group, 1);
  EXPECT_EQ(g.kernel[0], 3);
  EXPECT_EQ(g.outSpatial[1], 4);
  Attrs grouped = strided;
  grouped.set("group", int64_t(2));
  EXPECT_TRUE(readConvGeometry(grouped, {1, 4, 7, 7}, {8, 2, 3, 3}, {1, 8, 4, 4}, g, error));
  // NHWC: x N,H,W,C and w OHWI.
  Attrs nhwc = strided;
  nhwc.set("layout", std::string("NHWC"));
  EXPECT_TRUE(readConvGeometry(nhwc, {1, 7, 7, 4}, {8, 3, 3, 4}, {1, 4, 4, 8}, g, error)) << error;
  EXPECT_TRUE(g.nhwc);

  EXPECT_FALSE(readConvGeometry(strided, {1, 4, 7}, {8, 4, 3, 3}, {1, 8, 4, 4}, g, error));
  EXPECT_EQ(error, "input, weight and result must have the same rank >= 3");
  EXPECT_FALSE(readConvGeometry(strided, {1, 4, 7, 7}, {8, 2, 3, 3}, {1, 8, 4, 4}, g, error));
  EXPECT_EQ(error, "channels [1,4,7,7] / weight [8,2,3,3] do not match group 1");
  EXPECT_FALSE(readConvGeometry(strided, {1, 4, 7, 7}, {8, 4, 3, 3}, {1, 6, 4, 4}, g, error));
  EXPECT_EQ(error, "result shape [1,6,4,4] does not match");
  // A result the window does not give, a window larger than the padded
  // input, and a weight extent beyond kMaxWindowExtent: what a changed
  // engine could hold.
  EXPECT_FALSE(readConvGeometry(grouped, {1, 4, 7, 7}, {8, 2, 3, 3}, {1, 8, 7, 7}, g, error));
  EXPECT_EQ(error, "the weight's window [8,2,3,3] must fit the padded input [1,4,7,7] and give "
                   "the result [1,8,7,7]");
  EXPECT_FALSE(readConvGeometry(grouped, {1, 4, 7, 7}, {8, 2, 11, 3}, {1, 8, 1, 4}, g, error));
  EXPECT_FALSE(
      readConvGeometry(grouped, {1, 4, 7, 7}, {8, 2, int64_t(1) << 25, 3}, {1, 8, 1, 4}, g, error));
  Attrs huge = grouped;
  huge.set("pads", std::vector<int64_t>{int64_t(1) << 40, 1, 1, 1});
  EXPECT_FALSE(readConvGeometry(huge, {1, 4, 7, 7}, {8, 2, 3, 3}, {1, 8, 4, 4}, g, error));
  EXPECT_EQ(error, "strides, dilations and pads must be at most 16777216");
}

} // namespace
} // namespace tessel::test
