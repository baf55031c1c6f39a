#!/usr/bin/python3
"""Exports the model-test references: torchvision models and transformers as
ONNX plus a fixed input and PyTorch's own output on it.

    /usr/bin/python3 export_models.py OUTDIR [--models resnet18,...] [--force]

For each model NAME it writes OUTDIR/NAME.onnx, OUTDIR/NAME.input.pb (the first
graph input), OUTDIR/NAME.input_1.pb ... (further inputs, e.g. BERT's attention
mask) and OUTDIR/NAME.output.pb (ONNX TensorProto files, each named as its
graph input/output). Existing complete sets are kept unless --force.
Weights are random but deterministic: torch.manual_seed(0) before each model is
built (torchvision's weights=None; prepare() makes their statistics those of a
trained net). Needs Debian's python3-torch, python3-torchvision and
python3-onnx (run with /usr/bin/python3).

The models:
- torchvision CNNs (input "input" f32[1,3,224,224], output "output", opset 13)
  and skinny_mlp;
- torchvision vit_b_16, convnext_tiny and swin_t, exported at opset 17
  (LayerNormalization as one node, as a user exports them today; swin_t's
  window mask is ScatterND on constants, its attention dropout a training-
  mode Dropout with ratio 0 and a mask output),
  and densenet121 (standalone BatchNorms after its concats);
- transformers (transformer_models.py), at opset 17 unless the name says
  _opset13 (LayerNorm decomposed into ReduceMean, Sub, Pow, Sqrt, Div):
  bert_base (12 layers, width 768, 12 heads, sequence 128; inputs "input"
  f32[1,128,768] and "attention_mask" f32[1,128], its last quarter padding)
  and gpt2 (12 pre-LN blocks, width 768, 12 heads, sequence 128, vocabulary
  50257; input "input_ids" int64[1,128], output the logits); bert_tiny and
  gpt2_tiny are the same with 2 layers, width 256 and 4 heads (head dim 64,
  sequence 128; gpt2_tiny's vocabulary 1001), sized for the CPU tier in CI;
- torchvision's semantic segmentation models lraspp_mobilenet_v3_large,
  fcn_resnet50 and deeplabv3_mobilenet_v3_large (opset 13, no auxiliary
  head, weights_backbone=None; the dict they return wrapped so that the
  graph's one output is its 'out' tensor, the per-pixel logits of 21
  classes at the input's size: bilinear Resize, align_corners=False),
  at SEGMENTATION_SHAPE to keep the CPU tier short;
- yolo_detector (YoloDetector): a YOLO-style detector with TopK and
  NonMaxSuppression (opset 13), its output's rows data dependent.
Without --models, the models ctest tests are exported (DEFAULT_MODELS:
everything but the full-size transformers).
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
import transformer_models  # noqa: E402


def skinny_mlp(weights=None):
    """A batch-1 MLP: every GEMM has M = 1, the skinny shape where a 16x16x16
    fragment wastes 15/16 of the Tensor Core (8x32x16 fits better)."""
    del weights
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                               torch.nn.Linear(4096, 1024))


class SegmentationOut(torch.nn.Module):
    """A torchvision segmentation model whose output is its dict's 'out'
    tensor (N, classes, H, W): the ONNX graph's one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def segmentation(constructor):
    """constructor(weights=None) building a torchvision segmentation model
    without pretrained backbone weights and without the auxiliary head."""
    def build(weights=None):
        return SegmentationOut(constructor(weights=weights, weights_backbone=None,
                                           aux_loss=False))
    build.__name__ = constructor.__name__
    return build


