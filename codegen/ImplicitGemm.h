//===- ImplicitGemm.h - conv/gemm/matmul steps as tiled GPU kernels -*- C++ -*-===//
//
// Plans the GPU variants of the Tensor Core ops (conv as implicit GEMM on
// NHWC, gemm, matmul): a "tc-sm70" variant on WMMA fragments and a "simt"
// variant on CUDA cores, each a kernel specialized to the step's static
// shapes and fused epilogue, lowered through NVVM to PTX and assembled to a
// cubin per target.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_IMPLICITGEMM_H
#define TESSEL_CODEGEN_IMPLICITGEMM_H

#include "StepKernels.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <vector>

namespace tessel::codegen {

class GemmPlanner {
public:
  GemmPlanner(mlir::MLIRContext &ctx, const Targets &targets);
  ~GemmPlanner();

  /// The step's variants, best tier first, for conv/gemm/matmul steps; empty
  /// for any other op or a case the codegen does not handle (the step then
  /// runs on another tier). Launch::module indexes finish()'s modules.
  mlir::FailureOr<std::vector<KernelVariant>> plan(const StepView &step);

  /// Compiles every kernel planned so far into modules; call once, after the
  /// last plan().
  mlir::FailureOr<std::vector<KernelModule>> finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_IMPLICITGEMM_H
