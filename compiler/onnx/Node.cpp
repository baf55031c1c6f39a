//===- Node.cpp - the node API the ONNX op handlers work with -------------===//
#include "Node.h"

#include "TensorProto.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;

namespace tessel::importer {
namespace {

// Integer tensors up to this many elements are evaluated at import time when
// all their operands are constant (shape arithmetic); the rest is left to
// --tessel-fold-constants.
constexpr int64_t kMaxEvaluatedElements = 4096;

//===----------------------------------------------------------------------===//
// Import-time evaluation of integer shape arithmetic
//===----------------------------------------------------------------------===//

/// Calls `fn(flatIndex, multiIndex)` for each element of `shape`, row-major.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  int64_t count = product(shape);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    fn(flat, ArrayRef<int64_t>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Row-major strides of `shape` aligned to the last `rank` dims of a
/// broadcast result; broadcast dims get stride 0.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape, size_t rank) {
  SmallVector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    size_t r = rank - shape.size() + d;
    strides[r] = shape[d] == 1 ? 0 : stride;
    stride *= shape[d];
  }
  return strides;
}

bool isSignlessInteger(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isSignless() && i.getWidth() > 1;
}

/// `x mod y` for y != 0 (and not INT64_MIN mod -1): with the divisor's sign
/// (Python's %), or with the dividend's (C's %, ONNX Mod's fmod=1).
int64_t integerMod(int64_t x, int64_t y, bool fmod) {
  int64_t r = x % y;
  if (!fmod && r != 0 && (r < 0) != (y < 0))
    r += y; // opposite signs: no overflow
  return r;
}

/// Evaluates `op` when it is small integer arithmetic on constants (the
/// Shape -> Gather -> Concat -> Reshape kind of subgraph), so that its result
/// can serve as an attribute of a later op. Nothing otherwise.
std::optional<DenseElementsAttr> evaluateShapeArithmetic(Operation *op) {
  if (!isa<ReshapeOp, IdentityOp, CastOp, NegOp, ConcatOp, GatherOp, SliceOp,
           AddOp, SubOp, MulOp, DivOp, ModOp>(op))
    return std::nullopt;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!isSignlessInteger(resultType.getElementType()) ||
      resultType.getNumElements() > kMaxEvaluatedElements)
    return std::nullopt;
  SmallVector<DenseElementsAttr> attrs;
  SmallVector<SmallVector<int64_t>> in;
  for (Value operand : op->getOperands()) {
    auto constant = operand.getDefiningOp<ConstantOp>();
    auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                          : DenseElementsAttr();
    if (!dense || !isSignlessInteger(dense.getElementType()) ||
        dense.getNumElements() > kMaxEvaluatedElements)
      return std::nullopt;
    attrs.push_back(dense);
    in.push_back(*integerValues(dense));
  }
  ArrayRef<int64_t> outShape = resultType.getShape();
  SmallVector<int64_t> out;
  out.reserve(resultType.getNumElements());

  if (isa<ReshapeOp, IdentityOp>(op))
    return attrs[0].reshape(resultType);
  if (isa<CastOp>(op))
    return integerAttr(resultType, in[0]);
  if (isa<NegOp>(op)) {
    for (int64_t v : in[0])
      out.push_back(static_cast<int64_t>(0 - static_cast<uint64_t>(v)));
    return integerAttr(resultType, out);
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t axis = concat.getAxis();
    int64_t outer = product(outShape.take_front(axis));
    for (int64_t o = 0; o < outer; ++o)
      for (auto [values, attr] : llvm::zip(in, attrs)) {
        int64_t chunk = product(attr.getType().getShape().drop_front(axis));
        out.append(values.begin() + o * chunk,
                   values.begin() + (o + 1) * chunk);
      }
    return integerAttr(resultType, out);
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    int64_t axis = gather.getAxis();
    ArrayRef<int64_t> data = attrs[0].getType().getShape();
    int64_t outer = product(data.take_front(axis)), dim = data[axis];
    int64_t inner = product(data.drop_front(axis + 1));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t index : in[1]) {
        int64_t k = index < 0 ? index + dim : index;
        if (k < 0 || k >= dim)
          return std::nullopt; // left for the runtime to report
        auto first = in[0].begin() + (o * dim + k) * inner;
        out.append(first, first + inner);
      }
    return integerAttr(resultType, out);
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    ArrayRef<int64_t> inShape = attrs[0].getType().getShape();
    SmallVector<int64_t> strides(inShape.size(), 0);
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(inShape.size()) - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= inShape[d];
    }
    forEachIndex(outShape, [&](int64_t, ArrayRef<int64_t> index) {
      int64_t offset = 0;
      for (size_t d = 0; d < index.size(); ++d)
        offset += (slice.getStarts()[d] + index[d] * slice.getSteps()[d]) *
                  strides[d];
      out.push_back(in[0][offset]);
    });
    return integerAttr(resultType, out);
  }
  // Broadcasting binary arithmetic.
  SmallVector<int64_t> lhsStrides =
      broadcastStrides(attrs[0].getType().getShape(), outShape.size());
  SmallVector<int64_t> rhsStrides =
      broadcastStrides(attrs[1].getType().getShape(), outShape.size());
  bool ok = true;
  forEachIndex(outShape, [&](int64_t, ArrayRef<int64_t> index) {
    int64_t l = 0, r = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      l += index[d] * lhsStrides[d];
      r += index[d] * rhsStrides[d];
    }
    // Wrapping arithmetic, as the kernels do.
    uint64_t a = in[0][l], c = in[1][r];
    if (isa<AddOp>(op))
      out.push_back(static_cast<int64_t>(a + c));
    else if (isa<SubOp>(op))
      out.push_back(static_cast<int64_t>(a - c));
    else if (isa<MulOp>(op))
      out.push_back(static_cast<int64_t>(a * c));
    else if (in[1][r] == 0 || (in[1][r] == -1 &&
                               in[0][l] == std::numeric_limits<int64_t>::min()))
      ok = false; // left to the kernels, which define these results
    else if (auto mod = dyn_cast<ModOp>(op))
      out.push_back(integerMod(in[0][l], in[1][r], mod.getFmod()));
    else
      out.push_back(in[0][l] / in[1][r]);
  });
  if (!ok)
    return std::nullopt;
  return integerAttr(resultType, out);
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
  if (op && !isa<ConstantOp>(op) && op->use_empty())
    if (std::optional<DenseElementsAttr> folded = evaluateShapeArithmetic(op)) {
      op->erase();
      return setConstantOutput(i, *folded);
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
