"""Quantizes the repository's LeNet-5 and ResNet-8 with onnxruntime.quantization
at test time, runs each quantized model with `amdnn-onnx run`, in onnxruntime
and in ONNX's reference evaluator (onnx.reference, the spec's arithmetic), and
compares the outputs.

usage: python3 ort_quant.py AMDNN_ONNX MODELS_DIR [--verbose]

Models (Gemm is first rewritten as MatMul + Add so that the fully connected
layers are quantized as MatMul; only Conv and MatMul are quantized, the rest
stays float):
  qdq-u8        quantize_static, QDQ, per tensor, uint8 activations, int8 weights
  qdq-s8-pc     quantize_static, QDQ, per channel, int8 activations and weights
  qop-u8        quantize_static, QOperator (QLinearConv, QLinearMatMul), per tensor, uint8 / int8
  qop-u8-pc     the same, per channel weights
  qop-s8        QOperator, int8 activations and weights
  qdq-all       QDQ of the original model (Gemm kept), every op type the quantizer
                takes (Add, MaxPool, GlobalAveragePool, Gemm too), uint8 / int8
  dyn-s8        quantize_dynamic (DynamicQuantizeLinear, ConvInteger, MatMulInteger), int8 weights
  dyn-u8        quantize_dynamic, uint8 weights
Calibration: 8 deterministic inputs (a seeded normal draw and the model's
stored test input). Comparison input: the stored test input (models/*.input.pb).

Checks (see docs/quantized.md for why these bounds):
  - amdnn-onnx against the reference evaluator: equal bit for bit for every
    QOperator and dynamic model (integer kernels and requantization as the
    spec computes them); for QDQ models within one output quantization step
    (the float Conv / MatMul between DequantizeLinear and QuantizeLinear sums
    in another order than numpy, so a value at a rounding tie can move one
    step, and later layers carry it).
  - amdnn-onnx against onnxruntime (all graph optimisations on, its default):
    within `ORT_STEPS` output quantization steps, reported as max |diff| in
    absolute terms and in steps of the output's scale; dynamic models in
    relative terms (their output is int32 times a float scale). Where
    onnxruntime is itself that far from the reference (on x86 CPUs without
    VNNI its u8 x s8 kernels saturate pairs of products in int16) and
    amdnn-onnx matches the reference, the row says so instead of failing.
Every amdnn-onnx command runs on the device AMD_TEST_DEVICE names (default
cpu; the GPU suite sets cuda).
Exit 0 when all hold, 1 otherwise, 77 when onnxruntime / onnx is missing."""
import os
import subprocess
import sys
import tempfile

DEVICE = os.environ.get("AMD_TEST_DEVICE", "cpu")

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
except ImportError as e:
    print(f"SKIP: {e} (python3 -m pip install onnxruntime onnx)")
    sys.exit(77)

# Bound for amdnn vs onnxruntime, in output quantization steps (see the doc).
ORT_STEPS = 4


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def gemm_to_matmul(model):
    """Rewrites every Gemm (alpha = beta = 1, transA = 0) as MatMul + Add."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    for n in g.node:
        if n.op_type != "Gemm":
            nodes.append(n)
            continue
        at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        assert at.get("alpha", 1.0) == 1.0 and at.get("beta", 1.0) == 1.0 and at.get("transA", 0) == 0
        w = numpy_helper.to_array(inits[n.input[1]])
        if at.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        wname = n.input[1] + "_kn"
        g.initializer.append(numpy_helper.from_array(w, wname))
        mm = n.output[0] + "_mm"
        nodes.append(helper.make_node("MatMul", [n.input[0], wname], [mm], name=n.name + "_matmul"))
        nodes.append(helper.make_node("Add", [mm, n.input[2]], [n.output[0]], name=n.name + "_bias"))
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


class Reader(CalibrationDataReader):
    def __init__(self, name, data):
        self.items = [{name: d} for d in data]

    def get_next(self):
        return self.items.pop(0) if self.items else None


def calib_inputs(x):
    rng = np.random.default_rng(19)
    out = [x.astype(np.float32)]
    for _ in range(7):
        out.append(rng.standard_normal(x.shape).astype(np.float32))
    return out


def output_step(model, out_name):
    """The scale of the DequantizeLinear that the output comes from (through
    Add / Relu / Reshape / Flatten), or None."""
    prod = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    name, seen = out_name, 0
    while name in prod and seen < 20:
        n = prod[name]
        seen += 1
        if n.op_type == "DequantizeLinear":
            s = inits.get(n.input[1])
            return float(np.max(s)) if s is not None else None
        if n.op_type in ("Add", "Relu", "Reshape", "Flatten", "Identity"):
            name = n.input[0]
            continue
        return None
    return None


def run_amdnn(amd, model_path, feeds, tmp, tag):
    args = []
    for name, v in feeds.items():
        inp = os.path.join(tmp, f"{tag}.{name}.pb")
        with open(inp, "wb") as f:
            f.write(numpy_helper.from_array(v, name).SerializeToString())
        args += ["--input", f"{name}={inp}"]
    outdir = os.path.join(tmp, tag + ".out")
    r = subprocess.run([amd, "run", model_path] + args + ["--output-dir", outdir, "--device", DEVICE],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"amdnn-onnx run failed on {tag}: {r.stderr.strip()}")
    return outdir


def for_reference(model):
    """A copy at opset 21 at least: onnx.reference implements DequantizeLinear
    from version 19 on; every op of these models means the same at 21 for
    float, int8, uint8 and int32 data."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < 21:
            o.version = 21
    return m


