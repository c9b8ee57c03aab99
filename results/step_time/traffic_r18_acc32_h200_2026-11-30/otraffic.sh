#!/usr/bin/env bash
# Where the non-GEMM time of a ResNet-18 training step goes and how fast each kernel moves memory:
# Nsight Compute over about two acc32 steps of `train` (main's bundle), time and DRAM bytes per kernel.
set -u
t0=$(date +%s)
mkdir -p $OUT /tmp/ot
export CUDA_VISIBLE_DEVICES=0
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
if [ ! -x .gpu-bmain/amdnn-onnx ]; then
  rm -rf /tmp/ux && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-main/b.tar.xz && mv /tmp/ux/b .gpu-bmain
fi
LIBS="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
export LD_LIBRARY_PATH="$LIBS:$PWD/.gpu-bmain/lib:${LD_LIBRARY_PATH:-}"
py=$(tools/torch_python.sh torch onnx)
$py tools/export_models.py --out /tmp/ot/gen --models resnet18 > /tmp/ot/export.log 2>&1 || tail -3 /tmp/ot/export.log
$py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/ot/r18 --count 1280 > /dev/null
for mode in ${MODES:-acc32}; do
  timeout ${NCU_S:-240} ncu --clock-control none --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --launch-skip ${SKIP:-3000} --launch-count ${COUNT:-800} \
    .gpu-bmain/amdnn-onnx train /tmp/ot/gen/resnet18_train.onnx --data "tensors:/tmp/ot/r18/X.pb,/tmp/ot/r18/Y.pb" \
    --batch 128 --lr 0.01 --device cuda -o /tmp/ot/k.onnx --epochs 1 --mode $mode > $OUT/traffic_r18_$mode.csv 2> $OUT/ncu_$mode.err
  echo "$mode ncu rc $? ($(( $(date +%s) - t0 )) s)"; tail -2 $OUT/ncu_$mode.err
  python3 tools/ncu_kernel_table.py $OUT/traffic_r18_$mode.csv | head -30
done
nvidia-smi --query-gpu=index,name,clocks.max.sm,clocks.max.mem --format=csv,noheader
xz -9 $OUT/*.csv
