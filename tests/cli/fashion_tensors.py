"""Writes the first N Fashion-MNIST images (normalised with mean 0.2860, std
0.3530) and labels as TensorProto files X.pb [N,1,28,28] float and Y.pb [N]
int64, for `--data tensors:X.pb,Y.pb` and for onnxruntime.
usage: fashion_tensors.py FASHION_DIR N OUT_DIR"""
import gzip
import sys

import numpy as np
from onnx import numpy_helper

src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with gzip.open(f"{src}/t10k-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
with gzip.open(f"{src}/t10k-labels-idx1-ubyte.gz") as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
x = ((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530).astype(np.float32)
for name, a in (("X", x), ("Y", y.astype(np.int64))):
    with open(f"{out}/{name}.pb", "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())
