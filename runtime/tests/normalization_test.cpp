//===- normalization_test.cpp - batch, instance and layer norm, LRN -------===//
//
// The normalizations (normalization.cpp) against float64 references.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

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

} // namespace
} // namespace tessel::test
