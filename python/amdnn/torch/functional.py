"""Convolution, linear layers and matrix products as torch.autograd.Functions
whose forward and both backward GEMMs run through the library's mode GEMM.

Each layer makes the GEMM calls that the library's own op makes on that
device (src/ops/conv.c and matmul.c on the CPU, cuda/ops/conv.cu on a GPU),
with the same shapes, operand order and accumulation, so that a layer's
products and sums are those of the same ONNX node run by `amdnn-onnx`:

conv2d, CPU: per image, Y_n[O, L] = W[O, kdim] col_n[kdim, L] with col_n
  F.unfold's im2col of image n (one batched call, W repeated with stride 0);
  dW = sum over the images in order of dY_n col_n^T (one batched call that
  accumulates into dW, beta 1); dcol_n = W^T dY_n, folded back (F.fold).
conv2d, GPU: the library's own GPU Conv (amdnn_conv2d_cuda and
  amdnn_conv2d_backward_cuda: its im2col, GEMM calls, col2im and chunks of
  images, the same kernels as `amdnn-onnx` on the same shapes), on the
  tensors' device and PyTorch's current stream.
linear: the ONNX Gemm of PyTorch's export (transB = 1): Y = X W^T + b with
  the bias in the GEMM's C (beta 1), dX = dY W, dW = dY^T X.
matmul: the ONNX MatMul: numpy broadcasting; a 2-D right operand is one GEMM
  over all rows; otherwise one batched call.

Only the GEMMs are the multiplier's: im2col, the bias and its gradient, the
transposes and col2im are exact fp32 (as in the library). Gradients are
returned, not accumulated; autograd adds them.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F

from .. import errors
from ._gemm import Modes, conv2d_backward_cuda, conv2d_cuda, conv_plan, gemm

_IntPair = Union[int, Sequence[int]]


def _pair(v: _IntPair) -> tuple:
    return (int(v), int(v)) if isinstance(v, int) else tuple(int(x) for x in v)


def _f32(t: torch.Tensor, what: str) -> torch.Tensor:
    """t as a contiguous float32 tensor (half types are widened: the modes
    multiply fp32 values); float64 and integers are refused."""
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    elif t.dtype != torch.float32:
        raise errors.ArgumentError(f"{what}: amdnn layers compute with float32 tensors, not {t.dtype} "
                                   "(convert the model with .float())")
    return t.contiguous()


def _same_device(what: str, *ts: Optional[torch.Tensor]) -> None:
    devs = {t.device for t in ts if t is not None}
    if len(devs) > 1:
        raise errors.ArgumentError(f"{what}: tensors on different devices: {', '.join(map(str, devs))}")


# ------------------------------------------------------------------ conv2d

class _Geom:
    """The shapes of one 2-D convolution."""

    def __init__(self, x: torch.Tensor, w: torch.Tensor, stride, padding, dilation, groups: int):
        self.n, self.c, self.h, self.w = x.shape
        self.o, self.cg, self.kh, self.kw = w.shape
        self.sh, self.sw = stride
        self.ph, self.pw = padding
        self.dh, self.dw = dilation
        self.g = groups
        if self.c != self.cg * groups or self.o % groups:
            raise errors.ArgumentError(f"conv2d: input of {self.c} channels, weight {tuple(w.shape)} and "
                                       f"groups {groups} do not agree")
        self.og = self.o // groups
        self.oh = (self.h + 2 * self.ph - self.dh * (self.kh - 1) - 1) // self.sh + 1
        self.ow = (self.w + 2 * self.pw - self.dw * (self.kw - 1) - 1) // self.sw + 1
        if self.oh <= 0 or self.ow <= 0:
            raise errors.ArgumentError(f"conv2d: a {self.h}x{self.w} input is smaller than the "
                                       f"{self.kh}x{self.kw} kernel (with padding and dilation)")
        self.L = self.oh * self.ow
        self.kdim = self.cg * self.kh * self.kw
        self.ckk = self.c * self.kh * self.kw

    @property
    def direct(self) -> bool:
        """1x1, unit strides, no padding: col is X itself (the CPU's fast path)."""
        return (self.kh == 1 and self.kw == 1 and self.sh == 1 and self.sw == 1 and self.ph == 0 and self.pw == 0)


def _unfold(x: torch.Tensor, g: _Geom) -> torch.Tensor:
    """[N, C*kh*kw, L]: each image's im2col (the CPU's layout)."""
    if g.direct:
        return x.reshape(g.n, g.c, g.L)
    return F.unfold(x, (g.kh, g.kw), dilation=(g.dh, g.dw), padding=(g.ph, g.pw), stride=(g.sh, g.sw))


def _fold(dcol: torch.Tensor, g: _Geom, nb: int) -> torch.Tensor:
    """col2im of [nb, C*kh*kw, L] onto [nb, C, H, W] (overlaps summed)."""
    if g.direct:
        return dcol.reshape(nb, g.c, g.h, g.w)
    return F.fold(dcol, (g.h, g.w), (g.kh, g.kw), dilation=(g.dh, g.dw), padding=(g.ph, g.pw),
                  stride=(g.sh, g.sw))


def _conv_forward(x, w, g: _Geom, modes: Modes) -> torch.Tensor:
    """Y of a convolution (no bias) with the GEMM calls of the library's CPU Conv."""
    y = torch.empty((g.n, g.o, g.oh, g.ow), dtype=torch.float32, device=x.device)
    m, ex = modes.forward, modes.exact_tier
    cols = _unfold(x, g)
    for gi in range(g.g):  # per group: one call over the images, W repeated
        gemm(m, ex, 0, 0, g.og, g.L, g.kdim, w, gi * g.og * g.kdim, g.kdim, 0, cols, gi * g.kdim * g.L, g.L,
             g.ckk * g.L, y, gi * g.og * g.L, g.L, g.o * g.L, g.n)
    return y


def _conv_backward(x, w, dy, g: _Geom, modes: Modes, need_x: bool, need_w: bool):
    """(dX, dW) with the GEMM calls of the library's CPU Conv backward."""
    m, ex = modes.backward, modes.exact_tier
    dx = dw = None
    cols = _unfold(x, g) if need_w else None
    if need_w:  # dW_g = sum over the images, in order, of dY_n,g col_n,g^T
        dw = torch.zeros_like(w)
        for gi in range(g.g):
            gemm(m, ex, 0, 1, g.og, g.kdim, g.L, dy, gi * g.og * g.L, g.L, g.o * g.L, cols, gi * g.kdim * g.L,
                 g.L, g.ckk * g.L, dw, gi * g.og * g.kdim, g.kdim, 0, g.n, beta=1.0)
    if need_x:  # dcol_n,g = W_g^T dY_n,g, then col2im
        dcol = torch.empty((g.n, g.ckk, g.L), dtype=torch.float32)
        for gi in range(g.g):
            gemm(m, ex, 1, 0, g.kdim, g.L, g.og, w, gi * g.og * g.kdim, g.kdim, 0, dy, gi * g.og * g.L, g.L,
                 g.o * g.L, dcol, gi * g.kdim * g.L, g.L, g.ckk * g.L, g.n)
        dx = _fold(dcol, g, g.n)
    return dx, dw


def _plan(g: _Geom):
    return conv_plan(g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.g, (g.sh, g.sw), (g.dh, g.dw), (g.ph, g.pw))


class Conv2dFunction(torch.autograd.Function):
    """y = conv2d(x, w, b) with every product in the forward mode and both
    backward GEMMs in the backward mode."""

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups, modes: Modes):
        in_dtype = x.dtype
        x32, w32 = _f32(x, "conv2d input"), _f32(w, "conv2d weight")
        b32 = _f32(b, "conv2d bias") if b is not None else None
        _same_device("conv2d", x32, w32, b32)
        if x32.dim() != 4 or w32.dim() != 4:
            raise errors.ArgumentError(f"conv2d: input {tuple(x.shape)} and weight {tuple(w.shape)} must be 4-D")
        g = _Geom(x32, w32, stride, padding, dilation, groups)
        if x32.is_cuda:  # the library's GPU Conv, the bias added as it writes y
            y = torch.empty((g.n, g.o, g.oh, g.ow), dtype=torch.float32, device=x32.device)
            conv2d_cuda(modes, _plan(g), x32, w32, b32, y)
        else:
            y = _conv_forward(x32, w32, g, modes)
            if b32 is not None:
                y += b32.view(1, -1, 1, 1)
        ctx.save_for_backward(x32, w32)
        ctx.geom, ctx.modes, ctx.has_bias, ctx.in_dtype = g, modes, b is not None, in_dtype
        ctx.w_dtype = w.dtype
        return y if in_dtype == torch.float32 else y.to(in_dtype)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        g = ctx.geom
        dy32 = dy.float().contiguous() if dy.dtype != torch.float32 else dy.contiguous()
        need_x, need_w, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        if x.is_cuda:
            dx = torch.empty_like(x) if need_x else None
            dw = torch.empty_like(w) if need_w else None
            if need_x or need_w:
                conv2d_backward_cuda(ctx.modes, _plan(g), x, w, dy32, dx, dw)
        else:
            dx, dw = _conv_backward(x, w, dy32, g, ctx.modes, need_x, need_w)
        db = dy32.sum(dim=(0, 2, 3)) if ctx.has_bias and need_b else None
        if dx is not None and ctx.in_dtype != torch.float32:
            dx = dx.to(ctx.in_dtype)
        if dw is not None and ctx.w_dtype != torch.float32:
            dw = dw.to(ctx.w_dtype)
        if db is not None and ctx.w_dtype != torch.float32:
            db = db.to(ctx.w_dtype)
        return dx, dw, db, None, None, None, None, None


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride: _IntPair = 1,
           padding: Union[_IntPair, str] = 0, dilation: _IntPair = 1, groups: int = 1, *, mode: str = "am16",
           backward_mode: Optional[str] = None, gemm: str = "fast") -> torch.Tensor:
    """F.conv2d with every product of the forward pass in `mode` and both
    backward GEMMs in `backward_mode` ("exact": acc32; None: the forward
    mode). gemm: the GPU tier of am16 / mbm14 ("fast" or "exact", which gives
    the CPU's bits). padding "same" / "valid" as F.conv2d takes them."""
    stride, dilation = _pair(stride), _pair(dilation)
    if isinstance(padding, str):
        padding = _same_padding(padding, weight, stride, dilation)
    modes = Modes.of(mode, backward_mode, gemm)
    return Conv2dFunction.apply(x, weight, bias, stride, _pair(padding), dilation, int(groups), modes)


