#!/usr/bin/python3
"""Checks what examples/embed's programs print for the bundled example
(tiny_cnn): the tier line, the output line `output probabilities f32 1x10`,
then its values, against examples/tiny_cnn.expected.npy (the model evaluated
in float64) within fp32's tolerance.

    check_output.py PRINTED.txt EXPECTED.npy LABEL
"""
import sys

import numpy as np

lines = open(sys.argv[1]).read().split("\n")
expected = np.load(sys.argv[2]).astype(np.float64).reshape(-1)
assert lines[0].startswith("tier "), lines[0]
assert lines[1].startswith("output ") and lines[1].endswith(" f32 1x10"), lines[1]
got = np.array([float(v) for v in lines[2:] if v], np.float64)
assert got.shape == expected.shape, (got.shape, expected.shape)
# fp32 storage and math: ONNX's node-test tolerances (rtol 1e-3, atol 1e-4).
assert np.allclose(got, expected, rtol=1e-3, atol=1e-4), (got, expected)
print("PASS %s: %s, max abs err %.3g" % (sys.argv[3], lines[0], np.abs(got - expected).max()))
