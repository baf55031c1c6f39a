//===- reduction.cpp - reduce_*, softmax, log_softmax, argmax, argmin -----===//
//
// Float reductions accumulate in double whatever the storage (f32, f64, f16)
// and round once into the result. Integer reductions accumulate sums and
// products in 64-bit wrap-around arithmetic (exact for i64), and compute the
// ones that are not closed over the integers (mean, l2, log_sum,
// log_sum_exp) in double, truncating toward zero (saturating) into the result
// dtype, as ONNX's reference (numpy then astype) does.
//
// A reduction over an empty set yields the operation's identity: 0 for sums,
// 1 for prod, -inf / the lowest value for max, +inf / the highest for min,
// log(0) = -inf for log_sum and log_sum_exp, and NaN for mean.
//
//===----------------------------------------------------------------------===//
#include "dispatch.h"
#include "tessel/half.h"
#include "tessel/cpu_kernels.h"
#include "registry.h"
#include "scratch.h"
#include "tessel/elementwise_math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

namespace tessel::cpu {
namespace {

KernelStatus checkUnary(const char *op, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (inputs.empty() || outputs.empty() || !inputs[0] || !outputs[0])
    return fail(std::string(op) + ": expected an input and an output");
  if ((!inputs[0]->data && inputs[0]->numElements() != 0) ||
      (!outputs[0]->data && outputs[0]->numElements() != 0))
    return fail(std::string(op) + ": missing tensor data");
  return {};
}

int64_t normalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

//===----------------------------------------------------------------------===//
// reduce_*
//===----------------------------------------------------------------------===//

enum class R { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

const char *reduceName(R op) {
  static const char *names[] = {"reduce_sum", "reduce_mean",    "reduce_max",
                                "reduce_min", "reduce_prod",    "reduce_l1",
                                "reduce_l2",  "reduce_log_sum", "reduce_log_sum_exp",
                                "reduce_sum_square"};
  return names[static_cast<int>(op)];
}

// Ranks up to kMaxRank (as the movement kernels): the map lives in fixed
// arrays and the accumulators in per-thread scratch, so a reduction allocates
// nothing after its first call.
constexpr size_t kMaxRank = 16;

// Maps every input element to its output element: outStride[d] is 0 along
// reduced dims and the row-major stride of the kept dims otherwise.
struct ReduceMap {
  std::array<int64_t, kMaxRank> shape{}, outStride{};
  size_t rank = 0;
  int64_t numOut = 1, count = 1; // results, elements per result

