#!/usr/bin/python3
"""The benchmark suites of issue 5: their rows and a one-op ONNX model per row.

    gemm    every row of DeepBench's GEMM problems (deepbench-gemm.csv): one
            ONNX Gemm, A and B graph inputs (no weights), transA/transB from
            a_t/b_t; f32 in the model, compiled with --io-dtype f16.
    conv    every row of DeepBench's conv problems (deepbench-conv.csv) and the
            23 ResNet-50 conv shapes (resnet50-convs.csv) at batch 1 and 256:
            one ONNX Conv, the weight an initializer (seeded random), no bias;
            compiled with --io-dtype f16 --io-layout nhwc.
    models  ResNet-50 (b1, b256), MobileNetV2 (b1; b256 on request), a BERT-base-shaped
            encoder (torch.nn.TransformerEncoder, 12 layers, hidden 768, 12
            heads, FFN 3072, seq 128, b1), exported with PyTorch's legacy
            exporter at opset 13 with a fixed batch (the encoder through
            explicit_encoder, the same function in plain ops; the peer runs
            nn.TransformerEncoder itself). The encoder's definition is
            tests/models/transformer_models.py, which the model tests share.

A row is a dict: name, suite, set, the shape fields, flops (the nominal
2*M*N*K, or 2*N*OH*OW*K*C*R*S for a conv, before Tessel's channel padding),
compile_flags (what tessel-compile gets besides -o and --target). gemm and
conv models need only onnx and numpy; the models suite imports torch.

    python3 bench/suites.py OUTDIR [--suites gemm,conv] [--limit N]

writes OUTDIR/NAME.onnx for the gemm and conv rows (a check of the generator).
"""

import argparse
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# tests/models: the model-test exporters and the transformer definitions
# (transformer_models.py), which the models suite shares with the model tests.
MODEL_TESTS = os.path.join(ROOT, "tests", "models")
DATA = os.environ.get("TESSEL_BENCH_DATA", os.path.join(ROOT, "..", "shared", "bench"))
OPSET = 13
SUITES = ("gemm", "conv", "models")
# Tessel's target, as the ratio peer_ms / tessel_ms (1 = as fast as the peer).
TARGET_RATIO = 0.6
IO_FLAGS = {"gemm": ["--io-dtype", "f16"],
            "conv": ["--io-dtype", "f16", "--io-layout", "nhwc"],
            "models": ["--io-dtype", "f16", "--io-layout", "nhwc"]}
# ResNet-50's convs are measured at these batches.
RESNET_BATCHES = (1, 256)


def data_dir(path=None):
    """The folder with the CSVs: PATH, $TESSEL_BENCH_DATA, or ../shared/bench
    beside the checkout (/work/shared/bench here); the device bundle copy is
    passed explicitly by run_bench.py."""
    for candidate in (path, DATA, "/work/shared/bench"):
        if candidate and os.path.exists(os.path.join(candidate, "deepbench-gemm.csv")):
            return candidate
    raise SystemExit("suites: no deepbench-gemm.csv under %s (use --data)" % (path or DATA))


def _read_csv(data, name):
    with open(os.path.join(data, name), newline="") as f:
        return list(csv.DictReader(f))


def _flag(text):
    return text.strip().lower() in ("true", "1", "t", "yes")


# ---------------------------------------------------------------------------
# rows

def gemm_rows(data):
    rows = []
    for i, r in enumerate(_read_csv(data, "deepbench-gemm.csv")):
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        a_t, b_t = _flag(r["a_t"]), _flag(r["b_t"])
        rows.append({
            "name": "gemm%03d_%dx%dx%d_%s%s" % (i, m, n, k, "T" if a_t else "N",
                                                "T" if b_t else "N"),
            "suite": "gemm", "set": r["set"], "m": m, "n": n, "k": k,
            "a_t": a_t, "b_t": b_t, "flops": 2.0 * m * n * k,
            "compile_flags": IO_FLAGS["gemm"]})
    # Square GEMMs, where the main loop alone decides (issue 15's yardstick).
    for size in (4096, 8192):
        rows.append({"name": "gemm_square_%d" % size, "suite": "gemm", "set": "square",
                     "m": size, "n": size, "k": size, "a_t": False, "b_t": False,
                     "flops": 2.0 * size ** 3, "compile_flags": IO_FLAGS["gemm"]})
    return rows


def conv_out(size, filt, pad, stride):
    return (size + 2 * pad - filt) // stride + 1


def _conv_row(name, set_name, n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w):
    oh, ow = conv_out(h, r, pad_h, stride_h), conv_out(w, s, pad_w, stride_w)
    return {"name": name, "suite": "conv", "set": set_name, "n": n, "c": c, "h": h, "w": w,
            "k": k, "r": r, "s": s, "pad_h": pad_h, "pad_w": pad_w, "stride_h": stride_h,
            "stride_w": stride_w, "oh": oh, "ow": ow,
            "flops": 2.0 * n * oh * ow * k * c * r * s, "compile_flags": IO_FLAGS["conv"]}


