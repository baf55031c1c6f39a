//===- FuseAttention.cpp - --tessel-fuse-attention ------------------------===//
//
// Scaled dot-product attention as PyTorch exports it, op by op:
//
//   s = matmul(q [* c], transpose(k) [* c] | kT [* c])      the scores
//   s = s * c | s / c                                       the scale
//   s = s + mask | where(keep, s, fill) | where(drop, fill, s)
//   y = matmul(softmax(s, last axis), v)
//
// becomes one tessel.attention(q, k, v, mask?) {scale, causal}: one kernel
// that never writes the [Sq, Sk] scores, whose statistics are f32 and whose
// scale applies to the f32 products (not to f16 operands or scores).
//
// Masks: a float operand of an add is the additive mask; a where with a
// constant fill of -inf keeps its bool condition as a bool mask (a
// `where(c, 0, -inf)` feeding the add is read the same way); a where with a
// finite fill at or below -1e4 (finfo.min, -1e9, -1e4) becomes the additive
// mask where(c, 0, fill), since a masked score is then the fill plus a score
// far below it. A constant mask that hides exactly the keys after the
// bottom-right diagonal (j > i + Sk - Sq, Sq <= Sk, masked values -inf or at
// most -1e4) becomes `causal = true` and no operand.
//
// What must hold, or nothing changes (never a wrong fusion): the softmax is
// over the last axis; every intermediate (the product, the scaled and masked
// scores, the weights, a stripped scale or transpose) has no other use; the
// scale factors are single-element constants; the mask ops come after the
// scale; the masks broadcast to the scores without widening them and at
// most one mask that is not causal is left; Q, K and V have rank 3 or 4 and
// the same leading dims; the head dims are ones the GPU kernels take
// (AttentionOp::gpuTakesHeadDims). Where the ops look like attention (a
// matmul feeding the softmax through those ops, a matmul reading its
// result) but one of these fails, a remark at the softmax's node says why;
// the ops then run as they are.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace tessel {
#define GEN_PASS_DEF_FUSEATTENTION
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A masked score is one at or below this: exp(-1e4) is 0 even in float64,
/// so a key so masked has weight 0 unless the row's scores span 1e4.
constexpr double kMaskedAtMost = -1e4;



bool hasOneUse(Value v) { return v.hasOneUse(); }

/// A multiplication or division of `op`'s chain operand by a single-element
/// constant, as the factor it multiplies by; `chain` is the other operand.
std::optional<double> scaleFactor(Operation *op, Value &chain) {
  if (auto mul = dyn_cast<MulOp>(op)) {
    if (std::optional<double> c = scalarConstant(mul.getRhs())) {
      chain = mul.getLhs();
      return c;
    }
    if (std::optional<double> c = scalarConstant(mul.getLhs())) {
      chain = mul.getRhs();
      return c;
    }
  } else if (auto div = dyn_cast<DivOp>(op)) {
    if (std::optional<double> c = scalarConstant(div.getRhs())) {
      chain = div.getLhs();
      return 1.0 / *c;
    }
  }
  return std::nullopt;
}

/// Whether `v` is computed from a matmul through the ops the scores pass
/// through (scale, add, where), as far as `depth` ops up.
bool fromProduct(Value v, int depth = 8) {
  Operation *op = v.getDefiningOp();
  if (!op || depth == 0)
    return false;
  if (isa<MatMulOp>(op))
    return true;
  if (isa<MulOp, DivOp, AddOp>(op))
    return fromProduct(op->getOperand(0), depth - 1) || fromProduct(op->getOperand(1), depth - 1);
  if (auto where = dyn_cast<WhereOp>(op))
    return fromProduct(where.getLhs(), depth - 1) || fromProduct(where.getRhs(), depth - 1);
  return false;
}

/// One mask term on the scores: an additive float tensor, or a bool
/// condition that keeps (or, `inverted`, drops) a score, replacing it by
/// `fill` otherwise.
struct MaskTerm {
  Value value;
  bool keep = false, inverted = false;
  double fill = 0;
};

