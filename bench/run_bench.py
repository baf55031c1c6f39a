#!/usr/bin/env python3
"""Runs the benchmark suites of issue 5 on the GPU machine: Tessel (tessel-bench)
beside its PyTorch peer (bench/peers.py) in the same run, one results JSON.

    python3 bench/run_bench.py --bin BUNDLE/bin --data CSV_DIR --out DIR
        [--suites gemm,conv,models] [--limit N] [--models ROWS] [--iterations N] [--warmup N]
        [--time-budget S] [--jobs N] [--dry-run] [--ncu] [--variant LABEL=BINDIR ...]

For each selected suite (bench/suites.py): writes each row's ONNX model,
compiles them in parallel (wall time and exit status per row; a failure is a
row status, not a crash), times the engines with tessel-bench in batches
(--tier tc --rotate auto --json), then times the peer of each row over as
many rotated input sets as tessel-bench reported. Past --time-budget seconds
no new batch or row is started (those rows get status "skipped: time
budget"); torch.compile of ResNet-50 runs last, in a child process with a
time limit. --dry-run generates and compiles only (no GPU, no torch timing).
--ncu profiles a large GEMM, a ResNet-50 b256 3x3 conv and ResNet-50 b1 with
Nsight Compute into DIR/ncu-*.txt.

--variant LABEL=BINDIR (repeatable; a before/after comparison): every row is
also compiled by BINDIR/tessel-compile (another commit's compiler, same flags)
and its engine timed by the same tessel-bench process as this compiler's, right
after it (same batch, same rotation). row["variants"][LABEL] holds its compile
time and status and its timings; speedup = variant_ms / tessel_ms (> 1: this
compiler's engine faster). The summary gives per suite and variant the geomean
speedup and the geomean peer/variant ratio. BINDIR/../COMMIT names its commit.

Writes DIR/results.json ({date, gpu, driver, versions, commit, command,
copy_gbps, cublas_peak_tflops, suites: {suite: [row...]}, summary: {suite:
{...}}}) and prints one summary line per suite. ratio = peer_ms / tessel_ms
(> 1: Tessel faster); the models' ratio is against PyTorch's CUDA-graph replay.
"""

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suites  # noqa: E402

BATCH = 30  # engines per tessel-bench process, at most
# A batch is also cut when its estimated time passes BATCH_S: each row costs
# ROW_OVERHEAD_S plus its runs at a pessimistic PESSIMISTIC_TFLOPS.
BATCH_S, ROW_OVERHEAD_S, PESSIMISTIC_TFLOPS = 90.0, 0.3, 10.0
COMPILE_TIMEOUT_S = 300
BENCH_TIMEOUT_S = 240  # one tessel-bench process (a batch); a hang costs no more
# torch.compile runs only for these rows (it takes minutes per model).
COMPILE_PEER_ROWS = ("resnet50_b1", "resnet50_b256", "bert_base_b1", "bert_base_b8",
                     "vit_b_16_b1", "vit_b_16_b32", "gpt2_b1", "swin_t_b1",
                     "efficientnet_b0_b1", "efficientnet_b0_b32", "efficientnet_v2_s_b1",
                     "efficientnet_v2_s_b32", "mobilenet_v3_large_b1", "mobilenet_v3_large_b32")
COMPILE_PEER_MIN_S = 120  # do not start it with less budget left than this
# Nsight Compute targets: row name, kernels to profile.
NCU_ROWS = (("gemm", "gemm009_2048x7000x2048_NN", 4), ("conv", "r50_b256_l2.3x3", 4),
            ("models", "resnet50_b1", 80))
VARIANT_FIELDS = ("tier_summary", "timing", "rotation", "median_ms", "min_ms", "max_ms",
                  "mean_ms")
BENCH_FIELDS = ("tier_summary", "timing", "graph", "warmup", "iterations", "rotation",
                "median_ms", "min_ms", "max_ms", "mean_ms", "bytes", "gbps", "device",
                "compute_capability", "steps")


