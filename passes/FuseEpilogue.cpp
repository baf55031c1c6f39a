//===- FuseEpilogue.cpp - --tessel-fuse-epilogue --------------------------===//
//
// Moves the elementwise work that follows a conv or gemm into its epilogue,
// which a Tensor Core kernel applies to its f32 accumulators before the one
// store: y = act(conv(x, w) + bias + residual). Each fusion saves a full read
// and write of the activation tensor.
//
// The order of that formula is the rule: a per-channel constant add joins the
// bias and a same-shaped add becomes the residual only while the activation
// is still none; an activation fuses while none is set. An add after an
// activation stays an add.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_FUSEEPILOGUE
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The conv producing `v` if its epilogue can still take a bias or a
/// residual: `v` is its only use (nothing else sees the pre-add value), and
/// it has no residual and no activation, which apply after the bias.
ConvOp convBeforeActivation(Value v) {
  auto conv = v.getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse() || conv.getResidual() ||
      conv.getActivation() != Activation::None)
    return {};
  return conv;
}

/// Whether adding `c` (numpy broadcasting) to a result of shape `result`
/// adds one value per channel: every dim of `c` is 1 except, possibly, the
/// one aligned with the channel axis. ([M] in NCHW is aligned with W.)
bool isPerChannel(ArrayRef<int64_t> result, int64_t channelAxis, ArrayRef<int64_t> c) {
  if (c.size() > result.size())
    return false;
  int64_t offset = result.size() - c.size();
  for (auto [i, extent] : llvm::enumerate(c))
    if (extent != 1 && !(offset + int64_t(i) == channelAxis && extent == result[channelAxis]))
      return false;
  return true;
}

