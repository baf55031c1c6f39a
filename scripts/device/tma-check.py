#!/usr/bin/env python3
"""TMA-fed tc-sm90 convs and gemms in engines against float64 NumPy, on the GPU machine.

    python3 scripts/device/tma-check.py BIN_DIR WORK_DIR

For each conv below (1x1 stride-1 convs, whose A tiles are the input's
rows; windowed and strided ones, read by TMA's im2col mode; rows and
channels past the tiles, a bias, a residual Add and ReLU fused into the
epilogue): builds the ONNX model, compiles it with BIN_DIR/tessel-compile,
runs it with tessel-run --tier tc -v (the conv step must run on tc-sm90;
a windowed conv's engine must carry an im2col map, tessel-inspect) and
compares with the float64 reference at fp16 tolerances. Then gemms of
two graph inputs (an MN-major B without transB, an MN-major A with transA;
rows and K past the tiles): each must run on tc-sm90 with both operands by
tensor maps, and the wide ones on the warp-specialized 256 x 128 tiles (384
threads). Exit 1 if any fails.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

bin_dir, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)


def run_engine(graph, name, inputs, y):
    """Saves `graph` as WORK/name.onnx and its inputs (name: array) and
    float64 reference `y`, compiles it and runs it on tc against `y`:
    (tessel-run's exit code, its output, tessel-inspect's, the tc-sm90
    launch's grid and block, the tolerance)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    base = os.path.join(work, name)
    onnx.save(model, base + ".onnx")
    files = []
    for key, value in inputs.items():
        files.append(f"{base}.{key}.npy")
        np.save(files[-1], value)
    np.save(base + ".y.npy", y.astype(np.float32))
    subprocess.run([f"{bin_dir}/tessel-compile", base + ".onnx", "-o", base + ".tsl"], check=True,
                   stdout=subprocess.DEVNULL)
    # f16 operands and result, f32 sums over K: |error| <= 2^-11 of the
    # output's scale (its rounding) plus K's inputs rounded to f16 (each
    # 2^-11 relative, summed as a random walk: sqrt(K) x 2^-11 x |a||b|,
    # the operands scaled so that |y| is O(1)).
    atol = 4 * 2.0 ** -11 * (np.abs(y).max() + 3)
    run = subprocess.run([f"{bin_dir}/tessel-run", base + ".tsl", *files, "--tier", "tc", "-v",
                          "--compare", base + ".y.npy", "--rtol", "0", "--atol", str(atol)],
                         capture_output=True, text=True)
    inspect = subprocess.run([f"{bin_dir}/tessel-inspect", base + ".tsl"], capture_output=True,
                             text=True).stdout
    launch = next((line.split(": ", 1)[1].split(", ")[:2] for line in inspect.splitlines()
                   if "launch tc90_" in line), [])
    return run.returncode, run.stdout + run.stderr, inspect, launch, atol

# (name, N, C, H, W, K, residual[, window, stride, pad, dilation]): M =
# N*OH*OW rows, K = window^2 * C, N = filters.
cases = [("r50_l3_reduce", 32, 1024, 14, 14, 256, False),
         ("odd_rows", 27, 72, 29, 31, 200, False),
         ("expand_res", 16, 128, 28, 28, 512, True),
         ("short_k", 64, 64, 28, 28, 256, True),
         # The ping-pong kernel (no residual, 4 tiles of 128 x 128 an SM or
         # more): ResNet-50's l3.expand at batch 64; rows, N and K past the
         # tiles; the smallest, for compute-sanitizer.
         ("pingpong_l3_expand", 64, 256, 14, 14, 1024, False),
         ("pingpong_odd", 160, 136, 15, 17, 264, False),
         ("pingpong_sanitize", 88, 64, 28, 28, 128, False),
         # TMA's im2col mode: a 3x3 by the TMA loop, a strided 3x3 with a
         # residual (rows past the tiles, 200 filters), the 1x1 stride-2
         # downsample, a dilated 3x3, and the ping-pong kernel on a 3x3 of
         # 128 filters and (128 x 64 a side) of 64; the last, small, for
         # compute-sanitizer.
         ("im2col_3x3", 16, 64, 28, 28, 128, False, 3, 1, 1, 1),
         ("im2col_s2_res", 8, 128, 29, 29, 200, True, 3, 2, 1, 1),
         ("im2col_downsample", 16, 256, 28, 28, 512, False, 1, 2, 0, 1),
         ("im2col_dilated", 8, 64, 20, 20, 64, False, 3, 1, 2, 2),
         ("im2col_pingpong", 96, 128, 28, 28, 128, False, 3, 1, 1, 1),
         ("im2col_pingpong_narrow", 128, 64, 28, 28, 64, False, 3, 1, 1, 1),
         ("im2col_sanitize", 8, 128, 29, 29, 136, False, 3, 2, 1, 1)]
failed = 0
for name, n, c, h, w, k, residual, *window in cases:
    r, stride, pad, dil = window or (1, 1, 0, 1)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((k, c, r, r)) / np.sqrt(c * r * r)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(wt, "W"), numpy_helper.from_array(b, "B")]
    attrs = {"strides": [stride] * 2, "pads": [pad] * 4, "dilations": [dil] * 2} if window else {}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["conv"], name="pointwise", **attrs)]
    oh = (h + 2 * pad - dil * (r - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dil * (r - 1) - 1) // stride + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, k, oh, ow))
    for i in range(r):  # a tap at a time: window (i, j) of every output
        for j in range(r):
            tap = xp[:, :, i * dil:i * dil + stride * (oh - 1) + 1:stride,
                     j * dil:j * dil + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,kc->nkhw", tap, wt[:, :, i, j].astype(np.float64))
    y += b.astype(np.float64)[None, :, None, None]
    out = "conv"
    if residual:
        res = rng.standard_normal(y.shape).astype(np.float32)
        inits.append(numpy_helper.from_array(res, "R"))
        nodes += [helper.make_node("Add", ["conv", "R"], ["sum"], name="add"),
                  helper.make_node("Relu", ["sum"], ["y"], name="relu")]
        y = np.maximum(y + res.astype(np.float64), 0)
        out = "y"
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(y.shape))], inits)
    rc, text, inspect, launch, atol = run_engine(graph, name, {"x": x}, y)
    on_tma = "tc-sm90" in text
    im2col = "im2col corners" in inspect
    maps = inspect.count("tensor map of tensor")  # a third: the output's (TMA stores)
    ok = rc == 0 and on_tma and im2col == bool(window)
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: M={n * oh * ow} N={k} K={r * r * c} "
          f"residual={residual} tc-sm90={on_tma} im2col={im2col} maps={maps} {' '.join(launch)} "
          f"atol={atol:.3g} rc={rc}")
    if not ok:
        print(text[-2000:])

