#!/usr/bin/python3
"""Checks numpy_ref, the model tests' float64 reference, against ONNX's own:
every ONNX backend node test (ONNX 1.12's suite, the conformance tests' copy)
whose model numpy_ref evaluates is run on its inputs and compared with its
expected outputs (computed by ONNX's reference implementation), at ONNX's
backend-test tolerances (rtol 1e-3, atol 1e-7; integer and bool outputs
exactly). numpy_ref raises NotImplementedError for an op or a feature it
lacks: those tests are skipped. Any other error or a mismatch fails.

    /usr/bin/python3 check_numpy_ref.py SUITE_DIR [--ops Erf,LayerNormalization]

With --ops, only tests whose every node is of one of those op types run.
Prints one line per failure and a summary; exit 0 when none failed, 1
otherwise, 2 when the suite holds no test at all.
"""

import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_ref  # noqa: E402

RTOL, ATOL = 1e-3, 1e-7


def load(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def compare(actual, expected):
    """None when ACTUAL matches EXPECTED, else what differs."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return "shape %s, expected %s" % (actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        if np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=RTOL,
                       atol=ATOL, equal_nan=True):
            return None
        return "max abs error %.3g" % float(np.nanmax(np.abs(actual - expected)))
    if np.array_equal(actual.astype(expected.dtype), expected):
        return None
    return "values differ"


# Element types numpy_ref takes as inputs (NumPy has no bfloat16; strings and
# sequences are no tensors it evaluates).
NUMERIC = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
           onnx.TensorProto.BOOL, onnx.TensorProto.INT8, onnx.TensorProto.INT16,
           onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT8,
           onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def check(test_dir):
    """'pass', 'skip' or a failure message for one node test."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in initializers]
    if any(not v.type.HasField("tensor_type") or v.type.tensor_type.elem_type not in NUMERIC
           for v in list(graph.input) + list(graph.output)):
        return "skip"
    for data_set in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        feeds = {name: load(os.path.join(data_set, "input_%d.pb" % i))
                 for i, name in enumerate(inputs)}
        try:
            outputs = numpy_ref.run(model, feeds)
        except NotImplementedError:
            return "skip"
        except Exception as e:  # noqa: BLE001 -- any other error is numpy_ref's
            return "%s: %s" % (type(e).__name__, e)
        for i, actual in enumerate(outputs):
            message = compare(actual, load(os.path.join(data_set, "output_%d.pb" % i)))
            if message:
                return "%s output %d: %s" % (os.path.basename(data_set), i, message)
    return "pass"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", help="directory of ONNX node tests (test_*/model.onnx)")
    ap.add_argument("--ops", default="", help="comma-separated op types to restrict to")
    args = ap.parse_args(argv)
    ops = set(filter(None, args.ops.split(",")))
    tests = sorted(glob.glob(os.path.join(args.suite, "test_*", "model.onnx")))
    if not tests:
        print("FAIL: no ONNX node tests in %s" % args.suite)
        return 2
    counts = {"pass": 0, "skip": 0, "fail": 0}
    covered = set()
    for path in tests:
        test_dir = os.path.dirname(path)
        model_ops = {n.op_type for n in onnx.load(path).graph.node}
        if ops and not model_ops <= ops:
            continue
        result = check(test_dir)
        if result in ("pass", "skip"):
            counts[result] += 1
            if result == "pass":
                covered |= model_ops
            continue
        counts["fail"] += 1
        print("FAIL %s: %s" % (os.path.basename(test_dir), result))
    print("numpy_ref against ONNX's node tests: %d passed, %d failed, %d skipped "
          "(unsupported by numpy_ref); ops checked: %s" % (
              counts["pass"], counts["fail"], counts["skip"], " ".join(sorted(covered))))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
