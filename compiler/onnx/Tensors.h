//===- Tensors.h - shapes and constant values in the importer ---*- C++ -*-===//
//
// The bounds every imported shape is held to, shape and type text for
// diagnostics, and the conversions between constant attributes and the int64
// or double values that handlers compute with. Shared by every part of the
// importer (TensorProto decoding, the node API, the handlers).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_TENSORS_H
#define TESSEL_COMPILER_ONNX_TENSORS_H

#include "TesselTraits.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tessel::importer {

// Bounds on tensor extents and on size-like attribute values (strides, pads,
// shapes, repeats, ...). Far beyond any real model, they keep the importer's
// shape arithmetic inside int64 whatever a malformed model holds.
constexpr int64_t kMaxExtent = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 48;
// Results up to this many elements that the importer computes are constants
// at import time (shape arithmetic, its masks, small ConstantOfShape fills),
// so that a later node can take them as attributes; the rest is left to
// --tessel-fold-constants, within its own bound.
constexpr int64_t kMaxEvaluatedElements = 4096;

/// "[2,3,4]".
std::string shapeText(llvm::ArrayRef<int64_t> shape);
/// "tensor<2x3xf32>".
std::string typeText(mlir::Type type);

/// Element count of a shape whose extents are within kMaxExtent and whose
/// element count is within kMaxElements (every shape the importer builds).
int64_t product(llvm::ArrayRef<int64_t> dims);

/// Whether `shape` is within kMaxExtent per dim and kMaxElements in all.
bool isSupportedShape(llvm::ArrayRef<int64_t> shape);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `axis` in [-rank, rank) made non-negative; nothing if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The numpy broadcast of two shapes; nothing if they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Integer values of a constant (sign- or zero-extended by signedness);
/// nothing for floats.
std::optional<llvm::SmallVector<int64_t>>
integerValues(mlir::DenseElementsAttr attr);

/// Numeric values of a constant as doubles, whatever its element type.
llvm::SmallVector<double> doubleValues(mlir::DenseElementsAttr attr);

/// A constant of integer `type` from int64 values (truncated to its width).
mlir::DenseElementsAttr integerAttr(mlir::RankedTensorType type,
                                    llvm::ArrayRef<int64_t> values);

/// A constant of `type` from doubles: floats round to the element type,
/// integers (whole values here) are taken as they are.
mlir::DenseElementsAttr numericAttr(mlir::RankedTensorType type,
                                    llvm::ArrayRef<double> values);

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_TENSORS_H
