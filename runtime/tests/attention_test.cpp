//===- attention_test.cpp - fused attention against float64 -------------===//
//
// attention (attention.cpp) on random shapes, masks of every broadcast form
// (additive f32/f16, bool), causal diagonals with Sq <= Sk, and long rows
// (Sk >= 4096), against a float64 reference written here from the op's
// definition: scores, softmax, weighted sum, in naive loops.
//
// Tolerance: the kernel computes in double and rounds each result once, so
// it is within the dtype's rounding (2^-24 of |ref| for f32, 2^-11 for f16,
// plus 2^-25 absolute below f16's normal range) of the reference, plus the
// double-precision difference of two summation orders (1e-12 of sum|w v|).
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

struct Problem {
  Shape lead; // the leading dims: [B*H] or [B, H]
  int64_t sq, sk, d, dv;
  double scale;
  bool causal = false;
  Shape mask;           // empty: no mask
  DType maskType = DType::F32;
};

Shape concat(const Shape &lead, std::initializer_list<int64_t> tail) {
  Shape s = lead;
  s.insert(s.end(), tail);
  return s;
}

/// The reference, and per element the magnitude sum_j |w_j v_j|.
void reference(const Problem &p, const Tensor &q, const Tensor &k, const Tensor &v,
               const Tensor *mask, std::vector<double> &ref, std::vector<double> &mag) {
  const Shape scores = concat(p.lead, {p.sq, p.sk});
  const int64_t batches = numel(p.lead);
  ref.assign(static_cast<size_t>(batches * p.sq * p.dv), 0.0);
  mag = ref;
  std::vector<double> s(static_cast<size_t>(p.sk));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < p.sq; ++i) {
      for (int64_t j = 0; j < p.sk; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < p.d; ++c)
          dot += q.get((b * p.sq + i) * p.d + c) * k.get((b * p.sk + j) * p.d + c);
        s[j] = dot * p.scale;
        if (mask) {
          Shape index = unravel((b * p.sq + i) * p.sk + j, scores);
          double m = mask->get(broadcastIndex(index, p.mask));
          if (p.maskType == DType::Bool)
            s[j] = m != 0 ? s[j] : -INFINITY;
          else
            s[j] += m;
        }
        if (p.causal && j > i + p.sk - p.sq)
          s[j] = -INFINITY;
      }
      double peak = -INFINITY;
      for (double x : s)
        peak = std::max(peak, x);
      double sum = 0;
      for (double x : s)
        sum += std::exp(x - peak);
      for (int64_t j = 0; j < p.sk; ++j) {
        const double w = std::exp(s[j] - peak) / sum;
        for (int64_t c = 0; c < p.dv; ++c) {
          const double term = w * v.get((b * p.sk + j) * p.dv + c);
          ref[(b * p.sq + i) * p.dv + c] += term;
          mag[(b * p.sq + i) * p.dv + c] += std::fabs(term);
        }
      }
    }
}

void check(const Problem &p, DType t, std::mt19937 &rng) {
  Tensor q = randomTensor(t, concat(p.lead, {p.sq, p.d}), rng, -2, 2);
  Tensor k = randomTensor(t, concat(p.lead, {p.sk, p.d}), rng, -2, 2);
  Tensor v = randomTensor(t, concat(p.lead, {p.sk, p.dv}), rng, -2, 2);
  Tensor mask;
  if (!p.mask.empty()) {
    mask = p.maskType == DType::Bool ? randomTensor(DType::Bool, p.mask, rng, 0, 2)
                                     : randomTensor(p.maskType, p.mask, rng, -3, 1);
  }
  // Keep key 0 (visible under any causal diagonal with Sq <= Sk) in every
  // bool mask row, so that no row is wholly masked (that is NaN, tested
  // apart).
  if (p.maskType == DType::Bool && !p.mask.empty()) {
    const int64_t cols = p.mask.back();
    for (int64_t i = 0; i < mask.size(); i += cols)
      mask.set(i, 1);
  }
  Tensor y(t, concat(p.lead, {p.sq, p.dv}));
  Attrs a = makeAttrs({{"scale", p.scale}, {"causal", int64_t(p.causal)}});
  std::vector<const Tensor *> in = {&q, &k, &v};
  if (!p.mask.empty())
    in.push_back(&mask);
  RUN_OK("attention", a, in, y);
  std::vector<double> ref, mag;
  reference(p, q, k, v, p.mask.empty() ? nullptr : &mask, ref, mag);
  std::vector<double> tol(ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    tol[i] = roundingRel(t) * std::fabs(ref[i]) + 1e-12 * mag[i] +
             (t == DType::F16 ? std::ldexp(1.0, -25) : 0);
  expectClose(y, ref, tol,
              std::string("attention ") + dtypeName(t) + " q" + shapeStr(q.shape()) + " k" +
                  shapeStr(k.shape()) + " v" + shapeStr(v.shape()) + " mask" +
                  shapeStr(p.mask) + (p.causal ? " causal" : ""));
}

TEST(KernelAttention, NoMask) {
  std::mt19937 rng(11);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    check({{6}, 5, 7, 8, 8, 0.35}, t, rng);
    check({{2, 3}, 9, 4, 16, 12, 0.25}, t, rng);
    check({{1, 1}, 1, 1, 3, 5, 1.0}, t, rng);
  }
}

