#!/bin/sh
# Builds the libFuzzer targets with clang and runs each for SECONDS (default
# 60) on a fresh copy of its seed corpus (fuzz/corpus/<target>/).
#
#   fuzz/run.sh [SECONDS]
#
# Environment: FUZZ_TARGETS="fuzz_model fuzz_lut" runs only those;
# FUZZ_BUILD (default build-fuzz, relative to the source root) is the build
# folder; FUZZ_SRC is the source root (default: this script's parent folder);
# FUZZ_SEED=N makes the mutation sequence repeatable (a shorter run with the
# same seed tries a prefix of a longer run's inputs: CI runs a prefix of what
# was run before a submission).
# Per target it prints executions, coverage (cov = edges, ft = features), the
# corpus size before and after, and the crashes found; crashing inputs are
# kept in FUZZ_BUILD/artifacts/<target>/ (reproduce: FUZZ_BUILD/fuzz/<target>
# FILE, FUZZ_VERBOSE=1 prints each reader's status). Exits 1 if any target
# crashed, leaked, timed out or ran out of memory.
set -u
secs=${1:-60}
src=${FUZZ_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FUZZ_BUILD:-build-fuzz}
case $build in /*) ;; *) build=$src/$build ;; esac
targets=${FUZZ_TARGETS:-fuzz_model fuzz_tensor fuzz_idx fuzz_cifar fuzz_png fuzz_lut fuzz_ckpt}

if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" "$src" -Dfuzz=true -Dbuildtype=debugoptimized -Dcuda=disabled -Dmpi=disabled >"$build.setup.log" 2>&1 ||
    { cat "$build.setup.log"; exit 2; }
fi
ninja_targets=
for t in $targets; do ninja_targets="$ninja_targets fuzz/$t"; done
# shellcheck disable=SC2086
ninja -C "$build" $ninja_targets >"$build/fuzz-build.log" 2>&1 || { tail -40 "$build/fuzz-build.log"; exit 2; }

max_len() {
  case $1 in
  fuzz_model) echo 16384 ;;
  fuzz_lut) echo 16400 ;;   # a 7-bit table is exactly 16384 bytes
  fuzz_cifar) echo 8192 ;;  # two 3073-byte records (or gzip data)
  fuzz_ckpt) echo 2048 ;;
  *) echo 4096 ;;
  esac
}

failed=0
printf '%-12s %10s %8s %8s %12s %8s\n' target execs cov ft corpus crashes
for t in $targets; do
  work=$build/corpus/$t arts=$build/artifacts/$t log=$build/fuzz-$t.log tmp=$build/fuzz-tmp/$t
  rm -rf "$work" "$arts" "$tmp"
  mkdir -p "$work" "$arts" "$tmp"
  cp "$src/fuzz/corpus/$t"/* "$work"/
  before=$(ls "$work" | wc -l)
  TMPDIR=$tmp UBSAN_OPTIONS=print_stacktrace=1 "$build/fuzz/$t" "$work" -max_total_time="$secs" \
    -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$t")" -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} \
    -artifact_prefix="$arts/" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  after=$(ls "$work" | wc -l)
  crashes=$(ls "$arts" | wc -l)
  printf '%-12s %10s %8s %8s %12s %8s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$before->$after" "$crashes"
  if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    echo "  $t failed (exit $rc); log $log:"
    grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$log" | head -8 | sed 's/^/    /'
  fi
  rm -rf "$tmp"
done
exit $failed
