//===- tessel-opt.cpp - mlir-opt with Tessel's dialect and passes ---------===//
#include "Passes.h"
#include "TesselDialect.h"
#include "WmmaGemm.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<tessel::TesselDialect, mlir::func::FuncDialect>();
  tessel::registerTesselPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  // Codegen: the gpu/nvvm dialects, the NVVM target and the lowering to PTX.
  tessel::codegen::registerCodegenDialects(registry);
  mlir::registerSCFToControlFlowPass();
  mlir::registerConvertGpuOpsToNVVMOpsPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::registerGpuNVVMAttachTargetPass();
  mlir::registerGpuModuleToBinaryPassPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessel optimizer driver\n", registry));
}
