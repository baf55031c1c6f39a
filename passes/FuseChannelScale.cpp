//===- FuseChannelScale.cpp - --tessel-fuse-channel-scale -----------------===//
//
// A squeeze-excitation block ends in a channel scale, `x * s` with s one
// value per image and channel, whose product the next (1x1) conv reads:
//
//   s = sigmoid(conv(silu(conv(mean(x)))))      the gate, [N, 1, 1, C]
//   y = conv(x * s, w)                          the projection
//
// becomes `y = conv(x, w) scale s`: the conv's operand gather multiplies
// each run of x by its run of s (rounded to x's type, as the mul rounds),
// so the scale is no step of its own. The conv (group 1: grouped convs'
// kernels have no prologue) is the product's only user;
// s must have exactly the per-image, per-channel shape (a broadcast along
// the batch or a full-size operand stays a mul) and x's element type.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessel {
#define GEN_PASS_DEF_FUSECHANNELSCALE
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

/// Whether `scale` is one value per image and channel of the conv's `input`.
bool isChannelScale(ConvOp conv, Value input, Value scale) {
  ArrayRef<int64_t> in = shapeOf(input), s = shapeOf(scale);
  if (s.size() != in.size() || in.size() < 3 || elementOf(scale) != elementOf(input))
    return false;
  const size_t channel = conv.getLayout() == Layout::NHWC ? in.size() - 1 : 1;
  for (size_t d = 0; d < in.size(); ++d)
    if (s[d] != (d == 0 || d == channel ? in[d] : 1))
      return false;
  return true;
}

struct FuseScaleIntoConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv, PatternRewriter &rewriter) const override {
    auto mul = conv.getInput().getDefiningOp<MulOp>();
    if (conv.getInputScale() || conv.getGroup() != 1 || !mul || !mul->hasOneUse())
      return rewriter.notifyMatchFailure(conv, "the input is not a product used by it alone");
    for (unsigned i = 0; i < 2; ++i) {
      Value x = mul->getOperand(i), scale = mul->getOperand(1 - i);
      if (x.getType() != mul.getType() || !isChannelScale(conv, x, scale))
        continue;
      rewriter.modifyOpInPlace(conv, [&] {
        conv.getInputMutable().assign(x);
        conv.getInputScaleMutable().assign(scale);
        conv->setLoc(rewriter.getFusedLoc({conv.getLoc(), mul.getLoc()}));
      });
      rewriter.eraseOp(mul);
      return success();
    }
    return rewriter.notifyMatchFailure(conv, "the product is not by a per-image channel scale");
  }
};

struct FuseChannelScalePass : impl::FuseChannelScaleBase<FuseChannelScalePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseScaleIntoConv>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace tessel
