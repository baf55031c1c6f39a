#!/usr/bin/env bash
# Overlapped launches on and off, same engines, same machine: after
# gpu-bench.sh (which leaves its engines in $WORK/bench-work), times each
# engine with tessel-bench on the tc tier ROUNDS times each way, alternating
# (TESSEL_OVERLAP_LAUNCHES=0 for off), and prints the medians and their
# ratio. Run on the device:
#   bash scripts/device/gpu-bench.sh; bash scripts/device/overlap-ab.sh
# Output: $OUT/overlap-ab.txt and overlap-ab.json.
set -u
work=${WORK:-/tmp/tessel-bench}
out=${OUT:-$work/out}
bin=$work/bin
export LD_LIBRARY_PATH=$work/lib:/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mapfile -t engines < <(find "$work/bench-work" -name '*.tsl' ! -path '*/variants/*' | sort)
[ ${#engines[@]} -gt 0 ] || { echo "overlap-ab: no engines under $work/bench-work"; exit 2; }
rounds=${ROUNDS:-3}
raw=$out/overlap-ab-raw
mkdir -p "$raw"
for ((r = 0; r < rounds; ++r)); do
  for mode in on off; do
    env_args=()
    [ $mode = off ] && env_args=(TESSEL_OVERLAP_LAUNCHES=0)
    env "${env_args[@]+"${env_args[@]}"}" "$bin/tessel-bench" "${engines[@]}" --tier "${TIER:-tc}" \
      --rotate auto --warmup 3 --iterations "${ITERATIONS:-50}" \
      --json "$raw/$mode-$r.json" >/dev/null 2>"$raw/$mode-$r.err" ||
      echo "overlap-ab: tessel-bench ($mode, round $r) exited $?"
  done
done
python3 - "$raw" "$rounds" "$out" <<'PY'
import json, statistics, sys, os
raw, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
for mode in ("on", "off"):
    for r in range(rounds):
        path = os.path.join(raw, "%s-%d.json" % (mode, r))
        if not os.path.exists(path):
            continue
        for e in json.load(open(path)):
            name = os.path.basename(e.get("engine") or e.get("label") or "?")
            ms = e.get("median_ms")
            if ms:
                times.setdefault(name, {}).setdefault(mode, []).append(ms)
rows = []
lines = ["engine | overlap on ms | off ms | off / on (medians of %d rounds)" % rounds]
for name in sorted(times):
    t = times[name]
    if "on" in t and "off" in t:
        on, off = statistics.median(t["on"]), statistics.median(t["off"])
        rows.append({"engine": name, "on_ms": on, "off_ms": off, "rounds_on": t["on"], "rounds_off": t["off"]})
        lines.append("%s | %.4f | %.4f | %.3f" % (name, on, off, off / on))
open(os.path.join(out, "overlap-ab.json"), "w").write(json.dumps(rows, indent=1))
open(os.path.join(out, "overlap-ab.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
