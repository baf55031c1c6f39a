//===- TesselOps.td - ops of the tessel graph dialect ---------*- tablegen -*-===//
//
// Op names are the engine's step names: the engine writer emits
// `op->getName().stripDialect()` and each attribute by its name here, and the
// runtime's kernels read them by the same names (docs/ops.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_TD
#define TESSEL_OPS_TD

include "TesselDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, !listconcat(traits, [Pure])>;

def Tessel_Tensor : StaticShapeTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Constants and copies
//===----------------------------------------------------------------------===//

def Tessel_ConstantOp : Tessel_Op<"constant",
    [ConstantLike, AllTypesMatch<["value", "output"]>]> {
  let summary = "a compile-time tensor (ONNX initializers, Constant, folded subgraphs)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tessel_IdentityOp : Tessel_Op<"identity", [SameOperandsAndResultType]> {
  let summary = "ONNX Identity and inference-mode Dropout; folds away";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Tessel_CastOp : Tessel_Op<"cast", [SameOperandsAndResultShape]> {
  let summary = "element type conversion (ONNX Cast); the result type names the target";
  let description = [{
    Folds away when it converts to the type it is given, and when it undoes
    an exact widening (`cast(cast(x : f16 -> f32) : f32 -> f16)` is `x`), so
    that precision changes never leave round trips behind.
  }];
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Tessel_UnaryOp<string mnemonic, dag params = (ins)>
    : Tessel_Op<mnemonic, [SameOperandsAndResultType]> {
  let summary = "elementwise ONNX " # mnemonic;
  let arguments = !con((ins Tessel_Tensor:$input), params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tessel_ReluOp : Tessel_UnaryOp<"relu">;
def Tessel_SigmoidOp : Tessel_UnaryOp<"sigmoid">;
def Tessel_TanhOp : Tessel_UnaryOp<"tanh">;
def Tessel_AbsOp : Tessel_UnaryOp<"abs">;
def Tessel_NegOp : Tessel_UnaryOp<"neg">;
def Tessel_ExpOp : Tessel_UnaryOp<"exp">;
def Tessel_LogOp : Tessel_UnaryOp<"log">;
def Tessel_SqrtOp : Tessel_UnaryOp<"sqrt">;
def Tessel_ReciprocalOp : Tessel_UnaryOp<"reciprocal">;
def Tessel_FloorOp : Tessel_UnaryOp<"floor">;
def Tessel_CeilOp : Tessel_UnaryOp<"ceil">;
def Tessel_RoundOp : Tessel_UnaryOp<"round">;
def Tessel_SignOp : Tessel_UnaryOp<"sign">;
def Tessel_ErfOp : Tessel_UnaryOp<"erf">;
def Tessel_SinOp : Tessel_UnaryOp<"sin">;
def Tessel_CosOp : Tessel_UnaryOp<"cos">;
def Tessel_TanOp : Tessel_UnaryOp<"tan">;
def Tessel_AsinOp : Tessel_UnaryOp<"asin">;
def Tessel_AcosOp : Tessel_UnaryOp<"acos">;
def Tessel_AtanOp : Tessel_UnaryOp<"atan">;
def Tessel_SinhOp : Tessel_UnaryOp<"sinh">;
def Tessel_CoshOp : Tessel_UnaryOp<"cosh">;
def Tessel_AsinhOp : Tessel_UnaryOp<"asinh">;
def Tessel_AcoshOp : Tessel_UnaryOp<"acosh">;
def Tessel_AtanhOp : Tessel_UnaryOp<"atanh">;
def Tessel_SoftplusOp : Tessel_UnaryOp<"softplus">;
def Tessel_SoftsignOp : Tessel_UnaryOp<"softsign">;
def Tessel_HardSwishOp : Tessel_UnaryOp<"hard_swish">;
def Tessel_NotOp : Tessel_UnaryOp<"not">;
def Tessel_LeakyReluOp : Tessel_UnaryOp<"leaky_relu", (ins F32Attr:$alpha)>;
def Tessel_EluOp : Tessel_UnaryOp<"elu", (ins F32Attr:$alpha)>;
def Tessel_CeluOp : Tessel_UnaryOp<"celu", (ins F32Attr:$alpha)>;
def Tessel_SeluOp : Tessel_UnaryOp<"selu", (ins F32Attr:$alpha, F32Attr:$gamma)>;
def Tessel_ThresholdedReluOp : Tessel_UnaryOp<"thresholded_relu", (ins F32Attr:$alpha)>;
def Tessel_HardSigmoidOp : Tessel_UnaryOp<"hard_sigmoid", (ins F32Attr:$alpha, F32Attr:$beta)>;
def Tessel_ShrinkOp : Tessel_UnaryOp<"shrink", (ins F32Attr:$bias, F32Attr:$lambd)>;
// Bounds are attributes: the importer requires ONNX Clip's min/max inputs to
// be compile-time constants (they are in every exported CNN).
def Tessel_ClipOp : Tessel_UnaryOp<"clip", (ins F64Attr:$min, F64Attr:$max)>;

// Numpy-style broadcasting binary ops. The verifier checks that the result
// shape is the broadcast of the operand shapes.
class Tessel_BinaryOp<string mnemonic, dag params = (ins)> : Tessel_Op<mnemonic> {
  let summary = "elementwise ONNX " # mnemonic # " with numpy broadcasting";
  let arguments = !con((ins Tessel_Tensor:$lhs, Tessel_Tensor:$rhs), params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_AddOp : Tessel_BinaryOp<"add">;
def Tessel_SubOp : Tessel_BinaryOp<"sub">;
def Tessel_MulOp : Tessel_BinaryOp<"mul">;
def Tessel_DivOp : Tessel_BinaryOp<"div">;
def Tessel_PowOp : Tessel_BinaryOp<"pow">;
def Tessel_MaxOp : Tessel_BinaryOp<"max">;
def Tessel_MinOp : Tessel_BinaryOp<"min">;
def Tessel_PReluOp : Tessel_BinaryOp<"prelu">;
def Tessel_EqualOp : Tessel_BinaryOp<"equal">;
def Tessel_LessOp : Tessel_BinaryOp<"less">;
def Tessel_LessEqualOp : Tessel_BinaryOp<"less_equal">;
def Tessel_GreaterOp : Tessel_BinaryOp<"greater">;
def Tessel_GreaterEqualOp : Tessel_BinaryOp<"greater_equal">;
def Tessel_AndOp : Tessel_BinaryOp<"and">;
def Tessel_OrOp : Tessel_BinaryOp<"or">;
def Tessel_XorOp : Tessel_BinaryOp<"xor">;
def Tessel_ModOp : Tessel_BinaryOp<"mod", (ins DefaultValuedAttr<BoolAttr, "false">:$fmod)> {
  let summary = "ONNX Mod with numpy broadcasting: the remainder of lhs / rhs";
  let description = [{
    `fmod` false: the remainder takes the sign of the divisor (Python's `%`,
    `-4 mod 3 = 2`, `4 mod -3 = -2`); integers only, as ONNX requires.
    `fmod` true: the sign of the dividend (C's `fmod`, `-4 fmod 3 = -1`), for
    integers and floats. An integer remainder by 0 is 0 (as integer division
    by 0 is), never a trap.
  }];
}

def Tessel_WhereOp : Tessel_Op<"where"> {
  let summary = "ONNX Where: select with numpy broadcasting of all three operands";
  let arguments = (ins Tessel_Tensor:$condition, Tessel_Tensor:$lhs, Tessel_Tensor:$rhs);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor Core candidates: convolution and matrix products
//===----------------------------------------------------------------------===//

// The epilogue a Tensor Core kernel applies to its f32 accumulators before the
// one store: + bias, + residual, then the activation.
//
// Precision: on f16 tensors (--tessel-lower-precision) these ops multiply f16
// operands, accumulate the products in f32 and apply the epilogue in f32; the
// result is rounded to f16 once, at the store. The CPU kernels do the same
// (runtime/src/cpu/nn.cpp), so the CPU tier checks the Tensor Core numerics.
def Tessel_ActivationAttr : DefaultValuedStrAttr<StrAttr, "none">;

def Tessel_ConvOp : Tessel_Op<"conv", [AttrSizedOperandSegments]> {
  let summary = "N-d convolution with a fused epilogue, ONNX Conv semantics";
  let description = [{
    `pads` holds all spatial begins, then all spatial ends (ONNX order), after
    auto_pad has been resolved by the importer.

    `layout` "NCHW": input N x C x spatial, weight M x C/group x k..., result
    N x M x spatial. `layout` "NHWC": input N x spatial x C, weight
    M x k... x C/group (OHWI, so that the implicit GEMM's K dimension is
    contiguous), result N x spatial x M.

    The epilogue, applied in f32 before the result is stored:
    `y = act(conv(x, w) + bias + residual)`, `act` one of none, relu, clip
    (alpha = min, beta = max), leaky_relu (alpha), sigmoid, tanh, hard_swish.

    On f16 tensors: f16 operands, f32 accumulation and epilogue, one rounding
    to f16 at the store.
  }];
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$weight,
                   Optional<Tessel_Tensor>:$bias, Optional<Tessel_Tensor>:$residual,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$group,
                   Tessel_ActivationAttr:$activation,
                   DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.0f">:$beta,
                   DefaultValuedStrAttr<StrAttr, "NCHW">:$layout);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`residual` $residual^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_ConvTransposeOp : Tessel_Op<"conv_transpose"> {
  let summary = "N-d transposed convolution, weights (C, M/group, k...), ONNX ConvTranspose";
  let description = [{
    `pads` are the resolved begins then ends; the result type carries the
    output shape (output_shape and output_padding resolved by the importer).

    On f16 tensors: f16 operands, f32 accumulation (bias included), one
    rounding to f16 at the store.
  }];
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$weight,
                   Optional<Tessel_Tensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_GemmOp : Tessel_Op<"gemm"> {
  let summary = "act(alpha * op(A) * op(B) + beta * C), ONNX Gemm with a fused activation";
  let description = [{
    C broadcasts to M x N. The activation is the conv's epilogue set
    (none, relu, clip, leaky_relu, sigmoid, tanh, hard_swish with alpha/beta).

    On f16 tensors: f16 operands, f32 accumulation and epilogue (alpha, beta,
    C, activation), one rounding to f16 at the store.
  }];
  let arguments = (ins Tessel_Tensor:$a, Tessel_Tensor:$b, Optional<Tessel_Tensor>:$c,
                   F32Attr:$alpha, F32Attr:$beta, BoolAttr:$transA, BoolAttr:$transB,
                   Tessel_ActivationAttr:$activation,
                   DefaultValuedAttr<F32Attr, "0.0f">:$act_alpha,
                   DefaultValuedAttr<F32Attr, "0.0f">:$act_beta);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_MatMulOp : Tessel_Op<"matmul"> {
  let summary = "numpy matmul with batch broadcasting, ONNX MatMul";
  let description = [{
    On f16 tensors: f16 operands, f32 accumulation, one rounding to f16 at
    the store.
  }];
  let arguments = (ins Tessel_Tensor:$lhs, Tessel_Tensor:$rhs);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax, reductions
//===----------------------------------------------------------------------===//

def Tessel_BatchNormOp : Tessel_Op<"batch_norm"> {
  let summary = "inference BatchNormalization over axis 1";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Tessel_Tensor:$bias,
                   Tessel_Tensor:$mean, Tessel_Tensor:$variance, F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_InstanceNormOp : Tessel_Op<"instance_norm"> {
  let summary = "InstanceNormalization: per (n, c) over the spatial axes";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Tessel_Tensor:$bias,
                   F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)";
}

def Tessel_LayerNormOp : Tessel_Op<"layer_norm"> {
  let summary = "LayerNormalization over axes [axis, rank); scale/bias broadcast to them";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Optional<Tessel_Tensor>:$bias,
                   I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Tessel_LrnOp : Tessel_Op<"lrn", [SameOperandsAndResultType]> {
  let summary = "local response normalization across channels (ONNX LRN)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$size, F32Attr:$alpha,
                   F32Attr:$beta, F32Attr:$bias);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Tessel_PoolOp<string mnemonic, dag params> : Tessel_Op<mnemonic> {
  let summary = "N-d " # mnemonic # ", NCHW or NHWC (`layout`); pads are begins then ends";
  let description = [{
    The result type carries the output shape (ceil_mode resolved by the
    importer); windows are clipped to the padded input.
  }];
  let arguments = !con((ins Tessel_Tensor:$input, DenseI64ArrayAttr:$kernel_shape,
                        DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                        DenseI64ArrayAttr:$dilations,
                        DefaultValuedStrAttr<StrAttr, "NCHW">:$layout), params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_MaxPoolOp : Tessel_PoolOp<"max_pool", (ins)>;
def Tessel_AvgPoolOp : Tessel_PoolOp<"avg_pool", (ins BoolAttr:$count_include_pad)>;

def Tessel_SoftmaxOp : Tessel_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one axis (opset 13 semantics; older ones reshaped by the importer)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tessel_LogSoftmaxOp : Tessel_Op<"log_softmax", [SameOperandsAndResultType]> {
  let summary = "log of softmax along one axis";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Tessel_ReduceOp<string mnemonic> : Tessel_Op<mnemonic> {
  let summary = "ONNX " # mnemonic # " over sorted, non-negative `axes`";
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ReduceSumOp : Tessel_ReduceOp<"reduce_sum">;
def Tessel_ReduceMeanOp : Tessel_ReduceOp<"reduce_mean">;
def Tessel_ReduceMaxOp : Tessel_ReduceOp<"reduce_max">;
def Tessel_ReduceMinOp : Tessel_ReduceOp<"reduce_min">;
def Tessel_ReduceProdOp : Tessel_ReduceOp<"reduce_prod">;
def Tessel_ReduceL1Op : Tessel_ReduceOp<"reduce_l1">;
def Tessel_ReduceL2Op : Tessel_ReduceOp<"reduce_l2">;
def Tessel_ReduceLogSumOp : Tessel_ReduceOp<"reduce_log_sum">;
def Tessel_ReduceLogSumExpOp : Tessel_ReduceOp<"reduce_log_sum_exp">;
def Tessel_ReduceSumSquareOp : Tessel_ReduceOp<"reduce_sum_square">;

class Tessel_ArgReduceOp<string mnemonic> : Tessel_Op<mnemonic> {
  let summary = "index of the " # mnemonic # " along `axis` (int64 result)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                   BoolAttr:$select_last_index);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tessel_CumSumOp : Tessel_Op<"cumsum"> {
  let summary = "ONNX CumSum: running sums along `axis`";
  let description = [{
    Element a along the axis is the sum of elements 0..a (`reverse`: a..end),
    without element a itself when `exclusive`.
  }];
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                   BoolAttr:$reverse);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ArgMaxOp : Tessel_ArgReduceOp<"argmax">;
def Tessel_ArgMinOp : Tessel_ArgReduceOp<"argmin">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tessel_ReshapeOp : Tessel_Op<"reshape"> {
  let summary = "same elements, new static shape (Reshape, Flatten, Squeeze, Unsqueeze)";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_TransposeOp : Tessel_Op<"transpose"> {
  let summary = "output dim i is input dim perm[i]";
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  // Folds an identity perm away; canonicalizes a transpose of a transpose
  // into one (to-nhwc's layout converts meet the model's own transposes).
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def Tessel_ConcatOp : Tessel_Op<"concat"> {
  let summary = "concatenation along `axis`";
  let arguments = (ins Variadic<Tessel_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_SliceOp : Tessel_Op<"slice"> {
  let summary = "strided slice: output[i...] = input[starts + i * steps] per dim";
  let description = [{
    `starts` and `steps` have one entry per input dim, already clamped and
    normalized by the importer; the result type gives the extent.
  }];
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_PadOp : Tessel_Op<"pad"> {
  let summary = "ONNX Pad with constant pads (begins then ends, may be negative)";
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$pads,
                   StrAttr:$mode, F64Attr:$value);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_Im2RowOp : Tessel_Op<"im2row"> {
  let summary = "an NHWC conv's windows along W unfolded into the channels";
  let description = [{
    Input N x H x W x C, result N x H x OW x D:
    `result[n, h, o, s * C + c] = input[n, h, o * stride + s * dilation - pad, c]`
    for s < kernel, and 0 where that column lies outside [0, W) and in the
    channels from kernel * C to D. A conv with few input channels, each of
    which the Tensor Core kernels would pad to 8, reads this instead, with
    its kernel's width folded into the channels (--tessel-pad-channels).
  }];
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$kernel, I64Attr:$stride,
                   I64Attr:$dilation, I64Attr:$pad);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_GatherOp : Tessel_Op<"gather"> {
  let summary = "ONNX Gather along `axis`; negative indices count from the end";
  let arguments = (ins Tessel_Tensor:$data, Tessel_Tensor:$indices, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_GatherElementsOp : Tessel_Op<"gather_elements"> {
  let summary = "ONNX GatherElements along `axis`; negative indices count from the end";
  let description = [{
    The result has the indices' shape: result[i] = data[i with its `axis`
    coordinate replaced by indices[i]]. Indices and data have one rank, and
    the indices extend no dim other than `axis` past the data's.
  }];
  let arguments = (ins Tessel_Tensor:$data, Tessel_Tensor:$indices, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_TriluOp : Tessel_Op<"trilu"> {
  let summary = "ONNX Trilu: the upper or lower triangle of the last two dims";
  let description = [{
    Element (i, j) of each matrix stays where j - i >= k (`upper`) or
    j - i <= k (lower) and is 0 elsewhere.
  }];
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$k, BoolAttr:$upper);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ExpandOp : Tessel_Op<"expand"> {
  let summary = "numpy broadcast of the input to the result shape (Expand)";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_TileOp : Tessel_Op<"tile"> {
  let summary = "ONNX Tile; repeats are result dim / input dim";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // TESSEL_OPS_TD
