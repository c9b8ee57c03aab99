# Shared helpers for the fault-injection tests (sourced, not run).
# Each test script is called as: SCRIPT AMDNN_ONNX MODELS_DIR [FASHION_DIR]
# and prints "ok"/"FAIL" lines and a final "N passed, N failed" line; it exits
# 0 when everything passed, 1 otherwise, 77 (meson's skip) when Fashion-MNIST
# (Debian dataset-fashion-mnist) or another prerequisite is missing.
set -u
amd=${1:?usage: $0 AMDNN_ONNX MODELS_DIR [FASHION_DIR]}
models=${2:?usage: $0 AMDNN_ONNX MODELS_DIR [FASHION_DIR]}
fashion=${3:-/usr/share/datasets/fashion-mnist}
model="$models/lenet5_train.onnx"
[ -x "$amd" ] || { echo "FAIL: $amd is not an executable"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$model" ] || { echo "FAIL: no $model"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amdnn-faults.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}
# Checkpoint files of a folder, one name per line, sorted (temp files included).
ls_ckpt() { (cd "$1" 2>/dev/null && ls -A | LC_ALL=C sort); }
# "2 ckpt (steps 17,18) + 1 tmp" : what a checkpoint folder holds.
describe_dir() {
  local d=$1
  if [ ! -d "$d" ]; then echo "no folder"; return; fi
  local steps tmps other
  steps=$(cd "$d" && ls -A | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.amdckpt$/\1/p' | sort -n | paste -sd, -)
  tmps=$(cd "$d" && ls -A | grep -c '^\.tmp-ckpt-')
  other=$(cd "$d" && ls -A | grep -vc '^\(\.tmp-\)\?ckpt-')
  local n=0
  [ -n "$steps" ] && n=$(echo "$steps" | tr , '\n' | wc -l)
  local s="$n ckpt"
  [ -n "$steps" ] && s="$s (steps $steps)"
  [ "$tmps" -gt 0 ] && s="$s + $tmps tmp"
  [ "$other" -gt 0 ] && s="$s + $other other"
  echo "$s"
}
# Copies a checkpoint folder (for byte comparisons later).
snapshot() { rm -rf "$2"; cp -a "$1" "$2"; }
# 0 if two folders hold the same names with byte-identical contents.
same_dir() {
  [ "$(ls_ckpt "$1")" = "$(ls_ckpt "$2")" ] || return 1
  local f
  for f in $(ls_ckpt "$1"); do cmp -s "$1/$f" "$2/$f" || return 1; done
  return 0
}
