//===- CompileTimeOps.cpp - ONNX ops that are compile-time values ---------===//
//
// Ops whose outputs are known at import time and become constants rather
// than tessel ops: Constant, ConstantOfShape, Shape and Size (from static
// shapes), EyeLike (only its input's shape matters) and Range (from constant
// bounds). Later nodes take them as constant operands.
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpTable.h"
#include "TensorProto.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tessel::importer {
namespace {

LogicalResult importConstant(Node &n) {
  if (n.proto.attribute_size() != 1)
    return n.invalid("needs exactly one value attribute");
  const onnx::AttributeProto &a = n.proto.attribute(0);
  auto f32 = n.b.getF32Type();
  auto i64 = n.b.getI64Type();
  if (a.name() == "value") {
    std::string error;
    FailureOr<DenseElementsAttr> attr = tensorToAttr(n.ctx, a.t(), error);
    if (failed(attr))
      return n.unsupported("value: " + error);
    return n.setConstantOutput(0, *attr);
  }
  if (a.name() == "value_float")
    return n.setConstantOutput(
        0, DenseElementsAttr::get(RankedTensorType::get({}, f32), a.f()));
  if (a.name() == "value_floats")
    return n.setConstantOutput(
        0, DenseElementsAttr::get(
               RankedTensorType::get({a.floats_size()}, f32),
               ArrayRef<float>(a.floats().data(), a.floats_size())));
  if (a.name() == "value_int")
    return n.setConstantOutput(
        0, DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                  static_cast<int64_t>(a.i())));
  if (a.name() == "value_ints")
    return n.setConstantOutput(
        0, DenseElementsAttr::get(
               RankedTensorType::get({a.ints_size()}, i64),
               ArrayRef<int64_t>(a.ints().data(), a.ints_size())));
  return n.unsupported("attribute '" + a.name() + "'",
                       "dense numeric constants: value, value_float(s), "
                       "value_int(s)");
}

LogicalResult importConstantOfShape(Node &n) {
  SmallVector<int64_t> shape;
  if (std::optional<DenseElementsAttr> target = n.tryConstant(0)) {
    std::optional<SmallVector<int64_t>> dims = integerValues(*target);
    if (!dims || !isSupportedShape(*dims))
      return n.invalid("shape must hold non-negative integers, within " +
                       Twine(kMaxExtent) + " per dim and " +
                       Twine(kMaxElements) + " elements");
    shape = *dims;
  } else if (std::optional<RankedTensorType> inferred =
                 n.inferredOutputType(0)) {
    shape.assign(inferred->getShape().begin(), inferred->getShape().end());
  } else {
    return n.requireConstant(0, "shape");
  }
  DenseElementsAttr value = DenseElementsAttr::get(
      RankedTensorType::get({1}, n.b.getF32Type()), 0.0f);
  if (const onnx::AttributeProto *a = n.attr("value")) {
    std::string error;
    FailureOr<DenseElementsAttr> attr = tensorToAttr(n.ctx, a->t(), error);
    if (failed(attr))
      return n.unsupported("value: " + error);
    if (attr->getNumElements() != 1)
      return n.invalid("value must hold one element");
    value = *attr;
  }
  auto type = RankedTensorType::get(shape, value.getElementType());
  if (type.getNumElements() <= kMaxEvaluatedElements)
    return n.setConstantOutput(0, DenseElementsAttr::get(type, *value.value_begin<Attribute>()));
  // A larger fill is the value expanded: --tessel-fold-constants folds it
  // within its bound, and past it the engine fills it at run time (a fuzzed
  // shape of 2^32 elements had the engine writer hold them all).
  Value one = n.constantValue(value.reshape(RankedTensorType::get({1}, value.getElementType())));
  return n.setOutput(0, n.create<ExpandOp>(type, one));
}

