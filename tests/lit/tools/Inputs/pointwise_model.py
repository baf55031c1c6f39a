#!/usr/bin/env python3
"""A 1x1 stride-1 conv (64 -> 128 channels) over 32 images of 56 x 56: large
enough that tc-sm90 serves it, its input read by TMA (tma.test). With
`strided`, a 3x3 stride-2 conv with padding 1 instead (28 x 28 out), its
input read by TMA's im2col mode.

    pointwise_model.py OUT.onnx [strided]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
strided = sys.argv[2:] == ["strided"]
size, out = (3, 28) if strided else (1, 56)
w = numpy_helper.from_array(
    (rng.standard_normal((128, 64, size, size)) * 0.1).astype(np.float32), "W")
b = numpy_helper.from_array((rng.standard_normal(128) * 0.1).astype(np.float32), "B")
attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1]} if strided else {}
node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="pointwise", **attrs)
graph = helper.make_graph(
    [node], "pointwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64, 56, 56])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 128, out, out])], [w, b])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
