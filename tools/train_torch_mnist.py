#!/usr/bin/env python3
"""The PyTorch FP32 reference of `amdnn-onnx train` on MNIST (LeNet-5,
LeNet-300-100): the same initial weights, data, order and recipe as

    amdnn-onnx train MODEL_train.onnx --data mnist:DIR --epochs E --batch B --lr LR
        --momentum 0.9 --schedule cosine --seed S [--wd WD] [--limit N]

    $(tools/torch_python.sh torch onnx) tools/train_torch_mnist.py --model models/lenet5_train.onnx \\
        --data /work/shared/data/mnist --epochs 200 --batch 128 --lr 0.05 --metrics out.tsv

What it mirrors (C file of each choice):
- Model: the ONNX graph's nodes are run in order by a small interpreter
  (Conv, Gemm, MatMul, Add, Relu, MaxPool, AveragePool, Flatten, Reshape
  and the Shape/Gather/Unsqueeze/Concat/Constant nodes that compute a
  Reshape's shape); every float initializer is a trained parameter, copied
  bit for bit (amdnn trains its model's own weights: src/train/run.c,
  "--reinit" off; every parameter in one block: src/train/trainer.c).
- Data (src/data/idx.c, src/data/reader_common.c): the IDX files (.gz or
  not) train-*/t10k-*, 60000/10000 images [1, 28, 28]; mean and std of the
  training pixels x/255 over the whole training split (before --limit), in
  double via a 256-bin histogram, then float; each pixel u8 * scale + shift
  in float, scale = float(1/(255 std)), shift = -mean/std (float), two
  roundings (src/data/dataset.c amd_dataset_batch_norm and fill_sample;
  -ffp-contract=off / -fmad=false).
- --limit N (src/data/dataset.c amd_dataset_limit, dataset.h
  amd_spread_index): N samples of EACH split, sample j = j * n // N.
- Order (src/train/run.c train_steps, src/data/dataset.c amd_shuffle_i64):
  every epoch starts from 0..n-1 and is shuffled by Fisher-Yates (i from
  n-1 down, j = below(i + 1)) with splitmix64 seeded
  seed * 0x9e3779b97f4a7c15 ^ (epoch + 1) * 0xbf58476d1ce4e5b9 (epoch from
  0); below() rejects the top partial block. Reproduced exactly here.
- Batches (src/train/run.c start, train_batch): ceil(n / B) per epoch, the
  last partial batch kept (its loss the mean over its own samples).
- Loss (src/core/xent_row.h, src/train/loss.c): softmax cross-entropy on the
  logits, mean over the batch (gradient (p - onehot) / n); no smoothing.
  The reported losses are per-sample losses summed in double.
- Optimizer (src/train/optim.c sgd_loop, src/api/train.c make_cfg): SGD,
  PyTorch form buf = momentum * buf + g (first step buf = g), no dampening,
  no Nesterov, p -= lr * buf; weight decay default 0, when given coupled
  (g + wd * p) on every parameter, biases included. lr, momentum and wd are
  C floats in amd_train_cfg (src/train/run.h), so the base lr is
  float32(LR) here too.
- Schedule (src/train/optim.c amd_schedule_lr, src/train/run.c
  finish_sync): per step s = 0 .. S-1, S = epochs * batches,
  lr(s) = lr0 (1 + cos(pi s / S)) / 2 in double, no warm-up (--warmup 0);
  the lr column is the rate of the epoch's last step (%.6g).
- Metrics (src/train/run.c append_metrics, end_epoch): epoch, hours
  (cumulative training time: the steps, not the evaluation), train_loss and
  train_acc over the epoch's batches (before each update), test_loss,
  test_top1 (the first maximal logit), lr, images_per_s (training images of
  the epoch / its training time). Test evaluated after every epoch in
  batches of B.
FP32 eager, TF32 off, cuDNN deterministic; the whole data set on the device.
The schedule is always cosine; the other defaults are amdnn-onnx's (10
epochs, batch 128, lr 0.01, momentum 0.9, wd 0, seed 1). -o writes the model
with the trained weights. Agreement with amdnn-onnx's CPU build (acc32): the
same metrics to 6 decimals over ~100 steps; later the runs drift apart as any
two float orders of summation do (SGD amplifies 1-ulp differences).
"""
import argparse
import gzip
import math
import os
import sys
import time

