//===- TesselOps.td - ops of the tessel graph dialect ---------*- tablegen -*-===//
//
// Op names are the engine's step names: the engine writer emits
// `op->getName().stripDialect()` and each attribute by its name here, and the
// runtime's kernels read them by the same names (dialects/StepEncoding.h).
//
// What each op is (elementwise, its precision class under the fp16 policy,
// the planner of its GPU kernels, whether a conv/gemm epilogue can apply it)
// is declared here, once, as traits and interfaces (TesselTraits.h); passes
// and planners query those instead of keeping lists of op names.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_TD
#define TESSEL_OPS_TD

include "TesselDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Op facts (TesselTraits.h)
//===----------------------------------------------------------------------===//

class Tessel_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::tessel::traits";
}
// y[i] = f(x[i]); the result has the operand's shape.
def Tessel_ElementwiseUnary : Tessel_Trait<"ElementwiseUnary">;
// Numpy-broadcasting binary ops.
def Tessel_ElementwiseBinary : Tessel_Trait<"ElementwiseBinary">;
// A broadcasting binary op with a bool result.
def Tessel_Comparison : Tessel_Trait<"Comparison">;
// Reductions over sorted, non-negative `axes`, with `keepdims`.
def Tessel_Reduction : Tessel_Trait<"Reduction">;

// The precision class under the fp16 policy (--tessel-lower-precision; the
// reasons in docs/architecture.md, "Precision policy"). Every op declares one:
//   TensorCoreMath  f16 operands, f32 accumulation and epilogue, one rounding;
//   F16Math         condition number <= ~1 and a result within f16's range
//                   whenever the operands are in it: one more rounding
//                   (u = 2^-11) per stored result;
//   F32Math         long sums and statistics (softmax, reductions, norms),
//                   results that leave f16's range (exp, pow, sinh, cosh) and
//                   functions that amplify their input's rounding (log, erf,
//                   periodic and inverse trigonometric functions near their
//                   branch points, mod);
//   ExactMath       the result is an operand's element (or an attribute
//                   bound, rounded like a stored element): data movement,
//                   selection, comparison; runs in the type its operands
//                   arrive in;
//   InputStorageMath statistics in f32 inside every kernel of the op
//                   (layer_norm, softmax): runs in the type its input
//                   arrives in, so an f16 producer's result needs no casts
//                   and an f32 one (a graph input) is not rounded to f16.
class Tessel_Precision<string cls>
    : ParamNativeOpTrait<"Precision", "::tessel::PrecisionClass::" # cls> {
  let cppNamespace = "::tessel::traits";
}
def TensorCoreMath : Tessel_Precision<"TensorCore">;
def F16Math : Tessel_Precision<"F16">;
def F32Math : Tessel_Precision<"F32">;
def ExactMath : Tessel_Precision<"Exact">;
def InputStorageMath : Tessel_Precision<"InputStorage">;

// The planner of the op's GPU kernels: the implicit-GEMM codegen (Gemm) or a
// planner of the CUDA kernel library (codegen/cuda). An op without one runs
// on the CPU tier only.
class Tessel_Kernel<string family>
    : ParamNativeOpTrait<"Kernel", "::tessel::KernelFamily::" # family> {
  let cppNamespace = "::tessel::traits";
}

// The activations a conv/gemm epilogue applies (f32, before the one
// rounding); the CPU tier's formulas (runtime/kernels: activateRow) and the
// codegen's (codegen/GemmKernel) follow them.
def Tessel_ActivationKind : I32EnumAttr<"Activation", "an epilogue activation", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Relu", 1, "relu">,
    I32EnumAttrCase<"Clip", 2, "clip">,
    I32EnumAttrCase<"LeakyRelu", 3, "leaky_relu">,
    I32EnumAttrCase<"Sigmoid", 4, "sigmoid">,
    I32EnumAttrCase<"Tanh", 5, "tanh">,
    I32EnumAttrCase<"HardSwish", 6, "hard_swish">,
    I32EnumAttrCase<"Gelu", 7, "gelu">,
    I32EnumAttrCase<"GeluTanh", 8, "gelu_tanh">,
    I32EnumAttrCase<"Silu", 9, "silu">,
    I32EnumAttrCase<"HardSigmoid", 10, "hard_sigmoid">]> {
  let cppNamespace = "::tessel";
  let genSpecializedAttr = 0;
}
def Tessel_ActivationAttr : EnumAttr<Tessel_Dialect, Tessel_ActivationKind, "activation">;

// The layout of a 4-D activation: NCHW, or NHWC (Tensor Core convs read
// their K dimension, the channels, contiguously).
def Tessel_LayoutKind : I32EnumAttr<"Layout", "a 4-D activation's layout", [
    I32EnumAttrCase<"NCHW", 0>,
    I32EnumAttrCase<"NHWC", 1>]> {
  let cppNamespace = "::tessel";
  let genSpecializedAttr = 0;
}
def Tessel_LayoutAttr : EnumAttr<Tessel_Dialect, Tessel_LayoutKind, "layout">;

