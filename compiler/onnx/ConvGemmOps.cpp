//===- ConvGemmOps.cpp - ONNX convolutions and matrix products ------------===//
//
// Conv and ConvTranspose (1 to 3 spatial dims, groups, auto_pad resolved to
// explicit pads, ConvTranspose's output_shape to pads), Gemm (alpha, beta and
// transposes as attributes), MatMul (numpy batch broadcasting) and Attention
// (opset 23: tessel.attention, the op the attention fusion makes of the
// MatMul-Softmax-MatMul pattern) and Einsum (transposes, reshapes and
// batched MatMuls).
//
//===----------------------------------------------------------------------===//
#include "Node.h"
#include "OpBuilders.h"
#include "OpTable.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <tuple>

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
  // The optional operands (bias, then the residual and the input scale that
  // fusion adds) are told apart by segment sizes; the importer gives neither
  // of the last two and leaves the epilogue attributes at their defaults (no
  // activation).
  attrs.push_back(n.named("operandSegmentSizes",
                          n.b.getDenseI32ArrayAttr({1, 1, bias ? 1 : 0, 0, 0})));
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

/// Attention (opsets 23 to 25) as tessel.attention: Q, K, V of rank 4
/// ([B, H, S, D]) or 3 ([B, S, H * D], with q_num_heads and kv_num_heads),
/// an optional bool (keep) or float (additive) mask broadcasting to
/// [B, H, Sq, Sk], past_key and past_value concatenated before K and V (the
/// present_key and present_value outputs), is_causal (the kernel's own
/// frontier where it is ONNX's, else a constant mask) and scale; grouped
/// heads (kv_num_heads dividing q_num_heads) repeat each key and value head
/// for its group of query heads. What the kernels do not implement is
/// refused at the node: softcap, the qk_matmul_output output,
/// Attention-24's nonpad_kv_seqlen and Attention-25's windows. A row that
/// every key is masked from gives NaN, as the unfused graph and the ONNX
/// 1.22 reference do (ONNX 1.23 made it zero).
LogicalResult importAttention(Node &n) {
  FailureOr<Value> q = n.input(0), k = n.input(1), v = n.input(2);
  FailureOr<int64_t> causal = n.getInt("is_causal", 0), qHeads = n.getInt("q_num_heads", 0),
                     kvHeads = n.getInt("kv_num_heads", 0),
                     left = n.getInt("left_window_size", -1),
                     right = n.getInt("right_window_size", -1);
  FailureOr<float> softcap = n.getFloat("softcap", 0.0f);
  if (failed(q) || failed(k) || failed(v) || failed(causal) || failed(qHeads) ||
      failed(kvHeads) || failed(left) || failed(right) || failed(softcap))
    return failure();
  if (*softcap != 0.0f)
    return n.unsupported("softcap " + std::to_string(*softcap), "softcap 0");
  if (n.wants(3))
    return n.unsupported("output qk_matmul_output ('" + n.proto.output(3) + "')",
                         "outputs Y, present_key and present_value");
  if (n.has(6))
    return n.unsupported("input nonpad_kv_seqlen ('" + n.proto.input(6) + "')",
                         "past_key and past_value, or whole keys");
  if (*left != -1 || *right != -1)
    return n.unsupported("a sliding window (left_window_size " + Twine(*left) +
                             ", right_window_size " + Twine(*right) + ")",
                         "-1, unbounded");
  if (n.has(4) != n.has(5))
    return n.invalid("past_key and past_value come together");
  Type element = elementOf(*q);
  if (!isa<FloatType>(element) || elementOf(*k) != element || elementOf(*v) != element)
    return n.invalid("Q, K and V must share a float type");
  const size_t rank = shapeOf(*q).size();
  if ((rank != 3 && rank != 4) || shapeOf(*k).size() != rank || shapeOf(*v).size() != rank)
    return n.invalid("Q " + shapeText(shapeOf(*q)) + ", K " + shapeText(shapeOf(*k)) +
                     " and V " + shapeText(shapeOf(*v)) + " must all have rank 3 or 4");
  // Rank 3: [B, S, H * D] -> [B, H, S, D] (a reshape and a transpose, which
  // --tessel-attention-layout turns into views).
  auto heads = [&](Value x, int64_t count, StringRef what) -> FailureOr<Value> {
    if (rank == 4)
      return x;
    ArrayRef<int64_t> s = shapeOf(x);
    if (count < 1 || s[2] % count != 0)
      return n.invalid(what + " " + shapeText(s) + " does not split into " + Twine(count) +
                       " heads");
    Value split = n.reshape(x, {s[0], s[1], count, s[2] / count});
    return n.create<TransposeOp>(
        RankedTensorType::get({s[0], count, s[1], s[2] / count}, elementOf(x)), split,
        {n.named("perm", n.b.getDenseI64ArrayAttr({0, 2, 1, 3}))});
  };
  if (rank == 3 && (*qHeads < 1 || *kvHeads < 1))
    return n.invalid("3-D Q, K and V need q_num_heads and kv_num_heads");
  FailureOr<Value> q4 = heads(*q, *qHeads, "Q"), k4 = heads(*k, *kvHeads, "K"),
                   v4 = heads(*v, *kvHeads, "V");
  if (failed(q4) || failed(k4) || failed(v4))
    return failure();
  ArrayRef<int64_t> qs = shapeOf(*q4), ks = shapeOf(*k4), vs = shapeOf(*v4);
  if (ks[0] != qs[0] || vs[0] != qs[0] || vs[1] != ks[1] || ks[3] != qs[3] || vs[2] != ks[2] ||
      ks[1] < 1 || qs[1] % ks[1] != 0)
    return n.invalid("Q " + shapeText(qs) + ", K " + shapeText(ks) + " and V " +
                     shapeText(vs) + " do not fit [B, H, Sq, D], [B, Hkv, Sk, D], " +
                     "[B, Hkv, Sk, Dv] with H a multiple of Hkv");
  // The cache: present = concat(past, current) along the sequence.
  Value key = *k4, value = *v4;
  for (auto [input, output, current] :
       {std::tuple{4, 1, &key}, std::tuple{5, 2, &value}}) {
    if (!n.has(input))
      continue;
    FailureOr<Value> past = n.input(input);
    if (failed(past))
      return failure();
    ArrayRef<int64_t> ps = shapeOf(*past), cs = shapeOf(*current);
    if (ps.size() != 4 || ps[0] != cs[0] || ps[1] != cs[1] || ps[3] != cs[3] ||
        elementOf(*past) != element)
      return n.invalid("past " + shapeText(ps) + " does not fit the current " + shapeText(cs));
    *current = n.create<ConcatOp>(
        RankedTensorType::get({cs[0], cs[1], ps[2] + cs[2], cs[3]}, element),
        ValueRange{*past, *current}, {n.named("axis", n.b.getI64IntegerAttr(2))});
    if (failed(n.setOutput(output, *current)))
      return failure();
  }
  if (!n.has(4) && (n.wants(1) || n.wants(2)))
    return n.unsupported("present_key and present_value without past_key and past_value");
  // Grouped heads (GQA, MQA): each key and value head serves H / Hkv query
  // heads in a row, [B, Hkv, S, D] -> [B, Hkv, G, S, D] -> [B, H, S, D].
  if (const int64_t group = qs[1] / ks[1]; group > 1)
    for (Value *kv : {&key, &value}) {
      ArrayRef<int64_t> s = shapeOf(*kv);
      Value one = n.reshape(*kv, {s[0], s[1], 1, s[2], s[3]});
      Value wide = n.create<ExpandOp>(
          RankedTensorType::get({s[0], s[1], group, s[2], s[3]}, element), one);
      *kv = n.reshape(wide, {s[0], s[1] * group, s[2], s[3]});
    }
  const int64_t sq = qs[2], sk = shapeOf(key)[2];
  Value mask;
  if (n.has(3)) {
    FailureOr<Value> m = n.input(3);
    if (failed(m))
      return failure();
    if (!elementOf(*m).isInteger(1) && elementOf(*m) != element)
      return n.unsupported("a mask of type " + typeText(elementOf(*m)),
                           "a bool mask or one of Q's type");
    mask = *m;
  }
  // ONNX's causal frontier: query i sees key j <= i + past (the cached keys
  // before the current ones). tessel.attention's is j <= i + Sk - Sq, the
  // same where the current keys are as many as the queries; elsewhere (cross
  // attention without a cache) the frontier becomes a constant bool mask,
  // combined with the model's (and for a float mask, -inf outside it).
  const int64_t past = n.has(4) ? shapeOf(key)[2] - ks[2] : 0;
  bool causalAttr = *causal != 0;
  if (causalAttr && sk - sq != past) {
    causalAttr = false;
    auto keepType = RankedTensorType::get({sq, sk}, n.b.getI1Type());
    SmallVector<bool> keep;
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        keep.push_back(j <= i + past);
    Value frontier = n.constantValue(DenseElementsAttr::get(keepType, ArrayRef<bool>(keep)));
    if (!mask) {
      mask = frontier;
    } else if (elementOf(mask).isInteger(1)) {
      FailureOr<Value> both = createBinary<AndOp>(n, mask, frontier);
      if (failed(both))
        return failure();
      mask = *both;
    } else {
      std::optional<SmallVector<int64_t>> shape = broadcastShapes(shapeOf(mask), {sq, sk});
      if (!shape)
        return n.invalid("mask " + shapeText(shapeOf(mask)) + " does not broadcast to [" +
                         Twine(sq) + ", " + Twine(sk) + "]");
      mask = n.create<WhereOp>(
          RankedTensorType::get(*shape, element),
          {frontier, mask, n.scalar(element, -std::numeric_limits<double>::infinity())});
    }
  }
  FailureOr<float> scale =
      n.getFloat("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(qs[3]))));
  if (failed(scale))
    return failure();
  auto resultType = RankedTensorType::get({qs[0], qs[1], sq, vs[3]}, element);
  Value y = n.create<AttentionOp>(
      resultType, mask ? ValueRange{*q4, key, value, mask} : ValueRange{*q4, key, value},
      {n.named("scale", n.b.getF32FloatAttr(*scale)),
       n.named("causal", n.b.getBoolAttr(causalAttr))});
  if (rank == 3) {
    Value merged = n.create<TransposeOp>(
        RankedTensorType::get({qs[0], sq, qs[1], vs[3]}, element), y,
        {n.named("perm", n.b.getDenseI64ArrayAttr({0, 2, 1, 3}))});
    y = n.reshape(merged, {qs[0], sq, qs[1] * vs[3]});
  }
  return n.setOutput(0, y);
}

/// An Einsum operand: its value and each dim's label (a letter, or
/// kEllipsisLabel + i for the i-th of the dims the ellipses stand for,
/// counted so that they align to the right across operands).
struct Labeled {
  Value value;
  SmallVector<int> labels;
};
constexpr int kEllipsisLabel = 256;

std::string labelText(int label) {
  return label >= kEllipsisLabel ? "... dim " + std::to_string(label - kEllipsisLabel)
                                 : "'" + std::string(1, char(label)) + "'";
}

/// `x` with its dims in the order of `order` (labels of x).
Labeled permuteTo(Node &n, const Labeled &x, ArrayRef<int> order) {
  SmallVector<int64_t> perm, shape;
  for (int label : order) {
    int64_t d = llvm::find(x.labels, label) - x.labels.begin();
    perm.push_back(d);
    shape.push_back(shapeOf(x.value)[d]);
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return {x.value, SmallVector<int>(order)};
  return {n.create<TransposeOp>(RankedTensorType::get(shape, elementOf(x.value)), x.value,
                                {n.named("perm", n.b.getDenseI64ArrayAttr(perm))}),
          SmallVector<int>(order)};
}

/// `x` summed over the dims whose labels `drop` selects.
Labeled sumOut(Node &n, const Labeled &x, llvm::function_ref<bool(int)> drop) {
  SmallVector<int64_t> axes;
  Labeled y{x.value, {}};
  for (auto [d, label] : llvm::enumerate(x.labels))
    (drop(label) ? axes.push_back(d) : y.labels.push_back(label));
  if (!axes.empty())
    y.value = createReduce<ReduceSumOp>(n, x.value, axes, /*keepdims=*/false);
  return y;
}

/// `x` with each label that appears twice replaced by its diagonal: the
/// elements off it zeroed (a where over an identity mask), then a sum over
/// the second of the two dims.
Labeled takeDiagonals(Node &n, Labeled x) {
  for (;;) {
    int first = -1, second = -1;
    for (int i = 0; i < int(x.labels.size()) && second < 0; ++i)
      for (int j = i + 1; j < int(x.labels.size()) && second < 0; ++j)
        if (x.labels[i] == x.labels[j])
          std::tie(first, second) = std::pair(i, j);
    if (second < 0)
      return x;
    ArrayRef<int64_t> shape = shapeOf(x.value);
    int64_t size = shape[first];
    SmallVector<int64_t> maskShape(shape.size(), 1);
    maskShape[first] = maskShape[second] = size;
    SmallVector<bool> eye(size * size, false);
    for (int64_t i = 0; i < size; ++i)
      eye[i * size + i] = true;
    Value mask = n.constantValue(
        DenseElementsAttr::get(RankedTensorType::get(maskShape, n.b.getI1Type()), eye));
    Value masked = n.create<WhereOp>(x.value.getType(),
                                     {mask, x.value, n.scalar(elementOf(x.value), 0.0)});
    x.value = createReduce<ReduceSumOp>(n, masked, {second}, /*keepdims=*/false);
    x.labels.erase(x.labels.begin() + second);
  }
}

/// The product of `a` and `b` summed over their common labels that `keep`
/// lacks, as one (batched) MatMul: each operand transposed to [batch, own,
/// contracted] or [batch, contracted, own] and its own and contracted dims
/// merged; the result is [batch, a's own, b's own].
Labeled contract(Node &n, Labeled a, Labeled b, llvm::function_ref<bool(int)> keep,
                 const llvm::DenseMap<int, int64_t> &sizes) {
  auto in = [](const Labeled &x, int label) { return llvm::is_contained(x.labels, label); };
  a = sumOut(n, a, [&](int l) { return !keep(l) && !in(b, l); });
  b = sumOut(n, b, [&](int l) { return !keep(l) && !in(a, l); });
  SmallVector<int> batch, aOwn, bOwn, summed;
  for (int l : a.labels)
    (in(b, l) ? (keep(l) ? batch : summed) : aOwn).push_back(l);
  for (int l : b.labels)
    if (!in(a, l))
      bOwn.push_back(l);
  auto product = [&](ArrayRef<int> labels) {
    int64_t p = 1;
    for (int l : labels)
      p *= sizes.lookup(l);
    return p;
  };
  auto operand = [&](Labeled x, ArrayRef<int> outer, ArrayRef<int> inner) {
    SmallVector<int> order(batch);
    order.append(outer.begin(), outer.end());
    order.append(inner.begin(), inner.end());
    x = permuteTo(n, x, order);
    SmallVector<int64_t> shape(shapeOf(x.value).take_front(batch.size()));
    shape.push_back(product(outer));
    shape.push_back(product(inner));
    return shape == shapeOf(x.value) ? x.value : n.reshape(x.value, shape);
  };
  Value lhs = operand(a, aOwn, summed), rhs = operand(b, summed, bOwn);
  SmallVector<int64_t> shape;
  for (auto [da, db] : llvm::zip(shapeOf(lhs).drop_back(2), shapeOf(rhs).drop_back(2)))
    shape.push_back(std::max(da, db));
  shape.push_back(product(aOwn));
  shape.push_back(product(bOwn));
  Labeled y{n.create<MatMulOp>(RankedTensorType::get(shape, elementOf(lhs)), {lhs, rhs}), batch};
  y.labels.append(aOwn);
  y.labels.append(bOwn);
  SmallVector<int64_t> split;
  for (int l : y.labels)
    split.push_back(llvm::is_contained(batch, l) ? shape[llvm::find(batch, l) - batch.begin()]
                                                 : sizes.lookup(l));
  if (split != shape)
    y.value = n.reshape(y.value, split);
  return y;
}

/// Einsum (opset 12) with explicit or implicit output and ellipses, as
/// tessel ops: repeated labels in an operand give its diagonal, labels in
/// one operand only and not in the output are summed first, and the
/// operands are multiplied left to right, each pair as one MatMul (a
/// batched one on Tensor Cores) between transposes and reshapes; the result
/// is transposed to the output's order. Ellipsis dims broadcast as numpy's
/// do, and an explicit output must have them, as numpy's einsum (ONNX's
/// reference) requires; a letter must have one size wherever it appears.
LogicalResult importEinsum(Node &n) {
  FailureOr<std::string> equationAttr = n.getString("equation", "");
  if (failed(equationAttr))
    return failure();
  std::string equation;
  for (char c : *equationAttr)
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  SmallVector<std::string> terms;
  for (size_t begin = 0;;) {
    size_t comma = lhs.find(',', begin);
    terms.push_back(lhs.substr(begin, comma - begin));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  if (int(terms.size()) != n.numInputs())
    return n.invalid("equation '" + *equationAttr + "' has " + Twine(terms.size()) +
                     " operand(s), the node " + Twine(n.numInputs()) + " input(s)");
  // Each term's letters, and where its ellipsis is (npos: none).
  auto parse = [&](const std::string &term, std::string &letters, size_t &ellipsis) {
    letters.clear();
    ellipsis = std::string::npos;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0 && ellipsis == std::string::npos) {
        ellipsis = letters.size();
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
        letters += term[i];
      } else {
        return false;
      }
    }
    return true;
  };
  SmallVector<Labeled> operands;
  SmallVector<std::pair<std::string, size_t>> parsed;
  int64_t ellipsisRank = 0;
  for (auto [i, term] : llvm::enumerate(terms)) {
    FailureOr<Value> x = n.input(i);
    if (failed(x))
      return failure();
    std::string letters;
    size_t ellipsis;
    if (!parse(term, letters, ellipsis))
      return n.invalid("cannot parse operand '" + term + "' of equation '" + *equationAttr + "'");
    int64_t rank = shapeOf(*x).size(), extra = rank - int64_t(letters.size());
    if (extra < 0 || (extra > 0 && ellipsis == std::string::npos))
      return n.invalid("operand '" + term + "' of equation '" + *equationAttr +
                       "' does not fit input " + Twine(i) + " of rank " + Twine(rank));
    ellipsisRank = std::max(ellipsisRank, extra);
    operands.push_back({*x, {}});
    parsed.push_back({letters, ellipsis});
  }
  llvm::DenseMap<int, int64_t> sizes;
  for (auto [x, term] : llvm::zip(operands, parsed)) {
    auto &[letters, ellipsis] = term;
    int64_t extra = shapeOf(x.value).size() - letters.size();
    for (size_t i = 0; i <= letters.size(); ++i) {
      if (i == ellipsis)
        for (int64_t e = 0; e < extra; ++e)
          x.labels.push_back(kEllipsisLabel + ellipsisRank - extra + e);
      if (i < letters.size())
        x.labels.push_back(letters[i]);
    }
    for (auto [label, size] : llvm::zip(x.labels, shapeOf(x.value))) {
      auto [known, inserted] = sizes.try_emplace(label, size);
      if (inserted || known->second == size)
        continue;
      if (label >= kEllipsisLabel && (known->second == 1 || size == 1))
        known->second = std::max(known->second, size);
      else
        return n.invalid("label " + labelText(label) + " has sizes " + Twine(known->second) +
                         " and " + Twine(size));
    }
  }
  // The output's labels: as written, or (implicit) the ellipsis dims, then
  // the letters that appear once, in alphabetical order.
  SmallVector<int> output;
  if (arrow != std::string::npos) {
    std::string letters;
    size_t ellipsis;
    if (!parse(equation.substr(arrow + 2), letters, ellipsis))
      return n.invalid("cannot parse the output of equation '" + *equationAttr + "'");
    for (size_t i = 0; i <= letters.size(); ++i) {
      if (i == ellipsis)
        for (int64_t e = 0; e < ellipsisRank; ++e)
          output.push_back(kEllipsisLabel + e);
      if (i < letters.size()) {
        if (llvm::is_contained(output, letters[i]) || !sizes.count(letters[i]))
          return n.invalid("output label '" + Twine(letters[i]) + "' of equation '" +
                           *equationAttr + "' is repeated or in no operand");
        output.push_back(letters[i]);
      }
    }
  } else {
    for (int64_t e = 0; e < ellipsisRank; ++e)
      output.push_back(kEllipsisLabel + e);
    for (int c = 0; c < kEllipsisLabel; ++c) {
      int count = 0;
      for (const auto &term : parsed)
        count += llvm::count(term.first, char(c));
      if (count == 1)
        output.push_back(c);
    }
  }
  for (int e = 0; e < ellipsisRank; ++e)
    if (!llvm::is_contained(output, kEllipsisLabel + e))
      return n.invalid("the output of equation '" + *equationAttr +
                       "' has no '...' for its operands' ellipsis dims");

  for (Labeled &x : operands)
    x = takeDiagonals(n, x);
  Labeled y = sumOut(n, operands[0], [&](int l) {
    return !llvm::is_contained(output, l) &&
           llvm::none_of(ArrayRef(operands).drop_front(),
                         [&](const Labeled &o) { return llvm::is_contained(o.labels, l); });
  });
  for (size_t i = 1; i < operands.size(); ++i)
    y = contract(n, y, operands[i], [&](int l) {
      return llvm::is_contained(output, l) ||
             llvm::any_of(ArrayRef(operands).drop_front(i + 1),
                          [&](const Labeled &o) { return llvm::is_contained(o.labels, l); });
    }, sizes);
  y = permuteTo(n, y, output);
  if (y.value == operands[0].value && operands.size() == 1)
    y.value = n.create<IdentityOp>(y.value.getType(), y.value);
  return n.setOutput(0, y.value);
}

const OpVersion kConvGemmOps[] = {
    // Attention-24 added nonpad_kv_seqlen, 25 the windows: the handler
    // refuses both.
    {"Attention", {23}, importAttention},
    {"Conv", {1}, importConv},
    {"ConvTranspose", {1}, importConvTranspose},
    {"Einsum", {12}, importEinsum},
    {"Gemm", {7}, importGemm},
    {"MatMul", {1}, importMatMul},
};

} // namespace

void registerConvGemmOps(OpTable &table) { table.add(kConvGemmOps); }

} // namespace tessel::importer