def _same_padding(padding: str, weight: torch.Tensor, stride, dilation) -> tuple:
    if padding == "valid":
        return (0, 0)
    if padding != "same":
        raise errors.ArgumentError(f"padding '{padding}': 'same', 'valid' or numbers")
    if stride != (1, 1):
        raise errors.ArgumentError("padding 'same' needs unit strides (as in F.conv2d)")
    pads = []
    for k, d in zip(weight.shape[2:], dilation):
        total = d * (k - 1)
        if total % 2:
            raise errors.ArgumentError("padding 'same' with an even kernel extent pads unevenly: give the "
                                       "padding as numbers (or pad the input first)")
        pads.append(total // 2)
    return tuple(pads)


def conv1d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride: int = 1,
           padding: Union[int, str] = 0, dilation: int = 1, groups: int = 1, *, mode: str = "am16",
           backward_mode: Optional[str] = None, gemm: str = "fast") -> torch.Tensor:
    """F.conv1d through conv2d on [N, C, 1, L] with a 1 x k kernel (the same
    products and sums)."""
    s, d = _pair(stride)[0], _pair(dilation)[0]
    if isinstance(padding, str):
        p = _same_padding(padding, weight, (s,), (d,))[0] if padding != "valid" else 0
    else:
        p = _pair(padding)[0]
    y = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), (0, p), (1, d), groups, mode=mode,
               backward_mode=backward_mode, gemm=gemm)
    return y.squeeze(2)


