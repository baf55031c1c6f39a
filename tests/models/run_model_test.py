#!/usr/bin/python3
"""Model test: compile a torchvision model with tessel-compile, run it with
tessel-run on the fixed input and compare with PyTorch's output.

    /usr/bin/python3 run_model_test.py --compile TESSEL_COMPILE --run TESSEL_RUN \\
        --data DIR --work DIR NAME [--precision fp32] [--tier T] \\
        [--io-layout nhwc] [--io-dtype f16]

DIR holds NAME.onnx, NAME.input.pb (NAME.input_1.pb ... for further graph
inputs) and NAME.output.pb (export_models.py), or NAME.input.npy and
NAME.expected.npy (the bundled example, examples/).
Prints the compile and run times and tessel-run's per-output line
(max_abs_err, max_rel_err), then `PASS NAME` or `FAIL NAME: why`.
With --io-layout / --io-dtype the engine takes its inputs in that format
(tessel-compile's options of the same name): the input is handed over
transposed to NHWC and/or rounded to f16, and each output is compared by value
with the same f32 reference (transposed to NHWC where the engine gives 4-D
outputs in NHWC), under the same tolerances.
Exit 0 on pass, 1 on fail, 2 on a usage/setup error.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_ref  # noqa: E402

# Tolerances, as tessel-run applies them: |actual - expected| <= atol + rtol * |expected|.
#
# fp32 (CPU tier, f32 storage and math) against PyTorch fp32. The two differ
# only in the order of floating-point operations: the largest reductions are
# the K = Cin*kh*kw = 512*3*3 = 4608-term dot products of resnet18's last
# convolutions (mobilenet_v2's 1x1 convs: K <= 960; squeezenet1_1: K <= 512*1*1
# and 64*3*3; the classifier Gemms: K = 512/1280/1000). Summing K terms in f32,
# the rounding error is bounded by ~K*u*sum|terms| (u = 2^-24 = 6e-8; K*u = 2.7e-4
# in the worst case) and in practice grows like sqrt(K)*u (~4e-6); it compounds
# mildly across ~20-50 layers. Measured: PyTorch's fp32 logits differ from a
# float64 evaluation of the same .onnx by at most 1.7e-6 (resnet18), 2.2e-6
# (mobilenet_v2), 1.6e-7 (squeezenet1_1) absolute, on logits of magnitude
# ~0.5-1.5 (export_models.py prints these). A correct fp32 implementation is off
# from PyTorch by at most the sum of the two errors, ~5e-6. atol = 1e-4 leaves
# 20x headroom over that and is still ~1e-4 of the logits' scale, so an error in
# any layer (a wrong pad, stride, fold, bias or layout) fails by orders of
# magnitude; rtol = 1e-3 covers the large logits. The relative error alone is no
# criterion here: a logit near zero has a large relative error from pure
# reordering (PyTorch itself: 2.5e-3 on mobilenet_v2). Do not loosen these to
# make a failure go away: a failure is a bug to report.
#
# fp16 (--precision fp16: f16 storage of weights and activations, f32
# accumulation, sensitive ops in f32) against PyTorch fp32. Each f16 store
# rounds a value by up to u = 2^-11 = 4.9e-4 relative; the logits' error is the
# sum of every stored tensor's rounding, each amplified by the layers after
# it. That amplification is a property of the model, not of Tessel, and these
# random-weight networks have a lot of it: perturbing the input of the f32
# model by a relative 5.8e-4 (rms) moves its logits by 1.7x that (resnet18),
# 18x (mobilenet_v2), 33x (resnet50) and 0.1x (squeezenet1_1). So no single
# tolerance follows from u; the expected error is measured per model, by an
# evaluation independent of Tessel: numpy_ref's float64 evaluation of the same
# .onnx with every stored tensor rounded to f16 (input, weights, each node's
# output; numpy_ref.round_to_f16). Its max abs error E against the reference
# is the error f16 storage implies (it rounds a little more often than the
# engine does: BatchNorm and the activations are rounded separately from the
# conv, the softmax in f16). atol = 2E, rtol = 0 (the error is a sum of many
# small contributions, of the same size for every logit). Measured (CPU tier,
# BatchNorm folded and epilogues fused; E / engine's max abs error): tiny_cnn
# 2.2e-4 / 5.6e-5, squeezenet1_1 8.7e-4 / 8.5e-4, resnet18 3.2e-3 / 2.3e-3,
# mobilenet_v2 1.2e-2 / 7.5e-3, resnet50 6.2e-2 / 5.8e-2; PyTorch itself, with
# every module's output, the input and the weights rounded to f16, is off by
# 2.4e-3, 8.5e-3 and 5.1e-2 on the last three. The engine is within E
# everywhere, and an fp16 mistake (f16 accumulation, a sensitive op lowered, a
# lost cast) shows as a multiple of it. The degenerate-reference guard asks
# for max|y| >= 10 atol at fp16 (100 at fp32): at 2-3% of the logits' scale
# (resnet50, mobilenet_v2) 100x is not available, and 10x still fails any
# wrong layer, whose error is O(max|y|).
#
# The same tolerances hold the transformer-era models, by the same reasoning.
# fp32: their longest reductions are the MLPs' K = 4*width = 3072 (vit_b_16,
# convnext_tiny; 1024 in bert_tiny and gpt2_tiny), densenet121's K <= 1024
# and the 3x3 convs' 128*9; LayerNorm and softmax reduce over <= 768 terms
# in f32 in both implementations, in another order. PyTorch vs float64:
# 2.6e-6 (densenet121), 8.1e-6 (vit_b_16), 1.6e-6 (convnext_tiny), 1.7e-6
# (bert_tiny, both opsets), 1.2e-6 (gpt2_tiny), on outputs of max|y| 0.8-7.5,
# so atol = 1e-4 keeps >= 12x headroom. fp16: E follows each graph as
# exported, so it is larger where the graph has more stored steps than the
# engine: at opset 13 the LayerNorm decomposition (ReduceMean, Sub, Pow,
# ReduceMean, Add, Sqrt, Div, each rounded) that the engine fuses into one
# layer_norm with f32 statistics. The additive attention mask (-10000, exact
# in f16) and GPT-2's causal fill (f32's lowest, -inf in f16) give exp() = 0
# either way. Measured (E / engine's max abs
# error, CPU tier): densenet121 4.5e-3 / 3.2e-3, vit_b_16 5.4e-3 / 4.5e-3,
# convnext_tiny 1.6e-3 / 3.1e-3, bert_tiny 9.1e-3 / 9.8e-3, bert_tiny_opset13
# 2.2e-2 / 9.8e-3, gpt2_tiny 1.3e-3 / 1.0e-3. Two are above E, within 2E:
# convnext_tiny's max error sits on its largest logit (|y| = 3.87, where an
# f16 ulp is 2e-3; its rms error, 4.4e-4, is below the emulation's 5.2e-4),
# and bert_tiny's on an output of |y| = 5.2 (f16 ulp 3.9e-3; rms 5.9e-4
# against the emulation's 7.9e-4).
#
# The segmentation models' outputs are per-pixel logits (21 x 160 x 160, no
# pooling to average the errors out; fcn_resnet50 with small residual-branch
# gammas, see export_models.RESIDUAL_GAMMA). PyTorch fp32 vs float64: 3.5e-6
# (lraspp_mobilenet_v3_large), 6.9e-6 (fcn_resnet50), 7.1e-6
# (deeplabv3_mobilenet_v3_large) on max|y| 1.4-2.8. Measured (CPU tier): fp32
# max abs error 4.0e-6, 1.0e-5, 8.7e-6; fp16 E / engine's 1.5e-2 / 9.5e-3,
# 1.3e-2 / 8.9e-3, 2.5e-2 / 2.4e-2.
TOLERANCES = {
    "fp32": (1e-3, 1e-4),
    "fp16": (0.0, None),  # atol = 2 * fp16_storage_error(...)
}
GUARD = {"fp32": 100, "fp16": 10}


def report_torch_fp16(args, name, lines):
    """Beside an fp16 run, PyTorch's own fp16 error where export_models.py
    measured it (NAME.torch_fp16_error.txt, on a GPU machine) and Tessel's
    max abs error as a multiple of it (the transformer issue's bound: 2)."""
    path = os.path.join(args.data, name + ".torch_fp16_error.txt")
    errors = [float(m.group(1)) for m in map(ERRORS_RE.search, lines) if m]
    if args.precision != "fp16" or not errors or not os.path.isfile(path):
        return
    with open(path) as f:
        torch_error = float(f.read())
    ratio = max(errors) / torch_error if torch_error > 0 else float("inf")
    print("PyTorch's own fp16 error (CUDA, .half()): %.3g; Tessel's max_abs_err %.3g is %.2fx it"
          % (torch_error, max(errors), ratio))


def fp16_storage_error(model_path, input_paths, expected):
    """Max |f16-storage emulation - expected| (numpy_ref, see TOLERANCES)."""
    model = onnx.load(model_path)
    feeds = {i.name: load_array(path) for i, path in zip(model.graph.input, input_paths)}
    emulated = numpy_ref.run(model, feeds, store=numpy_ref.round_to_f16)[0]
    return float(np.abs(emulated - expected.astype(np.float64)).max())

# tessel-run prints, per output:
#   output 0 'y' f32[1,1000]: max_abs_err=1e-06 max_rel_err=2e-05 (rtol=0.001 atol=0.0001) PASS
#   ... FAIL (3 of 1000 elements outside tolerance)   or   ...: FAIL (expected shape f32[...])
OUTPUT_LINE_RE = re.compile(r"^output \d+ ")
ERRORS_RE = re.compile(r"max_abs_err=(\S+) max_rel_err=(\S+)")


def first_existing(directory, name, suffixes):
    for suffix in suffixes:
        path = os.path.join(directory, name + suffix)
        if os.path.isfile(path):
            return path
    return os.path.join(directory, name + suffixes[0])


def load_array(path):
    if path.endswith(".npy"):
        return np.load(path)
    return numpy_helper.to_array(onnx.load_tensor(path))


def in_engine_format(array, args, is_input):
    """`array` in the format an engine compiled with args.io_* takes or gives:
    4-D NHWC, and inputs f32 rounded to f16 (the engine's own first cast at
    --io-dtype model). References stay f32: tessel-run compares values."""
    if args.io_layout == "nhwc" and array.ndim == 4 and array.dtype == np.float32:
        array = array.transpose(0, 2, 3, 1)
    if is_input and args.io_dtype == "f16" and array.dtype == np.float32:
        array = array.astype(np.float16)
    return np.ascontiguousarray(array)


def input_files(directory, name):
    """NAME's input files in graph input order: NAME.input.pb (or .npy), then
    NAME.input_1.pb, NAME.input_2.pb ... while they exist."""
    paths = [first_existing(directory, name, (".input.pb", ".input.npy"))]
    while os.path.isfile(os.path.join(directory, "%s.input_%d.pb" % (name, len(paths)))):
        paths.append(os.path.join(directory, "%s.input_%d.pb" % (name, len(paths))))
    return paths


def io_files(inputs, exp, args, stem):
    """The inputs and the reference as .npy files in the engine's IO format."""
    paths = ["%s.input%s.npy" % (stem, "_%d" % i if i else "") for i in range(len(inputs))]
    for path, inp in zip(paths, inputs):
        np.save(path, in_engine_format(load_array(inp), args, True))
    np.save(stem + ".expected.npy", in_engine_format(load_array(exp), args, False))
    return paths, stem + ".expected.npy"


def summarize(line):
    """'max_abs_err=.. max_rel_err=..' plus, on a failure, what follows FAIL."""
    m = ERRORS_RE.search(line)
    text = "max_abs_err=%s max_rel_err=%s" % m.groups() if m else line.split(": ", 1)[-1]
    if m and " FAIL" in line:
        text += " FAIL" + line.rsplit(" FAIL", 1)[1]
    return text


def tail(text, lines=10):
    return "\n".join((text or "").strip().splitlines()[-lines:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="model name, e.g. resnet18")
    ap.add_argument("--compile", required=True, help="path to tessel-compile")
    ap.add_argument("--run", required=True, help="path to tessel-run")
    ap.add_argument("--data", required=True, help="directory written by export_models.py")
    ap.add_argument("--work", required=True, help="directory for the engine")
    ap.add_argument("--precision", choices=sorted(TOLERANCES), default="fp32")
    ap.add_argument("--tier", help="passed to tessel-run --tier")
    ap.add_argument("--io-layout", choices=("model", "nhwc"), default="model",
                    help="passed to tessel-compile; the input is transposed to match")
    ap.add_argument("--io-dtype", choices=("model", "f16"), default="model",
                    help="passed to tessel-compile; the input is rounded to match")
    ap.add_argument("--compile-timeout", type=float, default=600)
    ap.add_argument("--run-timeout", type=float, default=600)
    args = ap.parse_args(argv)

    name = args.name
    model = os.path.join(args.data, name + ".onnx")
    # export_models.py writes NAME.{input,output}.pb; the bundled example
    # (examples/make_example.py) has NAME.{input,expected}.npy.
    inputs = input_files(args.data, name)
    exp = first_existing(args.data, name, (".output.pb", ".expected.npy"))
    for p in [model, exp] + inputs:
        if not os.path.isfile(p):
            print("FAIL %s: missing %s (run export_models.py first)" % (name, p))
            return 2
    if args.io_dtype == "f16" and args.precision != "fp16":
        ap.error("--io-dtype f16 needs --precision fp16: only its tolerance covers an f16 input")
    rtol, atol = TOLERANCES[args.precision]
    ref = load_array(exp)
    if atol is None:
        error = fp16_storage_error(model, inputs, ref)
        atol = 2 * error
        print("f16 storage emulated (numpy_ref): max_abs_err=%.3g -> atol=%.3g" % (error, atol))

    # A reference whose values all sit inside atol would pass anything.
    scale = float(np.abs(ref).max())
    if not scale >= GUARD[args.precision] * atol:
        print("FAIL %s: degenerate reference output (max|y|=%.3g vs atol=%g)" % (name, scale, atol))
        return 1

    os.makedirs(args.work, exist_ok=True)
    io = (args.io_layout, args.io_dtype) != ("model", "model")
    variant = args.precision + (".io_%s_%s" % (args.io_layout, args.io_dtype) if io else "")
    engine = os.path.join(args.work, "%s.%s.tsl" % (name, variant))
    cmd = [args.compile, model, "-o", engine, "--precision", args.precision]
    if io:
        cmd += ["--io-layout", args.io_layout, "--io-dtype", args.io_dtype]
        inputs, exp = io_files(inputs, exp, args,
                               os.path.join(args.work, "%s.%s" % (name, variant)))
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace",
                              timeout=args.compile_timeout)
    except subprocess.TimeoutExpired:
        print("FAIL %s: tessel-compile timed out after %gs" % (name, args.compile_timeout))
        return 1
    t_compile = time.monotonic() - t0
    if proc.stdout.strip():
        print(tail(proc.stdout, 40))
    if proc.returncode != 0:
        print(tail(proc.stderr, 40))
        print("FAIL %s: tessel-compile exit %d after %.1fs" % (name, proc.returncode, t_compile))
        return 1
    print("compiled in %.2fs, engine %d bytes" % (t_compile, os.path.getsize(engine)))

    cmd = [args.run, engine] + inputs
    if args.tier:
        cmd += ["--tier", args.tier]
    cmd += ["--rtol", repr(rtol), "--atol", repr(atol), "--compare", exp]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace",
                              timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        print("FAIL %s: tessel-run timed out after %gs" % (name, args.run_timeout))
        return 1
    t_run = time.monotonic() - t0
    print(proc.stdout.strip())
    if proc.stderr.strip():
        print(tail(proc.stderr, 20))
    lines = [l.strip() for l in proc.stdout.splitlines() if OUTPUT_LINE_RE.match(l.strip())]
    summary = "; ".join(summarize(l) for l in lines)
    print("ran in %.2fs (process wall time, includes engine load)" % t_run)
    report_torch_fp16(args, name, lines)
    if proc.returncode == 0 and lines:
        print("PASS %s: %s (rtol=%g atol=%g, max|y|=%.3g)" % (name, summary, rtol, atol, scale))
        return 0
    if proc.returncode == 1 and lines:
        print("FAIL %s: mismatch: %s (rtol=%g atol=%g, max|y|=%.3g)" % (
            name, summary, rtol, atol, scale))
    else:
        print("FAIL %s: tessel-run exit %d: %s" % (
            name, proc.returncode, tail(proc.stderr, 3) or "no comparison line"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
