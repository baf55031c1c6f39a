#!/usr/bin/python3
"""Checks that a model compiles for the GPU with every step on the GPU: no
step of the engine falls back to the CPU tier (a host round trip per step,
and no tessel_context_enqueue). Needs no GPU: only the compile runs.

    /usr/bin/python3 check_gpu_steps.py --compile TESSEL_COMPILE --model MODEL.onnx \\
        --work DIR [--precision fp16]

Runs tessel-compile for its default GPU targets with --require-gpu, which
fails (exit 3) naming each step without a GPU kernel ("no GPU kernel for OP"
at its ONNX node); without it the compile summary would count them
("GPU fallbacks to the CPU tier: N step(s)"). Prints the compile summary,
then `PASS NAME: 0 CPU steps` or `FAIL NAME: N CPU steps: op xCOUNT (first
nodes) ...`. Exit 0 / 1.
"""

import argparse
import collections
import os
import re
import subprocess
import sys

# tessel-compile's diagnostic per CPU-only step (compiler/EngineWriter.cpp):
#   error: NODE: no GPU kernel for OP (operands ...)
NO_GPU_KERNEL_RE = re.compile(r"^(?:error|warning): (.*?): no GPU kernel for (\S+)")
FALLBACKS_RE = re.compile(r"GPU fallbacks to the CPU tier: (\d+) step")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compile", required=True, help="path to tessel-compile")
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True, help="directory for the engine")
    ap.add_argument("--precision", choices=("fp16", "fp32"), default="fp16")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args(argv)

    name = os.path.splitext(os.path.basename(args.model))[0]
    if not os.path.isfile(args.model):
        print("FAIL %s: missing %s (run export_models.py first)" % (name, args.model))
        return 1
    os.makedirs(args.work, exist_ok=True)
    engine = os.path.join(args.work, "%s.%s.gpu.tsl" % (name, args.precision))
    cmd = [args.compile, args.model, "-o", engine, "--precision", args.precision,
           "--require-gpu", "-v"]
    print("$ " + " ".join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace", timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print("FAIL %s: tessel-compile timed out after %gs" % (name, args.timeout))
        return 1
    print(proc.stdout.strip())

    cpu_steps = collections.OrderedDict()  # op -> [nodes]
    for line in proc.stderr.splitlines():
        m = NO_GPU_KERNEL_RE.match(line.strip())
        if m:
            cpu_steps.setdefault(m.group(2), []).append(m.group(1))
    m = FALLBACKS_RE.search(proc.stdout)
    count = max(sum(len(v) for v in cpu_steps.values()), int(m.group(1)) if m else 0)
    if count:
        ops = "; ".join("%s x%d (%s%s)" % (op, len(nodes), ", ".join(nodes[:2]),
                                           ", ..." if len(nodes) > 2 else "")
                        for op, nodes in cpu_steps.items())
        print("FAIL %s: %d CPU step(s) in the %s GPU engine: %s" % (
            name, count, args.precision, ops or "see the summary above"))
        return 1
    if proc.returncode != 0:
        print("\n".join(proc.stderr.strip().splitlines()[-20:]))
        print("FAIL %s: tessel-compile exit %d" % (name, proc.returncode))
        return 1
    print("PASS %s: 0 CPU steps in the %s GPU engine" % (name, args.precision))
    return 0


if __name__ == "__main__":
    sys.exit(main())
