#!/usr/bin/python3
r"""Tables from an Nsight Compute CSV export.

    ncu --metrics gpu__time_duration.sum --csv --launch-skip S --launch-count N CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv [STEPS]

Prints each kernel's launches, total time and share, largest first; with
STEPS (the training steps the launches cover) also the time per step. With
dram__bytes_read.sum and dram__bytes_write.sum among the metrics, also the
bytes each kernel read from and wrote to the GPU's memory and the rate (the
writes that were still in L2 when a kernel ended are not counted, so the
rate is a lower bound).

    python3 tools/ncu_kernel_table.py --compare OLD.csv NEW.csv [STEP_END]

With --compare: two windows of a training run (say main's build and a
branch's, the same command under the same --launch-skip and --launch-count),
each counted over its whole steps only, the launches after the first launch
of STEP_END (default k_optim, a step's last kernel) up to its last: per
kernel, the time a step in each and the change, and the GB a step moved
where the CSVs have the bytes; then the launches a step. A window's steps
need not line up with the other's, nor be whole at its ends.

    ncu --csv --metrics gpu__time_duration.sum,smsp__inst_executed.sum,\
smsp__issue_active.avg.pct_of_peak_sustained_active --launch-count N CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv --issue MACS

With --issue: one line per kernel and grid, in the order of their first
launch (every launch doing MACS multiply-adds, as every GEMM of
bench-cuda-gemm does): the launches, their mean time, the thread
instructions issued per multiply-add (32 per warp instruction) and the share
of cycles in which a scheduler issued one. A kernel that issues I
instructions per multiply-add runs at most schedulers x 32 lanes x clock / I
multiply-adds per second (4 x 132 x 32 x 1.98 GHz / I on an H100 SXM).

    ncu --csv --metrics gpu__time_duration.sum,smsp__inst_executed.sum,\
smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,\
regex:smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio,\
regex:sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv --stalls MACS

With --stalls (tools/gemm_stalls.sh): the --issue line, then why the
schedulers did not issue on the other cycles: the warps stalled for each
reason per cycle that issued (Nsight Compute's "per issue active"; the
largest first, those under 0.05 left out; "selected" is the one that issued),
each pipe's share of its peak instruction rate (5% and more) and, with
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum and
smsp__inst_executed_op_shared_ld.sum, the shared-memory bank conflicts per
load instruction (0 without any), and with sm__cycles_elapsed.avg.per_second
the SM clock the kernel ran at (an H200 holds 1.98 GHz on SIMT kernels but
drops to about 1.78 GHz while a kernel issues tensor-core instructions, even
a few: the issue share alone does not give the time).
"""
import csv
import lzma
import re
import sys


