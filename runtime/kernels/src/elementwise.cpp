//===- elementwise.cpp - unary, binary and ternary elementwise kernels -----===//
//
// The CPU kernels of the elementwise ops: unary math on f32/f64/f16 (f16:
// load to float, compute in float, round to nearest even), integer variants
// of abs/neg/sign/relu/clip, numpy-broadcast binary arithmetic and
// comparisons, logical ops on bool, and where. What each op computes on one
// element is tessel/elementwise_math.h, shared with the CUDA kernels; this
// file checks operands and walks the tensors.
//
// Every kernel validates dtypes and shapes and reports a KernelStatus error
// instead of throwing or touching memory it does not own. Integer arithmetic
// wraps (two's complement), integer division truncates toward zero, and
// integer division and remainder by zero yield 0 rather than trapping.
//
//===----------------------------------------------------------------------===//
#include "dispatch.h"
#include "tessel/half.h"
#include "tessel/cpu_kernels.h"
#include "tessel/elementwise_math.h"
#include "tessel/elementwise_program.h"
#include "registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessel::cpu {
namespace {

KernelStatus checkArity(const char *op, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs, size_t numInputs) {
  if (inputs.size() < numInputs || outputs.empty())
    return fail(std::string(op) + ": expected " + std::to_string(numInputs) +
                " inputs and 1 output");
  for (size_t i = 0; i < numInputs; ++i)
    if (!inputs[i] || (!inputs[i]->data && inputs[i]->numElements() != 0))
      return fail(std::string(op) + ": missing input " + std::to_string(i));
  if (!outputs[0] || (!outputs[0]->data && outputs[0]->numElements() != 0))
    return fail(std::string(op) + ": missing output");
  return {};
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

// Broadcast state lives in fixed arrays (ranks up to kMaxRank, as the
// movement kernels): iterating allocates nothing.
constexpr size_t kMaxRank = 16;

// Iterates the output of an N-ary numpy-broadcast op. For each input, its
// element strides in the output index space (0 along broadcast dims).
template <size_t K> class Broadcast {
public:
  // Returns an error message when an input does not broadcast to `out`.
  std::string init(const std::vector<int64_t> &out,
                   const std::array<const std::vector<int64_t> *, K> &ins) {
    if (out.size() > kMaxRank)
      return "rank " + std::to_string(out.size()) + " is beyond the limit of " +
             std::to_string(kMaxRank);
    rank = out.size();
    std::copy(out.begin(), out.end(), shape.begin());
    for (size_t k = 0; k < K; ++k) {
      const std::vector<int64_t> &in = *ins[k];
      if (in.size() > rank)
        return "input " + std::to_string(k) + " has higher rank than the result";
      strides[k].fill(0);
      int64_t stride = 1;
      for (size_t j = 0; j < in.size(); ++j) {
        size_t i = in.size() - 1 - j;   // input dim
        size_t d = rank - 1 - j;        // output dim
        if (in[i] == out[d]) {
          strides[k][d] = in[i] == 1 ? 0 : stride;
        } else if (in[i] == 1) {
          strides[k][d] = 0;
        } else {
          return "input " + std::to_string(k) + " does not broadcast to the result shape";
        }
        stride *= in[i];
      }
    }
    return {};
  }

  // f(outIndex, offsets) for every output element, in row-major order.
  template <typename F> void forEach(F &&f) const {
    int64_t total = 1;
    for (size_t d = 0; d < rank; ++d)
      total *= shape[d];
    if (total == 0)
      return;
    if (rank == 0) {
      std::array<int64_t, K> offsets{};
      f(int64_t(0), offsets);
      return;
    }
    int64_t inner = shape[rank - 1];
    std::array<int64_t, K> innerStride;
    for (size_t k = 0; k < K; ++k)
      innerStride[k] = strides[k][rank - 1];
    std::array<int64_t, kMaxRank> index{};
    std::array<int64_t, K> base{};
    for (int64_t o = 0; o < total; o += inner) {
      std::array<int64_t, K> offsets = base;
      for (int64_t i = 0; i < inner; ++i) {
        f(o + i, offsets);
        for (size_t k = 0; k < K; ++k)
          offsets[k] += innerStride[k];
      }
      // Advance the outer dims (rank-2 .. 0).
      for (size_t d = rank - 1; d-- > 0;) {
        ++index[d];
        for (size_t k = 0; k < K; ++k)
          base[k] += strides[k][d];
        if (index[d] < shape[d])
          break;
        for (size_t k = 0; k < K; ++k)
          base[k] -= strides[k][d] * shape[d];
        index[d] = 0;
      }
    }
  }

private:
  std::array<int64_t, kMaxRank> shape{};
  size_t rank = 0;
  std::array<std::array<int64_t, kMaxRank>, K> strides{};
};

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

using elementwise::Unary;
using U = Unary;

using elementwise::UnaryParams;

const char *unaryName(U op) { return elementwise::kUnaryNames[static_cast<int>(op)]; }

KernelStatus checkSameShapeAndType(const char *op, const TensorView &in,
                                   const TensorView &out) {
  if (in.dtype != out.dtype)
    return fail(std::string(op) + ": result dtype " + dtypeName(out.dtype) +
                " differs from input dtype " + dtypeName(in.dtype));
  if (in.numElements() != out.numElements())
    return fail(std::string(op) + ": result and input element counts differ");
  return {};
}

template <U op>
KernelStatus unaryKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                         const std::vector<TensorView *> &outputs) {
  const char *name = unaryName(op);
  if (auto s = checkArity(name, inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (auto s = checkSameShapeAndType(name, in, out); !s.ok())
    return s;
  const UnaryParams p = elementwise::unaryParams(
      op, [&](const char *attr, double fallback) { return attrs.getFloat(attr, fallback); });
  const int64_t n = in.numElements();
  unsigned families = elementwise::hasIntegerForm(op) ? kNumeric : kFloat;
  bool handled = dispatch(in.dtype, families, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    if constexpr (isFloatElem<T>()) {
      using C = MathType<T>;
      for (int64_t i = 0; i < n; ++i)
        y[i] = storeElem<T>(elementwise::unaryFloat<op, C>(loadElem(x[i]), p));
    } else {
      for (int64_t i = 0; i < n; ++i)
        y[i] = elementwise::unaryInt<op, T>(x[i]);
    }
  });
  return handled ? KernelStatus{} : unsupported(name, in.dtype);
}

KernelStatus notKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                       const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("not", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (auto s = checkSameShapeAndType("not", in, out); !s.ok())
    return s;
  if (in.dtype != DType::Bool)
    return unsupported("not", in.dtype);
  const uint8_t *x = static_cast<const uint8_t *>(in.data);
  uint8_t *y = static_cast<uint8_t *>(out.data);
  for (int64_t i = 0, n = in.numElements(); i < n; ++i)
    y[i] = x[i] ? 0 : 1;
  return {};
}

} // namespace

bool convertBound(DType dtype, double value, Bound &bound) {
  return dispatch(dtype, kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatElem<T>())
      bound.real = static_cast<double>(loadElem(saturateCast<T>(value)));
    else
      bound.integer = static_cast<int64_t>(saturateCast<T>(value));
  });
}

