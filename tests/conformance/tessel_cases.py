#!/usr/bin/python3
"""Node tests of Tessel's own, in the ONNX backend node tests' layout.

The ONNX suite's pools have 1 or 3 channels and its pads pad a short last
dim, so it never reaches the library's 16-byte paths: the NHWC pools that
take 16 bytes of channels per thread (a multiple of 8 f16 or 4 f32
channels, codegen/cuda/kernels/Pool.cuh) and the pad that writes a row in
16-byte runs (Movement.cuh), whole or with a tail. These cases do, with NaNs
and ties in the max pools. The conv cases are ResNet's stem and a dilated
strided conv on few channels, which --tessel-pad-channels reads through an
im2row (kernel width x channels folded into the channels). Hardmax before
opset 13 coerces its input to 2-D, which the ONNX suite's cases (opset 13)
do not reach. Expected outputs come from the NumPy reference
below (loops over the ONNX definitions, and numpy.pad), not from Tessel.
Every value is a multiple of 1/8 in [-4, 4], exact in f16, so a max pool or
a pad is exact at either precision. An Add of a constant of such values
comes first: an exact op keeps its producer's precision, and with --precision
fp16 the Add's result, and so the pool or pad, is f16.

    /usr/bin/python3 tests/conformance/tessel_cases.py OUTDIR

writes OUTDIR/test_tessel_*/{model.onnx,test_data_set_0/...}, which
run_conformance.py runs as it runs the ONNX suite (--suite OUTDIR).
"""

import itertools
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import numpy_ref  # noqa: E402  (one NonMaxSuppression reference)


# t = x + bias, ahead of a pool or pad (see above: it makes them f16 at fp16).
BIAS_ADD = helper.make_node("Add", ["x", "bias"], ["t"])


def values(rng, shape):
    return (rng.integers(-32, 33, size=shape) / 8.0).astype(np.float32)


def pool_ref(x, kind, kernel, strides, pads, dilations=(1, 1), ceil=False, include_pad=False):
    """ONNX MaxPool / AveragePool over NCHW, 2-D, in float64."""
    n, c, h, w = x.shape
    begin, end = pads[:2], pads[2:]
    out = []
    for d, size in enumerate((h, w)):
        span = size + begin[d] + end[d] - ((kernel[d] - 1) * dilations[d] + 1)
        count = (math.ceil if ceil else math.floor)(span / strides[d]) + 1
        # A ceil-mode window must start inside the input or its begin pad.
        if ceil and (count - 1) * strides[d] >= size + begin[d]:
            count -= 1
        out.append(count)
    y = np.zeros((n, c, out[0], out[1]), np.float64)
    for i, j in itertools.product(range(out[0]), range(out[1])):
        rows = [i * strides[0] - begin[0] + k * dilations[0] for k in range(kernel[0])]
        cols = [j * strides[1] - begin[1] + k * dilations[1] for k in range(kernel[1])]
        taps = [(r, s) for r in rows for s in cols if 0 <= r < h and 0 <= s < w]
        window = np.stack([x[:, :, r, s].astype(np.float64) for r, s in taps], axis=-1)
        if kind == "MaxPool":
            y[:, :, i, j] = np.max(window, axis=-1)  # NaN if any tap is NaN
        else:
            padded = [(r, s) for r in rows for s in cols
                      if -begin[0] <= r < h + end[0] and -begin[1] <= s < w + end[1]]
            divisor = len(padded) if include_pad else len(taps)
            y[:, :, i, j] = np.sum(window, axis=-1) / divisor
    return y.astype(np.float32)


def write(outdir, name, nodes, inputs, outputs, initializers=(), opset=13, rows=()):
    """The model of `nodes` and its test data set (inputs and outputs of the
    arrays' dtypes: float32, int64 or bool). Outputs named in `rows` declare
    their first dim symbolic: data dependent, as ONNX infers it."""
    types = {np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.int64): TensorProto.INT64}

    def info(k, v):
        shape = ["n"] + list(v.shape[1:]) if k in rows else v.shape
        return helper.make_tensor_value_info(k, types.get(v.dtype, TensorProto.FLOAT), shape)
    graph = helper.make_graph(
        nodes, name, [info(k, v) for k, v in inputs], [info(k, v) for k, v in outputs],
        initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    data = os.path.join(outdir, name, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(outdir, name, "model.onnx"))
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for k, (tensor_name, value) in enumerate(tensors):
            tensor = numpy_helper.from_array(value, tensor_name)
            with open(os.path.join(data, "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(tensor.SerializeToString())


def pool_case(outdir, rng, name, kind, shape, kernel, strides, pads, dilations=(1, 1),
              ceil=False, include_pad=False, nans=0):
    x = values(rng, shape)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, nans, replace=False)] = np.nan
    bias = values(rng, (shape[1], 1, 1))
    attrs = dict(kernel_shape=list(kernel), strides=list(strides), pads=list(pads))
    if kind == "MaxPool":
        attrs["dilations"] = list(dilations)
    else:
        attrs["count_include_pad"] = int(include_pad)
    if ceil:
        attrs["ceil_mode"] = 1
    node = helper.make_node(kind, ["t"], ["y"], **attrs)
    y = pool_ref(x + bias, kind, kernel, strides, pads, dilations, ceil, include_pad)
    write(outdir, name, [BIAS_ADD, node], [("x", x)], [("y", y)],
          [numpy_helper.from_array(bias, "bias")])


def conv_ref(x, w, b, strides, pads, dilations, group=1):
    """ONNX Conv (NCHW, 2-D) in float64."""
    if group > 1:
        xs, ws, bs = (np.split(a, group, axis=0 if a is not x else 1) for a in (x, w, b))
        return np.concatenate([conv_ref(xg, wg, bg, strides, pads, dilations)
                               for xg, wg, bg in zip(xs, ws, bs)], axis=1)
    n, c, h, wd = x.shape
    m, _, r, s = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]))
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - (r - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (xp.shape[3] - (s - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow)) + b.reshape(1, m, 1, 1)
    for i, j in itertools.product(range(r), range(s)):
        patch = xp[:, :, i * dilations[0]:i * dilations[0] + (oh - 1) * strides[0] + 1:strides[0],
                   j * dilations[1]:j * dilations[1] + (ow - 1) * strides[1] + 1:strides[1]]
        y += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j].astype(np.float64))
    return y.astype(np.float32)


