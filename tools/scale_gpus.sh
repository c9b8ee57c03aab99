#!/usr/bin/env bash
# Data-parallel scaling of `amdnn-onnx train` over 1, 2, 4 (8) GPUs at a
# fixed batch per GPU (issue 35): ResNet-18 in acc32 and am16 and ResNet-50
# in acc32, the CIFAR forms of tools/export_models.py, each GPU count with
# the gradient all-reduce after the backward pass and with it in buckets
# overlapping the backward pass (AMD_DIST_BUCKET_MB). Each run trains whole
# epochs; the row is the last epoch's images/s (the first one holds the
# start-up and the CUDA graph capture) from the metrics TSV, and the
# efficiency is images/s / (GPUs x the one-GPU images/s).
#
#   tools/scale_gpus.sh OUT_DIR [CIFAR10_DIR]
#
# Without CIFAR10_DIR the data are random images in CIFAR-10's binary format
# and size (50,000 + 10,000, 10 classes): the speed of a step does not depend
# on the pixels. Environment: GPUS (default "1 2 4", capped at the machine's
# count), EPOCHS (2), BATCH (128 per GPU), RUNS ("resnet18:acc32
# resnet18:am16 resnet50:acc32"), BUCKETS ("0 25": 0 is one all-reduce after
# the backward pass), AMDNN (build/src/amdnn-onnx), PYTHON (an interpreter
# with torch and onnx: tools/torch_python.sh). Results: OUT_DIR/scale.tsv and
# one log per run.
set -eu
out=$1 cifar=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
amd=${AMDNN:-build/src/amdnn-onnx}
py=${PYTHON:-$("$here/torch_python.sh" torch onnx)}
epochs=${EPOCHS:-2} batch=${BATCH:-128}
runs=${RUNS:-resnet18:acc32 resnet18:am16 resnet50:acc32}
buckets=${BUCKETS:-0 25}
have=$(nvidia-smi -L | grep -c '^GPU')
gpus=""
for n in ${GPUS:-1 2 4}; do [ "$n" -le "$have" ] && gpus="$gpus $n"; done
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0

if [ -z "$cifar" ]; then
  cifar=$out/random-cifar10
  if [ ! -f "$cifar/test_batch.bin" ]; then
    "$py" "$here/random_cifar10.py" "$cifar"
  fi
fi
models=$(for r in $runs; do echo "${r%%:*}"; done | sort -u | tr '\n' ',')
for m in ${models//,/ }; do
  [ -f "$out/${m}_train.onnx" ] || "$py" "$here/export_models.py" --out "$out" --models "${models%,}" >"$out/export.log" 2>&1
done

# one run: train for EPOCHS epochs on N GPUs with all-reduce buckets of B MB (0: none); prints the last epoch's images/s
run() {
  local m=$1 mode=$2 n=$3 b=$4
  local tag="$m-$mode-$n-b$b"
  local args=(train "$out/${m}_train.onnx" --data "cifar10:$cifar" --epochs "$epochs" --batch "$batch" --lr 0.05
    --mode "$mode" --device cuda --metrics "$out/$tag.tsv" -o "$out/$tag.onnx")
  if [ "$n" = 1 ]; then
    "$amd" "${args[@]}" >"$out/$tag.log" 2>&1
  else
    AMD_DIST_BUCKET_MB=$b mpirun -np "$n" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x AMD_DIST_BUCKET_MB \
      "$amd" "${args[@]}" >"$out/$tag.log" 2>&1
  fi
  tail -1 "$out/$tag.tsv" | cut -f8
}

printf 'model\tmode\tgpus\tbucket_mb\tsteps_per_epoch\timages_per_s\tefficiency\n' >"$out/scale.tsv"
row() { # model mode gpus bucket images/s one-GPU images/s
  local eff steps=$(( (50000 + batch * $3 - 1) / (batch * $3) ))
  eff=$(awk -v a="$5" -v o="$6" -v n="$3" 'BEGIN { printf "%.3f", a / (n * o) }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$steps" "$5" "$eff" | tee -a "$out/scale.tsv"
}
for r in $runs; do
  m=${r%%:*} mode=${r#*:}
  one=$(run "$m" "$mode" 1 0) # one GPU: no all-reduce, the buckets change nothing
  row "$m" "$mode" 1 - "$one" "$one"
  for b in $buckets; do
    for n in $gpus; do
      [ "$n" = 1 ] && continue
      row "$m" "$mode" "$n" "$b" "$(run "$m" "$mode" "$n" "$b")" "$one"
    done
  done
done
