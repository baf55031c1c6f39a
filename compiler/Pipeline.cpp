//===- Pipeline.cpp - the compile pipeline, in order ----------------------===//
#include "Pipeline.h"

#include "Passes.h"
#include "mlir/Transforms/Passes.h"

namespace tessel {

void buildPipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  (void)options;
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  func.addPass(createFoldConstants());
  func.addPass(mlir::createCanonicalizerPass());
  func.addPass(mlir::createCSEPass());
}

mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                const CompileOptions &options) {
  mlir::PassManager pm(module.getContext());
  buildPipeline(pm, options);
  return pm.run(module);
}

} // namespace tessel
