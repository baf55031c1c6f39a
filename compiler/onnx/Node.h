//===- Node.h - the node API the ONNX op handlers work with -----*- C++ -*-===//
//
// `Node` is one ONNX node as a handler sees it: typed access to its inputs
// (values, or compile-time constants for operands that tessel ops take as
// attributes), its attributes with their ONNX defaults, its outputs (checked
// against ONNX shape inference), op building at the node's location
// (`loc("name(OpType)")`), and diagnostics that name the node.
//
// `GraphImporter` is the state of one graph's import that nodes share: the
// values and compile-time constants bound so far, the types ONNX shape
// inference found, the outputs of nodes that failed (poisoned, so that their
// consumers are skipped without more diagnostics), and the error counts.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_NODE_H
#define TESSEL_COMPILER_ONNX_NODE_H

#include "Importer.h"
#include "ModelLoader.h"
#include "Tensors.h"

#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <set>
#include <string>

namespace tessel::custom {
struct CustomOpDecl;
} // namespace tessel::custom

namespace tessel::importer {

class GraphImporter;

/// The view of one ONNX node that handlers work with: typed access to inputs,
/// attributes and outputs, and diagnostics at the node's location.
class Node {
public:
  Node(GraphImporter &graph, const onnx::NodeProto &proto, int64_t index);

  const onnx::NodeProto &proto;
  GraphImporter &graph;
  mlir::MLIRContext *ctx;
  mlir::OpBuilder &b;
  std::string name;
  mlir::Location loc;

  llvm::StringRef opType() const { return proto.op_type(); }

  // Diagnostics. Both return failure() for `return n.unsupported(...)`.
  mlir::LogicalResult unsupported(const llvm::Twine &what,
                                  const llvm::Twine &instead = "");
  mlir::LogicalResult invalid(const llvm::Twine &what);

  // Inputs.
  int numInputs() const { return proto.input_size(); }
  bool has(int i) const { return i < numInputs() && !proto.input(i).empty(); }
  mlir::FailureOr<mlir::Value> input(int i);
  /// input(i) for a node that reads only its shape: refused when that shape
  /// is a data-dependent extent's static bound (GraphImporter::dataDependent).
  mlir::FailureOr<mlir::Value> shapeInput(int i);
  /// The input's value if it is known at import time; emits `unsupported`
  /// naming `what` otherwise.
  mlir::FailureOr<mlir::DenseElementsAttr> constant(int i, llvm::StringRef what);
  std::optional<mlir::DenseElementsAttr> tryConstant(int i);
  /// For a handler that found neither a constant nor an inferred shape:
  /// reports the operand as not constant.
  mlir::LogicalResult requireConstant(int i, llvm::StringRef what) {
    if (mlir::succeeded(constant(i, what)))
      return invalid(llvm::Twine("internal error: ") + what + " is constant");
    return mlir::failure();
  }
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(int i,
                                                           llvm::StringRef what);
  mlir::FailureOr<double> constantScalar(int i, llvm::StringRef what);

  // Attributes, with their ONNX defaults.
  const onnx::AttributeProto *attr(llvm::StringRef attrName) const;
  mlir::FailureOr<int64_t> getInt(llvm::StringRef attrName, int64_t dflt);
  mlir::FailureOr<float> getFloat(llvm::StringRef attrName, float dflt);
  mlir::FailureOr<std::string> getString(llvm::StringRef attrName,
                                         llvm::StringRef dflt);
  /// Nothing if absent.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  getInts(llvm::StringRef attrName);
  /// Fails unless each of `values` (strides, pads, a shape, ...) is within
  /// kMaxExtent in magnitude.
  mlir::LogicalResult checkSizes(llvm::ArrayRef<int64_t> values,
                                 const llvm::Twine &what);

