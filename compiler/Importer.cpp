//===- Importer.cpp - ONNX to the tessel graph dialect --------------------===//
//
// Reads an ONNX model (external data and frozen inputs resolved), validates it
// with the ONNX checker, runs ONNX shape inference with data propagation, and
// emits one `func.func @main` of tessel ops. ONNX semantics are normalized here
// so that passes and kernels never re-derive them: auto_pad becomes explicit
// pads, axes become sorted and non-negative, optional inputs and attributes get
// their ONNX defaults, and every result type is static.
//
// Operands that the tessel ops take as attributes (Reshape's shape, Slice's
// starts, Clip's bounds, ...) must be known at import time: initializers,
// Constant nodes, values derived from static shapes (Shape, Size,
// ConstantOfShape), small integer arithmetic on those (evaluated here, see
// evaluateShapeArithmetic), or data that ONNX shape inference propagated.
//
// Problems are reported at the ONNX node (`loc("name(OpType)")`); import goes
// on past unsupported nodes so that one run lists all of them. Nothing escapes
// as an exception, and a malformed model never crashes the importer: sizes are
// bounded before any shape arithmetic, and the ONNX checker and shape
// inference (which crash on some malformed nodes) run in a child process.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

using namespace mlir;

namespace tessel {
namespace {

// The default-domain opsets whose semantics the handlers below implement. Older
// models are accepted node by node where the op is unchanged since opset 7.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;
// Integer tensors up to this many elements are evaluated at import time when
// all their operands are constant (shape arithmetic); the rest is left to
// --tessel-fold-constants.
constexpr int64_t kMaxEvaluatedElements = 4096;
// Bounds on tensor extents and on size-like attribute values (strides, pads,
// shapes, repeats, ...). Far beyond any real model, they keep the shape
// arithmetic below inside int64 whatever a malformed model holds.
constexpr int64_t kMaxExtent = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 48;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? "," : "") + std::to_string(d);
  return text + "]";
}

std::string shapeText(const onnx::TensorShapeProto &shape) {
  std::string text = "[";
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &dim = shape.dim(i);
    text += i ? "," : "";
    text += dim.has_dim_value()   ? std::to_string(dim.dim_value())
            : dim.has_dim_param() ? dim.dim_param()
                                  : std::string("?");
  }
  return text + "]";
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return os.str();
}

/// Element count of a shape whose extents are within kMaxExtent and whose
/// element count is within kMaxElements (every shape the importer builds).
int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// Whether `shape` is within kMaxExtent per dim and kMaxElements in all.
bool isSupportedShape(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxExtent || (d > 0 && count > kMaxElements / d))
      return false;
    count *= d;
  }
  return true;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `axis` in [-rank, rank) made non-negative; nothing if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  SmallVector<int64_t> result;
  if (!OpTrait::util::getBroadcastedShape(a, b, result))
    return std::nullopt;
  return result;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

const char *onnxTypeName(int32_t type) {
  if (onnx::TensorProto_DataType_IsValid(type))
    return onnx::TensorProto_DataType_Name(type).c_str();
  return "UNKNOWN";
}

/// The MLIR element type of an ONNX TensorProto data type; null when tessel
/// has none (strings, complex numbers, 8-bit floats).
Type elementType(MLIRContext *ctx, int32_t type) {
  Builder b(ctx);
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, false);
  default:
    return {};
  }
}

/// Integer values of a constant (sign- or zero-extended by signedness);
/// nothing for floats.
std::optional<SmallVector<int64_t>> integerValues(DenseElementsAttr attr) {
  auto type = dyn_cast<IntegerType>(attr.getElementType());
  if (!type)
    return std::nullopt;
  SmallVector<int64_t> values;
  values.reserve(attr.getNumElements());
  for (const APInt &v : attr.getValues<APInt>())
    values.push_back(type.isUnsigned() || type.getWidth() == 1
                         ? static_cast<int64_t>(v.getZExtValue())
                         : v.getSExtValue());
  return values;
}

/// Numeric values of a constant as doubles, whatever its element type.
SmallVector<double> doubleValues(DenseElementsAttr attr) {
  SmallVector<double> values;
  if (isa<FloatType>(attr.getElementType())) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v.convertToDouble());
    }
  } else {
    for (int64_t v : *integerValues(attr))
      values.push_back(static_cast<double>(v));
  }
  return values;
}

DenseElementsAttr integerAttr(RankedTensorType type, ArrayRef<int64_t> values) {
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> bits;
  bits.reserve(values.size());
  for (int64_t v : values)
    bits.push_back(
        APInt(64, static_cast<uint64_t>(v), /*isSigned=*/true).trunc(width));
  return DenseElementsAttr::get(type, bits);
}

/// A constant of `type` from doubles: floats round to the element type,
/// integers (whole values here) are taken as they are.
DenseElementsAttr numericAttr(RankedTensorType type, ArrayRef<double> values) {
  if (auto floatType = dyn_cast<FloatType>(type.getElementType())) {
    SmallVector<APFloat> floats;
    floats.reserve(values.size());
    for (double v : values) {
      APFloat f(v);
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      floats.push_back(f);
    }
    return DenseElementsAttr::get(type, floats);
  }
  SmallVector<int64_t> ints(values.begin(), values.end());
  return integerAttr(type, ints);
}

//===----------------------------------------------------------------------===//
// TensorProto -> DenseElementsAttr
//===----------------------------------------------------------------------===//

/// Appends `value`'s little-endian bytes (the layout of ONNX raw_data and of
/// MLIR's dense storage on the little-endian hosts Tessel runs on).
template <typename T> void appendBytes(std::vector<char> &bytes, T value) {
  const char *p = reinterpret_cast<const char *>(&value);
  bytes.insert(bytes.end(), p, p + sizeof(T));
}

FailureOr<DenseElementsAttr> tensorToAttr(MLIRContext *ctx,
                                          const onnx::TensorProto &tensor,
                                          std::string &error) {
  Type element = elementType(ctx, tensor.data_type());
  if (!element) {
    error = std::string("element type ") + onnxTypeName(tensor.data_type()) +
            " (tessel holds float, integer and bool tensors)";
    return failure();
  }
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  if (!isSupportedShape(dims)) {
    error = "dims " + shapeText(dims) + " are negative or too large";
    return failure();
  }
  int64_t count = product(dims);
  if (tensor.has_segment()) {
    error = "segmented tensors are not supported";
    return failure();
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "external data was not loaded";
    return failure();
  }
  auto type = RankedTensorType::get(dims, element);
  bool isBool = element.isInteger(1);
  size_t width = isBool ? 1 : element.getIntOrFloatBitWidth() / 8;

  auto fromBytes = [&](ArrayRef<char> bytes) -> FailureOr<DenseElementsAttr> {
    if (bytes.size() != static_cast<size_t>(count) * width) {
      error = "holds " + std::to_string(bytes.size()) + " bytes, expected " +
              std::to_string(count * width) + " for " + shapeText(dims);
      return failure();
    }
    if (isBool) {
      SmallVector<bool> values;
      for (char c : bytes)
        values.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(values));
    }
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  };

  if (tensor.has_raw_data())
    return fromBytes(
        ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size()));

  std::vector<char> bytes;
  bytes.reserve(count * width);
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    for (float v : tensor.float_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::DOUBLE:
    for (double v : tensor.double_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT64:
    for (int64_t v : tensor.int64_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::UINT32:
    for (uint64_t v : tensor.uint64_data())
      appendBytes(bytes, static_cast<uint32_t>(v));
    break;
  case onnx::TensorProto::UINT64:
    for (uint64_t v : tensor.uint64_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT32:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, v);
    break;
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::FLOAT16: // bit patterns in int32_data
  case onnx::TensorProto::BFLOAT16:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, static_cast<uint16_t>(v));
    break;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    for (int32_t v : tensor.int32_data())
      appendBytes(bytes, static_cast<uint8_t>(v));
    break;
  default:
    break;
  }
  return fromBytes(bytes);
}

//===----------------------------------------------------------------------===//
// Loading: protobuf, external data, frozen inputs
//===----------------------------------------------------------------------===//

