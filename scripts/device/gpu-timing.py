#!/usr/bin/env python3
"""First figures on the GPU machine: ResNet-50 FP16 batch-1 latency and
batch-256 throughput, Tessel beside PyTorch in the same run, plus the count of
HMMA instructions in the SASS of the engine's conv kernels.

    python3 scripts/device/gpu-timing.py --bin BUNDLE/bin --models DIR --work DIR

DIR (--models) is export_models.py's output; resnet50_b256 is exported here if
missing. Tessel is timed by `tessel-run --iterations N` (median wall time of
run(), which includes copying the input to the GPU and the output back);
PyTorch (torchvision's resnet50, the same weights, .half(), channels_last) by
CUDA events around the forward with the input already on the GPU, eager and
as a CUDA graph replay. Prints one `resnet50 ...` line per figure.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))


def tessel_median_ms(bin_dir, engine, tier, iterations):
    cmd = [os.path.join(bin_dir, "tessel-run"), engine, "--random", "--tier", tier,
           "--iterations", str(iterations)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    print(proc.stdout.strip())
    match = re.search(r"median ([0-9.]+) ms", proc.stdout)
    if proc.returncode != 0 or not match:
        raise SystemExit("tessel-run failed: " + " ".join(cmd))
    return float(match.group(1))


def torch_times_ms(batch, iterations):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval().cuda().half()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device="cuda").half().to(
        memory_format=torch.channels_last)

    def measure(fn):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(iterations):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    with torch.no_grad():
        eager = measure(lambda: model(x))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x)
        replay = measure(graph.replay)
    return eager, replay


def compile_engine(bin_dir, model, engine):
    cmd = [os.path.join(bin_dir, "tessel-compile"), model, "-o", engine, "--precision", "fp16"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    print(proc.stdout.strip())
    if proc.returncode != 0:
        raise SystemExit("tessel-compile failed: " + " ".join(cmd))


def hmma_count(bin_dir, engine, work):
    """Dumps the engine's sm_90 cubins and counts HMMA in their SASS."""
    dump = os.path.join(work, "modules")
    os.makedirs(dump, exist_ok=True)
    proc = subprocess.run([os.path.join(bin_dir, "tessel-inspect"), engine, "--dump-modules",
                           dump], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    if proc.returncode != 0:
        return "tessel-inspect --dump-modules failed: " + proc.stdout.strip()[-300:]
    counts = []
    for cubin in sorted(glob.glob(os.path.join(dump, "*sm_90*.cubin"))):
        sass = subprocess.run(["cuobjdump", "-sass", cubin], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True).stdout
        counts.append("%s: %d HMMA" % (os.path.basename(cubin), sass.count("HMMA")))
    return "; ".join(counts) if counts else "no sm_90 cubins in the engine"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    b256 = os.path.join(args.models, "resnet50_b256.onnx")
    if not os.path.exists(b256):
        subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "tests", "models",
                                                     "export_models.py"), args.models,
                        "--models", "resnet50", "--batch", "256", "--no-check"], check=True)

    for batch, onnx_path in ((1, os.path.join(args.models, "resnet50.onnx")), (256, b256)):
        engine = os.path.join(args.work, "resnet50_b%d.fp16.tsl" % batch)
        compile_engine(args.bin, onnx_path, engine)
        iterations = args.iterations if batch == 1 else max(10, args.iterations // 5)
        tessel = tessel_median_ms(args.bin, engine, "tc", iterations)
        eager, replay = torch_times_ms(batch, iterations)
        if batch == 1:
            print("resnet50 b1 fp16 latency: tessel %.3f ms, pytorch eager %.3f ms, "
                  "pytorch cuda-graph %.3f ms; ratio (pytorch graph / tessel) %.2f" %
                  (tessel, eager, replay, replay / tessel))
        else:
            print("resnet50 b256 fp16 throughput: tessel %.0f img/s (%.2f ms), pytorch eager "
                  "%.0f img/s, pytorch cuda-graph %.0f img/s; ratio (tessel / pytorch graph) %.2f" %
                  (256e3 / tessel, tessel, 256e3 / eager, 256e3 / replay, replay / tessel))
        if batch == 1:
            print("sass of the resnet50 engine's kernels: " + hmma_count(args.bin, engine,
                                                                         args.work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