def conv_rows(data):
    rows = []
    for i, r in enumerate(_read_csv(data, "deepbench-conv.csv")):
        v = {key: int(val) for key, val in r.items() if key != "set"}
        name = "conv%03d_n%dc%dh%dw%dk%dr%ds%d_p%dx%d_s%dx%d" % (
            i, v["n"], v["c"], v["h"], v["w"], v["k"], v["r"], v["s"], v["pad_h"],
            v["pad_w"], v["stride_h"], v["stride_w"])
        rows.append(_conv_row(name, r["set"], v["n"], v["c"], v["h"], v["w"], v["k"], v["r"],
                              v["s"], v["pad_h"], v["pad_w"], v["stride_h"], v["stride_w"]))
    resnet = _read_csv(data, "resnet50-convs.csv")
    for batch in RESNET_BATCHES:
        for r in resnet:
            hw, kernel, stride, pad = (int(r[key]) for key in ("in_hw", "kernel", "stride", "pad"))
            row = _conv_row("r50_b%d_%s" % (batch, r["layer"].replace("+", "_")),
                            "resnet50_b%d" % batch, batch, int(r["c"]), hw, hw, int(r["k"]),
                            kernel, kernel, pad, pad, stride, stride)
            row["layer"], row["count"] = r["layer"], int(r["count"])
            rows.append(row)
    return rows


# name -> (exporter, batch); the flops are counted from the exported graph.
MODEL_ROWS = (("resnet50_b1", "resnet50", 1), ("resnet50_b256", "resnet50", 256),
              ("mobilenet_v2_b1", "mobilenet_v2", 1), ("mobilenet_v2_b256", "mobilenet_v2", 256),
              ("bert_base_b1", "bert_base", 1), ("bert_base_b8", "bert_base", 8),
              ("vit_b_16_b1", "vit_b_16", 1), ("vit_b_16_b32", "vit_b_16", 32),
              ("gpt2_b1", "gpt2", 1), ("swin_t_b1", "swin_t", 1),
              # Issue 20's: the squeeze-excitation CNNs, at batch 1 and 32.
              ("efficientnet_b0_b1", "efficientnet_b0", 1),
              ("efficientnet_b0_b32", "efficientnet_b0", 32),
              ("efficientnet_v2_s_b1", "efficientnet_v2_s", 1),
              ("efficientnet_v2_s_b32", "efficientnet_v2_s", 32),
              ("mobilenet_v3_large_b1", "mobilenet_v3_large", 1),
              ("mobilenet_v3_large_b32", "mobilenet_v3_large", 32))
# The transformer-era models at the opset PyTorch exports them at today
# (LayerNormalization as one node); the others at OPSET.
MODEL_OPSETS = {"vit_b_16": 17, "gpt2": 17, "swin_t": 17}
# The image side of a model's input where it is not 224: EfficientNetV2-S
# at its evaluation size.
MODEL_IMAGE_SIZES = {"efficientnet_v2_s": 384}
# MobileNetV2 at batch 256 only on request (--models), to keep the default
# device call short.
DEFAULT_MODELS = ("resnet50_b1", "resnet50_b256", "mobilenet_v2_b1", "bert_base_b1")


def model_rows():
    return [{"name": name, "suite": "models", "set": model, "model": model, "batch": batch,
             "flops": None, "compile_flags": IO_FLAGS["models"]}
            for name, model, batch in MODEL_ROWS]


def rows(suite, data=None):
    if suite == "models":
        return model_rows()
    data = data_dir(data)
    return {"gemm": gemm_rows, "conv": conv_rows}[suite](data)


# ---------------------------------------------------------------------------
# one-op ONNX models

def _save(graph, path):
    import onnx
    from onnx import helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="tessel-bench-suites")
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model)
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)


def gemm_shapes(row):
    """The (A, B) shapes as the ONNX Gemm takes them."""
    m, n, k = row["m"], row["n"], row["k"]
    return ((k, m) if row["a_t"] else (m, k)), ((n, k) if row["b_t"] else (k, n))


def write_gemm(row, path):
    """Y[M,N] = A' B' with A and B graph inputs (f32; the engine takes f16)."""
    from onnx import TensorProto, helper
    a_shape, b_shape = gemm_shapes(row)
    node = helper.make_node("Gemm", ["A", "B"], ["Y"], name="gemm",
                            transA=int(row["a_t"]), transB=int(row["b_t"]))
    graph = helper.make_graph(
        [node], row["name"],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(a_shape)),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, list(b_shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [row["m"], row["n"]])])
    _save(graph, path)


