//===- Node.cpp - the node API the ONNX op handlers work with -------------===//
#include "Node.h"

#include "TensorProto.h"
#include "Tensors.h"

#include "ConstantEvaluator.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tessel::importer {
namespace {

/// Whether `op` is small integer arithmetic on constants (the Shape -> Gather
/// -> Concat -> Reshape kind of subgraph, and the Equal -> Where that picks
/// among shapes, as PyTorch exports a reshape to a computed shape), which the
/// importer evaluates with the one constant evaluator so that its result can
/// serve as an attribute of a later op: one result, a signless integer or
/// bool tensor of at most kMaxEvaluatedElements, and every operand a
/// `tessel.constant`.
bool isShapeArithmetic(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto integer = dyn_cast<IntegerType>(type.getElementType());
  if (!integer || !integer.isSignless() || type.getNumElements() > kMaxEvaluatedElements)
    return false;
  return llvm::all_of(op->getOperands(), [](Value operand) {
    return operand.getDefiningOp<ConstantOp>() != nullptr;
  });
}

} // namespace

Node::Node(GraphImporter &graph, const onnx::NodeProto &proto, int64_t index)
    : proto(proto), graph(graph), ctx(graph.ctx), b(graph.b),
      name(proto.name().empty() ? proto.op_type() + "_" + std::to_string(index)
                                : proto.name()),
      loc(NameLoc::get(
          StringAttr::get(graph.ctx, name + "(" + proto.op_type() + ")"))) {}

LogicalResult Node::unsupported(const Twine &what, const Twine &instead) {
  std::string text =
      ("unsupported: " + opType() + " node '" + name + "': " + what).str();
  std::string hint = instead.str();
  if (!hint.empty())
    text += " (" + hint + ")";
  return graph.error(loc, /*unsupported=*/true, text);
}

LogicalResult Node::invalid(const Twine &what) {
  return graph.error(loc, /*unsupported=*/false,
                     opType() + " node '" + name + "': " + what);
}

FailureOr<Value> Node::input(int i) {
  if (!has(i))
    return invalid("input " + Twine(i) + " is required");
  const std::string &valueName = proto.input(i);
  if (Value v = graph.values.lookup(valueName))
    return v;
  std::string error;
  if (graph.knownConstant(valueName, error))
    return graph.materialize(valueName);
  if (!error.empty())
    return unsupported("input '" + valueName + "': " + error);
  return invalid("input '" + valueName +
                 "' is not defined by a graph input, an initializer or an "
                 "earlier node");
}

FailureOr<Value> Node::shapeInput(int i) {
  FailureOr<Value> v = input(i);
  if (succeeded(v) && graph.dataDependent(*v))
    return unsupported("the shape of '" + proto.input(i) +
                       "' is known only at run time: it follows a data-dependent extent "
                       "(NonMaxSuppression's rows), and Tessel folds shapes at compile time");
  return v;
}

std::optional<DenseElementsAttr> Node::tryConstant(int i) {
  if (!has(i))
    return std::nullopt;
  std::string error;
  return graph.knownConstant(proto.input(i), error);
}

FailureOr<DenseElementsAttr> Node::constant(int i, StringRef what) {
  if (!has(i))
    return invalid(what + " (input " + Twine(i) + ") is required");
  const std::string &valueName = proto.input(i);
  std::string error;
  if (std::optional<DenseElementsAttr> attr =
          graph.knownConstant(valueName, error))
    return *attr;
  if (!error.empty())
    return unsupported(what + " '" + valueName + "': " + error);
  bool isGraphInput = llvm::any_of(graph.graph.input(), [&](const auto &in) {
    return in.name() == valueName;
  });
  if (isGraphInput)
    return unsupported(what + " '" + valueName +
                           "' is a graph input, not a compile-time constant",
                       "freeze it: tessel-compile --freeze " + valueName +
                           "=VALUE.pb");
  return unsupported(what + " '" + valueName +
                         "' is not a compile-time constant",
                     "it must come from initializers, Constant nodes or "
                     "static shapes");
}

FailureOr<SmallVector<int64_t>> Node::constantInts(int i, StringRef what) {
  FailureOr<DenseElementsAttr> attr = constant(i, what);
  if (failed(attr))
    return failure();
  std::optional<SmallVector<int64_t>> values = integerValues(*attr);
  if (!values)
    return invalid(what + " must be an integer tensor");
  return *values;
}

FailureOr<double> Node::constantScalar(int i, StringRef what) {
  FailureOr<DenseElementsAttr> attr = constant(i, what);
  if (failed(attr))
    return failure();
  if (attr->getNumElements() != 1)
    return invalid(what + " must hold one value, it has shape " +
                   shapeText(attr->getType().getShape()));
  return doubleValues(*attr).front();
}

const onnx::AttributeProto *Node::attr(StringRef attrName) const {
  for (const auto &a : proto.attribute())
    if (a.name() == attrName)
      return &a;
  return nullptr;
}

FailureOr<int64_t> Node::getInt(StringRef attrName, int64_t dflt) {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::INT)
    return invalid("attribute '" + attrName + "' must be an int");
  return a->i();
}

FailureOr<float> Node::getFloat(StringRef attrName, float dflt) {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::FLOAT)
    return invalid("attribute '" + attrName + "' must be a float");
  return a->f();
}