/// Replaces the external data of `tensor` by raw_data read from `baseDir`.
LogicalResult loadExternalData(onnx::TensorProto &tensor, StringRef baseDir,
                               std::string &error) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoull(entry.value());
      else if (entry.key() == "length")
        length = std::stoull(entry.value());
    } catch (const std::exception &) {
      error = "external data entry '" + entry.key() + "' is not a number: '" +
              entry.value() + "'";
      return failure();
    }
  }
  if (location.empty()) {
    error = "external data has no location";
    return failure();
  }
  // The data must lie beside the model: no absolute paths, no '..'.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                    llvm::sys::path::end(location)),
                   [](StringRef c) { return c == ".."; })) {
    error = "external data location '" + location +
            "' must be a relative path inside the model's directory";
    return failure();
  }
  SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(path, fileSize)) {
    error = "cannot read external data file '" + std::string(path) + "'";
    return failure();
  }
  uint64_t start = offset.value_or(0);
  if (start > fileSize) {
    error = "external data offset " + std::to_string(start) +
            " is past the end of '" + std::string(path) + "' (" +
            std::to_string(fileSize) + " bytes)";
    return failure();
  }
  uint64_t size = length.value_or(fileSize - start);
  if (size > fileSize - start) {
    error = "external data [" + std::to_string(start) + ", " +
            std::to_string(start + size) + ") is outside '" +
            std::string(path) + "' (" + std::to_string(fileSize) + " bytes)";
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, size, start,
                                                 /*IsVolatile=*/false);
  if (!buffer) {
    error = "cannot read external data file '" + std::string(path) + "'";
    return failure();
  }
  tensor.set_raw_data((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return success();
}

/// Every tensor of the main graph: initializers and node attribute tensors.
template <typename Fn> void forEachTensor(onnx::GraphProto &graph, Fn fn) {
  for (auto &tensor : *graph.mutable_initializer())
    fn(tensor);
  for (auto &node : *graph.mutable_node())
    for (auto &attr : *node.mutable_attribute()) {
      if (attr.has_t())
        fn(*attr.mutable_t());
      for (auto &tensor : *attr.mutable_tensors())
        fn(tensor);
    }
}

bool parseProtoFile(const std::string &path, google::protobuf::Message &proto) {
  std::ifstream file(path, std::ios::binary);
  return file && proto.ParseFromIstream(&file);
}

//===----------------------------------------------------------------------===//
// The graph importer
//===----------------------------------------------------------------------===//

class GraphImporter;

/// Data that ONNX shape inference propagated through shape computations, by
/// value name.
using PropagatedData = std::unordered_map<std::string, onnx::TensorShapeProto>;

/// A compile-time value: an initializer (converted on first use) or a tensor
/// computed at import time.
struct KnownConstant {
  const onnx::TensorProto *proto = nullptr;
  DenseElementsAttr attr;
  LocationAttr loc;
  Value materialized;
};

/// The view of one ONNX node that handlers work with: typed access to inputs,
/// attributes and outputs, and diagnostics at the node's location.
class Node {
public:
  Node(GraphImporter &graph, const onnx::NodeProto &proto, int64_t index);

  const onnx::NodeProto &proto;
  GraphImporter &graph;
  MLIRContext *ctx;
  OpBuilder &b;
  std::string name;
  Location loc;
  int64_t opset;

  StringRef opType() const { return proto.op_type(); }

  // Diagnostics. Both return failure() for `return n.unsupported(...)`.
  LogicalResult unsupported(const Twine &what, const Twine &instead = "");
  LogicalResult invalid(const Twine &what);

  // Inputs.
  int numInputs() const { return proto.input_size(); }
  bool has(int i) const { return i < numInputs() && !proto.input(i).empty(); }
  FailureOr<Value> input(int i);
  /// The input's value if it is known at import time; emits `unsupported`
  /// naming `what` otherwise.
  FailureOr<DenseElementsAttr> constant(int i, StringRef what);
  std::optional<DenseElementsAttr> tryConstant(int i);
  /// For a handler that found neither a constant nor an inferred shape:
  /// reports the operand as not constant.
  LogicalResult requireConstant(int i, StringRef what) {
    if (succeeded(constant(i, what)))
      return invalid(Twine("internal error: ") + what + " is constant");
    return failure();
  }
  FailureOr<SmallVector<int64_t>> constantInts(int i, StringRef what);
  FailureOr<double> constantScalar(int i, StringRef what);

  // Attributes, with their ONNX defaults.
  const onnx::AttributeProto *attr(StringRef attrName) const;
  FailureOr<int64_t> getInt(StringRef attrName, int64_t dflt);
  FailureOr<float> getFloat(StringRef attrName, float dflt);
  FailureOr<std::string> getString(StringRef attrName, StringRef dflt);
  /// Nothing if absent.
  FailureOr<std::optional<SmallVector<int64_t>>> getInts(StringRef attrName);
  /// Fails unless each of `values` (strides, pads, a shape, ...) is within
  /// kMaxExtent in magnitude.
  LogicalResult checkSizes(ArrayRef<int64_t> values, const Twine &what);

  // Outputs.
  int numOutputs() const { return proto.output_size(); }
  bool wants(int i) const {
    return i < numOutputs() && !proto.output(i).empty();
  }
  /// The static type ONNX shape inference gave output `i`, if any.
  std::optional<RankedTensorType> inferredOutputType(int i);
  /// Binds output `i`; its type must be what ONNX shape inference found (if
  /// anything) unless `matchInference` is false.
  LogicalResult setOutput(int i, Value value, bool matchInference = true);
  LogicalResult setConstantOutput(int i, DenseElementsAttr value);

  // Building.
  template <typename OpT>
  Value create(Type type, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
    return b.create<OpT>(loc, TypeRange{type}, operands, attrs)->getResult(0);
  }
  NamedAttribute named(StringRef attrName, Attribute value) {
    return b.getNamedAttr(attrName, value);
  }
  Value constantValue(DenseElementsAttr value);
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    return create<ReshapeOp>(RankedTensorType::get(shape, elementOf(v)), v);
  }
};

using Handler = LogicalResult (*)(Node &);

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, onnx::ModelProto &model,
                PropagatedData &propagated)
      : ctx(ctx), b(ctx), model(model), graph(*model.mutable_graph()),
        propagated(propagated) {}

  MLIRContext *ctx;
  OpBuilder b;
  onnx::ModelProto &model;
  onnx::GraphProto &graph;
  PropagatedData &propagated;
  int64_t opset = 0;
  bool sawInvalid = false, sawUnsupported = false;
  int64_t errorCount = 0;

  llvm::StringMap<Value> values;
  llvm::StringMap<KnownConstant> constants;
  llvm::StringMap<const onnx::TypeProto *> onnxTypes;
  std::set<std::string> poisoned; // outputs of nodes that failed to import

  ImportResult run(const std::string &path);

  LogicalResult error(Location loc, bool unsupported, const Twine &message) {
    (unsupported ? sawUnsupported : sawInvalid) = true;
    ++errorCount;
    emitError(loc) << message;
    return failure();
  }

  /// The attribute of a known constant (converting an initializer on first
  /// use); nothing if `valueName` is not known at import time.
  std::optional<DenseElementsAttr> knownConstant(StringRef valueName,
                                                 std::string &error);
  /// The `tessel.constant` of a known constant, created on first use.
  Value materialize(StringRef valueName);
  std::optional<RankedTensorType> inferredType(StringRef valueName);

private:
  void importNode(const onnx::NodeProto &node, int64_t index);
  void sweepDeadConstants(func::FuncOp func);
};

Node::Node(GraphImporter &graph, const onnx::NodeProto &proto, int64_t index)
    : proto(proto), graph(graph), ctx(graph.ctx), b(graph.b),
      name(proto.name().empty() ? proto.op_type() + "_" + std::to_string(index)
                                : proto.name()),
      loc(NameLoc::get(
          StringAttr::get(graph.ctx, name + "(" + proto.op_type() + ")"))),
      opset(graph.opset) {}

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

//===----------------------------------------------------------------------===//
// Handlers: elementwise
//===----------------------------------------------------------------------===//

