//===- FusePoolFc.cpp - --tessel-fuse-pool-fc -----------------------------===//
//
// A squeeze-excitation block squeezes its input to one value per channel and
// runs the first fully connected layer on it:
//
//   h = act(conv(mean(x), w1) + b1)    pool [N, 1, 1, C], 1x1 conv [N, 1, 1, M]
//
// becomes `h = pool_fc(x, w1) bias b1` with the conv's activation: one step,
// whose GPU kernel sums its part of the pool and multiplies it into the
// weight in each block, the last block of an image adding the blocks' parts
// (StepPlanner::poolFc). The mean is every spatial dim of an NHWC f16 tensor
// with a multiple of 8 channels (the kernel's 16-byte loads) with its dims
// kept, read by the conv alone; the conv is 1x1, stride 1, unpadded, group 1,
// NHWC, without a residual or an input scale. Anything else stays as it was.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"

namespace tessel {
#define GEN_PASS_DEF_FUSEPOOLFC
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

/// Whether `mean` averages every spatial dim of an NHWC f16 tensor with a
/// multiple of 8 channels and keeps its dims.
bool isGlobalPool(ReduceMeanOp mean) {
  ArrayRef<int64_t> x = shapeOf(mean.getInput());
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 3 || !elementOf(mean.getInput()).isF16() || x.back() % 8 != 0 ||
      !mean.getKeepdims())
    return false;
  return llvm::equal(mean.getAxes(), llvm::seq<int64_t>(1, rank - 1));
}

/// Whether `conv` is a fully connected layer on a [N, 1, ..., C] tensor.
bool isPointwiseFc(ConvOp conv) {
  auto ones = [](ArrayRef<int64_t> v) { return llvm::all_of(v, [](int64_t e) { return e == 1; }); };
  ArrayRef<int64_t> w = shapeOf(conv.getWeight());
  return conv.getLayout() == Layout::NHWC && conv.getGroup() == 1 && !conv.getResidual() &&
         !conv.getInputScale() && ones(conv.getStrides()) && ones(conv.getDilations()) &&
         llvm::all_of(conv.getPads(), [](int64_t p) { return p == 0; }) &&
         ones(w.drop_front().drop_back());
}

struct FusePoolIntoFc : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv, PatternRewriter &rewriter) const override {
    auto mean = conv.getInput().getDefiningOp<ReduceMeanOp>();
    if (!mean || !mean->hasOneUse())
      return rewriter.notifyMatchFailure(conv, "the input is not a mean read by it alone");
    if (!isGlobalPool(mean))
      return rewriter.notifyMatchFailure(conv, "the mean is not a global pool of NHWC f16");
    if (!isPointwiseFc(conv))
      return rewriter.notifyMatchFailure(conv, "the conv is not a plain 1x1 conv");
    auto fused = rewriter.create<PoolFcOp>(
        rewriter.getFusedLoc({mean.getLoc(), conv.getLoc()}), conv.getType(), mean.getInput(),
        conv.getWeight(), conv.getBias(), conv.getActivationAttr(), conv.getAlphaAttr(),
        conv.getBetaAttr());
    rewriter.replaceOp(conv, fused.getResult());
    rewriter.eraseOp(mean);
    return success();
  }
};

struct FusePoolFcPass : impl::FusePoolFcBase<FusePoolFcPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FusePoolIntoFc>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
