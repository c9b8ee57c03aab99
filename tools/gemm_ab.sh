#!/usr/bin/env bash
# A change to the mode GEMM kernels (cuda/mode_gemm.cu), before against
# after, in one command on a GPU machine:
#  1. gemm-hashes of both builds (tools/gemm_hashes.cu: 1248 GEMM outputs):
#     identical, or which mode / tile / layout / shape lines differ;
#  2. test_cuda_gemm of the new build (the products against the CPU's);
#  3. bench-cuda-gemm of both, alternated RUNS times (default 2), and the
#     change of the medians per mode and shape (tools/gemm_bench_compare.py);
#     MODES (a comma list, default every mode) limits the benchmark to those
#     modes and cuBLAS's baseline;
#  4. with NCU=1 and ncu on the PATH: Nsight Compute's instructions per
#     multiply-add and issue share of both builds' kernels for NCU_MODES
#     (default acc16,fp16,mit16; tools/ncu_kernel_table.py).
# Each build's binaries come from its bundle (tools/gpu_bundle.sh BUILD ...):
# OLD_BIN and NEW_BIN are the bundles' bin/ folders (or build/tests/gpu/).
#
#   tools/gemm_ab.sh OLD_BIN NEW_BIN OUT_DIR
#
# Everything lands in OUT_DIR (hashes_*.txt, test_cuda_gemm.txt,
# bench_{old,new}_N.txt, compare.txt, ncu_*.csv); a summary goes to stdout.
# Exit status: 0 when test_cuda_gemm passed (the hashes may differ where the
# change moves split-K boundaries: read the listed shapes), 1 otherwise.
set -u
if [ $# -ne 3 ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
old=$1 new=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
runs=${RUNS:-2}
for b in "$old/gemm-hashes" "$old/bench-cuda-gemm" "$new/gemm-hashes" "$new/bench-cuda-gemm" "$new/test_cuda_gemm"; do
  [ -x "$b" ] || { echo "gemm_ab.sh: no $b" >&2; exit 2; }
done
mkdir -p "$out"

"$old/gemm-hashes" >"$out/hashes_old.txt" && "$new/gemm-hashes" >"$out/hashes_new.txt" ||
  { echo "gemm_ab.sh: gemm-hashes failed" >&2; exit 1; }
n=$(wc -l <"$out/hashes_old.txt")
if cmp -s "$out/hashes_old.txt" "$out/hashes_new.txt"; then
  echo "hashes: all $n GEMM outputs identical"
else
  # the lines are "mode tier tile layout(ta tb) shape data hash": the cases whose outputs differ
  echo "hashes: $(diff "$out/hashes_old.txt" "$out/hashes_new.txt" | grep -c '^>') of $n outputs differ, in:"
  diff "$out/hashes_old.txt" "$out/hashes_new.txt" | sed -n 's/^> \([^ ]* [^ ]* [^ ]* [^ ]* [^ ]* [^ ]*\) .*/\1/p' |
    sort | uniq -c | awk '{ n = $1; $1 = ""; printf "  %s (%d data sets)\n", substr($0, 2), n }' | head -60
fi

"$new/test_cuda_gemm" >"$out/test_cuda_gemm.txt" 2>&1
tested=$?
echo "test_cuda_gemm (new): exit $tested, $(tail -2 "$out/test_cuda_gemm.txt" | tr '\n' ' ')"

for i in $(seq "$runs"); do
  "$old/bench-cuda-gemm" ${MODES:+"$MODES"} >"$out/bench_old_$i.txt" 2>&1
  "$new/bench-cuda-gemm" ${MODES:+"$MODES"} >"$out/bench_new_$i.txt" 2>&1
done
python3 "$here/gemm_bench_compare.py" --old "$out"/bench_old_*.txt --new "$out"/bench_new_*.txt | tee "$out/compare.txt"

if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  metrics=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
  for v in old new; do
    bin=$old
    [ $v = new ] && bin=$new
    ncu --clock-control none --csv --metrics "$metrics" -c 120 "$bin/bench-cuda-gemm" "${NCU_MODES:-acc16,fp16,mit16}" >"$out/ncu_$v.csv" 2>"$out/ncu_$v.err"
    echo "Nsight Compute, $v build (every bench shape is 4.83 G multiply-adds):"
    python3 "$here/ncu_kernel_table.py" "$out/ncu_$v.csv" --issue 4831838208
  done
fi
[ "$tested" = 0 ]
