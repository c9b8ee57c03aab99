#!/bin/sh
# Gradient golden test: runs `amdnn-onnx grad` on NAME_train.onnx with the
# training golden batch of models/golden/NAME/ (tools/export_models.py
# --train-goldens) and compares with PyTorch:
#   loss.pb          max |diff| <= 1e-5 * |loss|
#   grads/INIT.pb    max |diff| <= 1e-3 * max |golden gradient| (per tensor)
# Every golden gradient needs a counterpart in OUTDIR and every .pb that the
# command writes besides loss.pb needs a golden: a missing or an unexpected
# gradient fails. Prints the largest difference of each tensor.
#
# DEVICE (optional): passed as --device DEVICE (the GPU suite runs it on cuda).
#
# usage: grad_golden.sh MODEL.onnx GOLDEN_DIR AMDNN COMPARE OUTDIR [DEVICE]
set -u
if [ $# -ne 5 ] && [ $# -ne 6 ]; then
  echo "usage: $0 MODEL.onnx GOLDEN_DIR AMDNN COMPARE OUTDIR [DEVICE]" >&2
  exit 2
fi
model=$1 golden=$2 amdnn=$3 compare=$4 outdir=$5
device=${6:+--device $6}
loss_tol=1e-5
grad_tol=1e-3

for f in "$model" "$golden/input.pb" "$golden/labels.pb" "$golden/loss.pb"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: missing file $f" >&2
    exit 1
  fi
done
ngolden=$(ls "$golden/grads" 2>/dev/null | grep -c '\.pb$')
if [ "$ngolden" -eq 0 ]; then
  echo "FAIL: no golden gradients in $golden/grads" >&2
  exit 1
fi
# A stale output from an earlier run must not pass for this one.
rm -rf "$outdir"
mkdir -p "$outdir" || exit 1

echo "+ $amdnn grad $model --input $golden/input.pb --labels $golden/labels.pb --output-dir $outdir $device"
# shellcheck disable=SC2086 # $device is empty or two words
"$amdnn" grad "$model" --input "$golden/input.pb" --labels "$golden/labels.pb" --output-dir "$outdir" $device
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: amdnn-onnx grad exited with $rc"
  exit 1
fi

fail=0
log=$outdir/compare.log
# check NAME EXPECTED ACTUAL TOL: one line per tensor, compare's full report on failure.
check() {
  if "$compare" "$2" "$3" "$4" >"$log" 2>&1; then
    echo "ok   $1: $(grep '^max diff' "$log" | sed 's/ over .*//')"
  else
    echo "FAIL $1:"
    sed 's/^/       /' "$log"
    fail=1
  fi
}

if [ -f "$outdir/loss.pb" ]; then
  check loss "$golden/loss.pb" "$outdir/loss.pb" $loss_tol
else
  echo "FAIL loss: amdnn-onnx grad wrote no $outdir/loss.pb"
  fail=1
fi

n=0
for g in "$golden"/grads/*.pb; do
  f=$(basename "$g")
  if [ ! -f "$outdir/$f" ]; then
    echo "FAIL ${f%.pb}: no gradient $outdir/$f"
    fail=1
    continue
  fi
  check "${f%.pb}" "$g" "$outdir/$f" $grad_tol
  n=$((n + 1))
done
for a in "$outdir"/*.pb; do
  [ -f "$a" ] || continue
  f=$(basename "$a")
  [ "$f" = loss.pb ] && continue
  if [ ! -f "$golden/grads/$f" ]; then
    echo "FAIL ${f%.pb}: gradient $a has no golden in $golden/grads"
    fail=1
  fi
done
rm -f "$log"

echo "compared loss and $n of $ngolden gradients (tolerance: loss $loss_tol, gradients $grad_tol, relative to max |golden|)"
if [ $fail -ne 0 ]; then
  echo "FAIL"
  exit 1
fi
echo "OK"
