//===- GraphImporter.cpp - an ONNX graph to func.func @main ---------------===//
//
// The importer's entry point and its second half. importOnnxFile loads and
// checks the model (ModelLoader.h), then GraphImporter::run builds one
// `func.func @main`: graph inputs become arguments (statically shaped),
// initializers known constants, and each node is imported in order by the
// op table's entry for its op type and the model's opset (OpTable.h). An
// unsupported node is reported and its outputs poisoned, and import goes on,
// so that one run lists every problem; the module is verified at the end.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "ModelLoader.h"
#include "Node.h"
#include "OpTable.h"
#include "TensorProto.h"

#include "CustomOp.h"

#include "TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tessel {
namespace importer {

namespace {

/// A declared input shape with its dynamic dims as 1, for the message that
/// says how to fix them ("1x3x224x224").
std::string exampleShape(const onnx::TypeProto::Tensor &type) {
  std::string text;
  for (const auto &dim : type.shape().dim())
    text += (text.empty() ? "" : "x") +
            std::to_string(dim.has_dim_value() ? dim.dim_value() : 1);
  return text.empty() ? "DIMS" : text;
}

/// Whether the first dim of a declared input shape is dynamic.
bool dynamicBatch(const onnx::TypeProto::Tensor &type) {
  return type.has_shape() && type.shape().dim_size() > 0 && !type.shape().dim(0).has_dim_value();
}

} // namespace

void GraphImporter::importNode(const onnx::NodeProto &proto, int64_t index) {
  Node n(*this, proto, index);
  auto poison = [&] {
    for (const std::string &out : proto.output())
      poisoned.insert(out);
  };
  if (customOps)
    if (const custom::CustomOpDecl *decl = customOps->find(proto.domain(), proto.op_type())) {
      if (llvm::any_of(proto.input(),
                       [&](const std::string &in) { return poisoned.count(in); }))
        return poison();
      int64_t errorsBefore = errorCount;
      if (failed(importCustomOp(n, *decl))) {
        if (errorCount == errorsBefore)
          (void)n.invalid("internal error: the import failed without a diagnostic");
        return poison();
      }
      return;
    }
  if (!isDefaultDomain(proto.domain())) {
    (void)n.unsupported("domain '" + proto.domain() + "'",
                        "only the default ONNX domain is supported; a custom op needs "
                        "its manifest (tessel-compile --custom-op FILE)");
    return poison();
  }
  const OpTable &table = OpTable::get();
  if (!table.contains(proto.op_type())) {
    (void)n.unsupported("no tessel lowering for this op type",
                        "tessel-compile --list-ops lists the supported ones");
    return poison();
  }
  // Outputs of failed nodes are poisoned: their consumers are skipped
  // without more diagnostics, but still checked for op type support above.
  if (llvm::any_of(proto.input(),
                   [&](const std::string &in) { return poisoned.count(in); }))
    return poison();
  // The entry whose opset range holds the model's: for models older than
  // opset 7, there is one where the op is unchanged since (see OpTable.h).
  const OpVersion *version = table.find(proto.op_type(), opset);
  if (!version) {
    std::string ranges;
    for (const OpVersion &v : table.versions(proto.op_type()))
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(v.opsets.first) + "-" +
                std::to_string(v.opsets.last);
    (void)n.unsupported("opset " + Twine(opset) + " semantics",
                        "tessel imports " + proto.op_type() + " at opsets " + ranges);
    return poison();
  }
  int64_t errorsBefore = errorCount;
  if (failed(version->handler(n))) {
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

bool GraphImporter::dataDependent(Value v) {
  if (!sawDataDependent)
    return false;
  // Depth-first over the producers, each value answered once.
  SmallVector<Value> stack{v};
  while (!stack.empty()) {
    Value top = stack.back();
    Operation *def = top.getDefiningOp();
    if (!def || dependence.count(top)) {
      stack.pop_back();
      continue;
    }
    bool pending = false, dependent = isa<NonMaxSuppressionOp>(def);
    for (Value operand : def->getOperands()) {
      if (!operand.getDefiningOp())
        continue;
      auto it = dependence.find(operand);
      if (it == dependence.end()) {
        stack.push_back(operand);
        pending = true;
      } else {
        dependent |= it->second;
      }
    }
    if (!pending) {
      dependence[top] = dependent;
      stack.pop_back();
    }
  }
  auto it = dependence.find(v);
  return it != dependence.end() && it->second;
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
                      " (fix its dims with --input-shape " + info.name() + "=" +
                      exampleShape(tensorType) +
                      (dynamicBatch(tensorType) ? ", or its first with --batch" : "") +
                      ")");
    } else { // extents beyond tessel's were refused before inference (loadModel)
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
    func.setArgAttr(i, TesselDialect::NameAttrHelper::getNameStr(),
                    StringAttr::get(ctx, info->name()));
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
    func.setResultAttr(i, TesselDialect::NameAttrHelper::getNameStr(),
                       StringAttr::get(ctx, info.name()));
  sweepDeadConstants(func);

  // The verifiers hold the importer to the dialect's contract.
  if (failed(verify(*module))) {
    result.failure = ImportFailure::Invalid;
    return result;
  }
  result.module = std::move(module);
  return result;
}

} // namespace importer

using namespace importer;

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
    std::string error = upgradeOldOpset(model, options.onnxLibrarySeconds);
    if (!error.empty()) {
      emitError(fileLoc) << error;
      failedResult.failure = ImportFailure::Unsupported;
      return failedResult;
    }
    PropagatedData propagated;
    error = checkAndInferIsolated(model, propagated, options.onnxLibrarySeconds);
    if (!error.empty()) {
      emitError(fileLoc) << error;
      return failedResult;
    }
    GraphImporter graph(&context, model, propagated, options.customOps);
    return graph.run(path);
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
  return importer::OpTable::get().opTypes();
}

} // namespace tessel