# ------------------------------------------------------------------ linear

class LinearFunction(torch.autograd.Function):
    """y = x W^T + b, the ONNX Gemm (transB = 1) of PyTorch's Linear export."""

    @staticmethod
    def forward(ctx, x, w, b, modes: Modes):
        in_dtype = x.dtype
        x32, w32 = _f32(x, "linear input"), _f32(w, "linear weight")
        b32 = _f32(b, "linear bias") if b is not None else None
        _same_device("linear", x32, w32, b32)
        if w32.dim() != 2 or x32.dim() < 1 or x32.shape[-1] != w32.shape[1]:
            raise errors.ArgumentError(f"linear: input {tuple(x.shape)} and weight {tuple(w.shape)} do not agree")
        k, n = w32.shape[1], w32.shape[0]
        x2 = x32.reshape(-1, k)
        M = x2.shape[0]
        if b32 is not None:  # the bias in C, added by the GEMM (beta 1), as the library's Gemm
            y = b32.expand(M, n).contiguous()
        else:
            y = torch.empty((M, n), dtype=torch.float32, device=x32.device)
        gemm(modes.forward, modes.exact_tier, 0, 1, M, n, k, x2, 0, k, 0, w32, 0, k, 0, y, 0, n, 0,
             beta=1.0 if b32 is not None else 0.0)
        ctx.save_for_backward(x2, w32)
        ctx.modes, ctx.has_bias, ctx.in_dtype, ctx.w_dtype, ctx.shape = modes, b is not None, in_dtype, w.dtype, \
            x.shape
        y = y.reshape(*x.shape[:-1], n)
        return y if in_dtype == torch.float32 else y.to(in_dtype)

    @staticmethod
    def backward(ctx, dy):
        x2, w = ctx.saved_tensors
        n, k = w.shape
        M = x2.shape[0]
        dy2 = dy.reshape(-1, n).float().contiguous()
        m, ex = ctx.modes.backward, ctx.modes.exact_tier
        dx = dw = db = None
        if ctx.needs_input_grad[0]:  # dX [M, K] = dY [M, N] W [N, K]
            dx = torch.empty((M, k), dtype=torch.float32, device=dy2.device)
            gemm(m, ex, 0, 0, M, k, n, dy2, 0, n, 0, w, 0, k, 0, dx, 0, k, 0)
            dx = dx.reshape(ctx.shape)
            if ctx.in_dtype != torch.float32:
                dx = dx.to(ctx.in_dtype)
        if ctx.needs_input_grad[1]:  # dW [N, K] = dY^T [N, M] X [M, K]
            dw = torch.empty((n, k), dtype=torch.float32, device=dy2.device)
            gemm(m, ex, 1, 0, n, k, M, dy2, 0, n, 0, x2, 0, k, 0, dw, 0, k, 0)
            if ctx.w_dtype != torch.float32:
                dw = dw.to(ctx.w_dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy2.sum(0)
            if ctx.w_dtype != torch.float32:
                db = db.to(ctx.w_dtype)
        return dx, dw, db, None


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *, mode: str = "am16",
           backward_mode: Optional[str] = None, gemm: str = "fast") -> torch.Tensor:
    """F.linear (x W^T + b) with every product in the multiplier's mode
    (backward_mode for both backward GEMMs; "exact" is acc32)."""
    return LinearFunction.apply(x, weight, bias, Modes.of(mode, backward_mode, gemm))


