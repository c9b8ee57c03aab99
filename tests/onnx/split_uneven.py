"""Split-18 with num_outputs over an axis it does not divide (src/ops/slice.c):
every part ceil(dim / n) long and the last one smaller (possibly empty), as
ONNX defines it, which is not numpy's array_split (that spreads the remainder
over the first parts: 7 into 3 is 3, 2, 2 there, 3, 3, 1 here).

usage: python3 split_uneven.py AMDNN_ONNX

One model splits X [2, 7, 10] and Z [6, 5] (distinct values) with four Split
nodes, every part a graph output; `run` on the device AMD_TEST_DEVICE names
(default cpu) must give, for each part, the shape written by hand in CASES
and the slice of the input that numpy's indexing cuts at those sizes, bit
for bit:
  - X, axis 1, num_outputs 3: 3, 3, 1 of 7 (a middle axis);
  - X, axis -1, num_outputs 4: 3, 3, 3, 1 of 10 (a negative axis, the innermost);
  - X, axis 2, num_outputs 3: 4, 4, 2 of 10;
  - Z, axis 0, num_outputs 4: 2, 2, 2, 0 of 6 (an empty last part).
Where onnx has its reference evaluator (onnx >= 1.13), its outputs are
compared too, so that the sizes written here are ONNX's. Exit 0 when all
hold, 1 otherwise, 77 without onnx / numpy."""
import os
import sys
import tempfile

from testlib import check, finish, tensor, write_tensor  # exits 77 without numpy / onnx
import testlib
import numpy as np
import onnx
from onnx import TensorProto, helper

amd = sys.argv[1]
DEVICE = os.environ.get("AMD_TEST_DEVICE", "cpu")
INPUTS = {"x": (np.arange(2 * 7 * 10, dtype=np.float32) * 0.5 - 17.25).reshape(2, 7, 10),
          "z": (np.arange(6 * 5, dtype=np.float32) * -1.25 + 3.5).reshape(6, 5)}
# (node, input, axis, num_outputs, the parts' sizes along the axis, worked out by hand)
CASES = [("x_axis1", "x", 1, 3, [3, 3, 1]),
         ("x_axis_m1", "x", -1, 4, [3, 3, 3, 1]),
         ("x_axis2", "x", 2, 3, [4, 4, 2]),
         ("z_axis0", "z", 0, 4, [2, 2, 2, 0])]


def model():
    nodes, outputs = [], []
    for name, src, axis, n, sizes in CASES:
        outs = [f"{name}_{k}" for k in range(n)]
        nodes.append(helper.make_node("Split", [src], outs, name=f"/{name}", axis=axis, num_outputs=n))
        for o, size in zip(outs, sizes):
            shape = list(INPUTS[src].shape)
            shape[axis] = size
            outputs.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, shape))
    inputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in INPUTS.items()]
    g = helper.make_graph(nodes, "split_uneven", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    if onnx.defs.onnx_opset_version() >= 18:  # (onnx 1.12, Debian 12's, knows opset 17 at most)
        onnx.checker.check_model(m)
    return m


def expected(src, axis, sizes):
    """The parts numpy's indexing cuts from the input at the given sizes."""
    x = INPUTS[src]
    ax = axis % x.ndim
    parts, at = [], 0
    for s in sizes:
        index = [slice(None)] * x.ndim
        index[ax] = slice(at, at + s)
        parts.append(x[tuple(index)])
        at += s
    assert at == x.shape[ax], "the sizes written in CASES must add up to the axis"
    return parts


def onnx_reference(m):
    """onnx's reference evaluator's outputs by name, or None where onnx has none."""
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        return None
    names = [o.name for o in m.graph.output]
    return dict(zip(names, ReferenceEvaluator(m).run(None, dict(INPUTS))))


with tempfile.TemporaryDirectory() as tmp:
    m = model()
    mp = os.path.join(tmp, "split.onnx")
    onnx.save(m, mp)
    args = []
    for k, v in INPUTS.items():
        p = os.path.join(tmp, k + ".pb")
        write_tensor(p, v, k)
        args += ["--input", f"{k}={p}"]
    out = os.path.join(tmp, "out")
    testlib.amdnn(amd, "run", mp, *args, "--output-dir", out, "--device", DEVICE)
    ref = onnx_reference(m)
    if ref is None:
        print(f"note: onnx {onnx.__version__} has no reference evaluator; the sizes written by hand only")
    for name, src, axis, n, sizes in CASES:
        want = expected(src, axis, sizes)
        got = [tensor(os.path.join(out, f"{name}_{k}.pb")) for k in range(n)]
        shapes = [list(g.shape) for g in got]
        wrong = [k for k, (g, w) in enumerate(zip(got, want)) if g.shape != w.shape or not np.array_equal(g, w)]
        check(not wrong, f"{src} {list(INPUTS[src].shape)}, axis {axis}, num_outputs {n}: parts {sizes} "
                         f"(got shapes {shapes}; parts not the slices: {wrong})")
        if ref is not None:
            onnx_parts = [ref[f"{name}_{k}"] for k in range(n)]
            check(all(o.shape == w.shape and np.array_equal(o, w) for o, w in zip(onnx_parts, want)),
                  f"onnx's reference evaluator cuts {src} on axis {axis} into {sizes} too "
                  f"({[list(o.shape) for o in onnx_parts]})")

finish()
