#!/usr/bin/python3
"""A small float64 numpy evaluator for the ONNX ops the model tests and the
bundled example use (onnx 1.12 ships no reference evaluator): the CNNs' ops,
and the transformers' (LayerNormalization, Erf, Tanh, Softmax, Gather, Where,
Expand, Split, Slice, ReduceMean, shape arithmetic, ...), and the segmentation
models' Resize.

It is an independent check on the test data, not on Tessel: it confirms that
an exported .onnx file computes what PyTorch computed (so a model-test failure
is Tessel's, not the exporter's), and, being float64 throughout, it measures
how far PyTorch's own fp32 result is from the exact one, which is the scale any
other fp32 implementation's error must also have. check_numpy_ref.py checks it
against the ONNX node tests' expected outputs; an op or feature it lacks
raises NotImplementedError.

    /usr/bin/python3 numpy_ref.py MODEL.onnx INPUT.pb|.npy... [--expected EXPECTED.pb|.npy]
"""

import math
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
    if x.ndim != 4:
        raise NotImplementedError("numpy_ref: 2-D convolution only")
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
    if len(kernel) != 2:
        raise NotImplementedError("numpy_ref: 2-D pooling only")
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
    fill = np.nan
    if kind == "max":
        fill = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
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
    """A float tensor as f16 storage would hold it (round to nearest even;
    beyond f16's range, infinity, as a cast to f16 does)."""
    if value.dtype.kind != "f":
        return value
    with np.errstate(over="ignore"):
        return value.astype(np.float16).astype(np.float64)


def _as_float64(value):
    return value.astype(np.float64) if value.dtype.kind == "f" else value


def _tensor_attr(tensor):
    return _as_float64(numpy_helper.to_array(tensor))


def _int_list(value):
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _axes(node_attrs, inputs, index):
    """An op's axes: the input at `index` (newer opsets) or the attribute."""
    if len(inputs) > index and inputs[index] is not None:
        return _int_list(inputs[index])
    return list(node_attrs["axes"]) if "axes" in node_attrs else None


def _div(a, b):
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        # ONNX integer division truncates toward zero (numpy's floor divides).
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))
    return a / b


def _mod(a, b, attrs):
    if attrs.get("fmod", 0):
        return np.fmod(a, b)
    return np.mod(a, b)  # the sign of the divisor, as ONNX's fmod=0


# math.erf, element by element: exact in float64, no SciPy needed.
_erf = np.frompyfunc(math.erf, 1, 1)

UNARY = {
    "Relu": lambda x: np.maximum(x, 0),
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Tanh": np.tanh,
    "Erf": lambda x: _erf(x).astype(np.float64),
    "Neg": np.negative,
    "Not": np.logical_not,
    "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "Identity": lambda x: x,
}
BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _div,
    "Pow": lambda a, b: np.power(a, b.astype(a.dtype) if a.dtype.kind == "f" else b),
    "Equal": np.equal,
}


def layer_norm(x, scale, bias, attrs):
    """ONNX LayerNormalization: normalized over the axes from `axis` on;
    also returns the mean and 1/stddev (its optional outputs)."""
    axis = attrs.get("axis", -1) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) +
                            attrs.get("epsilon", 1e-5))
    y = (x - mean) * inv_std * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv_std


def pad(x, pads, value, attrs):
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "constant":
        raise NotImplementedError("numpy_ref: Pad mode %s" % mode)
    n = x.ndim
    begin, end = pads[:n], pads[n:]
    # Negative pads crop.
    x = x[tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in
                enumerate(zip(begin, end)))]
    return np.pad(x, [(max(0, b), max(0, e)) for b, e in zip(begin, end)],
                  constant_values=value)


def slice_(x, starts, ends, axes, steps):
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    # ONNX clamps starts and ends as Python's slices do (its semantics are
    # NumPy's), INT64 extremes included.
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[axis % x.ndim] = slice(start, end, step)
    return x[tuple(index)]


