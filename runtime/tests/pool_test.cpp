//===- pool_test.cpp - max_pool and avg_pool kernels ----------------------===//
//
// The pools (pool.cpp) against a float64 reference of ONNX's windows (pads,
// dilations, ceil-mode shapes, count_include_pad), NHWC against NCHW bit for
// bit, and ONNX's own averagepool_2d_ceil example.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

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
        EXPECT_EQ(back.bytes(), y.bytes())
            << name << " " << op << " " << dtypeName(t) << " case " << index;
        Attrs nchw = a;
        nchw.set("layout", std::string("NCHW"));
        Tensor y2(t, os);
        RUN_OK(name, nchw, {&x}, y2);
        EXPECT_EQ(y2.bytes(), y.bytes()) << name << " explicit NCHW case " << index;
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

} // namespace
} // namespace tessel::test
