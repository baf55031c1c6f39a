//===- LowerPrecision.h - the fp16 precision policy, per op -----*- C++ -*-===//
//
// Which precision each graph op runs in when the engine is compiled for fp16,
// written once: --tessel-lower-precision rewrites by it and tessel-compile's
// report prints by it. The policy is documented in Passes.td (LowerPrecision)
// and docs/architecture.md ("Precision policy").
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOWERPRECISION_H
#define TESSEL_PASSES_LOWERPRECISION_H

#include "mlir/IR/Operation.h"

#include <string>

namespace tessel {

enum class PrecisionClass {
  /// conv, conv_transpose, gemm, matmul: f16 operands and result, f32
  /// accumulation and epilogue (Tensor Core math).
  TensorCore,
  /// Arithmetic whose relative error passes through unamplified (add, mul,
  /// sigmoid, avg_pool, ...): f16 tensors, computed in f32 inside the kernel.
  F16,
  /// Numerically sensitive (softmax, norms, sums, exp, log, pow, ...): f32
  /// operands and result.
  F32,
  /// Exact in any float type (data movement, selection, comparison: reshape,
  /// max_pool, relu, argmax, ...): runs in the type its operands arrive in.
  Exact,
};

/// The class of `op` under the fp16 policy. Ops the policy does not name
/// (other dialects, ops added later) are F32: never lowered by accident.
PrecisionClass precisionClass(mlir::Operation *op);

/// The precision `op` runs in, as the compile report prints it:
/// "f16 (f32 accumulate)" for a Tensor Core op on f16, "f16", "f32", "i64"
/// for shape arithmetic, "f32->f16" for a cast.
std::string describePrecision(mlir::Operation *op);

} // namespace tessel

#endif // TESSEL_PASSES_LOWERPRECISION_H
