#!/usr/bin/env bash
# Streamed evaluation of an image folder on the GPU (eval decodes batches on
# its threads while the model runs, each batch copied into one device buffer
# and normalised there) against --in-memory (the whole split decoded first,
# then copied to the device once): the same output (top-1, top-5, loss,
# per-class accuracy, confusion matrix; not the images/s), also with --tta,
# --limit and a JPEG cut in half with --skip-bad; without --skip-bad that
# JPEG fails the streamed run with the in-memory run's message. The folder is
# made from an IDX set at test time (tests/data/make_image_folder.py: PIL and
# numpy for /usr/bin/python3, else skipped).
# usage: eval_stream_gpu.sh AMDNN_ONNX MODELS_DIR IDX_DIR MAKE_IMAGE_FOLDER_PY [DEVICE (cuda)]
. "$(dirname "$0")/../data/image_folder_case.sh"
opts=(--resize 32 --crop 32 --normalize imagenet --device "$dev")
same_eval() { # NAME EVAL-ARGS...
  local name=$1
  shift
  "$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" "$@" >"$tmp/s.log" 2>"$tmp/s.err"
  local rs=$?
  "$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" "$@" --in-memory >"$tmp/m.log" 2>"$tmp/m.err"
  local rm=$?
  sed -i 's/  [0-9]* images\/s$//' "$tmp/s.log" "$tmp/m.log"
  if [ $rs -eq 0 ] && [ $rm -eq 0 ] && grep -q "decoding streamed on" "$tmp/s.err" && grep -q "^top1" "$tmp/s.log" &&
    cmp -s "$tmp/s.log" "$tmp/m.log"; then
    ok "streamed = --in-memory on $dev: $name ($(grep '^top1' "$tmp/s.log"))"
  else
    bad "streamed vs --in-memory on $dev: $name (exit $rs / $rm)"; cat "$tmp/s.err" "$tmp/m.err"; diff "$tmp/s.log" "$tmp/m.log"
  fi
}
same_eval "300 JPEGs, batch 32" --batch 32
same_eval "batch 7, 3 workers, --tta" --batch 7 --workers 3 --tta
same_eval "--limit 101, batch 256" --limit 101
victim=$(ls "$tmp/rgb/coat" | sed -n 3p)
head -c 600 "$tmp/rgb/coat/$victim" >"$tmp/cut.jpg" && mv "$tmp/cut.jpg" "$tmp/rgb/coat/$victim"
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" --batch 16 >"$tmp/x.log" 2>"$tmp/x.err"
rs=$?
"$amd" eval "$models/resnet8.onnx" --data "images:$tmp/rgb" "${opts[@]}" --batch 16 --in-memory >/dev/null 2>"$tmp/y.err"
[ $rs -eq 1 ] && grep -q "$victim" "$tmp/x.err" && [ "$(tail -1 "$tmp/x.err")" = "$(tail -1 "$tmp/y.err")" ] &&
  ok "a JPEG failing in the stream: exit 1, the in-memory message" || { bad "failing JPEG (exit $rs)"; cat "$tmp/x.err" "$tmp/y.err"; }
same_eval "--skip-bad, batch 16" --batch 16 --skip-bad
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
