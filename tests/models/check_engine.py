#!/usr/bin/python3
"""Checks what the graph pipeline must make of a CNN, on the compiled engine:

    /usr/bin/python3 check_engine.py --compile TESSEL_COMPILE --inspect TESSEL_INSPECT \\
        --model MODEL.onnx --work DIR [--precision fp16] [--io-layout nhwc --io-dtype f16]

- no BatchNormalization is left as a step (folded into the convolutions);
- transposes sit only at the graph boundary: the input conversion chain
  (cast / transpose / pad from a graph input) and the output chain (cast /
  transpose / slice / reshape into a graph output); none in between;
- every conv is NHWC with f16 input and weight and channel counts (input,
  output) that are multiples of 8, the Tensor Core multiple;
- the arena is smaller than the sum of all intermediate tensors;
- with --io-layout nhwc --io-dtype f16 (tessel-compile's options): the graph
  inputs and outputs are f16, the 4-D ones NHWC, and the boundary holds no
  transpose and no cast at all (the first conv's channel pad, 3 -> 8, stays:
  it is padding, not a conversion).
Prints the figures, then PASS or FAIL with every violation. Exit 0 / 1.
"""

import argparse
import json
import os
import subprocess
import sys

INPUT_CHAIN_OPS = {"cast", "transpose", "pad"}
OUTPUT_CHAIN_OPS = {"cast", "transpose", "slice", "reshape"}


def boundary_tensors(engine):
    steps = engine["steps"]
    producer = {out: s for s in steps for out in s["outputs"]}
    consumers = {}
    for s in steps:
        for i in s["inputs"]:
            consumers.setdefault(i, []).append(s)
    # Forward from the inputs through conversion-only steps.
    input_chain = set(engine["inputs"])
    frontier = list(input_chain)
    while frontier:
        t = frontier.pop()
        for s in consumers.get(t, []):
            if s["op"] in INPUT_CHAIN_OPS:
                for out in s["outputs"]:
                    if out not in input_chain:
                        input_chain.add(out)
                        frontier.append(out)
    # Backward from the outputs through conversion-only steps.
    output_chain = set(engine["outputs"])
    frontier = list(output_chain)
    while frontier:
        t = frontier.pop()
        s = producer.get(t)
        if s and s["op"] in OUTPUT_CHAIN_OPS:
            for i in s["inputs"]:
                if i >= 0 and i not in output_chain:
                    output_chain.add(i)
                    frontier.append(i)
    return input_chain, output_chain


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", required=True)
    ap.add_argument("--inspect", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--io-layout", choices=("model", "nhwc"), default="model")
    ap.add_argument("--io-dtype", choices=("model", "f16"), default="model")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    name = os.path.splitext(os.path.basename(args.model))[0]
    io = (args.io_layout, args.io_dtype) != ("model", "model")
    variant = args.precision + (".io_%s_%s" % (args.io_layout, args.io_dtype) if io else "")
    engine_path = os.path.join(args.work, name + "." + variant + ".structure.tsl")
    subprocess.run([args.compile, args.model, "-o", engine_path, "--precision", args.precision,
                    "--io-layout", args.io_layout, "--io-dtype", args.io_dtype], check=True)
    engine = json.loads(subprocess.run([args.inspect, engine_path, "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    tensors, steps = engine["tensors"], engine["steps"]
    input_chain, output_chain = boundary_tensors(engine)
    problems = []

    batch_norms = [s["location"] for s in steps if s["op"] == "batch_norm"]
    if batch_norms:
        problems.append("%d batch_norm steps remain: %s" % (len(batch_norms), batch_norms[:3]))

    transposes = [s for s in steps if s["op"] == "transpose"]
    inner = [s["location"] for s in transposes
             if s["inputs"][0] not in input_chain and s["outputs"][0] not in output_chain]
    if inner:
        problems.append("%d transposes between the boundary converts: %s" % (len(inner), inner[:5]))

    convs = [s for s in steps if s["op"] == "conv"]
    for s in convs:
        x, w, y = (tensors[s["inputs"][0]], tensors[s["inputs"][1]], tensors[s["outputs"][0]])
        where = s["location"]
        if s["attrs"].get("layout") != "NHWC":
            problems.append("%s: layout %s" % (where, s["attrs"].get("layout")))
        if x["dtype"] != "f16" or w["dtype"] != "f16":
            problems.append("%s: operands %s/%s, not f16" % (where, x["dtype"], w["dtype"]))
        group = s["attrs"].get("group", 1)
        if group == 1 and (x["shape"][-1] % 8 or y["shape"][-1] % 8):
            problems.append("%s: channels %d -> %d not multiples of 8"
                            % (where, x["shape"][-1], y["shape"][-1]))

    # The caller's format at the boundary, and nothing left to convert there.
    boundary = {}
    for s in steps:
        if (s["op"] in INPUT_CHAIN_OPS and s["outputs"][0] in input_chain or
                s["op"] in OUTPUT_CHAIN_OPS and s["outputs"][0] in output_chain):
            boundary[s["op"]] = boundary.get(s["op"], 0) + 1
    if io:
        for index in engine["inputs"] + engine["outputs"]:
            t = tensors[index]
            rank4 = len(t["shape"]) == 4
            if args.io_dtype == "f16" and t["dtype"] != "f16":
                problems.append("%s is %s, not f16" % (t["name"], t["dtype"]))
            if args.io_layout == "nhwc" and rank4 and t["layout"] != "NHWC":
                problems.append("%s has layout '%s', not NHWC" % (t["name"], t["layout"]))
        for op in ("transpose", "cast"):
            if boundary.get(op, 0):
                problems.append("%d %s steps at the boundary" % (boundary[op], op))

    arena, unplanned = engine["arena_size"], engine["arena_unplanned_size"]
    if not arena < unplanned:
        problems.append("arena %d is not smaller than the intermediates' sum %d" % (arena, unplanned))

    ops = {}
    for s in steps:
        ops[s["op"]] = ops.get(s["op"], 0) + 1
    print("%s at %s: %d steps %s" % (name, variant, len(steps),
                                      " ".join("%s=%d" % kv for kv in sorted(ops.items()))))
    for kind in ("inputs", "outputs"):
        for index in engine[kind]:
            t = tensors[index]
            print("  %s '%s': %s%s %s" % (kind[:-1], t["name"], t["dtype"], t["shape"], t["layout"]))
    print("  boundary steps: %s" % (" ".join("%s=%d" % kv for kv in sorted(boundary.items()))
                                    or "none"))
    print("  transposes: %d at the boundary, %d inside" % (len(transposes) - len(inner), len(inner)))
    print("  convs: %d (f16 NHWC, channels padded to 8: %s)"
          % (len(convs), "yes" if not any("conv" in p or ":" in p for p in problems) else "no"))
    print("  arena: %.2f MiB planned vs %.2f MiB sum of intermediates (%.1f%%), %d in place"
          % (arena / 2**20, unplanned / 2**20, 100.0 * arena / max(unplanned, 1),
             engine["arena_in_place"]))
    if problems:
        for p in problems:
            print("  problem: " + p)
        print("FAIL " + name)
        return 1
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
