#!/usr/bin/env python3
"""PyTorch's side of the 8-bit benchmark (tools/bench_q8.sh), on the GPU:

    $(tools/torch_python.sh) tools/bench_q8_torch.py gemm     # torch._int_mm and fp32 matmul at ResNet-18's 3x3 conv GEMMs
    $(tools/torch_python.sh) tools/bench_q8_torch.py infer    # FP32 inference of tools/export_models.py's resnet18, batch 256

`gemm` times PyTorch's int8 GEMM (torch._int_mm: int8 x int8 -> int32 on the
tensor cores, no zero points) and its FP32 matmul (TF32 off) at the shapes of
`test_cuda_q8_gemm --bench` (M x N x K: output channels x batch 128 times
output positions x input channels times 9), in T MAC/s. PyTorch has no int8
convolution on CUDA, so end to end amdnn-onnx's 8-bit modes are compared with
PyTorch's FP32 model (`infer`; training: tools/bench_torch_train.py).
"""
import argparse
import os
import sys
import time

try:  # say which interpreter to use, instead of a bare ImportError
    import torch  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"bench_q8_torch.py: {e}: run it with a Python that has torch, e.g. "
             "$(tools/torch_python.sh) tools/bench_q8_torch.py ...")
import torch

SHAPES = ((64, 131072, 576), (128, 32768, 1152), (256, 8192, 2304), (512, 2048, 4608))


def seconds(fn, reps):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def cmd_gemm(a):
    print("%-20s %16s %16s" % ("M x N x K", "torch._int_mm", "fp32 matmul"))
    for M, N, K in SHAPES:
        x = torch.randint(-128, 128, (M, K), dtype=torch.int8, device="cuda")
        w = torch.randint(-128, 128, (N, K), dtype=torch.int8, device="cuda").t()  # K x N, column-major
        xf, wf = x.float(), w.float()
        macs = M * N * K
        ti = seconds(lambda: torch._int_mm(x, w), a.reps)
        tf = seconds(lambda: xf @ wf, a.reps)
        print("%-20s %16.2f %16.2f" % ("%dx%dx%d" % (M, N, K), macs / ti / 1e12, macs / tf / 1e12))


def cmd_infer(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models

    ctor, shape = export_models.MODELS[a.model]
    model = ctor().cuda().eval()
    x = torch.randn((a.batch,) + tuple(shape), device="cuda")
    with torch.no_grad():
        dt = seconds(lambda: model(x), a.reps)
    print("pytorch %s FP32 inference (TF32 off) batch %d: %.0f images/s (torch %s, %s)"
          % (a.model, a.batch, a.batch / dt, torch.__version__, torch.cuda.get_device_name()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gemm")
    g.add_argument("--reps", type=int, default=20)
    i = sub.add_parser("infer")
    i.add_argument("--model", default="resnet18")
    i.add_argument("--batch", type=int, default=256)
    i.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    {"gemm": cmd_gemm, "infer": cmd_infer}[a.cmd](a)


if __name__ == "__main__":
    main()
