"""Writes the small ONNX models the importer's lit tests need beyond the
conformance suite: `make_model.py CASE OUT.onnx`."""
import math
import sys

import onnx
from onnx import TensorProto, helper


def conv(auto_pad):
    # 6x6 input, 3x3 window, stride 2: output 3x3 and one pixel of padding in
    # total per spatial dim, so SAME_UPPER and SAME_LOWER place it differently.
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                            strides=[2, 2], auto_pad=auto_pad)
    return helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])


def max_pool_ceil_drop():
    # 4 + 1 + 1 padded, window 2, stride 3: ceil mode counts 3 windows, but the
    # third would start at 6, past the input and its begin padding (5).
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                            kernel_shape=[2, 2], strides=[3, 3],
                            pads=[1, 1, 1, 1], ceil_mode=1)
    return helper.make_graph(
        [node], "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])


def mod_shape_arithmetic():
    # Two ways exports feed Mod into a Reshape's shape. Shape -> Gather -> Mod
    # on x (2x6x8): 8 mod 3 = 2, -8 mod 3 = 1 (the divisor's sign) and
    # -(-8 fmod 3) = 2 (the dividend's), so y is x reshaped to 2x1x2x24.
    # PyTorch 2's unflatten(-1, (3, 4)) (torch/onnx/symbolic_opset13.py), as in
    # nn.MultiheadAttention's packed in-projection, on z (2x6x12): the axis
    # (rank + -1) mod rank = 2 bounds the Slices of z's shape around the dim
    # it splits, so w is 2x6x3x4.
    def const(name, values, dims=None):
        dims = [len(values)] if dims is None else dims
        return helper.make_node("Constant", [], [name], name=name,
                                value=helper.make_tensor(name, TensorProto.INT64,
                                                         dims, values))
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        const("two", [2]),
        helper.make_node("Gather", ["shape", "two"], ["last"], name="gather", axis=0),
        const("three", [3]),
        helper.make_node("Mod", ["last", "three"], ["m"], name="mod_last"),
        helper.make_node("Neg", ["last"], ["neg_last"], name="neg"),
        helper.make_node("Mod", ["neg_last", "three"], ["n"], name="mod_neg"),
        helper.make_node("Mod", ["neg_last", "three"], ["f"], name="fmod_neg", fmod=1),
        helper.make_node("Neg", ["f"], ["neg_f"], name="neg_f"),
        const("minus_one", [-1]),
        helper.make_node("Concat", ["m", "n", "neg_f", "minus_one"], ["m_shape"],
                         name="m_concat", axis=0),
        helper.make_node("Reshape", ["x", "m_shape"], ["y"], name="reshape"),
        const("rank", [3]),
        const("axis", [-1], dims=[]),  # the Python int, a scalar
        helper.make_node("Add", ["rank", "axis"], ["axis_sum"], name="/layers.0/self_attn/Add"),
        helper.make_node("Mod", ["axis_sum", "rank"], ["dim"], name="/layers.0/self_attn/Mod"),
        helper.make_node("Shape", ["z"], ["z_shape"], name="z_shape"),
        const("zero", [0]),
        helper.make_node("Slice", ["z_shape", "zero", "dim"], ["head"], name="head"),
        const("one", [1]),
        helper.make_node("Add", ["dim", "one"], ["tail_start"], name="tail_start"),
        const("end", [2 ** 63 - 1]),
        helper.make_node("Slice", ["z_shape", "tail_start", "end"], ["tail"], name="tail"),
        const("sizes", [3, 4]),
        helper.make_node("Concat", ["head", "sizes", "tail"], ["z_new"], name="z_concat", axis=0),
        helper.make_node("Reshape", ["z", "z_new"], ["w"], name="unflatten"),
    ]
    return helper.make_graph(
        nodes, "mod_shape_arithmetic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 8]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 6, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c", "d"]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, ["a", "b", "c", "d"])])