class YoloDetector(torch.nn.Module):
    """A YOLO-style single-stage detector: a conv backbone to a 10x10 map
    (stride 16 on 160x160), a 1x1 head predicting per cell a box (tx, ty, tw,
    th: center sigmoid(t) + cell, size exp(t) * anchor) and CLASSES class
    logits; decoded boxes, each cell's best class and score (sigmoid, max),
    the CANDIDATES best cells (TopK), class-agnostic NMS
    (torchvision.ops.nms: ONNX NonMaxSuppression) and the first MAX_DETECTIONS
    kept. Output [detections, 6]: x1, y1, x2, y2, score, class, as many rows
    as NMS keeps (data dependent).

    The head adds a fixed prior per cell and channel, as trained detectors
    carry one (biases): each cell's class logit on its own level (100 levels
    0.04 apart), box sizes 16, 32 or 48, so that the decisions (which cells
    are candidates, their order, which boxes overlap beyond the IoU
    threshold) keep a margin that f16 storage cannot cross
    (detector_margins, checked at export); the learned part is scaled to a
    few hundredths of it."""

    GRID, STRIDE, ANCHOR, CLASSES = 10, 16, 16.0, 4
    CANDIDATES, MAX_DETECTIONS, IOU = 40, 20, 0.4

    def __init__(self, weights=None):
        del weights
        super().__init__()
        layers, channels = [], 3
        for width in (16, 32, 64, 64):
            layers += [torch.nn.Conv2d(channels, width, 3, 2, 1, bias=False),
                       torch.nn.BatchNorm2d(width), torch.nn.ReLU()]
            channels = width
        self.backbone = torch.nn.Sequential(*layers)
        self.head = torch.nn.Conv2d(channels, 4 + self.CLASSES, 1)
        with torch.no_grad():
            self.head.weight.mul_(0.01)
            self.head.bias.zero_()
        cells = self.GRID * self.GRID
        rng = np.random.default_rng(7)
        prior = np.zeros((4 + self.CLASSES, cells), np.float32)
        prior[2:4] = np.log(rng.choice([1.0, 2.0, 3.0], cells))[None, :]
        levels = rng.permutation(np.linspace(-2.0, 2.0, cells))
        best = rng.integers(0, self.CLASSES, cells)
        prior[4:] = (levels - 1.5 - rng.uniform(0, 1, (self.CLASSES, cells))).astype(np.float32)
        prior[4 + best, np.arange(cells)] = levels
        self.register_buffer("prior", torch.from_numpy(prior).reshape(1, -1, self.GRID, self.GRID))
        ys, xs = np.meshgrid(np.arange(self.GRID), np.arange(self.GRID), indexing="ij")
        self.register_buffer("grid", torch.from_numpy(
            np.stack([xs.reshape(-1), ys.reshape(-1)], 1).astype(np.float32)))

    def candidates(self, x):
        """Every cell's decoded box [cells, 4] and best score and class."""
        p = (self.head(self.backbone(x)) + self.prior).flatten(2)[0].transpose(0, 1)
        xy = (p[:, 0:2].sigmoid() + self.grid) * self.STRIDE
        wh = p[:, 2:4].exp() * self.ANCHOR
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], 1)
        scores, labels = p[:, 4:].sigmoid().max(1)
        return boxes, scores, labels

    def forward(self, x):
        boxes, scores, labels = self.candidates(x)
        top, index = scores.topk(self.CANDIDATES)
        boxes, labels = boxes[index], labels[index]
        keep = torchvision.ops.nms(boxes, top, self.IOU)[:self.MAX_DETECTIONS]
        return torch.cat([boxes[keep], top[keep, None], labels[keep, None].float()], 1)