# (name, M, N, K, transA, transB, warp-specialized): B rows of 3000 columns
# (not whole 128-byte lines) and two waves of 256 x 128 tiles or more take
# the warp-specialized kernel; the last, small, for compute-sanitizer.
gemms = [("gemm_nn_ws", 4096, 3000, 256, 0, 0, True),
         ("gemm_tn_ws", 4096, 3000, 200, 1, 0, True),
         ("gemm_nt_ws", 4096, 2200, 264, 0, 1, True),
         ("gemm_nn_loop", 1000, 520, 264, 0, 0, False),
         ("gemm_tn_loop", 1024, 3000, 328, 1, 0, False),
         ("gemm_ws_sanitize", 4096, 2200, 64, 0, 0, True)]
for name, m, n, k, ta, tb, ws in gemms:
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    bm = (rng.standard_normal((n, k) if tb else (k, n)) / np.sqrt(k)).astype(np.float32)
    y = (a.T if ta else a).astype(np.float64) @ (bm.T if tb else bm).astype(np.float64)
    node = helper.make_node("Gemm", ["A", "B"], ["Y"], name="gemm", transA=ta, transB=tb)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(a.shape)),
                       helper.make_tensor_value_info("B", TensorProto.FLOAT, list(bm.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])])
    rc, text, inspect, launch, atol = run_engine(graph, name, {"a": a, "b": bm}, y)
    maps = inspect.count("tensor map of tensor")
    on_ws = "block 384x1x1" in launch
    ok = rc == 0 and "tc-sm90" in text and maps == 2 and on_ws == ws
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: M={m} N={n} K={k} transA={ta} transB={tb} "
          f"maps={maps} warp-specialized={on_ws} {' '.join(launch)} atol={atol:.3g} rc={rc}")
    if not ok:
        print(text[-2000:])
sys.exit(1 if failed else 0)
