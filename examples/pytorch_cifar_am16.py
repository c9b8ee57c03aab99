#!/usr/bin/env python3
"""Trains ResNet-18 (CIFAR form) on CIFAR-10 with a plain PyTorch loop, every
product of its convolutions and its classifier, forward and both backward
GEMMs, computed by the am16 approximate multiplier (amdnn.torch). Adapt it:
the model, the data, the optimizer are ordinary PyTorch; the multiplier is
one line (amdnn.torch.approximate).

    python3 examples/pytorch_cifar_am16.py --data CIFAR10_DIR --epochs 15       # one GPU (or the CPU)
    torchrun --nproc_per_node 2 examples/pytorch_cifar_am16.py --data CIFAR10_DIR  # two GPUs, DDP
    python3 examples/pytorch_cifar_am16.py --fake --epochs 1 --limit 256 --device cpu   # a smoke run

CIFAR10_DIR holds the binary version (data_batch_1..5.bin, test_batch.bin,
.gz or not). --fake uses random images instead.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import amdnn.torch


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = nn.Sequential()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.short(x))


def resnet18(classes=10):
    """ResNet-18 for 32 x 32 images: a 3x3 stem, no max-pool."""
    layers, cin = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


def load_cifar10(folder):
    """(train x, train y, test x, test y): uint8 [N, 3, 32, 32] and int64 labels."""
    def read(name):
        path = os.path.join(folder, name)
        data = gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()
        rec = np.frombuffer(data, np.uint8).reshape(-1, 3073)
        return rec[:, 1:].reshape(-1, 3, 32, 32).copy(), rec[:, 0].astype(np.int64)
    parts = [read(f"data_batch_{i}.bin") for i in range(1, 6)]
    xt, yt = read("test_batch.bin")
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), xt, yt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="CIFAR-10 folder (binary version)")
    ap.add_argument("--fake", action="store_true", help="random images instead of --data")
    ap.add_argument("--mode", default="am16", help="the multiplier (amdnn.modes(), lut:FILE)")
    ap.add_argument("--backward-mode", default=None, help="both backward GEMMs' mode; exact: acc32")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=128, help="per process")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--limit", type=int, default=0, help="use the first N training and test images")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--save", help="write the trained weights (state_dict) here")
    a = ap.parse_args()

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    dev = torch.device(a.device)
    if world > 1:  # torchrun: one process per GPU
        dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl")
    if a.fake:
        g = np.random.default_rng(0)
        n = a.limit or 5000
        x, y = g.integers(0, 256, (n, 3, 32, 32), np.uint8), g.integers(0, 10, n)
        xt, yt = x[: n // 5], y[: n // 5]
    else:
        x, y, xt, yt = load_cifar10(a.data)
        if a.limit:
            x, y, xt, yt = x[: a.limit], y[: a.limit], xt[: a.limit], yt[: a.limit]
    mean = torch.tensor([0.4914, 0.4822, 0.4465], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616], device=dev).view(1, 3, 1, 1)

    def prep(batch):
        return (torch.as_tensor(batch, device=dev).float() / 255 - mean) / std

    torch.manual_seed(1)
    model = resnet18().to(dev)
    # the one line: every Conv2d and Linear now multiplies in a.mode (forward and both backward GEMMs)
    amdnn.torch.approximate(model, mode=a.mode, backward_mode=a.backward_mode)
    net = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index]) if world > 1 else model
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    steps_per_epoch = len(x) // (a.batch * world)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, a.lr, total_steps=max(1, a.epochs * steps_per_epoch))
    for epoch in range(a.epochs):
        net.train()
        perm = np.random.default_rng(epoch).permutation(len(x))
        t0, seen, loss_sum = time.time(), 0, 0.0
        for s in range(steps_per_epoch):
            idx = perm[(s * world + rank) * a.batch:(s * world + rank + 1) * a.batch]
            xb, yb = prep(x[idx]), torch.as_tensor(y[idx], device=dev)
            if torch.rand(()) < 0.5:  # flip the batch, and a random crop of the 4-padded images
                xb = xb.flip(3)
            i, j = torch.randint(0, 9, (2,)).tolist()
            xb = F.pad(xb, (4, 4, 4, 4))[:, :, i:i + 32, j:j + 32]
            loss = F.cross_entropy(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            seen += len(idx)
            loss_sum += loss.item() * len(idx)
        net.eval()
        correct = 0
        with torch.no_grad():
            for k in range(0, len(xt), 500):
                correct += (net(prep(xt[k:k + 500])).argmax(1).cpu() == torch.as_tensor(yt[k:k + 500])).sum().item()
        if rank == 0:
            print(f"epoch {epoch + 1}/{a.epochs}  train loss {loss_sum / max(seen, 1):.4f}  test top1 "
                  f"{100 * correct / len(xt):.2f}%  {seen * world / (time.time() - t0):.0f} images/s  mode {a.mode}",
                  flush=True)
    if a.save and rank == 0:
        torch.save(model.state_dict(), a.save)  # the keys of a plain resnet18(): load it without amdnn too
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
