"""The library's mode GEMM and GPU convolution on PyTorch tensors, on their
own device.

CPU tensors: amdnn_gemm_batched (the CPU GEMM of the library's Conv, Gemm and
MatMul, bit for bit). CUDA tensors: amdnn_gemm_cuda, amdnn_conv2d_cuda and
amdnn_conv2d_backward_cuda on the tensors' device, queued on PyTorch's
current stream of that device (torch.cuda.current_stream().cuda_stream):
nothing waits for the GPU, so a call costs no host synchronisation, and the
work is ordered with PyTorch's own kernels on that stream; a convolution's
workspace comes from PyTorch's caching allocator on that stream. Strides and
offsets are in floats; the tensors must be float32 and hold every element
the strides reach (the callers pass contiguous tensors).
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

import torch

from .. import _lib
from .._lib import lib
from ..multipliers import Multiplier, multiplier


@dataclass(frozen=True)
class Modes:
    """The multipliers of a layer: forward (None: acc32), backward (both
    backward GEMMs; None: acc32) and the GPU's GEMM tier of am16 / mbm14
    (exact: the CPU's products summed in k order; fast: the same products
    summed in another order, on tensor cores)."""

    forward: Multiplier | None
    backward: Multiplier | None
    exact_tier: bool = False

    @staticmethod
    def of(mode: str = "acc32", backward_mode: str | None = None, gemm: str = "fast") -> "Modes":
        if gemm not in ("fast", "exact"):
            from ..errors import ArgumentError
            raise ArgumentError(f"gemm '{gemm}' is not one of fast, exact")
        fwd = multiplier(mode)
        if fwd.codes:
            from ..errors import ArgumentError
            raise ArgumentError(f"{mode} is an 8-bit table: the PyTorch layers take the float modes "
                                "(8-bit tables run on quantized ONNX models: amdnn.Model)")
        if backward_mode is None:
            bwd = fwd
        elif backward_mode == "exact":
            bwd = multiplier("acc32")
        else:
            bwd = multiplier(backward_mode)
            if bwd.codes:
                from ..errors import ArgumentError
                raise ArgumentError(f"backward mode {backward_mode} is an 8-bit table")
        return Modes(fwd, bwd, gemm == "exact")

    @property
    def name(self) -> str:
        f = self.forward.name if self.forward else "acc32"
        b = self.backward.name if self.backward else "acc32"
        return f if f == b else f"{f} (backward {b})"


def _h(m: Multiplier | None):
    return m.handle if m is not None else None


@contextmanager
def _on_device_of(t: torch.Tensor) -> Iterator[int]:
    """t's device made current; yields PyTorch's current stream there (a cudaStream_t)."""
    dev = t.device.index if t.device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(dev):  # (a no-op where dev is already current)
        yield torch.cuda.current_stream(dev).cuda_stream


def gemm(m: Multiplier | None, exact_tier: bool, trans_a: int, trans_b: int, M: int, N: int, K: int,
         A: torch.Tensor, a_off: int, lda: int, stride_a: int, B: torch.Tensor, b_off: int, ldb: int, stride_b: int,
         C: torch.Tensor, c_off: int, ldc: int, stride_c: int, batch: int = 1, alpha: float = 1.0,
         beta: float = 0.0) -> None:
    """C_b = alpha op(A_b) op(B_b) + beta C_b for b < batch, X_b at offset
    x_off + b * stride_x floats into X (a stride of 0 repeats one matrix; on
    the CPU a C stride of 0 sums the batch into one C in order)."""
    if M == 0 or N == 0 or batch == 0:
        return
    a = A.data_ptr() + 4 * a_off
    b = B.data_ptr() + 4 * b_off
    c = C.data_ptr() + 4 * c_off
    if C.is_cuda:
        with _on_device_of(C) as stream:
            st = lib.amdnn_gemm_cuda(_h(m), _lib.GEMM_EXACT if exact_tier else _lib.GEMM_FAST, trans_a, trans_b, M,
                                     N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch,
                                     stream)
    else:
        st = lib.amdnn_gemm_batched(_h(m), trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b,
                                    beta, c, ldc, stride_c, batch)
    _lib.check(st)


@dataclass(frozen=True)
class ConvPlan:
    """A convolution's shape as amdnn_conv2d_shape, its output size and the
    workspace bytes of its forward and backward pass (amdnn_conv2d_plan)."""

    shape: _lib.Conv2dShape
    oh: int
    ow: int
    forward_bytes: int
    backward_bytes: int


_plans: dict = {}


def conv_plan(n: int, c: int, h: int, w: int, m: int, kh: int, kw: int, groups: int, stride, dilation,
              padding) -> ConvPlan:
    """The plan of a convolution (padding (top, left), the same at the
    bottom and right), made once per shape and kept."""
    key = (n, c, h, w, m, kh, kw, groups, tuple(stride), tuple(dilation), tuple(padding))
    plan = _plans.get(key)
    if plan is None:
        s = _lib.Conv2dShape(n, c, h, w, m, kh, kw, groups)
        s.stride[:], s.dilation[:] = list(stride), list(dilation)
        s.pads[:] = [padding[0], padding[1], padding[0], padding[1]]
        oh, ow = ctypes.c_int64(), ctypes.c_int64()
        fb, bb = ctypes.c_size_t(), ctypes.c_size_t()
        _lib.check(lib.amdnn_conv2d_plan(ctypes.byref(s), ctypes.byref(oh), ctypes.byref(ow), ctypes.byref(fb),
                                         ctypes.byref(bb)))
        if len(_plans) > 4096:  # a process that sees endless shapes does not keep them all
            _plans.clear()
        plan = _plans[key] = ConvPlan(s, oh.value, ow.value, fb.value, bb.value)
    return plan


def _workspace(nbytes: int, like: torch.Tensor) -> Optional[torch.Tensor]:
    return torch.empty(nbytes, dtype=torch.uint8, device=like.device) if nbytes else None


def _ptr(t: Optional[torch.Tensor]) -> Optional[int]:
    return t.data_ptr() if t is not None else None


def conv2d_cuda(modes: Modes, plan: ConvPlan, x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor],
                y: torch.Tensor) -> None:
    """y = conv(x, w) + bias on CUDA tensors with the forward mode: the
    library's Conv node's kernels (amdnn_conv2d_cuda)."""
    ws = _workspace(plan.forward_bytes, x)
    with _on_device_of(x) as stream:
        st = lib.amdnn_conv2d_cuda(_h(modes.forward), _lib.GEMM_EXACT if modes.exact_tier else _lib.GEMM_FAST,
                                   ctypes.byref(plan.shape), x.data_ptr(), w.data_ptr(), _ptr(bias), y.data_ptr(),
                                   _ptr(ws), plan.forward_bytes, stream)
    _lib.check(st)


def conv2d_backward_cuda(modes: Modes, plan: ConvPlan, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor,
                         dx: Optional[torch.Tensor], dw: Optional[torch.Tensor]) -> None:
    """dx and dw (either None: not wanted) written from dy with the backward
    mode (amdnn_conv2d_backward_cuda)."""
    ws = _workspace(plan.backward_bytes, x)
    with _on_device_of(x) as stream:
        st = lib.amdnn_conv2d_backward_cuda(_h(modes.backward),
                                            _lib.GEMM_EXACT if modes.exact_tier else _lib.GEMM_FAST,
                                            ctypes.byref(plan.shape), x.data_ptr(), w.data_ptr(), dy.data_ptr(),
                                            _ptr(dx), _ptr(dw), _ptr(ws), plan.backward_bytes, stream)
    _lib.check(st)
