//===- FoldBatchNorm.cpp - --tessel-fold-batch-norm -----------------------===//
//
// Inference BatchNormalization is a per-channel affine map,
// y = (z - mean) * s + bias with s = scale / sqrt(variance + epsilon), so after
// a conv or gemm whose weights are constants it folds into them:
// W' = W * s per output channel, b' = (b - mean) * s + bias.
//
// W' and b' are built as tessel ops on the constants, for
// --tessel-fold-constants to evaluate with the runtime's kernels: the
// arithmetic exists once, in the runtime.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_FOLDBATCHNORM
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Builds elementwise tessel ops whose result types follow numpy broadcasting,
/// all at one location (the batch_norm's: the folded weights are its work).
class WeightMath {
public:
  WeightMath(PatternRewriter &rewriter, Location loc) : rewriter(rewriter), loc(loc) {}

  template <typename BinaryOp> Value binary(Value lhs, Value rhs) {
    SmallVector<int64_t> shape;
    bool broadcasts = OpTrait::util::getBroadcastedShape(
        typeOf(lhs).getShape(), typeOf(rhs).getShape(), shape);
    assert(broadcasts && "operands are checked to broadcast");
    (void)broadcasts;
    auto type = RankedTensorType::get(shape, typeOf(lhs).getElementType());
    return rewriter.create<BinaryOp>(loc, type, lhs, rhs);
  }

  Value splat(RankedTensorType type, double value) {
    auto element = cast<FloatType>(type.getElementType());
    return rewriter.create<ConstantOp>(
        loc, type, DenseElementsAttr::get(type, rewriter.getFloatAttr(element, value)));
  }

  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, typeOf(v).getElementType());
    return rewriter.create<ReshapeOp>(loc, type, v);
  }

  /// s = scale / sqrt(variance + epsilon), the factor channel c is scaled by.
  Value factor(BatchNormOp bn) {
    Value epsilon = splat(typeOf(bn.getVariance()), bn.getEpsilon().convertToDouble());
    Value deviation = rewriter.create<SqrtOp>(
        loc, bn.getVariance().getType(), binary<AddOp>(bn.getVariance(), epsilon));
    return binary<DivOp>(bn.getScale(), deviation);
  }

  /// (z - mean) * s + bias for a per-channel z (z absent: 0).
  Value shift(BatchNormOp bn, Value z, Value s) {
    if (!z)
      z = splat(typeOf(bn.getMean()), 0.0);
    return binary<AddOp>(binary<MulOp>(binary<SubOp>(z, bn.getMean()), s), bn.getBias());
  }

private:
  PatternRewriter &rewriter;
  Location loc;
};

/// What both folds need of the batch_norm: constant statistics, and every
/// value (absent optional operands skipped) of the producer's float type, so
/// that the weight arithmetic is well typed.
LogicalResult checkFoldable(BatchNormOp bn, ArrayRef<Value> producerConstants,
                            PatternRewriter &rewriter) {
  Type element = typeOf(bn.getInput()).getElementType();
  if (!isa<FloatType>(element))
    return rewriter.notifyMatchFailure(bn, "not a float batch_norm");
  SmallVector<Value> values(producerConstants);
  values.append({bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()});
  for (Value v : values) {
    if (!v)
      continue;
    if (!v.getDefiningOp<ConstantOp>())
      return rewriter.notifyMatchFailure(bn, "a weight or statistic is not a constant");
    if (typeOf(v).getElementType() != element)
      return rewriter.notifyMatchFailure(bn, "weights and statistics differ in type");
  }
  return success();
}

