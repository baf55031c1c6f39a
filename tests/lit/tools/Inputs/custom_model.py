#!/usr/bin/env python3
"""Models with a test.custom Gate node for the custom op manifest tests.

    custom_model.py KIND OUT.onnx
KIND: good (scale = 2.0), plain (no attribute), int_attr (scale = 2, an int), unknown_attr (foo),
shape_mismatch (b of another shape), dims (a and b [2, 3], no scale).
"""
import sys

import onnx
from onnx import TensorProto, helper

kind, out = sys.argv[1], sys.argv[2]
attrs = {"good": {"scale": 2.0}, "int_attr": {"scale": 2}, "unknown_attr": {"foo": 1},
         "shape_mismatch": {}, "dims": {}, "plain": {}}[kind]
b_shape = [3, 2] if kind == "shape_mismatch" else [2, 3]
node = helper.make_node("Gate", ["a", "b"], ["y"], name="g", domain="test.custom", **attrs)
graph = helper.make_graph(
    [node], "gate",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 6] if kind == "dims" else [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("test.custom", 1)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, out)
