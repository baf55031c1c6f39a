"""Writes a CNN whose activations exceed f16's range (65504) with constant
weights, as issue 17 describes such models, its input and its float64
output (tests/models/numpy_ref.py):

    overflow_model.py MODEL.onnx INPUT.npy EXPECTED.npy

x [1, 3, 16, 16] -> big (Conv 3x3, weights of magnitude ~30000: outputs to
~4e5) -> pool (MaxPool 2x2) -> scale (Mul by 1e-4) -> act (Relu) -> head
(Conv 1x1 to 4 channels). At fp32 the output is ordinary (magnitudes ~10);
stored in f16, big's output overflows to inf."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "models"))
import numpy_ref  # noqa: E402

rng = np.random.default_rng(17)
w_big = (rng.uniform(-1, 1, (8, 3, 3, 3)) * 30000).astype(np.float32)
w_head = rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * np.float32(0.3)
nodes = [
    helper.make_node("Conv", ["x", "w_big"], ["y1"], name="big", pads=[1, 1, 1, 1]),
    helper.make_node("MaxPool", ["y1"], ["y2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Mul", ["y2", "k"], ["y3"], name="scale"),
    helper.make_node("Relu", ["y3"], ["y4"], name="act"),
    helper.make_node("Conv", ["y4", "w_head"], ["y"], name="head"),
]
graph = helper.make_graph(
    nodes, "overflow",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
    [numpy_helper.from_array(w_big, "w_big"), numpy_helper.from_array(w_head, "w_head"),
     numpy_helper.from_array(np.array(1e-4, np.float32), "k")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
np.save(sys.argv[2], x)
(y,) = numpy_ref.run(model, {"x": x})
big = numpy_ref.run(helper.make_model(helper.make_graph(
    nodes[:1], "big", graph.input, [helper.make_tensor_value_info("y1", TensorProto.FLOAT, None)],
    graph.initializer[:1]), opset_imports=[helper.make_opsetid("", 13)]), {"x": x})[0]
assert np.abs(big).max() > 65504, "big's output must exceed f16's range"
np.save(sys.argv[3], y.astype(np.float32))
