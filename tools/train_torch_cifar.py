#!/usr/bin/env python3
"""The PyTorch side of the CIFAR-10 training recipe of tools/train_cifar.sh:
the same model (tools/export_torchvision.py builds it with the same seed, so
the same initial weights as the ONNX file amdnn-onnx trains), the same data
pipeline as `amdnn-onnx train --data cifar10:DIR` (per-channel mean and std
of the training images; --augment crop:4,flip is torchvision's
RandomCrop(32, padding=4) and RandomHorizontalFlip, zero padding before
normalisation), the same optimiser and schedule (AdamW, PyTorch's OneCycleLR
with cosine annealing and no momentum cycling, which is what `--schedule
onecycle` computes), label smoothing, FP32 eager on the GPU with TF32 off.

    $(tools/torch_python.sh) tools/train_torch_cifar.py --model vit_cifar --data DIR --epochs 30 \\
        --batch 256 --lr 1e-3 --wd 0.05 --label-smoothing 0.1 --metrics results/x.tsv

Writes one row per epoch, with the columns of `amdnn-onnx train --metrics`:
epoch, hours, train_loss, train_acc, test_loss, test_top1, lr, images_per_s
(training images per second of that epoch, data augmentation included, the
test pass excluded).
"""
import argparse
import gzip
import os
import sys
import time

try:  # say which interpreter to use, instead of a bare ImportError
    import numpy, torch, torchvision  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"train_torch_cifar.py: {e}: run it with a Python that has numpy and torch and torchvision, e.g. "
             "$(tools/torch_python.sh torch torchvision) tools/train_torch_cifar.py ...")
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_torchvision  # noqa: E402


def read_cifar(path):
    """CIFAR-10 binary batch (optionally .gz): labels uint8 [n], images uint8 [n, 3, 32, 32]."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = np.frombuffer(f.read(), dtype=np.uint8).reshape(-1, 3073)
    return raw[:, 0].astype(np.int64), raw[:, 1:].reshape(-1, 3, 32, 32)


def find(data, stem):
    for ext in (".bin", ".bin.gz"):
        p = os.path.join(data, stem + ext)
        if os.path.exists(p):
            return p
    sys.exit("no %s.bin or %s.bin.gz in %s" % (stem, stem, data))


def load(data):
    parts = [read_cifar(find(data, "data_batch_%d" % i)) for i in range(1, 6)]
    ytr = np.concatenate([p[0] for p in parts])
    xtr = np.concatenate([p[1] for p in parts])
    yte, xte = read_cifar(find(data, "test_batch"))
    return xtr, ytr, xte, yte


def augment(x, pad, flip, gen):
    """Random pad-and-crop and horizontal flip of a uint8->float batch on the GPU (zero padding)."""
    n, c, h, w = x.shape
    if pad:
        xp = F.pad(x, (pad, pad, pad, pad))
        dy = torch.randint(0, 2 * pad + 1, (n,), device=x.device, generator=gen)
        dx = torch.randint(0, 2 * pad + 1, (n,), device=x.device, generator=gen)
        rows = (dy[:, None] + torch.arange(h, device=x.device)[None, :])  # [n, h]
        cols = (dx[:, None] + torch.arange(w, device=x.device)[None, :])  # [n, w]
        x = xp[torch.arange(n, device=x.device)[:, None, None, None], torch.arange(c, device=x.device)[None, :, None, None],
               rows[:, None, :, None], cols[:, None, None, :]]
    if flip:
        m = torch.rand(n, device=x.device, generator=gen) < 0.5
        x = torch.where(m[:, None, None, None], x.flip(3), x)
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=export_torchvision.EXTRA_MODELS)
    ap.add_argument("--data", required=True, help="folder of CIFAR-10's binary batches (.bin or .bin.gz)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3, help="the peak rate of OneCycleLR")
    ap.add_argument("--wd", type=float, default=0.05)
    ap.add_argument("--pct-start", type=float, default=0.3)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--crop", type=int, default=4, help="pad-and-crop padding (0: none)")
    ap.add_argument("--no-flip", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--metrics", help="per-epoch TSV")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N samples of each split (quick runs)")
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    xtr, ytr, xte, yte = load(a.data)
    if a.limit:
        xtr, ytr, xte, yte = xtr[:a.limit], ytr[:a.limit], xte[:a.limit], yte[:a.limit]
    mean = (xtr.astype(np.float64) / 255).mean(axis=(0, 2, 3))
    std = (xtr.astype(np.float64) / 255).std(axis=(0, 2, 3))
    mean_t = torch.tensor(mean, dtype=torch.float32, device=dev)[None, :, None, None]
    std_t = torch.tensor(std, dtype=torch.float32, device=dev)[None, :, None, None]
    xtr_g = torch.from_numpy(xtr.copy()).to(dev)
    ytr_g = torch.from_numpy(ytr.copy()).to(dev)
    xte_g = ((torch.from_numpy(xte.copy()).to(dev).float() / 255) - mean_t) / std_t
    yte_g = torch.from_numpy(yte.copy()).to(dev)

    torch.manual_seed(0)  # the seed export_torchvision.py builds with: the ONNX file's weights
    model = export_torchvision.build(a.model, 10, 32, None).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.wd)
    steps_per_epoch = (len(ytr) + a.batch - 1) // a.batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=a.epochs * steps_per_epoch,
                                                pct_start=a.pct_start, anneal_strategy="cos",
                                                cycle_momentum=False, div_factor=25, final_div_factor=1e4)
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    out = open(a.metrics, "w") if a.metrics else None
    if out:
        out.write("epoch\thours\ttrain_loss\ttrain_acc\ttest_loss\ttest_top1\tlr\timages_per_s\n")
    hours = 0.0
    for epoch in range(1, a.epochs + 1):
        model.train()
        torch.cuda.synchronize() if dev.type == "cuda" else None
        t0 = time.time()
        perm = torch.randperm(len(ytr), device=dev, generator=gen)
        loss_sum, correct, seen = torch.zeros((), device=dev), torch.zeros((), device=dev), 0
        for s in range(steps_per_epoch):
            idx = perm[s * a.batch:(s + 1) * a.batch]
            x = augment(xtr_g[idx].float() / 255, a.crop, not a.no_flip, gen)
            x = (x - mean_t) / std_t
            y = ytr_g[idx]
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.detach() * len(idx)
            correct += (logits.detach().argmax(1) == y).sum()
            seen += len(idx)
        torch.cuda.synchronize() if dev.type == "cuda" else None
        dt = time.time() - t0
        hours += dt / 3600
        model.eval()
        with torch.no_grad():
            tl, tc = 0.0, 0
            for s in range(0, len(yte), 1000):
                lg = model(xte_g[s:s + 1000])
                tl += F.cross_entropy(lg, yte_g[s:s + 1000], reduction="sum").item()
                tc += (lg.argmax(1) == yte_g[s:s + 1000]).sum().item()
        # accuracies as fractions, as amdnn-onnx's --metrics writes them
        row = (epoch, hours, loss_sum.item() / seen, correct.item() / seen, tl / len(yte), tc / len(yte),
               sched.get_last_lr()[0], seen / dt)
        print("epoch %d/%d  train loss %.4f acc %.2f%%  test loss %.4f top1 %.2f%%  lr %.3g  %.0f img/s" %
              (epoch, a.epochs, row[2], 100 * row[3], row[4], 100 * row[5], row[6], row[7]), flush=True)
        if out:
            out.write("%d\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6g\t%.1f\n" % row)
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