/// add(conv, c), c a per-channel constant -> conv with bias + c.
struct FuseConvBias : OpRewritePattern<AddOp> {
  // Before FuseConvResidual: a constant of the result's shape can be both,
  // and a bias is the cheaper epilogue.
  FuseConvBias(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [mine, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      ConvOp conv = convBeforeActivation(mine);
      if (!conv || !other.getDefiningOp<ConstantOp>() || add.getType() != conv.getType())
        continue;
      ArrayRef<int64_t> shape = conv.getType().getShape();
      int64_t channelAxis = conv.getLayout() == Layout::NHWC ? shape.size() - 1 : 1;
      if (!isPerChannel(shape, channelAxis, typeOf(other).getShape()))
        continue;

      rewriter.setInsertionPoint(add);
      int64_t channels = shape[channelAxis];
      Type element = conv.getType().getElementType();
      auto vectorType = RankedTensorType::get({channels}, element);
      Value bias = other;
      if (typeOf(other).getNumElements() == channels) {
        if (typeOf(other) != vectorType)
          bias = rewriter.create<ReshapeOp>(add.getLoc(), vectorType, other);
      } else {
        // One value for all channels.
        bias = rewriter.create<ReshapeOp>(add.getLoc(),
                                          RankedTensorType::get({1}, element), other);
        bias = rewriter.create<ExpandOp>(add.getLoc(), vectorType, bias);
      }
      if (Value existing = conv.getBias())
        bias = rewriter.create<AddOp>(add.getLoc(), vectorType, existing, bias);

      Location loc = rewriter.getFusedLoc({conv.getLoc(), add.getLoc()});
      rewriter.modifyOpInPlace(conv, [&] {
        conv.getBiasMutable().assign(bias);
        conv->setLoc(loc);
      });
      rewriter.moveOpBefore(conv, add);
      rewriter.replaceOp(add, conv.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a conv plus a per-channel constant");
  }
};

/// add(conv, r) or add(r, conv), r of the conv's result type -> conv with
/// residual r (ResNet's shortcut).
struct FuseConvResidual : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [mine, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      ConvOp conv = convBeforeActivation(mine);
      if (!conv || other.getType() != conv.getType() || add.getType() != conv.getType())
        continue;
      Location loc = rewriter.getFusedLoc({conv.getLoc(), add.getLoc()});
      rewriter.modifyOpInPlace(conv, [&] {
        conv.getResidualMutable().assign(other);
        conv->setLoc(loc);
      });
      // `other` may be computed after the conv: the conv moves down to the
      // add, which its operands dominate because it did.
      rewriter.moveOpBefore(conv, add);
      rewriter.replaceOp(add, conv.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a conv plus a tensor of its type");
  }
};

/// act(conv) or act(gemm) -> the producer with that activation, while its
/// activation is none (a second one would apply after the first). The
/// activations are the ops that declare how an epilogue applies them
/// (EpilogueActivationOpInterface).
struct FuseActivation : OpInterfaceRewritePattern<EpilogueActivationOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(EpilogueActivationOpInterface op,
                                PatternRewriter &rewriter) const override {
    Operation *producer = op->getOperand(0).getDefiningOp();
    if (!producer || !isa<ConvOp, GemmOp>(producer) || !producer->hasOneUse())
      return rewriter.notifyMatchFailure(op, "input is not a conv or gemm used only here");
    EpilogueActivation act = op.getEpilogueActivation();
    Location loc = rewriter.getFusedLoc({producer->getLoc(), op->getLoc()});
    if (auto conv = dyn_cast<ConvOp>(producer)) {
      if (conv.getActivation() != Activation::None)
        return rewriter.notifyMatchFailure(op, "conv already has an activation");
      rewriter.modifyOpInPlace(conv, [&] {
        conv.setActivation(act.kind);
        conv.setAlpha(APFloat(act.alpha));
        conv.setBeta(APFloat(act.beta));
        conv->setLoc(loc);
      });
    } else {
      auto gemm = cast<GemmOp>(producer);
      if (gemm.getActivation() != Activation::None)
        return rewriter.notifyMatchFailure(op, "gemm already has an activation");
      rewriter.modifyOpInPlace(gemm, [&] {
        gemm.setActivation(act.kind);
        gemm.setActAlpha(APFloat(act.alpha));
        gemm.setActBeta(APFloat(act.beta));
        gemm->setLoc(loc);
      });
    }
    rewriter.replaceOp(op, producer->getResults());
    return success();
  }
};

/// A gemm whose epilogue can still take a bias or a residual (`v` its only
/// use, no residual, no activation), or a matmul that can become one: a
/// Linear layer's x * W, x of rank >= 2 (a [batch, sequence, features]
/// activation is a gemm over its flattened rows) and W a 2-D constant.
struct GemmCandidate {
  GemmOp gemm;
  MatMulOp matmul;

  explicit operator bool() const { return gemm || matmul; }
  bool hasC() { return gemm && gemm.getC(); }

