#!/usr/bin/python3
"""Writes the bundled example model, a tiny CNN classifier, with onnx.helper:

    image f32[1,3,32,32]
      -> Conv 3->8 3x3 pad 1 (+bias) -> BatchNormalization -> Relu -> MaxPool 2x2
      -> Conv 8->16 3x3 stride 2 (+bias) -> Relu -> GlobalAveragePool -> Flatten
      -> Gemm 16->10 -> Softmax -> probabilities f32[1,10]

Outputs (beside this script unless --out-dir):
  tiny_cnn.onnx          the model (opset 13), ~7 KB, weights from numpy seed 0
  tiny_cnn.input.npy     a fixed input (numpy seed 0, standard normal)
  tiny_cnn.expected.npy  the model's output on it, evaluated in float64 by
                         tests/models/numpy_ref.py and cross-checked with PyTorch

Deterministic: rerunning rewrites byte-identical files. Run with /usr/bin/python3
(Debian's python3-onnx, python3-numpy; python3-torch for the cross-check).

Demo:
  tessel-compile examples/tiny_cnn.onnx -o tiny_cnn.tsl
  tessel-run tiny_cnn.tsl examples/tiny_cnn.input.npy --compare examples/tiny_cnn.expected.npy
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
import numpy_ref  # noqa: E402

OPSET = 13


def make_weights(seed=0):
    rng = np.random.default_rng(seed)

    def he(shape, fan_in):  # He-normal: keeps activations O(1) through the ReLUs
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    w = {}
    w["conv1.weight"] = he((8, 3, 3, 3), 3 * 9)
    w["conv1.bias"] = (rng.standard_normal(8) * 0.1).astype(np.float32)
    # Non-trivial BatchNorm (as after training) so that folding it into conv1
    # changes every weight and bias.
    w["bn1.scale"] = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    w["bn1.bias"] = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w["bn1.mean"] = (rng.standard_normal(8) * 0.2).astype(np.float32)
    w["bn1.var"] = rng.uniform(0.5, 2.0, 8).astype(np.float32)
    w["conv2.weight"] = he((16, 8, 3, 3), 8 * 9)
    w["conv2.bias"] = (rng.standard_normal(16) * 0.1).astype(np.float32)
    # Scaled up so the softmax is not flat (probabilities differ visibly).
    w["fc.weight"] = he((10, 16), 16) * 4.0
    w["fc.bias"] = (rng.standard_normal(10) * 0.1).astype(np.float32)
    return w


def make_model(weights):
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["conv1"],
                         name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["conv1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["bn1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.weight", "conv2.bias"], ["conv2"],
                         name="conv2", kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["relu2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"],
                         name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in weights.items()])
    model = helper.make_model(graph, producer_name="tessel-examples",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)  # full_check runs shape inference
    return model


def torch_reference(weights, x):
    """The same network with torch.nn.functional, in fp32; None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    t = {k: torch.from_numpy(v) for k, v in weights.items()}
    with torch.no_grad():
        y = F.conv2d(torch.from_numpy(x), t["conv1.weight"], t["conv1.bias"], padding=1)
        y = F.batch_norm(y, t["bn1.mean"], t["bn1.var"], t["bn1.scale"], t["bn1.bias"],
                         training=False, eps=1e-5)
        y = F.max_pool2d(F.relu(y), 2, 2)
        y = F.relu(F.conv2d(y, t["conv2.weight"], t["conv2.bias"], stride=2))
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        y = F.softmax(F.linear(y, t["fc.weight"], t["fc.bias"]), dim=1)
    return y.numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=HERE)
    args = ap.parse_args(argv)

    weights = make_weights(seed=0)
    model = make_model(weights)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32), dtype=np.float32)

    (exact,) = numpy_ref.run(model, {"image": x})
    expected = exact.astype(np.float32)
    torch_y = torch_reference(weights, x)
    if torch_y is not None:
        abs_err, rel_err = numpy_ref.errors(torch_y, exact)
        print("PyTorch fp32 vs float64: max_abs_err=%.3g max_rel_err=%.3g" % (abs_err, rel_err))
        if not np.allclose(torch_y, exact, rtol=1e-4, atol=1e-6):
            raise SystemExit("the ONNX graph and the PyTorch network disagree")

    os.makedirs(args.out_dir, exist_ok=True)
    model_path = os.path.join(args.out_dir, "tiny_cnn.onnx")
    with open(model_path, "wb") as f:
        f.write(model.SerializeToString())
    np.save(os.path.join(args.out_dir, "tiny_cnn.input.npy"), x)
    np.save(os.path.join(args.out_dir, "tiny_cnn.expected.npy"), expected)
    print("wrote %s (%d bytes), tiny_cnn.input.npy, tiny_cnn.expected.npy" % (
        model_path, os.path.getsize(model_path)))
    print("probabilities: %s (argmax %d)" % (
        np.array2string(expected[0], precision=4, separator=", "), int(expected.argmax())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
