#!/usr/bin/env bash
# Full disk during a checkpoint (AMD_FAULT_WRITE_BYTES=N: the checkpoint
# writer fails with ENOSPC after N bytes of the file). A run resumed from a
# checkpoint, whose next checkpoint cannot be written, must exit 1 with one
# line saying the checkpoint was not written, leave the checkpoint folder
# byte-identical (no temp file, no partial checkpoint, nothing pruned) and
# write no model; this for a failure at every part of the file (header,
# section headers, data, trailer, the last byte), for the periodic, the
# --stop-after and the end-of-epoch checkpoints. A limit equal to the file's
# size is enough. A later resume without the variable ends byte-identical to
# an uninterrupted run.
# usage: disk_full.sh AMDNN_ONNX MODELS_DIR [FASHION_DIR]
. "$(dirname "$0")/lib.sh"
run=(train "$model" --data "mnist:$fashion" --limit 1000 --batch 64 --epochs 2 --lr 0.02
  --augment crop:2,flip --seed 11)
ck="$tmp/ck"

"$amd" "${run[@]}" -o "$tmp/ref.onnx" >"$tmp/ref.log" 2>&1 || { bad "reference run failed"; tail -3 "$tmp/ref.log"; finish; }
"$amd" "${run[@]}" --checkpoint-dir "$ck" --stop-after 5 -o "$tmp/out.onnx" >"$tmp/s.log" 2>&1
rc=$?
if [ $rc -ne 3 ] || [ ! -f "$ck/ckpt-0000000005.amdckpt" ]; then
  bad "--stop-after 5: exit $rc, folder: $(describe_dir "$ck")"; tail -3 "$tmp/s.log"; finish
fi
snapshot "$ck" "$tmp/before"
size=$(stat -c %s "$ck/ckpt-0000000005.amdckpt")
echo "     checkpoint of step 5: $size bytes; folder: $(describe_dir "$ck")"

# the checkpoint must fail, and leave everything as it was. args: label, N, extra options...
full_disk() {
  local label=$1 n=$2; shift 2
  rm -f "$tmp/out.onnx"
  AMD_FAULT_WRITE_BYTES=$n "$amd" "${run[@]}" --checkpoint-dir "$ck" --resume "$@" -o "$tmp/out.onnx" \
    >"$tmp/f.out" 2>"$tmp/f.err"
  local rc=$? why=""
  [ $rc -eq 1 ] || why="$why exit $rc (want 1);"
  grep -q "^resuming from .*step 5$" "$tmp/f.out" || why="$why did not resume from step 5;"
  grep -q "checkpoint not written" "$tmp/f.err" || why="$why no 'checkpoint not written' in the message;"
  grep -q "No space left on device" "$tmp/f.err" || why="$why the message does not name ENOSPC;"
  grep -q "failed after $n of " "$tmp/f.err" || why="$why the message does not say 'after $n of ...' bytes;"
  [ "$(wc -l <"$tmp/f.err")" -eq 1 ] || why="$why $(wc -l <"$tmp/f.err") lines on stderr;"
  same_dir "$ck" "$tmp/before" || why="$why checkpoint folder changed: $(describe_dir "$ck");"
  [ -e "$tmp/out.onnx" ] && why="$why a model was written;"
  if [ -z "$why" ]; then
    ok "full disk after $n bytes ($label): exit 1, folder byte-identical: $(cat "$tmp/f.err")"
  else
    bad "full disk after $n bytes ($label):$why"; cat "$tmp/f.err"; tail -2 "$tmp/f.out"
    rm -rf "$ck"; cp -a "$tmp/before" "$ck"  # go on from the original state
  fi
}
every=(--checkpoint-steps 1)
full_disk "nothing written, periodic checkpoint" 0 "${every[@]}"
full_disk "inside the file header" 9 "${every[@]}"
full_disk "end of the file header" 16 "${every[@]}"
full_disk "inside the first section header" 20 "${every[@]}"
full_disk "inside the parameter data" 100000 "${every[@]}"
full_disk "before the trailer" $((size - 12)) "${every[@]}"
full_disk "the last byte missing" $((size - 1)) "${every[@]}"
full_disk "--stop-after checkpoint: exit 1, not 3" 4096 --stop-after 8
full_disk "end-of-epoch checkpoint" 4096

# exactly enough room: the checkpoint is written
AMD_FAULT_WRITE_BYTES=$size "$amd" "${run[@]}" --checkpoint-dir "$ck" --resume --stop-after 7 -o "$tmp/out.onnx" >"$tmp/e.log" 2>&1
rc=$?
[ $rc -eq 3 ] && [ -f "$ck/ckpt-0000000007.amdckpt" ] && ok "AMD_FAULT_WRITE_BYTES=$size (the file's size) is enough: checkpoint 7 written, exit 3" \
  || { bad "AMD_FAULT_WRITE_BYTES=$size: exit $rc, folder: $(describe_dir "$ck")"; tail -2 "$tmp/e.log"; }

# a bad value is an error, not a silent no-op
AMD_FAULT_WRITE_BYTES=lots "$amd" "${run[@]}" --checkpoint-dir "$ck" --resume --stop-after 9 -o "$tmp/out.onnx" >"$tmp/b.out" 2>"$tmp/b.err"
rc=$?
[ $rc -eq 1 ] && grep -q "AMD_FAULT_WRITE_BYTES='lots' is not a byte count" "$tmp/b.err" && [ ! -f "$ck/ckpt-0000000009.amdckpt" ] \
  && ok "AMD_FAULT_WRITE_BYTES=lots: exit 1: $(cat "$tmp/b.err")" || { bad "AMD_FAULT_WRITE_BYTES=lots: exit $rc"; cat "$tmp/b.err"; }

# the disk has room again: resume to the end
"$amd" "${run[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/out.onnx" >"$tmp/r.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && cmp -s "$tmp/ref.onnx" "$tmp/out.onnx"; then
  ok "resumed without the fault ($(sed -n 's/^resuming from .*: //p' "$tmp/r.log")): identical to the uninterrupted run"
else
  bad "final resume: exit $rc, $(cmp "$tmp/ref.onnx" "$tmp/out.onnx" 2>&1 | head -1)"; tail -3 "$tmp/r.log"
fi
compgen -G "$ck/.tmp-ckpt-*" >/dev/null && bad "temp files left: $(describe_dir "$ck")" || ok "no temp file left: $(describe_dir "$ck")"
finish