  // f(inputIndex, outputIndex) for every input element, in row-major order.
  template <typename F> void forEach(F &&f) const {
    int64_t total = 1;
    for (size_t d = 0; d < rank; ++d)
      total *= shape[d];
    if (total == 0)
      return;
    if (rank == 0) {
      f(int64_t(0), int64_t(0));
      return;
    }
    const int64_t inner = shape[rank - 1], innerStride = outStride[rank - 1];
    std::array<int64_t, kMaxRank> index{};
    int64_t base = 0;
    for (int64_t i = 0; i < total; i += inner) {
      int64_t o = base;
      for (int64_t j = 0; j < inner; ++j, o += innerStride)
        f(i + j, o);
      for (size_t d = rank - 1; d-- > 0;) {
        ++index[d];
        base += outStride[d];
        if (index[d] < shape[d])
          break;
        base -= outStride[d] * shape[d];
        index[d] = 0;
      }
    }
  }
};

KernelStatus planReduce(const char *op, const Attrs &attrs, const TensorView &in,
                        const TensorView &out, ReduceMap &map) {
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  if (in.shape.size() > kMaxRank)
    return fail(std::string(op) + ": rank " + std::to_string(rank) + " is beyond the limit of " +
                std::to_string(kMaxRank));
  std::array<bool, kMaxRank> reduced{};
  const std::vector<int64_t> &axes = attrs.getInts("axes");
  if (axes.empty()) {
    std::fill(reduced.begin(), reduced.begin() + rank, true);
  } else {
    for (int64_t a : axes) {
      int64_t axis = normalizeAxis(a, rank);
      if (axis < 0 || axis >= rank)
        return fail(std::string(op) + ": axis " + std::to_string(a) + " out of range");
      reduced[static_cast<size_t>(axis)] = true;
    }
  }
  map.rank = in.shape.size();
  std::copy(in.shape.begin(), in.shape.end(), map.shape.begin());
  map.outStride.fill(0);
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      map.count *= in.shape[d];
    } else {
      map.outStride[d] = stride;
      stride *= in.shape[d];
    }
  }
  map.numOut = stride;
  if (out.numElements() != map.numOut)
    return fail(std::string(op) + ": result has " + std::to_string(out.numElements()) +
                " elements, the reduction yields " + std::to_string(map.numOut));
  if (out.dtype != in.dtype)
    return fail(std::string(op) + ": result dtype must match the input");
  return {};
}

template <R op, typename T> void reduceFloat(const ReduceMap &map, const T *x, T *y) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double init = op == R::Max ? -inf : op == R::Min ? inf : op == R::Prod ? 1.0 : 0.0;
  const size_t numOut = static_cast<size_t>(map.numOut);
  double *acc = scratch<double>(kSlotAcc, numOut);
  std::fill(acc, acc + numOut, init);
  double *peak = nullptr; // log_sum_exp: per-result max
  if (op == R::LogSumExp) {
    peak = scratch<double>(kSlotRow, numOut);
    std::fill(peak, peak + numOut, -inf);
    map.forEach([&](int64_t i, int64_t o) {
      double v = loadElem(x[i]);
      if (v > peak[o] || std::isnan(v))
        peak[o] = v;
    });
  }
  map.forEach([&](int64_t i, int64_t o) {
    const double v = loadElem(x[i]);
    double &a = acc[o];
    switch (op) {
    case R::Sum: case R::Mean: case R::LogSum: a += v; break;
    case R::Max: if (v > a || std::isnan(v)) a = v; break;
    case R::Min: if (v < a || std::isnan(v)) a = v; break;
    case R::Prod: a *= v; break;
    case R::L1: a += std::fabs(v); break;
    case R::L2: case R::SumSquare: a += v * v; break;
    case R::LogSumExp:
      if (std::isfinite(peak[o]))
        a += std::exp(v - peak[o]);
      break;
    }
  });
  for (int64_t o = 0; o < map.numOut; ++o) {
    double a = acc[o];
    switch (op) {
    case R::Mean: a = a / static_cast<double>(map.count); break;
    case R::L2: a = std::sqrt(a); break;
    case R::LogSum: a = std::log(a); break;
    case R::LogSumExp:
      // An infinite or NaN peak is the result itself (log(sum(exp)) -> it).
      a = std::isfinite(peak[o]) ? std::log(a) + peak[o] : peak[o];
      if (map.count == 0)
        a = -inf;
      break;
    default: break;
    }
    y[o] = storeElem<T>(static_cast<MathType<T>>(a));
  }
}

