#!/usr/bin/env python3
"""The table-derived backward of the q8 modes (`--q8-grad table`):

  - `grad` of LeNet-5 on the golden batch in q8u:exact: `--q8-grad table`
    writes the same loss and gradients as `--q8-grad ste`, byte for byte (the
    exact table's slopes are 0);
  - with a truncated multiplier (partial products of columns i + j < 4 left
    out, written here as an AMDQ8TAB file): the same loss (the forward does
    not change), gradients that differ from the STE's but still correlate
    with them (0.9 or more per parameter);
  - `train` with that table and `--q8-grad table` on 2048 Fashion-MNIST
    images for two epochs: exit 0, the run announces the option, the second
    epoch's training loss under the first's;
  - a checkpoint written with `--q8-grad table` does not resume with `ste`;
  - bad values fail with a message: `train --q8-grad foo` (exit 2),
    `grad --q8-grad foo` (exit 2), and `--q8-grad table` with no node quantized on the
    fly (acc32).

usage: q8_grad_table.py AMDNN_ONNX MODELS_DIR FASHION_DIR   (77 without onnx/numpy or the data)
"""
import os
import re
import struct
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


def write_trunc_table(path, cut):
    """AMDQ8TAB (docs/quantized.md): header 'AMDQ8TAB', 'u', version 1, 6 zero
    bytes, then 65536 little-endian int32, entry [a * 256 + b]."""
    a = np.arange(256, dtype=np.int64)[:, None]
    b = np.arange(256, dtype=np.int64)[None, :]
    t = np.zeros((256, 256), dtype=np.int64)
    for i in range(8):
        for j in range(8):
            if i + j >= cut:
                t += ((a >> i) & 1) * ((b >> j) & 1) << (i + j)
    with open(path, "wb") as f:
        f.write(b"AMDQ8TAB" + b"u" + bytes([1]) + bytes(6))
        f.write(struct.pack("<65536i", *t.ravel().tolist()))


with tempfile.TemporaryDirectory() as tmp:
    trunc = os.path.join(tmp, "trunc4.amdq8")
    write_trunc_table(trunc, 4)
    golden = os.path.join(models, "golden", "lenet5")
    model = os.path.join(models, "lenet5_train.onnx")

    def grads(mode, kind):
        out = os.path.join(tmp, "%s_%s" % (os.path.basename(mode), kind))
        rc, log = run("grad", model, "--input", os.path.join(golden, "input.pb"), "--labels",
                      os.path.join(golden, "labels.pb"), "--output-dir", out, "--mode", mode, "--q8-grad", kind,
                      "--device", "cpu")
        check(rc == 0, f"grad in {mode} --q8-grad {kind}: exit {rc}")
        if rc:
            print(log)
            sys.exit(1)
        raw = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
        arr = {f: numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f))) for f in raw}
        return raw, arr

    # exact table: byte for byte
    (rs, _), (rt, _) = grads("q8u:exact", "ste"), grads("q8u:exact", "table")
    check(sorted(rs) == sorted(rt) and all(rs[f] == rt[f] for f in rs),
          f"q8u:exact: --q8-grad table = ste byte for byte ({len(rs)} files)")

    # truncated multiplier: same loss, different but correlated gradients
    (_, s), (_, t) = grads("q8u:" + trunc, "ste"), grads("q8u:" + trunc, "table")
    check(float(s["loss.pb"]) == float(t["loss.pb"]), f"truncated table: the same loss {float(t['loss.pb']):.6f}")
    for f in sorted(s):
        if f == "loss.pb" or s[f].size < 2 or f.startswith("fc3.bias"):
            continue  # fc3.bias: after the last product, no table term
        r = float(np.corrcoef(s[f].ravel(), t[f].ravel())[0, 1])
        d = float(np.linalg.norm(s[f] - t[f]) / np.linalg.norm(s[f]))
        check(r >= 0.9 and d > 1e-3, f"truncated table, {f}: correlation {r:.4f} with ste's, relative difference {d:.3f}")

    # training
    rc, log = run("train", model, "--data", "mnist:" + fashion, "--limit", "2048", "--epochs", "2", "--batch", "64",
                  "--lr", "0.05", "--mode", "q8u:" + trunc, "--q8-grad", "table", "--device", "cpu",
                  "-o", os.path.join(tmp, "t.onnx"))
    losses = [float(x) for x in re.findall(r"^epoch \d+/\d+\s+train loss ([0-9.]+)", log, re.M)]
    check(rc == 0 and "table-derived q8 gradients" in log and len(losses) == 2 and losses[1] < losses[0],
          f"train with --q8-grad table: exit {rc}, training losses {losses}")
    if rc:
        print(log)

    # the option is part of a checkpoint's identity
    ck = os.path.join(tmp, "ck")
    common = ["train", model, "--data", "mnist:" + fashion, "--limit", "256", "--epochs", "1", "--batch", "64",
              "--mode", "q8u:" + trunc, "--device", "cpu", "-o", os.path.join(tmp, "r.onnx"), "--checkpoint-dir", ck]
    rc1, log1 = run(*common, "--q8-grad", "table", "--stop-after", "2")
    rc2, log2 = run(*common, "--resume")
    check(rc1 == 3 and rc2 != 0 and "q8grad=table" in log2,
          f"a --q8-grad table checkpoint does not resume with ste: exits {rc1}, {rc2}: {log2.strip()[-160:]}")

    # bad values
    rc, log = run("train", model, "--data", "mnist:" + fashion, "-o", os.path.join(tmp, "x.onnx"), "--q8-grad", "foo")
    check(rc == 2 and "--q8-grad: 'foo' is not one of ste, table" in log, f"train --q8-grad foo: exit {rc}: {log.strip()}")
    for mode, kind, want, want_rc in (("q8u:exact", "foo", "--q8-grad: 'foo' is not one of ste, table", 2),
                                      ("acc32", "table", "no node is quantized on the fly", 1)):
        rc, log = run("grad", model, "--input", os.path.join(golden, "input.pb"), "--labels",
                      os.path.join(golden, "labels.pb"), "--output-dir", os.path.join(tmp, "bad"), "--mode", mode,
                      "--q8-grad", kind, "--device", "cpu")
        check(rc == want_rc and want in log, f"grad --mode {mode} --q8-grad {kind}: exit {rc}: {log.strip()}")

finish()