/// Whether mask term `term` (a constant) hides exactly the keys after the
/// bottom-right diagonal of [sq, sk] scores, and nothing else.
bool isCausal(const MaskTerm &term, int64_t sq, int64_t sk) {
  auto constant = term.value.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || sq > sk)
    return false;
  if (term.keep && term.fill > kMaskedAtMost)
    return false;
  ArrayRef<int64_t> shape = typeOf(term.value).getShape();
  if (shape.size() < 2 || shape[shape.size() - 2] != sq || shape.back() != sk ||
      llvm::any_of(shape.drop_back(2), [](int64_t d) { return d != 1; }))
    return false;
  auto visible = [&](int64_t i, int64_t j) { return j <= i + (sk - sq); };
  int64_t index = 0;
  if (term.keep) {
    for (bool value : dense.getValues<bool>()) {
      const int64_t i = index / sk, j = index % sk;
      ++index;
      if ((value != term.inverted) != visible(i, j))
        return false;
    }
    return true;
  }
  if (!isa<FloatType>(dense.getElementType()))
    return false;
  for (APFloat value : dense.getValues<APFloat>()) {
    const int64_t i = index / sk, j = index % sk;
    ++index;
    const double v = value.convertToDouble();
    if (visible(i, j) ? v != 0.0 : !(v <= kMaskedAtMost))
      return false;
  }
  return true;
}

/// What the matcher found: the operands, attributes and the ops replaced.
struct AttentionMatch {
  Value query, key, keyTransposed, value; // key or keyTransposed ([..., D, Sk])
  SmallVector<MaskTerm> masks;
  double scale = 1.0;
  MatMulOp product, output;
  SmallVector<Location> locs;
};

