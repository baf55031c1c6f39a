"""Writes a CNN whose activations leave f16's range with constant weights, as
issue 17 describes such models, its input and its float64 output
(tests/models/numpy_ref.py):

    overflow_model.py overflow|underflow MODEL.onnx INPUT.npy EXPECTED.npy

overflow: x [1, 3, 16, 16] -> big (Conv 3x3, weights of magnitude ~30000:
outputs to ~4e5) -> pool (MaxPool 2x2) -> scale (Mul by 1e-4) -> act (Relu)
-> head (Conv 1x1 to 4 channels). At fp32 the output is ordinary
(magnitudes ~10); stored in f16, big's output overflows to inf.

underflow: the same with tiny (weights of magnitude ~3e-8: outputs below
~1e-6, f16 subnormals, whose spacing is 6e-8) for big and a Mul by 1e6: at
fp32 the output is ordinary; stored in f16, tiny's output keeps one or two
significant bits."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "models"))
import numpy_ref  # noqa: E402

kind, model_path, x_path, y_path = sys.argv[1:5]
assert kind in ("overflow", "underflow")
first = "big" if kind == "overflow" else "tiny"
rng = np.random.default_rng(17)
w_big = (rng.uniform(-1, 1, (8, 3, 3, 3)) * (30000 if kind == "overflow" else 3e-8)).astype(
    np.float32)
w_head = rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * np.float32(0.3)
nodes = [
    helper.make_node("Conv", ["x", "w_big"], ["y1"], name=first, pads=[1, 1, 1, 1]),
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
     numpy_helper.from_array(np.array(1e-4 if kind == "overflow" else 1e6, np.float32), "k")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, model_path)
x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
np.save(x_path, x)
(y,) = numpy_ref.run(model, {"x": x})
big = numpy_ref.run(helper.make_model(helper.make_graph(
    nodes[:1], "big", graph.input, [helper.make_tensor_value_info("y1", TensorProto.FLOAT, None)],
    graph.initializer[:1]), opset_imports=[helper.make_opsetid("", 13)]), {"x": x})[0]
if kind == "overflow":
    assert np.abs(big).max() > 65504, "big's output must exceed f16's range"
else:
    assert np.abs(big).max() < 2.0**-14, "tiny's output must be f16 subnormals"
# The fp32-nodes tolerance of overflow.test: head's 8-term sums of |w * x|
# and its output stay below these.
act = np.maximum(numpy_ref.run(helper.make_model(helper.make_graph(
    nodes[:3], "act", graph.input, [helper.make_tensor_value_info("y3", TensorProto.FLOAT, None)],
    graph.initializer), opset_imports=[helper.make_opsetid("", 13)]), {"x": x})[0], 0)
sums = np.einsum("oc,nchw->nohw", np.abs(w_head[:, :, 0, 0]), np.abs(act))
assert sums.max() < 60 and np.abs(y).max() < 16.2, (sums.max(), np.abs(y).max())
np.save(y_path, y.astype(np.float32))
