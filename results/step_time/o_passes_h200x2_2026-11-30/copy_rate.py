"""How fast a plain device-to-device copy moves the activation sizes of a ResNet-18 CIFAR step at batch 128
(4 to 128 MiB), as PyTorch's copy_ kernel runs it: bytes read plus bytes written over the time, CUDA events
around 200 copies, after 20 warm ones. The bound the non-GEMM passes of a step work against."""
import torch

def rate(mib):
    n = mib * 1024 * 1024 // 4
    a = torch.randn(n, device="cuda")
    b = torch.empty_like(a)
    for _ in range(20):
        b.copy_(a)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(200):
        b.copy_(a)
    e.record()
    torch.cuda.synchronize()
    us = s.elapsed_time(e) * 1000 / 200
    return us, 2 * n * 4 / (us * 1e-6) / 1e12

print("copy (MiB)  us a copy  TB/s (read + written)   %s" % torch.cuda.get_device_name())
for mib in (4, 8, 16, 32, 64, 128, 288):
    us, tbs = rate(mib)
    print("%10d  %9.1f  %.2f" % (mib, us, tbs))
