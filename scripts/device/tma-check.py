#!/usr/bin/env python3
"""TMA-fed tc-sm90 convs in engines against float64 NumPy, on the GPU machine.

    python3 scripts/device/tma-check.py BIN_DIR WORK_DIR

For each 1x1 stride-1 conv below (rows and channels past the tiles, a bias,
a residual Add and ReLU fused into the epilogue): builds the ONNX model,
compiles it with BIN_DIR/tessel-compile, runs it with tessel-run --tier tc
-v (the conv step must run on tc-sm90) and compares with the float64
reference at fp16 tolerances. Exit 1 on the first failure.
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
# (name, N, C, H, W, K, residual): M = N*H*W rows, K = C, N = filters.
cases = [("r50_l3_reduce", 32, 1024, 14, 14, 256, False),
         ("odd_rows", 27, 72, 29, 31, 200, False),
         ("expand_res", 16, 128, 28, 28, 512, True),
         ("short_k", 64, 64, 28, 28, 256, True),
         # The ping-pong kernel (no residual, 4 tiles of 128 x 128 an SM or
         # more): ResNet-50's l3.expand at batch 64; rows, N and K past the
         # tiles; the smallest, for compute-sanitizer.
         ("pingpong_l3_expand", 64, 256, 14, 14, 1024, False),
         ("pingpong_odd", 160, 136, 15, 17, 264, False),
         ("pingpong_sanitize", 88, 64, 28, 28, 128, False)]
failed = 0
for name, n, c, h, w, k, residual in cases:
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((k, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(wt, "W"), numpy_helper.from_array(b, "B")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["conv"], name="pointwise")]
    y = np.einsum("nchw,kc->nkhw", x.astype(np.float64), wt[:, :, 0, 0].astype(np.float64))
    y += b.astype(np.float64)[None, :, None, None]
    out = "conv"
    if residual:
        r = rng.standard_normal((n, k, h, w)).astype(np.float32)
        inits.append(numpy_helper.from_array(r, "R"))
        nodes += [helper.make_node("Add", ["conv", "R"], ["sum"], name="add"),
                  helper.make_node("Relu", ["sum"], ["y"], name="relu")]
        y = np.maximum(y + r.astype(np.float64), 0)
        out = "y"
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(y.shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    base = os.path.join(work, name)
    onnx.save(model, base + ".onnx")
    np.save(base + ".x.npy", x)
    np.save(base + ".y.npy", y.astype(np.float32))
    subprocess.run([f"{bin_dir}/tessel-compile", base + ".onnx", "-o", base + ".tsl"], check=True,
                   stdout=subprocess.DEVNULL)
    # f16 operands and result, f32 sums over C: |error| <= 2^-11 of the
    # output's scale (its rounding) plus C's inputs rounded to f16 (each
    # 2^-11 relative, summed as a random walk: sqrt(C) x 2^-11 x |x||w|).
    atol = 4 * 2.0 ** -11 * (np.abs(y).max() + 3)
    run = subprocess.run([f"{bin_dir}/tessel-run", base + ".tsl", base + ".x.npy", "--tier", "tc",
                          "-v", "--compare", base + ".y.npy", "--rtol", "0", "--atol", str(atol)],
                         capture_output=True, text=True)
    text = run.stdout + run.stderr
    on_tma = "tc-sm90" in text
    ok = run.returncode == 0 and on_tma
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: M={n * h * w} N={k} K={c} residual={residual} "
          f"tc-sm90={on_tma} atol={atol:.3g} rc={run.returncode}")
    if not ok:
        print(text[-2000:])
sys.exit(1 if failed else 0)
