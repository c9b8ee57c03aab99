#!/usr/bin/env bash
# End-to-end training on the GPU from the command line (LeNet-5 on a subset of
# an IDX data set: MNIST or Fashion-MNIST):
#  - two epochs on cuda: the training loss falls and one epoch reaches >= 70%;
#  - the written model reloads: `eval --device cuda` gives the accuracy train
#    reported, `eval --device cpu` agrees within 0.5 points, and so does
#    `eval --tta` on both;
#  - a GPU run stopped (--stop-after, with checkpoints) and resumed on the GPU
#    ends with the same weights, byte for byte, as an uninterrupted GPU run;
#  - am16 and fp16 (dynamic loss scaling) train on the GPU with a finite loss;
#  - batches assembled on the GPU (the default) and on the host (--host-batches)
#    give byte-identical models (uint8 images and float tensors, augmented);
#  - warm training steps make no cudaMalloc (bench: 2 and 40 steps, the same count);
#  - steps queued without waiting for their loss and replayed from a CUDA graph
#    (the default) and --sync-steps give byte-identical models and the same
#    printed losses and accuracies;
#  - a float LeNet-5 in q8u:exact and q8s:exact trains and evaluates on the GPU, its q8 nodes native;
#  - with an approximate 8-bit table and --q8-grad table (the table-derived backward, cuda/q8_grad.h) too:
#    the loss falls, graph replay = --sync-steps, the first epoch's loss near the CPU's;
#  - --lookahead, flip:alt, the triangle schedule: replayed = --sync-steps = --host-batches; --tta-shift on the GPU;
#  - the arena and the block cache (AMD_CUDA_ALLOCATOR=blocks) train the same model, byte for byte, and the
#    arena's run says it holds memory;
#  - AMD_ALLOC_TRACE on the GPU: device lines, balanced (Conv's scratch included), replayed by tools/alloc_replay.py.
# usage: train_gpu.sh AMDNN_ONNX MODELS_DIR IDX_DIR
set -u
amd=$1 models=$2 idx=$3
[ -f "$idx/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no IDX data set in $idx"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
common=(--data "mnist:$idx" --limit 6000 --batch 64 --lr 0.05 --seed 3 --device cuda)

# 1. two epochs learn, the loss falls
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" --epochs 2 -o "$tmp/a.onnx" >"$tmp/a.log" 2>&1
rc=$?
cat "$tmp/a.log"
l1=$(sed -n 's/^epoch 1\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/a.log")
l2=$(sed -n 's/^epoch 2\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/a.log")
a1=$(sed -n 's/^epoch 1\/2 .*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/a.log")
acc=$(sed -n 's/.*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/a.log" | tail -1)
if [ $rc -eq 0 ] && awk -v a="${l1:-0}" -v b="${l2:-9}" -v c="${a1:-0}" 'BEGIN { exit !(b < a && c >= 70) }'; then
  ok "GPU training: loss ${l1} -> ${l2}, epoch-1 test top1 ${a1}%"
else
  bad "GPU training: exit $rc, losses '${l1:-}' '${l2:-}', top1 '${a1:-}'"
fi
grep -q "device cuda" "$tmp/a.log" && ok "the run says it is on the GPU" || bad "no device note"

# 2. reload and evaluate on both devices
"$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cuda >"$tmp/e.log" 2>&1
g=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/e.log")
"$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cpu >"$tmp/c.log" 2>&1
c=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/c.log")
[ -n "$g" ] && [ "$g" = "$acc" ] && ok "eval --device cuda of the written model: top1 $g% as in training" || bad "eval cuda '$g' vs train '$acc'"
awk -v a="${g:-0}" -v b="${c:--9}" 'BEGIN { d = a - b; exit !(d < 0.5 && d > -0.5) }' && ok "eval --device cpu: top1 $c% (cuda $g%)" || bad "eval cpu '$c' vs cuda '$g'"
# test-time augmentation (the mirrored batch made on the GPU, the logits summed there): as on the CPU
"$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cuda --tta >"$tmp/et.log" 2>&1
gt=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/et.log")
"$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cpu --tta >"$tmp/ct.log" 2>&1
ct=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/ct.log")
[ -n "$gt" ] && [ "$gt" != "$g" ] && awk -v a="$gt" -v b="${ct:--9}" 'BEGIN { d = a - b; exit !(d < 0.5 && d > -0.5) }' \
  && ok "eval --tta: top1 $gt% on cuda, $ct% on the cpu (without: $g%)" || bad "eval --tta: cuda '$gt', cpu '$ct', without '$g'"

# 3. stop and resume on the GPU = uninterrupted GPU run
run=(--epochs 2 --augment crop:2,flip)
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run[@]}" -o "$tmp/full.onnx" >/dev/null 2>&1
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run[@]}" --checkpoint-dir "$tmp/ck" --stop-after 50 -o "$tmp/part.onnx" >"$tmp/s1.log" 2>&1
rc1=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run[@]}" --checkpoint-dir "$tmp/ck" --resume -o "$tmp/part.onnx" >"$tmp/s2.log" 2>&1
rc2=$?
if [ $rc1 -eq 3 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/full.onnx" "$tmp/part.onnx"; then
  ok "GPU run stopped at step 50 and resumed: identical weights to the uninterrupted GPU run"
else
  bad "resume: exits $rc1 $rc2, $(cmp "$tmp/full.onnx" "$tmp/part.onnx" 2>&1 | head -1)"; tail -3 "$tmp/s1.log" "$tmp/s2.log"
fi

# 4. emulated multipliers on the GPU
for m in am16 fp16; do
  "$amd" train "$models/lenet5_train.onnx" --data "mnist:$idx" --limit 2048 --batch 64 --lr 0.05 --epochs 1 --mode $m \
    --device cuda -o "$tmp/$m.onnx" >"$tmp/$m.log" 2>&1
  rc=$?
  l=$(sed -n 's/^epoch 1\/1  train loss \([0-9.]*\).*/\1/p' "$tmp/$m.log")
  [ $rc -eq 0 ] && [ -n "$l" ] && ok "--mode $m on the GPU: train loss $l" || { bad "--mode $m: exit $rc"; tail -3 "$tmp/$m.log"; }
done
# 5. batches assembled on the GPU (the default there) = batches assembled on the host, byte for byte:
#    uint8 images with crop, flip and cutout, and float tensors with crop and flip
aug=(--epochs 2 --augment crop:2,flip,cutout:6 --seed 5)
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${aug[@]}" -o "$tmp/dev.onnx" >"$tmp/dev.log" 2>&1
rc1=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${aug[@]}" --host-batches -o "$tmp/host.onnx" >/dev/null 2>&1
rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/dev.onnx" "$tmp/host.onnx" && ! grep -q "assembled on the host" "$tmp/dev.log"; then
  ok "MNIST with crop, flip and cutout: batches made on the GPU give the same model as --host-batches"
else
  bad "GPU batches (uint8): exits $rc1 $rc2, $(cmp "$tmp/dev.onnx" "$tmp/host.onnx" 2>&1 | head -1)"; grep "assembled" "$tmp/dev.log"
fi
g=$models/golden/lenet5
tens=(--data "tensors:$g/input.pb,$g/labels.pb" --batch 3 --epochs 3 --augment crop:3,flip --lr 0.05 --seed 2 --device cuda)
"$amd" train "$models/lenet5_train.onnx" "${tens[@]}" -o "$tmp/tdev.onnx" >/dev/null 2>&1
rc1=$?
"$amd" train "$models/lenet5_train.onnx" "${tens[@]}" --host-batches -o "$tmp/thost.onnx" >/dev/null 2>&1
rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/tdev.onnx" "$tmp/thost.onnx"; then
  ok "float tensors with crop and flip: batches made on the GPU give the same model as --host-batches"
else
  bad "GPU batches (float): exits $rc1 $rc2, $(cmp "$tmp/tdev.onnx" "$tmp/thost.onnx" 2>&1 | head -1)"
fi
# 6. a warm training step takes no new device memory: `bench` (5 untimed steps first) reports as many after
#    40 timed steps as after 2 (LeNet-5 acc32: cuBLAS; ResNet-8 am16: the mode GEMM's split-K workspace, BN)
for spec in "lenet5 acc32" "resnet8 am16"; do
  set -- $spec
  n=()
  for steps in 2 40; do
    n+=("$("$amd" bench "$models/${1}_train.onnx" --batch 32 --steps $steps --mode "$2" --device cuda 2>&1 |
      sed -n 's/.*(\([0-9]*\) device allocations).*/\1/p')")
  done
  if [ -n "${n[0]}" ] && [ "${n[0]}" = "${n[1]}" ]; then
    ok "$1 $2: ${n[0]} device allocations after 2 timed steps and after 40 (none in a warm step)"
  else
    bad "$1 $2: device allocations '${n[0]:-}' after 2 steps, '${n[1]:-}' after 40"
  fi
done
# 7. deferred steps (the default on a GPU) = --sync-steps: the model and every epoch line but the speed
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${aug[@]}" --sync-steps -o "$tmp/sync.onnx" >"$tmp/sync.log" 2>&1
rc=$?
lines() { grep '^epoch' "$1" | sed 's/  [0-9]* img\/s .*//'; }
replayed=$(sed -n 's/^CUDA graph: \([0-9]*\) training steps replayed/\1/p' "$tmp/dev.log")
if [ $rc -eq 0 ] && cmp -s "$tmp/dev.onnx" "$tmp/sync.onnx" && [ -n "$(lines "$tmp/sync.log")" ] &&
  [ "$(lines "$tmp/dev.log")" = "$(lines "$tmp/sync.log")" ] && [ "${replayed:-0}" -gt 0 ]; then
  ok "steps that do not wait for their loss, ${replayed} of them replayed from a CUDA graph, = --sync-steps: the same model and epoch lines ($(lines "$tmp/sync.log" | tail -1))"
else
  bad "deferred steps vs --sync-steps: exit $rc, ${replayed:-no} steps replayed, $(cmp "$tmp/dev.onnx" "$tmp/sync.onnx" 2>&1 | head -1)"
  grep '^CUDA graph' "$tmp/dev.log"
  diff <(lines "$tmp/dev.log") <(lines "$tmp/sync.log")
fi
# 8. a float model in the 8-bit table modes (Conv[q8f], Gemm[q8f] on the GPU, cuda/ops/q8f.cu): no node takes
#    the host fallback, two epochs lower the loss, steps replayed from a CUDA graph (captured while the data
#    ranges calibrate) give the same model as --sync-steps, and eval on the GPU agrees with the CPU
for m in q8u:exact q8s:exact; do
  q8=(--data "mnist:$idx" --limit 2048 --batch 64 --lr 0.05 --seed 4 --epochs 2 --mode $m --device cuda)
  "$amd" train "$models/lenet5_train.onnx" "${q8[@]}" -o "$tmp/q8.onnx" >"$tmp/q8.log" 2>&1
  rc=$?
  "$amd" train "$models/lenet5_train.onnx" "${q8[@]}" --sync-steps -o "$tmp/q8s.onnx" >"$tmp/q8s.log" 2>&1
  rc2=$?
  l1=$(sed -n 's/^epoch 1\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/q8.log")
  l2=$(sed -n 's/^epoch 2\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/q8.log")
  replayed=$(sed -n 's/^CUDA graph: \([0-9]*\) training steps replayed/\1/p' "$tmp/q8.log")
  if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && grep -q "nodes native" "$tmp/q8.log" && ! grep -q "8-bit table nodes" "$tmp/q8.log" &&
    awk -v a="${l1:-0}" -v b="${l2:-9}" 'BEGIN { exit !(b < a) }' && cmp -s "$tmp/q8.onnx" "$tmp/q8s.onnx"; then
    ok "--mode $m on the GPU: the q8 nodes native, loss $l1 -> $l2, ${replayed:-no} steps replayed = --sync-steps"
  else
    bad "--mode $m on the GPU: exits $rc $rc2, losses '${l1:-}' '${l2:-}', $(grep -o 'host fallback:.*' "$tmp/q8.log"), $(cmp "$tmp/q8.onnx" "$tmp/q8s.onnx" 2>&1 | head -1)"
    tail -3 "$tmp/q8.log"
  fi
  "$amd" eval "$tmp/q8.onnx" --data "mnist:$idx" --limit 2048 --mode $m --device cuda >"$tmp/q8e.log" 2>&1
  g=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/q8e.log")
  "$amd" eval "$tmp/q8.onnx" --data "mnist:$idx" --limit 2048 --mode $m --device cpu >"$tmp/q8c.log" 2>&1
  c=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/q8c.log")
  [ -n "$g" ] && awk -v a="$g" -v b="${c:--9}" 'BEGIN { d = a - b; exit !(d < 0.5 && d > -0.5) }' &&
    ok "eval --mode $m: top1 $g% on the GPU, $c% on the CPU" || bad "eval --mode $m: cuda '$g', cpu '$c'"
done
# 9. --q8-grad table on the GPU: a truncated 8-bit multiplier (partial products of columns i + j < 4 left out,
#    as tests/quant/q8_grad_table.py; an AMDQ8TAB file written by python3), LeNet-5 for two epochs of 1024
#    images: the q8f nodes native (none on the host fallback), the loss falls, replayed steps = --sync-steps byte for
#    byte, and the first epoch's training loss within 10 % of the CPU's (the same run there)
if ! command -v python3 >/dev/null; then
  echo "skip --q8-grad table on the GPU: no python3 to write the table"
elif python3 -c '
import struct, sys
t = [sum(((a >> i) & 1) * ((b >> j) & 1) << (i + j) for i in range(8) for j in range(8) if i + j >= 4)
     for a in range(256) for b in range(256)]
with open(sys.argv[1], "wb") as f:
    f.write(b"AMDQ8TAB" + b"u" + bytes([1]) + bytes(6) + struct.pack("<65536i", *t))
' "$tmp/trunc4.amdq8"; then
  tq=(--data "mnist:$idx" --limit 1024 --batch 64 --lr 0.05 --seed 5 --epochs 2 --mode "q8u:$tmp/trunc4.amdq8"
    --q8-grad table)
  "$amd" train "$models/lenet5_train.onnx" "${tq[@]}" --device cuda -o "$tmp/tq.onnx" >"$tmp/tq.log" 2>&1
  rc=$?
  "$amd" train "$models/lenet5_train.onnx" "${tq[@]}" --device cuda --sync-steps -o "$tmp/tqs.onnx" >"$tmp/tqs.log" 2>&1
  rc2=$?
  "$amd" train "$models/lenet5_train.onnx" "${tq[@]}" --device cpu -o "$tmp/tqc.onnx" >"$tmp/tqc.log" 2>&1
  rc3=$?
  l1=$(sed -n 's/^epoch 1\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/tq.log")
  l2=$(sed -n 's/^epoch 2\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/tq.log")
  lc=$(sed -n 's/^epoch 1\/2  train loss \([0-9.]*\).*/\1/p' "$tmp/tqc.log")
  if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && grep -q "table-derived q8 gradients" "$tmp/tq.log" &&
    grep -q "nodes native" "$tmp/tq.log" && ! grep -q "8-bit table nodes" "$tmp/tq.log" && cmp -s "$tmp/tq.onnx" "$tmp/tqs.onnx" &&
    awk -v a="${l1:-0}" -v b="${l2:-9}" -v c="${lc:--9}" 'BEGIN { d = a - c; exit !(b < a && d < 0.1 * c && d > -0.1 * c) }'; then
    ok "--q8-grad table on the GPU (q8u truncated table): the q8 nodes native, loss $l1 -> $l2 (CPU epoch 1: $lc), replayed = --sync-steps"
  else
    bad "--q8-grad table on the GPU: exits $rc $rc2 $rc3, losses '${l1:-}' '${l2:-}' (CPU '${lc:-}'), $(grep -o 'host fallback:.*' "$tmp/tq.log"), $(cmp "$tmp/tq.onnx" "$tmp/tqs.onnx" 2>&1 | head -1)"
    tail -3 "$tmp/tq.log"
  fi
else
  bad "--q8-grad table on the GPU: python3 could not write the table"
fi
# 10. the options from airbench94's recipe on the GPU: --lookahead (its pulls queued in the step's stream
#     between replayed CUDA graphs), flip:alt and the triangle schedule: the deferred, replayed steps = --sync-steps
#     byte for byte, and = --host-batches; --lookahead 1:0 = none; ResNet-8 (BN statistics in the slow copy) too;
#     eval --tta --tta-shift 1 on the GPU (the shifted views made there) within 0.5 points of the CPU's
air=(--epochs 2 --augment crop:2,flip:alt --schedule triangle:0.23:0.2:0.07 --lookahead 3)
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${air[@]}" -o "$tmp/air.onnx" >"$tmp/air.log" 2>&1
rc1=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${air[@]}" --sync-steps -o "$tmp/airs.onnx" >"$tmp/airs.log" 2>&1
rc2=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${air[@]}" --host-batches -o "$tmp/airh.onnx" >/dev/null 2>&1
rc3=$?
replayed=$(sed -n 's/^CUDA graph: \([0-9]*\) training steps replayed/\1/p' "$tmp/air.log")
if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && cmp -s "$tmp/air.onnx" "$tmp/airs.onnx" &&
  cmp -s "$tmp/air.onnx" "$tmp/airh.onnx" && [ "$(lines "$tmp/air.log")" = "$(lines "$tmp/airs.log")" ] && [ "${replayed:-0}" -gt 0 ]; then
  ok "--lookahead 3, flip:alt, triangle: ${replayed} replayed steps = --sync-steps = --host-batches ($(lines "$tmp/air.log" | tail -1))"
else
  bad "--lookahead on the GPU: exits $rc1 $rc2 $rc3, $(cmp "$tmp/air.onnx" "$tmp/airs.onnx" 2>&1 | head -1), $(cmp "$tmp/air.onnx" "$tmp/airh.onnx" 2>&1 | head -1)"
  tail -3 "$tmp/air.log"
fi
r8=(--data "tensors:$models/golden/resnet8/input.pb,$models/golden/resnet8/labels.pb" --batch 4 --epochs 3 --lr 0.05 --device cuda)
"$amd" train "$models/resnet8_train.onnx" "${r8[@]}" -o "$tmp/r8.onnx" >/dev/null 2>&1
rc0=$?
"$amd" train "$models/resnet8_train.onnx" "${r8[@]}" --lookahead 1:0 -o "$tmp/r8n.onnx" >/dev/null 2>&1
rc1=$?
"$amd" train "$models/resnet8_train.onnx" "${r8[@]}" --lookahead 2 -o "$tmp/r8a.onnx" >/dev/null 2>&1
rc2=$?
"$amd" train "$models/resnet8_train.onnx" "${r8[@]}" --lookahead 2 --sync-steps -o "$tmp/r8s.onnx" >/dev/null 2>&1
rc3=$?
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && cmp -s "$tmp/r8.onnx" "$tmp/r8n.onnx" &&
  ! cmp -s "$tmp/r8.onnx" "$tmp/r8a.onnx" && cmp -s "$tmp/r8a.onnx" "$tmp/r8s.onnx"; then
  ok "ResNet-8 on the GPU: --lookahead 1:0 = none; --lookahead 2 changes the model, replayed = --sync-steps"
else
  bad "ResNet-8 --lookahead on the GPU: exits $rc0 $rc1 $rc2 $rc3, $(cmp "$tmp/r8.onnx" "$tmp/r8n.onnx" 2>&1 | head -1), $(cmp "$tmp/r8a.onnx" "$tmp/r8s.onnx" 2>&1 | head -1)"
fi
gt=$("$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cuda --tta --tta-shift 1 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
ct=$("$amd" eval "$tmp/a.onnx" --data "mnist:$idx" --limit 6000 --device cpu --tta --tta-shift 1 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
[ -n "$gt" ] && awk -v a="$gt" -v b="${ct:--9}" 'BEGIN { d = a - b; exit !(d < 0.5 && d > -0.5) }' \
  && ok "eval --tta --tta-shift 1: top1 $gt% on cuda, $ct% on the cpu" || bad "eval --tta --tta-shift 1: cuda '$gt', cpu '$ct'"
# 11. where the memory comes from changes nothing computed: the arena (the default) and the block cache give the
#     same model, byte for byte (LeNet-5, and ResNet-8 with its BatchNormalization), and both report a peak
for spec in "lenet5 common" "resnet8 r8"; do
  set -- $spec
  if [ "$2" = common ]; then args=("${common[@]}" --epochs 1); else args=("${r8[@]}"); fi
  "$amd" train "$models/${1}_train.onnx" "${args[@]}" -o "$tmp/arena_$1.onnx" >"$tmp/arena_$1.log" 2>&1
  rc1=$?
  AMD_CUDA_ALLOCATOR=blocks "$amd" train "$models/${1}_train.onnx" "${args[@]}" -o "$tmp/blocks_$1.onnx" \
    >"$tmp/blocks_$1.log" 2>&1
  rc2=$?
  pa=$(sed -n 's/.*GPU memory: peak \([0-9.]*\) MiB.*/\1/p' "$tmp/arena_$1.log")
  pb=$(sed -n 's/.*GPU memory: peak \([0-9.]*\) MiB.*/\1/p' "$tmp/blocks_$1.log")
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/arena_$1.onnx" "$tmp/blocks_$1.onnx" && [ -n "$pa" ] && [ -n "$pb" ]; then
    ok "$1: the arena's model = the block cache's, byte for byte (peaks $pa and $pb MiB)"
  else
    bad "$1 arena against blocks: exits $rc1 $rc2, $(cmp "$tmp/arena_$1.onnx" "$tmp/blocks_$1.onnx" 2>&1 | head -1), peaks '$pa' '$pb'"
    tail -3 "$tmp/arena_$1.log"
  fi
done
# 12. the CUDA backend's allocation trace (AMD_ALLOC_TRACE): ResNet-8's training writes device lines, frees every
#     block it allocated (Conv's scratch too, taken from the arena for each node: no grow-only workspace lines), and
#     tools/alloc_replay.py replays it (its arena within a fifth of the live peak: 1.05x for the same run's host trace
#     on the CPU)
replay="$(cd "$(dirname "$0")/../.." && pwd)/tools/alloc_replay.py"
if command -v python3 >/dev/null && [ -f "$replay" ]; then
  AMD_ALLOC_TRACE="$tmp/r8.trace" "$amd" train "$models/resnet8_train.onnx" "${r8[@]}" -o "$tmp/r8t.onnx" \
    >"$tmp/r8t.log" 2>&1
  rc=$?
  python3 "$replay" "$tmp/r8.trace" >"$tmp/r8.replay" 2>&1
  na=$(sed -n 's/^trace .*: \([0-9]*\) device allocations, \([0-9]*\) frees$/\1/p' "$tmp/r8.replay")
  nf=$(sed -n 's/^trace .*: \([0-9]*\) device allocations, \([0-9]*\) frees$/\2/p' "$tmp/r8.replay")
  x=$(sed -n 's/^one arena: .* (\([0-9.]*\)x the live peak)$/\1/p' "$tmp/r8.replay")
  if [ $rc -eq 0 ] && [ -n "$na" ] && [ "$na" -gt 0 ] && [ "$na" = "$nf" ] && ! grep -q '^workspaces: ' "$tmp/r8.replay" &&
    awk -v x="${x:-9}" 'BEGIN { exit !(x >= 1 && x <= 1.2) }'; then
    ok "AMD_ALLOC_TRACE on the GPU: $na device allocations, as many frees, the arena at ${x}x the live peak"
  else
    bad "AMD_ALLOC_TRACE on the GPU: exit $rc, '$na' allocations, '$nf' frees, arena '${x}'x"
    head -5 "$tmp/r8.replay"
  fi
else
  echo "skip 12: no python3 or no $replay"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