TEST(KernelAttention, AdditiveMasksOfEveryBroadcast) {
  std::mt19937 rng(12);
  for (DType t : {DType::F32, DType::F16}) {
    for (DType m : {DType::F32, DType::F16}) {
      check({{2, 3}, 5, 6, 8, 8, 0.5, false, {2, 3, 5, 6}, m}, t, rng); // full
      check({{2, 3}, 5, 6, 8, 8, 0.5, false, {2, 1, 1, 6}, m}, t, rng); // key padding
      check({{2, 3}, 5, 6, 8, 8, 0.5, false, {5, 6}, m}, t, rng);       // one for all
      check({{2, 3}, 5, 6, 8, 8, 0.5, false, {6}, m}, t, rng);
      check({{2, 3}, 5, 6, 8, 8, 0.5, false, {1, 3, 5, 1}, m}, t, rng); // per query row
      check({{6}, 4, 9, 16, 8, 0.125, false, {6, 1, 9}, m}, t, rng);   // rank 3
    }
  }
}

TEST(KernelAttention, BoolMasks) {
  std::mt19937 rng(13);
  for (DType t : {DType::F32, DType::F16}) {
    check({{2, 3}, 5, 6, 8, 8, 0.5, false, {2, 1, 1, 6}, DType::Bool}, t, rng);
    check({{2, 3}, 5, 6, 8, 8, 0.5, false, {2, 3, 5, 6}, DType::Bool}, t, rng);
    check({{4}, 7, 7, 8, 16, 0.3, true, {7, 7}, DType::Bool}, t, rng);
  }
}

TEST(KernelAttention, Causal) {
  std::mt19937 rng(14);
  for (DType t : {DType::F32, DType::F16}) {
    check({{2, 2}, 8, 8, 16, 16, 0.25, true}, t, rng);
    check({{3}, 3, 10, 8, 8, 0.25, true}, t, rng); // bottom-right diagonal: Sq < Sk
    check({{2, 2}, 6, 6, 8, 8, 0.25, true, {2, 1, 1, 6}, DType::F32}, t, rng);
  }
}

TEST(KernelAttention, LongRows) {
  std::mt19937 rng(15);
  for (DType t : {DType::F32, DType::F16}) {
    check({{2}, 3, 4096, 8, 8, 0.35}, t, rng);
    check({{1, 2}, 2, 5000, 16, 8, 0.25, false, {1, 1, 1, 5000}, DType::F32}, t, rng);
    check({{1}, 64, 4160, 4, 4, 0.5, true}, t, rng); // the diagonal 4096 keys in
  }
}

