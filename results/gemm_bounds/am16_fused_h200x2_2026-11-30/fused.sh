#!/usr/bin/env bash
# Branch am16-fused (am16's and mbm14's fast tier in one kernel: the correction terms added by bf16 mma inside
# the Mitchell kernel) against main e5c73f8, on the two-GPU kind. The two bundles (tools/gpu_bundle.sh, ~24 MB
# each) travel in two calls: PHASE=none carrying .gpu-fused and .gpu-scripts, then PHASE=ab carrying .gpu-main
# and .gpu-scripts; later calls carry .gpu-scripts only (the unpacked bundles stay in .gpu-bmain, .gpu-bfused).
# PHASE=ab (default):
#   GPU 1: the branch's whole GPU suite (run_all.sh tests, the branch's runner), in the background;
#   GPU 0: tools/gemm_ab.sh main -> branch (MODES=am16,mbm14,mit16: hashes of every other mode and of am16's
#          exact tier must be identical; test_cuda_gemm of the branch; bench-cuda-gemm alternated twice), then
#          ResNet-18 CIFAR training at batch 128 (random CIFAR-sized tensors, second epoch's images/s), main then
#          branch: am16 (twice), mbm14, mit16 and acc32 (the last two: same kernels, a control), and PyTorch eager
#          FP32 in the same command; bench --profile in am16; ResNet-50 224 x 224 inference at batch 256 in am16;
#          each step skipped when the call's CALL_S (585) would not leave it time.
# PHASE=suite B=main|fused: SHARDS=2 run_all.sh tests, then AMD_BENCH_GEMM=0 run_all.sh bench, on that bundle.
set -u
t0=$(date +%s)
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT /tmp/fz
for x in main fused; do
  if [ ! -x .gpu-b$x/amdnn-onnx ] && [ -f .gpu-$x/b.tar.xz ]; then
    rm -rf /tmp/ux .gpu-b$x && mkdir /tmp/ux && tar -C /tmp/ux -xJf .gpu-$x/b.tar.xz && mv /tmp/ux/b .gpu-b$x &&
      echo "bundle $x in .gpu-b$x ($(( $(date +%s) - t0 )) s)"
  fi
done
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv,noheader
LIBS="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
[ "${PHASE:-ab}" = none ] && exit 0
[ -x .gpu-bmain/amdnn-onnx ] && [ -x .gpu-bfused/amdnn-onnx ] || { echo "a bundle is missing"; exit 1; }
case ${PHASE:-ab} in
ab)
  ( CUDA_VISIBLE_DEVICES=1 timeout ${SUITE_S:-560} bash .gpu-bfused/run_all.sh tests /tmp/fz/suite > /tmp/fz/tests.txt 2>&1
    echo "suite rc $? at $(( $(date +%s) - t0 )) s" >> /tmp/fz/tests.txt ) &
  sp=$!
  export CUDA_VISIBLE_DEVICES=0
  LD_LIBRARY_PATH="$LIBS:$PWD/.gpu-bfused/lib:${LD_LIBRARY_PATH:-}" MODES=am16,mbm14,mit16 \
    timeout ${AB_S:-330} tools/gemm_ab.sh .gpu-bmain/bin .gpu-bfused/bin /tmp/fz/ab > $OUT/ab.txt 2>&1
  echo "gemm_ab rc $? ($(( $(date +%s) - t0 )) s)"; head -40 $OUT/ab.txt
  py=$(tools/torch_python.sh torch onnx)
  {
    $py tools/export_models.py --out /tmp/fz/gen --models resnet18 > /tmp/fz/export.log 2>&1 &&
      $py tools/bench_torch_train.py --model resnet18 --write-tensors /tmp/fz/r18 --count 2560 > /dev/null ||
      tail -3 /tmp/fz/export.log
    r18=(/tmp/fz/gen/resnet18_train.onnx --data "tensors:/tmp/fz/r18/X.pb,/tmp/fz/r18/Y.pb" --batch 128 --lr 0.01
      --device cuda -o /tmp/fz/o.onnx --epochs 2)
    ep() { sed -n 's/^epoch 2\/2 .* \([0-9][0-9]*\) img\/s .*/\1/p'; }
    left() { echo $(( ${CALL_S:-585} - ($(date +%s) - t0) )); }
    # am16 twice, the others once (acc32 and mit16 run the same kernels in both builds: a control)
    for mode in am16 mbm14 am16 mit16 acc32; do
      [ "$(left)" -gt 60 ] || { echo "skipped resnet18 $mode: $(left) s left"; continue; }
      echo "resnet18 $mode train: main $(.gpu-bmain/amdnn-onnx train "${r18[@]}" --mode $mode 2>&1 | ep)," \
        "fused $(.gpu-bfused/amdnn-onnx train "${r18[@]}" --mode $mode 2>&1 | ep) img/s"
    done
    [ "$(left)" -gt 60 ] && $py tools/bench_torch_train.py --model resnet18 --batch 128 --steps 50
    for b in main fused; do
      [ "$(left)" -gt 40 ] || continue
      echo "--- resnet18 am16 bench --profile, $b"
      .gpu-b$b/amdnn-onnx bench /tmp/fz/gen/resnet18_train.onnx --batch 128 --steps 20 --mode am16 \
        --profile /tmp/fz/p_$b.tsv 2>&1 | grep -E "^bench|memory"
    done
    if [ "$(left)" -gt 90 ]; then
      $py tools/export_torchvision.py resnet50 -o /tmp/fz/tv > /tmp/fz/tv.log 2>&1 || tail -3 /tmp/fz/tv.log
      for b in main fused; do
        [ "$(left)" -gt 30 ] || continue
        echo "resnet50 224 infer b256 am16 $b: $(.gpu-b$b/amdnn-onnx bench /tmp/fz/tv/resnet50.onnx --infer --batch 256 \
          --steps 20 --warmup-steps 3 --mode am16 2>&1 | grep -E '^bench|memory|rror' | tr '\n' ' ')"
      done
    fi
  } > $OUT/speed.txt 2>&1
  grep -vE "^\s*$|UserWarning|_warn_once" $OUT/speed.txt | tail -30
  wait $sp
  tail -1 /tmp/fz/tests.txt; grep -h "^=== [^ ]*: " /tmp/fz/tests.txt | grep -v ": OK" | head -20
  echo "groups OK: $(grep -c '^=== [^ ]*: OK' /tmp/fz/tests.txt)"
  cp /tmp/fz/tests.txt /tmp/fz/p_*.tsv $OUT/ 2>/dev/null
  (cd /tmp/fz && tar -czf $OUT/ab_files.tgz ab)
  ;;
suite)
  b=.gpu-b${B:-fused}
  SHARDS=2 bash $b/run_all.sh tests /tmp/fz/suite2 > $OUT/tests_shards.txt 2>&1
  echo "suite rc $? ($(( $(date +%s) - t0 )) s)"; tail -5 $OUT/tests_shards.txt
  AMD_BENCH_GEMM=0 timeout $(( ${CALL_S:-570} - ($(date +%s) - t0) )) bash $b/run_all.sh bench /tmp/fz/bench > $OUT/bench.txt 2>&1
  echo "bench rc $?"; grep -E "^---|^epoch 2|img/s|images/s" $OUT/bench.txt | tail -40
  ;;
esac
echo "== done $(( $(date +%s) - t0 )) s"
