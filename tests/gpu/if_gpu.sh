#!/bin/sh
# Runs CMD only where a CUDA device is usable: PROBE --probe (test_backend_ops)
# exits 0 with a GPU and 77 (printing SKIP and the reason) without one.
# usage: if_gpu.sh PROBE CMD [ARGS...]
set -u
probe=$1
shift
"$probe" --probe
rc=$?
[ $rc -eq 0 ] || exit $rc
exec "$@"