/// Matches the attention around `softmax`. On failure, `why` says what
/// failed and `shaped` whether the ops looked like attention at all (a
/// matmul feeding the softmax through scale and mask ops, and a matmul
/// reading the softmax's result), which is when the failure is worth a
/// remark.
FailureOr<AttentionMatch> matchAttention(SoftmaxOp softmax, std::string &why, bool &shaped) {
  shaped = false;
  AttentionMatch m;
  Value scores = softmax.getInput();
  MatMulOp output;
  for (Operation *user : softmax->getUsers())
    if (auto matmul = dyn_cast<MatMulOp>(user); matmul && matmul.getLhs() == softmax.getOutput())
      output = matmul;
  if (!output || !fromProduct(scores))
    return failure(); // not attention: no remark
  shaped = true;
  auto refuse = [&](const Twine &reason) {
    why = reason.str();
    return failure();
  };

  const RankedTensorType scoresType = typeOf(scores);
  const int64_t rank = scoresType.getRank();
  if (softmax.getAxis() != rank - 1 && softmax.getAxis() != -1)
    return refuse("the softmax is over axis " + Twine(softmax.getAxis()) +
                  ", not the keys (the last axis)");
  if (!softmax->hasOneUse())
    return refuse("the attention weights (the softmax's result) have another use");
  m.output = output;
  m.locs.push_back(output.getLoc());
  m.locs.push_back(softmax.getLoc());

  // Up from the softmax: the mask ops, then the scale, then the product.
  Value chain = scores;
  bool scaled = false;
  while (true) {
    Operation *op = chain.getDefiningOp();
    if (!hasOneUse(chain))
      return refuse("the scores have another use");
    if (typeOf(chain) != scoresType)
      return refuse("a mask widens the scores (it does not broadcast to their shape)");
    if (auto product = dyn_cast<MatMulOp>(op)) {
      m.product = product;
      m.locs.push_back(product.getLoc());
      break;
    }
    Value next;
    if (std::optional<double> factor = scaleFactor(op, next)) {
      m.scale *= *factor;
      scaled = true;
    } else if (auto add = dyn_cast<AddOp>(op)) {
      bool lhs = fromProduct(add.getLhs()), rhs = fromProduct(add.getRhs());
      if (lhs == rhs)
        return refuse("cannot tell the scores from the mask in an add");
      next = lhs ? add.getLhs() : add.getRhs();
      Value mask = lhs ? add.getRhs() : add.getLhs();
      if (!isa<FloatType>(typeOf(mask).getElementType()))
        return refuse("the added mask is not a float tensor");
      MaskTerm term{mask};
      // where(c, 0, -inf) or where(c, -inf, 0) added: the condition itself.
      if (auto where = mask.getDefiningOp<WhereOp>()) {
        std::optional<double> a = splatConstant(where.getLhs()), b = splatConstant(where.getRhs());
        const double inf = std::numeric_limits<double>::infinity();
        if (a && b && ((*a == 0 && *b == -inf) || (*a == -inf && *b == 0)) &&
            typeOf(where.getCondition()).getShape() == typeOf(mask).getShape()) {
          term = MaskTerm{where.getCondition(), true, *a == -inf, -inf};
        }
      }
      if (scaled)
        return refuse("a mask is added before the scale");
      m.masks.push_back(term);
    } else if (auto where = dyn_cast<WhereOp>(op)) {
      bool lhs = fromProduct(where.getLhs()), rhs = fromProduct(where.getRhs());
      if (lhs == rhs)
        return refuse("cannot tell the scores from the fill in a where");
      next = lhs ? where.getLhs() : where.getRhs();
      std::optional<double> fill = splatConstant(lhs ? where.getRhs() : where.getLhs());
      if (!fill || !(*fill <= kMaskedAtMost))
        return refuse("the where's fill is not a constant of -inf or at most -1e4");
      if (scaled)
        return refuse("a mask is applied before the scale");
      m.masks.push_back(MaskTerm{where.getCondition(), true, /*inverted=*/!lhs, *fill});
    } else {
      return refuse("the scores pass through '" + op->getName().getStringRef() + "'");
    }
    m.locs.push_back(op->getLoc());
    chain = next;
  }

  // The product's operands: q [* c] and k^T [* c] (k^T a transpose of k or a
  // tensor of its own).
  auto stripScale = [&](Value v) {
    Value next;
    while (v.getDefiningOp() && hasOneUse(v)) {
      std::optional<double> factor = scaleFactor(v.getDefiningOp(), next);
      if (!factor || typeOf(next) != typeOf(v))
        break;
      m.scale *= *factor;
      m.locs.push_back(v.getDefiningOp()->getLoc());
      v = next;
    }
    return v;
  };
  Value q = stripScale(m.product.getLhs());
  Value kt = stripScale(m.product.getRhs());
  const int64_t r = typeOf(kt).getRank();
  if (auto transpose = kt.getDefiningOp<TransposeOp>(); transpose && hasOneUse(kt)) {
    ArrayRef<int64_t> perm = transpose.getPerm();
    bool swap = r >= 2 && perm[r - 1] == r - 2 && perm[r - 2] == r - 1;
    for (int64_t i = 0; swap && i < r - 2; ++i)
      swap = perm[i] == i;
    if (swap) {
      m.locs.push_back(transpose.getLoc());
      m.key = stripScale(transpose.getInput());
    }
  }
  if (!m.key)
    m.keyTransposed = kt;
  m.query = q;
  m.value = output.getRhs();

  // Shapes: q [..., Sq, D], k [..., Sk, D] (or k^T [..., D, Sk]), v [..., Sk, Dv].
  ArrayRef<int64_t> qs = typeOf(q).getShape(), vs = typeOf(m.value).getShape();
  SmallVector<int64_t> ks(typeOf(m.key ? m.key : kt).getShape());
  if (!m.key && ks.size() >= 2)
    std::swap(ks[ks.size() - 1], ks[ks.size() - 2]);
  if (qs.size() != 3 && qs.size() != 4)
    return refuse("the query has rank " + Twine(qs.size()) + ", not 3 or 4");
  if (ks.size() != qs.size() || vs.size() != qs.size() || scoresType.getRank() != rank ||
      rank != static_cast<int64_t>(qs.size()))
    return refuse("query, key, value and scores differ in rank");
  if (ArrayRef<int64_t>(ks).drop_back(2) != qs.drop_back(2) ||
      vs.drop_back(2) != qs.drop_back(2))
    return refuse("query, key and value differ in their leading dims (a broadcast)");
  const int64_t d = qs.back(), dv = vs.back();
  if (!AttentionOp::gpuTakesHeadDims(d, dv))
    return refuse("head dims " + Twine(d) + " and " + Twine(dv) +
                  " are not what the GPU kernels take (multiples of 8 up to " +
                  Twine(AttentionOp::kMaxGpuHeadDim) + ")");
  Type element = typeOf(q).getElementType();
  if (!isa<FloatType>(element) || typeOf(m.key ? m.key : kt).getElementType() != element ||
      typeOf(m.value).getElementType() != element ||
      typeOf(output.getOutput()).getElementType() != element ||
      scoresType.getElementType() != element)
    return refuse("query, key, value and scores differ in element type");

  // Masks: the causal ones become the attribute; one other is left at most.
  const int64_t sq = qs[qs.size() - 2], sk = ks[ks.size() - 2];
  int general = 0;
  for (const MaskTerm &term : m.masks)
    general += isCausal(term, sq, sk) ? 0 : 1;
  if (general > 1)
    return refuse("more than one mask other than a causal one");
  return m;
}

