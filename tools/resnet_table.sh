#!/usr/bin/env bash
# The ResNet rows of the accuracy table: ResNet-18, -34 and -50 in their CIFAR
# forms (tools/export_models.py: 3x3 stem, no max-pool) on CIFAR-10, trained
# from the same initial weights (OUT_DIR/<model>_train.onnx, exported here
# once) with one recipe in every column, by PyTorch in FP32 with TF32 off
# (tools/train_torch_cifar.py: the same pixels, order, augmentation draws,
# loss, SGD and schedule) and by `amdnn-onnx train` in each mode given; then a
# markdown table of the test top-1 (final epoch, best epoch's in parentheses)
# and each run's time per epoch.
#
#   tools/resnet_table.sh CIFAR10_DIR OUT_DIR [WHAT ...]
#   WALLTIME=9m RANKS=2 tools/resnet_table.sh /data/cifar10 OUT resnet50 am32   # one 10-minute call
#   SEED="2 3" tools/resnet_table.sh /data/cifar10 OUT resnet18 acc32 am16       # seeds 2 and 3
#
# WHAT: models (resnet18 resnet34 resnet50; default all three; resnet8 for
# tests) and columns: torch and amdnn-onnx modes. With no column named: torch
# acc32 acc16 am32 am16 fp16; naming any runs only those. Results:
# OUT_DIR/<model>_<torch|mode>_s<seed>.tsv, .log and the trained .onnx; the
# checkpoints in OUT_DIR/ckpt/<model>_<what>_s<seed>_e<E>_l<LIMIT>_g<global
# batch>r<ranks>/. A run whose TSV has all its epochs is skipped; a run cut
# off (WALLTIME, a killed call) continues from its last checkpoint. A run
# whose loss became NaN is marked (<tag>.diverged) and not retried. Exit
# status 3 when WALLTIME stopped a run (run the same command again), 0 when
# every run asked for is done.
# The checkpoints live on the machine that trains (ResNet-18: 90 MB each,
# ResNet-50: 190 MB; two kept per run): a run continues only on that
# machine, so a run must end within one lease of a machine (see the
# estimate below), and what a later lease needs from this one is the TSVs.
#
# The recipe (both sides; tools/train_torch_cifar.py mirrors every option):
#   --optimizer sgd --momentum 0.9 --nesterov --wd 5e-4 --lr 0.1 x B/128
#   --schedule onecycle --label-smoothing 0.1 --augment crop:4,flip --seed S
#   --epochs 30, global batch B = 256 (BATCH per rank x RANKS).
# Why: the standard CIFAR ResNet recipe (SGD, Nesterov momentum 0.9, weight
# decay 5e-4, lr 0.1 per 128 samples, random crop and flip) compressed into
# few epochs by the one-cycle schedule, which rises from lr/25 over the first
# 30% of the steps and anneals to lr/25/1e4 (what makes short runs work;
# cosine with --warmup is the alternative amdnn-onnx has); label smoothing 0.1
# adds a few tenths of a point for free. In this repository the same recipe
# without smoothing gave ResNet-18 92.36% (acc32) in 15 epochs at batch 128
# (docs/results.md); twice the epochs and smoothing should give PyTorch FP32
# about 94%, above the 93.5% wanted, with margin. Batch 256 (lr 0.2) is one
# batch on one GPU or 2 x 128 on two (the batch per GPU of the scaling
# figures in docs/distributed.md). Every option
# is amdnn-onnx's own: src/train/optim.c (SGD with Nesterov, coupled weight
# decay on every parameter, BN and biases included: amdnn-onnx has no way to
# exempt them; amd_schedule_lr for onecycle and the warm-up), src/core/
# xent_row.h (label smoothing), src/data/dataset.c (crop:4,flip).
# RANKS=2 runs amdnn-onnx as `mpirun -np 2` where the machine has two GPUs
# (docs/distributed.md: BATCH is per rank, BatchNorm statistics per rank,
# running statistics averaged), else as one process with `--accumulate 2`,
# which computes the two ranks' shares in turn and trains the same model
# byte for byte (tests/dist/test_dist.sh, tests/gpu/dist_gpu.sh); PROCS=1 or
# PROCS=2 chooses. A run stopped in one form continues in the other. PyTorch
# has no DDP here, so the torch column runs on one GPU with --ranks 2, which
# reproduces exactly that: the global batch cut into the two ranks' shares,
# each normalised with its own BatchNorm statistics, each rank's augmentation
# stream. RANKS=1 normalises over the whole batch of 256: another recipe,
# so all the runs of one model must use one RANKS (OUT_DIR/<model>.recipe
# records it; a run of another recipe is refused).
#
# Device time (estimate). Training images/s on one H200 at batch 128, from
# docs/distributed.md and docs/gpu.md (ResNet-18: acc32 7,926, am16 3,068,
# PyTorch 7,529, am32 0.26x PyTorch; acc16 0.445x and fp16 0.38x of acc32 from
# the H100 runs; ResNet-50 acc32 3,110, the modes in ResNet-18's ratios;
# ResNet-34: no figure, ResNet-18's divided by its 2.1x multiply-adds), each
# epoch 50,000 images plus the test pass (+7%), 30 epochs:
#
#   minutes of one run    torch  acc32  acc16   am32   am16   fp16   row, 1 GPU / 2 GPUs
#   ResNet-18, 1 GPU        3.6    3.4    7.6   13.4    8.7    8.9   70 min (seeds 2, 3 of acc32, am16 included)
#   ResNet-18, 2 GPUs       3.6    1.9    4.0    7.0    4.6    4.7   39 min (the torch column on one GPU)
#   ResNet-34, 1 GPU        7.2    7.0   15.7   27.9   18.2   18.6   95 min
#   ResNet-34, 2 GPUs       7.2    3.9    8.3   14.7    9.6    9.8   53 min
#   ResNet-50, 1 GPU        9.2    8.6   19.4   33.9   22.3   22.7  116 min
#   ResNet-50, 2 GPUs       9.2    4.8   10.2   17.8   11.7   11.9   66 min
#
# Measured on one H200 (2026-11-29, the TSVs' training time, test passes
# not counted): ResNet-18 torch 3.5, acc32 3.3, acc16 6.8, am16 8.1, fp16
# 8.2 minutes; with the test passes and the start each run took 0.5-1 minute
# more. On two H200s: ResNet-18 am32 6.5 minutes (7.1 with the test passes);
# one whole epoch (docs/results.md, time per epoch) ResNet-34 acc32 7.5 s,
# am16 17.0, am32 26.8; ResNet-50 acc32 9.6, am16 20.9, am32 32.0: 30 epochs
# of each at or up to 11% under the 2-GPU estimate above (which adds 7% for
# the test passes). ResNet-50's row (2026-11-30, training time): torch 10.0
# and acc32 8.4 minutes each on one GPU of two (acc32 with --accumulate 2),
# acc16 8.5, fp16 9.4, am16 9.9 and am32 13.7 on two under mpirun; a
# 10-minute call trained about 28 epochs of acc16 and 18 of am32.
#
# The whole table: about 4.7 h of training on one GPU, 2.6 h on two. Each
# 10-minute call adds ~30 s (CUDA, the data, the resume), each lease 3-5 min
# (the machine's start, CIFAR-10's 163 MB carried in three parts under the
# 64 MiB a call, the build), and no run can span two leases: about 6 h of
# device time (13-14 leases of 30 minutes) on one GPU, 3.3 h (8 leases) on
# two. On one GPU, ResNet-50 am32 (34 min) and ResNet-34 am32 (28 min) do
# not fit in a lease: they need two GPUs (or fewer EPOCHS for those rows);
# ResNet-50 am16 and fp16 (22-23 min) fit alone in a fresh lease.
#
# Environment: EPOCHS (30), RANKS (1 or 2, default 1), PROCS (processes for
# RANKS=2: 2 under mpirun, 1 with --accumulate 2; default 2 where 2 GPUs are
# visible or DEVICE=cpu, else 1), BATCH (per rank,
# default 256 / RANKS), LR (0.1 x RANKS x BATCH / 128), WD (5e-4), SEED (1, or a
# list such as "1 2 3": each model's runs seed by seed),
# LIMIT (none: --limit N, quick checks), DEVICE (cuda; cpu for tests),
# WALLTIME (none: this command's time budget, e.g. 9m: each run gets
# --walltime for what is left and stops with a checkpoint in time; no run
# starts with less than a minute left), AMDNN (the amdnn-onnx binary, default
# build/src/amdnn-onnx), MPIRUN (default mpirun; --allow-run-as-root added as
# root), PYTHON (default: the interpreter with torch and onnx that
# tools/torch_python.sh finds).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
data=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
amdnn=${AMDNN:-build/src/amdnn-onnx}
ranks=${RANKS:-1}
case $ranks in 1 | 2) ;; *) echo "resnet_table.sh: RANKS is 1 or 2" >&2; exit 2 ;; esac
batch=${BATCH:-$((256 / ranks))}
gbatch=$((batch * ranks))
epochs=${EPOCHS:-30} wd=${WD:-5e-4} seeds=${SEED:-1} device=${DEVICE:-cuda}
for seed in $seeds; do
  case $seed in '' | *[!0-9]*) echo "resnet_table.sh: SEED '$seeds' is not a list of whole numbers" >&2; exit 2 ;; esac
