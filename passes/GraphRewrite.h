//===- GraphRewrite.h - helpers the layout passes share ----------*- C++
//-*-===//
//
// What --tessel-to-nhwc and --tessel-pad-channels both need to know about the
// graph dialect: which values are compile-time constants before
// fold-constants has run, and how to rebuild an op with new operand and result
// types. (Which ops act element by element, each op declares: TesselTraits.h.)
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_GRAPHREWRITE_H
#define TESSEL_PASSES_GRAPHREWRITE_H

#include "TesselDialect.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace tessel {

/// Whether `v` is computed from constants only, by tessel ops that
/// fold-constants will evaluate: the passes before it in the pipeline leave
/// their weight arithmetic (folded batch norms, f16 casts, permuted and padded
/// weights) as such ops.
bool isConstantLike(mlir::Value v);

/// The value of a single-element float constant, if `v` is one.
std::optional<double> scalarConstant(mlir::Value v);
/// The one value of a float constant whose elements are all equal.
std::optional<double> splatConstant(mlir::Value v);

/// `type` with a new shape, same element type.
mlir::RankedTensorType withShape(mlir::Type type,
                                 llvm::ArrayRef<int64_t> shape);

/// `op` rebuilt at the builder's insertion point with new operands, result
/// types and attributes (the op's own when `attrs` is null); the name,
/// location and operand segments are kept.
mlir::Operation *rebuild(mlir::OpBuilder &builder, mlir::Operation *op,
                         mlir::ValueRange operands, mlir::TypeRange results,
                         mlir::DictionaryAttr attrs = {});

} // namespace tessel

#endif // TESSEL_PASSES_GRAPHREWRITE_H