def mod(elem_type, fmod):
    # Mod on tensors: a per-element dividend, a broadcast divisor.
    attrs = {} if fmod is None else {"fmod": fmod}
    node = helper.make_node("Mod", ["a", "b"], ["y"], name="remainder", **attrs)
    return helper.make_graph(
        [node], "mod",
        [helper.make_tensor_value_info("a", elem_type, [2, 3]),
         helper.make_tensor_value_info("b", elem_type, [3])],
        [helper.make_tensor_value_info("y", elem_type, [2, 3])])


def gather_elements(indices_shape, axis):
    # data [3, 4] f32, indices i64 of the given shape, along `axis`.
    node = helper.make_node("GatherElements", ["data", "indices"], ["y"], name="pick",
                            axis=axis)
    return helper.make_graph(
        [node], "gather_elements",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, indices_shape)])


def gather_nd(data_shape, indices_shape, out_shape, batch_dims):
    # GatherND of f32 data by i64 indices (batch_dims None: the attribute absent).
    attrs = {} if batch_dims is None else {"batch_dims": batch_dims}
    node = helper.make_node("GatherND", ["data", "indices"], ["y"], name="lookup", **attrs)
    return helper.make_graph(
        [node], "gather_nd",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
         helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])


def trilu(upper, k):
    # Trilu of a [2, 3, 4] f32 input, k a constant (None: absent).
    inputs = ["x"] if k is None else ["x", "k"]
    nodes = [] if k is None else [helper.make_node(
        "Constant", [], ["k"], value=helper.make_tensor("kv", TensorProto.INT64, [], [k]))]
    nodes.append(helper.make_node("Trilu", inputs, ["y"], name="mask", upper=upper))
    return helper.make_graph(
        nodes, "trilu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])])


def conv_transpose():
    # A 2x upsampling ConvTranspose (1 -> 2 channels, 2x2 window, stride 2),
    # an op without a GPU kernel yet: the CPU-fallback tests' example.
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="upsample",
                            strides=[2, 2])
    return helper.make_graph(
        [node], "conv_transpose",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])])


CASES = {
    "conv_transpose": conv_transpose,
    "conv_same_upper": lambda: conv("SAME_UPPER"),
    "conv_same_lower": lambda: conv("SAME_LOWER"),
    "max_pool_ceil_drop": max_pool_ceil_drop,
    "mod_shape_arithmetic": mod_shape_arithmetic,
    "mod_int64": lambda: mod(TensorProto.INT64, None),
    "mod_float_fmod": lambda: mod(TensorProto.FLOAT, 1),
    "mod_float_default": lambda: mod(TensorProto.FLOAT, None),
    "mod_fmod_2": lambda: mod(TensorProto.INT32, 2),
    "gather_elements": lambda: gather_elements([5, 2], -2),
    "gather_elements_wide": lambda: gather_elements([2, 6], 0),
    "gather_elements_rank": lambda: gather_elements([12], 0),
    "gather_nd": lambda: gather_nd([3, 4, 5, 2], [3, 2, 2], [3, 2, 2], 1),
    "gather_nd_rows": lambda: gather_nd([4, 5], [7, 1], [7, 5], None),
    "trilu_lower_k": lambda: trilu(0, -1),
    "trilu_upper": lambda: trilu(1, None),
    "trilu_upper_2": lambda: trilu(2, None),
}

def range_op(start, limit, delta, elem_type=TensorProto.INT64):
    # Range of three Constant scalars (the output's declared length as ONNX
    # computes it; 0 for a zero delta).
    nodes = [helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_v", elem_type, [], [value])) for name, value in
        (("start", start), ("limit", limit), ("delta", delta))]
    nodes.append(helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="iota"))
    length = max(math.ceil((limit - start) / delta), 0) if delta else 0
    return helper.make_graph(nodes, "range", [],
                             [helper.make_tensor_value_info("y", elem_type, [length])])


def eye_like(k):
    node = helper.make_node("EyeLike", ["x"], ["y"], name="eye", k=k, dtype=TensorProto.INT32)
    return helper.make_graph(
        [node], "eye_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 4])])


def one_hot_depth(depth):
    # OneHot of [3] i64 indices with a constant depth.
    nodes = [helper.make_node("Constant", [], ["depth"], value=helper.make_tensor(
                 "depth_v", TensorProto.INT64, [], [depth])),
             helper.make_node("Constant", [], ["values"], value=helper.make_tensor(
                 "values_v", TensorProto.FLOAT, [2], [0.0, 1.0])),
             helper.make_node("OneHot", ["indices", "depth", "values"], ["y"], name="hot")]
    return helper.make_graph(
        nodes, "one_hot", [helper.make_tensor_value_info("indices", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, max(depth, 1)])])