done
lr=${LR:-$(awk -v g="$gbatch" 'BEGIN { printf "%g", 0.1 * g / 128 }')}
limit=()
[ -z "${LIMIT:-}" ] || limit=(--limit "$LIMIT")
# both sides: amdnn-onnx's options, which train_torch_cifar.py takes as they are
recipe=(--epochs "$epochs" --batch "$batch" --optimizer sgd --lr "$lr" --momentum 0.9 --nesterov --wd "$wd"
  --schedule onecycle --label-smoothing 0.1 --augment "crop:4,flip" "${limit[@]}") # and --seed, per run
describe="$epochs epochs, batch $gbatch ($ranks x $batch), SGD lr $lr Nesterov momentum 0.9 wd $wd, onecycle,"
describe="$describe label smoothing 0.1, crop:4,flip${LIMIT:+, limit $LIMIT}"

models='' cols=''
for w in "$@"; do
  case $w in
  resnet8 | resnet18 | resnet34 | resnet50) models="$models $w" ;;
  torch | acc32 | acc16 | am32 | am16 | fp16 | mit16 | mit14 | mit32 | mbm14 | mbm12 | lut:* | q8u:* | q8s:*)
    cols="$cols $w" ;;
  *)
    echo "resnet_table.sh: unknown WHAT '$w' (models: resnet18 resnet34 resnet50 resnet8; columns: torch, modes)" >&2
    exit 2 ;;
  esac