def op_census(model):
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return ",".join(f"{k}:{v}" for k, v in sorted(ops.items()) if k in (
        "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
        "ConvInteger", "MatMulInteger"))


def main():
    amd, models = sys.argv[1], sys.argv[2]
    verbose = "--verbose" in sys.argv
    ok = True
    configs = [
        ("qdq-u8", "static", dict(quant_format=QuantFormat.QDQ, per_channel=False,
                                  activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)),
        ("qdq-s8-pc", "static", dict(quant_format=QuantFormat.QDQ, per_channel=True,
                                     activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)),
        ("qop-u8", "static", dict(quant_format=QuantFormat.QOperator, per_channel=False,
                                  activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)),
        ("qop-u8-pc", "static", dict(quant_format=QuantFormat.QOperator, per_channel=True,
                                     activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)),
        ("qop-s8", "static", dict(quant_format=QuantFormat.QOperator, per_channel=False,
                                  activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)),
        ("qdq-all", "static-all", dict(quant_format=QuantFormat.QDQ, per_channel=False,
                                       activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)),
        ("dyn-s8", "dynamic", dict(weight_type=QuantType.QInt8)),
        ("dyn-u8", "dynamic", dict(weight_type=QuantType.QUInt8)),
    ]
    print("max |amdnn - X| over the logits (in steps of the output's quantization scale where it has one;\n"
          "'n of m': elements that differ); ort = onnxruntime, default optimisations; ort-noopt: ORT_DISABLE_ALL")
    print(f"{'model':8s} {'config':10s} {'vs reference':>20s} {'vs ort':>44s} {'vs ort-noopt':>10s}  ops")
    with tempfile.TemporaryDirectory() as tmp:
        for mname in ("lenet5", "resnet8"):
            src = os.path.join(models, mname + ".onnx")
            if not os.path.exists(src):
                print(f"SKIP {mname}: {src} missing")
                continue
            x = read_pb(os.path.join(models, mname + ".input.pb")).astype(np.float32)
            fm = gemm_to_matmul(onnx.load(src))
            fpath = os.path.join(tmp, mname + ".mm.onnx")
            onnx.save(fm, fpath)
            for tag, kind, kw in configs:
                qpath = os.path.join(tmp, f"{mname}.{tag}.onnx")
                if kind == "static":
                    quantize_static(fpath, qpath, Reader("input", calib_inputs(x)),
                                    op_types_to_quantize=["Conv", "MatMul"], **kw)
                elif kind == "static-all":  # the original model (Gemm), every op the quantizer takes
                    quantize_static(src, qpath, Reader("input", calib_inputs(x)), **kw)
                else:
                    quantize_dynamic(fpath, qpath, op_types_to_quantize=["Conv", "MatMul"], **kw)
                qm = onnx.load(qpath)
                out_name = qm.graph.output[0].name
                outdir = run_amdnn(amd, qpath, {"input": x}, tmp, f"{mname}.{tag}")
                fname = "".join(c if c.isalnum() or c in "._-" else "_" for c in out_name)
                got = read_pb(os.path.join(outdir, fname + ".pb"))
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                want_ort = ort.InferenceSession(qpath, so, providers=["CPUExecutionProvider"]).run(
                    None, {"input": x})[0]
                so0 = ort.SessionOptions()
                so0.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                want_ort0 = ort.InferenceSession(qpath, so0, providers=["CPUExecutionProvider"]).run(
                    None, {"input": x})[0]
                want_ref = ReferenceEvaluator(for_reference(qm)).run(None, {"input": x})[0]
                step = output_step(qm, out_name)
                d_ref = float(np.max(np.abs(got - want_ref)))
                d_ort = float(np.max(np.abs(got - want_ort)))
                d_ort0 = float(np.max(np.abs(got - want_ort0)))
                n_ort = int(np.count_nonzero(got != want_ort))
                scale = float(np.max(np.abs(want_ort))) or 1.0
                if step:
                    s_ref, s_ort = d_ref / step, d_ort / step
                    rtxt = f"{d_ref:.3g} ({s_ref:.2f} steps)"
                    otxt = f"{d_ort:.3g} ({s_ort:.2f} steps of {step:.3g}, {n_ort} of {got.size})"
                else:
                    rtxt = f"{d_ref:.3g}"
                    otxt = f"{d_ort:.3g} (rel {d_ort / scale:.2e}, {n_ort} of {got.size})"
                exact_ref = tag.startswith(("qop", "dyn"))
                good_ref = d_ref == 0 if exact_ref else (step is not None and d_ref <= step * 1.0001)
                if step:
                    good_ort = d_ort <= ORT_STEPS * step * 1.0001
                else:
                    good_ort = d_ort <= 1e-3 * scale
                # onnxruntime's own distance from the reference: where it is over the bound too, the
                # difference is onnxruntime's (on x86 CPUs without VNNI its u8 x s8 kernels sum pairs of
                # products in saturating int16, as its quantization docs warn), and parity is asked of
                # amdnn-onnx only against the reference
                d_ort_ref = float(np.max(np.abs(want_ort - want_ref)))
                ort_off = d_ort_ref > (ORT_STEPS * step * 1.0001 if step else 1e-3 * scale)
                excused = good_ref and not good_ort and ort_off
                argmax_same = bool(np.all(np.argmax(got, 1) == np.argmax(want_ort, 1)))
                flag = "" if good_ref and (good_ort or excused) else "  FAIL"
                if excused:
                    flag = f"  (onnxruntime {d_ort_ref:.3g} off the reference: its kernels, not ours)"
                ok &= good_ref and (good_ort or excused)
                print(f"{mname:8s} {tag:10s} {rtxt:>20s} {otxt:>44s} {d_ort0:>10.3g}  {op_census(qm)}"
                      f"{'' if argmax_same else ' (top-1 differs)'}{flag}")
                if verbose:
                    print("   amdnn", got.ravel()[:6], "\n   ort  ", want_ort.ravel()[:6], "\n   ref  ",
                          want_ref.ravel()[:6])
        ok &= node_cases(amd, tmp, verbose)
        ok &= train_refused(amd, tmp, models)
    return 0 if ok else 1


