#!/usr/bin/env python3
"""The PyTorch FP32 side of the CIFAR-10 recipes of `amdnn-onnx train --data
cifar10:DIR`: the same model and initial weights, the same pixels, order,
augmentation draws, loss, optimiser and schedule, FP32 eager with TF32 off.

    # the ResNet rows of the accuracy table (tools/resnet_table.sh runs this)
    $(tools/torch_python.sh torch onnx) tools/train_torch_cifar.py --model resnet18 \\
        --init OUT/resnet18_train.onnx --data DIR --epochs 30 --batch 256 --optimizer sgd \\
        --lr 0.2 --momentum 0.9 --nesterov --wd 5e-4 --schedule onecycle --label-smoothing 0.1 \\
        --augment crop:4,flip --seed 1 --metrics out.tsv --checkpoint-dir ck --walltime 9m --resume
    # the mirror of:
    amdnn-onnx train OUT/resnet18_train.onnx --data cifar10:DIR --epochs 30 --batch 256 --optimizer sgd \\
        --lr 0.2 --momentum 0.9 --nesterov --wd 5e-4 --schedule onecycle --label-smoothing 0.1 \\
        --augment crop:4,flip --seed 1 --metrics out.tsv
    # the transformer and mobile recipe of tools/train_cifar.sh (AdamW, the defaults)
    $(tools/torch_python.sh torch torchvision) tools/train_torch_cifar.py --model vit_cifar --data DIR \\
        --epochs 30 --batch 256 --lr 1e-3 --wd 0.05 --label-smoothing 0.1 --metrics results/x.tsv

Models: resnet8 (for tests), resnet18, resnet34, resnet50 (the CIFAR forms of
tools/export_models.py: 3x3 stem, no max-pool), and transformer_encoder,
vit_cifar, mobilenet_v3_cifar (tools/export_torchvision.py, built after
torch.manual_seed(0) as that script does).

What it mirrors (the C file of each choice):
- Initial weights. The ResNets are built as tools/export_models.py builds
  them (torch.manual_seed(SEED), the constructor, warm_up_bn from seed
  SEED + 1); its training export (`export(..., training=True)`) traces one
  train-mode forward of its input batch (seed SEED + 2), which moves the BN
  running statistics once: that forward is replayed here, so the module
  equals NAME_train.onnx bit for bit, running statistics included (checked
  with resnet8 and resnet18, torch 1.13). --init FILE compares every tensor
  with FILE's initializer of the same name, says how many are equal, and
  takes FILE's value where one differs: amdnn-onnx starts from FILE's
  initializers (src/train/run.c, no --reinit), so with --init both start
  from the same bits whatever the torch version.
- Data (src/data/cifar.c, src/data/reader_common.c amd_data_stats_u8,
  src/data/dataset.c amd_dataset_batch_norm, fill_sample): data_batch_1..5
  and test_batch, .bin or .bin.gz; per-channel mean and std of x/255 over
  the whole training split (before --limit) in double via a 256-bin
  histogram, then float; a pixel is u8 * scale + shift in float (two
  roundings), scale = float(1 / (255 std)), shift = -mean / std in float.
- --limit N (src/data/dataset.c amd_dataset_limit): N samples of EACH split
  that has more, sample j = j * n // N.
- Order (src/train/run.c train_steps, src/data/dataset.c amd_shuffle_i64):
  each epoch 0..n-1 shuffled by Fisher-Yates (i from n-1 down, j =
  below(i + 1)), splitmix64 seeded seed * 0x9e3779b97f4a7c15 ^ (epoch + 1) *
  0xbf58476d1ce4e5b9; ceil(n / global batch) batches, the last one short.
- Augmentation (--augment crop:P,flip,flip:alt,cutout:S; src/data/dataset.c
  plan_sample, fill_sample; src/train/run.c train_batch): amdnn-onnx draws
  from its own splitmix64 stream, started at seed * 0x9e3779b97f4a7c15 + 1
  and never reset, per sample in batch order: dy, dx = below(2P + 1) - P,
  mirror = the top bit of a draw, cutout centre below(H), below(W). Those
  draws are reproduced here exactly, so with augmentation too both sides see
  the same crops and flips of the same images at every step: pad with the
  normalised value of a zero pixel (shift), crop, then mirror the crop;
  cutout zeroes a square after normalisation. (PyTorch's own generators could
  not give amdnn-onnx's draws; this replaces them.) flip:alt draws nothing:
  sample s (its index in the split) is mirrored when the top bit of
  splitmix64(seed x 0x94d049bb133111eb + 3 + (s + 1) GAMMA) differs from the
  epoch's parity.
- --ranks R: the data-parallel run of R amdnn-onnx ranks (`mpirun -np R`,
  --batch per rank; docs/distributed.md, src/train/dist.c amd_dist_share,
  amd_dist_rng_split, amd_dist_sync_stats) on one device: rank r takes
  samples [b r / R, b (r + 1) / R) of each global batch b, draws its
  augmentation from the stream splitmix64(shared ^ 0xd1b54a32d192ed03 (r + 1))
  (the shared stream moving on one draw a step), normalises with the
  BatchNorm statistics of its own share, and the running statistics after
  the step are the mean of the ranks' (each updated from the same old
  ones). Each share goes through the model separately, the loss is the mean
  over the global batch. (Without --sync-bn in amdnn-onnx; that is its
  default.)
- Loss (src/core/xent_row.h): softmax cross-entropy, label smoothing s (a C
  float): -(1 - s) log p_y - s / C sum_j log p_j, the mean over the batch;
  the reported train loss is the smoothed per-sample loss summed in double,
  the test loss unsmoothed.
- BatchNormalization (src/ops/norm.c): batch statistics in training, the
  running ones in evaluation; running variance from the unbiased batch
  variance, momentum 0.9 (amdnn-onnx takes the ONNX attribute, the float
  0.9, PyTorch 0.1 in double: 2e-8 apart).
- Optimiser (src/train/optim.c, src/api/train.c make_cfg, src/train/run.c
  setup_inputs): --optimizer sgd: buf = momentum buf + d (d = g + wd p),
  Nesterov d + momentum buf, p -= lr d; weight decay coupled and on EVERY
  parameter (one flat block: conv and linear weights, the linear bias, BN
  weights and biases). adamw: torch.optim.AdamW (betas 0.9, 0.999, eps 1e-8,
  decoupled decay p *= 1 - lr wd). lr, momentum, wd and the label smoothing
  are C floats in amdnn-onnx (src/train/run.h amd_train_cfg): float32 here
  too.
- Schedule (src/train/optim.c amd_schedule_lr; per step s of S = epochs x
  batches): constant; cosine[:MIN] = MIN + (lr - MIN)(1 + cos(pi t / T)) / 2
  over the steps after the warm-up; onecycle[:PCT] = PyTorch's OneCycleLR
  (cos, div_factor 25, final_div_factor 1e4, PCT default 0.3, no --warmup);
  step:E1,E2[:GAMMA]; triangle[:PCT[:START[:END]]] = up = int(PCT S), lr
  (START + (1 - START) s / up) before it, then lr (1 + (END - 1)(s - up) /
  (S - up)); --warmup N epochs: lr (s + 1) / (N batches) over the first N
  epochs (not with onecycle or triangle). The lr column is the rate of the
  epoch's last step (%.6g).
- Lookahead (--lookahead K[:D]; src/train/trainer_lookahead.c, run.c): a
  slow copy of the parameters and BN running statistics taken at the start;
  after every K-th step s, d = float(D (s / S)^3) (D default 0.95^K), slow =
  d slow + (1 - d) w (float products, then the sum), w = slow; after the
  last step of the run, w = slow. The checkpoints keep the slow copy.
- Metrics (src/train/run.c append_metrics): epoch, hours (cumulative time of
  the training steps, evaluation excluded), train_loss, train_acc (over the
  epoch's batches, before each update), test_loss, test_top1 (first maximal
  logit), lr, images_per_s. The test split is evaluated after every epoch in
  batches of --batch.
- Checkpoints (--checkpoint-dir, --resume, --walltime as in amdnn-onnx): the
  state after each epoch (model, optimiser, streams, rows) in DIR/torch.ckpt;
  --walltime T (90m, 540s, 1h30m) stops before the epoch that would not end
  in time, exit status 3, and --resume continues from that epoch (a
  checkpoint of other options is refused).

Defaults are this script's earlier AdamW recipe (tools/train_cifar.sh):
--optimizer adamw --lr 1e-3 --wd 0.05 (sgd: 0, amdnn-onnx's default)
--schedule onecycle --label-smoothing 0.1 --augment crop:4,flip --seed 1,
epochs 30, batch 256. FP32 eager, TF32 off; cudnn.benchmark on a GPU.
Agreement with amdnn-onnx's CPU build in acc32 (tests/train/
torch_reference_cifar.sh: resnet8 on random CIFAR-format images, 2 epochs of
4 steps, with crop and flip, without, and 2 ranks against mpirun -np 2): the
same lr column, train loss within 1.5e-5, test loss within 1.1e-4, top-1
within one sample; the first epoch's metrics often to all 6 decimals. Later
the runs drift apart as any two float summation orders do (this ResNet-8 is
ill-conditioned: after 4 steps on real CIFAR-10 images PyTorch's own float32
and float64 runs differ by 10% of a layer's update, amdnn-onnx and float64
by 18%).
"""
import argparse
import gzip
import math
import os
import sys
import time
import zlib