done
models=${models:-resnet18 resnet34 resnet50}
cols=${cols:-torch acc32 acc16 am32 am16 fp16}
[ -d "$data" ] || { echo "resnet_table.sh: no CIFAR-10 folder $data" >&2; exit 2; }
mkdir -p "$out/ckpt"

# WALLTIME: seconds (47h30m, 90m, 540s, 540)
secs() {
  echo "$1" | awk '{ s = $0; t = 0
    while (match(s, /^[0-9.]+[hms]?/)) {
      v = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1); u = substr(v, length(v))
      t += (u == "h" ? 3600 : u == "m" ? 60 : 1) * (v + 0) }
    if (s != "" || t <= 0) exit 1
    printf "%d", t }'
}
deadline=
if [ -n "${WALLTIME:-}" ]; then
  w=$(secs "$WALLTIME") || { echo "resnet_table.sh: WALLTIME '$WALLTIME' is no duration such as 9m or 540s" >&2; exit 2; }
  deadline=$(($(date +%s) + w))
fi
py=
need_python() { [ -n "$py" ] || py=${PYTHON:-$("$here/torch_python.sh" torch onnx)}; }
# the ranks as processes (one GPU each) or in turn in one process: the same model
procs=${PROCS:-}
if [ -z "$procs" ]; then
  procs=$ranks
  if [ "$ranks" -gt 1 ] && [ "$device" != cpu ]; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    [ "${gpus:-0}" -ge "$ranks" ] || procs=1
  fi