/// batch_norm(conv(x, W, b)) -> conv(x, W * s, (b - mean) * s + bias).
struct FoldConvBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp bn, PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<ConvOp>();
    if (!conv || !conv->hasOneUse())
      return rewriter.notifyMatchFailure(bn, "input is not a conv used only here");
    // The epilogue adds the residual and applies the activation after the
    // bias; the affine map must come before both to be folded into W and b.
    if (conv.getResidual() || conv.getActivation() != Activation::None)
      return rewriter.notifyMatchFailure(bn, "conv has a residual or an activation");
    // batch_norm normalizes axis 1, the conv's channels only in NCHW.
    if (conv.getLayout() != Layout::NCHW)
      return rewriter.notifyMatchFailure(bn, "axis 1 of an NHWC conv is not its channels");
    if (failed(checkFoldable(bn, {conv.getWeight(), conv.getBias()}, rewriter)))
      return failure();

    rewriter.setInsertionPoint(bn);
    WeightMath math(rewriter, bn.getLoc());
    Value s = math.factor(bn);
    // Output channels are the weight's dim 0 in both layouts (OIHW, OHWI).
    RankedTensorType weightType = typeOf(conv.getWeight());
    SmallVector<int64_t> perChannel(weightType.getRank(), 1);
    perChannel[0] = weightType.getDimSize(0);
    Value weight = math.binary<MulOp>(conv.getWeight(), math.reshape(s, perChannel));
    Value bias = math.shift(bn, conv.getBias(), s);

    Location loc = rewriter.getFusedLoc({conv.getLoc(), bn.getLoc()});
    rewriter.modifyOpInPlace(conv, [&] {
      conv.getWeightMutable().assign(weight);
      conv.getBiasMutable().assign(bias);
      conv->setLoc(loc);
    });
    rewriter.moveOpBefore(conv, bn);
    rewriter.replaceOp(bn, conv.getResult());
    return success();
  }
};

/// batch_norm(gemm(A, B, C)) over the gemm's columns (axis 1 of M x N):
/// alpha * A * (B * s) + ((beta * C - mean) * s + bias), beta' = 1.
struct FoldGemmBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp bn, PatternRewriter &rewriter) const override {
    auto gemm = bn.getInput().getDefiningOp<GemmOp>();
    if (!gemm || !gemm->hasOneUse())
      return rewriter.notifyMatchFailure(bn, "input is not a gemm used only here");
    if (gemm.getActivation() != Activation::None)
      return rewriter.notifyMatchFailure(bn, "gemm has an activation");
    // A residual is not scaled by B's factors; a rank > 2 result's axis 1
    // is not the gemm's columns.
    if (gemm.getResidual() || typeOf(gemm.getOutput()).getRank() != 2)
      return rewriter.notifyMatchFailure(bn, "gemm has a residual or a rank > 2 result");
    if (failed(checkFoldable(bn, {gemm.getB(), gemm.getC()}, rewriter)))
      return failure();

    rewriter.setInsertionPoint(bn);
    WeightMath math(rewriter, bn.getLoc());
    Value s = math.factor(bn);
    // Column n of op(B) is column n of B, or row n of B when transposed.
    int64_t n = typeOf(gemm.getOutput()).getDimSize(1);
    Value b = math.binary<MulOp>(gemm.getB(),
                                 gemm.getTransB() ? math.reshape(s, {n, 1}) : s);
    Value c = gemm.getC();
    if (c && !gemm.getBeta().isExactlyValue(1.0))
      c = math.binary<MulOp>(
          c, math.splat(typeOf(c), gemm.getBeta().convertToDouble()));
    c = math.shift(bn, c, s);

    Location loc = rewriter.getFusedLoc({gemm.getLoc(), bn.getLoc()});
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getBMutable().assign(b);
      gemm.getCMutable().assign(c);
      gemm.setBeta(APFloat(1.0f));
      gemm->setLoc(loc);
    });
    rewriter.moveOpBefore(gemm, bn);
    rewriter.replaceOp(bn, gemm.getResult());
    return success();
  }
};

struct FoldBatchNormPass : impl::FoldBatchNormBase<FoldBatchNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFoldBatchNormPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateFoldBatchNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldConvBatchNorm, FoldGemmBatchNorm>(patterns.getContext());
}

} // namespace tessel
