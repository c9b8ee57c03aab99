#!/usr/bin/env bash
# The README's recipes that need a GPU, a JPEG folder or several GPUs (the
# ones its runnable-blocks test cannot run on the CPU), as written but at small
# sizes: the same commands and options, with --limit / fewer epochs, a small
# image folder made by tests/data/make_image_folder.py instead of ImageNet,
# torchvision's random weights instead of the downloaded ones, and random
# images in CIFAR-10's format. Each recipe prints "ok NAME" or "FAIL NAME";
# the exit status is 1 when one fails.
# usage: tools/gpu_readme_recipes.sh AMDNN_ONNX IDX_DIR OUT_DIR [RANKS]
#   AMDNN_ONNX  the tool (a wrapper that sets LD_LIBRARY_PATH will do)
#   IDX_DIR     an IDX data set (the README's Fashion-MNIST, or MNIST)
#   RANKS       GPUs for the mpirun recipe (default 2; 0 leaves it out)
set -u
[ $# -ge 3 ] || { sed -n '2,13p' "$0"; exit 2; }
amd=$1 idx=$2 out=$3 ranks=${4:-2}
src=$(cd "$(dirname "$0")/.." && pwd)
py=$("$src/tools/torch_python.sh" torch onnx) || exit 1
mkdir -p "$out"
cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
rc=0
recipe() { # NAME CMD...: one command of a recipe, its output kept in NAME.log
  local name=$1
  shift
  local t0=$SECONDS
  if "$@" >"$name.log" 2>&1; then
    # the line that says what came out: a top-1, a file written, a speed; else the last
    echo "ok   $name ($((SECONDS - t0)) s): $({ grep -E 'top-?1|wrote|images/s' "$name.log" || tail -1 "$name.log"; } | tail -1)"
  else
    echo "FAIL $name (exit $?): $(tail -3 "$name.log" | tr '\n' ' ')"
    rc=1
  fi
}

# "Train a model under a mode", the real run (1 epoch of 6,000 images here)
recipe train-lenet5 "$amd" train "$src/models/lenet5_train.onnx" --data "mnist:$idx" \
  --mode am16 --epochs 1 --limit 6000 --batch 128 --lr 0.05 --momentum 0.9 --schedule cosine -o lenet5_am16.onnx \
  --metrics lenet5_am16.tsv --plot lenet5_am16.png --checkpoint-dir ckpt

# "Evaluate a pretrained torchvision model on a folder of JPEGs" (random weights; a 4-class folder)
recipe export-resnet50 "$py" "$src/tools/export_torchvision.py" resnet50 -o exp
recipe image-folder "$py" "$src/tests/data/make_image_folder.py" "$idx" IMAGES mixed
recipe eval-resnet50 "$amd" eval exp/resnet50.onnx --data images:IMAGES --resize 256 --crop 224 --normalize imagenet \
  --mode am16
recipe finetune-resnet50 "$amd" train exp/resnet50_train.onnx --data images:IMAGES --resize 256 --crop 224 \
  --normalize imagenet --mode am16 --epochs 1 --optimizer adamw --lr 5e-5 -o tuned.onnx
recipe sweep-resnet50 "$amd" sweep exp/resnet50.onnx --data images:IMAGES --resize 256 --crop 224 --normalize imagenet \
  --mode am16 --limit 40 --tsv sweep.tsv --plot sweep.png

# "Several GPUs" (random images in CIFAR-10's format, 1 epoch of 2,048 images per rank)
if [ "$ranks" -gt 0 ]; then
  "$py" "$src/tools/random_cifar10.py" cifar10 2000
  recipe export-resnet18 "$py" "$src/tools/export_models.py" --out cifar --models resnet18
  recipe mpirun-resnet18 mpirun -np "$ranks" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "$amd" train \
    cifar/resnet18_train.onnx --data cifar10:cifar10 --device cuda --limit $((2048 * ranks)) \
    --batch 128 --epochs 1 --lr 0.1 --momentum 0.9 --nesterov --wd 5e-4 --schedule onecycle \
    --augment crop:4,flip -o resnet18.onnx --checkpoint-dir ckpt18
fi
exit $rc
