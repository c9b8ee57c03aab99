"""amdnn.torch on CUDA tensors (skipped without a GPU and a CUDA build of
libamdnn): products, layers and gradients against amdnn.multiply's products
(the fp32 summation bound of test_torch_cpu.py) in both GEMM tiers, the bits
of the library's own CUDA nodes, ResNet-8 and ResNet-18 against the library
on the GPU (ResNet-18 also with BatchNormalization folded), no
host synchronisation per call, tensors on a second GPU.

The GPU sums in a fixed order of its own (split-K slices; the fast tier of
am16 adds the Mitchell products and their corrections apart), so only a sum
of one product, or the same kernel on the same shapes (the library's node),
is held to the bits.
"""
import copy
import time

import numpy as np
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.cuda]
torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import amdnn  # noqa: E402
from conftest import export_layer, fold_bn, load_export_models, same_bits, warmed_model_and_batch  # noqa: E402

at = pytest.importorskip("amdnn.torch")
U = 2.0 ** -24
DEV = "cuda"


def _bound(got, ref, abs_sum, terms, what):
    got = got.detach().double().cpu().numpy()
    excess = np.abs(got - ref) - ((terms + 1) * U * abs_sum + 1e-30)
    assert excess.max() <= 0, f"{what}: {int((excess > 0).sum())} values outside the bound, worst by {excess.max():.3g}"


@pytest.mark.parametrize("gemm", ["fast", "exact"])
@pytest.mark.parametrize("mode", ["am16", "mbm14", "mit16", "acc16", "fp16", "am32"])
def test_single_products_on_the_gpu_are_multiply(mode, gemm):
    """A 1x1 convolution of one channel: each output one product. The exact
    tier materialises it; the fast tier adds the Mitchell product and its
    correction, both exact, whose sum is the product itself."""
    torch.manual_seed(0)
    x = torch.randn(8, 1, 32, 32) * 4
    w = torch.randn(16, 1, 1, 1)
    y = at.conv2d(x.to(DEV), w.to(DEV), mode=mode, gemm=gemm).cpu()
    want = amdnn.multiply(w.numpy().reshape(1, 16, 1, 1), x.numpy(), mode)
    assert same_bits(y.numpy(), want)


@pytest.mark.parametrize("gemm", ["fast", "exact"])
@pytest.mark.parametrize("mode", ["am16", "mit16"])
def test_conv_linear_matmul_against_products(mode, gemm):
    torch.manual_seed(1)
    x = torch.randn(6, 8, 12, 12, requires_grad=True)
    w = torch.randn(16, 8, 3, 3, requires_grad=True)
    xc, wc = x.detach().to(DEV).requires_grad_(), w.detach().to(DEV).requires_grad_()
    y = at.conv2d(xc, wc, padding=1, stride=1, mode=mode, gemm=gemm)
    dy = torch.randn(y.shape)
    y.backward(dy.to(DEV))
    cols = F.unfold(x.detach(), 3, padding=1)  # [N, 72, L]
    K, L = 72, cols.shape[-1]
    p = amdnn.multiply(w.detach().numpy().reshape(1, 16, K, 1), cols.numpy()[:, None], mode).astype(np.float64)
    _bound(y.reshape(6, 16, L), p.sum(2), np.abs(p).sum(2), K, "conv forward")
    p = amdnn.multiply(dy.numpy().reshape(6, 16, 1, L), cols.numpy()[:, None], mode).astype(np.float64)
    _bound(wc.grad.reshape(16, K), p.sum((0, 3)), np.abs(p).sum((0, 3)), 6 * L, "conv dW")
    p = amdnn.multiply(w.detach().numpy().reshape(1, 16, K, 1), dy.numpy().reshape(6, 16, 1, L), mode)
    p = p.astype(np.float64)
    fold = dict(output_size=(12, 12), kernel_size=3, padding=1)
    ref = F.fold(torch.from_numpy(p.sum(1)), **fold).numpy()
    ab = F.fold(torch.from_numpy(np.abs(p).sum(1)), **fold).numpy()
    _bound(xc.grad, ref, ab, 16 + 9, "conv dX")
    a = torch.randn(3, 4, 20, 30, device=DEV, requires_grad=True)
    b = torch.randn(3, 4, 30, 10, device=DEV, requires_grad=True)
    c = at.matmul(a, b, mode=mode, gemm=gemm)
    p = amdnn.multiply(a.detach().cpu().numpy()[..., :, :, None], b.detach().cpu().numpy()[..., None, :, :], mode)
    _bound(c, p.astype(np.float64).sum(-2), np.abs(p.astype(np.float64)).sum(-2), 30, "matmul")
    lin = nn.Linear(30, 7).to(DEV)
    yl = at.linear(a, lin.weight, lin.bias, mode=mode, gemm=gemm)
    p = amdnn.multiply(a.detach().cpu().numpy()[..., None, :], lin.weight.detach().cpu().numpy(), mode)
    p = p.astype(np.float64)
    bias = lin.bias.detach().cpu().double().numpy()
    _bound(yl, p.sum(-1) + bias, np.abs(p).sum(-1) + np.abs(bias), 31, "linear")


