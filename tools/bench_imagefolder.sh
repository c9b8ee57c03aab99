#!/usr/bin/env bash
# Evaluating a torchvision model from a folder of ImageNet-sized JPEGs (issue
# 17), amdnn-onnx against torchvision's own pipeline, in one command on the
# GPU machine:
#   1. WORK/jpeg: COUNT JPEGs in 10 class folders (tools/bench_imagefolder.py make)
#   2. WORK/MODEL.onnx from tools/export_torchvision.py (random weights)
#   3. torchvision: ImageFolder + Resize(256) + CenterCrop(224) + Normalize
#      through a DataLoader of WORKERS processes: the pipeline alone, and end
#      to end with the model in FP32 (TF32 off)
#   4. amdnn-onnx decoding alone (no model), WORKERS threads:
#      build/tests/data/bench-image-stream (tools/bench_image_stream.c) times
#      the streaming reader eval uses (batches into a ring, taken at once) and
#      the in-memory load (everything decoded first), images/s of each
#   5. amdnn-onnx eval --data images:WORK/jpeg --resize 256 --crop 224
#      --normalize imagenet in each MODE, streamed (decoding while the model
#      runs): its decode line (images/s, and the seconds the model waited for
#      the decoders) and the wall time of the whole command; with
#      IN_MEMORY_TOO=1 also eval --in-memory (decoding first, then the model)
#   6. inference alone on a random batch: PyTorch FP32 and amdnn-onnx
#      bench --infer in each MODE
# usage: tools/bench_imagefolder.sh WORK [MODE ...]   (default: acc32 am16)
# environment: AMDNN (default build/src/amdnn-onnx), STREAM_BENCH (default
# build/tests/data/bench-image-stream), PYTHON (default: the interpreter with torch and
# torchvision that tools/torch_python.sh finds), COUNT (5000),
# MODEL (resnet50), BATCH (256), WORKERS (16), REPEAT (2: decoding runs)
set -eu
work=$1
shift
modes=${*:-acc32 am16}
here=$(cd "$(dirname "$0")" && pwd)
amdnn=${AMDNN:-build/src/amdnn-onnx} sbench=${STREAM_BENCH:-build/tests/data/bench-image-stream}
count=${COUNT:-5000} model=${MODEL:-resnet50} batch=${BATCH:-256} workers=${WORKERS:-16} repeat=${REPEAT:-2}
py=${PYTHON:-$("$here/torch_python.sh" torch torchvision onnx PIL numpy)}
mkdir -p "$work"
[ -d "$work/jpeg" ] || "$py" "$here/bench_imagefolder.py" make "$work/jpeg" --count "$count"
[ -f "$work/$model.onnx" ] || "$py" "$here/export_torchvision.py" "$model" -o "$work" >"$work/export.log" 2>&1
echo "== torchvision ($model, $count images, batch $batch)"
"$py" "$here/bench_imagefolder.py" torch "$work/jpeg" --model "$model" --workers "$workers" --batch "$batch"
echo "== amdnn-onnx decoding alone, $workers threads, batch $batch"
"$sbench" "images:$work/jpeg" --resize 256 --crop 224 --normalize imagenet --workers "$workers" --batch "$batch" \
  --repeat "$repeat"
for m in $modes; do
  for how in stream ${IN_MEMORY_TOO:+in-memory}; do
    echo "== amdnn-onnx eval, mode $m, $how"
    extra=()
    [ "$how" = stream ] || extra=(--in-memory)
    t0=$(date +%s.%N)
    "$amdnn" eval "$work/$model.onnx" --data "images:$work/jpeg" --resize 256 --crop 224 --normalize imagenet \
      --batch "$batch" --mode "$m" --workers "$workers" "${extra[@]}" 2>&1 |
      grep -E "headers read|decoded .* images|loaded in|top1|error" || true
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v n="$count" -v m="$m" -v h="$how" \
      'BEGIN { printf "amdnn-onnx end to end, %s, %s: %d images in %.2f s: %.0f images/s\n", m, h, n, b - a, n / (b - a) }'
  done
done
echo "== inference alone, batch $batch"
"$py" "$here/bench_imagefolder.py" infer --model "$model" --batch "$batch"
for m in $modes; do
  "$amdnn" bench "$work/$model.onnx" --infer --batch "$batch" --mode "$m" --steps 20 --warmup-steps 3 2>&1 | tail -1
done
