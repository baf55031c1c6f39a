#!/usr/bin/env bash
# Compiles the model tests' models with two tessel-compile binaries and
# compares the engines byte for byte: what a change that must not change
# behaviour (a refactoring) is checked with.
#
#   scripts/dev/compare-engines.sh BASE_COMPILE NEW_COMPILE [MODEL_DIR]
#
# BASE_COMPILE is the tessel-compile of the commit to compare against (build
# one with scripts/dev/build-at.sh COMMIT); NEW_COMPILE the one under test.
# MODEL_DIR holds the exported models (default: build/tests/models/data, which
# `ctest -R models_setup` fills); examples/tiny_cnn.onnx is always included.
# Each model is compiled with every option set below. Exit 0 when every
# engine is identical, 1 when one differs (listed), 2 on a usage error.
# BASE_SCHEMA=FILE (the base commit's runtime/schema/engine.fbs): across a
# change of the engine format, engines whose bytes differ are compared by
# content instead (scripts/dev/diff-engines.py: every field and the
# constants, tiers by name, the format version aside).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0"
  exit 2
fi
base=$1 new=$2
data=${3:-$root/build/tests/models/data}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

models=("$root/examples/tiny_cnn.onnx")
for name in resnet18 resnet50 mobilenet_v2 squeezenet1_1 skinny_mlp; do
  if [ -f "$data/$name.onnx" ]; then
    models+=("$data/$name.onnx")
  else
    echo "compare-engines: $data/$name.onnx missing (run: ctest --test-dir build -R models_setup)" >&2
    exit 2
  fi
done
option_sets=(
  ""
  "--precision fp32"
  "--io-layout nhwc --io-dtype f16"
  "--target none"
)

differ=0 same=0
for model in "${models[@]}"; do
  stem=$(basename "$model" .onnx)
  for i in "${!option_sets[@]}"; do
    opts=${option_sets[$i]}
    # shellcheck disable=SC2086
    "$base" "$model" -o "$work/base.tsl" $opts >"$work/base.log" 2>&1 ||
      { echo "FAIL base: $stem [$opts]"; cat "$work/base.log"; exit 1; }
    # shellcheck disable=SC2086
    "$new" "$model" -o "$work/new.tsl" $opts >"$work/new.log" 2>&1 ||
      { echo "FAIL new: $stem [$opts]"; cat "$work/new.log"; exit 1; }
    if cmp -s "$work/base.tsl" "$work/new.tsl"; then
      same=$((same + 1))
      echo "same    $stem [$opts] $(stat -c %s "$work/new.tsl") bytes"
    elif [ -n "${BASE_SCHEMA:-}" ] &&
      /usr/bin/python3 "$root/scripts/dev/diff-engines.py" "$work/base.tsl" "$work/new.tsl" \
        --schema-a "$BASE_SCHEMA" --schema-b "$root/runtime/schema/engine.fbs" >"$work/diff.log"; then
      same=$((same + 1))
      echo "same    $stem [$opts] by content: $(cat "$work/diff.log")"
    else
      differ=$((differ + 1))
      echo "DIFFERS $stem [$opts]: $(cmp "$work/base.tsl" "$work/new.tsl" | head -1)"
      [ -s "$work/diff.log" ] && sed 's/^/    /' "$work/diff.log"
    fi
  done
done
echo "compare-engines: $same identical, $differ different"
[ "$differ" -eq 0 ]
