#!/usr/bin/python3
"""Checks bench/suites.py's one-op models against numpy: small GEMM rows in
all four transpose combinations and conv rows with stride, padding, a
rectangular filter and C = 1 and 3 (channel padding) are written by
suites.write_model, compiled with the suite's own IO flags (f16 IO, NHWC for
convs) for the CPU tier, run by tessel-run on f16 inputs and compared with a
float64 evaluation of the intended problem (not of the ONNX file), so that a
wrong transpose, pad or stride in the generator fails. The models suite's
encoder export (tests/models/transformer_models.py's explicit_encoder, at a
small size) is compiled at fp32 and compared with torch.nn.TransformerEncoder's
own output. ctest runs it.

    /usr/bin/python3 bench/check_suites.py --compile tessel-compile --run tessel-run --work DIR
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suites  # noqa: E402

sys.path.insert(0, suites.MODEL_TESTS)

GEMMS = [(24, 16, 40, a_t, b_t) for a_t in (False, True) for b_t in (False, True)]
# n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w
CONVS = [(2, 3, 9, 11, 16, 3, 3, 1, 1, 2, 2), (1, 1, 12, 20, 8, 5, 7, 0, 2, 1, 2),
         (2, 16, 7, 7, 24, 1, 1, 0, 0, 1, 1)]


def gemm_row(m, n, k, a_t, b_t):
    return {"name": "g_%dx%dx%d_%d%d" % (m, n, k, a_t, b_t), "suite": "gemm", "m": m, "n": n,
            "k": k, "a_t": a_t, "b_t": b_t, "flops": 2.0 * m * n * k,
            "compile_flags": suites.IO_FLAGS["gemm"]}


def conv_row(n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w):
    return suites._conv_row("c_%d_%d_%d_%d_%d_%d_%d_%d_%d_%d_%d" % (
        n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w), "check", n, c, h, w, k, r, s,
        pad_h, pad_w, stride_h, stride_w)


def conv_reference(row, x, weight):
    """float64 NCHW conv, written from the row's fields."""
    xp = np.pad(x, ((0, 0), (0, 0), (row["pad_h"],) * 2, (row["pad_w"],) * 2))
    y = np.zeros((row["n"], row["k"], row["oh"], row["ow"]))
    for i in range(row["r"]):
        for j in range(row["s"]):
            patch = xp[:, :, i:i + row["stride_h"] * row["oh"]:row["stride_h"],
                       j:j + row["stride_w"] * row["ow"]:row["stride_w"]]
            y += np.einsum("nchw,kc->nkhw", patch, weight[:, :, i, j])
    return y


def run(row, args, rng):
    """Returns the max error relative to max|reference|."""
    stem = os.path.join(args.work, row["name"])
    suites.write_model(row, stem + ".onnx")
    subprocess.run([args.compile, stem + ".onnx", "-o", stem + ".tsl", "--precision", "fp16",
                    "--target", "none"] + row["compile_flags"], check=True,
                   stdout=subprocess.DEVNULL)
    if row["suite"] == "gemm":
        a_shape, b_shape = suites.gemm_shapes(row)
        inputs = [rng.standard_normal(a_shape).astype(np.float16),
                  rng.standard_normal(b_shape).astype(np.float16)]
        a = inputs[0].astype(np.float64)
        b = inputs[1].astype(np.float64)
        expected = (a.T if row["a_t"] else a) @ (b.T if row["b_t"] else b)
    else:
        x = rng.standard_normal((row["n"], row["c"], row["h"], row["w"])).astype(np.float16)
        inputs = [np.ascontiguousarray(x.transpose(0, 2, 3, 1))]  # the engine takes NHWC
        expected = conv_reference(row, x.astype(np.float64),
                                  suites.conv_weight(row).astype(np.float64)).transpose(0, 2, 3, 1)
    paths = []
    for i, array in enumerate(inputs):
        paths.append("%s.in%d.npy" % (stem, i))
        np.save(paths[-1], array)
    subprocess.run([args.run, stem + ".tsl"] + paths + ["--tier", "cpu", "--output-dir",
                                                        args.work, "--output-format", "npy"],
                   check=True, stdout=subprocess.DEVNULL)
    got = np.load(os.path.join(args.work, "output_0.npy")).astype(np.float64)
    if got.shape != expected.shape:
        raise SystemExit("%s: output shape %s, expected %s" % (row["name"], got.shape,
                                                               expected.shape))
    return float(np.abs(got - expected).max() / np.abs(expected).max())


# A small encoder of the BERT kind: every op of the real one, seconds to run.
SMALL_ENCODER = {"layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "seq": 16}


def run_encoder(args, batch=2):
    """The exported explicit encoder through Tessel (fp32, CPU tier) against
    nn.TransformerEncoder in PyTorch; returns the max error relative to
    max|reference|."""
    import torch
    import transformer_models
    torch.manual_seed(0)
    encoder = transformer_models.transformer_encoder(SMALL_ENCODER)
    shape = (batch, SMALL_ENCODER["seq"], SMALL_ENCODER["hidden"])
    stem = os.path.join(args.work, "encoder")
    module = transformer_models.explicit_encoder(encoder, batch, SMALL_ENCODER)
    suites.export_module(module, shape, stem + ".onnx")
    subprocess.run([args.compile, stem + ".onnx", "-o", stem + ".tsl", "--precision", "fp32",
                    "--target", "none"], check=True, stdout=subprocess.DEVNULL)
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = encoder(x).double().numpy()
    np.save(stem + ".in0.npy", x.numpy())
    subprocess.run([args.run, stem + ".tsl", stem + ".in0.npy", "--tier", "cpu", "--output-dir",
                    args.work, "--output-format", "npy"], check=True, stdout=subprocess.DEVNULL)
    got = np.load(os.path.join(args.work, "output_0.npy")).astype(np.float64)
    if got.shape != expected.shape:
        raise SystemExit("encoder: output shape %s, expected %s" % (got.shape, expected.shape))
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compile", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(0)
    failed = 0
    for row in [gemm_row(*g) for g in GEMMS] + [conv_row(*c) for c in CONVS]:
        err = run(row, args, rng)
        ok = err < 2e-3  # f16 output rounding (2^-11) plus f32 accumulation
        failed += not ok
        print("%s %s: max error %.2e of max|y|" % ("PASS" if ok else "FAIL", row["name"], err))
    err = run_encoder(args)
    # f32 throughout; LayerNorm, softmax and GELU in a different order of
    # operations than PyTorch's kernels: a few f32 ulps per op, 24 ops deep.
    ok = err < 1e-4
    failed += not ok
    print("%s encoder (2 layers, hidden 64): max error %.2e of max|y|" % (
        "PASS" if ok else "FAIL", err))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
