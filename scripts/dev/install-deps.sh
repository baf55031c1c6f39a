#!/usr/bin/env bash
# Installs every Debian package Tessel's build and tests need. Idempotent:
# packages already present are skipped, and nothing runs when none is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config dpkg-dev fakeroot clang-19 libclang-rt-19-dev libfuzzer-19-dev
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  googletest libgtest-dev
  libflatbuffers-dev flatbuffers-compiler
  python3-onnx python3-numpy python3-torch python3-torchvision python3-pil
  python3-venv python3-pip python3-setuptools
  python-matplotlib-data python3-matplotlib
  zlib1g-dev libzstd-dev libxml2-dev libedit-dev libcurl4-openssl-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