template <R op, typename T> void reduceInt(const ReduceMap &map, const T *x, T *y) {
  // Wide accumulator: int64 for signed, uint64 for unsigned; sums and
  // products wrap through uint64 arithmetic (no overflow UB).
  using W = std::conditional_t<std::is_signed<T>::value, int64_t, uint64_t>;
  if constexpr (op == R::Max || op == R::Min) {
    T *acc = scratch<T>(kSlotAcc, static_cast<size_t>(map.numOut));
    std::fill(acc, acc + map.numOut,
              op == R::Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    map.forEach([&](int64_t i, int64_t o) {
      if (op == R::Max ? x[i] > acc[o] : x[i] < acc[o])
        acc[o] = x[i];
    });
    std::copy(acc, acc + map.numOut, y);
  } else if constexpr (op == R::LogSumExp) {
    double *peak = scratch<double>(kSlotRow, static_cast<size_t>(map.numOut));
    double *acc = scratch<double>(kSlotAcc, static_cast<size_t>(map.numOut));
    std::fill(peak, peak + map.numOut, -std::numeric_limits<double>::infinity());
    std::fill(acc, acc + map.numOut, 0.0);
    map.forEach([&](int64_t i, int64_t o) { peak[o] = std::max(peak[o], double(x[i])); });
    map.forEach([&](int64_t i, int64_t o) { acc[o] += std::exp(double(x[i]) - peak[o]); });
    for (int64_t o = 0; o < map.numOut; ++o)
      y[o] = saturateCast<T>(map.count ? std::log(acc[o]) + peak[o]
                                     : -std::numeric_limits<double>::infinity());
  } else {
    uint64_t *acc = scratch<uint64_t>(kSlotAcc, static_cast<size_t>(map.numOut));
    std::fill(acc, acc + map.numOut, op == R::Prod ? uint64_t(1) : uint64_t(0));
    map.forEach([&](int64_t i, int64_t o) {
      const uint64_t v = static_cast<uint64_t>(static_cast<W>(x[i]));
      switch (op) {
      case R::Sum: case R::Mean: case R::LogSum: acc[o] += v; break;
      case R::Prod: acc[o] *= v; break;
      case R::L1:
        acc[o] += (std::is_signed<T>::value && x[i] < 0) ? uint64_t(0) - v : v;
        break;
      case R::L2: case R::SumSquare: acc[o] += v * v; break;
      default: break;
      }
    });
    for (int64_t o = 0; o < map.numOut; ++o) {
      const double sum = static_cast<double>(static_cast<W>(acc[o]));
      switch (op) {
      case R::Mean: y[o] = saturateCast<T>(sum / static_cast<double>(map.count)); break;
      case R::L2: y[o] = saturateCast<T>(std::sqrt(sum)); break;
      case R::LogSum: y[o] = saturateCast<T>(std::log(sum)); break;
      default: y[o] = static_cast<T>(acc[o]); break; // wraps, like the arithmetic
      }
    }
  }
}

template <R op>
KernelStatus reduceKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  const char *name = reduceName(op);
  if (auto s = checkUnary(name, inputs, outputs); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  ReduceMap map;
  if (auto s = planReduce(name, attrs, in, out, map); !s.ok())
    return s;
  bool handled = dispatchOnly<kNumeric>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    if constexpr (isFloatElem<T>())
      reduceFloat<op, T>(map, x, y);
    else
      reduceInt<op, T>(map, x, y);
  });
  return handled ? KernelStatus{} : unsupported(name, in.dtype);
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

// Shape split around one axis: [outer, axis, inner].
struct AxisSplit {
  int64_t outer = 1, length = 1, inner = 1;
};

bool splitAxis(const std::vector<int64_t> &shape, int64_t axis, AxisSplit &s) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  axis = normalizeAxis(axis, rank);
  if (rank == 0 || axis < 0 || axis >= rank)
    return false;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? s.outer : d == axis ? s.length : s.inner) *= shape[d];
  return true;
}

template <bool isLog>
KernelStatus softmaxKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                           const std::vector<TensorView *> &outputs) {
  const char *name = isLog ? "log_softmax" : "softmax";
  if (auto s = checkUnary(name, inputs, outputs); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (out.dtype != in.dtype || out.numElements() != in.numElements())
    return fail(std::string(name) + ": result must match the input");
  AxisSplit s;
  if (!splitAxis(in.shape, attrs.getInt("axis", -1), s))
    return fail(std::string(name) + ": axis out of range");
  bool handled = dispatchOnly<kFloat>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    double *v = scratch<double>(kSlotRow, static_cast<size_t>(s.length));
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.length * s.inner + i;
        double peak = -std::numeric_limits<double>::infinity();
        for (int64_t a = 0; a < s.length; ++a) {
          v[a] = loadElem(x[base + a * s.inner]);
          peak = std::max(peak, v[a]);
        }
        // An all -inf (or +inf) row has no finite peak to subtract: use 0,
        // giving the IEEE results of the unshifted formula.
        const double shift = std::isfinite(peak) ? peak : 0.0;
        double sum = 0;
        for (int64_t a = 0; a < s.length; ++a)
          sum += std::exp(v[a] - shift);
        const double logSum = std::log(sum);
        for (int64_t a = 0; a < s.length; ++a) {
          double r = isLog ? v[a] - shift - logSum : std::exp(v[a] - shift) / sum;
          y[base + a * s.inner] = storeElem<T>(static_cast<MathType<T>>(r));
        }
      }
  });
  return handled ? KernelStatus{} : unsupported(name, in.dtype);
}

