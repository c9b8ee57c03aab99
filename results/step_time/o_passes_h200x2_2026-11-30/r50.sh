#!/usr/bin/env bash
# The o-passes build on inference and on every mode's training, one call on the two-GPU kind:
#   GPU 1: `AMD_BENCH_GEMM=0 run_all.sh bench` of the new bundle (every mode's ResNet-18 and LeNet-5 training,
#          PyTorch's, ResNet-50 memory);
#   GPU 0: ResNet-50 (torchvision, 224 x 224) inference at batch 256, main and new alternated twice, acc32
#          and am16, PyTorch in the same command; then Nsight Compute over one acc32 inference step of the new
#          build (time and DRAM bytes of every kernel).
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
mkdir -p $OUT /tmp/w
if [ ! -x .gpu-bnew/amdnn-onnx ]; then
  rm -rf /tmp/ux && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-opass/b.tar.xz && mv /tmp/ux/b .gpu-bnew
fi
xz -dc .gpu-oldbin/amdnn-onnx.xz > .gpu-bnew/bin/amdnn-onnx.main && chmod +x .gpu-bnew/bin/amdnn-onnx.main
echo "unpacked ($(el) s)"
( CUDA_VISIBLE_DEVICES=1 AMD_BENCH_GEMM=0 bash .gpu-bnew/run_all.sh bench /tmp/w/bench > $OUT/bench.txt 2>&1
  echo "bench rc $? at $(el) s" >> $OUT/bench.txt ) &
bp=$!
export CUDA_VISIBLE_DEVICES=0
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.gpu-bnew/lib:${LD_LIBRARY_PATH:-}"
py=$(tools/torch_python.sh torch onnx)
{
  $py tools/export_torchvision.py resnet50 -o /tmp/w > /tmp/w/export.log 2>&1 || tail -3 /tmp/w/export.log
  b() { echo "round $1 $2 $3: $($2 bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 20 --warmup-steps 3 --mode $3 2>&1 | grep -oE '[0-9]+ images/s, [0-9.]+ ms/step|rror.*')"; }
  for r in 1 2; do
    for mode in acc32 am16; do
      b $r .gpu-bnew/bin/amdnn-onnx.main $mode; b $r .gpu-bnew/bin/amdnn-onnx $mode
    done
    [ $r = 1 ] && $py tools/bench_imagefolder.py infer --model resnet50 --batch 256
  done
  echo "($(el) s)"
  timeout 150 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    .gpu-bnew/bin/amdnn-onnx bench /tmp/w/resnet50.onnx --infer --batch 256 --steps 1 --warmup-steps 0 --mode acc32 \
    > $OUT/r50_infer_acc32.csv 2> /tmp/w/ncu.err
  echo "ncu rc $? ($(el) s)"; tail -1 /tmp/w/ncu.err
  python3 tools/ncu_kernel_table.py $OUT/r50_infer_acc32.csv > $OUT/r50_infer_table.txt; head -14 $OUT/r50_infer_table.txt
} > $OUT/r50.txt 2>&1
cat $OUT/r50.txt
timeout $(( ${CALL_S:-440} - $(el) )) tail --pid=$bp -f /dev/null
grep -E "^---|^epoch 2|images/s|peak" $OUT/bench.txt | head -60
xz -9 $OUT/*.csv
