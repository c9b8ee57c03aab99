#!/usr/bin/env bash
# `amdnn-onnx sweep` and `train --freeze` / `--reinit` on LeNet-5 with a subset of
# Fashion-MNIST (Debian dataset-fashion-mnist):
#  - the TSV has the comment line, the column line and one row per
#    Conv/Gemm/MatMul node plus the baseline and the all-in-MODE row;
#  - with --mode acc32 every row equals the baseline exactly; am16 changes some;
#  - a sweep stopped (--stop-after, a torn last line, and kill -9) and run
#    again keeps its rows and ends with the same TSV as an uninterrupted one;
#  - the bar chart is a PNG;
#  - errors: a bad mode, a model without GEMM nodes, a TSV of another run;
#  - train --freeze: the frozen initializers are bit-identical in the written
#    model, the others changed; an entry that freezes nothing is an error;
#  - train --reinit: fresh weights within PyTorch's 1/sqrt(fan_in), the same
#    from the same --seed, others from another.
# With DEVICE (the GPU suite passes cuda) every sweep and train runs there.
# usage: test_sweep.sh AMDNN_ONNX MODELS_DIR FASHION_DIR [DEVICE]
set -u
amd=$1 models=$2 fashion=$3
dev=()
[ $# -ge 4 ] && dev=(--device "$4")
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
data="mnist:$fashion"
model="$models/lenet5.onnx"
n_gemm=$("$amd" info "$model" | awk '$3 == "Conv" || $3 == "Gemm" || $3 == "MatMul"' | wc -l)
rows() { tail -n +3 "$1" | wc -l; }

# 1. a sweep in am16: one row per GEMM node + baseline + all; the chart
plot=(--plot "$tmp/a.png")
"$amd" sweep --help | grep -q "sweep MODEL.onnx" && ok "--help" || bad "--help"
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/a.tsv" "${plot[@]}" >"$tmp/a.log" 2>"$tmp/a.err"
rc=$?
if grep -q "built without cairo" "$tmp/a.err"; then
  plot=()
  "$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/a.tsv" >"$tmp/a.log" 2>"$tmp/a.err"
  rc=$?
  echo "SKIP bar chart: built without cairo"
fi
if [ $rc -eq 0 ] && [ "$n_gemm" -ge 2 ] && [ "$(rows "$tmp/a.tsv")" -eq $((n_gemm + 2)) ] &&
  head -1 "$tmp/a.tsv" | grep -q "^# amdnn-onnx sweep model=.* mode=am16 limit=1500" &&
  sed -n 2p "$tmp/a.tsv" | grep -q "^node	op	macs	top1	top5	loss	top1_drop	loss_rise	n$" &&
  sed -n 3p "$tmp/a.tsv" | grep -q "^(baseline)	acc32	" && tail -1 "$tmp/a.tsv" | grep -q "^(all)	am16	"; then
  ok "am16 sweep: baseline, $n_gemm node rows, all"
else
  bad "am16 sweep (exit $rc, $n_gemm GEMM nodes)"; cat "$tmp/a.err" "$tmp/a.tsv"
fi
grep -q "^/conv1/Conv	Conv	117600	" "$tmp/a.tsv" && grep -q "^/fc1/Gemm	Gemm	48000	" "$tmp/a.tsv" &&
  ok "MACs per sample of conv1 (117600) and fc1 (48000)" || bad "MACs column"
changed=$(awk -F'\t' 'NR == 3 { b = $4 " " $6 } NR > 3 && ($4 " " $6) != b { n++ } END { print n + 0 }' "$tmp/a.tsv")
[ "$changed" -ge 1 ] && ok "am16 changes top-1 or the loss of $changed rows" || bad "am16 changed nothing"
grep -q "ETA" "$tmp/a.err" && ok "progress lines with ETA on stderr" || bad "no progress lines"
if [ ${#plot[@]} -gt 0 ]; then
  [ "$(head -c 8 "$tmp/a.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] && ok "bar chart PNG" || bad "no PNG"
fi

# 2. acc32: every row is the baseline exactly
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode acc32 --limit 1500 --tsv "$tmp/e.tsv" >/dev/null 2>&1
differ=$(awk -F'\t' 'NR == 3 { b = $4 " " $5 " " $6 } NR > 3 && ($4 " " $5 " " $6) != b { n++ } END { print n + 0 }' "$tmp/e.tsv")
[ "$(rows "$tmp/e.tsv")" -eq $((n_gemm + 2)) ] && [ "$differ" -eq 0 ] && ok "acc32: every row equals the baseline" ||
  { bad "acc32: $differ rows differ from the baseline"; cat "$tmp/e.tsv"; }

# 2b. an 8-bit table mode: each row equals eval with that node (or every node) in the mode
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode q8u:exact --limit 500 --batch 100 --tsv "$tmp/q.tsv" >/dev/null 2>"$tmp/q.err"
rc=$?
row() { awk -F'\t' -v n="$1" '$1 == n { printf "%.2f %.4f", 100 * $4, $6 }' "$tmp/q.tsv"; }
loss6() { awk -F'\t' -v n="$1" '$1 == n { print $6 }' "$tmp/q.tsv"; } # the TSV's full digits
ev() { "$amd" eval "$model" "${dev[@]}" --data "$data" --limit 500 --batch 100 "$@" 2>&1 |
  sed -n 's/^top1 \([0-9.]*\)%.*loss \([0-9.]*\).*/\1 \2/p'; }
q_all=$(row "(all)") e_all=$(ev --mode q8u:exact) q_fc1=$(row /fc1/Gemm) e_fc1=$(ev --mode-map /fc1/Gemm=q8u:exact)
if [ $rc -eq 0 ] && [ -n "$q_all" ] && [ "$q_all" = "$e_all" ] && [ -n "$q_fc1" ] && [ "$q_fc1" = "$e_fc1" ] &&
  [ "$(loss6 '(baseline)')" != "$(loss6 '(all)')" ]; then
  ok "q8u:exact sweep: (all) = eval --mode ($q_all), /fc1/Gemm = eval --mode-map ($q_fc1), not the baseline"
else
  bad "q8u:exact sweep (exit $rc): (all) '$q_all' vs eval '$e_all', fc1 '$q_fc1' vs '$e_fc1'"; cat "$tmp/q.err" "$tmp/q.tsv"
fi

# 3. resume: --stop-after, then a torn last line, then the rest
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/r.tsv" --stop-after 3 >/dev/null 2>&1
rc=$?
[ $rc -eq 3 ] && [ "$(rows "$tmp/r.tsv")" -eq 3 ] && ok "--stop-after 3: exit 3, 3 rows" || bad "--stop-after: exit $rc, $(rows "$tmp/r.tsv") rows"
printf '/fc1/Gemm\tGemm\t480' >>"$tmp/r.tsv" # a row cut by a kill
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/r.tsv" >"$tmp/r.log" 2>"$tmp/r.err"
rc=$?
n_eval=$(grep -c "ETA" "$tmp/r.err")
if [ $rc -eq 0 ] && grep -q "resuming .*3 of $((n_gemm + 2)) rows kept" "$tmp/r.err" && [ "$n_eval" -eq $((n_gemm - 1)) ] &&
  cmp -s "$tmp/a.tsv" "$tmp/r.tsv"; then
  ok "resumed after --stop-after and a torn line: $n_eval rows evaluated, the TSV equals the uninterrupted one"
else
  bad "resume (exit $rc, $n_eval rows evaluated)"; cat "$tmp/r.err"; diff "$tmp/a.tsv" "$tmp/r.tsv"
fi
# kill -9 once the TSV has two rows, then run again
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/k.tsv" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do
  [ -f "$tmp/k.tsv" ] && [ "$(rows "$tmp/k.tsv")" -ge 2 ] && break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
killed=$?
wait $pid 2>/dev/null
before=$(rows "$tmp/k.tsv")
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode am16 --limit 1500 --batch 100 --tsv "$tmp/k.tsv" >/dev/null 2>"$tmp/k.err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$tmp/a.tsv" "$tmp/k.tsv"; then
  [ $killed -eq 0 ] && ok "killed with $before rows, resumed: the TSV equals the uninterrupted one" ||
    ok "(finished before the kill) the TSV equals the uninterrupted one"
else
  bad "resume after kill -9 (exit $rc)"; cat "$tmp/k.err"; diff "$tmp/a.tsv" "$tmp/k.tsv"
fi

# 4. errors
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode nosuch >/dev/null 2>"$tmp/x.err"
rc=$?
[ $rc -eq 2 ] && grep -q "unknown multiplier mode 'nosuch' (valid:" "$tmp/x.err" && ok "a bad mode lists the valid ones" ||
  { bad "bad mode: exit $rc"; cat "$tmp/x.err"; }
"$amd" sweep "$model" "${dev[@]}" --data "$data" --mode mit16 --limit 1500 --tsv "$tmp/a.tsv" >/dev/null 2>"$tmp/x.err"
rc=$?
[ $rc -eq 1 ] && grep -q "written by another sweep.*remove it to start over" "$tmp/x.err" && cmp -s "$tmp/a.tsv" "$tmp/r.tsv" &&
  ok "a TSV of another run is refused and left as it was" || { bad "other run's TSV: exit $rc"; cat "$tmp/x.err"; }
relu=/usr/share/libonnx-testdata/data/node/test_relu/model.onnx
if [ -f "$relu" ]; then
  "$amd" sweep "$relu" "${dev[@]}" --data "$data" --mode am16 >/dev/null 2>"$tmp/x.err"
  rc=$?
  [ $rc -eq 1 ] && grep -q "has no Conv, Gemm or MatMul node" "$tmp/x.err" && ok "a model without GEMM nodes" ||
    { bad "no-GEMM model: exit $rc"; cat "$tmp/x.err"; }
else
  echo "SKIP no-GEMM model: no $relu"
fi
"$amd" sweep "$model" "${dev[@]}" --data "$data" >/dev/null 2>&1
[ $? -eq 2 ] && ok "--mode is required (exit 2)" || bad "missing --mode"

# 5. train --freeze
"$amd" train "$models/lenet5_train.onnx" "${dev[@]}" --data "$data" --limit 1000 --batch 64 --epochs 1 --lr 0.05 \
  --freeze 'conv1.,/fc2/Gemm,fc3.b*' -o "$tmp/f.onnx" >"$tmp/f.log" 2>&1
rc=$?
grep -q "^--freeze: 5 parameter tensors (10330 values) frozen, 5 trained (51376 values): conv1.weight, conv1.bias, fc2.weight, fc2.bias, fc3.bias$" \
  "$tmp/f.log" && [ $rc -eq 0 ] && ok "--freeze 'conv1.,/fc2/Gemm,fc3.b*' (a prefix, a node, a pattern): reported at start" ||
  { bad "--freeze report (exit $rc)"; cat "$tmp/f.log"; }
cmpinit=$(python3 - "$models/lenet5_train.onnx" "$tmp/f.onnx" 2>&1 <<'EOF'
import sys
try:
    import onnx
except ImportError:
    print("SKIP no onnx module"); sys.exit(0)
a = {i.name: i.raw_data or bytes(onnx.numpy_helper.to_array(i).tobytes()) for i in onnx.load(sys.argv[1]).graph.initializer}
b = {i.name: i.raw_data or bytes(onnx.numpy_helper.to_array(i).tobytes()) for i in onnx.load(sys.argv[2]).graph.initializer}
print(" ".join(k + ("=" if a[k] == b[k] else "~") for k in sorted(a)))
EOF
)
want="conv1.bias= conv1.weight= conv2.bias~ conv2.weight~ fc1.bias~ fc1.weight~ fc2.bias= fc2.weight= fc3.bias= fc3.weight~"
if echo "$cmpinit" | grep -q SKIP; then echo "SKIP --freeze weights: $cmpinit"
elif [ "$cmpinit" = "$want" ]; then ok "--freeze: frozen initializers bit-identical, the others trained"
else bad "--freeze weights: $cmpinit"; fi
"$amd" train "$models/lenet5_train.onnx" "${dev[@]}" --data "$data" --limit 100 --epochs 1 --freeze conv9 -o "$tmp/g.onnx" >/dev/null 2>"$tmp/g.err"
rc=$?
[ $rc -eq 1 ] && grep -q "'conv9' matches no trainable parameter" "$tmp/g.err" && [ ! -e "$tmp/g.onnx" ] &&
  ok "--freeze of nothing is an error" || { bad "--freeze conv9: exit $rc"; cat "$tmp/g.err"; }

# 6. train --reinit (lr 1e-30: the written weights are the fresh ones): PyTorch's bounds 1/sqrt(fan_in), the same
# weights from the same --seed, others from another
for sd in 7 7 8; do
  "$amd" train "$models/lenet5_train.onnx" "${dev[@]}" --data "$data" --limit 64 --batch 64 --epochs 1 --lr 1e-30 \
    --reinit --seed $sd -o "$tmp/r$sd.onnx" >"$tmp/r.log" 2>&1 || { bad "train --reinit --seed $sd failed"; cat "$tmp/r.log"; }
  [ $sd = 7 ] && [ ! -e "$tmp/r7a.onnx" ] && cp "$tmp/r7.onnx" "$tmp/r7a.onnx"
done
grep -q -- "--reinit: 10 initializers re-initialised from seed 8" "$tmp/r.log" && ok "--reinit: 10 initializers, reported" ||
  { bad "--reinit report"; cat "$tmp/r.log"; }
reinit=$(python3 - "$models/lenet5_train.onnx" "$tmp/r7a.onnx" "$tmp/r7.onnx" "$tmp/r8.onnx" 2>&1 <<'EOF'
import sys
try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("SKIP no onnx module"); sys.exit(0)
m = [{i.name: numpy_helper.to_array(i) for i in onnx.load(p).graph.initializer} for p in sys.argv[1:]]
fan_in = {"conv1": 25, "conv2": 150, "fc1": 400, "fc2": 120, "fc3": 84}
bad = [k for k in m[0] if k.split(".")[0] in fan_in and
       not (abs(m[1][k]).max() <= fan_in[k.split(".")[0]] ** -0.5 and (m[1][k] != m[0][k]).any())]
same = all((m[1][k] == m[2][k]).all() for k in m[1])
other = all((m[1][k] != m[3][k]).any() for k in m[1] if k.split(".")[0] in fan_in)
print("ok" if not bad and same and other else "bad: bounds %s same seed %s other seed %s" % (bad, same, other))
EOF
)
if echo "$reinit" | grep -q SKIP; then echo "SKIP --reinit weights: $reinit"
elif [ "$reinit" = ok ]; then ok "--reinit: fresh weights within 1/sqrt(fan_in), the same from the same seed, others from another"
else bad "--reinit weights: $reinit"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
