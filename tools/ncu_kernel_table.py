#!/usr/bin/python3
"""Sums the kernel times of an Nsight Compute CSV export by kernel name.

    ncu --metrics gpu__time_duration.sum --csv --launch-skip S --launch-count N CMD > k.csv
    python3 tools/ncu_kernel_table.py k.csv [STEPS]

Prints each kernel's launches, total time and share, largest first; with
STEPS (the training steps the launches cover) also the time per step.
"""
import csv
import sys


def main():
    path = sys.argv[1]
    steps = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not quoted
    total, per = 0.0, {}
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0].split("<")[0][:60]
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        us = v / 1000.0 if unit.startswith("n") else v * 1000.0 if unit.startswith("m") else v
        n, t = per.get(name, (0, 0.0))
        per[name] = (n + 1, t + us)
        total += us
    print("%-60s %8s %12s %7s %12s" % ("kernel", "launches", "total us", "share", "us/step" if steps else ""))
    for name, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print("%-60s %8d %12.1f %6.1f%% %12s" % (name, n, t, 100 * t / total if total else 0,
                                                "%.1f" % (t / steps) if steps else ""))
    print("%-60s %8d %12.1f" % ("all", sum(n for n, _ in per.values()), total))


if __name__ == "__main__":
    main()
