#!/usr/bin/env bash
# Installs, builds and runs the whole test suite, then the sanitizer pass
# (AddressSanitizer + UndefinedBehaviorSanitizer) over the same tests.
#   scripts/test.sh            # everything
#   CCT_SKIP_SANITIZE=1 scripts/test.sh   # without the sanitizer pass
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"

"$here/scripts/setup.sh" "$here/build"
ctest --test-dir "$here/build" --output-on-failure -j "$jobs" --timeout 900

if [ -z "${CCT_SKIP_SANITIZE:-}" ]; then
  "$here/scripts/setup.sh" "$here/build-asan" -DCCT_SANITIZE=ON -DCCT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$here/build-asan" --output-on-failure -j "$jobs" --timeout 1800 -LE "slow|heavy"
fi
echo "all tests passed"