try:  # name the interpreter to use instead of a bare ImportError
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"train_torch_mnist.py: {e}: run it with a Python that has numpy, torch and onnx, e.g. "
             "$(tools/torch_python.sh torch onnx) tools/train_torch_mnist.py ...")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amdnn_recipe import evaluate, shuffled  # noqa: E402


# ---------------------------------------------------------------- the model

class OnnxNet(torch.nn.Module):
    """Runs the graph's nodes in order; shape arithmetic stays in numpy."""

    SUPPORTED = {"Conv", "Gemm", "MatMul", "Add", "Relu", "MaxPool", "AveragePool", "Flatten", "Reshape",
                 "Shape", "Gather", "Unsqueeze", "Concat", "Constant", "Identity"}

    def __init__(self, path):
        super().__init__()
        g = onnx.load(path).graph
        bad = sorted({n.op_type for n in g.node} - self.SUPPORTED)
        if bad:
            sys.exit(f"train_torch_mnist.py: {path}: ops not supported: {', '.join(bad)} "
                     f"(supported: {', '.join(sorted(self.SUPPORTED))})")
        self.nodes = [(n.op_type, list(n.input), list(n.output),
                       {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}) for n in g.node]
        self.params = {}  # initializer name -> parameter
        self.consts = {}  # non-float initializers (shapes)
        for init in g.initializer:
            a = onnx.numpy_helper.to_array(init)
            if a.dtype == np.float32:
                p = torch.nn.Parameter(torch.from_numpy(a.copy()))
                self.register_parameter(init.name.replace(".", "_"), p)
                self.params[init.name] = p
            else:
                self.consts[init.name] = a
        inits = {i.name for i in g.initializer}
        self.input = [i.name for i in g.input if i.name not in inits][0]
        self.output = g.output[0].name

    def forward(self, x):
        v = dict(self.params)
        v.update(self.consts)
        v[self.input] = x
        for op, ins, outs, at in self.nodes:
            a = [v[i] if i else None for i in ins]
            v[outs[0]] = self.run_node(op, a, at)
        return v[self.output]

    @staticmethod
    def run_node(op, a, at):
        if op == "Constant":
            return onnx.numpy_helper.to_array(at["value"])
        if op == "Identity":
            return a[0]
        if op == "Shape":
            return np.array(a[0].shape, dtype=np.int64)
        if op == "Gather":
            return np.take(a[0], a[1], axis=at.get("axis", 0))
        if op == "Unsqueeze":  # opset 13: axes as an input
            axes = at["axes"] if "axes" in at else list(a[1])
            return np.expand_dims(a[0], tuple(int(i) for i in axes))
        if op == "Concat":
            return np.concatenate([np.atleast_1d(t) for t in a], axis=at["axis"])
        if op == "Reshape":
            shape = [int(d) for d in a[1]]
            shape = [a[0].shape[i] if d == 0 and not at.get("allowzero", 0) else d for i, d in enumerate(shape)]
            return a[0].reshape(shape)
        if op == "Flatten":
            ax = at.get("axis", 1)
            return a[0].reshape(math.prod(a[0].shape[:ax]), -1)
        if op == "Relu":
            return F.relu(a[0])
        if op == "Add":
            return a[0] + a[1]
        if op == "MatMul":
            return torch.matmul(a[0], a[1])
        if op == "Gemm":
            x, w, c = a[0], a[1], a[2] if len(a) > 2 else None
            alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
            if at.get("transA", 0):
                x = x.t()
            if at.get("transB", 0) and alpha == 1.0 and beta == 1.0 and c is not None and c.dim() == 1:
                return F.linear(x, w, c)  # nn.Linear
            y = torch.matmul(x, w.t() if at.get("transB", 0) else w)
            y = y if alpha == 1.0 else alpha * y
            return y if c is None else y + (c if beta == 1.0 else beta * c)
        if op in ("Conv", "MaxPool", "AveragePool"):
            if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                sys.exit(f"train_torch_mnist.py: {op} with auto_pad is not supported")
            pads = list(at.get("pads", [0, 0, 0, 0]))
            x = a[0]
            if pads[:2] != pads[2:]:  # asymmetric: pad first
                x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]), value=-math.inf if op == "MaxPool" else 0.0)
                pads = [0, 0, 0, 0]
            strides = at.get("strides", [1, 1])
            if op == "Conv":
                return F.conv2d(x, a[1], a[2] if len(a) > 2 else None, stride=strides, padding=pads[:2],
                                dilation=at.get("dilations", [1, 1]), groups=at.get("group", 1))
            k = at["kernel_shape"]
            if op == "MaxPool":
                return F.max_pool2d(x, k, strides, pads[:2], dilation=at.get("dilations", [1, 1]),
                                    ceil_mode=bool(at.get("ceil_mode", 0)))
            return F.avg_pool2d(x, k, strides, pads[:2], ceil_mode=bool(at.get("ceil_mode", 0)),
                                count_include_pad=bool(at.get("count_include_pad", 0)))
        raise AssertionError(op)


