//===- ElementwiseOps.cpp - ONNX elementwise ops --------------------------===//
//
// Unary ops (with their float attributes' ONNX defaults), Clip, Cast and
// CastLike, IsInf, and the broadcasting binary and variadic ops: one tessel op
// each, except variadic Max/Min/Sum/Mean (a chain of binary ops) and IsInf
// (equal against the infinities), and QuantizeLinear / DequantizeLinear
// (their arithmetic as float ops, a clip and casts).
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"
#include "TensorProto.h"

#include <limits>

using namespace mlir;

namespace tessel::importer {
namespace {

template <typename OpT> LogicalResult importUnary(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  return n.setOutput(0, n.create<OpT>(x->getType(), *x));
}

/// Gelu (opset 20): the erf form, or with approximate="tanh" the tanh form.
LogicalResult importGelu(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::string> approximate = n.getString("approximate", "none");
  if (failed(x) || failed(approximate))
    return failure();
  if (*approximate == "none")
    return n.setOutput(0, n.create<GeluOp>(x->getType(), *x));
  if (*approximate == "tanh")
    return n.setOutput(0, n.create<GeluTanhOp>(x->getType(), *x));
  return n.invalid("approximate '" + *approximate + "' is neither none nor tanh");
}

/// Swish (opset 24): x * sigmoid(alpha * x); SiLU where alpha is 1, else the
/// product as written (the gate then reads alpha * x, not x, so it stays two
/// ops and a multiply).
LogicalResult importSwish(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<float> alpha = n.getFloat("alpha", 1.0f);
  if (failed(x) || failed(alpha))
    return failure();
  Type type = x->getType();
  if (*alpha == 1.0f)
    return n.setOutput(0, n.create<SiluOp>(type, *x));
  Type element = cast<RankedTensorType>(type).getElementType();
  if (!isa<FloatType>(element))
    return n.invalid("Swish needs a float input");
  Value scaled = n.create<MulOp>(type, ValueRange{*x, n.scalar(element, *alpha)});
  Value gate = n.create<SigmoidOp>(type, scaled);
  return n.setOutput(0, n.create<MulOp>(type, ValueRange{*x, gate}));
}

/// Unary ops with float attributes, each with its ONNX default.
struct FloatAttrDefault {
  const char *name;
  float value;
};

template <typename OpT>
LogicalResult importUnaryWithAttrs(Node &n,
                                   ArrayRef<FloatAttrDefault> defaults) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  for (FloatAttrDefault a : defaults) {
    FailureOr<float> value = n.getFloat(a.name, a.value);
    if (failed(value))
      return failure();
    attrs.push_back(n.named(a.name, n.b.getF32FloatAttr(*value)));
  }
  return n.setOutput(0, n.create<OpT>(x->getType(), *x, attrs));
}

template <typename OpT> LogicalResult importBinary(Node &n) {
  FailureOr<Value> lhs = n.input(0), rhs = n.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<Value> result = createBinary<OpT>(n, *lhs, *rhs);
  return failed(result) ? failure() : n.setOutput(0, *result);
}

/// Mod: fmod=0 (the sign of the divisor) is for integers only, per ONNX.
LogicalResult importMod(Node &n) {
  FailureOr<int64_t> fmod = n.getInt("fmod", 0);
  if (failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return n.invalid("attribute 'fmod' must be 0 or 1, not " + Twine(*fmod));
  FailureOr<Value> lhs = n.input(0), rhs = n.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (!*fmod && isa<FloatType>(elementOf(*lhs)))
    return n.invalid("fmod=0 (integer modulus) with " +
                     typeText(elementOf(*lhs)) +
                     " operands: ONNX requires fmod=1 for floating-point "
                     "inputs (C fmod, the sign of the dividend)");
  FailureOr<Value> result = createBinary<ModOp>(
      n, *lhs, *rhs, {n.named("fmod", n.b.getBoolAttr(*fmod))});
  return failed(result) ? failure() : n.setOutput(0, *result);
}

/// Variadic Max, Min, Sum, Mean: a chain of binary ops (Mean then divides by
/// the input count); one input is an identity.
template <typename OpT, bool mean = false>
LogicalResult importVariadic(Node &n) {
  FailureOr<Value> acc = n.input(0);
  if (failed(acc))
    return failure();
  if (n.numInputs() == 1)
    return n.setOutput(0, n.create<IdentityOp>(acc->getType(), *acc));
  for (int i = 1; i < n.numInputs(); ++i) {
    FailureOr<Value> next = n.input(i);
    if (failed(next) || failed(acc = createBinary<OpT>(n, *acc, *next)))
      return failure();
  }
  if (mean) {
    Type element = elementOf(*acc);
    if (!isa<FloatType>(element))
      return n.invalid("Mean needs floating-point inputs");
    Value count = n.scalar(element, n.numInputs());
    if (failed(acc = createBinary<DivOp>(n, *acc, count)))
      return failure();
  }
  return n.setOutput(0, *acc);
}

LogicalResult importWhere(Node &n) {
  FailureOr<Value> cond = n.input(0), x = n.input(1), y = n.input(2);
  if (failed(cond) || failed(x) || failed(y))
    return failure();
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(shapeOf(*cond), shapeOf(*x));
  if (shape)
    shape = broadcastShapes(*shape, shapeOf(*y));
  if (!shape)
    return n.invalid("operand shapes do not broadcast");
  return n.setOutput(
      0, n.create<WhereOp>(RankedTensorType::get(*shape, elementOf(*x)),
                           {*cond, *x, *y}));
}

/// Clip's result: `x` clamped to [lo, hi].
LogicalResult setClip(Node &n, Value x, double lo, double hi) {
  return n.setOutput(
      0, n.create<ClipOp>(x.getType(), x,
                          {n.named("min", n.b.getF64FloatAttr(lo)),
                           n.named("max", n.b.getF64FloatAttr(hi))}));
}

/// Clip before opset 11: the bounds are attributes.
LogicalResult importClipAttributes(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  FailureOr<float> min =
      n.getFloat("min", std::numeric_limits<float>::lowest());
  FailureOr<float> max = n.getFloat("max", std::numeric_limits<float>::max());
  if (failed(min) || failed(max))
    return failure();
  return setClip(n, *x, *min, *max);
}

/// Clip from opset 11: the bounds are optional constant inputs.
LogicalResult importClipInputs(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Type element = elementOf(*x);
  double lo, hi;
  // Absent bounds do not clip: infinities, or the integer type's limits.
  if (auto integer = dyn_cast<IntegerType>(element)) {
    std::tie(lo, hi) = integerRange(integer);
  } else {
    lo = -std::numeric_limits<double>::infinity();
    hi = std::numeric_limits<double>::infinity();
  }
  if (n.has(1)) {
    FailureOr<double> min = n.constantScalar(1, "min");
    if (failed(min))
      return failure();
    lo = *min;
  }
  if (n.has(2)) {
    FailureOr<double> max = n.constantScalar(2, "max");
    if (failed(max))
      return failure();
    hi = *max;
  }
  return setClip(n, *x, lo, hi);
}

LogicalResult importCast(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Type target;
  if (n.opType() == "CastLike") {
    FailureOr<Value> like = n.input(1);
    if (failed(like))
      return failure();
    target = elementOf(*like);
  } else {
    FailureOr<int64_t> to = n.getInt("to", onnx::TensorProto::UNDEFINED);
    if (failed(to))
      return failure();
    target = elementType(n.ctx, static_cast<int32_t>(*to));
    if (!target)
      return n.unsupported(
          Twine("cast to ") + onnxTypeName(static_cast<int32_t>(*to)),
          "tessel casts between float, integer and bool types");
  }
  auto type = RankedTensorType::get(shapeOf(*x), target);
  if (type == x->getType())
    return n.setOutput(0, n.create<IdentityOp>(type, *x));
  return n.setOutput(0, n.create<CastOp>(type, *x));
}

/// IsInf as equal against +inf and -inf (or'ed where both are detected):
/// ops every tier runs; NaN is neither.
LogicalResult importIsInf(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> positive = n.getInt("detect_positive", 1),
                     negative = n.getInt("detect_negative", 1);
  if (failed(x) || failed(positive) || failed(negative))
    return failure();
  auto floatType = dyn_cast<FloatType>(elementOf(*x));
  if (!floatType)
    return n.invalid("input must be a float tensor");
  auto result = RankedTensorType::get(shapeOf(*x), n.b.getI1Type());
  auto against = [&](bool negativeInf) {
    Value inf = n.constantValue(DenseElementsAttr::get(
        RankedTensorType::get({}, floatType),
        APFloat::getInf(floatType.getFloatSemantics(), negativeInf)));
    return n.create<EqualOp>(result, {*x, inf});
  };
  if (*positive && *negative)
    return n.setOutput(0, n.create<OrOp>(result, {against(false), against(true)}));
  if (*positive || *negative)
    return n.setOutput(0, against(*negative != 0));
  return n.setConstantOutput(0, DenseElementsAttr::get(result, false));
}

/// A Q/DQ node's scale or zero point, shaped to broadcast against x of
/// shape `xs`: a scalar (or one element) per tensor; a vector along `axis`
/// per axis; with `block` > 0 (opset 21's blocked quantization), x's shape
/// with ceil(D / block) at `axis`, each element repeated `block` times
/// along it (unsqueeze, expand, merge, and a slice where the last block is
/// short).
FailureOr<Value> alignQuantParam(Node &n, Value param, ArrayRef<int64_t> xs, int64_t axis,
                                 int64_t block, StringRef what) {
  ArrayRef<int64_t> ps = shapeOf(param);
  const int64_t rank = xs.size();
  if (block == 0) {
    if (ps.size() <= 1 && ShapedType::getNumElements(ps) == 1)
      return param;
    if (ps.size() != 1 || ps[0] != xs[axis])
      return n.invalid(what + " has shape " + shapeText(ps) + "; per axis it is [" +
                       Twine(xs[axis]) + "], dim " + Twine(axis) + " of the input " +
                       shapeText(xs));
    SmallVector<int64_t> shape(rank - axis, 1);
    shape[0] = xs[axis];
    return n.reshape(param, shape);
  }
  const int64_t blocks = (xs[axis] + block - 1) / block;
  bool fits = int64_t(ps.size()) == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = ps[d] == (d == axis ? blocks : xs[d]);
  if (!fits)
    return n.invalid(what + " has shape " + shapeText(ps) + "; with block_size " +
                     Twine(block) + " along dim " + Twine(axis) + " of the input " +
                     shapeText(xs) + " it has " + Twine(blocks) + " there");
  SmallVector<int64_t> split(ps), repeated(ps), merged(ps);
  split.insert(split.begin() + axis + 1, 1);
  repeated.insert(repeated.begin() + axis + 1, block);
  merged[axis] = blocks * block;
  Value expanded = n.create<ExpandOp>(RankedTensorType::get(repeated, elementOf(param)),
                                      n.reshape(param, split));
  Value full = n.reshape(expanded, merged);
  if (merged[axis] == xs[axis])
    return full;
  return createSlice(n, full, SmallVector<int64_t>(rank, 0), SmallVector<int64_t>(rank, 1), xs);
}

/// What QuantizeLinear and DequantizeLinear read alike: x, the scale and
/// the optional zero point, each parameter aligned to x (alignQuantParam).
struct QuantOperands {
  Value x, scale, zeroPoint;
  Type scaleElement, zeroElement;
};

FailureOr<QuantOperands> quantOperands(Node &n) {
  FailureOr<Value> x = n.input(0), scale = n.input(1);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 1), block = n.getInt("block_size", 0);
  if (failed(x) || failed(scale) || failed(axisAttr) || failed(block))
    return failure();
  ArrayRef<int64_t> xs = shapeOf(*x);
  // The axis matters per axis and blocked only (its default, 1, is out of
  // range for a 1-D input quantized per tensor).
  ArrayRef<int64_t> ss = shapeOf(*scale);
  bool perTensor = *block == 0 && ss.size() <= 1 && ShapedType::getNumElements(ss) == 1;
  std::optional<int64_t> axis = perTensor ? 0 : normalizeAxis(*axisAttr, xs.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(xs.size()));
  if (*block < 0)
    return n.invalid("block_size " + Twine(*block) + " is negative");
  if (!isa<FloatType>(elementOf(*scale)))
    return n.invalid("the scale must be a float tensor, not " + typeText(elementOf(*scale)));
  QuantOperands q{*x, {}, {}, elementOf(*scale), {}};
  FailureOr<Value> aligned = alignQuantParam(n, *scale, xs, *axis, *block, "the scale");
  if (failed(aligned))
    return failure();
  q.scale = *aligned;
  if (n.has(2)) {
    FailureOr<Value> zero = n.input(2);
    if (failed(zero))
      return failure();
    if (shapeOf(*zero) != shapeOf(*scale))
      return n.invalid("the zero point's shape " + shapeText(shapeOf(*zero)) +
                       " is not the scale's " + shapeText(shapeOf(*scale)));
    q.zeroElement = elementOf(*zero);
    aligned = alignQuantParam(n, *zero, xs, *axis, *block, "the zero point");
    if (failed(aligned))
      return failure();
    q.zeroPoint = *aligned;
  }
  return q;
}

/// `v`, its producer pinned to the model's precision (kModelPrecisionAttr):
/// quantization arithmetic is integer arithmetic in float, which f16 cannot
/// hold (int16's range, a divide's rounding at a tie), so an fp16 engine
/// computes it in the model's type as it computes a model's Cast.
Value pinned(Value v) {
  if (Operation *op = v.getDefiningOp(); op && !isa<ConstantOp>(op))
    op->setAttr(kModelPrecisionAttr, UnitAttr::get(op->getContext()));
  return v;
}

/// The float type an attribute (output_dtype, precision) names, or `dflt`
/// when it is absent or 0.
FailureOr<Type> floatTypeAttr(Node &n, StringRef name, Type dflt) {
  FailureOr<int64_t> code = n.getInt(name, 0);
  if (failed(code))
    return failure();
  if (*code == 0)
    return dflt;
  Type t = elementType(n.ctx, static_cast<int32_t>(*code));
  if (!t || !isa<FloatType>(t))
    return FailureOr<Type>(n.unsupported(name + " " + onnxTypeName(static_cast<int32_t>(*code)),
                                         "float, float16, bfloat16 or double"));
  return t;
}

/// saturate(round(x / scale) + zero) in x's float type, pinned (the clip to
/// `integer`'s range is the saturation; the caller casts); `zero` may be
/// null.
FailureOr<Value> quantized(Node &n, Value x, Value scale, Value zero, IntegerType integer) {
  auto [lo, hi] = integerRange(integer);
  FailureOr<Value> scaled = createBinary<DivOp>(n, x, scale);
  if (failed(scaled))
    return failure();
  Value quotient = pinned(*scaled);
  Value y = pinned(n.create<RoundOp>(quotient.getType(), quotient));
  if (zero) {
    FailureOr<Value> shifted = createBinary<AddOp>(n, y, zero);
    if (failed(shifted))
      return failure();
    y = pinned(*shifted);
  }
  return pinned(n.create<ClipOp>(y.getType(), y,
                                 {n.named("min", n.b.getF64FloatAttr(lo)),
                                  n.named("max", n.b.getF64FloatAttr(hi))}));
}

/// QuantizeLinear: saturate(round(x / scale) + zero_point), rounding half
/// to even, per tensor, per axis or blocked (opset 21), to int8, uint8,
/// int16 or uint16 (the zero point's type, else output_dtype, else uint8),
/// as tessel ops: the divide in the scale's type (or `precision`'s), round,
/// add, a clip to the integer range, a cast; pinned to that type in an fp16
/// engine too (pinned). In a float engine a
/// DequantizeLinear of the result folds the cast pair away (CastOp::fold):
/// the pair is a fake quantization in float.
LogicalResult importQuantize(Node &n) {
  FailureOr<QuantOperands> q = quantOperands(n);
  if (failed(q))
    return failure();
  Type target = q->zeroElement;
  if (!target) {
    FailureOr<int64_t> code = n.getInt("output_dtype", onnx::TensorProto::UINT8);
    if (failed(code))
      return failure();
    target = elementType(n.ctx, static_cast<int32_t>(*code ? *code : onnx::TensorProto::UINT8));
    if (!target)
      return n.unsupported(Twine("output_dtype ") + onnxTypeName(static_cast<int32_t>(*code)),
                           "int8, uint8, int16 or uint16");
  }
  auto integer = dyn_cast<IntegerType>(target);
  if (!integer || (integer.getWidth() != 8 && integer.getWidth() != 16))
    return n.unsupported("quantization to " + typeText(target), "int8, uint8, int16 or uint16");
  FailureOr<Type> compute = floatTypeAttr(n, "precision", q->scaleElement);
  if (failed(compute))
    return failure();
  Value x = castTo(n, q->x, *compute), scale = castTo(n, q->scale, *compute);
  Value zero = q->zeroPoint ? castTo(n, q->zeroPoint, *compute) : Value();
  FailureOr<Value> y = quantized(n, x, scale, zero, integer);
  if (failed(y))
    return failure();
  return n.setOutput(0, castTo(n, *y, target));
}

/// DynamicQuantizeLinear (opset 11): uint8 quantization of x by the scale
/// and zero point of its range widened to hold 0: scale = (max(0, max x) -
/// min(0, min x)) / 255, zero point = saturate(round(-min(0, min x) /
/// scale)), then QuantizeLinear's formula; all in f32, pinned.
LogicalResult importDynamicQuantize(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  if (!elementOf(*x).isF32())
    return n.invalid("x must be a float tensor, not " + typeText(elementOf(*x)));
  auto u8 = IntegerType::get(n.ctx, 8, IntegerType::Unsigned);
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, shapeOf(*x).size()));
  Value zeroF = n.scalar(elementOf(*x), 0.0);
  auto scalarType = RankedTensorType::get({}, elementOf(*x));
  Value hi = pinned(n.create<MaxOp>(
      scalarType, {createReduce<ReduceMaxOp>(n, *x, all, /*keepdims=*/false), zeroF}));
  Value lo = pinned(n.create<MinOp>(
      scalarType, {createReduce<ReduceMinOp>(n, *x, all, /*keepdims=*/false), zeroF}));
  Value range = pinned(n.create<SubOp>(scalarType, {hi, lo}));
  Value scale = pinned(n.create<DivOp>(scalarType, {range, n.scalar(elementOf(*x), 255.0)}));
  Value negLo = pinned(n.create<SubOp>(scalarType, {zeroF, lo}));
  FailureOr<Value> zero = quantized(n, negLo, scale, Value(), u8);
  FailureOr<Value> y = quantized(n, *x, scale, *zero, u8);
  if (failed(zero) || failed(y))
    return failure();
  if (failed(n.setOutput(0, castTo(n, *y, u8))) || failed(n.setOutput(1, scale)))
    return failure();
  return n.setOutput(2, castTo(n, *zero, u8));
}

