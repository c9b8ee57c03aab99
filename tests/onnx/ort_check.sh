#!/usr/bin/env bash
# Writes the modified resnet8 inference model with amd_graph_write (test_write
# --resnet8), runs it with `amdnn-onnx run` and in onnxruntime (ort_check.py),
# and compares. Exit 77 (skipped) when onnxruntime is not installed.
# usage: ort_check.sh TEST_WRITE AMDNN_ONNX MODELS_DIR ORT_CHECK_PY
set -eu
test_write=$1 amd=$2 models=$3 script=$4
if ! python3 -c 'import onnxruntime, onnx' 2>/dev/null; then
  echo "SKIP: onnxruntime or onnx cannot be imported by $(command -v python3 || echo 'no python3') (python3 -m pip install onnxruntime onnx)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$test_write" "$models" --resnet8 "$tmp/resnet8.written.onnx"
"$amd" run "$tmp/resnet8.written.onnx" --input "$models/resnet8.input.pb" --output-dir "$tmp/out"
python3 "$script" "$tmp/resnet8.written.onnx" "$models/resnet8.input.pb" "$tmp/out"
