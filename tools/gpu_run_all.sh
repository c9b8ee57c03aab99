#!/usr/bin/env bash
# Runs the GPU suite and the GPU benchmarks from a folder made by
# tools/gpu_bundle.sh (the same tests as `meson test --suite gpu`, with the
# bundle's paths). usage: run_all.sh [tests|nccl|bench|accuracy|kernels|lenet|all] OUT_DIR
# (nccl: the NCCL tests alone, which tests ends with)
# (kernels: GPU time per kernel of ResNet-18 training under Nsight Compute;
# lenet: the LeNet-5 epoch per mode, PyTorch's LeNet-5, the small GEMMs)
# SHARDS=N with tests: the test groups dealt round robin to N runs at once, run i on GPU i alone
# (CUDA_VISIBLE_DEVICES=i, its output in OUT_DIR/shard_i.txt), then the NCCL groups with every GPU, and one
# summary (two H200s: 355 s, where one GPU took about 500 s, 2026-11-30). (SHARD=i/N is how those runs
# are told their share; a run given SHARD itself leaves the NCCL groups out.)
set -u
what=${1:-all} out=${2:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
mkdir -p "$out" || exit 1 # the profiles and tables written there, relative to the bundle (a missing folder lost them without a word)
# the interpreter with torch and onnx (PYTHON, else tools/torch_python.sh's; python3 when none has them:
# the benchmarks against PyTorch then fail, the tests that need only onnx and numpy still run)
py=${PYTHON:-$(tools/torch_python.sh torch onnx || command -v python3)}
cublas=$("$py" -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null || true)
# NCCL is not in the bundle: the system's libnccl.so.2, else the one PyTorch's wheels bring
nccl=
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
  nccl=$("$py" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0] + "/lib")' 2>/dev/null || true)
fi
# the machine's CUDA runtime and cuBLAS first, which belong together; the bundle's runtime is the
# fallback for a machine without /usr/local/cuda
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$here/lib:${cublas}:${nccl}:${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # mpirun as root (containers)
gpus=$(nvidia-smi -L | grep -c '^GPU')
amd=bin/amdnn-onnx cmp=bin/golden-compare m=../models
# NVLink multicast stays off (the lending machines' rule: it can take shared GPUs out of service)
export NCCL_NVLS_ENABLE=0
tmp=$(mktemp -d)
declare -A res
shard_i=0 shard_n=1 groups=0
if [ -n "${SHARD:-}" ]; then
  shard_i=${SHARD%/*} shard_n=${SHARD#*/}
  if ! [[ $shard_i =~ ^[0-9]+$ && $shard_n =~ ^[1-9][0-9]*$ ]] || [ "$shard_i" -ge "$shard_n" ]; then
    echo "run_all.sh: SHARD wants i/N with 0 <= i < N, not '$SHARD'" >&2
    exit 2
  fi
fi
t() { # NAME CMD...: one test, its output indented (skipped when it is another shard's)
  local name=$1
  shift
  groups=$((groups + 1))
  [ $(((groups - 1) % shard_n)) -eq "$shard_i" ] || return 0
  echo "=== $name"
  "$@" 2>&1 | sed 's/^/    /'
  local rc=${PIPESTATUS[0]}
  res[$name]=$rc
  echo "=== $name: $([ "$rc" -eq 0 ] && echo OK || { [ "$rc" -eq 77 ] && echo SKIP || echo "FAIL ($rc)"; })"
}
nvidia-smi -L
if [ "$what" = tests ] && [ "${SHARDS:-1}" != 1 ] && [ -z "${SHARD:-}" ]; then
  if ! [[ ${SHARDS} =~ ^[1-9][0-9]*$ ]] || [ "$SHARDS" -gt "$gpus" ]; then
    echo "run_all.sh: SHARDS wants a number of GPUs from 1 to $gpus, not '$SHARDS'" >&2
    exit 2
  fi
  pids=()
  for ((i = 0; i < SHARDS; i++)); do
    SHARD=$i/$SHARDS CUDA_VISIBLE_DEVICES=$i bash "$here/$(basename "$0")" tests "$out" >"$out/shard_$i.txt" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < SHARDS; i++)); do
    wait "${pids[$i]}"
    rc=$?
    [ "$rc" -le 1 ] || res[shard-$i]=$rc # a shard stopped short of its summary (1: one of its groups failed)
    echo "=== shard $i of $SHARDS (GPU $i): $out/shard_$i.txt"
    sed '/^=== summary/,$d' "$out/shard_$i.txt"
    # its summary's "NAME RC" lines into this run's
    while read -r name rc; do res[$name]=$rc; done < <(sed '1,/^=== summary$/d' "$out/shard_$i.txt")
  done
  what=nccl # the NCCL groups below want every GPU
