#!/usr/bin/env python3
"""Compares the float initializers of two ONNX models (tests/dist).

usage: compare_models.py A.onnx B.onnx RTOL [START.onnx]
Prints the largest absolute difference and the largest difference relative to
each tensor's largest |value|; exits 0 when every tensor is within RTOL of
that scale, 1 otherwise (or when the models hold different initializers), and
77 (meson's skip) when the onnx Python package is missing. With START (the
model both runs started from) the scale is each tensor's largest change
|A - START| instead: after one SGD step without momentum that compares the
gradients (tensors that did not change are skipped)."""
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)


def floats(path):
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in m.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}


a, b, rtol = floats(sys.argv[1]), floats(sys.argv[2]), float(sys.argv[3])
start = floats(sys.argv[4]) if len(sys.argv) > 4 else None
if sorted(a) != sorted(b) or not a:
    print(f"different initializers: {sorted(a)} vs {sorted(b)}")
    sys.exit(1)
worst_abs = worst_rel = 0.0
worst = ""
for name in a:
    if a[name].shape != b[name].shape:
        print(f"{name}: shapes {a[name].shape} vs {b[name].shape}")
        sys.exit(1)
    if not a[name].size:
        continue
    d = float(np.max(np.abs(a[name] - b[name])))
    ref = a[name] - start[name] if start is not None else a[name]
    scale = float(np.max(np.abs(ref)))
    if scale == 0:
        continue

    worst_abs = max(worst_abs, d)
    if d / scale >= worst_rel:
        worst_rel, worst = d / scale, name
what = "of the change" if start is not None else ""
print(f"{len(a)} tensors: max |diff| {worst_abs:.3g}, max relative{what and ' ' + what} {worst_rel:.3g} ({worst})")
sys.exit(0 if worst_rel <= rtol else 1)
