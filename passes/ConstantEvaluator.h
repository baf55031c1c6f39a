//===- ConstantEvaluator.h - ops on constants, by CPU kernels ---*- C++ -*-===//
//
// The compiler's one constant evaluator. An op whose operands are all
// `tessel.constant`s is evaluated by running the runtime's CPU kernel for it,
// so that compile time and run time share one definition of each op's
// semantics (integer division by zero, wrapping arithmetic, index checks).
// --tessel-fold-constants folds with it; the ONNX importer evaluates small
// integer (shape) arithmetic with it as it imports, so that a later node can
// take the result as an attribute (Reshape's shape, Slice's starts).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_CONSTANTEVALUATOR_H
#define TESSEL_PASSES_CONSTANTEVALUATOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace tessel {

/// The values of `op`'s results (one per result, of the result's type),
/// computed by the runtime's CPU kernel for the op. Nothing when the op has
/// no results or no kernel, an operand is not a `tessel.constant`, an operand
/// or result type has no engine dtype, or the kernel rejects its inputs (an
/// out-of-range gather index, ...): such an op is left for the engine, where
/// the same error surfaces at run time, at the op's location. An attribute
/// the engine cannot encode is reported at the op (as engineAttrs does) and
/// gives nothing too. Neither `op` nor its operands are changed: replacing
/// the op is the caller's choice.
std::optional<llvm::SmallVector<mlir::DenseElementsAttr>>
evaluateConstantOp(mlir::Operation *op);

} // namespace tessel

#endif // TESSEL_PASSES_CONSTANTEVALUATOR_H