fi
if [ "$what" = all ] || [ "$what" = tests ]; then
  t cuda-products bin/test_cuda_products am_vectors.tsv
  t cuda-gemm bin/test_cuda_gemm
  t cuda-repro bin/test_cuda_repro
  t cuda-ops bin/test_backend_ops -b cuda -m forward
  t cuda-ops-grad bin/test_backend_ops -b cuda -m grad
  t cuda-q8-gemm bin/test_cuda_q8_gemm
  t cuda-q8-grad bin/test_cuda_q8_grad
  t cuda-q8f bin/test_cuda_q8f
  t cuda-api bin/test_api_cuda "$m" data/idx
  # native outputs are not zeroed before the forward writes them: started as NaN here, an unwritten element shows
  t cuda-ops-poisoned env AMD_CUDA_POISON_OUTPUTS=1 bin/test_backend_ops -b cuda -m forward
  t cuda-ops-poisoned-grad env AMD_CUDA_POISON_OUTPUTS=1 bin/test_backend_ops -b cuda -m grad
  # every Conv of the op cases in chunks of images against the CPU: one image a chunk (a cap of a byte), then
  # three (the 20-image cases: 6 x 3 + 2); forward with the fused Add / Relu, both gradients, every mode and tier
  for cap in 0.000001 0.15; do
    t cuda-ops-chunked-$cap env AMD_CONV_WORKSPACE_MB=$cap bin/test_backend_ops -b cuda -m forward
    t cuda-ops-grad-chunked-$cap env AMD_CONV_WORKSPACE_MB=$cap bin/test_backend_ops -b cuda -m grad
  done
  if command -v compute-sanitizer >/dev/null; then
    for mode in forward grad; do
      t cuda-ops-$mode-memcheck compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
        bin/test_backend_ops -b cuda -m $mode
    done
  fi
  for n in lenet300 lenet5 resnet8 tinyformer mbv3block; do
    for v in "" _train; do
      t "golden-$n$v" sh tests/golden/run_golden.sh "$m/$n$v.onnx" "$m/$n.input.pb" "$m/$n$v.logits.pb" $amd $cmp "$tmp/g-$n$v" cuda
    done
  done
  for n in lenet5 resnet8 tinyformer mbv3block; do
    t "golden-grad-$n" sh tests/golden/grad_golden.sh "$m/${n}_train.onnx" "$m/golden/$n" $amd $cmp "$tmp/gg-$n" cuda
    t "golden-train3-$n" sh tests/golden/train_golden.sh "$m/${n}_train.onnx" "$m/golden/$n" $amd $cmp "$py" \
      tests/golden/extract_initializers.py tests/golden/tensor_delta.py "$tmp/gt-$n" cuda
    t "golden-train3-poisoned-$n" env AMD_CUDA_POISON_OUTPUTS=1 sh tests/golden/train_golden.sh "$m/${n}_train.onnx" \
      "$m/golden/$n" $amd $cmp "$py" tests/golden/extract_initializers.py tests/golden/tensor_delta.py "$tmp/gp-$n" cuda
    for spec in "acc32 1e-4 fast" "am16 1e-4 exact" "am16 1e-3 fast"; do # mode, tolerance, GPU tier
      set -- $spec
      t "grad-cpu-vs-cuda-$n-$1-$3" sh tests/gpu/grad_cpu_vs_cuda.sh $amd $cmp "$m/${n}_train.onnx" "$m/golden/$n" \
        "$tmp/gc-$n-$1-$3" $1 $2 $3
    done
  done
  # whole models with every Conv in chunks (AMD_CONV_WORKSPACE_MB=1: of the goldens' 16 images, ResNet-8's 32x32
  # layers one a chunk, LeNet-5's conv1 8), in acc32: in am16 the chunks' other split-K sums move last bits, and
  # a last bit can carry an operand across one of am16's 2^-7 steps (as the fast tier's sums do above), by up to
  # 7e-3 of the largest gradient in ResNet-8 (2026-11-29); the op cases above check every mode chunked
  for n in lenet5 resnet8; do
    t "grad-cpu-vs-cuda-$n-acc32-fast-chunked" env AMD_CONV_WORKSPACE_MB=1 sh tests/gpu/grad_cpu_vs_cuda.sh $amd \
      $cmp "$m/${n}_train.onnx" "$m/golden/$n" "$tmp/gk-$n-acc32-fast" acc32 1e-4 fast
  done
  t train-cli bash tests/gpu/train_gpu.sh $amd "$m" data/idx
  t sweep-cli bash tests/cli/test_sweep.sh $amd "$m" data/idx cuda
  t eval-stream-gpu env PYTHON="$py" bash tests/gpu/eval_stream_gpu.sh $amd "$m" data/idx \
    ../tests/data/make_image_folder.py
  # onnxruntime-quantized LeNet-5 / ResNet-8 and the q8 table modes with every command on the GPU
  t quant-ort-gpu env AMD_TEST_DEVICE=cuda "$py" ../tests/quant/ort_quant.py $amd "$m"
  t quant-q8-modes-gpu env AMD_TEST_DEVICE=cuda "$py" ../tests/quant/q8_modes.py $amd "$m"
  t onnx-einsum-matmul-gpu env AMD_TEST_DEVICE=cuda "$py" ../tests/onnx/einsum_matmul.py $amd
  t onnx-graph-rewrites-gpu env AMD_TEST_DEVICE=cuda "$py" ../tests/onnx/graph_rewrites.py $amd
  t train-rrc-gpu env PYTHON="$py" bash ../tests/data/train_rrc.sh $amd "$m" data/idx \
    ../tests/data/make_image_folder.py
  # a poisoned batch on the GPU (the default device there): its step found one step late, nothing changed by it
  t nan-batch-gpu env PYTHON="$py" bash tests/faults/nan_batch.sh $amd "$m" data/idx
  t debug-sync $amd grad "$m/resnet8_train.onnx" --input "$m/golden/resnet8/input.pb" --labels "$m/golden/resnet8/labels.pb" \
    --output-dir "$tmp/ds" --device cuda --debug-sync
  t no-gpu-index sh -c "! $amd run $m/lenet5.onnx --input $m/lenet5.input.pb --output-dir $tmp/x --device cuda:7"