@pytest.mark.parametrize("gemm", ["fast", "exact"])
@pytest.mark.parametrize("shape", [(4, 3, 9, 9, 3, 2), (2, 16, 32, 32, 1, 1), (64, 8, 4, 4, 3, 1)])
def test_layers_give_the_library_nodes_bits_on_the_gpu(tmp_path, gemm, shape):
    """A Conv (general, the pointwise path, many small images) and a Linear
    run by the library on the GPU (amdnn.Model, device cuda) and by
    amdnn.torch on CUDA tensors: the same kernels on the same shapes."""
    n, c, h, w, k, s = shape
    torch.manual_seed(2)
    conv = nn.Conv2d(c, 24, k, stride=s, padding=k // 2)
    x = torch.randn(n, c, h, w)
    export_layer(conv, x, tmp_path / "conv.onnx")
    want = amdnn.Model(tmp_path / "conv.onnx", mode="am16", device="cuda", gemm=gemm)(x.numpy())
    got = at.approximate(copy.deepcopy(conv).to(DEV), mode="am16", gemm=gemm)(x.to(DEV)).cpu().detach().numpy()
    assert same_bits(got, want), f"{int((got != want).sum())} of {got.size} differ"
    lin = nn.Linear(c * h, 9)
    xl = torch.randn(n, c * h)
    export_layer(lin, xl, tmp_path / "lin.onnx")
    want = amdnn.Model(tmp_path / "lin.onnx", mode="am16", device="cuda", gemm=gemm)(xl.numpy())
    got = at.approximate(copy.deepcopy(lin).to(DEV), mode="am16", gemm=gemm)(xl.to(DEV)).cpu().detach().numpy()
    assert same_bits(got, want)


@pytest.mark.parametrize("arch", ["resnet8", "resnet18"])
def test_resnet_on_the_gpu_against_the_library(tmp_path, arch):
    """ResNet-8 and ResNet-18 (CIFAR forms), BatchNormalization in training mode, am16 on the GPU: the
    gradient against the library's on the GPU (amdnn.Model.grad, the call of
    `amdnn-onnx grad --device cuda`) within 3 times the library's own
    one-ulp noise (see test_torch_resnet.py), and much closer to it than to
    acc32's."""
    pytest.importorskip("onnx")
    em, model, x, y = warmed_model_and_batch(arch, 32)
    sd = copy.deepcopy(model.state_dict())
    em.export(model, x, str(tmp_path / "r8.onnx"), training=True)
    model.load_state_dict(sd)
    m = at.approximate(copy.deepcopy(model).to(DEV), mode="am16")
    m.train()
    F.cross_entropy(m(x.to(DEV)), y.to(DEV)).backward()
    names = [k for k, _ in m.named_parameters()]
    got = np.concatenate([p.grad.cpu().numpy().ravel() for p in m.parameters()])

    def lib(xx, mode):
        _, g = amdnn.Model(tmp_path / "r8.onnx", mode=mode, device="cuda").grad(xx, y.numpy())
        return np.concatenate([g[n].ravel() for n in names])

    ref = lib(x.numpy(), "am16")
    noise = np.linalg.norm(lib(np.nextafter(x.numpy(), np.float32(np.inf)), "am16") - ref) / np.linalg.norm(ref)
    to_acc32 = np.linalg.norm(lib(x.numpy(), "acc32") - ref) / np.linalg.norm(ref)
    d = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    print(f"{arch} GPU am16 gradients: PyTorch vs library {d:.3g}, one-ulp noise {noise:.3g}, am16 vs acc32 {to_acc32:.3g}")
    assert d <= 3 * max(noise, 1e-6) and d <= 0.5 * to_acc32


@pytest.mark.parametrize("gemm", ["exact", "fast"])
def test_folded_resnet18_on_the_gpu_against_the_library(tmp_path, gemm):
    """ResNet-18 (CIFAR form) with BatchNormalization folded into its
    convolutions (no batch statistics: the network is GEMMs, Relu, Add,
    GlobalAveragePool), am16 on the GPU, against the library (amdnn.Model on
    cuda) on its export: the logits bit for bit (the same GEMM calls), every
    gradient within 3 times the library's own one-ulp noise and much closer
    to it than to acc32's (the backward sums the residual branches in other
    orders); prints how many gradient tensors are equal bit for bit."""
    pytest.importorskip("onnx")
    em, model, x, y = warmed_model_and_batch("resnet18", 16, seed=1)
    folded = fold_bn(model)
    em.export(copy.deepcopy(folded), x, str(tmp_path / "r18f.onnx"), training=False)
    m = at.approximate(copy.deepcopy(folded).to(DEV), mode="am16", gemm=gemm)
    out = m(x.to(DEV))
    F.cross_entropy(out, y.to(DEV)).backward()
    names = [k for k, _ in m.named_parameters()]
    got = {k: p.grad.cpu().numpy() for k, p in m.named_parameters()}

    def lib(xx, mode):
        model = amdnn.Model(tmp_path / "r18f.onnx", mode=mode, device="cuda", gemm=gemm)
        logits = model(xx)
        _, g = model.grad(xx, y.numpy())
        model.close()
        return logits, np.concatenate([g[n].ravel() for n in names]), g

    ref_logits, ref, ref_g = lib(x.numpy(), "am16")
    noise = np.linalg.norm(lib(np.nextafter(x.numpy(), np.float32(np.inf)), "am16")[1] - ref) / np.linalg.norm(ref)
    to_acc32 = np.linalg.norm(lib(x.numpy(), "acc32")[1] - ref) / np.linalg.norm(ref)
    vec = np.concatenate([got[n].ravel() for n in names])
    d = np.linalg.norm(vec - ref) / np.linalg.norm(ref)
    logits = out.detach().cpu().numpy()
    dl = np.abs(logits - ref_logits).max() / np.abs(ref_logits).max()
    same = sum(same_bits(got[n], ref_g[n]) for n in names)
    lw = "equal bit for bit" if same_bits(logits, ref_logits) else f"within {dl:.3g} of the largest"
    print(f"folded resnet18 am16 on the GPU ({gemm} tier): logits {lw}; gradients PyTorch vs library {d:.3g} "
          f"({same} of {len(names)} tensors equal bit for bit), one-ulp noise {noise:.3g}, am16 vs acc32 {to_acc32:.3g}")
    assert same_bits(logits, ref_logits), f"logits within {dl:.3g} of the largest, not equal"
    assert d <= 3 * max(noise, 1e-6) and d <= 0.5 * to_acc32


def test_no_host_synchronisation():
    """Forward and backward of an approximated network queue their work and
    return while the GPU is still busy with a kernel queued before them."""
    em = load_export_models()
    model = at.approximate(em.MODELS["resnet8"][0]().to(DEV), mode="am16")
    x = torch.randn(64, 3, 32, 32, device=DEV)
    y = torch.randint(0, 10, (64,), device=DEV)
    for _ in range(2):  # first calls: the library's contexts and workspaces
        F.cross_entropy(model(x), y).backward()
    torch.cuda.synchronize()
    if hasattr(torch.cuda, "set_sync_debug_mode"):
        torch.cuda.set_sync_debug_mode("error")  # PyTorch's own synchronising calls raise
    try:
        torch.cuda._sleep(int(3e9))  # ~1-2 s of GPU time queued first
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        host = time.perf_counter() - t0
    finally:
        if hasattr(torch.cuda, "set_sync_debug_mode"):
            torch.cuda.set_sync_debug_mode(0)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    gpu_wait = time.perf_counter() - t1
    assert gpu_wait > 0.2, f"the GPU was idle after the calls ({gpu_wait:.3f} s): the sleep kernel did not run"
    assert host < gpu_wait, f"forward and backward took {host:.3f} s on the host: they waited for the GPU"


def test_the_current_stream_orders_the_work():
    """The GEMMs run on PyTorch's current stream: on a side stream, results
    read after that stream's work are complete and correct."""
    torch.manual_seed(3)
    x = torch.randn(16, 8, 16, 16, device=DEV)
    w = torch.randn(8, 8, 3, 3, device=DEV)
    want = at.conv2d(x, w, padding=1, mode="am16", gemm="exact")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(int(1e9))
        got = at.conv2d(x, w, padding=1, mode="am16", gemm="exact") * 1.0
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(got, want)


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_second_gpu():
    torch.manual_seed(4)
    x = torch.randn(8, 4, 10, 10)
    w = torch.randn(6, 4, 3, 3)
    y0 = at.conv2d(x.to("cuda:0"), w.to("cuda:0"), padding=1, mode="am16", gemm="exact")
    y1 = at.conv2d(x.to("cuda:1"), w.to("cuda:1"), padding=1, mode="am16", gemm="exact")
    assert y1.device.index == 1 and torch.equal(y0.cpu(), y1.cpu())
