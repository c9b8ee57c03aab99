#!/usr/bin/env python3
"""Replays an allocation trace (AMD_ALLOC_TRACE=FILE amdnn-onnx ...; the
format is in src/core/alloc_trace.h) through allocation policies and prints
the memory each one would hold at its peak:

  live peak      the most bytes live at once: what no allocator can go under
  block cache    the CUDA backend's caching allocator (cuda/backend_cuda.cu,
                 amd_cu_malloc): a block per cudaMalloc, sizes rounded, a free
                 block reused best-fit when it wastes at most a quarter, never
                 split, never given back
  one arena      one address range that grows at its end: best fit over the
                 free ranges, a block split off the range it takes, free
                 neighbours merged (what an allocator that maps more memory
                 at the end of one reserved range could hold)
  workspaces     the CUDA backend's grow-only workspaces (their largest sizes,
                 rounded as the cache rounds), held beside the cache

usage: alloc_replay.py TRACE [--memory device|host] [--top N]
  --memory  which lines to replay (default: device when the trace has any,
            else host: a CPU run traces host memory)
  --top     how many of the largest allocations live at the peak to list (8)
"""
import argparse
import sys

MIB = 1048576.0


def round_size(b):
    """The cache's rounding (backend_cuda.cu, round_size): 512-byte steps up
    to 1 MB, then steps of 1/16 of the power of two below."""
    if b <= 1 << 20:
        return (b + 511) & ~511
    p = 1
    while p * 2 <= b:
        p *= 2
    step = p // 16
    return (b + step - 1) // step * step


def read_trace(path, memory):
    """The (kind, bytes, id) events of one memory, and the workspaces' largest
    requests per slot. A free of an id not allocated in that memory is
    dropped (host frees of device ids and the like)."""
    events, workspaces, have_device = [], {}, False
    lines = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            t = line.split()
            if not t:
                continue
            if t[0] == 'a' and len(t) == 4 and t[1] in ('host', 'device'):
                have_device |= t[1] == 'device'
                lines.append((n, 'a', t[1], int(t[2]), t[3]))
            elif t[0] == 'f' and len(t) == 2:
                lines.append((n, 'f', None, 0, t[1]))
            elif t[0] == 'w' and len(t) == 3:
                slot, b = int(t[1]), int(t[2])
                workspaces[slot] = max(workspaces.get(slot, 0), b)
            else:
                sys.exit(f"alloc_replay.py: {path}:{n}: not a trace line: {line.strip()!r}")
    if memory is None:
        memory = 'device' if have_device else 'host'
    live = set()
    for n, kind, where, b, ident in lines:
        if kind == 'a' and where == memory:
            live.add(ident)
            events.append((n, 'a', b, ident))
        elif kind == 'f' and ident in live:
            live.discard(ident)
            events.append((n, 'f', 0, ident))
    return memory, events, workspaces


def live_peak(events, top):
    live, cur, peak, at, largest = {}, 0, 0, 0, []
    for n, kind, b, ident in events:
        if kind == 'a':
            live[ident] = b
            cur += b
        else:
            cur -= live.pop(ident)
        if cur > peak:
            peak, at = cur, n
            largest = sorted(live.values(), reverse=True)
    return peak, at, len(largest), largest[:top]


def block_cache(events):
    """Peak bytes held and the blocks made by backend_cuda.cu's policy."""
    blocks, owner, held, peak = [], {}, 0, 0  # blocks: [size, used]
    for _, kind, b, ident in events:
        if kind == 'f':
            blocks[owner.pop(ident)][1] = 0
            continue
        sz = round_size(b if b else 1)
        best = -1
        for i, (size, used) in enumerate(blocks):
            if not used and size >= sz and size - sz <= sz // 4 and (best < 0 or size < blocks[best][0]):
                best = i
                if size == sz:
                    break
        if best < 0:
            blocks.append([sz, 1])
            best = len(blocks) - 1
            held += sz
            peak = max(peak, held)
        else:
            blocks[best][1] = 1
        owner[ident] = best
    return peak, len(blocks)


def one_arena(events, align=512):
    """Peak end of one range: best fit over the free ranges, else the end."""
    free, owner, end, peak = [], {}, 0, 0  # free: sorted [offset, size], merged
    for _, kind, b, ident in events:
        if kind == 'a':
            sz = (max(b, 1) + align - 1) // align * align
            best = -1
            for i, (_, size) in enumerate(free):
                if size >= sz and (best < 0 or size < free[best][1]):
                    best = i
            if best >= 0:
                off, size = free[best]
                if size == sz:
                    del free[best]
                else:
                    free[best] = [off + sz, size - sz]
            else:  # a free range at the end grows into the new block
                off = free.pop()[0] if free and free[-1][0] + free[-1][1] == end else end
                end = off + sz
                peak = max(peak, end)
            owner[ident] = (off, sz)
        else:
            off, sz = owner.pop(ident)
            free.append([off, sz])
            free.sort()
            merged = []
            for r in free:
                if merged and merged[-1][0] + merged[-1][1] == r[0]:
                    merged[-1][1] += r[1]
                else:
                    merged.append(r)
            if merged and merged[-1][0] + merged[-1][1] == end:
                end = merged.pop()[0]
            free = merged
    return peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('trace')
    ap.add_argument('--memory', choices=('device', 'host'))
    ap.add_argument('--top', type=int, default=8)
    a = ap.parse_args()
    try:
        memory, events, workspaces = read_trace(a.trace, a.memory)
    except OSError as e:
        sys.exit(f"alloc_replay.py: {e}")
    allocs = sum(1 for e in events if e[1] == 'a')
    if not allocs:
        sys.exit(f"alloc_replay.py: {a.trace}: no {memory} allocations")
    peak, at, n_live, largest = live_peak(events, a.top)
    cache, n_blocks = block_cache(events)
    arena = one_arena(events)
    ws = {s: round_size(b) for s, b in sorted(workspaces.items())}
    ws_sum = sum(ws.values())
    print(f"trace {a.trace}: {allocs} {memory} allocations, {len(events) - allocs} frees")
    print(f"live peak: {peak / MIB:.1f} MiB (trace line {at}; {n_live} allocations live, the largest "
          + ", ".join(f"{b / MIB:.1f}" for b in largest) + " MiB)")
    print(f"block cache: {cache / MIB:.1f} MiB in {n_blocks} blocks ({cache / peak:.2f}x the live peak)")
    print(f"one arena: {arena / MIB:.1f} MiB ({arena / peak:.2f}x the live peak)")
    if ws:
        print(f"workspaces: {ws_sum / MIB:.1f} MiB (" + ", ".join(f"slot {s} {b / MIB:.1f}" for s, b in ws.items())
              + f"); block cache + workspaces: {(cache + ws_sum) / MIB:.1f} MiB")
    return 0


if __name__ == '__main__':
    sys.exit(main())