# ------------------------------------------------------------------ matmul

def _mm_batched(modes_m, ex, a, b, M, K, N, ta=0, tb=0, out=None, beta=0.0):
    """out[..., M, N] = op(a) op(b) for contiguous [nb, *, *] a and b of one batch."""
    nb = a.shape[0]
    if out is None:
        out = torch.empty((nb, M, N), dtype=torch.float32, device=a.device)
    lda = M if ta else K
    ldb = K if tb else N
    gemm(modes_m, ex, ta, tb, M, N, K, a, 0, lda, a.shape[1] * a.shape[2], b, 0, ldb, b.shape[1] * b.shape[2], out,
         0, N, M * N, nb, beta=beta)
    return out


class MatMulFunction(torch.autograd.Function):
    """a @ b with numpy broadcasting (a and b at least 2-D), the ONNX MatMul."""

    @staticmethod
    def forward(ctx, a, b, modes: Modes):
        in_dtype = a.dtype
        a32, b32 = _f32(a, "matmul a"), _f32(b, "matmul b")
        _same_device("matmul", a32, b32)
        if a32.dim() < 2 or b32.dim() < 2:
            raise errors.ArgumentError(f"matmul: a {tuple(a.shape)} and b {tuple(b.shape)}: amdnn's matmul takes "
                                       "operands of at least 2 dimensions")
        M, K = a32.shape[-2:]
        K2, N = b32.shape[-2:]
        if K != K2:
            raise errors.ArgumentError(f"matmul: a {tuple(a.shape)} and b {tuple(b.shape)}: {K} against {K2}")
        try:
            batch = torch.broadcast_shapes(a32.shape[:-2], b32.shape[:-2])
        except RuntimeError:
            raise errors.ArgumentError(f"matmul: the batch dimensions of {tuple(a.shape)} and {tuple(b.shape)} "
                                       "do not broadcast") from None
        nb = math.prod(batch) if len(batch) else 1
        m, ex = modes.forward, modes.exact_tier
        ctx.two_d_b = b32.dim() == 2 or all(s == 1 for s in b32.shape[:-2])
        if ctx.two_d_b and tuple(a32.shape[:-2]) == tuple(batch):  # one GEMM of nb * M rows
            b2 = b32.reshape(K, N)
            y = torch.empty(tuple(batch) + (M, N), dtype=torch.float32, device=a32.device)
            gemm(m, ex, 0, 0, nb * M, N, K, a32, 0, K, 0, b2, 0, N, 0, y, 0, N, 0)
            ctx.save_for_backward(a32, b2)
            ctx.single = True
        else:
            ab = a32.expand(tuple(batch) + (M, K)).reshape(nb, M, K)
            bb = b32.expand(tuple(batch) + (K, N)).reshape(nb, K, N)
            y = _mm_batched(m, ex, ab, bb, M, K, N).reshape(tuple(batch) + (M, N))
            ctx.save_for_backward(ab, bb)
            ctx.single = False
        ctx.modes, ctx.batch, ctx.a_shape, ctx.b_shape = modes, tuple(batch), a.shape, b.shape
        ctx.dtypes = (a.dtype, b.dtype)
        ctx.mkn = (M, K, N, nb)
        return y if in_dtype == torch.float32 else y.to(in_dtype)

    @staticmethod
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        M, K, N, nb = ctx.mkn
        m, ex = ctx.modes.backward, ctx.modes.exact_tier
        dy32 = dy.float().contiguous()
        da = db = None
        if ctx.single:
            if ctx.needs_input_grad[0]:  # dA [nb M, K] = dY [nb M, N] B^T
                da = torch.empty_like(a)
                gemm(m, ex, 0, 1, nb * M, K, N, dy32, 0, N, 0, b, 0, N, 0, da, 0, K, 0)
            if ctx.needs_input_grad[1]:  # dB [K, N] = A^T [K, nb M] dY [nb M, N]
                db = torch.empty((K, N), dtype=torch.float32, device=dy32.device)
                gemm(m, ex, 1, 0, K, N, nb * M, a, 0, K, 0, dy32, 0, N, 0, db, 0, N, 0)
                db = db.reshape(ctx.b_shape)
        else:
            dyb = dy32.reshape(nb, M, N)
            if ctx.needs_input_grad[0]:  # dA_t = dY_t B_t^T, summed over what broadcast A
                da = _mm_batched(m, ex, dyb, b, M, N, K, tb=1)
                da = da.reshape(ctx.batch + (M, K)).sum_to_size(ctx.a_shape)
            if ctx.needs_input_grad[1]:  # dB_t = A_t^T dY_t
                db = _mm_batched(m, ex, a, dyb, K, M, N, ta=1)
                db = db.reshape(ctx.batch + (K, N)).sum_to_size(ctx.b_shape)
        if da is not None:
            da = da.reshape(ctx.a_shape).to(ctx.dtypes[0])
        if db is not None:
            db = db.reshape(ctx.b_shape).to(ctx.dtypes[1])
        return da, db, None