fi
if [ "$what" = all ] || { [ "$what" = tests ] && [ -z "${SHARD:-}" ]; } || [ "$what" = nccl ]; then
  # NCCL (issue 6): one-rank NCCL run = plain GPU run (any GPU machine); 2 ranks on 2 GPUs (skips with fewer)
  t nccl-one-rank bash tests/gpu/dist_gpu.sh one $amd "$m" data/idx tests/dist/compare_models.py
  for n in 2 4 8; do # N ranks on N GPUs (skipped on a machine with fewer)
    t nccl-$n-gpus bash tests/gpu/dist_gpu.sh $n $amd "$m" data/idx tests/dist/compare_models.py
  done
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  echo "=== benchmarks"
  [ "${AMD_BENCH_GEMM:-1}" = 0 ] || bin/bench-cuda-gemm  # the mode GEMM alone at ResNet-18 shapes
  bin/test_cuda_q8_gemm --bench  # the 8-bit table GEMM and its tensor-core path at ResNet-18 shapes
  bin/test_cuda_q8_grad --bench  # the table-derived q8 backward sums (--q8-grad table) at ResNet-18 shapes
  common=(--batch 128 --lr 0.01 --device cuda -o "$tmp/b.onnx")
  # LeNet-5: whole epochs of 60000 images (the second is warm)
  for mode in acc32 am16 am32 fp16; do
    echo "--- lenet5 $mode"
    $amd train $m/lenet5_train.onnx --data mnist:data/idx "${common[@]}" --epochs 2 --mode $mode 2>&1 | grep -E "^epoch|device|wrote"
  done
  echo "--- lenet5 acc32 --profile (CUDA events)"
  $amd train $m/lenet5_train.onnx --data mnist:data/idx "${common[@]}" --epochs 1 --limit 12800 --mode acc32 \
    --profile "$out/profile_lenet5_acc32.tsv" 2>&1 | sed -n '/^profile/,$p'
  "$py" tools/bench_torch_train.py --model lenet5 --batch 128 --steps 200
  if "$py" tools/export_models.py --out "$tmp/gen" --models resnet18 >"$tmp/export.log" 2>&1 &&
    "$py" tools/bench_torch_train.py --model resnet18 --write-tensors "$tmp/r18" --count 2560 >/dev/null; then
    r18=("$tmp/gen/resnet18_train.onnx" --data "tensors:$tmp/r18/X.pb,$tmp/r18/Y.pb" "${common[@]}")
    for mode in acc32 am16 "am16 --gemm exact" acc16 fp16 am32 mit16; do # (unquoted below: "--mode am16 --gemm exact")
      echo "--- resnet18 $mode"
      $amd train "${r18[@]}" --epochs 2 --mode $mode 2>&1 | grep -E "^epoch|device"
    done
    for mode in acc32 am16; do # the steps alone, on one random batch, with where the GPU time goes
      echo "--- resnet18 $mode: bench --profile (CUDA events)"
      $amd bench "$tmp/gen/resnet18_train.onnx" --batch 128 --steps 10 --mode $mode \
        --profile "$out/profile_r18_$mode.tsv" 2>&1 | sed -n '/^bench/,$p'
    done
    "$py" tools/bench_torch_train.py --model resnet18 --batch 128 --steps 50 --kernels
    # peak GPU memory, ResNet-50 batch 128 training (issue 5: at most 1.5x PyTorch's)
    if "$py" tools/export_models.py --out "$tmp/gen" --models resnet50 >>"$tmp/export.log" 2>&1; then
      echo "--- resnet50 acc32 memory"
      $amd train "$tmp/gen/resnet50_train.onnx" --data "tensors:$tmp/r18/X.pb,$tmp/r18/Y.pb" "${common[@]}" \
        --epochs 1 --limit 384 2>&1 | grep -E "^epoch|GPU memory"
      "$py" tools/bench_torch_train.py --model resnet50 --batch 128 --steps 5 --warmup 2
    fi
    if [ "$gpus" -ge 2 ]; then
      # data parallel (issue 6): --batch 128 per GPU, so 2 GPUs take global batches of 256; second epoch (warm)
      ips() { sed -n 's/^epoch 2\/2 .* \([0-9][0-9]*\) img\/s .*/\1/p'; }
      for mode in acc32 am16; do
        one=$($amd train "${r18[@]}" --epochs 2 --mode $mode 2>&1 | ips)
        two=$(mpirun -np 2 -x NCCL_NVLS_ENABLE $amd train "${r18[@]}" --epochs 2 --mode $mode 2>&1 | ips)
        twob=$(AMD_DIST_BUCKET_MB=25 mpirun -np 2 -x AMD_DIST_BUCKET_MB -x NCCL_NVLS_ENABLE $amd train "${r18[@]}" --epochs 2 --mode $mode 2>&1 | ips)
        x() { awk -v a="${one:-0}" -v b="${1:-0}" 'BEGIN { if (a > 0) printf "%.2fx", b / a; else print "?" }'; }
        echo "--- resnet18 $mode images/s, batch 128 per GPU: 1 GPU ${one:-?}, 2 GPUs (NCCL) ${two:-?} ($(x "$two"))," \
          "2 GPUs with 25 MB buckets overlapping the backward pass ${twob:-?} ($(x "$twob"))"
      done
    else
      echo "--- resnet18 on 2 GPUs: left out ($gpus GPU)"
    fi
  else
    echo "resnet18 export failed:"
    tail -5 "$tmp/export.log"
  fi
