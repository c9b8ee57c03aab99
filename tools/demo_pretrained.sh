#!/usr/bin/env bash
# The pretrained-model story end to end (docs/results.md, "A pretrained model
# under a multiplier"; the README's JPEG recipe at full size): a
# torchvision model exported to ONNX, evaluated on a JPEG folder with
# torchvision's preprocessing under exact and approximate multipliers, its
# layers swept, then fine-tuned under the multiplier and written back.
# Without network access the "pretrained" weights are made here: the
# exported model is first trained in acc32 on the folder (a stand-in for
# `--weights DEFAULT`).
#   1. WORK/jpeg: train/val JPEG folder from an IDX set (bench_imagefolder.py idx)
#   2. WORK/MODEL.onnx, WORK/MODEL_train.onnx (export_torchvision.py, 10 classes)
#   3. pretraining in acc32 -> WORK/pre.onnx
#   4. eval of pre.onnx in acc32 and each MODE
#   5. sweep in the last MODE (--limit SWEEP_LIMIT) -> WORK/sweep.tsv, sweep.png
#   6. fine-tuning of pre.onnx in the last MODE (FT_EPOCHS, --freeze FREEZE
#      when set) -> WORK/tuned.onnx, and its eval in acc32 and that MODE
# usage: tools/demo_pretrained.sh IDX_DIR WORK [MODE ...]   (default: mbm12)
# environment: AMDNN (build/src/amdnn-onnx), PYTHON (default: tools/torch_python.sh's
# interpreter with torch, torchvision and onnx), MODEL
# (resnet18), TRAIN_N (20000), VAL_N (5000), PRE_EPOCHS (4), FT_EPOCHS (1),
# FREEZE (empty), FT_LR (5e-5), SWEEP_LIMIT (2000), BATCH (128), DEVICE (empty:
# the default)
set -eu
idx=$1 work=$2
shift 2
modes=${*:-mbm12}
last=${modes##* }
here=$(cd "$(dirname "$0")" && pwd)
amdnn=${AMDNN:-build/src/amdnn-onnx} model=${MODEL:-resnet18}
py=${PYTHON:-$("$here/torch_python.sh" torch torchvision onnx PIL numpy)}
batch=${BATCH:-128} dev=()
[ -n "${DEVICE:-}" ] && dev=(--device "$DEVICE")
img=(--data "images:$work/jpeg" --resize 72 --crop 64 --normalize imagenet)
mkdir -p "$work"
[ -d "$work/jpeg" ] || "$py" "$here/bench_imagefolder.py" idx "$idx" "$work/jpeg" --train "${TRAIN_N:-20000}" \
  --val "${VAL_N:-5000}"
[ -f "$work/${model}_train.onnx" ] || "$py" "$here/export_torchvision.py" "$model" -o "$work" --num-classes 10 \
  --image-size 64 >"$work/export.log" 2>&1
echo "== pretraining $model in acc32 (${PRE_EPOCHS:-4} epochs)"
"$amdnn" train "$work/${model}_train.onnx" "${img[@]}" "${dev[@]}" --epochs "${PRE_EPOCHS:-4}" --batch "$batch" \
  --optimizer adamw --lr 1e-3 --schedule onecycle -o "$work/pre.onnx" 2>&1 | grep -E "^epoch|^model|wrote|rror"
for m in acc32 $modes; do
  echo "== eval pre.onnx, $m"
  "$amdnn" eval "$work/pre.onnx" "${img[@]}" "${dev[@]}" --batch 256 --mode "$m" 2>&1 | grep -E "^top1|rror"
done
echo "== sweep, $last"
"$amdnn" sweep "$work/pre.onnx" "${img[@]}" "${dev[@]}" --mode "$last" --limit "${SWEEP_LIMIT:-2000}" \
  --tsv "$work/sweep.tsv" --plot "$work/sweep.png" 2>/dev/null | tail -n +1
echo "== fine-tuning pre.onnx in $last (${FT_EPOCHS:-1} epochs${FREEZE:+, --freeze $FREEZE})"
"$amdnn" train "$work/pre.onnx" "${img[@]}" "${dev[@]}" --epochs "${FT_EPOCHS:-1}" --batch "$batch" --mode "$last" \
  --optimizer adamw --lr "${FT_LR:-5e-5}" ${FREEZE:+--freeze "$FREEZE"} -o "$work/tuned.onnx" 2>&1 |
  grep -E "^epoch|freeze|wrote|rror"
for m in acc32 "$last"; do
  echo "== eval tuned.onnx, $m"
  "$amdnn" eval "$work/tuned.onnx" "${img[@]}" "${dev[@]}" --batch 256 --mode "$m" 2>&1 | grep -E "^top1|rror"
done
