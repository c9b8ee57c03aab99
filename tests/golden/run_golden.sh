#!/bin/sh
# Golden test driver: runs MODEL on INPUT with `amdnn-onnx run` and compares
# the output "logits" with EXPECTED (PyTorch's logits, tools/export_models.py).
#
# DEVICE (optional): passed as --device DEVICE (the GPU suite runs it on cuda).
# usage: run_golden.sh MODEL.onnx INPUT.pb EXPECTED.pb AMDNN COMPARE OUTDIR [DEVICE]
# The graph input is named "input" and the output "logits" (see models/README.md).
set -u
if [ $# -ne 6 ] && [ $# -ne 7 ]; then
  echo "usage: $0 MODEL.onnx INPUT.pb EXPECTED.pb AMDNN COMPARE OUTDIR [DEVICE]" >&2
  exit 2
fi
model=$1 input=$2 expected=$3 amdnn=$4 compare=$5 outdir=$6

for f in "$model" "$input" "$expected"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: missing file $f" >&2
    exit 1
  fi
done
mkdir -p "$outdir" || exit 1
# A stale output from an earlier run must not pass for this one.
rm -f "$outdir/logits.pb"

device=${7:+--device $7}
echo "+ $amdnn run $model --input input=$input --output-dir $outdir $device"
# shellcheck disable=SC2086 # $device is empty or two words
"$amdnn" run "$model" --input "input=$input" --output-dir "$outdir" $device
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: amdnn-onnx run exited with $rc"
  exit 1
fi
if [ ! -f "$outdir/logits.pb" ]; then
  echo "FAIL: amdnn-onnx run wrote no $outdir/logits.pb"
  exit 1
fi
echo "+ $compare $expected $outdir/logits.pb"
"$compare" "$expected" "$outdir/logits.pb"
