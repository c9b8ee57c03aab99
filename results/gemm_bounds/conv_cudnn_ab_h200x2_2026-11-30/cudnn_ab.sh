#!/usr/bin/env bash
# Branch conv-cudnn (acc32 convolutions through cuDNN's implicit-GEMM algorithms, loaded at run time) on the
# two-GPU kind, after the table's columns: GPU 1 runs the acc32 convolution tests both ways (default = cuDNN,
# AMD_CONV_CUDNN=0 = im2col), GPU 0 the speed: ResNet-18 CIFAR training at batch 128 (alternated, with PyTorch),
# bench --profile (the im2col stages vanish where cuDNN runs), LeNet-5's epoch, ResNet-50 224 x 224 inference at
# batch 256 (with PyTorch) and ResNet-50 CIFAR training memory; ResNet-18 in the other modes too (run_all.sh bench's
# figures for main 03dbfbd's kernels, which the branch shares). Carry .gpu-cudnn (the branch's bundle) and .gpu-scripts.
set -u
t0=$(date +%s)
mkdir -p $OUT /tmp/cw
if [ ! -x .gpu-c/amdnn-onnx ]; then
  rm -rf /tmp/cx .gpu-c && mkdir /tmp/cx && tar -C /tmp/cx -xJf .gpu-cudnn/b.tar.xz && mv /tmp/cx/b .gpu-c
fi
py=$(tools/torch_python.sh torch onnx)
cudnn=$($py -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0] + "/lib")' 2>/dev/null)
export LD_LIBRARY_PATH="${cudnn}:${LD_LIBRARY_PATH:-}" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "cudnn: ${cudnn:-none} $(ls $cudnn 2>/dev/null | grep -c so); system: $(ldconfig -p | grep -c libcudnn)"
amd=$PWD/.gpu-c/amdnn-onnx
( cd .gpu-c && b=$PWD && m=../models && cmp=bin/golden-compare
  export CUDA_VISIBLE_DEVICES=1 LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$b/lib:$LD_LIBRARY_PATH"
  t() { local n=$1; shift; "$@" > /tmp/cw/t_$n.txt 2>&1; echo "=== $n: rc $?"; tail -3 /tmp/cw/t_$n.txt | sed 's/^/    /'; }
  t ops bin/test_backend_ops -b cuda -m forward
  t ops-grad bin/test_backend_ops -b cuda -m grad
  t ops-no-cudnn env AMD_CONV_CUDNN=0 bin/test_backend_ops -b cuda -m forward
  t ops-grad-no-cudnn env AMD_CONV_CUDNN=0 bin/test_backend_ops -b cuda -m grad
  t ops-poisoned env AMD_CUDA_POISON_OUTPUTS=1 bin/test_backend_ops -b cuda -m forward
  t ops-chunked env AMD_CONV_WORKSPACE_MB=0.000001 bin/test_backend_ops -b cuda -m grad
  for n in lenet5 resnet8; do
    t grad-$n sh tests/gpu/grad_cpu_vs_cuda.sh $b/bin/amdnn-onnx $cmp "$m/${n}_train.onnx" "$m/golden/$n" /tmp/cw/gc-$n acc32 1e-4 fast
    t train3-$n sh tests/golden/train_golden.sh "$m/${n}_train.onnx" "$m/golden/$n" $b/bin/amdnn-onnx $cmp "$py" \
      tests/golden/extract_initializers.py tests/golden/tensor_delta.py /tmp/cw/gt-$n cuda
  done
  t api bin/test_api_cuda "$m" data/idx
  t train-cli bash tests/gpu/train_gpu.sh bin/amdnn-onnx "$m" data/idx
) > $OUT/tests.txt 2>&1 &
tp=$!
export CUDA_VISIBLE_DEVICES=0
{
$py tools/export_models.py --out /tmp/cw/gen --models resnet18,resnet50 > /tmp/cw/export.log 2>&1 &&
  $py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/cw/r18 --count 2560 > /dev/null || { tail -3 /tmp/cw/export.log; }
r18=(/tmp/cw/gen/resnet18_train.onnx --data "tensors:/tmp/cw/r18/X.pb,/tmp/cw/r18/Y.pb" --batch 128 --lr 0.01 --device cuda -o /tmp/cw/b.onnx)
ep() { sed -n 's/^epoch 2\/2 .* \([0-9][0-9]*\) img\/s .*/\1/p'; }
for round in 1 2; do
  echo "resnet18 acc32 train, round $round: cuDNN $($amd train "${r18[@]}" --epochs 2 2>&1 | ep) img/s," \
    "im2col $(AMD_CONV_CUDNN=0 $amd train "${r18[@]}" --epochs 2 2>&1 | ep) img/s"
done
for mode in am16 acc16 fp16 am32 mit16; do # the other modes' kernels are main 03dbfbd's (fp16 half2, three blocks)
  echo "resnet18 $mode train: $($amd train "${r18[@]}" --epochs 2 --mode $mode 2>&1 | ep) img/s"
done
$py tools/bench_torch_train.py --model resnet18 --batch 128 --steps 50
for c in 1 0; do
  echo "--- resnet18 acc32 bench --profile, AMD_CONV_CUDNN=$c"
  AMD_CONV_CUDNN=$c $amd bench /tmp/cw/gen/resnet18_train.onnx --batch 128 --steps 20 --profile /tmp/cw/p$c.tsv 2>&1 | grep -E "^bench|memory"
  grep -E "im2col|col2im|GEMM|total" /tmp/cw/p$c.tsv
done
echo "--- lenet5 acc32 epoch: cuDNN / im2col"
for c in 1 0; do AMD_CONV_CUDNN=$c $amd train ../models/lenet5_train.onnx --data mnist:.gpu-c/data/idx --batch 128 --lr 0.01 --device cuda -o /tmp/cw/l.onnx --epochs 2 2>&1 | grep "^epoch 2"; done
echo "--- resnet50 CIFAR training memory, acc32: cuDNN / im2col"
for c in 1 0; do AMD_CONV_CUDNN=$c $amd train /tmp/cw/gen/resnet50_train.onnx --data "tensors:/tmp/cw/r18/X.pb,/tmp/cw/r18/Y.pb" --batch 128 --lr 0.01 --device cuda -o /tmp/cw/b.onnx --epochs 1 --limit 384 2>&1 | grep -E "GPU memory"; done
$py tools/export_torchvision.py resnet50 -o /tmp/cw/tv > /tmp/cw/tv.log 2>&1 || tail -3 /tmp/cw/tv.log
for round in 1 2; do for c in 1 0; do
  echo "resnet50 224 infer b256 acc32 round $round AMD_CONV_CUDNN=$c: $(AMD_CONV_CUDNN=$c $amd bench /tmp/cw/tv/resnet50.onnx --infer --batch 256 --steps 20 --warmup-steps 3 2>&1 | grep -E '^bench|rror' | tr '\n' ' ')"
done; done
$py tools/bench_imagefolder.py infer --model resnet50 --batch 256
} > $OUT/speed.txt 2>&1
wait $tp
cat $OUT/tests.txt | grep -E "^===|FAIL" | head -40
grep -vE "^\s*$" $OUT/speed.txt | grep -vE "UserWarning|_warn_once" | tail -45
cp /tmp/cw/p*.tsv $OUT/ 2>/dev/null
echo "== done $(( $(date +%s) - t0 )) s"
