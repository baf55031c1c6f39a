//===- Pipeline.h - the compile pipeline, written once ----------*- C++ -*-===//
#ifndef TESSEL_COMPILER_PIPELINE_H
#define TESSEL_COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace tessel {

namespace custom {
class CustomOpRegistry;
} // namespace custom

/// Every option that changes the engine. They flow here from the command line
/// and nowhere else, and are recorded in the engine.
struct CompileOptions {
  std::string precision = "fp16";
  // The format of the engine's inputs and outputs: "model" as the ONNX model
  // declares them, or "nhwc" (4-D f32 tensors) and "f16" (f32 tensors), so
  // that the pipeline's boundary converts disappear (--tessel-io-format).
  std::string ioLayout = "model";
  std::string ioDtype = "model";
  /// GPU targets (major*10+minor) to assemble cubins for; PTX is carried
  /// besides for older and newer GPUs. Empty: a CPU-only engine.
  std::vector<int> targets = {75, 80, 90};
  /// A step of a GPU engine without a GPU kernel is an error, not a warning
  /// (--require-gpu). Changes no engine: it only refuses to write one.
  bool requireGpu = false;
  /// ONNX nodes whose ops stay in f32 at fp16 (--fp32-nodes; tessel-run
  /// --check-overflow names the nodes an fp16 engine overflows in).
  std::vector<std::string> fp32Nodes;
  /// The custom ops' manifests (--custom-op), for their GPU kernels; the
  /// engine records their names and files (the "custom_ops" option).
  const custom::CustomOpRegistry *customOps = nullptr;
};

/// Appends the graph pipeline, in order, to `pm`.
void buildPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// Runs the pipeline on an imported module.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const CompileOptions &options);

} // namespace tessel

#endif // TESSEL_COMPILER_PIPELINE_H
