//===- FuseLayerNorm.cpp - --tessel-fuse-layer-norm -----------------------===//
//
// LayerNormalization as exporters write it below opset 17, op by op:
//
//   m = reduce_mean(x, axes, keepdims)      d = sub(x, m)
//   v = reduce_mean(pow(d, 2) | mul(d, d), axes, keepdims)
//   y = div(d, sqrt(add(v, eps)))   [ * gamma ]  [ + beta ]
//
// becomes one tessel.layer_norm over the same trailing axes: one kernel
// instead of nine, statistics in f32 (the precision policy's class of
// layer_norm) instead of whatever each op's class gave the pieces, and the
// pieces' f16 <-> f32 casts gone at fp16.
//
// What must hold, or the subgraph stays as it is (never a wrong fusion): the
// reduced axes are the trailing dims [axis, rank), both reductions and the
// subtraction read the same x and the same axes, every intermediate has no
// use outside the subgraph (d only the square and the division), epsilon,
// gamma and beta are constants, epsilon a single non-negative value, and
// gamma and beta broadcast along the normalized dims only (a leading extent
// of 1 is dropped by a reshape).
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_FUSELAYERNORM
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }


/// The operand of binary `op` other than `known`, or null when `known` is
/// neither (both orders of a commutative op).
Value other(Operation *op, Value known) {
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return {};
}

/// The first normalized axis of a reduce_mean over the trailing dims with
/// keepdims, or nothing.
std::optional<int64_t> trailingAxis(ReduceMeanOp mean) {
  if (!mean.getKeepdims())
    return std::nullopt;
  ArrayRef<int64_t> axes = mean.getAxes();
  const int64_t rank = typeOf(mean.getInput()).getRank();
  if (axes.empty() || axes.back() != rank - 1)
    return std::nullopt;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return std::nullopt;
  return axes.front();
}

/// Whether `param` (gamma or beta) fits layer_norm: a constant whose dims,
/// right-aligned to the normalized dims x.shape[axis..), are each 1 or the
/// dim, with nothing but 1 before them.
bool fitsNormalized(Value param, ArrayRef<int64_t> normalized) {
  if (!param || !param.getDefiningOp<ConstantOp>())
    return false;
  ArrayRef<int64_t> shape = typeOf(param).getShape();
  const size_t lead = shape.size() > normalized.size() ? shape.size() - normalized.size() : 0;
  if (llvm::any_of(shape.take_front(lead), [](int64_t d) { return d != 1; }))
    return false;
  ArrayRef<int64_t> tail = shape.drop_front(lead);
  for (size_t i = 0; i < tail.size(); ++i) {
    int64_t want = normalized[normalized.size() - tail.size() + i];
    if (tail[i] != 1 && tail[i] != want)
      return false;
  }
  return true;
}

/// `param` with its leading extents of 1 beyond the normalized rank dropped.
Value normalizedParam(PatternRewriter &rewriter, Location loc, Value param, size_t rank) {
  ArrayRef<int64_t> shape = typeOf(param).getShape();
  if (shape.size() <= rank)
    return param;
  auto type = RankedTensorType::get(shape.take_back(rank), typeOf(param).getElementType());
  return rewriter.create<ReshapeOp>(loc, type, param);
}

/// Anchored on the division: div(d, sqrt(add(v, eps))) and, where they
/// follow it alone, the multiplication by gamma and the addition of beta.
struct FuseLayerNorm : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp div, PatternRewriter &rewriter) const override {
    // d = sub(x, m), m = reduce_mean(x) over the trailing axes.
    auto sub = div.getLhs().getDefiningOp<SubOp>();
    if (!sub)
      return rewriter.notifyMatchFailure(div, "the dividend is not x - mean");
    auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>();
    Value x = sub.getLhs();
    if (!mean || mean.getInput() != x || !mean->hasOneUse())
      return rewriter.notifyMatchFailure(div, "the subtrahend is not the mean of x alone");
    std::optional<int64_t> axis = trailingAxis(mean);
    if (!axis || typeOf(x) != typeOf(div.getOutput()) ||
        !isa<FloatType>(typeOf(x).getElementType()))
      return rewriter.notifyMatchFailure(div, "not a mean over x's trailing dims");

