//===- OpBuilders.cpp - building blocks the op handler families share -----===//
#include "OpBuilders.h"

#include <algorithm>

using namespace mlir;

namespace tessel::importer {

FailureOr<Window> resolveWindow(Node &n, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> kernel, bool ceilMode) {
  size_t spatial = input.size();
  Window w;
  auto ints = [&](StringRef name, int64_t dflt,
                  size_t count) -> FailureOr<SmallVector<int64_t>> {
    FailureOr<std::optional<SmallVector<int64_t>>> values = n.getInts(name);
    if (failed(values))
      return failure();
    if (!*values)
      return SmallVector<int64_t>(count, dflt);
    if ((*values)->size() != count)
      return n.invalid("attribute '" + name + "' needs " + Twine(count) +
                       " values for " + Twine(spatial) + " spatial dims");
    return **values;
  };
  FailureOr<SmallVector<int64_t>> strides = ints("strides", 1, spatial);
  FailureOr<SmallVector<int64_t>> dilations = ints("dilations", 1, spatial);
  FailureOr<SmallVector<int64_t>> pads = ints("pads", 0, 2 * spatial);
  FailureOr<std::string> autoPad = n.getString("auto_pad", "NOTSET");
  if (failed(strides) || failed(dilations) || failed(pads) || failed(autoPad))
    return failure();
  if (failed(n.checkSizes(*strides, "strides")) ||
      failed(n.checkSizes(*dilations, "dilations")) ||
      failed(n.checkSizes(*pads, "pads")) ||
      failed(n.checkSizes(kernel, "kernel_shape")))
    return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  w.pads = *pads;
  for (size_t i = 0; i < spatial; ++i) {
    if (w.strides[i] < 1 || w.dilations[i] < 1 || kernel[i] < 1)
      return n.invalid("strides, dilations and kernel_shape must be positive");
    if (w.pads[i] < 0 || w.pads[i + spatial] < 0)
      return n.invalid("pads must be non-negative");
  }
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (!same && *autoPad != "VALID" && *autoPad != "NOTSET" && !autoPad->empty())
    return n.invalid("auto_pad '" + *autoPad + "' is not one of NOTSET, " +
                     "SAME_UPPER, SAME_LOWER, VALID");
  for (size_t i = 0; i < spatial; ++i) {
    int64_t effective = (kernel[i] - 1) * w.dilations[i] + 1;
    if (*autoPad == "VALID") {
      w.pads[i] = w.pads[i + spatial] = 0;
    } else if (same) {
      // Output ceil(in / stride); the extra pad goes to the end for
      // SAME_UPPER, to the beginning for SAME_LOWER.
      int64_t out = ceilDiv(input[i], w.strides[i]);
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + effective - input[i]);
      int64_t small = total / 2;
      w.pads[i] = *autoPad == "SAME_UPPER" ? small : total - small;
      w.pads[i + spatial] = total - w.pads[i];
    }
    int64_t span = input[i] + w.pads[i] + w.pads[i + spatial] - effective;
    if (span < 0)
      return n.invalid("the window (" + Twine(effective) +
                       ") is larger than the padded input (" +
                       Twine(span + effective) + ") in spatial dim " +
                       Twine(i));
    int64_t out =
        (ceilMode ? ceilDiv(span, w.strides[i]) : span / w.strides[i]) + 1;
    // ceil_mode: a last window starting past the input and its begin padding
    // would only read end padding; it is dropped (as PyTorch does).
    if (ceilMode && (out - 1) * w.strides[i] >= input[i] + w.pads[i])
      --out;
    w.output.push_back(out);
  }
  return w;
}

FailureOr<SmallVector<int64_t>> normalizeAxes(Node &n, ArrayRef<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t a : axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis)
      return n.invalid("axis " + Twine(a) + " is out of range for rank " +
                       Twine(rank));
    result.push_back(*axis);
  }
  llvm::sort(result);
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

FailureOr<std::optional<SmallVector<int64_t>>>
optionalInts(Node &n, OperandsFrom from, int index, StringRef name) {
  if (from == OperandsFrom::Attributes)
    return n.getInts(name);
  if (!n.has(index))
    return std::optional<SmallVector<int64_t>>();
  FailureOr<SmallVector<int64_t>> values = n.constantInts(index, name);
  if (failed(values))
    return failure();
  return std::optional<SmallVector<int64_t>>(*values);
}

Value createSlice(Node &n, Value x, ArrayRef<int64_t> starts,
                  ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  return n.create<SliceOp>(RankedTensorType::get(shape, elementOf(x)), x,
                           {n.named("starts", n.b.getDenseI64ArrayAttr(starts)),
                            n.named("steps", n.b.getDenseI64ArrayAttr(steps))});
}

} // namespace tessel::importer
