//===- DataMovementOps.cpp - ONNX data movement and indexing ops ----------===//
//
// Ops that move, select or rearrange elements without arithmetic: Identity
// and inference Dropout, the reshapes (Reshape, Flatten, Squeeze, Unsqueeze),
// Transpose, Concat, Split, Slice, Pad, Gather, GatherElements, GatherND,
// ScatterND, Trilu, Expand, Tile, DepthToSpace/SpaceToDepth, and OneHot. Shape-like operands
// (Reshape's shape, Slice's starts, ...) must be compile-time constants:
// the tessel ops take them as attributes.
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "tessel/resize.h"
#include "OpTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;

namespace tessel::importer {
namespace {

LogicalResult importIdentity(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  return n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
}

/// Dropout at inference: the identity, and a mask of all true (nothing is
/// dropped; before Dropout-10 the mask has the input's type, all ones). From
/// opset 12 an optional constant training_mode input must be false, or the
/// ratio 0.
template <bool trainingModeInput> LogicalResult importDropout(Node &n) {
  if (n.wants(1)) {
    FailureOr<Value> x = n.input(0);
    if (failed(x))
      return failure();
    Type element = n.graph.opset < 10 ? elementOf(*x) : Type(n.b.getI1Type());
    auto maskType = RankedTensorType::get(shapeOf(*x), element);
    DenseElementsAttr ones =
        isa<FloatType>(element)
            ? DenseElementsAttr::get(maskType, n.b.getFloatAttr(element, 1.0))
            : DenseElementsAttr::get(maskType, n.b.getIntegerAttr(element, 1));
    if (failed(n.setConstantOutput(1, ones)))
      return failure();
  }
  if (trainingModeInput && n.has(2)) {
    FailureOr<double> training = n.constantScalar(2, "training_mode");
    if (failed(training))
      return failure();
    // Training with ratio 0 drops nothing either (what F.dropout(p=0) in
    // training mode exports, as swin_t's attention does).
    std::optional<double> ratio;
    if (*training != 0 && n.has(1)) {
      FailureOr<double> r = n.constantScalar(1, "ratio");
      if (failed(r))
        return failure();
      ratio = *r;
    }
    if (*training != 0 && ratio != 0.0)
      return n.unsupported("training_mode=true with a ratio other than 0",
                           "export the model in eval mode");
  }
  return importIdentity(n);
}

LogicalResult importFlatten(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 1);
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(*x);
  int64_t rank = shape.size();
  if (*axisAttr < -rank || *axisAttr > rank)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(rank));
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  return n.setOutput(0, n.reshape(*x, {product(shape.take_front(axis)),
                                       product(shape.drop_front(axis))}));
}

/// Reshape: the shape is a constant operand (0 copies the input's dim unless
/// allowzero, -1 is inferred), or else what ONNX shape inference found for
/// the output.
LogicalResult importReshape(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> allowZero = n.getInt("allowzero", 0);
  if (failed(x) || failed(allowZero))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  std::optional<DenseElementsAttr> target = n.tryConstant(1);
  if (!target) {
    if (std::optional<RankedTensorType> inferred = n.inferredOutputType(0))
      if (inferred->getNumElements() == product(in))
        return n.setOutput(0, n.reshape(*x, inferred->getShape()));
    return n.requireConstant(1, "shape");
  }
  std::optional<SmallVector<int64_t>> dims = integerValues(*target);
  if (!dims)
    return n.invalid("shape must be an int64 tensor");
  if (failed(n.checkSizes(*dims, "shape")))
    return failure();
  SmallVector<int64_t> shape;
  std::optional<size_t> inferredDim;
  for (auto [i, d] : llvm::enumerate(*dims)) {
    if (d == 0 && !*allowZero) {
      if (i >= in.size())
        return n.invalid("shape " + shapeText(*dims) + " copies dim " +
                         Twine(i) + " of the rank-" + Twine(in.size()) +
                         " input");
      d = in[i];
    } else if (d == -1) {
      if (inferredDim)
        return n.invalid("shape " + shapeText(*dims) + " has more than one -1");
      inferredDim = i;
      d = 1;
    } else if (d < -1) {
      return n.invalid("shape " + shapeText(*dims) + " has a negative dim");
    }
    shape.push_back(d);
  }
  if (!isSupportedShape(shape))
    return n.invalid("shape " + shapeText(*dims) + " is too large");
  int64_t known = product(shape), total = product(in);
  if (inferredDim) {
    if (known == 0 || total % known != 0)
      return n.invalid("cannot reshape " + shapeText(in) + " to " +
                       shapeText(*dims));
    shape[*inferredDim] = total / known;
  } else if (known != total) {
    return n.invalid("cannot reshape " + shapeText(in) + " to " +
                     shapeText(*dims));
  }
  return n.setOutput(0, n.reshape(*x, shape));
}

