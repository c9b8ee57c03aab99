#!/usr/bin/env bash
# One device call on a two-GPU machine that measures a new build against an older binary and runs the new
# build's GPU suite beside the measurements (what each A/B lease of issue 33 did by hand):
#   GPU 1: shard 1 of 2 of the new bundle's GPU suite (run_all.sh tests with SHARD=1/2), from the start;
#   GPU 0: SPEED_SCRIPT, run by bash with these in its environment:
#            OLD, NEW  the older and the new amdnn-onnx (both run with the bundle's libraries),
#            BUNDLE    the new bundle's folder (its data/idx: MNIST; the checkout's models/ and tools/ are here),
#            PY        a Python that has torch and onnx ($PY if set, else tools/torch_python.sh's choice),
#            W         a scratch folder, el  a command that prints the seconds since the call began;
#          its output goes to $OUT/speed.txt (and to the call's output); then shard 0 of 2 in what is left of
#          CALL_S seconds (default 440: a call's 600 less room for the start and the transfers);
#   at the end, each shard's groups OK and those not OK. The NCCL groups are not run (a run given SHARD
#   leaves them out). Exit status: 0 when both shards pass, 1 when one does not, 2 on bad arguments.
# BUNDLE.tar.xz holds the folder b that tools/gpu_bundle.sh wrote (tar -C PARENT -cf - b | xz); OLD.xz is an
# amdnn-onnx binary compressed with xz. Both travel with the checkout as ignored paths that the call carries.
# usage (from the checkout's root): [CALL_S=S] tools/gpu_ab.sh BUNDLE.tar.xz OLD.xz SPEED_SCRIPT
set -u
if [ $# != 3 ] || [ ! -f "$1" ] || [ ! -f "$2" ] || [ ! -f "$3" ] || [ -z "${OUT:-}" ]; then
  echo "usage: [CALL_S=S] OUT=DIR tools/gpu_ab.sh BUNDLE.tar.xz OLD.xz SPEED_SCRIPT (files that exist)" >&2
  exit 2
fi
t0=$(date +%s)
el() { echo $(($(date +%s) - t0)); }
export -f el
export t0
W=$(mktemp -d) && mkdir -p "$OUT" || exit 2
BUNDLE=$PWD/.gpu-ab
rm -rf "$BUNDLE" && tar -C "$W" -xJf "$1" && mv "$W/b" "$BUNDLE" || { echo "gpu_ab.sh: cannot unpack $1" >&2; exit 2; }
xz -dc "$2" >"$BUNDLE/bin/amdnn-onnx.old" && chmod +x "$BUNDLE/bin/amdnn-onnx.old" || exit 2
echo "gpu_ab.sh: unpacked ($(el) s)"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(CUDA_VISIBLE_DEVICES=1 SHARD=1/2 bash "$BUNDLE/run_all.sh" tests "$W/s1" >"$OUT/shard_1.txt" 2>&1
  echo "gpu_ab.sh: shard 1 exit $? at $(el) s" >>"$OUT/shard_1.txt") &
shard1=$!
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$BUNDLE/lib:${LD_LIBRARY_PATH:-}"
export OLD=$BUNDLE/bin/amdnn-onnx.old NEW=$BUNDLE/bin/amdnn-onnx BUNDLE W
export PY=${PY:-$(tools/torch_python.sh torch onnx)}
CUDA_VISIBLE_DEVICES=0 bash "$3" >"$OUT/speed.txt" 2>&1
echo "gpu_ab.sh: $3 exit $? at $(el) s" >>"$OUT/speed.txt"
cat "$OUT/speed.txt"
left=$((${CALL_S:-440} - $(el)))
[ $left -gt 10 ] || left=10
CUDA_VISIBLE_DEVICES=0 SHARD=0/2 timeout $left bash "$BUNDLE/run_all.sh" tests "$W/s0" >"$OUT/shard_0.txt" 2>&1
echo "gpu_ab.sh: shard 0 exit $? at $(el) s" >>"$OUT/shard_0.txt"
wait $shard1
rc=0
for i in 0 1; do
  ok=$(grep -c '^=== [^ ]*: OK' "$OUT/shard_$i.txt")
  bad=$(grep -h '^=== [^ ]*: ' "$OUT/shard_$i.txt" | grep -v ': OK' | tr '\n' ' ')
  echo "shard $i: $ok OK; not OK: ${bad:-none}; $(tail -1 "$OUT/shard_$i.txt")"
  grep -q "shard $i exit 0 " "$OUT/shard_$i.txt" && [ -z "$bad" ] && [ "$ok" -gt 0 ] || rc=1
done
rm -rf "$W"
exit $rc
