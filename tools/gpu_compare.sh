#!/usr/bin/env bash
# Throughput of two builds side by side on one GPU, in one command: a change
# that must not slow anything down (a refactor) is run against the build
# before it. Each argument is a folder made by tools/gpu_bundle.sh; the runs
# alternate between them (A, B, A, B) so that clock drift hits both alike,
# and PyTorch (FP32 eager, TF32 off) runs in the same command as the
# reference. Printed per case: images/s of each run and B / A.
#   ResNet-18 (CIFAR form, batch 128, 2560 random samples): `train`, 2 epochs
#     (the second one's images/s), each of acc32 am16 acc16 fp16 am32, and
#     `bench` (training steps) in acc32 and am16;
#   LeNet-5 on the bundle's IDX data: `train`, 2 epochs, acc32 am16 am32 fp16.
# The exporter, PyTorch's benchmark, the IDX data and the libraries come from
# BUNDLE_B; BUNDLE_A needs only bin/amdnn-onnx (a bundle cut down to it fits
# beside a whole one in the device's carry limit).
# usage: tools/gpu_compare.sh BUNDLE_A BUNDLE_B [ROUNDS (default 2)]
set -u
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) rounds=${3:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$("$here/tools/torch_python.sh" torch onnx)} || exit 1 # the interpreter with torch
cublas=$("$py" -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" "$b/tools/export_models.py" --out "$tmp/gen" --models resnet18 >"$tmp/export.log" 2>&1 ||
  { tail -5 "$tmp/export.log"; exit 1; }
"$py" "$b/tools/bench_torch_train.py" --model resnet18 --write-tensors "$tmp/r18" --count 2560 >/dev/null
r18=("$tmp/gen/resnet18_train.onnx" --data "tensors:$tmp/r18/X.pb,$tmp/r18/Y.pb")
lenet="$here/models/lenet5_train.onnx"

# one run of bundle $1: the images/s that amdnn-onnx printed last
run() {
  local bundle=$1
  shift
  LD_LIBRARY_PATH="/usr/local/cuda/lib64:$bundle/lib:$b/lib:$cublas:${LD_LIBRARY_PATH:-}" "$bundle/bin/amdnn-onnx" "$@" \
    2>&1 | sed -n 's/.* \([0-9][0-9.]*\) img\/s.*/\1/p; s/.* \([0-9][0-9.]*\) images\/s.*/\1/p' | tail -1
}
# case NAME ARGS...: every round runs A then B; prints the best of each and B / A
case_() {
  local name=$1 best_a=0 best_b=0 x
  shift
  for _ in $(seq "$rounds"); do
    x=$(run "$a" "$@")
    best_a=$(awk -v p="$best_a" -v q="${x:-0}" 'BEGIN { print (q > p ? q : p) }')
    x=$(run "$b" "$@")
    best_b=$(awk -v p="$best_b" -v q="${x:-0}" 'BEGIN { print (q > p ? q : p) }')
  done
  awk -v n="$name" -v p="$best_a" -v q="$best_b" \
    'BEGIN { printf "%-28s %10.0f %10.0f   %s\n", n, p, q, (p > 0 ? sprintf("%.3f", q / p) : "?") }'
}
nvidia-smi -L
printf '%-28s %10s %10s   %s\n' case "A img/s" "B img/s" "B / A"
common=(--batch 128 --lr 0.01 --device cuda -o "$tmp/out.onnx")
for mode in acc32 am16 acc16 fp16 am32; do
  case_ "resnet18 train $mode" train "${r18[@]}" "${common[@]}" --epochs 2 --mode "$mode"
done
for mode in acc32 am16; do
  case_ "resnet18 bench $mode" bench "$tmp/gen/resnet18_train.onnx" --batch 128 --steps 100 --mode "$mode"
done
for mode in acc32 am16 am32 fp16; do
  case_ "lenet5 train $mode" train "$lenet" --data "mnist:$b/data/idx" "${common[@]}" --epochs 2 --mode "$mode"
done
echo "--- PyTorch, the same ResNet-18 and LeNet-5 (FP32 eager, TF32 off)"
"$py" "$b/tools/bench_torch_train.py" --model resnet18 --batch 128 --steps 50
"$py" "$b/tools/bench_torch_train.py" --model lenet5 --batch 128 --steps 200
