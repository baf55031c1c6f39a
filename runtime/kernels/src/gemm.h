//===- gemm.h - the packed GEMM and the epilogue conv and gemm share -*- C++ -*-===//
//
// conv, gemm and matmul reduce to one packed GEMM (gemm_tile.cpp) and finish
// each output row with one epilogue (gemm.cpp): act(scale * acc + addends),
// rounded once into the result. C, the compute type, is float (f32 and f16
// tensors) or double (f64 tensors). Internal to tessel_cpu_kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_GEMM_H
#define TESSEL_RUNTIME_CPU_GEMM_H

#include "tessel/cpu_kernels.h"
#include "tessel/elementwise_math.h"

#include <cstdint>

namespace tessel::cpu {

//===----------------------------------------------------------------------===//
// The epilogue (gemm.cpp)
//===----------------------------------------------------------------------===//

// The activation a Tensor Core kernel applies to its accumulators before the
// one store; the same functions as the elementwise ops of the same names.
using Act = elementwise::Activation;

struct Activation {
  Act kind = Act::None;
  double alpha = 0, beta = 0; // clip: min, max; leaky_relu: slope
};

// Reads an activation (`kindName`) and its parameters; absent is "none".
KernelStatus readActivation(const char *op, const Attrs &attrs, const char *kindName,
                            const char *alphaName, const char *betaName, Activation &a);

// An addend of the epilogue: scale * t[offset + j * stride] (stride 0 to
// broadcast one value along the row); absent when t is nullptr.
struct Addend {
  const TensorView *t = nullptr;
  int64_t offset = 0, stride = 1;
  double scale = 1;
};

// The epilogue, on one output row of n accumulators (modified in place):
// out[outOffset + j] = act(scale * v[j] + first + second), rounded once.
template <typename C>
void epilogueRow(C *v, int64_t n, double scale, const Addend &first, const Addend &second,
                 const Activation &act, TensorView &out, int64_t outOffset);

//===----------------------------------------------------------------------===//
// The packed GEMM (gemm_tile.cpp): acc[i, j] = sum_k A(i, k) * B(k, j)
//===----------------------------------------------------------------------===//
//
// A(i, k) = a[i * rsa + k * csa] (any strides: im2col rows, an im2col chunk
// stored k-major, a transposed operand); B is packed in panels of kNR columns,
// element (k, j) at bp[(j / kNR) * K * kNR + k * kNR + j % kNR], zero past
// the last real column. A kMR x kNR tile of accumulators stays in registers
// while k runs over a block of kKC.

constexpr int64_t kMR = 6, kNR = 16, kKC = 256;

// acc[i * ldc + j] = sum_k A(i, k) * B(k, j) for i < m, j < np (np a
// multiple of kNR); an AVX2+FMA build of it is chosen at run time on x86-64.
template <typename C>
void gemmPacked(int64_t m, int64_t k, int64_t np, const C *a, int64_t rsa, int64_t csa,
                const C *bp, C *acc, int64_t ldc);

// Packs B(kk, j) = t[offset + kk * rs + j * cs] (kk < k, j < n, t a float
// tensor) into panels of kNR columns, converted to C; columns
// n..roundUp(n, kNR) are 0.
template <typename C>
void packPanels(const TensorView &t, int64_t offset, int64_t rs, int64_t cs, int64_t k,
                int64_t n, C *bp);

// Rows of a chunk of `total` rows of `rowElements` each: keeps each scratch
// block near 2^18 elements (1 MiB of float, within L2), and at least kMR.
int64_t chunkRows(int64_t total, int64_t rowElements);

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_GEMM_H