def log(*parts):
    print(*parts, flush=True)


class Clock:
    """The time budget (no new batch or row past it) and a hard deadline
    GRACE_S later that bounds every child process."""
    GRACE_S = 60

    def __init__(self, budget_s):
        self.start, self.budget = time.time(), budget_s

    def elapsed(self):
        return time.time() - self.start

    def left(self):
        return self.budget - self.elapsed() if self.budget else float("inf")

    def over(self):
        return self.left() <= 0

    def hard_left(self, cap):
        """A child's timeout: CAP seconds, or less so as to end by the deadline."""
        return max(5.0, min(cap, self.left() + self.GRACE_S))


# ---------------------------------------------------------------------------
# generate and compile

def compile_row(row, model, engine, args, compiler=None):
    """Compiles MODEL to ENGINE with COMPILER (default: args.compile); returns
    (compile record, status, the compiler's output)."""
    cmd = [compiler or args.compile, model, "-o", engine, "--precision", "fp16", "--target",
           args.target, "-v"] + row["compile_flags"]
    start = time.time()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=COMPILE_TIMEOUT_S)
        rc, text = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as e:
        rc, text = "timeout", _text(e.stdout)
    except OSError as e:  # a missing or unrunnable compiler (a variant's)
        rc, text = "exec", repr(e)
    record = {"s": round(time.time() - start, 3), "rc": rc,
              "kernels": _grep(r"^\s*kernels: (.*)$", text)}
    if rc == 0:
        return record, "compiled", text
    errors = [line.strip() for line in text.splitlines() if "error" in line.lower()]
    message = "; ".join(errors[:3]) or text.strip()[-300:]
    status = ("unsupported: " if rc == 3 else "compile failed (rc %s): " % rc) + message
    return record, status, text


def _text(data):
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def _grep(pattern, text):
    match = re.search(pattern, text, re.M)
    return match.group(1).strip() if match else None


def prepare(rows, args, clock):
    """Writes and compiles every row (gemm/conv in a thread pool; models are
    exported by torch first, in this process). Sets row['engine'] on success."""
    models_dir, engines_dir = os.path.join(args.work, "models"), os.path.join(args.work, "engines")
    os.makedirs(models_dir, exist_ok=True)
    os.makedirs(engines_dir, exist_ok=True)
    compile_log = open(os.path.join(args.out, "compile.log"), "a")

    def one(row):
        model = os.path.join(models_dir, row["name"] + ".onnx")
        engine = os.path.join(engines_dir, row["name"] + ".tsl")
        try:
            if row["suite"] != "models" or not os.path.exists(model):
                start = time.time()
                flops = suites.write_model(row, model)
                row["generate_s"] = round(time.time() - start, 2)
                if row["flops"] is None:
                    row["flops"] = flops
        except Exception as e:  # noqa: BLE001
            row["status"] = "export failed: %s" % repr(e)[:500]
            return row, ""
        row["compile"], row["status"], text = compile_row(row, model, engine, args)
        if row["status"] == "compiled":
            row["engine"] = engine
        for label, compiler in args.variants:
            v_engine = os.path.join(engines_dir, "%s@%s.tsl" % (row["name"], label))
            record, status, v_text = compile_row(row, model, v_engine, args, compiler)
            v = row.setdefault("variants", {})[label] = {"compile_s": record["s"],
                                                         "compile_rc": record["rc"],
                                                         "kernels": record["kernels"],
                                                         "status": status}
            if status == "compiled":
                v["engine"] = v_engine
            text += "\n-- variant %s: %s\n%s" % (label, status, v_text)
        return row, text

    models = [r for r in rows if r["suite"] == "models"]
    ops = [r for r in rows if r["suite"] != "models"]
    done = []
    for row in models:  # torch export: serially, before the pool
        if clock.over():
            row["status"] = "skipped: time budget"
            continue
        start = time.time()
        model = os.path.join(models_dir, row["name"] + ".onnx")
        try:
            row["flops"] = suites.export_model(row, model, device=args.export_device)
            row["export_s"] = round(time.time() - start, 1)
        except Exception as e:  # noqa: BLE001
            row["status"] = "export failed: %s" % repr(e)[:500]
            continue
        done.append(row)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for row, text in pool.map(one, ops + done):
            compile_log.write("== %s: %s\n%s\n" % (row["name"], row["status"], text))
    compile_log.close()
    compiled = sum(1 for r in rows if r.get("status") == "compiled")
    log("prepare: %d of %d rows compiled in %.1f s (%d jobs)" % (compiled, len(rows),
                                                                time.time() - start, args.jobs))
    for r in rows:
        if r.get("status", "compiled") != "compiled":
            log("  %s: %s" % (r["name"], r.get("status")))
    for label, _ in args.variants:
        vs = [r["variants"][label] for r in rows if label in r.get("variants", {})]
        log("prepare: variant %s: %d of %d rows compiled, %.1f s of compile time" % (
            label, sum(1 for v in vs if v["status"] == "compiled"), len(rows),
            sum(v["compile_s"] for v in vs)))
        for r in rows:
            v = r.get("variants", {}).get(label)
            if v and v["status"] != "compiled":
                log("  %s@%s: %s" % (r["name"], label, v["status"]))


