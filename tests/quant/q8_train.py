#!/usr/bin/env python3
"""Training in the q8 modes (a float model quantized on the fly, backward by
the straight-through estimator):

  - `grad` of LeNet-5 on the golden batch in q8u:exact against acc32: the same
    loss within 1e-3 and, for every parameter, gradients that correlate at
    0.95 or more (the STE's gradient is the float op's, at the quantized
    forward's activations) but are not identical;
  - `train` in q8u:exact on 2048 Fashion-MNIST images for two epochs: exit 0,
    the second epoch's training loss under the first's, and the written model
    evaluates in q8u:exact.

usage: q8_train.py AMDNN_ONNX MODELS_DIR FASHION_DIR   (77 without onnx/numpy or the data)
"""
import os
import re
import sys
import tempfile

from fashion_cli import check, finish, run, start

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("SKIP: needs onnx and numpy")
    sys.exit(77)

_, models, fashion = start()


with tempfile.TemporaryDirectory() as tmp:
    golden = os.path.join(models, "golden", "lenet5")
    grads = {}
    for mode in ("acc32", "q8u:exact"):
        out = os.path.join(tmp, mode.replace(":", "_"))
        rc, log = run("grad", os.path.join(models, "lenet5_train.onnx"), "--input", os.path.join(golden, "input.pb"),
                      "--labels", os.path.join(golden, "labels.pb"), "--output-dir", out, "--mode", mode,
                      "--device", "cpu")
        check(rc == 0, f"grad in {mode}: exit {rc}")
        if rc:
            print(log)
            sys.exit(1)
        grads[mode] = {f: numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f))) for f in os.listdir(out)}
    a, q = grads["acc32"], grads["q8u:exact"]
    check(abs(float(a["loss.pb"]) - float(q["loss.pb"])) <= 1e-3 * abs(float(a["loss.pb"])),
          f"loss {float(a['loss.pb']):.6f} (acc32) vs {float(q['loss.pb']):.6f} (q8u:exact)")
    for f in sorted(a):
        if f == "loss.pb" or a[f].size < 2:
            continue
        r = float(np.corrcoef(a[f].ravel(), q[f].ravel())[0, 1])
        check(r >= 0.95 and not np.array_equal(a[f], q[f]), f"{f}: correlation {r:.4f} with acc32's, not equal")

    rc, log = run("train", os.path.join(models, "lenet5_train.onnx"), "--data", "mnist:" + fashion, "--limit", "2048",
                  "--epochs", "2", "--batch", "64", "--lr", "0.05", "--mode", "q8u:exact", "--device", "cpu",
                  "-o", os.path.join(tmp, "q8.onnx"))
    losses = [float(x) for x in re.findall(r"^epoch \d+/\d+\s+train loss ([0-9.]+)", log, re.M)]
    check(rc == 0 and len(losses) == 2 and losses[1] < losses[0],
          f"train in q8u:exact: exit {rc}, training losses {losses}")
    if rc:
        print(log)
    rc, log = run("eval", os.path.join(tmp, "q8.onnx"), "--data", "mnist:" + fashion, "--limit", "512",
                  "--mode", "q8u:exact", "--device", "cpu")
    check(rc == 0 and re.search(r"^top1 ", log, re.M) is not None, f"eval of the written model in q8u:exact: exit {rc}")

finish()