try:  # name the interpreter to use instead of a bare ImportError
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"train_torch_cifar.py: {e}: run it with a Python that has numpy and torch (and onnx for the "
             "ResNets and --init, torchvision for vit_cifar and mobilenet_v3_cifar), e.g. "
             "$(tools/torch_python.sh torch onnx) tools/train_torch_cifar.py ...")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from amdnn_recipe import GAMMA, M64, Stream, evaluate, rejected, shuffled, splitmix_array  # noqa: E402

RESNETS = ("resnet8", "resnet18", "resnet34", "resnet50")
TORCHVISION = ("transformer_encoder", "vit_cifar", "mobilenet_v3_cifar")
RANK_MIX = 0xd1b54a32d192ed03  # the rank's term of its stream (src/train/dist.c amd_dist_rng_split)
FLIP_MIX = 0x94d049bb133111eb  # flip:alt's phase seed, seed x this + 3 (src/train/run.c setup_inputs)


def die(msg, status=2):
    print(f"train_torch_cifar.py: {msg}", file=sys.stderr, flush=True)
    sys.exit(status)


class Augment:
    """--augment crop:P,flip,flip:alt,cutout:S (amdnn-onnx's syntax; 'none' or '' for none)."""

    def __init__(self, spec):
        self.pad = self.cutout = 0
        self.flip = self.flip_alt = False
        for item in (spec or "").split(","):
            item = item.strip()
            if item in ("", "none"):
                continue
            if item == "flip":
                self.flip = True
            elif item == "flip:alt":
                self.flip_alt = True
            elif item.startswith("crop:") and item[5:].isdigit() and int(item[5:]) > 0:
                self.pad = int(item[5:])
            elif item.startswith("cutout:") and item[7:].isdigit() and int(item[7:]) > 0:
                self.cutout = int(item[7:])
            else:
                die(f"--augment: unknown item '{item}' (crop:P, flip, flip:alt, cutout:S; rrc is for images: data "
                    "only)")
        if self.flip and self.flip_alt:
            die("--augment: flip and flip:alt both mirror; choose one")

    def random(self):
        return bool(self.pad or self.flip or self.cutout)

    def text(self):
        parts = ([f"crop:{self.pad}"] if self.pad else []) + (["flip"] if self.flip else []) + \
                (["flip:alt"] if self.flip_alt else []) + ([f"cutout:{self.cutout}"] if self.cutout else [])
        return ",".join(parts) or "none"

    def alt_mirror(self, seed, ids, epoch):
        """flip:alt (plan_sample): sample s mirrored when the top bit of
        splitmix64(flip seed + (s + 1) GAMMA) differs from the epoch's parity; no draw."""
        flip_seed = np.uint64((seed * FLIP_MIX + 3) & M64)
        with np.errstate(over="ignore"):
            z = flip_seed + (np.asarray(ids, dtype=np.uint64) + np.uint64(1)) * np.uint64(GAMMA)
        return ((splitmix_array(z) >> np.uint64(63)) ^ np.uint64(epoch & 1)).astype(np.int64)

    def draws(self, stream, n, h, w):
        """The draws of n samples, in plan_sample's order: a dict of int64 arrays
        dy, dx (offsets in [-P, P]), mirror (0/1), cy, cx (cutout centres)."""
        fields = ([("dy", 2 * self.pad + 1), ("dx", 2 * self.pad + 1)] if self.pad else []) + \
                 ([("mirror", 0)] if self.flip else []) + \
                 ([("cy", h), ("cx", w)] if self.cutout else [])
        out = {}
        if not fields or n == 0:
            return out
        k = len(fields)
        start = stream.state
        raw = stream.block(n * k).reshape(n, k)
        if any(m and rejected(raw[:, f], m) for f, (_, m) in enumerate(fields)):
            stream.state = start  # a rejected draw: one sample at a time, as amdnn-onnx draws
            rows = [[stream.below(m) if m else stream.next() >> 63 for _, m in fields] for _ in range(n)]
            vals = np.array(rows, dtype=np.int64).reshape(n, k)
        else:
            vals = np.stack([(raw[:, f] % np.uint64(m)) if m else (raw[:, f] >> np.uint64(63))
                             for f, (_, m) in enumerate(fields)], axis=1).astype(np.int64)
        for f, (name, _) in enumerate(fields):
            out[name] = vals[:, f]
        if self.pad:
            out["dy"] = out["dy"] - self.pad
            out["dx"] = out["dx"] - self.pad
        return out