def conv_case(outdir, rng, name, shape, filters, kernel, strides, pads, dilations, group=1,
              silu=False):
    """Conv with a bias; with `silu`, then x * sigmoid(x) (SiLU as PyTorch
    exports it, which the conv's epilogue applies)."""
    x = values(rng, shape)
    w = (rng.integers(-8, 9, size=(filters, shape[1] // group) + tuple(kernel)) /
         16.0).astype(np.float32)
    b = values(rng, (filters,))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if silu else "y"],
                              kernel_shape=list(kernel), strides=list(strides), pads=list(pads),
                              dilations=list(dilations), group=group)]
    y = conv_ref(x, w, b, strides, pads, dilations, group).astype(np.float64)
    if silu:
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]),
                  helper.make_node("Mul", ["c", "s"], ["y"])]
        y = y / (1.0 + np.exp(-y))
    write(outdir, name, nodes, [("x", x)], [("y", y.astype(np.float32))],
          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])


def hardmax_case(outdir, rng, name, shape, axis):
    """Hardmax at opset 11: along dim 1 of x coerced to 2-D at `axis`."""
    x = values(rng, shape)
    rows = int(np.prod(shape[:axis]))
    flat = x.reshape(rows, -1)
    y = np.zeros_like(flat)
    y[np.arange(rows), np.argmax(flat, axis=1)] = 1  # the first maximum
    node = helper.make_node("Hardmax", ["x"], ["y"], axis=axis)
    write(outdir, name, [node], [("x", x)], [("y", y.reshape(shape))], opset=11)


def pad_case(outdir, rng, name, shape, pads, mode, value=0.0):
    x = values(rng, shape)
    bias = values(rng, shape[-1:])
    t = x + bias
    rank = len(shape)
    widths = [(pads[d], pads[rank + d]) for d in range(rank)]
    if mode == "constant":
        y = np.pad(t, widths, mode="constant", constant_values=value)
    else:
        y = np.pad(t, widths, mode=mode)  # numpy's reflect and edge are ONNX's
    inits = [numpy_helper.from_array(bias, "bias"),
             numpy_helper.from_array(np.array(pads, np.int64), "pads")]
    ins = ["t", "pads"]
    if mode == "constant":
        inits.append(numpy_helper.from_array(np.array(value, np.float32), "value"))
        ins.append("value")
    node = helper.make_node("Pad", ins, ["y"], mode=mode)
    write(outdir, name, [BIAS_ADD, node], [("x", x)], [("y", y.astype(np.float32))], inits)


def attention_ref(q, k, v, scale, additive=None, keep=None, causal=False):
    """softmax(q k^T * scale + additive, keep, causal) v over the last two dims,
    in float64; `keep` false and keys past the diagonal (j > i + Sk - Sq) are
    -inf."""
    s = np.matmul(q.astype(np.float64), np.swapaxes(k.astype(np.float64), -1, -2)) * scale
    if additive is not None:
        s = s + additive.astype(np.float64)
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq), s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return np.matmul(w, v.astype(np.float64)).astype(np.float32)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))