def matmul(a: torch.Tensor, b: torch.Tensor, *, mode: str = "am16", backward_mode: Optional[str] = None,
           gemm: str = "fast") -> torch.Tensor:
    """torch.matmul (operands of at least 2 dimensions; batch dimensions
    broadcast) with every product in the multiplier's mode."""
    return MatMulFunction.apply(a, b, Modes.of(mode, backward_mode, gemm))


# ------------------------------------------------------------------ attention

def _matmul_m(a, b, modes: Modes):
    return MatMulFunction.apply(a, b, modes)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 attn_mask: Optional[torch.Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None, *, mode: str = "am16",
                                 backward_mode: Optional[str] = None, gemm: str = "fast",
                                 enable_gqa: bool = False) -> torch.Tensor:
    """F.scaled_dot_product_attention with both batched matrix products
    (Q K^T and the weights times V) in the multiplier's mode; the scaling,
    mask, softmax and dropout are PyTorch's own fp32 operations."""
    return _sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, Modes.of(mode, backward_mode, gemm), enable_gqa)


def _sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, modes: Modes, enable_gqa=False):
    L, S = q.shape[-2], k.shape[-2]
    if enable_gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k = k.repeat_interleave(rep, dim=-3)
        v = v.repeat_interleave(rep, dim=-3)
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = _matmul_m(q, k.transpose(-2, -1), modes) * s
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    return _matmul_m(weights, v, modes)
