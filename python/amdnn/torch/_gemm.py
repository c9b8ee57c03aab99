"""The library's mode GEMM on PyTorch tensors, on their own device.

CPU tensors: amdnn_gemm_batched (the CPU GEMM of the library's Conv, Gemm and
MatMul, bit for bit). CUDA tensors: amdnn_gemm_cuda on the tensors' device,
queued on PyTorch's current stream of that device
(torch.cuda.current_stream().cuda_stream): nothing waits for the GPU, so a
call costs no host synchronisation, and the work is ordered with PyTorch's
own kernels on that stream. Strides and offsets are in floats; the tensors
must be float32 and hold every element the strides reach (the callers pass
contiguous tensors).
"""
from __future__ import annotations

from dataclasses import dataclass

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
        dev = C.device.index if C.device.index is not None else torch.cuda.current_device()
        with torch.cuda.device(dev):  # (a no-op where dev is already current)
            stream = torch.cuda.current_stream(dev).cuda_stream
            st = lib.amdnn_gemm_cuda(_h(m), _lib.GEMM_EXACT if exact_tier else _lib.GEMM_FAST, trans_a, trans_b, M,
                                     N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch,
                                     stream)
    else:
        st = lib.amdnn_gemm_batched(_h(m), trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b,
                                    beta, c, ldc, stride_c, batch)
    _lib.check(st)
