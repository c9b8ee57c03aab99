#!/usr/bin/env bash
# The 8-bit multiplier study of issue 19 on CIFAR-10, in one command on the
# GPU machine:
#   1. ResNet-18 (tools/export_models.py resnet18, the CIFAR form) trained in
#      acc32 (fp32 products): EPOCHS epochs, AdamW, one-cycle, label
#      smoothing 0.1, crop:4,flip; PyTorch's FP32 run of the same recipe
#      beside it when TORCH=1 (tools/train_torch_cifar.py);
#   2. that model evaluated on the test split in acc32 and, quantized on the
#      fly (per-tensor data, per-channel weights), with the exact 8-bit tables
#      and each approximate one of tools/mul8/ (tabulated by
#      tools/tabulate_mul8.py unless TABLES holds NAME.q8 files already);
#   3. the table that loses the most top-1 fine-tuned from the acc32 model
#      for FT_EPOCHS epochs under that multiplier, once with the
#      straight-through gradient (--q8-grad ste) and once with the table's own
#      (--q8-grad table), each evaluated after every epoch.
# Results in OUT: eval.tsv (mode, top1, top5, loss), ft_ste.tsv and
# ft_table.tsv (per epoch), the logs, the models.
#
#   tools/q8_study.sh CIFAR10_DIR OUT [STAGE ...]    (stages: train eval ft; default all)
#
# Environment: AMDNN (default build/src/amdnn-onnx), PYTHON (default: the
# interpreter with torch and onnx that tools/torch_python.sh finds), EPOCHS
# (15), BATCH (256), LR (2e-3), FT_EPOCHS (3), FT_LR (2e-4), TABLES (folder of
# NAME.q8 tables, default OUT/tables), WORST (a table name: skip the choice),
# LIMIT (N: train and evaluate on N images only, a quick trial of the script),
# GRADS (the fine-tuning runs, default "ste table").
set -eu
data=$1 out=$2
shift 2
stages=${*:-train eval ft}
here=$(cd "$(dirname "$0")" && pwd)
amdnn=${AMDNN:-build/src/amdnn-onnx}
py=${PYTHON:-$("$here/torch_python.sh" torch onnx)}
epochs=${EPOCHS:-15} batch=${BATCH:-256} lr=${LR:-2e-3} ft_epochs=${FT_EPOCHS:-3} ft_lr=${FT_LR:-2e-4}
tables=${TABLES:-$out/tables}
mkdir -p "$out" "$tables"
recipe=(--optimizer adamw --wd 0.05 --label-smoothing 0.1 --augment crop:4,flip --batch "$batch")
limit=()
[ -z "${LIMIT:-}" ] || limit=(--limit "$LIMIT")
recipe+=("${limit[@]}")
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }

# the tables: q8u for mul8u_*, q8s for mul8s_*
for c in "$here"/mul8/mul8*.c; do
  name=$(basename "$c" .c)
  [ -f "$tables/$name.q8" ] || "$py" "$here/tabulate_mul8.py" "$c" "$name" -o "$tables/$name.q8"
done

if has train; then
  [ -f "$out/resnet18_train.onnx" ] || "$py" "$here/export_models.py" --out "$out" --models resnet18 >"$out/export.log"
  echo "== train resnet18 acc32: $epochs epochs, batch $batch, AdamW lr $lr, onecycle"
  "$amdnn" train "$out/resnet18_train.onnx" --data "cifar10:$data" --epochs "$epochs" "${recipe[@]}" --lr "$lr" \
    --schedule onecycle --mode acc32 --metrics "$out/train_acc32.tsv" -o "$out/resnet18_acc32.onnx" 2>&1 |
    grep -v " batch " | tee "$out/train_acc32.log"
  if [ "${TORCH:-0}" = 1 ]; then
    "$py" "$here/train_torch_cifar.py" --model resnet18 --data "$data" --epochs "$epochs" --batch "$batch" \
      --lr "$lr" --wd 0.05 --label-smoothing 0.1 --metrics "$out/train_torch.tsv" 2>&1 | tee "$out/train_torch.log"
  fi
fi

# top-1, top-5 and loss of `eval` (its "top1 ..." line) as three tab-separated fields
scores() { sed -n 's/.*top1 \([0-9.]*\)%.*top5 \([0-9.]*\)%.*loss \([0-9.]*\).*/\1\t\2\t\3/p' | tail -1; }
if has eval; then
  printf 'mode\ttop1\ttop5\tloss\n' >"$out/eval.tsv"
  for mode in acc32 q8u:exact q8s:exact $(for t in "$tables"/*.q8; do
    n=$(basename "$t" .q8)
    case $n in mul8s_*) echo "q8s:$t" ;; *) echo "q8u:$t" ;; esac
  done); do
    line=$("$amdnn" eval "$out/resnet18_acc32.onnx" --data "cifar10:$data" --mode "$mode" --batch 500 \
      "${limit[@]}" 2>&1 | scores)
    printf '%s\t%s\n' "$(basename "$mode" .q8)" "$line" | tee -a "$out/eval.tsv"
  done
fi

if has ft; then
  # the worst table: the lowest top-1 among the approximate ones
  worst=${WORST:-$(awk -F'\t' 'NR > 1 && $1 ~ /mul8/ && (min == "" || $2 < min) { min = $2; w = $1 } END { print w }' \
    "$out/eval.tsv" | sed 's/^q8[us]://')}
  t="$tables/$worst.q8"
  case $worst in mul8s_*) mode="q8s:$t" ;; *) mode="q8u:$t" ;; esac
  for g in ${GRADS:-ste table}; do
    echo "== fine-tune under $worst, --q8-grad $g: $ft_epochs epochs, AdamW lr $ft_lr, cosine"
    "$amdnn" train "$out/resnet18_acc32.onnx" --data "cifar10:$data" --epochs "$ft_epochs" "${recipe[@]}" \
      --lr "$ft_lr" --schedule cosine --mode "$mode" --q8-grad "$g" --metrics "$out/ft_$g.tsv" \
      -o "$out/resnet18_${worst}_$g.onnx" 2>&1 | grep -v " batch " | tee "$out/ft_$g.log"
  done
fi