def rows(path):
    """The CSV's rows; PATH may be xz-compressed (.xz), as the exports in results/ are."""
    with (lzma.open if path.endswith(".xz") else open)(path, "rt", newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not quoted
    return list(csv.DictReader(lines))


def number(row):
    return float(row["Metric Value"].replace(",", ""))


def microseconds(row):
    v, unit = number(row), row.get("Metric Unit", "nsecond")
    return v / 1000.0 if unit.startswith("n") else v * 1000.0 if unit.startswith("m") else v


def kernel_name(kernel):
    """A kernel's name without its namespace (the mode kernels sit in an anonymous one)."""
    return kernel.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")


def byte_count(row):
    scale = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
    return number(row) * scale.get(row.get("Metric Unit", "byte"), 1.0)


def short_name(kernel):
    return kernel_name(kernel).split("(")[0].split("<")[0][:60]


def launch_list(path):
    """Each launch in ID order: {"name", "us" (None without a time row), "read", "wrote" (bytes; None without
    the dram metrics)}."""
    launches = {}
    for row in rows(path):
        k = launches.setdefault(int(row["ID"]), {"name": short_name(row["Kernel Name"]), "us": None,
                                                 "read": None, "wrote": None})
        metric = row.get("Metric Name")
        if metric == "gpu__time_duration.sum":
            k["us"] = microseconds(row)
        elif metric in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
            side = "wrote" if metric == "dram__bytes_write.sum" else "read"
            k[side] = (k[side] or 0.0) + byte_count(row)
    return [launches[i] for i in sorted(launches)]


def time_table(path, steps):
    total, per, moved = 0.0, {}, {}  # per: name -> [launches, us]; moved: name -> [bytes read, bytes written]
    for k in launch_list(path):
        name = k["name"]
        if k["read"] is not None or k["wrote"] is not None:
            m = moved.setdefault(name, [0.0, 0.0])
            m[0] += k["read"] or 0.0
            m[1] += k["wrote"] or 0.0
        if k["us"] is None:
            continue
        n, t = per.get(name, (0, 0.0))
        per[name] = (n + 1, t + k["us"])
        total += k["us"]
    head = "%-60s %8s %12s %7s %12s" % ("kernel", "launches", "total us", "share", "us/step" if steps else "")
    print(head + ("  %8s %8s %6s" % ("GB read", "GB wrote", "TB/s") if moved else ""))
    for name, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        line = "%-60s %8d %12.1f %6.1f%% %12s" % (name, n, t, 100 * t / total if total else 0,
                                                  "%.1f" % (t / steps) if steps else "")
        if moved:
            r, w = moved.get(name, (0.0, 0.0))
            line += "  %8.3f %8.3f %6.2f" % (r / 1e9, w / 1e9, (r + w) / t / 1e6 if t else 0)
        print(line)
    print("%-60s %8d %12.1f" % ("all", sum(n for n, _ in per.values()), total))


def per_step(path, step_end):
    """(steps, launches a step, {kernel: [us, bytes] a step}) over the whole steps of a window."""
    order = launch_list(path)
    ends = [i for i, k in enumerate(order) if k["name"] == step_end]
    if len(ends) < 2:
        sys.exit("%s: fewer than two launches of %s, so no whole step" % (path, step_end))
    steps = len(ends) - 1
    per = {}
    for k in order[ends[0] + 1:ends[-1] + 1]:
        t = per.setdefault(k["name"], [0.0, 0.0])
        t[0] += (k["us"] or 0.0) / steps
        t[1] += ((k["read"] or 0.0) + (k["wrote"] or 0.0)) / steps
    return steps, (ends[-1] - ends[0]) / steps, per


def compare_table(old_path, new_path, step_end):
    (so, lo, old), (sn, ln, new) = per_step(old_path, step_end), per_step(new_path, step_end)
    has_bytes = any(v[1] for v in old.values()) or any(v[1] for v in new.values())
    print("whole steps: old %d, new %d; launches a step: old %.1f, new %.1f" % (so, sn, lo, ln))
    print("%-60s %10s %10s %10s" % ("kernel, a step", "old us", "new us", "change") +
          ("  %8s %8s" % ("old GB", "new GB") if has_bytes else ""))
    zero = [0.0, 0.0]
    for name in sorted(set(old) | set(new), key=lambda n: -(old.get(n, zero)[0] + new.get(n, zero)[0])):
        o, n = old.get(name, zero), new.get(name, zero)
        print("%-60s %10.1f %10.1f %+10.1f" % (name, o[0], n[0], n[0] - o[0]) +
              ("  %8.3f %8.3f" % (o[1] / 1e9, n[1] / 1e9) if has_bytes else ""))
    to, tn = sum(v[0] for v in old.values()), sum(v[0] for v in new.values())
    print("%-60s %10.1f %10.1f %+10.1f" % ("all", to, tn, tn - to))


def launch_groups(path):
    """{(kernel, grid): [each launch's {metric: row}]}, in the order of the first launch."""
    launches = {}  # ID -> (kernel, grid, {metric: row})
    for row in rows(path):
        k = launches.setdefault(row["ID"], (row["Kernel Name"], row["Grid Size"], {}))
        k[2][row["Metric Name"]] = row
    groups = {}
    for _, (kernel, grid, m) in sorted(launches.items(), key=lambda kv: int(kv[0])):
        groups.setdefault((kernel, grid), []).append(m)
    return groups


def mean_of(ms, metric):
    vals = [number(m[metric]) for m in ms if metric in m]
    return sum(vals) / len(vals) if vals else float("nan")


STALL = re.compile(r"^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio$")
PIPE = re.compile(r"^sm__inst_executed_pipe_([a-z0-9_]+)\.avg\.pct_of_peak_sustained_active$")


def issue_table(path, macs, stalls=False):
    groups = launch_groups(path)
    print("%-48s %-14s %8s %10s %10s %8s" % ("kernel", "grid", "launches", "mean us", "instr/MAC", "issue %"))
    for (kernel, grid), ms in groups.items():
        us = sum(microseconds(m["gpu__time_duration.sum"]) for m in ms) / len(ms)
        name = kernel_name(kernel).split("(")[0][:48]
        print("%-48s %-14s %8d %10.1f %10.3f %8.1f" % (name, grid, len(ms), us,
                                                      32 * mean_of(ms, "smsp__inst_executed.sum") / macs,
                                                      mean_of(ms, "smsp__issue_active.avg.pct_of_peak_sustained_active")))
        if not stalls:
            continue
        names = sorted({k for m in ms for k in m})
        reasons = [(STALL.match(k).group(1), mean_of(ms, k)) for k in names if STALL.match(k)]
        pipes = [(PIPE.match(k).group(1), mean_of(ms, k)) for k in names if PIPE.match(k)]
        occ = mean_of(ms, "sm__warps_active.avg.pct_of_peak_sustained_active")
        conflicts = mean_of(ms, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
        lds = mean_of(ms, "smsp__inst_executed_op_shared_ld.sum")
        clock = mean_of(ms, "sm__cycles_elapsed.avg.per_second")
        print("    stalled warps per issue: " + ", ".join(
            "%s %.2f" % (r, v) for r, v in sorted(reasons, key=lambda rv: -rv[1]) if v >= 0.05))
        print("    pipes, % of peak: " + ", ".join(
            "%s %.1f" % (p, v) for p, v in sorted(pipes, key=lambda pv: -pv[1]) if v >= 5.0) +
            ("; warps active %.1f%% of the SM's maximum" % occ if occ == occ else "") +
            ("; shared loads: %.2f bank conflicts each" % (conflicts / lds)
             if conflicts == conflicts and lds == lds and lds > 0 else "") +
            ("; SM clock %.3f GHz" % (clock / 1e9) if clock == clock else ""))


def main():
    args = sys.argv[1:]
    if args[:1] == ["--compare"] and len(args) in (3, 4):
        compare_table(args[1], args[2], args[3] if len(args) == 4 else "k_optim")
    elif len(args) == 3 and args[1] in ("--issue", "--stalls"):
        issue_table(args[0], float(args[2]), stalls=args[1] == "--stalls")
    elif len(args) in (1, 2) and not args[0].startswith("-"):
        time_table(args[0], float(args[1]) if len(args) > 1 else 0)
    else:
        sys.stderr.write(__doc__)
        sys.exit(0 if args[:1] in (["-h"], ["--help"]) else 2)


if __name__ == "__main__":
    main()