fi
if [ "$what" = lenet ]; then
  # the LeNet-5 epoch in every mode (issue 5: at most 0.5 s), the GEMM kernels it uses, where a step's time goes
  t cuda-gemm bin/test_cuda_gemm
  bin/bench-cuda-gemm ${LENET_GEMM_MODES:-am16,am32,acc16,fp16} | sed -n '/^ms per GEMM/,$p'
  for mode in acc32 acc16 am16 am32 fp16 mit16; do
    echo "--- lenet5 $mode"
    $amd train $m/lenet5_train.onnx --data mnist:data/idx --batch 128 --lr 0.01 --device cuda -o "$tmp/b.onnx" \
      --epochs 2 --mode $mode 2>&1 | grep -E "^epoch|device"
  done
  "$py" tools/bench_torch_train.py --model lenet5 --batch 128 --steps 200  # the same model in PyTorch
  for mode in acc32 am32; do
    echo "--- lenet5 $mode: bench, then bench --profile (CUDA events)"
    $amd bench $m/lenet5_train.onnx --batch 128 --steps 200 --mode $mode 2>&1 | tail -3
    $amd bench $m/lenet5_train.onnx --batch 128 --steps 200 --mode $mode --profile "$tmp/p.tsv" 2>&1 | sed -n '/^profile/,$p'
  done
