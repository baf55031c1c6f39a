//===- TensorData.h - tensor bytes in and out of MLIR attributes -*- C++ -*-===//
//
// The bridge between MLIR's constant attributes and dense row-major bytes, as
// the runtime's kernels and the engine's constants blob hold them. Used by the
// constant folder and the engine writer.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_TENSORDATA_H
#define TESSEL_PASSES_TENSORDATA_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "cpu/kernels.h"

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel {

/// The engine/runtime DType value (schema order) of an MLIR element type, or
/// nothing if the engine cannot hold it.
std::optional<int8_t> engineDType(mlir::Type elementType);

/// Bytes per element of an element type the engine can hold (i1 is 1 byte).
size_t elementBytes(mlir::Type elementType);

/// Dense row-major bytes of a constant, splats expanded, i1 one byte each.
std::vector<uint8_t> elementsToBytes(mlir::ElementsAttr attr);

/// The inverse: an attribute of `type` holding `bytes`.
mlir::DenseElementsAttr bytesToElements(mlir::RankedTensorType type,
                                        const std::vector<uint8_t> &bytes);

/// An op's operands at their engine positions: ops with several optional
/// operands (conv's bias and residual) keep fixed positions, an absent one is
/// a null Value (a step input of -1), so a kernel can tell them apart.
llvm::SmallVector<mlir::Value> engineOperands(mlir::Operation *op);

/// An op's attributes as the engine encodes them, sorted by name: integers and
/// bools as Int, floats as Float, i64 arrays as Ints, strings as String.
/// Fails (emitting at the op) on an attribute the engine cannot hold.
using EngineAttrs = std::vector<std::pair<std::string, cpu::AttrValue>>;
mlir::FailureOr<EngineAttrs> engineAttrs(mlir::Operation *op);

} // namespace tessel

#endif // TESSEL_PASSES_TENSORDATA_H
