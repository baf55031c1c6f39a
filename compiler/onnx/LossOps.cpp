//===- LossOps.cpp - ONNX loss ops, decomposed ----------------------------===//
//
// NegativeLogLikelihoodLoss (opset 12) and SoftmaxCrossEntropyLoss (12, its
// log_softmax first), which inference graphs carry when a model is exported
// with its loss: decomposed into ops with CPU and GPU kernels (gather of
// each target's score, the class weights, the ignore_index mask, and the
// reduction), so that the constant evaluator and every tier run them as
// their parts.
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"
#include "Tensors.h"

using namespace mlir;

namespace tessel::importer {
namespace {

/// loss[n, d...] = -input[n, target[n, d...], d...] * weight[target[n,
/// d...]] (weight 1 when absent), 0 where target == ignore_index; then
/// `reduction` none, sum, or mean (the sum divided by the sum of the
/// weights that applied).
FailureOr<Value> nllLoss(Node &n, Value input, Value target, Value weight,
                         const std::string &reduction) {
  ArrayRef<int64_t> is = shapeOf(input), ts = shapeOf(target);
  Type element = elementOf(input);
  if (!isa<FloatType>(element))
    return n.invalid("input must be a float tensor");
  if (!elementOf(target).isInteger(32) && !elementOf(target).isInteger(64))
    return n.invalid("target must be int32 or int64, not " + typeText(elementOf(target)));
  SmallVector<int64_t> expected = {is.empty() ? 0 : is[0]};
  llvm::append_range(expected, is.drop_front(std::min<size_t>(2, is.size())));
  if (is.size() < 2 || ArrayRef<int64_t>(expected) != ts)
    return n.invalid("input " + shapeText(is) + " and target " + shapeText(ts) +
                     " are not [N, C, d...] and [N, d...]");
  if (weight && (shapeOf(weight) != ArrayRef<int64_t>{is[1]} || elementOf(weight) != element))
    return n.invalid("weight " + shapeText(shapeOf(weight)) + " must be [C] of the input's type");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return n.invalid("reduction '" + reduction + "' is not none, sum or mean");
  auto targetType = RankedTensorType::get(ts, elementOf(target));
  // Where ignore_index matches: class 0 read (in range), weight 0. One
  // outside the target's type matches no target.
  Value index = target, keep;
  FailureOr<int64_t> ignore = n.getInt("ignore_index", 0);
  if (failed(ignore))
    return failure();
  const bool fits = elementOf(target).isInteger(64) || *ignore == static_cast<int32_t>(*ignore);
  if (n.attr("ignore_index") && fits) {
    Value ignoreValue =
        n.constantValue(integerAttr(RankedTensorType::get({}, elementOf(target)), {*ignore}));
    Value ignored =
        n.create<EqualOp>(RankedTensorType::get(ts, n.b.getI1Type()), {target, ignoreValue});
    keep = n.create<NotOp>(ignored.getType(), ignored);
    index = n.create<WhereOp>(targetType, {keep, target, n.scalar(elementOf(target), 0)});
  }
  SmallVector<int64_t> oneClass(ts.begin(), ts.end());
  oneClass.insert(oneClass.begin() + 1, 1);
  Value picked = n.create<GatherElementsOp>(
      RankedTensorType::get(oneClass, element), {input, n.reshape(index, oneClass)},
      {n.named("axis", n.b.getI64IntegerAttr(1))});
  Value loss = n.create<NegOp>(RankedTensorType::get(ts, element), n.reshape(picked, ts));
  auto lossType = RankedTensorType::get(ts, element);
  Value w;
  if (weight)
    w = n.create<GatherOp>(lossType, {weight, index}, {n.named("axis", n.b.getI64IntegerAttr(0))});
  if (keep)
    w = n.create<WhereOp>(lossType, {keep, w ? w : n.scalar(element, 1.0), n.scalar(element, 0.0)});
  if (w)
    loss = n.create<MulOp>(lossType, {loss, w});
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, ts.size()));
  Value sum = createReduce<ReduceSumOp>(n, loss, all, /*keepdims=*/false);
  if (reduction == "sum")
    return sum;
  if (!w)
    return createReduce<ReduceMeanOp>(n, loss, all, /*keepdims=*/false);
  Value total = createReduce<ReduceSumOp>(n, w, all, /*keepdims=*/false);
  return n.create<DivOp>(sum.getType(), {sum, total});
}

/// NegativeLogLikelihoodLoss (input, target, optional weight), or with
/// `softmax` SoftmaxCrossEntropyLoss (scores, labels, optional weights):
/// log_softmax over the classes (axis 1) first, and the log_softmax as the
/// optional second output.
template <bool softmax> LogicalResult importLoss(Node &n) {
  FailureOr<Value> input = n.input(0), target = n.input(1);
  FailureOr<std::string> reduction = n.getString("reduction", "mean");
  if (failed(input) || failed(target) || failed(reduction))
    return failure();
  Value weight;
  if (n.has(2)) {
    FailureOr<Value> w = n.input(2);
    if (failed(w))
      return failure();
    weight = *w;
  }
  Value logProb = *input;
  if constexpr (softmax) {
    if (shapeOf(*input).size() < 2 || !isa<FloatType>(elementOf(*input)))
      return n.invalid("scores " + shapeText(shapeOf(*input)) + " must be a float [N, C, d...]");
    logProb = n.create<LogSoftmaxOp>(input->getType(), *input,
                                     {n.named("axis", n.b.getI64IntegerAttr(1))});
  }
  FailureOr<Value> loss = nllLoss(n, logProb, *target, weight, *reduction);
  if (failed(loss) || failed(n.setOutput(0, *loss)))
    return failure();
  return softmax ? n.setOutput(1, logProb) : success();
}

const OpVersion kLossOps[] = {
    // NegativeLogLikelihoodLoss-13 and SoftmaxCrossEntropyLoss-13 added
    // types (bfloat16) only.
    {"NegativeLogLikelihoodLoss", {12}, importLoss</*softmax=*/false>},
    {"SoftmaxCrossEntropyLoss", {12}, importLoss</*softmax=*/true>},
};

} // namespace

void registerLossOps(OpTable &table) { table.add(kLossOps); }

} // namespace tessel::importer
