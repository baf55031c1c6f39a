#!/usr/bin/env python3
"""The custom op example: GatedMix (com.example) between convs.

    x f32[1,8,16,16] -> Conv 8->16 3x3 pad 1 (+bias) = a
                     -> Conv 8->16 1x1           = b
    GatedMix(a, b, w; beta = 1.5): per pixel p and channel n,
        s = sum_k a[p, k] w[k, n],  g = s * sigmoid(1.5 s) * b[p, n]
      -> Conv 16->16 1x1 (+bias) -> y f32[1,16,16,16]

Writes the model, an input (numpy seed 0) and the output evaluated in
float64 with numpy (an independent reference: no Tessel code):

    make_model.py [OUT_DIR] [BATCH]     (default: this folder, batch 1)

`make_model.py OUT_DIR BATCH --op-only CHANNELS SIZE` writes instead
gated_mix_op.onnx, the op alone on inputs a and b f32[BATCH, CHANNELS,
SIZE, SIZE] with w a constant, for timing it (scripts/device/custom-op.sh).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv(x, w, b=None, pad=0):
    """NCHW conv, stride 1, float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def gated_mix(a, b, w, beta):
    """The op in float64, on NCHW tensors."""
    s = np.einsum("nkhw,kc->nchw", a, w)
    return s / (1.0 + np.exp(-beta * s)) * b


def op_only(out, batch, channels, size):
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((channels, channels)) / np.sqrt(channels)).astype(np.float32)
    shape = [batch, channels, size, size]
    node = helper.make_node("GatedMix", ["a", "b", "w"], ["y"], name="mix",
                            domain="com.example", beta=1.5)
    graph = helper.make_graph(
        [node], "gated_mix_op",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, producer_name="tessel-example", opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "gated_mix_op.onnx"))
    np.save(os.path.join(out, "gated_mix_op.w.npy"), w)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    if len(sys.argv) > 3 and sys.argv[3] == "--op-only":
        return op_only(out, batch, int(sys.argv[4]), int(sys.argv[5]))
    rng = np.random.default_rng(0)
    wa = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32)
    ba = (rng.standard_normal(16) * 0.1).astype(np.float32)
    wb = (rng.standard_normal((16, 8, 1, 1)) * 0.4).astype(np.float32)
    w = (rng.standard_normal((16, 16)) * 0.25).astype(np.float32)
    wc = (rng.standard_normal((16, 16, 1, 1)) * 0.25).astype(np.float32)
    bc = (rng.standard_normal(16) * 0.1).astype(np.float32)
    x = rng.standard_normal((batch, 8, 16, 16)).astype(np.float32)
    beta = 1.5

    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wb"], ["b"], name="conv_b"),
        helper.make_node("GatedMix", ["a", "b", "w"], ["g"], name="mix", domain="com.example",
                         beta=beta),
        helper.make_node("Conv", ["g", "wc", "bc"], ["y"], name="conv_c"),
    ]
    inits = [numpy_helper.from_array(v, n) for n, v in
             [("wa", wa), ("ba", ba), ("wb", wb), ("w", w), ("wc", wc), ("bc", bc)]]
    graph = helper.make_graph(
        nodes, "gated_mix_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 16, 16, 16])], inits)
    model = helper.make_model(graph, producer_name="tessel-example", opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "gated_mix.onnx"))

    x64 = x.astype(np.float64)
    a = conv(x64, wa.astype(np.float64), ba.astype(np.float64), pad=1)
    b = conv(x64, wb.astype(np.float64))
    g = gated_mix(a, b, w.astype(np.float64), beta)
    y = conv(g, wc.astype(np.float64), bc.astype(np.float64))
    np.save(os.path.join(out, "gated_mix.input.npy"), x)
    np.save(os.path.join(out, "gated_mix.expected.npy"), y.astype(np.float32))


if __name__ == "__main__":
    main()