def detector_margins(module, x):
    """The detector's decision margins on input x (PyTorch fp32): the least
    gap between the scores of the candidates and the next cell (TopK's set
    and NMS's order), and the least distance of a candidate pair's IoU from
    the threshold (what NMS suppresses)."""
    with torch.no_grad():
        boxes, scores, _ = module.candidates(torch.from_numpy(x))
    order = torch.argsort(scores, descending=True)[:module.CANDIDATES + 1]
    s = scores[order].numpy().astype(np.float64)
    b = boxes[order[:module.CANDIDATES]].numpy().astype(np.float64)
    x0, y0 = np.maximum(b[:, None, 0], b[None, :, 0]), np.maximum(b[:, None, 1], b[None, :, 1])
    x1, y1 = np.minimum(b[:, None, 2], b[None, :, 2]), np.minimum(b[:, None, 3], b[None, :, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    iou = inter / (area[:, None] + area[None, :] - inter)
    pairs = iou[np.triu_indices(len(b), 1)]
    return float(np.min(s[:-1] - s[1:])), float(np.min(np.abs(pairs - module.IOU)))


# Image classifiers (and skinny_mlp, and the segmentation models):
# name -> constructor(weights=None).
MODELS = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "squeezenet1_1": torchvision.models.squeezenet1_1,
    "skinny_mlp": skinny_mlp,
    "densenet121": torchvision.models.densenet121,
    "vit_b_16": torchvision.models.vit_b_16,
    "convnext_tiny": torchvision.models.convnext_tiny,
    "swin_t": torchvision.models.swin_t,
    "resnet18_opset18": torchvision.models.resnet18,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
    "efficientnet_v2_s": torchvision.models.efficientnet_v2_s,
    "mobilenet_v3_large": torchvision.models.mobilenet_v3_large,
    "resnet18_dynamic": torchvision.models.resnet18,
    "resnet18_dynamic_opset18": torchvision.models.resnet18,
    "lraspp_mobilenet_v3_large": segmentation(
        torchvision.models.segmentation.lraspp_mobilenet_v3_large),
    "fcn_resnet50": segmentation(torchvision.models.segmentation.fcn_resnet50),
    "deeplabv3_mobilenet_v3_large": segmentation(
        torchvision.models.segmentation.deeplabv3_mobilenet_v3_large),
    "yolo_detector": YoloDetector,
}
# Detectors: their output's rows are data dependent (NonMaxSuppression).
DETECTORS = ("yolo_detector",)
# The least decision margins detector_margins must find (export fails
# otherwise): f16 storage moves a score near 1 by ~2.4e-4 (u/2) and its
# logit by about as much; a box edge of ~100 by ~0.05, an IoU by ~1e-3.
MIN_SCORE_GAP, MIN_IOU_MARGIN = 2e-3, 2e-2
# The segmentation models: no top-1 image reference (their output is a map).
SEGMENTATION = ("lraspp_mobilenet_v3_large", "fcn_resnet50", "deeplabv3_mobilenet_v3_large")
# Models exported with a dynamic batch dimension (dynamic_axes), as
# torch.onnx.export users commonly do; besides NAME.input.pb / NAME.output.pb
# (batch 1) they get NAME_bB.input.pb / NAME_bB.output.pb for each B of
# PROFILE_BATCHES, the references of an engine with batch profiles
# (check_profiles.py).
DYNAMIC_BATCH = ("resnet18_dynamic", "resnet18_dynamic_opset18")
PROFILE_BATCHES = (2, 4, 8)
# Transformers: name -> (transformer_models config, ONNX opset).
TRANSFORMERS = {
    "bert_base": ("bert", 17),
    "bert_base_opset13": ("bert", 13),
    "bert_tiny": ("bert_tiny", 17),
    "bert_tiny_opset13": ("bert_tiny", 13),
    "gpt2": ("gpt2", 17),
    "gpt2_tiny": ("gpt2_tiny", 17),
    "gpt2_tiny_opset18": ("gpt2_tiny", 18),
}
ALL_MODELS = list(MODELS) + list(TRANSFORMERS)
# What ctest tests (its fixtures export one model each): the full-size
# transformers are for the GPU machine (--models), and so are EfficientNetV2-S
# (the bench's, 21 M parameters) and the opset-18 exports (current PyTorch's default opset; Debian's PyTorch 1.13 exports
# opset 17 at most).
DEFAULT_MODELS = [n for n in ALL_MODELS
                  if n not in ("bert_base", "bert_base_opset13", "gpt2", "resnet18_opset18",
                               "gpt2_tiny_opset18", "efficientnet_v2_s",
                               "resnet18_dynamic_opset18")]
OPSET = 13
# The transformer-era torchvision models at opset 17: LayerNormalization as one
# node, as PyTorch exports them for a user today.
OPSETS = {"vit_b_16": 17, "convnext_tiny": 17, "swin_t": 17, "resnet18_opset18": 18,
          "resnet18_dynamic_opset18": 18}
INPUT_SHAPE = (1, 3, 224, 224)  # batch 1 keeps the CPU-tier run short
# The segmentation models' input: smaller than the classifiers' (their convs
# run at stride 8 in fcn_resnet50's dilated ResNet) to keep the CPU tier short.
SEGMENTATION_SHAPE = (1, 3, 160, 160)
# The gammas of the residual branches' last BatchNorm (calibrate_batchnorm),
# where the classifiers' range (0.5-1.5) makes the net chaotic: fcn_resnet50
# keeps its dilated ResNet-50's 20x20 map to the end, with no global pool to
# average errors, and its f32 rounding grows 1.6e-6 (rms, relative) after
# layer1 to 7e-5 after layer4, so PyTorch's own fp32 output is 1.5e-4 from a
# float64 evaluation (above the fp32 atol), and f16 storage 0.26 on outputs of
# max 1.6 (the fp16 test's degenerate-reference guard fails). Trained ResNets'
# residual branches end in small gammas (torchvision's zero_init_residual
# starts them at 0); with 0.1-0.3, PyTorch fp32 vs float64 is 6.9e-6 and the
# f16-storage error 1.3e-2 on the same output scale.
RESIDUAL_GAMMA = {"fcn_resnet50": (0.1, 0.3)}
# Models whose input is not a 224x224 image.
INPUT_SHAPES = {"skinny_mlp": (1, 1024)}
INPUT_SHAPES.update({name: SEGMENTATION_SHAPE for name in SEGMENTATION + DETECTORS})
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


def input_path(outdir, name, index):
    """NAME.input.pb for the first graph input, NAME.input_I.pb for input I > 0."""
    return os.path.join(outdir, name + (".input.pb" if index == 0 else ".input_%d.pb" % index))


def save_tensor(array, name, path):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array), name=name)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(tensor.SerializeToString())
    os.replace(tmp, path)