TEST(KernelAttention, AWhollyMaskedRowIsNaNAsTheUnfusedSoftmax) {
  // Row 0 keeps no key: its scores are all -inf, and softmax of such a row is
  // NaN (reduction.cpp's softmax, the unfused graph's); row 1 is ordinary.
  Tensor q(DType::F32, {1, 2, 4}), k(DType::F32, {1, 3, 4}), v(DType::F32, {1, 3, 2});
  for (int64_t i = 0; i < v.size(); ++i)
    v.set(i, i + 1);
  Tensor mask = makeTensor<uint8_t>(DType::Bool, {2, 3}, {0, 0, 0, 1, 0, 1});
  Tensor y(DType::F32, {1, 2, 2});
  RUN_OK("attention", makeAttrs({{"scale", 1.0}}), {&q, &k, &v, &mask}, y);
  EXPECT_TRUE(std::isnan(y.get(0)) && std::isnan(y.get(1)));
  EXPECT_DOUBLE_EQ(y.get(2), (1.0 + 5.0) / 2); // the mean of V's rows 0 and 2
  EXPECT_DOUBLE_EQ(y.get(3), (2.0 + 6.0) / 2);
  // The same with an additive -inf mask.
  Tensor additive = makeTensor<float>(DType::F32, {2, 3},
                                      {-INFINITY, -INFINITY, -INFINITY, 0, -INFINITY, 0});
  RUN_OK("attention", makeAttrs({{"scale", 1.0}}), {&q, &k, &v, &additive}, y);
  EXPECT_TRUE(std::isnan(y.get(0)));
  EXPECT_DOUBLE_EQ(y.get(2), 3.0);
}

TEST(KernelAttention, BadOperandsAreErrors) {
  Tensor q(DType::F32, {2, 4, 8}), k(DType::F32, {2, 5, 8}), v(DType::F32, {2, 5, 3});
  Tensor y(DType::F32, {2, 4, 3});
  const Attrs a = makeAttrs({{"scale", 1.0}});
  Tensor wrongMask(DType::F32, {4, 4}); // Sk is 5
  EXPECT_FALSE(run("attention", a, {&q, &k, &v, &wrongMask}, y).ok());
  Tensor widening(DType::F32, {3, 4, 5}); // would widen the scores' batch
  EXPECT_FALSE(run("attention", a, {&q, &k, &v, &widening}, y).ok());
  Tensor intMask(DType::I32, {4, 5});
  EXPECT_FALSE(run("attention", a, {&q, &k, &v, &intMask}, y).ok());
  Tensor k16(DType::F16, {2, 5, 8});
  EXPECT_FALSE(run("attention", a, {&q, &k16, &v}, y).ok());
  Tensor kd(DType::F32, {2, 5, 7}); // head dims differ
  EXPECT_FALSE(run("attention", a, {&q, &kd, &v}, y).ok());
  Tensor y2(DType::F32, {2, 4, 4});
  EXPECT_FALSE(run("attention", a, {&q, &k, &v}, y2).ok());
  Tensor qi(DType::I32, {2, 4, 8}), ki(DType::I32, {2, 5, 8}), vi(DType::I32, {2, 5, 3});
  Tensor yi(DType::I32, {2, 4, 3});
  EXPECT_FALSE(run("attention", a, {&qi, &ki, &vi}, yi).ok());
}