def attention_cases(outdir, rng):
    """Attention as PyTorch exports it, which --tessel-fuse-attention turns
    into one tessel.attention (and one it must leave unfused). Values are
    multiples of 1/32 in [-1, 1], exact in f16."""
    def qkv(*shapes):
        return [values(rng, s) / 4 for s in shapes]
    transpose_k = helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2])
    softmax = helper.make_node("Softmax", ["m"], ["w"], axis=-1)
    by_v = helper.make_node("MatMul", ["w", "v"], ["y"])

    # BERT: (q k^T) / sqrt(d) + an additive key-padding mask input.
    q, k, v = qkv((2, 4, 16, 64), (2, 4, 16, 64), (2, 4, 16, 64))
    pad = np.zeros((2, 1, 1, 16), np.float32)
    pad[1, ..., 11:] = -10000.0
    write(outdir, "test_tessel_attention_bert_additive_mask", [
        transpose_k, helper.make_node("MatMul", ["q", "kt"], ["s"]), const("c", np.array(8.0, np.float32)),
        helper.make_node("Div", ["s", "c"], ["d"]), helper.make_node("Add", ["d", "mask"], ["m"]),
        softmax, by_v],
        [("q", q), ("k", k), ("v", v), ("mask", pad)],
        [("y", attention_ref(q, k, v, 1 / 8.0, additive=pad))])

    # GPT-2: where(the causal triangle, scores, finfo.min) + an attention mask.
    q, k, v = qkv((1, 2, 24, 64), (1, 2, 24, 64), (1, 2, 24, 64))
    tril = np.tril(np.ones((24, 24), np.bool_))[None, None]
    attn = np.zeros((1, 1, 1, 24), np.float32)
    attn[..., 21:] = np.finfo(np.float32).min  # right padding: every row keeps key 0
    write(outdir, "test_tessel_attention_gpt2_causal", [
        transpose_k, helper.make_node("MatMul", ["q", "kt"], ["s"]), const("c", np.array(8.0, np.float32)),
        helper.make_node("Div", ["s", "c"], ["d"]), const("tril", tril),
        const("fill", np.array(np.finfo(np.float32).min, np.float32)),
        helper.make_node("Where", ["tril", "d", "fill"], ["cm"]),
        helper.make_node("Add", ["cm", "attn"], ["m"]), softmax, by_v],
        [("q", q), ("k", k), ("v", v), ("attn", attn)],
        [("y", attention_ref(q, k, v, 1 / 8.0, additive=attn, causal=True))])

    # F.scaled_dot_product_attention at opset 14+: sqrt(scale) on q and k^T,
    # a bool mask as where(mask, 0, -inf) added.
    q, k, v = qkv((2, 2, 12, 32), (2, 2, 20, 32), (2, 2, 20, 48))
    keep = rng.random((2, 1, 12, 20)) < 0.7
    keep[..., 0] = True
    root = np.array(32 ** -0.25, np.float32)
    write(outdir, "test_tessel_attention_sdpa_bool_mask", [
        const("r", root), helper.make_node("Mul", ["q", "r"], ["qs"]), transpose_k,
        helper.make_node("Mul", ["kt", "r"], ["kts"]), helper.make_node("MatMul", ["qs", "kts"], ["s"]),
        const("zero", np.array(0.0, np.float32)), const("ninf", np.array(-np.inf, np.float32)),
        helper.make_node("Where", ["keep", "zero", "ninf"], ["am"]),
        helper.make_node("Add", ["s", "am"], ["m"]), softmax, by_v],
        [("q", q), ("k", k), ("v", v), ("keep", keep)],
        [("y", attention_ref(q, k, v, float(root) ** 2, keep=keep))])

    # nn.MultiheadAttention: [B*H, S, D], q scaled before the product, a
    # constant additive mask.
    q, k, v = qkv((8, 10, 32), (8, 12, 32), (8, 12, 48))
    bias = (rng.integers(-8, 1, size=(10, 12)) / 4).astype(np.float32)
    scale = np.array(1 / np.sqrt(32), np.float32)
    write(outdir, "test_tessel_attention_mha_rank3", [
        const("c", scale), helper.make_node("Mul", ["q", "c"], ["qs"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["qs", "kt"], ["s"]), const("bias", bias),
        helper.make_node("Add", ["s", "bias"], ["m"]), softmax, by_v],
        [("q", q), ("k", k), ("v", v)],
        [("y", attention_ref(q, k, v, float(scale), additive=bias))])

    # Head dim 100: not what the GPU kernels take, so left unfused (a remark
    # says why); the matmuls and softmax compute it.
    q, k, v = qkv((1, 2, 9, 100), (1, 2, 9, 100), (1, 2, 9, 100))
    write(outdir, "test_tessel_attention_head_dim_100_unfused", [
        transpose_k, helper.make_node("MatMul", ["q", "kt"], ["s"]), const("c", np.array(10.0, np.float32)),
        helper.make_node("Div", ["s", "c"], ["m"]), softmax, by_v],
        [("q", q), ("k", k), ("v", v)],
        [("y", attention_ref(q, k, v, 0.1))])


def reduce_case(outdir, rng, name, kind, shape, axes, keepdims):
    """ReduceMean / ReduceSum (opset 13: axes an attribute of ReduceMean, an
    input of ReduceSum) of x + bias over
    `axes`, which the library runs by its columns kernels where one run of
    dims between kept ones is reduced and the innermost is kept; float64
    reference."""
    x = values(rng, shape)
    bias = values(rng, shape[-1:])
    inits = [numpy_helper.from_array(bias, "bias")]
    if kind == "ReduceMean":
        node = helper.make_node(kind, ["t"], ["y"], axes=list(axes), keepdims=keepdims)
    else:
        node = helper.make_node(kind, ["t", "axes"], ["y"], keepdims=keepdims)
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    t = x.astype(np.float64) + bias
    y = (t.mean if kind == "ReduceMean" else t.sum)(axis=tuple(axes), keepdims=bool(keepdims))
    write(outdir, name, [BIAS_ADD, node], [("x", x)], [("y", y.astype(np.float32))], inits)


def binary_case(outdir, rng, name, kind, shape, other):
    """(x + bias) <kind> y, y of shape `other` broadcasting to `shape`: the
    library's 16-byte-word kernels where both run contiguously along the
    innermost dim; float64 reference. t = x + bias is an output too, so that
    the two ops stay steps of their own (not one elementwise group)."""
    x, y = values(rng, shape), values(rng, other)
    if kind == "Div":
        y = np.where(y == 0, 0.5, y).astype(np.float32)
    bias = values(rng, shape[-1:])
    node = helper.make_node(kind, ["t", "y"], ["z"])
    t = x.astype(np.float64) + bias
    z = {"Mul": np.multiply, "Add": np.add, "Sub": np.subtract, "Div": np.divide}[kind](t, y)
    write(outdir, name, [BIAS_ADD, node], [("x", x), ("y", y)],
          [("z", z.astype(np.float32)), ("t", t.astype(np.float32))],
          [numpy_helper.from_array(bias, "bias")])


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def elementwise_group_cases(outdir, rng):
    """Connected groups of elementwise ops (--tessel-fuse-elementwise: one
    step and one generated kernel each), float64 references:

    - runs of 8 along the innermost dim (24 wide): a per-channel weight and a
      per-image bias broadcast, a per-pixel bool condition (Where), Clip,
      Sigmoid, Exp (f32 math: casts around it at fp16), a diamond (x read by
      four ops);
    - an innermost dim of 7 (one element a thread), a [5, 1] column
      broadcast, scalar constants (literals), LeakyRelu, Tanh, Erf, Pow by 2;
    - Mish (x * tanh(softplus(x))) after a conv: NHWC channels, the conv's
      result read by two ops of the group."""
    x = values(rng, (2, 7, 9, 24)) / 2
    w = values(rng, (24,))
    b = values(rng, (2, 1, 1, 24))
    c = rng.integers(0, 2, size=(2, 7, 9, 1)).astype(np.bool_)
    xd = x.astype(np.float64)
    gated = np.clip(sigmoid(xd * w + b) * xd, -1.0, 2.5)
    y = np.where(c, gated, xd / 4) + np.exp(-np.abs(xd))
    consts = {"four": np.array(4.0, np.float32), "lo": np.array(-1.0, np.float32),
              "hi": np.array(2.5, np.float32)}
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Sigmoid", ["pre"], ["s"]),
             helper.make_node("Mul", ["s", "x"], ["sx"]),
             helper.make_node("Clip", ["sx", "lo", "hi"], ["cl"]),
             helper.make_node("Div", ["x", "four"], ["q"]),
             helper.make_node("Where", ["c", "cl", "q"], ["sel"]),
             helper.make_node("Abs", ["x"], ["ax"]),
             helper.make_node("Neg", ["ax"], ["nx"]),
             helper.make_node("Exp", ["nx"], ["e"]),
             helper.make_node("Add", ["sel", "e"], ["y"])]
    write(outdir, "test_tessel_elementwise_group_vec8", nodes, [("x", x), ("c", c)],
          [("y", y.astype(np.float32))],
          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")] +
          [numpy_helper.from_array(v, k) for k, v in consts.items()])

    x = values(rng, (3, 5, 7)) / 2
    r = values(rng, (5, 1))
    xd = x.astype(np.float64)
    lr = np.where(xd + r < 0, 0.2 * (xd + r), xd + r)
    erf = np.vectorize(math.erf)
    y = np.tanh(lr) * 0.5 + erf(xd) - np.power(xd, 2.0)
    consts = {"half": np.array([0.5], np.float32), "two": np.array(2.0, np.float32)}
    nodes = [helper.make_node("Add", ["x", "r"], ["xr"]),
             helper.make_node("LeakyRelu", ["xr"], ["lr"], alpha=0.2),
             helper.make_node("Tanh", ["lr"], ["t"]),
             helper.make_node("Mul", ["t", "half"], ["th"]),
             helper.make_node("Erf", ["x"], ["er"]),
             helper.make_node("Add", ["th", "er"], ["a"]),
             helper.make_node("Pow", ["x", "two"], ["p"]),
             helper.make_node("Sub", ["a", "p"], ["y"])]
    write(outdir, "test_tessel_elementwise_group_scalar", nodes, [("x", x)],
          [("y", y.astype(np.float32))],
          [numpy_helper.from_array(r, "r")] +
          [numpy_helper.from_array(v, k) for k, v in consts.items()])

    x = values(rng, (2, 8, 6, 5))
    wc = (rng.integers(-8, 9, size=(16, 8, 3, 3)) / 16.0).astype(np.float32)
    bc = values(rng, (16,))
    a = conv_ref(x, wc, bc, (1, 1), (1, 1, 1, 1), (1, 1)).astype(np.float64)
    y = a * np.tanh(np.log1p(np.exp(a)))
    nodes = [helper.make_node("Conv", ["x", "wc", "bc"], ["a"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Softplus", ["a"], ["sp"]),
             helper.make_node("Tanh", ["sp"], ["t"]),
             helper.make_node("Mul", ["a", "t"], ["y"])]
    write(outdir, "test_tessel_elementwise_group_mish_after_conv", nodes, [("x", x)],
          [("y", y.astype(np.float32))],
          [numpy_helper.from_array(wc, "wc"), numpy_helper.from_array(bc, "bc")])


def squeeze_excite_case(outdir, rng, name, shape, hidden, gate, project=0, act="Relu"):
    """A squeeze-excitation block as torchvision exports it: a conv (so the
    block's input is an NHWC activation in the engine), GlobalAveragePool,
    a 1x1 conv with ReLU (or SiLU as x * sigmoid(x), EfficientNet's), a 1x1
    conv with the gate (Sigmoid or HardSigmoid),
    the channel scale; with `project` output channels, then the 1x1
    projection that reads the scaled activations (which takes the scale into
    its operand load: --tessel-fuse-channel-scale); the reference in
    float64."""
    n, c, h, w = shape
    x = values(rng, shape)
    w0 = (rng.integers(-8, 9, size=(c, c, 1, 1)) / 16.0).astype(np.float32)
    b0 = values(rng, (c,))
    w1 = (rng.integers(-8, 9, size=(hidden, c, 1, 1)) / 16.0).astype(np.float32)
    b1 = values(rng, (hidden,))
    w2 = (rng.integers(-8, 9, size=(c, hidden, 1, 1)) / 16.0).astype(np.float32)
    b2 = values(rng, (c,))
    a = conv_ref(x, w0, b0, (1, 1), (0, 0, 0, 0), (1, 1)).astype(np.float64)
    pooled = a.mean(axis=(2, 3), keepdims=True)
    q = np.einsum("rc,nchw->nrhw", w1[:, :, 0, 0].astype(np.float64), pooled) + \
        b1.reshape(1, -1, 1, 1)
    t = np.maximum(q, 0.0) if act == "Relu" else q / (1.0 + np.exp(-q))
    g = np.einsum("cr,nrhw->nchw", w2[:, :, 0, 0].astype(np.float64), t) + b2.reshape(1, -1, 1, 1)
    if gate == "Sigmoid":
        g = 1.0 / (1.0 + np.exp(-g))
        gate_node = helper.make_node("Sigmoid", ["g"], ["s"])
    else:
        g = np.clip(g / 6.0 + 0.5, 0.0, 1.0)
        gate_node = helper.make_node("HardSigmoid", ["g"], ["s"], alpha=1.0 / 6, beta=0.5)
    y = a * g
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["a"]),
             helper.make_node("GlobalAveragePool", ["a"], ["p"]),
             helper.make_node("Conv", ["p", "w1", "b1"], ["q"]),
             helper.make_node("Relu", ["q"], ["t"]) if act == "Relu" else
             helper.make_node("Sigmoid", ["q"], ["qs"]),
             helper.make_node("Conv", ["t", "w2", "b2"], ["g"]),
             gate_node,
             helper.make_node("Mul", ["a", "s"], ["y"])]
    if act != "Relu":
        nodes.insert(4, helper.make_node("Mul", ["q", "qs"], ["t"]))
    weights = [("w0", w0), ("b0", b0), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]
    if project:
        w3 = (rng.integers(-8, 9, size=(project, c, 1, 1)) / 16.0).astype(np.float32)
        b3 = values(rng, (project,))
        y = np.einsum("oc,nchw->nohw", w3[:, :, 0, 0].astype(np.float64), y) + \
            b3.reshape(1, -1, 1, 1)
        nodes[-1].output[0] = "z"
        nodes.append(helper.make_node("Conv", ["z", "w3", "b3"], ["y"]))
        weights += [("w3", w3), ("b3", b3)]
    inits = [numpy_helper.from_array(v, k) for k, v in weights]
    write(outdir, name, nodes, [("x", x)], [("y", y.astype(np.float32))], inits)