template <typename OpT> LogicalResult importUnary(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  return n.setOutput(0, n.create<OpT>(x->getType(), *x));
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

/// A broadcasting binary op; `lhs` and `rhs` are already imported.
template <typename OpT>
FailureOr<Value> createBinary(Node &n, Value lhs, Value rhs,
                              ArrayRef<NamedAttribute> attrs = {}) {
  constexpr bool comparison =
      std::is_same_v<OpT, EqualOp> || std::is_same_v<OpT, LessOp> ||
      std::is_same_v<OpT, LessEqualOp> || std::is_same_v<OpT, GreaterOp> ||
      std::is_same_v<OpT, GreaterEqualOp>;
  if (!std::is_same_v<OpT, PowOp> && elementOf(lhs) != elementOf(rhs))
    return n.invalid(
        "operand element types differ: " + typeText(elementOf(lhs)) + " vs " +
        typeText(elementOf(rhs)));
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(shapeOf(lhs), shapeOf(rhs));
  if (!shape)
    return n.invalid("operand shapes " + shapeText(shapeOf(lhs)) + " and " +
                     shapeText(shapeOf(rhs)) + " do not broadcast");
  Type element = comparison ? Type(n.b.getI1Type()) : elementOf(lhs);
  return n.create<OpT>(RankedTensorType::get(*shape, element), {lhs, rhs},
                       attrs);
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
    auto scalar = RankedTensorType::get({}, element);
    Value count = n.constantValue(DenseElementsAttr::get(
        scalar, n.b.getFloatAttr(element, n.numInputs())));
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

LogicalResult importClip(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Type element = elementOf(*x);
  double lo, hi;
  if (n.opset < 11) {
    FailureOr<float> min =
        n.getFloat("min", std::numeric_limits<float>::lowest());
    FailureOr<float> max = n.getFloat("max", std::numeric_limits<float>::max());
    if (failed(min) || failed(max))
      return failure();
    lo = *min;
    hi = *max;
  } else {
    // Absent bounds do not clip: infinities, or the integer type's limits.
    if (auto integer = dyn_cast<IntegerType>(element)) {
      unsigned width = integer.getWidth();
      bool isUnsigned = integer.isUnsigned();
      lo = isUnsigned ? 0.0
                      : static_cast<double>(
                            APInt::getSignedMinValue(width).getSExtValue());
      hi = isUnsigned
               ? static_cast<double>(APInt::getMaxValue(width).getZExtValue())
               : static_cast<double>(
                     APInt::getSignedMaxValue(width).getSExtValue());
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
  }
  return n.setOutput(
      0, n.create<ClipOp>(x->getType(), *x,
                          {n.named("min", n.b.getF64FloatAttr(lo)),
                           n.named("max", n.b.getF64FloatAttr(hi))}));
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

//===----------------------------------------------------------------------===//
// Handlers: convolution, matrix products
//===----------------------------------------------------------------------===//

/// Strides, dilations and explicit pads of a convolution or pooling window
/// (auto_pad resolved), and the output extents.
struct Window {
  SmallVector<int64_t> strides, dilations, pads, output;
};

FailureOr<Window> resolveWindow(Node &n, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> kernel, bool ceilMode) {
  size_t spatial = input.size();
  Window w;
  auto ints = [&](StringRef name, int64_t dflt,
                  size_t count) -> FailureOr<SmallVector<int64_t>> {
    FailureOr<std::optional<SmallVector<int64_t>>> values = n.getInts(name);
    if (failed(values))
      return failure();
    if (!*values)
      return SmallVector<int64_t>(count, dflt);
    if ((*values)->size() != count)
      return n.invalid("attribute '" + name + "' needs " + Twine(count) +
                       " values for " + Twine(spatial) + " spatial dims");
    return **values;
  };
  FailureOr<SmallVector<int64_t>> strides = ints("strides", 1, spatial);
  FailureOr<SmallVector<int64_t>> dilations = ints("dilations", 1, spatial);
  FailureOr<SmallVector<int64_t>> pads = ints("pads", 0, 2 * spatial);
  FailureOr<std::string> autoPad = n.getString("auto_pad", "NOTSET");
  if (failed(strides) || failed(dilations) || failed(pads) || failed(autoPad))
    return failure();
  if (failed(n.checkSizes(*strides, "strides")) ||
      failed(n.checkSizes(*dilations, "dilations")) ||
      failed(n.checkSizes(*pads, "pads")) ||
      failed(n.checkSizes(kernel, "kernel_shape")))
    return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  w.pads = *pads;
  for (size_t i = 0; i < spatial; ++i) {
    if (w.strides[i] < 1 || w.dilations[i] < 1 || kernel[i] < 1)
      return n.invalid("strides, dilations and kernel_shape must be positive");
    if (w.pads[i] < 0 || w.pads[i + spatial] < 0)
      return n.invalid("pads must be non-negative");
  }
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (!same && *autoPad != "VALID" && *autoPad != "NOTSET" && !autoPad->empty())
    return n.invalid("auto_pad '" + *autoPad + "' is not one of NOTSET, " +
                     "SAME_UPPER, SAME_LOWER, VALID");
  for (size_t i = 0; i < spatial; ++i) {
    int64_t effective = (kernel[i] - 1) * w.dilations[i] + 1;
    if (*autoPad == "VALID") {
      w.pads[i] = w.pads[i + spatial] = 0;
    } else if (same) {
      // Output ceil(in / stride); the extra pad goes to the end for
      // SAME_UPPER, to the beginning for SAME_LOWER.
      int64_t out = ceilDiv(input[i], w.strides[i]);
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + effective - input[i]);
      int64_t small = total / 2;
      w.pads[i] = *autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + spatial] = total - w.pads[i];
    }
    int64_t span = input[i] + w.pads[i] + w.pads[i + spatial] - effective;
    if (span < 0)
      return n.invalid("the window (" + Twine(effective) +
                       ") is larger than the padded input (" +
                       Twine(span + effective) + ") in spatial dim " +
                       Twine(i));
    int64_t out =
        (ceilMode ? ceilDiv(span, w.strides[i]) : span / w.strides[i]) + 1;
    // ceil_mode: a last window starting past the input and its begin padding
    // would only read end padding; it is dropped (as PyTorch does).
    if (ceilMode && (out - 1) * w.strides[i] >= input[i] + w.pads[i])
      --out;
    w.output.push_back(out);
  }
  return w;
}

/// What Conv and ConvTranspose read alike: input, weight and optional bias,
/// the input and weight of one rank with 1 to 3 spatial dims (`kind` names
/// the op in the unsupported message).
struct ConvOperands {
  Value x, weight, bias;
  ArrayRef<int64_t> xs, ws;
};

FailureOr<ConvOperands> convOperands(Node &n, StringRef kind) {
  FailureOr<Value> x = n.input(0), weight = n.input(1);
  if (failed(x) || failed(weight))
    return failure();
  ConvOperands c{*x, *weight, Value(), shapeOf(*x), shapeOf(*weight)};
  if (n.has(2)) {
    FailureOr<Value> b = n.input(2);
    if (failed(b))
      return failure();
    c.bias = *b;
  }
  if (c.xs.size() < 3 || c.ws.size() != c.xs.size())
    return n.invalid("input " + shapeText(c.xs) + " and weight " + shapeText(c.ws) +
                     " must have the same rank >= 3");
  if (c.xs.size() > 5)
    return n.unsupported(Twine(c.xs.size() - 2) + " spatial dims",
                         "1-D, 2-D and 3-D " + kind + " are supported");
  return c;
}

LogicalResult importConv(Node &n) {
  FailureOr<ConvOperands> operandsOf = convOperands(n, "convolutions");
  if (failed(operandsOf))
    return failure();
  auto [x, weight, bias, xs, ws] = *operandsOf;
  FailureOr<int64_t> group = n.getInt("group", 1);
  FailureOr<std::optional<SmallVector<int64_t>>> kernelShape =
      n.getInts("kernel_shape");
  if (failed(group) || failed(kernelShape))
    return failure();
  if (*group < 1 || *group > xs[1] || xs[1] % *group != 0 ||
      ws[1] * *group != xs[1] || ws[0] % *group != 0)
    return n.invalid("weight " + shapeText(ws) + " does not match input " +
                     shapeText(xs) + " with group " + Twine(*group));
  if (*kernelShape && ArrayRef<int64_t>(**kernelShape) != ws.drop_front(2))
    return n.invalid("kernel_shape " + shapeText(**kernelShape) +
                     " differs from the weight's " +
                     shapeText(ws.drop_front(2)));
  FailureOr<Window> w =
      resolveWindow(n, xs.drop_front(2), ws.drop_front(2), /*ceilMode=*/false);
  if (failed(w))
    return failure();
  SmallVector<int64_t> shape = {xs[0], ws[0]};
  shape.append(w->output);
  SmallVector<Value> operands = {x, weight};
  if (bias)
    operands.push_back(bias);
  SmallVector<NamedAttribute> attrs = {
      n.named("strides", n.b.getDenseI64ArrayAttr(w->strides)),
      n.named("pads", n.b.getDenseI64ArrayAttr(w->pads)),
      n.named("dilations", n.b.getDenseI64ArrayAttr(w->dilations)),
      n.named("group", n.b.getI64IntegerAttr(*group))};
  // The epilogue's optional operands (bias, then the residual that fusion
  // adds) are told apart by segment sizes; the importer gives no residual and
  // leaves the epilogue attributes at their defaults (no activation).
  attrs.push_back(n.named("operandSegmentSizes",
                          n.b.getDenseI32ArrayAttr({1, 1, bias ? 1 : 0, 0})));
  return n.setOutput(
      0, n.create<ConvOp>(RankedTensorType::get(shape, elementOf(x)), operands,
                          attrs));
}

LogicalResult importConvTranspose(Node &n) {
  FailureOr<ConvOperands> operandsOf = convOperands(n, "transposed convolutions");
  if (failed(operandsOf))
    return failure();
  auto [x, weight, bias, xs, ws] = *operandsOf;
  size_t spatial = xs.size() - 2;
  FailureOr<int64_t> group = n.getInt("group", 1);
  FailureOr<std::string> autoPad = n.getString("auto_pad", "NOTSET");
  FailureOr<std::optional<SmallVector<int64_t>>> kernelShape =
      n.getInts("kernel_shape");
  FailureOr<std::optional<SmallVector<int64_t>>> strides = n.getInts("strides");
  FailureOr<std::optional<SmallVector<int64_t>>> dilations =
      n.getInts("dilations");
  FailureOr<std::optional<SmallVector<int64_t>>> pads = n.getInts("pads");
  FailureOr<std::optional<SmallVector<int64_t>>> outputPadding =
      n.getInts("output_padding");
  FailureOr<std::optional<SmallVector<int64_t>>> outputShape =
      n.getInts("output_shape");
  if (failed(group) || failed(autoPad) || failed(kernelShape) ||
      failed(strides) || failed(dilations) || failed(pads) ||
      failed(outputPadding) || failed(outputShape))
    return failure();
  if (*group < 1 || *group > xs[1] || xs[1] % *group != 0 || ws[0] != xs[1])
    return n.invalid("weight " + shapeText(ws) + " does not match input " +
                     shapeText(xs) + " with group " + Twine(*group));
  ArrayRef<int64_t> kernel = ws.drop_front(2);
  if (*kernelShape && ArrayRef<int64_t>(**kernelShape) != kernel)
    return n.invalid("kernel_shape " + shapeText(**kernelShape) +
                     " differs from the weight's " + shapeText(kernel));
  auto orDefault = [&](std::optional<SmallVector<int64_t>> &v, int64_t dflt,
                       size_t count, StringRef name) -> LogicalResult {
    if (!v)
      v = SmallVector<int64_t>(count, dflt);
    if (v->size() != count)
      return n.invalid("attribute '" + name + "' needs " + Twine(count) +
                       " values");
    return success();
  };
  if (failed(orDefault(*strides, 1, spatial, "strides")) ||
      failed(orDefault(*dilations, 1, spatial, "dilations")) ||
      failed(orDefault(*pads, 0, 2 * spatial, "pads")) ||
      failed(orDefault(*outputPadding, 0, spatial, "output_padding")))
    return failure();
  if (failed(n.checkSizes(**strides, "strides")) ||
      failed(n.checkSizes(**dilations, "dilations")) ||
      failed(n.checkSizes(**pads, "pads")) ||
      failed(n.checkSizes(**outputPadding, "output_padding")) ||
      (*outputShape && failed(n.checkSizes(**outputShape, "output_shape"))))
    return failure();
  if (*outputShape && (*outputShape)->size() == xs.size())
    (*outputShape)->erase((*outputShape)->begin(), (*outputShape)->begin() + 2);
  if (*outputShape && (*outputShape)->size() != spatial)
    return n.invalid("output_shape needs " + Twine(spatial) + " values");
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (!same && *autoPad != "VALID" && *autoPad != "NOTSET" && !autoPad->empty())
    return n.invalid("auto_pad '" + *autoPad + "' is not valid");

  SmallVector<int64_t> padsOut = **pads, shape = {xs[0], ws[1] * *group};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t s = (**strides)[i], d = (**dilations)[i];
    if (s < 1 || d < 1 || padsOut[i] < 0 || padsOut[i + spatial] < 0 ||
        (**outputPadding)[i] < 0)
      return n.invalid("strides and dilations must be positive, pads and "
                       "output_padding non-negative");
    // The full transposed convolution's extent, before cropping by pads.
    int64_t full =
        s * (xs[i + 2] - 1) + (**outputPadding)[i] + (kernel[i] - 1) * d + 1;
    int64_t out;
    if (*outputShape || same) {
      // ONNX: total padding from the requested output, split per auto_pad;
      // an output larger than the full extent is zero-filled at the end.
      out = *outputShape ? (**outputShape)[i] : xs[i + 2] * s;
      int64_t total = std::max<int64_t>(0, full - out);
      padsOut[i] = *autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      padsOut[i + spatial] = total - padsOut[i];
    } else {
      if (*autoPad == "VALID")
        padsOut[i] = padsOut[i + spatial] = 0;
      out = full - padsOut[i] - padsOut[i + spatial];
    }
    if (out < 1)
      return n.invalid("output extent " + Twine(out) + " in spatial dim " +
                       Twine(i) + " is not positive");
    shape.push_back(out);
  }
  SmallVector<Value> operands = {x, weight};
  if (bias)
    operands.push_back(bias);
  return n.setOutput(
      0, n.create<ConvTransposeOp>(
             RankedTensorType::get(shape, elementOf(x)), operands,
             {n.named("strides", n.b.getDenseI64ArrayAttr(**strides)),
              n.named("pads", n.b.getDenseI64ArrayAttr(padsOut)),
              n.named("dilations", n.b.getDenseI64ArrayAttr(**dilations)),
              n.named("group", n.b.getI64IntegerAttr(*group))}));
}

LogicalResult importGemm(Node &n) {
  FailureOr<Value> a = n.input(0), bm = n.input(1);
  if (failed(a) || failed(bm))
    return failure();
  SmallVector<Value> operands = {*a, *bm};
  if (n.has(2)) {
    FailureOr<Value> c = n.input(2);
    if (failed(c))
      return failure();
    operands.push_back(*c);
  }
  FailureOr<float> alpha = n.getFloat("alpha", 1.0f),
                   beta = n.getFloat("beta", 1.0f);
  FailureOr<int64_t> transA = n.getInt("transA", 0),
                     transB = n.getInt("transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  ArrayRef<int64_t> as = shapeOf(*a), bs = shapeOf(*bm);
  if (as.size() != 2 || bs.size() != 2)
    return n.invalid("A " + shapeText(as) + " and B " + shapeText(bs) +
                     " must be 2-D");
  int64_t m = *transA ? as[1] : as[0], ka = *transA ? as[0] : as[1];
  int64_t kb = *transB ? bs[1] : bs[0], cols = *transB ? bs[0] : bs[1];
  if (ka != kb)
    return n.invalid("inner dimensions differ: " + Twine(ka) + " vs " +
                     Twine(kb));
  return n.setOutput(
      0, n.create<GemmOp>(RankedTensorType::get({m, cols}, elementOf(*a)),
                          operands,
                          {n.named("alpha", n.b.getF32FloatAttr(*alpha)),
                           n.named("beta", n.b.getF32FloatAttr(*beta)),
                           n.named("transA", n.b.getBoolAttr(*transA != 0)),
                           n.named("transB", n.b.getBoolAttr(*transB != 0))}));
}

LogicalResult importMatMul(Node &n) {
  FailureOr<Value> lhs = n.input(0), rhs = n.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  ArrayRef<int64_t> a = shapeOf(*lhs), bs = shapeOf(*rhs);
  if (a.empty() || bs.empty())
    return n.invalid("operands must have rank >= 1");
  int64_t ka = a.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return n.invalid("inner dimensions differ: " + shapeText(a) + " x " +
                     shapeText(bs));
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(a.size() > 2 ? a.drop_back(2) : ArrayRef<int64_t>(),
                      bs.size() > 2 ? bs.drop_back(2) : ArrayRef<int64_t>());
  if (!shape)
    return n.invalid("batch dimensions of " + shapeText(a) + " and " +
                     shapeText(bs) + " do not broadcast");
  if (a.size() > 1)
    shape->push_back(a[a.size() - 2]);
  if (bs.size() > 1)
    shape->push_back(bs.back());
  return n.setOutput(
      0, n.create<MatMulOp>(RankedTensorType::get(*shape, elementOf(*lhs)),
                            {*lhs, *rhs}));
}

//===----------------------------------------------------------------------===//
// Handlers: normalization, pooling, softmax, reductions
//===----------------------------------------------------------------------===//

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

template <typename OpT>
Value createReduce(Node &n, Value x, ArrayRef<int64_t> axes, bool keepdims,
                   Type element = {}) {
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(shapeOf(x))) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      shape.push_back(size);
    else if (keepdims)
      shape.push_back(1);
  }
  return n.create<OpT>(
      RankedTensorType::get(shape, element ? element : elementOf(x)), x,
      {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
       n.named("keepdims", n.b.getBoolAttr(keepdims))});
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
  if (isMax && n.wants(1))
    return n.unsupported("output Indices ('" + n.proto.output(1) + "')",
                         "only the pooled output Y is supported");
  if (*storageOrder != 0)
    return n.unsupported("storage_order=" + Twine(*storageOrder),
                         "row-major storage_order=0");
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
  return n.setOutput(0, pooled, /*matchInference=*/*ceilMode == 0);
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

/// Sorted, unique, non-negative axes; all axes when `axes` is empty.
FailureOr<SmallVector<int64_t>> normalizeAxes(Node &n, ArrayRef<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t a : axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis)
      return n.invalid("axis " + Twine(a) + " is out of range for rank " +
                       Twine(rank));
    result.push_back(*axis);
  }
  llvm::sort(result);
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

