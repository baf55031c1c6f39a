//===- PoolReduceOps.cpp - ONNX pooling, reductions, softmax --------------===//
//
// MaxPool and AveragePool (windows resolved as Conv's), global pooling as
// reductions, the Reduce* family, ArgMax/ArgMin, CumSum and CumProd, and Softmax,
// LogSoftmax and Hardmax with their two definitions (the 2-D coercion before
// opset 13, one table entry each).
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace mlir;

namespace tessel::importer {
namespace {

template <typename OpT> LogicalResult importPool(Node &n) {
  constexpr bool isMax = std::is_same_v<OpT, MaxPoolOp>;
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> kernel =
      n.getInts("kernel_shape");
  FailureOr<int64_t> ceilMode = n.getInt("ceil_mode", 0);
  FailureOr<int64_t> storageOrder = n.getInt("storage_order", 0);
  FailureOr<int64_t> countIncludePad = n.getInt("count_include_pad", 0);
  if (failed(x) || failed(kernel) || failed(ceilMode) || failed(storageOrder) ||
      failed(countIncludePad))
    return failure();
  if (*storageOrder != 0 && *storageOrder != 1)
    return n.invalid("storage_order is " + Twine(*storageOrder) + "; it is 0 or 1");
  ArrayRef<int64_t> xs = shapeOf(*x);
  if (xs.size() < 3)
    return n.invalid("input " + shapeText(xs) + " must be N x C x spatial...");
  if (!*kernel || (*kernel)->size() != xs.size() - 2)
    return n.invalid("kernel_shape needs " + Twine(xs.size() - 2) + " values");
  FailureOr<Window> w =
      resolveWindow(n, xs.drop_front(2), **kernel, *ceilMode != 0);
  if (failed(w))
    return failure();
  SmallVector<int64_t> shape = {xs[0], xs[1]};
  shape.append(w->output);
  SmallVector<NamedAttribute> attrs = {
      n.named("kernel_shape", n.b.getDenseI64ArrayAttr(**kernel)),
      n.named("strides", n.b.getDenseI64ArrayAttr(w->strides)),
      n.named("pads", n.b.getDenseI64ArrayAttr(w->pads)),
      n.named("dilations", n.b.getDenseI64ArrayAttr(w->dilations))};
  if (!isMax)
    attrs.push_back(
        n.named("count_include_pad", n.b.getBoolAttr(*countIncludePad != 0)));
  Value pooled =
      n.create<OpT>(RankedTensorType::get(shape, elementOf(*x)), *x, attrs);
  // With ceil_mode, ONNX 1.12 shape inference keeps a last window that starts
  // in the end padding, which resolveWindow drops: ours is the result type.
  if (failed(n.setOutput(0, pooled, /*matchInference=*/*ceilMode == 0)))
    return failure();
  if (!isMax || !n.wants(1))
    return success();
  // Indices: an op of its own, over the same windows (max_pool_indices).
  attrs.push_back(n.named("storage_order", n.b.getI64IntegerAttr(*storageOrder)));
  return n.setOutput(1,
                     n.create<MaxPoolIndicesOp>(
                         RankedTensorType::get(shape, n.b.getIntegerType(64)), *x, attrs),
                     /*matchInference=*/*ceilMode == 0);
}

template <typename OpT> LogicalResult importGlobalPool(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  int64_t rank = shapeOf(*x).size();
  if (rank < 2)
    return n.invalid("input must be N x C x spatial...");
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(2, rank));
  return n.setOutput(0, createReduce<OpT>(n, *x, axes, /*keepdims=*/true));
}

/// A Reduce* node; its axes come from `axesFrom` (ReduceSum's are an input
/// from opset 13, the others' an attribute up to opset 17 and an input from
/// 18).
template <typename OpT, OperandsFrom axesFrom = OperandsFrom::Attributes>
LogicalResult importReduce(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> keepdims = n.getInt("keepdims", 1);
  FailureOr<int64_t> noop = n.getInt("noop_with_empty_axes", 0);
  if (failed(x) || failed(keepdims) || failed(noop))
    return failure();
  SmallVector<int64_t> axes;
  FailureOr<std::optional<SmallVector<int64_t>>> values =
      optionalInts(n, axesFrom, 1, "axes");
  if (failed(values))
    return failure();
  if (*values)
    axes = **values;
  int64_t rank = shapeOf(*x).size();
  if (axes.empty()) {
    if (*noop)
      return n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(n, axes, rank);
  if (failed(normalized))
    return failure();
  // ReduceMax/Min-20 on bool (any, all): the same reduction over 0 and 1.
  constexpr bool extremum = std::is_same_v<OpT, ReduceMaxOp> || std::is_same_v<OpT, ReduceMinOp>;
  if (extremum && elementOf(*x).isInteger(1)) {
    Type i32 = n.b.getI32Type();
    Value wide = n.create<CastOp>(RankedTensorType::get(shapeOf(*x), i32), *x);
    Value reduced = createReduce<OpT>(n, wide, *normalized, *keepdims != 0);
    return n.setOutput(
        0, n.create<CastOp>(RankedTensorType::get(shapeOf(reduced), elementOf(*x)), reduced));
  }
  return n.setOutput(0, createReduce<OpT>(n, *x, *normalized, *keepdims != 0));
}

template <typename OpT> LogicalResult importArgReduce(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0),
                     keepdims = n.getInt("keepdims", 1),
                     last = n.getInt("select_last_index", 0);
  if (failed(x) || failed(axisAttr) || failed(keepdims) || failed(last))
    return failure();
  int64_t rank = shapeOf(*x).size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  SmallVector<int64_t> shape(shapeOf(*x));
  if (*keepdims)
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  return n.setOutput(
      0, n.create<OpT>(
             RankedTensorType::get(shape, n.b.getI64Type()), *x,
             {n.named("axis", n.b.getI64IntegerAttr(*axis)),
              n.named("keepdims", n.b.getBoolAttr(*keepdims != 0)),
              n.named("select_last_index", n.b.getBoolAttr(*last != 0))}));
}

/// The two definitions of Softmax, LogSoftmax and Hardmax: before opset 13
/// the input is coerced to 2-D [prod(dims < axis), prod(dims >= axis)] and
/// worked along dim 1, the axis defaulting to 1; from opset 13 they work
/// along `axis` itself, which defaults to -1.
enum class Along { Coerced2D, Axis };

constexpr int64_t defaultAxis(Along along) {
  return along == Along::Coerced2D ? 1 : -1;
}

/// `along(x, axis)` as Softmax, LogSoftmax and Hardmax define it (see
/// Along); the 2-D coercion is working along `axis` itself when every later
/// dim is 1.
Value alongCoercedAxis(Node &n, Value x, int64_t axis, Along definition,
                       llvm::function_ref<Value(Value, int64_t)> along) {
  ArrayRef<int64_t> shape = shapeOf(x);
  if (definition == Along::Axis || shape.empty() ||
      product(shape.drop_front(axis + 1)) == 1)
    return along(x, axis);
  SmallVector<int64_t> flat = {product(shape.take_front(axis)), product(shape.drop_front(axis))};
  return n.reshape(along(n.reshape(x, flat), 1), shape);
}

template <typename OpT, Along definition> LogicalResult importSoftmax(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", defaultAxis(definition));
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  std::optional<int64_t> axis =
      normalizeAxis(*axisAttr, std::max<int64_t>(rank, 1));
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  return n.setOutput(0, alongCoercedAxis(n, *x, *axis, definition, [&](Value v, int64_t a) {
    return n.create<OpT>(v.getType(), v, {n.named("axis", n.b.getI64IntegerAttr(a))});
  }));
}

/// 1 at the first maximum of `x` along `axis` (a NaN counting as the
/// maximum, as numpy's argmax), 0 elsewhere: argmax, compared with the
/// positions along the axis, cast back to x's type.
Value hardmaxAlong(Node &n, Value x, int64_t axis) {
  ArrayRef<int64_t> shape = shapeOf(x);
  Type i64 = n.b.getI64Type();
  SmallVector<int64_t> kept(shape), positionsShape(shape.size(), 1);
  kept[axis] = 1;
  positionsShape[axis] = shape[axis];
  SmallVector<int64_t> positions(shape[axis]);
  std::iota(positions.begin(), positions.end(), int64_t(0));
  Value index = n.create<ArgMaxOp>(RankedTensorType::get(kept, i64), x,
                                   {n.named("axis", n.b.getI64IntegerAttr(axis)),
                                    n.named("keepdims", n.b.getBoolAttr(true)),
                                    n.named("select_last_index", n.b.getBoolAttr(false))});
  Value along = n.constantValue(DenseElementsAttr::get(
      RankedTensorType::get(positionsShape, i64), ArrayRef<int64_t>(positions)));
  Value hit = n.create<EqualOp>(RankedTensorType::get(shape, n.b.getI1Type()), {index, along});
  return n.create<CastOp>(x.getType(), hit);
}

/// Hardmax (before opset 13 along the 2-D coercion, alongCoercedAxis).
template <Along definition> LogicalResult importHardmax(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", defaultAxis(definition));
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  if (!isa<FloatType>(elementOf(*x)))
    return n.invalid("input must be a float tensor");
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(rank));
  if (product(shape) == 0)
    return n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
  return n.setOutput(0, alongCoercedAxis(n, *x, *axis, definition, [&](Value v, int64_t a) {
    return hardmaxAlong(n, v, a);
  }));
}

