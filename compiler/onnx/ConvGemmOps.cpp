//===- ConvGemmOps.cpp - ONNX convolutions and matrix products ------------===//
//
// Conv and ConvTranspose (1 to 3 spatial dims, groups, auto_pad resolved to
// explicit pads, ConvTranspose's output_shape to pads), Gemm (alpha, beta and
// transposes as attributes) and MatMul (numpy batch broadcasting).
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"

#include <algorithm>

using namespace mlir;

namespace tessel::importer {
namespace {

/// What Conv and ConvTranspose read alike: input, weight and optional bias,
/// the input and weight of one rank with 1 to 3 spatial dims (`kind` names
/// the op in the unsupported message).
struct ConvOperands {
  Value x, weight, bias;
  ArrayRef<int64_t> xs, ws;
};

FailureOr<ConvOperands> convOperands(Node &n, StringRef kind) {
  FailureOr<Value> x = n.input(0), weight = n.input(1);
  if (failed(x) || failed(weight))
    return failure();
  ConvOperands c{*x, *weight, Value(), shapeOf(*x), shapeOf(*weight)};
  if (n.has(2)) {
    FailureOr<Value> b = n.input(2);
    if (failed(b))
      return failure();
    c.bias = *b;
  }
  if (c.xs.size() < 3 || c.ws.size() != c.xs.size())
    return n.invalid("input " + shapeText(c.xs) + " and weight " + shapeText(c.ws) +
                     " must have the same rank >= 3");
  if (c.xs.size() > 5)
    return n.unsupported(Twine(c.xs.size() - 2) + " spatial dims",
                         "1-D, 2-D and 3-D " + kind + " are supported");
  return c;
}

LogicalResult importConv(Node &n) {
  FailureOr<ConvOperands> operandsOf = convOperands(n, "convolutions");
  if (failed(operandsOf))
    return failure();
  auto [x, weight, bias, xs, ws] = *operandsOf;
  FailureOr<int64_t> group = n.getInt("group", 1);
  FailureOr<std::optional<SmallVector<int64_t>>> kernelShape =
      n.getInts("kernel_shape");
  if (failed(group) || failed(kernelShape))
    return failure();
  if (*group < 1 || *group > xs[1] || xs[1] % *group != 0 ||
      ws[1] * *group != xs[1] || ws[0] % *group != 0)
    return n.invalid("weight " + shapeText(ws) + " does not match input " +
                     shapeText(xs) + " with group " + Twine(*group));
  if (*kernelShape && ArrayRef<int64_t>(**kernelShape) != ws.drop_front(2))
    return n.invalid("kernel_shape " + shapeText(**kernelShape) +
                     " differs from the weight's " +
                     shapeText(ws.drop_front(2)));
  FailureOr<Window> w =
      resolveWindow(n, xs.drop_front(2), ws.drop_front(2), /*ceilMode=*/false);
  if (failed(w))
    return failure();
  SmallVector<int64_t> shape = {xs[0], ws[0]};
  shape.append(w->output);
  SmallVector<Value> operands = {x, weight};
  if (bias)
    operands.push_back(bias);
  SmallVector<NamedAttribute> attrs = {
      n.named("strides", n.b.getDenseI64ArrayAttr(w->strides)),
      n.named("pads", n.b.getDenseI64ArrayAttr(w->pads)),
      n.named("dilations", n.b.getDenseI64ArrayAttr(w->dilations)),
      n.named("group", n.b.getI64IntegerAttr(*group))};
  // The epilogue's optional operands (bias, then the residual that fusion
  // adds) are told apart by segment sizes; the importer gives no residual and
  // leaves the epilogue attributes at their defaults (no activation).
  attrs.push_back(n.named("operandSegmentSizes",
                          n.b.getDenseI32ArrayAttr({1, 1, bias ? 1 : 0, 0})));
  return n.setOutput(
      0, n.create<ConvOp>(RankedTensorType::get(shape, elementOf(x)), operands,
                          attrs));
}

LogicalResult importConvTranspose(Node &n) {
  FailureOr<ConvOperands> operandsOf = convOperands(n, "transposed convolutions");
  if (failed(operandsOf))
    return failure();
  auto [x, weight, bias, xs, ws] = *operandsOf;
  size_t spatial = xs.size() - 2;
  FailureOr<int64_t> group = n.getInt("group", 1);
  FailureOr<std::string> autoPad = n.getString("auto_pad", "NOTSET");
  FailureOr<std::optional<SmallVector<int64_t>>> kernelShape =
      n.getInts("kernel_shape");
  FailureOr<std::optional<SmallVector<int64_t>>> strides = n.getInts("strides");
  FailureOr<std::optional<SmallVector<int64_t>>> dilations =
      n.getInts("dilations");
  FailureOr<std::optional<SmallVector<int64_t>>> pads = n.getInts("pads");
  FailureOr<std::optional<SmallVector<int64_t>>> outputPadding =
      n.getInts("output_padding");
  FailureOr<std::optional<SmallVector<int64_t>>> outputShape =
      n.getInts("output_shape");
  if (failed(group) || failed(autoPad) || failed(kernelShape) ||
      failed(strides) || failed(dilations) || failed(pads) ||
      failed(outputPadding) || failed(outputShape))
    return failure();
  if (*group < 1 || *group > xs[1] || xs[1] % *group != 0 || ws[0] != xs[1])
    return n.invalid("weight " + shapeText(ws) + " does not match input " +
                     shapeText(xs) + " with group " + Twine(*group));
  ArrayRef<int64_t> kernel = ws.drop_front(2);
  if (*kernelShape && ArrayRef<int64_t>(**kernelShape) != kernel)
    return n.invalid("kernel_shape " + shapeText(**kernelShape) +
                     " differs from the weight's " + shapeText(kernel));
  auto orDefault = [&](std::optional<SmallVector<int64_t>> &v, int64_t dflt,
                       size_t count, StringRef name) -> LogicalResult {
    if (!v)
      v = SmallVector<int64_t>(count, dflt);
    if (v->size() != count)
      return n.invalid("attribute '" + name + "' needs " + Twine(count) +
                       " values");
    return success();
  };
  if (failed(orDefault(*strides, 1, spatial, "strides")) ||
      failed(orDefault(*dilations, 1, spatial, "dilations")) ||
      failed(orDefault(*pads, 0, 2 * spatial, "pads")) ||
      failed(orDefault(*outputPadding, 0, spatial, "output_padding")))
    return failure();
  if (failed(n.checkSizes(**strides, "strides")) ||
      failed(n.checkSizes(**dilations, "dilations")) ||
      failed(n.checkSizes(**pads, "pads")) ||
      failed(n.checkSizes(**outputPadding, "output_padding")) ||
      (*outputShape && failed(n.checkSizes(**outputShape, "output_shape"))))
    return failure();
  if (*outputShape && (*outputShape)->size() == xs.size())
    (*outputShape)->erase((*outputShape)->begin(), (*outputShape)->begin() + 2);
  if (*outputShape && (*outputShape)->size() != spatial)
    return n.invalid("output_shape needs " + Twine(spatial) + " values");
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (!same && *autoPad != "VALID" && *autoPad != "NOTSET" && !autoPad->empty())
    return n.invalid("auto_pad '" + *autoPad + "' is not valid");

  SmallVector<int64_t> padsOut = **pads, shape = {xs[0], ws[1] * *group};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t s = (**strides)[i], d = (**dilations)[i];
    if (s < 1 || d < 1 || padsOut[i] < 0 || padsOut[i + spatial] < 0 ||
        (**outputPadding)[i] < 0)
      return n.invalid("strides and dilations must be positive, pads and "
                       "output_padding non-negative");
    // The full transposed convolution's extent, before cropping by pads.
    int64_t full =
        s * (xs[i + 2] - 1) + (**outputPadding)[i] + (kernel[i] - 1) * d + 1;
    int64_t out;
    if (*outputShape || same) {
      // ONNX: total padding from the requested output, split per auto_pad;
      // an output larger than the full extent is zero-filled at the end.
      out = *outputShape ? (**outputShape)[i] : xs[i + 2] * s;
      int64_t total = std::max<int64_t>(0, full - out);
      padsOut[i] = *autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      padsOut[i + spatial] = total - padsOut[i];
    } else {
      if (*autoPad == "VALID")
        padsOut[i] = padsOut[i + spatial] = 0;
      out = full - padsOut[i] - padsOut[i + spatial];
    }
    if (out < 1)
      return n.invalid("output extent " + Twine(out) + " in spatial dim " +
                       Twine(i) + " is not positive");
    shape.push_back(out);
  }
  SmallVector<Value> operands = {x, weight};
  if (bias)
    operands.push_back(bias);
  return n.setOutput(
      0, n.create<ConvTransposeOp>(
             RankedTensorType::get(shape, elementOf(x)), operands,
             {n.named("strides", n.b.getDenseI64ArrayAttr(**strides)),
              n.named("pads", n.b.getDenseI64ArrayAttr(padsOut)),
              n.named("dilations", n.b.getDenseI64ArrayAttr(**dilations)),
              n.named("group", n.b.getI64IntegerAttr(*group))}));
}

LogicalResult importGemm(Node &n) {
  FailureOr<Value> a = n.input(0), bm = n.input(1);
  if (failed(a) || failed(bm))
    return failure();
  SmallVector<Value> operands = {*a, *bm};
  if (n.has(2)) {
    FailureOr<Value> c = n.input(2);
    if (failed(c))
      return failure();
    operands.push_back(*c);
  }
  FailureOr<float> alpha = n.getFloat("alpha", 1.0f),
                   beta = n.getFloat("beta", 1.0f);
  FailureOr<int64_t> transA = n.getInt("transA", 0),
                     transB = n.getInt("transB", 0);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB))
    return failure();
  ArrayRef<int64_t> as = shapeOf(*a), bs = shapeOf(*bm);
  if (as.size() != 2 || bs.size() != 2)
    return n.invalid("A " + shapeText(as) + " and B " + shapeText(bs) +
                     " must be 2-D");
  int64_t m = *transA ? as[1] : as[0], ka = *transA ? as[0] : as[1];
  int64_t kb = *transB ? bs[1] : bs[0], cols = *transB ? bs[0] : bs[1];
  if (ka != kb)
    return n.invalid("inner dimensions differ: " + Twine(ka) + " vs " +
                     Twine(kb));
  return n.setOutput(
      0, n.create<GemmOp>(RankedTensorType::get({m, cols}, elementOf(*a)),
                          operands,
                          {n.named("operandSegmentSizes",
                                   n.b.getDenseI32ArrayAttr(
                                       {1, 1, static_cast<int32_t>(operands.size() - 2), 0})),
                           n.named("alpha", n.b.getF32FloatAttr(*alpha)),
                           n.named("beta", n.b.getF32FloatAttr(*beta)),
                           n.named("transA", n.b.getBoolAttr(*transA != 0)),
                           n.named("transB", n.b.getBoolAttr(*transB != 0))}));
}

