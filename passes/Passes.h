//===- Passes.h - Tessel's graph passes --------------------------*- C++ -*-===//
#ifndef TESSEL_PASSES_PASSES_H
#define TESSEL_PASSES_PASSES_H

#include "TesselDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace tessel {

#define GEN_PASS_DECL
#include "Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

/// The rewrites of --tessel-fold-batch-norm, --tessel-fuse-epilogue,
/// --tessel-fuse-layer-norm, --tessel-fuse-gelu, --tessel-fuse-swish and
/// --tessel-fuse-attention,
/// for drivers that run them with other patterns.
void populateFoldBatchNormPatterns(mlir::RewritePatternSet &patterns);
void populateFuseEpiloguePatterns(mlir::RewritePatternSet &patterns);
void populateFuseLayerNormPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGeluPatterns(mlir::RewritePatternSet &patterns);
void populateFuseSwishPatterns(mlir::RewritePatternSet &patterns);
void populateFuseAttentionPatterns(mlir::RewritePatternSet &patterns);

} // namespace tessel

#endif // TESSEL_PASSES_PASSES_H
