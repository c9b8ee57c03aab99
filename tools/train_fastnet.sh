#!/usr/bin/env bash
# The fast CIFAR-10 recipes, in one command: exports the network
# (tools/export_models.py, with whitening filters from the training images)
# and trains it from scratch in acc32 (or --mode MODE).
#  NET=wide (the default; issue 8's recipe): fastnet (96 / 384 / 384 channels),
#   18 epochs, batch 1024, one-cycle Nesterov SGD (max lr 1.5, momentum 0.85,
#   weight decay 1.3e-3), label smoothing 0.2, crop (pad 2) and flip, test-time
#   mirroring (--tta): 94.2-94.5% in 47 s of training on an H100.
#  NET=narrow: fastnet_narrow (airbench94's network: 64 / 256 / 256, GELU,
#   identity-initialised convs, BN momentum 0.6), 11 epochs, the same SGD with
#   airbench94's triangle schedule (0.2 -> 1 -> 0.07 x lr), flip:alt,
#   --lookahead 5 and test-time mirroring and 1-pixel shifts (--tta-shift 1):
#   94.09% (mean of 3) in 15.6 s of training on an H200.
# Both keep the whitening filters and the BN scales fixed (--freeze).
# RANKS=2 trains on two GPUs (mpirun -np 2, --batch 512 each: the same global
# batch; BatchNormalization over each rank's 512 unless --sync-bn is given).
#
# usage: [NET=narrow] tools/train_fastnet.sh CIFAR10_DIR OUT_DIR [train options, e.g. --mode am16 --seed 2]
# (later options win: --epochs 12). Writes OUT_DIR/NAME_train.onnx (the untrained export),
# OUT_DIR/NAME_MODE.onnx (trained), OUT_DIR/NAME_MODE.tsv (epoch, hours, ..., test_top1 per
# epoch) and, where amdnn-onnx has cairo, OUT_DIR/NAME_MODE.png, NAME fastnet or
# fastnet_narrow. Environment: NET, RANKS (1), MPIRUN (mpirun), AMDNN_ONNX (the binary, default build/src/amdnn-onnx),
# PYTHON (an interpreter with torch and onnx, default the one tools/torch_python.sh finds).
set -euo pipefail
if [ $# -lt 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
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
common=(--batch 1024 --optimizer sgd --lr 1.5 --momentum 0.85 --nesterov --wd 1.3e-3 --label-smoothing 0.2
  --freeze 'whiten.weight,*.bn1.weight,*.bn2.weight' --tta --seed 1)
case ${NET:-wide} in
wide)
  name=fastnet
  recipe=(--epochs 18 --schedule onecycle:0.25 --augment crop:2,flip) ;;
narrow)
  name=fastnet_narrow
  recipe=(--epochs 11 --schedule triangle:0.23:0.2:0.07 --augment crop:2,flip:alt --lookahead 5 --tta-shift 1) ;;
*)
  echo "train_fastnet.sh: NET is wide or narrow, not '$NET'" >&2
  exit 2 ;;
esac
ranks=${RANKS:-1}
launch=()
case $ranks in
1) ;;
2 | 4 | 8)
  read -r -a launch <<<"${MPIRUN:-mpirun}" # (it may carry options: MPIRUN="mpirun --oversubscribe")
  launch+=(-np "$ranks")
  [ "$(id -u)" != 0 ] || launch+=(--allow-run-as-root)
  common+=(--batch $((1024 / ranks))) ;;
*)
  echo "train_fastnet.sh: RANKS is 1, 2, 4 or 8, not '$ranks'" >&2
  exit 2 ;;
esac
"$py" "$top/tools/export_models.py" --out "$out" --models $name --cifar10 "$data" | grep -E "whitening|_train.onnx"
plot=()
ldd "$amd" 2>/dev/null | grep -q libcairo && plot=(--plot "$out/${name}_$mode.png")
start=$(date +%s.%N)
"${launch[@]}" "$amd" train "$out/${name}_train.onnx" --data "cifar10:$data" "${common[@]}" "${recipe[@]}" \
  -o "$out/${name}_$mode.onnx" --metrics "$out/${name}_$mode.tsv" "${plot[@]}" "$@"
echo "train_fastnet.sh: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s for the" \
  "whole training command (epoch times, tests and set-up); per epoch: $out/${name}_$mode.tsv"