def conv_weight(row, seed=0):
    """A seeded uniform weight K x C x R x S scaled by 1/sqrt(fan in), so that
    outputs of unit-scale inputs stay O(1) in f16."""
    shape = (row["k"], row["c"], row["r"], row["s"])
    rng = np.random.default_rng(seed)
    bound = np.sqrt(3.0 / (row["c"] * row["r"] * row["s"]))
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def write_conv(row, path, seed=0):
    """Y = conv(X, W), NCHW f32 in the model, no bias."""
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv",
                            kernel_shape=[row["r"], row["s"]],
                            pads=[row["pad_h"], row["pad_w"], row["pad_h"], row["pad_w"]],
                            strides=[row["stride_h"], row["stride_w"]])
    graph = helper.make_graph(
        [node], row["name"],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                       [row["n"], row["c"], row["h"], row["w"]])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                       [row["n"], row["k"], row["oh"], row["ow"]])],
        initializer=[numpy_helper.from_array(conv_weight(row, seed), "W")])
    _save(graph, path)


# ---------------------------------------------------------------------------
# whole models (torch)

def build_torch_model(model, batch=1):
    """(module in eval mode, example input shape) for a models-suite row, built
    under torch.manual_seed(0) as tests/models/export_models.py does
    (torchvision, weights=None, BatchNorm statistics calibrated)."""
    import torch
    sys.path.insert(0, MODEL_TESTS)
    torch.manual_seed(0)
    if model == "bert_base":
        from transformer_models import BERT, transformer_encoder
        return transformer_encoder(), (batch, BERT["seq"], BERT["hidden"])
    if model == "gpt2":
        from transformer_models import GPT2, gpt2_decoder
        return gpt2_decoder(), (batch, GPT2["seq"])
    import export_models  # tests/models: the model table and BatchNorm calibration
    module = export_models.MODELS[model](weights=None)
    export_models.calibrate_batchnorm(module)
    side = MODEL_IMAGE_SIZES.get(model, 224)
    return module.eval(), (batch, 3, side, side)


def model_input(model, shape, device="cpu", dtype=None):
    """A random input of SHAPE for a models-suite MODEL: token ids below 10
    for GPT-2 (as tessel-bench draws integers), else standard normal."""
    import torch
    if model == "gpt2":
        return torch.randint(0, 10, shape, dtype=torch.int64, device=device)
    return torch.randn(*shape, device=device, dtype=dtype)


def export_module(module, shape, path, device="cpu", model=None):
    """Exports MODULE on a random input of SHAPE to PATH (legacy exporter, the
    model's opset, BatchNorm kept). Traced with gradients on: under no_grad
    nn.MultiheadAttention (ViT) takes a fused fast path no ONNX opset
    expresses; the other exports are the same either way."""
    import torch
    module = module.to(device)
    x = model_input(model, shape, device)
    legacy = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    tmp = path + ".tmp"
    torch.onnx.export(module, x, tmp, opset_version=MODEL_OPSETS.get(model, OPSET),
                      input_names=["input"], output_names=["output"], do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE, **legacy)
    os.replace(tmp, path)


def export_model(row, path, device="cpu"):
    """Exports a models-suite row to PATH (the batch fixed; the encoder as
    explicit_encoder). Returns the FLOPs of the exported graph's
    Conv/Gemm/MatMul nodes."""
    module, shape = build_torch_model(row["model"], row["batch"])
    if row["model"] == "bert_base":
        from transformer_models import explicit_encoder
        module = explicit_encoder(module, row["batch"])
    export_module(module, shape, path, device, row["model"])
    return graph_flops(path)


def graph_flops(path):
    """2*M*N*K summed over the Conv, Gemm and MatMul nodes of an ONNX model
    (shapes from onnx.shape_inference)."""
    import onnx
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    g = model.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(init.dims)
    total = 0.0
    for node in g.node:
        ins = [shapes.get(name) for name in node.input]
        outs = [shapes.get(name) for name in node.output]
        if not ins or not ins[0] or not outs[0] or (len(ins) > 1 and not ins[1]):
            continue
        if node.op_type == "Conv":
            w = ins[1]  # K x C/group x R x S
            total += 2.0 * np.prod(outs[0], dtype=np.float64) * np.prod(w[1:], dtype=np.float64)
        elif node.op_type in ("Gemm", "MatMul"):
            k = ins[0][-1]
            if node.op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute):
                k = ins[0][0]
            total += 2.0 * np.prod(outs[0], dtype=np.float64) * k
    return total


def write_model(row, path):
    """Writes the row's ONNX model; returns the row's FLOPs."""
    if row["suite"] == "gemm":
        write_gemm(row, path)
    elif row["suite"] == "conv":
        write_conv(row, path)
    else:
        return export_model(row, path)
    return row["flops"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--suites", default="gemm,conv")
    ap.add_argument("--data", help="folder with the CSVs (default: %s)" % DATA)
    ap.add_argument("--limit", type=int, default=0, help="first N rows per suite")
    ap.add_argument("--names", default="", help="comma-separated row names to write only")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    wanted = set(filter(None, args.names.split(",")))
    for suite in filter(None, args.suites.split(",")):
        selected = rows(suite, args.data)
        if args.limit:
            selected = selected[:args.limit]
        for row in selected:
            if wanted and row["name"] not in wanted:
                continue
            flops = write_model(row, os.path.join(args.outdir, row["name"] + ".onnx"))
            print("%s %s flops %.4g" % (row["name"], " ".join(row["compile_flags"]), flops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
