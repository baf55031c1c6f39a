//===- NormalizationOps.cpp - ONNX normalization ops ----------------------===//
//
// Inference BatchNormalization, InstanceNormalization, LayerNormalization
// (its optional Mean and InvStdDev outputs from reductions), LRN and
// RMSNormalization (opset 23, from reductions and elementwise ops),
// LpNormalization (a norm reduction and a divide).
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"
#include "TensorProto.h"

using namespace mlir;

namespace tessel::importer {
namespace {

LogicalResult importBatchNorm(Node &n) {
  FailureOr<int64_t> training = n.getInt("training_mode", 0);
  FailureOr<int64_t> spatial = n.getInt("spatial", 1);
  FailureOr<float> epsilon = n.getFloat("epsilon", 1e-5f);
  if (failed(training) || failed(spatial) || failed(epsilon))
    return failure();
  if (*training != 0)
    return n.unsupported("training_mode=1", "export the model in eval mode");
  for (int i = 1; i < n.numOutputs(); ++i)
    if (n.wants(i))
      return n.unsupported("output " + Twine(i) + " ('" + n.proto.output(i) +
                               "') of training-mode BatchNormalization",
                           "only the normalized output Y is supported");
  if (*spatial != 1)
    return n.unsupported("spatial=0", "per-channel statistics, spatial=1");
  SmallVector<Value> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  if (shapeOf(operands[0]).size() < 2)
    return n.invalid("input must have rank >= 2");
  return n.setOutput(0,
                     n.create<BatchNormOp>(
                         operands[0].getType(), operands,
                         {n.named("epsilon", n.b.getF32FloatAttr(*epsilon))}));
}

LogicalResult importInstanceNorm(Node &n) {
  FailureOr<float> epsilon = n.getFloat("epsilon", 1e-5f);
  FailureOr<Value> x = n.input(0), scale = n.input(1), bias = n.input(2);
  if (failed(epsilon) || failed(x) || failed(scale) || failed(bias))
    return failure();
  return n.setOutput(0,
                     n.create<InstanceNormOp>(
                         x->getType(), {*x, *scale, *bias},
                         {n.named("epsilon", n.b.getF32FloatAttr(*epsilon))}));
}

LogicalResult importLayerNorm(Node &n) {
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1);
  FailureOr<float> epsilon = n.getFloat("epsilon", 1e-5f);
  FailureOr<int64_t> stashType =
      n.getInt("stash_type", onnx::TensorProto::FLOAT);
  FailureOr<Value> x = n.input(0), scale = n.input(1);
  if (failed(axisAttr) || failed(epsilon) || failed(stashType) || failed(x) ||
      failed(scale))
    return failure();
  SmallVector<Value> operands = {*x, *scale};
  if (n.has(2)) {
    FailureOr<Value> bias = n.input(2);
    if (failed(bias))
      return failure();
    operands.push_back(*bias);
  }
  int64_t rank = shapeOf(*x).size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  // Scale and bias apply elementwise over the normalized dims: each must
  // broadcast to them (the kernels' contract; refused here, at the node,
  // rather than by the kernel at run time).
  ArrayRef<int64_t> normalized = shapeOf(*x).drop_front(*axis);
  for (auto [i, param] : llvm::enumerate(llvm::ArrayRef(operands).drop_front())) {
    std::optional<SmallVector<int64_t>> shape = broadcastShapes(shapeOf(param), normalized);
    if (!shape || ArrayRef<int64_t>(*shape) != normalized)
      return n.invalid(Twine(i == 0 ? "scale " : "bias ") + shapeText(shapeOf(param)) +
                       " does not broadcast to the normalized shape " + shapeText(normalized));
  }
  Value y = n.create<LayerNormOp>(
      x->getType(), operands,
      {n.named("axis", n.b.getI64IntegerAttr(*axis)),
       n.named("epsilon", n.b.getF32FloatAttr(*epsilon))});
  if (failed(n.setOutput(0, y)))
    return failure();
  if (!n.wants(1) && !n.wants(2))
    return success();

  // Mean and InvStdDev, in the stash type, from reductions over [axis, rank).
  if (*stashType != onnx::TensorProto::FLOAT)
    return n.unsupported("outputs Mean/InvStdDev with stash_type " +
                             Twine(*stashType),
                         "stash_type=1 (float)");
  Type f32 = n.b.getF32Type();
  Value xs = *x;
  if (elementOf(xs) != f32)
    xs = n.create<CastOp>(RankedTensorType::get(shapeOf(xs), f32), xs);
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(*axis, rank));
  Value mean = createReduce<ReduceMeanOp>(n, xs, axes, /*keepdims=*/true);
  if (failed(n.setOutput(1, mean)))
    return failure();
  if (!n.wants(2))
    return success();
  FailureOr<Value> centered = createBinary<SubOp>(n, xs, mean);
  if (failed(centered))
    return failure();
  FailureOr<Value> squared = createBinary<MulOp>(n, *centered, *centered);
  if (failed(squared))
    return failure();
  Value variance = createReduce<ReduceMeanOp>(n, *squared, axes, true);
  Value eps = n.constantValue(DenseElementsAttr::get(
      RankedTensorType::get({}, f32), n.b.getF32FloatAttr(*epsilon)));
  FailureOr<Value> shifted = createBinary<AddOp>(n, variance, eps);
  if (failed(shifted))
    return failure();
  Value stddev = n.create<SqrtOp>(shifted->getType(), *shifted);
  return n.setOutput(2, n.create<ReciprocalOp>(stddev.getType(), stddev));
}

