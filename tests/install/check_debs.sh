#!/bin/sh
# The .deb packages (issue 18): CPack makes them from BUILD (as
# scripts/package-debs.sh does); libtessel-runtime0 must depend on the C and
# C++ runtimes only (libc6, libstdc++6 and its libgcc-s1); the three are
# installed on this machine with dpkg (as root, or through sudo; they are
# purged again at the end), and examples/embed is built against the installed files with no
# path given (find_package(Tessel) and pkg-config find them under /usr) and
# run on the bundled example compiled by the installed tessel-compile.
#
#   check_debs.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -eu
src=$1 build=$2 work=$3
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo -n"
  $SUDO true || { echo "check_debs.sh installs packages: run it as root or with sudo"; exit 1; }
fi
rm -rf "$work"
mkdir -p "$work/debs"
(cd "$build" && cpack -G DEB -B "$work/debs" > "$work/cpack.log")
runtime=$work/debs/libtessel-runtime0_*.deb
depends=$(dpkg-deb -f $runtime Depends)
echo "libtessel-runtime0 depends: $depends"
echo "$depends" | tr ',' '\n' | sed 's/ *(.*//; s/^ *//' | while read -r dep; do
  case $dep in libc6|libstdc++6|libgcc-s1) ;; *) echo "unexpected dependency: $dep"; exit 1 ;; esac
done

packages="libtessel-runtime0 libtessel-runtime-dev tessel-tools"
trap '$SUDO dpkg -P $packages > /dev/null 2>&1 || true' EXIT
$SUDO dpkg -i "$work"/debs/*.deb > "$work/dpkg.log"
for p in $packages; do
  dpkg-query -W -f='${Status}\n' "$p" | grep -q "install ok installed"
done

tessel-compile "$src/examples/tiny_cnn.onnx" -o "$work/tiny_cnn.tsl" --precision fp32 \
  > "$work/compile.log"
/usr/bin/python3 -c "import numpy, sys; numpy.load(sys.argv[1]).astype('<f4').tofile(sys.argv[2])" \
  "$src/examples/tiny_cnn.input.npy" "$work/input.bin"
cmake -S "$src/examples/embed" -B "$work/embed-cmake" -DCMAKE_BUILD_TYPE=Release \
  > "$work/embed-cmake.log"
cmake --build "$work/embed-cmake" >> "$work/embed-cmake.log"
cc -o "$work/embed-pc" "$src/examples/embed/embed.c" $(pkg-config --cflags --libs tessel-runtime)
for program in "$work/embed-cmake/embed" "$work/embed-cmake/embed_cpp" "$work/embed-pc"; do
  "$program" "$work/tiny_cnn.tsl" "$work/input.bin" > "$work/out.txt"
  /usr/bin/python3 "$src/tests/install/check_output.py" "$work/out.txt" \
    "$src/examples/tiny_cnn.expected.npy" "$program"
done
