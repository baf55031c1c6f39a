//===- ImplicitGemm.h - conv/gemm/matmul steps as tiled GPU kernels -*- C++ -*-===//
//
// Plans the GPU variants of the Tensor Core ops (conv as implicit GEMM on
// NHWC, gemm, matmul): a "tc-sm70" variant on WMMA fragments and a "simt"
// variant on CUDA cores, each a kernel specialized to the step's static
// shapes and fused epilogue (GemmKernel.h). All kernels of a tier go into one
// module, lowered once to PTX (sm_70 for tc, sm_60 for simt) and assembled
// from that PTX into a cubin per target.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_IMPLICITGEMM_H
#define TESSEL_CODEGEN_IMPLICITGEMM_H

#include "GemmKernel.h"
#include "StepKernels.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <optional>
#include <vector>

namespace tessel::codegen {

class GemmPlanner {
public:
  GemmPlanner(mlir::MLIRContext &ctx, const Targets &targets);
  ~GemmPlanner();

  /// The step's variants, best tier first, for conv/gemm/matmul steps; empty
  /// for any other op or a case the codegen does not handle (the step then
  /// runs on another tier). Launch::module indexes finish()'s modules.
  /// Identical kernels (same shapes, dtypes and epilogue) are planned once.
  mlir::FailureOr<std::vector<KernelVariant>> plan(const StepView &step);

  /// Compiles every kernel planned so far into modules; call once, after the
  /// last plan(). An assembly failure is reported at a step using the kernel.
  mlir::FailureOr<std::vector<KernelModule>> finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The GEMM a conv/gemm/matmul step computes, or std::nullopt where the
/// codegen does not handle the step: not a 2-D NHWC conv, dtypes other than
/// f16 and f32, shapes past the grid's limits. (Depthwise-like grouped
/// convs, fewer than 8 filters per group, are described too; chooseTiles
/// gives them the direct kernel, simt only.)
std::optional<GemmProblem> describeGemmStep(const StepView &step);

/// The PTX target of a tier: sm_70 (Volta, WMMA) for tc, sm_80 for
/// tc-sm80, sm_90 (its sm_90a code) for tc-sm90, sm_60 for simt.
int ptxArch(GemmTier tier);
/// Whether the tier's code runs on sm_`arch`: its PTX target and later SMs,
/// or (tc-sm90's architecture-specific wgmma) its target alone.
bool runsOn(GemmTier tier, int arch);

/// One tier's kernels as a module: built, lowered once to PTX for the tier's
/// PTX target, and assembled from that PTX for each of targets.cubinArchs
/// (ptxas keeps what the newer SMs do better; the kernels use nothing past
/// sm_70). On an assembly failure, reports at where(i) for the failing
/// kernel i.
mlir::FailureOr<KernelModule>
compileGemmModule(mlir::MLIRContext &ctx, GemmTier tier, llvm::ArrayRef<GemmKernel> kernels,
                  const Targets &targets, llvm::function_ref<mlir::Location(size_t)> where);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_IMPLICITGEMM_H