CASES.update({
    "one_hot_depth_0": lambda: one_hot_depth(0),
    "range_down": lambda: range_op(10, 3, -3),
    "range_float": lambda: range_op(0.5, 2.0, 0.5, TensorProto.FLOAT),
    "range_zero_delta": lambda: range_op(0, 4, 0),
    "range_huge": lambda: range_op(0, 1 << 40, 1),
    "eye_like_k1": lambda: eye_like(1),
})

def scatter_nd(data_shape, indices_shape, updates_shape, reduction):
    # ScatterND of f32 data by i64 indices (reduction None: the attribute
    # absent), the updates a graph input too.
    attrs = {} if reduction is None else {"reduction": reduction}
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], name="write",
                            **attrs)
    return helper.make_graph(
        [node], "scatter_nd",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
         helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape),
         helper.make_tensor_value_info("updates", TensorProto.FLOAT, updates_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, data_shape)])


def dropout_mask():
    # Dropout as F.dropout(p=0) in training mode exports it (swin_t's
    # attention): training_mode true, ratio 0, the mask output used.
    nodes = [helper.make_node("Constant", [], ["ratio"],
                              value=helper.make_tensor("r", TensorProto.FLOAT, [], [0.0])),
             helper.make_node("Constant", [], ["training"],
                              value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
             helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"], name="drop")]
    return helper.make_graph(
        nodes, "dropout_mask", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])])


CASES.update({
    "scatter_nd": lambda: scatter_nd([4, 5, 6], [3, 2], [3, 6], "add"),
    "scatter_nd_none": lambda: scatter_nd([8], [4, 1], [4], None),
    "scatter_nd_bad_updates": lambda: scatter_nd([4, 5, 6], [3, 2], [3, 5], None),
    "dropout_mask": dropout_mask,
})

def newer_opsets():
    # One graph of what opsets 18 to 25 changed or added, as current exporters
    # write them: ReduceMean-18's axes input, Split-18's num_outputs (an
    # uneven split), Pad-18's axes, Cast-19's saturate, Gelu-20 (tanh form),
    # and an op unchanged since (Relu) at the model's opset 25.
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["mean"], name="mean", keepdims=1),
        helper.make_node("Sub", ["x", "mean"], ["centered"], name="center"),
        helper.make_node("Split", ["centered"], ["a", "b"], name="halves", axis=1,
                         num_outputs=2),
        helper.make_node("Pad", ["b", "pads", "", "pad_axes"], ["padded"], name="pad"),
        helper.make_node("Gelu", ["padded"], ["g"], name="gelu", approximate="tanh"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Cast", ["r"], ["y"], name="narrow", to=TensorProto.FLOAT16,
                         saturate=1),
    ]
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
             helper.make_tensor("pads", TensorProto.INT64, [2], [1, 0]),
             helper.make_tensor("pad_axes", TensorProto.INT64, [1], [-1])]
    return helper.make_graph(
        nodes, "newer_opsets", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 3])], inits)


def reduce_mean_17_with_axes_input():
    # ReduceMean with an axes input at opset 17, where axes is an attribute:
    # invalid, and the ONNX checker says so.
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean")
    return helper.make_graph(
        [node], "reduce_mean_17", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])])


