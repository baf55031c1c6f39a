//===- GemmEmulation.h - GEMM kernels run by the emulator, checked -*- C++ -*-===//
//
// What the codegen's tests share: problems built the way the tests write
// them (conv, gemm, matmul, an epilogue), and emulate(), which builds a
// GemmKernel's module, runs it (and, with split-K, its reduction) on the
// GPU IR emulator over random operands, and compares the result with a
// float64 reference of the op (ONNX Conv on NHWC/OHWI, Gemm, MatMul, then
// the CPU tier's epilogue), besides every check the emulator makes and
// every output (and workspace) byte written exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_GPU_EMULATOR_GEMMEMULATION_H
#define TESSEL_TESTS_GPU_EMULATOR_GEMMEMULATION_H

#include "GemmKernel.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace tessel::gpuemu {

using codegen::Activation;
using codegen::BatchDim;
using codegen::ElemType;
using codegen::GemmKernel;
using codegen::GemmProblem;

/// A conv on NHWC: n images of h x w x c, k filters of r x s, square stride,
/// padding and dilation.
GemmProblem conv(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r, int64_t s,
                 int64_t stride, int64_t pad, ElemType type = ElemType::F16, int64_t group = 1,
                 int64_t dilation = 1);
/// A gemm [m, k] x [k, n] (either transposed), alpha and beta 1, no C.
GemmProblem gemm(int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                 ElemType type = ElemType::F16);
/// A matmul of batch dimensions `dims` (outermost first).
GemmProblem matmul(int64_t m, int64_t n, int64_t k, llvm::SmallVector<BatchDim> dims,
                   ElemType type = ElemType::F16);
/// `p` with an addend (bias or C) and a residual of the output's type, and
/// an activation.
GemmProblem withEpilogue(GemmProblem p, bool addend, bool residual, Activation act,
                         float actAlpha = 0, float actBeta = 0);

/// Builds the kernel, emulates it, compares; an empty string on success,
/// else what failed. `relError`: the largest error relative to the largest
/// |reference|.
std::string emulate(const GemmKernel &kernel, double *relError = nullptr);

} // namespace tessel::gpuemu

#endif // TESSEL_TESTS_GPU_EMULATOR_GEMMEMULATION_H
