#!/bin/sh
# The installed tree works for an application (issue 18): `cmake --install`
# of BUILD into a temporary prefix, then examples/embed built against it
# twice, through the CMake package (find_package(Tessel), Tessel::runtime:
# embed and embed_cpp) and through pkg-config (tessel-runtime.pc: embed.c),
# and run on the bundled example engine compiled by the installed
# tessel-compile; each program's printed output must match
# examples/tiny_cnn.expected.npy (float64 reference) within fp32's tolerance.
#
#   check_embed.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -eu
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in include/tessel_runtime.h include/tessel_runtime.hpp bin/tessel-run bin/tessel-compile; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
libdir=$(dirname "$(find "$prefix" -name 'libtessel_runtime.so.0' | head -1)")
[ -n "$libdir" ] || { echo "not installed: libtessel_runtime.so.0"; exit 1; }

# The installed tools run from the prefix (bin/ finds lib/ by its RPATH).
"$prefix/bin/tessel-compile" "$src/examples/tiny_cnn.onnx" -o "$work/tiny_cnn.tsl" \
  --precision fp32 > "$work/compile.log"
/usr/bin/python3 -c "import numpy, sys; numpy.load(sys.argv[1]).astype('<f4').tofile(sys.argv[2])" \
  "$src/examples/tiny_cnn.input.npy" "$work/input.bin"

# Through the CMake package.
cmake -S "$src/examples/embed" -B "$work/embed-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/embed-cmake.log"
cmake --build "$work/embed-cmake" >> "$work/embed-cmake.log"
# Through pkg-config (the rpath stands in for the loader's search path that
# an install into /usr has).
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
cc -o "$work/embed-pc" "$src/examples/embed/embed.c" $(pkg-config --cflags --libs tessel-runtime) \
  -Wl,-rpath,"$libdir"

check() {
  "$@" "$work/tiny_cnn.tsl" "$work/input.bin" > "$work/out.txt"
  /usr/bin/python3 "$src/tests/install/check_output.py" "$work/out.txt" \
    "$src/examples/tiny_cnn.expected.npy" "$1"
}
check "$work/embed-cmake/embed"
check "$work/embed-cmake/embed_cpp"
check "$work/embed-pc"