    // sqrt(add(v, eps)), v = reduce_mean(d^2) over the same axes.
    auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
    auto addEps = sqrt ? sqrt.getInput().getDefiningOp<AddOp>() : AddOp();
    if (!sqrt || !sqrt->hasOneUse() || !addEps || !addEps->hasOneUse())
      return rewriter.notifyMatchFailure(div, "the divisor is not sqrt(variance + eps)");
    ReduceMeanOp variance;
    std::optional<double> eps;
    for (auto [v, e] : {std::pair(addEps.getLhs(), addEps.getRhs()),
                        std::pair(addEps.getRhs(), addEps.getLhs())})
      if ((variance = v.getDefiningOp<ReduceMeanOp>()) && (eps = scalarConstant(e)))
        break;
    if (!variance || !eps || *eps < 0 || !variance->hasOneUse() ||
        variance.getAxes() != mean.getAxes() || !variance.getKeepdims())
      return rewriter.notifyMatchFailure(div, "not the variance over the same axes plus eps");
    Operation *square = variance.getInput().getDefiningOp();
    bool squared = false;
    if (auto pow = dyn_cast_or_null<PowOp>(square))
      squared = pow.getLhs() == sub.getOutput() && scalarConstant(pow.getRhs()) == 2.0;
    else if (auto mul = dyn_cast_or_null<MulOp>(square))
      squared = mul.getLhs() == sub.getOutput() && mul.getRhs() == sub.getOutput();
    if (!squared || !square->hasOneUse())
      return rewriter.notifyMatchFailure(div, "the variance is not the mean of (x - mean)^2");
    // d feeds the square and the division, nothing else.
    for (Operation *user : sub->getUsers())
      if (user != square && user != div.getOperation())
        return rewriter.notifyMatchFailure(div, "x - mean has another use");

    // [ * gamma ] [ + beta ], each only when it is the one use.
    ArrayRef<int64_t> normalized = typeOf(x).getShape().drop_front(*axis);
    SmallVector<Location> locs = {mean.getLoc(), sub.getLoc(),    square->getLoc(),
                                  variance.getLoc(), addEps.getLoc(), sqrt.getLoc(),
                                  div.getLoc()};
    Operation *last = div;
    auto follow = [&](auto opType) -> Value {
      using OpT = decltype(opType);
      if (!last->hasOneUse())
        return {};
      auto next = dyn_cast<OpT>(*last->getUsers().begin());
      if (!next || next.getOutput().getType() != div.getOutput().getType())
        return {};
      Value param = other(next, last->getResult(0));
      if (!fitsNormalized(param, normalized))
        return {};
      locs.push_back(next.getLoc());
      last = next;
      return param;
    };
    Value gamma = follow(MulOp());
    Value beta = follow(AddOp());

    // At the last op replaced: every operand (x, gamma, beta) dominates it.
    rewriter.setInsertionPoint(last);
    Location loc = rewriter.getFusedLoc(locs);
    if (gamma) {
      gamma = normalizedParam(rewriter, loc, gamma, normalized.size());
    } else {
      auto ones = RankedTensorType::get(normalized, typeOf(x).getElementType());
      gamma = rewriter.create<ConstantOp>(
          loc, ones,
          DenseElementsAttr::get(ones, rewriter.getFloatAttr(ones.getElementType(), 1.0)));
    }
    if (beta)
      beta = normalizedParam(rewriter, loc, beta, normalized.size());
    auto fused = rewriter.create<LayerNormOp>(
        loc, div.getOutput().getType(), x, gamma, beta, rewriter.getI64IntegerAttr(*axis),
        rewriter.getF32FloatAttr(static_cast<float>(*eps)));
    rewriter.replaceOp(last, fused.getOutput());
    return success();
  }
};

struct FuseLayerNormPass : impl::FuseLayerNormBase<FuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseLayerNormPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateFuseLayerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseLayerNorm>(patterns.getContext());
}

} // namespace tessel