/// Squeeze and Unsqueeze take axes as an attribute before opset 13 and as a
/// constant input from it on.
template <OperandsFrom axesFrom> LogicalResult importSqueeze(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes =
      optionalInts(n, axesFrom, 1, "axes");
  if (failed(x) || failed(axes))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  SmallVector<int64_t> drop;
  if (*axes) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(n, **axes, in.size());
    if (failed(normalized))
      return failure();
    drop = *normalized;
    for (int64_t a : drop)
      if (in[a] != 1)
        return n.invalid("cannot squeeze dim " + Twine(a) + " of " +
                         shapeText(in) + ": its extent is not 1");
  } else {
    for (auto [d, size] : llvm::enumerate(in))
      if (size == 1)
        drop.push_back(d);
  }
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(in))
    if (!llvm::is_contained(drop, static_cast<int64_t>(d)))
      shape.push_back(size);
  return n.setOutput(0, n.reshape(*x, shape));
}

template <OperandsFrom axesFrom> LogicalResult importUnsqueeze(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> axes =
      optionalInts(n, axesFrom, 1, "axes");
  if (failed(x) || failed(axes))
    return failure();
  if (!*axes)
    return n.invalid("axes are required");
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size() + (*axes)->size();
  FailureOr<SmallVector<int64_t>> inserted = normalizeAxes(n, **axes, rank);
  if (failed(inserted))
    return failure();
  if (inserted->size() != (*axes)->size())
    return n.invalid("axes " + shapeText(**axes) + " repeat an axis");
  SmallVector<int64_t> shape;
  const int64_t *next = in.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*inserted, d) ? 1 : *next++);
  return n.setOutput(0, n.reshape(*x, shape));
}

LogicalResult importTranspose(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<SmallVector<int64_t>>> permAttr = n.getInts("perm");
  if (failed(x) || failed(permAttr))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size();
  SmallVector<int64_t> perm =
      *permAttr ? **permAttr
                : llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (sorted != llvm::to_vector(llvm::seq<int64_t>(0, rank)))
    return n.invalid("perm " + shapeText(perm) + " is not a permutation of " +
                     Twine(rank) + " dims");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in[p]);
  return n.setOutput(0, n.create<TransposeOp>(
                            RankedTensorType::get(shape, elementOf(*x)), *x,
                            {n.named("perm", n.b.getDenseI64ArrayAttr(perm))}));
}

