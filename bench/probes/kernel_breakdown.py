#!/usr/bin/env python3
"""Where a model's time goes, kernel by kernel, for Tessel and for
torch.compile, on the GPU machine.

  kernel_breakdown.py --model bert_base --batch 8 --engine E.tsl \
      --bench tessel-bench [--tier tc] [--out DIR]

Tessel: Nsight Compute's gpu__time_duration of every kernel of one
inference (`tessel-bench --no-graph --iterations 1`), clocks and caches as
in a normal run (--clock-control none --cache-control none), so the sum is
the kernels' time without launch gaps. torch.compile (default mode, f16):
torch.profiler's device time of each kernel over ITER calls, divided by
ITER. Both print kernels grouped by name, largest first, and the total.
"""
import argparse
import collections
import csv
import io
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def tessel_kernels(args):
    tool = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    cmd = [tool, "--metrics", "gpu__time_duration.sum", "--csv", "--clock-control", "none",
           "--cache-control", "none", args.bench, args.engine, "--tier", args.tier,
           "--no-graph", "--rotate", "1", "--warmup", "1", "--iterations", "1"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=900).stdout
    rows = [r for r in csv.reader(io.StringIO(out[out.find('"ID"'):]))]
    if not rows:
        print(out[-3000:])
        return []
    head = rows[0]
    name_i, value_i, unit_i = head.index("Kernel Name"), head.index("Metric Value"), \
        head.index("Metric Unit")
    kernels = []
    for r in rows[1:]:
        if len(r) <= value_i:
            continue
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
                 "ms": 1e3}[r[unit_i]]
        kernels.append((r[name_i], float(r[value_i].replace(",", "")) * scale))
    # Two inferences ran (warmup and the timed one): keep the last.
    half = len(kernels) // 2
    return kernels[half:]


def torch_kernels(args):
    import torch
    import suites
    module, shape = suites.build_torch_model(args.model, args.batch)
    module = module.cuda().half().eval()
    x = suites.model_input(args.model, shape, "cuda", torch.float16)
    if len(shape) == 4:
        module = module.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    compiled = torch.compile(module)
    with torch.no_grad():
        for _ in range(3):
            compiled(x)
        torch.cuda.synchronize()
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.iterations):
                compiled(x)
            torch.cuda.synchronize()
    kernels = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels.append((e.name, e.device_time / args.iterations))
    return kernels


def report(title, kernels, out):
    groups = collections.defaultdict(lambda: [0, 0.0])
    for name, us in kernels:
        key = name.split("(")[0][:90]
        groups[key][0] += 1
        groups[key][1] += us
    total = sum(us for _, us in kernels)
    lines = ["%s: %d kernels, %.1f us" % (title, len(kernels), total)]
    for key, (count, us) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        lines.append("  %9.1f us %5.1f%% %4d x %s" % (us, 100 * us / max(total, 1e-9), count, key))
    text = "\n".join(lines)
    print(text, flush=True)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
            for name, us in kernels:
                f.write("%10.2f %s\n" % (us, name[:160]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--engine")
    ap.add_argument("--bench", default="tessel-bench")
    ap.add_argument("--tier", default="tc")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--out", default="")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    tag = "%s_b%d" % (args.model, args.batch)
    if args.engine:
        report("tessel " + tag, tessel_kernels(args),
               args.out and os.path.join(args.out, "kernels-tessel-%s.txt" % tag))
    if not args.no_torch:
        report("torch.compile " + tag, torch_kernels(args),
               args.out and os.path.join(args.out, "kernels-torch-%s.txt" % tag))


if __name__ == "__main__":
    main()