def split(x, sizes, attrs, outputs):
    axis = attrs.get("axis", 0) % x.ndim
    if sizes is None and "num_outputs" in attrs:
        # Split-18: ceil(n / parts) each, the last part smaller.
        chunk = -(-x.shape[axis] // outputs)
        sizes = [min(chunk, x.shape[axis] - i * chunk) for i in range(outputs)]
    if sizes is None:
        sizes = [x.shape[axis] // outputs] * outputs
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def scatter_nd(data, indices, updates):
    y = data.copy()
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth)
    rows = updates.reshape((flat.shape[0],) + data.shape[depth:])
    for index, row in zip(flat, rows):
        y[tuple(index)] = row
    return y


def _str_attr(attrs, name, default):
    value = attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else value


def _resize_weights(length, out_length, resized, scale, attrs, roi):
    """One axis of Resize (opsets 11-17): the (out_length, length) matrix of
    the weights each output element gives the input elements along the axis,
    and the output elements outside the input (tf_crop_and_resize's
    extrapolation), following the operator's definition: the output
    coordinate mapped to the input by coordinate_transformation_mode, then
    nearest, linear (2 taps) or cubic (4 taps, cubic_coeff_a) interpolation,
    the taps past an edge taking the edge's value (exclude_outside: weight 0,
    the others renormalized). `resized` is the resized length in the
    coordinate transformations: length * scale as given, unrounded (ONNX's
    reference: align_corners' ratio with downsample scales), or the size."""
    mode = _str_attr(attrs, "mode", "nearest")
    transform = _str_attr(attrs, "coordinate_transformation_mode", "half_pixel")
    x = np.arange(out_length, dtype=np.float64)
    if transform == "half_pixel":
        x_in = (x + 0.5) / scale - 0.5
    elif transform == "pytorch_half_pixel":
        x_in = (x + 0.5) / scale - 0.5 if resized > 1 else np.zeros_like(x)
    elif transform == "align_corners":
        x_in = x * (length - 1) / (resized - 1) if resized > 1 else np.zeros_like(x)
    elif transform == "asymmetric":
        x_in = x / scale
    elif transform == "tf_half_pixel_for_nearest":
        x_in = (x + 0.5) / scale
    elif transform == "tf_crop_and_resize":
        start, end = roi
        if resized > 1:
            x_in = start * (length - 1) + x * (end - start) * (length - 1) / (resized - 1)
        else:
            x_in = np.full_like(x, 0.5 * (start + end) * (length - 1))
    else:
        raise NotImplementedError("numpy_ref: Resize coordinate_transformation_mode %s"
                                  % transform)
    outside = (x_in < 0) | (x_in > length - 1) if transform == "tf_crop_and_resize" else \
        np.zeros(out_length, dtype=bool)
    weights = np.zeros((out_length, length))
    rows = np.arange(out_length)
    if mode == "nearest":
        nearest = _str_attr(attrs, "nearest_mode", "round_prefer_floor")
        index = {"round_prefer_floor": lambda v: np.ceil(v - 0.5),
                 "round_prefer_ceil": lambda v: np.floor(v + 0.5),
                 "floor": np.floor, "ceil": np.ceil}.get(nearest)
        if index is None:
            raise NotImplementedError("numpy_ref: Resize nearest_mode %s" % nearest)
        weights[rows, np.clip(index(x_in), 0, length - 1).astype(np.int64)] = 1.0
        return weights, outside
    base = np.floor(x_in)
    t = x_in - base
    if mode == "linear":
        taps, coeffs = [0, 1], [1.0 - t, t]
    elif mode == "cubic":
        a = attrs.get("cubic_coeff_a", -0.75)

        def cubic(d):  # Keys' kernel at distance d (0 <= d < 2)
            return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                            ((a * d - 5 * a) * d + 8 * a) * d - 4 * a)
        taps, coeffs = [-1, 0, 1, 2], [cubic(1 + t), cubic(t), cubic(1 - t), cubic(2 - t)]
    else:
        raise NotImplementedError("numpy_ref: Resize mode %s" % mode)
    exclude = bool(attrs.get("exclude_outside", 0))
    total = np.zeros(out_length)
    for tap, coeff in zip(taps, coeffs):
        index = base.astype(np.int64) + tap
        inside = (index >= 0) & (index <= length - 1)
        if exclude:
            coeff = np.where(inside, coeff, 0.0)
        np.add.at(weights, (rows, np.clip(index, 0, length - 1)), coeff)
        total += coeff
    if exclude:
        weights /= total[:, None]
    return weights, outside