template <typename OpT> LogicalResult importReduce(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> keepdims = n.getInt("keepdims", 1);
  FailureOr<int64_t> noop = n.getInt("noop_with_empty_axes", 0);
  if (failed(x) || failed(keepdims) || failed(noop))
    return failure();
  SmallVector<int64_t> axes;
  if (n.opType() == "ReduceSum" && n.opset >= 13) {
    if (n.has(1)) {
      FailureOr<SmallVector<int64_t>> values = n.constantInts(1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> values = n.getInts("axes");
    if (failed(values))
      return failure();
    if (*values)
      axes = **values;
  }
  int64_t rank = shapeOf(*x).size();
  if (axes.empty()) {
    if (*noop)
      return n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(n, axes, rank);
  if (failed(normalized))
    return failure();
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

/// `along(x, axis)` as Softmax, LogSoftmax and Hardmax define it: before
/// opset 13 the input is coerced to 2-D [prod(dims < axis), prod(dims >=
/// axis)] and worked along dim 1, which is working along `axis` itself when
/// every later dim is 1.
Value alongCoercedAxis(Node &n, Value x, int64_t axis,
                       llvm::function_ref<Value(Value, int64_t)> along) {
  ArrayRef<int64_t> shape = shapeOf(x);
  if (n.opset >= 13 || shape.empty() || product(shape.drop_front(axis + 1)) == 1)
    return along(x, axis);
  SmallVector<int64_t> flat = {product(shape.take_front(axis)), product(shape.drop_front(axis))};
  return n.reshape(along(n.reshape(x, flat), 1), shape);
}

template <typename OpT> LogicalResult importSoftmax(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", n.opset < 13 ? 1 : -1);
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  std::optional<int64_t> axis =
      normalizeAxis(*axisAttr, std::max<int64_t>(rank, 1));
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  return n.setOutput(0, alongCoercedAxis(n, *x, *axis, [&](Value v, int64_t a) {
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

/// EyeLike: a constant, since only the input's shape matters: ones where
/// column - row == k, in `dtype` (default: the input's type).
LogicalResult importEyeLike(Node &n) {
  FailureOr<Value> x = n.input(0);
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

/// OneHot with a constant depth: the indices (cast to i64, negative ones
/// counting from depth) compared with the positions along the new axis, then
/// where(hit, on, off) with on and off sliced from `values`. Indices outside
/// [-depth, depth) give a row of `off`.
LogicalResult importOneHot(Node &n) {
  FailureOr<Value> indices = n.input(0), values = n.input(2);
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1);
  FailureOr<double> depthValue = n.constantScalar(1, "depth");
  if (failed(indices) || failed(values) || failed(axisAttr) || failed(depthValue))
    return failure();
  if (shapeOf(*values) != ArrayRef<int64_t>{2})
    return n.invalid("values must be [off, on], not " + shapeText(shapeOf(*values)));
  const double depthFloor = std::floor(*depthValue);
  if (!(depthFloor >= 1 && depthFloor <= static_cast<double>(kMaxExtent)))
    return n.invalid("depth " + Twine(static_cast<int64_t>(std::max(depthFloor, -1.0))) +
                     " must be positive");
  const int64_t depth = static_cast<int64_t>(depthFloor);
  ArrayRef<int64_t> is = shapeOf(*indices);
  const int64_t outRank = is.size() + 1;
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, outRank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(outRank));
  Type i64 = n.b.getI64Type();
  auto scalar = [&](Type element, int64_t v) {
    return n.constantValue(numericAttr(RankedTensorType::get({}, element),
                                       {static_cast<double>(v)}));
  };
  Value index = *indices;
  if (elementOf(index) != i64)
    index = n.create<CastOp>(RankedTensorType::get(is, i64), index);
  Value negative = n.create<LessOp>(RankedTensorType::get(is, n.b.getI1Type()),
                                    {index, scalar(i64, 0)});
  Value wrapped = n.create<AddOp>(index.getType(), {index, scalar(i64, depth)});
  index = n.create<WhereOp>(index.getType(), {negative, wrapped, index});
  SmallVector<int64_t> unsqueezed(is), positionsShape(outRank, 1), shape(is);
  unsqueezed.insert(unsqueezed.begin() + *axis, 1);
  shape.insert(shape.begin() + *axis, depth);
  positionsShape[*axis] = depth;
  SmallVector<int64_t> positions(depth);
  std::iota(positions.begin(), positions.end(), int64_t(0));
  Value along = n.constantValue(DenseElementsAttr::get(
      RankedTensorType::get(positionsShape, i64), ArrayRef<int64_t>(positions)));
  Value hit = n.create<EqualOp>(RankedTensorType::get(shape, n.b.getI1Type()),
                                {n.reshape(index, unsqueezed), along});
  Type element = elementOf(*values);
  auto valueAt = [&](int64_t i) {
    return n.create<SliceOp>(RankedTensorType::get({1}, element), *values,
                             {n.named("starts", n.b.getDenseI64ArrayAttr({i})),
                              n.named("steps", n.b.getDenseI64ArrayAttr({1}))});
  };
  return n.setOutput(0, n.create<WhereOp>(RankedTensorType::get(shape, element),
                                          {hit, valueAt(1), valueAt(0)}));
}

/// CumSum: the axis is a constant input (a one-element tensor).
LogicalResult importCumSum(Node &n) {
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
  return n.setOutput(0, n.create<CumSumOp>(x->getType(), *x,
                                           {n.named("axis", n.b.getI64IntegerAttr(*axis)),
                                            n.named("exclusive", n.b.getBoolAttr(*exclusive)),
                                            n.named("reverse", n.b.getBoolAttr(*reverse))}));
}

/// Hardmax (before opset 13 along the 2-D coercion, alongCoercedAxis).
LogicalResult importHardmax(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", n.opset < 13 ? 1 : -1);
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
  return n.setOutput(0, alongCoercedAxis(n, *x, *axis, [&](Value v, int64_t a) {
    return hardmaxAlong(n, v, a);
  }));
}

//===----------------------------------------------------------------------===//
// Handlers: data movement
//===----------------------------------------------------------------------===//

LogicalResult importIdentity(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  return n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
}

LogicalResult importDropout(Node &n) {
  if (n.wants(1))
    return n.unsupported("output mask ('" + n.proto.output(1) + "')",
                         "inference Dropout with only the output");
  if (n.opset >= 12 && n.has(2)) {
    FailureOr<double> training = n.constantScalar(2, "training_mode");
    if (failed(training))
      return failure();
    if (*training != 0)
      return n.unsupported("training_mode=true",
                           "export the model in eval mode");
  }
  return importIdentity(n);
}

LogicalResult importFlatten(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 1);
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  if (*axisAttr < -rank || *axisAttr > rank)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  return n.setOutput(0, n.reshape(*x, {product(shape.take_front(axis)),
                                       product(shape.drop_front(axis))}));
}

/// The static shape of a shape-like operand: the constant, or else what ONNX
/// shape inference found for output 0.
LogicalResult importReshape(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> allowZero = n.getInt("allowzero", 0);
  if (failed(x) || failed(allowZero))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  std::optional<DenseElementsAttr> target = n.tryConstant(1);
  if (!target) {
    if (std::optional<RankedTensorType> inferred = n.inferredOutputType(0))
      if (inferred->getNumElements() == product(in))
        return n.setOutput(0, n.reshape(*x, inferred->getShape()));
    return n.requireConstant(1, "shape");
  }
  std::optional<SmallVector<int64_t>> dims = integerValues(*target);
  if (!dims)
    return n.invalid("shape must be an int64 tensor");
  if (failed(n.checkSizes(*dims, "shape")))
    return failure();
  SmallVector<int64_t> shape;
  std::optional<size_t> inferredDim;
  for (auto [i, d] : llvm::enumerate(*dims)) {
    if (d == 0 && !*allowZero) {
      if (i >= in.size())
        return n.invalid("shape " + shapeText(*dims) + " copies dim " +
                         Twine(i) + " of the rank-" + Twine(in.size()) +
                         " input");
      d = in[i];
    } else if (d == -1) {
      if (inferredDim)
        return n.invalid("shape " + shapeText(*dims) + " has more than one -1");
      inferredDim = i;
      d = 1;
    } else if (d < -1) {
      return n.invalid("shape " + shapeText(*dims) + " has a negative dim");
    }
    shape.push_back(d);
  }
  if (!isSupportedShape(shape))
    return n.invalid("shape " + shapeText(*dims) + " is too large");
  int64_t known = product(shape), total = product(in);
  if (inferredDim) {
    if (known == 0 || total % known != 0)
      return n.invalid("cannot reshape " + shapeText(in) + " to " +
                       shapeText(*dims));
    shape[*inferredDim] = total / known;
  } else if (known != total) {
    return n.invalid("cannot reshape " + shapeText(in) + " to " +
                     shapeText(*dims));
  }
  return n.setOutput(0, n.reshape(*x, shape));
}

/// Squeeze and Unsqueeze take axes as an attribute before opset 13 and as a
/// constant input from it on.
FailureOr<std::optional<SmallVector<int64_t>>> axesOperand(Node &n) {
  if (n.opset < 13)
    return n.getInts("axes");
  if (!n.has(1))
    return std::optional<SmallVector<int64_t>>();
  FailureOr<SmallVector<int64_t>> axes = n.constantInts(1, "axes");
  if (failed(axes))
    return failure();
  return std::optional<SmallVector<int64_t>>(*axes);
}

LogicalResult importSqueeze(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand(n);
  if (failed(x) || failed(axes))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  SmallVector<int64_t> drop;
  if (*axes) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(n, **axes, in.size());
    if (failed(normalized))
      return failure();
    drop = *normalized;
    for (int64_t a : drop)
      if (in[a] != 1)
        return n.invalid("cannot squeeze dim " + Twine(a) + " of " +
                         shapeText(in) + ": its extent is not 1");
  } else {
    for (auto [d, size] : llvm::enumerate(in))
      if (size == 1)
        drop.push_back(d);
  }
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(in))
    if (!llvm::is_contained(drop, static_cast<int64_t>(d)))
      shape.push_back(size);
  return n.setOutput(0, n.reshape(*x, shape));
}

LogicalResult importUnsqueeze(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand(n);
  if (failed(x) || failed(axes))
    return failure();
  if (!*axes)
    return n.invalid("axes are required");
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size() + (*axes)->size();
  FailureOr<SmallVector<int64_t>> inserted = normalizeAxes(n, **axes, rank);
  if (failed(inserted))
    return failure();
  if (inserted->size() != (*axes)->size())
    return n.invalid("axes " + shapeText(**axes) + " repeat an axis");
  SmallVector<int64_t> shape;
  const int64_t *next = in.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*inserted, d) ? 1 : *next++);
  return n.setOutput(0, n.reshape(*x, shape));
}

LogicalResult importTranspose(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> permAttr = n.getInts("perm");
  if (failed(x) || failed(permAttr))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size();
  SmallVector<int64_t> perm =
      *permAttr ? **permAttr
                : llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (sorted != llvm::to_vector(llvm::seq<int64_t>(0, rank)))
    return n.invalid("perm " + shapeText(perm) + " is not a permutation of " +
                     Twine(rank) + " dims");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in[p]);
  return n.setOutput(0, n.create<TransposeOp>(
                            RankedTensorType::get(shape, elementOf(*x)), *x,
                            {n.named("perm", n.b.getDenseI64ArrayAttr(perm))}));
}

LogicalResult importConcat(Node &n) {
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  if (!n.attr("axis"))
    return n.invalid("attribute 'axis' is required");
  SmallVector<Value> inputs;
  for (int i = 0; i < n.numInputs(); ++i) {
    if (!n.has(i))
      continue;
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty())
    return n.invalid("needs at least one input");
  SmallVector<int64_t> shape(shapeOf(inputs[0]));
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, shape.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(shape.size()));
  shape[*axis] = 0;
  for (Value v : inputs) {
    ArrayRef<int64_t> s = shapeOf(v);
    bool matches =
        s.size() == shape.size() && elementOf(v) == elementOf(inputs[0]);
    for (size_t d = 0; matches && d < s.size(); ++d)
      matches = static_cast<int64_t>(d) == *axis || s[d] == shape[d];
    if (!matches)
      return n.invalid("input " + shapeText(s) + " does not match " +
                       shapeText(shapeOf(inputs[0])) + " off axis " +
                       Twine(*axis));
    shape[*axis] += s[*axis];
  }
  return n.setOutput(
      0, n.create<ConcatOp>(RankedTensorType::get(shape, elementOf(inputs[0])),
                            inputs,
                            {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

Value createSlice(Node &n, Value x, ArrayRef<int64_t> starts,
                  ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  return n.create<SliceOp>(RankedTensorType::get(shape, elementOf(x)), x,
                           {n.named("starts", n.b.getDenseI64ArrayAttr(starts)),
                            n.named("steps", n.b.getDenseI64ArrayAttr(steps))});
}

LogicalResult importSplit(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, in.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(in.size()));
  int64_t parts = n.numOutputs();
  SmallVector<int64_t> sizes;
  if (n.opset >= 13 && n.has(1)) {
    FailureOr<SmallVector<int64_t>> split = n.constantInts(1, "split");
    if (failed(split))
      return failure();
    sizes = *split;
  } else if (n.opset < 13) {
    FailureOr<std::optional<SmallVector<int64_t>>> split = n.getInts("split");
    if (failed(split))
      return failure();
    if (*split)
      sizes = **split;
  }
  if (sizes.empty()) {
    if (parts < 1 || in[*axis] % parts != 0)
      return n.invalid("dim " + Twine(*axis) + " of " + shapeText(in) +
                       " does not split into " + Twine(parts) + " equal parts");
    sizes.assign(parts, in[*axis] / parts);
  }
  if (failed(n.checkSizes(sizes, "split")))
    return failure();
  if (static_cast<int64_t>(sizes.size()) != parts ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != in[*axis])
    return n.invalid("split " + shapeText(sizes) + " does not divide dim " +
                     Twine(*axis) + " of " + shapeText(in) + " into " +
                     Twine(parts) + " outputs");
  SmallVector<int64_t> starts(in.size(), 0), steps(in.size(), 1), shape(in);
  for (int64_t i = 0; i < parts; ++i) {
    shape[*axis] = sizes[i];
    if (n.wants(i) &&
        failed(n.setOutput(i, createSlice(n, *x, starts, steps, shape))))
      return failure();
    starts[*axis] += sizes[i];
  }
  return success();
}

LogicalResult importSlice(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    FailureOr<std::optional<SmallVector<int64_t>>> s = n.getInts("starts"),
                                                   e = n.getInts("ends"),
                                                   a = n.getInts("axes");
    if (failed(s) || failed(e) || failed(a))
      return failure();
    if (!*s || !*e)
      return n.invalid("attributes 'starts' and 'ends' are required");
    starts = **s;
    ends = **e;
    if (*a)
      axes = **a;
  } else {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(1, "starts");
    if (failed(s))
      return failure();
    FailureOr<SmallVector<int64_t>> e = n.constantInts(2, "ends");
    if (failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (n.has(3)) {
      FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (n.has(4)) {
      FailureOr<SmallVector<int64_t>> st = n.constantInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts.size()));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return n.invalid("starts, ends, axes and steps must have the same length");

  SmallVector<int64_t> fullStarts(rank, 0), fullSteps(rank, 1), shape(in);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis || seen[*axis])
      return n.invalid("axes " + shapeText(axes) +
                       " are out of range or repeat");
    seen[*axis] = true;
    // Any step longer than the dim takes one element; clamping it keeps the
    // arithmetic below in range.
    int64_t dim = in[*axis];
    int64_t step =
        std::clamp<int64_t>(steps[i], -kMaxExtent - 1, kMaxExtent + 1);
    if (step == 0)
      return n.invalid("steps must be non-zero");
    // ONNX clamping: negative values count from the end; then starts and
    // ends are clamped to [0, dim] (step > 0) or [0, dim-1] / [-1, dim-1].
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t extent;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      extent = end > start ? ceilDiv(end - start, step) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      extent = start > end ? ceilDiv(start - end, -step) : 0;
    }
    fullStarts[*axis] = extent > 0 ? start : 0;
    fullSteps[*axis] = step;
    shape[*axis] = extent;
  }
  return n.setOutput(0, createSlice(n, *x, fullStarts, fullSteps, shape));
}

LogicalResult importPad(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::string> mode = n.getString("mode", "constant");
  if (failed(x) || failed(mode))
    return failure();
  SmallVector<int64_t> pads;
  double value = 0;
  if (n.opset < 11) {
    FailureOr<std::optional<SmallVector<int64_t>>> p = n.getInts("pads");
    FailureOr<float> v = n.getFloat("value", 0.0f);
    if (failed(p) || failed(v))
      return failure();
    if (!*p)
      return n.invalid("attribute 'pads' is required");
    pads = **p;
    value = *v;
  } else {
    FailureOr<SmallVector<int64_t>> p = n.constantInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (n.has(2)) {
      FailureOr<double> v = n.constantScalar(2, "constant_value");
      if (failed(v))
        return failure();
      value = *v;
    }
  }
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge")
    return n.unsupported("mode '" + *mode + "'", "constant, reflect or edge");
  if (failed(n.checkSizes(pads, "pads")))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  size_t rank = in.size();
  if (pads.size() != 2 * rank)
    return n.invalid("pads " + shapeText(pads) + " need " + Twine(2 * rank) +
                     " values for rank " + Twine(rank));
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t extent = in[d] + pads[d] + pads[d + rank];
    if (extent < 0)
      return n.invalid("pads " + shapeText(pads) + " remove more than dim " +
                       Twine(d) + " of " + shapeText(in) + " holds");
    shape.push_back(extent);
  }
  return n.setOutput(
      0, n.create<PadOp>(RankedTensorType::get(shape, elementOf(*x)), *x,
                         {n.named("pads", n.b.getDenseI64ArrayAttr(pads)),
                          n.named("mode", n.b.getStringAttr(*mode)),
                          n.named("value", n.b.getF64FloatAttr(value))}));
}