def split_18_bad_count():
    # Split-18 whose num_outputs disagrees with its outputs: the ONNX library
    # here cannot check opset 18, the importer does, at the node.
    node = helper.make_node("Split", ["x"], ["a", "b"], name="halves", axis=1, num_outputs=3)
    return helper.make_graph(
        [node], "split_18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])])


def attention_23(rank, past=False, causal=0, mask=None, softcap=None):
    # ONNX Attention-23 on f32: Q [2, 4, 8, 16] (rank 4) or [2, 8, 64] with
    # 4 heads (rank 3); K and V 8 keys long (6 with a past of 2 before them).
    b, h, s, d = 2, 4, 8, 16
    kv = s - 2 if past else s
    shape = (lambda n: [b, h, n, d]) if rank == 4 else (lambda n: [b, n, h * d])
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, shape(s)),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, shape(kv)),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, shape(kv))]
    names = ["q", "k", "v"]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape(s))]
    if mask is not None:
        inputs.append(helper.make_tensor_value_info("mask", mask, [s, s]))
    names.append("mask" if mask is not None else "")
    if past:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [b, h, 2, d])
                   for n in ("past_k", "past_v")]
        names += ["past_k", "past_v"]
        outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [b, h, s, d])
                    for n in ("present_k", "present_v")]
    attrs = {"is_causal": causal}
    if rank == 3:
        attrs.update(q_num_heads=h, kv_num_heads=h)
    if softcap is not None:
        attrs["softcap"] = softcap
    node = helper.make_node("Attention", names, [o.name for o in outputs], name="attn", **attrs)
    return helper.make_graph([node], "attention", inputs, outputs)


def huge_input():
    # A Relu on an input of 2^31 - 1 x 65536 f32 (560 TB): a valid model that
    # no machine can run.
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    shape = [2147483647, 65536]
    return helper.make_graph(
        [node], "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])


def constant_of_shape_long_shape():
    # ConstantOfShape of a shape operand declared 2^40 long: ONNX's inference
    # would build a rank-2^40 type (found by the ONNX fuzzer as a hang).
    node = helper.make_node("ConstantOfShape", ["x"], ["y"], name="fill")
    return helper.make_graph(
        [node], "long_shape",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [1 << 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3, 2])])


def fill_max(shape):
    # ConstantOfShape (value 1.5) reduced to its largest element: a fill that
    # is no graph input, whose every element the output depends on.
    fill = helper.make_node("ConstantOfShape", ["shape"], ["fill"], name="fill",
                            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5]))
    top = helper.make_node("ReduceMax", ["fill"], ["y"], name="top", keepdims=0)
    return helper.make_graph(
        [fill, top], "fill_max", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [helper.make_tensor("shape", TensorProto.INT64, [len(shape)], shape)])


def initializer_dims_beyond_data():
    # An initializer whose dims claim 2^32 floats (16 GiB) and whose
    # float_data holds one (the ONNX fuzzer's: the importer reserved the 16
    # GiB from the dims).
    node = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [2.0])
    del c.dims[:]
    c.dims.extend([65536, 65536])
    return helper.make_graph(
        [node], "dims_beyond_data", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [65536, 65536])], [c])


def nll_ignore(target_type, ignore_index):
    # NegativeLogLikelihoodLoss over [3, 5] scores with an ignore_index at
    # the edges of int64 (the ONNX fuzzer's INT64_MAX) or beyond int32.
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], name="nll",
                            ignore_index=ignore_index, reduction="none")
    return helper.make_graph(
        [node], "nll_ignore", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
                               helper.make_tensor_value_info("t", target_type, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])


def layer_norm_bad_scale():
    # LayerNormalization over the last dim (4) with a scale of 5 elements:
    # invalid (ONNX 1.12's checker lets it through).
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="norm", axis=-1)
    return helper.make_graph(
        [node], "layer_norm_bad_scale", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor("scale", TensorProto.FLOAT, [5], [1.0] * 5)])


def swish_24():
    # Swish-24, x * sigmoid(alpha * x): alpha 1 (SiLU) and alpha 0.5.
    nodes = [helper.make_node("Swish", ["x"], ["y"], name="silu", alpha=1.0),
             helper.make_node("Swish", ["x"], ["z"], name="half", alpha=0.5)]
    info = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3])
    return helper.make_graph(nodes, "swish", [info("x")], [info("y"), info("z")])