  /// The gemm, creating it from the matmul.
  GemmOp materialize(PatternRewriter &rewriter) {
    if (gemm)
      return gemm;
    rewriter.setInsertionPoint(matmul);
    auto created = rewriter.create<GemmOp>(
        matmul.getLoc(), matmul.getType(), matmul.getLhs(), matmul.getRhs(), /*c=*/Value(),
        /*residual=*/Value(), /*alpha=*/APFloat(1.0f), /*beta=*/APFloat(1.0f),
        /*transA=*/false, /*transB=*/false, Activation::None, APFloat(0.0f), APFloat(0.0f));
    rewriter.replaceOp(matmul, created.getResult());
    return created;
  }
};

GemmCandidate gemmBeforeActivation(Value v) {
  if (!v.hasOneUse())
    return {};
  if (auto gemm = v.getDefiningOp<GemmOp>()) {
    if (gemm.getResidual() || gemm.getActivation() != Activation::None)
      return {};
    return {gemm, {}};
  }
  if (auto matmul = v.getDefiningOp<MatMulOp>()) {
    if (typeOf(matmul.getLhs()).getRank() < 2 || typeOf(matmul.getRhs()).getRank() != 2 ||
        !matmul.getRhs().getDefiningOp<ConstantOp>())
      return {};
    return {{}, matmul};
  }
  return {};
}

/// add(gemm, c) or add(matmul(x, W), c), c a constant of shape [N] or
/// [1, N] and the gemm without a C -> gemm with C = c (beta 1): a Linear
/// layer's bias, added before its activation.
struct FuseGemmBias : OpRewritePattern<AddOp> {
  // Before FuseGemmResidual, as FuseConvBias before FuseConvResidual.
  FuseGemmBias(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [mine, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      GemmCandidate candidate = gemmBeforeActivation(mine);
      if (!candidate || candidate.hasC() || add.getType() != mine.getType() ||
          !other.getDefiningOp<ConstantOp>())
        continue;
      int64_t n = typeOf(mine).getShape().back();
      ArrayRef<int64_t> c = typeOf(other).getShape();
      if (c != ArrayRef<int64_t>{n} && c != ArrayRef<int64_t>{1, n})
        continue;
      GemmOp gemm = candidate.materialize(rewriter);
      Location loc = rewriter.getFusedLoc({gemm.getLoc(), add.getLoc()});
      rewriter.modifyOpInPlace(gemm, [&] {
        gemm.getCMutable().assign(other);
        gemm.setBeta(APFloat(1.0f));
        gemm->setLoc(loc);
      });
      rewriter.moveOpBefore(gemm, add);
      rewriter.replaceOp(add, gemm.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a gemm (or a matmul by a constant) plus a row");
  }
};

/// Whether `op` moves no element: a reshape, or a transpose that only moves
/// dims of extent 1.
bool keepsElementOrder(Operation *op) {
  if (isa<ReshapeOp>(op))
    return true;
  auto transpose = dyn_cast<TransposeOp>(op);
  if (!transpose)
    return false;
  ArrayRef<int64_t> in = typeOf(transpose.getInput()).getShape();
  int64_t last = -1;
  for (int64_t p : transpose.getPerm())
    if (in[p] != 1) {
      if (p < last)
        return false;
      last = p;
    }
  return true;
}

/// `v` before the ops that move no element (each used once) that lead to it.
Value beforeElementOrderOps(Value v) {
  while (Operation *def = v.getDefiningOp())
    if (keepsElementOrder(def) && def->getResult(0).hasOneUse())
      v = def->getOperand(0);
    else
      break;
  return v;
}

/// add(gemm, r) or add(r, gemm), r of the gemm's result type -> gemm with
/// residual r (a transformer block's skip connection after its output
/// projection or its MLP's down-projection). The gemm's result may reach the
/// add through ops that move no element (nn.MultiheadAttention's [S*B, E]
/// -> [S, B, E] -> [B, S, E] at B = 1): an elementwise add of same-shaped
/// tensors is the same on their flat elements, so r is reshaped to the
/// gemm's type and the sum back.
struct FuseGemmResidual : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (auto [mine, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      Value product = beforeElementOrderOps(mine);
      GemmCandidate candidate = gemmBeforeActivation(product);
      if (!candidate || other.getType() != mine.getType() || add.getType() != mine.getType())
        continue;
      GemmOp gemm = candidate.materialize(rewriter);
      Value residual = other;
      rewriter.setInsertionPoint(add);
      if (product != mine)
        residual = rewriter.create<ReshapeOp>(add.getLoc(), gemm.getType(), other);
      Location loc = rewriter.getFusedLoc({gemm.getLoc(), add.getLoc()});
      rewriter.modifyOpInPlace(gemm, [&] {
        gemm.getResidualMutable().assign(residual);
        gemm->setLoc(loc);
      });
      // `other` may be computed after the gemm (as for the conv's residual).
      rewriter.moveOpBefore(gemm, add);
      if (product != mine) {
        rewriter.replaceOp(add, rewriter.create<ReshapeOp>(add.getLoc(), add.getType(),
                                                           gemm.getResult()));
      } else {
        rewriter.replaceOp(add, gemm.getResult());
      }
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a gemm plus a tensor of its type");
  }
};

struct FuseEpiloguePass : impl::FuseEpilogueBase<FuseEpiloguePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseEpiloguePatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateFuseEpiloguePatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<FuseConvBias, FuseConvResidual, FuseGemmBias, FuseGemmResidual, FuseActivation>(
      context);
}

} // namespace tessel