def calibrate_batchnorm(model, shape=INPUT_SHAPE, residual_gamma=None, batches=2,
                        batch_size=8):
    """Gives BatchNorm layers the statistics and affine terms of a trained net.

    Freshly initialized BatchNorm in eval mode is an identity (mean 0, var 1,
    gamma 1, beta 0), so with weights=None activations drift in scale with depth:
    mobilenet_v2's logits come out ~1e-9, which any sane atol would pass
    unchecked. Here gamma/beta get random values and the running statistics are
    measured on random inputs of the model's input size (cumulative average,
    train mode), as training would leave them. Activations then stay O(1) through the net, the logits are
    O(1), and the BatchNorm folded into each Conv (torch's exporter folds it in
    eval mode) carries a real per-channel scale and shift. Deterministic: runs
    under the caller's torch.manual_seed.

    residual_gamma (lo, hi), if given, is the range of the gammas of the last
    BatchNorm of each ResNet residual branch (Bottleneck.bn3, BasicBlock.bn2),
    drawn after the others and before the statistics are measured (see
    RESIDUAL_GAMMA).
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
        if residual_gamma:
            for m in model.modules():
                if isinstance(m, torchvision.models.resnet.Bottleneck):
                    m.bn3.weight.uniform_(*residual_gamma)
                elif isinstance(m, torchvision.models.resnet.BasicBlock):
                    m.bn2.weight.uniform_(*residual_gamma)
        model.train()
        for _ in range(batches):
            model(torch.randn(batch_size, *shape[1:]))


def randomize_layer_norms(model):
    """Gives LayerNorms the affine terms of a trained net, as
    calibrate_batchnorm does for BatchNorm: initialized, gamma is 1 and beta 0,
    and a LayerNorm kernel that dropped or misplaced them (a per-row instead
    of a per-channel broadcast) would pass unnoticed."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)


def prepare(name, model):
    """Makes a freshly built torchvision model's function that of a trained
    one where its initialization would leave it degenerate."""
    calibrate_batchnorm(model, INPUT_SHAPES.get(name, INPUT_SHAPE), RESIDUAL_GAMMA.get(name))
    randomize_layer_norms(model)
    with torch.no_grad():
        if name == "vit_b_16":
            # torchvision zero-initializes the classification head: every
            # logit would be 0 whatever the rest of the net computes.
            head = model.heads.head
            head.weight.normal_(0.0, head.in_features ** -0.5)
        if name == "convnext_tiny":
            # Each block's output is scaled by a layer scale initialized to
            # 1e-6: the blocks would add 1e-6 of their output to the residual
            # stream and an error in them would not show. Trained ConvNeXts
            # have scales of order 0.1-1.
            for m in model.modules():
                if isinstance(m, torchvision.models.convnext.CNBlock):
                    m.layer_scale.uniform_(0.1, 0.5)


