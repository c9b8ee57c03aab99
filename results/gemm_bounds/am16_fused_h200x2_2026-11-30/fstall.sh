#!/usr/bin/env bash
# Nsight Compute on the fused branch's tier kernels (am16, mbm14) and mit16 for reference, GPU 0.
set -u
t0=$(date +%s)
mkdir -p $OUT
PHASE=none bash .gpu-scripts/fused.sh
export CUDA_VISIBLE_DEVICES=0
command -v ncu >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
LIBS="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
LD_LIBRARY_PATH="$LIBS:$PWD/.gpu-bfused/lib:${LD_LIBRARY_PATH:-}" timeout ${ST_S:-270} \
  tools/gemm_stalls.sh .gpu-bfused/bin $OUT/st ${MODES:-am16,mbm14} > $OUT/stalls.txt 2>&1
echo "stalls rc $? ($(( $(date +%s) - t0 )) s)"
grep -A4 -E "^== |mode_kernel<1[12], [12], 1>" $OUT/stalls.txt | head -80
for f in $OUT/st/*.csv; do xz -9 $f; done
