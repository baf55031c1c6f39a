#!/usr/bin/env python3
"""Prints a models-suite row's ONNX graph as the bench exports it (on this
machine's PyTorch), node by node with shapes, up to the first node whose name
contains STOP: to see what an exporter version emits without carrying the
weights back.

    python3 scripts/device/model-graph.py ROW [STOP]   (e.g. vit_b_16_b1 layer_1)
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import onnx  # noqa: E402
import suites  # noqa: E402


def main():
    name, stop = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
    row = [r for r in suites.model_rows() if r["name"] == name][0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        suites.export_model(row, path)
        model = onnx.shape_inference.infer_shapes(onnx.load(path))
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.input) +
              list(model.graph.output)}
    weights = {i.name: list(i.dims) for i in model.graph.initializer}
    for node in model.graph.node:
        if stop and stop in node.name:
            break
        ins = ["W%s" % weights[i] if i in weights else "%s%s" % (i, shapes.get(i, "")) for i in node.input]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute
                 if a.name != "value"}
        print(node.op_type, node.name, ins, "->", ["%s%s" % (o, shapes.get(o, "")) for o in node.output],
              attrs)


if __name__ == "__main__":
    main()