namespace {

KernelStatus clipKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("clip", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (auto s = checkSameShapeAndType("clip", in, out); !s.ok())
    return s;
  const double lo = attrs.getFloat("min", -std::numeric_limits<double>::infinity());
  const double hi = attrs.getFloat("max", std::numeric_limits<double>::infinity());
  const int64_t n = in.numElements();
  bool handled = dispatch(in.dtype, kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = MathType<T>;
    // The bounds in the tensor's dtype (integers saturate, f16 rounds).
    const C l = loadElem(saturateCast<T>(lo)), h = loadElem(saturateCast<T>(hi));
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    for (int64_t i = 0; i < n; ++i)
      y[i] = storeElem<T>(elementwise::clip(loadElem(x[i]), l, h));
  });
  return handled ? KernelStatus{} : unsupported("clip", in.dtype);
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

using B = elementwise::Binary;

const char *binaryName(B op) {
  static const char *names[] = {"add", "sub", "mul", "div", "pow",
                                "mod", "mod", "max", "min", "prelu"};
  return names[static_cast<int>(op)];
}

template <B op, typename T> T binaryOp(T a, T b) {
  if constexpr (isFloatElem<T>())
    return storeElem<T>(elementwise::binaryFloat<op, MathType<T>>(loadElem(a), loadElem(b)));
  else
    return elementwise::binaryInt<op, T>(a, b);
}

template <B op>
KernelStatus binaryKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  const char *name = binaryName(op);
  if (auto s = checkArity(name, inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  TensorView &out = *outputs[0];
  if (out.dtype != a.dtype)
    return fail(std::string(name) + ": result dtype " + dtypeName(out.dtype) +
                " differs from operand dtype " + dtypeName(a.dtype));
  Broadcast<2> bc;
  if (std::string e = bc.init(out.shape, {&a.shape, &b.shape}); !e.empty())
    return fail(std::string(name) + ": " + e);

  if (a.dtype != b.dtype) {
    // Only pow takes mixed operand types: compute in double, cast to the
    // base's dtype.
    if (op != B::Pow)
      return fail(std::string(name) + ": operand dtypes differ (" + dtypeName(a.dtype) +
                  " vs " + dtypeName(b.dtype) + ")");
    if (!dispatch(b.dtype, kNumeric, [](auto) {}))
      return unsupported(name, b.dtype);
    bool handled = dispatch(a.dtype, kNumeric, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T *x = static_cast<const T *>(a.data);
      T *y = static_cast<T *>(out.data);
      dispatch(b.dtype, kNumeric, [&](auto etag) {
        using E = typename decltype(etag)::type;
        const E *e = static_cast<const E *>(b.data);
        bc.forEach([&](int64_t o, const std::array<int64_t, 2> &off) {
          double base = static_cast<double>(loadElem(x[off[0]]));
          double exponent = static_cast<double>(loadElem(e[off[1]]));
          y[o] = saturateCast<T>(std::pow(base, exponent));
        });
      });
    });
    return handled ? KernelStatus{} : unsupported(name, a.dtype);
  }

  if (op == B::Mod && dispatch(a.dtype, kFloat, [](auto) {}))
    return fail(std::string(name) + ": fmod=0 (the sign of the divisor) is defined for "
                "integers only, not " + dtypeName(a.dtype) + "; floats need fmod=1");
  bool handled = dispatch(a.dtype, kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(a.data);
    const T *w = static_cast<const T *>(b.data);
    T *y = static_cast<T *>(out.data);
    bc.forEach([&](int64_t o, const std::array<int64_t, 2> &off) {
      y[o] = binaryOp<op, T>(x[off[0]], w[off[1]]);
    });
  });
  return handled ? KernelStatus{} : unsupported(name, a.dtype);
}

