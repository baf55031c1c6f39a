//===- Pipeline.h - the compile pipeline, written once ----------*- C++ -*-===//
#ifndef TESSEL_COMPILER_PIPELINE_H
#define TESSEL_COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace tessel {

/// Every option that changes the engine. They flow here from the command line
/// and nowhere else, and are recorded in the engine.
struct CompileOptions {
  std::string precision = "fp16";
  std::vector<std::string> tiers = {"cpu"};
};

/// Appends the graph pipeline, in order, to `pm`.
void buildPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// Runs the pipeline on an imported module.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const CompileOptions &options);

} // namespace tessel

#endif // TESSEL_COMPILER_PIPELINE_H
