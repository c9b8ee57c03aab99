"""The 8-bit table modes (--mode q8u:FILE / q8s:FILE) on LeNet-5 and ResNet-8
quantized by onnxruntime at test time.

usage: python3 q8_modes.py AMDNN_ONNX MODELS_DIR

Models (as tests/quant/ort_quant.py makes them; codes of one signedness, as
the q8 modes need):
  qop-u8     QOperator (QLinearConv, QLinearMatMul), uint8 activations and weights  -> q8u
  qop-s8     QOperator, int8 activations and weights                                -> q8s
  qdq-u8     QDQ (DequantizeLinear -> Conv / MatMul), uint8 / uint8                  -> q8u
  qdq-s8-pc  QDQ, int8 / int8, weights per channel                                  -> q8s
  qdq-gemm   QDQ of the original model (Gemm kept), int8 / int8 per channel         -> q8s
  dyn-u8     quantize_dynamic (DynamicQuantizeLinear, ConvInteger, MatMulInteger),
             uint8 weights                                                           -> q8u
Checks:
  - q8u:exact / q8s:exact give the default run's output bit for bit (QOperator
    and dynamic models: the integer ops with the exact table against no table;
    QDQ models: Conv[q8] / Gemm[q8] / MatMul[q8] on the codes against the
    float Conv / Gemm / MatMul of the dequantized values, equal here because
    each layer's QuantizeLinear absorbs the float rounding);
  - an approximate table (the exact products with the 6 low bits cleared,
    given as a TFApprox .bin for q8u and as AMDQ8TAB for q8s) changes them;
  - --mode-map puts a single node in a q8 mode, or the integer ops by op
    type (QLinearConv=q8u:FILE); a float mode (am16) leaves them exact;
  - errors: the other signedness's mode names the node;
  - the float models in q8u:exact / q8s:exact, quantized on the fly
    (Conv[q8f], Gemm[q8f], MatMul[q8f]), stay within 10 % of the float logits
    with 90 % of the top-1 unchanged; --mode-map Conv=acc32,Gemm=acc32 gives
    the acc32 run; single float Conv (pads, strides, bias), Gemm (transB,
    alpha, beta, C) and MatMul (batched) nodes equal a numpy computation of the
    documented quantization (rounding, scales, zero points) to 1e-5, and so
    do two Gemm nodes in a row (the outputs probe of a zero image is no
    calibrating call);
    a QDQ Conv with weights quantized along axis 1 and a Gemm with
    transA = 1 are refused, naming the node.
Every amdnn-onnx command runs on the device AMD_TEST_DEVICE names (default
cpu; the GPU suite sets cuda).
Exit 0 when all hold, 1 otherwise, 77 when onnxruntime / onnx is missing."""
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_quant as oq  # exits 77 without onnxruntime / onnx

import numpy as np
import onnx
from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

amd, models = sys.argv[1], sys.argv[2]
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


def run(model, x, tmp, tag, mode=None, mode_map=None):
    inp = os.path.join(tmp, "in.pb")
    with open(inp, "wb") as f:
        f.write(oq.numpy_helper.from_array(x, "input").SerializeToString())
    out = os.path.join(tmp, "out." + tag)
    args = [amd, "run", model, "--input", inp, "--output-dir", out, "--device", oq.DEVICE]
    if mode:
        args += ["--mode", mode]
    if mode_map:
        args += ["--mode-map", mode_map]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    name = onnx.load(model).graph.output[0].name
    fname = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return oq.read_pb(os.path.join(out, fname + ".pb")), ""


def trunc_table(signed):
    v = [(a - 256 if signed and a > 127 else a) for a in range(256)]
    return [(v[a] * v[b]) & ~63 for a in range(256) for b in range(256)]  # floor to a multiple of 64


U, S = QuantType.QUInt8, QuantType.QInt8
configs = [("qop-u8", "static", QuantFormat.QOperator, U, U, False, "u"),
           ("qop-s8", "static", QuantFormat.QOperator, S, S, False, "s"),
           ("qdq-u8", "static", QuantFormat.QDQ, U, U, False, "u"),
           ("qdq-s8-pc", "static", QuantFormat.QDQ, S, S, True, "s"),
           ("qdq-gemm", "static-gemm", QuantFormat.QDQ, S, S, True, "s"),
           ("dyn-u8", "dynamic", None, None, U, False, "u")]

