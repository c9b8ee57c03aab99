#!/usr/bin/env bash
# Crash safety: `kill -9` at seeded random moments of a LeNet-5 run (with
# Dropout and augmentation) that writes
# a checkpoint after (nearly) every step, then `--resume` until the run ends.
# Every trial must resume from the newest checkpoint in the folder (all of
# them must verify: no "skipped checkpoint" warning) or from scratch when none
# was written yet, and must end with a model byte-identical to an
# uninterrupted run with the same seed. Kill moments are spread evenly over the
# run: trial i waits for a seeded random step inside slice i of the run's steps
# (watching the checkpoint folder), then a random 0-119 ms more; every 4th
# trial also waits for a checkpoint write to start (a .tmp-ckpt-* file) so that
# several kills land inside a write. A trial that finds a .tmp-ckpt-* file
# after the kill is counted as "killed during a checkpoint write".
# kill -9 is a process crash: the page cache survives, so this does not test
# power loss (fsync ordering), only that no crash point leaves a bad state.
# usage: kill9.sh AMDNN_ONNX MODELS_DIR [FASHION_DIR]
# environment: FAULTS_KILL_TRIALS (default 12), FAULTS_SEED (default 20240611)
. "$(dirname "$0")/lib.sh"
trials=${FAULTS_KILL_TRIALS:-12}
RANDOM=${FAULTS_SEED:-20240611}
# LeNet-5 with Dropout: a resume must also restore the dropout stream
model="$models/lenet5d_train.onnx"
run=(train "$model" --data "mnist:$fashion" --limit 2000 --batch 64 --epochs 2 --lr 0.02
  --augment crop:2,flip --seed 7)
ckpt=(--checkpoint-steps 1) # a checkpoint after every step (each ~0.5 MB, fsync'd)
ms() { echo $(($(date +%s%N) / 1000000)); }

# the uninterrupted reference, and the same with checkpoints (must not change the result)
t0=$(ms)
"$amd" "${run[@]}" -o "$tmp/ref.onnx" >"$tmp/ref.log" 2>&1 || { bad "reference run failed"; tail -3 "$tmp/ref.log"; finish; }
t1=$(ms)
"$amd" "${run[@]}" "${ckpt[@]}" --checkpoint-dir "$tmp/ckref" -o "$tmp/ckref.onnx" >"$tmp/ckref.log" 2>&1
rc=$?
t2=$(ms)
span=$((t2 - t1))
nck=$(grep -c . <<<"$(ls_ckpt "$tmp/ckref")")
if [ $rc -eq 0 ] && cmp -s "$tmp/ref.onnx" "$tmp/ckref.onnx"; then
  ok "uninterrupted run with a checkpoint after every step ($span ms, $nck files kept) = run without ($((t1 - t0)) ms)"
else
  bad "checkpointing changed the run: exit $rc, $(cmp "$tmp/ref.onnx" "$tmp/ckref.onnx" 2>&1 | head -1)"
  tail -3 "$tmp/ckref.log"
fi

