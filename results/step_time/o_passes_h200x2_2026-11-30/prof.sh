#!/usr/bin/env bash
# ResNet-50 (torchvision, 224 x 224) inference at batch 256 under `bench --profile` (stages timed with CUDA events),
# am16 and acc32, beside plain `bench` and PyTorch; LeNet-5 epochs beside PyTorch's LeNet-5, twice. One H200.
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
mkdir -p $OUT /tmp/w
rm -rf .gpu-bnew /tmp/ux && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-opass/b.tar.xz && mv /tmp/ux/b .gpu-bnew
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.gpu-bnew/lib:${LD_LIBRARY_PATH:-}"
py=$(tools/torch_python.sh torch onnx)
N=.gpu-bnew/bin/amdnn-onnx
{
  $py tools/export_torchvision.py resnet50 -o /tmp/w > /tmp/w/export.log 2>&1 || tail -3 /tmp/w/export.log
  for mode in am16 acc32; do
    echo "--- resnet50 inference $mode, bench: $($N bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 20 --warmup-steps 3 --mode $mode 2>&1 | grep -oE '[0-9]+ images/s, [0-9.]+ ms/step')"
    echo "--- resnet50 inference $mode, bench --profile"
    $N bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 10 --warmup-steps 3 --mode $mode --profile $OUT/profile_r50_infer_$mode.tsv 2>&1 | grep -vE "^model|^  epoch"
  done
  $py tools/bench_imagefolder.py infer --model resnet50 --batch 256
  echo "($(el) s)"
  for r in 1 2; do
    echo "lenet5 acc32: $($N train models/lenet5_train.onnx --data mnist:.gpu-bnew/data/idx --batch 128 --lr 0.01 --device cuda -o /tmp/w/l.onnx --epochs 2 --mode acc32 2>&1 | grep '^epoch 2')"
    $py tools/bench_torch_train.py --model lenet5 --batch 128 --steps 200
  done
  echo "($(el) s)"
} > $OUT/prof.txt 2>&1
cat $OUT/prof.txt