# ---------------------------------------------------------------------------
# tessel-bench

LINE = re.compile(r"^(\S+) \((.*) on (.*)\): median ([0-9.]+) ms \(min ([0-9.]+), max "
                  r"([0-9.]+), mean ([0-9.]+)\).*rotation (\d+)")


def tessel_bench(engines, args, tag, clock, per_step=False):
    """{engine path: tessel-bench's object} for ENGINES (with PER_STEP, each
    step's median time too: where a model's time goes). A crashed process
    (no JSON) keeps what it printed, marks the engine it stopped on and goes on
    with the rest in a new process."""
    results = {}
    while engines:
        json_path = os.path.join(args.work, "bench-%s.json" % tag)
        if os.path.exists(json_path):
            os.remove(json_path)
        timeout = clock.hard_left(BENCH_TIMEOUT_S)
        cmd = [args.bench] + engines + ["--tier", args.tier, "--rotate", "auto", "--warmup",
                                        str(args.warmup), "--iterations", str(args.iterations),
                                        "--json", json_path] + (["--per-step"] if per_step else [])
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, timeout=timeout)
            stdout, rc = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            stdout, rc = _text(e.stdout), "timeout (%.0f s)" % timeout
        with open(os.path.join(args.out, "bench.log"), "a") as f:
            f.write("$ %s\n%s\n(exit %s)\n" % (" ".join(cmd), stdout, rc))
        if isinstance(rc, int) and os.path.exists(json_path):
            with open(json_path) as f:
                for obj in json.load(f):
                    results[obj["engine"]] = obj
            shutil.copy(json_path, os.path.join(args.work, "raw-bench-%s.json" % tag))
            return results
        by_label = {os.path.basename(e): e for e in engines}
        finished = []
        for line in stdout.splitlines():
            m = LINE.match(line)
            if m and m.group(1) in by_label:
                engine = by_label[m.group(1)]
                finished.append(engine)
                results[engine] = {"engine": engine, "tier_summary": m.group(2),
                                   "device": m.group(3), "median_ms": float(m.group(4)),
                                   "min_ms": float(m.group(5)), "max_ms": float(m.group(6)),
                                   "mean_ms": float(m.group(7)), "rotation": int(m.group(8)),
                                   "iterations": args.iterations, "warmup": args.warmup,
                                   "note": "from tessel-bench's stdout (the process crashed)"}
            elif line.startswith("error: ") and ": " in line[7:]:
                engine = line[7:].split(": ")[0]
                if engine in engines:
                    finished.append(engine)
                    results[engine] = {"engine": engine, "error": line[7:]}
        rest = [e for e in engines if e not in finished]
        if not rest:
            return results
        tail = " | ".join(stdout.strip().splitlines()[-3:])
        results[rest[0]] = {"engine": rest[0], "error": "tessel-bench exited %s on this engine: %s"
                            % (rc, tail[-400:])}
        engines = rest[1:]
        if clock.hard_left(BENCH_TIMEOUT_S) <= 5:
            for e in engines:
                results[e] = {"engine": e, "error": "skipped: time budget"}
            return results
    return results