LogicalResult importGather(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(data) || failed(indices) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> ds = shapeOf(*data);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, ds.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(ds.size()));
  SmallVector<int64_t> shape(ds.take_front(*axis));
  llvm::append_range(shape, shapeOf(*indices));
  llvm::append_range(shape, ds.drop_front(*axis + 1));
  return n.setOutput(
      0, n.create<GatherOp>(RankedTensorType::get(shape, elementOf(*data)),
                            {*data, *indices},
                            {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

LogicalResult importGatherElements(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(data) || failed(indices) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> ds = shapeOf(*data), is = shapeOf(*indices);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, ds.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(ds.size()));
  if (is.size() != ds.size())
    return n.invalid("indices " + shapeText(is) + " must have the rank of data " +
                     shapeText(ds));
  for (size_t d = 0; d < ds.size(); ++d)
    if (static_cast<int64_t>(d) != *axis && is[d] > ds[d])
      return n.invalid("indices " + shapeText(is) + " extend dim " + Twine(d) +
                       " past data " + shapeText(ds));
  return n.setOutput(
      0, n.create<GatherElementsOp>(RankedTensorType::get(is, elementOf(*data)),
                                    {*data, *indices},
                                    {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

LogicalResult importTrilu(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> upper = n.getInt("upper", 1);
  if (failed(x) || failed(upper))
    return failure();
  if (shapeOf(*x).size() < 2)
    return n.invalid("input " + shapeText(shapeOf(*x)) + " must have rank 2 or more");
  if (*upper != 0 && *upper != 1)
    return n.invalid("upper must be 0 or 1, not " + Twine(*upper));
  int64_t k = 0;
  if (n.has(1)) {
    FailureOr<SmallVector<int64_t>> values = n.constantInts(1, "k");
    if (failed(values))
      return failure();
    if (values->size() != 1)
      return n.invalid("k must be a single value, not " + Twine(values->size()));
    k = values->front();
  }
  return n.setOutput(0, n.create<TriluOp>((*x).getType(), {*x},
                                          {n.named("k", n.b.getI64IntegerAttr(k)),
                                           n.named("upper", n.b.getBoolAttr(*upper))}));
}

/// Expand and Tile: the result shape comes from a constant operand, or else
/// from ONNX shape inference.
LogicalResult importExpand(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  std::optional<SmallVector<int64_t>> shape;
  if (std::optional<DenseElementsAttr> target = n.tryConstant(1)) {
    std::optional<SmallVector<int64_t>> dims = integerValues(*target);
    if (!dims)
      return n.invalid("shape must be an int64 tensor");
    if (failed(n.checkSizes(*dims, "shape")))
      return failure();
    shape = broadcastShapes(shapeOf(*x), *dims);
    if (!shape)
      return n.invalid("input " + shapeText(shapeOf(*x)) +
                       " does not broadcast to " + shapeText(*dims));
  } else if (std::optional<RankedTensorType> inferred =
                 n.inferredOutputType(0)) {
    shape = SmallVector<int64_t>(inferred->getShape());
  } else {
    return n.requireConstant(1, "shape");
  }
  return n.setOutput(
      0, n.create<ExpandOp>(RankedTensorType::get(*shape, elementOf(*x)), *x));
}

LogicalResult importTile(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  SmallVector<int64_t> shape;
  if (std::optional<DenseElementsAttr> target = n.tryConstant(1)) {
    std::optional<SmallVector<int64_t>> repeats = integerValues(*target);
    if (!repeats || repeats->size() != in.size() ||
        llvm::any_of(*repeats, [](int64_t r) { return r < 0; }))
      return n.invalid("repeats must be " + Twine(in.size()) +
                       " non-negative integers");
    if (failed(n.checkSizes(*repeats, "repeats")))
      return failure();
    for (auto [d, r] : llvm::zip(in, *repeats))
      shape.push_back(d * r);
  } else if (std::optional<RankedTensorType> inferred =
                 n.inferredOutputType(0)) {
    shape.assign(inferred->getShape().begin(), inferred->getShape().end());
  } else {
    return n.requireConstant(1, "repeats");
  }
  return n.setOutput(
      0, n.create<TileOp>(RankedTensorType::get(shape, elementOf(*x)), *x));
}

/// DepthToSpace and SpaceToDepth: reshape, transpose, reshape.
LogicalResult importDepthSpace(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> blocksize = n.getInt("blocksize", 0);
  FailureOr<std::string> mode = n.getString("mode", "DCR");
  if (failed(x) || failed(blocksize) || failed(mode))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  int64_t bs = *blocksize;
  if (s.size() != 4 || bs < 1 || bs > kMaxExtent)
    return n.invalid("needs a 4-D input and a blocksize in [1, " +
                     Twine(kMaxExtent) + "]");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  SmallVector<int64_t> split, perm, result;
  if (n.opType() == "DepthToSpace") {
    if (C % (bs * bs) != 0)
      return n.invalid("channels " + Twine(C) + " are not a multiple of " +
                       Twine(bs * bs));
    int64_t c = C / (bs * bs);
    if (*mode == "DCR") {
      split = {N, bs, bs, c, H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (*mode == "CRD") {
      split = {N, c, bs, bs, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return n.invalid("mode '" + *mode + "' is not DCR or CRD");
    }
    result = {N, c, H * bs, W * bs};
  } else {
    if (H % bs != 0 || W % bs != 0)
      return n.invalid("spatial dims " + shapeText(s) +
                       " are not multiples of the blocksize");
    split = {N, C, H / bs, bs, W / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    result = {N, C * bs * bs, H / bs, W / bs};
  }
  Value reshaped = n.reshape(*x, split);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(split[p]);
  Value transposed = n.create<TransposeOp>(
      RankedTensorType::get(permuted, elementOf(*x)), reshaped,
      {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
  return n.setOutput(0, n.reshape(transposed, result));
}

//===----------------------------------------------------------------------===//
// Handlers: compile-time values
//===----------------------------------------------------------------------===//

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
  return n.setConstantOutput(
      0, DenseElementsAttr::get(type, *value.value_begin<Attribute>()));
}

LogicalResult importShape(Node &n) {
  FailureOr<Value> x = n.input(0);
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
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  return n.setConstantOutput(
      0, integerAttr(RankedTensorType::get({}, n.b.getI64Type()),
                     {product(shapeOf(*x))}));
}

//===----------------------------------------------------------------------===//
// The op table: dispatch and the supported-op list both come from here.
//===----------------------------------------------------------------------===//

struct OpEntry {
  const char *opType;
  Handler handler;
};

const OpEntry kOps[] = {
    // Elementwise unary.
    {"Abs", importUnary<AbsOp>},
    {"Acos", importUnary<AcosOp>},
    {"Acosh", importUnary<AcoshOp>},
    {"Asin", importUnary<AsinOp>},
    {"Asinh", importUnary<AsinhOp>},
    {"Atan", importUnary<AtanOp>},
    {"Atanh", importUnary<AtanhOp>},
    {"Ceil", importUnary<CeilOp>},
    {"Cos", importUnary<CosOp>},
    {"Cosh", importUnary<CoshOp>},
    {"Erf", importUnary<ErfOp>},
    {"Exp", importUnary<ExpOp>},
    {"Floor", importUnary<FloorOp>},
    {"HardSwish", importUnary<HardSwishOp>},
    {"Log", importUnary<LogOp>},
    {"Neg", importUnary<NegOp>},
    {"Not", importUnary<NotOp>},
    {"Reciprocal", importUnary<ReciprocalOp>},
    {"Relu", importUnary<ReluOp>},
    {"Round", importUnary<RoundOp>},
    {"Sigmoid", importUnary<SigmoidOp>},
    {"Sign", importUnary<SignOp>},
    {"Sin", importUnary<SinOp>},
    {"Sinh", importUnary<SinhOp>},
    {"Softplus", importUnary<SoftplusOp>},
    {"Softsign", importUnary<SoftsignOp>},
    {"Sqrt", importUnary<SqrtOp>},
    {"Tan", importUnary<TanOp>},
    {"Tanh", importUnary<TanhOp>},
    // Unary with float attributes, defaults per the ONNX spec.
    {"Celu",
     [](Node &n) {
       return importUnaryWithAttrs<CeluOp>(n, {{"alpha", 1.0f}});
     }},
    {"Elu",
     [](Node &n) {
       return importUnaryWithAttrs<EluOp>(n, {{"alpha", 1.0f}});
     }},
    {"HardSigmoid",
     [](Node &n) {
       return importUnaryWithAttrs<HardSigmoidOp>(
           n, {{"alpha", 0.2f}, {"beta", 0.5f}});
     }},
    {"LeakyRelu",
     [](Node &n) {
       return importUnaryWithAttrs<LeakyReluOp>(n, {{"alpha", 0.01f}});
     }},
    {"Selu",
     [](Node &n) {
       return importUnaryWithAttrs<SeluOp>(
           n, {{"alpha", 1.67326319217681884765625f},
               {"gamma", 1.05070102214813232421875f}});
     }},
    {"Shrink",
     [](Node &n) {
       return importUnaryWithAttrs<ShrinkOp>(n,
                                             {{"bias", 0.0f}, {"lambd", 0.5f}});
     }},
    {"ThresholdedRelu",
     [](Node &n) {
       return importUnaryWithAttrs<ThresholdedReluOp>(n, {{"alpha", 1.0f}});
     }},
    {"Clip", importClip},
    {"Cast", importCast},
    {"CastLike", importCast},
    // Elementwise binary and variadic.
    {"Add", importBinary<AddOp>},
    {"And", importBinary<AndOp>},
    {"Div", importBinary<DivOp>},
    {"Equal", importBinary<EqualOp>},
    {"Greater", importBinary<GreaterOp>},
    {"GreaterOrEqual", importBinary<GreaterEqualOp>},
    {"Less", importBinary<LessOp>},
    {"LessOrEqual", importBinary<LessEqualOp>},
    {"Mod", importMod},
    {"Mul", importBinary<MulOp>},
    {"Or", importBinary<OrOp>},
    {"PRelu", importBinary<PReluOp>},
    {"Pow", importBinary<PowOp>},
    {"Sub", importBinary<SubOp>},
    {"Xor", importBinary<XorOp>},
    {"Max", importVariadic<MaxOp>},
    {"Min", importVariadic<MinOp>},
    {"Sum", importVariadic<AddOp>},
    {"Mean", importVariadic<AddOp, /*mean=*/true>},
    {"Where", importWhere},
    // Convolution and matrix products.
    {"Conv", importConv},
    {"ConvTranspose", importConvTranspose},
    {"Gemm", importGemm},
    {"MatMul", importMatMul},
    // Normalization, pooling, softmax, reductions.
    {"BatchNormalization", importBatchNorm},
    {"InstanceNormalization", importInstanceNorm},
    {"LayerNormalization", importLayerNorm},
    {"LRN", importLrn},
    {"AveragePool", importPool<AvgPoolOp>},
    {"MaxPool", importPool<MaxPoolOp>},
    {"GlobalAveragePool", importGlobalPool<ReduceMeanOp>},
    {"GlobalMaxPool", importGlobalPool<ReduceMaxOp>},
    {"Softmax", importSoftmax<SoftmaxOp>},
    {"LogSoftmax", importSoftmax<LogSoftmaxOp>},
    {"ReduceL1", importReduce<ReduceL1Op>},
    {"ReduceL2", importReduce<ReduceL2Op>},
    {"ReduceLogSum", importReduce<ReduceLogSumOp>},
    {"ReduceLogSumExp", importReduce<ReduceLogSumExpOp>},
    {"ReduceMax", importReduce<ReduceMaxOp>},
    {"ReduceMean", importReduce<ReduceMeanOp>},
    {"ReduceMin", importReduce<ReduceMinOp>},
    {"ReduceProd", importReduce<ReduceProdOp>},
    {"ReduceSum", importReduce<ReduceSumOp>},
    {"ReduceSumSquare", importReduce<ReduceSumSquareOp>},
    {"ArgMax", importArgReduce<ArgMaxOp>},
    {"Hardmax", importHardmax},
    {"CumSum", importCumSum},
    {"EyeLike", importEyeLike},
    {"IsInf", importIsInf},
    {"OneHot", importOneHot},
    {"Range", importRange},
    {"ArgMin", importArgReduce<ArgMinOp>},
    // Data movement.
    {"Concat", importConcat},
    {"DepthToSpace", importDepthSpace},
    {"Dropout", importDropout},
    {"Expand", importExpand},
    {"Flatten", importFlatten},
    {"Gather", importGather},
    {"GatherElements", importGatherElements},
    {"Trilu", importTrilu},
    {"Identity", importIdentity},
    {"Pad", importPad},
    {"Reshape", importReshape},
    {"Slice", importSlice},
    {"SpaceToDepth", importDepthSpace},
    {"Split", importSplit},
    {"Squeeze", importSqueeze},
    {"Tile", importTile},
    {"Transpose", importTranspose},
    {"Unsqueeze", importUnsqueeze},
    // Compile-time values.
    {"Constant", importConstant},
    {"ConstantOfShape", importConstantOfShape},
    {"Shape", importShape},
    {"Size", importSize},
};

Handler findHandler(StringRef opType) {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> map;
    for (const OpEntry &entry : kOps)
      map[entry.opType] = entry.handler;
    return map;
  }();
  return table.lookup(opType);
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

void GraphImporter::importNode(const onnx::NodeProto &proto, int64_t index) {
  Node n(*this, proto, index);
  auto poison = [&] {
    for (const std::string &out : proto.output())
      poisoned.insert(out);
  };
  if (!isDefaultDomain(proto.domain())) {
    (void)n.unsupported("domain '" + proto.domain() + "'",
                        "only the default ONNX domain is supported");
    return poison();
  }
  Handler handler = findHandler(proto.op_type());
  if (!handler) {
    (void)n.unsupported("no tessel lowering for this op type",
                        "tessel-compile --list-ops lists the supported ones");
    return poison();
  }
  // Outputs of failed nodes are poisoned: their consumers are skipped
  // without more diagnostics, but still checked for op type support above.
  if (llvm::any_of(proto.input(),
                   [&](const std::string &in) { return poisoned.count(in); }))
    return poison();
  // Models older than opset 7 are accepted where the op is unchanged since.
  if (opset < kMinOpset) {
    const auto *old =
        onnx::OpSchemaRegistry::Schema(proto.op_type(), opset, "");
    const auto *base =
        onnx::OpSchemaRegistry::Schema(proto.op_type(), kMinOpset, "");
    if (!old || !base || old->SinceVersion() != base->SinceVersion()) {
      (void)n.unsupported("opset " + Twine(opset) + " semantics",
                          "re-export the model with opset " + Twine(kMinOpset) +
                              " to " + Twine(kMaxOpset));
      return poison();
    }
  }
  int64_t errorsBefore = errorCount;
  if (failed(handler(n))) {
    if (errorCount == errorsBefore)
      (void)n.invalid("internal error: the import failed without a diagnostic");
    return poison();
  }
  for (int i = 0; i < n.numOutputs(); ++i)
    if (n.wants(i) && !values.count(proto.output(i)) &&
        !constants.count(proto.output(i))) {
      (void)n.invalid("internal error: output '" + proto.output(i) +
                      "' was not produced");
      return poison();
    }
}

void GraphImporter::sweepDeadConstants(func::FuncOp func) {
  SmallVector<Operation *> dead;
  func.walk([&](ConstantOp op) {
    if (op->use_empty())
      dead.push_back(op);
  });
  for (Operation *op : dead)
    op->erase();
}

ImportResult GraphImporter::run(const std::string &path) {
  ImportResult result;
  Location fileLoc = NameLoc::get(StringAttr::get(ctx, path));
  for (const auto &entry : model.opset_import())
    if (isDefaultDomain(entry.domain()))
      opset = entry.version();

  for (const auto &info : graph.input())
    onnxTypes[info.name()] = &info.type();
  for (const auto &info : graph.value_info())
    onnxTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    onnxTypes[info.name()] = &info.type();
  for (const auto &tensor : graph.initializer())
    constants[tensor.name()] = KnownConstant{
        &tensor, DenseElementsAttr(),
        NameLoc::get(StringAttr::get(ctx, tensor.name() + "(initializer)")),
        Value()};

  // Arguments: graph inputs that are not initializers, all statically shaped.
  // A bad input is reported and poisoned; the nodes are still imported so that
  // every problem is listed in one run.
  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const auto &info : graph.input()) {
    if (constants.count(info.name()))
      continue;
    Location argLoc = NameLoc::get(StringAttr::get(ctx, info.name()));
    const auto &tensorType = info.type().tensor_type();
    std::optional<RankedTensorType> type = inferredType(info.name());
    if (!info.type().has_tensor_type()) {
      (void)error(argLoc, true,
                  "unsupported: graph input '" + info.name() +
                      "' is not a tensor (tessel takes tensor inputs)");
    } else if (!elementType(ctx, tensorType.elem_type())) {
      (void)error(argLoc, true,
                  "unsupported: graph input '" + info.name() +
                      "' has element type " +
                      onnxTypeName(tensorType.elem_type()) +
                      " (tessel takes float, integer and bool tensors)");
    } else if (!type) {
      (void)error(argLoc, false,
                  "graph input '" + info.name() + "' has a dynamic shape " +
                      (tensorType.has_shape() ? shapeText(tensorType.shape())
                                              : std::string("(unranked)")) +
                      " (export the model with static input shapes, or freeze "
                      "the input)");
    } else if (!isSupportedShape(type->getShape())) {
      (void)error(argLoc, false,
                  "graph input '" + info.name() + "' has shape " +
                      shapeText(type->getShape()) + ", beyond " +
                      Twine(kMaxExtent) + " per dim or " + Twine(kMaxElements) +
                      " elements");
    } else {
      argTypes.push_back(*type);
      args.push_back(&info);
      continue;
    }
    poisoned.insert(info.name());
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  auto func = func::FuncOp::create(fileLoc, "main",
                                   FunctionType::get(ctx, argTypes, {}));
  module->push_back(func);
  Block *body = func.addEntryBlock();
  for (auto [i, info] : llvm::enumerate(args)) {
    BlockArgument arg = body->getArgument(i);
    arg.setLoc(NameLoc::get(StringAttr::get(ctx, info->name())));
    func.setArgAttr(i, "tessel.name", StringAttr::get(ctx, info->name()));
    values[info->name()] = arg;
  }

  b.setInsertionPointToEnd(body);
  for (auto [index, node] : llvm::enumerate(graph.node()))
    importNode(node, index);

  SmallVector<Value> results;
  for (const auto &info : graph.output()) {
    if (poisoned.count(info.name()))
      continue;
    Value v = values.lookup(info.name());
    std::string error;
    if (!v && knownConstant(info.name(), error))
      v = materialize(info.name());
    if (!v) {
      (void)this->error(fileLoc, !error.empty(),
                        "graph output '" + info.name() + "' is not produced" +
                            (error.empty() ? "" : ": " + error));
      continue;
    }
    results.push_back(v);
  }
  if (sawInvalid || sawUnsupported) {
    result.failure =
        sawInvalid ? ImportFailure::Invalid : ImportFailure::Unsupported;
    return result;
  }
  b.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(
      FunctionType::get(ctx, argTypes, ValueRange(results).getTypes()));
  for (auto [i, info] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "tessel.name", StringAttr::get(ctx, info.name()));
  sweepDeadConstants(func);

  // The verifiers hold the importer to the dialect's contract.
  if (failed(verify(*module))) {
    result.failure = ImportFailure::Invalid;
    return result;
  }
  result.module = std::move(module);
  return result;
}

/// Reads the model and makes it self-contained: external data loaded,
/// frozen inputs turned into initializers.
LogicalResult loadModel(MLIRContext *ctx, const std::string &path,
                        const ImportOptions &options, onnx::ModelProto &model,
                        bool &unsupported) {
  Location fileLoc = NameLoc::get(StringAttr::get(ctx, path));
  if (!llvm::sys::fs::exists(path))
    return emitError(fileLoc) << "cannot open ONNX model " << path;
  if (!parseProtoFile(path, model))
    return emitError(fileLoc) << "cannot parse ONNX model " << path;
  if (!model.has_graph())
    return emitError(fileLoc) << "ONNX model " << path << " has no graph";

  // Opsets first: a newer model gets 'unsupported', not a checker error.
  for (const auto &entry : model.opset_import()) {
    if (!isDefaultDomain(entry.domain()) ||
        (entry.version() >= 1 && entry.version() <= kMaxOpset))
      continue;
    unsupported = true;
    return emitError(fileLoc)
           << "unsupported: ONNX model " << path << " uses opset "
           << entry.version() << " of the default domain (re-export it with "
           << "opset " << kMinOpset << " to " << kMaxOpset << ")";
  }

  SmallString<256> modelDir(path);
  llvm::sys::path::remove_filename(modelDir);
  onnx::GraphProto &graph = *model.mutable_graph();
  std::string error;
  bool ok = true;
  forEachTensor(graph, [&](onnx::TensorProto &tensor) {
    if (ok && tensor.data_location() == onnx::TensorProto::EXTERNAL &&
        failed(loadExternalData(tensor, modelDir, error))) {
      emitError(fileLoc) << "tensor '" << tensor.name() << "': " << error;
      ok = false;
    }
  });
  if (!ok)
    return failure();

  for (const auto &[name, file] : options.frozenInputs) {
    auto input =
        llvm::find_if(graph.input(), [&, &name = name](const auto &in) {
          return in.name() == name;
        });
    if (input == graph.input().end()) {
      std::string names;
      for (const auto &in : graph.input())
        names += (names.empty() ? "" : ", ") + in.name();
      return emitError(fileLoc)
             << "cannot freeze '" << name
             << "': it is not a graph input (inputs: " << names << ")";
    }
    onnx::TensorProto tensor;
    if (!parseProtoFile(file, tensor))
      return emitError(fileLoc) << "cannot parse TensorProto file " << file
                                << " for frozen input '" << name << "'";
    SmallString<256> tensorDir(file);
    llvm::sys::path::remove_filename(tensorDir);
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL &&
        failed(loadExternalData(tensor, tensorDir, error)))
      return emitError(fileLoc) << "frozen input '" << name << "': " << error;
    tensor.set_name(name);
    const auto &declared = input->type().tensor_type();
    if (declared.elem_type() != tensor.data_type())
      return emitError(fileLoc)
             << "frozen input '" << name << "' is "
             << onnxTypeName(tensor.data_type()) << ", the graph declares "
             << onnxTypeName(declared.elem_type());
    if (declared.has_shape()) {
      bool matches = declared.shape().dim_size() == tensor.dims_size();
      for (int d = 0; matches && d < tensor.dims_size(); ++d)
        matches = !declared.shape().dim(d).has_dim_value() ||
                  declared.shape().dim(d).dim_value() == tensor.dims(d);
      if (!matches)
        return emitError(fileLoc)
               << "frozen input '" << name << "' has shape "
               << shapeText(SmallVector<int64_t>(tensor.dims().begin(),
                                                 tensor.dims().end()))
               << ", the graph declares " << shapeText(declared.shape());
    }
    auto existing = llvm::find_if(
        *graph.mutable_initializer(),
        [&, &name = name](const auto &t) { return t.name() == name; });
    if (existing != graph.mutable_initializer()->end())
      *existing = tensor;
    else
      *graph.add_initializer() = tensor;
    // IR version 3 and older list every initializer among the inputs.
    if (model.ir_version() >= 4)
      graph.mutable_input()->erase(input);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ONNX checker and shape inference, in a child process
//===----------------------------------------------------------------------===//

/// Runs the ONNX checker, then shape inference with data propagation (which
/// fills in `model`'s value_info and `propagated`). Returns the error, or ""
/// when the model is valid.
std::string checkAndInfer(onnx::ModelProto &model, PropagatedData &propagated) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return std::string("ONNX checker: ") + e.what();
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1,
                                        /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options, &propagated);
  } catch (const std::exception &e) {
    return std::string("ONNX shape inference: ") + e.what();
  }
  return "";
}

bool writeAll(int fd, const std::string &bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += n;
  }
  return true;
}

/// checkAndInfer in a child process. ONNX 1.12's inference functions crash on
/// some malformed nodes (SIGSEGV in LayerNormalization's for an out-of-range
/// axis, SIGFPE in DepthToSpace's when blocksize^2 overflows); isolated, such
/// a crash becomes a diagnostic instead of taking the compiler down. The
/// child sends back what inference found: the graph's value_info and output
/// types, and the propagated data (as inputs of a graph whose shapes hold it).
std::string checkAndInferIsolated(onnx::ModelProto &model,
                                  PropagatedData &propagated) {
  int fds[2];
  if (::pipe(fds) != 0)
    return checkAndInfer(model, propagated);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return checkAndInfer(model, propagated);
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash must end the child, not run the parent's crash handlers.
    for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT})
      std::signal(sig, SIG_DFL);
    onnx::ModelProto envelope;
    envelope.set_doc_string(checkAndInfer(model, propagated));
    onnx::GraphProto &found = *envelope.mutable_graph();
    *found.mutable_value_info() = model.graph().value_info();
    *found.mutable_output() = model.graph().output();
    for (const auto &[name, data] : propagated) {
      auto *value = found.add_input();
      value->set_name(name);
      *value->mutable_type()->mutable_tensor_type()->mutable_shape() = data;
    }
    std::string bytes;
    bool sent = envelope.SerializeToString(&bytes) && writeAll(fds[1], bytes);
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    bytes.append(buffer, n);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  onnx::ModelProto envelope;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      !envelope.ParseFromString(bytes)) {
    std::string how =
        WIFSIGNALED(status)
            ? std::string(" (") + ::strsignal(WTERMSIG(status)) + ")"
            : std::string();
    return "ONNX checker or shape inference crashed on this model" + how +
           ": it is malformed";
  }
  if (!envelope.doc_string().empty())
    return envelope.doc_string();
  onnx::GraphProto &graph = *model.mutable_graph();
  const onnx::GraphProto &found = envelope.graph();
  *graph.mutable_value_info() = found.value_info();
  for (int i = 0; i < graph.output_size() && i < found.output_size(); ++i)
    *graph.mutable_output(i)->mutable_type() = found.output(i).type();
  for (const auto &value : found.input())
    propagated[value.name()] = value.type().tensor_type().shape();
  return "";
}

} // namespace

ImportResult importOnnxFile(MLIRContext &context, const std::string &path,
                            const ImportOptions &options) {
  context.loadDialect<TesselDialect, func::FuncDialect>();
  Location fileLoc = NameLoc::get(StringAttr::get(&context, path));
  ImportResult failedResult;
  failedResult.failure = ImportFailure::Invalid;
  // ONNX reports problems with exceptions; none leaves the importer.
  try {
    onnx::ModelProto model;
    bool unsupported = false;
    if (failed(loadModel(&context, path, options, model, unsupported))) {
      if (unsupported)
        failedResult.failure = ImportFailure::Unsupported;
      return failedResult;
    }
    PropagatedData propagated;
    std::string error = checkAndInferIsolated(model, propagated);
    if (!error.empty()) {
      emitError(fileLoc) << error;
      return failedResult;
    }
    GraphImporter importer(&context, model, propagated);
    return importer.run(path);
  } catch (const std::exception &e) {
    emitError(fileLoc) << "cannot import ONNX model " << path << ": "
                       << e.what();
  } catch (...) {
    emitError(fileLoc) << "cannot import ONNX model " << path
                       << ": unknown error";
  }
  return failedResult;
}

std::vector<std::string> supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const OpEntry &entry : kOps)
    ops.push_back(entry.opType);
  std::sort(ops.begin(), ops.end());
  return ops;
}

} // namespace tessel