LogicalResult importConcat(Node &n) {
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(axisAttr))
    return failure();
  if (!n.attr("axis"))
    return n.invalid("attribute 'axis' is required");
  SmallVector<Value> inputs;
  for (int i = 0; i < n.numInputs(); ++i) {
    if (!n.has(i))
      continue;
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty())
    return n.invalid("needs at least one input");
  SmallVector<int64_t> shape(shapeOf(inputs[0]));
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, shape.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(shape.size()));
  shape[*axis] = 0;
  for (Value v : inputs) {
    ArrayRef<int64_t> s = shapeOf(v);
    bool matches =
        s.size() == shape.size() && elementOf(v) == elementOf(inputs[0]);
    for (size_t d = 0; matches && d < s.size(); ++d)
      matches = static_cast<int64_t>(d) == *axis || s[d] == shape[d];
    if (!matches)
      return n.invalid("input " + shapeText(s) + " does not match " +
                       shapeText(shapeOf(inputs[0])) + " off axis " +
                       Twine(*axis));
    shape[*axis] += s[*axis];
  }
  return n.setOutput(
      0, n.create<ConcatOp>(RankedTensorType::get(shape, elementOf(inputs[0])),
                            inputs,
                            {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

/// Split: the sizes are an attribute before opset 13, an optional constant
/// input from it on; absent, the parts are equal, or from opset 18
/// (num_outputs) ceil(dim / parts) each with a smaller last one.
template <OperandsFrom splitFrom, bool numOutputs = false> LogicalResult importSplit(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(x) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, in.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(in.size()));
  int64_t parts = n.numOutputs();
  SmallVector<int64_t> sizes;
  FailureOr<std::optional<SmallVector<int64_t>>> split =
      optionalInts(n, splitFrom, 1, "split");
  if (failed(split))
    return failure();
  if (*split)
    sizes = **split;
  if (numOutputs && n.attr("num_outputs")) {
    FailureOr<int64_t> count = n.getInt("num_outputs", 0);
    if (failed(count))
      return failure();
    if (*split)
      return n.invalid("both the split input and num_outputs are given");
    if (*count != parts)
      return n.invalid("num_outputs " + Twine(*count) + " differs from the " + Twine(parts) +
                       " outputs");
    if (parts < 1 || in[*axis] < parts)
      return n.invalid("dim " + Twine(*axis) + " of " + shapeText(in) + " is smaller than " +
                       "num_outputs " + Twine(parts));
    const int64_t chunk = (in[*axis] + parts - 1) / parts;
    for (int64_t i = 0, left = in[*axis]; i < parts; ++i, left -= chunk)
      sizes.push_back(std::max<int64_t>(std::min(chunk, left), 0));
  }
  if (sizes.empty()) {
    if (parts < 1 || in[*axis] % parts != 0)
      return n.invalid("dim " + Twine(*axis) + " of " + shapeText(in) +
                       " does not split into " + Twine(parts) + " equal parts");
    sizes.assign(parts, in[*axis] / parts);
  }
  if (failed(n.checkSizes(sizes, "split")))
    return failure();
  if (static_cast<int64_t>(sizes.size()) != parts ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != in[*axis])
    return n.invalid("split " + shapeText(sizes) + " does not divide dim " +
                     Twine(*axis) + " of " + shapeText(in) + " into " +
                     Twine(parts) + " outputs");
  SmallVector<int64_t> starts(in.size(), 0), steps(in.size(), 1), shape(in);
  for (int64_t i = 0; i < parts; ++i) {
    shape[*axis] = sizes[i];
    if (n.wants(i) &&
        failed(n.setOutput(i, createSlice(n, *x, starts, steps, shape))))
      return failure();
    starts[*axis] += sizes[i];
  }
  return success();
}

/// Slice: starts, ends and axes are attributes before opset 10; from it on
/// they, and steps, are constant inputs.
template <OperandsFrom boundsFrom> LogicalResult importSlice(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  int64_t rank = in.size();
  SmallVector<int64_t> starts, ends, axes, steps;
  if constexpr (boundsFrom == OperandsFrom::Attributes) {
    FailureOr<std::optional<SmallVector<int64_t>>> s = n.getInts("starts"),
                                                   e = n.getInts("ends"),
                                                   a = n.getInts("axes");
    if (failed(s) || failed(e) || failed(a))
      return failure();
    if (!*s || !*e)
      return n.invalid("attributes 'starts' and 'ends' are required");
    starts = **s;
    ends = **e;
    if (*a)
      axes = **a;
  } else {
    FailureOr<SmallVector<int64_t>> s = n.constantInts(1, "starts");
    if (failed(s))
      return failure();
    FailureOr<SmallVector<int64_t>> e = n.constantInts(2, "ends");
    if (failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (n.has(3)) {
      FailureOr<SmallVector<int64_t>> a = n.constantInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (n.has(4)) {
      FailureOr<SmallVector<int64_t>> st = n.constantInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts.size()));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return n.invalid("starts, ends, axes and steps must have the same length");

  SmallVector<int64_t> fullStarts(rank, 0), fullSteps(rank, 1), shape(in);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis || seen[*axis])
      return n.invalid("axes " + shapeText(axes) +
                       " are out of range or repeat");
    seen[*axis] = true;
    // Any step longer than the dim takes one element; clamping it keeps the
    // arithmetic below in range.
    int64_t dim = in[*axis];
    int64_t step =
        std::clamp<int64_t>(steps[i], -kMaxExtent - 1, kMaxExtent + 1);
    if (step == 0)
      return n.invalid("steps must be non-zero");
    // ONNX clamping: negative values count from the end; then starts and
    // ends are clamped to [0, dim] (step > 0) or [0, dim-1] / [-1, dim-1].
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t extent;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      extent = end > start ? ceilDiv(end - start, step) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      extent = start > end ? ceilDiv(start - end, -step) : 0;
    }
    fullStarts[*axis] = extent > 0 ? start : 0;
    fullSteps[*axis] = step;
    shape[*axis] = extent;
  }
  return n.setOutput(0, createSlice(n, *x, fullStarts, fullSteps, shape));
}

/// Pad: pads and the constant value are attributes before opset 11,
/// constant inputs from it on; from opset 18 an optional constant axes input
/// says which dims the pads are for (the others are not padded).
template <OperandsFrom padsFrom, bool axesInput = false> LogicalResult importPad(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::string> mode = n.getString("mode", "constant");
  if (failed(x) || failed(mode))
    return failure();
  SmallVector<int64_t> pads;
  double value = 0;
  if constexpr (padsFrom == OperandsFrom::Attributes) {
    FailureOr<std::optional<SmallVector<int64_t>>> p = n.getInts("pads");
    FailureOr<float> v = n.getFloat("value", 0.0f);
    if (failed(p) || failed(v))
      return failure();
    if (!*p)
      return n.invalid("attribute 'pads' is required");
    pads = **p;
    value = *v;
  } else {
    FailureOr<SmallVector<int64_t>> p = n.constantInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (n.has(2)) {
      FailureOr<double> v = n.constantScalar(2, "constant_value");
      if (failed(v))
        return failure();
      value = *v;
    }
  }
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge")
    return n.unsupported("mode '" + *mode + "'", "constant, reflect or edge");
  if (failed(n.checkSizes(pads, "pads")))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  size_t rank = in.size();
  if (axesInput && n.has(3)) {
    FailureOr<SmallVector<int64_t>> axesValues = n.constantInts(3, "axes");
    if (failed(axesValues))
      return failure();
    FailureOr<SmallVector<int64_t>> axes = normalizeAxes(n, *axesValues, rank);
    if (failed(axes))
      return failure();
    if (pads.size() != 2 * axes->size())
      return n.invalid("pads " + shapeText(pads) + " need " + Twine(2 * axes->size()) +
                       " values for " + Twine(axes->size()) + " axes");
    SmallVector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes->size(); ++i) {
      full[(*axes)[i]] = pads[i];
      full[(*axes)[i] + rank] = pads[i + axes->size()];
    }
    pads = std::move(full);
  }
  if (pads.size() != 2 * rank)
    return n.invalid("pads " + shapeText(pads) + " need " + Twine(2 * rank) +
                     " values for rank " + Twine(rank));
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t extent = in[d] + pads[d] + pads[d + rank];
    if (extent < 0)
      return n.invalid("pads " + shapeText(pads) + " remove more than dim " +
                       Twine(d) + " of " + shapeText(in) + " holds");
    shape.push_back(extent);
  }
  return n.setOutput(
      0, n.create<PadOp>(RankedTensorType::get(shape, elementOf(*x)), *x,
                         {n.named("pads", n.b.getDenseI64ArrayAttr(pads)),
                          n.named("mode", n.b.getStringAttr(*mode)),
                          n.named("value", n.b.getF64FloatAttr(value))}));
}

