#!/usr/bin/env bash
# The GPU suite's runner (tools/gpu_run_all.sh, a bundle's run_all.sh) with SHARDS=2 against one run, on the CPU:
# a fake bundle whose binaries are stubs (one of them fails with exit 3) and a fake nvidia-smi listing two GPUs.
# Both runs must give the same summary and exit status; each test group must run in exactly one shard, on that
# shard's GPU (CUDA_VISIBLE_DEVICES), the shards taking turns; bad SHARDS and SHARD values are refused.
#   run_all_shards.sh SOURCE_ROOT WORK_DIR
set -u
src=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/b/bin" "$work/fake" "$work/tmp" || exit 1
cp "$src/tools/gpu_run_all.sh" "$work/b/run_all.sh" || exit 1
printf '#!/bin/sh\necho "GPU 0: fake (UUID: GPU-0)"\necho "GPU 1: fake (UUID: GPU-1)"\n' >"$work/fake/nvidia-smi"
chmod +x "$work/fake/nvidia-smi"
for x in test_cuda_products test_cuda_gemm test_cuda_repro test_backend_ops test_cuda_q8_gemm test_cuda_q8_grad \
  test_cuda_q8f test_api_cuda amdnn-onnx golden-compare; do
  code=0
  [ $x = test_cuda_repro ] && code=3
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls_${CUDA_VISIBLE_DEVICES:-all}.txt"\nexit %s\n' $x "$work" $code \
    >"$work/b/bin/$x"
  chmod +x "$work/b/bin/$x"
done
# no compute-sanitizer, no real CUDA tools: only the fakes and the system's basics on PATH
run() { env -u SHARD -u SHARDS PATH="$work/fake:/usr/bin:/bin" TMPDIR="$work/tmp" PYTHON=/bin/false "$@"; }
summary() { sed -n '/^=== summary$/,$p' "$1"; }

(cd "$work/b" && run bash run_all.sh tests "$work/one" >"$work/one.txt" 2>&1)
rc_one=$?
rm -f "$work"/calls_*.txt
(cd "$work/b" && run env SHARDS=2 bash run_all.sh tests "$work/two" >"$work/two.txt" 2>&1)
rc_two=$?

[ "$rc_one" = 1 ] || fail "one run: exit $rc_one, expected 1 (a group fails)"
[ "$rc_two" = "$rc_one" ] || fail "SHARDS=2: exit $rc_two, one run $rc_one"
groups=$(summary "$work/one.txt" | grep -c '^[a-z]')
[ "$groups" -ge 60 ] || fail "one run's summary has $groups groups"
diff <(summary "$work/one.txt") <(summary "$work/two.txt") >"$work/summary.diff" ||
  fail "the summaries differ: $(head -5 "$work/summary.diff")"
summary "$work/two.txt" | grep -qx 'cuda-repro 3' || fail "the failing group is not in the summary with its exit status"
for i in 0 1; do
  [ -f "$work/two/shard_$i.txt" ] || fail "no shard_$i.txt"
  grep '^=== [^ ]*: ' "$work/two/shard_$i.txt" | sed 's/: .*//' | sort >"$work/groups_$i.txt"
  # every stub a shard ran saw that shard's GPU alone
  [ -s "$work/calls_$i.txt" ] || fail "shard $i ran no binary on GPU $i"
done
[ ! -f "$work/calls_all.txt" ] || fail "a binary ran without CUDA_VISIBLE_DEVICES: $(head -2 "$work/calls_all.txt")"
both=$(comm -12 "$work/groups_0.txt" "$work/groups_1.txt")
[ -z "$both" ] || fail "groups in both shards: $both"
n0=$(wc -l <"$work/groups_0.txt") n1=$(wc -l <"$work/groups_1.txt")
nccl=$(summary "$work/two.txt" | grep -c '^nccl-')
[ $((n0 + n1 + nccl)) = "$groups" ] || fail "shards $n0 + $n1 + NCCL $nccl groups, one run $groups"
[ $((n0 - n1)) -le 1 ] && [ $((n1 - n0)) -le 1 ] || fail "shards of $n0 and $n1 groups: not dealt in turn"
grep -q '^=== cuda-products: ' "$work/two/shard_0.txt" || fail "the first group is not shard 0's"
grep -q '^=== cuda-gemm: ' "$work/two/shard_1.txt" || fail "the second group is not shard 1's"

(cd "$work/b" && run env SHARDS=3 bash run_all.sh tests "$work/three" >"$work/three.txt" 2>&1)
[ $? = 2 ] && grep -q 'SHARDS wants' "$work/three.txt" || fail "SHARDS=3 on two GPUs was not refused"
(cd "$work/b" && run env SHARD=2/2 bash run_all.sh tests "$work/bad" >"$work/bad.txt" 2>&1)
[ $? = 2 ] && grep -q 'SHARD wants' "$work/bad.txt" || fail "SHARD=2/2 was not refused"
echo "ok: $groups groups; shards of $n0 and $n1, then $nccl NCCL groups; the same summary and exit status"
