//===- KernelEmitter.h - every step's GPU kernels, planned ------*- C++ -*-===//
#ifndef TESSEL_COMPILER_KERNELEMITTER_H
#define TESSEL_COMPILER_KERNELEMITTER_H

#include "Pipeline.h"
#include "StepKernels.h"

#include "mlir/Support/LogicalResult.h"

namespace tessel {

/// Plans the GPU variants of every step, in step order: the implicit-GEMM
/// codegen takes the Tensor Core ops (conv, gemm, matmul), the CUDA kernel
/// library every other op it covers, and a custom op's manifest its custom
/// steps (NVRTC, codegen/custom); a step none covers runs on the CPU tier
/// only. Modules: one per library family the steps use, in the library's
/// family order, then the GEMM codegen's, then one per custom op source, so
/// that the numbering is deterministic. With no targets the plan is empty: a
/// CPU-only engine.
mlir::FailureOr<codegen::KernelPlan>
planKernels(mlir::MLIRContext &ctx, llvm::ArrayRef<codegen::StepView> steps,
            const CompileOptions &options);

} // namespace tessel

#endif // TESSEL_COMPILER_KERNELEMITTER_H
