#!/usr/bin/env bash
# Data-parallel training under mpirun (issue 6, CPU ranks), on Fashion-MNIST
# (Debian dataset-fashion-mnist) and random tensors for ResNet-8:
#  - mpirun -np 1 = a plain run, byte for byte;
#  - 2 ranks x --batch 32 = 1 rank x --batch 64: the gradients of the first
#    step and the parameters after an epoch (with an uneven last batch) agree
#    within float rounding; with BatchNormalization the same holds with
#    --sync-bn (and without it the difference is large: the check can tell);
#  - every rank holds the same parameters before every step and at the end
#    (AMD_DIST_CHECK=1: the ranks compare checksums; each prints its own);
#  - rank 0 alone writes the model, metrics and checkpoints;
#  - a 1-rank checkpoint resumes on 2 ranks; a 2-rank run stopped and resumed
#    equals the uninterrupted one byte for byte;
#  - a failing rank (error or SIGKILL) ends the job with a message naming it,
#    and the checkpoints written before resume to the same model;
#  - SIGTERM to one rank stops every rank at the same step with a checkpoint;
#  - the gradient sum in buckets started during the backward walk
#    (AMD_DIST_BUCKET_MB) gives the same model byte for byte as one sum after
#    it (LeNet-5, and ResNet-8 with its skip connections): a bucket summed
#    before its last gradient was written would not;
#  - --accumulate 2 in one process = 2 ranks byte for byte (LeNet-5; LeNet-5
#    with Dropout and augmentation; ResNet-8 with per-share BN, augmentation
#    and momentum), its checkpoint resumes on
#    2 ranks to the same bytes, and 2 ranks x --accumulate 2 = 1 x 64.
# usage: test_dist.sh AMDNN_ONNX MODELS_DIR FASHION_DIR mpi|nompi
set -u
amd=$1 models=$2 fashion=$3 built=$4
amd="$(cd "$(dirname "$amd")" && pwd)/$(basename "$amd")" # absolute: ranks start in other folders
here=$(cd "$(dirname "$0")" && pwd)
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian openmpi-bin)"; exit 77; }
[ "$built" = mpi ] || { echo "SKIP: built without MPI (Debian libopenmpi-dev, then reconfigure)"; exit 77; }
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
python3 -c "import onnx, numpy" 2>/dev/null || { echo "SKIP: python3-onnx / python3-numpy missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amdnn-dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# root in a container, 2 cores: Open MPI needs both of these
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { timeout 120 mpirun --oversubscribe "$@"; }
compare() { python3 "$here/compare_models.py" "$@"; }
lenet="$models/lenet5_train.onnx"
# 1999 samples: 31 global batches of 64 and a last one of 15 (7 + 8 on two ranks).
# lr 0.01: at 0.05 the first epoch of this subset is chaotic (float rounding of
# the batch sums, 1e-7 at step 10, grows to 1e-2 by step 31 between any two
# ways of summing, 2 ranks against 4 as well); the first-step check below is
# the tight one.
common=(--data "mnist:$fashion" --limit 1999 --lr 0.01 --seed 3)

# 1. mpirun -np 1 is a plain run
"$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 64 -o "$tmp/one.onnx" >"$tmp/one.log" 2>&1
rc1=$?
mpi -np 1 "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 64 -o "$tmp/np1.onnx" >"$tmp/np1.log" 2>&1
rc=$?
[ $rc1 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$tmp/one.onnx" "$tmp/np1.onnx" && ok "mpirun -np 1: the same model, byte for byte, as a plain run" \
  || { bad "mpirun -np 1: exits $rc1 $rc, $(cmp "$tmp/one.onnx" "$tmp/np1.onnx" 2>&1)"; tail -3 "$tmp/one.log" "$tmp/np1.log"; }

# 2. gradients of the first step: one SGD step without momentum, 64 samples
step1=(--data "mnist:$fashion" --limit 64 --lr 0.05 --seed 3 --momentum 0 --epochs 1)
"$amd" train "$lenet" "${step1[@]}" --batch 64 -o "$tmp/g1.onnx" >"$tmp/g1.log" 2>&1
mpi -np 2 "$amd" train "$lenet" "${step1[@]}" --batch 32 -o "$tmp/g2.onnx" >"$tmp/g2.log" 2>&1
if r=$(compare "$tmp/g1.onnx" "$tmp/g2.onnx" 1e-4 "$lenet"); then ok "first-step gradients, 2 x 32 vs 1 x 64: $r"
else bad "first-step gradients: $r"; tail -3 "$tmp/g2.log"; fi

# 3. one epoch, 32 steps, uneven last batch; checksums before every step
AMD_DIST_CHECK=1 mpi -np 2 -x AMD_DIST_CHECK "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 \
  -o "$tmp/two.onnx" >"$tmp/two.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && r=$(compare "$tmp/one.onnx" "$tmp/two.onnx" 1e-4); then ok "one epoch, 2 x 32 vs 1 x 64 (last batch 7 + 8): $r"
else bad "one epoch 2 x 32: exit $rc, ${r:-}"; tail -5 "$tmp/two.log"; fi
c0=$(sed -n 's/^rank 0: parameter checksum \([0-9a-f]*\)$/\1/p' "$tmp/two.log")
c1=$(sed -n 's/^rank 1: parameter checksum \([0-9a-f]*\)$/\1/p' "$tmp/two.log")
[ -n "$c0" ] && [ "$c0" = "$c1" ] && grep -q "parameters identical on all 2 ranks (checksum $c0)" "$tmp/two.log" \
  && ok "both ranks end with parameter checksum $c0 (and matched before each of the 32 steps)" \
  || bad "checksums: rank 0 '$c0', rank 1 '$c1'"
l1=$(grep -o "train loss [0-9.]* acc [0-9.]*%" "$tmp/one.log") l2=$(grep -o "train loss [0-9.]* acc [0-9.]*%" "$tmp/two.log")
# the global sums: the same loss (to the printed rounding) and accuracy as the 1-rank run
if [ -n "$l1" ] && [ -n "$l2" ] && echo "$l1 $l2" | awk '{ gsub("%", ""); exit !($3 - $8 < 2e-4 && $8 - $3 < 2e-4 && $5 == $10) }'; then
  ok "epoch line from the global sums: '$l2' (1 rank: '$l1')"
else bad "epoch line: '$l1' vs '$l2'"; fi

# 3b. buckets of 10 kB (LeNet-5's 10 tensors in 6 buckets): the same bytes as one sum after the walk
AMD_DIST_BUCKET_MB=0.01 mpi -np 2 -x AMD_DIST_BUCKET_MB "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 \
  -o "$tmp/twob.onnx" >"$tmp/twob.log" 2>&1
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/two.onnx" "$tmp/twob.onnx" && ok "gradients summed in 10 kB buckets during the backward walk: the same model, byte for byte" \
  || { bad "buckets: exit $rc, $(cmp "$tmp/two.onnx" "$tmp/twob.onnx" 2>&1)"; tail -3 "$tmp/twob.log"; }

# 4. rank 0 alone writes: each rank runs in its own folder with relative output paths
mkdir -p "$tmp/r0" "$tmp/r1"
outs=(-o m.onnx --metrics m.tsv --checkpoint-dir ck --checkpoint-steps 10)
mpi -np 1 -wdir "$tmp/r0" "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 "${outs[@]}" : \
  -np 1 -wdir "$tmp/r1" "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 "${outs[@]}" >"$tmp/w.log" 2>&1
rc=$?
[ $rc -eq 0 ] && [ -f "$tmp/r0/m.onnx" ] && [ -f "$tmp/r0/m.tsv" ] && [ -n "$(ls "$tmp/r0/ck")" ] && [ -z "$(ls -A "$tmp/r1")" ] \
  && ok "rank 0 wrote model, metrics, $(ls "$tmp/r0/ck" | wc -l) checkpoints; rank 1's folder stays empty" \
  || { bad "rank-0 writes: exit $rc, r0: $(ls "$tmp/r0" | tr '\n' ' ') r1: $(ls -A "$tmp/r1" | tr '\n' ' ')"; cat "$tmp/w.log"; }
[ "$(grep -c '^wrote m.onnx' "$tmp/w.log")" -eq 1 ] && ok "stdout from rank 0 only" || bad "stdout: $(grep -c '^wrote' "$tmp/w.log") 'wrote' lines"

# 5. resume (one epoch = 32 steps): a 1-rank checkpoint continues on 2 ranks; 2 ranks -> 1 -> 2;
#    2 ranks stopped and resumed = the uninterrupted 2-rank run (two.onnx) byte for byte
run1=("$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 64)
run2=(mpi -np 2 "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32)
"${run1[@]}" --checkpoint-dir "$tmp/ck1" --stop-after 20 -o "$tmp/x.onnx" >"$tmp/s1.log" 2>&1
rca=$?
"${run2[@]}" --checkpoint-dir "$tmp/ck1" --resume -o "$tmp/res.onnx" >"$tmp/s2.log" 2>&1
rcb=$?
if [ $rca -eq 3 ] && [ $rcb -eq 0 ] && grep -q "resuming from .*step 20" "$tmp/s2.log" && r=$(compare "$tmp/one.onnx" "$tmp/res.onnx" 1e-4); then
  ok "1-rank checkpoint at step 20 resumed on 2 ranks, against the 1-rank run: $r"
else bad "resume 1 -> 2 ranks: exits $rca $rcb, ${r:-}"; tail -3 "$tmp/s1.log" "$tmp/s2.log"; fi
"${run2[@]}" --checkpoint-dir "$tmp/ck2" --stop-after 12 -o "$tmp/x.onnx" >"$tmp/t1.log" 2>&1
rca=$?
cp -a "$tmp/ck2" "$tmp/ck3"
"${run1[@]}" --checkpoint-dir "$tmp/ck2" --resume --stop-after 20 -o "$tmp/x.onnx" >"$tmp/t2.log" 2>&1
rcb=$?
"${run2[@]}" --checkpoint-dir "$tmp/ck2" --resume -o "$tmp/part2.onnx" >"$tmp/t3.log" 2>&1
rcc=$?
if [ $rca -eq 3 ] && [ $rcb -eq 3 ] && [ $rcc -eq 0 ] && r=$(compare "$tmp/two.onnx" "$tmp/part2.onnx" 1e-4); then
  ok "2 ranks stopped at step 12, 1 rank to 20, 2 ranks to the end, against the 2-rank run: $r"
else bad "resume 2 -> 1 -> 2 ranks: exits $rca $rcb $rcc, ${r:-}"; tail -3 "$tmp/t1.log" "$tmp/t2.log" "$tmp/t3.log"; fi
"${run2[@]}" --checkpoint-dir "$tmp/ck3" --resume -o "$tmp/part3.onnx" >"$tmp/t4.log" 2>&1
cmp -s "$tmp/two.onnx" "$tmp/part3.onnx" && ok "2 ranks stopped at step 12 and resumed: identical bytes to the uninterrupted run" \
  || { bad "2-rank resume: $(cmp "$tmp/two.onnx" "$tmp/part3.onnx" 2>&1)"; tail -3 "$tmp/t4.log"; }

# 6. a failing rank ends the job, naming it; the checkpoints before stay usable
for kind in error kill; do
  ck="$tmp/ckf-$kind"
  fault="1:10"
  [ $kind = kill ] && fault="1:10:kill"
  start=$(date +%s)
  mpi -np 2 -x AMD_FAULT_RANK="$fault" "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 --checkpoint-dir "$ck" \
    --checkpoint-steps 4 -o "$tmp/f.onnx" >"$tmp/f-$kind.log" 2>&1
  rc=$? took=$(($(date +%s) - start))
  named=0
  if [ $kind = error ]; then grep -q "rank 1 of 2 failed: injected failure (AMD_FAULT_RANK) at step 10" "$tmp/f-$kind.log" && named=1
  else grep -q "process rank 1 .*exited on signal 9" "$tmp/f-$kind.log" && named=1; fi
  steps=$(ls "$ck" 2>/dev/null | tr '\n' ' ')
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $named -eq 1 ] && [ ! -e "$tmp/f.onnx" ] && [ "$steps" = "ckpt-0000000004.amdckpt ckpt-0000000008.amdckpt " ]; then
    ok "rank 1 fails ($kind) before step 10: job ends in ${took}s with exit $rc naming rank 1; checkpoints 4 and 8 kept"
  else bad "failing rank ($kind): exit $rc after ${took}s, named $named, checkpoints: $steps"; tail -12 "$tmp/f-$kind.log"; fi
  "${run2[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/fr.onnx" >"$tmp/fr.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && grep -q "resuming from .*step 8" "$tmp/fr.log" && cmp -s "$tmp/fr.onnx" "$tmp/two.onnx" \
    && ok "resumed from step 8 after the $kind: the uninterrupted run's model, byte for byte" \
    || { bad "resume after $kind: exit $rc, $(cmp "$tmp/fr.onnx" "$tmp/two.onnx" 2>&1)"; tail -3 "$tmp/fr.log"; }
done

# 7. SIGTERM to rank 1 alone: both ranks stop at the same step, rank 0 checkpoints, exit 3
mpirun --oversubscribe -np 2 "$amd" train "$lenet" "${common[@]}" --epochs 40 --batch 32 --checkpoint-dir "$tmp/ckt" \
  -o "$tmp/t.onnx" >"$tmp/sig.log" 2>&1 &
mpid=$!
for _ in $(seq 100); do grep -q "^  epoch 1 batch" "$tmp/sig.log" 2>/dev/null && break; sleep 0.2; done
rank1=$(pgrep -P $mpid | tail -1)
kill -TERM "$rank1" 2>/dev/null
( sleep 60; kill -KILL $mpid 2>/dev/null ) >/dev/null 2>&1 & # (its sleep, left behind by the kill below, must not hold the test's output open)
guard=$!
wait $mpid
rc=$?
kill $guard 2>/dev/null
if [ $rc -eq 3 ] && grep -q "stopped by SIGTERM at epoch" "$tmp/sig.log" && [ -n "$(ls "$tmp/ckt")" ]; then
  ok "SIGTERM to rank 1 (pid $rank1): $(grep -o 'stopped by SIGTERM at epoch [0-9]*, batch [0-9]*' "$tmp/sig.log"), $(ls "$tmp/ckt" | tail -1), exit 3"
else bad "SIGTERM to one rank: exit $rc"; tail -5 "$tmp/sig.log"; fi

# 8. BatchNormalization (ResNet-8, random data): --sync-bn matches the 1-rank gradients; per-rank BN does not
python3 -c "
import numpy as np
from onnx import numpy_helper
g = np.random.default_rng(5)
open('$tmp/X.pb', 'wb').write(numpy_helper.from_array(g.standard_normal((32, 3, 32, 32)).astype(np.float32)).SerializeToString())
open('$tmp/Y.pb', 'wb').write(numpy_helper.from_array(g.integers(0, 10, 32).astype(np.int64)).SerializeToString())"
resnet="$models/resnet8_train.onnx"
bn=(--data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 1 --lr 0.05 --seed 2 --momentum 0)
"$amd" train "$resnet" "${bn[@]}" --batch 32 -o "$tmp/b1.onnx" >"$tmp/b1.log" 2>&1
mpi -np 2 "$amd" train "$resnet" "${bn[@]}" --batch 16 --sync-bn -o "$tmp/b2s.onnx" >"$tmp/b2s.log" 2>&1
mpi -np 2 "$amd" train "$resnet" "${bn[@]}" --batch 16 -o "$tmp/b2.onnx" >"$tmp/b2.log" 2>&1
if r=$(compare "$tmp/b1.onnx" "$tmp/b2s.onnx" 1e-3 "$resnet"); then ok "ResNet-8 first step, 2 x 16 --sync-bn vs 1 x 32 (BN statistics included): $r"
else bad "ResNet-8 --sync-bn: $r"; tail -3 "$tmp/b2s.log"; fi
if r=$(compare "$tmp/b1.onnx" "$tmp/b2.onnx" 1e-3 "$resnet"); then bad "ResNet-8 per-rank BN should differ from 1 x 32: $r"
elif [ -f "$tmp/b2.onnx" ]; then ok "ResNet-8 per-rank BN statistics differ, as they should: $r"
else bad "ResNet-8 per-rank BN: no model"; tail -3 "$tmp/b2.log"; fi
AMD_DIST_BUCKET_MB=0.02 mpi -np 2 -x AMD_DIST_BUCKET_MB "$amd" train "$resnet" "${bn[@]}" --batch 16 -o "$tmp/b2b.onnx" \
  >"$tmp/b2b.log" 2>&1
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/b2.onnx" "$tmp/b2b.onnx" && ok "ResNet-8 gradients in 20 kB buckets: the same model, byte for byte" \
  || { bad "ResNet-8 buckets: exit $rc, $(cmp "$tmp/b2.onnx" "$tmp/b2b.onnx" 2>&1)"; tail -3 "$tmp/b2b.log"; }

# 9. --accumulate N: one process computes N shares in turn as N ranks would, the same model byte for byte
#    (the gradient sum of two shares is the one sum of two ranks); under mpirun the shares multiply
"$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 --accumulate 2 -o "$tmp/acc.onnx" >"$tmp/acc.log" 2>&1
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/two.onnx" "$tmp/acc.onnx" && grep -q "global batch 64 = 1 rank x 2 shares x 32" "$tmp/acc.log" \
  && ok "LeNet-5 --accumulate 2 on one process: the 2-rank model (last batch 7 + 8), byte for byte" \
  || { bad "LeNet-5 --accumulate 2: exit $rc, $(cmp "$tmp/two.onnx" "$tmp/acc.onnx" 2>&1)"; tail -3 "$tmp/acc.log"; }
drop=("$models/lenet5d_train.onnx" --data "mnist:$fashion" --limit 999 --lr 0.01 --seed 3 --epochs 1 --batch 32 --augment crop:2,flip)
mpi -np 2 "$amd" train "${drop[@]}" -o "$tmp/d2.onnx" >"$tmp/d2.log" 2>&1
rc1=$?
"$amd" train "${drop[@]}" --accumulate 2 -o "$tmp/da.onnx" >"$tmp/da.log" 2>&1
rc=$?
[ $rc1 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$tmp/d2.onnx" "$tmp/da.onnx" \
  && ok "LeNet-5 with Dropout, crop + flip: --accumulate 2 = 2 ranks (each share's own streams), byte for byte" \
  || { bad "Dropout --accumulate 2 vs 2 ranks: exits $rc1 $rc, $(cmp "$tmp/d2.onnx" "$tmp/da.onnx" 2>&1)"; tail -3 "$tmp/da.log"; }
bnm=(--data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 2 --lr 0.05 --seed 2 --batch 6 --augment crop:4,flip)
mpi -np 2 "$amd" train "$resnet" "${bnm[@]}" -o "$tmp/bm2.onnx" >"$tmp/bm2.log" 2>&1
rc1=$?
"$amd" train "$resnet" "${bnm[@]}" --accumulate 2 -o "$tmp/bma.onnx" >"$tmp/bma.log" 2>&1
rc=$?
[ $rc1 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$tmp/bm2.onnx" "$tmp/bma.onnx" \
  && ok "ResNet-8, per-share BN, crop + flip, momentum, last batch 8 = 4 + 4: --accumulate 2 = 2 ranks, byte for byte" \
  || { bad "ResNet-8 --accumulate 2 vs 2 ranks: exits $rc1 $rc, $(cmp "$tmp/bm2.onnx" "$tmp/bma.onnx" 2>&1)"; tail -3 "$tmp/bma.log"; }
"$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 32 --accumulate 2 --checkpoint-dir "$tmp/cka" --stop-after 12 \
  -o "$tmp/x.onnx" >"$tmp/a1.log" 2>&1
rca=$?
"${run2[@]}" --checkpoint-dir "$tmp/cka" --resume -o "$tmp/accres.onnx" >"$tmp/a2.log" 2>&1
rcb=$?
[ $rca -eq 3 ] && [ $rcb -eq 0 ] && cmp -s "$tmp/two.onnx" "$tmp/accres.onnx" \
  && ok "--accumulate 2 stopped at step 12, resumed on 2 ranks: the 2-rank model, byte for byte" \
  || { bad "--accumulate 2 -> 2 ranks: exits $rca $rcb, $(cmp "$tmp/two.onnx" "$tmp/accres.onnx" 2>&1)"; tail -3 "$tmp/a1.log" "$tmp/a2.log"; }
mpi -np 2 "$amd" train "$lenet" "${common[@]}" --epochs 1 --batch 16 --accumulate 2 -o "$tmp/acc4.onnx" >"$tmp/acc4.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "global batch 64 = 2 ranks x 2 shares x 16" "$tmp/acc4.log" && r=$(compare "$tmp/one.onnx" "$tmp/acc4.onnx" 1e-4); then
  ok "2 ranks x --accumulate 2 x 16 vs 1 x 64: $r"
else bad "2 ranks x --accumulate 2: exit $rc, ${r:-}"; tail -3 "$tmp/acc4.log"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