def attach_tessel(row, obj):
    row["tessel"] = {k: obj[k] for k in BENCH_FIELDS if k in obj}
    row["tessel"]["compile_s"] = row["compile"]["s"]
    if "error" in obj:
        row["status"] = "bench failed: " + obj["error"]
        return
    row["tessel"]["tflops"] = _tflops(row["flops"], obj["median_ms"])
    row["status"] = "timed"


def attach_variant(row, label, obj):
    v = row["variants"][label]
    v.update({k: obj[k] for k in VARIANT_FIELDS if k in obj})
    if "error" in obj:
        v["status"] = "bench failed: " + obj["error"]
        return
    v["status"] = "timed"
    v["tflops"] = _tflops(row["flops"], obj["median_ms"])
    set_speedups(row)


def set_speedups(row):
    """speedup = variant_ms / tessel_ms (> 1: this compiler faster);
    peer_ratio = peer_ms / variant_ms, as ratio is for this compiler."""
    tessel_ms = (row.get("tessel") or {}).get("median_ms")
    peer_ms = (row.get("peer") or {}).get("median_ms")
    for v in (row.get("variants") or {}).values():
        if v.get("status") == "timed" and v.get("median_ms"):
            if tessel_ms and row.get("status") == "timed":
                v["speedup"] = v["median_ms"] / tessel_ms
            if peer_ms:
                v["peer_ratio"] = peer_ms / v["median_ms"]


def _engines(row):
    """This compiler's engine, then each variant's, for one tessel-bench batch."""
    engines = [row["engine"]] if row.get("status") == "compiled" else []
    for v in (row.get("variants") or {}).values():
        if v.get("engine") and v.get("status") == "compiled":
            engines.append(v["engine"])
    return engines


def _tflops(flops, ms):
    return flops / (ms * 1e9) if flops and ms else None


# ---------------------------------------------------------------------------
# peers

def time_peer(row, args):
    import peers
    import torch
    rotation = row["tessel"].get("rotation", 1)
    try:
        if row["suite"] == "gemm":
            row["peer"] = peers.gemm(row, rotation, args.warmup, args.iterations)
        elif row["suite"] == "conv":
            row["peer"] = peers.conv(row, rotation, args.warmup, args.iterations)
        else:
            row["peers"] = peers.model_eager_and_graph(row, rotation, args.warmup,
                                                       args.iterations)
            row["peer"] = row["peers"]["cuda_graph"]
    except Exception as e:  # noqa: BLE001 (out of memory, an unsupported shape)
        row["peer"] = {"error": repr(e)[:500]}
    torch.cuda.empty_cache()
    set_ratio(row)


def set_ratio(row):
    peer, tessel = row.get("peer") or {}, row.get("tessel") or {}
    if peer.get("median_ms") and tessel.get("median_ms"):
        peer["tflops"] = _tflops(row["flops"], peer["median_ms"])
        row["ratio"] = peer["median_ms"] / tessel["median_ms"]
    set_speedups(row)
    for name, p in (row.get("peers") or {}).items():
        if p.get("median_ms") and tessel.get("median_ms"):
            row.setdefault("ratios", {})[name] = p["median_ms"] / tessel["median_ms"]


