#!/usr/bin/env python3
"""The k_col2im launches of two Nsight Compute CSVs over the same launch window (otraffic.sh's on main,
col2im.sh's on the new build), per template form and grid: launches and total time.

    python3 compare_col2im.py MAIN.csv[.xz] NEW.csv[.xz]"""
import collections
import csv
import lzma
import sys


def col2im(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        lines = [l for l in f if l.startswith('"')]
    per = collections.defaultdict(lambda: [0, 0.0])
    for r in csv.DictReader(lines):
        if "k_col2im" not in r["Kernel Name"] or r["Metric Name"] != "gpu__time_duration.sum":
            continue
        us = float(r["Metric Value"].replace(",", ""))
        us = us / 1000 if r["Metric Unit"].startswith("n") else us * 1000 if r["Metric Unit"].startswith("m") else us
        form = r["Kernel Name"].split("(")[0].replace("void ", "")
        per[(form, r["Grid Size"])][0] += 1
        per[(form, r["Grid Size"])][1] += us
    return per


main, new = col2im(sys.argv[1]), col2im(sys.argv[2])
print("%-28s %-14s %14s %14s" % ("form", "grid", "main (n, us)", "new (n, us)"))
for key in sorted(set(main) | set(new), key=lambda k: (-(main.get(k, [0, 0])[1] + new.get(k, [0, 0])[1]))):
    a, b = main.get(key, [0, 0.0]), new.get(key, [0, 0.0])
    print("%-28s %-14s %3d %10.1f %3d %10.1f" % (key[0], key[1], a[0], a[1], b[0], b[1]))
print("all: main %.1f us, new %.1f us" % (sum(v[1] for v in main.values()), sum(v[1] for v in new.values())))