fi
[ "$procs" = 1 ] || [ "$procs" = "$ranks" ] || { echo "resnet_table.sh: PROCS is 1 or RANKS ($ranks)" >&2; exit 2; }
accumulate=()
[ "$procs" = "$ranks" ] || accumulate=(--accumulate "$ranks")
[ "$procs" = "$ranks" ] || describe="$describe, the $ranks ranks' shares in turn in one process (--accumulate $ranks)"
mpi=()
if [ "$procs" -gt 1 ]; then
  mpi=("${MPIRUN:-mpirun}" -np "$procs")
  [ "$(id -u)" != 0 ] || mpi+=(--allow-run-as-root)
fi

# 0 when TSV has its last epoch
done_tsv() { [ -f "$1" ] && [ "$(tail -n 1 "$1" | cut -f1)" = "$epochs" ]; }

stopped=0
for m in $models; do
  onnx=$out/${m}_train.onnx
  # one recipe per model row (the seed aside)
  want="epochs=$epochs batch=$gbatch ranks=$ranks lr=$lr wd=$wd limit=${LIMIT:-all}"
  want="$want momentum=0.9 nesterov onecycle smoothing=0.1 crop:4,flip"
  if [ -f "$out/$m.recipe" ] && [ "$(cat "$out/$m.recipe")" != "$want" ]; then
    echo "resnet_table.sh: $out holds $m runs of another recipe:" >&2
    echo "  there: $(cat "$out/$m.recipe")" >&2
    echo "  now:   $want" >&2
    echo "  (use the same EPOCHS, RANKS, BATCH, LR, WD, LIMIT, or another OUT_DIR)" >&2
    exit 2
  fi
  for seed in $seeds; do
  for w in $cols; do
    tag=${m}_${w}_s$seed
    tsv=$out/$tag.tsv log=$out/$tag.log
    if done_tsv "$tsv"; then
      echo "== $m $w seed $seed: done ($tsv has $epochs epochs)"
      continue
    fi
    if [ -f "$out/$tag.diverged" ]; then
      echo "== $m $w seed $seed: diverged before ($out/$tag.diverged); not retried"
      continue
    fi
    wt=()
    if [ -n "$deadline" ]; then
      left=$((deadline - $(date +%s) - 30)) # start-up, the last checkpoint and the exit
      if [ "$left" -lt 60 ]; then
        echo "== $m $w seed $seed: not started, WALLTIME spent"
        stopped=1
        break 3
      fi
      wt=(--walltime "${left}s")
    fi
    if [ ! -f "$onnx" ]; then # export once, atomically (the exporter of train_torch_cifar.py's build)
      echo "== $m: exporting $onnx"
      rm -rf "$out/.export_$m"
      need_python
      "$py" "$here/export_models.py" --out "$out/.export_$m" --models "$m" >"$out/$m.export.log" 2>&1 ||
        { cat "$out/$m.export.log" >&2; exit 1; }
      mv "$out/.export_$m/${m}_train.onnx" "$onnx"
      rm -rf "$out/.export_$m"
    fi
    [ -f "$out/$m.recipe" ] || echo "$want" >"$out/$m.recipe"
    ck=$out/ckpt/${tag}_e${epochs}_l${LIMIT:-all}_g${gbatch}r$ranks
    echo "== $m $w seed $seed: $describe${wt:+, walltime ${wt[1]}}" | tee -a "$log"
    n0=$(wc -l <"$log")
    [ "$w" != torch ] || need_python
    set +e
    if [ "$w" = torch ]; then
      "$py" "$here/train_torch_cifar.py" --model "$m" --init "$onnx" --data "$data" --ranks "$ranks" \
        "${recipe[@]}" --seed "$seed" --device "$device" --metrics "$tsv" -o "$out/$tag.onnx" --checkpoint-dir "$ck" --resume \
        "${wt[@]}" 2>&1 | tee -a "$log"
    else
      "${mpi[@]}" "$amdnn" train "$onnx" --data "cifar10:$data" "${recipe[@]}" --seed "$seed" "${accumulate[@]}" --mode "$w" --device "$device" \
        -o "$out/$tag.onnx" --metrics "$tsv" --checkpoint-dir "$ck" --resume "${wt[@]}" 2>&1 |
        { grep -v '^  epoch [0-9]* batch ' || true; } | tee -a "$log"
    fi
    rc=${PIPESTATUS[0]}
    set -e
    # (mpirun passes a rank's exit status on; the log says what happened either way)
    if [ "$rc" != 0 ] && tail -n +$((n0 + 1)) "$log" | grep -q 'stopped by'; then rc=3; fi
    if [ "$rc" != 0 ] && tail -n +$((n0 + 1)) "$log" | grep -q 'became NaN\|became Inf\|NaN or Inf'; then rc=4; fi
    case $rc in
    0) ;;
    3) echo "== $m $w seed $seed: stopped by WALLTIME; the same command continues it"; stopped=1; break 3 ;;
    4) echo "== $m $w seed $seed: the loss became NaN or Inf" | tee "$out/$tag.diverged" ;;
    *) echo "resnet_table.sh: $m $w seed $seed failed (exit $rc); see $log" >&2; exit 1 ;;
    esac
  done
  done
