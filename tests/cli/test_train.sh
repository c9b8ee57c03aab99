#!/usr/bin/env bash
# End-to-end training from the command line, on a subset of Fashion-MNIST
# (Debian dataset-fashion-mnist):
#  - one epoch of LeNet-5 reaches an accuracy that a broken backward cannot;
#  - the trained model reloads and `eval` gives the accuracy `train` reported;
#  - a run stopped (--stop-after, and SIGTERM) and resumed ends with the same
#    weights, byte for byte, as an uninterrupted run (LeNet-5, and LeNet-5
#    with Dropout, whose masks must resume from the same stream, and LeNet-5
#    with its Dropouts written as random ops);
#  - 1, 2 and 3 OpenMP threads train the same model, byte for byte;
#  - --lookahead (a no-op form = none; stop and resume), flip:alt, the triangle schedule, --tta-shift;
#  - --accumulate (1 = none; 2, stopped and resumed, = uninterrupted; BN per share);
#  - a NaN loss stops the run with exit 4 and leaves the checkpoints intact;
#  - bad input ends with one line and nothing written.
# usage: test_train.sh AMDNN_ONNX MODELS_DIR FASHION_DIR
set -u
amd=$1 models=$2 fashion=$3
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
data="mnist:$fashion"
common=(--data "$data" --limit 6000 --batch 64 --lr 0.05 --seed 3)

# 1. one epoch learns
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" --epochs 1 -o "$tmp/a.onnx" --metrics "$tmp/a.tsv" >"$tmp/a.log" 2>&1
rc=$?
acc=$(sed -n 's/.*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/a.log" | tail -1)
echo "     one epoch: test top1 ${acc:-?}%"
if [ $rc -eq 0 ] && awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 70) }'; then ok "one epoch of LeNet-5 reaches >= 70% (a broken backward stays near 10-40%)"; else bad "train exit $rc, top1 ${acc:-none}"; cat "$tmp/a.log"; fi
[ "$(wc -l <"$tmp/a.tsv")" -eq 2 ] && head -1 "$tmp/a.tsv" | grep -q "^epoch	hours	train_loss	train_acc	test_loss	test_top1	lr	images_per_s" \
  && ok "metrics TSV: header and one row" || bad "metrics TSV"; 

# 2. the written model evaluates to the same accuracy
"$amd" eval "$tmp/a.onnx" --data "$data" --limit 6000 >"$tmp/e.log" 2>&1
eacc=$(sed -n 's/^top1 \([0-9.]*\)%.*/\1/p' "$tmp/e.log")
[ -n "$eacc" ] && [ "$eacc" = "$acc" ] && ok "eval of the written model: top1 $eacc% as in training" || { bad "eval top1 '$eacc' vs train '$acc'"; cat "$tmp/e.log"; }

# 2b. onnxruntime loads the trained model for inference and agrees on top-1
if python3 "$(dirname "$0")/fashion_tensors.py" "$fashion" 2000 "$tmp" 2>"$tmp/py.err"; then
  "$amd" train "$models/lenet5_train.onnx" --data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 1 --batch 64 --lr 0.05 -o "$tmp/t.onnx" >/dev/null 2>&1
  mine=$("$amd" eval "$tmp/t.onnx" --data "tensors:$tmp/X.pb,$tmp/Y.pb" 2>&1 | sed -n 's/^\(top1 [0-9.]*%\).*/\1/p')
  theirs=$(python3 "$(dirname "$0")/ort_top1.py" "$tmp/t.onnx" "$tmp/X.pb" "$tmp/Y.pb" 2>&1)
  if [ -n "$mine" ] && [ "$mine" = "$theirs" ]; then ok "onnxruntime on the trained model: $theirs, as eval"
  elif echo "$theirs" | grep -q SKIP; then echo "SKIP onnxruntime check: $theirs"
  else bad "onnxruntime '$theirs' vs eval '$mine'"; fi
  # 2c. --tta scores the mean logits of each image and its mirror, so the
  # mirrored data set scores exactly the same; without --tta it does not
  python3 -c "import sys, numpy as np; from onnx import numpy_helper as h, TensorProto as T