def opset6_case(outdir, rng, name):
    """A CNN head with opset 6's semantics, which the version converter
    upgrades: BatchNormalization-6 (is_test), Add-6 and Mul-6 with the
    broadcast and axis attributes (a channel bias, a scalar scale), Gemm-6
    (broadcast C), Dropout-6 (is_test), around ops unchanged since (Conv,
    Relu, GlobalAveragePool, Flatten)."""
    x = values(rng, (2, 4, 5, 5))
    w = (rng.integers(-8, 9, size=(8, 4, 3, 3)) / 16.0).astype(np.float32)
    scale, shift, bias = values(rng, (8,)), values(rng, (8,)), values(rng, (8,))
    mean = values(rng, (8,))
    var = (rng.integers(1, 17, size=8) / 8.0).astype(np.float32)
    wfc = values(rng, (8, 3))
    bfc = values(rng, (3,))
    k = np.array([0.75], np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["bn"],
                         is_test=1, epsilon=1e-3),
        helper.make_node("Add", ["bn", "bias"], ["a"], broadcast=1, axis=1),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "wfc", "bfc"], ["fc"], broadcast=1),
        helper.make_node("Mul", ["fc", "k"], ["m"], broadcast=1),
        helper.make_node("Dropout", ["m"], ["y"], is_test=1),
    ]
    c = conv_ref(x, w, np.zeros(8, np.float32), (1, 1), (1, 1, 1, 1), (1, 1)).astype(np.float64)
    per = lambda v: v.astype(np.float64).reshape(1, 8, 1, 1)
    bn = (c - per(mean)) / np.sqrt(per(var) + 1e-3) * per(scale) + per(shift)
    r = np.maximum(bn + per(bias), 0.0)
    fc = r.mean(axis=(2, 3)) @ wfc.astype(np.float64) + bfc
    y = (fc * 0.75).astype(np.float32)
    write(outdir, name, nodes, [("x", x)], [("y", y)],
          [numpy_helper.from_array(a, n) for a, n in
           ((w, "w"), (scale, "scale"), (shift, "shift"), (mean, "mean"), (var, "var"),
            (bias, "bias"), (wfc, "wfc"), (bfc, "bfc"), (k, "k"))], opset=6)


