#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole toolchain on the bundled
# example (examples/tiny_resnet): model -> Frontend IR -> mapping -> Scheduler IR
# -> ISA program -> trace -> summary and HTML. Files land in out/tiny_resnet/.
#   scripts/quickstart.sh [ARCH]     # ARCH: zebu-1core (default) or chip-64tops
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
arch="${1:-zebu-1core}"
"$here/scripts/setup.sh" "$here/build"

bin="$here/build/bin"
out="$here/out/tiny_resnet"
mkdir -p "$out"
model="$here/examples/tiny_resnet/tiny_resnet.onnx"
stem="$out/tiny_resnet.$arch"
step() { printf '\n== %s\n' "$*" >&2; }

step "onnx2fir: import, fuse and quantize (INT8, 8 seeded calibration inputs)"
"$bin/onnx2fir" "$model" --calib-random 8 --data-dir "$out/data" -o "$out/tiny_resnet.fir.json" --quiet
if [ -x "$bin/gemini" ]; then
  step "gemini: map the layers onto $arch"
  "$bin/gemini" "$out/tiny_resnet.fir.json" --arch "$arch" -o "$stem.map.json"
else
  step "mapping: every layer on core 0 (examples/mappings/single_core_mapping.py)"
  python3 "$here/examples/mappings/single_core_mapping.py" "$out/tiny_resnet.fir.json" --arch "$arch" -o "$stem.map.json"
fi
step "irgen: tile and allocate (Scheduler IR)"
"$bin/irgen" "$out/tiny_resnet.fir.json" "$stem.map.json" --arch "$arch" -o "$stem.sir.json"
step "asm: assemble the ISA program"
"$bin/asm" "$stem.sir.json" --fir "$out/tiny_resnet.fir.json" --arch "$arch" -o "$stem.asm"
step "zebusim: simulate cycle by cycle"
"$bin/zebusim" "$stem.asm" --arch "$arch" -o "$stem.trace"
step "traceview: summary (also $stem.html)"
"$bin/traceview" "$stem.trace" --arch "$arch" --fir "$out/tiny_resnet.fir.json" --html "$stem.html"
"$bin/traceview" "$stem.trace" --arch "$arch" --fir "$out/tiny_resnet.fir.json" | tee "$stem.summary.txt"
printf '\nquickstart: files in %s\n' "$out" >&2