def compile_peer(row, args, clock):
    """torch.compile of a models row, in a child process bounded by the time left."""
    limit = min(args.compile_peer_timeout, clock.left() - 20, clock.hard_left(1e9))
    if limit < COMPILE_PEER_MIN_S:
        row["peers"]["compile"] = {"error": "skipped: %.0f s of the time budget left" %
                                   clock.left()}
        return
    cmd = [sys.executable, os.path.join(HERE, "peers.py"), "compile", row["model"],
           str(row["batch"]), "--rotation", str(row["tessel"].get("rotation", 1)),
           "--warmup", str(args.warmup), "--iterations", str(args.iterations)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=limit)
        text = proc.stdout
        result = [line[7:] for line in text.splitlines() if line.startswith("RESULT ")]
        row["peers"]["compile"] = (json.loads(result[-1]) if result else
                                   {"error": "exit %d: %s" % (proc.returncode, text[-400:])})
        if "graph" in row["peers"]["compile"]:
            row["peers"]["compile_graph"] = row["peers"]["compile"].pop("graph")
            # The strongest PyTorch configuration is the models' peer.
            if row["peers"]["compile_graph"].get("median_ms"):
                row["peer"] = row["peers"]["compile_graph"]
    except subprocess.TimeoutExpired:
        text = ""
        row["peers"]["compile"] = {"error": "timed out after %.0f s" % limit}
    with open(os.path.join(args.out, "torch-compile.log"), "a") as f:
        f.write("$ %s\n%s\n" % (" ".join(cmd), text))
    set_ratio(row)


# ---------------------------------------------------------------------------
# the run

def batches(rows, args):
    """Consecutive runs of rows holding at most BATCH engines (a row has one
    per compiler: this one and each --variant) and about BATCH_S seconds."""
    batch, cost, count = [], 0.0, 0
    runs = args.iterations + args.warmup + 2
    for r in rows:
        engines = max(1, len(_engines(r)))
        row_s = engines * (ROW_OVERHEAD_S + runs * (r["flops"] or 0) /
                           (PESSIMISTIC_TFLOPS * 1e12))
        if batch and (count + engines > BATCH or cost + row_s > BATCH_S):
            yield batch
            batch, cost, count = [], 0.0, 0
        batch.append(r)
        cost += row_s
        count += engines
    if batch:
        yield batch


def run_suite(rows, args, clock):
    # A row is timed when any compiler built it (a variant's engine is timed
    # even where this compiler's failed; the peer only beside this one's).
    ready = [r for r in rows if _engines(r)]
    done = 0  # rows of READY in earlier batches
    for n, batch in enumerate(batches(ready, args)):
        if clock.over():
            for r in ready[done:]:
                if r["status"] == "compiled":
                    r["status"] = "skipped: time budget"
                for v in (r.get("variants") or {}).values():
                    if v["status"] == "compiled":
                        v["status"] = "skipped: time budget"
            log("  time budget (%.0f s) spent: %d %s rows not timed" % (
                args.time_budget, len(ready) - done, rows[0]["suite"]))
            return
        done += len(batch)
        if args.dry_run:
            continue
        import torch
        torch.cuda.empty_cache()  # leave the GPU's memory to tessel-bench
        results = tessel_bench([e for r in batch for e in _engines(r)], args,
                               "%s-%d" % (rows[0]["suite"], n), clock,
                               per_step=rows[0]["suite"] == "models")
        missing = {"error": "no result from tessel-bench"}
        for r in batch:
            for label, v in (r.get("variants") or {}).items():
                if v.get("engine") and v["status"] == "compiled":
                    attach_variant(r, label, results.get(v["engine"], missing))
            if r["status"] != "compiled":
                continue  # only a variant's engine was timed
            attach_tessel(r, results.get(r["engine"], missing))
            if r["status"] == "timed" and clock.over():
                r["peer"] = {"error": "skipped: time budget"}
            elif r["status"] == "timed":
                time_peer(r, args)
            set_speedups(r)
        log("  %s rows %d-%d timed at %.0f s" % (rows[0]["suite"], done - len(batch), done - 1,
                                                 clock.elapsed()))


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(rows):
    timed = [r for r in rows if r.get("ratio")]
    ratios = [r["ratio"] for r in timed]
    s = {"rows": len(rows), "compiled": sum(1 for r in rows if "engine" in r),
         "timed": len(timed), "target": suites.TARGET_RATIO,
         "geomean_ratio": geomean(ratios),
         "tessel_geomean_tflops": geomean([r["tessel"].get("tflops") for r in timed]),
         "peer_geomean_tflops": geomean([r["peer"].get("tflops") for r in timed]),
         "failed": sorted({r.get("status", "?").split(":")[0] for r in rows
                           if r.get("status") not in ("timed", "compiled")})}
    s["met"] = s["geomean_ratio"] is not None and s["geomean_ratio"] >= suites.TARGET_RATIO
    if timed:
        worst, best = min(timed, key=lambda r: r["ratio"]), max(timed, key=lambda r: r["ratio"])
        s["min_ratio"], s["min_row"] = worst["ratio"], worst["name"]
        s["max_ratio"], s["max_row"] = best["ratio"], best["name"]
    sets = {}
    for r in timed:
        sets.setdefault(r["set"], []).append(r["ratio"])
    s["sets"] = {k: {"rows": len(v), "geomean_ratio": geomean(v)} for k, v in sets.items()}
    labels = sorted({label for r in rows for label in r.get("variants") or {}})
    if labels:
        s["variants"] = {label: summarize_variant(rows, label) for label in labels}
    return s