def einsum_cases(outdir, rng):
    """Einsum beyond the ONNX suite's (f64, one or two small operands): f32
    operands of Tensor Core sizes (attention scores, the batched matmul a
    head's projection is), an implicit output with a broadcast ellipsis,
    three operands, an outer product, a trace per batch; numpy.einsum in
    float64 is the reference."""
    cases = [
        ("test_tessel_einsum_attention_scores", "bhqd,bhkd->bhqk", [(2, 3, 8, 16), (2, 3, 8, 16)]),
        ("test_tessel_einsum_ellipsis_implicit", "...ij,jk", [(2, 1, 4, 24), (24, 16)]),
        ("test_tessel_einsum_ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 4, 8), (2, 3, 8, 5)]),
        ("test_tessel_einsum_three_operands", "ij,jk,kl->li", [(4, 8), (8, 16), (16, 8)]),
        ("test_tessel_einsum_outer", "i,j->ij", [(5,), (7,)]),
        ("test_tessel_einsum_trace_sum", "bii,bj->jb", [(3, 6, 6), (3, 4)]),
    ]
    names = "xyz"
    for name, equation, shapes in cases:
        arrays = [values(rng, shape) for shape in shapes]
        y = np.einsum(equation, *[a.astype(np.float64) for a in arrays]).astype(np.float32)
        node = helper.make_node("Einsum", list(names[:len(arrays)]), ["out"], equation=equation)
        write(outdir, name, [node], list(zip(names, arrays)), [("out", y)], opset=12)


def qdq_conv_case(outdir, rng, name):
    """A QDQ conv as quantization tools write it: the activation quantized
    and dequantized per tensor (uint8, zero point 128), the int8 weight
    dequantized per output channel (axis 0, zero point 0), a conv with a f32
    bias, its output quantized and dequantized again (int8, zero point -3).
    A float engine folds each pair's casts (a fake quantization in f32) and
    the weight's DequantizeLinear into a constant. numpy computes the ONNX
    formulas (round half to even, saturation) in f32, the scales' type, as
    ONNX's reference does. The activation's and weight's scales are powers
    of two, so that every conv output is a multiple of 1/32 below 64 in
    magnitude, exact in f16 too; the output's scale is 0.13, which f16
    rounds (to 0.1300049), and c / 0.13 is not exact in f16 either: the
    case checks that quantizing in f16 would change some outputs by a step,
    so at fp16 it passes only where the quantization arithmetic stays in
    f32 (kModelPrecisionAttr)."""
    x = values(rng, (1, 8, 6, 6))
    w_q = rng.integers(-4, 5, size=(16, 8, 3, 3)).astype(np.int8)
    w_scale = rng.choice([1 / 16, 1 / 8], size=16).astype(np.float32)
    b = values(rng, (16,))
    x_scale, x_zero = np.float32(1 / 2), np.uint8(128)
    y_scale, y_zero = np.float32(0.13), np.int8(-3)

    def fake_quant(v, scale, zero, lo, hi):
        q = np.clip(np.rint(v.astype(np.float32) / scale) + np.float32(zero), lo, hi)
        return (q - np.float32(zero)) * scale

    xq = fake_quant(x, x_scale, x_zero, 0, 255)
    w = (w_q.astype(np.float64) * w_scale.astype(np.float64).reshape(16, 1, 1, 1))
    c = conv_ref(xq, w, b, (1, 1), (1, 1, 1, 1), (1, 1)).astype(np.float64)
    assert np.abs(c).max() < 64 and np.all(c * 32 == np.rint(c * 32)), "not exact in f16"
    y = fake_quant(c, y_scale, y_zero, -128, 127).astype(np.float32)
    quotient16 = (c.astype(np.float16) / np.float16(y_scale)).astype(np.float16)
    q16 = np.clip(np.rint(quotient16.astype(np.float32)) + np.float32(y_zero), -128, 127)
    assert np.any(q16 != np.rint(y / y_scale + np.float32(y_zero))), "f16 quantization agrees"
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w"], axis=0),
        helper.make_node("Conv", ["xd", "w", "b"], ["c"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "y_scale", "y_zero"], ["cq"]),
        helper.make_node("DequantizeLinear", ["cq", "y_scale", "y_zero"], ["y"]),
    ]
    write(outdir, name, nodes, [("x", x)], [("y", y)],
          [numpy_helper.from_array(a, n) for a, n in
           ((w_q, "w_q"), (w_scale, "w_scale"), (b, "b"),
            (np.array(x_scale), "x_scale"), (np.array(x_zero), "x_zero"),
            (np.array(y_scale), "y_scale"), (np.array(y_zero), "y_zero"))])


