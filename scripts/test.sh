#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: each test once, the fast
# ones under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan, which
# builds only the tools and those tests' binaries: target fast_tests), the
# slow and heavy ones (whole networks) in the optimised build (build, target
# long_tests).
#   scripts/test.sh                       # everything
#   CCT_SKIP_SANITIZE=1 scripts/test.sh   # no sanitizer pass: every test in the optimised build
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
  CCT_BUILD_TARGET=fast_tests "$here/scripts/setup.sh" "$here/build-asan" -DCCT_SANITIZE=ON -DCCT_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
  phase "sanitizer build done"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$here/build-asan" --output-on-failure -j "$jobs" --timeout 1800 -LE "slow|heavy"
fi
phase "all tests passed"
