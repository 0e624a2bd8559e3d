#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: each test once, the fast
# ones under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan, clang:
# it compiles the instrumented tree a fifth faster than g++ and its UBSan also
# checks float-to-integer casts; only the tools and those tests' binaries:
# target fast_tests), the
# slow and heavy ones (whole networks) in the optimised build (build, target
# long_tests); then each reader's fuzz target for 10 s (scripts/fuzz.sh),
# built in the sanitizer tree (target fuzz_targets).
#   scripts/test.sh                       # everything
#   CCT_SKIP_SANITIZE=1 scripts/test.sh   # no sanitizer pass: every test in the optimised build
#   CCT_FUZZ_SECONDS=N scripts/test.sh    # fuzz each reader N s after the sanitizer pass (default 10, 0: none)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"
start=$SECONDS
phase() { echo "test.sh: $1 ($((SECONDS - start)) s)"; }

if [ -n "${CCT_SKIP_SANITIZE:-}" ]; then
  "$here/scripts/setup.sh" "$here/build"
  phase "built"
  ctest --test-dir "$here/build" --output-on-failure -j "$jobs" --timeout 1800
else
  CCT_BUILD_TARGET=long_tests "$here/scripts/setup.sh" "$here/build"
  phase "optimised build (tools and long tests) done"
  ctest --test-dir "$here/build" --output-on-failure -j "$jobs" --timeout 1800 -L "slow|heavy"
  phase "slow and heavy tests passed"
  fuzz_secs="${CCT_FUZZ_SECONDS:-10}"
  targets=fast_tests
  if [ "$fuzz_secs" -gt 0 ]; then targets="fast_tests fuzz_targets"; fi
  CC=clang CXX=clang++ CCT_BUILD_TARGET="$targets" "$here/scripts/setup.sh" "$here/build-asan" -DCCT_SANITIZE=ON \
    -DCCT_FUZZ=ON -DCCT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  phase "sanitizer build done"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$here/fuzz/ubsan.supp" \
    ctest --test-dir "$here/build-asan" --output-on-failure -j "$jobs" --timeout 1800 -LE "slow|heavy"
  phase "sanitizer tests passed"
  # Each reader's libFuzzer target for a short while (scripts/fuzz.sh: clang,
  # ASan + UBSan); CCT_FUZZ_SECONDS=0 skips it.
  if [ "$fuzz_secs" -gt 0 ]; then
    CCT_FUZZ_BUILD="$here/build-asan" "$here/scripts/fuzz.sh" "$fuzz_secs"
    phase "fuzzing found nothing"
  fi
fi
phase "all tests passed"