LogicalResult importShape(Node &n) {
  FailureOr<Value> x = n.shapeInput(0);
  FailureOr<int64_t> startAttr = n.getInt("start", 0);
  if (failed(x) || failed(startAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  FailureOr<int64_t> endAttr = n.getInt("end", rank);
  if (failed(endAttr))
    return failure();
  auto clampIndex = [&](int64_t i) {
    return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  int64_t start = clampIndex(*startAttr), end = clampIndex(*endAttr);
  SmallVector<int64_t> dims(shape.begin() + start,
                            shape.begin() + std::max(start, end));
  return n.setConstantOutput(
      0, integerAttr(RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                           n.b.getI64Type()),
                     dims));
}

LogicalResult importSize(Node &n) {
  FailureOr<Value> x = n.shapeInput(0);
  if (failed(x))
    return failure();
  return n.setConstantOutput(
      0, integerAttr(RankedTensorType::get({}, n.b.getI64Type()),
                     {product(shapeOf(*x))}));
}

/// EyeLike: a constant, since only the input's shape matters: ones where
/// column - row == k, in `dtype` (default: the input's type).
LogicalResult importEyeLike(Node &n) {
  FailureOr<Value> x = n.shapeInput(0);
  FailureOr<int64_t> k = n.getInt("k", 0), dtype = n.getInt("dtype", 0);
  if (failed(x) || failed(k) || failed(dtype))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  if (shape.size() != 2)
    return n.invalid("input " + shapeText(shape) + " must be 2-D");
  Type element = *dtype ? elementType(n.ctx, *dtype) : elementOf(*x);
  if (!element)
    return n.unsupported("dtype " + Twine(onnxTypeName(*dtype)));
  SmallVector<double> values(shape[0] * shape[1], 0.0);
  for (int64_t i = 0; i < shape[0]; ++i)
    if (i + *k >= 0 && i + *k < shape[1])
      values[i * shape[1] + i + *k] = 1.0;
  return n.setConstantOutput(0, numericAttr(RankedTensorType::get(shape, element), values));
}

/// Range: a constant from constant start, limit and delta (scalars of one
/// type): max(ceil((limit - start) / delta), 0) values start + i * delta.
LogicalResult importRange(Node &n) {
  FailureOr<DenseElementsAttr> start = n.constant(0, "start"), limit = n.constant(1, "limit"),
                               delta = n.constant(2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  for (DenseElementsAttr a : {*start, *limit, *delta})
    if (a.getNumElements() != 1 || a.getElementType() != start->getElementType())
      return n.invalid("start, limit and delta must be scalars of one type");
  const double first = doubleValues(*start).front(), last = doubleValues(*limit).front(),
               step = doubleValues(*delta).front();
  if (step == 0)
    return n.invalid("delta must not be 0");
  const double count = std::max(std::ceil((last - first) / step), 0.0);
  if (std::isnan(count) || std::isinf(count))
    return n.invalid("start, limit and delta must be finite numbers");
  // Built here as a constant: bounded far below kMaxExtent so that a
  // malformed model cannot make the compiler allocate gigabytes.
  constexpr int64_t kMaxRangeValues = int64_t{1} << 24;
  if (count > static_cast<double>(kMaxRangeValues))
    return n.unsupported("a range of " + Twine(std::min<double>(count, 9.0e18) < 9.0e18
                                                   ? static_cast<int64_t>(count)
                                                   : int64_t{9000000000000000000}) +
                         " values (more than " + Twine(kMaxRangeValues) +
                         " are not built at compile time)");
  SmallVector<double> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = first + static_cast<double>(i) * step;
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    start->getElementType());
  return n.setConstantOutput(0, numericAttr(type, values));
}

const OpVersion kCompileTimeOps[] = {
    {"Constant", {1}, importConstant},
    {"ConstantOfShape", {9}, importConstantOfShape},
    {"Shape", {1}, importShape},
    {"Size", {1}, importSize},
    {"EyeLike", {9}, importEyeLike},
    {"Range", {11}, importRange},
};

} // namespace

void registerCompileTimeOps(OpTable &table) { table.add(kCompileTimeOps); }

} // namespace tessel::importer