FailureOr<std::string> Node::getString(StringRef attrName, StringRef dflt) {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return dflt.str();
  if (a->type() != onnx::AttributeProto::STRING)
    return invalid("attribute '" + attrName + "' must be a string");
  return a->s();
}

FailureOr<std::optional<SmallVector<int64_t>>>
Node::getInts(StringRef attrName) {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  if (a->type() != onnx::AttributeProto::INTS)
    return invalid("attribute '" + attrName + "' must be a list of ints");
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

LogicalResult Node::checkSizes(ArrayRef<int64_t> values, const Twine &what) {
  if (llvm::any_of(values,
                   [](int64_t v) { return v < -kMaxExtent || v > kMaxExtent; }))
    return invalid(what + " " + shapeText(values) + " are out of range");
  return success();
}

std::optional<RankedTensorType> Node::inferredOutputType(int i) {
  if (!wants(i))
    return std::nullopt;
  return graph.inferredType(proto.output(i));
}

Value Node::constantValue(DenseElementsAttr value) {
  return create<ConstantOp>(value.getType(), {}, {named("value", value)});
}

Value Node::scalar(Type element, double value) {
  return constantValue(numericAttr(RankedTensorType::get({}, element), {value}));
}

LogicalResult Node::setOutput(int i, Value value, bool matchInference) {
  if (!wants(i))
    return success();
  const std::string &valueName = proto.output(i);
  if (!isSupportedShape(shapeOf(value)))
    return invalid("output '" + valueName + "' would have shape " +
                   shapeText(shapeOf(value)) + ", beyond " + Twine(kMaxExtent) +
                   " per dim or " + Twine(kMaxElements) + " elements");
  std::optional<RankedTensorType> inferred = graph.inferredType(valueName);
  if (matchInference && inferred && *inferred != value.getType())
    return invalid("output '" + valueName + "': computed type " +
                   typeText(value.getType()) +
                   " differs from ONNX shape inference's " +
                   typeText(*inferred));
  Operation *op = value.getDefiningOp();
  if (op && !isa<ConstantOp>(op) && op->use_empty() && isShapeArithmetic(op))
    if (std::optional<SmallVector<DenseElementsAttr>> folded =
            evaluateConstantOp(op)) {
      op->erase();
      return setConstantOutput(i, folded->front());
    }
  graph.values[valueName] = value;
  return success();
}

LogicalResult Node::setConstantOutput(int i, DenseElementsAttr value) {
  if (!wants(i))
    return success();
  if (!isSupportedShape(value.getType().getShape()))
    return invalid("output '" + proto.output(i) + "' would have shape " +
                   shapeText(value.getType().getShape()) + ", beyond " +
                   Twine(kMaxExtent) + " per dim or " + Twine(kMaxElements) +
                   " elements");
  KnownConstant known{nullptr, value, loc, Value()};
  graph.constants.insert_or_assign(proto.output(i), known);
  return success();
}

std::optional<DenseElementsAttr>
GraphImporter::knownConstant(StringRef valueName, std::string &error) {
  auto it = constants.find(valueName);
  if (it != constants.end()) {
    KnownConstant &known = it->second;
    if (!known.attr) {
      FailureOr<DenseElementsAttr> attr =
          tensorToAttr(ctx, *known.proto, error);
      if (failed(attr))
        return std::nullopt;
      known.attr = *attr;
    }
    return known.attr;
  }
  // Data that ONNX shape inference propagated (shapes computed by Shape,
  // Gather, Concat, ... on static dims), as an int64 tensor.
  auto prop = propagated.find(valueName.str());
  if (prop == propagated.end())
    return std::nullopt;
  SmallVector<int64_t> data;
  for (const auto &dim : prop->second.dim()) {
    if (!dim.has_dim_value())
      return std::nullopt;
    data.push_back(dim.dim_value());
  }
  std::optional<RankedTensorType> type = inferredType(valueName);
  if (!type || !type->getElementType().isInteger(64) ||
      type->getNumElements() != static_cast<int64_t>(data.size()))
    return std::nullopt;
  DenseElementsAttr attr = integerAttr(*type, data);
  constants.insert(
      {valueName,
       KnownConstant{nullptr, attr,
                     NameLoc::get(StringAttr::get(ctx, valueName)), Value()}});
  return attr;
}

Value GraphImporter::materialize(StringRef valueName) {
  KnownConstant &known = constants[valueName];
  if (!known.materialized)
    known.materialized =
        b.create<ConstantOp>(known.loc, TypeRange{known.attr.getType()},
                             ValueRange{}, b.getNamedAttr("value", known.attr))
            ->getResult(0);
  return known.materialized;
}

std::optional<RankedTensorType>
GraphImporter::inferredType(StringRef valueName) {
  const onnx::TypeProto *type = onnxTypes.lookup(valueName);
  if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape())
    return std::nullopt;
  Type element = elementType(ctx, type->tensor_type().elem_type());
  if (!element)
    return std::nullopt;
  SmallVector<int64_t> dims;
  for (const auto &dim : type->tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return std::nullopt;
    dims.push_back(dim.dim_value());
  }
  return RankedTensorType::get(dims, element);
}

} // namespace tessel::importer