/// CumSum and CumProd: the axis is a constant input (a one-element tensor).
template <typename ScanOp> LogicalResult importScan(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> exclusive = n.getInt("exclusive", 0), reverse = n.getInt("reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = n.constantInts(1, "axis");
  if (failed(axes))
    return failure();
  int64_t rank = shapeOf(*x).size();
  if (axes->size() != 1)
    return n.invalid("axis must be a single value, not " + Twine(axes->size()));
  std::optional<int64_t> axis = normalizeAxis(axes->front(), rank);
  if (!axis)
    return n.invalid("axis " + Twine(axes->front()) + " is out of range for rank " +
                     Twine(rank));
  return n.setOutput(0, n.create<ScanOp>(x->getType(), *x,
                                           {n.named("axis", n.b.getI64IntegerAttr(*axis)),
                                            n.named("exclusive", n.b.getBoolAttr(*exclusive)),
                                            n.named("reverse", n.b.getBoolAttr(*reverse))}));
}

/// TopK: k an attribute (opsets 1 to 9) or a constant input; largest and
/// sorted from opset 11 (sorted or not, the results come sorted, which
/// ONNX allows).
template <bool KInput> LogicalResult importTopK(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1), largest = n.getInt("largest", 1);
  if (failed(x) || failed(axisAttr) || failed(largest))
    return failure();
  int64_t k = 0;
  if (KInput) {
    FailureOr<SmallVector<int64_t>> ks = n.constantInts(1, "K");
    if (failed(ks))
      return failure();
    if (ks->size() != 1)
      return n.invalid("K must be a single value, not " + Twine(ks->size()));
    k = ks->front();
  } else {
    FailureOr<int64_t> attr = n.getInt("k", -1);
    if (failed(attr))
      return failure();
    k = *attr;
  }
  const int64_t rank = shapeOf(*x).size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(rank));
  if (k < 0 || k > shapeOf(*x)[*axis])
    return n.invalid("K is " + Twine(k) + "; the axis has " + Twine(shapeOf(*x)[*axis]));
  SmallVector<int64_t> shape(shapeOf(*x));
  shape[*axis] = k;
  auto op = n.b.create<TopKOp>(
      n.loc, TypeRange{RankedTensorType::get(shape, elementOf(*x)),
                       RankedTensorType::get(shape, n.b.getI64Type())},
      ValueRange{*x},
      ArrayRef<NamedAttribute>{n.named("axis", n.b.getI64IntegerAttr(*axis)),
                               n.named("largest", n.b.getBoolAttr(*largest != 0))});
  if (failed(n.setOutput(0, op.getValues())))
    return failure();
  return n.wants(1) ? n.setOutput(1, op.getIndices()) : success();
}

