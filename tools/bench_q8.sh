#!/usr/bin/env bash
# The 8-bit modes' speed on the GPU against PyTorch, in one command (issue 19):
#   1. the q8 GEMM at ResNet-18's 3x3 convolution shapes
#      (`test_cuda_q8_gemm --bench`: a table, the exact table on the int8
#      tensor cores with and without zero points, cuBLAS SGEMM) and PyTorch's
#      int8 GEMM (torch._int_mm) and FP32 matmul at the same shapes;
#   2. ResNet-18 (tools/export_models.py, the CIFAR form) inference at batch
#      256 and training at batch 128: PyTorch FP32 (TF32 off) and amdnn-onnx
#      `bench` in acc32, q8s:exact, q8u:exact and each table of tools/mul8/
#      (inference; with the forward GEMMs' multiply-adds per second on the
#      network's own activations, from --profile).
#
#   tools/bench_q8.sh BIN_DIR WORK
#
# BIN_DIR holds amdnn-onnx and test_cuda_q8_gemm (a tools/gpu_bundle.sh
# bundle's bin/; from a build folder set AMDNN=build/src/amdnn-onnx and
# Q8_GEMM_BENCH=build/tests/gpu/test_cuda_q8_gemm); WORK gets the exported
# model, the tables (tabulated by tools/tabulate_mul8.py with the system C
# compiler unless WORK/tables has NAME.q8 already) and the profiles. Needs a
# Python with torch: PYTHON, else the one tools/torch_python.sh finds.
set -eu
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-$("$here/torch_python.sh" torch onnx)}
amd=${AMDNN:-$bin/amdnn-onnx} q8bench=${Q8_GEMM_BENCH:-$bin/test_cuda_q8_gemm}
tables=$work/tables
mkdir -p "$work" "$tables"
for c in "$here"/mul8/mul8*.c; do
  name=$(basename "$c" .c)
  [ -f "$tables/$name.q8" ] || "$py" "$here/tabulate_mul8.py" "$c" "$name" -o "$tables/$name.q8"
done
[ -f "$work/resnet18_train.onnx" ] || "$py" "$here/export_models.py" --out "$work" --models resnet18 >"$work/export.log"
echo "== the q8 GEMM (amdnn-onnx), T MAC/s"
"$q8bench" --bench
echo "== PyTorch at the same shapes, T MAC/s"
"$py" "$here/bench_q8_torch.py" gemm
echo "== ResNet-18 inference, batch 256"
"$py" "$here/bench_q8_torch.py" infer --model resnet18 --batch 256
modes="acc32 q8s:exact q8u:exact"
for t in "$tables"/*.q8; do
  case $(basename "$t") in mul8s_*) modes="$modes q8s:$t" ;; *) modes="$modes q8u:$t" ;; esac
done
for m in $modes; do
  p=$work/profile_$(basename "$m" .q8 | tr ':' '_').txt
  "$amd" bench "$work/resnet18.onnx" --infer --batch 256 --steps 50 --mode "$m" 2>&1 | tail -1
  "$amd" bench "$work/resnet18.onnx" --infer --batch 256 --steps 10 --mode "$m" --profile "${p%.txt}.tsv" >"$p" 2>&1
  echo "    forward GEMMs (profiled run): $(awk '/forward GEMM/ {print $NF / 1000 " T MAC/s"}' "$p")"
done
echo "== ResNet-18 training, batch 128"
"$py" "$here/bench_torch_train.py" --model resnet18 --batch 128 --steps 50 | sed -n 1p
for m in acc32 q8s:exact q8u:exact; do
  "$amd" bench "$work/resnet18_train.onnx" --batch 128 --steps 50 --mode "$m" 2>&1 | tail -1
done