//===----------------------------------------------------------------------===//
// top_k
//===----------------------------------------------------------------------===//

/// The k first elements of each line along the axis in top_k's order
/// (elementwise::topKBefore), their values and int64 indices; k is the
/// results' extent along the axis.
KernelStatus topKKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (inputs.size() != 1 || !inputs[0] || outputs.size() != 2 || !outputs[0] || !outputs[1])
    return fail("top_k: expected one input and two outputs");
  const TensorView &in = *inputs[0];
  TensorView &values = *outputs[0], &indices = *outputs[1];
  AxisSplit s;
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const int64_t axis = normalizeAxis(attrs.getInt("axis", -1), rank);
  if (!splitAxis(in.shape, axis, s))
    return fail("top_k: axis out of range");
  if (values.dtype != in.dtype || indices.dtype != DType::I64 || values.shape != indices.shape ||
      values.shape.size() != in.shape.size())
    return fail("top_k: the results must be the input's dtype and i64, of one shape");
  const int64_t k = values.shape[axis];
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && values.shape[d] != in.shape[d])
      return fail("top_k: the results must have the input's shape but along the axis");
  if (k > s.length)
    return fail("top_k: k is larger than the axis");
  const bool largest = attrs.getInt("largest", 1) != 0;
  bool handled = dispatchOnly<kNumeric>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = std::conditional_t<isFloatElem<T>(), double, int64_t>;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(values.data);
    int64_t *yi = static_cast<int64_t *>(indices.data);
    std::vector<int64_t> order(s.length);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        auto at = [&](int64_t a) {
          return static_cast<V>(loadElem(x[(o * s.length + a) * s.inner + i]));
        };
        std::iota(order.begin(), order.end(), int64_t(0));
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int64_t a, int64_t b) {
                            return elementwise::topKBefore(at(a), a, at(b), b, largest);
                          });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t e = (o * k + j) * s.inner + i;
          y[e] = x[(o * s.length + order[j]) * s.inner + i];
          yi[e] = order[j];
        }
      }
  });
  return handled ? KernelStatus{} : unsupported("top_k", in.dtype);
}

//===----------------------------------------------------------------------===//
// argmax, argmin
//===----------------------------------------------------------------------===//

template <bool isMax>
KernelStatus argKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                       const std::vector<TensorView *> &outputs) {
  const char *name = isMax ? "argmax" : "argmin";
  if (auto s = checkUnary(name, inputs, outputs); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (out.dtype != DType::I64)
    return fail(std::string(name) + ": result must be i64");
  AxisSplit s;
  if (!splitAxis(in.shape, attrs.getInt("axis", 0), s))
    return fail(std::string(name) + ": axis out of range");
  if (out.numElements() != s.outer * s.inner)
    return fail(std::string(name) + ": result element count does not match");
  if (s.length == 0 && s.outer * s.inner != 0)
    return fail(std::string(name) + ": cannot take the index of an empty axis");
  // The key is longer than the small-string buffer: build it once.
  static const std::string kSelectLastIndex = "select_last_index";
  const bool last = attrs.getInt(kSelectLastIndex, 0) != 0;
  bool handled = dispatchOnly<kNumeric>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = MathType<T>;
    const T *x = static_cast<const T *>(in.data);
    int64_t *y = static_cast<int64_t *>(out.data);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.length * s.inner + i;
        C best = loadElem(x[base]);
        int64_t bestIndex = 0;
        for (int64_t a = 1; a < s.length; ++a) {
          const C v = loadElem(x[base + a * s.inner]);
          bool take;
          if constexpr (std::is_floating_point<C>::value) {
            // NaN wins (as numpy's argmax/argmin): the first NaN, or the
            // last with select_last_index.
            if (std::isnan(best)) {
              take = last && std::isnan(v);
              if (take) {
                bestIndex = a;
              }
              continue;
            }
            if (std::isnan(v)) {
              best = v;
              bestIndex = a;
              continue;
            }
          }
          take = isMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          if (take) {
            best = v;
            bestIndex = a;
          }
        }
        y[o * s.inner + i] = bestIndex;
      }
  });
  return handled ? KernelStatus{} : unsupported(name, in.dtype);
}

