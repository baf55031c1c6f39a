#!/usr/bin/env bash
# ad-hoc, as run (issue 15: "the WMMA tier no slower than at 5844c10").
# build-old/ was made here from a worktree of 5844c10:
#   git worktree add /tmp/w5844 5844c10 && cd /tmp/w5844 &&
#   BUILD_DIR=/tmp/w5844/build-static bash scripts/device-bundle.sh
#   mkdir -p build-old/{device-bundle,bench,tests}; cp -r /tmp/w5844/scripts build-old/;
#   cp /tmp/w5844/bench/*.py build-old/bench/; cp -r /tmp/w5844/tests/models build-old/tests/
#   its payload.tar.xz without tessel-run, tessel-inspect and the tests as build-old/device-bundle/
# then run(command="BUDGET=200 ITERATIONS=10 bash build-old/run.sh", carry=["device-bundle", "build-old"]).
# ad-hoc (issue 15: "the WMMA tier no slower than at 5844c10"): the GEMM
# and conv suites and three models timed by 5844c10's bundle (its tier tc:
# WMMA only, engine format 3) and by this tree's bundle forced to tc-sm70
# (WMMA), in one GPU call; each bundle's own bench/run_bench.py, peers
# skipped where they can be (no torch.compile peer). Run from the
# repository root on the GPU machine with build-old/ (5844c10's scripts,
# bench/, tests/models and device-bundle/) and device-bundle/ carried.
set -u
root=$(pwd); O=${OUT:-/tmp/out}; mkdir -p "$O"
run() { # LABEL TREE TIER ENV_SCRIPT
  local label=$1 tree=$2 tier=$3 envs=$4
  ( cd "$tree" || exit 2
    work=/tmp/wmma-$label; out=$O; mkdir -p "$work"; summary=$O/$label-summary.txt; : > "$summary"
    say() { echo "$*" | tee -a "$summary"; }
    . "$envs"
    python3 bench/run_bench.py --bin "$bin" --data "$root/device-bundle/bench" --out "$work/out" \
      --work "$work/w" --suites gemm,conv,models --models resnet50_b1,resnet50_b256,bert_base_b1 \
      --tier "$tier" --iterations "${ITERATIONS:-10}" --warmup 2 --time-budget "${BUDGET:-220}" \
      --compile-peer-timeout 0 > "$work/log.txt" 2>&1
    grep -E '^(gemm|conv|models):' "$work/log.txt" | tee -a "$summary"
    cp "$work/out/results.json" "$O/$label-results.json" )
}
run old "$root/build-old" tc scripts/device-env.sh
run new "$root" tc-sm70 scripts/device/device-env.sh
python3 - "$O/old-results.json" "$O/new-results.json" <<'PY' | tee "$O/compare.txt"
import json, math, sys
def rows(path):
    return {r["name"]: r for v in json.load(open(path))["suites"].values() for r in v
            if r.get("status") == "timed"}
old, new = rows(sys.argv[1]), rows(sys.argv[2])
by = {}
for name in sorted(set(old) & set(new)):
    s = old[name]["tessel"]["median_ms"] / new[name]["tessel"]["median_ms"]
    by.setdefault(old[name]["suite"], []).append((s, name))
for suite, v in by.items():
    g = math.exp(sum(math.log(s) for s, _ in v) / len(v))
    v.sort()
    print("%s: %d rows, speedup of tc-sm70 now over 5844c10's WMMA geomean %.3f, worst %.3f (%s), best %.3f (%s); slower than 0.97: %d"
          % (suite, len(v), g, v[0][0], v[0][1], v[-1][0], v[-1][1], sum(s < 0.97 for s, _ in v)))
    if suite == "models":
        for s, n in v:
            print("  %s %.4f -> %.4f ms (%.3fx)" % (n, old[n]["tessel"]["median_ms"], new[n]["tessel"]["median_ms"], s))
PY
