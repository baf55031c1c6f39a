#!/usr/bin/python3
"""Top-1 agreement on a real photograph: the class Tessel's engine ranks first
on the image must be the class PyTorch (fp32) ranks first.

    /usr/bin/python3 check_top1.py --compile TESSEL_COMPILE --run TESSEL_RUN \\
        --data DIR --work DIR NAME [--precision fp16]

DIR holds NAME.onnx, NAME.image.pb and NAME.image_output.pb (export_models.py).
Also prints the top-5 of both and the largest logit difference.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--compile", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--precision", default="fp16")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    stem = os.path.join(args.data, args.name)
    engine = os.path.join(args.work, "%s.top1.%s.tsl" % (args.name, args.precision))
    out_dir = os.path.join(args.work, "%s.top1.%s" % (args.name, args.precision))
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([args.compile, stem + ".onnx", "-o", engine, "--precision", args.precision],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([args.run, engine, stem + ".image.pb", "--output-dir", out_dir],
                   check=True, stdout=subprocess.DEVNULL)
    ours = load(os.path.join(out_dir, "output_0.pb")).astype(np.float64).ravel()
    torch_logits = load(stem + ".image_output.pb").astype(np.float64).ravel()
    top5_ours, top5_torch = np.argsort(-ours)[:5], np.argsort(-torch_logits)[:5]
    print("%s at %s on the photo: top-5 tessel %s, pytorch %s; max |logit diff| %.3g "
          "(logit range %.3g)" % (args.name, args.precision, top5_ours.tolist(),
                                  top5_torch.tolist(), np.abs(ours - torch_logits).max(),
                                  np.ptp(torch_logits)))
    if top5_ours[0] != top5_torch[0]:
        print("FAIL %s: top-1 %d, PyTorch's is %d" % (args.name, top5_ours[0], top5_torch[0]))
        return 1
    print("PASS %s: top-1 class %d agrees" % (args.name, top5_ours[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
