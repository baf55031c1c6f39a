//===- StepEncoding.h - a tessel op as an engine step -----------*- C++ -*-===//
//
// How an op of the graph dialect is encoded as an engine step, the one
// mapping every stage uses: its element types as engine dtypes, constants as
// dense row-major bytes (as the runtime's kernels and the engine's constants
// blob hold them), its operands at their engine positions and its attributes
// as the engine stores them (enums as their names). The engine writer writes
// steps with it, the constant folder runs the CPU kernels through it, and the
// kernel planners read steps through it, so that every stage sees an op as
// the runtime's kernels will.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECTS_STEPENCODING_H
#define TESSEL_DIALECTS_STEPENCODING_H

#include "tessel/cpu_kernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
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
/// bools as Int, floats as Float, i64 arrays as Ints, strings and the
/// dialect's enums (activation, layout) as String.
/// Fails (emitting at the op) on an attribute the engine cannot hold.
using EngineAttrs = std::vector<std::pair<std::string, cpu::AttrValue>>;
mlir::FailureOr<EngineAttrs> engineAttrs(mlir::Operation *op);

/// One attribute of `op` as the engine encodes it (its ODS default if the op
/// was built without it); nothing if the op has no such attribute or the
/// engine cannot hold it.
std::optional<cpu::AttrValue> engineAttr(mlir::Operation *op, llvm::StringRef name);

} // namespace tessel

#endif // TESSEL_DIALECTS_STEPENCODING_H