  // Outputs.
  int numOutputs() const { return proto.output_size(); }
  bool wants(int i) const {
    return i < numOutputs() && !proto.output(i).empty();
  }
  /// The static type ONNX shape inference gave output `i`, if any.
  std::optional<mlir::RankedTensorType> inferredOutputType(int i);
  /// Binds output `i`; its type must be what ONNX shape inference found (if
  /// anything) unless `matchInference` is false. Small integer arithmetic on
  /// constants is evaluated here (see Node.cpp), so that its result can be
  /// the constant operand of a later node.
  mlir::LogicalResult setOutput(int i, mlir::Value value,
                                bool matchInference = true);
  mlir::LogicalResult setConstantOutput(int i, mlir::DenseElementsAttr value);

  // Building.
  template <typename OpT>
  mlir::Value create(mlir::Type type, mlir::ValueRange operands,
                     llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    return b.create<OpT>(loc, mlir::TypeRange{type}, operands, attrs)
        ->getResult(0);
  }
  mlir::NamedAttribute named(llvm::StringRef attrName, mlir::Attribute value) {
    return b.getNamedAttr(attrName, value);
  }
  mlir::Value constantValue(mlir::DenseElementsAttr value);
  /// A rank-0 constant of `element` (a float type, or an integer one:
  /// `value` truncated).
  mlir::Value scalar(mlir::Type element, double value);
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape) {
    return create<ReshapeOp>(mlir::RankedTensorType::get(shape, elementOf(v)),
                             v);
  }
};

/// Imports a node that a custom op manifest declares (CustomOps.cpp).
mlir::LogicalResult importCustomOp(Node &n, const custom::CustomOpDecl &decl);

/// A compile-time value: an initializer (converted on first use) or a tensor
/// computed at import time.
struct KnownConstant {
  const onnx::TensorProto *proto = nullptr;
  mlir::DenseElementsAttr attr;
  mlir::LocationAttr loc;
  mlir::Value materialized;
};

/// One graph's import: `run` builds `func.func @main` node by node
/// (GraphImporter.cpp); the rest is the state that nodes share.
class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext *ctx, onnx::ModelProto &model,
                PropagatedData &propagated,
                const custom::CustomOpRegistry *customOps = nullptr)
      : ctx(ctx), b(ctx), model(model), graph(*model.mutable_graph()),
        propagated(propagated), customOps(customOps) {}

  mlir::MLIRContext *ctx;
  mlir::OpBuilder b;
  onnx::ModelProto &model;
  onnx::GraphProto &graph;
  PropagatedData &propagated;
  const custom::CustomOpRegistry *customOps; ///< may be null
  int64_t opset = 0; ///< the model's default-domain opset
  bool sawInvalid = false, sawUnsupported = false;
  int64_t errorCount = 0;

  /// Set once a node whose result has a data-dependent extent
  /// (NonMaxSuppression) is imported; from then on a node that reads only
  /// its input's shape (Shape, Size, EyeLike) asks dataDependent first.
  bool sawDataDependent = false;
  /// Whether `v` is computed from a result with a data-dependent extent, so
  /// that its static shape may be a bound rather than its shape.
  bool dataDependent(mlir::Value v);

  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<KnownConstant> constants;
  llvm::StringMap<const onnx::TypeProto *> onnxTypes;
  std::set<std::string> poisoned; // outputs of nodes that failed to import
  llvm::DenseMap<mlir::Value, bool> dependence; // dataDependent's answers

  ImportResult run(const std::string &path);

  mlir::LogicalResult error(mlir::Location loc, bool unsupported,
                            const llvm::Twine &message) {
    (unsupported ? sawUnsupported : sawInvalid) = true;
    ++errorCount;
    mlir::emitError(loc) << message;
    return mlir::failure();
  }

  /// The attribute of a known constant (converting an initializer on first
  /// use); nothing if `valueName` is not known at import time.
  std::optional<mlir::DenseElementsAttr> knownConstant(llvm::StringRef valueName,
                                                       std::string &error);
  /// The `tessel.constant` of a known constant, created on first use.
  mlir::Value materialize(llvm::StringRef valueName);
  std::optional<mlir::RankedTensorType> inferredType(llvm::StringRef valueName);

private:
  void importNode(const onnx::NodeProto &node, int64_t index);
  void sweepDeadConstants(mlir::func::FuncOp func);
};

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_NODE_H
