//===- FuseSwish.cpp - --tessel-fuse-swish --------------------------------===//
//
// The gated activations x * gate(x) as exporters write them, op by op:
//
//   x * sigmoid(x)                          -> tessel.silu      (nn.SiLU)
//   x * hard_sigmoid(x; alpha=1/6, beta=1/2) -> tessel.hard_swish (nn.Hardswish
//                                                   below opset 14)
//
// the product in either order. One op instead of two steps, and an op a
// conv's or gemm's epilogue applies (--tessel-fuse-epilogue): an
// EfficientNet's convs and their SiLU, a MobileNetV3's and their
// hard-swish, become one kernel each. Before, the conv's result had two
// consumers (the gate and the product), so neither could join its epilogue.
//
// Matched by structure: the gate's input is the product's other operand
// (the same value, so nothing broadcasts) and the gate has no other user.
// hard_sigmoid's constants must be hard-swish's to within f32's rounding of
// 1/6; any other gate stays as it was.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace tessel {
#define GEN_PASS_DEF_FUSESWISH
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

/// Whether `gate` is the gate of a swish of kind FusedOp.
bool isSiluGate(Operation *gate) { return isa<SigmoidOp>(gate); }
bool isHardSwishGate(Operation *gate) {
  auto hs = dyn_cast<HardSigmoidOp>(gate);
  // nn.Hardswish exports alpha as f32(1/6): within a relative 1e-6 of it.
  return hs && std::fabs(hs.getAlpha().convertToDouble() * 6.0 - 1.0) <= 1e-6 &&
         hs.getBeta().convertToDouble() == 0.5;
}

template <typename FusedOp> struct FuseGated : OpRewritePattern<MulOp> {
  FuseGated(MLIRContext *context, bool (*isGate)(Operation *))
      : OpRewritePattern<MulOp>(context), isGate(isGate) {}

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      Value x = mul->getOperand(1 - i), gated = mul->getOperand(i);
      Operation *gate = gated.getDefiningOp();
      if (!gate || !isGate(gate) || gate->getOperand(0) != x || !gated.hasOneUse() ||
          x.getType() != mul.getType())
        continue;
      Location loc = rewriter.getFusedLoc({gate->getLoc(), mul.getLoc()});
      rewriter.replaceOpWithNewOp<FusedOp>(mul, mul.getType(), x)->setLoc(loc);
      rewriter.eraseOp(gate);
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not x times a gate of x");
  }

  bool (*isGate)(Operation *);
};

struct FuseSwishPass : impl::FuseSwishBase<FuseSwishPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseSwishPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateFuseSwishPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGated<SiluOp>>(patterns.getContext(), &isSiluGate);
  patterns.add<FuseGated<HardSwishOp>>(patterns.getContext(), &isHardSwishGate);
}

} // namespace tessel
