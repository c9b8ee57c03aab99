#!/usr/bin/env bash
# The project's test command: every CPU test suite, then the Python
# package's tests (pytest in .venv, which tools/setup.sh makes; the CUDA ones
# skip without a GPU), then the sanitize suite (loader, data, conformance,
# ...) again under AddressSanitizer + UndefinedBehaviorSanitizer, then (in CI,
# or with AMD_FUZZ_SECONDS=N) every fuzz target for N seconds (CI: 60) on top
# of its seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
meson test -C build --print-errorlogs "$@"
if [ -x .venv/bin/python ]; then
  AMDNN_ONNX="$PWD/build/src/amdnn-onnx" .venv/bin/python -m pytest -q -p no:cacheprovider -rs python/tests
elif [ "${AMD_SKIP_PYTHON:-0}" != 1 ]; then
  echo "test: no .venv with the Python package: run tools/setup.sh (or AMD_SKIP_PYTHON=1 to leave it out)" >&2
  exit 1
fi
if [ -d build-asan ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --suite sanitize
fi
fuzz_seconds=${AMD_FUZZ_SECONDS:-}
[ -z "$fuzz_seconds" ] && [ "${CI:-}" = true ] && fuzz_seconds=60
if [ -n "$fuzz_seconds" ] && [ "$fuzz_seconds" != 0 ]; then
  FUZZ_SEED=${FUZZ_SEED:-1} fuzz/run.sh "$fuzz_seconds"
fi
