#!/usr/bin/env python3
"""Checks torchvision models end to end through amdnn-onnx, for docs/models.md's
supported-models table: for each model, the eval and training forms written
by tools/export_torchvision.py (random weights), then
  loads  `amdnn-onnx info` reads the model;
  eval   `amdnn-onnx run` on a random batch of 2 matches PyTorch's eval-mode
         logits (max |diff| / max |logit| printed);
  grad   `amdnn-onnx grad` runs forward and backward on the training form
         (every op has a backward) and gives a finite loss;
  gpu    the float ops `info` lists as host fallback on the CUDA backend.

    /usr/bin/python3 tools/check_torchvision.py resnet18 mobilenet_v3_small ... \\
        --amdnn build/src/amdnn-onnx --exporter torchscript --tsv results/torchvision_check.tsv
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

try:  # say which interpreter to use, instead of a bare ImportError
    import numpy, onnx, torch, torchvision  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"check_torchvision.py: {e}: run it with a Python that has numpy and onnx and torch and torchvision, e.g. "
             "$(tools/torch_python.sh torch torchvision onnx) tools/check_torchvision.py ...")
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision  # noqa: E402

from onnx import numpy_helper  # noqa: E402

# ops whose tensors are shapes and indices (int64, bool), host-side by design
SHAPE_OPS = {"Constant", "Shape", "Cast", "Gather", "Equal", "ConstantOfShape", "Range", "Where", "Less",
             "Greater", "Not", "And", "Or", "Mod", "Unsqueeze", "Squeeze", "Concat", "Slice", "Reshape",
             "Expand", "Div", "Mul", "Add", "Sub", "Floor", "Ceil", "ScatterND", "Identity", "Size"}


def write_pb(path, arr, name):
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def read_pb(path):
    from onnx import TensorProto
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def check(name, amdnn, exporter, size):
    row = {"model": name}
    with tempfile.TemporaryDirectory() as d:
        torch.manual_seed(0)
        model = export_torchvision.build(name, 1000, size, None).eval()
        try:
            export_torchvision.export(model, os.path.join(d, "m.onnx"), exporter, 0, size, False)
        except Exception as e:  # the exporter's failure, not ours
            row["loads"] = "export failed: %s" % str(e).splitlines()[0][:80]
            return row
        train_export = None
        try:
            torch.manual_seed(0)
            model_t = export_torchvision.build(name, 1000, size, None)
            export_torchvision.export(model_t, os.path.join(d, "m_train.onnx"), exporter, 0, size, True)
        except Exception as e:
            train_export = "training export failed (PyTorch %s): %s" % (torch.__version__,
                                                                        str(e).splitlines()[0][:60])
        rc, out = run([amdnn, "info", os.path.join(d, "m.onnx")])
        if rc:
            row["loads"] = "no: " + out.splitlines()[-1][:120]
            return row
        row["loads"] = "yes"
        m = re.search(r"host fallback:(.*)", out)
        fallback = [] if not m else [f.strip().split(" x")[0] for f in m.group(1).split(",") if f.strip()]
        row["gpu"] = "native" if not [f for f in fallback if f not in SHAPE_OPS and f != "none"] else \
            "fallback: " + " ".join(f for f in fallback if f not in SHAPE_OPS)
        x = torch.rand(2, 3, size, size, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            ref = model.eval()(x).numpy()
        write_pb(os.path.join(d, "x.pb"), x.numpy(), "input")
        rc, out = run([amdnn, "run", os.path.join(d, "m.onnx"), "--input", os.path.join(d, "x.pb"),
                       "--output-dir", os.path.join(d, "out"), "--device", "cpu"])
        if rc:
            row["eval"] = "no: " + out.splitlines()[-1][:120]
        else:
            got = read_pb(os.path.join(d, "out", "logits.pb"))
            row["eval"] = "%.1e" % (np.abs(got - ref).max() / max(1e-30, np.abs(ref).max()))
        if train_export:
            row["grad"] = train_export
            return row
        write_pb(os.path.join(d, "y.pb"), np.array([3, 7], dtype=np.int64), "labels")
        rc, out = run([amdnn, "grad", os.path.join(d, "m_train.onnx"), "--input", os.path.join(d, "x.pb"),
                       "--labels", os.path.join(d, "y.pb"), "--output-dir", os.path.join(d, "g"), "--device", "cpu"])
        if rc:
            row["grad"] = "no: " + out.splitlines()[-1][:120]
        else:
            loss = float(read_pb(os.path.join(d, "g", "loss.pb")))
            row["grad"] = "yes (loss %.3f)" % loss if np.isfinite(loss) else "non-finite loss"
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--amdnn", default="build/src/amdnn-onnx")
    ap.add_argument("--exporter", default="torchscript", choices=("torchscript", "dynamo"))
    ap.add_argument("--tsv")
    a = ap.parse_args()
    cols = ("model", "loads", "eval", "grad", "gpu")
    out = open(a.tsv, "w") if a.tsv else None
    if out:
        out.write("\t".join(cols) + "\n")
    for name in a.models:
        row = check(name, a.amdnn, a.exporter, export_torchvision.default_size(name))
        line = "\t".join(str(row.get(c, "-")) for c in cols)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
