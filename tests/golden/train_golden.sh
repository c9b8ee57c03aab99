#!/bin/sh
# Training golden test: trains NAME_train.onnx for 3 steps of SGD on the
# training golden batch of models/golden/NAME/ (one batch of 16 per epoch,
# no shuffling) with `amdnn-onnx train`, dumps the initializers of the saved
# model (extract_initializers.py, Debian python3-onnx) and compares them with
# PyTorch's parameters and BatchNormalization running statistics after the
# same 3 steps (step3/INIT.pb): max |diff| <= 1e-3 * max |golden| per tensor.
# The updates (trained - initial) are compared too, max |diff| <= 3e-3 *
# max |golden update| (tensor_delta.py): the values alone would let through
# what moves a tensor by less than 1e-3 of its size in 3 steps, such as
# missing weight decay (values off by 1.4e-4 relative, updates by 1.4e-2) or
# the biased batch variance in the running variance update (2.7e-4, 8e-3).
# 3e-3 rather than 1e-3: a running variance moves by ~1e-3 of its value in
# 3 steps, so a few float32 roundings of the value are ~1e-4 of its update.
# The saved model must have the same initializers as MODEL (a missing or an
# extra one fails); initializers without a step3 golden (none in the
# committed models) must be unchanged, bit for bit. Without onnx in PYTHON
# the test is skipped (exit 77).
#
# DEVICE (optional): passed as --device DEVICE (the GPU suite runs it on cuda).
#
# usage: train_golden.sh MODEL.onnx GOLDEN_DIR AMDNN COMPARE PYTHON EXTRACT_PY DELTA_PY OUTDIR [DEVICE]
set -u
if [ $# -ne 8 ] && [ $# -ne 9 ]; then
  echo "usage: $0 MODEL.onnx GOLDEN_DIR AMDNN COMPARE PYTHON EXTRACT_PY DELTA_PY OUTDIR [DEVICE]" >&2
  exit 2
fi
model=$1 golden=$2 amdnn=$3 compare=$4 python=$5 extract=$6 delta=$7 outdir=$8
device=${9:-}
tol=1e-3
update_tol=3e-3

if ! "$python" -c 'import onnx' >/dev/null 2>&1; then
  echo "SKIP: $python cannot import onnx (Debian python3-onnx); training golden test not run"
  exit 77
fi
for f in "$model" "$golden/input.pb" "$golden/labels.pb" "$extract" "$delta"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: missing file $f" >&2
    exit 1
  fi
done
ngolden=$(ls "$golden/step3" 2>/dev/null | grep -c '\.pb$')
if [ "$ngolden" -eq 0 ]; then
  echo "FAIL: no golden tensors in $golden/step3" >&2
  exit 1
fi
# A stale output from an earlier run must not pass for this one.
rm -rf "$outdir"
mkdir -p "$outdir" || exit 1
trained=$outdir/trained.onnx

set -- train "$model" --data "tensors:$golden/input.pb,$golden/labels.pb" --epochs 3 --batch 16 \
  --optimizer sgd --lr 0.05 --momentum 0.9 --wd 5e-4 --schedule constant --no-shuffle -o "$trained"
[ -n "$device" ] && set -- "$@" --device "$device"
echo "+ $amdnn $*"
"$amdnn" "$@"
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: amdnn-onnx train exited with $rc"
  exit 1
fi
if [ ! -f "$trained" ]; then
  echo "FAIL: amdnn-onnx train wrote no $trained"
  exit 1
fi
"$python" "$extract" "$trained" "$outdir/trained" >/dev/null || {
  echo "FAIL: cannot read the initializers of $trained"
  exit 1
}
"$python" "$extract" "$model" "$outdir/original" >/dev/null || {
  echo "FAIL: cannot read the initializers of $model"
  exit 1
}

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

for o in "$outdir"/trained/*.pb; do
  [ -f "$o" ] || continue
  f=$(basename "$o")
  if [ ! -f "$outdir/original/$f" ]; then
    echo "FAIL ${f%.pb}: initializer of $trained that $model does not have"
    fail=1
  fi
done
n=0
for o in "$outdir"/original/*.pb; do
  f=$(basename "$o")
  if [ ! -f "$outdir/trained/$f" ]; then
    echo "FAIL ${f%.pb}: initializer missing from $trained"
    fail=1
  elif [ -f "$golden/step3/$f" ]; then
    check "${f%.pb}" "$golden/step3/$f" "$outdir/trained/$f" $tol
    n=$((n + 1))
  else
    check "${f%.pb} (no golden: unchanged)" "$o" "$outdir/trained/$f" 0
  fi
done
for g in "$golden"/step3/*.pb; do
  f=$(basename "$g")
  if [ ! -f "$outdir/original/$f" ]; then
    echo "FAIL ${f%.pb}: golden $g names no initializer of $model"
    fail=1
  fi
done

echo "== updates after 3 steps (trained - initial)"
"$python" "$delta" "$golden/step3" "$outdir/original" "$outdir/golden_update" &&
  "$python" "$delta" "$outdir/trained" "$outdir/original" "$outdir/update" || {
  echo "FAIL: cannot compute the updates"
  fail=1
}
nu=0
for g in "$outdir"/golden_update/*.pb; do
  [ -f "$g" ] || continue
  f=$(basename "$g")
  [ -f "$outdir/update/$f" ] || continue # reported above
  check "${f%.pb} update" "$g" "$outdir/update/$f" $update_tol
  nu=$((nu + 1))
done
rm -f "$log"

echo "compared $n of $ngolden tensors after 3 SGD steps (tolerance $tol relative to max |golden|)" \
  "and $nu updates (tolerance $update_tol relative to max |golden update|)"
if [ $fail -ne 0 ]; then
  echo "FAIL"
  exit 1
fi
echo "OK"
