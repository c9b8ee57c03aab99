#!/usr/bin/env bash
# train --augment rrc,flip on the CPU or the GPU (random resized crops,
# assembled on the host from the training images kept uncropped; on the GPU
# then uploaded): the same
# seed gives the same model byte for byte, another seed another; a run
# stopped twice and resumed ends with the uninterrupted run's model; with
# --val and a two-split folder (on the GPU the test split is centre-cropped on
# the device).
# The folders are made from an IDX set at test time
# (tests/data/make_image_folder.py: PIL and numpy for /usr/bin/python3, else
# skipped).
# usage: train_rrc.sh AMDNN_ONNX MODELS_DIR IDX_DIR MAKE_IMAGE_FOLDER_PY [DEVICE (cuda)]
. "$(dirname "$0")/image_folder_case.sh"
$py "$make" "$idx" "$tmp/mixed" mixed 12 || { bad "make the folder"; exit 1; }
for data in rgb mixed; do # (mixed: 48 training images, 5 batches of 8 an epoch)
  batch=32
  [ $data = mixed ] && batch=8
  rrc=(--data "images:$tmp/$data" --resize 40 --crop 32 --normalize imagenet --augment rrc,flip --epochs 2
    --batch $batch --lr 0.02 --val 8 --device "$dev")
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" -o "$tmp/a.onnx" >"$tmp/a.log" 2>&1
  rc1=$?
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" -o "$tmp/b.onnx" >/dev/null 2>&1
  rc2=$?
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" --seed 2 -o "$tmp/c.onnx" >/dev/null 2>&1
  rc3=$?
  [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && grep -q "^epoch 2/2 .* val loss" "$tmp/a.log" \
    && cmp -s "$tmp/a.onnx" "$tmp/b.onnx" && ! cmp -s "$tmp/a.onnx" "$tmp/c.onnx" \
    && ok "$data on $dev: --augment rrc,flip, the same seed the same model; --seed 2 another ($(grep '^epoch 2/2' "$tmp/a.log"))" \
    || { bad "$data on $dev: rrc reproducibility (exits $rc1 $rc2 $rc3)"; cat "$tmp/a.log"; }
  rm -rf "$tmp/ck"
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" --checkpoint-dir "$tmp/ck" --stop-after 3 -o "$tmp/p.onnx" \
    >/dev/null 2>&1
  rc1=$?
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" --checkpoint-dir "$tmp/ck" --stop-after 8 --resume \
    -o "$tmp/p.onnx" >/dev/null 2>&1
  rc2=$?
  "$amd" train "$models/resnet8_train.onnx" "${rrc[@]}" --checkpoint-dir "$tmp/ck" --resume -o "$tmp/p.onnx" \
    >"$tmp/p.log" 2>&1
  rc3=$?
  [ $rc1 -eq 3 ] && [ $rc2 -eq 3 ] && [ $rc3 -eq 0 ] && cmp -s "$tmp/a.onnx" "$tmp/p.onnx" \
    && ok "$data on $dev: rrc stopped at steps 3 and 8, resumed: the uninterrupted model" \
    || { bad "$data on $dev: rrc resume (exits $rc1 $rc2 $rc3)"; cat "$tmp/p.log"; }
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
