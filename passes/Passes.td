//===- Passes.td - Tessel's graph passes ----------------------*- tablegen -*-===//
#ifndef TESSEL_PASSES_TD
#define TESSEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"tessel-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants at compile time";
  let description = [{
    Runs the runtime's own CPU kernel for each op whose operands are all
    `tessel.constant`s and replaces it with a constant: shape-computing
    subgraphs (Shape -> Gather -> Concat -> Reshape and the like) and weight
    preprocessing disappear before code generation. Ops producing more than
    `max-elements` elements are left alone to keep engines small.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 24",
           "largest result (in elements) to fold">
  ];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FoldBatchNorm : Pass<"tessel-fold-batch-norm", "mlir::func::FuncOp"> {
  let summary = "Fold inference BatchNormalization into the preceding conv or gemm";
  let description = [{
    `batch_norm(conv(x, W, b))` becomes `conv(x, W * s, (b - mean) * s + bias)`
    with `s = scale / sqrt(variance + epsilon)` scaling W's output channels
    (dim 0). Applies when the conv result has no other use, the conv has no
    residual or activation yet, its layout is NCHW (batch_norm normalizes axis
    1), and W, b (if present) and the four statistics are constants.
    `batch_norm(gemm(A, B, C))` over the gemm's columns becomes
    `gemm(A, B * s, (beta * C - mean) * s + bias)` with beta 1, under the same
    conditions on B and C.

    The new weights are tessel ops on the constants (mul, sub, add, div, sqrt,
    reshape), left for --tessel-fold-constants to evaluate with the runtime's
    kernels. The conv or gemm keeps its location fused with the batch_norm's.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseEpilogue : Pass<"tessel-fuse-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fuse bias, residual add and activation into conv and gemm";
  let description = [{
    The epilogue is `y = act(conv(x, w) + bias + residual)`. Into a conv whose
    result has exactly one use:
    - `add(conv, c)`, c a constant adding one value per output channel
      ([1, M, 1, 1] or [M, 1, 1] in NCHW, [M] or [1, 1, 1, M] in NHWC), joins
      the bias (a tessel.add with an existing bias, for fold-constants);
    - `add(conv, r)` or `add(r, conv)`, r of the conv's result type, becomes
      the residual;
    both only while the conv has no residual and no activation;
    - relu, clip (alpha = min, beta = max), leaky_relu (alpha), sigmoid, tanh
      and hard_swish become the activation while it is none, and the same for
      gemm (act_alpha, act_beta).
    `add(matmul(a, B), c)` with a 2-D, B a 2-D constant and c a constant of
    shape [N] or [1, N] becomes `gemm(a, B, c)`. The fused op's location is
    the producer's fused with every absorbed op's.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

#endif // TESSEL_PASSES_TD
