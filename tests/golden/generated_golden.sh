#!/bin/sh
# Golden test for a model too large to commit (ResNet-18/34/50, 45-95 MB):
# exports NAME with tools/export_models.py into WORKDIR (Debian's python3 with
# torch and onnx), then runs both exports (NAME.onnx, eval mode with BN
# folded; NAME_train.onnx, BN in training mode) through run_golden.sh.
# Without torch or onnx the test is skipped (exit 77, printed as SKIP).
#
# usage: generated_golden.sh NAME PYTHON EXPORT_SCRIPT RUN_GOLDEN AMDNN COMPARE WORKDIR
set -u
if [ $# -ne 7 ]; then
  echo "usage: $0 NAME PYTHON EXPORT_SCRIPT RUN_GOLDEN AMDNN COMPARE WORKDIR" >&2
  exit 2
fi
name=$1 python=$2 export_script=$3 run_golden=$4 amdnn=$5 compare=$6 workdir=$7

if ! "$python" -c 'import torch, onnx' >/dev/null 2>&1; then
  echo "SKIP: $python cannot import torch and onnx (Debian python3-torch, python3-onnx); $name golden test not run"
  exit 77
fi

mkdir -p "$workdir" || exit 1
echo "+ $python $export_script --out $workdir --models $name"
"$python" "$export_script" --out "$workdir" --models "$name" || {
  echo "FAIL: export of $name failed"
  exit 1
}

fail=0
for v in "" _train; do
  echo "== $name$v"
  sh "$run_golden" "$workdir/$name$v.onnx" "$workdir/$name.input.pb" \
    "$workdir/$name$v.logits.pb" "$amdnn" "$compare" "$workdir/out$v" || fail=1
done
# The exports are 45-95 MB each: keep them only when something failed.
if [ $fail -eq 0 ]; then
  rm -f "$workdir/$name.onnx" "$workdir/${name}_train.onnx"
fi
exit $fail
