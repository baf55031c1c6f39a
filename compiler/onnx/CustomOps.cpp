//===- CustomOps.cpp - nodes of custom op manifests -----------------------===//
//
// A node whose (domain, op type) a manifest declares (tessel-compile
// --custom-op) becomes one tessel.custom: its inputs in the op's element
// type and layout (casts and transposes only where the model's differ), its
// attributes checked against the declaration with defaults filled in, its
// results shaped by the manifest's rules.
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"

#include "CustomOp.h"

using namespace mlir;

namespace tessel::importer {

namespace {

constexpr int64_t kToNHWC[] = {0, 2, 3, 1};
constexpr int64_t kToNCHW[] = {0, 3, 1, 2};

Value transposed(Node &n, Value v, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = shapeOf(v);
  SmallVector<int64_t> result;
  for (int64_t p : perm)
    result.push_back(shape[p]);
  return n.create<TransposeOp>(RankedTensorType::get(result, elementOf(v)), v,
                               {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
}

const char *kindName(custom::AttrDecl::Kind kind) {
  switch (kind) {
  case custom::AttrDecl::Kind::Int: return "int";
  case custom::AttrDecl::Kind::Float: return "float";
  case custom::AttrDecl::Kind::Ints: return "ints";
  case custom::AttrDecl::Kind::Floats: return "floats";
  case custom::AttrDecl::Kind::String: return "string";
  }
  return "?";
}

/// An attribute value as the op holds it (the engine's encodings: i64, f64,
/// i64 and f64 arrays, strings).
Attribute toAttribute(Builder &b, const cpu::AttrValue &value) {
  if (auto *i = std::get_if<int64_t>(&value))
    return b.getI64IntegerAttr(*i);
  if (auto *f = std::get_if<double>(&value))
    return b.getF64FloatAttr(*f);
  if (auto *ints = std::get_if<std::vector<int64_t>>(&value))
    return b.getDenseI64ArrayAttr(*ints);
  if (auto *floats = std::get_if<std::vector<double>>(&value))
    return b.getDenseF64ArrayAttr(*floats);
  return b.getStringAttr(std::get<std::string>(value));
}

} // namespace

LogicalResult importCustomOp(Node &n, const custom::CustomOpDecl &decl) {
  const std::string op = "custom op " + decl.qualifiedName() + " (" + decl.file + ")";
  if (n.numInputs() != static_cast<int>(decl.inputs.size()))
    return n.invalid("has " + Twine(n.numInputs()) + " inputs, but " + op + " declares " +
                     Twine(decl.inputs.size()));
  if (n.numOutputs() != static_cast<int>(decl.outputs.size()))
    return n.invalid("has " + Twine(n.numOutputs()) + " outputs, but " + op + " declares " +
                     Twine(decl.outputs.size()));

  // Attributes: every one declared, typed as declared; defaults filled in.
  std::map<std::string, int64_t> intAttrs;
  SmallVector<NamedAttribute> attrs;
  for (const auto &attr : n.proto.attribute())
    if (llvm::none_of(decl.attributes,
                      [&](const custom::AttrDecl &d) { return d.name == attr.name(); }))
      return n.invalid("attribute '" + attr.name() + "' is not declared by " + op);
  for (const custom::AttrDecl &declared : decl.attributes) {
    const onnx::AttributeProto *attr = n.attr(declared.name);
    std::optional<cpu::AttrValue> value = declared.dflt;
    if (attr) {
      using A = onnx::AttributeProto;
      using K = custom::AttrDecl::Kind;
      const std::pair<K, A::AttributeType> kinds[] = {
          {K::Int, A::INT}, {K::Float, A::FLOAT}, {K::Ints, A::INTS},
          {K::Floats, A::FLOATS}, {K::String, A::STRING}};
      bool matches = false;
      for (auto [kind, type] : kinds)
        matches |= declared.kind == kind && attr->type() == type;
      if (!matches)
        return n.invalid("attribute '" + declared.name + "' must be " +
                         kindName(declared.kind) + ", as " + op + " declares it");
      switch (declared.kind) {
      case K::Int: value = attr->i(); break;
      case K::Float: value = static_cast<double>(attr->f()); break;
      case K::Ints: value = std::vector<int64_t>(attr->ints().begin(), attr->ints().end()); break;
      case K::Floats: value = std::vector<double>(attr->floats().begin(), attr->floats().end()); break;
      case K::String: value = attr->s(); break;
      }
    }
    if (!value)
      return n.invalid("attribute '" + declared.name + "' is required by " + op +
                       " (it declares no default)");
    if (auto *i = std::get_if<int64_t>(&*value))
      intAttrs[declared.name] = *i;
    attrs.push_back(n.named(declared.name, toAttribute(n.b, *value)));
  }

  // Inputs: float tensors of one element type; the op's, by casts, where
  // its kernels do not accept the model's.
  SmallVector<Value> inputs;
  Type modelType;
  for (int i = 0; i < n.numInputs(); ++i) {
    if (!n.has(i))
      return n.invalid("input '" + decl.inputs[i] + "' of " + op + " is missing");
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    Type element = elementOf(*v);
    if (!element.isF32() && !element.isF16())
      return n.unsupported("input '" + decl.inputs[i] + "' is " + typeText(element) + ", but " +
                           op + " takes f32 or f16 tensors");
    if (modelType && element != modelType)
      return n.unsupported("inputs of element types " + typeText(modelType) + " and " +
                           typeText(element) + ": " + op + " takes one element type");
    modelType = element;
    if (int other = decl.sameShapeAs[i]; other >= 0 && shapeOf(*v) != shapeOf(inputs[other]))
      return n.invalid("input '" + decl.inputs[i] + "' has shape " + shapeText(shapeOf(*v)) +
                       ", but " + op + " needs the shape of input '" + decl.inputs[other] +
                       "', " + shapeText(shapeOf(inputs[other])));
    inputs.push_back(*v);
  }
  std::string modelName = modelType.isF16() ? "f16" : "f32";
  Type opType = decl.accepts(modelName)
                    ? modelType
                    : (decl.dtypes.front() == "f16" ? Type(n.b.getF16Type()) : n.b.getF32Type());
  const bool nhwc = decl.layout == "NHWC";
  for (Value &v : inputs) {
    if (elementOf(v) != opType)
      v = n.create<CastOp>(cast<RankedTensorType>(v.getType()).clone(opType), v);
    if (nhwc && shapeOf(v).size() == 4)
      v = transposed(n, v, kToNHWC);
  }

  // Inputs with declared dims, then the results, by the manifest's rules
  // (in the op's layout).
  std::vector<std::vector<int64_t>> shapes;
  for (Value v : inputs)
    shapes.emplace_back(shapeOf(v).begin(), shapeOf(v).end());
  for (auto [i, dims] : llvm::enumerate(decl.inputDims)) {
    if (dims.empty())
      continue;
    std::vector<int64_t> expected;
    for (const custom::DimExpr &dim : dims) {
      std::string why;
      std::optional<int64_t> extent = dim.evaluate(shapes, intAttrs, why);
      if (!extent)
        return n.invalid("input '" + decl.inputs[i] + "' of " + op + ": dim '" + dim.text() +
                         "': " + why);
      expected.push_back(*extent);
    }
    if (expected != shapes[i])
      return n.invalid("input '" + decl.inputs[i] + "' has shape " + shapeText(shapes[i]) +
                       (nhwc ? " (NHWC)" : "") + ", but " + op + " needs " +
                       shapeText(expected));
  }
  SmallVector<Type> resultTypes;
  for (const custom::OutputDecl &output : decl.outputs) {
    SmallVector<int64_t> shape;
    const std::string where = "output '" + output.name + "' of " + op;
    switch (output.rule) {
    case custom::OutputDecl::Rule::SameAs:
      shape.assign(shapes[output.input].begin(), shapes[output.input].end());
      break;
    case custom::OutputDecl::Rule::Broadcast: {
      shape.assign(shapes[0].begin(), shapes[0].end());
      for (size_t i = 1; i < shapes.size(); ++i) {
        std::optional<SmallVector<int64_t>> joined = broadcastShapes(shape, shapes[i]);
        if (!joined)
          return n.invalid(where + ": the inputs' shapes " + shapeText(shape) + " and " +
                           shapeText(shapes[i]) + " do not broadcast");
        shape = *joined;
      }
      break;
    }
    case custom::OutputDecl::Rule::Dims:
      for (const custom::DimExpr &dim : output.dims) {
        std::string why;
        std::optional<int64_t> extent = dim.evaluate(shapes, intAttrs, why);
        if (!extent)
          return n.invalid(where + ": dim '" + dim.text() + "': " + why);
        if (*extent < 0)
          return n.invalid(where + ": dim '" + dim.text() + "' is " + Twine(*extent));
        shape.push_back(*extent);
      }
      break;
    }
    if (!isSupportedShape(shape))
      return n.invalid(where + " has shape " + shapeText(shape) + ", beyond " +
                       Twine(kMaxExtent) + " per dim or " + Twine(kMaxElements) + " elements");
    resultTypes.push_back(RankedTensorType::get(shape, opType));
  }

  attrs.push_back(n.named("domain", n.b.getStringAttr(decl.domain)));
  attrs.push_back(n.named("op_type", n.b.getStringAttr(decl.opType)));
  std::string dtypes;
  for (const std::string &dtype : decl.dtypes)
    dtypes += (dtypes.empty() ? "" : ",") + dtype;
  attrs.push_back(n.named("dtypes", n.b.getStringAttr(dtypes)));
  attrs.push_back(n.named("layout", n.b.getStringAttr(decl.layout)));
  auto customOp = n.b.create<CustomOp>(n.loc, resultTypes, inputs, attrs);

  for (int i = 0; i < n.numOutputs(); ++i) {
    Value result = customOp->getResult(i);
    if (nhwc && shapeOf(result).size() == 4)
      result = transposed(n, result, kToNCHW);
    if (elementOf(result) != modelType)
      result = n.create<CastOp>(cast<RankedTensorType>(result.getType()).clone(modelType), result);
    if (n.wants(i) && failed(n.setOutput(i, result)))
      return failure();
  }
  return success();
}

} // namespace tessel::importer
