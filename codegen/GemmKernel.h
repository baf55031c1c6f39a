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
// column wide per group) get a direct kernel on the simt tier instead: one
// thread per output element summing its window, then the same epilogue.
//
// Everything is static: one kernel per shape, epilogue and dtype, so the
// gather's index arithmetic is on constants and the kernel needs no
// parameters but its operands' addresses.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMMKERNEL_H
#define TESSEL_CODEGEN_GEMMKERNEL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::gpu {
class GPUModuleOp;
} // namespace mlir::gpu

namespace tessel::codegen {

enum class GemmOpKind { Conv, Gemm, MatMul };
/// Storage element types a kernel reads and writes; arithmetic is f32.
enum class ElemType { F16, F32 };
/// The epilogue's activations, with the CPU tier's formulas
/// (runtime/src/cpu/nn.cpp, activateRow).
enum class Activation { None, Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSwish };

std::optional<Activation> parseActivation(llvm::StringRef name);
llvm::StringRef activationName(Activation act);
int64_t elemBytes(ElemType type);

/// A 2-D convolution on NHWC input, OHWI weight, NHWC result.
struct ConvShape {
  int64_t batch = 1, inH = 1, inW = 1, inC = 1; ///< input N, H, W, C
  int64_t outC = 1;                             ///< Cout (weight O)
  int64_t kH = 1, kW = 1;
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0; ///< pad: the begins
  int64_t dilH = 1, dilW = 1;
  int64_t group = 1;
  int64_t outH = 1, outW = 1;
};

/// One batch dimension of a matmul: the result's extent and each operand's
/// stride in whole matrices (0 where the operand broadcasts).
struct BatchDim {
  int64_t extent = 1, aStride = 0, bStride = 0;
};

/// out[z][m, n] = act(alpha * sum_k A(m, k) B(k, n) + beta * addend + residual)
/// for z < batch (matmul batches, conv groups), m < M, n < N.
struct GemmProblem {
  GemmOpKind op = GemmOpKind::Gemm;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ElemType a = ElemType::F16, b = ElemType::F16, out = ElemType::F16;
  /// conv: bias[n]; gemm: C, broadcast to [M, N] by the strides below.
  std::optional<ElemType> addend;
  /// conv only: a tensor of the result's shape.
  std::optional<ElemType> residual;
  ConvShape conv;                ///< conv
  bool transA = false, transB = false;
  float alpha = 1.0f, beta = 1.0f; ///< gemm
  int64_t addendRowStride = 0, addendColStride = 1; ///< gemm C, in elements
  llvm::SmallVector<BatchDim> batchDims; ///< matmul, outermost first
  Activation act = Activation::None;
  float actAlpha = 0.0f, actBeta = 0.0f;

  /// A conv's problem: M = N*OH*OW, N = Cout/group, K = KH*KW*Cin/group,
  /// one group per batch (no epilogue yet).
  static GemmProblem forConv(const ConvShape &conv, ElemType type);

  /// Every field that changes the kernel, as text: equal keys, equal kernels.
  std::string key() const;
  /// Whether some operand has 2^31 elements or more (64-bit indexing).
  bool needsWideIndex() const;
};

enum class GemmTier { TensorCore, Simt };
llvm::StringRef tierName(GemmTier tier); ///< "tc-sm70", "simt"

/// How the kernel tiles the problem (see chooseTiles for the heuristic).
struct TileConfig {
  GemmTier tier = GemmTier::TensorCore;
  int64_t blockM = 0, blockN = 0, blockK = 0;
  // tc: a warpsM x warpsN grid of warps, each fragsM x fragsN fragments.
  int64_t fragM = 16, fragN = 16, fragK = 16;
  int64_t warpsM = 1, warpsN = 1, fragsM = 1, fragsN = 1;
  // simt: a threadsM x threadsN grid of threads, each microM x microN sums;
  // thread (tm, tn) owns rows tm + i * threadsM and columns tn + j * threadsN.
  int64_t threadsM = 1, threadsN = 1, microM = 1, microN = 1;
  // Split-K: the K steps divided among splitK blocks (grid z = batch *
  // splitK), each writing its f32 partial sums to the workspace; a second
  // kernel sums the splits in order and runs the epilogue.
  int64_t splitK = 1;
  // A direct convolution (simt only): one thread per output element, no
  // shared memory, for grouped convs with fewer than 8 filters per group.
  bool direct = false;

  int64_t threads() const;
  /// K steps of blockK per block: ceil(ceil(K / blockK) / splitK).
  int64_t stepsPerSplit(int64_t k) const;
};

/// The tile configuration for `problem` on `tier`, or std::nullopt when the
/// tier cannot run it (tc needs f16 A and B; grid limits).
std::optional<TileConfig> chooseTiles(const GemmProblem &problem, GemmTier tier);

/// A kernel to build: the problem, its tiling and its entry point's name.
struct GemmKernel {
  GemmProblem problem;
  TileConfig tiles;
  std::string name;

  std::array<uint32_t, 3> grid() const;
  std::array<uint32_t, 3> block() const;
  /// Bytes every operand address must be aligned to (vector loads).
  int alignment() const;
  /// The kernel's parameters, in order: "a", "b", then "addend" and
  /// "residual" where the problem has them, then "out"; with split-K "a",
  /// "b", "workspace" (the epilogue's operands go to the reduction).
  llvm::SmallVector<llvm::StringRef> parameters() const;

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
