#!/usr/bin/python3
"""ONNX node conformance runner for Tessel.

Drives the two command-line tools over the ONNX 1.12 backend node tests
(../shared/conformance/onnx-node, one directory per test holding model.onnx and
test_data_set_*/{input,output}_K.pb):

    tessel-compile model.onnx -o engine.tsl [--precision P] [--freeze NAME=FILE.pb]...
    tessel-run engine.tsl INPUT... [--tier T] --rtol R --atol A --compare EXPECTED...

Per test it prints `PASS test_x`, `FAIL test_x: <why>` or `SKIP test_x: <reason>`,
then the skip reasons grouped, then exactly `N passed, N failed, N skipped`.
Exit status: 1 if any test failed, 0 otherwise (2 on a usage/setup error).

SKIP means: an op outside `tessel-compile --list-ops`, a subgraph (If/Loop/Scan),
a sequence/optional input or output, tessel-compile exit 3 (`unsupported: ...`),
test data that contradicts the model's declared types (see checked_data_file),
or, with --precision fp16, data that f16 storage cannot hold (FP16_UNREPRESENTABLE).
FAIL means: any other compile error, a crash, a mismatch, or the per-test timeout.

Needs Debian's python3-onnx (run it with /usr/bin/python3).
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
from onnx import numpy_helper

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_SUITE = os.path.join(REPO_ROOT, "..", "shared", "conformance", "onnx-node")

# Tolerances, applied by tessel-run as |actual - expected| <= atol + rtol * |expected|.
#
# fp32: exactly what ONNX's own backend test runner uses for these node tests.
# onnx/backend/test/runner/__init__.py (onnx 1.12, Runner._add_model_test.run)
# calls assert_similar_outputs(ref_outputs, outputs, rtol=model_test.rtol,
# atol=model_test.atol), i.e. numpy.testing.assert_allclose; and every node
# TestCase is built with rtol=1e-3, atol=1e-7 (onnx/backend/test/case/node/__init__.py,
# expect(); the same defaults in onnx/backend/test/loader/__init__.py,
# load_model_tests: `rtol = 1e-3`, `atol = 1e-7`).
#
# fp16 (--tessel-lower-precision): f16 storage (binary16, 11-bit significand,
# unit roundoff u = 2^-11 = 4.9e-4) with f32 math and accumulation inside every
# kernel; softmax, norms, sums, exp, log, pow... computed and stored in f32
# (docs/architecture.md, "Precision policy"). Each f16 store of a value v errs
# by at most u*|v| (at most 2^-25 absolutely below 2^-14, f16's subnormals).
# - rtol = 1e-2 (~20u): an output whose terms do not cancel carries a few
#   roundings of values of its own size (the operands' stores, the result's),
#   times a condition number <= ~2 for the ops run in f16; an f32 accumulation
#   adds ~K * 2^-24, negligible here.
# - atol scales with the data: an output that is small because its terms
#   cancel (x - mean, a dot product of mixed signs, a - b) carries the rounding
#   of the terms, u times THEIR magnitude, not u times the result's. The terms
#   live at the scale of the test's outputs: M = max |expected| of the data set
#   (for these tests' standard-normal data and products of it, M is 0.5-8).
#   atol = 4 u M counts the two operand stores, the result's store and one
#   intermediate store at that scale (expanded functions: x - mean(x) ->
#   * 1/std), floored at 2^-24 (one f16 subnormal step). A fixed atol cannot
#   follow from f16 storage: 1e-3 (the earlier placeholder) is 2u, below the
#   rounding of two operands of magnitude 2.5 (test_add, test_sub: u(|a| + |b|)
#   reaches 2.5e-3 where a ~ -b; they passed by luck of the draw), and it is
#   hundreds of times too loose for outputs of scale 1e-3. Measured (CPU tier):
#   every passing test uses at most 22% of this tolerance (layer_norm_*_expanded,
#   whose x - mean is then scaled by gamma / std).
# Tests whose data f16 cannot hold are SKIPs at fp16, listed in
# FP16_UNREPRESENTABLE with the arithmetic; a test's own f16 tensors are the
# model's and not lowered.
F16_UNIT_ROUNDOFF = 2.0 ** -11
TOLERANCES = {
    "fp32": (1e-3, 1e-7),
    "fp16": (1e-2, None),  # atol = fp16_atol(expected outputs)
}

FP16_UNREPRESENTABLE = {
    # x = [[0, 1, 2, 3], [10000, 10001, 10002, 10003]]: the expanded graph
    # subtracts reduce_max(x) in an f16 op (sub), and f16's spacing at 1e4 is
    # 8, so the second row is stored as [10000, 10000, 10000, 10000] before the
    # subtraction: the differences that decide the result are lost in the
    # input's own storage, and any f16 implementation answers [.25, .25, .25,
    # .25] for [.032, .087, .237, .644]. The non-expanded tests (softmax in
    # f32, fed by the f32 graph input) pass. The ONNX 1.22 suite has the same
    # data in the opset-18 expansions (_ver18).
    **{name: "inputs up to 10003, whose f16 spacing (8) exceeds the differences that "
             "decide the result"
       for name in ("test_softmax_large_number_expanded", "test_logsoftmax_large_number_expanded",
                    "test_softmax_large_number_expanded_ver18",
                    "test_logsoftmax_large_number_expanded_ver18")},
    # The expanded graph computes y_scale = (2 - (-3)) / 255 in float ops
    # (an f16 div at fp16) and quantizes x = -2.5 by it: in f32 the quotient
    # is -127.49999 (the f32 scale is 0.019607844), which rounds to -127; the
    # f16 scale (0.01961, relative error 2^-12) gives -127.502, which rounds
    # to -128. The expected value sits 1e-5 from a rounding tie, so any
    # rounding of the scale coarser than f32's moves it by one. (Quantize's own
    # arithmetic is pinned to f32 and passes the non-expanded tests.)
    "test_dynamicquantizelinear_expanded":
        "x / y_scale = -127.49999 in f32, 1e-5 from a rounding tie that the f16 "
        "storage of the graph-computed scale crosses",
}


def fp16_atol(expected_paths):
    """4 u M with M = max |expected| over the float outputs (see TOLERANCES)."""
    scale = 0.0
    for path in expected_paths:
        values = numpy_helper.to_array(onnx.load_tensor(path))
        if values.dtype.kind == "f" and values.size:
            finite = np.abs(values[np.isfinite(values)].astype(np.float64))
            if finite.size:
                scale = max(scale, float(finite.max()))
    return max(4 * F16_UNIT_ROUNDOFF * scale, 2.0 ** -24)


# Operand positions that a static-shape compiler needs as compile-time constants
# (shapes, axes, sizes, counts, pads, scalar bounds). When the test feeds such an
# operand from a graph input, the runner freezes that input
# (--freeze NAME=test_data_set_0/input_K.pb) and drops it from the inputs given
# to tessel-run. Data operands (Gather indices, Where conditions, ...) are never
# frozen.
CONST_OPERANDS = {
    "Reshape": {1},             # shape
    "Expand": {1},              # shape
    "Tile": {1},                # repeats
    "Slice": {1, 2, 3, 4},      # starts, ends, axes, steps
    "Pad": {1, 2, 3},           # pads, constant_value, axes (opset 18)
    "Unsqueeze": {1},           # axes (opset 13)
    "Squeeze": {1},             # axes (opset 13)
    "ReduceSum": {1},           # axes (opset 13)
    # The other reductions' axes, an input from opset 18 as ReduceSum's at 13.
    **{op: {1} for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                          "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
                          "ReduceSumSquare")},
    "Split": {1},               # split sizes (opset 13)
    "ConstantOfShape": {0},     # shape
    "Clip": {1, 2},             # min, max (opset 11+)
    "Resize": {1, 2, 3},        # roi, scales, sizes
    "TopK": {1},                # K
    "OneHot": {1},              # depth
    "Range": {0, 1, 2},         # start, limit, delta (output length)
    # Beyond the agreed table, operands of the same kind (they fix an output
    # shape or which computation runs):
    "Upsample": {1},            # scales (opset 9)
    "MaxUnpool": {2},           # output_shape
    "CumSum": {1},              # axis
    "CumProd": {1},             # axis
    "TopK": {1},                # K
    "Trilu": {1},               # k
    "Compress": {1},            # condition: output length
    "Dropout": {1, 2},          # ratio, training_mode (opset 12+)
    # max_output_boxes_per_class (the result's row bound), iou_threshold,
    # score_threshold.
    "NonMaxSuppression": {2, 3, 4},
}

# Attributes that carry subgraphs make a node unsupported outright.
SUBGRAPH_ATTR_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)

UNSUPPORTED_RE = re.compile(r"unsupported:\s*(.*)")
NODE_NAME_RE = re.compile(r" node '[^']*'")
PAREN_TAIL_RE = re.compile(r" \((?:input|output) '[^']*'\)$")


class Result:
    def __init__(self, name, status, reason="", details=None, seconds=0.0):
        self.name = name
        self.status = status  # PASS / FAIL / SKIP
        self.reason = reason
        self.details = details or {}
        self.seconds = seconds

    def line(self):
        if self.status == "PASS":
            return "PASS %s" % self.name
        return "%s %s: %s" % (self.status, self.name, self.reason)

    def group_key(self):
        # Group on the kind of reason: node names and value names differ
        # between tests, the unsupported feature does not.
        return PAREN_TAIL_RE.sub("", NODE_NAME_RE.sub("", self.reason))


def tail(text, lines=6, chars=1000):
    """The last lines of a tool's output, on one line (one log line per test)."""
    kept = [l.strip() for l in (text or "").strip().splitlines() if l.strip()][-lines:]
    return " | ".join(kept)[-chars:]


