#!/usr/bin/env bash
# Memory check of the training path under valgrind (memcheck): a small
# LeNet-5 `train` on Fashion-MNIST (--limit 256, 1 epoch, batch 64), stopped
# after 2 steps with a checkpoint and resumed (so checkpoint writing and
# reading are covered), then an `eval` of the trained model, and two error
# exits that must unwind cleanly too: a checkpoint that hits a full disk
# (AMD_FAULT_WRITE_BYTES, exit 1) and a NaN loss (--lr 1e30, exit 4). Each run must
# give no memcheck error and no definite leak ("possibly lost" blocks of the
# OpenMP runtime's threads are shown in the log, not counted). Prints each
# run's summary lines; exits 0 when clean, 1 otherwise, 77 when valgrind or
# the data set is missing. Logs stay in $VALGRIND_LOG_DIR when that is set.
# usage: tools/valgrind_train.sh AMDNN_ONNX [MODELS_DIR] [FASHION_DIR]
#   (meson test --suite valgrind runs it; ~1-3 minutes)
set -u
amd=${1:?usage: $0 AMDNN_ONNX [MODELS_DIR] [FASHION_DIR]}
models=${2:-$(dirname "$0")/../models}
fashion=${3:-/usr/share/datasets/fashion-mnist}
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (Debian valgrind)"; exit 77; }
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $fashion"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/amdnn-valgrind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
logs=${VALGRIND_LOG_DIR:-$tmp}
mkdir -p "$logs"
pass=0 fail=0
vg=(valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
  --error-exitcode=99 --track-origins=yes --num-callers=30
  --suppressions="$(dirname "$0")/valgrind_cuda.supp") # the CUDA libraries' load-time false positive
train=(train "$models/lenet5_train.onnx" --data "mnist:$fashion" --limit 256 --epochs 1 --batch 64 --lr 0.02
  --checkpoint-dir "$tmp/ck" -o "$tmp/out.onnx")

# args: name, expected exit status of the program, program args...
check() {
  local name=$1 want=$2; shift 2
  local log="$logs/$name.log"
  local t0=$SECONDS
  "${vg[@]}" --log-file="$log" "$amd" "$@" >"$tmp/$name.out" 2>&1
  local rc=$?
  echo "== $name: exit $rc ($((SECONDS - t0)) s): amdnn-onnx $*"
  grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|in use at exit|All heap blocks were freed" "$log" | sed 's/^==[0-9]*== /   /'
  if [ $rc -eq "$want" ]; then
    echo "ok   $name"
    pass=$((pass + 1))
  else
    [ $rc -eq 99 ] && echo "FAIL $name: memcheck found errors or definite leaks (log: $log):" || echo "FAIL $name: exit $rc, want $want (log: $log)"
    # the first error records, with their stacks
    sed -n '/^==[0-9]*== \(Invalid\|Conditional\|Use of uninit\|Syscall param\|Mismatched\|Source and destination\|Argument\|.*definitely lost in\)/,/^==[0-9]*== $/p' "$log" | head -120
    tail -3 "$tmp/$name.out"
    fail=$((fail + 1))
  fi
}
check train-stop 3 "${train[@]}" --stop-after 2
# error paths, before the resume consumes the step-2 checkpoint
AMD_FAULT_WRITE_BYTES=1000 check train-full-disk 1 "${train[@]}" --resume --stop-after 3
check train-nan 4 train "$models/lenet5_train.onnx" --data "mnist:$fashion" --limit 256 --epochs 1 --batch 64 --lr 1e30 \
  --checkpoint-dir "$tmp/ck-nan" -o "$tmp/nan.onnx"
check train-resume 0 "${train[@]}" --resume
if [ -f "$tmp/out.onnx" ]; then
  check eval 0 eval "$tmp/out.onnx" --data "mnist:$fashion" --limit 256
else
  echo "FAIL eval: no trained model to evaluate"
  fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