fi
if [ "$what" = kernels ]; then
  # GPU time per kernel over a few ResNet-18 training steps (Nsight Compute,
  # one metric, so each kernel runs once more under the profiler)
  "$py" tools/export_models.py --out "$tmp/gen" --models resnet18 >"$tmp/export.log" 2>&1
  "$py" tools/bench_torch_train.py --model resnet18 --write-tensors "$tmp/r18" --count 1280 >/dev/null
  for mode in ${KERNEL_MODES:-acc32}; do
    echo "--- resnet18 $mode: kernels"
    ncu --metrics gpu__time_duration.sum --csv --launch-skip ${KERNEL_SKIP:-3000} --launch-count ${KERNEL_COUNT:-1500} \
      $amd train "$tmp/gen/resnet18_train.onnx" --data "tensors:$tmp/r18/X.pb,$tmp/r18/Y.pb" --batch 128 --lr 0.01 \
      --device cuda -o "$tmp/k.onnx" --epochs 1 --mode $mode >"$out/kernels_r18_$mode.csv" 2>"$tmp/ncu.err"
    tail -2 "$tmp/ncu.err"
    "$py" tools/ncu_kernel_table.py "$out/kernels_r18_$mode.csv" | head -40
  done
fi
if [ "$what" = all ] || [ "$what" = accuracy ]; then
  echo "=== accuracy: LeNet-5 on MNIST, 10 epochs, each mode in all three GEMMs"
  for mode in acc32 acc16 am16 am32 fp16 mit16; do
    $amd train $m/lenet5_train.onnx --data mnist:data/idx --epochs 10 --batch 128 --lr 0.05 --momentum 0.9 \
      --schedule cosine --seed 1 --mode $mode --device cuda -o "$tmp/l5_$mode.onnx" \
      --metrics "$out/lenet5_mnist_10ep_gpu_$mode.tsv" 2>&1 | grep -E "^epoch 10/|wrote" | sed "s/^/$mode: /"
  done
fi
echo "=== summary"
fail=0
for k in "${!res[@]}"; do
  echo "$k ${res[$k]}"
  [ "${res[$k]}" -ne 0 ] && fail=1
done | sort
for k in "${!res[@]}"; do [ "${res[$k]}" -ne 0 ] && [ "${res[$k]}" -ne 77 ] && fail=1; done # 77: skipped
exit $fail