def describe_exit(rc):
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


class Deadline:
    """One time budget shared by every subprocess of a test."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self):
        return self.end - time.monotonic()


class TestTimeout(Exception):
    pass


def run_tool(cmd, deadline):
    left = deadline.left()
    if left <= 0:
        raise TestTimeout()
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace", timeout=left)
    except subprocess.TimeoutExpired:
        raise TestTimeout()


def io_kind(value_info):
    return value_info.type.WhichOneof("value")


def plan_test(test_dir, supported_ops):
    """Returns (skip_reason or None, model, freeze {input_index: name})."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    graph = model.graph

    missing = set()
    for node in graph.node:
        if node.op_type not in supported_ops:
            missing.add(node.op_type)
    if missing:
        return "unsupported op: " + ", ".join(sorted(missing)), model, {}
    for node in graph.node:
        for attr in node.attribute:
            if attr.type in SUBGRAPH_ATTR_TYPES:
                return "unsupported op: %s (subgraph attribute '%s')" % (
                    node.op_type, attr.name), model, {}

    for role, values in (("input", graph.input), ("output", graph.output)):
        for vi in values:
            kind = io_kind(vi)
            if kind != "tensor_type":
                return "unsupported input type: %s (%s '%s')" % (
                    kind or "untyped", role, vi.name), model, {}

    initializers = {t.name for t in graph.initializer}
    input_index = {vi.name: k for k, vi in enumerate(graph.input)
                   if vi.name not in initializers}
    freeze = {}
    for node in graph.node:
        positions = CONST_OPERANDS.get(node.op_type, ())
        for pos, name in enumerate(node.input):
            if pos in positions and name in input_index:
                freeze[input_index[name]] = name
    return None, model, freeze