def build(name, batch, rng):
    """(module in eval mode, [(graph input name, array)], opset) for NAME."""
    torch.manual_seed(0)
    if name in TRANSFORMERS:
        config_name, opset = TRANSFORMERS[name]
        config = transformer_models.CONFIGS[config_name]
        seq = config["seq"]
        if config_name.startswith("bert"):
            module = transformer_models.explicit_encoder(
                transformer_models.transformer_encoder(config), batch, config)
            x = rng.standard_normal((batch, seq, config["hidden"]), dtype=np.float32)
            mask = transformer_models.padding_mask(batch, seq).numpy()
            inputs = [("input", x), ("attention_mask", mask)]
        else:
            module = transformer_models.gpt2_decoder(config)
            inputs = [("input_ids", rng.integers(0, config["vocab"], (batch, seq), dtype=np.int64))]
        randomize_layer_norms(module)
        return module.eval(), inputs, opset
    module = MODELS[name](weights=None)
    prepare(name, module)
    # The input: a fixed-seed standard normal, the scale of a normalized image.
    shape = INPUT_SHAPES.get(name, INPUT_SHAPE)
    x = rng.standard_normal((batch,) + tuple(shape[1:]), dtype=np.float32)
    return module.eval(), [("input", x)], OPSETS.get(name, OPSET)


