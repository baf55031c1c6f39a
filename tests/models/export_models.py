#!/usr/bin/python3
"""Exports the model-test references: torchvision models as ONNX plus a fixed
input and PyTorch's own output on it.

    /usr/bin/python3 export_models.py OUTDIR [--models resnet18,...] [--force]

For each model NAME it writes OUTDIR/NAME.onnx (opset 13, input "input"
f32[1,3,224,224], output "output"), OUTDIR/NAME.input.pb and OUTDIR/NAME.output.pb
(ONNX TensorProto files). Existing complete sets are kept unless --force.
Weights are random (weights=None) but deterministic: torch.manual_seed(0) before
each model is built. Needs Debian's python3-torch, python3-torchvision and
python3-onnx (run with /usr/bin/python3).
"""

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_ref  # noqa: E402

def skinny_mlp(weights=None):
    """A batch-1 MLP: every GEMM has M = 1, the skinny shape where a 16x16x16
    fragment wastes 15/16 of the Tensor Core (8x32x16 fits better)."""
    del weights
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                               torch.nn.Linear(4096, 1024))


MODELS = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "squeezenet1_1": torchvision.models.squeezenet1_1,
    "skinny_mlp": skinny_mlp,
}
OPSET = 13
INPUT_SHAPE = (1, 3, 224, 224)  # batch 1 keeps the CPU-tier run short
# Models whose input is not an image.
INPUT_SHAPES = {"skinny_mlp": (1, 1024)}
# A real photograph for the top-1 checks, from Debian's python-matplotlib-data
# (scripts/dev/install-deps.sh installs it): matplotlib's sample of Grace Hopper.
IMAGE = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"
# PyTorch 2.x exports through dynamo by default; these tests use the
# TorchScript exporter that Debian's 1.13 has (opset 13, BatchNorm preserved).
LEGACY_EXPORTER = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}


def load_image():
    """The photo as torchvision's ImageNet preprocessing makes it: resize the
    short side to 256, center-crop 224, scale to [0, 1], normalize per channel."""
    from PIL import Image
    image = Image.open(IMAGE).convert("RGB")
    w, h = image.size
    scale = 256 / min(w, h)
    image = image.resize((round(w * scale), round(h * scale)), Image.BILINEAR)
    w, h = image.size
    left, top = (w - 224) // 2, (h - 224) // 2
    image = image.crop((left, top, left + 224, top + 224))
    x = np.asarray(image, dtype=np.float32) / 255.0
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32)
    x = (x - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def paths(outdir, name):
    return (os.path.join(outdir, name + ".onnx"),
            os.path.join(outdir, name + ".input.pb"),
            os.path.join(outdir, name + ".output.pb"))


def save_tensor(array, name, path):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array), name=name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(tensor.SerializeToString())
    os.replace(tmp, path)


def calibrate_batchnorm(model, batches=2, batch_size=8):
    """Gives BatchNorm layers the statistics and affine terms of a trained net.

    Freshly initialized BatchNorm in eval mode is an identity (mean 0, var 1,
    gamma 1, beta 0), so with weights=None activations drift in scale with depth:
    mobilenet_v2's logits come out ~1e-9, which any sane atol would pass
    unchecked. Here gamma/beta get random values and the running statistics are
    measured on random inputs (cumulative average, train mode), as training
    would leave them. Activations then stay O(1) through the net, the logits are
    O(1), and the BatchNorm folded into each Conv (torch's exporter folds it in
    eval mode) carries a real per-channel scale and shift. Deterministic: runs
    under the caller's torch.manual_seed.
    """
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
            bn.reset_running_stats()
            bn.momentum = None  # cumulative moving average over the batches below
        model.train()
        for _ in range(batches):
            model(torch.randn(batch_size, *INPUT_SHAPE[1:]))


def export(name, outdir, force=False, check=True, batch=1):
    """Exports MODELS[name] at `batch` (files NAME_bB.* when batch > 1)."""
    stem_name = name if batch == 1 else "%s_b%d" % (name, batch)
    model_path, input_path, output_path = paths(outdir, stem_name)
    stem = os.path.join(outdir, stem_name)
    image_model = name not in INPUT_SHAPES and batch == 1 and os.path.exists(IMAGE)
    complete = (model_path, input_path, output_path) + (
        (stem + ".image.pb", stem + ".image_output.pb") if image_model else ())
    if not force and all(os.path.exists(p) for p in complete):
        print("%s: up to date" % name)
        return
    start = time.time()
    torch.manual_seed(0)
    model = MODELS[name](weights=None)
    calibrate_batchnorm(model)
    model.eval()

    # The input: a fixed-seed standard normal, the scale of a normalized image.
    rng = np.random.default_rng(0)
    shape = INPUT_SHAPES.get(name, INPUT_SHAPE)
    x = rng.standard_normal((batch,) + tuple(shape[1:]), dtype=np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()

    tmp_model = model_path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, torch.from_numpy(x), tmp_model,
                          opset_version=OPSET,
                          input_names=["input"], output_names=["output"],
                          do_constant_folding=True,
                          # Keep BatchNormalization nodes (eval mode would fold
                          # them into the convs): folding them is Tessel's job.
                          training=torch.onnx.TrainingMode.PRESERVE,
                          **LEGACY_EXPORTER)
    onnx.checker.check_model(onnx.load(tmp_model))
    save_tensor(x, "input", input_path)
    save_tensor(y, "output", output_path)
    # The photo and PyTorch's output on it, for the top-1 agreement check.
    if image_model:
        image = load_image()
        with torch.no_grad():
            image_y = model(torch.from_numpy(image)).numpy()
        save_tensor(image, "input", stem + ".image.pb")
        save_tensor(image_y, "output", stem + ".image_output.pb")
    os.replace(tmp_model, model_path)  # last: the .onnx marks a complete set

    onnx_model = onnx.load(model_path)
    ops = sorted({n.op_type for n in onnx_model.graph.node})
    print("%s: exported in %.1fs, output %s, max|y|=%.3g, ops: %s" % (
        stem_name, time.time() - start, tuple(y.shape), float(np.abs(y).max()), " ".join(ops)))
    if check:
        verify(stem_name, onnx_model, x, y)


def verify(name, onnx_model, x, y):
    """Evaluates the exported graph in float64 (numpy_ref) and compares PyTorch's
    fp32 output with it: proves the .onnx computes what PyTorch computed, and
    shows the size of an fp32 implementation's own error on this model."""
    (exact,) = numpy_ref.run(onnx_model, {"input": x})
    abs_err, rel_err = numpy_ref.errors(y, exact)
    print("%s: PyTorch fp32 vs float64 evaluation of the .onnx: max_abs_err=%.3g "
          "max_rel_err=%.3g" % (name, abs_err, rel_err))
    if not np.allclose(y, exact, rtol=1e-3, atol=1e-4):
        raise SystemExit("%s: the exported .onnx does not compute PyTorch's output" % name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: %s" % ", ".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export even if present")
    ap.add_argument("--batch", type=int, default=1,
                    help="batch size (files are NAME_bN.* when N > 1)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the float64 numpy evaluation of each exported model")
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error("unknown model(s): %s" % ", ".join(unknown))
    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in names:
        export(name, args.outdir, args.force, not args.no_check, args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
