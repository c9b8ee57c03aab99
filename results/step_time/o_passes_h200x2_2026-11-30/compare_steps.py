"""Per-step kernel times of two Nsight Compute windows of a training run (CSV exports with
gpu__time_duration.sum and the dram bytes): only the launches between the first and the last k_optim
(whole steps, k_optim being a step's last kernel), per kernel name, in us a step, old beside new.
usage: python3 compare_steps.py OLD.csv[.xz] NEW.csv[.xz]"""
import csv
import lzma
import re
import sys
from collections import OrderedDict, defaultdict


def launches(path):
    op = lzma.open if path.endswith(".xz") else open
    with op(path, "rt", newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    by_id = OrderedDict()
    for r in csv.DictReader(lines):
        k = by_id.setdefault(r["ID"], {"name": r["Kernel Name"]})
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "")
        if r["Metric Name"] == "gpu__time_duration.sum":
            k["us"] = v / 1000 if unit.startswith("n") else v * 1000 if unit.startswith("m") else v
        elif r["Metric Name"].startswith("dram__bytes"):
            scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}[unit]
            k["bytes"] = k.get("bytes", 0) + v * scale
    return list(by_id.values())


def short(name):
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"<.*", "", name)
    return name.split("(")[0]


def per_step(path):
    ks = launches(path)
    ends = [i for i, k in enumerate(ks) if short(k["name"]) == "k_optim"]
    steps = ks[ends[0] + 1:ends[-1] + 1]
    n = len(ends) - 1
    t, b, c = defaultdict(float), defaultdict(float), defaultdict(int)
    for k in steps:
        s = short(k["name"])
        if re.match(r"(sm\d+_xmma_gemm|cutlass|.*splitKreduce|.*gemv)", k["name"].replace("void ", "")):
            s = "cuBLAS GEMMs and split-K reduces"
        t[s] += k["us"] / n
        b[s] += k.get("bytes", 0) / n
        c[s] += 1
    return n, t, b, c


(no, to, bo, co), (nn, tn, bn, cn) = per_step(sys.argv[1]), per_step(sys.argv[2])
print("whole steps in the windows: old %d, new %d (launches a step: old %d, new %d)" %
      (no, nn, sum(co.values()) // no, sum(cn.values()) // nn))
print("%-34s %9s %9s %9s   %8s %8s" % ("kernel", "old us", "new us", "change", "old GB", "new GB"))
names = sorted(set(to) | set(tn), key=lambda s: -(to.get(s, 0) + tn.get(s, 0)))
for s in names:
    o, n = to.get(s, 0), tn.get(s, 0)
    if o + n < 5:
        continue
    print("%-34s %9.1f %9.1f %+9.1f   %8.3f %8.3f" % (s[:34], o, n, n - o, bo.get(s, 0) / 1e9, bn.get(s, 0) / 1e9))
print("%-34s %9.1f %9.1f %+9.1f" % ("all", sum(to.values()), sum(tn.values()), sum(tn.values()) - sum(to.values())))
