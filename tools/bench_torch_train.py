#!/usr/bin/python3
"""PyTorch reference for the GPU training throughput of amdnn-onnx (issue 5).

Trains the models of tools/export_models.py (and tools/export_torchvision.py's
vit_cifar and mobilenet_v3_cifar) in eager mode on the GPU, FP32
with TF32 off, SGD (momentum 0.9), softmax cross-entropy, on random inputs,
and prints images/s over the timed steps (after warm-up steps), the figure
`amdnn-onnx train --device cuda` is compared with. With --write-tensors it
also writes a random data set for `amdnn-onnx train --data tensors:X.pb,Y.pb`
of the model's input shape.

    $(tools/torch_python.sh) tools/bench_torch_train.py --model resnet18 --batch 128 --steps 50
    $(tools/torch_python.sh) tools/bench_torch_train.py --model vit_cifar --batch 256 --steps 50
    $(tools/torch_python.sh) tools/bench_torch_train.py --model resnet18 --write-tensors DIR --count 2560
"""
import argparse
import os
import sys
import time

try:  # say which interpreter to use, instead of a bare ImportError
    import torch  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"bench_torch_train.py: {e}: run it with a Python that has torch, e.g. "
             "$(tools/torch_python.sh) tools/bench_torch_train.py ...")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  (the model definitions)
import torch  # noqa: E402


# tools/export_torchvision.py's models for 32 x 32 inputs (its EXTRA_MODELS but transformer_encoder, whose
# patch size and width are its own)
CIFAR_TORCHVISION = ("vit_cifar", "mobilenet_v3_cifar")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(export_models.MODELS) + list(CIFAR_TORCHVISION),
                    help="a model of tools/export_models.py, or one of tools/export_torchvision.py's "
                    "CIFAR-10 models (10 classes, 32 x 32: the exports `amdnn-onnx bench` takes)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--write-tensors", metavar="DIR")
    ap.add_argument("--count", type=int, default=2560)
    ap.add_argument("--kernels", action="store_true",
                    help="also list the CUDA kernels of a few more steps by GPU time (torch.profiler)")
    a = ap.parse_args()
    if a.model in CIFAR_TORCHVISION:
        import export_torchvision  # noqa: E402  (needs torchvision)

        ctor, shape = (lambda: export_torchvision.build(a.model, 10, 32, None)), (3, 32, 32)
    else:
        ctor, shape = export_models.MODELS[a.model]
    if a.write_tensors:
        import numpy as np
        from onnx import numpy_helper

        os.makedirs(a.write_tensors, exist_ok=True)
        rng = np.random.default_rng(1)
        x = rng.standard_normal((a.count,) + tuple(shape)).astype(np.float32)
        y = rng.integers(0, 10, a.count).astype(np.int64)
        for name, arr in (("X", x), ("Y", y)):
            with open(os.path.join(a.write_tensors, name + ".pb"), "wb") as f:
                f.write(numpy_helper.from_array(arr, name).SerializeToString())
        print("wrote %d samples of %s to %s" % (a.count, shape, a.write_tensors))
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model = ctor().to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn((a.batch,) + tuple(shape), device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("pytorch %s eager fp32 (tf32 off) batch %d: %.0f images/s (%d steps, torch %s, %s)"
          % (a.model, a.batch, a.steps * a.batch / dt, a.steps, torch.__version__, torch.cuda.get_device_name()))
    print("pytorch %s batch %d GPU memory: peak %.1f MiB allocated, %.1f MiB reserved by its caching allocator"
          % (a.model, a.batch, torch.cuda.max_memory_allocated() / 2**20, torch.cuda.max_memory_reserved() / 2**20))
    if a.kernels:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15, max_name_column_width=70))


if __name__ == "__main__":
    main()
