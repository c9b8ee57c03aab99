#!/usr/bin/env bash
# A poisoned sample in the training data. The tensors: loader refuses NaN or
# Inf outright (exit 1 naming the element, before training), so the batch is
# poisoned with finite values instead: sample K (of N, unshuffled, in batch
# K/64+1) holds +-3e38 signed like the first Conv filter, whose response
# overflows; that batch's loss is NaN. Training must stop with exit 4 naming
# epoch, batch and step, write no model and no checkpoint of the poisoned
# state, and leave the earlier checkpoints intact: byte-identical when none
# was due since, and, with a checkpoint after every step, the newest one (the
# step before the poisoned batch) resumes on repaired data to a model
# byte-identical to a run on clean data.
# usage: nan_batch.sh AMDNN_ONNX MODELS_DIR [FASHION_DIR]
# environment: PYTHON (default /usr/bin/python3, with numpy and onnx)
. "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
"$py" -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py lacks numpy or onnx (Debian python3-numpy, python3-onnx)"; exit 77; }
n=640 k=323 batch=64
nan_batch=$((k / batch + 1))
mkdir "$tmp/gen"
"$py" "$(dirname "$0")/make_tensors.py" "$fashion" "$model" $n $k "$tmp/gen" || { bad "make_tensors.py failed"; finish; }
# every run reads $tmp/X.pb (the path is part of the checkpoint's config): poisoned or clean
use() { cp "$tmp/gen/$1.pb" "$tmp/X.pb"; }
run=(train "$model" --data "tensors:$tmp/X.pb,$tmp/gen/Y.pb" --batch $batch --epochs 2 --lr 0.02 --no-shuffle --seed 3)
ck="$tmp/ck"

# NaN in the data: refused at load
"$amd" train "$model" --data "tensors:$tmp/gen/Xnan.pb,$tmp/gen/Y.pb" --batch $batch -o "$tmp/out.onnx" >"$tmp/l.out" 2>"$tmp/l.err"
rc=$?
elem=$((k * 784 + 14 * 28 + 14))
if [ $rc -eq 1 ] && grep -q "element $elem is not finite (nan)" "$tmp/l.err" && ! grep -q "^training " "$tmp/l.out" && [ ! -e "$tmp/out.onnx" ]; then
  ok "NaN in the data: refused at load, exit 1: $(cat "$tmp/l.err")"
else
  bad "NaN in the data: exit $rc"; cat "$tmp/l.err"
fi

use X
"$amd" "${run[@]}" -o "$tmp/ref.onnx" >"$tmp/ref.log" 2>&1 || { bad "reference run on clean data failed"; tail -3 "$tmp/ref.log"; finish; }

use Xbig
"$amd" "${run[@]}" --checkpoint-dir "$ck" --stop-after 3 -o "$tmp/out.onnx" >"$tmp/s.log" 2>&1
rc=$?
[ $rc -eq 3 ] || { bad "--stop-after 3 on the poisoned data: exit $rc"; tail -3 "$tmp/s.log"; finish; }
snapshot "$ck" "$tmp/before"

# exit 4 with the step named: args: name, exit status
poisoned() {
  local name=$1 rc=$2 why=""
  local msg="the loss became NaN at epoch 1, batch $nan_batch (step $nan_batch)"
  [ "$rc" -eq 4 ] || why="$why exit $rc (want 4);"
  grep -qF "$msg" "$tmp/p.err" || why="$why no '$msg' in the message;"
  # one line besides the device note that a GPU run starts with
  local lines
  lines=$(grep -vc '^amdnn-onnx train: device ' "$tmp/p.err")
  [ "$lines" -eq 1 ] || why="$why $lines lines on stderr;"
  [ -e "$tmp/out.onnx" ] && why="$why a model was written;"
  compgen -G "$ck/.tmp-ckpt-*" >/dev/null && why="$why temp file left;"
  [ -z "$why" ] && ok "$name: $(cat "$tmp/p.err")" || { bad "$name:$why"; cat "$tmp/p.err"; tail -2 "$tmp/p.out"; }
}
# resumed from step 3, no checkpoint due before the poisoned batch: the folder must not change
"$amd" "${run[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/out.onnx" >"$tmp/p.out" 2>"$tmp/p.err"
poisoned "poisoned batch $nan_batch, resumed from step 3: exit 4" $?
same_dir "$ck" "$tmp/before" && ok "checkpoint folder byte-identical after the NaN stop: $(describe_dir "$ck")" \
  || bad "checkpoint folder changed by the NaN stop: $(describe_dir "$ck")"

# the same with a checkpoint after every step: 4 and 5 are written, nothing of step >= 6
"$amd" "${run[@]}" --checkpoint-dir "$ck" --resume --checkpoint-steps 1 -o "$tmp/out.onnx" >"$tmp/p.out" 2>"$tmp/p.err"
poisoned "poisoned batch $nan_batch with a checkpoint after every step: exit 4" $?
last=$((nan_batch - 1))
last_file=$(printf 'ckpt-%010d.amdckpt' $last)
if [ "$(ls_ckpt "$ck" | tail -1)" = "$last_file" ]; then
  ok "newest checkpoint is step $last, the one before the poisoned batch: $(describe_dir "$ck")"
else
  bad "after the NaN stop the folder holds $(describe_dir "$ck"), want the newest to be step $last"
fi
# repaired data: resume from it, and end where a clean run ends
use X
"$amd" "${run[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/out.onnx" >"$tmp/r.out" 2>"$tmp/r.err"
rc=$?
from=$(sed -n 's/^resuming from .*: \(epoch .*\)/\1/p' "$tmp/r.out")
if [ $rc -eq 0 ] && grep -q "step $last\$" <<<"$from" && ! grep -q skipped "$tmp/r.err" && cmp -s "$tmp/ref.onnx" "$tmp/out.onnx"; then
  ok "data repaired, resumed from the last checkpoint ($from): identical to the run on clean data"
else
  bad "resume on repaired data: exit $rc from '$from', $(cmp "$tmp/ref.onnx" "$tmp/out.onnx" 2>&1 | head -1)"; cat "$tmp/r.err"
fi
finish
