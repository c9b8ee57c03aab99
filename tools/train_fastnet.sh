#!/usr/bin/env bash
# The fast CIFAR-10 recipe of issue 8, in one command: exports fastnet
# (tools/export_models.py, with whitening filters from the training images)
# and trains it for 18 epochs: batch 1024, one-cycle Nesterov SGD (max lr 1.5,
# momentum 0.85, weight decay 1.3e-3), label smoothing 0.2, crop (pad 2) and
# flip, the whitening filters and the BN scales kept fixed, test accuracy with
# test-time mirroring (--tta). On an H100 in acc32: 94% and more in under a
# minute of training (docs/results.md, "CIFAR-10 to 94% in under a minute").
#
# usage: tools/train_fastnet.sh CIFAR10_DIR OUT_DIR [train options, e.g. --mode am16 --seed 2]
# Writes OUT_DIR/fastnet_train.onnx (the untrained export), OUT_DIR/fastnet_MODE.onnx
# (trained), OUT_DIR/fastnet_MODE.tsv (epoch, hours, ..., test_top1 per epoch) and,
# where amdnn-onnx has cairo, OUT_DIR/fastnet_MODE.png. Environment: AMDNN_ONNX (the
# binary, default build/src/amdnn-onnx), PYTHON (an interpreter with torch and
# onnx, default the one tools/torch_python.sh finds).
set -euo pipefail
if [ $# -lt 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
data=$1 out=$2
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
amd=${AMDNN_ONNX:-$top/build/src/amdnn-onnx}
py=${PYTHON:-$("$top/tools/torch_python.sh" torch onnx)}
[ -x "$amd" ] || { echo "train_fastnet.sh: no amdnn-onnx at $amd (build it, or set AMDNN_ONNX)" >&2; exit 1; }
[ -d "$data" ] || { echo "train_fastnet.sh: no CIFAR-10 folder $data" >&2; exit 1; }
mkdir -p "$out"
mode=acc32
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --mode ] && j=$((i + 1)) && mode=${!j}; done
"$py" "$top/tools/export_models.py" --out "$out" --models fastnet --cifar10 "$data" | grep -E "whitening|_train.onnx"
plot=()
ldd "$amd" 2>/dev/null | grep -q libcairo && plot=(--plot "$out/fastnet_$mode.png")
start=$(date +%s.%N)
"$amd" train "$out/fastnet_train.onnx" --data "cifar10:$data" --epochs 18 --batch 1024 --optimizer sgd --lr 1.5 \
  --momentum 0.85 --nesterov --wd 1.3e-3 --schedule onecycle:0.25 --label-smoothing 0.2 --augment crop:2,flip \
  --freeze 'whiten.weight,*.bn1.weight,*.bn2.weight' --tta --seed 1 -o "$out/fastnet_$mode.onnx" \
  --metrics "$out/fastnet_$mode.tsv" "${plot[@]}" "$@"
echo "train_fastnet.sh: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s for the" \
  "whole training command (epoch times, tests and set-up); per epoch: $out/fastnet_$mode.tsv"