/// DequantizeLinear: (x - zero_point) * scale, per tensor, per axis or
/// blocked, in the scale's type (or output_dtype's), pinned as Quantize's.
LogicalResult importDequantize(Node &n) {
  FailureOr<QuantOperands> q = quantOperands(n);
  if (failed(q))
    return failure();
  if (!isa<IntegerType>(elementOf(q->x)))
    return n.unsupported("dequantization of " + typeText(elementOf(q->x)),
                         "an integer input (int8, uint8, int16, uint16, int32)");
  FailureOr<Type> target = floatTypeAttr(n, "output_dtype", q->scaleElement);
  if (failed(target))
    return failure();
  Value y = castTo(n, q->x, *target);
  if (q->zeroPoint) {
    FailureOr<Value> shifted = createBinary<SubOp>(n, y, castTo(n, q->zeroPoint, *target));
    if (failed(shifted))
      return failure();
    y = pinned(*shifted);
  }
  FailureOr<Value> scaled = createBinary<MulOp>(n, y, castTo(n, q->scale, *target));
  if (failed(scaled))
    return failure();
  return n.setOutput(0, pinned(*scaled));
}

const OpVersion kElementwiseOps[] = {
    // Unary.
    {"Abs", {6}, importUnary<AbsOp>},
    {"Acos", {7}, importUnary<AcosOp>},
    {"Acosh", {9}, importUnary<AcoshOp>},
    {"Asin", {7}, importUnary<AsinOp>},
    {"Asinh", {9}, importUnary<AsinhOp>},
    {"Atan", {7}, importUnary<AtanOp>},
    {"Atanh", {9}, importUnary<AtanhOp>},
    {"Ceil", {6}, importUnary<CeilOp>},
    {"Cos", {7}, importUnary<CosOp>},
    {"Cosh", {9}, importUnary<CoshOp>},
    {"Erf", {9}, importUnary<ErfOp>},
    {"Exp", {6}, importUnary<ExpOp>},
    {"Floor", {6}, importUnary<FloorOp>},
    {"Gelu", {20}, importGelu},
    {"HardSwish", {14}, importUnary<HardSwishOp>},
    {"Log", {6}, importUnary<LogOp>},
    {"Neg", {6}, importUnary<NegOp>},
    {"Not", {1}, importUnary<NotOp>},
    {"Reciprocal", {6}, importUnary<ReciprocalOp>},
    {"Relu", {6}, importUnary<ReluOp>},
    {"Round", {11}, importUnary<RoundOp>},
    {"Sigmoid", {6}, importUnary<SigmoidOp>},
    {"Sign", {9}, importUnary<SignOp>},
    {"Sin", {7}, importUnary<SinOp>},
    {"Sinh", {9}, importUnary<SinhOp>},
    {"Softplus", {1}, importUnary<SoftplusOp>},
    {"Softsign", {1}, importUnary<SoftsignOp>},
    {"Sqrt", {6}, importUnary<SqrtOp>},
    {"Tan", {7}, importUnary<TanOp>},
    {"Tanh", {6}, importUnary<TanhOp>},
    {"Swish", {24}, importSwish},
    // Unary with float attributes, defaults per the ONNX spec.
    {"Celu", {12},
     [](Node &n) {
       return importUnaryWithAttrs<CeluOp>(n, {{"alpha", 1.0f}});
     }},
    {"Elu", {6},
     [](Node &n) {
       return importUnaryWithAttrs<EluOp>(n, {{"alpha", 1.0f}});
     }},
    {"HardSigmoid", {6},
     [](Node &n) {
       return importUnaryWithAttrs<HardSigmoidOp>(
           n, {{"alpha", 0.2f}, {"beta", 0.5f}});
     }},
    {"LeakyRelu", {6},
     [](Node &n) {
       return importUnaryWithAttrs<LeakyReluOp>(n, {{"alpha", 0.01f}});
     }},
    {"Selu", {6},
     [](Node &n) {
       return importUnaryWithAttrs<SeluOp>(
           n, {{"alpha", 1.67326319217681884765625f},
               {"gamma", 1.05070102214813232421875f}});
     }},
    {"Shrink", {9},
     [](Node &n) {
       return importUnaryWithAttrs<ShrinkOp>(n,
                                             {{"bias", 0.0f}, {"lambd", 0.5f}});
     }},
    {"ThresholdedRelu", {10},
     [](Node &n) {
       return importUnaryWithAttrs<ThresholdedReluOp>(n, {{"alpha", 1.0f}});
     }},
    {"Clip", {6, 10}, importClipAttributes},
    {"Clip", {11}, importClipInputs},
    {"Cast", {6}, importCast},
    {"QuantizeLinear", {10, 12}, importQuantize},
    {"QuantizeLinear", {13}, importQuantize},
    {"DequantizeLinear", {10, 12}, importDequantize},
    {"DequantizeLinear", {13}, importDequantize},
    {"DynamicQuantizeLinear", {11}, importDynamicQuantize},
    {"CastLike", {15}, importCast},
    {"IsInf", {10}, importIsInf},
    // Binary and variadic.
    {"Add", {7}, importBinary<AddOp>},
    {"And", {7}, importBinary<AndOp>},
    {"Div", {7}, importBinary<DivOp>},
    {"Equal", {7}, importBinary<EqualOp>},
    {"Greater", {7}, importBinary<GreaterOp>},
    {"GreaterOrEqual", {12}, importBinary<GreaterEqualOp>},
    {"Less", {7}, importBinary<LessOp>},
    {"LessOrEqual", {12}, importBinary<LessEqualOp>},
    {"Mod", {10}, importMod},
    {"Mul", {7}, importBinary<MulOp>},
    {"Or", {7}, importBinary<OrOp>},
    {"PRelu", {7}, importBinary<PReluOp>},
    {"Pow", {7}, importBinary<PowOp>},
    {"Sub", {7}, importBinary<SubOp>},
    {"Xor", {7}, importBinary<XorOp>},
    {"Max", {6}, importVariadic<MaxOp>},
    {"Min", {6}, importVariadic<MinOp>},
    {"Sum", {6}, importVariadic<AddOp>},
    {"Mean", {6}, importVariadic<AddOp, /*mean=*/true>},
    {"Where", {9}, importWhere},
};

} // namespace

void registerElementwiseOps(OpTable &table) { table.add(kElementwiseOps); }

} // namespace tessel::importer
