#!/usr/bin/env bash
# The o-passes build with im2col's 1x1 copy kernel, against main e16475e, one call on the two-GPU kind:
#   GPU 1: shard 1 of 2 of the new bundle's GPU suite, from the start;
#   GPU 0: ResNet-50 (torchvision, 224 x 224) inference at batch 256, main and new alternated twice, acc32 and
#          am16, PyTorch in the same command; ResNet-18 CIFAR training acc32 main/new; ResNet-50 CIFAR training
#          `bench` acc32 main/new; Nsight Compute over one acc32 ResNet-50 inference step of the new build;
#          then shard 0 of 2.
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
mkdir -p $OUT /tmp/w /tmp/cz
rm -rf .gpu-bnew /tmp/ux && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-opass/b.tar.xz && mv /tmp/ux/b .gpu-bnew
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
  $py tools/export_torchvision.py resnet50 -o /tmp/w > /tmp/w/export.log 2>&1 || tail -3 /tmp/w/export.log
  $py tools/export_models.py --out /tmp/cz/gen --models resnet18,resnet50 > /tmp/cz/export.log 2>&1 || tail -3 /tmp/cz/export.log
  b() { echo "round $1 $2 $3: $($2 bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 20 --warmup-steps 3 --mode $3 2>&1 | grep -oE '[0-9]+ images/s, [0-9.]+ ms/step|rror.*')"; }
  for r in 1 2; do
    for mode in acc32 am16; do b $r $M $mode; b $r $N $mode; done
    [ $r = 1 ] && $py tools/bench_imagefolder.py infer --model resnet50 --batch 256
  done
  echo "($(el) s)"
  $py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/cz/r18 --count 2560 > /dev/null
  r18=(/tmp/cz/gen/resnet18_train.onnx --data "tensors:/tmp/cz/r18/X.pb,/tmp/cz/r18/Y.pb" --batch 128 --lr 0.01
    --device cuda -o /tmp/cz/o.onnx --epochs 2 --mode acc32)
  ep() { sed -n 's/^epoch 2\/2 .* \([0-9][0-9]*\) img\/s .*/\1/p'; }
  echo "resnet18 acc32 train: main $($M train "${r18[@]}" 2>&1 | ep), new $($N train "${r18[@]}" 2>&1 | ep) img/s ($(el) s)"
  for bin in $M $N $M $N; do
    echo "resnet50 cifar acc32 bench $bin: $($bin bench /tmp/cz/gen/resnet50_train.onnx --batch 128 --steps 20 --mode acc32 --device cuda 2>&1 | grep -oE '[0-9]+ images/s|rror.*')"
  done
  $py tools/bench_torch_train.py --model resnet50 --batch 128 --steps 20
  echo "($(el) s)"
  timeout 100 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    $N bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 1 --warmup-steps 0 --mode acc32 \
    > $OUT/r50_infer_acc32.csv 2> /tmp/w/ncu.err
  echo "ncu rc $? ($(el) s)"; tail -1 /tmp/w/ncu.err
  python3 tools/ncu_kernel_table.py $OUT/r50_infer_acc32.csv > $OUT/r50_infer_table.txt; head -16 $OUT/r50_infer_table.txt
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