def resize(x, roi, scales, sizes, attrs):
    """ONNX Resize, opsets 11-17 (X, roi, scales, sizes): separable, one axis
    at a time (_resize_weights); the output size floor(L * scale), or sizes
    (their ratio to the input's the scale)."""
    for name, default in (("antialias", 0), ("axes", None),
                          ("keep_aspect_ratio_policy", "stretch")):
        if _str_attr(attrs, name, default) != default:
            raise NotImplementedError("numpy_ref: Resize with %s" % name)
    if sizes is not None and sizes.size:
        out_shape = _int_list(sizes)
        scales = [o / float(n) for o, n in zip(out_shape, x.shape)]
        resized = [float(o) for o in out_shape]
    else:
        scales = [float(v) for v in np.asarray(scales).reshape(-1)]
        resized = [n * s for n, s in zip(x.shape, scales)]
        out_shape = [int(np.floor(r)) for r in resized]
    if len(out_shape) != x.ndim:
        raise NotImplementedError("numpy_ref: Resize of %d axes of a %d-D tensor"
                                  % (len(out_shape), x.ndim))
    roi = np.asarray(roi, np.float64).reshape(-1) if roi is not None and roi.size else \
        np.array([0.0] * x.ndim + [1.0] * x.ndim)
    y = x.astype(np.float64)
    outside = np.zeros(out_shape, dtype=bool)
    for axis, (length, out_length, scale) in enumerate(zip(x.shape, out_shape, scales)):
        if length == 0 or out_length == 0:
            raise NotImplementedError("numpy_ref: Resize of an empty axis")
        if length == out_length and scale == 1.0 and _str_attr(
                attrs, "coordinate_transformation_mode", "half_pixel") in (
                "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
            continue  # each element maps to itself: the identity in every mode
        weights, out_axis = _resize_weights(length, out_length, resized[axis], scale, attrs,
                                            (roi[axis], roi[axis + x.ndim]))
        y = np.moveaxis(np.tensordot(weights, y, axes=([1], [axis])), 0, axis)
        shape = [1] * x.ndim
        shape[axis] = out_length
        outside |= out_axis.reshape(shape)
    if outside.any():
        y = np.where(outside, float(attrs.get("extrapolation_value", 0.0)), y)
    return y.astype(x.dtype) if x.dtype.kind != "f" else y


def cast(x, to):
    if to in (onnx.TensorProto.BFLOAT16, onnx.TensorProto.STRING):
        raise NotImplementedError("numpy_ref: Cast to %s" % onnx.TensorProto.DataType.Name(to))
    # onnx >= 1.13 has the helper (1.23 dropped onnx.mapping); Debian's 1.12
    # has only the mapping.
    if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):
        dtype = onnx.helper.tensor_dtype_to_np_dtype(to)
    else:
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to]
    if np.dtype(dtype).kind == "f":
        # Evaluated in float64 whatever the target; a cast to f16 rounds.
        y = x.astype(dtype) if np.dtype(dtype).itemsize < 4 else x
        return y.astype(np.float64)
    return x.astype(dtype)


def non_max_suppression(boxes, scores, max_out, iou_threshold, score_threshold, center):
    """Greedy NonMaxSuppression as ONNX's reference describes it: per batch
    and class, the boxes scoring above the threshold (every box without one)
    in descending score order (a stable sort: equal scores by index), each
    kept unless its IoU with a box kept before it exceeds the threshold; at
    most max_out a class. Rows (batch, class, box), int64 [n, 3]."""
    def corners(b):
        if center:
            return (b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2, b[1] + b[3] / 2)
        return (min(b[1], b[3]), max(b[1], b[3]), min(b[0], b[2]), max(b[0], b[2]))

    def iou(a, b):
        ax0, ax1, ay0, ay1 = corners(a)
        bx0, bx1, by0, by1 = corners(b)
        w, h = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
        if w <= 0 or h <= 0:
            return 0
        inter = w * h
        union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
        return inter / union if union > 0 else 0

    rows = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            order = sorted((i for i in range(boxes.shape[1])
                            if score_threshold is None or scores[b, c, i] > score_threshold),
                           key=lambda i: -scores[b, c, i])
            kept = []
            for i in order:
                if len(kept) == max_out:
                    break
                if all(iou(boxes[b, k], boxes[b, i]) <= iou_threshold for k in kept):
                    kept.append(i)
            rows += [(b, c, i) for i in kept]
    return np.array(rows, np.int64).reshape(-1, 3)


