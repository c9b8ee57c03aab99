#!/usr/bin/env bash
# Unusable destinations. A checkpoint folder that cannot be created (its
# parent is a regular file; it is a regular file itself) is one error line and
# exit 1 before any training. A folder that becomes unusable while the run
# goes on (replaced by a file, deleted, or a disk that takes no byte:
# AMD_FAULT_WRITE_BYTES=0) stops the run at its next checkpoint with exit 1
# and a message, no model and no partial checkpoint; the checkpoints written
# before are all valid and resume to the same result as an uninterrupted run.
# An -o whose folder does not exist fails before training too (days of
# training must not end in "cannot write"), and if the model cannot be written
# at the end, the final checkpoint still holds the work.
# usage: unwritable_dir.sh AMDNN_ONNX MODELS_DIR [FASHION_DIR]
. "$(dirname "$0")/lib.sh"
run=(train "$model" --data "mnist:$fashion" --limit 1000 --batch 64 --epochs 2 --lr 0.02
  --augment crop:2,flip --seed 13)
every=(--checkpoint-steps 1)
touch "$tmp/afile"

# fails at once, before any training: args: name, stderr substring, args...
early() {
  local name=$1 msg=$2; shift 2
  rm -f "$tmp/out.onnx"
  "$amd" "${run[@]}" "$@" >"$tmp/e.out" 2>"$tmp/e.err"
  local rc=$? why=""
  [ $rc -eq 1 ] || why="$why exit $rc (want 1);"
  grep -qF -- "$msg" "$tmp/e.err" || why="$why no '$msg' in the message;"
  [ "$(wc -l <"$tmp/e.err")" -eq 1 ] || why="$why $(wc -l <"$tmp/e.err") lines on stderr;"
  grep -q "^training \|epoch [0-9]" "$tmp/e.out" && why="$why it trained first;"
  [ -e "$tmp/out.onnx" ] && why="$why a model was written;"
  [ -z "$why" ] && ok "$name: exit 1 before training: $(cat "$tmp/e.err")" || { bad "$name:$why"; cat "$tmp/e.err"; tail -2 "$tmp/e.out"; }
}
early "checkpoint folder under a regular file" "Not a directory" --checkpoint-dir "$tmp/afile/ck" -o "$tmp/out.onnx"
early "checkpoint folder under a regular file, --resume" "Not a directory" --checkpoint-dir "$tmp/afile/ck" --resume -o "$tmp/out.onnx"
early "checkpoint folder is a regular file" "is not a folder" --checkpoint-dir "$tmp/afile" -o "$tmp/out.onnx"
early "checkpoint folder under a missing folder" "No such file or directory" --checkpoint-dir "$tmp/no/such/ck" -o "$tmp/out.onnx"
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
  early "read-only checkpoint folder" "ermission denied" --checkpoint-dir "$tmp/ro" -o "$tmp/out.onnx"
  chmod 755 "$tmp/ro"
else
  echo "SKIP read-only checkpoint folder: running as root (permissions do not apply)"
fi
early "-o in a folder that does not exist" "$tmp/no/out.onnx" -o "$tmp/no/out.onnx"
early "-o under a regular file" "$tmp/afile/out.onnx" -o "$tmp/afile/out.onnx"

"$amd" "${run[@]}" -o "$tmp/ref.onnx" >"$tmp/ref.log" 2>&1 || { bad "reference run failed"; tail -3 "$tmp/ref.log"; finish; }