done

# the table: final test top-1 % (best epoch's); [k/E] marks a run not finished
cell() {
  local tsv=$1 tag=$2
  [ -f "$tsv" ] || { printf ' - |'; return; }
  awk -F'\t' -v e="$epochs" -v nan="$([ -f "$out/$tag.diverged" ] && echo 1 || echo 0)" '
    NR > 1 { n++; last = $6; if ($6 > best) best = $6 }
    END { if (!n) printf " - |"
          else printf " %.2f (%.2f)%s%s |", 100 * last, 100 * best, n < e ? " [" n "/" e "]" : "", nan ? " NaN" : "" }' "$tsv"
}
echo
echo "Test top-1 % on CIFAR-10, final epoch (best epoch); [k/E]: k of E epochs so far"
printf '| model | seed |'
for w in $cols; do printf ' %s |' "$w"; done
printf '\n|---|---|'
for w in $cols; do printf -- '---|'; done
echo
for m in $models; do
  shown=$( (for s in $seeds; do echo "$s"; done
    for f in "$out/$m"_*_s*.tsv; do echo "${f##*/}"; done | sed -n "s/^${m}_.*_s\([0-9][0-9]*\)\.tsv\$/\1/p") | sort -nu)
  for s in $shown; do
    printf '| %s | %s |' "$m" "$s"
    for w in $cols; do cell "$out/${m}_${w}_s$s.tsv" "${m}_${w}_s$s"; done
    echo
  done
  if [ "$(echo "$shown" | wc -w)" -gt 1 ]; then # the mean over the finished seeds
    printf '| %s | mean |' "$m"
    for w in $cols; do
      for s in $shown; do
        f=$out/${m}_${w}_s$s.tsv
        if done_tsv "$f"; then tail -n 1 "$f" | cut -f6; fi
      done | awk '{ n++; s += $1; q += $1 * $1 }
        END { if (n < 2) printf " - |"
              else { m = s / n; v = (q - n * m * m) / (n - 1); printf " %.2f +- %.2f (%d) |", 100 * m, 100 * sqrt(v > 0 ? v : 0), n } }'
    done
    echo
  fi
done
[ -z "$(ls "$out"/*.recipe 2>/dev/null)" ] || for f in "$out"/*.recipe; do echo "$(basename "$f" .recipe): $(cat "$f")"; done

# time per epoch: the training steps of the TSV's hours column (the test pass excluded)
echo
for m in $models; do
  for f in "$out/$m"_*_s*.tsv; do
    [ -f "$f" ] || continue
    awk -F'\t' -v run="$(basename "$f" .tsv)" -v e="$epochs" 'NR > 1 { n++; h = $2; ips = $8 }
      END { if (n) printf "%s: %.1f s per epoch of training (%d of %d epochs, %.1f min; last epoch %.0f images/s; all %d: %.0f min)\n",
                          run, 3600 * h / n, n, e, 60 * h, ips, e, 60 * h / n * e }' "$f"
  done
done
[ "$stopped" = 0 ] || exit 3