/// NonMaxSuppression (opsets 10, 11): max_output_boxes_per_class (which
/// bounds the result's rows), iou_threshold and score_threshold must be
/// constants. The result's row count is data dependent
/// (--tessel-data-dependent-extents follows it to the outputs).
LogicalResult importNonMaxSuppression(Node &n) {
  FailureOr<Value> boxes = n.input(0), scores = n.input(1);
  FailureOr<int64_t> center = n.getInt("center_point_box", 0);
  if (failed(boxes) || failed(scores) || failed(center))
    return failure();
  int64_t maxOutput = 0;
  if (n.has(2)) {
    FailureOr<double> v = n.constantScalar(2, "max_output_boxes_per_class");
    if (failed(v))
      return failure();
    // PyTorch exports "no limit" as INT64_MAX; the boxes bound it anyway.
    maxOutput = *v >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(*v);
  }
  double iou = 0;
  std::optional<double> scoreThreshold;
  if (n.has(3)) {
    FailureOr<double> v = n.constantScalar(3, "iou_threshold");
    if (failed(v))
      return failure();
    iou = *v;
  }
  if (n.has(4)) {
    FailureOr<double> v = n.constantScalar(4, "score_threshold");
    if (failed(v))
      return failure();
    scoreThreshold = *v;
  }
  ArrayRef<int64_t> b = shapeOf(*boxes), s = shapeOf(*scores);
  if (b.size() != 3 || b[2] != 4 || s.size() != 3 || s[0] != b[0] || s[2] != b[1])
    return n.invalid("boxes must be [batch, boxes, 4] and scores [batch, classes, boxes], not " +
                     shapeText(b) + " and " + shapeText(s));
  if (elementOf(*boxes) != elementOf(*scores) || !isa<FloatType>(elementOf(*boxes)))
    return n.invalid("boxes and scores must have one float element type");
  if (*center != 0 && *center != 1)
    return n.invalid("center_point_box must be 0 or 1, not " + Twine(*center));
  if (maxOutput < 0)
    return n.invalid("max_output_boxes_per_class must not be negative, it is " +
                     Twine(maxOutput));
  if (!(iou >= 0 && iou <= 1))
    return n.invalid("iou_threshold must be in [0, 1], it is " + std::to_string(iou));
  const int64_t bound = b[0] * s[1] * std::min(maxOutput, b[1]);
  auto i64 = n.b.getI64Type();
  SmallVector<NamedAttribute> attrs{
      n.named("center_point_box", n.b.getI64IntegerAttr(*center)),
      n.named("max_output_boxes_per_class", n.b.getI64IntegerAttr(std::min(maxOutput, b[1]))),
      n.named("iou_threshold", n.b.getF32FloatAttr(static_cast<float>(iou)))};
  if (scoreThreshold)
    attrs.push_back(
        n.named("score_threshold", n.b.getF32FloatAttr(static_cast<float>(*scoreThreshold))));
  auto op = n.b.create<NonMaxSuppressionOp>(
      n.loc,
      TypeRange{RankedTensorType::get({bound, 3}, i64), RankedTensorType::get({1}, i64)},
      ValueRange{*boxes, *scores}, attrs);
  n.graph.sawDataDependent = true;
  // ONNX's inference knows no row count (or the test's own): not matched.
  return n.setOutput(0, op.getSelected(), /*matchInference=*/false);
}

