#!/usr/bin/env bash
# tools/plot_runs.c end to end: the LeNet-5 table's committed TSVs as one picture (a PNG of the asked size),
# and clear failures (exit 1 or 2, a message naming the problem) on a missing file, a run without the column,
# an unknown column and a bad --size. Exit 77 when built without cairo.
# usage: plot_runs.sh PLOT_RUNS SOURCE_ROOT OUT_DIR
set -u
tool=$1 src=$2 out=$3
t=$src/results/lenet_table
fails=0
check() { # NAME CONDITION-RESULT
  if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
png=$out/plot_runs_lenet5.png
rm -f "$png"
msg=$("$tool" -o "$png" --size 900x500 --title "LeNet-5, MNIST" "$t/lenet5_torch.tsv=PyTorch FP32" \
  "$t/lenet5_acc32.tsv" "$t/lenet5_am16.tsv" 2>&1)
rc=$?
if [ $rc != 0 ] && echo "$msg" | grep -q 'built without cairo'; then
  echo "SKIP: built without cairo ($msg)"
  exit 77
fi
check "three runs drawn (exit $rc: $msg)" $rc
# the PNG signature and the IHDR's width and height (bytes 16..23, big-endian)
size=$(od -An -tu1 -j16 -N8 "$png" 2>/dev/null | awk '{ printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8 }')
check "a PNG of 900x500 (got ${size:-nothing})" $([ "$size" = 900x500 ] && head -c 4 "$png" | grep -q PNG && echo 0 || echo 1)
msg=$("$tool" -o "$out/x.png" "$t/lenet5_acc32.tsv" "$t/no_such_run.tsv" 2>&1)
check "a missing file: exit 1 naming it ($msg)" $([ $? = 1 ] && echo "$msg" | grep -q 'no_such_run.tsv' && echo 0 || echo 1)
msg=$("$tool" -o "$out/x.png" --column val_top1 "$t/lenet5_acc32.tsv" 2>&1)
check "a run without the column: exit 1 ($msg)" $([ $? = 1 ] && echo "$msg" | grep -q "'lenet5_acc32' has no column val_top1" && echo 0 || echo 1)
msg=$("$tool" -o "$out/x.png" --column top5 "$t/lenet5_acc32.tsv" 2>&1)
check "an unknown column: exit 1 ($msg)" $([ $? = 1 ] && echo "$msg" | grep -q "unknown column 'top5'" && echo 0 || echo 1)
msg=$("$tool" -o "$out/x.png" --size 900 "$t/lenet5_acc32.tsv" 2>&1)
check "a bad --size: exit 2 ($msg)" $([ $? = 2 ] && echo "$msg" | grep -q "not WxH" && echo 0 || echo 1)
msg=$("$tool" "$t/lenet5_acc32.tsv" 2>&1)
check "no -o: exit 2 ($msg)" $([ $? = 2 ] && echo "$msg" | grep -q -- "-o OUT.png is required" && echo 0 || echo 1)
[ ! -e "$out/x.png" ]
check "no picture written by a failed command" $?
[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all plot-runs checks passed"
