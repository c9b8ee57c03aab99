#!/usr/bin/env python3
"""Quantizes a float ONNX model with onnxruntime's quantize_static, calibrated
on the first images of an MNIST-format data set, for the 8-bit multiplier
modes (--mode q8u:FILE / q8s:FILE; docs/quantized.md, "8-bit multipliers").

usage: quantize_ort.py MODEL.onnx OUT.onnx --calib mnist:DIR [--n 256]
                       [--format qdq|qop] [--act u8|s8] [--weight u8|s8] [--per-channel]
                       [--gemm-to-matmul]

  --calib mnist:DIR   calibration images: the first N of DIR's training split
                      (train-images-idx3-ubyte[.gz]), scaled to [0, 1] and
                      normalised with the training split's mean and std, as
                      `amdnn-onnx eval` / `train` do by default
  --format            qdq (default: QuantizeLinear / DequantizeLinear around the
                      float Conv, Gemm, MatMul) or qop (QLinearConv, QLinearMatMul;
                      needs --gemm-to-matmul for models with Gemm)
  --act, --weight     code types (default u8 / u8: the q8u modes; s8 / s8 for q8s)
  --per-channel       weights per output channel (default per tensor)
  --gemm-to-matmul    rewrite each Gemm as MatMul + Add first

Needs python3 with onnx and onnxruntime (exit 77 when missing)."""
import argparse
import gzip
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
except ImportError as e:
    print(f"quantize_ort: {e} (python3 -m pip install onnx onnxruntime, or run it with a Python that has them:"
          " $(tools/torch_python.sh onnx onnxruntime) tools/quantize_ort.py ...)", file=sys.stderr)
    sys.exit(77)


def read_idx_images(d):
    for name in ("train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as f:
                data = f.read()
            n, h, w = (int.from_bytes(data[4 * k:4 * k + 4], "big") for k in (1, 2, 3))
            return np.frombuffer(data, np.uint8, n * h * w, 16).reshape(n, 1, h, w)
    raise SystemExit(f"quantize_ort: no train-images-idx3-ubyte[.gz] in {d}")


def gemm_to_matmul(model):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    for n in g.node:
        at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if (n.op_type != "Gemm" or n.input[1] not in inits or at.get("transA", 0) or at.get("alpha", 1.0) != 1.0
                or at.get("beta", 1.0) != 1.0):
            nodes.append(n)
            continue
        w = numpy_helper.to_array(inits[n.input[1]])
        if at.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        wname = n.input[1] + "_kn"
        g.initializer.append(numpy_helper.from_array(w, wname))
        if len(n.input) > 2 and n.input[2]:
            mm = n.output[0] + "_mm"
            nodes.append(helper.make_node("MatMul", [n.input[0], wname], [mm], name=n.name + "_matmul"))
            nodes.append(helper.make_node("Add", [mm, n.input[2]], [n.output[0]], name=n.name + "_bias"))
        else:
            nodes.append(helper.make_node("MatMul", [n.input[0], wname], [n.output[0]], name=n.name + "_matmul"))
    del g.node[:]
    g.node.extend(nodes)
    return model


class Reader(CalibrationDataReader):
    def __init__(self, name, batches):
        self.items = [{name: b} for b in batches]

    def get_next(self):
        return self.items.pop(0) if self.items else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--calib", required=True)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--format", choices=["qdq", "qop"], default="qdq")
    ap.add_argument("--act", choices=["u8", "s8"], default="u8")
    ap.add_argument("--weight", choices=["u8", "s8"], default="u8")
    ap.add_argument("--per-channel", action="store_true")
    ap.add_argument("--gemm-to-matmul", action="store_true")
    a = ap.parse_args()
    if not a.calib.startswith("mnist:"):
        raise SystemExit("quantize_ort: --calib takes mnist:DIR")
    imgs = read_idx_images(a.calib[6:]).astype(np.float32) / 255.0
    mean, std = float(imgs.mean()), float(imgs.std())
    x = (imgs[:a.n] - mean) / std
    model = onnx.load(a.model)
    if a.gemm_to_matmul:
        model = gemm_to_matmul(model)
    src = a.out + ".float.onnx"
    onnx.save(model, src)
    qt = {"u8": QuantType.QUInt8, "s8": QuantType.QInt8}
    name = model.graph.input[0].name
    batches = [x[i:i + 32] for i in range(0, len(x), 32)]
    try:
        quantize_static(src, a.out, Reader(name, batches),
                        quant_format=QuantFormat.QDQ if a.format == "qdq" else QuantFormat.QOperator,
                        activation_type=qt[a.act], weight_type=qt[a.weight], per_channel=a.per_channel,
                        op_types_to_quantize=["Conv", "Gemm", "MatMul"])
    finally:
        os.remove(src)
    print(f"wrote {a.out} ({a.format}, activations {a.act}, weights {a.weight}"
          f"{', per channel' if a.per_channel else ''}; calibrated on {len(x)} images)")


if __name__ == "__main__":
    main()
