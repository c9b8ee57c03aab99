#!/usr/bin/env bash
# The project's test command: every CPU test suite, then the loader, data and
# conformance suites again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
meson test -C build --print-errorlogs "$@"
if [ -d build-asan ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --suite sanitize
fi
