#!/usr/bin/env bash
# Builds the libFuzzer targets of the readers (fuzz/: FIR, mapping, SIR,
# program, trace, architecture; clang with ASan + UBSan) in build-fuzz (or in
# $CCT_FUZZ_BUILD, which scripts/test.sh points at its sanitizer tree) and runs
# each for SECONDS, as many at once as there are cores, from seeds made of the
# project's own examples. The corpus grows in build-fuzz/corpus/<target>; a
# finding is saved as build-fuzz/artifacts/<target>-crash-* (replay:
# build-fuzz/fuzz/fuzz_<target> FILE) with the log in build-fuzz/logs/<target>.log. Exits 1 if any target found one.
#   scripts/fuzz.sh [SECONDS] [TARGET...]    # default: 60 s each, every target
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCT_FUZZ_BUILD:-$here/build-fuzz}"
secs="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fir mapping sir program trace arch)
jobs="$(nproc 2>/dev/null || echo 2)"

# clang and its libFuzzer runtime (Debian 12: clang, libclang-rt-14-dev).
fuzzer_ok() {
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o /dev/null >/dev/null 2>&1
}
if ! command -v clang++ >/dev/null || ! fuzzer_ok; then
  echo "fuzz: installing clang and libclang-rt-14-dev" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi

# A tree configured with CCT_FUZZ already (scripts/test.sh's) is built as it is.
if ! grep -q '^CCT_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  CC=clang CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCT_FUZZ=ON \
    -DCCT_BUILD_TESTS=OFF -DCCT_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target fuzz_targets

seeds() {
  case "$1" in
    fir) echo "$here/examples/mappings/tiny_cnn_b4.fir.json" "$here"/fuzz/seeds/fir/* ;;
    mapping) echo "$here/examples/mappings/tiny_cnn_b4.chip-64tops.mapping.json" ;;
    sir) echo "$here/tests/asm/data/two_core.sir.json" ;;
    program) echo "$here"/fuzz/seeds/program/* ;;
    trace) echo "$here"/fuzz/seeds/trace/* ;;
    arch) echo "$here"/examples/arch/*.json ;;
    *) echo "fuzz: unknown target '$1' (fir mapping sir program trace arch)" >&2; exit 2 ;;
  esac
}

export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$here/fuzz/ubsan.supp"

# One target: fuzz it for $secs, print one line, exit 1 on a finding.
fuzz_one() {
  local t="$1" files log runs cov status
  files="$(seeds "$t")"
  rm -rf "$build/seeds/$t"
  mkdir -p "$build/seeds/$t" "$build/corpus/$t" "$build/artifacts" "$build/logs"
  # shellcheck disable=SC2086
  cp $files "$build/seeds/$t/"
  log="$build/logs/$t.log"
  # A finding: crash, sanitizer report, uncaught exception, > 60 s for one
  # input (generous: a loaded shared machine once took 30 s over an input
  # that runs in 0.1 s), or > 2 GB of memory.
  if "$build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=60 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -dict="$here/fuzz/json.dict" -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
      "$build/corpus/$t" "$build/seeds/$t" >"$log" 2>&1; then
    status=ok
  else
    status="FOUND A PROBLEM (see $log)"
  fi
  runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)"
  echo "fuzz $t: $runs executions in $secs s, $cov, corpus $(ls "$build/corpus/$t" | wc -l): $status"
  if [ "$status" != ok ]; then
    grep -m 3 -E 'ERROR|runtime error|fuzz: |Test unit written' "$log" >&2 || true
    return 1
  fi
}

# Each target is single-threaded: run as many at once as there are cores.
for t in "${targets[@]}"; do seeds "$t" >/dev/null; done  # an unknown target fails before any run
failed=0
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