# ---------------------------------------------------------------- data

def read_cifar(path):
    """A CIFAR-10 binary batch: labels int64 [n], images uint8 [n, 3, 32, 32]."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    if len(raw) == 0 or len(raw) % 3073:
        die(f"{path}: not a whole number of 3073-byte CIFAR-10 records")
    rec = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3073)
    if rec[:, 0].max() > 9:
        die(f"{path}: a label above 9")
    return rec[:, 0].astype(np.int64), rec[:, 1:].reshape(-1, 3, 32, 32)


def find(data, stem):
    for ext in (".bin", ".bin.gz"):
        p = os.path.join(data, stem + ext)
        if os.path.isfile(p):
            return p
    die(f"missing file: neither {stem}.bin nor {stem}.bin.gz in {data}")


def channel_stats(u8):
    """mean, std per channel as amd_data_stats_u8 computes them (float32 each)."""
    mean, std = [], []
    for c in range(u8.shape[1]):
        hist = np.bincount(u8[:, c].reshape(-1), minlength=256)
        s = s2 = 0.0
        for v in range(256):
            x = v / 255.0
            s += float(hist[v]) * x
            s2 += float(hist[v]) * x * x
        cnt = float(u8.shape[0] * u8.shape[2] * u8.shape[3])
        m = s / cnt
        var = s2 / cnt - m * m
        sd = math.sqrt(var) if var > 0 else 0.0
        mean.append(np.float32(m))
        std.append(np.float32(sd) if sd > 1e-12 else np.float32(1.0))
    return mean, std


def spread(x, y, limit):
    """--limit: sample j of N is j * n // N (amd_dataset_limit)."""
    if not limit or len(y) <= limit:
        return x, y
    keep = np.array([j * len(y) // limit for j in range(limit)], dtype=np.int64)
    return x[keep], y[keep]


def load_data(data, limit):
    parts = [read_cifar(find(data, "data_batch_%d" % i)) for i in range(1, 6)]
    ytr = np.concatenate([p[0] for p in parts])
    xtr = np.concatenate([p[1] for p in parts])
    yte, xte = read_cifar(find(data, "test_batch"))
    mean, std = channel_stats(xtr)  # the whole training split, before --limit
    scale = np.array([np.float32(1.0 / (255.0 * float(s))) for s in std], dtype=np.float32)
    shift = np.array([np.float32(-m) / s for m, s in zip(mean, std)], dtype=np.float32)
    xtr, ytr = spread(xtr, ytr, limit)
    xte, yte = spread(xte, yte, limit)

    def norm(u8):  # u8 * scale + shift, each rounded to float (no fused multiply-add)
        out = np.empty(u8.shape, dtype=np.float32)
        for c in range(3):
            out[:, c] = u8[:, c].astype(np.float32) * scale[c]
            out[:, c] += shift[c]
        return torch.from_numpy(out)
    return norm(xtr), torch.from_numpy(ytr), norm(xte), torch.from_numpy(yte), mean, std, shift


class Batches:
    """Training batches on the device: the normalised images, amdnn-onnx's crops
    (padding with the normalised zero pixel), mirror and cutout."""

    def __init__(self, x, y, shift, aug):
        self.x, self.y, self.aug = x, y, aug
        self.n, self.c, self.h, self.w = x.shape
        self.shift = torch.from_numpy(shift).to(x.device).view(1, -1, 1, 1)
        dev = x.device
        self.rows = torch.arange(self.h, device=dev)
        self.cols = torch.arange(self.w, device=dev)
        self.chan = torch.arange(self.c, device=dev).view(1, -1, 1, 1)

    def make(self, ids, draws):
        dev = self.x.device
        idx = torch.from_numpy(ids).to(dev)
        x, y = self.x[idx], self.y[idx]
        b = len(ids)
        if not draws or b == 0:
            return x, y
        mirrored = self.aug.flip or self.aug.flip_alt
        p = self.aug.pad
        src = x
        if p:  # the padded images: every border pixel is the normalised zero pixel
            src = self.shift.expand(b, self.c, self.h + 2 * p, self.w + 2 * p).clone()
            src[:, :, p:p + self.h, p:p + self.w] = x
        dy = torch.from_numpy(draws["dy"] + p).to(dev) if p else torch.zeros(b, dtype=torch.int64, device=dev)
        dx = torch.from_numpy(draws["dx"] + p).to(dev) if p else torch.zeros(b, dtype=torch.int64, device=dev)
        cols = self.cols.view(1, -1).expand(b, -1)
        if mirrored:  # the crop mirrored: column j of the output is the crop's W - 1 - j
            m = torch.from_numpy(draws["mirror"]).to(dev).bool().view(-1, 1)
            cols = torch.where(m, self.w - 1 - cols, cols)
        rows = self.rows.view(1, -1) + dy.view(-1, 1)  # [b, H]
        cols = cols + dx.view(-1, 1)  # [b, W]
        x = src[torch.arange(b, device=dev).view(-1, 1, 1, 1), self.chan, rows.view(b, 1, -1, 1),
                cols.view(b, 1, 1, -1)]
        if self.aug.cutout:
            s = self.aug.cutout
            y0 = torch.from_numpy(draws["cy"] - s // 2).to(dev).view(-1, 1)
            x0 = torch.from_numpy(draws["cx"] - s // 2).to(dev).view(-1, 1)
            inr = (self.rows.view(1, -1) >= y0) & (self.rows.view(1, -1) < y0 + s)  # [b, H]
            inc = (self.cols.view(1, -1) >= x0) & (self.cols.view(1, -1) < x0 + s)  # [b, W]
            x = x.masked_fill((inr.view(b, 1, -1, 1) & inc.view(b, 1, 1, -1)), 0.0)
        return x, y


# ---------------------------------------------------------------- the model

def build_model(name):
    if name in RESNETS:
        import export_models as em  # noqa: E402 (needs onnx)
        ctor, shape = em.MODELS[name]
        threads = torch.get_num_threads()
        torch.set_num_threads(max(1, min(2, threads)))  # as export_models.py builds
        try:
            torch.manual_seed(em.SEED)
            model = ctor()
            if name not in em.FROM_SCRATCH:
                em.warm_up_bn(model, shape, torch.Generator().manual_seed(em.SEED + 1))
            # the training export's trace: one train-mode forward of its input batch
            x = torch.rand((em.BATCH,) + shape, generator=torch.Generator().manual_seed(em.SEED + 2)) * 2.0 - 0.5
            model.train()
            with torch.no_grad():
                model(x)
        finally:
            torch.set_num_threads(threads)
        return model
    import export_torchvision  # noqa: E402 (needs torchvision)
    torch.manual_seed(0)  # the seed export_torchvision.py builds with
    return export_torchvision.build(name, 10, 32, None)


def onnx_initializers(path):
    try:
        import onnx
        import onnx.numpy_helper
    except ImportError as e:
        die(f"--init {path}: {e} (run with a Python that has onnx)")
    model = onnx.load(path)
    return model, {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}


def take_init(model, path):
    """Compares the module with the initializers of path by name; takes the
    file's values where they differ. Returns a one-line report."""
    _, inits = onnx_initializers(path)
    equal, differ, absent = [], [], []
    state = model.state_dict()
    with torch.no_grad():
        for k, v in state.items():
            if k.endswith("num_batches_tracked"):
                continue
            a = inits.get(k)
            if a is None or a.dtype != np.float32 or tuple(a.shape) != tuple(v.shape):
                absent.append(k)
                continue
            if np.array_equal(a.view(np.uint32), v.detach().cpu().numpy().view(np.uint32)):
                equal.append(k)
            else:
                differ.append(k)
                v.copy_(torch.from_numpy(a.copy()))
    floats = {n for n, a in inits.items() if a.dtype == np.float32}
    unused = sorted(floats - set(state))
    if not equal and not differ:
        die(f"--init {path}: no initializer has the name and shape of a tensor of the model")
    note = (f"initial weights: {len(equal)} of {len(equal) + len(differ) + len(absent)} tensors equal to "
            f"{os.path.basename(path)}'s initializers bit for bit")
    if differ:
        note += f"; {len(differ)} taken from it ({', '.join(differ[:4])}{', ...' if len(differ) > 4 else ''})"
    if absent:
        note += f"; {len(absent)} not in it, kept ({', '.join(absent[:4])}{', ...' if len(absent) > 4 else ''})"
    if unused:
        note += f"; {len(unused)} of its float initializers match no tensor ({', '.join(unused[:4])})"
    return note


def write_onnx(model, init_path, out):
    import onnx
    import onnx.numpy_helper
    proto, _ = onnx_initializers(init_path)
    state = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    n = 0
    for t in proto.graph.initializer:
        if t.name in state and state[t.name].dtype == np.float32:
            t.CopyFrom(onnx.numpy_helper.from_array(state[t.name], t.name))
            n += 1
    onnx.save(proto, out)
    return n


# ---------------------------------------------------------------- the schedule

def parse_schedule(spec, warmup):
    """(kind, argument) of amd_schedule_parse; exits on a bad one."""
    kind, _, arg = spec.partition(":")
    try:
        if kind == "constant" and not arg:
            return kind, None
        if kind == "cosine":
            v = float(arg) if arg else 0.0
            if v < 0:
                raise ValueError
            return kind, v
        if kind == "onecycle":
            v = float(arg) if arg else 0.3
            if not 0 < v < 1:
                raise ValueError
            if warmup:
                die("onecycle has its own warm-up (PCT_START): leave --warmup at 0")
            return kind, v
        if kind == "step" and arg:
            ms, _, g = arg.partition(":")
            miles = [int(e) for e in ms.split(",")]
            gamma = float(g) if g else 0.1
            if any(m < 1 for m in miles) or miles != sorted(set(miles)) or not gamma > 0:
                raise ValueError
            return kind, (miles, gamma)
        if kind == "triangle":
            fields = [float(v) for v in arg.split(":")] if arg else []
            if len(fields) > 3:
                raise ValueError
            pct, first, last = fields + [0.25, 0.0, 0.0][len(fields):]
            if not 0 <= pct < 1 or first < 0 or last < 0:
                raise ValueError
            if warmup:
                die("triangle has its own warm-up (PCT): leave --warmup at 0")
            return kind, (pct, first, last)
    except ValueError:
        pass
    die(f"bad --schedule '{spec}' (constant, cosine[:MIN_LR], onecycle[:PCT_START], step:E1,E2[:GAMMA], "
        "triangle[:PCT[:START[:END]]])")


def schedule_lr(sched, base, warmup_epochs, step, per_epoch, total):
    """amd_schedule_lr: the rate of step (from 0)."""
    kind, arg = sched
    if kind == "onecycle":
        top, pct = base, arg
        first = top / 25.0
        last = first / 1e4
        step = min(step, total - 1)
        ends = (pct * total - 1, float(total - 1))
        lo_hi = ((first, top), (top, last))
        begin = 0.0
        for i in range(2):
            if step <= ends[i] or i == 1:
                span = ends[i] - begin
                frac = (step - begin) / span if span > 0 else 1.0
                a, b = lo_hi[i]
                return b + (a - b) / 2.0 * (math.cos(math.pi * frac) + 1)
            begin = ends[i]
    if kind == "triangle":
        pct, first, last = arg
        up = int(pct * total)
        if step < up:
            return base * (first + (1 - first) * step / up)
        return base * (1 + (last - 1) * min((step - up) / (total - up), 1.0))
    warm = warmup_epochs * per_epoch
    lr = base
    if kind == "step":
        miles, gamma = arg
        for m in miles:
            if m <= step // per_epoch:
                lr *= gamma
    elif kind == "cosine":
        t_max, t = total - warm, step - warm
        if t_max > 0 and t > 0:
            lr = arg + (base - arg) * (1 + math.cos(math.pi * min(t, t_max) / t_max)) / 2
    if step < warm:
        lr = lr * (step + 1) / warm
    return lr


def parse_lookahead(spec):
    """amd_lookahead_parse: K[:D], K >= 1 whole, D in [0, 1) (default 0.95^K)."""
    k, _, d = spec.partition(":")
    try:
        kk = float(k)
        dd = float(d) if d else 0.95 ** kk
        if kk == int(kk) and 1 <= kk <= 1e9 and 0 <= dd < 1:
            return int(kk), dd
    except ValueError:
        pass
    die(f"--lookahead: '{spec}' is not K[:D] with K a whole number of steps >= 1 and D in [0, 1)")


def lookahead_pull(fast, slow, decay):
    """slow = decay slow + (1 - decay) fast, then fast = slow: amdnn-onnx's float steps (decay and 1 - decay
    are C floats; products, then the sum, each rounded to float)."""
    keep = float(np.float32(1.0) - np.float32(decay))
    with torch.no_grad():
        for w, s in zip(fast, slow):
            s.mul_(decay)
            w.mul_(keep)
            s.add_(w)
            w.copy_(s)


def parse_duration(s):
    """api_parse_duration: 47h30m, 90m, 3600s, 3600."""
    total, rest, any_ = 0.0, s, False
    while rest:
        num = ""
        while rest and (rest[0].isdigit() or rest[0] in ".eE+-"):
            num, rest = num + rest[0], rest[1:]
        try:
            v = float(num)
        except ValueError:
            die(f"--walltime '{s}' is not a duration such as 47h30m, 90m or 3600s")
        mul = 1.0
        if rest[:1] in ("h", "m", "s"):
            mul = {"h": 3600.0, "m": 60.0, "s": 1.0}[rest[0]]
            rest = rest[1:]
        elif rest:
            die(f"--walltime '{s}' is not a duration such as 47h30m, 90m or 3600s")
        total += v * mul
        any_ = True
    if not any_ or not total > 0:
        die(f"--walltime '{s}' is not a duration such as 47h30m, 90m or 3600s")
    return total


# ---------------------------------------------------------------- training

def bn_modules(model):
    return [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
            and m.track_running_stats and m.running_mean is not None]


def forward_ranks(model, shares, bns):
    """The logits of the global batch as R ranks compute them: each share with
    its own BatchNorm statistics, the running statistics the mean of the
    ranks' updates of the same old ones (amd_dist_sync_stats)."""
    if len(shares) == 1:
        return model(shares[0])
    # Each share updates fresh copies of the old statistics (the graph keeps the
    # tensors its forward read, so they are replaced, never written over).
    old = [(m.running_mean, m.running_var) for m in bns]
    acc = [(torch.zeros_like(a), torch.zeros_like(b)) for a, b in old]
    out = []
    for x in shares:
        for m, (a, b) in zip(bns, old):
            m.running_mean, m.running_var = a.clone(), b.clone()
        if len(x):
            out.append(model(x))
        with torch.no_grad():
            for m, (sa, sb) in zip(bns, acc):
                sa += m.running_mean
                sb += m.running_var
    with torch.no_grad():
        inv = 1.0 / len(shares)  # all-reduce sum, then times 1/R in float (amd_dist_sync_stats)
        for m, (sa, sb) in zip(bns, acc):
            m.running_mean, m.running_var = sa * inv, sb * inv
    return torch.cat(out)


def file_crc(path):
    crc = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            crc = zlib.crc32(chunk, crc)
    return "%08x" % crc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module's docstring (the top of this file) for what is mirrored.")
    ap.add_argument("--model", required=True, choices=RESNETS + TORCHVISION)
    ap.add_argument("--init", metavar="FILE.onnx",
                    help="the training export amdnn-onnx starts from: its initializers are the initial weights "
                         "(compared with the seeded build); -o writes into a copy of it")
    ap.add_argument("--data", required=True, help="folder of CIFAR-10's binary batches (.bin or .bin.gz)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256, help="samples per batch (per rank with --ranks)")
    ap.add_argument("--ranks", type=int, default=1,
                    help="mirror R amdnn-onnx ranks (mpirun -np R) on this one device: global batch R x --batch")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="adamw")
    ap.add_argument("--lr", type=float, default=1e-3, help="the learning rate (the schedule's peak)")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    ap.add_argument("--nesterov", action="store_true", help="Nesterov momentum (sgd)")
    ap.add_argument("--wd", type=float, default=None,
                    help="weight decay on every parameter: coupled for sgd (default 0), decoupled for adamw "
                         "(default 0.05)")
    ap.add_argument("--schedule", default="onecycle",
                    help="constant, cosine[:MIN_LR], onecycle[:PCT_START] (default), step:E1,E2[:GAMMA], "
                         "triangle[:PCT[:START[:END]]]")
    ap.add_argument("--warmup", type=int, default=0, help="linear warm-up epochs (not with onecycle)")
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--lookahead", metavar="K[:D]",
                    help="every K steps the weights and BN running statistics move to their slow copy, decay "
                         "D x (step / steps)^3 (D default 0.95^K); the trained model is the slow copy")
    ap.add_argument("--augment", default="crop:4,flip",
                    help="crop:P, flip, flip:alt, cutout:S, comma-separated, or none")
    ap.add_argument("--seed", type=int, default=1, help="data order and augmentation draws, as amdnn-onnx's --seed")
    ap.add_argument("--limit", type=int, default=0, help="N samples of each split, sample j = j * n // N")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--metrics", help="the per-epoch TSV (amdnn-onnx's columns)")
    ap.add_argument("-o", "--output", help="the trained model: --init's file with the trained initializers")
    ap.add_argument("--checkpoint-dir", help="a checkpoint after each epoch (DIR/torch.ckpt)")
    ap.add_argument("--resume", action="store_true", help="continue from DIR/torch.ckpt when there is one")
    ap.add_argument("--walltime", help="stop with a checkpoint before this much time has passed (90m, 540s)")
    a = ap.parse_args()
    t_start = time.time()

    if a.epochs < 1 or a.batch < 1 or a.ranks < 1 or not a.lr > 0 or a.limit < 0 or a.warmup < 0:
        die("--epochs, --batch, --ranks and --lr must be positive, --limit and --warmup >= 0")
    if a.wd is None:
        a.wd = 0.05 if a.optimizer == "adamw" else 0.0
    if a.nesterov and (a.optimizer != "sgd" or not a.momentum > 0):
        die("--nesterov needs --optimizer sgd with --momentum > 0")
    if not 0 <= a.label_smoothing < 1:
        die("--label-smoothing must be in [0, 1)")
    if a.resume and not a.checkpoint_dir:
        die("--resume needs --checkpoint-dir")
    if a.output and not a.init:
        die("-o writes into a copy of --init's file: give --init")
    for p in [a.data] + ([a.init] if a.init else []):
        if not os.path.exists(p):
            die(f"{p}: no such file or folder")
    walltime = parse_duration(a.walltime) if a.walltime else 0.0
    look_k, look_d = parse_lookahead(a.lookahead) if a.lookahead else (0, 0.0)
    sched = parse_schedule(a.schedule, a.warmup)
    aug = Augment(a.augment)
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        die("--device cuda but torch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True

    xtr, ytr, xte, yte, mean, std, shift = load_data(a.data, a.limit)
    model = build_model(a.model)
    init_note = take_init(model, a.init) if a.init else "initial weights: the seeded build (no --init)"
    model = model.to(dev).train()
    bns = bn_modules(model)
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    data = Batches(xtr, ytr, shift, aug)
    n = len(ytr)
    gbatch = a.batch * a.ranks
    per_epoch = (n + gbatch - 1) // gbatch
    total = per_epoch * a.epochs
    f32 = lambda v: float(np.float32(v))  # noqa: E731 (the C floats of amd_train_cfg)
    lr0, smoothing = f32(a.lr), f32(a.label_smoothing)
    params = list(model.parameters())
    foreach = dev.type == "cuda"
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr0, momentum=f32(a.momentum), dampening=0, nesterov=a.nesterov,
                              weight_decay=f32(a.wd), foreach=foreach)
    else:
        opt = torch.optim.AdamW(params, lr=lr0, betas=(0.9, 0.999), eps=1e-8, weight_decay=f32(a.wd),
                                foreach=foreach)
    config = (f"model={a.model} init={file_crc(a.init) if a.init else '-'} data={os.path.abspath(a.data)} "
              f"epochs={a.epochs} batch={a.batch} ranks={a.ranks} optimizer={a.optimizer} lr={a.lr} "
              f"momentum={a.momentum} nesterov={int(a.nesterov)} wd={a.wd} schedule={a.schedule} "
              f"warmup={a.warmup} smoothing={a.label_smoothing} augment={aug.text()} seed={a.seed} limit={a.limit}"
              + (f" lookahead={a.lookahead}" if a.lookahead else ""))

    def look_fast():
        """--lookahead's tensors: the parameters, then the BN running statistics (trainer.h
        amd_trainer_lookahead); asked each time, as forward_ranks replaces the statistics' tensors."""
        return params + [t for m in bns for t in (m.running_mean, m.running_var)] if look_k else []
    slow = [t.detach().clone() for t in look_fast()]

    rows = ["epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s"]
    first_epoch, step, hours, epoch_s = 0, 0, 0.0, 0.0
    aug_state = ((a.seed * GAMMA) + 1) & M64  # run_state.pos.aug_rng (src/train/run.c setup_state)
    ckpt = os.path.join(a.checkpoint_dir, "torch.ckpt") if a.checkpoint_dir else None
    if ckpt:
        os.makedirs(a.checkpoint_dir, exist_ok=True)
    if a.resume and os.path.exists(ckpt):
        try:  # (torch >= 2.6 loads weights only by default; this file holds the run's state too)
            saved = torch.load(ckpt, map_location=dev, weights_only=False)
        except TypeError:
            saved = torch.load(ckpt, map_location=dev)
        if saved["config"] != config:
            die(f"{ckpt} was written with other options:\n  checkpoint: {saved['config']}\n  now:        {config}")
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["opt"])
        first_epoch, step, hours, epoch_s = saved["epoch"], saved["step"], saved["hours"], saved["epoch_s"]
        aug_state, rows = saved["aug_state"], saved["rows"]
        slow = [t.to(dev) for t in saved.get("slow", slow)]
        print(f"resuming from {ckpt}: epoch {first_epoch + 1}, step {step}", flush=True)
    elif a.resume:
        print(f"no checkpoint in {a.checkpoint_dir}: starting from the initial weights", flush=True)

    print(f"{a.model}: {sum(p.numel() for p in params)} parameters; {init_note}", flush=True)
    print(f"cifar10: {n} train / {len(yte)} test, mean {' '.join('%.4f' % m for m in mean)} std "
          f"{' '.join('%.4f' % s for s in std)}; {a.epochs} epochs of {per_epoch} batches of {gbatch}"
          f"{f' ({a.ranks} ranks x {a.batch})' if a.ranks > 1 else ''}, {a.optimizer} lr {a.lr} "
          f"{a.schedule}{f' warm-up {a.warmup}' if a.warmup else ''}"
          f"{f' momentum {a.momentum}' if a.optimizer == 'sgd' else ''}{' nesterov' if a.nesterov else ''} "
          f"wd {a.wd}, label smoothing {a.label_smoothing}, augment {aug.text()}, seed {a.seed}; "
          f"torch {torch.__version__} on {dev}, FP32, TF32 off", flush=True)

    def save(epoch_done):
        tmp = ckpt + ".tmp"
        torch.save({"config": config, "epoch": epoch_done, "step": step, "hours": hours, "epoch_s": epoch_s,
                    "aug_state": aug_state, "rows": rows, "model": model.state_dict(), "opt": opt.state_dict(),
                    "slow": slow},
                   tmp)
        os.replace(tmp, ckpt)

    def write_metrics():
        if a.metrics:
            tmp = a.metrics + ".tmp"
            with open(tmp, "w") as f:
                f.write("\n".join(rows) + "\n")
            os.replace(tmp, a.metrics)

    write_metrics()
    lr = schedule_lr(sched, lr0, a.warmup, step - 1, per_epoch, total) if step else 0.0
    for epoch in range(first_epoch, a.epochs):
        if walltime and epoch_s and time.time() - t_start + 1.05 * epoch_s + 5 > walltime:
            print(f"stopped by the walltime before epoch {epoch + 1}"
                  f"{'; checkpoint saved, continue with --resume' if ckpt else ' (no --checkpoint-dir: nothing saved)'}",
                  flush=True)
            return 3
        t_epoch = time.time()
        order = shuffled(n, a.seed, epoch)
        if a.ranks == 1 and aug.random():  # one stream: the epoch's draws in one block
            stream = Stream(aug_state)
            epoch_draws = aug.draws(stream, n, data.h, data.w)
            aug_state = stream.state
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        top1 = torch.zeros((), dtype=torch.int64, device=dev)
        for b in range(per_epoch):
            start = b * gbatch
            bsz = min(gbatch, n - start)
            xs, ys = [], []
            for r in range(a.ranks):
                lo, hi = bsz * r // a.ranks, bsz * (r + 1) // a.ranks
                ids = order[start + lo:start + hi]
                if not aug.random():
                    draws = None
                elif a.ranks == 1:
                    draws = {k: v[start + lo:start + hi] for k, v in epoch_draws.items()}
                else:  # amd_dist_rng_split: the rank's stream from the shared one
                    own = Stream(Stream(aug_state ^ ((RANK_MIX * (r + 1)) & M64)).next())
                    draws = aug.draws(own, hi - lo, data.h, data.w)
                if aug.flip_alt:  # no draw: the sample's phase and the epoch's parity
                    draws = dict(draws or {}, mirror=aug.alt_mirror(a.seed, ids, epoch))
                x, y = data.make(ids, draws)
                xs.append(x)
                ys.append(y)
            if a.ranks > 1:
                aug_state = (aug_state + GAMMA) & M64  # the shared stream moves on one draw a step
            y = torch.cat(ys)
            lr = schedule_lr(sched, lr0, a.warmup, step, per_epoch, total)
            for g in opt.param_groups:
                g["lr"] = lr
            z = forward_ranks(model, xs, bns)
            loss = F.cross_entropy(z, y, label_smoothing=smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if look_k and step % look_k == 0:
                f = min(step / total, 1.0)
                lookahead_pull(look_fast(), slow, float(np.float32(look_d * f * f * f)))
            with torch.no_grad():
                loss_sum += F.cross_entropy(z.detach().double(), y, reduction="sum", label_smoothing=smoothing)
                top1 += (z.detach().argmax(1) == y).sum()
        if look_k and epoch + 1 == a.epochs:  # the run's weights are the slow ones
            with torch.no_grad():
                for w, s in zip(look_fast(), slow):
                    w.copy_(s)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        hours += dt / 3600
        train_loss, train_acc = loss_sum.item() / n, top1.item() / n
        if not math.isfinite(train_loss):
            die(f"the loss became NaN or Inf in epoch {epoch + 1}", 4)
        test_loss, test_acc = evaluate(model, xte, yte, a.batch)
        rows.append("%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6g\t%.1f" % (
            epoch + 1, hours, train_loss, train_acc, test_loss, test_acc, lr, n / dt if dt > 0 else 0))
        print(f"epoch {epoch + 1}/{a.epochs}: train loss {train_loss:.4f} acc {100 * train_acc:.2f}%, "
              f"test loss {test_loss:.4f} top-1 {100 * test_acc:.2f}%, lr {lr:.6g}, "
              f"{n / dt if dt > 0 else 0:.0f} images/s", flush=True)
        write_metrics()
        epoch_s = time.time() - t_epoch
        if ckpt:
            save(epoch + 1)
    if a.output:
        k = write_onnx(model, a.init, a.output)
        print(f"wrote {a.output} ({k} initializers trained)", flush=True)
    print(f"trained ({hours * 3600:.1f} s of training)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