class InvalidTestData(Exception):
    pass


def declared_dims(value_info):
    tt = value_info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]


def checked_data_file(path, value_info, role, fix_dir):
    """Checks a test-data tensor against the model's declared type; returns the
    path to give the tools (a corrected copy under fix_dir where needed).

    One quirk of the ONNX 1.12 suite is corrected: bfloat16 data is stored as
    UINT16 tensors holding the bf16 bit patterns (numpy has no bfloat16; see
    onnx/backend/test/case/node/cast.py), for test_cast*_BFLOAT16*. The copy is
    the same bits tagged BFLOAT16, which is what the test means. Any other
    disagreement with the model's declared dtype or static shape makes the test
    invalid (raises InvalidTestData): a static-shape engine is right to refuse it.
    """
    tensor = onnx.load_tensor(path)
    tt = value_info.type.tensor_type
    if tensor.data_type != tt.elem_type:
        if tt.elem_type == onnx.TensorProto.BFLOAT16 and tensor.data_type == onnx.TensorProto.UINT16:
            bits = numpy_helper.to_array(tensor)
            fixed = onnx.TensorProto()
            fixed.CopyFrom(tensor)
            fixed.data_type = onnx.TensorProto.BFLOAT16
            fixed.ClearField("int32_data")
            fixed.raw_data = bits.astype("<u2").tobytes()
            tensor = fixed
            os.makedirs(fix_dir, exist_ok=True)
            path = os.path.join(fix_dir, os.path.basename(path))
            with open(path, "wb") as f:
                f.write(fixed.SerializeToString())
        else:
            raise InvalidTestData("%s '%s' holds %s, the model declares %s" % (
                role, value_info.name, onnx.TensorProto.DataType.Name(tensor.data_type),
                onnx.TensorProto.DataType.Name(tt.elem_type)))
    dims = declared_dims(value_info)
    if dims is not None and (len(dims) != len(tensor.dims) or
                             any(d is not None and d != t for d, t in zip(dims, tensor.dims))):
        raise InvalidTestData("%s '%s' holds shape %s, the model declares %s" % (
            role, value_info.name, list(tensor.dims), ["?" if d is None else d for d in dims]))
    return path


