#!/usr/bin/env bash
# SM clock and active cycles of the fused tier kernel against main's Mitchell kernels (ncu, GPU 0).
set -u
mkdir -p $OUT
export CUDA_VISIBLE_DEVICES=0
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
LIBS="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
m=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg,sm__cycles_active.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active
for run in "fused am16" "main am16" "main mit16" "fused mbm14"; do
  set -- $run
  LD_LIBRARY_PATH="$LIBS:$PWD/.gpu-b$1/lib:${LD_LIBRARY_PATH:-}" BENCH_GEMM_RUNS=1 timeout 120 ncu --clock-control none --csv \
    --metrics $m -k regex:mode_kernel .gpu-b$1/bin/bench-cuda-gemm $2 > $OUT/clk_$1_$2.csv 2> $OUT/clk_$1_$2.err
  echo "$run rc $?"
  python3 - $OUT/clk_$1_$2.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); gi = h.index("Grid Size") if "Grid Size" in h else None
ii = h.index("ID"); mi = h.index("Metric Name"); vi = h.index("Metric Value")
d = collections.OrderedDict()
for r in rows[1:]:
    d.setdefault((r[ii], r[ki][:28], r[gi] if gi is not None else ""), {})[r[mi]] = r[vi]
for (i, k, g), v in d.items():
    if "<2," in k or "<7," in k: continue
    print(f"{k:28s} {g:14s} t {v.get('gpu__time_duration.sum')} clk {v.get('sm__cycles_elapsed.avg.per_second')} "
          f"active/elapsed {v.get('sm__cycles_active.avg')}/{v.get('sm__cycles_elapsed.avg')} "
          f"issue act {v.get('smsp__issue_active.avg.pct_of_peak_sustained_active')} el {v.get('smsp__issue_active.avg.pct_of_peak_sustained_elapsed')} "
          f"tensor {v.get('sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active')}")
PY
done
