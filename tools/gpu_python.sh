#!/usr/bin/env bash
# The Python package on a GPU machine, in one command: installs a wheel made
# by `pip wheel .` (docs/python.md) into a folder that the interpreter with
# torch (tools/torch_python.sh) imports first, runs the package's tests there
# (the CUDA and two-GPU ones included, against the given amdnn-onnx for the
# CLI comparisons), then tools/bench_torch_amdnn.py (images/s of amdnn.torch,
# the library and PyTorch FP32, and their ratios). A folder, not a virtual
# environment: the machine's torch may itself live in one.
# usage: tools/gpu_python.sh WHEEL AMDNN_ONNX IDX_DIR [TARGET]
#   AMDNN_ONNX  the tool to compare with (a CUDA build; a wrapper script that
#               sets LD_LIBRARY_PATH will do)
#   IDX_DIR     an IDX data set (MNIST's four files) for the model tests
set -u
[ $# -ge 3 ] || { sed -n '2,13p' "$0"; exit 2; }
wheel=$(realpath "$1") cli=$2 idx=$3 target=${4:-/tmp/amdnn-site}
src=$(cd "$(dirname "$0")/.." && pwd)
py=$("$src/tools/torch_python.sh" torch numpy pytest) || exit 1
rm -rf "$target"
"$py" -m pip install -q --no-deps --target "$target" "$wheel" || exit 1
export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
# outside the tree, so that the installed package is the one imported
cd "$(mktemp -d)" || exit 1
"$py" -c 'import amdnn, torch; print("amdnn", amdnn.__version__, "from", amdnn.__file__, "| torch",
torch.__version__, "| GPUs", torch.cuda.device_count())'
rc=0
AMDNN_ONNX=$cli AMDNN_IDX_DATA=$idx NCCL_NVLS_ENABLE=0 "$py" -m pytest -q -s -rs -p no:cacheprovider \
  "$src/python/tests" || rc=1
"$py" "$src/tools/bench_torch_amdnn.py" --work "$PWD/bench" || rc=1
exit $rc
