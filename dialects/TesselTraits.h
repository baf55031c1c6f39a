//===- TesselTraits.h - what each tessel op is, declared once ---*- C++ -*-===//
//
// The facts about an op that passes, the precision policy and the kernel
// planners act on, declared in ODS (TesselOps.td) as traits of each op and
// queried here, instead of lists of op names kept by each user:
//   - ElementwiseUnary: y[i] = f(x[i]), the result has the operand's shape;
//   - ElementwiseBinary: numpy-broadcasting binary ops;
//   - Comparison: a broadcasting binary op with a bool result;
//   - Reduction: reduce_* over `axes` with `keepdims`;
//   - Precision<class>: the precision the op runs in under the fp16 policy
//     (--tessel-lower-precision, docs/architecture.md "Precision policy");
//   - Kernel<family>: which planner gives the op its GPU kernels: the
//     implicit-GEMM codegen (Gemm) or a planner of the CUDA kernel library
//     (codegen/cuda); None: the op runs on the CPU tier only.
// The ops a conv or gemm epilogue can apply declare the interface
// EpilogueActivationOpInterface (TesselOps.td), which says how.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECTS_TESSELTRAITS_H
#define TESSEL_DIALECTS_TESSELTRAITS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

#include <string>
#include <utility>

namespace tessel {

/// A value's shape and element type: every value of the graph dialect is a
/// static ranked tensor.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline mlir::Type elementOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}

/// An op's ONNX node as its location names it, "conv1(Conv)" (fused
/// locations joined by '+'), for messages and the engine's step locations.
std::string locationName(mlir::Location loc);

/// The precision classes of the fp16 policy.
enum class PrecisionClass {
  /// conv, conv_transpose, gemm, matmul: f16 operands and result, f32
  /// accumulation and epilogue (Tensor Core math).
  TensorCore,
  /// Arithmetic whose relative error passes through unamplified (add, mul,
  /// sigmoid, avg_pool, ...): f16 tensors, computed in f32 inside the kernel.
  F16,
  /// Numerically sensitive (norms, sums, exp, log, pow, ...): f32
  /// operands and result.
  F32,
  /// Exact in any float type (data movement, selection, comparison: reshape,
  /// max_pool, relu, argmax, ...): runs in the type its operands arrive in.
  Exact,
  /// Statistics in f32 inside the kernel whatever the storage (layer_norm,
  /// softmax): runs in the type its input arrives in, as Exact does, since
  /// rounding an f32 input to f16 would lose what the kernel keeps.
  InputStorage,
};

/// The GPU kernel families: Gemm is the implicit-GEMM codegen (codegen/);
/// the others name the CUDA kernel library's planners (codegen/cuda).
enum class KernelFamily {
  None,
  Gemm,
  Copy,
  Cast,
  Unary,
  Clip,
  Binary,
  Where,
  Transpose,
  Slice,
  Expand,
  Tile,
  Pad,
  Im2Row,
  Concat,
  Gather,
  Reduce,
  Softmax,
  ArgReduce,
  Pool,
  LayerNorm,
  InstanceNorm,
  BatchNorm,
  Lrn,
  Scan,
  GatherElements,
  GatherND,
  ScatterND,
  Trilu,
  Attention,
  Resize,
  TopK,
  Nms,
  PoolFc,
  ElementwiseGroup,
};

namespace traits {

template <typename ConcreteOp>
class ElementwiseUnary : public mlir::OpTrait::TraitBase<ConcreteOp, ElementwiseUnary> {};

template <typename ConcreteOp>
class ElementwiseBinary : public mlir::OpTrait::TraitBase<ConcreteOp, ElementwiseBinary> {};

template <typename ConcreteOp>
class Comparison : public mlir::OpTrait::TraitBase<ConcreteOp, Comparison> {};

template <typename ConcreteOp>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteOp, Reduction> {};

template <PrecisionClass Class> struct Precision {
  template <typename ConcreteOp>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteOp, Impl> {};
};

template <KernelFamily Family> struct Kernel {
  template <typename ConcreteOp>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteOp, Impl> {};
};

} // namespace traits

bool isElementwiseUnary(mlir::Operation *op);
bool isElementwiseBinary(mlir::Operation *op);
bool isComparison(mlir::Operation *op);
bool isReduction(mlir::Operation *op);

/// The unit attribute that pins an op to the precision the model gave it:
/// the arithmetic of a conversion the model wrote (QuantizeLinear and
/// DequantizeLinear), which --tessel-lower-precision leaves in f32 as it
/// leaves a model's Cast.
constexpr llvm::StringLiteral kModelPrecisionAttr = "tessel.model_precision";

/// The values of integer type `t` as doubles [lo, hi]: [0, 2^w - 1] for
/// unsigned types and i1, [-2^(w-1), 2^(w-1) - 1] for signed and signless
/// ones (ONNX's signed integers).
std::pair<double, double> integerRange(mlir::IntegerType t);

/// The precision class `op` declares; F32 where it carries
/// kModelPrecisionAttr. Ops of other dialects declare none and are F32:
/// never lowered by accident.
PrecisionClass precisionClass(mlir::Operation *op);
/// Whether `name` (a registered op) declares a precision class at all.
bool declaresPrecision(mlir::OperationName name);

/// The kernel family `name` declares; None for ops of other dialects.
KernelFamily kernelFamily(mlir::OperationName name);

} // namespace tessel

#endif // TESSEL_DIALECTS_TESSELTRAITS_H