def run_one(test_dir, args, supported_ops):
    try:
        return run_one_unguarded(test_dir, args, supported_ops)
    finally:
        if not args.keep:
            shutil.rmtree(os.path.join(args.work, os.path.basename(test_dir)), ignore_errors=True)


def run_one_unguarded(test_dir, args, supported_ops):
    name = os.path.basename(test_dir)
    start = time.monotonic()

    def result(status, reason="", **details):
        return Result(name, status, reason, details, time.monotonic() - start)

    try:
        skip, model, freeze = plan_test(test_dir, supported_ops)
    except Exception as e:  # a model onnx cannot even load is the suite's problem
        return result("FAIL", "cannot load model.onnx: %s" % e)
    if skip:
        return result("SKIP", skip)

    data_sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    if not data_sets:
        return result("SKIP", "no test_data_set_*")
    graph = model.graph
    test_work = os.path.join(args.work, name)

    # Data files per data set: (inputs by index, outputs by index), checked.
    files = []
    try:
        for ds in data_sets:
            fix_dir = os.path.join(test_work, os.path.basename(ds))
            ins = [checked_data_file(os.path.join(ds, "input_%d.pb" % k), vi, "input", fix_dir)
                   for k, vi in enumerate(graph.input)]
            outs = [checked_data_file(os.path.join(ds, "output_%d.pb" % k), vi, "output", fix_dir)
                    for k, vi in enumerate(graph.output)]
            files.append((ds, ins, outs))
    except InvalidTestData as e:
        return result("SKIP", "invalid test data: %s" % e)
    except Exception as e:
        return result("FAIL", "cannot read test data: %s" % e)

    if args.precision == "fp16" and name in FP16_UNREPRESENTABLE:
        return result("SKIP", "fp16: " + FP16_UNREPRESENTABLE[name])
    rtol, atol = TOLERANCES[args.precision]
    if any(vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 for vi in graph.output):
        # bfloat16 results: ONNX 1.12 leaves Cast's float->bfloat16 rounding
        # unspecified and its data truncates (later ONNX rounds to nearest even);
        # ONNX's runner compares the stored uint16 bit patterns, which accepts
        # 1-ulp differences. Accept one bf16 ulp (2^-7 relative at worst) likewise.
        rtol = max(rtol, 2.0 ** -7)
    deadline = Deadline(args.timeout)
    os.makedirs(test_work, exist_ok=True)
    engine = os.path.join(test_work, "engine.tsl")
    try:
        errors = []
        outputs = []
        compiled_for = None
        for ds, ins, outs in files:
            ds_name = os.path.basename(ds)
            # The engine is specialized to the frozen values: recompile when a
            # data set brings different ones.
            frozen = tuple((freeze[k], ins[k]) for k in sorted(freeze))
            frozen_bytes = tuple(open(p, "rb").read() for _, p in frozen)
            if frozen_bytes != compiled_for:
                cmd = [args.compile, os.path.join(test_dir, "model.onnx"), "-o", engine,
                       "--precision", args.precision]
                for input_name, pb in frozen:
                    cmd += ["--freeze", "%s=%s" % (input_name, pb)]
                proc = run_tool(cmd, deadline)
                if proc.returncode == 3:
                    for line in proc.stderr.splitlines():
                        m = UNSUPPORTED_RE.search(line)
                        if m:
                            return result("SKIP", "unsupported feature: " + m.group(1).strip())
                    return result("FAIL", "tessel-compile exit 3 without an 'unsupported:' "
                                  "line: " + tail(proc.stderr))
                if proc.returncode != 0:
                    return result("FAIL", "tessel-compile %s: %s" % (
                        describe_exit(proc.returncode), tail(proc.stderr)))
                compiled_for = frozen_bytes

            inputs = [p for k, p in enumerate(ins) if k not in freeze]
            cmd = [args.run, engine] + inputs
            if args.tier:
                cmd += ["--tier", args.tier]
            set_atol = fp16_atol(outs) if atol is None else atol
            cmd += ["--rtol", repr(rtol), "--atol", repr(set_atol), "--compare"] + outs
            proc = run_tool(cmd, deadline)
            lines = [l.strip() for l in proc.stdout.splitlines()
                     if l.strip().startswith("output ")]
            outputs.append({"data_set": ds_name, "lines": lines})
            if proc.returncode == 0:
                continue
            bad = [l for l in lines if not l.endswith("PASS")]
            if proc.returncode == 1 and bad:
                errors.append("%s: mismatch: %s" % (ds_name, "; ".join(bad)))
            else:
                errors.append("%s: tessel-run %s: %s" % (
                    ds_name, describe_exit(proc.returncode),
                    tail(proc.stderr) or tail(proc.stdout)))
        if errors:
            return result("FAIL", " | ".join(errors), outputs=outputs)
        return result("PASS", outputs=outputs)
    except TestTimeout:
        return result("FAIL", "timeout after %gs" % args.timeout)


