# The preamble of the shell tests on a generated image folder (train_rrc.sh,
# ../gpu/eval_stream_gpu.sh), sourced with their arguments:
#   AMDNN_ONNX MODELS_DIR IDX_DIR MAKE_IMAGE_FOLDER_PY [DEVICE (cuda)]
# Sets amd, models, idx, make, dev, py (PYTHON, default /usr/bin/python3) and
# tmp (removed at exit), defines ok / bad (counting pass / fail), skips (exit
# 77) without the IDX set or PIL and numpy, and makes $tmp/rgb: 30 RGB 32x32
# images in 5 classes (tests/data/make_image_folder.py).
set -u
amd=$1 models=$2 idx=$3 make=$4 dev=${5:-cuda}
py=${PYTHON:-/usr/bin/python3}
[ -f "$idx/t10k-images-idx3-ubyte.gz" ] || { echo "SKIP: no IDX data set in $idx"; exit 77; }
$py -c "import PIL, numpy" 2>/dev/null || { echo "SKIP: no PIL/numpy for $py"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
$py "$make" "$idx" "$tmp/rgb" rgb32 30 5 || { bad "make the folder"; exit 1; }