LogicalResult importMatMul(Node &n) {
  FailureOr<Value> lhs = n.input(0), rhs = n.input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  ArrayRef<int64_t> a = shapeOf(*lhs), bs = shapeOf(*rhs);
  if (a.empty() || bs.empty())
    return n.invalid("operands must have rank >= 1");
  int64_t ka = a.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return n.invalid("inner dimensions differ: " + shapeText(a) + " x " +
                     shapeText(bs));
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(a.size() > 2 ? a.drop_back(2) : ArrayRef<int64_t>(),
                      bs.size() > 2 ? bs.drop_back(2) : ArrayRef<int64_t>());
  if (!shape)
    return n.invalid("batch dimensions of " + shapeText(a) + " and " +
                     shapeText(bs) + " do not broadcast");
  if (a.size() > 1)
    shape->push_back(a[a.size() - 2]);
  if (bs.size() > 1)
    shape->push_back(bs.back());
  return n.setOutput(
      0, n.create<MatMulOp>(RankedTensorType::get(*shape, elementOf(*lhs)),
                            {*lhs, *rhs}));
}

const OpVersion kConvGemmOps[] = {
    {"Conv", {1}, importConv},
    {"ConvTranspose", {1}, importConvTranspose},
    {"Gemm", {7}, importGemm},
    {"MatMul", {1}, importMatMul},
};

} // namespace

void registerConvGemmOps(OpTable &table) { table.add(kConvGemmOps); }

} // namespace tessel::importer
