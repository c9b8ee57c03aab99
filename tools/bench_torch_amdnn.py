#!/usr/bin/env python3
"""Training speed of a plain PyTorch loop under amdnn.torch, side by side with
the library's own training steps and with PyTorch's FP32, in one command.

    python3 tools/bench_torch_amdnn.py                      # ResNet-18 (CIFAR form), batch 128, on cuda
    python3 tools/bench_torch_amdnn.py --model resnet8 --device cpu --steps 3 --warmup 1 --batch 16
    python3 tools/bench_torch_amdnn.py --profile            # and where each loop's GPU time goes

Rows, each images/s over --steps timed training steps (after --warmup
untimed ones) on one random batch of 32 x 32 images, the same model
(tools/export_models.py's definition, seeded):
  library MODE        amdnn.Model(MODEL_train.onnx, mode=MODE).bench(...): the
                      call of `amdnn-onnx bench --mode MODE` (the steps of
                      `amdnn-onnx train`, without data loading)
  amdnn.torch MODE    the PyTorch loop (SGD momentum 0.9, softmax cross-entropy,
                      eager, no torch.compile) with amdnn.torch.approximate(model,
                      mode=MODE)
  PyTorch FP32        the same loop without amdnn, TF32 off (cuDNN's and cuBLAS's
                      FP32), as tools/bench_torch_train.py
and the ratios the issue asks for: amdnn.torch am16 / library am16 (>= 0.8)
and amdnn.torch acc32 / PyTorch FP32 (>= 0.9). The export (torch.onnx, needs
the onnx package) is written into --work once.
"""
import argparse
import copy
import os
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"bench_torch_amdnn.py: {e}: run it with a Python that has torch (and the amdnn package)")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  (the model definitions and the export)

import amdnn  # noqa: E402
import amdnn.torch as at  # noqa: E402


def training_step(model, shape, batch, dev):
    """One step of the plain PyTorch training loop (SGD momentum 0.9, softmax
    cross-entropy) on one random batch, as a function."""
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn((batch,) + tuple(shape), device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def torch_steps(model, shape, batch, steps, warmup, dev) -> float:
    """images/s of the plain PyTorch training loop."""
    step = training_step(model, shape, batch, dev)
    t0 = None
    for i in range(warmup + steps):
        if i == warmup:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t0)


def profile_steps(model, shape, batch, steps, dev, rows=12) -> None:
    """Prints where the GPU time of the PyTorch loop goes: the kernels with
    the most CUDA time over `steps` steps (torch.profiler), after one warm-up."""
    from torch.profiler import ProfilerActivity, profile
    step = training_step(model, shape, batch, dev)
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows, max_name_column_width=60)
    print("\n".join("    " + line for line in table.splitlines()), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet18", choices=sorted(export_models.MODELS))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--modes", default="am16,acc32", help="comma list of modes (default am16,acc32)")
    ap.add_argument("--gemm", default="fast", choices=["fast", "exact"], help="the GPU tier of am16 / mbm14")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--work", default="bench_torch_amdnn", help="folder for the ONNX export")
    ap.add_argument("--profile", action="store_true",
                    help="also print the CUDA kernels with the most time of each PyTorch loop (torch.profiler)")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ctor, shape = export_models.MODELS[a.model]
    torch.manual_seed(0)
    base = ctor()
    os.makedirs(a.work, exist_ok=True)
    onnx_path = os.path.join(a.work, f"{a.model}_train.onnx")
    if not os.path.exists(onnx_path):
        x = torch.randn((2,) + tuple(shape))
        export_models.export(copy.deepcopy(base).train(), x, onnx_path, training=True)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"{a.model} (tools/export_models.py), batch {a.batch}, {a.steps} timed steps after {a.warmup}, "
          f"{a.device} ({name}), torch {torch.__version__}, amdnn {amdnn.__version__}, GEMM tier {a.gemm}")
    rows = {}

    def row(label, ips, note=""):
        rows[label] = ips
        print(f"  {label:<22} {ips:10.1f} images/s  {note}", flush=True)

    modes = [m for m in a.modes.split(",") if m]
    for mode in modes:
        m = amdnn.Model(onnx_path, mode=mode, device=a.device, gemm=a.gemm)
        r = m.bench(batch=a.batch, steps=a.steps, warmup_steps=a.warmup)
        m.close()
        row(f"library {mode}", r.images_per_s, f"(amdnn-onnx bench --mode {mode} --gemm {a.gemm})")
        ips = torch_steps(at.approximate(copy.deepcopy(base), mode=mode, gemm=a.gemm), shape, a.batch, a.steps,
                          a.warmup, dev)
        row(f"amdnn.torch {mode}", ips, f"{ips / r.images_per_s:.2f}x the library")
        if a.profile and dev.type == "cuda":
            profile_steps(at.approximate(copy.deepcopy(base), mode=mode, gemm=a.gemm), shape, a.batch, 5, dev)
    ips = torch_steps(copy.deepcopy(base), shape, a.batch, a.steps, a.warmup, dev)
    row("PyTorch FP32", ips, "(TF32 off)")
    if a.profile and dev.type == "cuda":
        profile_steps(copy.deepcopy(base), shape, a.batch, 5, dev)
    print("ratios:")
    if "am16" in modes:
        q = rows["amdnn.torch am16"] / rows["library am16"]
        print(f"  amdnn.torch am16 / library am16: {q:.2f} (target >= 0.8: {'met' if q >= 0.8 else 'NOT met'})")
    if "acc32" in modes:
        q = rows["amdnn.torch acc32"] / rows["PyTorch FP32"]
        print(f"  amdnn.torch acc32 / PyTorch FP32: {q:.2f} (target >= 0.9: {'met' if q >= 0.9 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