def train_refused(amd, tmp, models):
    """`amdnn-onnx train` on a quantized LeNet-5 must stop with a message that
    names the quantized node (no backward), not train silently around it;
    `amdnn-onnx eval` must score it."""
    x = read_pb(os.path.join(models, "lenet5.input.pb")).astype(np.float32)
    xp, yp = os.path.join(tmp, "train.x.pb"), os.path.join(tmp, "train.y.pb")
    with open(xp, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(yp, "wb") as f:
        f.write(numpy_helper.from_array(np.arange(len(x), dtype=np.int64), "y").SerializeToString())
    good = True
    for tag in ("qdq-u8", "qop-u8", "dyn-s8"):
        qpath = os.path.join(tmp, f"lenet5.{tag}.onnx")
        r = subprocess.run([amd, "train", qpath, "--data", f"tensors:{xp},{yp}", "--epochs", "1", "--device", DEVICE,
                            "-o", os.path.join(tmp, "trained.onnx")], capture_output=True, text=True)
        msg = (r.stderr + r.stdout).strip().splitlines()
        line = next((m for m in msg if "quantized op" in m), "")
        refused = r.returncode != 0 and line != ""
        print(f"train {tag}: {'refused' if refused else 'NOT REFUSED (FAIL)'}: {line or msg[-1:]}")
        good &= refused
        r = subprocess.run([amd, "eval", qpath, "--data", f"tensors:{xp},{yp}", "--device", DEVICE],
                           capture_output=True, text=True)
        top1 = next((m for m in r.stdout.splitlines() if m.startswith("top1")), "")
        print(f"eval {tag}: {top1 if r.returncode == 0 and top1 else 'FAILED: ' + r.stderr.strip()}")
        good &= r.returncode == 0 and top1 != ""
    return good


def tensor(name, v):
    return numpy_helper.from_array(np.asarray(v), name)


def node_model(nodes, inputs, inits, opset):
    """inputs: (name, numpy array) fed at run time; the outputs are those of the last node."""
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in inputs]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in nodes[-1].output]
    g = helper.make_graph(nodes, "g", vi, outs, [tensor(k, v) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def node_cases(amd, tmp, verbose):
    """Single nodes on large random inputs: amdnn-onnx must equal the reference
    evaluator bit for bit; the codes where onnxruntime differs are counted."""
    rng = np.random.default_rng(7)
    u8 = lambda *s: rng.integers(0, 256, s).astype(np.uint8)
    s8 = lambda *s: rng.integers(-128, 128, s).astype(np.int8)
    f32 = lambda *v: np.array(v, np.float32)
    M, C = 24, 16
    cases = []
    # QLinearConv: uint8 x, int8 per-channel w, int32 bias, pads, stride 2, group 2
    w = s8(M, C // 2, 3, 3)
    cases.append(("QLinearConv u8/s8 per-channel, bias, group 2, stride 2", 13, [helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"], ["y"], pads=[1, 1, 1, 1],
        strides=[2, 2], group=2)], [("x", u8(4, C, 31, 29))], dict(
        xs=f32(0.0213), xz=np.array(131, np.uint8), w=w, ws=(rng.uniform(0.001, 0.01, M)).astype(np.float32),
        wz=np.zeros(M, np.int8), ys=f32(0.173), yz=np.array(97, np.uint8),
        B=rng.integers(-5000, 5000, M).astype(np.int32))))
    cases.append(("QLinearConv s8/s8 per-tensor, dilation 2", 13, [helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], dilations=[2, 2])],
        [("x", s8(2, C, 20, 20))], dict(xs=f32(0.05), xz=np.array(-3, np.int8), w=s8(M, C, 3, 3),
                                        ws=f32(0.004), wz=np.array(0, np.int8), ys=f32(0.37),
                                        yz=np.array(5, np.int8))))
    # QLinearMatMul: batch broadcasting, b per column
    N = 40
    cases.append(("QLinearMatMul u8/u8 batched, b per column", 13, [helper.make_node(
        "QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
        [("a", u8(3, 2, 33, 57))], dict(**{"as": f32(0.011)}, az=np.array(120, np.uint8), b=u8(57, N),
                                         bs=rng.uniform(0.001, 0.02, (1, N)).astype(np.float32),
                                         bz=rng.integers(100, 150, (1, N)).astype(np.uint8), ys=f32(0.29),
                                         yz=np.array(128, np.uint8))))
    cases.append(("QLinearMatMul s8/s8 a per row [M,1]", 13, [helper.make_node(
        "QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
        [("a", s8(33, 57))], dict(**{"as": rng.uniform(0.005, 0.02, (33, 1)).astype(np.float32)},
                                   az=rng.integers(-9, 9, (33, 1)).astype(np.int8), b=s8(57, N), bs=f32(0.013),
                                   bz=np.array(2, np.int8), ys=f32(0.51), yz=np.array(-7, np.int8))))
    cases.append(("ConvInteger u8/u8 per-channel w zero point, pads", 13, [helper.make_node(
        "ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[2, 1, 0, 1])], [("x", u8(3, C, 17, 19))],
        dict(w=u8(M, C, 3, 5), xz=np.array(77, np.uint8), wz=rng.integers(100, 160, M).astype(np.uint8))))
    cases.append(("MatMulInteger s8/u8 b per column", 13, [helper.make_node(
        "MatMulInteger", ["A", "B", "az", "bz"], ["y"])], [("A", s8(5, 31, 64))],
        dict(B=u8(64, N), az=np.array(-4, np.int8), bz=rng.integers(0, 256, N).astype(np.uint8))))
    # QuantizeLinear: ties (x exactly k + 1/2 steps) per axis, int8
    xt = ((np.arange(-300, 300).reshape(6, 100) + 0.5) * np.float32(0.25)).astype(np.float32)
    cases.append(("QuantizeLinear per-axis int8, exact ties", 13, [helper.make_node(
        "QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)], [("x", xt)],
        dict(s=f32(0.25, 0.5, 1, 0.125, 2, 0.25), z=np.array([0, 3, -2, 1, 0, -128], np.int8))))
    xb = rng.standard_normal((4, 10, 6)).astype(np.float32) * 3
    cases.append(("QuantizeLinear 21 blocked (axis 1, block 4) uint8", 21, [helper.make_node(
        "QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=4)], [("x", xb)],
        dict(s=rng.uniform(0.01, 0.05, (4, 3, 6)).astype(np.float32),
             z=rng.integers(100, 150, (4, 3, 6)).astype(np.uint8))))
    cases.append(("DequantizeLinear 21 blocked (axis -1, block 5) int8", 21, [helper.make_node(
        "DequantizeLinear", ["x", "s", "z"], ["y"], axis=-1, block_size=5)], [("x", s8(3, 7, 12))],
        dict(s=rng.uniform(0.01, 0.05, (3, 7, 3)).astype(np.float32), z=s8(3, 7, 3))))
    cases.append(("DequantizeLinear int32 per-axis", 13, [helper.make_node(
        "DequantizeLinear", ["x", "s"], ["y"], axis=1)],
        [("x", rng.integers(-2**30, 2**30, (3, 5)).astype(np.int32))], dict(s=f32(1e-3, 2e-3, 3e-3, 4e-3, 5e-3))))
    cases.append(("DynamicQuantizeLinear", 11, [helper.make_node(
        "DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"])],
        [("x", (rng.standard_normal((7, 300)) * 2 + 0.3).astype(np.float32))], {}))
    ok = True
    print("\nsingle nodes: codes (or values) that differ from the reference evaluator / onnxruntime")
    for i, (label, opset, nodes, inputs, inits) in enumerate(cases):
        m = node_model(nodes, inputs, inits, opset)
        feeds = dict(inputs)
        ref = ReferenceEvaluator(for_reference(m)).run(None, feeds)[0]
        outs = ReferenceEvaluator(for_reference(m)).run(None, feeds)
        for vi, v in zip(m.graph.output, outs):  # typed outputs (onnxruntime wants them)
            vi.type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype)
        path = os.path.join(tmp, f"node{i}.onnx")
        onnx.save(m, path)
        outdir = run_amdnn(amd, path, feeds, tmp, f"node{i}")
        got = read_pb(os.path.join(outdir, nodes[-1].output[0] + ".pb"))
        same_ref = got.dtype == ref.dtype and got.shape == ref.shape and np.array_equal(got, ref)
        try:
            o = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            d = np.abs(got.astype(np.float64) - o.astype(np.float64))
            otxt = f"{int(np.count_nonzero(d))} of {d.size} differ, max {d.max():.3g}"
            bound = 1 if got.dtype in (np.uint8, np.int8) else 0
            if got.dtype != np.float32 and d.max() > bound:
                # onnxruntime's own distance from the reference (its saturating int8 kernels on CPUs
                # without VNNI): over the bound too, the difference is onnxruntime's
                d_ref = np.abs(ref.astype(np.float64) - o.astype(np.float64)).max()
                if same_ref and d_ref > bound:
                    otxt += f"  (onnxruntime {d_ref:.3g} off the reference: its kernels, not ours)"
                else:
                    otxt += "  FAIL (more than one step)"
                    ok = False
        except Exception as e:  # onnxruntime lacks some forms (a per row)
            otxt = "n/a: " + str(e).splitlines()[0][-90:]
        nref = "equal" if same_ref else f"DIFFER ({int(np.count_nonzero(got != ref))} of {ref.size})"
        print(f"  {label:52s} reference: {nref:8s} onnxruntime: {otxt}")
        ok &= same_ref
    return ok


if __name__ == "__main__":
    sys.exit(main())
