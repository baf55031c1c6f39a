#!/usr/bin/env python3
"""The tc-sm90 tilings two builds of tessel-codegen-gemm pick, side by side,
on the suites' problems: DeepBench's GEMMs, ResNet-50's convs at batch 1
and 256, the transformer GEMMs at batch 1 (128 and 197 rows). Prints the
problems whose pick differs and the count.

  compare-tile-choices.py OLD_TOOL NEW_TOOL [BENCH_DATA] [--tier tc90]

BENCH_DATA holds deepbench-gemm.csv and resnet50-convs.csv (default
../shared/bench beside the repository).
"""
import argparse
import csv
import os
import re
import subprocess


def pick(tool, problem, tier):
    out = subprocess.run([tool] + problem + ["--tier", tier, "--emit", "ir"],
                         capture_output=True, text=True).stdout
    head = out.split("\n")[0]
    if not head.startswith("//"):
        return "none"
    field = lambda k: re.search(k + r"=(\S+)", head).group(1)
    return "%s warps=%s raster=%s stages=%s grid=%s" % (
        field("tile"), field("warps"), field("raster"), field("stages"), field("grid"))


def problems(data):
    rows = []
    for r in csv.DictReader(open(os.path.join(data, "deepbench-gemm.csv"))):
        p = ["--gemm", "%s,%s,%s" % (r["m"], r["n"], r["k"])]
        p += ["--trans-a"] if r["a_t"] == "true" else []
        p += ["--trans-b"] if r["b_t"] == "true" else []
        rows.append(p)
    for r in csv.DictReader(open(os.path.join(data, "resnet50-convs.csv"))):
        for batch in (1, 256):
            c = max(8, int(r["c"]))  # the first conv's 3 channels padded to 8
            rows.append(["--conv", "%d,%s,%s,%d,%s,%s,%s,%s,%s" % (
                batch, r["in_hw"], r["in_hw"], c, r["k"], r["kernel"], r["kernel"],
                r["stride"], r["pad"]), "--bias"])
    for m in (128, 197, 1024, 6304):
        for n, k in ((2304, 768), (3072, 768), (768, 3072), (768, 768)):
            rows.append(["--gemm", "%d,%d,%d" % (m, n, k), "--trans-b", "--c", "n"])
    return rows


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("data", nargs="?", default=os.path.join(root, "..", "shared", "bench"))
    ap.add_argument("--tier", default="tc90")
    args = ap.parse_args()
    seen, changed = set(), 0
    for p in problems(args.data):
        key = " ".join(p)
        if key in seen:
            continue
        seen.add(key)
        old, new = pick(args.old, p, args.tier), pick(args.new, p, args.tier)
        if old != new:
            changed += 1
            print("%-44s old %s\n%-44s new %s" % (key, old, "", new))
    print("%d problems, %d picks changed" % (len(seen), changed))


if __name__ == "__main__":
    main()