def maxpool_indices_case(outdir, rng, name, shape, kernel, strides, pads, storage_order, nans=0):
    """MaxPool with its Indices output: the flat NCHW index into x (after the
    bias add, t) of each window's first maximum (the first NaN where there
    is one), its spatial part row-major, or column-major with storage_order
    1; a batch of 2 and 16 channels, so that the batch and channel terms
    count and the engine's pooled output runs NHWC."""
    x = values(rng, shape)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, nans, replace=False)] = np.nan
    bias = values(rng, (shape[1], 1, 1))
    t = (x + bias).astype(np.float32)
    n, c, h, w = shape
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    y = np.zeros((n, c, oh, ow), np.float32)
    z = np.zeros((n, c, oh, ow), np.int64)
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        taps = [(r, q) for r in range(i * strides[0] - pads[0], i * strides[0] - pads[0] + kernel[0])
                for q in range(j * strides[1] - pads[1], j * strides[1] - pads[1] + kernel[1])
                if 0 <= r < h and 0 <= q < w]
        vals = np.array([t[b, ch, r, q] for r, q in taps])
        r, q = taps[int(np.argmax(vals))]  # the first maximum, or the first NaN
        y[b, ch, i, j] = vals.max() if not np.isnan(vals).any() else np.nan
        spatial = r * w + q if storage_order == 0 else q * h + r
        z[b, ch, i, j] = (b * c + ch) * h * w + spatial
    node = helper.make_node("MaxPool", ["t"], ["y", "z"], kernel_shape=list(kernel),
                            strides=list(strides), pads=list(pads), storage_order=storage_order)
    write(outdir, name, [BIAS_ADD, node], [("x", x)], [("y", y), ("z", z)],
          [numpy_helper.from_array(bias, "bias")], opset=12)


def nms_case(outdir, rng, name, batches, classes, count, max_out, center):
    """NonMaxSuppression over clustered random boxes (so that many overlap),
    scores from 40 levels (ties break by index), then the kept boxes'
    coordinates by GatherND of (batch, box): both outputs' extents are data
    dependent. Boxes and scores are graph inputs: f32 at either precision."""
    centers = rng.uniform(0, 4, (batches, count, 2)).astype(np.float32)
    sizes = rng.uniform(0.5, 2, (batches, count, 2)).astype(np.float32)
    if center:
        boxes = np.concatenate([centers, sizes], axis=2)
    else:  # (y1, x1, y2, x2), corners in either order
        flip = rng.random((batches, count, 1)) < 0.3
        lo, hi = centers - sizes / 2, centers + sizes / 2
        boxes = np.where(flip, np.concatenate([hi, lo], 2), np.concatenate([lo, hi], 2))
    boxes = boxes.astype(np.float32)
    scores = (rng.integers(0, 40, (batches, classes, count)) / 40).astype(np.float32)
    iou_threshold, score_threshold = 0.4, 0.3
    selected = numpy_ref.non_max_suppression(boxes, scores, max_out, np.float32(iou_threshold),
                                             np.float32(score_threshold), center)
    kept = boxes[selected[:, 0], selected[:, 2]]
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "thr"],
                              ["selected"], center_point_box=int(center)),
             helper.make_node("Gather", ["selected", "columns"], ["where"], axis=1),
             helper.make_node("GatherND", ["boxes", "where"], ["kept"])]
    write(outdir, name, nodes, [("boxes", boxes), ("scores", scores)],
          [("selected", selected), ("kept", kept)],
          [numpy_helper.from_array(np.array([max_out], np.int64), "max_out"),
           numpy_helper.from_array(np.array([iou_threshold], np.float32), "iou"),
           numpy_helper.from_array(np.array([score_threshold], np.float32), "thr"),
           numpy_helper.from_array(np.array([0, 2], np.int64), "columns")], opset=12,
          rows=("selected", "kept"))


