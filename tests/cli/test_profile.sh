#!/usr/bin/env bash
# --profile on train, eval and bench: the table is printed and the TSV holds every
# stage, and the multiply-accumulates it counts are the model's: per sample,
# `info`'s MACs in the forward GEMMs and in the backward-weights GEMMs, and
# those less the first Conv's in the backward-data GEMMs (the first layer
# gets no data gradient).
# usage: test_profile.sh AMDNN_ONNX MODELS_DIR FASHION_DIR
set -u
amd=$1 models=$2 fashion=$3
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
model="$models/lenet5_train.onnx"
n=640
per_sample=$("$amd" info "$model" | sed -n 's/^MACs per sample: \([0-9]*\).*/\1/p')
first_conv=$((6 * 28 * 28 * 25)) # conv1: 6 maps of 28x28, 1x5x5 each
[ -n "$per_sample" ] || { echo "FAIL: no 'MACs per sample' from info"; exit 1; }

# the MACs a TSV row reports (column 4)
macs() { awk -F'\t' -v w="$2" '$1 == w { print $4 }' "$1"; }
check() { # file, row, expected MACs
  local got
  got=$(macs "$1" "$2")
  [ "$got" = "$3" ] && ok "$(basename "$1"): $2 counts $got MACs" || bad "$(basename "$1"): $2 counts '${got}' MACs, want $3"
}

"$amd" train "$model" --data "mnist:$fashion" --limit $n --batch 64 --epochs 1 --seed 3 -o "$tmp/m.onnx" \
  --profile "$tmp/train.tsv" >"$tmp/t.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "^profile: 10 batches" "$tmp/t.log" && grep -q "backward-weights GEMM" "$tmp/t.log"; then
  ok "train --profile prints the table"
else
  bad "train --profile: exit $rc"; tail -5 "$tmp/t.log"
fi
for row in "forward im2col" "forward GEMM" "backward-data GEMM" "backward-data col2im" "backward-weights im2col" \
  "backward-weights GEMM" "total"; do
  [ -n "$(macs "$tmp/train.tsv" "$row")" ] || bad "train.tsv has no row '$row'"
done
check "$tmp/train.tsv" "forward GEMM" $((per_sample * n))
check "$tmp/train.tsv" "backward-weights GEMM" $((per_sample * n))
check "$tmp/train.tsv" "backward-data GEMM" $(((per_sample - first_conv) * n))
awk -F'\t' '$1 == "forward im2col" && $2 > 0 { f = 1 } $1 == "Relu backward" && $2 > 0 { r = 1 } END { exit !(f && r) }' \
  "$tmp/train.tsv" && ok "im2col and Relu backward took time" || bad "no time recorded for im2col or Relu backward"
# the shares of the disjoint rows add up to the total
awk -F'\t' 'NR > 1 && $1 != "total" { s += $3 } END { exit !(s > 0.98 && s < 1.02) }' "$tmp/train.tsv" \
  && ok "train.tsv: the rows add up to the total" || bad "train.tsv: shares do not add up to 1"

"$amd" eval "$tmp/m.onnx" --data "mnist:$fashion" --limit 300 --batch 100 --profile "$tmp/eval.tsv" >"$tmp/e.log" 2>&1 \
  && grep -q "^profile: 3 batches" "$tmp/e.log" && ok "eval --profile prints the table" || { bad "eval --profile"; tail -5 "$tmp/e.log"; }
check "$tmp/eval.tsv" "forward GEMM" $((per_sample * 300))
check "$tmp/eval.tsv" "backward-data GEMM" 0

"$amd" train "$model" --data "mnist:$fashion" --limit 64 --epochs 1 -o "$tmp/x.onnx" --profile "$tmp/no/such/dir/p.tsv" \
  >"$tmp/b.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "cannot write the profile table" "$tmp/b.log" && ! grep -q "^training " "$tmp/b.log" && ok "an unwritable --profile file: exit 1 before training" \
  || { bad "unwritable --profile: exit $rc"; tail -3 "$tmp/b.log"; }

# bench: the training steps of a random batch, timed, with the same table
"$amd" bench "$model" --device cpu --batch 32 --steps 4 --warmup-steps 1 --profile "$tmp/bench.tsv" >"$tmp/be.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "^bench .*: training, batch 32, mode acc32, cpu: [0-9]* images/s, .* over 4 steps" "$tmp/be.log" &&
  grep -q "^profile: 4 batches" "$tmp/be.log"; then
  ok "bench --profile prints images/s and the table"
else
  bad "bench --profile: exit $rc"; tail -5 "$tmp/be.log"
fi
check "$tmp/bench.tsv" "forward GEMM" $((per_sample * 32 * 4))
check "$tmp/bench.tsv" "backward-data GEMM" $(((per_sample - first_conv) * 32 * 4))
"$amd" bench "$model" --device cpu --infer --batch 16 --steps 2 --mode am16 --profile "$tmp/bi.tsv" >"$tmp/bi.log" 2>&1 \
  && grep -q "inference, batch 16, mode am16" "$tmp/bi.log" && ok "bench --infer --mode am16" || { bad "bench --infer"; tail -3 "$tmp/bi.log"; }
check "$tmp/bi.tsv" "forward GEMM" $((per_sample * 16 * 2))
check "$tmp/bi.tsv" "backward-weights GEMM" 0
"$amd" bench "$model" --steps 0 >"$tmp/bz.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q -- "--steps: 0 is below 1" "$tmp/bz.log" && ok "bench --steps 0: exit 2, says why" \
  || { bad "bench --steps 0: exit $rc"; cat "$tmp/bz.log"; }

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
