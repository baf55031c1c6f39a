//===- Common.h - what the pieces of the GEMM codegen share ----*- C++ -*-===//
//
// Internal to codegen/gemm/ (namespace gemm, not included by GemmKernel.h):
// the warp size, the block size of the per-element kernels, integer
// rounding, and the extent of each kernel parameter.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_GEMM_COMMON_H
#define TESSEL_CODEGEN_GEMM_COMMON_H

#include "gemm/Problem.h"

#include <cstdint>

namespace tessel::codegen::gemm {

constexpr int64_t kWarpSize = 32;
/// Threads of a warpgroup, the unit a wgmma runs on (tc-sm90).
constexpr int64_t kWarpgroupSize = 128;
/// Threads per block of the direct conv and of the split-K reduction.
constexpr int64_t kElementwiseThreads = 256;
/// The epilogue's residual runs a thread reads before their stores, at
/// most (Epilogue::storeStaged): one memory round trip a group. The tile
/// choice prices those round trips (Tiling.cpp).
constexpr int64_t kResidualGroup = 8;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Elements of a kernel parameter ("a", "b", "addend", "residual", "out"):
/// the extent the kernel may address in it.
int64_t operandElements(const GemmProblem &p, llvm::StringRef param);

} // namespace tessel::codegen::gemm

#endif // TESSEL_CODEGEN_GEMM_COMMON_H
