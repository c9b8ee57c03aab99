#!/bin/sh
# `amdnn-onnx grad` on the CPU and on the GPU for the same model and batch:
# the loss and every parameter gradient must agree (compare: max |diff| <=
# TOL * max |cpu|), and both must write the same set of files.
# TIER: the GPU's --gemm (fast, the default, or exact; docs/multipliers.md
# section 8). In am16 the exact tier is the CPU's arithmetic; the fast one sums
# the same products in another order, and a last-bit difference in a sum can
# move a later operand across one of am16's truncation steps (2^-7): in
# ResNet-8's first layers that reaches about 4e-4 of the largest gradient, so
# it runs at a looser TOL.
# usage: grad_cpu_vs_cuda.sh AMDNN COMPARE MODEL.onnx GOLDEN_DIR OUTDIR MODE TOL [TIER]
set -u
if [ $# -ne 7 ] && [ $# -ne 8 ]; then
  echo "usage: $0 AMDNN COMPARE MODEL.onnx GOLDEN_DIR OUTDIR MODE TOL [TIER]" >&2
  exit 2
fi
amdnn=$1 compare=$2 model=$3 golden=$4 outdir=$5 mode=$6 tol=$7 tier=${8:-fast}
rm -rf "$outdir"
mkdir -p "$outdir" || exit 1
for dev in cpu cuda; do
  echo "+ $amdnn grad $model --input $golden/input.pb --labels $golden/labels.pb --mode $mode --gemm $tier --device $dev"
  "$amdnn" grad "$model" --input "$golden/input.pb" --labels "$golden/labels.pb" --mode "$mode" --gemm "$tier" \
    --output-dir "$outdir/$dev" --device "$dev" || { echo "FAIL: grad on $dev"; exit 1; }
done
fail=0 n=0
for f in "$outdir"/cpu/*.pb; do
  b=$(basename "$f")
  if [ ! -f "$outdir/cuda/$b" ]; then
    echo "FAIL ${b%.pb}: missing on cuda"
    fail=1
    continue
  fi
  if "$compare" "$f" "$outdir/cuda/$b" "$tol" >"$outdir/cmp.log" 2>&1; then
    echo "ok   ${b%.pb}: $(grep '^max diff' "$outdir/cmp.log" | sed 's/ over .*//')"
  else
    echo "FAIL ${b%.pb}:"
    sed 's/^/       /' "$outdir/cmp.log"
    fail=1
  fi
  n=$((n + 1))
done
[ "$(ls "$outdir"/cuda/*.pb | wc -l)" -eq "$n" ] || { echo "FAIL: cuda wrote other files than cpu"; fail=1; }
[ $n -gt 1 ] || { echo "FAIL: no gradients compared"; fail=1; }
echo "$n tensors compared, mode $mode, GPU tier $tier"
exit $fail
