"""The loader's graph-shortening passes (src/onnx/rewrite.c) on a small MLP
whose activation is GELU as PyTorch exports it below opset 20 (Div by
sqrt 2, Erf, Add 1, Mul by x, Mul by 0.5), followed by a Dropout of ratio 0
and an Identity; against the same model with those values also named as
graph outputs, which keeps every node.

usage: python3 graph_rewrites.py AMDNN_ONNX

Checks:
  - `info`: the chain is one Gelu node named ".../Gelu", the Dropout and the
    Identity are gone; the model that names the intermediates keeps its
    Erf, Dropout and Identity nodes; a chain with another constant (x / 1.5)
    is not fused; the form x * 0.5 * (1 + erf(x / sqrt 2)), whose Mul by
    0.5 comes first, is one Gelu too;
  - `run`, acc32 and am16: the fused model's logits equal the unfused
    model's bit for bit (the Gelu does the chain's float operations in its
    order), for both forms, and numpy's float64 computation within 1e-5 in
    acc32; each form alone at 3e38, where x (erf(..) + 1) overflows, gives
    its chain's value: Inf for PyTorch's (x (erf + 1)) 0.5, finite for
    (x 0.5) (erf + 1), so that either form computed in the other's order
    fails;
  - `grad` (training mode, acc32): every parameter's gradient within 1e-5
    of the unfused model's (Gelu's own gradient, computed in double, where
    the chain rounds at each of its nodes), and the loss bit for bit;
  - a model written back by `train` keeps the original nodes.
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
B, I, H, O = 16, 6, 24, 3
rng = np.random.default_rng(11)
W = {"w1": (rng.standard_normal((I, H)) * 0.8).astype(np.float32),
     "b1": (rng.standard_normal(H) * 0.3).astype(np.float32),
     "w2": (rng.standard_normal((H, O)) * 0.5).astype(np.float32)}
X = (rng.standard_normal((B, 1, 1, I)) * 2).astype(np.float32)  # images of 1 x 1 pixels, for `train`


def scalar(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, np.float32), name + "_value"))


def gelu_products(x, out, form):
    """The two Mul nodes that end a GELU on x into out: "torch", (x a) 0.5
    (a = erf(x / sqrt 2) + 1), or "bert", (x 0.5) a."""
    first, second = ("a", "/act/Constant_2") if form == "torch" else ("/act/Constant_2", "a")
    return [helper.make_node("Mul", [x, first], ["m"], name="/act/Mul"),
            helper.make_node("Mul", ["m", second], [out], name="/act/Mul_1")]


def model(sqrt2=1.4142135623730951, named=False, form="torch"):
    """flatten, x W1 + b1 -> GELU chain -> Dropout(0) -> Identity -> W2. named: the
    Erf, Dropout and Identity outputs are graph outputs too. form: "torch",
    (x (erf(x / sqrt 2) + 1)) 0.5 as PyTorch exports F.gelu, or "bert",
    (x 0.5) (erf(x / sqrt 2) + 1) as x * 0.5 * (1 + torch.erf(x / sqrt(2)))."""
    products = gelu_products("h", "g", form)
    nodes = [
        helper.make_node("Flatten", ["input"], ["flat"], name="/Flatten"),
        helper.make_node("MatMul", ["flat", "w1"], ["h0"], name="/fc1/MatMul"),
        helper.make_node("Add", ["b1", "h0"], ["h"], name="/fc1/Add"),
        scalar("/act/Constant", sqrt2), scalar("/act/Constant_1", 1.0), scalar("/act/Constant_2", 0.5),
        helper.make_node("Div", ["h", "/act/Constant"], ["d"], name="/act/Div"),
        helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
        helper.make_node("Add", ["e", "/act/Constant_1"], ["a"], name="/act/Add"),
        *products,
        scalar("/drop/ratio", 0.0),
        helper.make_node("Constant", [], ["/drop/train"], name="/drop/train",
                         value=numpy_helper.from_array(np.array(True), "t")),
        helper.make_node("Dropout", ["g", "/drop/ratio", "/drop/train"], ["dr"], name="/drop/Dropout"),
        helper.make_node("Identity", ["dr"], ["id"], name="/id/Identity"),
        helper.make_node("MatMul", ["id", "w2"], ["logits"], name="/fc2/MatMul"),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in W.items()]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", O])]
    if named:
        outputs += [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape)
                    for v, shape in (("e", ["batch", H]), ("dr", ["batch", H]), ("id", ["batch", H]))]
    g = helper.make_graph(nodes, "gelu_mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 1, I])],
                          outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def edge_model(named=False, form="torch"):
    """One GELU chain of the given form alone on the input: where x a
    overflows and (x 0.5) a does not, only the chain's order gives the
    chain's result (Inf for "torch", finite for "bert"; away from overflow the
    two orders agree, the product by 0.5 being exact)."""
    products = gelu_products("input", "y", form)
    nodes = [scalar("/act/Constant", 1.4142135623730951), scalar("/act/Constant_1", 1.0),
             scalar("/act/Constant_2", 0.5),
             helper.make_node("Div", ["input", "/act/Constant"], ["d"], name="/act/Div"),
             helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
             helper.make_node("Add", ["e", "/act/Constant_1"], ["a"], name="/act/Add"),
             *products]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
    if named:
        outputs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 4]))
    g = helper.make_graph(nodes, "gelu_edge", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])],
                          outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def reference():
    from math import erf
    h = X.reshape(B, I).astype(np.float64) @ W["w1"].astype(np.float64) + W["b1"].astype(np.float64)
    g = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    return g @ W["w2"].astype(np.float64)


def amdnn(*args):
    return testlib.amdnn(amd, *args)


def node_ops(info):
    """(name, op) of each node `info` lists."""
    rows = [line.split() for line in info.splitlines()]
    return [(r[1], r[2]) for r in rows if len(r) > 3 and r[0].isdigit()]


with tempfile.TemporaryDirectory() as tmp:
    paths = {}
    for tag, m in (("fused", model()), ("named", model(named=True)), ("other", model(sqrt2=1.5)),
                   ("bert", model(form="bert")), ("bert_named", model(named=True, form="bert"))):
        paths[tag] = os.path.join(tmp, tag + ".onnx")
        onnx.save(m, paths[tag])
    xp, yp = os.path.join(tmp, "x.pb"), os.path.join(tmp, "y.pb")
    write_tensor(xp, X, "input")
    write_tensor(yp, rng.integers(0, O, B).astype(np.int64), "labels")

    fused = node_ops(amdnn("info", paths["fused"]))
    ops = [op for _, op in fused]
    check(("/act/Gelu", "Gelu") in fused and not {"Erf", "Div", "Dropout", "Identity"} & set(ops)
          and ops.count("Mul") == 0,
          f"info: the chain is one Gelu '/act/Gelu'; no Dropout, no Identity: {ops}")
    named_ops = [op for _, op in node_ops(amdnn("info", paths["named"]))]
    check("Gelu" not in named_ops and {"Erf", "Dropout", "Identity"} <= set(named_ops),
          "info: intermediates named as graph outputs keep their nodes")
    other_ops = [op for _, op in node_ops(amdnn("info", paths["other"]))]
    check("Gelu" not in other_ops and "Erf" in other_ops, "info: x / 1.5 is no GELU and stays five nodes")

    bert_ops = [op for _, op in node_ops(amdnn("info", paths["bert"]))]
    check("Gelu" in bert_ops and "Erf" not in bert_ops and "Mul" not in bert_ops,
          f"info: x * 0.5 * (1 + erf(x / sqrt 2)) is one Gelu too: {bert_ops}")

    out = {}
    for tag in ("fused", "named", "bert", "bert_named"):
        for mode in ("acc32", "am16"):
            d = os.path.join(tmp, f"run.{tag}.{mode}")
            amdnn("run", paths[tag], "--input", xp, "--output-dir", d, "--mode", mode, "--device", DEVICE)
            out[tag, mode] = tensor(os.path.join(d, "logits.pb"))
    for mode in ("acc32", "am16"):
        check(np.array_equal(out["fused", mode], out["named", mode]), f"{mode}: the unfused model's logits, bit for bit")
        check(np.array_equal(out["bert", mode], out["bert_named", mode]),
              f"{mode}: the x * 0.5 form: the unfused model's logits, bit for bit")
    ref = reference()
    err = np.abs(out["fused", "acc32"] - ref).max() / np.abs(ref).max()
    check(err < 1e-5, f"acc32: numpy's float64 GELU MLP within 1e-5 (relative {err:.2e})")

    edge = {}
    ep = os.path.join(tmp, "edge_x.pb")
    write_tensor(ep, np.array([[3e38, -3e38, 1.5, -0.25]], np.float32), "input")
    for form in ("torch", "bert"):
        for tag, named in (("fused", False), ("named", True)):
            mp = os.path.join(tmp, f"edge_{form}_{tag}.onnx")
            onnx.save(edge_model(named, form), mp)
            ops = [op for _, op in node_ops(amdnn("info", mp))]
            check(("Gelu" in ops) != named, f"edge, {form} form, {tag}: {ops}")
            d = os.path.join(tmp, f"run.edge.{form}.{tag}")
            amdnn("run", mp, "--input", ep, "--output-dir", d, "--device", DEVICE)
            edge[form, tag] = tensor(os.path.join(d, "y.pb"))
    # the chain: (3e38 a) 0.5 = inf 0.5 = inf for PyTorch's form, (3e38 0.5) a = 3e38 for the other
    for form, overflows in (("torch", True), ("bert", False)):
        y, chain = edge[form, "fused"], edge[form, "named"]
        check(np.array_equal(y, chain) and np.isinf(chain[0, 0]) == overflows and np.isinf(y[0, 0]) == overflows,
              f"the {form} form at 3e38 (where x (erf + 1) overflows): the chain's values {y.tolist()}"
              f" (chain {chain.tolist()})")

    grads = {}
    for tag in ("fused", "named"):
        d = os.path.join(tmp, "grad." + tag)
        amdnn("grad", paths[tag], "--input", xp, "--labels", yp, "--output-dir", d, "--device", DEVICE)
        grads[tag] = {n: tensor(os.path.join(d, n + ".pb")) for n in ("loss",) + tuple(W)}
    check(np.array_equal(grads["fused"]["loss"], grads["named"]["loss"]), "grad: the loss bit for bit")
    for n in W:
        a, b = grads["fused"][n], grads["named"][n]
        rel = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
        check(rel < 1e-5 and np.abs(b).max() > 0, f"grad {n}: within 1e-5 of the unfused chain's ({rel:.1e})")

    trained = os.path.join(tmp, "trained.onnx")
    amdnn("train", paths["fused"], "--data", f"tensors:{xp},{yp}", "--epochs", "1", "--batch", str(B),
          "-o", trained, "--device", DEVICE)
    written = [n.op_type for n in onnx.load(trained).graph.node]
    check("Erf" in written and "Dropout" in written and "Identity" in written and "Gelu" not in written,
          "train: the written model keeps the chain, the Dropout and the Identity")

finish()
