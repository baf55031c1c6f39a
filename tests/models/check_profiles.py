#!/usr/bin/python3
"""Batch profiles on a model exported with a dynamic batch (issue 16).

    /usr/bin/python3 check_profiles.py --compile TESSEL_COMPILE --run TESSEL_RUN \\
        --data DIR --work DIR NAME [--precision fp32] [--tier T] [--max-ratio 1.1]

DIR holds NAME.onnx with a dynamic batch, NAME.input.pb / NAME.output.pb at
batch 1 and NAME_bB.input.pb / NAME_bB.output.pb at each other batch B of
export_models.PROFILE_BATCHES (PyTorch's outputs). The check:

1. tessel-compile NAME.onnx without a batch is refused, naming the input and
   the flags that fix it;
2. tessel-compile --batch 1,B2,... builds one engine with a profile per batch,
   and tessel-compile --batch B (the largest) a single-profile engine: the
   first is at most --max-ratio times the size of the second (the constants
   and every batch-independent kernel module are stored once);
3. tessel-run runs each batch's input on the profile engine (it picks the
   profile by the input's shape) and compares with PyTorch's output under
   run_model_test.py's tolerances for the precision (fp16: 2x the error that
   f16 storage implies, numpy_ref's emulation, per batch).

Exit 0 on pass, 1 on fail, 2 on a usage/setup error.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
import run_model_test  # noqa: E402


def run(cmd, timeout):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors="replace", timeout=timeout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name")
    ap.add_argument("--compile", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--precision", choices=sorted(run_model_test.TOLERANCES), default="fp32")
    ap.add_argument("--tier", help="passed to tessel-run --tier")
    ap.add_argument("--target", help="passed to tessel-compile --target")
    ap.add_argument("--max-ratio", type=float, default=1.1,
                    help="largest size of the profile engine over the single-batch one")
    args = ap.parse_args(argv)

    model = os.path.join(args.data, args.name + ".onnx")
    stems = [(1, os.path.join(args.data, args.name))] + [
        (b, os.path.join(args.data, "%s_b%d" % (args.name, b)))
        for b in export_models.PROFILE_BATCHES]
    for path in [model] + [s + ext for _, s in stems for ext in (".input.pb", ".output.pb")]:
        if not os.path.isfile(path):
            print("FAIL %s: missing %s (run export_models.py first)" % (args.name, path))
            return 2
    os.makedirs(args.work, exist_ok=True)
    failures = []
    common = ["--precision", args.precision] + (["--target", args.target] if args.target else [])

    # 1. Without a batch: refused, with the way out in the message.
    proc = run([args.compile, model, "-o", os.path.join(args.work, "refused.tsl")] + common, 600)
    wanted = "graph input 'input' has a dynamic shape [batch,3,224,224] (fix its dims with " \
             "--input-shape input=1x3x224x224, or its first with --batch)"
    print(proc.stderr.strip())
    if proc.returncode == 0 or wanted not in proc.stderr:
        failures.append("without --batch: exit %d, expected the message %r" %
                        (proc.returncode, wanted))

    # 2. The profile engine and the single-batch one.
    batches = [b for b, _ in stems]
    profiles = os.path.join(args.work, "%s.%s.profiles.tsl" % (args.name, args.precision))
    single = os.path.join(args.work, "%s.%s.b%d.tsl" % (args.name, args.precision, max(batches)))
    for engine, batch in ((profiles, ",".join(map(str, batches))), (single, str(max(batches)))):
        proc = run([args.compile, model, "-o", engine, "--batch", batch] + common, 1200)
        print(proc.stdout.strip())
        if proc.returncode != 0:
            print(run_model_test.tail(proc.stderr, 20))
            print("FAIL %s: tessel-compile --batch %s exit %d" % (args.name, batch,
                                                                 proc.returncode))
            return 1
    ratio = os.path.getsize(profiles) / os.path.getsize(single)
    print("engine with %d profiles (batch %s): %d bytes; batch %d alone: %d bytes; ratio %.3f "
          "(at most %.2f)" % (len(batches), ",".join(map(str, batches)), os.path.getsize(profiles),
                              max(batches), os.path.getsize(single), ratio, args.max_ratio))
    if ratio > args.max_ratio:
        failures.append("size ratio %.3f > %.2f" % (ratio, args.max_ratio))

    # 3. Each batch on its profile, against PyTorch.
    rtol, atol = run_model_test.TOLERANCES[args.precision]
    for batch, stem in stems:
        inputs, expected = [stem + ".input.pb"], stem + ".output.pb"
        ref = run_model_test.load_array(expected)
        tolerance = atol
        if tolerance is None:
            error = run_model_test.fp16_storage_error(model, inputs, ref)
            tolerance = 2 * error
            print("batch %d: f16 storage emulated (numpy_ref): max_abs_err=%.3g -> atol=%.3g" %
                  (batch, error, tolerance))
        scale = float(np.abs(ref).max())
        if not scale >= run_model_test.GUARD[args.precision] * tolerance:
            failures.append("batch %d: degenerate reference (max|y|=%.3g)" % (batch, scale))
            continue
        cmd = [args.run, profiles] + inputs + ["--rtol", repr(rtol), "--atol", repr(tolerance),
                                               "--compare", expected]
        if args.tier:
            cmd += ["--tier", args.tier]
        proc = run(cmd, 600)
        print(proc.stdout.strip())
        if proc.stderr.strip():
            print(run_model_test.tail(proc.stderr, 10))
        profile_line = "profile %d of %d" % (batches.index(batch), len(batches))
        if proc.returncode != 0 or profile_line not in proc.stdout:
            failures.append("batch %d: tessel-run exit %d%s" % (
                batch, proc.returncode,
                "" if profile_line in proc.stdout else ", not on " + profile_line))

    if failures:
        print("FAIL %s: %s" % (args.name, "; ".join(failures)))
        return 1
    print("PASS %s: %d profiles (batch %s), each matches PyTorch; size ratio %.3f" % (
        args.name, len(batches), ",".join(map(str, batches)), ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