// The ops a conv or gemm epilogue can apply in place of a step of their
// own (--tessel-fuse-epilogue).
def Tessel_EpilogueActivationInterface : OpInterface<"EpilogueActivationOpInterface"> {
  let cppNamespace = "::tessel";
  let description = [{
    An elementwise op that a conv or gemm epilogue can apply to its f32
    accumulators before the one rounding: the activation and its parameters.
  }];
  let methods = [
    InterfaceMethod<"the activation as the epilogue applies it",
                    "::tessel::EpilogueActivation", "getEpilogueActivation">
  ];
}

def Tessel_Epilogue : DeclareOpInterfaceMethods<Tessel_EpilogueActivationInterface>;

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, !listconcat(traits, [Pure])>;

def Tessel_Tensor : StaticShapeTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Constants and copies
//===----------------------------------------------------------------------===//

def Tessel_ConstantOp : Tessel_Op<"constant",
    [ConstantLike, AllTypesMatch<["value", "output"]>, ExactMath]> {
  let summary = "a compile-time tensor (ONNX initializers, Constant, folded subgraphs)";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tessel_IdentityOp : Tessel_Op<"identity", [SameOperandsAndResultType,
    Tessel_ElementwiseUnary, ExactMath, Tessel_Kernel<"Copy">]> {
  let summary = "ONNX Identity and inference-mode Dropout; folds away";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Tessel_CastOp : Tessel_Op<"cast", [SameOperandsAndResultShape,
    Tessel_ElementwiseUnary, ExactMath, Tessel_Kernel<"Cast">]> {
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

def UnaryKernel : Tessel_Kernel<"Unary">;

class Tessel_UnaryOp<string mnemonic, list<Trait> traits, dag params = (ins)>
    : Tessel_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                                Tessel_ElementwiseUnary])> {
  let summary = "elementwise ONNX " # mnemonic;
  let arguments = !con((ins Tessel_Tensor:$input), params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tessel_ReluOp : Tessel_UnaryOp<"relu", [ExactMath, UnaryKernel, Tessel_Epilogue]>;
def Tessel_SigmoidOp : Tessel_UnaryOp<"sigmoid", [F16Math, UnaryKernel, Tessel_Epilogue]>;
def Tessel_TanhOp : Tessel_UnaryOp<"tanh", [F16Math, UnaryKernel, Tessel_Epilogue]>;
def Tessel_AbsOp : Tessel_UnaryOp<"abs", [ExactMath, UnaryKernel]>;
def Tessel_NegOp : Tessel_UnaryOp<"neg", [ExactMath, UnaryKernel]>;
def Tessel_ExpOp : Tessel_UnaryOp<"exp", [F32Math, UnaryKernel]>;
def Tessel_LogOp : Tessel_UnaryOp<"log", [F32Math, UnaryKernel]>;
def Tessel_SqrtOp : Tessel_UnaryOp<"sqrt", [F16Math, UnaryKernel]>;
def Tessel_ReciprocalOp : Tessel_UnaryOp<"reciprocal", [F16Math, UnaryKernel]>;
def Tessel_FloorOp : Tessel_UnaryOp<"floor", [ExactMath, UnaryKernel]>;
def Tessel_CeilOp : Tessel_UnaryOp<"ceil", [ExactMath, UnaryKernel]>;
def Tessel_RoundOp : Tessel_UnaryOp<"round", [ExactMath, UnaryKernel]>;
def Tessel_SignOp : Tessel_UnaryOp<"sign", [ExactMath, UnaryKernel]>;
def Tessel_ErfOp : Tessel_UnaryOp<"erf", [F32Math, UnaryKernel]>;
def Tessel_SinOp : Tessel_UnaryOp<"sin", [F32Math, UnaryKernel]>;
def Tessel_CosOp : Tessel_UnaryOp<"cos", [F32Math, UnaryKernel]>;
def Tessel_TanOp : Tessel_UnaryOp<"tan", [F32Math, UnaryKernel]>;
def Tessel_AsinOp : Tessel_UnaryOp<"asin", [F32Math, UnaryKernel]>;
def Tessel_AcosOp : Tessel_UnaryOp<"acos", [F32Math, UnaryKernel]>;
def Tessel_AtanOp : Tessel_UnaryOp<"atan", [F16Math, UnaryKernel]>;
def Tessel_SinhOp : Tessel_UnaryOp<"sinh", [F32Math, UnaryKernel]>;
def Tessel_CoshOp : Tessel_UnaryOp<"cosh", [F32Math, UnaryKernel]>;
def Tessel_AsinhOp : Tessel_UnaryOp<"asinh", [F16Math, UnaryKernel]>;
def Tessel_AcoshOp : Tessel_UnaryOp<"acosh", [F32Math, UnaryKernel]>;
def Tessel_AtanhOp : Tessel_UnaryOp<"atanh", [F32Math, UnaryKernel]>;
def Tessel_SoftplusOp : Tessel_UnaryOp<"softplus", [F16Math, UnaryKernel]>;
def Tessel_SoftsignOp : Tessel_UnaryOp<"softsign", [F16Math, UnaryKernel]>;
def Tessel_HardSwishOp : Tessel_UnaryOp<"hard_swish", [F16Math, UnaryKernel, Tessel_Epilogue]>;
// GELU, x * Phi(x) through erf, and its tanh approximation: two ops, each
// one function, as ONNX Gelu's (opset 20) approximate "none" and "tanh".
// --tessel-fuse-gelu finds them in their decompositions (the importer stops
// at opset 17 for now).
def Tessel_GeluOp : Tessel_UnaryOp<"gelu", [F16Math, UnaryKernel, Tessel_Epilogue]>;
def Tessel_GeluTanhOp : Tessel_UnaryOp<"gelu_tanh", [F16Math, UnaryKernel, Tessel_Epilogue]>;
// SiLU (swish), x * sigmoid(x): no ONNX op below opset 24's Swish;
// --tessel-fuse-swish finds it as Mul(x, Sigmoid(x)).
def Tessel_SiluOp : Tessel_UnaryOp<"silu", [F16Math, UnaryKernel, Tessel_Epilogue]>;
def Tessel_NotOp : Tessel_UnaryOp<"not", [ExactMath, UnaryKernel]>;
def Tessel_LeakyReluOp : Tessel_UnaryOp<"leaky_relu", [F16Math, UnaryKernel, Tessel_Epilogue],
                                        (ins F32Attr:$alpha)>;
def Tessel_EluOp : Tessel_UnaryOp<"elu", [F16Math, UnaryKernel], (ins F32Attr:$alpha)>;
def Tessel_CeluOp : Tessel_UnaryOp<"celu", [F16Math, UnaryKernel], (ins F32Attr:$alpha)>;
def Tessel_SeluOp : Tessel_UnaryOp<"selu", [F16Math, UnaryKernel],
                                   (ins F32Attr:$alpha, F32Attr:$gamma)>;
def Tessel_ThresholdedReluOp : Tessel_UnaryOp<"thresholded_relu", [ExactMath, UnaryKernel],
                                              (ins F32Attr:$alpha)>;
def Tessel_HardSigmoidOp : Tessel_UnaryOp<"hard_sigmoid", [F16Math, UnaryKernel, Tessel_Epilogue],
                                          (ins F32Attr:$alpha, F32Attr:$beta)>;
def Tessel_ShrinkOp : Tessel_UnaryOp<"shrink", [F16Math, UnaryKernel],
                                     (ins F32Attr:$bias, F32Attr:$lambd)>;
// Bounds are attributes: the importer requires ONNX Clip's min/max inputs to
// be compile-time constants (they are in every exported CNN).
def Tessel_ClipOp : Tessel_UnaryOp<"clip", [ExactMath, Tessel_Kernel<"Clip">, Tessel_Epilogue],
                                   (ins F64Attr:$min, F64Attr:$max)>;

// Numpy-style broadcasting binary ops. The verifier checks that the result
// shape is the broadcast of the operand shapes.
class Tessel_BinaryOp<string mnemonic, list<Trait> traits, dag params = (ins)>
    : Tessel_Op<mnemonic, !listconcat(traits, [Tessel_ElementwiseBinary,
                                                Tessel_Kernel<"Binary">])> {
  let summary = "elementwise ONNX " # mnemonic # " with numpy broadcasting";
  let arguments = !con((ins Tessel_Tensor:$lhs, Tessel_Tensor:$rhs), params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_AddOp : Tessel_BinaryOp<"add", [F16Math]>;
def Tessel_SubOp : Tessel_BinaryOp<"sub", [F16Math]>;
def Tessel_MulOp : Tessel_BinaryOp<"mul", [F16Math]>;
def Tessel_DivOp : Tessel_BinaryOp<"div", [F16Math]>;
def Tessel_PowOp : Tessel_BinaryOp<"pow", [F32Math]>;
def Tessel_MaxOp : Tessel_BinaryOp<"max", [ExactMath]>;
def Tessel_MinOp : Tessel_BinaryOp<"min", [ExactMath]>;
def Tessel_PReluOp : Tessel_BinaryOp<"prelu", [F16Math]>;
def Tessel_EqualOp : Tessel_BinaryOp<"equal", [ExactMath, Tessel_Comparison]>;
def Tessel_LessOp : Tessel_BinaryOp<"less", [ExactMath, Tessel_Comparison]>;
def Tessel_LessEqualOp : Tessel_BinaryOp<"less_equal", [ExactMath, Tessel_Comparison]>;
def Tessel_GreaterOp : Tessel_BinaryOp<"greater", [ExactMath, Tessel_Comparison]>;
def Tessel_GreaterEqualOp : Tessel_BinaryOp<"greater_equal", [ExactMath, Tessel_Comparison]>;
def Tessel_AndOp : Tessel_BinaryOp<"and", [ExactMath]>;
def Tessel_OrOp : Tessel_BinaryOp<"or", [ExactMath]>;
def Tessel_XorOp : Tessel_BinaryOp<"xor", [ExactMath]>;
def Tessel_ModOp : Tessel_BinaryOp<"mod", [F32Math],
                                   (ins DefaultValuedAttr<BoolAttr, "false">:$fmod)> {
  let summary = "ONNX Mod with numpy broadcasting: the remainder of lhs / rhs";
  let description = [{
    `fmod` false: the remainder takes the sign of the divisor (Python's `%`,
    `-4 mod 3 = 2`, `4 mod -3 = -2`); integers only, as ONNX requires.
    `fmod` true: the sign of the dividend (C's `fmod`, `-4 fmod 3 = -1`), for
    integers and floats. An integer remainder by 0 is 0 (as integer division
    by 0 is), never a trap.
  }];
}

def Tessel_WhereOp : Tessel_Op<"where", [ExactMath, Tessel_Kernel<"Where">]> {
  let summary = "ONNX Where: select with numpy broadcasting of all three operands";
  let arguments = (ins Tessel_Tensor:$condition, Tessel_Tensor:$lhs, Tessel_Tensor:$rhs);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// A connected group of elementwise ops whose intermediates nothing else
// reads, one step (--tessel-fuse-elementwise): its program
// (tessel/elementwise_program.h) computes each element of the result from
// the inputs' elements under numpy broadcasting. Formed after the precision
// pass, it keeps the types its ops were given: the inputs arrive in theirs,
// the values are computed in f32 (f64 where an input is f64) and rounded at
// the store and at each cast to f16 the program names, so the roundings of
// f16 intermediates between fused ops are gone (the result is no less
// accurate than the unfused ops').
def Tessel_ElementwiseGroupOp : Tessel_Op<"elementwise_group",
    [InputStorageMath, Tessel_Kernel<"ElementwiseGroup">]> {
  let summary = "a fused group of elementwise ops: one program, one step";
  let arguments = (ins Variadic<Tessel_Tensor>:$inputs, StrAttr:$program);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$program `(` $inputs `)` attr-dict `:` functional-type($inputs, results)";
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
// (runtime/kernels/src/gemm.cpp, conv.cpp), so the CPU tier checks the Tensor Core numerics.

def Tessel_ConvOp : Tessel_Op<"conv", [AttrSizedOperandSegments, TensorCoreMath,
    Tessel_Kernel<"Gemm">]> {
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
    (alpha = min, beta = max), leaky_relu (alpha), sigmoid, tanh, hard_swish, gelu, gelu_tanh.

    The prologue: with `input_scale` (shape [N, C, 1, ...] in the layout's
    order: [N, 1, ..., C] for NHWC), the conv reads `x * input_scale`, each
    product rounded to the input's type as a separate mul would round it:
    a squeeze-excitation gate's channel scale, applied in the operand load
    (--tessel-fuse-channel-scale). Group 1 only.

    On f16 tensors: f16 operands, f32 accumulation and epilogue, one rounding
    to f16 at the store.
  }];
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$weight,
                   Optional<Tessel_Tensor>:$bias, Optional<Tessel_Tensor>:$residual,
                   Optional<Tessel_Tensor>:$input_scale,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations, I64Attr:$group,
                   DefaultValuedAttr<Tessel_ActivationAttr, "::tessel::Activation::None">:$activation,
                   DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.0f">:$beta,
                   DefaultValuedAttr<Tessel_LayoutAttr, "::tessel::Layout::NCHW">:$layout);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`residual` $residual^)? (`scale` $input_scale^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// A squeeze-excitation block's squeeze: the global average pool of an NHWC
// activation and the first fully connected layer (a 1x1 conv) with its
// epilogue, one step (--tessel-fuse-pool-fc).
def Tessel_PoolFcOp : Tessel_Op<"pool_fc", [TensorCoreMath, Tessel_Kernel<"PoolFc">]> {
  let summary = "act(W . mean over the spatial dims of x + bias), NHWC, one step";
  let description = [{
    `input` is NHWC, N x spatial... x C; `weight` the 1x1 conv's OHWI weight,
    M x 1... x C; `bias` M values. The result, N x 1... x M, is
    `act(sum_c W[m, c] * mean_p x[n, p, c] + bias[m])`: the mean and the
    products in f32 (the mean is not rounded to the storage type between
    them, as the unfused pool's result was), the activation one of the conv
    epilogue's, one rounding at the store.
  }];
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$weight,
                   Optional<Tessel_Tensor>:$bias,
                   DefaultValuedAttr<Tessel_ActivationAttr, "::tessel::Activation::None">:$activation,
                   DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.0f">:$beta);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_ConvTransposeOp : Tessel_Op<"conv_transpose", [TensorCoreMath,
    Tessel_Kernel<"None">]> {
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

def Tessel_GemmOp : Tessel_Op<"gemm", [AttrSizedOperandSegments, TensorCoreMath,
    Tessel_Kernel<"Gemm">]> {
  let summary = "act(alpha * op(A) * op(B) + beta * C + residual), ONNX Gemm with a fused epilogue";
  let description = [{
    A is [M, K] (or [K, M] with transA), or of rank > 2 without transA:
    [..., K], its leading dims flattened into M (a Linear layer on a
    [batch, sequence, features] activation, --tessel-fuse-epilogue); the
    result is then [..., N]. C broadcasts (right-aligned) to [M, N]; the
    residual has the result's shape. The activation is the conv's epilogue
    set (none, relu, clip, leaky_relu, sigmoid, tanh, hard_swish, gelu,
    gelu_tanh with alpha/beta).

    On f16 tensors: f16 operands, f32 accumulation and epilogue (alpha, beta,
    C, residual, activation), one rounding to f16 at the store.
  }];
  let arguments = (ins Tessel_Tensor:$a, Tessel_Tensor:$b, Optional<Tessel_Tensor>:$c,
                   Optional<Tessel_Tensor>:$residual,
                   F32Attr:$alpha, F32Attr:$beta, BoolAttr:$transA, BoolAttr:$transB,
                   DefaultValuedAttr<Tessel_ActivationAttr, "::tessel::Activation::None">:$activation,
                   DefaultValuedAttr<F32Attr, "0.0f">:$act_alpha,
                   DefaultValuedAttr<F32Attr, "0.0f">:$act_beta);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? (`residual` $residual^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_MatMulOp : Tessel_Op<"matmul", [TensorCoreMath, Tessel_Kernel<"Gemm">]> {
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

// Fused attention (--tessel-fuse-attention builds it from the op-by-op form
// PyTorch exports).
def Tessel_AttentionOp : Tessel_Op<"attention", [TensorCoreMath,
    Tessel_Kernel<"Attention">]> {
  let summary = "softmax(Q K^T * scale + mask) V over the last two dims";
  let description = [{
    Q is [..., Sq, D], K [..., Sk, D], V [..., Sk, Dv] and the result
    [..., Sq, Dv], of rank 3 ([B*H, S, D], as nn.MultiheadAttention exports
    it) or 4 ([B, H, S, D]), with the same leading dims throughout (no
    broadcasting between Q, K and V).

    scores[i, j] = (Q[i] . K[j]) * scale, then
      - `mask` of a float type: + mask[i, j] (additive);
      - `mask` of i1: scores where the mask is true (keep), -inf where it
        is false (the Where form);
      the mask broadcasts (numpy rules) to [..., Sq, Sk] without changing
      that shape;
      - `causal`: -inf where j > i + (Sk - Sq) (the diagonal aligned to the
        bottom right, so that a query sees its own key and the keys before
        it when Sq < Sk; Sq = Sk is the usual lower triangle);
    then softmax over j, as tessel.softmax (a row of -inf scores has no
    finite maximum and gives NaN, as the unfused graph does), and the
    result is the weights times V.

    Precision (the Tensor Core class): f16 Q, K, V and result on the
    Tensor Core path; products accumulate in f32, the scale and the mask
    apply to the f32 scores, the softmax statistics (running maximum and
    sum) are f32, and the weights round to f16 only as the operand of the
    second product, as the unfused graph's softmax result does.

    Views (`dims` and `views`, both or neither; tessel/attention.h): the
    operands are then the tensors the heads live in, read in place, and
    the result is written in the layout its consumer reads:
    `dims = [B, H, Sq, Sk, D, Dv]`, and `views` holds, for Q, K, V and the
    result, [offset, batch, head, row]: element (b, h, i, c) at offset +
    b * batch + h * head + i * row + c. A view stays inside its tensor;
    the result's covers its tensor once. The mask then broadcasts to
    [B, H, Sq, Sk]. --tessel-attention-layout sets them, for the head
    split and merge PyTorch exports as reshapes, transposes and slices.
  }];
  let arguments = (ins Tessel_Tensor:$query, Tessel_Tensor:$key, Tessel_Tensor:$value,
                   Optional<Tessel_Tensor>:$mask, F32Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   OptionalAttr<DenseI64ArrayAttr>:$dims,
                   OptionalAttr<DenseI64ArrayAttr>:$views);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The head dims (D of Q and K, Dv of V) the GPU kernels take: at most
    /// kMaxGpuHeadDim, a multiple of 8 (whole 16-byte rows of f16). The
    /// Tensor Core kernel pads them to 64, 80, 96 or 128; the fusion leaves
    /// other attention unfused, where its matmuls and softmax have kernels.
    static constexpr int64_t kMaxGpuHeadDim = 128;
    static bool gpuTakesHeadDims(int64_t d, int64_t dv) {
      auto fits = [](int64_t x) { return x > 0 && x <= kMaxGpuHeadDim && x % 8 == 0; };
      return fits(d) && fits(dv);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax, reductions
//===----------------------------------------------------------------------===//

def Tessel_BatchNormOp : Tessel_Op<"batch_norm", [F32Math, Tessel_Kernel<"BatchNorm">]> {
  let summary = "inference BatchNormalization over axis 1";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Tessel_Tensor:$bias,
                   Tessel_Tensor:$mean, Tessel_Tensor:$variance, F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_InstanceNormOp : Tessel_Op<"instance_norm", [F32Math, Tessel_Kernel<"InstanceNorm">]> {
  let summary = "InstanceNormalization: per (n, c) over the spatial axes";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Tessel_Tensor:$bias,
                   F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)";
}

def Tessel_LayerNormOp : Tessel_Op<"layer_norm", [InputStorageMath,
    Tessel_Kernel<"LayerNorm">]> {
  let summary = "LayerNormalization over axes [axis, rank); scale/bias broadcast to them";
  let arguments = (ins Tessel_Tensor:$input, Tessel_Tensor:$scale, Optional<Tessel_Tensor>:$bias,
                   I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Tessel_LrnOp : Tessel_Op<"lrn", [SameOperandsAndResultType, F32Math,
    Tessel_Kernel<"Lrn">]> {
  let summary = "local response normalization across channels (ONNX LRN)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$size, F32Attr:$alpha,
                   F32Attr:$beta, F32Attr:$bias);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

class Tessel_PoolOp<string mnemonic, list<Trait> traits, dag params>
    : Tessel_Op<mnemonic, !listconcat(traits, [Tessel_Kernel<"Pool">])> {
  let summary = "N-d " # mnemonic # ", NCHW or NHWC (`layout`); pads are begins then ends";
  let description = [{
    The result type carries the output shape (ceil_mode resolved by the
    importer); windows are clipped to the padded input.
  }];
  let arguments = !con((ins Tessel_Tensor:$input, DenseI64ArrayAttr:$kernel_shape,
                        DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                        DenseI64ArrayAttr:$dilations,
                        DefaultValuedAttr<Tessel_LayoutAttr, "::tessel::Layout::NCHW">:$layout),
                   params);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_MaxPoolOp : Tessel_PoolOp<"max_pool", [ExactMath], (ins)>;
def Tessel_AvgPoolOp : Tessel_PoolOp<"avg_pool", [F16Math], (ins BoolAttr:$count_include_pad)>;
// MaxPool's Indices output (i64): where max_pool's result came from, as the
// flat index into the input in NCHW order (storage_order 0: spatial dims
// row-major; 1: column-major), whatever the layout the op runs in.
def Tessel_MaxPoolIndicesOp : Tessel_PoolOp<"max_pool_indices", [ExactMath],
    (ins DefaultValuedAttr<I64Attr, "0">:$storage_order)>;

def Tessel_SoftmaxOp : Tessel_Op<"softmax", [SameOperandsAndResultType, InputStorageMath,
    Tessel_Kernel<"Softmax">]> {
  let summary = "softmax along one axis (opset 13 semantics; older ones reshaped by the importer)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tessel_LogSoftmaxOp : Tessel_Op<"log_softmax", [SameOperandsAndResultType, F32Math,
    Tessel_Kernel<"Softmax">]> {
  let summary = "log of softmax along one axis";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Tessel_ReduceOp<string mnemonic, list<Trait> traits = [F32Math]>
    : Tessel_Op<mnemonic, !listconcat(traits, [Tessel_Reduction, Tessel_Kernel<"Reduce">])> {
  let summary = "ONNX " # mnemonic # " over sorted, non-negative `axes`";
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ReduceSumOp : Tessel_ReduceOp<"reduce_sum">;
// A mean stays within its operands' range, and both tiers' kernels sum in
// double whatever the storage, so it runs in the type its input arrives in:
// a squeeze-excitation's global average pool reads the f16 activation and
// writes f16, with no casts around it (one rounding, as before).
def Tessel_ReduceMeanOp : Tessel_ReduceOp<"reduce_mean", [InputStorageMath]>;
def Tessel_ReduceMaxOp : Tessel_ReduceOp<"reduce_max", [ExactMath]>;
def Tessel_ReduceMinOp : Tessel_ReduceOp<"reduce_min", [ExactMath]>;
def Tessel_ReduceProdOp : Tessel_ReduceOp<"reduce_prod">;
def Tessel_ReduceL1Op : Tessel_ReduceOp<"reduce_l1">;
def Tessel_ReduceL2Op : Tessel_ReduceOp<"reduce_l2">;
def Tessel_ReduceLogSumOp : Tessel_ReduceOp<"reduce_log_sum">;
def Tessel_ReduceLogSumExpOp : Tessel_ReduceOp<"reduce_log_sum_exp">;
def Tessel_ReduceSumSquareOp : Tessel_ReduceOp<"reduce_sum_square">;

class Tessel_ArgReduceOp<string mnemonic>
    : Tessel_Op<mnemonic, [ExactMath, Tessel_Kernel<"ArgReduce">]> {
  let summary = "index of the " # mnemonic # " along `axis` (int64 result)";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                   BoolAttr:$select_last_index);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

// ONNX CumSum and CumProd: one scan, its combining operation the op's.
class Tessel_ScanOp<string mnemonic, string what>
    : Tessel_Op<mnemonic, [F32Math, Tessel_Kernel<"Scan">]> {
  let summary = "running " # what # " along `axis` (ONNX Cum" # what # ")";
  let description = [{
    Element a along the axis combines elements 0..a (`reverse`: a..end),
    without element a itself when `exclusive` (then the first result is the
    operation's identity).
  }];
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                   BoolAttr:$reverse);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_CumSumOp : Tessel_ScanOp<"cumsum", "Sum">;
def Tessel_CumProdOp : Tessel_ScanOp<"cumprod", "Prod">;

def Tessel_ResizeOp : Tessel_Op<"resize", [F16Math, Tessel_Kernel<"Resize">]> {
  let summary = "ONNX Resize: nearest, linear or cubic interpolation, separable per axis";
  let description = [{
    The result's shape is the op's; `scales` (one per axis) is the scale the
    coordinate transformation divides by (the given one, or result / input
    where ONNX derives it from sizes), `roi` all starts then all ends
    (tf_crop_and_resize) or empty. tessel/resize.h holds the semantics,
    shared by the CPU and CUDA kernels.
  }];
  let arguments = (ins Tessel_Tensor:$input, StrAttr:$mode,
                   StrAttr:$coordinate_transformation_mode, StrAttr:$nearest_mode,
                   F64Attr:$cubic_coeff_a, BoolAttr:$exclude_outside,
                   F64Attr:$extrapolation_value, BoolAttr:$antialias,
                   DenseF64ArrayAttr:$scales, DenseF64ArrayAttr:$roi);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_TopKOp : Tessel_Op<"top_k", [ExactMath, Tessel_Kernel<"TopK">]> {
  let summary = "ONNX TopK: the k largest (smallest) along `axis`, values and int64 indices";
  let description = [{
    k is the results' extent along the axis. Sorted: larger (smaller unless
    `largest`) first, equal values by their index (elementwise::topKBefore).
  }];
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$largest);
  let results = (outs Tessel_Tensor:$values, Tessel_Tensor:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// Its result's row count is data dependent: `selected` is the static bound
// (every class of every batch selecting min(max_output_boxes_per_class,
// boxes)), its first `count` rows the selections and the rest zeros; the
// engine gives an output that carries those rows the extent `count` holds
// (--tessel-data-dependent-extents, docs/architecture.md).
def Tessel_NonMaxSuppressionOp : Tessel_Op<"non_max_suppression", [F32Math,
    Tessel_Kernel<"Nms">]> {
  let summary = "ONNX NonMaxSuppression: (batch, class, box) rows of the boxes kept, and their count";
  let description = [{
    boxes [batch, boxes, 4], scores [batch, classes, boxes]; selection as
    tessel/nms.h states it (IoU and score comparisons strict, f32).
  }];
  let arguments = (ins Tessel_Tensor:$boxes, Tessel_Tensor:$scores,
                   I64Attr:$center_point_box, I64Attr:$max_output_boxes_per_class,
                   F32Attr:$iou_threshold, OptionalAttr<F32Attr>:$score_threshold);
  let results = (outs Tessel_Tensor:$selected, Tessel_Tensor:$count);
  let assemblyFormat = "$boxes `,` $scores attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ArgMaxOp : Tessel_ArgReduceOp<"argmax">;
def Tessel_ArgMinOp : Tessel_ArgReduceOp<"argmin">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tessel_ReshapeOp : Tessel_Op<"reshape", [ExactMath, Tessel_Kernel<"Copy">]> {
  let summary = "same elements, new static shape (Reshape, Flatten, Squeeze, Unsqueeze)";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_TransposeOp : Tessel_Op<"transpose", [ExactMath, Tessel_Kernel<"Transpose">]> {
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

def Tessel_ConcatOp : Tessel_Op<"concat", [ExactMath, Tessel_Kernel<"Concat">]> {
  let summary = "concatenation along `axis`";
  let arguments = (ins Variadic<Tessel_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_SliceOp : Tessel_Op<"slice", [ExactMath, Tessel_Kernel<"Slice">]> {
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

def Tessel_PadOp : Tessel_Op<"pad", [ExactMath, Tessel_Kernel<"Pad">]> {
  let summary = "ONNX Pad with constant pads (begins then ends, may be negative)";
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$pads,
                   StrAttr:$mode, F64Attr:$value);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_Im2RowOp : Tessel_Op<"im2row", [ExactMath, Tessel_Kernel<"Im2Row">]> {
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

def Tessel_GatherOp : Tessel_Op<"gather", [ExactMath, Tessel_Kernel<"Gather">]> {
  let summary = "ONNX Gather along `axis`; negative indices count from the end";
  let arguments = (ins Tessel_Tensor:$data, Tessel_Tensor:$indices, I64Attr:$axis);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  // One constant index in range: a slice (and a reshape).
  let hasCanonicalizeMethod = 1;
}

def Tessel_GatherElementsOp : Tessel_Op<"gather_elements", [ExactMath,
    Tessel_Kernel<"GatherElements">]> {
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

def Tessel_GatherNDOp : Tessel_Op<"gather_nd", [ExactMath, Tessel_Kernel<"GatherND">]> {
  let summary = "ONNX GatherND: slices of the data addressed by the indices' last dim";
  let description = [{
    With b = `batch_dims` and k = the indices' last extent (1 <= k <=
    rank(data) - b): the data and the indices share their first b dims, and
    `result[i..., j...] = data[i[0..b)..., indices[i...][0..k)..., j...]`
    with the result shape indices.shape[:-1] + data.shape[b + k:]. A
    negative index counts from the end of its dim.
  }];
  let arguments = (ins Tessel_Tensor:$data, Tessel_Tensor:$indices, I64Attr:$batch_dims);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The result shape for data and indices of these shapes, or failure
    /// with the reason in `why` (the verifier's and the importer's rule).
    static ::mlir::FailureOr<::llvm::SmallVector<int64_t>>
    resultShape(::llvm::ArrayRef<int64_t> data, ::llvm::ArrayRef<int64_t> indices,
                int64_t batchDims, std::string &why);
  }];
}

def Tessel_ScatterNDOp : Tessel_Op<"scatter_nd", [ExactMath, Tessel_Kernel<"ScatterND">]> {
  let summary = "ONNX ScatterND: the data with the slices the indices address updated";
  let description = [{
    With k = the indices' last extent (1 <= k <= rank(data)): the result is
    the data, then for each tuple t of the indices in order, the slice
    `result[indices[t][0..k)..., :]` of data.shape[k:] is replaced by
    `updates[t, :]` (`reduction` "none") or combined with it ("add", "mul",
    "max", "min"). The updates have shape indices.shape[:-1] +
    data.shape[k:]. A negative index counts from the end of its dim. With
    reduction "none", a tuple that appears twice leaves the later slice
    (ONNX leaves it undefined).
  }];
  let arguments = (ins Tessel_Tensor:$data, Tessel_Tensor:$indices, Tessel_Tensor:$updates,
                   StrAttr:$reduction);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The updates' shape for data and indices of these shapes, or failure
    /// with the reason in `why` (the verifier's and the importer's rule).
    static ::mlir::FailureOr<::llvm::SmallVector<int64_t>>
    updatesShape(::llvm::ArrayRef<int64_t> data, ::llvm::ArrayRef<int64_t> indices,
                 std::string &why);
  }];
}

def Tessel_TriluOp : Tessel_Op<"trilu", [ExactMath, Tessel_Kernel<"Trilu">]> {
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

def Tessel_ExpandOp : Tessel_Op<"expand", [ExactMath, Tessel_Kernel<"Expand">]> {
  let summary = "numpy broadcast of the input to the result shape (Expand)";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_TileOp : Tessel_Op<"tile", [ExactMath, Tessel_Kernel<"Tile">]> {
  let summary = "ONNX Tile; repeats are result dim / input dim";
  let arguments = (ins Tessel_Tensor:$input);
  let results = (outs Tessel_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Custom ops
//===----------------------------------------------------------------------===//

def Tessel_CustomOp : Tessel_Op<"custom", [F16Math, Tessel_Kernel<"None">]> {
  let summary = "a user's op, declared by a manifest (tessel-compile --custom-op)";
  let description = [{
    An ONNX node of a domain and op type that a custom op manifest declares
    (codegen/custom/CustomOp.h). `dtypes` lists the element types its
    kernels accept ("f32,f16"), `layout` the layout it wants for 4-D
    operands ("any", "NCHW", "NHWC"); the node's attributes, with the
    manifest's defaults, are the op's other attributes, by their ONNX names.
    Every operand and result has one element type, one of `dtypes`; the
    precision class follows from `dtypes` (precisionClass): F16Math where
    its kernels take f16 (at fp16 its operands are f16, as its neighbours'
    are), F32Math where they take f32 alone. Its GPU
    kernels come from the manifest's sources (NVRTC), its CPU kernel from
    the application (tessel_register_custom_op).
  }];
  let arguments = (ins Variadic<Tessel_Tensor>:$inputs, StrAttr:$domain, StrAttr:$op_type,
                   StrAttr:$dtypes, StrAttr:$layout);
  let results = (outs Variadic<Tessel_Tensor>:$outputs);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the op's kernels accept `element` (f32 or f16).
    bool accepts(::mlir::Type element);
  }];
}

#endif // TESSEL_OPS_TD
