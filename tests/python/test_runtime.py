#!/usr/bin/python3
"""The Python API (python/tessel) on the CPU tier: the bundled example
against its float64 output (examples/tiny_cnn.expected.npy), a batch
profile's images against the float64 reference and the single-image
profile (the model treats each image alone), and the API's errors.

    test_runtime.py ENGINE_DIR TESSEL_COMPILE EXAMPLES_DIR
Run by ctest (python_runtime) with the package installed into a venv.
"""
import os
import subprocess
import sys
import unittest

import numpy as np

import tessel

ENGINE_DIR, COMPILE, EXAMPLES = sys.argv[1:4]
del sys.argv[1:4]


def compile_example(name, *flags, model=None):
    path = os.path.join(ENGINE_DIR, name)
    model = model or os.path.join(EXAMPLES, "tiny_cnn.onnx")
    subprocess.run([COMPILE, model, "-o", path] + list(flags), check=True,
                   stdout=subprocess.DEVNULL)
    return path


def dynamic_batch_example():
    """tiny_cnn with its batch dim made dynamic, as torch.onnx.export's
    dynamic_axes writes it."""
    import onnx
    model = onnx.load(os.path.join(EXAMPLES, "tiny_cnn.onnx"))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    path = os.path.join(ENGINE_DIR, "tiny_cnn_dynamic.onnx")
    onnx.save(model, path)
    return path


def nms_example():
    """NonMaxSuppression over 1 batch of 8 boxes and 2 classes (at most 4 a
    class), then the kept boxes by GatherND: both outputs' rows are data
    dependent."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"],
                              ["selected"]),
             helper.make_node("Gather", ["selected", "columns"], ["where"], axis=1),
             helper.make_node("GatherND", ["boxes", "where"], ["kept"])]
    graph = helper.make_graph(
        nodes, "nms",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 8, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 8])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3]),
         helper.make_tensor_value_info("kept", TensorProto.FLOAT, ["n", 4])],
        [numpy_helper.from_array(np.array([4], np.int64), "max_out"),
         numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
         numpy_helper.from_array(np.array([0, 2], np.int64), "columns")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    path = os.path.join(ENGINE_DIR, "nms.onnx")
    onnx.save(model, path)
    return path


class RuntimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.path = compile_example("tiny_cnn.tsl", "--precision", "fp32")
        cls.x = np.load(os.path.join(EXAMPLES, "tiny_cnn.input.npy"))
        cls.expected = np.load(os.path.join(EXAMPLES, "tiny_cnn.expected.npy"))

    def test_infos(self):
        engine = tessel.Engine(self.path)
        self.assertEqual([(i.name, i.dtype, i.shape) for i in engine.inputs],
                         [("image", np.dtype(np.float32), (1, 3, 32, 32))])
        self.assertEqual([(o.name, o.dtype, o.shape) for o in engine.outputs],
                         [("probabilities", np.dtype(np.float32), (1, 10))])
        self.assertEqual(engine.inputs[0].size_bytes, 3 * 32 * 32 * 4)

    def test_run_matches_float64_reference(self):
        context = tessel.Engine(self.path).context("cpu")
        self.assertEqual(context.tier, "cpu")
        (y,) = context.run([self.x])
        # fp32 storage and math: ONNX's node-test tolerances.
        np.testing.assert_allclose(y, self.expected, rtol=1e-3, atol=1e-4)
        (by_name,) = context.run({"image": self.x})
        np.testing.assert_array_equal(by_name, y)

    def test_profiles(self):
        # Batch profiles 1 and 3: image i of a batch is the model on image i.
        engine = tessel.Engine(compile_example("tiny_cnn_b13.tsl", "--precision", "fp32",
                                               "--batch", "1,3", model=dynamic_batch_example()))
        self.assertEqual(engine.profile_count, 2)
        batch = np.concatenate([self.x, self.x[:, :, ::-1, :], -self.x]).astype(np.float32)
        three = engine.find_profile((3, 3, 32, 32))
        self.assertEqual(three.inputs[0].shape, (3, 3, 32, 32))
        (y,) = three.context("cpu").run([batch])
        np.testing.assert_allclose(y[0:1], self.expected, rtol=1e-3, atol=1e-4)
        single = engine.profile(0).context("cpu")
        for i in range(3):
            (yi,) = single.run([batch[i:i + 1]])
            np.testing.assert_allclose(y[i:i + 1], yi, rtol=1e-5, atol=1e-7)
        with self.assertRaises(tessel.Error) as raised:
            engine.find_profile((2, 3, 32, 32))
        self.assertEqual(raised.exception.code, 1)

    def test_data_dependent_output(self):
        # NonMaxSuppression's rows: the engine's shapes are bounds (8 rows),
        # a run returns as many rows as it keeps, the greedy reference's.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "models"))
        import numpy_ref
        engine = tessel.Engine(compile_example("nms.tsl", "--precision", "fp32",
                                               model=nms_example()))
        self.assertEqual([(o.shape, o.dynamic_axis) for o in engine.outputs],
                         [((8, 3), 0), ((8, 4), 0)])
        context = engine.context("cpu")
        with self.assertRaises(tessel.Error) as raised:
            context.output_shape(0)
        self.assertEqual(raised.exception.code, 1)
        rng = np.random.default_rng(3)
        for _ in range(4):
            corners = rng.uniform(0, 3, (1, 8, 2)).astype(np.float32)
            boxes = np.concatenate([corners, corners + rng.uniform(0.5, 2, (1, 8, 2))],
                                   2).astype(np.float32)
            scores = rng.uniform(0, 1, (1, 2, 8)).astype(np.float32)
            selected, kept = context.run([boxes, scores])
            expected = numpy_ref.non_max_suppression(boxes, scores, 4, np.float32(0.5), None, 0)
            np.testing.assert_array_equal(selected, expected)
            np.testing.assert_array_equal(kept, boxes[0, expected[:, 2]])
            self.assertEqual(context.output_shape(1), (len(expected), 4))

    def test_errors(self):
        with self.assertRaises(tessel.Error) as raised:
            tessel.Engine(os.path.join(ENGINE_DIR, "missing.tsl"))
        self.assertIn("missing.tsl", str(raised.exception))
        bad = os.path.join(ENGINE_DIR, "bad.tsl")
        with open(bad, "wb") as f:
            f.write(b"not an engine" * 40)
        with self.assertRaises(tessel.Error) as raised:
            tessel.Engine(bad)
        self.assertEqual(raised.exception.code, 2)
        context = tessel.Engine(self.path).context("cpu")
        with self.assertRaises(ValueError):
            context.run([self.x.astype(np.float64)])
        with self.assertRaises(ValueError):
            context.run([self.x[:, :2]])
        with self.assertRaises(ValueError):
            tessel.Engine(self.path).context("fastest")
        with self.assertRaises(TypeError):
            context.run_device([self.x], [np.empty((1, 10), np.float32)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
