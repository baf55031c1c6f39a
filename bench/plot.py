#!/usr/bin/python3
"""Plots a results JSON of bench/run_bench.py; the PNGs go next to it.

    /usr/bin/python3 bench/plot.py RESULTS.json

  ratio-SUITE.png  peer_ms / tessel_ms per row, sorted, log scale, colored by
                   set, with the suite's geomean, the target and parity
  roofline.png     TFLOP/s against arithmetic intensity (FLOPs / the bytes
                   tessel-bench counts: inputs, outputs and weights), the
                   copy-bandwidth and cuBLAS-peak lines, Tessel (filled) and
                   peer (hollow) points
  speedup-SUITE.png  with run_bench.py --variant: HEAD's speedup over each
                   variant compiler per row (variant ms / HEAD ms, > 1: HEAD
                   faster), one panel per variant, sorted, log scale, with the
                   geomean and parity

Needs matplotlib (Debian's python3-matplotlib; scripts/dev/install-deps.sh).
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SUITE_MARKERS = {"gemm": "o", "conv": "s", "models": "D"}


def title(results, what):
    return "%s: %s, %s, commit %s" % (what, results.get("gpu") or "?",
                                      (results.get("date") or "?")[:10],
                                      (results.get("commit") or "?")[:12])


def plot_ratios(results, suite, rows, path):
    timed = sorted((r for r in rows if r.get("ratio")), key=lambda r: r["ratio"])
    if not timed:
        return False
    summary = results["summary"][suite]
    sets = sorted({r["set"] for r in timed})
    colors = {s: plt.cm.tab10(i % 10) for i, s in enumerate(sets)}
    fig, ax = plt.subplots(figsize=(max(6, min(16, len(timed) * 0.06 + 4)), 4.5))
    ax.bar(range(len(timed)), [r["ratio"] for r in timed], width=1.0,
           color=[colors[r["set"]] for r in timed])
    for s in sets:
        ax.bar([0], [0], color=colors[s], label="%s (%d)" % (s, sum(r["set"] == s for r in timed)))
    ax.set_yscale("log")
    ax.axhline(1.0, color="gray", lw=0.8, ls=":", label="parity")
    ax.axhline(summary["target"], color="red", lw=1.2, ls="--",
               label="target %.2f" % summary["target"])
    ax.axhline(summary["geomean_ratio"], color="black", lw=1.2,
               label="geomean %.3f" % summary["geomean_ratio"])
    ax.set_xlim(-0.5, len(timed) - 0.5)
    ax.set_xlabel("%s rows, sorted by ratio" % suite)
    ax.set_ylabel("peer ms / Tessel ms (> 1: Tessel faster)")
    if len(timed) <= 30:
        ax.set_xticks(range(len(timed)))
        ax.set_xticklabels([r["name"] for r in timed], rotation=90, fontsize=6)
    else:
        ax.set_xticks([])
    ax.set_title(title(results, suite), fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def plot_speedups(results, suite, rows, path):
    labels = sorted({label for r in rows for label in r.get("variants") or {}})
    panels = []
    for label in labels:
        timed = sorted((r for r in rows if (r.get("variants") or {}).get(label, {}).get("speedup")),
                       key=lambda r: r["variants"][label]["speedup"])
        if timed:
            panels.append((label, timed))
    if not panels:
        return False
    width = max(6, min(16, max(len(t) for _, t in panels) * 0.06 + 4))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 3.2 * len(panels)), squeeze=False)
    commits = results.get("variants") or {}
    for ax, (label, timed) in zip(axes[:, 0], panels):
        sets = sorted({r["set"] for r in timed})
        colors = {s: plt.cm.tab10(i % 10) for i, s in enumerate(sets)}
        speedups = [r["variants"][label]["speedup"] for r in timed]
        ax.bar(range(len(timed)), speedups, width=1.0, color=[colors[r["set"]] for r in timed])
        for s in sets:
            ax.bar([0], [0], color=colors[s],
                   label="%s (%d)" % (s, sum(r["set"] == s for r in timed)))
        ax.set_yscale("log")
        ax.axhline(1.0, color="gray", lw=0.8, ls=":", label="parity")
        g = (results["summary"][suite].get("variants") or {}).get(label, {}).get(
            "geomean_speedup")
        if g:
            ax.axhline(g, color="black", lw=1.2, label="geomean %.3f" % g)
        ax.set_xlim(-0.5, len(timed) - 0.5)
        commit = ((commits.get(label) or {}).get("commit") or "?").split()[0]
        ax.set_ylabel("%s ms / HEAD ms" % label, fontsize=8)
        ax.set_title("%s: HEAD (%s) over %s (%s), > 1: HEAD faster" % (
            suite, (results.get("commit") or "?")[:12], label, commit[:12]), fontsize=8)
        if len(timed) <= 30:
            ax.set_xticks(range(len(timed)))
            ax.set_xticklabels([r["name"] for r in timed], rotation=90, fontsize=6)
        else:
            ax.set_xticks([])
        ax.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("%s rows, sorted by speedup" % suite)
    fig.suptitle(title(results, suite + " before/after"), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def plot_roofline(results, path):
    points = []  # (suite, intensity, tessel TFLOP/s, peer TFLOP/s)
    for suite, rows in results["suites"].items():
        for r in rows:
            t = r.get("tessel") or {}
            if r.get("flops") and t.get("bytes") and t.get("tflops"):
                points.append((suite, r["flops"] / t["bytes"], t["tflops"],
                               (r.get("peer") or {}).get("tflops")))
    if not points:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 5))
    xs = [p[1] for p in points]
    lo, hi = min(xs) / 2, max(xs) * 2
    bw, peak = results.get("copy_gbps"), results.get("cublas_peak_tflops")
    if bw and peak:
        ridge = peak * 1e3 / bw
        grid = [lo, min(max(ridge, lo), hi), hi]
        ax.plot(grid, [min(peak, x * bw / 1e3) for x in grid], color="black", lw=1.2,
                label="roof: copy %.0f GB/s, cuBLAS %.0f TFLOP/s" % (bw, peak))
    for suite in SUITE_MARKERS:
        mine = [p for p in points if p[0] == suite]
        if not mine:
            continue
        marker = SUITE_MARKERS[suite]
        ax.scatter([p[1] for p in mine], [p[2] for p in mine], s=12, marker=marker,
                   color="tab:blue", alpha=0.7, label="Tessel %s" % suite)
        peer = [p for p in mine if p[3]]
        ax.scatter([p[1] for p in peer], [p[3] for p in peer], s=14, marker=marker,
                   facecolors="none", edgecolors="tab:orange", alpha=0.8,
                   label="peer %s" % suite)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOPs / bytes of inputs, outputs, weights)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title(results, "roofline"), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="major", lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    args = ap.parse_args(argv)
    with open(args.results) as f:
        results = json.load(f)
    outdir = os.path.dirname(os.path.abspath(args.results))
    written = []
    for suite, rows in results["suites"].items():
        path = os.path.join(outdir, "ratio-%s.png" % suite)
        if plot_ratios(results, suite, rows, path):
            written.append(path)
        path = os.path.join(outdir, "speedup-%s.png" % suite)
        if plot_speedups(results, suite, rows, path):
            written.append(path)
    path = os.path.join(outdir, "roofline.png")
    if plot_roofline(results, path):
        written.append(path)
    for path in written:
        print(path)
    if not written:
        print("plot: no timed rows in %s" % args.results)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
