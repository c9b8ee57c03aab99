"""Writes Fashion-MNIST training samples as TensorProto files for
`--data tensors:X.pb,Y.pb`, normalised (mean 0.2860, std 0.3530):
  OUT/X.pb, OUT/Y.pb   the first N samples, [N,1,28,28] float and [N] int64
  OUT/Xnan.pb          the same with one NaN pixel in sample K
  OUT/Xbig.pb          the same with sample K made of finite values of +-3e38,
                       signed as MODEL's first Conv filter (tiled): the
                       filter's response overflows to Inf, the next Conv adds
                       +Inf and -Inf, and the loss of that batch is NaN
usage: make_tensors.py FASHION_DIR MODEL N K OUT_DIR"""
import gzip
import sys

import numpy as np
import onnx
from onnx import numpy_helper

src, model, n, k, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
with gzip.open(f"{src}/train-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
with gzip.open(f"{src}/train-labels-idx1-ubyte.gz") as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
x = ((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530).astype(np.float32)
xnan = x.copy()
xnan[k, 0, 14, 14] = np.nan
m = onnx.load(model)
conv = next(node for node in m.graph.node if node.op_type == "Conv")
w = next(numpy_helper.to_array(i) for i in m.graph.initializer if i.name == conv.input[1])
sign = np.where(w[0, 0] < 0, -1.0, 1.0).astype(np.float32)
kh, kw = sign.shape
xbig = x.copy()
xbig[k, 0] = np.float32(3e38) * np.tile(sign, (28 // kh + 1, 28 // kw + 1))[:28, :28]


def save(name, a):
    with open(f"{out}/{name}.pb", "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())


save("X", x)
save("Y", y.astype(np.int64))
save("Xnan", xnan)
save("Xbig", xbig)
