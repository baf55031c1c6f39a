#!/usr/bin/env python3
"""GatedMix alone (scripts/device/custom-op.sh): Tessel's tc and simt
variants against float64 numpy on the same inputs, and the op timed beside
the same computation in PyTorch, eager and torch.compile + CUDA graph, in one
run on one GPU.

    custom_op_torch.py BIN_DIR DIR OUT_DIR
"""
import os
import re
import subprocess
import sys

import numpy as np
import torch

bin_dir, d, out = sys.argv[1:4]
w = np.load(os.path.join(d, "gated_mix_op.w.npy"))
batch, channels, size, beta = 32, w.shape[0], 32, 1.5
rng = np.random.default_rng(2)
a = rng.standard_normal((batch, size, size, channels)).astype(np.float16)  # NHWC, the engine's IO
b = rng.standard_normal((batch, size, size, channels)).astype(np.float16)
np.save(os.path.join(out, "a.npy"), a)
np.save(os.path.join(out, "b.npy"), b)

# float64 reference on the f16 inputs (w as the engine stores it: f16).
w16 = w.astype(np.float16).astype(np.float64)
s = a.astype(np.float64).reshape(-1, channels) @ w16
ref = (s / (1.0 + np.exp(-beta * s)) * b.astype(np.float64).reshape(-1, channels)).reshape(a.shape)

status = 0
engine = os.path.join(d, "gated_mix_op.tsl")
for tier in ("tc", "simt"):
    os.makedirs(os.path.join(out, tier), exist_ok=True)
    run = subprocess.run([os.path.join(bin_dir, "tessel-run"), engine, os.path.join(out, "a.npy"),
                          os.path.join(out, "b.npy"), "--tier", tier, "-v", "--output-format", "npy",
                          "--output-dir", os.path.join(out, tier)], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"op {tier}: tessel-run failed: {run.stderr.strip()}")
        status = 1
        continue
    step = [l.strip() for l in run.stdout.splitlines() if "mix(GatedMix)" in l]
    y = np.load(os.path.join(out, tier, "output_0.npy")).astype(np.float64)
    err = np.abs(y - ref)
    # f16 output (rounding 2^-11 relative) after f32 sums of 64 f16 products:
    # within 2^-10 |ref| + 1e-3 (the sums' f32 error is far below it).
    bound = 2.0 ** -10 * np.abs(ref) + 1e-3
    ok = bool((err <= bound).all())
    status |= 0 if ok else 1
    print(f"op {tier}: {step[0] if step else '?'} | max abs err {err.max():.3g}, "
          f"max err/bound {(err / bound).max():.3f}: {'PASS' if ok else 'FAIL'}")


def bench(fn, iterations=200, reps=15):
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        start.record()
        for _ in range(iterations):
            fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / iterations)
    return float(np.median(times))


ta = torch.from_numpy(a).cuda()
tb = torch.from_numpy(b).cuda()
tw = torch.from_numpy(w.astype(np.float16)).cuda()


def gated_mix(a, b, w):
    s = a @ w
    return s * torch.sigmoid(beta * s) * b


with torch.no_grad():
    eager_ms = bench(lambda: gated_mix(ta, tb, tw))
    compiled = torch.compile(gated_mix)
    for _ in range(3):
        compiled(ta, tb, tw)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            compiled(ta, tb, tw)
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(graph):
        ty = compiled(ta, tb, tw)
    graph_ms = bench(graph.replay)
    torch_err = (ty.double().cpu().numpy() - ref)
print(f"torch max abs err (compiled) {np.abs(torch_err).max():.3g}")

times = {}
for tier in ("tc", "simt"):
    run = subprocess.run([os.path.join(bin_dir, "tessel-bench"), engine, "--tier", tier,
                          "--iterations", "2000"], capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", run.stdout)
    times[tier] = float(m.group(1)) if m else float("nan")
    print(f"tessel-bench {tier}: {run.stdout.strip().splitlines()[0] if run.stdout else run.stderr}")
print(f"GatedMix [{batch},{size},{size},{channels}] f16, median ms: tessel tc {times['tc']:.4f}, "
      f"tessel simt {times['simt']:.4f}, torch eager {eager_ms:.4f}, "
      f"torch.compile + CUDA graph {graph_ms:.4f}; tc vs compile+graph "
      f"{graph_ms / times['tc']:.2f}x")
sys.exit(status)
