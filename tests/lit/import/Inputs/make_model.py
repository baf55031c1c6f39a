"""Writes the small ONNX models the importer's lit tests need beyond the
conformance suite: `make_model.py CASE OUT.onnx`."""
import sys

import onnx
from onnx import TensorProto, helper


def conv(auto_pad):
    # 6x6 input, 3x3 window, stride 2: output 3x3 and one pixel of padding in
    # total per spatial dim, so SAME_UPPER and SAME_LOWER place it differently.
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                            strides=[2, 2], auto_pad=auto_pad)
    return helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])


def max_pool_ceil_drop():
    # 4 + 1 + 1 padded, window 2, stride 3: ceil mode counts 3 windows, but the
    # third would start at 6, past the input and its begin padding (5).
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                            kernel_shape=[2, 2], strides=[3, 3],
                            pads=[1, 1, 1, 1], ceil_mode=1)
    return helper.make_graph(
        [node], "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])


CASES = {
    "conv_same_upper": lambda: conv("SAME_UPPER"),
    "conv_same_lower": lambda: conv("SAME_LOWER"),
    "max_pool_ceil_drop": max_pool_ceil_drop,
}

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    model = helper.make_model(CASES[case](), producer_name="tessel-lit",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, out)
