#!/usr/bin/env bash
# The project's test command: every CPU test suite, then the sanitize suite
# (loader, data, conformance, ...) again under AddressSanitizer +
# UndefinedBehaviorSanitizer, then (in CI, or with AMD_FUZZ_SECONDS=N) every
# fuzz target for N seconds (CI: 60) on top of its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
meson test -C build --print-errorlogs "$@"
if [ -d build-asan ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --suite sanitize
fi
fuzz_seconds=${AMD_FUZZ_SECONDS:-}
[ -z "$fuzz_seconds" ] && [ "${CI:-}" = true ] && fuzz_seconds=60
if [ -n "$fuzz_seconds" ] && [ "$fuzz_seconds" != 0 ]; then
  FUZZ_SEED=${FUZZ_SEED:-1} fuzz/run.sh "$fuzz_seconds"
fi
