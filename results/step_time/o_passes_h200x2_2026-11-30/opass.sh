#!/usr/bin/env bash
# Training-pass Relu fusion and im2col from planes in shared memory, against main e16475e, one call on the
# two-GPU kind:
#   GPU 1: shard 1 of 2 of the new bundle's GPU suite, from the start;
#   GPU 0: ResNet-18 training at batch 128 (acc32 main/new twice, am16 and mit16 once), PyTorch in the same
#          command, LeNet-5 epochs (acc32, am16) main/new, ResNet-50 CIFAR training peak memory main/new,
#          Nsight Compute over an acc32 ResNet-18 launch window of the new build, then shard 0 of 2.
# Carry .gpu-opass (bundle), .gpu-oldbin (main's binary), .gpu-scripts.
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
mkdir -p $OUT /tmp/cz
if [ ! -x .gpu-bnew/amdnn-onnx ]; then
  rm -rf /tmp/ux && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-opass/b.tar.xz && mv /tmp/ux/b .gpu-bnew
fi
xz -dc .gpu-oldbin/amdnn-onnx.xz > .gpu-bnew/bin/amdnn-onnx.main && chmod +x .gpu-bnew/bin/amdnn-onnx.main
echo "unpacked ($(el) s)"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
( CUDA_VISIBLE_DEVICES=1 SHARD=1/2 bash .gpu-bnew/run_all.sh tests /tmp/cz/s1 > $OUT/shard_1.txt 2>&1
  echo "shard 1 rc $? at $(el) s" >> $OUT/shard_1.txt ) &
sp=$!
export CUDA_VISIBLE_DEVICES=0
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.gpu-bnew/lib:${LD_LIBRARY_PATH:-}"
py=$(tools/torch_python.sh torch onnx)
M=.gpu-bnew/bin/amdnn-onnx.main N=.gpu-bnew/bin/amdnn-onnx
{
  $py tools/export_models.py --out /tmp/cz/gen --models resnet18,resnet50 > /tmp/cz/export.log 2>&1 || tail -3 /tmp/cz/export.log
  $py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/cz/r18 --count 2560 > /dev/null
  r18=(/tmp/cz/gen/resnet18_train.onnx --data "tensors:/tmp/cz/r18/X.pb,/tmp/cz/r18/Y.pb" --batch 128 --lr 0.01
    --device cuda -o /tmp/cz/o.onnx --epochs 2)
  ep() { sed -n 's/^epoch 2\/2 .* \([0-9][0-9]*\) img\/s .*/\1/p'; }
  for mode in acc32 acc32 am16 mit16; do
    echo "resnet18 $mode train: main $($M train "${r18[@]}" --mode $mode 2>&1 | ep)," \
      "new $($N train "${r18[@]}" --mode $mode 2>&1 | ep) img/s ($(el) s)"
  done
  $py tools/bench_torch_train.py --model resnet18 --batch 128 --steps 50
  $py .gpu-scripts/copy_rate.py
  l5=(models/lenet5_train.onnx --data mnist:.gpu-bnew/data/idx --batch 128 --lr 0.01 --device cuda -o /tmp/cz/l.onnx
    --epochs 2)
  for mode in acc32 am16; do
    echo "lenet5 $mode train: main $($M train "${l5[@]}" --mode $mode 2>&1 | ep)," \
      "new $($N train "${l5[@]}" --mode $mode 2>&1 | ep) img/s ($(el) s)"
  done
  $py tools/bench_torch_train.py --model resnet50 --write-tensors /tmp/cz/r50 --count 256 > /dev/null
  r50=(/tmp/cz/gen/resnet50_train.onnx --data "tensors:/tmp/cz/r50/X.pb,/tmp/cz/r50/Y.pb" --batch 128 --lr 0.01
    --device cuda -o /tmp/cz/o50.onnx --epochs 1 --mode acc32)
  echo "resnet50 acc32 train peak: main: $($M train "${r50[@]}" 2>&1 | grep -o 'peak [0-9.]* MiB')," \
    "new: $($N train "${r50[@]}" 2>&1 | grep -o 'peak [0-9.]* MiB') ($(el) s)"
  $py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/cz/r18k --count 1280 > /dev/null
  timeout 90 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --launch-skip 3000 --launch-count 800 $N train /tmp/cz/gen/resnet18_train.onnx \
    --data "tensors:/tmp/cz/r18k/X.pb,/tmp/cz/r18k/Y.pb" --batch 128 --lr 0.01 --device cuda -o /tmp/cz/k.onnx \
    --epochs 1 --mode acc32 > $OUT/traffic_r18_acc32_opass.csv 2> /tmp/cz/ncu.err
  echo "ncu rc $? ($(el) s)"; tail -1 /tmp/cz/ncu.err
  python3 tools/ncu_kernel_table.py $OUT/traffic_r18_acc32_opass.csv | head -16
} > $OUT/speed.txt 2>&1
grep -vE "Warn|warn_once" $OUT/speed.txt
SHARD=0/2 timeout $(( ${CALL_S:-440} - $(el) )) bash .gpu-bnew/run_all.sh tests /tmp/cz/s0 > $OUT/shard_0.txt 2>&1
echo "shard 0 rc $? ($(el) s)"
wait $sp
for i in 0 1; do
  echo "shard $i: $(grep -c '^=== [^ ]*: OK' $OUT/shard_$i.txt) OK; not OK: $(grep -h '^=== [^ ]*: ' $OUT/shard_$i.txt | grep -v ': OK' | tr '\n' ' ')"
  sed -n '/^=== summary/,$p' $OUT/shard_$i.txt | tail -3
done
xz -9 $OUT/*.csv