def summarize_variant(rows, label):
    """HEAD (this compiler) against one variant over the rows both timed."""
    vs = [(r, r["variants"][label]) for r in rows if label in r.get("variants") or {}]
    both = [(r, v) for r, v in vs if v.get("speedup")]
    with_peer = [(r, v) for r, v in both if v.get("peer_ratio") and r.get("ratio")]
    s = {"compiled": sum(1 for _, v in vs if v.get("engine")),
         "timed": sum(1 for _, v in vs if v.get("status") == "timed"),
         "compared": len(both),
         "geomean_speedup": geomean([v["speedup"] for _, v in both]),
         "geomean_peer_ratio": geomean([v["peer_ratio"] for _, v in with_peer]),
         "geomean_ratio_same_rows": geomean([r["ratio"] for r, _ in with_peer]),
         "faster_rows": sum(1 for _, v in both if v["speedup"] > 1.02),
         "slower_rows": sum(1 for _, v in both if v["speedup"] < 1 / 1.02),
         "failed": sorted({v.get("status", "?").split(":")[0] for _, v in vs
                           if v.get("status") not in ("timed", "compiled")})}
    if both:
        worst = min(both, key=lambda rv: rv[1]["speedup"])
        best = max(both, key=lambda rv: rv[1]["speedup"])
        s["min_speedup"], s["min_row"] = worst[1]["speedup"], worst[0]["name"]
        s["max_speedup"], s["max_row"] = best[1]["speedup"], best[0]["name"]
    return s


def variant_line(suite, label, s):
    if not s["compared"]:
        return "%s vs %s: %d compiled, %d timed, none compared%s" % (
            suite, label, s["compiled"], s["timed"],
            " (%s)" % ", ".join(s["failed"]) if s["failed"] else "")
    line = ("%s vs %s: %d rows compared; HEAD speedup geomean %.3f (variant_ms/tessel_ms, > 1: "
            "HEAD faster; %d faster, %d slower by > 2%%), worst %.3f (%s), best %.3f (%s)" % (
                suite, label, s["compared"], s["geomean_speedup"], s["faster_rows"],
                s["slower_rows"], s["min_speedup"], s["min_row"], s["max_speedup"],
                s["max_row"]))
    if s["geomean_peer_ratio"]:
        line += "; peer/%s %.3f vs peer/HEAD %.3f on the same rows" % (
            label, s["geomean_peer_ratio"], s["geomean_ratio_same_rows"])
    return line


