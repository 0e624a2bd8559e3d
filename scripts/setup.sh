#!/usr/bin/env bash
# Installs what the toolkit needs (Debian 12 packages, as root) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# Skips apt when everything is already installed; reuses an existing build dir.
# CCT_BUILD_TARGET="T..." builds those targets only (default: everything).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
shift || true

packages=(
  g++ cmake ninja-build pkg-config zstd
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler
  rapidjson-dev libcxxopts-dev libzstd-dev doctest-dev
  python3 python3-numpy python3-onnx python3-torch python3-torchvision libonnx-testdata
  python3-pil python3-skimage
  chromium snakemake
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install packages (run as root or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs" ${CCT_BUILD_TARGET:+--target $CCT_BUILD_TARGET}
