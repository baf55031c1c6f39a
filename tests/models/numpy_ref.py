#!/usr/bin/python3
"""A small float64 numpy evaluator for the ONNX ops the model tests and the
bundled example use (onnx 1.12 ships no reference evaluator).

It is an independent check on the test data, not on Tessel: it confirms that
an exported .onnx file computes what PyTorch computed (so a model-test failure
is Tessel's, not the exporter's), and, being float64 throughout, it measures
how far PyTorch's own fp32 result is from the exact one, which is the scale any
other fp32 implementation's error must also have.

    /usr/bin/python3 numpy_ref.py MODEL.onnx INPUT.pb|.npy [EXPECTED.pb|.npy]
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper
from numpy.lib.stride_tricks import sliding_window_view


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _pads(attrs, spatial, in_shape, kernel, strides, dilations):
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("NOTSET", ""):
        pads = list(attrs.get("pads", [0] * (2 * spatial)))
        return pads[:spatial], pads[spatial:]
    if auto_pad == "VALID":
        return [0] * spatial, [0] * spatial
    begin, end = [], []
    for i in range(spatial):
        out = -(-in_shape[i] // strides[i])
        total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_shape[i])
        small, big = total // 2, total - total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small); end.append(big)
        else:
            begin.append(big); end.append(small)
    return begin, end


def _windows(x, kernel, strides, dilations):
    """x [N, C, H, W] (already padded) -> [N, C, Ho, Wo, kh, kw]."""
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    w = sliding_window_view(x, span, axis=(2, 3))
    w = w[:, :, ::strides[0], ::strides[1], ::dilations[0], ::dilations[1]]
    return w


def conv(x, w, b, attrs):
    assert x.ndim == 4, "2-D convolution only"
    kernel = list(w.shape[2:])
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    group = attrs.get("group", 1)
    pb, pe = _pads(attrs, 2, x.shape[2:], kernel, strides, dilations)
    x = np.pad(x, ((0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])))
    win = _windows(x, kernel, strides, dilations)  # N C Ho Wo kh kw
    n, c, ho, wo = win.shape[:4]
    m = w.shape[0]
    if group == 1:
        y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # N Ho Wo M
        y = y.transpose(0, 3, 1, 2)
    else:
        cg, mg = c // group, m // group
        win = win.reshape(n, group, cg, ho, wo, *kernel)
        wg = w.reshape(group, mg, cg, *kernel)
        y = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True).reshape(n, m, ho, wo)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y


def pool(x, attrs, kind):
    kernel = list(attrs["kernel_shape"])
    assert len(kernel) == 2, "2-D pooling only"
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    pb, pe = _pads(attrs, 2, x.shape[2:], kernel, strides, dilations)
    pe = list(pe)
    if attrs.get("ceil_mode", 0):
        for i in range(2):
            span = (kernel[i] - 1) * dilations[i] + 1
            size = x.shape[2 + i] + pb[i] + pe[i] - span
            out = -(-size // strides[i]) + 1
            # The last window must start inside the input or the leading pad.
            if (out - 1) * strides[i] >= x.shape[2 + i] + pb[i]:
                out -= 1
            pe[i] += max(0, (out - 1) * strides[i] + span - (x.shape[2 + i] + pb[i] + pe[i]))
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, ((0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])), constant_values=fill)
    win = _windows(xp, kernel, strides, dilations)
    if kind == "max":
        return win.max(axis=(4, 5))
    if attrs.get("count_include_pad", 0):
        if attrs.get("ceil_mode", 0):
            raise NotImplementedError("numpy_ref: AveragePool count_include_pad with ceil_mode")
        xz = np.pad(x, ((0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])))
        return _windows(xz, kernel, strides, dilations).mean(axis=(4, 5))
    return np.nanmean(win, axis=(4, 5))


def round_to_f16(value):
    """A float tensor as f16 storage would hold it (round to nearest even)."""
    return value.astype(np.float16).astype(np.float64) if value.dtype.kind == "f" else value


def run(model, feeds, store=None):
    """Evaluates model (onnx.ModelProto) on feeds {name: array}; float64 math.

    store, if given, is applied to every tensor the evaluation keeps (inputs,
    initializers, each node's output): store=round_to_f16 emulates f16 storage
    with wide math, the error an fp16 engine must be expected to have."""
    store = store or (lambda value: value)
    env = {}
    for t in model.graph.initializer:
        env[t.name] = numpy_helper.to_array(t)
    for name, value in feeds.items():
        env[name] = np.asarray(value)
    env = {k: store(v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in env.items()}
    for node in model.graph.node:
        a = _attrs(node)
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op == "Relu":
            y = np.maximum(x[0], 0)
        elif op == "Clip":
            lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min", -np.inf)
            hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max", np.inf)
            y = np.clip(x[0], lo, hi)
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "Mul":
            y = x[0] * x[1]
        elif op == "MaxPool":
            y = pool(x[0], a, "max")
        elif op == "AveragePool":
            y = pool(x[0], a, "avg")
        elif op == "GlobalAveragePool":
            y = x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True)
        elif op == "Flatten":
            axis = a.get("axis", 1) % max(1, x[0].ndim)
            y = x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Concat":
            y = np.concatenate(x, axis=a["axis"])
        elif op == "Constant":
            y = numpy_helper.to_array(a["value"])
            if y.dtype.kind == "f":
                y = y.astype(np.float64)
        elif op == "Identity":
            y = x[0]
        elif op == "BatchNormalization":
            scale, bias, mean, var = (v.reshape(1, -1, *([1] * (x[0].ndim - 2))) for v in x[1:5])
            y = (x[0] - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale + bias
        elif op == "Softmax":
            axis = a.get("axis", -1)
            e = np.exp(x[0] - x[0].max(axis=axis, keepdims=True))
            y = e / e.sum(axis=axis, keepdims=True)
        elif op == "Reshape":
            shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(x[1])]
            y = x[0].reshape(shape)
        else:
            raise NotImplementedError("numpy_ref: no %s" % op)
        env[node.output[0]] = store(np.asarray(y))
    return [env[o.name] for o in model.graph.output]


def load_array(path):
    if path.endswith(".npy"):
        return np.load(path)
    return numpy_helper.to_array(onnx.load_tensor(path))


def errors(actual, expected):
    d = np.abs(np.asarray(actual, np.float64) - np.asarray(expected, np.float64))
    rel = d / np.maximum(np.abs(np.asarray(expected, np.float64)), np.finfo(np.float64).tiny)
    return float(d.max()), float(rel.max())


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    model = onnx.load(argv[0])
    feed = {model.graph.input[0].name: load_array(argv[1])}
    (y,) = run(model, feed)[:1]
    print("output %s %s: max|y|=%.4g" % (model.graph.output[0].name, y.shape, np.abs(y).max()))
    if len(argv) == 3:
        ref = load_array(argv[2])
        print("vs %s: max_abs_err=%.3g max_rel_err=%.3g" % ((argv[2],) + errors(ref, y)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
