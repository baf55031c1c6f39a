//===- reduction_test.cpp - reduce_*, softmax, cumsum and arg* kernels ----===//
//
// The reductions, softmax and log_softmax, cumsum, argmax and argmin
// (reduction.cpp) against float64 references.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

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

/// cumsum (cumprod with `product`) on every dtype, direction and axis
/// against a reference combining the counted elements here in double. The
/// inputs are integers in [lo, hi], so every sum (every product of <= 7 of
/// them in [-3, 3], zeros and signs included) is exact in any order and type.
void checkScan(const char *op, bool product, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  const std::pair<Shape, int64_t> cases[] = {{{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, -1},
                                             {{7}, 0}, {{2, 1, 3}, 1}};
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (int exclusive = 0; exclusive < 2; ++exclusive)
      for (int reverse = 0; reverse < 2; ++reverse)
        for (const auto &[s, axisAttr] : cases) {
          Tensor x = randomTensor(t, s, rng, lo, hi);
          if (!isIntType(t))
            for (int64_t i = 0; i < x.size(); ++i)
              x.set(i, product ? std::round(x.get(i)) : std::floor(x.get(i)));
          const int64_t axis = axisAttr < 0 ? axisAttr + s.size() : axisAttr;
          Tensor y(t, s);
          Attrs a;
          a.set("axis", axisAttr);
          a.set("exclusive", int64_t(exclusive));
          a.set("reverse", int64_t(reverse));
          RUN_OK(op, a, {&x}, y);
          for (int64_t e = 0; e < numel(s); ++e) {
            Shape idx = unravel(e, s);
            const int64_t at = idx[axis];
            double expected = product ? 1 : 0;
            for (int64_t k = 0; k < s[axis]; ++k) {
              const bool counted = reverse ? (exclusive ? k > at : k >= at)
                                           : (exclusive ? k < at : k <= at);
              idx[axis] = k;
              if (counted)
                expected = product ? expected * x.get(ravel(idx, s))
                                   : expected + x.get(ravel(idx, s));
            }
            ASSERT_EQ(y.get(e), expected) << op << " " << dtypeName(t) << " exclusive "
                                          << exclusive << " reverse " << reverse
                                          << " element " << e;
          }
        }
}

TEST(KernelCumSum, RunningSumsInEveryDirection) {
  checkScan("cumsum", /*product=*/false, 83, -8, 8);
  Tensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3});
  Attrs a;
  a.set("axis", int64_t(2));
  EXPECT_EQ(run("cumsum", a, {&x}, y).error, "cumsum: axis out of range");
}

TEST(KernelCumProd, RunningProductsInEveryDirection) {
  checkScan("cumprod", /*product=*/true, 89, -3, 3);
  Tensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3});
  Attrs a;
  a.set("axis", int64_t(-3));
  EXPECT_EQ(run("cumprod", a, {&x}, y).error, "cumprod: axis out of range");
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

} // namespace
} // namespace tessel::test

namespace tessel::test {
namespace {

using namespace cpu;

// top_k against a reference order written here: a stable sort of the line
// by value (descending for largest), which keeps equal values in index
// order, then its first k; on every axis, with ties (small integers).
TEST(KernelTopK, LargestAndSmallestWithTies) {
  std::mt19937 rng(97);
  const Shape s{3, 9, 4};
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (int64_t axis : {0, 1, 2})
      for (int largest = 0; largest < 2; ++largest) {
        Tensor x = randomTensor(t, s, rng, -3, 3);
        if (!isIntType(t))
          for (int64_t i = 0; i < x.size(); ++i)
            x.set(i, std::round(x.get(i)));
        Shape r = s;
        const int64_t k = s[axis] - 1;
        r[axis] = k;
        Tensor values(t, r), indices(DType::I64, r);
        Attrs a;
        a.set("axis", axis);
        a.set("largest", int64_t(largest));
        RUN_OK("top_k", a, {&x}, values, indices);
        for (int64_t e = 0; e < numel(r); ++e) {
          Shape idx = unravel(e, r);
          const int64_t j = idx[axis];
          std::vector<std::pair<double, int64_t>> line;
          for (int64_t a2 = 0; a2 < s[axis]; ++a2) {
            Shape at = idx;
            at[axis] = a2;
            line.emplace_back(x.get(ravel(at, s)), a2);
          }
          std::stable_sort(line.begin(), line.end(), [&](const auto &p, const auto &q) {
            return largest ? p.first > q.first : p.first < q.first;
          });
          ASSERT_EQ(values.get(e), line[j].first) << "axis " << axis << " element " << e;
          ASSERT_EQ(indices.getI(e), line[j].second) << "axis " << axis << " element " << e;
        }
      }
}

} // namespace
} // namespace tessel::test
