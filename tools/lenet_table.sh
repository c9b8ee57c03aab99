#!/usr/bin/env bash
# The LeNet accuracy table: LeNet-5 and LeNet-300-100 on MNIST, trained from
# the same initial weights (models/*_train.onnx) with the same recipe (SGD
# momentum 0.9, cosine schedule, seed 1) by PyTorch in FP32
# (tools/train_torch_mnist.py) and by `amdnn-onnx train` in each mode given;
# then a markdown table of the test top-1 (final epoch, best epoch's in
# parentheses).
#
#   tools/lenet_table.sh MNIST_DIR OUT_DIR [WHAT ...]
#
# WHAT: lenet5 and/or lenet300 (default both) and amdnn-onnx modes (default
# acc32 acc16 am32 am16 fp16); the torch column is always run. Results:
# OUT_DIR/<model>_<torch|mode>.tsv, .log, and the trained models .onnx.
# A run whose TSV already has all its epochs is skipped; an amdnn-onnx run
# cut off midway continues from its last checkpoint (OUT_DIR/ckpt/, with
# --resume), a torch run starts again.
# Environment: EPOCHS (default 200), BATCH (128), LR (0.05), LIMIT (none:
# --limit N for quick checks), DEVICE (cuda), AMDNN (the amdnn-onnx binary,
# default build/src/amdnn-onnx), PYTHON (default: the interpreter with torch
# and onnx that tools/torch_python.sh finds).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
data=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
amdnn=${AMDNN:-build/src/amdnn-onnx}
epochs=${EPOCHS:-200} batch=${BATCH:-128} lr=${LR:-0.05} device=${DEVICE:-cuda}
limit=${LIMIT:+--limit $LIMIT}
models= modes=
for w in "$@"; do
  case $w in
  lenet5 | lenet300) models="$models $w" ;;
  torch) ;;
  *) modes="$modes $w" ;;
  esac
done
models=${models:-lenet5 lenet300}
modes=${modes:-acc32 acc16 am32 am16 fp16}
[ -d "$data" ] || { echo "lenet_table.sh: no MNIST folder $data" >&2; exit 2; }
mkdir -p "$out/ckpt"

# 0 when TSV has its last epoch
done_tsv() { [ -f "$1" ] && [ "$(tail -n 1 "$1" | cut -f1)" = "$epochs" ]; }

for m in $models; do
  onnx=$root/models/${m}_train.onnx
  [ -f "$onnx" ] || { echo "lenet_table.sh: no model $onnx" >&2; exit 2; }
  for w in torch $modes; do
    tsv=$out/${m}_$w.tsv
    if done_tsv "$tsv"; then
      echo "== $m $w: done ($tsv has $epochs epochs)"
      continue
    fi
    echo "== $m $w: $epochs epochs, batch $batch, SGD lr $lr momentum 0.9 cosine, seed 1${LIMIT:+, limit $LIMIT}"
    if [ "$w" = torch ]; then
      py=${PYTHON:-$("$here/torch_python.sh" torch onnx)}
      "$py" "$here/train_torch_mnist.py" --model "$onnx" --data "$data" --epochs "$epochs" --batch "$batch" \
        --lr "$lr" --momentum 0.9 --seed 1 --device "$device" $limit --metrics "$tsv" -o "$out/${m}_torch.onnx" \
        2>&1 | tee "$out/${m}_torch.log"
    else
      # the checkpoints of this run's options only (another EPOCHS or LIMIT starts afresh)
      "$amdnn" train "$onnx" --data "mnist:$data" --epochs "$epochs" --batch "$batch" --lr "$lr" --momentum 0.9 \
        --schedule cosine --seed 1 --mode "$w" --device "$device" $limit -o "$out/${m}_$w.onnx" --metrics "$tsv" \
        --checkpoint-dir "$out/ckpt/${m}_${w}_e${epochs}_l${LIMIT:-all}" --resume \
        2>&1 | { grep -v '^  epoch [0-9]* batch ' || true; } | tee -a "$out/${m}_$w.log"
    fi
  done
done

# the table: final test top-1 % (best epoch's); [k/E] marks a run not finished
echo
printf '| model |'
for w in torch $modes; do printf ' %s |' "$w"; done
printf '\n|---|'
for w in torch $modes; do printf -- '---|'; done
echo
for m in $models; do
  printf '| %s |' "$m"
  for w in torch $modes; do
    tsv=$out/${m}_$w.tsv
    [ -f "$tsv" ] || { printf ' - |'; continue; }
    awk -F'\t' -v e="$epochs" 'NR > 1 { n++; last = $6; if ($6 > best) best = $6 }
      END { if (!n) printf " - |"
            else printf " %.2f (%.2f)%s |", 100 * last, 100 * best, n < e ? " [" n "/" e "]" : "" }' "$tsv"
  done
  echo
done