def check_model(net, path, x):
    """The module's logits against onnx's reference evaluator, or the model's golden files."""
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        ReferenceEvaluator = None
    with torch.no_grad():
        if ReferenceEvaluator is not None:
            want = ReferenceEvaluator(path).run(None, {net.input: x.cpu().numpy()})[0]
            got, what = net(x).cpu().numpy(), "onnx.reference"
        else:
            stem = path[:-len("_train.onnx")] if path.endswith("_train.onnx") else path[:-len(".onnx")]
            gin, gout = stem + ".input.pb", stem + "_train.logits.pb"
            if not (os.path.exists(gin) and os.path.exists(gout)):
                print("model check skipped: no onnx.reference (onnx < 1.13) and no golden files", flush=True)
                return
            def read(p):
                t = onnx.TensorProto()
                with open(p, "rb") as f:
                    t.ParseFromString(f.read())
                return onnx.numpy_helper.to_array(t).copy()
            want = read(gout)
            got = net(torch.from_numpy(read(gin)).to(x.device)).cpu().numpy()
            what = "the golden logits " + os.path.basename(gout)
    err = float(np.max(np.abs(got - want)))
    if not err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))):
        sys.exit(f"train_torch_mnist.py: the torch module differs from {what}: max |diff| {err:g}")
    print(f"model check: torch module = {what} (max |diff| {err:.2g})", flush=True)


# ---------------------------------------------------------------- the data

def read_idx(data, name, magic):
    for p in (os.path.join(data, name), os.path.join(data, name + ".gz")):
        if os.path.isfile(p):
            with (gzip.open if p.endswith(".gz") else open)(p, "rb") as f:
                raw = f.read()
            break
    else:
        sys.exit(f"train_torch_mnist.py: missing file: neither {p[:-3]} nor {p} exists")
    if int.from_bytes(raw[:4], "big") != magic:
        sys.exit(f"train_torch_mnist.py: {p}: not an IDX file of magic {magic}")
    if magic == 2051:
        n, r, c = (int.from_bytes(raw[k:k + 4], "big") for k in (4, 8, 12))
        return np.frombuffer(raw, np.uint8, n * r * c, 16).reshape(n, 1, r, c)
    n = int.from_bytes(raw[4:8], "big")
    return np.frombuffer(raw, np.uint8, n, 8).astype(np.int64)