/// Anchored on the softmax: the product before it and the matmul after it.
struct FuseAttention : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    std::string why;
    bool shaped = false;
    FailureOr<AttentionMatch> found = matchAttention(softmax, why, shaped);
    if (failed(found))
      return rewriter.notifyMatchFailure(softmax, why.empty() ? "not attention" : why);
    AttentionMatch &m = *found;
    // At the matmul by V: every operand dominates it.
    rewriter.setInsertionPoint(m.output);
    Location loc = rewriter.getFusedLoc(m.locs);
    Value key = m.key;
    if (!key) {
      const int64_t r = typeOf(m.keyTransposed).getRank();
      SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, r));
      std::swap(perm[r - 1], perm[r - 2]);
      SmallVector<int64_t> shape(typeOf(m.keyTransposed).getShape());
      std::swap(shape[r - 1], shape[r - 2]);
      key = rewriter.create<TransposeOp>(
          loc, RankedTensorType::get(shape, typeOf(m.keyTransposed).getElementType()),
          m.keyTransposed, rewriter.getDenseI64ArrayAttr(perm));
    }
    ArrayRef<int64_t> qs = typeOf(m.query).getShape();
    const int64_t sq = qs[qs.size() - 2], sk = typeOf(key).getShape().drop_back().back();
    bool causal = false;
    Value mask;
    for (const MaskTerm &term : m.masks) {
      if (isCausal(term, sq, sk)) {
        causal = true;
        continue;
      }
      mask = term.value;
      if (!term.keep)
        continue;
      if (std::isinf(term.fill)) { // -inf: the condition is the bool mask
        if (term.inverted)
          mask = rewriter.create<NotOp>(loc, mask.getType(), mask);
        continue;
      }
      // A finite fill: the additive mask where(keep, 0, fill).
      auto floatType = RankedTensorType::get(typeOf(mask).getShape(),
                                             typeOf(m.query).getElementType());
      auto scalar = RankedTensorType::get({}, floatType.getElementType());
      auto splat = [&](double v) -> Value {
        return rewriter.create<ConstantOp>(
            loc, scalar,
            DenseElementsAttr::get(scalar, rewriter.getFloatAttr(scalar.getElementType(), v)));
      };
      Value zero = splat(0.0), fill = splat(term.fill);
      mask = rewriter.create<WhereOp>(loc, floatType, mask, term.inverted ? fill : zero,
                                      term.inverted ? zero : fill);
    }
    auto attention = rewriter.create<AttentionOp>(
        loc, m.output.getOutput().getType(), m.query, key, m.value, mask,
        rewriter.getF32FloatAttr(static_cast<float>(m.scale)), rewriter.getBoolAttr(causal),
        DenseI64ArrayAttr(), DenseI64ArrayAttr());
    rewriter.replaceOp(m.output, attention.getOutput());
    return success();
  }
};

struct FuseAttentionPass : impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseAttentionPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // What looks like attention but stayed unfused: a remark at the softmax's
    // node with the reason, once per softmax.
    getOperation().walk([](SoftmaxOp softmax) {
      std::string why;
      bool shaped = false;
      if (failed(matchAttention(softmax, why, shaped)) && shaped)
        softmax.emitRemark() << "attention not fused: " << why
                             << "; its matmuls and softmax run as separate steps";
    });
  }
};

} // namespace

void populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttention>(patterns.getContext());
}

} // namespace tessel