# newest checkpoint step in a folder (-1 if none)
newest_step() {
  local f n best=-1
  for f in "$1"/ckpt-*.amdckpt; do
    [ -e "$f" ] || continue
    n=${f##*/ckpt-}; n=${n%.amdckpt}; n=$((10#$n))
    [ $n -gt $best ] && best=$n
  done
  echo $best
}
# starts a run in the background that stops itself (SIGSTOP) right after the
# checkpoint of step 3, does "$@" to the folder, and lets the run go on: the
# break lands at the same point however busy the machine is
break_midrun() {
  local ck=$1; shift
  rm -rf "$ck" "$tmp/out.onnx"
  AMD_FAULT_PAUSE_AFTER_STEP=3 "$amd" "${run[@]}" "${every[@]}" --checkpoint-dir "$ck" -o "$tmp/out.onnx" \
    >"$tmp/m.out" 2>"$tmp/m.err" &
  local pid=$!
  while kill -0 $pid 2>/dev/null && [ "$(ps -o stat= -p $pid | cut -c1)" != T ]; do sleep 0.01; done
  [ "$(newest_step "$ck")" -eq 3 ] || bad "the run did not pause after the checkpoint of step 3 (newest: $(newest_step "$ck"))"
  "$@"
  kill -CONT $pid
  wait $pid
}
# the run must have stopped with exit 1 and "checkpoint not written": args: name, rc, stderr regex (ERE)
stopped() {
  local name=$1 rc=$2 msg=$3 why=""
  [ "$rc" -eq 1 ] || why="$why exit $rc (want 1);"
  grep -q "checkpoint not written" "$tmp/m.err" || why="$why no 'checkpoint not written' in the message;"
  grep -qE -- "$msg" "$tmp/m.err" || why="$why no '$msg' in the message;"
  [ "$(wc -l <"$tmp/m.err")" -eq 1 ] || why="$why $(wc -l <"$tmp/m.err") lines on stderr;"
  [ -e "$tmp/out.onnx" ] && why="$why a model was written;"
  [ -z "$why" ] && ok "$name: exit 1: $(cat "$tmp/m.err")" || { bad "$name:$why"; cat "$tmp/m.err"; tail -2 "$tmp/m.out"; }
}
# the checkpoints left must all verify and resume to the uninterrupted result
resumes() {
  local name=$1 ck=$2 newest
  newest=$(newest_step "$ck")
  "$amd" "${run[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/out.onnx" >"$tmp/r.out" 2>"$tmp/r.err"
  local rc=$? from
  from=$(sed -n 's/^resuming from .*: \(epoch .*\)/\1/p' "$tmp/r.out")
  if [ $rc -eq 0 ] && ! grep -q skipped "$tmp/r.err" && grep -q "step $newest\$" <<<"$from" && cmp -s "$tmp/ref.onnx" "$tmp/out.onnx"; then
    ok "$name: the checkpoints left all verify; resumed from the newest ($from): identical to the uninterrupted run"
  else
    bad "$name: resume exit $rc from '$from' (newest $newest), $(cmp "$tmp/ref.onnx" "$tmp/out.onnx" 2>&1 | head -1)"; cat "$tmp/r.err"
  fi
}

# the folder is replaced by a regular file while the run goes on
swap() { mv "$tmp/ck" "$tmp/ck.moved" && touch "$tmp/ck"; }
break_midrun "$tmp/ck" swap
rc=$?
# (between the mv and the touch the path is missing: either error is right)
stopped "checkpoint folder replaced by a file mid-run" $rc "Not a directory|No such file or directory"
left=$(describe_dir "$tmp/ck.moved")
echo "     the moved folder holds: $left"
# a temp file can stay behind when the swap lands inside a write (the writer can
# no longer reach it by its path); it is never taken for a checkpoint and the next
# checkpoint written into the folder removes it
rm -f "$tmp/ck"
resumes "checkpoint folder replaced by a file mid-run" "$tmp/ck.moved"
compgen -G "$tmp/ck.moved/.tmp-ckpt-*" >/dev/null && bad "temp file not removed by the resumed run: $(describe_dir "$tmp/ck.moved")"

# the folder is deleted while the run goes on
gone() { rm -rf "$tmp/ck2"; }
break_midrun "$tmp/ck2" gone
stopped "checkpoint folder deleted mid-run" $? "No such file or directory"

# a disk that takes no byte, from the start: the first checkpoint fails, nothing is left
rm -rf "$tmp/ck3" "$tmp/out.onnx"
AMD_FAULT_WRITE_BYTES=0 "$amd" "${run[@]}" "${every[@]}" --checkpoint-dir "$tmp/ck3" -o "$tmp/out.onnx" >"$tmp/m.out" 2>"$tmp/m.err"
stopped "AMD_FAULT_WRITE_BYTES=0 from the start" $? "No space left on device"
[ -d "$tmp/ck3" ] && [ -z "$(ls -A "$tmp/ck3")" ] && ok "AMD_FAULT_WRITE_BYTES=0: the checkpoint folder is empty" || bad "AMD_FAULT_WRITE_BYTES=0 left: $(describe_dir "$tmp/ck3")"

# the model cannot be written at the end (its folder vanished during training): the final checkpoint holds the work
rm -rf "$tmp/ck4" "$tmp/odir"; mkdir "$tmp/odir"
"$amd" "${run[@]}" --checkpoint-dir "$tmp/ck4" -o "$tmp/odir/out.onnx" >"$tmp/m.out" 2>"$tmp/m.err" &
pid=$!
while kill -0 $pid 2>/dev/null && ! grep -q "^training " "$tmp/m.out"; do sleep 0.01; done
rmdir "$tmp/odir"
wait $pid
rc=$?
if [ $rc -eq 1 ] && grep -q "out.onnx" "$tmp/m.err" && [ -f "$tmp/ck4/ckpt-0000000032.amdckpt" ]; then
  ok "-o folder removed during training: exit 1 ($(cat "$tmp/m.err")), final checkpoint 32 kept"
  mkdir "$tmp/odir"
  resumes "-o fails at the end" "$tmp/ck4"
else
  bad "-o folder removed during training: exit $rc, folder $(describe_dir "$tmp/ck4")"; cat "$tmp/m.err"
fi
finish