t = T(); t.ParseFromString(open(sys.argv[1], 'rb').read()); x = h.to_array(t)[..., ::-1]
open(sys.argv[2], 'wb').write(h.from_array(np.ascontiguousarray(x), 'X').SerializeToString())" "$tmp/X.pb" "$tmp/Xm.pb"
  score() { "$amd" eval "$tmp/t.onnx" --data "tensors:$1,$tmp/Y.pb" "${@:2}" 2>&1 | sed -n 's/^\(top1 .* loss [0-9.]*\).*/\1/p'; }
  tta=$(score "$tmp/X.pb" --tta) ttam=$(score "$tmp/Xm.pb" --tta) plain=$(score "$tmp/X.pb") plainm=$(score "$tmp/Xm.pb")
  if [ -n "$tta" ] && [ "$tta" = "$ttam" ] && [ "$plain" != "$plainm" ] && [ "$tta" != "$plain" ]; then
    ok "eval --tta: '$tta' on the images and on their mirrors (without: '$plain' and '$plainm')"
  else
    bad "eval --tta: '$tta' vs mirrored '$ttam'; without: '$plain' vs '$plainm'"
  fi
else
  echo "SKIP onnxruntime check: $(tail -1 "$tmp/py.err")"
fi

# 2d. train --tta reports the test accuracy that eval --tta gives for the written model
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" --limit 2000 --epochs 1 --tta -o "$tmp/tta.onnx" >"$tmp/tta.log" 2>&1
tacc=$(sed -n 's/.*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/tta.log" | tail -1)
eacc=$("$amd" eval "$tmp/tta.onnx" --data "$data" --limit 2000 --tta 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
nacc=$("$amd" eval "$tmp/tta.onnx" --data "$data" --limit 2000 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
[ -n "$tacc" ] && [ "$tacc" = "$eacc" ] && ok "train --tta: test top1 $tacc%, as eval --tta (without: $nacc%)" \
  || { bad "train --tta '$tacc' vs eval --tta '$eacc'"; tail -3 "$tmp/tta.log"; }

# 3. stop and resume = uninterrupted (2 epochs = 188 steps; with dropout-free LeNet, augmentation on)
run2=(--epochs 2 --augment crop:2,flip)
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" -o "$tmp/full.onnx" >/dev/null 2>&1
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/ck" --stop-after 50 -o "$tmp/part.onnx" >"$tmp/s1.log" 2>&1
rc1=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/ck" --stop-after 120 --resume -o "$tmp/part.onnx" >"$tmp/s2.log" 2>&1
rc2=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/ck" --resume -o "$tmp/part.onnx" >"$tmp/s3.log" 2>&1
rc3=$?
if [ $rc1 -eq 3 ] && [ $rc2 -eq 3 ] && [ $rc3 -eq 0 ] && cmp -s "$tmp/full.onnx" "$tmp/part.onnx"; then
  ok "stopped at steps 50 and 120, resumed twice: identical weights to the uninterrupted run"
else
  bad "resume: exits $rc1 $rc2 $rc3, models $(cmp "$tmp/full.onnx" "$tmp/part.onnx" 2>&1 | head -1)"; tail -3 "$tmp/s1.log" "$tmp/s2.log" "$tmp/s3.log"
fi
[ "$(ls "$tmp/ck" | wc -l)" -le 2 ] && ok "checkpoint folder keeps at most two" || bad "checkpoints kept: $(ls "$tmp/ck")"

# 3a. the options from airbench94's recipe: --lookahead 1:0 (every pull a no-op: d = 0) gives the model of a
# run without it, byte for byte, so the slow copy in the optimizer state leaves the optimizer's own state
# alone; --lookahead 3 changes the model, and a run of it stopped and resumed ends the same (the slow copy
# is in the checkpoint); the same for ResNet-8 (BatchNormalization statistics in the slow copy too); with
# flip:alt and the triangle schedule; train --tta --tta-shift 1 reports what eval --tta --tta-shift 1 gives
la=(--epochs 2 --limit 1000 --augment crop:2,flip:alt --schedule triangle:0.23:0.2:0.07)
r8=(--data "tensors:$models/golden/resnet8/input.pb,$models/golden/resnet8/labels.pb" --batch 4 --epochs 3 --lr 0.05)
for m in lenet5 resnet8; do
  if [ $m = lenet5 ]; then args=("${common[@]}" "${la[@]}"); else args=("${r8[@]}"); fi
  "$amd" train "$models/${m}_train.onnx" "${args[@]}" -o "$tmp/la_$m.onnx" >/dev/null 2>&1
  rc0=$?
  "$amd" train "$models/${m}_train.onnx" "${args[@]}" --lookahead 1:0 -o "$tmp/la1_$m.onnx" >"$tmp/la1.log" 2>&1
  rc1=$?
  "$amd" train "$models/${m}_train.onnx" "${args[@]}" --lookahead 3 -o "$tmp/la3_$m.onnx" >/dev/null 2>&1
  rc3=$?
  "$amd" train "$models/${m}_train.onnx" "${args[@]}" --lookahead 3 --checkpoint-dir "$tmp/lack_$m" --stop-after 7 \
    -o "$tmp/lap_$m.onnx" >/dev/null 2>&1
  rcs=$?
  "$amd" train "$models/${m}_train.onnx" "${args[@]}" --lookahead 3 --checkpoint-dir "$tmp/lack_$m" --resume \
    -o "$tmp/lap_$m.onnx" >"$tmp/lar.log" 2>&1
  rcr=$?
  if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && cmp -s "$tmp/la_$m.onnx" "$tmp/la1_$m.onnx"; then
    ok "$m: --lookahead 1:0 = no lookahead, byte for byte"
  else
    bad "$m: --lookahead 1:0: exits $rc0 $rc1, $(cmp "$tmp/la_$m.onnx" "$tmp/la1_$m.onnx" 2>&1 | head -1)"; tail -3 "$tmp/la1.log"
  fi
  if [ $rc3 -eq 0 ] && ! cmp -s "$tmp/la_$m.onnx" "$tmp/la3_$m.onnx" && [ $rcs -eq 3 ] && [ $rcr -eq 0 ] &&
    cmp -s "$tmp/la3_$m.onnx" "$tmp/lap_$m.onnx"; then
    ok "$m: --lookahead 3 changes the model; stopped at step 7 and resumed, the same model"
  else
    bad "$m: --lookahead 3: exits $rc3 $rcs $rcr, $(cmp "$tmp/la3_$m.onnx" "$tmp/lap_$m.onnx" 2>&1 | head -1)"
    tail -3 "$tmp/lar.log"
  fi
done
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${la[@]}" --tta --tta-shift 1 -o "$tmp/ts.onnx" >"$tmp/ts.log" 2>&1
tacc=$(sed -n 's/.*test loss [0-9.]* top1 \([0-9.]*\)%.*/\1/p' "$tmp/ts.log" | tail -1)
eacc=$("$amd" eval "$tmp/ts.onnx" --data "$data" --limit 1000 --tta --tta-shift 1 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
macc=$("$amd" eval "$tmp/ts.onnx" --data "$data" --limit 1000 --tta 2>&1 | sed -n 's/^top1 \([0-9.]*\)%.*/\1/p')
[ -n "$tacc" ] && [ "$tacc" = "$eacc" ] && ok "train --tta --tta-shift 1: test top1 $tacc%, as eval gives (mirror only: $macc%)" \
  || { bad "train --tta --tta-shift 1 '$tacc' vs eval '$eacc'"; tail -3 "$tmp/ts.log"; }

# 3b. the same with Dropout (LeNet-5 + two Dropout layers, augmentation on):
# the resumed run must also restore the dropout stream
dmodel="$models/lenet5d_train.onnx"
"$amd" train "$dmodel" "${common[@]}" "${run2[@]}" -o "$tmp/dfull.onnx" >/dev/null 2>&1
"$amd" train "$dmodel" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/dck" --stop-after 70 -o "$tmp/dpart.onnx" >/dev/null 2>&1
rc1=$?
"$amd" train "$dmodel" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/dck" --resume -o "$tmp/dpart.onnx" >"$tmp/ds2.log" 2>&1
rc2=$?
"$amd" train "$dmodel" "${common[@]}" "${run2[@]}" --seed 4 -o "$tmp/dseed.onnx" >/dev/null 2>&1
if [ $rc1 -eq 3 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/dfull.onnx" "$tmp/dpart.onnx" && ! cmp -s "$tmp/dfull.onnx" "$tmp/dseed.onnx"; then
  ok "Dropout model stopped at step 70 and resumed: identical weights to the uninterrupted run (another seed differs)"
else
  bad "Dropout resume: exits $rc1 $rc2, models $(cmp "$tmp/dfull.onnx" "$tmp/dpart.onnx" 2>&1 | head -1)"; tail -3 "$tmp/ds2.log"
fi

# 3c. the same with the Dropouts written as random ops (RandomUniformLike ->
# Less -> Cast -> Mul, as PyTorch's dynamo exporter writes them in train mode:
# models/lenet5r_train.onnx, tools/dropout_to_random.py), which draw from the
# same stream; skipped where this build cannot load it
rmodel="$models/lenet5r_train.onnx"
if "$amd" info "$rmodel" >"$tmp/rinfo.log" 2>&1; then
  "$amd" train "$rmodel" "${common[@]}" "${run2[@]}" -o "$tmp/rfull.onnx" >/dev/null 2>&1
  "$amd" train "$rmodel" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/rck" --stop-after 70 -o "$tmp/rpart.onnx" >/dev/null 2>&1
  rc1=$?
  "$amd" train "$rmodel" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/rck" --resume -o "$tmp/rpart.onnx" >"$tmp/rs2.log" 2>&1
  rc2=$?
  "$amd" train "$rmodel" "${common[@]}" "${run2[@]}" --seed 4 -o "$tmp/rseed.onnx" >/dev/null 2>&1
  if [ $rc1 -eq 3 ] && [ $rc2 -eq 0 ] && cmp -s "$tmp/rfull.onnx" "$tmp/rpart.onnx" && ! cmp -s "$tmp/rfull.onnx" "$tmp/rseed.onnx"; then
    ok "random-op Dropout model stopped at step 70 and resumed: identical weights to the uninterrupted run (another seed differs)"
  else
    bad "random-op Dropout resume: exits $rc1 $rc2, models $(cmp "$tmp/rfull.onnx" "$tmp/rpart.onnx" 2>&1 | head -1)"; tail -3 "$tmp/rs2.log"
  fi
else
  echo "SKIP random-op Dropout resume: $(tail -1 "$tmp/rinfo.log")"
fi

# SIGTERM midway through the second epoch, then resume (the signal goes once
# the first epoch's checkpoint exists: a fixed delay would miss a fast run)
rm -rf "$tmp/ck2"
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/ck2" -o "$tmp/sig.onnx" >"$tmp/t1.log" 2>&1 &
pid=$!
for _ in $(seq 3000); do # at most 60 s
  ls "$tmp/ck2"/ckpt-*.amdckpt >/dev/null 2>&1 && break
  sleep 0.02
done
kill -TERM $pid
wait $pid
rct=$?
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" "${run2[@]}" --checkpoint-dir "$tmp/ck2" --resume -o "$tmp/sig.onnx" >"$tmp/t2.log" 2>&1
if [ $rct -eq 3 ] && grep -q "stopped by SIGTERM" "$tmp/t1.log" && cmp -s "$tmp/full.onnx" "$tmp/sig.onnx"; then
  ok "SIGTERM: exit 3 with a checkpoint; resumed run identical"
elif [ $rct -eq 0 ]; then
  bad "SIGTERM came too late (the run had finished)"
else
  bad "SIGTERM: exit $rct"; tail -2 "$tmp/t1.log" "$tmp/t2.log"
fi

# The CPU ops on every core give the bits of one thread (src/core/omp.h): one
# epoch of LeNet-5 with its two Dropouts, cropped and flipped, writes the same
# model with 1, 2 and 3 OpenMP threads
for t in 1 2 3; do
  OMP_NUM_THREADS=$t "$amd" train "$models/lenet5d_train.onnx" "${common[@]}" --limit 3000 --epochs 1 \
    --augment crop:2,flip --device cpu -o "$tmp/threads$t.onnx" >/dev/null 2>&1
done
if [ -s "$tmp/threads1.onnx" ] && cmp -s "$tmp/threads1.onnx" "$tmp/threads2.onnx" &&
  cmp -s "$tmp/threads1.onnx" "$tmp/threads3.onnx"; then
  ok "the same model trained with 1, 2 and 3 threads"
else
  bad "training with 1, 2 and 3 threads: the models differ (or one run failed)"
fi

# --accumulate: 1 is a plain run; 2 shares a step, stopped and resumed, = uninterrupted (with BN,
# whose running statistics are the shares' mean, and crop + flip draws per share). That two
# shares equal two ranks is test_dist.sh's (it needs mpirun).
acc=("$amd" train "$models/lenet5_train.onnx" "${common[@]}" --limit 1000 --epochs 1 --batch 32)
"${acc[@]}" -o "$tmp/plain1.onnx" >/dev/null 2>&1
"${acc[@]}" --accumulate 1 -o "$tmp/acc1.onnx" >/dev/null 2>&1
[ -s "$tmp/plain1.onnx" ] && cmp -s "$tmp/plain1.onnx" "$tmp/acc1.onnx" && ok "--accumulate 1: the plain run's model, byte for byte" \
  || bad "--accumulate 1 differs from a plain run"
python3 -c "
import numpy as np
from onnx import numpy_helper
g = np.random.default_rng(5)
open('$tmp/X.pb', 'wb').write(numpy_helper.from_array(g.standard_normal((44, 3, 32, 32)).astype(np.float32)).SerializeToString())
open('$tmp/Y.pb', 'wb').write(numpy_helper.from_array(g.integers(0, 10, 44).astype(np.int64)).SerializeToString())" 2>/dev/null
if [ -f "$tmp/Y.pb" ]; then
  accr=("$amd" train "$models/resnet8_train.onnx" --data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 2 --batch 8 --lr 0.05
    --seed 2 --augment crop:4,flip --accumulate 2 --device cpu)
  "${accr[@]}" -o "$tmp/ra.onnx" >"$tmp/ra.log" 2>&1
  rc1=$?
  "${accr[@]}" --checkpoint-dir "$tmp/ckacc" --stop-after 4 -o "$tmp/x.onnx" >/dev/null 2>&1
  rc2=$?
  "${accr[@]}" --checkpoint-dir "$tmp/ckacc" --resume -o "$tmp/rb.onnx" >/dev/null 2>&1
  rc3=$?
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 3 ] && [ $rc3 -eq 0 ] && cmp -s "$tmp/ra.onnx" "$tmp/rb.onnx" &&
    grep -q "global batch 16 = 1 rank x 2 shares x 8" "$tmp/ra.log"; then
    ok "ResNet-8 --accumulate 2 stopped at step 4 and resumed: the uninterrupted run's model, byte for byte"
  else
    bad "ResNet-8 --accumulate 2 resume: exits $rc1 $rc2 $rc3, $(cmp "$tmp/ra.onnx" "$tmp/rb.onnx" 2>&1)"; tail -3 "$tmp/ra.log"
  fi
  "$amd" train "$models/resnet8_train.onnx" --data "tensors:$tmp/X.pb,$tmp/Y.pb" --epochs 2 --batch 16 --lr 0.05 \
    --seed 2 --augment crop:4,flip --device cpu -o "$tmp/r16.onnx" >/dev/null 2>&1
  [ -s "$tmp/r16.onnx" ] && ! cmp -s "$tmp/ra.onnx" "$tmp/r16.onnx" \
    && ok "ResNet-8: 2 shares of 8 (BN per share) train another model than one batch of 16" \
    || bad "ResNet-8: --accumulate 2 --batch 8 gave the model of --batch 16 (or no model)"
else
  echo "     (no python3 numpy + onnx: the ResNet-8 --accumulate checks are left out)"
fi

# 4. NaN: an absurd learning rate
"$amd" train "$models/lenet5_train.onnx" "${common[@]}" --epochs 2 --lr 1e30 --checkpoint-dir "$tmp/ck3" -o "$tmp/nan.onnx" >"$tmp/n.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q "the \(loss became NaN\|loss became Inf\|gradients overflowed\) at epoch" "$tmp/n.log" && [ ! -e "$tmp/nan.onnx" ] \
  && ok "NaN loss: exit 4, step named, no model written: $(grep -o "the [lg][a-z]* [a-z]* .*" "$tmp/n.log" | head -1)" || { bad "NaN: exit $rc"; tail -3 "$tmp/n.log"; }

# 5. bad input: one line, exit 1 or 2, nothing written
check() { # name, expected rc, stderr substring, args...
  local name=$1 want=$2 msg=$3; shift 3
  "$amd" "$@" >"$tmp/o" 2>"$tmp/err"; local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$msg" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -le 2 ] && [ ! -e "$tmp/out.onnx" ]; then
    ok "$name: $(head -1 "$tmp/err")"
  else
    bad "$name: exit $rc"; cat "$tmp/err"
  fi
}
check "missing data folder" 1 "does not exist" train "$models/lenet5_train.onnx" --data mnist:/nonexistent -o "$tmp/out.onnx"
check "data of the wrong shape" 1 "expects [3, 32, 32] per sample; the data has [1, 28, 28]" train "$models/resnet8_train.onnx" --data "$data" --limit 100 -o "$tmp/out.onnx"
check "unknown optimizer" 2 "sgd" train "$models/lenet5_train.onnx" --data "$data" --optimizer sgdd -o "$tmp/out.onnx"
check "unknown mode" 2 "acc32" train "$models/lenet5_train.onnx" --data "$data" --mode am17 -o "$tmp/out.onnx"
check "bad schedule" 2 "constant" train "$models/lenet5_train.onnx" --data "$data" --schedule zigzag -o "$tmp/out.onnx"
check "missing -o" 2 "required" train "$models/lenet5_train.onnx" --data "$data"
check "bad number" 2 "--epochs" train "$models/lenet5_train.onnx" --data "$data" --epochs -3 -o "$tmp/out.onnx"
check "resume without a folder" 2 "--checkpoint-dir" train "$models/lenet5_train.onnx" --data "$data" --resume -o "$tmp/out.onnx"
check "lookahead of 0 steps" 2 "K[:D]" train "$models/lenet5_train.onnx" --data "$data" --lookahead 0 -o "$tmp/out.onnx"
check "lookahead decay 1" 2 "[0, 1)" train "$models/lenet5_train.onnx" --data "$data" --lookahead 5:1 -o "$tmp/out.onnx"
check "tta-shift without tta" 2 "needs --tta" train "$models/lenet5_train.onnx" --data "$data" --tta-shift 1 -o "$tmp/out.onnx"
check "eval tta-shift without tta" 1 "needs --tta" eval "$models/lenet5_train.onnx" --data "$data" --tta-shift 1
check "flip with flip:alt" 2 "choose one" train "$models/lenet5_train.onnx" --data "$data" --augment flip,flip:alt -o "$tmp/out.onnx"
check "accumulate 0" 2 "--accumulate" train "$models/lenet5_train.onnx" --data "$data" --accumulate 0 -o "$tmp/out.onnx"
check "accumulate with sync-bn" 1 "--sync-bn cannot go with --accumulate" train "$models/lenet5_train.onnx" --data "$data" --accumulate 2 --sync-bn -o "$tmp/out.onnx"
check "triangle with warm-up" 1 "own warm-up" train "$models/lenet5_train.onnx" --data "$data" --schedule triangle --warmup 1 -o "$tmp/out.onnx"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
