//===- Problem.h - what a Tensor Core op computes, as a GEMM ---*- C++ -*-===//
//
// The problem description of the GEMM kernels: a conv on NHWC (implicit
// GEMM, im2col addressing), a gemm or a batched matmul, seen as
//   out[z][m, n] = act(alpha * sum_k A(m, k) B(k, n) + beta * addend + residual)
// with its dtypes and fused epilogue. Plain data, no IR: the tiling
// heuristic (Tiling.h) and the emitter read it, and key() names the kernel
// it makes, so that identical steps share one kernel.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_PROBLEM_H
#define TESSEL_CODEGEN_GEMM_PROBLEM_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tessel::codegen {

enum class GemmOpKind { Conv, Gemm, MatMul };
/// Storage element types a kernel reads and writes; arithmetic is f32.
enum class ElemType { F16, F32 };
/// The epilogue's activations, with the CPU tier's formulas
/// (runtime/kernels/src/gemm.cpp, activateRow).
enum class Activation {
  None, Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSwish, Gelu, GeluTanh, Silu, HardSigmoid
};

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

/// The box TMA's im2col mode walks for `conv` (cuTensorMapEncodeIm2col's
/// pixel box corners, along W and H): from the first output's window origin
/// (-pad) to the last output's (its end padding less the window), so that
/// the box's positions, in the conv's strides, are its output positions.
struct Im2colBox {
  int64_t lowerW = 0, lowerH = 0, upperW = 0, upperH = 0;
};
Im2colBox im2colBox(const ConvShape &conv);

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
  /// conv, gemm: a tensor of the result's shape.
  std::optional<ElemType> residual;
  /// conv: the prologue's input scale, [batch][inC]: A(m, k) is read as
  /// x * scale[image of m][channel of k], rounded to A's type.
  std::optional<ElemType> aScale;
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
  /// A conv whose A rows are gathered through its window (im2col), not the
  /// input itself (a 1x1, stride 1, unpadded conv).
  bool im2col() const;
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_GEMM_PROBLEM_H
