#!/usr/bin/python3
"""Tables from an Nsight Compute CSV export.

    ncu --metrics gpu__time_duration.sum --csv --launch-skip S --launch-count N CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv [STEPS]

Prints each kernel's launches, total time and share, largest first; with
STEPS (the training steps the launches cover) also the time per step.

    ncu --csv --metrics gpu__time_duration.sum,smsp__inst_executed.sum,\\
smsp__issue_active.avg.pct_of_peak_sustained_active --launch-count N CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv --issue MACS

With --issue: one line per kernel and grid, in the order of their first
launch (every launch doing MACS multiply-adds, as every GEMM of
bench-cuda-gemm does): the launches, their mean time, the thread
instructions issued per multiply-add (32 per warp instruction) and the share
of cycles in which a scheduler issued one. A kernel that issues I
instructions per multiply-add runs at most schedulers x 32 lanes x clock / I
multiply-adds per second (4 x 132 x 32 x 1.98 GHz / I on an H100 SXM).
"""
import csv
import sys


def rows(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not quoted
    return list(csv.DictReader(lines))


def number(row):
    return float(row["Metric Value"].replace(",", ""))


def microseconds(row):
    v, unit = number(row), row.get("Metric Unit", "nsecond")
    return v / 1000.0 if unit.startswith("n") else v * 1000.0 if unit.startswith("m") else v


def time_table(path, steps):
    total, per = 0.0, {}
    for row in rows(path):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0].split("<")[0][:60]
        us = microseconds(row)
        n, t = per.get(name, (0, 0.0))
        per[name] = (n + 1, t + us)
        total += us
    print("%-60s %8s %12s %7s %12s" % ("kernel", "launches", "total us", "share", "us/step" if steps else ""))
    for name, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print("%-60s %8d %12.1f %6.1f%% %12s" % (name, n, t, 100 * t / total if total else 0,
                                                "%.1f" % (t / steps) if steps else ""))
    print("%-60s %8d %12.1f" % ("all", sum(n for n, _ in per.values()), total))


def issue_table(path, macs):
    launches = {}  # ID -> (kernel, grid, {metric: row})
    for row in rows(path):
        k = launches.setdefault(row["ID"], (row["Kernel Name"], row["Grid Size"], {}))
        k[2][row["Metric Name"]] = row
    groups = {}  # (kernel, grid) -> launches' metrics, in the order of the first launch
    for _, (kernel, grid, m) in sorted(launches.items(), key=lambda kv: int(kv[0])):
        groups.setdefault((kernel, grid), []).append(m)
    print("%-48s %-14s %8s %10s %10s %8s" % ("kernel", "grid", "launches", "mean us", "instr/MAC", "issue %"))
    for (kernel, grid), ms in groups.items():
        def mean(metric):
            vals = [number(m[metric]) for m in ms if metric in m]
            return sum(vals) / len(vals) if vals else float("nan")
        us = sum(microseconds(m["gpu__time_duration.sum"]) for m in ms) / len(ms)
        name = kernel.replace("(anonymous namespace)::", "").replace("<unnamed>::", "").split("(")[0][:48]
        print("%-48s %-14s %8d %10.1f %10.3f %8.1f" % (name, grid, len(ms), us,
                                                      32 * mean("smsp__inst_executed.sum") / macs,
                                                      mean("smsp__issue_active.avg.pct_of_peak_sustained_active")))


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--issue":
        issue_table(args[0], float(args[2]))
    else:
        time_table(args[0], float(args[1]) if len(args) > 1 else 0)


if __name__ == "__main__":
    main()
