//===- Pipeline.cpp - the compile pipeline, in order ----------------------===//
#include "Pipeline.h"

#include "ElementwiseGroups.h"
#include "Passes.h"
#include "mlir/Transforms/Passes.h"

namespace tessel {

void buildPipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  // 0. Data-dependent extents (NonMaxSuppression's rows) followed to the
  //    outputs, before anything folds.          [data-dependent-extents]
  func.addPass(createDataDependentExtents());
  // 1. Evaluate what is constant (shape subgraphs) and canonicalize
  //    (reshape/transpose chains).
  func.addPass(createFoldConstants());
  func.addPass(mlir::createCanonicalizerPass());
  // 2. LayerNormalization from its opset < 17 decomposition. [fuse-layer-norm]
  func.addPass(createFuseLayerNorm());
  //    GELU from its erf or tanh decomposition.         [fuse-gelu]
  func.addPass(createFuseGelu());
  //    SiLU and hard-swish from x * gate(x).             [fuse-swish]
  func.addPass(createFuseSwish());
  //    softmax(Q K^T * scale + mask) V into one attention.  [fuse-attention]
  func.addPass(createFuseAttention());
  //    BatchNormalization into the preceding conv/gemm.   [fold-batch-norm]
  func.addPass(createFoldBatchNorm());
  // 3. Bias, residual and activation into conv/gemm.      [fuse-epilogue]
  func.addPass(createFuseEpilogue());
  //    Q, K and V projections as one gemm; the heads read and written in
  //    place by the attention.                          [attention-layout]
  func.addPass(createAttentionLayout());
  //    ... which may leave a residual add next to a gemm: again.
  func.addPass(createFuseEpilogue());
  //    The folded and merged weights become f32 constants here, so that
  //    lower-precision rounds each to f16 once instead of computing them
  //    in f16.
  func.addPass(createFoldConstants());
  // 4. f16 storage and Tensor Core math, f32 accumulate.  [lower-precision]
  LowerPrecisionOptions precision;
  precision.precision = options.precision;
  precision.fp32Nodes = options.fp32Nodes;
  func.addPass(createLowerPrecision(precision));
  // 5. NHWC activations, transposes cancelled.            [to-nhwc]
  func.addPass(createToNHWC());
  // 6. Channels padded to the Tensor Core multiple.       [pad-channels]
  func.addPass(createPadChannels());
  // 7. Inputs and outputs in the caller's format; the boundary converts then
  //    fold with their inverses below.                   [io-format]
  func.addPass(createIOFormat({options.ioLayout, options.ioDtype}));
  //    A squeeze-excitation gate's channel scale into the operand load of
  //    the conv that reads the product.             [fuse-channel-scale]
  func.addPass(createFuseChannelScale());
  //    ... and its squeeze: the global pool and the first 1x1 conv as one
  //    step.                                          [fuse-pool-fc]
  func.addPass(createFusePoolFc());
  // 8. Fold the compile-time work the passes above left (permuted, padded,
  //    converted weights) and clean up.
  func.addPass(createFoldConstants());
  func.addPass(mlir::createCanonicalizerPass());
  func.addPass(mlir::createCSEPass());
  // 9. What is left of elementwise work in connected groups, one generated
  //    kernel each (NVRTC's, when the engine has GPU targets: without it the
  //    ops stay the library's).                      [fuse-elementwise]
  if (options.targets.empty() || custom::elementwiseGroupsUnavailable().empty())
    func.addPass(createFuseElementwise());
}

mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                const CompileOptions &options) {
  mlir::PassManager pm(module.getContext());
  buildPipeline(pm, options);
  return pm.run(module);
}

} // namespace tessel