def list_ops(compile_tool):
    proc = subprocess.run([compile_tool, "--list-ops"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError("`%s --list-ops` failed (%s): %s" % (
            compile_tool, describe_exit(proc.returncode), tail(proc.stderr)))
    return {l.strip() for l in proc.stdout.splitlines() if l.strip()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compile", required=True, help="path to tessel-compile")
    ap.add_argument("--run", required=True, help="path to tessel-run")
    ap.add_argument("--suite", default=DEFAULT_SUITE,
                    help="directory of ONNX node tests (default: %(default)s)")
    ap.add_argument("--work", required=True, help="scratch directory for engines")
    ap.add_argument("--precision", choices=sorted(TOLERANCES), default="fp32")
    ap.add_argument("--filter", help="only tests whose name matches this regex (re.search)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel tests (default 2)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per test, compile and runs together (default 60); "
                         "running over counts as FAIL")
    ap.add_argument("--tier", help="passed to tessel-run --tier (default: tool's own)")
    ap.add_argument("--json", help="write a JSON summary here")
    ap.add_argument("--keep", action="store_true", help="keep the compiled engines")
    args = ap.parse_args(argv)

    for tool in (args.compile, args.run):
        if not os.access(tool, os.X_OK):
            print("error: %s is not an executable" % tool, file=sys.stderr)
            return 2
    if not os.path.isdir(args.suite):
        print("error: conformance suite not found: %s" % args.suite, file=sys.stderr)
        return 2
    try:
        supported = list_ops(args.compile)
    except Exception as e:
        print("error: %s" % e, file=sys.stderr)
        return 2

    tests = sorted(d for d in glob.glob(os.path.join(args.suite, "test_*"))
                   if os.path.isfile(os.path.join(d, "model.onnx")))
    if args.filter:
        rx = re.compile(args.filter)
        tests = [d for d in tests if rx.search(os.path.basename(d))]
    if not tests:
        print("error: no tests selected in %s" % args.suite, file=sys.stderr)
        return 2

    started = time.monotonic()
    lock = threading.Lock()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # map() yields in submission order: the log is sorted whatever -j is.
        for res in pool.map(lambda d: run_one(d, args, supported), tests):
            with lock:
                results.append(res)
                print(res.line(), flush=True)
    elapsed = time.monotonic() - started

    counts = collections.Counter(r.status for r in results)
    groups = collections.defaultdict(list)
    for r in results:
        if r.status == "SKIP":
            groups[r.group_key()].append(r.name)
    if groups:
        print()
        print("Skip reasons:")
        for key, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print("  %4d  %s: %s" % (len(names), key, " ".join(names)))
    failed = [r for r in results if r.status == "FAIL"]
    if failed:
        print()
        print("Failed tests:")
        for r in failed:
            print("  " + r.name)
    print()
    summary = "%d passed, %d failed, %d skipped" % (
        counts["PASS"], counts["FAIL"], counts["SKIP"])
    print(summary, flush=True)

    if args.json:
        rtol, atol = TOLERANCES[args.precision]
        doc = {
            "suite": os.path.abspath(args.suite),
            "precision": args.precision,
            "rtol": rtol,
            "atol": atol if atol is not None else "4 * 2^-11 * max|expected|",
            "tier": args.tier,
            "seconds": round(elapsed, 2),
            "passed": counts["PASS"],
            "failed": counts["FAIL"],
            "skipped": counts["SKIP"],
            "summary": summary,
            "skip_reasons": {k: v for k, v in sorted(groups.items())},
            "tests": [{"name": r.name, "status": r.status, "reason": r.reason,
                       "seconds": round(r.seconds, 3), **r.details} for r in results],
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
