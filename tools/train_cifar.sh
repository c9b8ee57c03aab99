#!/usr/bin/env bash
# The CIFAR-10 training recipe of the transformer and mobile models (issue 16):
# one model, trained from the same initial weights by amdnn-onnx in each
# multiplier mode given and by PyTorch (FP32 eager, TF32 off) with the same
# recipe (tools/train_torch_cifar.py), each writing a per-epoch TSV.
#
#   tools/train_cifar.sh MODEL CIFAR10_DIR OUT_DIR [WHAT ...]
#
# MODEL: vit_cifar or mobilenet_v3_cifar (tools/export_torchvision.py; the
# training form is exported with the TorchScript exporter, which keeps
# BatchNormalization in training mode, unless OUT_DIR/MODEL_train.onnx is
# there already). WHAT: torch and/or amdnn-onnx modes (default: torch acc32
# am16). Results: OUT_DIR/MODEL_<what>.tsv, the trained models
# OUT_DIR/MODEL_<mode>.onnx, logs OUT_DIR/MODEL_<what>.log.
# Environment: EPOCHS (default 20), BATCH (256), LR (1e-3 for vit_cifar,
# 2e-3 otherwise), WD (0.05), AMDNN (the amdnn-onnx binary, default
# build/src/amdnn-onnx), AMDNN_ARGS (more options for `amdnn-onnx train`,
# e.g. --checkpoint-dir D --walltime 9m --resume), PYTHON (default: the
# interpreter with torch, torchvision and onnx that tools/torch_python.sh finds).
set -eu
model=$1 data=$2 out=$3
shift 3
what=${*:-torch acc32 am16}
here=$(cd "$(dirname "$0")" && pwd)
amdnn=${AMDNN:-build/src/amdnn-onnx}
py=${PYTHON:-$("$here/torch_python.sh" torch torchvision onnx)}
epochs=${EPOCHS:-20} batch=${BATCH:-256} wd=${WD:-0.05} smooth=0.1
case $model in
vit_cifar) lr=${LR:-1e-3} ;;
mobilenet_v3_cifar) lr=${LR:-2e-3} ;;
*) echo "train_cifar.sh: MODEL is vit_cifar or mobilenet_v3_cifar" >&2; exit 2 ;;
esac
mkdir -p "$out"
if [ ! -f "$out/${model}_train.onnx" ]; then
  "$py" "$here/export_torchvision.py" "$model" -o "$out" --exporter torchscript
fi
for w in $what; do
  echo "== $model $w: $epochs epochs, batch $batch, AdamW lr $lr wd $wd, onecycle, label smoothing $smooth, crop:4,flip"
  if [ "$w" = torch ]; then
    "$py" "$here/train_torch_cifar.py" --model "$model" --data "$data" --epochs "$epochs" --batch "$batch" \
      --lr "$lr" --wd "$wd" --label-smoothing "$smooth" --metrics "$out/${model}_torch.tsv" \
      2>&1 | tee "$out/${model}_torch.log"
  else
    "$amdnn" train "$out/${model}_train.onnx" --data "cifar10:$data" --epochs "$epochs" --batch "$batch" \
      --optimizer adamw --lr "$lr" --wd "$wd" --schedule onecycle --label-smoothing "$smooth" \
      --augment crop:4,flip --mode "$w" --metrics "$out/${model}_$w.tsv" -o "$out/${model}_$w.onnx" \
      ${AMDNN_ARGS:-} 2>&1 | grep -v " batch " | tee "$out/${model}_$w.log"
  fi
done