def top_k(x, k, axis, largest):
    """ONNX TopK, sorted, equal values by index."""
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    index = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, index, axis=axis), index.astype(np.int64)


def evaluate(op, x, a, outputs):
    """One node: op type, input arrays (None where omitted), attributes and
    the number of outputs; returns an array or a tuple of arrays."""
    if op in UNARY:
        return UNARY[op](x[0])
    if op == "HardSigmoid":  # mobilenet_v3's SE gate and hard-swish (opset 13)
        return np.clip(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5), 0, 1)
    if op == "HardSwish":
        return x[0] * np.clip(x[0] / 6 + 0.5, 0, 1)
    if op in BINARY:
        return BINARY[op](x[0], x[1])
    if op == "Conv":
        return conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
    if op == "Clip":
        lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min", -np.inf)
        hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max", np.inf)
        return np.clip(x[0], lo, hi)
    if op == "Mod":
        return _mod(x[0], x[1], a)
    if op == "MaxPool":
        if outputs > 1:
            raise NotImplementedError("numpy_ref: MaxPool's indices")
        return pool(x[0], a, "max")
    if op == "AveragePool":
        return pool(x[0], a, "avg")
    if op == "GlobalAveragePool":
        return x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True)
    if op == "Flatten":
        axis = a.get("axis", 1) % max(1, x[0].ndim)
        return x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
    if op == "Gemm":
        A = x[0].T if a.get("transA", 0) else x[0]
        B = x[1].T if a.get("transB", 0) else x[1]
        y = a.get("alpha", 1.0) * (A @ B)
        if len(x) > 2 and x[2] is not None:
            y = y + a.get("beta", 1.0) * x[2]
        return y
    if op == "MatMul":
        return x[0] @ x[1]
    if op == "Concat":
        return np.concatenate(x, axis=a["axis"])
    if op == "Constant":
        if "value" in a:
            return _tensor_attr(a["value"])
        for name, dtype in (("value_float", np.float64), ("value_floats", np.float64),
                            ("value_int", np.int64), ("value_ints", np.int64)):
            if name in a:
                return np.array(a[name], dtype=dtype)
        raise NotImplementedError("numpy_ref: Constant of %s" % ", ".join(a))
    if op == "ConstantOfShape":
        value = _tensor_attr(a["value"]) if "value" in a else np.zeros(1)
        return np.full(_int_list(x[0]), value.reshape(-1)[0], dtype=value.dtype)
    if op == "BatchNormalization":
        if outputs > 1 or a.get("training_mode", 0):
            raise NotImplementedError("numpy_ref: BatchNormalization in training mode")
        scale, bias, mean, var = (v.reshape(1, -1, *([1] * (x[0].ndim - 2))) for v in x[1:5])
        return (x[0] - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale + bias
    if op == "LayerNormalization":
        y, mean, inv_std = layer_norm(x[0], x[1], x[2] if len(x) > 2 else None, a)
        return (y, mean, inv_std)[:outputs]
    if op == "Softmax":
        axis = a.get("axis", -1)
        e = np.exp(x[0] - x[0].max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    if op == "ReduceMean":
        axes = _axes(a, x, 1)
        return x[0].mean(axis=None if axes is None else tuple(axes),
                         keepdims=bool(a.get("keepdims", 1)))
    if op in ("ReduceMax", "ReduceMin"):
        axes = _axes(a, x, 1)
        reduce = np.max if op == "ReduceMax" else np.min
        return reduce(x[0], axis=None if axes is None else tuple(axes),
                      keepdims=bool(a.get("keepdims", 1)))
    if op in ("ArgMax", "ArgMin"):
        if a.get("select_last_index", 0):
            raise NotImplementedError("numpy_ref: select_last_index")
        arg = np.argmax if op == "ArgMax" else np.argmin
        y = arg(x[0], axis=a.get("axis", 0)).astype(np.int64)
        return np.expand_dims(y, a.get("axis", 0)) if a.get("keepdims", 1) else y
    if op == "TopK":
        return top_k(x[0], int(_int_list(x[1])[0]), a.get("axis", -1), a.get("largest", 1))
    if op == "NonMaxSuppression":
        def scalar(i, default):
            return x[i].reshape(-1)[0] if len(x) > i and x[i] is not None else default
        return non_max_suppression(x[0], x[1], int(scalar(2, 0)), scalar(3, 0.0),
                                   scalar(4, None), a.get("center_point_box", 0))
    if op == "Reshape":
        shape = _int_list(x[1])
        if not a.get("allowzero", 0):
            shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return x[0].reshape(shape)
    if op == "Transpose":
        return x[0].transpose(a.get("perm", None))
    if op == "Unsqueeze":
        y = x[0]
        axes = _axes(a, x, 1)
        for axis in sorted(v % (y.ndim + len(axes)) for v in axes):
            y = np.expand_dims(y, axis)
        return y
    if op == "Squeeze":
        axes = _axes(a, x, 1)
        return np.squeeze(x[0], axis=None if axes is None else tuple(axes))
    if op == "Shape":
        return np.array(x[0].shape[a.get("start", 0):a.get("end", None)], dtype=np.int64)
    if op == "Gather":
        return np.take(x[0], x[1], axis=a.get("axis", 0))
    if op == "Slice":
        return slice_(x[0], _int_list(x[1]), _int_list(x[2]),
                      _int_list(x[3]) if len(x) > 3 and x[3] is not None else None,
                      _int_list(x[4]) if len(x) > 4 and x[4] is not None else None)
    if op == "Split":
        sizes = _int_list(x[1]) if len(x) > 1 and x[1] is not None else a.get("split")
        return split(x[0], sizes, a, outputs)
    if op == "Where":
        return np.where(x[0], x[1], x[2])
    if op == "Expand":
        shape = np.broadcast_shapes(x[0].shape, tuple(_int_list(x[1])))
        return np.broadcast_to(x[0], shape).copy()
    if op == "Cast":
        return cast(x[0], a["to"])
    if op == "Range":
        return np.arange(x[0], x[1], x[2]).astype(x[0].dtype)
    if op == "Pad":
        value = x[2].reshape(-1)[0] if len(x) > 2 and x[2] is not None else 0
        return pad(x[0], _int_list(x[1]), value, a)
    if op == "ScatterND":
        if a.get("reduction", b"none") not in (b"none", "none"):
            raise NotImplementedError("numpy_ref: ScatterND with a reduction")
        return scatter_nd(x[0], x[1], x[2])
    if op == "Resize":
        if len(x) < 3:  # Resize-10 (X, scales), without the modes of 11
            raise NotImplementedError("numpy_ref: Resize-10")
        return resize(x[0], x[1], x[2], x[3] if len(x) > 3 else None, a)
    if op == "Dropout":
        # The identity, and a mask that keeps everything: in inference (no
        # training_mode, or a false one), or with ratio 0 (swin_t's attention
        # dropout exports so: F.dropout in training mode with p = 0).
        training = len(x) > 2 and x[2] is not None and bool(x[2])
        ratio = float(x[1]) if len(x) > 1 and x[1] is not None else 0.5
        if training and ratio != 0:
            raise NotImplementedError("numpy_ref: Dropout in training mode")
        return (x[0], np.ones(x[0].shape, dtype=bool))[:outputs]
    raise NotImplementedError("numpy_ref: no %s" % op)


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
    env = {k: store(_as_float64(v)) for k, v in env.items()}
    for node in model.graph.node:
        x = [env[i] if i else None for i in node.input]
        y = evaluate(node.op_type, x, _attrs(node), len(node.output))
        for name, value in zip(node.output, y if isinstance(y, tuple) else (y,)):
            if name:
                env[name] = store(np.asarray(value))
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
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("inputs", nargs="+", help="one per graph input, in order")
    ap.add_argument("--expected", help="compare the first output with this tensor")
    args = ap.parse_args(argv)
    model = onnx.load(args.model)
    feeds = {i.name: load_array(path) for i, path in zip(model.graph.input, args.inputs)}
    y = run(model, feeds)[0]
    print("output %s %s: max|y|=%.4g" % (model.graph.output[0].name, y.shape, np.abs(y).max()))
    if args.expected:
        ref = load_array(args.expected)
        print("vs %s: max_abs_err=%.3g max_rel_err=%.3g" % ((args.expected,) + errors(ref, y)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