//===----------------------------------------------------------------------===//
// cumsum, cumprod
//===----------------------------------------------------------------------===//

/// Running sums (products) along the axis (from its end with `reverse`;
/// without the element itself with `exclusive`, the first result then the
/// identity): floats in double, each result rounded once to T; integers wrap,
/// like the arithmetic (a product's low 64 bits are the signed one's).
template <bool Product>
KernelStatus scanKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  const char *name = Product ? "cumprod" : "cumsum";
  if (auto s = checkUnary(name, inputs, outputs); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (out.shape != in.shape || out.dtype != in.dtype)
    return fail(std::string(name) + ": the result must have the input's shape and dtype");
  AxisSplit s;
  if (!splitAxis(in.shape, attrs.getInt("axis", 0), s))
    return fail(std::string(name) + ": axis out of range");
  const bool exclusive = attrs.getInt("exclusive", 0) != 0,
             reverse = attrs.getInt("reverse", 0) != 0;
  bool handled = dispatchOnly<kNumeric>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<isFloatElem<T>(), double, uint64_t>;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        Acc acc = Product ? Acc(1) : Acc(0);
        for (int64_t step = 0; step < s.length; ++step) {
          const int64_t a = reverse ? s.length - 1 - step : step;
          const int64_t e = (o * s.length + a) * s.inner + i;
          Acc v;
          if constexpr (isFloatElem<T>())
            v = static_cast<double>(loadElem(x[e]));
          else
            v = static_cast<uint64_t>(static_cast<int64_t>(x[e]));
          if (!exclusive)
            acc = Product ? acc * v : acc + v;
          if constexpr (isFloatElem<T>())
            y[e] = saturateCast<T>(acc);
          else
            y[e] = static_cast<T>(acc);
          if (exclusive)
            acc = Product ? acc * v : acc + v;
        }
      }
  });
  return handled ? KernelStatus{} : unsupported(name, in.dtype);
}

} // namespace

void addReductionKernels(KernelTable &t) {
  t["reduce_sum"] = &reduceKernel<R::Sum>;
  t["reduce_mean"] = &reduceKernel<R::Mean>;
  t["reduce_max"] = &reduceKernel<R::Max>;
  t["reduce_min"] = &reduceKernel<R::Min>;
  t["reduce_prod"] = &reduceKernel<R::Prod>;
  t["reduce_l1"] = &reduceKernel<R::L1>;
  t["reduce_l2"] = &reduceKernel<R::L2>;
  t["reduce_log_sum"] = &reduceKernel<R::LogSum>;
  t["reduce_log_sum_exp"] = &reduceKernel<R::LogSumExp>;
  t["reduce_sum_square"] = &reduceKernel<R::SumSquare>;
  t["softmax"] = &softmaxKernel<false>;
  t["log_softmax"] = &softmaxKernel<true>;
  t["argmax"] = &argKernel<true>;
  t["argmin"] = &argKernel<false>;
  t["cumsum"] = &scanKernel<false>;
  t["cumprod"] = &scanKernel<true>;
  t["top_k"] = &topKKernel;
}

} // namespace tessel::cpu
