#!/usr/bin/env bash
# Why a mode GEMM kernel does not issue on every cycle: Nsight Compute over
# bench-cuda-gemm's twelve ResNet-18 shapes (one launch each:
# BENCH_GEMM_RUNS=1), one mode at a time, with the instructions per
# multiply-add and the issue share (as tools/gemm_ab.sh's NCU=1), the warps
# stalled per issuing cycle for each reason, each pipe's share of its peak
# rate, the shared-memory bank conflicts per load instruction and the SM
# clock (tools/ncu_kernel_table.py --stalls). Only the mode kernels are
# profiled (mode_kernel: the 64- and 128-row tiles; the am16 / mbm14 fast
# tier's Mitchell part is mode_kernel<11 / 12, ...>; their exact tier
# mode_kernel<2 / 7, ...>), not split_reduce, tier_extend or cuBLAS.
#
#   tools/gemm_stalls.sh BIN_DIR OUT_DIR [MODES]
#
# BIN_DIR holds bench-cuda-gemm (a bundle's bin/, or build/tests/gpu/);
# MODES is a comma list (default mit16,am16,acc16,fp16,am32,lut). OUT_DIR
# gets ncu_MODE.csv and .err; the tables go to stdout. Each mode profiles
# 12 launches (am16 and mbm14: 24, both tiers), each replayed once per
# group of metrics that Nsight Compute can collect together.
set -u
if [ $# -lt 2 ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 out=$2 modes=${3:-mit16,am16,acc16,fp16,am32,lut}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$bin/bench-cuda-gemm" ] || { echo "gemm_stalls.sh: no $bin/bench-cuda-gemm" >&2; exit 2; }
command -v ncu >/dev/null || { echo "gemm_stalls.sh: no ncu on the PATH" >&2; exit 2; }
mkdir -p "$out"
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active
metrics=$metrics,'regex:smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio'
metrics=$metrics,'regex:sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active'
# shared-memory loads and their bank conflicts (lut's table lookups)
metrics=$metrics,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum
# the SM clock each kernel ran at (lower while tensor-core instructions issue)
metrics=$metrics,sm__cycles_elapsed.avg.per_second
rc=0
for mode in ${modes//,/ }; do
  echo "== $mode (every shape is 4.83 G multiply-adds)"
  BENCH_GEMM_RUNS=1 ncu --clock-control none --csv --metrics "$metrics" -k regex:mode_kernel "$bin/bench-cuda-gemm" "$mode" \
    >"$out/ncu_$mode.csv" 2>"$out/ncu_$mode.err" || { echo "ncu failed: $(tail -3 "$out/ncu_$mode.err")"; rc=1; continue; }
  python3 "$here/ncu_kernel_table.py" "$out/ncu_$mode.csv" --stalls 4831838208 || rc=1
done
exit $rc