def dynamic_batch():
    # As torch.onnx.export writes a dynamic batch (dynamic_axes): y =
    # reshape(x, [x.shape[0], -1]) + mask, with x [batch,3,4] and mask
    # [batch,12]; the batch flows through Shape -> Gather -> Unsqueeze ->
    # Concat into the Reshape's shape.
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather"),
             helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"], name="unsqueeze"),
             helper.make_node("Concat", ["batch1", "minus_one"], ["target"], name="concat",
                              axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
             helper.make_node("Add", ["flat", "mask"], ["y"], name="add")]
    return helper.make_graph(
        nodes, "dynamic_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 12])],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
         helper.make_tensor("minus_one", TensorProto.INT64, [1], [-1])])


def resize(scales=None, sizes=None, scales_input=False, **attrs):
    # Resize of x [1,2,4,6]; scales and sizes as initializers unless
    # scales_input (then a graph input: not a compile-time constant).
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 6])]
    inits = []
    names = ["x", ""]
    if scales_input:
        inputs.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]))
        names.append("scales")
    elif scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
        names.append("scales")
    else:
        names.append("")
    if sizes is not None:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], sizes))
        names.append("sizes")
    node = helper.make_node("Resize", names, ["y"], name="resize", **attrs)
    return helper.make_graph([node], "resize", inputs,
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])], inits)


CASES.update({
    "resize_linear": lambda: resize(scales=[1.0, 1.0, 2.0, 0.5], mode="linear",
                                    coordinate_transformation_mode="align_corners"),
    "resize_sizes_not_larger": lambda: resize(sizes=[8, 8], axes=[2, 3],
                                              keep_aspect_ratio_policy="not_larger"),
    "resize_both": lambda: resize(scales=[1.0, 1.0, 2.0, 2.0], sizes=[1, 2, 8, 12]),
    "resize_dynamic_scales": lambda: resize(scales_input=True),
    "resize_scale_huge": lambda: resize(scales=[1.0, 1.0, 1e30, 1.0]),
    "resize_scale_inf": lambda: resize(scales=[1.0, 1.0, float("inf"), 1.0]),
    "resize_sizes_not_smaller_huge": lambda: resize(sizes=[(1 << 63) - 1, 1], axes=[2, 3],
                                                    keep_aspect_ratio_policy="not_smaller"),
    "resize_bad_mode": lambda: resize(scales=[1.0, 1.0, 2.0, 2.0], mode="area"),
    "dynamic_batch": dynamic_batch,
    "swish_24": swish_24,
    "layer_norm_bad_scale": layer_norm_bad_scale,
    "huge_input": huge_input,
    "constant_of_shape_long_shape": constant_of_shape_long_shape,
    "initializer_dims_beyond_data": initializer_dims_beyond_data,
    "nll_ignore_int64_max": lambda: nll_ignore(TensorProto.INT64, (1 << 63) - 1),
    "nll_ignore_int64_min": lambda: nll_ignore(TensorProto.INT64, -(1 << 63)),
    "nll_ignore_past_int32": lambda: nll_ignore(TensorProto.INT32, (1 << 32) + 1),
    "nll_ignore_int32_min": lambda: nll_ignore(TensorProto.INT32, -(1 << 31)),
    "fill_small": lambda: fill_max([16, 256]),
    "fill_mid": lambda: fill_max([16, 257]),
    "fill_large": lambda: fill_max([4097, 4096]),
    "fill_huge": lambda: fill_max([65536, 65536]),
    "attention_4d_causal_mask": lambda: attention_23(4, causal=1, mask=TensorProto.BOOL),
    "attention_3d_past": lambda: attention_23(3, past=True, mask=TensorProto.FLOAT),
    "attention_softcap": lambda: attention_23(4, softcap=30.0),
    "split_18_bad_count": split_18_bad_count,
    "newer_opsets": newer_opsets,
    "reduce_mean_17_axes_input": reduce_mean_17_with_axes_input,
    "reduce_mean_28": lambda: reduce_mean_17_with_axes_input(),
})

