"""amdnn.torch on the CPU: conv2d, linear and matmul, forward and both
gradients, against explicit references, and approximate() on whole modules.

References: the products of amdnn.multiply (the spec's, bit for bit) summed
in float64. The layers sum the same products in fp32, so each result may
differ from its reference by the fp32 summation bound of its terms,
|C - ref| <= (k + 1) 2^-24 sum |p| for k terms (col2im adds at most kh*kw
more terms to a data gradient). acc32 is also checked against PyTorch's own
fp32 operations, within twice that bound (both round). A layer with a single
product per output (one input channel, a 1x1 kernel) must give
amdnn.multiply's products exactly, and a layer must give the bits of the
same ONNX node run by the library (amdnn.Model) on the CPU.
"""
import numpy as np
import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import amdnn  # noqa: E402
import amdnn.torch as at  # noqa: E402
from conftest import export_layer, same_bits  # noqa: E402

U = 2.0 ** -24


def _check_bound(got, ref64, abs_sum, terms, what, factor=1.0):
    got = got.detach().double().numpy() if isinstance(got, torch.Tensor) else np.asarray(got, np.float64)
    bound = factor * (terms + 1) * U * abs_sum + 1e-30
    excess = np.abs(got - ref64) - bound
    assert excess.max() <= 0, (f"{what}: {int((excess > 0).sum())} of {excess.size} values outside the fp32 "
                               f"summation bound, worst by {excess.max():.3g}")


def _prod(a, b, mode):
    """amdnn.multiply of broadcast float32 tensors, as float64 numpy."""
    return amdnn.multiply(a.detach().numpy(), b.detach().numpy(), mode).astype(np.float64)


