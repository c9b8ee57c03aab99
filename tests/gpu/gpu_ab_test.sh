#!/usr/bin/env bash
# tools/gpu_ab.sh on the CPU, with a fake bundle (a run_all.sh stub that prints two groups for its shard and
# logs where it ran; an amdnn-onnx stub) and an older binary's stub: the speed script gets OLD, NEW, BUNDLE,
# PY, W and el and runs on GPU 0, shard 1 runs on GPU 1 and shard 0 on GPU 0 after the script, the summary
# counts each shard's groups, a failing group makes the exit status 1, bad arguments 2.
#   gpu_ab_test.sh SOURCE_ROOT WORK_DIR
set -u
src=$1 work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/pack/b/bin" "$work/pack/b/lib" "$work/pack/b/data/idx" "$work/root" || exit 1
cat >"$work/pack/b/run_all.sh" <<'STUB'
#!/usr/bin/env bash
echo "run_all $1 SHARD=$SHARD GPU=$CUDA_VISIBLE_DEVICES" >>"$STUB_CALLS"
i=${SHARD%/*}
echo "=== g$i-a: OK"
if [ "$i" = 1 ] && [ -n "${STUB_FAIL:-}" ]; then echo "=== g1-b: 3"; exit 1; fi
echo "=== g$i-b: OK"
STUB
printf '#!/bin/sh\necho "new $* gpu=$CUDA_VISIBLE_DEVICES"\n' >"$work/pack/b/bin/amdnn-onnx"
printf '#!/bin/sh\necho "old $* gpu=$CUDA_VISIBLE_DEVICES"\n' >"$work/old"
chmod +x "$work/pack/b/run_all.sh" "$work/pack/b/bin/amdnn-onnx" "$work/old"
tar -C "$work/pack" -cf - b | xz >"$work/bundle.tar.xz" && xz -c "$work/old" >"$work/old.xz" || exit 1
cat >"$work/speed.sh" <<'SPEED'
echo "speed: $($OLD train a) | $($NEW train b) | py $PY | scratch $([ -d "$W" ] && echo yes) | data $([ -d "$BUNDLE/data/idx" ] && echo yes) | el $(el)"
SPEED
ab() { (cd "$work/root" && env STUB_CALLS="$work/calls.txt" PY=/bin/true CALL_S=30 "$@" bash "$src/tools/gpu_ab.sh" \
  "$work/bundle.tar.xz" "$work/old.xz" "$work/speed.sh"); }

ab OUT="$work/out" >"$work/ab.txt" 2>&1
rc=$?
[ $rc = 0 ] || fail "exit $rc with both shards passing: $(tail -3 "$work/ab.txt")"
grep -qx 'speed: old train a gpu=0 | new train b gpu=0 | py /bin/true | scratch yes | data yes | el [0-9]*' \
  "$work/out/speed.txt" || fail "the speed script's environment: $(head -2 "$work/out/speed.txt")"
grep -q '^speed: ' "$work/ab.txt" || fail "the speed script's output is not in the call's output"
grep -qx 'run_all tests SHARD=1/2 GPU=1' "$work/calls.txt" || fail "shard 1 not on GPU 1: $(cat "$work/calls.txt")"
grep -qx 'run_all tests SHARD=0/2 GPU=0' "$work/calls.txt" || fail "shard 0 not on GPU 0: $(cat "$work/calls.txt")"
[ "$(wc -l <"$work/calls.txt")" = 2 ] || fail "run_all.sh ran $(wc -l <"$work/calls.txt") times, not twice"
grep -q '^shard 0: 2 OK; not OK: none; gpu_ab.sh: shard 0 exit 0' "$work/ab.txt" || fail "shard 0's line: $(grep '^shard 0' "$work/ab.txt")"
grep -q '^shard 1: 2 OK; not OK: none; gpu_ab.sh: shard 1 exit 0' "$work/ab.txt" || fail "shard 1's line: $(grep '^shard 1' "$work/ab.txt")"
[ -d "$work/root/.gpu-ab/bin" ] && [ -x "$work/root/.gpu-ab/bin/amdnn-onnx.old" ] || fail "the bundle is not unpacked beside the checkout"

rm -f "$work/calls.txt"
ab OUT="$work/out2" STUB_FAIL=1 >"$work/ab2.txt" 2>&1
rc=$?
[ $rc = 1 ] || fail "exit $rc with a failing group, expected 1"
grep -q '^shard 1: 1 OK; not OK: === g1-b: 3 ; gpu_ab.sh: shard 1 exit 1' "$work/ab2.txt" ||
  fail "the failing group's line: $(grep '^shard 1' "$work/ab2.txt")"

(cd "$work/root" && OUT="$work/out3" bash "$src/tools/gpu_ab.sh" "$work/bundle.tar.xz" "$work/missing.xz" \
  "$work/speed.sh" >"$work/ab3.txt" 2>&1)
[ $? = 2 ] && grep -q '^usage' "$work/ab3.txt" || fail "a missing file was not refused with exit 2"
(cd "$work/root" && env -u OUT bash "$src/tools/gpu_ab.sh" "$work/bundle.tar.xz" "$work/old.xz" "$work/speed.sh" \
  >"$work/ab4.txt" 2>&1)
[ $? = 2 ] || fail "no OUT was not refused with exit 2"
echo "ok: the speed script on GPU 0 with OLD, NEW, BUNDLE, PY, W, el; shard 1 on GPU 1, shard 0 after it on GPU 0; exit 0, 1, 2"
