//===- OpBuilders.h - what the op handler families share --------*- C++ -*-===//
//
// What more than one handler family builds: broadcasting binary ops (the
// elementwise family, LayerNormalization's statistics), reductions (the
// reduce family, global pooling, LayerNormalization), convolution and
// pooling windows with auto_pad resolved, slices, normalized axis lists, and
// int lists that ONNX moved from attributes to inputs.
// Each reports problems at the node and returns failure.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_COMPILER_ONNX_OPBUILDERS_H
#define TESSEL_COMPILER_ONNX_OPBUILDERS_H

#include "Node.h"

#include <type_traits>

namespace tessel::importer {

/// A broadcasting binary op; `lhs` and `rhs` are already imported.
/// Comparisons give i1; Pow alone takes operands of two element types.
template <typename OpT>
mlir::FailureOr<mlir::Value>
createBinary(Node &n, mlir::Value lhs, mlir::Value rhs,
             llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  constexpr bool comparison =
      std::is_same_v<OpT, EqualOp> || std::is_same_v<OpT, LessOp> ||
      std::is_same_v<OpT, LessEqualOp> || std::is_same_v<OpT, GreaterOp> ||
      std::is_same_v<OpT, GreaterEqualOp>;
  if (!std::is_same_v<OpT, PowOp> && elementOf(lhs) != elementOf(rhs))
    return n.invalid(
        "operand element types differ: " + typeText(elementOf(lhs)) + " vs " +
        typeText(elementOf(rhs)));
  std::optional<llvm::SmallVector<int64_t>> shape =
      broadcastShapes(shapeOf(lhs), shapeOf(rhs));
  if (!shape)
    return n.invalid("operand shapes " + shapeText(shapeOf(lhs)) + " and " +
                     shapeText(shapeOf(rhs)) + " do not broadcast");
  mlir::Type element =
      comparison ? mlir::Type(n.b.getI1Type()) : elementOf(lhs);
  return n.create<OpT>(mlir::RankedTensorType::get(*shape, element),
                       {lhs, rhs}, attrs);
}

/// A reduction of `x` over `axes` (sorted, non-negative), to `element`
/// (default: x's element type).
template <typename OpT>
mlir::Value createReduce(Node &n, mlir::Value x, llvm::ArrayRef<int64_t> axes,
                         bool keepdims, mlir::Type element = {}) {
  llvm::SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(shapeOf(x))) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      shape.push_back(size);
    else if (keepdims)
      shape.push_back(1);
  }
  return n.create<OpT>(
      mlir::RankedTensorType::get(shape, element ? element : elementOf(x)), x,
      {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
       n.named("keepdims", n.b.getBoolAttr(keepdims))});
}

/// `v` as `element`: a cast, unless it has that element type already.
inline mlir::Value castTo(Node &n, mlir::Value v, mlir::Type element) {
  if (elementOf(v) == element)
    return v;
  return n.create<CastOp>(mlir::RankedTensorType::get(shapeOf(v), element), v);
}

/// Strides, dilations and explicit pads of a convolution or pooling window
/// (auto_pad resolved), and the output extents.
struct Window {
  llvm::SmallVector<int64_t> strides, dilations, pads, output;
};

/// The window of a Conv or a pooling node over spatial extents `input` with
/// `kernel`, from its strides, dilations, pads and auto_pad attributes.
mlir::FailureOr<Window> resolveWindow(Node &n, llvm::ArrayRef<int64_t> input,
                                      llvm::ArrayRef<int64_t> kernel,
                                      bool ceilMode);

/// Sorted, unique, non-negative axes; fails on an axis out of range.
mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(Node &n, llvm::ArrayRef<int64_t> axes, int64_t rank);

/// Where a node's int lists (axes, split sizes, slice bounds, pads) come
/// from: attributes, or, since ONNX moved them (opset 10 for Slice, 11 for
/// Pad, 13 for Squeeze, Unsqueeze, ReduceSum and Split), constant inputs.
/// The op's table entries pick one each.
enum class OperandsFrom { Attributes, Inputs };

/// The int list `name`: attribute `name`, or constant input `index`; nothing
/// when absent.
mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
optionalInts(Node &n, OperandsFrom from, int index, llvm::StringRef name);

/// `x` sliced from `starts` by `steps` (per dim) to `shape`.
mlir::Value createSlice(Node &n, mlir::Value x, llvm::ArrayRef<int64_t> starts,
                        llvm::ArrayRef<int64_t> steps,
                        llvm::ArrayRef<int64_t> shape);

} // namespace tessel::importer

#endif // TESSEL_COMPILER_ONNX_OPBUILDERS_H