def summary_line(suite, s):
    if not s["timed"]:
        return "%s: %d rows, %d compiled, none timed" % (suite, s["rows"], s["compiled"])
    return ("%s: %d rows, %d compiled, %d timed; geomean ratio (peer/tessel) %.3f, target %.2f "
            "%s; tessel %.1f vs peer %.1f TFLOP/s geomean; worst %.3f (%s), best %.3f (%s)" % (
                suite, s["rows"], s["compiled"], s["timed"], s["geomean_ratio"], s["target"],
                "met" if s["met"] else "missed", s["tessel_geomean_tflops"] or 0,
                s["peer_geomean_tflops"] or 0, s["min_ratio"], s["min_row"], s["max_ratio"],
                s["max_row"]))


def environment(args):
    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": args.command or " ".join(["python3"] + sys.argv),
           "host": os.uname().nodename, "commit": None, "driver": None}
    commit = os.path.join(os.path.dirname(args.bin), "COMMIT")
    if os.path.exists(commit):
        env["commit"] = open(commit).read().strip()
    if args.variants:
        env["variants"] = {}
        for label, compiler in args.variants:
            bindir = os.path.dirname(compiler)
            commit = os.path.join(os.path.dirname(bindir), "COMMIT")
            env["variants"][label] = {
                "bin": bindir,
                "commit": open(commit).read().strip() if os.path.exists(commit) else None}
            log("variant %s: %s (commit %s)" % (label, compiler, env["variants"][label]["commit"]))
    try:
        env["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
            timeout=30).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        pass
    if not args.dry_run:
        import peers
        env.update(peers.versions())
        env["copy_gbps"] = peers.copy_gbps()
        env["cublas_peak_tflops"] = peers.cublas_peak_tflops()
        log("gpu %s, driver %s, torch %s, cudnn %s, cublas %s; copy %.0f GB/s, cuBLAS f16 "
            "8192^3 %.0f TFLOP/s" % (env["gpu"], env["driver"], env["torch"], env["cudnn"],
                                     env["cublas"], env["copy_gbps"],
                                     env["cublas_peak_tflops"]))
    return env


