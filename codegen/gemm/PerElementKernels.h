//===- PerElementKernels.h - the direct conv and split-K reduction -*- C++ -*-===//
//
// The kernels beside the tiled kernel (Kernel.cpp): the direct convs
// (TileConfig::direct; the depthwise kernel where TileConfig::dwLanes) and
// the reduction of a split-K kernel's workspace (GemmKernel::reduceName()),
// all ending in the shared epilogue.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_PERELEMENTKERNELS_H
#define TESSEL_CODEGEN_GEMM_PERELEMENTKERNELS_H

#include "GemmKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace tessel::codegen::gemm {

/// The direct conv of `kernel` (tiles.direct), appended to `module`.
mlir::LogicalResult buildDirectConvKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                          const GemmKernel &kernel);
/// The split-K reduction of `kernel` (tiles.splitK > 1), appended to `module`.
mlir::LogicalResult buildSplitKReduceKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                            const GemmKernel &kernel);

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_PERELEMENTKERNELS_H
