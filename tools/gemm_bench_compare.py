#!/usr/bin/env python3
"""Before against after for the mode GEMM benchmark: reads the outputs of
`bench-cuda-gemm` (its "T MAC/s" table) of two builds, one or more runs
each, and prints per mode and shape the change of the median, in percent,
then per mode the range over the shapes.

    tools/gemm_bench_compare.py --old bench_old_1.txt bench_old_2.txt --new bench_new_1.txt bench_new_2.txt

tools/gemm_ab.sh runs the benchmarks this reads (docs/gpu.md).
"""
import argparse
import statistics
import sys


def read_table(path):
    """{(shape, mode): T MAC/s} from the "T MAC/s (ratio to cuBLAS SGEMM)" table, and the mode order."""
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("T MAC/s")), None)
    if start is None or start + 1 >= len(lines):
        sys.exit(f"gemm_bench_compare.py: {path} has no 'T MAC/s' table (not a bench-cuda-gemm output?)")
    modes = lines[start + 1].split()[1:]
    table = {}
    for line in lines[start + 2:]:
        parts = line.split()
        if len(parts) < 2 + 2 * len(modes):
            break
        shape = parts[0] + " " + parts[1]
        for mode, value in zip(modes, parts[2::2]):
            table[(shape, mode)] = float(value)
    if not table:
        sys.exit(f"gemm_bench_compare.py: {path}: the 'T MAC/s' table has no rows")
    return table, modes


def medians(paths):
    tables = [read_table(p) for p in paths]
    modes = tables[0][1]
    keys = tables[0][0].keys()
    for (t, _), p in zip(tables, paths):
        if t.keys() != keys:
            sys.exit(f"gemm_bench_compare.py: {p} has other shapes or modes than {paths[0]}")
    return {k: statistics.median(t[k] for t, _ in tables) for k in keys}, modes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", nargs="+", required=True, help="bench-cuda-gemm outputs of the build before")
    ap.add_argument("--new", nargs="+", required=True, help="bench-cuda-gemm outputs of the build after")
    a = ap.parse_args()
    old, modes = medians(a.old)
    new, _ = medians(a.new)
    if old.keys() != new.keys():
        sys.exit("gemm_bench_compare.py: the two builds' tables have other shapes or modes")
    shapes = list(dict.fromkeys(s for s, _ in old))
    print(f"change of the median T MAC/s, new against old ({len(a.old)} and {len(a.new)} runs), percent")
    print("shape     " + "".join(f"{m:>10}" for m in modes))
    for s in shapes:
        print(f"{s:<10}" + "".join(f"{100 * (new[(s, m)] / old[(s, m)] - 1):>+10.1f}" for m in modes))
    print()
    print("per mode: old -> new T MAC/s (lowest to highest over the shapes), change range")
    for m in modes:
        o = [old[(s, m)] for s in shapes]
        n = [new[(s, m)] for s in shapes]
        d = [100 * (y / x - 1) for x, y in zip(o, n)]
        print(f"{m:<10} {min(o):6.2f}-{max(o):6.2f} -> {min(n):6.2f}-{max(n):6.2f}   {min(d):+6.1f} to {max(d):+6.1f}%")


if __name__ == "__main__":
    main()
