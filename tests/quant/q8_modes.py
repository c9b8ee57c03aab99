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
  - --mode-map puts a single node in a q8 mode;
  - errors: the other signedness's mode names the node; the float model in a
    q8 mode says to quantize it first (quantize_static); --mode-map can keep
    its float nodes in acc32.
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
    args = [amd, "run", model, "--input", inp, "--output-dir", out, "--device", "cpu"]
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
            if tag == "qdq-u8":  # one node by name in a q8 mode, the rest float
                conv = next(n.name for n in onnx.load(q).graph.node if n.op_type == "Conv")
                one, err = run(q, x, tmp, "one", None, f"{conv}=q8u:{approx['u']}")
                d1 = float(np.max(np.abs(one - base))) if one is not None else -1
                check(one is not None and 0 < d1, f"{label}: --mode-map {conv}=q8u:TABLE alone changes it ({d1:.4g}) {err}")
        # the float model
        _, err = run(src, x, tmp, "float", "q8u:exact")
        check("quantize_static" in err and "node '" in err, f"{mname} float model in q8u:exact refused: {err[:120]}")
        y, err = run(src, x, tmp, "float-map", "q8u:exact", "Conv=acc32,Gemm=acc32")
        check(y is not None, f"{mname} float model, q8u:exact with Conv=acc32,Gemm=acc32 runs {err}")
sys.exit(1 if fails else 0)
