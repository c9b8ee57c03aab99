#!/usr/bin/env python3
"""DistributedDataParallel under amdnn.torch: a model trained on two GPUs
(one process each, each rank its GPU and half of the global batch, gradients
averaged by NCCL) against the same model trained on one GPU with the whole
global batch.

    torchrun --nproc_per_node 2 python/tests/ddp_check.py [--mode am16] [--steps 3]

Two checks, each a ResNet-8 (tools/export_models.py) under the mode:
  plain    BatchNormalization folded into the convolutions (no batch statistics)
  sync-bn  BatchNormalization in training mode as SyncBatchNorm (the global
           batch's statistics, summed across the ranks)
Each rank's half-batch loss is the mean over its half, and DDP averages the
two ranks' gradients: the global batch's mean gradient, summed in another
order. Tolerance: after the steps, the two-GPU weights' change may differ
from the one-GPU model's by at most 3 times what the one-GPU model's change
differs between the batch and the batch moved by one ulp (the network's own
sensitivity to a last-bit difference, see test_torch_resnet.py), and by at
most 1e-5 of the change where that noise is smaller. Rank 0 prints a line per
check; the exit status is 1 when a check fails (pytest: test_torch_ddp.py).
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import amdnn.torch as at  # noqa: E402
from conftest import fold_bn, warmed_model_and_batch  # noqa: E402


def train(model, x, y, steps, ddp_rank=None):
    net = DDP(model, device_ids=[ddp_rank]) if ddp_rank is not None else model
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double().cpu().numpy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="am16")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32, help="the global batch")
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    _, base, x, y = warmed_model_and_batch("resnet8", args.batch)
    per = args.batch // world
    mine = slice(rank * per, (rank + 1) * per)
    failed = 0
    for name in ("plain", "sync-bn"):
        net = fold_bn(base) if name == "plain" else copy.deepcopy(base)
        w0 = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).double().numpy()
        two = copy.deepcopy(net)
        if name == "sync-bn":
            two = nn.SyncBatchNorm.convert_sync_batchnorm(two)
        two = at.approximate(two.to(dev), mode=args.mode)
        w_two = train(two, x[mine].to(dev), y[mine].to(dev), args.steps, ddp_rank=local_rank)
        if rank == 0:
            one = at.approximate(copy.deepcopy(net).to(dev), mode=args.mode)
            w_one = train(one, x.to(dev), y.to(dev), args.steps)
            moved = at.approximate(copy.deepcopy(net).to(dev), mode=args.mode)
            x1 = torch.from_numpy(np.nextafter(x.numpy(), np.float32(np.inf)))
            w_moved = train(moved, x1.to(dev), y.to(dev), args.steps)
            step = np.linalg.norm(w_one - w0)
            d = np.linalg.norm(w_two - w_one) / step
            noise = np.linalg.norm(w_moved - w_one) / step
            ok = d <= max(3 * noise, 1e-5)
            failed += not ok
            print(f"ddp {name}: {world} GPUs x {per} against 1 GPU x {args.batch}, {args.steps} SGD steps, "
                  f"{args.mode}: the weights' change differs by {d:.3g} of itself; one-ulp noise {noise:.3g}: "
                  f"{'ok' if ok else 'FAIL'}", flush=True)
        dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
