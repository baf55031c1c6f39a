//===- Passes.td - Tessel's graph passes ----------------------*- tablegen -*-===//
#ifndef TESSEL_PASSES_TD
#define TESSEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def DataDependentExtents : Pass<"tessel-data-dependent-extents", "mlir::func::FuncOp"> {
  let summary = "Follow data-dependent extents (NonMaxSuppression's rows) to the outputs";
  let description = [{
    An op whose result has a data-dependent extent computes into a static
    bound and writes the extent into a count tensor; the rows past it are
    padding. The pass follows each such extent through the ops that keep
    the rows of one axis apart (elementwise ops, gather, slices along other
    axes or from the start, reshapes that keep the axis, transposes, concats
    and reductions along other axes) and refuses, at its node, any op that
    would mix padding into real values. A function result carrying one gets
    a companion result, its count, with `tessel.extent_of = [result, axis]`
    (DataDependentExtents.cpp). Runs before anything folds.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FoldConstants : Pass<"tessel-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants at compile time";
  let description = [{
    Runs the runtime's own CPU kernel for each op whose operands are all
    `tessel.constant`s and replaces it with a constant: shape-computing
    subgraphs (Shape -> Gather -> Concat -> Reshape and the like) and weight
    preprocessing disappear before code generation. Ops producing more than
    `max-elements` elements are left alone to keep engines small, unless the
    result is smaller than the constants it is computed from (weights
    converted to f16, slices): those always fold.
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

def FuseGelu : Pass<"tessel-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "GELU from its op-by-op decompositions (erf and tanh forms)";
  let description = [{
    `0.5 * x * (1 + erf(x / sqrt 2))` becomes `gelu(x)` and
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` becomes
    `gelu_tanh(x)`, in any order and grouping of the products, when every
    intermediate is used only inside the decomposition, nothing broadcasts
    and the subgraph evaluates to GELU at sample points (FuseGelu.cpp).
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseSwish : Pass<"tessel-fuse-swish", "mlir::func::FuncOp"> {
  let summary = "SiLU and hard-swish from x * gate(x)";
  let description = [{
    `x * sigmoid(x)` becomes `silu(x)` and `x * hard_sigmoid(x)` with
    hard-swish's constants (alpha 1/6, beta 1/2) becomes `hard_swish(x)`,
    the product in either order, when the gate reads the product's other
    operand and has no other user (FuseSwish.cpp).
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseLayerNorm : Pass<"tessel-fuse-layer-norm", "mlir::func::FuncOp"> {
  let summary = "LayerNormalization from its op-by-op decomposition (opsets below 17)";
  let description = [{
    `div(x - mean(x), sqrt(mean((x - mean(x))^2) + eps))`, the means over
    x's trailing dims with keepdims, optionally times a constant gamma and
    plus a constant beta (each broadcasting along the normalized dims only),
    becomes `layer_norm(x, gamma, beta)` with `axis` the first reduced dim
    and `epsilon` eps (gamma ones when absent). The square may be
    `pow(d, 2)` or `mul(d, d)`. Every intermediate must have no use outside
    the pattern; otherwise nothing changes. The layer_norm's location is the
    fused locations of the ops it replaces.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseAttention : Pass<"tessel-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Scaled dot-product attention from its op-by-op form into tessel.attention";
  let description = [{
    `matmul(softmax(mask(matmul(q, kT) * scale)), v)` as PyTorch exports it
    (kT a transpose of k or a tensor of its own; the scale a constant
    multiplication or division of the product, of q or of kT; the mask an
    add of a float tensor or a where with a constant fill of -inf or at
    most -1e4; softmax over the last axis) becomes
    `attention(q, k, v, mask?) {scale, causal}`. A constant mask that hides
    exactly the keys past the bottom-right diagonal becomes `causal`; a
    where with fill -inf keeps its condition as a bool mask (inverted by a
    `not` when the fill is the where's first value); a finite fill becomes
    the additive mask `where(c, 0, fill)`.

    Every intermediate must have no use outside the pattern, Q, K and V rank
    3 or 4 with the same leading dims, the masks broadcast to the scores
    without widening them, at most one mask besides a causal one, and head
    dims the GPU kernels take; otherwise nothing changes, and where the ops
    look like attention (a matmul feeding the softmax, a matmul reading it)
    a remark at the softmax's node says what failed. The attention's
    location is the fused locations of the ops it replaces.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def AttentionLayout : Pass<"tessel-attention-layout", "mlir::func::FuncOp"> {
  let summary = "Head splits and merges around tessel.attention as views; Q, K and V projections as one gemm";
  let description = [{
    The reshapes, transposes and slices that split a projection into heads
    before a tessel.attention, and the transpose that merges its heads
    after, become the attention's `dims` and `views` (tessel/attention.h):
    it reads Q, K and V where the projections wrote them and writes its
    result in its consumer's layout. Three gemms of one input with constant
    weights and biases, each read only by one of Q, K and V's head splits,
    first become one gemm over the concatenated weights. A view that is not
    whole 16-byte runs (offsets and strides multiples of 8), or whose
    element map does not compose, is not taken: that operand stays as it
    was.
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

def LowerPrecision : Pass<"tessel-lower-precision", "mlir::func::FuncOp"> {
  let summary = "f16 storage, f32 accumulation; numerically sensitive ops in f32";
  let description = [{
    `precision=fp32` changes nothing. `precision=fp16` retypes the f32 tensors
    of the graph by a per-op policy (`precisionClass` in LowerPrecision.h; the
    compile report prints the same classes):

    - Tensor Core ops (conv, conv_transpose, gemm, matmul): every float operand
      (input, weight, bias, residual, C) and the result in f16; the kernels
      accumulate and apply the epilogue in f32 and round once, at the store.
    - f16 ops, whose condition number is at most ~1 so that f16 storage costs
      one rounding (u = 2^-11) per result: add, sub, mul, div, prelu, sigmoid,
      tanh, sqrt, reciprocal, atan, asinh, softplus, softsign, hard_swish,
      hard_sigmoid, leaky_relu, elu, celu, selu, shrink, avg_pool. Their CPU
      kernels widen to f32 (avg_pool: f64), compute, and round the result.
    - f32 ops, numerically sensitive: softmax, log_softmax, reduce_sum,
      reduce_mean (the global average pool), reduce_prod, reduce_l1, reduce_l2,
      reduce_log_sum, reduce_log_sum_exp, reduce_sum_square (long sums, results
      beyond f16's range), batch_norm, instance_norm, layer_norm, lrn
      (statistics), exp, pow, sinh, cosh (results beyond f16's range: exp
      overflows it above 11.09), log, erf, sin, cos, tan, asin, acos, acosh,
      atanh, mod (they amplify the input's rounding: log near 1, erf inside
      GELU's 1 + erf, trig functions by |x|, mod by |x / y|). Their
      operands are widened to f32 and their results stay f32 until a
      consumer that runs in f16. So is every op the policy does not name.
    - Exact ops, whose result is one of their operands' elements: data
      movement (reshape, transpose, concat, slice, pad, gather, expand, tile,
      identity), selection (relu, abs, neg, sign, floor, ceil, round,
      thresholded_relu, clip, max, min, where, max_pool, reduce_max (the global
      max pool), reduce_min, argmax, argmin) and comparisons. They run in the
      type their operands arrive in (f32 if any non-constant operand is f32,
      widening the rest exactly; else f16), so that a precision change never
      round-trips through them: reduce_mean -> reshape -> output stays f32.

    Constants of f32 type are converted where used: a `tessel.cast` on the
    constant, which fold-constants (after this pass in the pipeline) turns
    into an f16 constant; weights of f32 ops (norm statistics) stay f32.
    Graph inputs and outputs keep the model's types: a cast follows each f32
    input where an f16 op first uses it and precedes each output produced in
    f16. Casts are inserted only where an operand's type differs from the type
    its op runs in, one per value and type, located at the ONNX node that
    needs the other precision. Tensors the model did not give f32 (i64 shape
    arithmetic, bool masks, the model's own f16 or f64, a model Cast's
    result) are never retyped; a model Cast takes its operand in whatever
    type it arrives.

    `fp32-nodes` names ONNX nodes (tessel-compile --fp32-nodes, from
    tessel-run --check-overflow's report) whose ops stay in f32: each op
    whose location names one of them is pinned (kModelPrecisionAttr, the f32
    class) before the rewrite; a name no op carries is a warning.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp16\"",
           "fp16 (f16 storage, f32 accumulation) or fp32 (no change)">,
    ListOption<"fp32Nodes", "fp32-nodes", "std::string",
               "ONNX node names whose ops stay in f32">
  ];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def ToNHWC : Pass<"tessel-to-nhwc", "mlir::func::FuncOp"> {
  let summary = "NHWC for 4-D activations; transposes cancelled";
  let description = [{
    A Tensor Core conv is an implicit GEMM whose reduction dim (window x input
    channels) must be contiguous: NHWC activations with OHWI weights. Each 4-D
    NCHW conv becomes `transpose(conv(transpose(x), w', b, transpose(r))
    NHWC)`, w' the OIHW weight transposed to OHWI (a transpose of the
    constant, which fold-constants evaluates); 4-D max_pool and avg_pool
    likewise. A gemm's constant [K][N] weight becomes K-major too ([N][K],
    transB), the layout the Tensor Core tiers gather along K (tc-sm90's
    wgmma reads nothing else); a matmul by a 2-D constant (a Linear layer
    without bias) becomes such a gemm over its flattened rows.

    Then the transposes move: NHWC->NCHW transposes sink towards the graph
    outputs, NCHW->NHWC ones rise towards the graph inputs (the latter only
    through ops with one use and never multiplying), through layout-agnostic
    ops: elementwise unary ops and cast; binary ops and where when each other
    operand is transposed alike, a constant (transposed at compile time) or a
    broadcast operand whose permutation is a reshape (a [C, 1, 1] bias becomes
    [1, 1, C]); concat, softmax, log_softmax, argmax/argmin (axis remapped),
    the reductions (axes remapped; without keepdims the kept dims are
    permuted back); slice and pad (per-dim lists permuted). Where they meet
    they compose away; a transpose that moves only size-1 dims (the global
    pool's [N, C, 1, 1]) becomes a reshape, and reshape chains collapse.
    batch_norm, instance_norm, lrn, conv_transpose, gemm and everything else
    keep their layout with transposes around them. On a CNN the transposes
    left are after the graph inputs and before the graph outputs.

    3-D and 5-D convs and pools are not rewritten.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseChannelScale : Pass<"tessel-fuse-channel-scale", "mlir::func::FuncOp"> {
  let summary = "A per-image, per-channel scale into the conv that reads it";
  let description = [{
    `conv(mul(x, s))`, where `s` holds one value per image and input channel
    (shape [N, 1, ..., C] in NHWC, [N, C, 1, ...] in NCHW: a
    squeeze-excitation gate), the product in either order and used by the
    conv (group 1) alone, becomes `conv(x) scale s`: the conv's operand load applies
    the scale and the product is no step of its own (FuseChannelScale.cpp).
    Runs after the layout and padding passes, which do not move the scale.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FusePoolFc : Pass<"tessel-fuse-pool-fc", "mlir::func::FuncOp"> {
  let summary = "A global average pool and the 1x1 conv that alone reads it into one pool_fc";
  let description = [{
    The squeeze of a squeeze-excitation block: `conv(reduce_mean(x))` with
    x NHWC f16, the mean over every spatial dim with its dims kept and read
    by the conv alone, the conv 1x1 (stride 1, no padding, group 1, no
    residual or input scale) becomes `pool_fc(x, w) bias b` with the conv's
    activation: one step instead of two (FusePoolFc.cpp). Its GPU kernel
    reads x in 16-byte runs, so x must be f16 with a multiple of 8 channels
    (the padding pass's); other pools and convs stay as they are. Runs after
    the layout and padding passes.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def FuseElementwise : Pass<"tessel-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Connected groups of elementwise ops into one elementwise_group each";
  let description = [{
    Two or more elementwise ops (unary, binary with numpy broadcasting,
    clip, where, casts between f16 and f32) whose intermediates nothing
    outside the group reads become one `elementwise_group` step, its
    expression a program (tessel/elementwise_program.h) that the CPU tier
    interprets and from which the GPU kernel is generated at compile time
    (FuseElementwise.cpp). Splat constants become literals. f64, integer
    and bool results, mod with the divisor's sign, comparisons and logic
    stay out. Runs last, after the other fusions.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def PadChannels : Pass<"tessel-pad-channels", "mlir::func::FuncOp"> {
  let summary = "Pad conv channel counts and gemm dims to the Tensor Core multiple (8)";
  let description = [{
    A Tensor Core MMA consumes channels in 16-byte vectors: 8 f16. An NHWC
    conv (group 1, constant weight and bias) whose input channels C or output
    channels M are not a multiple of 8 gets C8 = roundup(C, 8) input and
    M8 = roundup(M, 8) output channels: the activation is zero-padded by a
    `tessel.pad` (unless its producer already yields C8 channels), the OHWI
    weight to M8 x k x k x C8, the bias to M8 and the residual to M8 channels
    with zeros (pads of the constants, for fold-constants).

    Invariant: the extra channels of a padded tensor hold arbitrary *finite*
    values (sigmoid(0) = 0.5 is one), and every consumer either ignores them
    or receives a slice that removes them. So the padding propagates, in
    program order, only through ops that keep channels independent and finite
    values finite: relu, sigmoid, tanh and the other bounded elementwise
    unary ops, cast; add, sub, mul, max, min and prelu whose other operands
    are padded alike, broadcast along channels, or constants with a value per
    channel (zero-padded); div by such a constant (padded with ones); NHWC
    max_pool and avg_pool; reductions not over the channel axis; the next
    eligible conv (whose weights are zero for the extra input channels: 0 x
    finite = 0), a padded gemm (below). Every other consumer (channel
    reductions, softmax, reshape, other gemms, matmul, concat, transposes,
    graph outputs, anything unknown) reads a `tessel.slice` back to the
    real channels. exp, log, sqrt, reciprocal
    and the like stop the padding, as they can turn finite values into
    inf/NaN, which a zero weight does not cancel.

    An f16 gemm whose operand holds a dim contiguously that is not a
    multiple of 8 (B's N without transB, A's M with transA, K of A without
    transA or of B with transB; dims of 32 or more) computes on operands
    padded to the multiple (zeros in K; C and the residual padded along M
    and N) and its result is sliced back; padded along N only, the result
    propagates like a conv's padded channels (a gemm consumer takes the
    padded columns as K against zero rows of its B).

    Grouped and depthwise convs are left unpadded: they are not one GEMM over
    the channels (each group reduces over its own C/group channels, a
    depthwise one over the window only), so they do not run on the Tensor
    Core path that needs the multiple, and padding the channel tail would move
    channels across groups.
  }];
  let dependentDialects = ["::tessel::TesselDialect"];
}

def IOFormat : Pass<"tessel-io-format", "mlir::func::FuncOp"> {
  let summary = "Inputs and outputs in NHWC and/or f16, so boundary converts fold";
  let description = [{
    After lower-precision and to-nhwc, a CNN still converts at its boundary:
    each f32 NCHW input is transposed to NHWC and cast to f16, and each
    output is cast back to f32 (and transposed back to NCHW). With
    `layout=nhwc` the function's 4-D f32 arguments and results take the
    NHWC shape; with `dtype=f16` its f32 arguments and results (any rank)
    become f16. The inverse conversion is inserted right at the boundary
    (`transpose` to NCHW and `cast` to f32 after an input, the opposite
    before an output), ordered so that it meets its mirror image in the
    graph; canonicalization then folds each transpose pair and each exact
    cast pair (f16 -> f32 -> f16) away. A conversion with no counterpart
    stays (an f16 input of an op that runs in f32 keeps its cast).

    Tensors the model did not type f32 (i64 shapes, bool masks, a model's
    own f16 or f64) are never changed, and only 4-D tensors change layout.
    Every 4-D f32 argument and result gets a `tessel.layout` attribute,
    "NHWC" or "NCHW" (the model's), which the engine records as the
    tensor's layout. `layout=model dtype=model` changes nothing else.
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"model\"",
           "model (as the ONNX model declares) or nhwc (4-D f32 tensors)">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"model\"",
           "model (as the ONNX model declares) or f16 (f32 tensors)">
  ];
  let dependentDialects = ["::tessel::TesselDialect"];
}

#endif // TESSEL_PASSES_TD