LogicalResult importGather(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(data) || failed(indices) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> ds = shapeOf(*data);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, ds.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(ds.size()));
  SmallVector<int64_t> shape(ds.take_front(*axis));
  llvm::append_range(shape, shapeOf(*indices));
  llvm::append_range(shape, ds.drop_front(*axis + 1));
  return n.setOutput(
      0, n.create<GatherOp>(RankedTensorType::get(shape, elementOf(*data)),
                            {*data, *indices},
                            {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

LogicalResult importGatherElements(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  if (failed(data) || failed(indices) || failed(axisAttr))
    return failure();
  ArrayRef<int64_t> ds = shapeOf(*data), is = shapeOf(*indices);
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, ds.size());
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " +
                     Twine(ds.size()));
  if (is.size() != ds.size())
    return n.invalid("indices " + shapeText(is) + " must have the rank of data " +
                     shapeText(ds));
  for (size_t d = 0; d < ds.size(); ++d)
    if (static_cast<int64_t>(d) != *axis && is[d] > ds[d])
      return n.invalid("indices " + shapeText(is) + " extend dim " + Twine(d) +
                       " past data " + shapeText(ds));
  return n.setOutput(
      0, n.create<GatherElementsOp>(RankedTensorType::get(is, elementOf(*data)),
                                    {*data, *indices},
                                    {n.named("axis", n.b.getI64IntegerAttr(*axis))}));
}

LogicalResult importGatherND(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  FailureOr<int64_t> batchDims = n.getInt("batch_dims", 0);
  if (failed(data) || failed(indices) || failed(batchDims))
    return failure();
  if (!elementOf(*indices).isInteger(64))
    return n.invalid("indices must be int64, not " + typeText(elementOf(*indices)));
  std::string why;
  FailureOr<SmallVector<int64_t>> shape =
      GatherNDOp::resultShape(shapeOf(*data), shapeOf(*indices), *batchDims, why);
  if (failed(shape))
    return n.invalid("data " + shapeText(shapeOf(*data)) + ", indices " +
                     shapeText(shapeOf(*indices)) + ": " + why);
  return n.setOutput(
      0, n.create<GatherNDOp>(RankedTensorType::get(*shape, elementOf(*data)), {*data, *indices},
                              {n.named("batch_dims", n.b.getI64IntegerAttr(*batchDims))}));
}

/// What ScatterND and ScatterElements check alike: the reduction attribute
/// (none, add, mul from opset 16; max and min from opset 18), updates of the
/// data's type, no reduction on bool.
LogicalResult checkScatter(Node &n, Value data, Value updates, const std::string &reduction) {
  const bool known = reduction == "none" || reduction == "add" || reduction == "mul" ||
                     (n.graph.opset >= 18 && (reduction == "max" || reduction == "min"));
  if (!known)
    return n.invalid("reduction '" + reduction + "' is not one of " + n.opType() + "-" +
                     Twine(n.graph.opset >= 18 ? 18 : 16) + "'s");
  if (elementOf(updates) != elementOf(data))
    return n.invalid("updates of type " + typeText(elementOf(updates)) +
                     " differ from data of type " + typeText(elementOf(data)));
  if (reduction != "none" && elementOf(data).isInteger(1))
    return n.invalid("reduction '" + reduction + "' on bool data");
  return success();
}

/// ScatterND: the reduction attribute from opset 16 (none, add, mul), max
/// and min from opset 18.
LogicalResult importScatterND(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1), updates = n.input(2);
  FailureOr<std::string> reduction = n.getString("reduction", "none");
  if (failed(data) || failed(indices) || failed(updates) || failed(reduction))
    return failure();
  if (failed(checkScatter(n, *data, *updates, *reduction)))
    return failure();
  if (!elementOf(*indices).isInteger(64))
    return n.invalid("indices must be int64, not " + typeText(elementOf(*indices)));
  std::string why;
  FailureOr<SmallVector<int64_t>> shape =
      ScatterNDOp::updatesShape(shapeOf(*data), shapeOf(*indices), why);
  if (failed(shape))
    return n.invalid("data " + shapeText(shapeOf(*data)) + ", indices " +
                     shapeText(shapeOf(*indices)) + ": " + why);
  if (ArrayRef<int64_t>(*shape) != shapeOf(*updates))
    return n.invalid("updates " + shapeText(shapeOf(*updates)) + " must have shape " +
                     shapeText(*shape) + " (indices.shape[:-1] + data.shape[k:])");
  return n.setOutput(0, n.create<ScatterNDOp>(data->getType(), {*data, *indices, *updates},
                                              {n.named("reduction", n.b.getStringAttr(*reduction))}));
}