// ONNX Mod: the fmod attribute picks the remainder's sign.
KernelStatus modKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                       const std::vector<TensorView *> &outputs) {
  return attrs.getInt("fmod", 0) ? binaryKernel<B::FMod>(attrs, inputs, outputs)
                                 : binaryKernel<B::Mod>(attrs, inputs, outputs);
}

using Cmp = elementwise::Compare;

const char *cmpName(Cmp op) {
  static const char *names[] = {"equal", "less", "less_equal", "greater", "greater_equal"};
  return names[static_cast<int>(op)];
}

template <Cmp op>
KernelStatus compareKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                           const std::vector<TensorView *> &outputs) {
  const char *name = cmpName(op);
  if (auto s = checkArity(name, inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  TensorView &out = *outputs[0];
  if (out.dtype != DType::Bool)
    return fail(std::string(name) + ": result must be bool");
  if (a.dtype != b.dtype)
    return fail(std::string(name) + ": operand dtypes differ");
  Broadcast<2> bc;
  if (std::string e = bc.init(out.shape, {&a.shape, &b.shape}); !e.empty())
    return fail(std::string(name) + ": " + e);
  bool handled = dispatch(a.dtype, op == Cmp::Equal ? kAll : kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(a.data);
    const T *w = static_cast<const T *>(b.data);
    uint8_t *y = static_cast<uint8_t *>(out.data);
    bc.forEach([&](int64_t o, const std::array<int64_t, 2> &off) {
      y[o] = elementwise::compare<op>(loadElem(x[off[0]]), loadElem(w[off[1]])) ? 1 : 0;
    });
  });
  return handled ? KernelStatus{} : unsupported(name, a.dtype);
}

using L = elementwise::Logic;

template <L op>
KernelStatus logicalKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                           const std::vector<TensorView *> &outputs) {
  const char *name = op == L::And ? "and" : op == L::Or ? "or" : "xor";
  if (auto s = checkArity(name, inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  TensorView &out = *outputs[0];
  if (a.dtype != DType::Bool || b.dtype != DType::Bool || out.dtype != DType::Bool)
    return fail(std::string(name) + ": operands and result must be bool");
  Broadcast<2> bc;
  if (std::string e = bc.init(out.shape, {&a.shape, &b.shape}); !e.empty())
    return fail(std::string(name) + ": " + e);
  const uint8_t *x = static_cast<const uint8_t *>(a.data);
  const uint8_t *w = static_cast<const uint8_t *>(b.data);
  uint8_t *y = static_cast<uint8_t *>(out.data);
  bc.forEach([&](int64_t o, const std::array<int64_t, 2> &off) {
    y[o] = elementwise::logic<op>(x[off[0]] != 0, w[off[1]] != 0) ? 1 : 0;
  });
  return {};
}

template <size_t N> void selectBytes(const Broadcast<3> &bc, const uint8_t *cond,
                                     const uint8_t *x, const uint8_t *w, uint8_t *y) {
  bc.forEach([&](int64_t o, const std::array<int64_t, 3> &off) {
    const uint8_t *src = cond[off[0]] ? x + off[1] * N : w + off[2] * N;
    std::memcpy(y + o * N, src, N);
  });
}

KernelStatus whereKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                         const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("where", inputs, outputs, 3); !s.ok())
    return s;
  const TensorView &c = *inputs[0], &a = *inputs[1], &b = *inputs[2];
  TensorView &out = *outputs[0];
  if (c.dtype != DType::Bool)
    return fail("where: condition must be bool");
  if (a.dtype != b.dtype || a.dtype != out.dtype)
    return fail("where: value operands and result must share a dtype");
  Broadcast<3> bc;
  if (std::string e = bc.init(out.shape, {&c.shape, &a.shape, &b.shape}); !e.empty())
    return fail(std::string("where: ") + e);
  const auto *cond = static_cast<const uint8_t *>(c.data);
  const auto *x = static_cast<const uint8_t *>(a.data);
  const auto *w = static_cast<const uint8_t *>(b.data);
  auto *y = static_cast<uint8_t *>(out.data);
  switch (dtypeSize(a.dtype)) {
  case 1: selectBytes<1>(bc, cond, x, w, y); break;
  case 2: selectBytes<2>(bc, cond, x, w, y); break;
  case 4: selectBytes<4>(bc, cond, x, w, y); break;
  case 8: selectBytes<8>(bc, cond, x, w, y); break;
  default: return unsupported("where", a.dtype);
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Elementwise groups
//===----------------------------------------------------------------------===//

// A fused group (tessel/elementwise_program.h): the program, interpreted per
// element of the result in float (double where an operand is f64), rounded
// once at the store and at each cast_f16.
KernelStatus elementwiseGroupKernel(const Attrs &attrs,
                                    const std::vector<const TensorView *> &inputs,
                                    const std::vector<TensorView *> &outputs) {
  constexpr size_t K = elementwise::kMaxGroupInputs;
  elementwise::Program program;
  if (std::string e = elementwise::parseProgram(attrs.getString("program"), program); !e.empty())
    return fail("elementwise_group: program: " + e);
  const size_t count = static_cast<size_t>(program.numInputs);
  if (auto s = checkArity("elementwise_group", inputs, outputs, count); !s.ok())
    return s;
  TensorView &out = *outputs[0];
  if (out.dtype != DType::F32 && out.dtype != DType::F16 && out.dtype != DType::F64)
    return unsupported("elementwise_group", out.dtype);
  bool wide = out.dtype == DType::F64;
  const std::vector<int64_t> scalar;
  std::array<const std::vector<int64_t> *, K> shapes;
  shapes.fill(&scalar);
  for (size_t k = 0; k < count; ++k) {
    const DType d = inputs[k]->dtype;
    if (program.conditions[k] ? d != DType::Bool
                              : d != DType::F32 && d != DType::F16 && d != DType::F64)
      return fail("elementwise_group: input " + std::to_string(k) + " is " + dtypeName(d) +
                  (program.conditions[k] ? ", not a bool condition" : ", not a float"));
    wide = wide || d == DType::F64;
    shapes[k] = &inputs[k]->shape;
  }
  Broadcast<K> bc;
  if (std::string e = bc.init(out.shape, shapes); !e.empty())
    return fail("elementwise_group: " + e);

  auto run = [&](auto zero) {
    using C = decltype(zero);
    C values[elementwise::kMaxGroupInstructions];
    auto roundF16 = [](C v) {
      return static_cast<C>(loadElem(storeElem<Half>(static_cast<float>(v))));
    };
    bc.forEach([&](int64_t o, const std::array<int64_t, K> &off) {
      auto input = [&](int k) -> C {
        const TensorView &in = *inputs[static_cast<size_t>(k)];
        const int64_t i = off[static_cast<size_t>(k)];
        switch (in.dtype) {
        case DType::F32: return static_cast<C>(static_cast<const float *>(in.data)[i]);
        case DType::F64: return static_cast<C>(static_cast<const double *>(in.data)[i]);
        case DType::F16: return static_cast<C>(loadElem(static_cast<const Half *>(in.data)[i]));
        case DType::Bool: return static_cast<const uint8_t *>(in.data)[i] ? C(1) : C(0);
        default: return C(0);
        }
      };
      const C v = elementwise::evaluate<C>(program, input, roundF16, values);
      switch (out.dtype) {
      case DType::F32: static_cast<float *>(out.data)[o] = static_cast<float>(v); break;
      case DType::F64: static_cast<double *>(out.data)[o] = static_cast<double>(v); break;
      default: static_cast<Half *>(out.data)[o] = storeElem<Half>(static_cast<float>(v)); break;
      }
    });
  };
  if (wide)
    run(double{});
  else
    run(float{});
  return {};
}

} // namespace

void addElementwiseKernels(KernelTable &t) {
#define TESSEL_UNARY(name, id) t[name] = &unaryKernel<U::id>;
  TESSEL_UNARY("relu", Relu)
  TESSEL_UNARY("sigmoid", Sigmoid)
  TESSEL_UNARY("tanh", Tanh)
  TESSEL_UNARY("abs", Abs)
  TESSEL_UNARY("neg", Neg)
  TESSEL_UNARY("exp", Exp)
  TESSEL_UNARY("log", Log)
  TESSEL_UNARY("sqrt", Sqrt)
  TESSEL_UNARY("reciprocal", Reciprocal)
  TESSEL_UNARY("floor", Floor)
  TESSEL_UNARY("ceil", Ceil)
  TESSEL_UNARY("round", Round)
  TESSEL_UNARY("sign", Sign)
  TESSEL_UNARY("erf", Erf)
  TESSEL_UNARY("sin", Sin)
  TESSEL_UNARY("cos", Cos)
  TESSEL_UNARY("tan", Tan)
  TESSEL_UNARY("asin", Asin)
  TESSEL_UNARY("acos", Acos)
  TESSEL_UNARY("atan", Atan)
  TESSEL_UNARY("sinh", Sinh)
  TESSEL_UNARY("cosh", Cosh)
  TESSEL_UNARY("asinh", Asinh)
  TESSEL_UNARY("acosh", Acosh)
  TESSEL_UNARY("atanh", Atanh)
  TESSEL_UNARY("softplus", Softplus)
  TESSEL_UNARY("softsign", Softsign)
  TESSEL_UNARY("hard_swish", HardSwish)
  TESSEL_UNARY("leaky_relu", LeakyRelu)
  TESSEL_UNARY("elu", Elu)
  TESSEL_UNARY("celu", Celu)
  TESSEL_UNARY("selu", Selu)
  TESSEL_UNARY("thresholded_relu", ThresholdedRelu)
  TESSEL_UNARY("hard_sigmoid", HardSigmoid)
  TESSEL_UNARY("shrink", Shrink)
  TESSEL_UNARY("gelu", Gelu)
  TESSEL_UNARY("gelu_tanh", GeluTanh)
  TESSEL_UNARY("silu", Silu)
#undef TESSEL_UNARY
  t["not"] = &notKernel;
  t["clip"] = &clipKernel;

  t["add"] = &binaryKernel<B::Add>;
  t["sub"] = &binaryKernel<B::Sub>;
  t["mul"] = &binaryKernel<B::Mul>;
  t["div"] = &binaryKernel<B::Div>;
  t["pow"] = &binaryKernel<B::Pow>;
  t["mod"] = &modKernel;
  t["max"] = &binaryKernel<B::Max>;
  t["min"] = &binaryKernel<B::Min>;
  t["prelu"] = &binaryKernel<B::PRelu>;

  t["equal"] = &compareKernel<Cmp::Equal>;
  t["less"] = &compareKernel<Cmp::Less>;
  t["less_equal"] = &compareKernel<Cmp::LessEqual>;
  t["greater"] = &compareKernel<Cmp::Greater>;
  t["greater_equal"] = &compareKernel<Cmp::GreaterEqual>;

  t["and"] = &logicalKernel<L::And>;
  t["or"] = &logicalKernel<L::Or>;
  t["xor"] = &logicalKernel<L::Xor>;
  t["where"] = &whereKernel;
  t["elementwise_group"] = &elementwiseGroupKernel;
}

} // namespace tessel::cpu