def opset6_add(bias_shape):
    """Add-6 of x [2,3,4] and a bias at axis 1 (broadcast=1), then Relu."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, bias_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])
    return helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["s"], broadcast=1, axis=1, name="bias_add"),
         helper.make_node("Relu", ["s"], ["y"])], "opset6_add", [x, b], [y])


def einsum(equation, shapes, out):
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
              for n, s in zip("abc", shapes)]
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, out)
    return helper.make_graph(
        [helper.make_node("Einsum", list("abc"[:len(shapes)]), ["out"], equation=equation,
                          name="contract")], "einsum", inputs, [y])


CASES.update({
    "einsum_matmul": lambda: einsum("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], [2, 3, 5]),
    "einsum_bad_sizes": lambda: einsum("ij,jk->ik", [[3, 4], [5, 2]], [3, 2]),
    "einsum_sum_ellipsis": lambda: einsum("...i->i", [[2, 3, 4]], [4]),
    "opset6_add": lambda: opset6_add([3]),
    "opset6_add_bad": lambda: opset6_add([5]),
})

def nms(after, constant_max=True):
    # NonMaxSuppression over 6 boxes and 2 classes (at most 3 a class: 6
    # rows), then `after` on its rows: "gather" takes each selected box's
    # coordinates (Gather by the rows' box column, then by those indices,
    # as torchvision's export does), "reduce" sums the rows (mixing in the
    # padding), "shape" asks for their shape.
    max_name = "max_out" if constant_max else "max_in"
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", max_name, "iou", "score"],
                              ["selected"], name="nms")]
    outputs = []
    if after == "gather":
        nodes += [helper.make_node("Gather", ["selected", "two"], ["column"], name="column", axis=1),
                  helper.make_node("Squeeze", ["column", "one"], ["keep"], name="squeeze"),
                  helper.make_node("Squeeze", ["boxes", "zero"], ["flat"], name="flat"),
                  helper.make_node("Gather", ["flat", "keep"], ["kept"], name="kept", axis=0)]
        outputs = [helper.make_tensor_value_info("kept", TensorProto.FLOAT, ["n", 4]),
                   helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3])]
    elif after == "reduce":
        nodes += [helper.make_node("ReduceSum", ["selected", "zero"], ["total"], name="total")]
        outputs = [helper.make_tensor_value_info("total", TensorProto.INT64, [1, 3])]
    elif after == "shape":
        nodes += [helper.make_node("Shape", ["selected"], ["rows"], name="rows")]
        outputs = [helper.make_tensor_value_info("rows", TensorProto.INT64, [2])]
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 6, 4]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 6])]
    if not constant_max:
        inputs.append(helper.make_tensor_value_info("max_in", TensorProto.INT64, [1]))
    return helper.make_graph(
        nodes, "nms_" + after, inputs, outputs,
        [helper.make_tensor("max_out", TensorProto.INT64, [1], [3]),
         helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.5]),
         helper.make_tensor("score", TensorProto.FLOAT, [1], [0.0]),
         helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
         helper.make_tensor("one", TensorProto.INT64, [1], [1]),
         helper.make_tensor("two", TensorProto.INT64, [1], [2])])


CASES.update({
    "nms_gather": lambda: nms("gather"),
    "nms_reduce": lambda: nms("reduce"),
    "nms_shape": lambda: nms("shape"),
    "nms_max_input": lambda: nms("gather", constant_max=False),
})

# Ops newer than opset 13 (and older than opset 7).
OPSETS = {"trilu_lower_k": 14, "trilu_upper": 14, "trilu_upper_2": 14, "scatter_nd": 16,
          "scatter_nd_bad_updates": 16, "newer_opsets": 25, "reduce_mean_17_axes_input": 17,
          "reduce_mean_28": 28, "split_18_bad_count": 18,
          "attention_4d_causal_mask": 23, "attention_3d_past": 23, "attention_softcap": 23,
          "layer_norm_bad_scale": 17, "swish_24": 24, "dynamic_batch": 18,
          "resize_sizes_not_larger": 18, "resize_sizes_not_smaller_huge": 18,
          "opset6_add": 6, "opset6_add_bad": 6,
          "einsum_matmul": 12, "einsum_bad_sizes": 12, "einsum_sum_ellipsis": 12}

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    model = helper.make_model(CASES[case](), producer_name="tessel-lit",
                              opset_imports=[helper.make_opsetid("", OPSETS.get(case, 13))])
    onnx.save(model, out)