def load_mnist(data, limit):
    xtr = read_idx(data, "train-images-idx3-ubyte", 2051)
    ytr = read_idx(data, "train-labels-idx1-ubyte", 2049)
    xte = read_idx(data, "t10k-images-idx3-ubyte", 2051)
    yte = read_idx(data, "t10k-labels-idx1-ubyte", 2049)
    # statistics of the whole training split (src/data/reader_common.c amd_data_stats_u8)
    hist = np.bincount(xtr.reshape(-1), minlength=256)
    s = s2 = 0.0
    for v in range(256):
        x = v / 255.0
        s += float(hist[v]) * x
        s2 += float(hist[v]) * x * x
    cnt = float(xtr.size)
    m = s / cnt
    var = s2 / cnt - m * m
    sd = math.sqrt(var) if var > 0 else 0.0
    mean = np.float32(m)
    std = np.float32(sd) if sd > 1e-12 else np.float32(1.0)
    scale = np.float32(1.0 / (255.0 * float(std)))
    shift = np.float32(-mean) / std

    def norm(u8):
        return torch.from_numpy(u8.astype(np.float32) * scale + shift)  # two float roundings

    def keep(x, y):
        if not limit or len(y) <= limit:
            return x, y
        idx = np.array([j * len(y) // limit for j in range(limit)])
        return x[idx], y[idx]
    xtr, ytr = keep(xtr, ytr)
    xte, yte = keep(xte, yte)
    return norm(xtr), torch.from_numpy(ytr), norm(xte), torch.from_numpy(yte), float(mean), float(std)


# ---------------------------------------------------------------- training

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the training model, e.g. models/lenet5_train.onnx")
    ap.add_argument("--data", required=True, help="the MNIST folder (IDX files, .gz or not)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=0.0, help="weight decay, on every parameter (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--limit", type=int, default=0, help="N samples of each split, sample j = j*n//N")
    ap.add_argument("--metrics", help="the per-epoch TSV")
    ap.add_argument("-o", "--output", help="the model with the trained weights (the ONNX file, initializers replaced)")
    a = ap.parse_args()
    for p in (a.model, a.data):
        if not os.path.exists(p):
            sys.exit(f"train_torch_mnist.py: {p}: no such file or folder")
    if a.epochs < 1 or a.batch < 1 or not a.lr > 0 or a.limit < 0:
        sys.exit("train_torch_mnist.py: --epochs, --batch and --lr must be positive, --limit >= 0")
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("train_torch_mnist.py: --device cuda but torch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(a.seed)

    xtr, ytr, xte, yte, mean, std = load_mnist(a.data, a.limit)
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    net = OnnxNet(a.model).to(dev)
    check_model(net, a.model, xte[:8])
    n = len(ytr)
    batches = (n + a.batch - 1) // a.batch
    total = batches * a.epochs
    lr0 = float(np.float32(a.lr))  # a C float in amd_train_cfg
    opt = torch.optim.SGD(net.parameters(), lr=lr0, momentum=float(np.float32(a.momentum)), dampening=0,
                          nesterov=False, weight_decay=float(np.float32(a.wd)), foreach=False)
    print(f"{a.model}: {sum(p.numel() for p in net.parameters())} parameters; mnist {n} train / {len(yte)} test, "
          f"mean {mean:.4f} std {std:.4f}; {a.epochs} epochs of {batches} batches of {a.batch}, SGD lr {a.lr} "
          f"cosine momentum {a.momentum} wd {a.wd}, torch {torch.__version__} on {dev}", flush=True)

    rows = ["epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s"]
    step, hours = 0, 0.0
    for epoch in range(a.epochs):
        perm = torch.from_numpy(shuffled(n, a.seed, epoch)).to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        top1 = torch.zeros((), dtype=torch.int64, device=dev)
        for b in range(batches):
            idx = perm[b * a.batch:(b + 1) * a.batch]
            x, y = xtr[idx], ytr[idx]
            lr = lr0 * (1 + math.cos(math.pi * step / total)) / 2
            for g in opt.param_groups:
                g["lr"] = lr
            z = net(x)
            loss = F.cross_entropy(z, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            with torch.no_grad():
                loss_sum += F.cross_entropy(z.detach().double(), y, reduction="sum")
                top1 += (z.detach().argmax(1) == y).sum()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        hours += dt / 3600
        train_loss, train_acc = loss_sum.item() / n, top1.item() / n
        test_loss, test_acc = evaluate(net, xte, yte, a.batch)
        rows.append("%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6g\t%.1f" % (
            epoch + 1, hours, train_loss, train_acc, test_loss, test_acc, lr, n / dt if dt > 0 else 0))
        print(f"epoch {epoch + 1}/{a.epochs}: train loss {train_loss:.4f} acc {100 * train_acc:.2f}%, "
              f"test loss {test_loss:.4f} top-1 {100 * test_acc:.2f}%, lr {lr:.6g}, {n / dt:.0f} images/s",
              flush=True)
        if a.metrics:
            tmp = a.metrics + ".tmp"
            with open(tmp, "w") as f:
                f.write("\n".join(rows) + "\n")
            os.replace(tmp, a.metrics)
    if a.output:
        m = onnx.load(a.model)
        for init in m.graph.initializer:
            if init.name in net.params:
                init.CopyFrom(onnx.numpy_helper.from_array(net.params[init.name].detach().cpu().numpy(), init.name))
        onnx.save(m, a.output)
        print(f"wrote {a.output}", flush=True)


if __name__ == "__main__":
    main()
