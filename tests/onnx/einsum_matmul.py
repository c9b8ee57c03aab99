"""The loader's Einsum -> MatMul rewrite (src/onnx/einsum_matmul.c) on a
small attention block written with Einsum, against the same block written
with Transpose + MatMul by hand.

usage: python3 einsum_matmul.py AMDNN_ONNX

Checks:
  - `info` of the Einsum model lists MatMul and Transpose nodes and no Einsum
    for the batched-matmul equations (one needing both operands transposed,
    one needing B and the result transposed), and keeps an Einsum that is
    not a matrix product (a sum over one operand's letter);
  - acc32: the output is numpy's float64 einsum computation within 1e-5;
  - am16 (an approximate multiplier): the output and every parameter's
    gradient (`grad`) equal the hand-written model's bit for bit, and the
    output differs from acc32's: the attention products go through the
    multiplier in the forward pass and in both backward products.
Every command runs on the device AMD_TEST_DEVICE names (default cpu).
Exit 0 when all hold, 1 otherwise, 77 without onnx / numpy."""
import os
import sys
import tempfile

from testlib import check, finish, tensor, write_tensor  # exits 77 without numpy / onnx
import testlib
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

amd = sys.argv[1]
DEVICE = os.environ.get("AMD_TEST_DEVICE", "cpu")
B, S, H, D = 2, 5, 2, 4
E = H * D
rng = np.random.default_rng(7)
W = {n: (rng.standard_normal(s) * 0.5).astype(np.float32)
     for n, s in (("wq", (E, E)), ("wk", (E, E)), ("wv", (E, E)), ("wo", (E, 3)))}
X = rng.standard_normal((B, S, E)).astype(np.float32)


def model(attention, extra=()):
    """The block: q, k, v = x Wq, x Wk, x Wv as [b, i, h, d]; the attention
    nodes `attention` (from q4, k4, v4 to o4, [b, i, h, d]); mean over i; Wo."""
    shape4 = numpy_helper.from_array(np.array([B, S, H, D], np.int64), "shape4")
    shape3 = numpy_helper.from_array(np.array([B, S, E], np.int64), "shape3")
    nodes = []
    for t in ("q", "k", "v"):
        nodes.append(helper.make_node("MatMul", ["input", "w" + t], [t], name=t + "_proj"))
        nodes.append(helper.make_node("Reshape", [t, "shape4"], [t + "4"], name=t + "_reshape"))
    nodes += attention
    nodes += [helper.make_node("Reshape", ["o4", "shape3"], ["o3"], name="o_reshape"),
              helper.make_node("ReduceMean", ["o3"], ["pooled"], axes=[1], keepdims=0, name="pool"),
              helper.make_node("MatMul", ["pooled", "wo"], ["logits"], name="head")]
    nodes += list(extra)
    inits = [numpy_helper.from_array(v, k) for k, v in W.items()] + [shape4, shape3]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, 3])]
    if extra:
        outputs.append(helper.make_tensor_value_info("side", TensorProto.FLOAT, [B, H, S, S]))
    g = helper.make_graph(nodes, "attention",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [B, S, E])], outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


einsum_nodes = [
    helper.make_node("Einsum", ["q4", "k4"], ["scores"], equation="bihd,bjhd->bhij", name="qk"),
    helper.make_node("Softmax", ["scores"], ["att"], axis=-1, name="softmax"),
    helper.make_node("Einsum", ["att", "v4"], ["o4"], equation="bhij, bjhd -> bihd", name="av"),
]
# a sum over one operand's letter (not a matrix product): stays an Einsum
side = [helper.make_node("Einsum", ["q4", "k4"], ["side"], equation="bihd,bjhe->bhij", name="not_mm")]
hand_nodes = [
    helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3], name="qt"),
    helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1], name="kt"),
    helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="qk"),
    helper.make_node("Softmax", ["scores"], ["att"], axis=-1, name="softmax"),
    helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3], name="vt"),
    helper.make_node("MatMul", ["att", "vt"], ["ot"], name="av"),
    helper.make_node("Transpose", ["ot"], ["o4"], perm=[0, 2, 1, 3], name="ot"),
]


def reference():
    q, k, v = (X.astype(np.float64) @ W[n].astype(np.float64) for n in ("wq", "wk", "wv"))
    q, k, v = (t.reshape(B, S, H, D) for t in (q, k, v))
    s = np.einsum("bihd,bjhd->bhij", q, k)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = np.einsum("bhij,bjhd->bihd", a, v).reshape(B, S, E)
    return o.mean(1) @ W["wo"].astype(np.float64)


def amdnn(*args):
    return testlib.amdnn(amd, *args)


with tempfile.TemporaryDirectory() as tmp:
    paths = {}
    for tag, m in (("einsum", model(einsum_nodes, side)), ("hand", model(hand_nodes))):
        paths[tag] = os.path.join(tmp, tag + ".onnx")
        onnx.save(m, paths[tag])
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    write_tensor(xp, X, "input")
    write_tensor(yp, np.array([0, 2], np.int64), "labels")

    info = amdnn("info", paths["einsum"])
    ops = [line.split()[2] for line in info.splitlines() if line.strip()[:1].isdigit() and len(line.split()) > 3]
    check(ops.count("Einsum") == 1, f"info: one Einsum left (the sum over one operand's letter): {ops.count('Einsum')}")
    check(ops.count("MatMul") == 6 and ops.count("Transpose") == 4,
          f"info: 6 MatMul and 4 Transpose nodes: {ops.count('MatMul')} and {ops.count('Transpose')}")
    check(" qk " in info and " av " in info and "qk/transpose_a" in info and "av/transpose_y" in info,
          "info: the MatMuls keep the Einsum nodes' names, the Transposes are named after them")

    out = {}
    for tag in ("einsum", "hand"):
        for mode in ("acc32", "am16"):
            d = os.path.join(tmp, f"run.{tag}.{mode}")
            amdnn("run", paths[tag], "--input", xp, "--output-dir", d, "--mode", mode, "--device", DEVICE)
            out[tag, mode] = tensor(os.path.join(d, "logits.pb"))
    err = np.abs(out["einsum", "acc32"] - reference()).max() / np.abs(reference()).max()
    check(err < 1e-5, f"acc32: numpy's einsum within 1e-5 (relative {err:.2e})")
    check(np.array_equal(out["einsum", "am16"], out["hand", "am16"]), "am16: the hand-written model's output, bit for bit")
    check(not np.array_equal(out["einsum", "am16"], out["einsum", "acc32"]), "am16: differs from acc32")

    grads = {}
    for tag in ("einsum", "hand"):
        d = os.path.join(tmp, "grad." + tag)
        amdnn("grad", paths[tag], "--input", xp, "--labels", yp, "--output-dir", d, "--mode", "am16",
              "--device", DEVICE)
        grads[tag] = {n: tensor(os.path.join(d, n + ".pb")) for n in ("loss",) + tuple(W)}
    same = [n for n in grads["einsum"] if np.array_equal(grads["einsum"][n], grads["hand"][n])]
    check(len(same) == len(grads["einsum"]), f"am16 grad: loss and every parameter's gradient bit for bit ({len(same)} of {len(grads['einsum'])})")
    check(all(np.abs(g).max() > 0 for g in grads["einsum"].values()), "am16 grad: none is zero")

finish()
