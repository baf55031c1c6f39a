//===- GemmKernel.h - one implicit-GEMM kernel, tiled, as MLIR --*- C++ -*-===//
//
// What a Tensor Core op (conv on NHWC, gemm, matmul) computes, seen as a GEMM
// out[m, n] = epilogue(sum_k A(m, k) * B(k, n)), and the kernel that computes
// it: a block tile staged in two shared-memory buffers, each K step
// gathered by the block's threads from the op's operands (im2col addressing
// for conv) into registers while the previous step's math runs, then
// either WMMA fragments per warp ("tc") or a register micro-tile of scalar
// FMAs per thread ("simt"), then the fused epilogue on the f32 accumulators.
//
// Grouped convs with fewer than 8 filters per group (depthwise: a GEMM one
// column wide per group) get a direct kernel on the simt tier instead, each
// thread summing windows (depthwise: a run of outputs of several channels),
// then the same epilogue.
//
// Everything is static: one kernel per shape, epilogue and dtype, so the
// gather's index arithmetic is on constants and the kernel needs no
// parameters but its operands' addresses.
//
// The API of codegen/gemm/, whose pieces are a file each:
//   gemm/Problem.h       the problem description (GemmProblem, key())
//   gemm/Tiling.h        the tile configuration and its heuristic
//   gemm/Staging.h       operand tiles in shared memory and their gathers
//   gemm/MainLoop.h      the main loop, the tiers' variation point (WMMA, SIMT)
//   gemm/Epilogue.h      the fused epilogue
//   gemm/PerElementKernels.h  the direct conv and split-K's reduction
//   gemm/Kernel.cpp      the tiled kernel from those pieces; this header's API
//   gemm/KernelIr.h, gemm/Common.h  what the pieces build with
// Only Problem.h and Tiling.h are included here; the rest is internal
// (namespace tessel::codegen::gemm).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMMKERNEL_H
#define TESSEL_CODEGEN_GEMMKERNEL_H

#include "KernelPlan.h"
#include "gemm/Problem.h"
#include "gemm/Tiling.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <cstdint>
#include <string>

namespace mlir::gpu {
class GPUModuleOp;
} // namespace mlir::gpu

namespace tessel::codegen {

/// A kernel to build: the problem, its tiling and its entry point's name.
struct GemmKernel {
  GemmProblem problem;
  TileConfig tiles;
  std::string name;

  std::array<uint32_t, 3> grid() const;
  std::array<uint32_t, 3> block() const;
  /// The output tiles a persistent grid's blocks take turns at (all
  /// batches').
  int64_t persistentTiles() const;
  /// Dynamic shared memory the launch passes (tc-sm80's stages); 0 where
  /// the kernel declares its shared memory statically.
  uint32_t sharedBytes() const;
  /// Bytes every operand address must be aligned to (vector loads).
  int alignment() const;
  /// The kernel's parameters, in order: "a_map", "b_map" with TMA
  /// (tiles.tma), "out_map" with TMA stores (tiles.tmaStore), "a", "b",
  /// "a_scale" where the problem has it, then "addend" and "residual"
  /// where it has them, then "out"; with split-K
  /// "a", "b", ("a_scale"), "workspace" (the epilogue's operands go to the
  /// reduction).
  llvm::SmallVector<llvm::StringRef> parameters() const;
  /// A TMA kernel's tensor map of parameter `map` ("a_map": A, M rows;
  /// "b_map": B, N rows; "out_map": the output), the 128-byte swizzle,
  /// zero fill (engine.fbs TensorMap). Tiled: a K-major operand as f16
  /// rows of K elements, copied in boxes of blockK by the block tile's
  /// rows; an MN-major one (a gemm's A with transA, B without transB) as
  /// rows of M (N) for each k, in boxes of 64 rows by blockK; the output's
  /// rows of N, stored in boxes of 64 x 64. A windowed conv's A
  /// (problem.im2col()): im2col, the NHWC input as {C, W, H, N}, boxes of
  /// blockK channels of blockM output positions (the conv's box,
  /// im2colBox, and strides), each copy at one tap.
  KernelArg::TensorMap tensorMap(llvm::StringRef map) const;

  // Split-K (tiles.splitK > 1) only: the workspace of f32 partial sums,
  // [batch][splitK][M][N], and the reduction kernel that sums it in split
  // order and runs the epilogue: its name, launch shape and parameters
  // ("workspace", then "addend", "residual" where present, then "out").
  bool splitsK() const { return tiles.splitK > 1; }
  uint64_t workspaceBytes() const;
  std::string reduceName() const { return name + "_reduce"; }
  std::array<uint32_t, 3> reduceGrid() const;
  std::array<uint32_t, 3> reduceBlock() const;
  llvm::SmallVector<llvm::StringRef> reduceParameters() const;
};

/// Appends the kernel (and, with split-K, its reduction kernel) to `module`
/// (gpu/scf/arith/memref/vector dialects).
mlir::LogicalResult buildGemmKernel(mlir::OpBuilder &builder, mlir::gpu::GPUModuleOp module,
                                    const GemmKernel &kernel);

/// A `module attributes {gpu.container_module} { gpu.module @name {...} }`
/// holding every kernel of `kernels`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildGemmModule(mlir::MLIRContext &ctx, llvm::StringRef name,
                llvm::ArrayRef<GemmKernel> kernels);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_GEMMKERNEL_H