with tempfile.TemporaryDirectory() as tmp:
    approx = {"u": os.path.join(tmp, "trunc_u.bin"), "s": os.path.join(tmp, "trunc_s.amdq8")}
    with open(approx["u"], "wb") as f:
        f.write(struct.pack("<65536H", *trunc_table(False)))
    with open(approx["s"], "wb") as f:
        f.write(b"AMDQ8TABs\x01" + bytes(6) + struct.pack("<65536i", *trunc_table(True)))
    for mname in ("lenet5", "resnet8"):
        src = os.path.join(models, mname + ".onnx")
        x = oq.read_pb(os.path.join(models, mname + ".input.pb")).astype(np.float32)
        fpath = os.path.join(tmp, mname + ".mm.onnx")
        onnx.save(oq.gemm_to_matmul(onnx.load(src)), fpath)
        for tag, kind, fmt, at, wt, pc, sg in configs:
            q = os.path.join(tmp, f"{mname}.{tag}.onnx")
            if kind == "dynamic":
                quantize_dynamic(fpath, q, op_types_to_quantize=["Conv", "MatMul"], weight_type=wt)
            else:
                quantize_static(src if kind == "static-gemm" else fpath, q, oq.Reader("input", oq.calib_inputs(x)),
                                op_types_to_quantize=["Conv", "Gemm", "MatMul"], quant_format=fmt,
                                activation_type=at, weight_type=wt, per_channel=pc)
            label = f"{mname} {tag:9s}"
            base, err = run(q, x, tmp, "base")
            if base is None:
                check(False, f"{label}: default run failed: {err}")
                continue
            ex, err = run(q, x, tmp, "exact", f"q8{sg}:exact")
            check(ex is not None and np.array_equal(base.view(np.uint8), ex.view(np.uint8)),
                  f"{label}: q8{sg}:exact equals the default run bit for bit {err}")
            ap, err = run(q, x, tmp, "approx", f"q8{sg}:{approx[sg]}")
            diff = float(np.max(np.abs(ap.astype(np.float64) - base))) if ap is not None else -1
            check(ap is not None and diff > 0, f"{label}: the approximate table changes it (max |diff| {diff:.4g}) {err}")
            other = "s" if sg == "u" else "u"
            _, err = run(q, x, tmp, "wrong", f"q8{other}:exact")
            check("node '" in err and f"q8{other}:exact multiplies" in err, f"{label}: q8{other} refused: {err[:150]}")
            if tag == "qop-u8":  # the integer ops by op type; a float mode leaves them exact
                one, err = run(q, x, tmp, "qlc", None, f"QLinearConv=q8u:{approx['u']}")
                d1 = float(np.max(np.abs(one - base))) if one is not None else -1
                check(one is not None and d1 > 0,
                      f"{label}: --mode-map QLinearConv=q8u:TABLE changes it ({d1:.4g}) {err}")
                am, err = run(q, x, tmp, "am16", "am16")
                check(am is not None and np.array_equal(am, base), f"{label}: --mode am16 leaves the integer ops exact {err}")
            if tag == "qdq-u8":  # one node by name in a q8 mode, the rest float
                conv = next(n.name for n in onnx.load(q).graph.node if n.op_type == "Conv")
                one, err = run(q, x, tmp, "one", None, f"{conv}=q8u:{approx['u']}")
                d1 = float(np.max(np.abs(one - base))) if one is not None else -1
                check(one is not None and 0 < d1, f"{label}: --mode-map {conv}=q8u:TABLE alone changes it ({d1:.4g}) {err}")
        # the float model: quantized on the fly; --mode-map keeps nodes float
        fl, _ = run(src, x, tmp, "float-acc32")
        for sg in "us":
            y, err = run(src, x, tmp, "float", f"q8{sg}:exact")
            d = float(np.max(np.abs(y - fl)) / np.max(np.abs(fl))) if y is not None else -1
            check(y is not None and 0 < d < 0.1 and (y.argmax(1) == fl.argmax(1)).mean() >= 0.9,
                  f"{mname} float model in q8{sg}:exact (on the fly): max |diff| / max |y| = {d:.3g} {err}")
        y, err = run(src, x, tmp, "float-map", "q8u:exact", "Conv=acc32,Gemm=acc32")
        check(y is not None and np.array_equal(y, fl), f"{mname} float model, q8u:exact with Conv=acc32,Gemm=acc32 = acc32 {err}")

    # ---- single float nodes quantized on the fly against numpy (docs/quantized.md)
    rng = np.random.default_rng(5)

    def q8f_params(lo, hi, qmin, qmax):
        s = np.float32((hi - lo) / (qmax - qmin))
        if not (s > 0) or not np.isfinite(s):
            s = np.float32(1)
        return s, int(np.clip(np.rint(qmin - lo / np.float64(s)), qmin, qmax))

    def q8f(x, w, axis_ch, sg):
        """codes and parameters as Conv[q8f] computes them; w's channel axis axis_ch"""
        qmin, qmax = (-128, 127) if sg == "s" else (0, 255)
        xs, xz = q8f_params(min(0.0, float(x.min())), max(0.0, float(x.max())), qmin, qmax)
        xc = np.clip(np.rint(x.astype(np.float64) / np.float64(xs)) + xz, qmin, qmax)
        wm = np.moveaxis(w, axis_ch, 0).reshape(w.shape[axis_ch], -1).astype(np.float64)
        ws, wz = [], []
        for row in wm:
            if sg == "s":
                s_ = np.float32(max(-min(0.0, row.min()), max(0.0, row.max())) / 127.0)
                s_, z_ = (s_ if s_ > 0 else np.float32(1)), 0
            else:
                s_, z_ = q8f_params(min(0.0, row.min()), max(0.0, row.max()), qmin, qmax)
            ws.append(s_)
            wz.append(z_)
        ws, wz = np.array(ws, np.float32), np.array(wz)
        shp = [1] * w.ndim
        shp[axis_ch] = -1
        wc = np.clip(np.rint(w.astype(np.float64) / ws.astype(np.float64).reshape(shp)) + wz.reshape(shp), qmin, qmax)
        return xc - xz, xs, wc - wz.reshape(shp), ws

    def single(name, node, inits, x, ref_fn):
        graph = oq.helper.make_graph([node], name, [oq.helper.make_tensor_value_info("input", oq.TensorProto.FLOAT, x.shape)],
                                     [oq.helper.make_tensor_value_info("y", oq.TensorProto.FLOAT, None)],
                                     [oq.numpy_helper.from_array(v, k) for k, v in inits.items()])
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(oq.helper.make_model(graph, opset_imports=[oq.helper.make_opsetid("", 13)]), path)
        for sg in "us":
            y, err = run(path, x, tmp, name, f"q8{sg}:exact")
            want = ref_fn(sg)
            d = float(np.max(np.abs(y - want)) / np.max(np.abs(want))) if y is not None else -1
            check(y is not None and y.shape == want.shape and 0 <= d < 1e-5,
                  f"{name} quantized on the fly, q8{sg}:exact = numpy (max rel diff {d:.2g}) {err}")

    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32) + 0.3
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.2).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    def conv_ref(sg):
        xq, xs, wq, ws = q8f(x, w, 0, sg)
        xp = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
        acc = np.zeros((2, 4, 4, 3))
        for i in range(4):
            for j in range(3):
                patch = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                acc[:, :, i, j] = np.einsum("nchw,mchw->nm", patch, wq)
        return (xs * ws).reshape(1, 4, 1, 1) * acc.astype(np.float32) + b.reshape(1, 4, 1, 1)

    single("conv_q8f", oq.helper.make_node("Conv", ["input", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
           {"w": w, "b": b}, x, conv_ref)
    a2 = rng.standard_normal((5, 12)).astype(np.float32)
    wg = rng.standard_normal((7, 12)).astype(np.float32)
    cg = rng.standard_normal(7).astype(np.float32)

    def gemm_ref(sg):
        xq, xs, wq, ws = q8f(a2, wg, 0, sg)
        return np.float32(0.5) * ((xs * ws) * (xq @ wq.T).astype(np.float32)) + np.float32(2) * cg

    single("gemm_q8f", oq.helper.make_node("Gemm", ["input", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0),
           {"w": wg, "c": cg}, a2, gemm_ref)
    a3 = rng.standard_normal((2, 3, 12)).astype(np.float32)
    wm = rng.standard_normal((12, 5)).astype(np.float32)

    def mm_ref(sg):
        xq, xs, wq, ws = q8f(a3, wm, 1, sg)
        return (xs * ws) * (xq @ wq).astype(np.float32)

    single("matmul_q8f", oq.helper.make_node("MatMul", ["input", "w"], ["y"]), {"w": wm}, a3, mm_ref)

    # Two Gemm nodes: the second calibrates on the first's output. `eval` (like train and sweep) first sends one
    # zero image through the model to learn its outputs; that probe must not count as a calibrating call: here
    # it would widen the second node's range to the first's bias, 40, where the data's own outputs stay near 0
    # (the data's column 0 is 1, its weight -40). So eval's loss must be that of `run`'s logits (no probe).
    a4 = rng.standard_normal((5, 1, 1, 12)).astype(np.float32)
    a4[..., 0] = 1
    w1 = (rng.standard_normal((6, 12)) * 0.3).astype(np.float32)
    w1[:, 0] = -40
    w2 = (rng.standard_normal((3, 6)) * 4).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1], np.int64)
    graph = oq.helper.make_graph([oq.helper.make_node("Flatten", ["input"], ["f"]),
                                  oq.helper.make_node("Gemm", ["f", "w1", "c1"], ["h"], transB=1),
                                  oq.helper.make_node("Gemm", ["h", "w2"], ["y"], transB=1)], "two_gemm_q8f",
                                 [oq.helper.make_tensor_value_info("input", oq.TensorProto.FLOAT, ["n", 1, 1, 12])],
                                 [oq.helper.make_tensor_value_info("y", oq.TensorProto.FLOAT, None)],
                                 [oq.numpy_helper.from_array(v, k) for k, v in
                                  {"w1": w1, "c1": np.full(6, 40, np.float32), "w2": w2}.items()])
    path = os.path.join(tmp, "two_gemm_q8f.onnx")
    onnx.save(oq.helper.make_model(graph, opset_imports=[oq.helper.make_opsetid("", 13)]), path)
    xs_path, ys_path = os.path.join(tmp, "X.pb"), os.path.join(tmp, "Y.pb")
    for arr, name, fpath in ((a4, "X", xs_path), (labels, "Y", ys_path)):
        with open(fpath, "wb") as f:
            f.write(oq.numpy_helper.from_array(arr, name).SerializeToString())
    for sg in "us":
        y, err = run(path, a4, tmp, "two_gemm", f"q8{sg}:exact")
        r = subprocess.run([amd, "eval", path, "--data", f"tensors:{xs_path},{ys_path}", "--normalize", "none",
                            "--mode", f"q8{sg}:exact", "--device", oq.DEVICE], capture_output=True, text=True)
        got = [float(t.split()[1]) for t in r.stdout.split("  ") if t.startswith("loss ")]
        want = None
        if y is not None:
            z = y.astype(np.float64) - y.max(1, keepdims=True)
            want = float(np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(5), labels]))
        check(r.returncode == 0 and len(got) == 1 and want is not None and abs(got[0] - want) < 1e-4 * max(1, want),
              f"two Gemm nodes in q8{sg}:exact: eval's loss {got} = run's {want} (the outputs probe does not "
              f"calibrate) {err} {r.stderr.strip()[-200:]}")

    # ---- nodes the q8 modes refuse, by name
    def refused(name, nodes, inits, x, want):
        graph = oq.helper.make_graph(nodes, name, [oq.helper.make_tensor_value_info("input", oq.TensorProto.FLOAT, x.shape)],
                                     [oq.helper.make_tensor_value_info("y", oq.TensorProto.FLOAT, None)],
                                     [oq.numpy_helper.from_array(v, k) for k, v in inits.items()])
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(oq.helper.make_model(graph, opset_imports=[oq.helper.make_opsetid("", 13)]), path)
        y, err = run(path, x, tmp, name, "q8s:exact")
        check(y is None and want in err and "node 'n'" in err, f"{name}: refused: {err[:160]}")

    xq = [oq.helper.make_node("QuantizeLinear", ["input", "xs", "xz"], ["xq"]),
          oq.helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
          oq.helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=1)]
    qi = {"xs": np.float32(0.1), "xz": np.int8(0), "wq": rng.integers(-9, 9, (4, 4, 1, 1)).astype(np.int8),
          "ws": np.full(4, 0.05, np.float32), "wz": np.zeros(4, np.int8)}
    refused("qdq_axis1", xq + [oq.helper.make_node("Conv", ["xd", "wd"], ["y"], name="n")], qi,
            rng.standard_normal((1, 4, 3, 3)).astype(np.float32), "per axis 1")
    refused("gemm_transa", [oq.helper.make_node("Gemm", ["input", "w"], ["y"], transA=1, name="n")],
            {"w": rng.standard_normal((3, 4)).astype(np.float32)}, rng.standard_normal((3, 2)).astype(np.float32),
            "transA = 1")
sys.exit(1 if fails else 0)
