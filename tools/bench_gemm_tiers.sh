#!/usr/bin/env bash
# The GPU's two GEMM tiers of am16 and mbm14 end to end (--gemm fast|exact,
# docs/multipliers.md section 8), in one command beside PyTorch:
#  1. ResNet-18 (CIFAR form) training steps at batch 128: PyTorch FP32 eager
#     (TF32 off), then `bench` in acc32 and in am16 and mbm14 in each tier;
#  2. ResNet-50 (torchvision, 224 x 224) inference at batch 256: PyTorch FP32,
#     then `bench --infer` in acc32 and in am16 in each tier;
#  3. with IDX_DIR (MNIST): LeNet-5 trained 2 epochs in am16 in each tier, the
#     test accuracies side by side.
# Needs a Python with torch and torchvision (the exports and PyTorch's timings):
# PYTHON, else the one tools/torch_python.sh finds.
# usage: tools/bench_gemm_tiers.sh AMDNN_ONNX WORK_DIR [IDX_DIR]
set -u
amd=$1 work=$2 idx=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
models=$(cd "$here/../models" && pwd)
py=${PYTHON:-$("$here/torch_python.sh" torch torchvision onnx)} || exit 1
mkdir -p "$work"

echo "== ResNet-18 (CIFAR form) training, batch 128"
[ -f "$work/resnet18_train.onnx" ] || "$py" "$here/export_models.py" --out "$work" --models resnet18 >"$work/export.log" 2>&1 ||
  { echo "export failed"; tail -3 "$work/export.log"; exit 1; }
"$py" "$here/bench_torch_train.py" --model resnet18 --batch 128 --steps 50
for spec in "acc32 fast" "am16 fast" "am16 exact" "mbm14 fast" "mbm14 exact"; do
  set -- $spec
  echo "amdnn-onnx $1 --gemm $2: $("$amd" bench "$work/resnet18_train.onnx" --batch 128 --steps 60 --mode "$1" --gemm "$2" \
    --device cuda 2>&1 | tail -1)"
done

echo "== ResNet-50 inference, batch 256, 224 x 224"
[ -f "$work/resnet50.onnx" ] || "$py" "$here/export_torchvision.py" resnet50 -o "$work" >"$work/export50.log" 2>&1 ||
  { echo "export failed"; tail -3 "$work/export50.log"; exit 1; }
"$py" "$here/bench_imagefolder.py" infer --model resnet50 --batch 256
for spec in "acc32 fast" "am16 fast" "am16 exact"; do
  set -- $spec
  echo "amdnn-onnx $1 --gemm $2: $("$amd" bench "$work/resnet50.onnx" --infer --batch 256 --steps 20 --warmup-steps 3 --mode "$1" \
    --gemm "$2" --device cuda 2>&1 | tail -1)"
done

if [ -n "$idx" ]; then
  echo "== LeNet-5 on MNIST, 2 epochs, am16 in each tier"
  for tier in fast exact; do
    echo "--gemm $tier: $("$amd" train "$models/lenet5_train.onnx" --data "mnist:$idx" --epochs 2 --batch 64 --lr 0.05 \
      --seed 1 --mode am16 --gemm "$tier" --device cuda -o "$work/lenet5_$tier.onnx" 2>&1 | grep '^epoch 2' | tail -1)"
  done
fi
