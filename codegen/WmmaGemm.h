//===- WmmaGemm.h - one GEMM kernel on WMMA fragments, emitted as PTX -----===//
//
// The first codegen slice: C[M,N] = A[M,K] * B[K,N] with A and B f16
// row-major and C f32 or f16 row-major, tiled block -> warp -> fragment onto
// `gpu.subgroup_mma_*` (f16 operands, f32 accumulation) and lowered in-process
// through NVVM to PTX.
//
// M, N and K are static and must be multiples of the fragment's m, n and k:
// the pad-channels pass and the GEMM caller pad operands up to those
// multiples, so the kernel never needs a bounds check inside a fragment.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_WMMAGEMM_H
#define TESSEL_CODEGEN_WMMAGEMM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"

#include <array>
#include <cstdint>
#include <string>

namespace tessel::codegen {

/// The WMMA fragment shapes NVVM supports for f16 operands.
struct FragmentShape {
  int64_t m = 16, n = 16, k = 16;
};

struct GemmKernelSpec {
  int64_t m = 0, n = 0, k = 0;
  bool outF16 = false; ///< C in f16 (accumulation stays f32) instead of f32.
  FragmentShape fragment;
  /// Warps per block, as a warpsM x warpsN grid of warp tiles.
  int64_t warpsM = 2, warpsN = 2;
  /// Fragments per warp tile (fragsM x fragsN accumulators live in registers).
  /// Reduced to the largest count that divides M (N) when it does not.
  int64_t fragsM = 2, fragsN = 2;
  std::string chip = "sm_80"; ///< sm_70, sm_75, sm_80 or sm_90.
  std::string kernelName = "tessel_wmma_gemm";
};

/// How to launch the kernel: kernel(A, B, C) with plain device pointers.
struct GemmLaunch {
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t sharedBytes = 0; ///< static shared memory, already in the kernel.
  int64_t fragsM = 0, fragsN = 0; ///< the warp tile actually used.
};

/// Checks the spec and derives the launch shape; reports what is wrong at
/// `loc` and fails on an unsupported spec.
mlir::FailureOr<GemmLaunch> planWmmaGemm(mlir::Location loc,
                                         const GemmKernelSpec &spec);

/// Builds `module attributes {gpu.container_module} { gpu.module ... }`
/// holding the one kernel, still on the gpu/scf/arith/memref dialects.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildWmmaGemmModule(mlir::MLIRContext &ctx, const GemmKernelSpec &spec);

/// Lowers every gpu.module in `module` to NVVM and serializes it to PTX for
/// `chip` (sm_60, sm_70, sm_75, sm_80 or sm_90); returns the PTX of the
/// (single) gpu.module. `indexBitwidth` 32 makes index arithmetic 32-bit
/// (every offset the kernels compute must then be below 2^31).
mlir::FailureOr<std::string> lowerGpuModuleToPtx(mlir::ModuleOp module,
                                                 llvm::StringRef chip,
                                                 int indexBitwidth = 64);

/// buildWmmaGemmModule + lowerGpuModuleToPtx.
mlir::FailureOr<std::string> emitWmmaGemmPtx(mlir::MLIRContext &ctx,
                                             const GemmKernelSpec &spec);

/// The dialects, translations and the NVVM target the lowering needs; the
/// context of emitWmmaGemmPtx gets them appended, tessel-opt registers them.
void registerCodegenDialects(mlir::DialectRegistry &registry);

/// The PTX ISA version passed to the NVPTX backend for a chip: the lowest
/// that has every WMMA shape (6.3 for Volta and Turing).
std::string ptxFeaturesFor(llvm::StringRef chip);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_WMMAGEMM_H
