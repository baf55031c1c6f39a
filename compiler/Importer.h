//===- Importer.h - ONNX to the tessel graph dialect -------------*- C++ -*-===//
#ifndef TESSEL_COMPILER_IMPORTER_H
#define TESSEL_COMPILER_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel {

namespace custom {
class CustomOpRegistry;
} // namespace custom

struct ImportOptions {
  // Graph inputs replaced by compile-time constants before import, as
  // (input name, path of an ONNX TensorProto .pb file). This is how shape
  // operands that a model takes as inputs (Reshape's shape, Slice's starts)
  // become static, as onnx-mlir and TensorRT do for shape tensors.
  std::vector<std::pair<std::string, std::string>> frozenInputs;
  // Graph inputs whose dims are fixed before import, as (input name, dims):
  // a dynamic dim takes the given extent, a static one must equal it
  // (--input-shape).
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputShapes;
  // When positive, the extent of every graph input's first dim that is
  // still dynamic after inputShapes (--batch; one import per batch profile).
  int64_t batch = 0;
  // The custom ops the model may use (tessel-compile --custom-op): a node
  // whose domain and op type one declares becomes a tessel.custom.
  const custom::CustomOpRegistry *customOps = nullptr;
  // The longest the ONNX library's checker, shape inference or version
  // converter may run (each in a child process) before the import fails
  // naming the limit. Real models take well under a second; a malformed one
  // can make ONNX's inference loop for hours (ConstantOfShape with a shape
  // operand declared 2^30 long builds a rank-2^30 type). The fuzzer lowers
  // it.
  unsigned onnxLibrarySeconds = 300;
};

enum class ImportFailure { None, Invalid, Unsupported };

struct ImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module; // null on failure
  ImportFailure failure = ImportFailure::None;
};

/// Reads `path` (external data files resolved next to it), runs the ONNX
/// checker and shape inference, and builds a module holding one
/// `func.func @main`. Argument and result attributes `tessel.name` keep the
/// ONNX graph input/output names. Every op's location is
/// `loc("node_name(OpType)")`. Problems are reported through the context's
/// diagnostic engine, every unsupported node at once, before failing.
ImportResult importOnnxFile(mlir::MLIRContext &context, const std::string &path,
                            const ImportOptions &options = {});

/// The ONNX op types the importer accepts, sorted (for the README and the
/// conformance runner).
std::vector<std::string> supportedOnnxOps();

} // namespace tessel

#endif // TESSEL_COMPILER_IMPORTER_H