/// ScatterElements (and Scatter-9/10, its earlier name): ScatterND over the
/// full coordinates of each index: along `axis` the index itself, along
/// every other dim the element's own position (an iota expanded to the
/// indices' shape), so that updates[p] goes to data[p with p[axis] replaced
/// by indices[p]], with the same reductions. Negative indices count from
/// the end of the axis, as ScatterND's do.
LogicalResult importScatterElements(Node &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1), updates = n.input(2);
  FailureOr<int64_t> axisAttr = n.getInt("axis", 0);
  FailureOr<std::string> reduction = n.getString("reduction", "none");
  if (failed(data) || failed(indices) || failed(updates) || failed(axisAttr) ||
      failed(reduction))
    return failure();
  if (failed(checkScatter(n, *data, *updates, *reduction)))
    return failure();
  Type i64 = n.b.getI64Type();
  if (!elementOf(*indices).isInteger(64) && !elementOf(*indices).isInteger(32))
    return n.invalid("indices must be int32 or int64, not " + typeText(elementOf(*indices)));
  ArrayRef<int64_t> ds = shapeOf(*data), is = shapeOf(*indices);
  const int64_t rank = ds.size();
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, rank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(rank));
  if (static_cast<int64_t>(is.size()) != rank || shapeOf(*updates) != is)
    return n.invalid("indices " + shapeText(is) + " and updates " +
                     shapeText(shapeOf(*updates)) + " must have one shape, of data's rank " +
                     Twine(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && is[d] > ds[d])
      return n.invalid("indices " + shapeText(is) + " exceed data " + shapeText(ds) +
                       " in dim " + Twine(d));
  Value index = *indices;
  if (elementOf(index) != i64)
    index = n.create<CastOp>(RankedTensorType::get(is, i64), index);
  SmallVector<int64_t> column(is);
  column.push_back(1);
  SmallVector<Value> coordinates;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == *axis) {
      coordinates.push_back(n.reshape(index, column));
      continue;
    }
    SmallVector<int64_t> line(rank + 1, 1);
    line[d] = is[d];
    SmallVector<int64_t> iota = llvm::to_vector(llvm::seq<int64_t>(0, is[d]));
    Value positions = n.constantValue(integerAttr(RankedTensorType::get(line, i64), iota));
    coordinates.push_back(n.create<ExpandOp>(RankedTensorType::get(column, i64), positions));
  }
  SmallVector<int64_t> tuples(is);
  tuples.push_back(rank);
  Value coords = n.create<ConcatOp>(RankedTensorType::get(tuples, i64), coordinates,
                                    {n.named("axis", n.b.getI64IntegerAttr(rank))});
  return n.setOutput(0, n.create<ScatterNDOp>(data->getType(), {*data, coords, *updates},
                                              {n.named("reduction", n.b.getStringAttr(*reduction))}));
}

LogicalResult importTrilu(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> upper = n.getInt("upper", 1);
  if (failed(x) || failed(upper))
    return failure();
  if (shapeOf(*x).size() < 2)
    return n.invalid("input " + shapeText(shapeOf(*x)) + " must have rank 2 or more");
  if (*upper != 0 && *upper != 1)
    return n.invalid("upper must be 0 or 1, not " + Twine(*upper));
  int64_t k = 0;
  if (n.has(1)) {
    FailureOr<SmallVector<int64_t>> values = n.constantInts(1, "k");
    if (failed(values))
      return failure();
    if (values->size() != 1)
      return n.invalid("k must be a single value, not " + Twine(values->size()));
    k = values->front();
  }
  return n.setOutput(0, n.create<TriluOp>((*x).getType(), {*x},
                                          {n.named("k", n.b.getI64IntegerAttr(k)),
                                           n.named("upper", n.b.getBoolAttr(*upper))}));
}

/// Expand and Tile: the result shape comes from a constant operand, or else
/// from ONNX shape inference.
LogicalResult importExpand(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  std::optional<SmallVector<int64_t>> shape;
  if (std::optional<DenseElementsAttr> target = n.tryConstant(1)) {
    std::optional<SmallVector<int64_t>> dims = integerValues(*target);
    if (!dims)
      return n.invalid("shape must be an int64 tensor");
    if (failed(n.checkSizes(*dims, "shape")))
      return failure();
    shape = broadcastShapes(shapeOf(*x), *dims);
    if (!shape)
      return n.invalid("input " + shapeText(shapeOf(*x)) +
                       " does not broadcast to " + shapeText(*dims));
  } else if (std::optional<RankedTensorType> inferred =
                 n.inferredOutputType(0)) {
    shape = SmallVector<int64_t>(inferred->getShape());
  } else {
    return n.requireConstant(1, "shape");
  }
  return n.setOutput(
      0, n.create<ExpandOp>(RankedTensorType::get(*shape, elementOf(*x)), *x));
}

LogicalResult importTile(Node &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = shapeOf(*x);
  SmallVector<int64_t> shape;
  if (std::optional<DenseElementsAttr> target = n.tryConstant(1)) {
    std::optional<SmallVector<int64_t>> repeats = integerValues(*target);
    if (!repeats || repeats->size() != in.size() ||
        llvm::any_of(*repeats, [](int64_t r) { return r < 0; }))
      return n.invalid("repeats must be " + Twine(in.size()) +
                       " non-negative integers");
    if (failed(n.checkSizes(*repeats, "repeats")))
      return failure();
    for (auto [d, r] : llvm::zip(in, *repeats))
      shape.push_back(d * r);
  } else if (std::optional<RankedTensorType> inferred =
                 n.inferredOutputType(0)) {
    shape.assign(inferred->getShape().begin(), inferred->getShape().end());
  } else {
    return n.requireConstant(1, "repeats");
  }
  return n.setOutput(
      0, n.create<TileOp>(RankedTensorType::get(shape, elementOf(*x)), *x));
}