def ncu(all_rows, args, clock):
    """Nsight Compute on NCU_ROWS (compiled here if their suite did not run)."""
    tool = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    by_name = {r["name"]: r for rows in all_rows.values() for r in rows}
    for suite, name, launches in NCU_ROWS:
        if args.ncu_rows and name not in args.ncu_rows.split(","):
            continue
        row = by_name.get(name) or next(r for r in suites.rows(suite, args.data)
                                        if r["name"] == name)
        if "engine" not in row:
            prepare([row], args, clock)
        out = os.path.join(args.out, "ncu-%s.txt" % name)
        if "engine" not in row:
            open(out, "w").write("not compiled: %s\n" % row.get("status"))
            continue
        cmd = [tool, "--set", "detailed", "--launch-count", str(launches), args.bench,
               row["engine"], "--tier", args.tier, "--no-graph", "--rotate", "1", "--warmup", "0",
               "--iterations", "1"]
        start = time.time()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  universal_newlines=True, timeout=clock.hard_left(600))
            text = proc.stdout
        except (subprocess.TimeoutExpired, OSError) as e:
            text = "ncu failed: %r\n" % e
        with open(out, "w") as f:
            f.write("$ %s\n%s" % (" ".join(cmd), text))
        log("ncu %s: %.0f s -> %s" % (name, time.time() - start, out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with tessel-compile and tessel-bench")
    ap.add_argument("--data", help="folder with the suite CSVs (bench/suites.py)")
    ap.add_argument("--out", required=True, help="results.json and logs go here")
    ap.add_argument("--work", help="models and engines (default: OUT/work)")
    ap.add_argument("--suites", default="gemm,conv,models")
    ap.add_argument("--limit", type=int, default=0, help="first N rows per suite")
    ap.add_argument("--rows", default="", help="only rows whose name matches this regex")
    ap.add_argument("--tier", default="tc", help="tessel-bench --tier (tc, tc-sm80, tc-sm70)")
    ap.add_argument("--models", default=",".join(suites.DEFAULT_MODELS),
                    help="models-suite rows, comma-separated, of: %s" %
                    ", ".join(r[0] for r in suites.MODEL_ROWS))
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds; past it no new batch or row starts (0: none)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--compile-peer-timeout", type=float, default=240)
    ap.add_argument("--dry-run", action="store_true",
                    help="generate and compile only: no GPU, no timings")
    ap.add_argument("--ncu", action="store_true", help="also profile NCU_ROWS with ncu")
    ap.add_argument("--ncu-rows", help="with --ncu: only these NCU_ROWS (comma-separated names)")
    ap.add_argument("--command", help="the command to record (default: this one)")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=BINDIR",
                    help="also compile every row with BINDIR/tessel-compile (another commit's "
                    "compiler) and time its engine beside this one's (repeatable)")
    args = ap.parse_args(argv)
    args.variants = []
    for spec in args.variant:
        label, _, bindir = spec.partition("=")
        if not label or not bindir or not re.match(r"^[A-Za-z0-9._-]+$", label):
            ap.error("--variant LABEL=BINDIR, LABEL of letters, digits, '.', '_', '-': %r" % spec)
        if label in [l for l, _ in args.variants]:
            ap.error("--variant %s given twice" % label)
        args.variants.append((label, os.path.join(os.path.abspath(bindir), "tessel-compile")))
    clock = Clock(args.time_budget)
    args.data = suites.data_dir(args.data)
    args.work = args.work or os.path.join(args.out, "work")
    args.compile = os.path.join(args.bin, "tessel-compile")
    args.bench = os.path.join(args.bin, "tessel-bench")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    if not args.dry_run:
        import torch
        if not torch.cuda.is_available():
            raise SystemExit("run_bench: no CUDA device for torch (use --dry-run)")
    args.export_device = "cpu" if args.dry_run else "cuda"

    results = environment(args)
    names = [s for s in args.suites.split(",") if s]
    unknown = [s for s in names if s not in suites.SUITES]
    if unknown:
        ap.error("unknown suite(s): %s" % ", ".join(unknown))
    all_rows = {}
    for suite in names:
        rows = suites.rows(suite, args.data)
        if suite == "models" and args.models:
            rows = [r for r in rows if r["name"] in args.models.split(",")]
        if args.rows:
            rows = [r for r in rows if re.search(args.rows, r["name"])]
        all_rows[suite] = rows[:args.limit] if args.limit else rows
    # Everything is compiled first (16 cores, a few seconds), then timed.
    prepare([r for rows in all_rows.values() for r in rows], args, clock)
    for suite, rows in all_rows.items():
        log("%s: timing %d rows at %.0f s" % (suite, len(rows), clock.elapsed()))
        run_suite(rows, args, clock)
    if not args.dry_run:
        for row in all_rows.get("models", []):
            if row["name"] in COMPILE_PEER_ROWS and row.get("status") == "timed":
                compile_peer(row, args, clock)
    if args.ncu:
        ncu(all_rows, args, clock)

    for rows in all_rows.values():
        for r in rows:
            r.pop("compile_flags", None)
            r["engine"] = os.path.basename(r["engine"]) if r.get("engine") else None
            for v in (r.get("variants") or {}).values():
                if v.get("engine"):
                    v["engine"] = os.path.basename(v["engine"])
    results["iterations"], results["warmup"] = args.iterations, args.warmup
    results["time_budget_s"], results["wall_s"] = args.time_budget, round(clock.elapsed(), 1)
    results["dry_run"] = args.dry_run
    results["suites"] = all_rows
    results["summary"] = {suite: summarize(rows) for suite, rows in all_rows.items()}
    path = os.path.join(args.out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
    os.replace(path + ".tmp", path)
    for suite, s in results["summary"].items():
        log(summary_line(suite, s))
        for label, vs in (s.get("variants") or {}).items():
            log(variant_line(suite, label, vs))
    skipped = sum(1 for rows in all_rows.values() for r in rows
                  if r.get("status") == "skipped: time budget")
    if skipped:
        log("time budget: %d rows skipped (run again with SUITES= a subset)" % skipped)
    log("results: %s (%.0f s)" % (path, clock.elapsed()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