# newest checkpoint step in a folder (-1 if none), without forking
newest_step() {
  local f n best=-1
  for f in "$1"/ckpt-*.amdckpt; do
    [ -e "$f" ] || continue
    n=${f##*/ckpt-}
    n=${n%.amdckpt}
    n=$((10#$n))
    [ $n -gt $best ] && best=$n
  done
  echo $best
}
steps=$((2 * (2000 + 63) / 64))
in_write=0 identical=0 from_scratch=0
printf '%-6s %-16s %-36s %-20s %s\n' trial "kill at" "found after kill -9" "resumed from" result
for i in $(seq 1 "$trials"); do
  ck="$tmp/ck$i"
  # the moment: slice i of the run's steps, a seeded random step inside it, then a
  # random 0-119 ms into the next step (progress-based, so a loaded machine does not
  # bunch the kills up); slice 1 starts at the launch (kill before any checkpoint)
  target=$((steps * (100 * (i - 1) + RANDOM % 100) / (100 * trials)))
  extra=$((RANDOM % 120))
  [ $i -eq 1 ] && target=0                      # trial 1: during start-up, before any checkpoint
  [ $target -eq 0 ] && extra=$((RANDOM % 250))
  targeted=$((i % 4 == 0))
  start=$(ms)
  "$amd" "${run[@]}" "${ckpt[@]}" --checkpoint-dir "$ck" -o "$tmp/t$i.onnx" >"$tmp/k$i.log" 2>&1 &
  pid=$!
  while [ $target -gt 0 ] && kill -0 $pid 2>/dev/null && [ "$(newest_step "$ck")" -lt $target ]; do sleep 0.005; done
  sleep "0.$(printf '%03d' $extra)"
  if [ $targeted -eq 1 ]; then
    # kill at the first sight of a temp file: inside a checkpoint write
    while kill -0 $pid 2>/dev/null && ! compgen -G "$ck/.tmp-ckpt-*" >/dev/null; do :; done
  fi
  kill -9 $pid 2>/dev/null
  delay=$(($(ms) - start))
  { wait $pid; } 2>/dev/null
  krc=$?
  found=$(describe_dir "$ck")
  grep -q ' tmp' <<<"$found" && in_write=$((in_write + 1))
  newest=$(ls_ckpt "$ck" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.amdckpt$/\1/p' | sort -n | tail -1)
  [ $krc -eq 137 ] || found="$found (not killed: exit $krc)"
  # resume until the run ends (a crash-free resume must end in one go)
  rrc=3 tries=0
  while [ $rrc -eq 3 ] && [ $tries -lt 3 ]; do
    "$amd" "${run[@]}" "${ckpt[@]}" --checkpoint-dir "$ck" --resume -o "$tmp/t$i.onnx" >"$tmp/r$i.log" 2>&1
    rrc=$? tries=$((tries + 1))
  done
  from=$(sed -n 's/^resuming from .*: epoch \([0-9]*\), batch \([0-9]*\), step \([0-9]*\)$/step \3 (e\1 b\2)/p' "$tmp/r$i.log" | head -1)
  grep -q '^no checkpoint in' "$tmp/r$i.log" && from="scratch" && from_scratch=$((from_scratch + 1))
  problems=""
  [ $krc -eq 137 ] || [ $krc -eq 0 ] || problems="$problems killed run exit $krc;"
  [ $rrc -eq 0 ] || problems="$problems resume exit $rrc;"
  grep -q 'skipped' "$tmp/r$i.log" && problems="$problems $(grep -o 'skipped.*' "$tmp/r$i.log" | head -1);"
  if [ -n "$newest" ]; then
    [ "$from" = "${from#step $newest }" ] && problems="$problems resumed '$from', newest checkpoint is step $newest;"
  elif [ $krc -eq 137 ]; then
    [ "$from" = scratch ] || problems="$problems no checkpoint but resumed '$from';"
  fi
  compgen -G "$ck/.tmp-ckpt-*" >/dev/null && problems="$problems stale temp file left after the finished run;"
  if cmp -s "$tmp/ref.onnx" "$tmp/t$i.onnx"; then
    identical=$((identical + 1))
  else
    problems="$problems model differs ($(cmp "$tmp/ref.onnx" "$tmp/t$i.onnx" 2>&1 | head -1));"
  fi
  label="${delay}ms (s$target)"
  [ $targeted -eq 1 ] && label="$label+w"
  if [ -z "$problems" ]; then
    printf '%-6s %-16s %-36s %-20s %s\n' "$i" "$label" "$found" "${from:-?}" "identical"
    pass=$((pass + 1))
  else
    printf '%-6s %-16s %-36s %-20s %s\n' "$i" "$label" "$found" "${from:-?}" "FAIL:$problems"
    fail=$((fail + 1))
    tail -3 "$tmp/r$i.log"
  fi
  rm -rf "$ck" "$tmp/t$i.onnx"
done
echo "     (sN: killed once checkpoint N existed, after the extra random delay; +w: then at the first sight of a .tmp-ckpt-* file)"
echo "     $trials kill -9 trials: $in_write killed during a checkpoint write (temp file found), $from_scratch resumed from scratch, $identical identical to the uninterrupted run"
[ $in_write -ge 2 ] && ok "at least 2 kills landed inside a checkpoint write ($in_write)" || bad "only $in_write kills landed inside a checkpoint write"
finish