/// DepthToSpace and SpaceToDepth: reshape, transpose, reshape.
LogicalResult importDepthSpace(Node &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<int64_t> blocksize = n.getInt("blocksize", 0);
  FailureOr<std::string> mode = n.getString("mode", "DCR");
  if (failed(x) || failed(blocksize) || failed(mode))
    return failure();
  ArrayRef<int64_t> s = shapeOf(*x);
  int64_t bs = *blocksize;
  if (s.size() != 4 || bs < 1 || bs > kMaxExtent)
    return n.invalid("needs a 4-D input and a blocksize in [1, " +
                     Twine(kMaxExtent) + "]");
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  SmallVector<int64_t> split, perm, result;
  if (n.opType() == "DepthToSpace") {
    if (C % (bs * bs) != 0)
      return n.invalid("channels " + Twine(C) + " are not a multiple of " +
                       Twine(bs * bs));
    int64_t c = C / (bs * bs);
    if (*mode == "DCR") {
      split = {N, bs, bs, c, H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (*mode == "CRD") {
      split = {N, c, bs, bs, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return n.invalid("mode '" + *mode + "' is not DCR or CRD");
    }
    result = {N, c, H * bs, W * bs};
  } else {
    if (H % bs != 0 || W % bs != 0)
      return n.invalid("spatial dims " + shapeText(s) +
                       " are not multiples of the blocksize");
    split = {N, C, H / bs, bs, W / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    result = {N, C * bs * bs, H / bs, W / bs};
  }
  Value reshaped = n.reshape(*x, split);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(split[p]);
  Value transposed = n.create<TransposeOp>(
      RankedTensorType::get(permuted, elementOf(*x)), reshaped,
      {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
  return n.setOutput(0, n.reshape(transposed, result));
}

/// OneHot with a constant depth: the indices (cast to i64, negative ones
/// counting from depth) compared with the positions along the new axis, then
/// where(hit, on, off) with on and off sliced from `values`. Indices outside
/// [-depth, depth) give a row of `off`.
LogicalResult importOneHot(Node &n) {
  FailureOr<Value> indices = n.input(0), values = n.input(2);
  FailureOr<int64_t> axisAttr = n.getInt("axis", -1);
  FailureOr<double> depthValue = n.constantScalar(1, "depth");
  if (failed(indices) || failed(values) || failed(axisAttr) || failed(depthValue))
    return failure();
  if (shapeOf(*values) != ArrayRef<int64_t>{2})
    return n.invalid("values must be [off, on], not " + shapeText(shapeOf(*values)));
  const double depthFloor = std::floor(*depthValue);
  if (!(depthFloor >= 1 && depthFloor <= static_cast<double>(kMaxExtent)))
    return n.invalid("depth " + Twine(static_cast<int64_t>(std::max(depthFloor, -1.0))) +
                     " must be positive");
  const int64_t depth = static_cast<int64_t>(depthFloor);
  ArrayRef<int64_t> is = shapeOf(*indices);
  const int64_t outRank = is.size() + 1;
  std::optional<int64_t> axis = normalizeAxis(*axisAttr, outRank);
  if (!axis)
    return n.invalid("axis " + Twine(*axisAttr) + " is out of range for rank " + Twine(outRank));
  Type i64 = n.b.getI64Type();
  Value index = *indices;
  if (elementOf(index) != i64)
    index = n.create<CastOp>(RankedTensorType::get(is, i64), index);
  Value negative = n.create<LessOp>(RankedTensorType::get(is, n.b.getI1Type()),
                                    {index, n.scalar(i64, 0)});
  Value wrapped = n.create<AddOp>(index.getType(), {index, n.scalar(i64, depth)});
  index = n.create<WhereOp>(index.getType(), {negative, wrapped, index});
  SmallVector<int64_t> unsqueezed(is), positionsShape(outRank, 1), shape(is);
  unsqueezed.insert(unsqueezed.begin() + *axis, 1);
  shape.insert(shape.begin() + *axis, depth);
  positionsShape[*axis] = depth;
  SmallVector<int64_t> positions(depth);
  std::iota(positions.begin(), positions.end(), int64_t(0));
  Value along = n.constantValue(DenseElementsAttr::get(
      RankedTensorType::get(positionsShape, i64), ArrayRef<int64_t>(positions)));
  Value hit = n.create<EqualOp>(RankedTensorType::get(shape, n.b.getI1Type()),
                                {n.reshape(index, unsqueezed), along});
  Type element = elementOf(*values);
  auto valueAt = [&](int64_t i) {
    return n.create<SliceOp>(RankedTensorType::get({1}, element), *values,
                             {n.named("starts", n.b.getDenseI64ArrayAttr({i})),
                              n.named("steps", n.b.getDenseI64ArrayAttr({1}))});
  };
  return n.setOutput(0, n.create<WhereOp>(RankedTensorType::get(shape, element),
                                          {hit, valueAt(1), valueAt(0)}));
}

/// Resize (opsets 10 to 27): the output shape from `sizes` (with
/// keep_aspect_ratio_policy) or from `scales` (floor of input times scale),
/// both constants, over `axes` (opset 18; the other axes keep scale 1); the
/// scale the coordinate transformation divides by is the given one, or
/// result / input where sizes decided it, as in ONNX's reference; `roi` a
/// constant used by tf_crop_and_resize only. Resize-10 takes (X, scales)
/// and means what ONNX's version converter makes of it at 11: asymmetric
/// coordinates, nearest rounding down.
template <bool Resize10> LogicalResult importResize(Node &n) {
  const int scalesInput = Resize10 ? 1 : 2, sizesInput = Resize10 ? -1 : 3;
  FailureOr<Value> x = n.input(0);
  FailureOr<std::string> mode = n.getString("mode", "nearest"),
                         coordinate = n.getString("coordinate_transformation_mode",
                                                  Resize10 ? "asymmetric" : "half_pixel"),
                         nearest = n.getString("nearest_mode",
                                               Resize10 ? "floor" : "round_prefer_floor"),
                         policy = n.getString("keep_aspect_ratio_policy", "stretch");
  FailureOr<float> cubicA = n.getFloat("cubic_coeff_a", -0.75f),
                   extrapolation = n.getFloat("extrapolation_value", 0.0f);
  FailureOr<int64_t> exclude = n.getInt("exclude_outside", 0), antialias = n.getInt("antialias", 0);
  FailureOr<std::optional<SmallVector<int64_t>>> axesAttr = n.getInts("axes");
  if (failed(x) || failed(mode) || failed(coordinate) || failed(nearest) || failed(policy) ||
      failed(cubicA) || failed(extrapolation) || failed(exclude) || failed(antialias) ||
      failed(axesAttr))
    return failure();
  if (*mode != "nearest" && *mode != "linear" && *mode != "cubic")
    return n.invalid("mode '" + *mode + "' is not nearest, linear or cubic");
  static const char *const coordinates[] = {"half_pixel",  "half_pixel_symmetric",
                                            "pytorch_half_pixel", "align_corners",
                                            "asymmetric",  "tf_half_pixel_for_nn",
                                            "tf_crop_and_resize"};
  if (llvm::none_of(coordinates, [&](const char *c) { return *coordinate == c; }))
    return n.invalid("coordinate_transformation_mode '" + *coordinate + "' is unknown");
  if (*nearest != "round_prefer_floor" && *nearest != "round_prefer_ceil" &&
      *nearest != "floor" && *nearest != "ceil")
    return n.invalid("nearest_mode '" + *nearest + "' is unknown");
  ArrayRef<int64_t> in = shapeOf(*x);
  const int64_t rank = in.size();
  // The axes scales and sizes list (all, in order, without `axes`).
  SmallVector<int64_t> axes;
  if (*axesAttr) {
    for (int64_t a : **axesAttr) {
      std::optional<int64_t> axis = normalizeAxis(a, rank);
      if (!axis || llvm::is_contained(axes, *axis))
        return n.invalid("axes must be distinct and in range for rank " + Twine(rank));
      axes.push_back(*axis);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> out(in.begin(), in.end());
  std::optional<DenseElementsAttr> scalesConst, sizesConst;
  if (n.has(scalesInput)) {
    FailureOr<DenseElementsAttr> c = n.constant(scalesInput, "scales");
    if (failed(c))
      return failure();
    if (c->getNumElements() != 0)
      scalesConst = *c;
  }
  if (sizesInput > 0 && n.has(sizesInput)) {
    FailureOr<DenseElementsAttr> c = n.constant(sizesInput, "sizes");
    if (failed(c))
      return failure();
    if (c->getNumElements() != 0)
      sizesConst = *c;
  }
  if (scalesConst.has_value() == sizesConst.has_value())
    return n.invalid("exactly one of scales and sizes must be given");
  // A scaled extent as an int64, one past kMaxExtent (refused below) when it
  // is beyond it or NaN: converting such a double is undefined (a scale of
  // 1e30 or inf).
  auto extent = [](double value) {
    return value >= 0 && value <= static_cast<double>(kMaxExtent) ? static_cast<int64_t>(value)
                                                                  : kMaxExtent + 1;
  };
  if (scalesConst) {
    SmallVector<double> given = doubleValues(*scalesConst);
    if (given.size() != axes.size())
      return n.invalid("scales has " + Twine(given.size()) + " values for " +
                       Twine(axes.size()) + " axes");
    for (auto [i, axis] : llvm::enumerate(axes)) {
      if (!(given[i] > 0))
        return n.invalid("scales must be positive");
      scales[axis] = given[i];
      out[axis] = extent(std::floor(static_cast<double>(in[axis]) * given[i]));
    }
  } else {
    FailureOr<SmallVector<int64_t>> sizes = n.constantInts(sizesInput, "sizes");
    if (failed(sizes))
      return failure();
    if (sizes->size() != axes.size())
      return n.invalid("sizes has " + Twine(sizes->size()) + " values for " +
                       Twine(axes.size()) + " axes");
    if (*policy != "stretch" && *policy != "not_larger" && *policy != "not_smaller")
      return n.invalid("keep_aspect_ratio_policy '" + *policy + "' is unknown");
    // not_larger / not_smaller: one scale for every listed axis, the
    // smallest / largest of sizes / input; the sizes then rounded from it.
    double common = *policy == "not_larger" ? INFINITY : 0.0;
    for (auto [i, axis] : llvm::enumerate(axes)) {
      if ((*sizes)[i] <= 0)
        return n.invalid("sizes must be positive");
      double scale = static_cast<double>((*sizes)[i]) / static_cast<double>(in[axis]);
      common = *policy == "not_larger" ? std::min(common, scale) : std::max(common, scale);
      scales[axis] = scale;
      out[axis] = (*sizes)[i];
    }
    if (*policy != "stretch")
      for (int64_t axis : axes) {
        scales[axis] = common;
        out[axis] = extent(std::nearbyint(common * static_cast<double>(in[axis])));
      }
  }
  if (failed(n.checkSizes(out, "the result shape")) || llvm::is_contained(out, 0))
    return n.invalid("the result shape " + shapeText(out) + " is empty or too large");
  if (*antialias && *mode != "nearest")
    for (double scale : scales)
      if (scale < resize::kMinAntialiasScale)
        return n.unsupported("antialiasing at a scale below 1/16", "a scale of 1/16 or more");
  SmallVector<double> roi;
  if (*coordinate == "tf_crop_and_resize") {
    if (Resize10 || !n.has(1))
      return n.invalid("tf_crop_and_resize needs roi");
    FailureOr<DenseElementsAttr> c = n.constant(1, "roi");
    if (failed(c))
      return failure();
    SmallVector<double> given = doubleValues(*c);
    if (given.size() != 2 * axes.size())
      return n.invalid("roi has " + Twine(given.size()) + " values for " +
                       Twine(axes.size()) + " axes");
    roi.assign(rank, 0.0);
    roi.append(rank, 1.0);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      roi[axis] = given[i];
      roi[rank + axis] = given[axes.size() + i];
    }
  }
  auto type = RankedTensorType::get(out, elementOf(*x));
  return n.setOutput(
      0, n.create<ResizeOp>(
             type, *x,
             {n.named("mode", n.b.getStringAttr(*mode)),
              n.named("coordinate_transformation_mode", n.b.getStringAttr(*coordinate)),
              n.named("nearest_mode", n.b.getStringAttr(*nearest)),
              n.named("cubic_coeff_a", n.b.getF64FloatAttr(*cubicA)),
              n.named("exclude_outside", n.b.getBoolAttr(*exclude != 0)),
              n.named("extrapolation_value", n.b.getF64FloatAttr(*extrapolation)),
              n.named("antialias", n.b.getBoolAttr(*antialias != 0)),
              n.named("scales", n.b.getDenseF64ArrayAttr(scales)),
              n.named("roi", n.b.getDenseF64ArrayAttr(roi))}));
}

const OpVersion kDataMovementOps[] = {
    {"Resize", {10, 10}, importResize</*Resize10=*/true>},
    {"Resize", {11}, importResize</*Resize10=*/false>},
    {"Identity", {1}, importIdentity},
    {"Dropout", {7, 11}, importDropout</*trainingModeInput=*/false>},
    {"Dropout", {12}, importDropout</*trainingModeInput=*/true>},
    {"Flatten", {1}, importFlatten},
    {"Reshape", {5}, importReshape},
    {"Squeeze", {1, 12}, importSqueeze<OperandsFrom::Attributes>},
    {"Squeeze", {13}, importSqueeze<OperandsFrom::Inputs>},
    {"Unsqueeze", {1, 12}, importUnsqueeze<OperandsFrom::Attributes>},
    {"Unsqueeze", {13}, importUnsqueeze<OperandsFrom::Inputs>},
    {"Transpose", {1}, importTranspose},
    {"Concat", {4}, importConcat},
    {"Split", {2, 12}, importSplit<OperandsFrom::Attributes>},
    // Split's and Pad's entries end at 17 by OpTable's revision list; 18
    // added num_outputs and Pad's axes.
    {"Split", {13}, importSplit<OperandsFrom::Inputs>},
    {"Split", {18}, importSplit<OperandsFrom::Inputs, /*numOutputs=*/true>},
    {"Slice", {1, 9}, importSlice<OperandsFrom::Attributes>},
    {"Slice", {10}, importSlice<OperandsFrom::Inputs>},
    {"Pad", {2, 10}, importPad<OperandsFrom::Attributes>},
    {"Pad", {11}, importPad<OperandsFrom::Inputs>},
    {"Pad", {18}, importPad<OperandsFrom::Inputs, /*axesInput=*/true>},
    {"Gather", {1}, importGather},
    {"GatherElements", {11}, importGatherElements},
    // GatherND-12 added batch_dims (default 0: GatherND-11's semantics).
    {"GatherND", {11}, importGatherND},
    // ScatterND-16 added reduction (none, add, mul), -18 max and min.
    {"ScatterND", {11}, importScatterND},
    {"ScatterElements", {11}, importScatterElements},
    {"Scatter", {9}, importScatterElements},
    {"Trilu", {14}, importTrilu},
    {"Expand", {8}, importExpand},
    {"Tile", {6}, importTile},
    {"DepthToSpace", {1}, importDepthSpace},
    {"SpaceToDepth", {1}, importDepthSpace},
    {"OneHot", {9}, importOneHot},
};

} // namespace

void registerDataMovementOps(OpTable &table) { table.add(kDataMovementOps); }

} // namespace tessel::importer