def gemm_padded_cases(outdir, rng):
    """f16 gemms whose operands' contiguous dims are odd (no run cp.async
    copies), which --tessel-pad-channels computes padded to multiples of 8
    (zeros in K) and slices back, large enough that the gemm does at least
    128 flops for each byte the padding copies; float64 references:

    - A x B + C, relu: B [640, 37] holds N = 37 contiguously (a graph input:
      its pad is a step), the result sliced before its cast to f32;
    - A^T x B + C: A [640, 35] holds M = 35 contiguously, C a column [35, 1];
    - relu(A x B1 + C) x B2, all but C graph inputs: N = 501 padded to 504;
      the second gemm reads that padded result, the relu in its epilogue, as
      its A (K = 501 in 504 columns) without a slice, B2's rows padded with
      zeros;
    - x [2, 256, 517] by constant weights [517, 512] plus a bias: to-nhwc
      makes the weights K-major (transB), K = 517 is padded in x and in
      the weights.

    The same with even dims (36, 34, 500, 516) at fewer than 512 flops a
    byte stay unpadded: the Tensor Core tiers copy them in runs of 8 or 4
    bytes (test_tessel_gemm_short_runs_*)."""
    for n, name in ((37, "padded_n"), (36, "short_runs_n")):
        a, b, c = values(rng, (640, 640)) / 4, values(rng, (640, n)) / 4, values(rng, (n,))
        y = np.maximum(a.astype(np.float64) @ b + c, 0.0)
        write(outdir, "test_tessel_gemm_" + name, [
            helper.make_node("Gemm", ["a", "b", "c"], ["g"]),
            helper.make_node("Relu", ["g"], ["y"])],
            [("a", a), ("b", b)], [("y", y.astype(np.float32))],
            [numpy_helper.from_array(c, "c")])
    for m, name in ((35, "padded_m"), (34, "short_runs_m")):
        a, b, c = values(rng, (640, m)) / 4, values(rng, (640, 640)) / 4, values(rng, (m, 1))
        y = a.astype(np.float64).T @ b + c
        write(outdir, "test_tessel_gemm_" + name, [
            helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1)],
            [("a", a), ("b", b)], [("y", y.astype(np.float32))],
            [numpy_helper.from_array(c, "c")])
    for n, name in ((501, "padded_k_propagated"), (500, "short_runs_k_propagated")):
        a, b1, c = values(rng, (512, 1024)) / 4, values(rng, (1024, n)) / 4, values(rng, (n,))
        b2 = values(rng, (n, 640)) / 4
        y = np.maximum(a.astype(np.float64) @ b1 + c, 0.0) @ b2
        write(outdir, "test_tessel_gemm_" + name, [
            helper.make_node("Gemm", ["a", "b1", "c"], ["g"]),
            helper.make_node("Relu", ["g"], ["r"]),
            helper.make_node("Gemm", ["r", "b2"], ["y"])],
            [("a", a), ("b1", b1), ("b2", b2)], [("y", y.astype(np.float32))],
            [numpy_helper.from_array(c, "c")])
    for k, name in ((517, "padded_k_constant_weights"), (516, "short_runs_k_constant_weights")):
        x = values(rng, (2, 256, k)) / 4
        w, bias = values(rng, (k, 512)) / 4, values(rng, (512,))
        y = x.astype(np.float64) @ w + bias
        write(outdir, "test_tessel_gemm_" + name, [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Add", ["h", "bias"], ["y"])],
            [("x", x)], [("y", y.astype(np.float32))],
            [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])


def main(outdir):
    rng = np.random.default_rng(20261123)
    # Max pools: 16 and 24 channels take the 16-byte path at f16 and f32; 12
    # only at f32 (3 groups of 4), one channel per thread at f16. NaNs and
    # ties (values from 65 levels) check the first maximum and NaN rules.
    pool_case(outdir, rng, "test_tessel_maxpool_c16_nan", "MaxPool", (2, 16, 9, 9),
              (3, 3), (2, 2), (1, 1, 1, 1), nans=12)
    pool_case(outdir, rng, "test_tessel_maxpool_c24_ceil_dilated", "MaxPool", (1, 24, 10, 11),
              (2, 3), (2, 2), (0, 1, 0, 0), dilations=(2, 1), ceil=True)
    pool_case(outdir, rng, "test_tessel_maxpool_c12", "MaxPool", (1, 12, 8, 8),
              (2, 2), (2, 2), (0, 0, 0, 0))
    pool_case(outdir, rng, "test_tessel_avgpool_c16_exclude_pad", "AveragePool", (2, 16, 9, 9),
              (3, 3), (2, 2), (1, 1, 1, 1))
    pool_case(outdir, rng, "test_tessel_avgpool_c32_include_pad", "AveragePool", (1, 32, 7, 7),
              (3, 3), (2, 2), (1, 1, 1, 1), include_pad=True)
    # Pads whose last dim is a whole number of 16-byte runs at both
    # precisions (8, 16), and ones with a tail (10: neither 8 nor 4 divides).
    pad_case(outdir, rng, "test_tessel_pad_runs_constant", (2, 3, 4, 6),
             [0, 0, 1, 1, 0, 0, 0, 1], "constant", 0.5)
    pad_case(outdir, rng, "test_tessel_pad_runs_reflect", (1, 2, 3, 5),
             [0, 1, 0, 2, 0, 0, 1, 1], "reflect")
    pad_case(outdir, rng, "test_tessel_pad_runs_edge", (2, 2, 3, 13),
             [0, 1, 0, 2, 0, 0, 2, 1], "edge")
    pad_case(outdir, rng, "test_tessel_pad_tail_constant", (1, 2, 3, 5),
             [0, 0, 1, 1, 0, 0, 0, 4], "constant", -1.25)
    pad_case(outdir, rng, "test_tessel_pad_tail_reflect", (3, 7),
             [1, 3, 0, 0], "reflect")
    # Convs on 3 channels: the stem (7 taps x 3 = 21 channels, padded to 24,
    # pads 3 on both sides of W) and a dilated, strided, asymmetrically padded
    # 3x3 whose rows hold 9 channels (padded to 16).
    conv_case(outdir, rng, "test_tessel_conv_stem_im2row", (2, 3, 20, 22), 16,
              (7, 7), (2, 2), (3, 3, 3, 3), (1, 1))
    # Rows of 32 x 3 (whole 16-byte runs at both precisions: the GPU's
    # im2row stages them with 16-byte loads), odd height, pads 3 and 2.
    conv_case(outdir, rng, "test_tessel_conv_stem_im2row_w32", (2, 3, 9, 32), 8,
              (7, 7), (2, 2), (3, 3, 2, 2), (1, 1))
    conv_case(outdir, rng, "test_tessel_conv_dilated_im2row", (1, 3, 11, 13), 8,
              (3, 3), (1, 2), (1, 2, 0, 1), (2, 2))
    # Depthwise convs (a group per channel), NHWC in the engine, with the
    # epilogue (bias, SiLU), strided and padded; 5x5, dilated, asymmetric
    # pads; 12 channels (padded to 16 at fp16).
    conv_case(outdir, rng, "test_tessel_conv_depthwise_s2_silu", (2, 16, 9, 10), 16,
              (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), group=16, silu=True)
    conv_case(outdir, rng, "test_tessel_conv_depthwise_5x5_dilated", (1, 24, 11, 12), 24,
              (5, 5), (1, 1), (4, 3, 4, 5), (2, 2), group=24)
    conv_case(outdir, rng, "test_tessel_conv_depthwise_c12", (1, 12, 7, 7), 12,
              (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), group=12)
    # Binary ops by 16-byte words: a squeeze-excitation scale (a channel
    # vector per image over NHWC), same-shape sub, a div by a row vector.
    binary_case(outdir, rng, "test_tessel_mul_channel_scale", "Mul", (2, 5, 5, 16), (2, 1, 1, 16))
    binary_case(outdir, rng, "test_tessel_sub_same_shape", "Sub", (3, 40), (3, 40))
    binary_case(outdir, rng, "test_tessel_div_rows", "Div", (4, 3, 24), (24,))
    # Hardmax before opset 13: the maximum of each row of the 2-D coercion
    # (values with ties: the first maximum wins).
    hardmax_case(outdir, rng, "test_tessel_hardmax_opset11_coerced", (2, 3, 4), 1)
    # Reductions of the middle dims (a global pool of NHWC): split into row
    # chunks with a second launch (3136 rows, 40 columns: a tile of 32 and
    # one of 8), a sum in 3 chunks, a leading run (one kept dim), and two
    # merged reduced dims too short to split.
    reduce_case(outdir, rng, "test_tessel_reduce_mean_columns_split", "ReduceMean",
                (2, 3136, 40), [1], 1)
    reduce_case(outdir, rng, "test_tessel_reduce_sum_columns", "ReduceSum", (3, 200, 20), [1], 0)
    reduce_case(outdir, rng, "test_tessel_reduce_mean_columns_leading", "ReduceMean",
                (640, 24), [0], 0)
    reduce_case(outdir, rng, "test_tessel_reduce_mean_columns_merged", "ReduceMean",
                (2, 5, 6, 7), [1, 2], 1)
    # At fp16 with 16-byte rows of channels and at most 2304 rows, one launch
    # of 16-byte loads: 2304 rows (18 a row group of 128) and 200 channels (a
    # last block of 8), 49 rows of 1280 channels summed, 37 rows (most row
    # groups empty) of 24 channels.
    reduce_case(outdir, rng, "test_tessel_reduce_mean_columns_vec", "ReduceMean",
                (2, 2304, 200), [1], 1)
    reduce_case(outdir, rng, "test_tessel_reduce_sum_columns_vec", "ReduceSum",
                (3, 49, 1280), [1], 0)
    reduce_case(outdir, rng, "test_tessel_reduce_mean_columns_vec_short", "ReduceMean",
                (1, 37, 24), [1], 1)
    # Squeeze-excitation blocks end to end (the global pool of NHWC by
    # columns, two 1x1 convs of one row per image, the channel scale): a pool
    # split into row chunks (56 x 56), one that is not (5 x 5, three
    # images), a hidden width padded to 8 (4 -> 8 at fp16).
    squeeze_excite_case(outdir, rng, "test_tessel_squeeze_excite_sigmoid", (1, 24, 56, 56), 8,
                        "Sigmoid")
    squeeze_excite_case(outdir, rng, "test_tessel_squeeze_excite_hard_sigmoid", (3, 16, 5, 5), 4,
                        "HardSigmoid")
    # ... and the projection after them, the channel scale in its operand
    # load: two images of 7 x 7 (the second starts inside a row tile), and
    # 136 channels (K of three 64-deep steps) with the hard gate.
    squeeze_excite_case(outdir, rng, "test_tessel_squeeze_excite_project", (2, 32, 7, 7), 8,
                        "Sigmoid", project=16)
    squeeze_excite_case(outdir, rng, "test_tessel_squeeze_excite_project_k136", (1, 136, 14, 14),
                        8, "HardSigmoid", project=24)
    # The squeeze as one step (--tessel-fuse-pool-fc at fp16): 200 channels
    # in four tiles of 64 (the last 8 wide), 24 x 24 rows in three chunks of
    # 192, two images, 48 hidden channels with SiLU.
    squeeze_excite_case(outdir, rng, "test_tessel_squeeze_excite_silu_c200", (2, 200, 24, 24),
                        48, "Sigmoid", act="Silu")
    attention_cases(outdir, rng)
    elementwise_group_cases(outdir, rng)
    gemm_padded_cases(outdir, rng)
    # A model older than opset 7 whose ops changed since (ONNX's version
    # converter upgrades it).
    opset6_case(outdir, rng, "test_tessel_opset6_cnn")
    einsum_cases(outdir, rng)
    # QuantizeLinear / DequantizeLinear pairs around a conv (QDQ).
    qdq_conv_case(outdir, rng, "test_tessel_qdq_conv")
    # MaxPool's Indices output, row-major and column-major, with NaNs and ties.
    maxpool_indices_case(outdir, rng, "test_tessel_maxpool_indices_row_major", (2, 16, 7, 9),
                         (3, 3), (2, 2), (1, 1, 1, 1), 0, nans=6)
    maxpool_indices_case(outdir, rng, "test_tessel_maxpool_indices_column_major", (2, 16, 8, 6),
                         (2, 3), (2, 1), (0, 1, 1, 0), 1)
    # NonMaxSuppression, its rows data dependent, corner and center boxes.
    nms_case(outdir, rng, "test_tessel_nms_corners", 2, 3, 300, 25, center=False)
    nms_case(outdir, rng, "test_tessel_nms_centers", 1, 4, 1000, 1000, center=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tessel_cases.py OUTDIR")
    main(sys.argv[1])
