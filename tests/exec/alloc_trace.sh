#!/bin/sh
# The allocation trace (AMD_ALLOC_TRACE, src/core/alloc_trace.h) and its
# replay (tools/alloc_replay.py):
#  - a trace made by hand replays to the peaks worked out below, through the
#    CUDA backend's block cache, one arena and the workspaces;
#  - two training steps of ResNet-8 on the CPU write a trace (%p: the process
#    id) in which every allocation is freed once, and whose replay puts every
#    policy at or above the live peak;
#  - a trace file that cannot be written is a warning, and the command works.
# usage: alloc_trace.sh AMDNN_ONNX SOURCE_ROOT
set -eu
amd=$1 root=$2
replay="python3 $root/tools/alloc_replay.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1 MiB A and 2 MiB B; A freed; 1.5 MiB C: the cache's free 1 MiB block is too
# small, so a third block (4.5 MiB held); the arena's free range [0, 1 MiB) is
# too, so C goes at its end (4.5 MiB). B and C freed; 3 MiB D: no free block
# of the cache fits (7.5 MiB held), the arena is empty again (D at 0). Live:
# 3.5 MiB at most (B + C, from line 6). The workspace's 5,000,000 bytes round to 5 MiB.
# The host line and the free of an unknown id are not device memory.
cat >"$tmp/hand.trace" <<'EOF'
a device 1048576 0xa
a device 2097152 0xb
a host 4096 0x1
f 0xa
f 0x77
a device 1572864 0xc
w 0 3000000
f 0xb
f 0xc
a device 3145728 0xd
w 0 5000000
f 0xd
f 0x1
EOF
$replay "$tmp/hand.trace" >"$tmp/hand.out" || fail "replay of the hand-made trace"
cat "$tmp/hand.out"
grep -q '^trace .*: 4 device allocations, 4 frees$' "$tmp/hand.out" || fail "the device events"
grep -q '^live peak: 3.5 MiB (trace line 6; 2 allocations live, the largest 2.0, 1.5 MiB)$' "$tmp/hand.out" ||
  fail "the live peak"
grep -q '^block cache: 7.5 MiB in 4 blocks (2.14x the live peak)$' "$tmp/hand.out" || fail "the block cache"
grep -q '^one arena: 4.5 MiB (1.29x the live peak)$' "$tmp/hand.out" || fail "the arena"
grep -q '^workspaces: 5.0 MiB (slot 0 5.0); block cache + workspaces: 12.5 MiB$' "$tmp/hand.out" ||
  fail "the workspaces"
$replay "$tmp/hand.trace" --memory host | grep -q '^live peak: 0.0 MiB' || fail "the host lines"
echo 'x 1 2' >"$tmp/bad.trace"
if $replay "$tmp/bad.trace" 2>"$tmp/bad.err"; then fail "a bad line was accepted"; fi
grep -q 'bad.trace:1: not a trace line' "$tmp/bad.err" || fail "the bad line's message: $(cat "$tmp/bad.err")"

# a real trace: ResNet-8, two training steps on the CPU
AMD_ALLOC_TRACE="$tmp/r8.%p" "$amd" bench "$root/models/resnet8_train.onnx" --batch 4 --steps 2 --device cpu \
  >"$tmp/bench.log" 2>&1 || { cat "$tmp/bench.log"; fail "bench with a trace"; }
set -- "$tmp"/r8.*
[ $# = 1 ] && [ -s "$1" ] || fail "no trace file r8.<pid> ($*)"
case ${1##*/r8.} in '' | *[!0-9]*) fail "%p did not become the process id: $1" ;; esac
awk '$1 == "a" { n[$4]++; a++ } $1 == "f" { n[$2]--; f++ }
  END { for (k in n) if (n[k] != 0) { print "unbalanced id " k; exit 1 }
        if (a < 100 || a != f) { print a " allocations, " f " frees"; exit 1 } }' "$1" || fail "the trace's pairs"
$replay "$1" >"$tmp/r8.out" || fail "replay of the ResNet-8 trace"
cat "$tmp/r8.out"
awk '/^live peak:/ { live = $3 } /^block cache:/ { cache = $3 } /^one arena:/ { arena = $3 }
  END { if (!(live > 0.5 && cache >= live && arena >= live)) { print "live " live ", cache " cache ", arena " arena; exit 1 } }' \
  "$tmp/r8.out" || fail "the ResNet-8 peaks"

# a trace that cannot be written: a warning, and the command works
AMD_ALLOC_TRACE="$tmp/no/such/dir/t" "$amd" bench "$root/models/resnet8_train.onnx" --batch 2 --steps 1 \
  --device cpu >"$tmp/nodir.log" 2>&1 || { cat "$tmp/nodir.log"; fail "bench with an unwritable trace"; }
grep -q 'AMD_ALLOC_TRACE: cannot write .*/no/such/dir/t: No such file or directory; no allocation trace' \
  "$tmp/nodir.log" || fail "the warning: $(head -3 "$tmp/nodir.log")"
echo "alloc_trace: OK"
