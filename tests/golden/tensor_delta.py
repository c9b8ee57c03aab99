#!/usr/bin/python3
"""Writes A - B for every TensorProto file of folder A that folder B also has
(same file name, same shape), into OUTDIR under the same name, as float32
(computed in float64). train_golden.sh uses it to compare the updates of
3 SGD steps (trained - initial) besides the trained values themselves.

    /usr/bin/python3 tests/golden/tensor_delta.py A_DIR B_DIR OUTDIR

Exit status 1 on a shape mismatch or an unreadable file. Needs python3-onnx.
"""

import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def read(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, onnx.numpy_helper.to_array(t)


def main():
    if len(sys.argv) != 4:
        print("usage: %s A_DIR B_DIR OUTDIR" % sys.argv[0], file=sys.stderr)
        return 2
    a_dir, b_dir, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    for f in sorted(os.listdir(a_dir)):
        if not f.endswith(".pb") or not os.path.isfile(os.path.join(b_dir, f)):
            continue
        name, a = read(os.path.join(a_dir, f))
        _, b = read(os.path.join(b_dir, f))
        if a.shape != b.shape:
            print("%s: shape %s in %s, %s in %s" % (f, a.shape, a_dir, b.shape, b_dir), file=sys.stderr)
            return 1
        d = a.astype(np.float64) - b.astype(np.float64)
        t = onnx.numpy_helper.from_array(np.array(d, dtype=np.float32, order="C"), name)
        with open(os.path.join(out_dir, f), "wb") as fp:
            fp.write(t.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