/// Views (tessel/attention.h): Q, K and V read as the column blocks of one
/// packed projection [tokens, 3 * H * D] (as one merged QKV GEMM writes
/// them), tokens batch-major ([B, S, ...]) or sequence-first ([S, B, ...],
/// as nn.MultiheadAttention lays them out), the result written with the
/// heads interleaved per token. The reference runs on dense [B, H, S, D]
/// operands gathered from the packed tensor here, index by index.
TEST(KernelAttention, ViewsReadPackedHeadsAndWriteTokenMajor) {
  std::mt19937 rng(5);
  const int64_t B = 2, H = 3, S = 7, D = 8, W = 3 * H * D;
  for (bool seqFirst : {false, true})
    for (DType t : {DType::F32, DType::F16}) {
      Tensor packed =
          randomTensor(t, seqFirst ? Shape{S, B, W} : Shape{B, S, W}, rng, -2, 2);
      const int64_t bStride = seqFirst ? W : S * W, sStride = seqFirst ? B * W : W;
      Tensor q(t, {B, H, S, D}), k(t, {B, H, S, D}), v(t, {B, H, S, D});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < S; ++i)
            for (int64_t c = 0; c < D; ++c) {
              const int64_t dense = ((b * H + h) * S + i) * D + c;
              const int64_t at = b * bStride + i * sStride + h * D + c;
              q.set(dense, packed.get(at));
              k.set(dense, packed.get(at + H * D));
              v.set(dense, packed.get(at + 2 * H * D));
            }
      Problem p{{B, H}, S, S, D, D, 0.3, /*causal=*/seqFirst, {B, 1, 1, S}};
      Tensor mask = randomTensor(DType::F32, p.mask, rng, -3, 1);
      std::vector<double> ref, mag;
      reference(p, q, k, v, &mask, ref, mag);

      // The result [tokens, H * D] in the packed tensor's token order.
      const int64_t yB = seqFirst ? H * D : S * H * D, yS = seqFirst ? B * H * D : H * D;
      Tensor y(t, seqFirst ? Shape{S, B, H * D} : Shape{B, S, H * D});
      Attrs a = makeAttrs({{"scale", p.scale},
                           {"causal", int64_t(p.causal)},
                           {"dims", std::vector<int64_t>{B, H, S, S, D, D}},
                           {"views", std::vector<int64_t>{0, bStride, D, sStride,         //
                                                          H * D, bStride, D, sStride,     //
                                                          2 * H * D, bStride, D, sStride, //
                                                          0, yB, D, yS}}});
      RUN_OK("attention", a, {&packed, &packed, &packed, &mask}, y);
      std::vector<double> want(ref.size()), tol(ref.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < S; ++i)
            for (int64_t c = 0; c < D; ++c) {
              const int64_t dense = ((b * H + h) * S + i) * D + c, at = b * yB + i * yS + h * D + c;
              want[at] = ref[dense];
              tol[at] = roundingRel(t) * std::fabs(ref[dense]) + 1e-12 * mag[dense] +
                        (t == DType::F16 ? std::ldexp(1.0, -25) : 0);
            }
      expectClose(y, want, tol,
                  std::string("attention views ") + dtypeName(t) + (seqFirst ? " seq-first" : ""));
    }
}

TEST(KernelAttention, BadViewsAreErrors) {
  Tensor packed(DType::F32, {2, 4, 48}), y(DType::F32, {2, 4, 16});
  auto attrs = [](std::vector<int64_t> views, std::vector<int64_t> dims = {2, 2, 4, 4, 8, 8}) {
    return makeAttrs({{"scale", 1.0}, {"dims", dims}, {"views", views}});
  };
  // Q, K and V as column blocks 0, 16 and 32 of [2, 4, 48]; the result [2, 4, 16].
  const std::vector<int64_t> good = {0, 192, 8, 48, 16, 192, 8, 48, 32, 192, 8, 48, 0, 64, 8, 16};
  RUN_OK("attention", attrs(good), {&packed, &packed, &packed}, y);
  std::vector<int64_t> outside = good;
  outside[8] = 40; // V's last head would end at column 56 of row 3 of batch 1: past the end
  EXPECT_FALSE(run("attention", attrs(outside), {&packed, &packed, &packed}, y).ok());
  std::vector<int64_t> gaps = good;
  gaps[14] = 4; // heads overlap in the result: some elements written twice, some never
  EXPECT_FALSE(run("attention", attrs(gaps), {&packed, &packed, &packed}, y).ok());
  std::vector<int64_t> negative = good;
  negative[3] = -48;
  EXPECT_FALSE(run("attention", attrs(negative), {&packed, &packed, &packed}, y).ok());
  EXPECT_FALSE(run("attention", attrs({0, 192, 8}), {&packed, &packed, &packed}, y).ok());
  EXPECT_FALSE(run("attention", attrs(good, {2, 2, 4, 4, 8}), {&packed, &packed, &packed}, y).ok());
  EXPECT_FALSE(run("attention", attrs(good, {2, 2, 4, 0, 8, 8}), {&packed, &packed, &packed}, y).ok());
  Tensor wrongMask(DType::F32, {2, 1, 4, 5}); // Sk is 4
  EXPECT_FALSE(run("attention", attrs(good), {&packed, &packed, &packed, &wrongMask}, y).ok());
}

} // namespace
} // namespace tessel::test