LogicalResult importLrn(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> size = n.getInt("size", 0);
  FailureOr<float> alpha = n.getFloat("alpha", 1e-4f),
                   beta = n.getFloat("beta", 0.75f),
                   bias = n.getFloat("bias", 1.0f);
  if (failed(x) || failed(size) || failed(alpha) || failed(beta) ||
      failed(bias))
    return failure();
  if (*size < 1)
    return n.invalid("attribute 'size' must be positive");
  return n.setOutput(
      0, n.create<LrnOp>(x->getType(), *x,
                         {n.named("size", n.b.getI64IntegerAttr(*size)),
                          n.named("alpha", n.b.getF32FloatAttr(*alpha)),
                          n.named("beta", n.b.getF32FloatAttr(*beta)),
                          n.named("bias", n.b.getF32FloatAttr(*bias))}));
}

/// RMSNormalization (opset 23): X / sqrt(mean(X^2 over [axis, rank)) +
/// epsilon) * scale, the statistics in f32 (stash_type 1, the default) or in
/// X's type (stash_type equal to it), the result rounded once to X's type.
LogicalResult importRmsNorm(Node &n) {
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1);
  FailureOr<float> epsilon = n.getFloat("epsilon", 1e-5f);
  FailureOr<Value> x = n.input(0), scale = n.input(1);
  if (failed(axisAttr) || failed(epsilon) || failed(x) || failed(scale))
    return failure();
  Type element = elementOf(*x);
  if (!isa<FloatType>(element) || elementOf(*scale) != element)
    return n.invalid("X and scale must share a float type");
  FailureOr<int64_t> stashType = n.getInt("stash_type", onnx::TensorProto::FLOAT);
  if (failed(stashType))
    return failure();
  Type stash = *stashType == onnx::TensorProto::FLOAT ? Type(n.b.getF32Type()) : element;
  if (stash != n.b.getF32Type() && elementType(n.ctx, static_cast<int32_t>(*stashType)) != element)
    return n.unsupported("stash_type " + Twine(*stashType), "1 (float) or X's type");
  const int64_t rank = shapeOf(*x).size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(rank));
  ArrayRef<int64_t> normalized = shapeOf(*x).drop_front(*axis);
  std::optional<SmallVector<int64_t>> scaled = broadcastShapes(shapeOf(*scale), normalized);
  if (!scaled || ArrayRef<int64_t>(*scaled) != normalized)
    return n.invalid("scale " + shapeText(shapeOf(*scale)) + " does not broadcast to the " +
                     "normalized shape " + shapeText(normalized));
  auto scalar = [&](double v) {
    auto type = RankedTensorType::get({}, stash);
    return n.constantValue(DenseElementsAttr::get(type, n.b.getFloatAttr(stash, v)));
  };
  Value xs = castTo(n, *x, stash);
  FailureOr<Value> squares = createBinary<MulOp>(n, xs, xs);
  if (failed(squares))
    return failure();
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(*axis, rank));
  Value meanSquare = createReduce<ReduceMeanOp>(n, *squares, axes, /*keepdims=*/true);
  FailureOr<Value> shifted = createBinary<AddOp>(n, meanSquare, scalar(*epsilon));
  if (failed(shifted))
    return failure();
  Value rms = n.create<SqrtOp>(shifted->getType(), *shifted);
  FailureOr<Value> normed = createBinary<DivOp>(n, xs, rms);
  if (failed(normed))
    return failure();
  FailureOr<Value> y = createBinary<MulOp>(n, castTo(n, *normed, element), *scale);
  if (failed(y))
    return failure();
  return n.setOutput(0, *y);
}

/// LpNormalization: X / norm_p(X along axis), p 1 or 2: the L1 or L2 norm
/// with the axis kept, then a broadcasting divide; a line whose norm is 0
/// (all zeros) gives zeros, as ONNX's tests define it, by dividing it by 1.
LogicalResult importLpNorm(Node &n) {
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1), p = n.getInt("p", 2);
  FailureOr<Value> x = n.input(0);
  if (failed(axisAttr) || failed(p) || failed(x))
    return failure();
  if (!isa<FloatType>(elementOf(*x)))
    return n.invalid("input must be a float tensor");
  if (*p != 1 && *p != 2)
    return n.invalid("p is " + Twine(*p) + "; LpNormalization takes 1 or 2");
  const int64_t rank = shapeOf(*x).size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(rank));
  Value norm = *p == 1 ? createReduce<ReduceL1Op>(n, *x, {*axis}, /*keepdims=*/true)
                       : createReduce<ReduceL2Op>(n, *x, {*axis}, /*keepdims=*/true);
  Type element = elementOf(*x);
  auto normType = cast<RankedTensorType>(norm.getType());
  Value zero = n.create<EqualOp>(normType.clone(n.b.getI1Type()),
                                 {norm, n.scalar(element, 0.0)});
  Value divisor = n.create<WhereOp>(normType, {zero, n.scalar(element, 1.0), norm});
  FailureOr<Value> y = createBinary<DivOp>(n, *x, divisor);
  if (failed(y))
    return failure();
  return n.setOutput(0, *y);
}

const OpVersion kNormalizationOps[] = {
    {"LpNormalization", {1}, importLpNorm},
    {"RMSNormalization", {23}, importRmsNorm},
    {"BatchNormalization", {7}, importBatchNorm},
    {"InstanceNormalization", {6}, importInstanceNorm},
    {"LayerNormalization", {17}, importLayerNorm},
    {"LRN", {1}, importLrn},
};

} // namespace

void registerNormalizationOps(OpTable &table) { table.add(kNormalizationOps); }

} // namespace tessel::importer