CONV_CASES = [
    dict(x=(3, 4, 7, 6), w=(5, 4, 3, 3), stride=2, padding=1, dilation=1, groups=1),
    dict(x=(2, 4, 6, 6), w=(6, 2, 3, 2), stride=1, padding=(1, 0), dilation=(1, 2), groups=2),
    dict(x=(2, 3, 5, 4), w=(4, 3, 1, 1), stride=1, padding=0, dilation=1, groups=1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("mode,bmode", [("am16", None), ("mit16", "acc16"), ("acc32", None)])
def test_conv2d_against_products(case, mode, bmode):
    torch.manual_seed(0)
    x = torch.randn(case["x"], requires_grad=True)
    w = torch.randn(case["w"], requires_grad=True)
    b = torch.randn(case["w"][0], requires_grad=True)
    kw = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    y = at.conv2d(x, w, b, mode=mode, backward_mode=bmode, **kw)
    dy = torch.randn_like(y)
    y.backward(dy)
    bm = bmode or mode
    g, (O, Cg, kh, kwid) = kw["groups"], case["w"]
    N, C = case["x"][:2]
    cols = F.unfold(x.detach(), (kh, kwid), dilation=kw["dilation"], padding=kw["padding"], stride=kw["stride"])
    L = cols.shape[-1]
    Og, K = O // g, Cg * kh * kwid
    y_ref, y_abs = np.zeros((N, O, L)), np.zeros((N, O, L))
    dw_ref, dw_abs = np.zeros((O, K)), np.zeros((O, K))
    dcol_ref, dcol_abs = np.zeros((N, C * kh * kwid, L)), np.zeros((N, C * kh * kwid, L))
    dy3 = dy.reshape(N, O, L)
    for gi in range(g):
        wg = w.detach().reshape(O, K)[gi * Og:(gi + 1) * Og]  # [Og, K]
        cg = cols[:, gi * K:(gi + 1) * K]  # [N, K, L]
        dyg = dy3[:, gi * Og:(gi + 1) * Og]  # [N, Og, L]
        p = _prod(wg[None, :, :, None], cg[:, None, :, :], mode)  # [N, Og, K, L]
        y_ref[:, gi * Og:(gi + 1) * Og] = p.sum(2)
        y_abs[:, gi * Og:(gi + 1) * Og] = np.abs(p).sum(2)
        p = _prod(dyg[:, :, None, :], cg[:, None, :, :], bm)  # dW: [N, Og, K, L]
        dw_ref[gi * Og:(gi + 1) * Og] = p.sum((0, 3))
        dw_abs[gi * Og:(gi + 1) * Og] = np.abs(p).sum((0, 3))
        p = _prod(wg[None, :, :, None], dyg[:, :, None, :], bm)  # dcol: [N, Og, K, L]
        dcol_ref[:, gi * K:(gi + 1) * K] = p.sum(1)
        dcol_abs[:, gi * K:(gi + 1) * K] = np.abs(p).sum(1)
    y_ref += b.detach().double().numpy()[None, :, None]
    y_abs += np.abs(b.detach().double().numpy())[None, :, None]
    _check_bound(y.reshape(N, O, L), y_ref, y_abs, K + 1, f"{mode} forward")
    _check_bound(w.grad.reshape(O, K), dw_ref, dw_abs, N * L, f"{bm} dW")
    fold = dict(output_size=case["x"][2:], kernel_size=(kh, kwid), dilation=kw["dilation"], padding=kw["padding"],
                stride=kw["stride"])
    dx_ref = F.fold(torch.from_numpy(dcol_ref), **fold).numpy()
    dx_abs = F.fold(torch.from_numpy(dcol_abs), **fold).numpy()
    _check_bound(x.grad, dx_ref, dx_abs, Og + kh * kwid, f"{bm} dX")
    _check_bound(b.grad, dy.sum((0, 2, 3)).double().numpy(), dy.abs().sum((0, 2, 3)).double().numpy(), N * L, "dB")
    if mode == "acc32" and bmode is None:  # PyTorch's own conv, within the bound of both roundings
        x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        yt = F.conv2d(x2, w2, b.detach(), **kw)
        yt.backward(dy)
        _check_bound(y, yt.detach().double().numpy().reshape(y.shape), y_abs.reshape(y.shape), K + 1, "vs F.conv2d",
                     factor=2)
        _check_bound(w.grad, w2.grad.double().numpy(), dw_abs.reshape(w.shape), N * L, "dW vs torch", factor=2)
        _check_bound(x.grad, x2.grad.double().numpy(), dx_abs, Og + kh * kwid, "dX vs torch", factor=2)


def test_single_products_are_multiply():
    """One input channel and a 1x1 kernel: each output is one product, and
    each weight gradient one product per position: amdnn.multiply's bits."""
    torch.manual_seed(1)
    x = torch.randn(1, 1, 4, 5, requires_grad=True)
    w = torch.randn(3, 1, 1, 1, requires_grad=True)
    y = at.conv2d(x, w, mode="mit16")
    want = amdnn.multiply(w.detach().numpy().reshape(3, 1, 1), x.detach().numpy()[0], "mit16")
    assert same_bits(y.detach().numpy()[0], want)
    xl = torch.randn(6, 1, requires_grad=True)
    wl = torch.randn(4, 1, requires_grad=True)
    yl = at.linear(xl, wl, mode="am16")
    assert same_bits(yl.detach().numpy(), amdnn.multiply(xl.detach().numpy(), wl.detach().numpy().T, "am16"))
    dy = torch.randn(6, 4)
    yl.backward(dy)
    # dX [6, 1] = dY [6, 4] W [4, 1]: four products summed; dW [4, 1] = dY^T X: six
    p = amdnn.multiply(dy.numpy(), wl.detach().numpy().T, "am16")
    ref = np.float32(0) + p[:, 0]
    for k in range(1, 4):
        ref = ref + p[:, k]
    assert same_bits(xl.grad.numpy()[:, 0], ref)


@pytest.mark.parametrize("mode", ["am16", "acc32"])
def test_linear_against_products(mode):
    torch.manual_seed(2)
    x = torch.randn(2, 3, 20, requires_grad=True)
    lin = nn.Linear(20, 7)
    y = at.linear(x, lin.weight, lin.bias, mode=mode)
    dy = torch.randn_like(y)
    y.backward(dy)
    W, b = lin.weight.detach(), lin.bias.detach()
    p = _prod(x.detach()[..., None, :], W, mode)  # [2, 3, 7, 20]
    y_abs = np.abs(p).sum(-1) + np.abs(b.double().numpy())
    _check_bound(y, p.sum(-1) + b.double().numpy(), y_abs, 21, "linear")
    p = _prod(dy[..., :, None], W, mode)  # dX: [2, 3, 7, 20]
    _check_bound(x.grad, p.sum(-2), np.abs(p).sum(-2), 7, "linear dX")
    p = _prod(dy.reshape(6, 7)[:, :, None], x.detach().reshape(6, 1, 20), mode)  # dW: [6, 7, 20]
    _check_bound(lin.weight.grad, p.sum(0), np.abs(p).sum(0), 6, "linear dW")
    assert torch.allclose(lin.bias.grad, dy.sum((0, 1)))
    if mode == "acc32":
        yt = F.linear(x, lin.weight, lin.bias)
        _check_bound(y, yt.detach().double().numpy(), y_abs, 21, "vs F.linear", factor=2)


@pytest.mark.parametrize("shapes", [((2, 3, 4, 5), (2, 3, 5, 6)), ((4, 6, 8), (8, 3)), ((3, 1, 4, 5), (1, 2, 5, 6))])
def test_matmul_against_products(shapes):
    torch.manual_seed(3)
    a = torch.randn(shapes[0], requires_grad=True)
    b = torch.randn(shapes[1], requires_grad=True)
    c = at.matmul(a, b, mode="am16")
    dc = torch.randn_like(c)
    c.backward(dc)
    K = a.shape[-1]
    p = _prod(a.detach()[..., :, :, None], b.detach()[..., None, :, :], "am16")  # [..., M, K, N]
    _check_bound(c, p.sum(-2), np.abs(p).sum(-2), K, "matmul")
    # dA = dC B^T (products dc x b), summed over what broadcast a
    p = _prod(dc[..., :, None, :], b.detach()[..., None, :, :], "am16")  # [..., M, K, N]
    ref = torch.from_numpy(p.sum(-1)).sum_to_size(a.shape).numpy()
    ab = torch.from_numpy(np.abs(p).sum(-1)).sum_to_size(a.shape).numpy()
    _check_bound(a.grad, ref, ab, c.shape[-1] * (c.numel() // a.numel() + 1), "matmul dA")
    p = _prod(a.detach()[..., :, :, None], dc[..., :, None, :], "am16")  # dB = A^T dC: [..., M, K, N]
    ref = torch.from_numpy(p.sum(-3)).sum_to_size(b.shape).numpy()
    ab = torch.from_numpy(np.abs(p).sum(-3)).sum_to_size(b.shape).numpy()
    _check_bound(b.grad, ref, ab, c.shape[-2] * (c.numel() // b.numel() + 1), "matmul dB")


@pytest.mark.parametrize("mode", ["am16", "lut"])
def test_layers_give_the_library_nodes_bits(tmp_path, mode):
    """A Conv (with bias, stride, padding) and a Linear (the ONNX Gemm of the
    export), each run by the library (amdnn.Model on the CPU) and by
    amdnn.torch: the same GEMM calls, the same bits. lut: an asymmetric table
    (mul(a, b) != mul(b, a)), which also checks the operand order."""
    if mode == "lut":
        lut = tmp_path / "asym.lut"
        amdnn.write_lut(lut, lambda u, v: np.minimum(u * v * (1 + (u - 1) / 8), 3.99))
        mode = f"lut:{lut}"
        p, q = np.float32(1.75), np.float32(1.25)
        assert amdnn.multiply(p, q, mode) != amdnn.multiply(q, p, mode)
    torch.manual_seed(4)
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
    x = torch.randn(4, 3, 9, 9)
    export_layer(conv, x, tmp_path / "conv.onnx")
    want = amdnn.Model(tmp_path / "conv.onnx", mode=mode, device="cpu")(x.numpy())
    got = at.approximate(conv, mode=mode)(x).detach().numpy()
    assert same_bits(got, want)
    lin = nn.Linear(40, 9)
    xl = torch.randn(5, 40)
    export_layer(lin, xl, tmp_path / "lin.onnx")
    want = amdnn.Model(tmp_path / "lin.onnx", mode=mode, device="cpu")(xl.numpy())
    assert same_bits(at.approximate(lin, mode=mode)(xl).detach().numpy(), want)


def test_approximate_keeps_the_module():
    em_models = pytest.importorskip("conftest").load_export_models()
    model = em_models.MODELS["resnet8"][0]()
    keys = list(model.state_dict())
    ref = [type(m) for m in model.modules()]
    at.approximate(model, mode="am16", skip=["linear", "layers.2"])
    assert list(model.state_dict()) == keys
    modes = at.modes_of(model)
    assert modes["conv1"] == "am16" and "linear" not in modes and "layers.2.0.conv1" not in modes
    assert isinstance(model.conv1, nn.Conv2d) and type(model.conv1) is at.ApproxConv2d
    assert type(model.linear) is nn.Linear and type(model.layers[2][0].conv1) is nn.Conv2d
    assert "amdnn=am16" in repr(model.conv1)
    x = torch.randn(2, 3, 32, 32)
    model.eval()
    y = model(x)
    assert y.shape == (2, 10)
    at.restore(model)
    assert [type(m) for m in model.modules()] == ref and not at.modes_of(model)
    at.approximate(model, mode="acc32", backward_mode="exact")
    assert at.modes_of(model)["linear"] == "acc32"
    # an optimizer made before approximate still trains the same parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    before = model.conv1.weight.detach().clone()
    F.cross_entropy(model(x), torch.tensor([1, 2])).backward()
    opt.step()
    assert not torch.equal(before, model.conv1.weight)


def test_backward_mode_exact_is_acc32():
    torch.manual_seed(5)
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    at.conv2d(x, w, padding=1, mode="am16", backward_mode="exact").sum().backward()
    g1 = w.grad.clone()
    w.grad = None
    at.conv2d(x, w, padding=1, mode="acc32").sum().backward()
    assert torch.equal(g1, w.grad)
    w.grad = None
    at.conv2d(x, w, padding=1, mode="am16").sum().backward()
    assert not torch.equal(g1, w.grad)


def test_multihead_attention_acc32_is_pytorchs():
    torch.manual_seed(6)
    for batch_first, kdim in ((False, None), (True, 12)):
        mha = nn.MultiheadAttention(16, 4, batch_first=batch_first, kdim=kdim, vdim=kdim)
        ref = nn.MultiheadAttention(16, 4, batch_first=batch_first, kdim=kdim, vdim=kdim)
        ref.load_state_dict(mha.state_dict())
        at.approximate(mha, mode="acc32")
        assert type(mha) is at.ApproxMultiheadAttention
        shape_q = (2, 5, 16) if batch_first else (5, 2, 16)
        shape_k = (2, 7, kdim or 16) if batch_first else (7, 2, kdim or 16)
        q, k = torch.randn(shape_q), torch.randn(shape_k)
        mask = torch.zeros(5, 7, dtype=torch.bool)
        mask[:, -2:] = True
        kpm = torch.zeros(2, 7, dtype=torch.bool)
        kpm[1, 0] = True
        out, w = mha(q, k, k, attn_mask=mask, key_padding_mask=kpm)
        out_r, w_r = ref(q, k, k, attn_mask=mask, key_padding_mask=kpm)
        assert torch.allclose(out, out_r, atol=1e-5, rtol=1e-5) and torch.allclose(w, w_r, atol=1e-6)
        out.square().sum().backward()
        out_r.square().sum().backward()
        for (n, p), (_, pr) in zip(mha.named_parameters(), ref.named_parameters()):
            assert torch.allclose(p.grad, pr.grad, atol=1e-4, rtol=1e-4), n
    at.approximate(mha, mode="am16")
    out16, _ = mha(q, k, k)
    out32, _ = ref(q, k, k)
    assert not torch.allclose(out16, out32, atol=1e-3)


def test_functional_matmuls_are_caught():
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, q, k):
            s = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            return self.proj(torch.matmul(s, k))

    torch.manual_seed(7)
    m = Attn()
    q, k = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    plain = at.approximate(Attn(), mode="am16")
    plain.load_state_dict(m.state_dict())
    caught = at.approximate(m, mode="am16", matmuls=True)
    s = torch.softmax(at.matmul(q, k.transpose(-2, -1), mode="am16"), dim=-1)
    want = at.linear(at.matmul(s, k, mode="am16"), m.proj.weight, m.proj.bias, mode="am16")
    assert torch.equal(caught(q, k), want)
    assert not torch.equal(plain(q, k), want)  # without matmuls=True the products are PyTorch's
    at.restore(caught)
    assert torch.equal(caught(q, k), Attn.forward(caught, q, k))


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"), reason="PyTorch < 2 has no SDPA")
def test_sdpa_is_caught():
    class Block(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    torch.manual_seed(8)
    q, k, v = (torch.randn(2, 2, 5, 8) for _ in range(3))
    got = at.approximate(Block(), mode="am16")(q, k, v)
    want = at.scaled_dot_product_attention(q, k, v, is_causal=True, mode="am16")
    assert torch.equal(got, want)
    assert torch.equal(at.approximate(Block(), mode="am16", matmuls=True)(q, k, v), want)  # the TorchFunctionMode
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).shape == want.shape  # PyTorch's own again
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    acc = at.scaled_dot_product_attention(q, k, v, is_causal=True, mode="acc32")
    assert torch.allclose(acc, ref, atol=1e-5) and not torch.allclose(got, ref, atol=1e-3)


def test_errors():
    x = torch.randn(1, 2, 5, 5)
    w = torch.randn(3, 2, 3, 3)
    with pytest.raises(amdnn.ArgumentError, match="float64"):
        at.conv2d(x.double(), w.double())
    with pytest.raises(amdnn.ArgumentError, match="8-bit"):
        at.conv2d(x, w, mode="q8u:exact")
    with pytest.raises(amdnn.ArgumentError, match="am17"):
        at.approximate(nn.Linear(2, 2), mode="am17")
    with pytest.raises(amdnn.ArgumentError, match="do not agree"):
        at.conv2d(x, torch.randn(3, 4, 3, 3))
    with pytest.raises(amdnn.ArgumentError, match="smaller than"):
        at.conv2d(x, torch.randn(3, 2, 7, 7))
    with pytest.raises(amdnn.ArgumentError, match="3 against 4"):
        at.matmul(torch.randn(2, 3), torch.randn(4, 2))
    with pytest.raises(ValueError):
        at.linear(torch.randn(2, 3), torch.randn(4, 5))


def test_half_inputs_compute_in_fp32():
    torch.manual_seed(9)
    x = torch.randn(2, 3, 5, 5)
    w = torch.randn(4, 3, 3, 3)
    y16 = at.conv2d(x.half(), w.half(), mode="am16")
    assert y16.dtype == torch.float16
    assert torch.equal(y16, at.conv2d(x.half().float(), w.half().float(), mode="am16").half())


@pytest.mark.parametrize("case", CONV_CASES + [dict(x=(3, 4, 23, 23), w=(6, 4, 1, 1), stride=1, padding=0, dilation=1,
                                                     groups=1)])
def test_the_gpu_convolution_plan(case):
    """amdnn_conv2d_plan (the shape of the library's GPU convolution, which
    amdnn.torch calls on CUDA tensors) gives F.conv2d's output size in every
    build."""
    from amdnn.torch import _gemm
    x, w = torch.randn(case["x"]), torch.randn(case["w"])
    st, pd, dl = (at.functional._pair(case[k]) for k in ("stride", "padding", "dilation"))
    plan = _gemm.conv_plan(*x.shape, w.shape[0], *w.shape[2:], case["groups"], st, dl, pd)
    y = F.conv2d(x, w, stride=st, padding=pd, dilation=dl, groups=case["groups"])
    assert (plan.oh, plan.ow) == tuple(y.shape[2:])


@pytest.mark.parametrize("bad,message", [
    (dict(c=5), "not divisible by 2 groups"),
    (dict(m=7), "not divisible by group 2"),
    (dict(kh=9), "larger than the padded input"),
    (dict(stride=(0, 1)), "under 1"),
    (dict(padding=(-1, 0)), "negative pad"),
])
def test_the_gpu_convolution_plan_refuses_bad_shapes(bad, message):
    from amdnn.torch import _gemm
    args = dict(n=2, c=4, h=6, w=6, m=6, kh=3, kw=3, groups=2, stride=(1, 1), dilation=(1, 1), padding=(1, 1))
    args.update(bad)
    with pytest.raises(amdnn.ArgumentError, match=message):
        _gemm.conv_plan(**args)


def test_transformer_layers_take_the_multiplier():
    """nn.TransformerEncoder in inference (where PyTorch 2 would take its fused
    fast path on the attention's weights): the approximated layers' products
    still go through the multiplier (acc32 matches PyTorch, am16 does not)."""
    torch.manual_seed(11)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 2)
    enc.eval()
    x = torch.randn(3, 6, 16)
    with torch.no_grad():
        ref = enc(x)
        acc = at.approximate(copy_module(enc), mode="acc32")(x)
        am = at.approximate(copy_module(enc), mode="am16")(x)
    assert torch.allclose(acc, ref, atol=1e-5) and not torch.allclose(am, ref, atol=1e-3)
    restored = at.restore(at.approximate(copy_module(enc)))
    with torch.no_grad():
        assert torch.allclose(restored(x), ref, atol=1e-6)
    assert all(type(m) is not at.ApproxMultiheadAttention for m in restored.modules())
    assert restored.layers[0].activation_relu_or_gelu == enc.layers[0].activation_relu_or_gelu


def copy_module(m):
    import copy
    return copy.deepcopy(m)