def export(name, outdir, force=False, check=True, batch=1):
    """Exports NAME at `batch` (files NAME_bB.* when batch > 1)."""
    stem_name = name if batch == 1 else "%s_b%d" % (name, batch)
    stem = os.path.join(outdir, stem_name)
    model_path, output_path = stem + ".onnx", stem + ".output.pb"
    image_model = name in MODELS and name not in INPUT_SHAPES and batch == 1 and \
        os.path.exists(IMAGE)
    dynamic = name in DYNAMIC_BATCH
    extra_batches = [(b, "%s_b%d" % (stem, b)) for b in PROFILE_BATCHES] if dynamic else []
    complete = (model_path, input_path(outdir, stem_name, 0), output_path) + (
        (stem + ".image.pb", stem + ".image_output.pb") if image_model else ()) + tuple(
        extra + suffix for _, extra in extra_batches for suffix in (".input.pb", ".output.pb"))
    if not force and all(os.path.exists(p) for p in complete):
        print("%s: up to date" % stem_name)
        return
    start = time.time()
    module, inputs, opset = build(name, batch, np.random.default_rng(0))
    args = tuple(torch.from_numpy(x) for _, x in inputs)
    with torch.no_grad():
        y = module(*args).numpy()
    if name in DETECTORS:
        gap, iou_margin = detector_margins(module, inputs[0][1])
        print("%s: %d detections; decision margins: score gap %.3g, IoU %.3g from the threshold"
              % (stem_name, y.shape[0], gap, iou_margin))
        if gap < MIN_SCORE_GAP or iou_margin < MIN_IOU_MARGIN:
            raise SystemExit("%s: decision margins below %g / %g: an f16 engine could decide "
                             "otherwise" % (stem_name, MIN_SCORE_GAP, MIN_IOU_MARGIN))

    tmp_model = model_path + ".tmp"
    # Traced with gradients enabled: under no_grad, nn.MultiheadAttention
    # (vit_b_16) takes its fused fast path, which no ONNX opset can express.
    # The other exports are the same either way.
    torch.onnx.export(module, args, tmp_model,
                      opset_version=opset,
                      input_names=[n for n, _ in inputs], output_names=["output"],
                      do_constant_folding=True,
                      # Keep BatchNormalization nodes (eval mode would fold
                      # them into the convs): folding them is Tessel's job.
                      training=torch.onnx.TrainingMode.PRESERVE,
                      **({"dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}}}
                         if dynamic else {}),
                      **LEGACY_EXPORTER)
    onnx.checker.check_model(onnx.load(tmp_model))
    for i, (input_name, x) in enumerate(inputs):
        save_tensor(x, input_name, input_path(outdir, stem_name, i))
    save_tensor(y, "output", output_path)
    if torch.cuda.is_available():
        torch_fp16_error(module, args, y, stem + ".torch_fp16_error.txt")
    # The photo and PyTorch's output on it, for the top-1 agreement check.
    if image_model:
        image = load_image()
        with torch.no_grad():
            image_y = module(torch.from_numpy(image)).numpy()
        save_tensor(image, "input", stem + ".image.pb")
        save_tensor(image_y, "output", stem + ".image_output.pb")
    # The references at the other batch sizes (the same seed's normal inputs).
    for extra_batch, extra in extra_batches:
        x = np.random.default_rng(extra_batch).standard_normal(
            (extra_batch,) + inputs[0][1].shape[1:], dtype=np.float32)
        with torch.no_grad():
            extra_y = module(torch.from_numpy(x)).numpy()
        save_tensor(x, "input", extra + ".input.pb")
        save_tensor(extra_y, "output", extra + ".output.pb")
    onnx_model = onnx.load(tmp_model)
    ops = sorted({n.op_type for n in onnx_model.graph.node})
    print("%s: exported in %.1fs (opset %d), output %s, max|y|=%.3g, ops: %s" % (
        stem_name, time.time() - start, opset, tuple(y.shape), float(np.abs(y).max()),
        " ".join(ops)))
    if check:
        verify(stem_name, onnx_model, dict(inputs), y)
    os.replace(tmp_model, model_path)  # last: the .onnx marks a complete, checked set


def torch_fp16_error(module, args, y, path):
    """PyTorch's own fp16 error: the module in .half() on the GPU, its float
    inputs rounded to f16, against its fp32 output `y` (max abs). The
    transformer issue bounds Tessel's fp16 error by twice it;
    run_model_test.py reports the ratio. Written to PATH only where CUDA is
    available (the GPU suite); CI's model tests use the f16-storage
    emulation (run_model_test.py's TOLERANCES)."""
    import copy
    try:
        half = copy.deepcopy(module).cuda().half().eval()
        cast = tuple(a.cuda().half() if a.is_floating_point() else a.cuda() for a in args)
        with torch.no_grad():
            out = half(*cast).float().cpu().numpy()
    except Exception as e:  # a module that does not run in f16 on the GPU
        print("%s: no PyTorch fp16 reference: %s" % (path, str(e).splitlines()[0]))
        return
    error = float(np.abs(out.astype(np.float64) - y.astype(np.float64)).max())
    with open(path, "w") as f:
        f.write("%.6g\n" % error)


def verify(name, onnx_model, feeds, y):
    """Evaluates the exported graph in float64 (numpy_ref) and compares PyTorch's
    fp32 output with it: proves the .onnx computes what PyTorch computed, and
    shows the size of an fp32 implementation's own error on this model."""
    start = time.time()
    (exact,) = numpy_ref.run(onnx_model, feeds)
    abs_err, rel_err = numpy_ref.errors(y, exact)
    print("%s: PyTorch fp32 vs float64 evaluation of the .onnx: max_abs_err=%.3g "
          "max_rel_err=%.3g (%.1fs)" % (name, abs_err, rel_err, time.time() - start))
    if not np.allclose(y, exact, rtol=1e-3, atol=1e-4):
        raise SystemExit("%s: the exported .onnx does not compute PyTorch's output" % name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated subset of: %s (default: %s)" % (
                        ", ".join(ALL_MODELS), ", ".join(DEFAULT_MODELS)))
    ap.add_argument("--force", action="store_true", help="re-export even if present")
    ap.add_argument("--batch", type=int, default=1,
                    help="batch size (files are NAME_bN.* when N > 1)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the float64 numpy evaluation of each exported model")
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in ALL_MODELS]
    if unknown:
        ap.error("unknown model(s): %s" % ", ".join(unknown))
    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for name in names:
        export(name, args.outdir, args.force, not args.no_check, args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