const OpVersion kPoolReduceOps[] = {
    {"TopK", {1, 9}, importTopK</*KInput=*/false>},
    {"TopK", {10}, importTopK</*KInput=*/true>},
    {"NonMaxSuppression", {10}, importNonMaxSuppression},
    {"AveragePool", {7}, importPool<AvgPoolOp>},
    {"MaxPool", {1}, importPool<MaxPoolOp>},
    {"GlobalAveragePool", {1}, importGlobalPool<ReduceMeanOp>},
    {"GlobalMaxPool", {1}, importGlobalPool<ReduceMaxOp>},
    // Opset 18 moved the other reductions' axes to an input, as ReduceSum's
    // at 13 (the first entries end at 17 by OpTable's revision list).
    {"ReduceL1", {1}, importReduce<ReduceL1Op>},
    {"ReduceL1", {18}, importReduce<ReduceL1Op, OperandsFrom::Inputs>},
    {"ReduceL2", {1}, importReduce<ReduceL2Op>},
    {"ReduceL2", {18}, importReduce<ReduceL2Op, OperandsFrom::Inputs>},
    {"ReduceLogSum", {1}, importReduce<ReduceLogSumOp>},
    {"ReduceLogSum", {18}, importReduce<ReduceLogSumOp, OperandsFrom::Inputs>},
    {"ReduceLogSumExp", {1}, importReduce<ReduceLogSumExpOp>},
    {"ReduceLogSumExp", {18}, importReduce<ReduceLogSumExpOp, OperandsFrom::Inputs>},
    {"ReduceMax", {1}, importReduce<ReduceMaxOp>},
    {"ReduceMax", {18}, importReduce<ReduceMaxOp, OperandsFrom::Inputs>},
    {"ReduceMean", {1}, importReduce<ReduceMeanOp>},
    {"ReduceMean", {18}, importReduce<ReduceMeanOp, OperandsFrom::Inputs>},
    {"ReduceMin", {1}, importReduce<ReduceMinOp>},
    {"ReduceMin", {18}, importReduce<ReduceMinOp, OperandsFrom::Inputs>},
    {"ReduceProd", {1}, importReduce<ReduceProdOp>},
    {"ReduceProd", {18}, importReduce<ReduceProdOp, OperandsFrom::Inputs>},
    {"ReduceSum", {1, 12}, importReduce<ReduceSumOp>},
    {"ReduceSum", {13}, importReduce<ReduceSumOp, OperandsFrom::Inputs>},
    {"ReduceSumSquare", {1}, importReduce<ReduceSumSquareOp>},
    {"ReduceSumSquare", {18}, importReduce<ReduceSumSquareOp, OperandsFrom::Inputs>},
    {"ArgMax", {1}, importArgReduce<ArgMaxOp>},
    {"ArgMin", {1}, importArgReduce<ArgMinOp>},
    {"CumSum", {11}, importScan<CumSumOp>},
    {"CumProd", {26}, importScan<CumProdOp>},
    {"Softmax", {1, 12}, importSoftmax<SoftmaxOp, Along::Coerced2D>},
    {"Softmax", {13}, importSoftmax<SoftmaxOp, Along::Axis>},
    {"LogSoftmax", {1, 12}, importSoftmax<LogSoftmaxOp, Along::Coerced2D>},
    {"LogSoftmax", {13}, importSoftmax<LogSoftmaxOp, Along::Axis>},
    {"Hardmax", {1, 12}, importHardmax<Along::Coerced2D>},
    {"Hardmax", {13}, importHardmax<Along::Axis>},
};

} // namespace

void registerPoolReduceOps(OpTable &table) { table.add(kPoolReduceOps); }

} // namespace tessel::importer
