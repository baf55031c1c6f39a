#!/bin/sh
# `pip install ./python` as a user would (a venv over Debian's Python and
# numpy; --no-build-isolation: Debian's setuptools, no package index), then
# `import tessel` from outside the repository running the bundled example on
# the CPU tier (test_runtime.py) with the runtime built here.
#
#   check_pip.sh SOURCE_DIR RUNTIME_LIBRARY TESSEL_COMPILE WORK_DIR
set -eu
src=$1 library=$2 compile=$3 work=$4
rm -rf "$work"
mkdir -p "$work/engines"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
# pip builds in a copy of the source tree, so nothing is written into it.
cp -r "$src/python" "$work/python"
"$work/venv/bin/pip" install --quiet --no-build-isolation --no-index "$work/python" \
  > "$work/pip.log" 2>&1 || { cat "$work/pip.log"; exit 1; }
cd "$work"
TESSEL_RUNTIME_LIBRARY=$library "$work/venv/bin/python" -c \
  "import tessel, sys; assert tessel.__file__.startswith(sys.argv[1]), tessel.__file__" "$work/venv"
TESSEL_RUNTIME_LIBRARY=$library "$work/venv/bin/python" "$src/tests/python/test_runtime.py" \
  "$work/engines" "$compile" "$src/examples"
