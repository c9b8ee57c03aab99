#!/usr/bin/env bash
# GPU ranks through NCCL (issue 6), LeNet-5 on an IDX data set (MNIST or
# Fashion-MNIST) and ResNet-8 on random tensors.
#  one: runs on a single GPU
#   - AMD_DIST=nccl under mpirun -np 1 (every step's gradient block goes
#     through a one-rank ncclAllReduce) trains the same model, byte for byte,
#     as the plain single-process GPU run; ResNet-8 too (its BatchNormalization
#     statistics go through NCCL after each step as well); with the gradient
#     sums in buckets on a second stream during the backward pass
#     (AMD_DIST_BUCKET_MB) as well;
#   - ResNet-8 with --sync-bn (BatchNormalization sums through MPI every step)
#     against the plain GPU run, within tolerance;
#   - ResNet-8 with --accumulate 2 (two shares in turn) against two CPU ranks;
#   - two ranks on one GPU (--device cuda:0 on both) are refused, naming them.
#  two, or N (2, 4, 8): needs N GPUs (else exit 77, "SKIP: needs N GPUs")
#   - mpirun -np N --batch 64/N on N GPUs against one process --batch 64: the
#     first step's update and the parameters after an epoch (with an uneven
#     last batch, shared unevenly by the ranks) agree within tolerance; each
#     rank drives its own GPU;
#   - the ranks' parameter checksums agree before every step and at the end
#     (AMD_DIST_CHECK=1);
#   - --accumulate N on one GPU gives the model of N GPUs (byte for byte
#     with 2);
#   - the gradients summed in buckets during the backward pass give the same
#     model as one sum after it: byte for byte with 2 ranks, within rounding
#     with more (NCCL's ring order depends on where a value falls in the
#     buffer, and buckets cut other buffers);
#   - the last rank failing (an error, SIGKILL) ends the job, named; rank 0
#     hanging makes the others give up the NCCL all-reduce after
#     AMD_NCCL_TIMEOUT_S, abort NCCL and end the job, naming themselves.
# usage: dist_gpu.sh one|two|N AMDNN_ONNX MODELS_DIR IDX_DIR COMPARE_MODELS_PY
set -u
part=$1 amd=$2 models=$3 idx=$4 compare_py=$5
amd="$(cd "$(dirname "$amd")" && pwd)/$(basename "$amd")"
[ -f "$idx/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no IDX data set in $idx"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
ldd "$amd" | grep -q libnccl || { echo "SKIP: $amd is built without NCCL"; exit 77; }
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  gpus=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
[ "$part" = two ] && part=2
n=0
[ "$part" != one ] && n=$part
case "$n" in 0 | 2 | 4 | 8) ;; *) echo "dist_gpu.sh: one, two or a rank count of 2, 4 or 8 (64 samples split evenly)"; exit 2 ;; esac
[ "$n" -gt 0 ] && [ "$gpus" -lt "$n" ] && { echo "SKIP: needs $n GPUs (found $gpus)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amdnn-nccl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_NVLS_ENABLE=0 # no NVLink multicast (it can take shared GPUs out of service)
mpi() { timeout 300 mpirun -x LD_LIBRARY_PATH -x NCCL_DEBUG -x NCCL_NVLS_ENABLE "$@"; }
compare() { python3 "$compare_py" "$@"; }
lenet="$models/lenet5_train.onnx"

if [ "$part" = one ]; then
  common=(--data "mnist:$idx" --limit 2048 --batch 64 --lr 0.05 --seed 3 --epochs 1 --device cuda)
  "$amd" train "$lenet" "${common[@]}" -o "$tmp/plain.onnx" >"$tmp/plain.log" 2>&1
  rc1=$?
  AMD_DIST=nccl mpi -np 1 -x AMD_DIST "$amd" train "$lenet" "${common[@]}" -o "$tmp/nccl1.onnx" >"$tmp/nccl1.log" 2>&1
  rc=$?
  if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && grep -q "^1 rank (NCCL)" "$tmp/nccl1.log" && cmp -s "$tmp/plain.onnx" "$tmp/nccl1.onnx"; then
    ok "LeNet-5, AMD_DIST=nccl under mpirun -np 1: the plain GPU run's model, byte for byte"
  else
    bad "LeNet-5 one-rank NCCL: exits $rc1 $rc, $(cmp "$tmp/plain.onnx" "$tmp/nccl1.onnx" 2>&1)"
    tail -5 "$tmp/plain.log" "$tmp/nccl1.log"
  fi
  AMD_DIST=nccl AMD_DIST_BUCKET_MB=0.01 mpi -np 1 -x AMD_DIST -x AMD_DIST_BUCKET_MB "$amd" train "$lenet" "${common[@]}" \
    -o "$tmp/nccl1b.onnx" >"$tmp/nccl1b.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && cmp -s "$tmp/plain.onnx" "$tmp/nccl1b.onnx"; then
    ok "LeNet-5, one-rank NCCL with 10 kB gradient buckets on a second stream: the plain GPU run's model, byte for byte"
  else
    bad "LeNet-5 one-rank NCCL buckets: exit $rc, $(cmp "$tmp/plain.onnx" "$tmp/nccl1b.onnx" 2>&1)"
    tail -5 "$tmp/nccl1b.log"
  fi
  if python3 -c "import numpy, onnx" 2>/dev/null; then
    python3 -c "
import numpy as np
from onnx import numpy_helper
g = np.random.default_rng(5)
open('$tmp/X.pb', 'wb').write(numpy_helper.from_array(g.standard_normal((64, 3, 32, 32)).astype(np.float32)).SerializeToString())
open('$tmp/Y.pb', 'wb').write(numpy_helper.from_array(g.integers(0, 10, 64).astype(np.int64)).SerializeToString())"
    bn=(--data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 2 --batch 32 --lr 0.05 --seed 2 --device cuda)
    "$amd" train "$models/resnet8_train.onnx" "${bn[@]}" -o "$tmp/r1.onnx" >"$tmp/r1.log" 2>&1
    rc1=$?
    AMD_DIST=nccl mpi -np 1 -x AMD_DIST "$amd" train "$models/resnet8_train.onnx" "${bn[@]}" -o "$tmp/rn.onnx" \
      >"$tmp/rn.log" 2>&1
    rc=$?
    if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && cmp -s "$tmp/r1.onnx" "$tmp/rn.onnx"; then
      ok "ResNet-8 (BN statistics through NCCL too), one-rank NCCL: the plain GPU run's model, byte for byte"
    else
      bad "ResNet-8 one-rank NCCL: exits $rc1 $rc, $(cmp "$tmp/r1.onnx" "$tmp/rn.onnx" 2>&1)"
      tail -5 "$tmp/r1.log" "$tmp/rn.log"
    fi
    # --sync-bn on GPUs: the BN sums of every step go through the host and MPI (one rank here: the
    # same statistics, summed around the running mean instead of each channel's first element)
    AMD_DIST=nccl mpi -np 1 -x AMD_DIST "$amd" train "$models/resnet8_train.onnx" "${bn[@]}" --sync-bn \
      -o "$tmp/rs.onnx" >"$tmp/rs.log" 2>&1
    rc=$?
    if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && grep -q "BatchNormalization synchronised" "$tmp/rs.log" &&
      d=$(compare "$tmp/r1.onnx" "$tmp/rs.onnx" 1e-4); then
      ok "ResNet-8 --sync-bn on a GPU, one-rank NCCL: the plain GPU run's model within 1e-4 ($d)"
    else
      bad "ResNet-8 --sync-bn one-rank NCCL: exits $rc1 $rc ${d:-}"
      tail -5 "$tmp/rs.log"
    fi
  else
    echo "(no python3 numpy + onnx: the ResNet-8 check is left out)"
  fi
  # --accumulate 2 on a GPU (per-share BN, crop + flip, momentum) against 2 CPU ranks (MPI), which
  # test_dist.sh shows to be --accumulate 2 on the CPU byte for byte
  if [ -f "$tmp/Y.pb" ]; then
    acc=(--data "tensors:$tmp/X.pb,$tmp/Y.pb" --limit 24 --epochs 1 --batch 12 --lr 0.05 --momentum 0 --seed 2 --augment crop:4,flip)
    "$amd" train "$models/resnet8_train.onnx" "${acc[@]}" --accumulate 2 --device cuda -o "$tmp/ag.onnx" >"$tmp/ag.log" 2>&1
    rc1=$?
    mpi -np 2 "$amd" train "$models/resnet8_train.onnx" "${acc[@]}" --device cpu -o "$tmp/ac.onnx" >"$tmp/ac.log" 2>&1
    rc=$?
    if [ $rc1 -eq 0 ] && [ $rc -eq 0 ] && grep -q "global batch 24 = 1 rank x 2 shares x 12" "$tmp/ag.log" &&
      d=$(compare "$tmp/ac.onnx" "$tmp/ag.onnx" 1e-3 "$models/resnet8_train.onnx"); then
      ok "ResNet-8 --accumulate 2 on a GPU against 2 CPU ranks, one step, within 1e-3 of the update ($d)"
    else
      bad "ResNet-8 --accumulate 2 on a GPU: exits $rc1 $rc ${d:-}"
      tail -5 "$tmp/ag.log" "$tmp/ac.log"
    fi
  fi
  mpi -np 2 "$amd" train "$lenet" "${common[@]}" --device cuda:0 -o "$tmp/x.onnx" >"$tmp/same.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "ranks 0 and 1 both drive GPU" "$tmp/same.log" && [ ! -e "$tmp/x.onnx" ]; then
    ok "two ranks on one GPU refused: $(grep -o 'ranks 0 and 1 both drive GPU [^:]*' "$tmp/same.log" | head -1)"
  else
    bad "two ranks on one GPU: exit $rc"
    tail -5 "$tmp/same.log"
  fi
fi

if [ "$n" -gt 0 ]; then
  python3 -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: python3 numpy + onnx missing (compare_models.py)"; exit 77; }
  per=$((64 / n)) last=$((n - 1))
  # 1. the first step's update (SGD without momentum: the gradients), N x 64/N against 1 x 64
  step1=(--data "mnist:$idx" --limit 64 --lr 0.05 --seed 3 --momentum 0 --epochs 1 --device cuda)
  "$amd" train "$lenet" "${step1[@]}" --batch 64 -o "$tmp/g1.onnx" >"$tmp/g1.log" 2>&1
  mpi -np "$n" "$amd" train "$lenet" "${step1[@]}" --batch $per -o "$tmp/g2.onnx" >"$tmp/g2.log" 2>&1
  if r=$(compare "$tmp/g1.onnx" "$tmp/g2.onnx" 1e-3 "$lenet"); then ok "first-step update, $n GPUs x $per vs 1 x 64: $r"
  else bad "first-step update: $r"; tail -5 "$tmp/g1.log" "$tmp/g2.log"; fi

  # 2. an epoch of 32 steps with an uneven last batch (15 samples over the ranks), checksums before every step
  common=(--data "mnist:$idx" --limit 1999 --lr 0.01 --seed 3 --epochs 1 --device cuda)
  "$amd" train "$lenet" "${common[@]}" --batch 64 -o "$tmp/one.onnx" >"$tmp/one.log" 2>&1
  AMD_DIST_CHECK=1 mpi -np "$n" -x AMD_DIST_CHECK "$amd" train "$lenet" "${common[@]}" --batch $per -o "$tmp/two.onnx" \
    >"$tmp/two.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && r=$(compare "$tmp/one.onnx" "$tmp/two.onnx" 1e-3); then ok "one epoch, $n GPUs x $per vs 1 x 64: $r"
  else bad "one epoch on $n GPUs: exit $rc, ${r:-}"; tail -8 "$tmp/two.log"; fi
  grep -q "^$n ranks (NCCL): global batch 64" "$tmp/two.log" && ok "the run says: $(grep "^$n ranks" "$tmp/two.log")" \
    || bad "no '$n ranks (NCCL)' line"
  devices=$(grep -o 'device cuda:[0-9]*' "$tmp/two.log" | sort -u | tr '\n' ' ')
  [ "$(grep -o 'device cuda:[0-9]*' "$tmp/two.log" | sort -u | wc -l)" -eq "$n" ] \
    && ok "each rank on its own GPU: $devices" || bad "devices: $devices"
  c0=$(sed -n 's/^rank 0: parameter checksum \([0-9a-f]*\)$/\1/p' "$tmp/two.log")
  same=1
  for r in $(seq 1 $last); do
    [ "$(sed -n "s/^rank $r: parameter checksum \([0-9a-f]*\)$/\1/p" "$tmp/two.log")" = "$c0" ] || same=0
  done
  [ -n "$c0" ] && [ $same -eq 1 ] && grep -q "parameters identical on all $n ranks (checksum $c0)" "$tmp/two.log" \
    && ok "all $n ranks end with parameter checksum $c0 (and matched before each of the 32 steps)" \
    || bad "checksums differ between the ranks (rank 0: '$c0')"

  # same_model WHAT OUT LOG RC: OUT (exit RC, log LOG) against the N-GPU run two.onnx: with 2 ranks the
  # same bytes (a + b is a + b in any order); with more, NCCL's ring adds a value's N terms in an order
  # set by the chunk of the buffer it falls in, so the same model within rounding
  same_model() {
    local what=$1 m=$2 log=$3 rc=$4 r
    if [ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && cmp -s "$tmp/two.onnx" "$m"; then
      ok "$what: the same model, byte for byte"
    elif [ "$rc" -eq 0 ] && [ "$n" -gt 2 ] && r=$(compare "$tmp/two.onnx" "$m" 1e-5); then
      ok "$what: the same model within rounding: $r"
    else
      bad "$what: exit $rc, $(cmp "$tmp/two.onnx" "$m" 2>&1), $(compare "$tmp/two.onnx" "$m" 1e-6)"
      tail -5 "$log"
    fi
  }

  # 2b. the gradients in 10 kB buckets during the backward pass (the buckets cut other buffers than
  #     one sum does)
  AMD_DIST_BUCKET_MB=0.01 mpi -np "$n" -x AMD_DIST_BUCKET_MB "$amd" train "$lenet" "${common[@]}" --batch $per \
    -o "$tmp/twob.onnx" >"$tmp/twob.log" 2>&1
  same_model "$n GPUs, gradients summed in 10 kB buckets overlapping the backward pass" "$tmp/twob.onnx" \
    "$tmp/twob.log" $?

  # 2c. --accumulate N on one GPU: the shares of the N ranks in turn
  "$amd" train "$lenet" "${common[@]}" --batch $per --accumulate "$n" -o "$tmp/acc.onnx" >"$tmp/acc.log" 2>&1
  same_model "--accumulate $n on one GPU against $n GPUs" "$tmp/acc.onnx" "$tmp/acc.log" $?

  # 3. the last rank failing ends the job, named
  for kind in error kill; do
    fault="$last:5"
    [ $kind = kill ] && fault="$last:5:kill"
    start=$(date +%s)
    AMD_FAULT_RANK=$fault mpi -np "$n" -x AMD_FAULT_RANK "$amd" train "$lenet" "${common[@]}" --batch $per -o "$tmp/f.onnx" \
      >"$tmp/f-$kind.log" 2>&1
    rc=$? took=$(($(date +%s) - start))
    named=0
    if [ $kind = error ]; then grep -q "rank $last of $n failed: injected failure (AMD_FAULT_RANK) at step 5" "$tmp/f-$kind.log" && named=1
    else grep -q "process rank $last .*exited on signal 9" "$tmp/f-$kind.log" && named=1; fi
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $named -eq 1 ] && [ ! -e "$tmp/f.onnx" ]; then
      ok "rank $last fails ($kind) at step 5: the job ends in ${took}s with exit $rc, naming rank $last"
    else bad "failing rank ($kind): exit $rc after ${took}s, named $named"; tail -12 "$tmp/f-$kind.log"; fi
  done

  # 4. a rank that hangs (rank 0 stops itself after its checkpoint of step 3): the others wait in the
  #    all-reduce of step 4, give up after AMD_NCCL_TIMEOUT_S=5, abort NCCL and end the job
  start=$(date +%s)
  # shellcheck disable=SC2016 # expanded by the rank's shell
  AMD_NCCL_TIMEOUT_S=5 mpi -np "$n" -x AMD_NCCL_TIMEOUT_S bash -c \
    '[ "$OMPI_COMM_WORLD_RANK" = 0 ] && export AMD_FAULT_PAUSE_AFTER_STEP=3; exec "$0" "$@"' \
    "$amd" train "$lenet" "${common[@]}" --batch $per --checkpoint-dir "$tmp/ck" --checkpoint-steps 3 -o "$tmp/h.onnx" \
    >"$tmp/hang.log" 2>&1
  rc=$? took=$(($(date +%s) - start))
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank [1-9][0-9]* of $n failed: .*ncclAllReduce did not complete in" "$tmp/hang.log"; then
    ok "rank 0 hangs after step 3: $(grep -c "of $n failed: .*ncclAllReduce did not complete" "$tmp/hang.log") rank(s) give up the all-reduce (5 s), abort NCCL, the job ends in ${took}s (exit $rc)"
  else bad "hanging rank: exit $rc after ${took}s"; tail -12 "$tmp/hang.log"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
