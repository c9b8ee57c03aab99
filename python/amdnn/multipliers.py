"""Multipliers from numpy: the modes, element-wise products, the mode GEMM on
host arrays and error statistics of a mode.

The products are the library's (amdnn_multiply, amdnn_multiply_codes): bit
for bit the products of docs/multipliers.md, the same functions that the
GEMMs of Conv, Gemm and MatMul use.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Union

import numpy as np

from . import _lib, errors
from ._lib import lib


def modes() -> list[str]:
    """The built-in modes in the library's order (acc32 first); "lut" stands
    for the 16-bit table mode, given as "lut:FILE". The 8-bit table modes are
    "q8u:FILE" and "q8s:FILE" (or "q8u:exact", "q8s:exact")."""
    return [_lib.text(lib.amdnn_mode_name(i)) for i in range(lib.amdnn_mode_count())]


def mode_summaries() -> dict[str, str]:
    """Each built-in mode with its one-line summary (`amdnn-onnx modes`)."""
    return {_lib.text(lib.amdnn_mode_name(i)): _lib.text(lib.amdnn_mode_summary(i))
            for i in range(lib.amdnn_mode_count())}


def mode_choices() -> str:
    """Every mode the library accepts, as its help text writes them."""
    return _lib.text(lib.amdnn_mode_choices())


class Multiplier:
    """An opened multiplier: a mode name ("am16"), a 16-bit table ("lut:FILE")
    or an 8-bit table ("q8u:FILE", "q8s:FILE", "q8u:exact", "q8s:exact").
    A table file is read once, when the multiplier opens.

    >>> m = Multiplier("am16")
    >>> float(m(1.5, 1.5))
    2.109375
    """

    def __init__(self, mode: str):
        if not isinstance(mode, str):
            raise TypeError(f"a mode is a str such as 'am16', not {type(mode).__name__}")
        h = ctypes.c_void_p()
        _lib.check(lib.amdnn_multiplier_open(mode.encode(), ctypes.byref(h)))
        self._h = h
        self.name = mode
        c = lib.amdnn_multiplier_codes(h)
        #: 'u' or 's' for an 8-bit table (its operands are uint8 / int8 codes), None for a float mode
        self.codes = chr(c) if c else None

    @property
    def handle(self) -> ctypes.c_void_p:
        return self._h

    def close(self) -> None:
        if getattr(self, "_h", None):
            lib.amdnn_multiplier_close(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __repr__(self) -> str:
        return f"Multiplier({self.name!r})"

    def __call__(self, a, b) -> np.ndarray:
        """The element-wise products of a and b (broadcast): multiply(a, b, self)."""
        return multiply(a, b, self)


MultiplierLike = Union[str, Multiplier]

_cache: dict[str, Multiplier] = {}
_cache_lock = threading.Lock()


def multiplier(mode: MultiplierLike) -> Multiplier:
    """The Multiplier of a mode name, opened once per name and kept (a
    Multiplier given is returned as it is). A table file changed on disk is
    not read again: open a new Multiplier(mode) for that."""
    if isinstance(mode, Multiplier):
        return mode
    with _cache_lock:
        m = _cache.get(mode)
        if m is None:
            m = _cache[mode] = Multiplier(mode)
        return m


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _float_operand(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == np.float32:
        return a
    if a.dtype.kind not in "fiub":
        raise errors.ArgumentError(f"{name}: a float mode multiplies real numbers, not {a.dtype}")
    return a.astype(np.float32)  # rounded to fp32, the operands of every mode


def _code_operand(x, name: str, kind: str) -> np.ndarray:
    want = np.uint8 if kind == "u" else np.int8
    a = np.asarray(x)
    if a.dtype == want:
        return a
    if a.dtype.kind not in "iub":
        raise errors.ArgumentError(f"{name}: an 8-bit table multiplies {np.dtype(want).name} codes, not {a.dtype}")
    lo, hi = (0, 255) if kind == "u" else (-128, 127)
    if a.size and (a.min() < lo or a.max() > hi):
        raise errors.ArgumentError(f"{name}: codes of a q8{kind} table are in [{lo}, {hi}]; "
                                   f"got [{a.min()}, {a.max()}]")
    return a.astype(want)


def multiply(a, b, mode: MultiplierLike = "am16") -> np.ndarray:
    """Element-wise products a * b in a mode, bit for bit docs/multipliers.md.

    a, b: arrays (or numbers) that broadcast together.
    mode: a mode name ("am16", "lut:FILE", "q8u:FILE", ...) or a Multiplier.

    Float modes: the operands are fp32 (other real dtypes are rounded to fp32
    first); the result is float32. 8-bit tables: the operands are the table's
    codes, uint8 for q8u and int8 for q8s (integers of another dtype are
    accepted when they fit); the result is the table's int32 entries,
    T[a][b] with a the data code and b the weight code.
    """
    m = multiplier(mode)
    if m.codes:
        x, y = _code_operand(a, "a", m.codes), _code_operand(b, "b", m.codes)
    else:
        x, y = _float_operand(a, "a"), _float_operand(b, "b")
    try:
        x, y = np.broadcast_arrays(x, y)
    except ValueError as e:
        raise errors.ArgumentError(f"a {np.shape(x)} and b {np.shape(y)} do not broadcast: {e}") from None
    x = np.asarray(x, order="C")  # (a copy only for a broadcast or strided operand)
    y = np.asarray(y, order="C")
    out = np.empty(x.shape, dtype=np.int32 if m.codes else np.float32)
    fn = lib.amdnn_multiply_codes if m.codes else lib.amdnn_multiply
    _lib.check(fn(m.handle, _ptr(x), _ptr(y), _ptr(out), out.size))
    return out


def matmul(a, b, mode: MultiplierLike = "acc32") -> np.ndarray:
    """a @ b with every product in mode and fp32 sums: the library's host mode
    GEMM (amdnn_gemm_batched), which the CPU's Conv, Gemm and MatMul run.

    a: [..., M, K], b: [K, N] or [..., K, N] (float32; leading dimensions
    broadcast); the result is float32 [..., M, N].
    """
    m = multiplier(mode) if mode is not None else None
    if m is not None and m.codes:
        raise errors.ArgumentError(f"{m.name} is an 8-bit table: its GEMM is on integer codes, "
                                   "which matmul does not take")
    x, y = _float_operand(a, "a"), _float_operand(b, "b")
    if x.ndim < 2 or y.ndim < 2:
        raise errors.ArgumentError(f"matmul needs matrices: a is {x.shape}, b is {y.shape}")
    M, K = x.shape[-2:]
    K2, N = y.shape[-2:]
    if K != K2:
        raise errors.ArgumentError(f"matmul: a is {x.shape} and b is {y.shape}: {K} columns against {K2} rows")
    try:
        batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        raise errors.ArgumentError(f"matmul: the batch dimensions of {x.shape} and {y.shape} do not broadcast") \
            from None
    nb = int(np.prod(batch)) if batch else 1
    out = np.empty(batch + (M, N), dtype=np.float32)
    if y.ndim == 2 and x.flags.c_contiguous:  # one GEMM of nb * M rows
        _lib.check(lib.amdnn_gemm_batched(m.handle if m else None, 0, 0, nb * M, N, K, 1.0, _ptr(x), K, 0,
                                          _ptr(np.ascontiguousarray(y)), N, 0, 0.0, _ptr(out), N, 0, 1))
        return out
    xb = np.ascontiguousarray(np.broadcast_to(x, batch + (M, K)))
    yb = np.ascontiguousarray(np.broadcast_to(y, batch + (K, N)))
    _lib.check(lib.amdnn_gemm_batched(m.handle if m else None, 0, 0, M, N, K, 1.0, _ptr(xb), K, M * K, _ptr(yb),
                                      N, K * N, 0.0, _ptr(out), N, M * N, nb))
    return out


@dataclass(frozen=True)
class ErrorStats:
    """Error statistics of a multiplier against the exact products.

    With e_i = approx_i - exact_i over the n operand pairs (exact_i the exact
    product: a_i * b_i in float64, exact for fp32 operands; the integer
    product of the two codes for an 8-bit table):

    - bias = mean(e_i), in the units of the products (for an 8-bit table the
      mean error that EvoApproxLib lists as ME);
    - mean_abs_error = mean(|e_i|) (MAE), max_abs_error = max(|e_i|) (the
      worst-case error, WCE), mse = mean(e_i^2) (MSE);
    - error_rate = the fraction of pairs with approx_i != exact_i (EP);
    - relative errors r_i = e_i / |exact_i| over the n_rel pairs with a
      non-zero, finite exact product (and, for float modes, a finite approx):
      mean_rel_error = mean(r_i) (signed: < 0 when the products are too small
      in magnitude on average; the "mean" of docs/multipliers.md, section 6),
      mean_abs_rel_error = mean(|r_i|) (the mean relative error distance,
      MRED, which EvoApproxLib lists as MRE), max_abs_rel_error = max(|r_i|)
      (WCRE).
    Relative values are fractions (0.026 is 2.6%).
    """

    mode: str
    n: int
    bias: float
    mean_abs_error: float
    max_abs_error: float
    mse: float
    error_rate: float
    n_rel: int
    mean_rel_error: float
    mean_abs_rel_error: float
    max_abs_rel_error: float

    def __str__(self) -> str:
        return (f"{self.mode}: mean relative error {100 * self.mean_rel_error:+.3f}%, mean |relative error| "
                f"{100 * self.mean_abs_rel_error:.3f}%, largest {100 * self.max_abs_rel_error:.3f}%, bias "
                f"{self.bias:.6g}, MAE {self.mean_abs_error:.6g}, WCE {self.max_abs_error:.6g}, "
                f"error rate {100 * self.error_rate:.2f}% over {self.n} pairs")


def error_stats(mode: MultiplierLike, a=None, b=None, *, n: int = 1_000_000, seed: int = 0) -> ErrorStats:
    """Error statistics of a mode (see ErrorStats for each definition).

    a, b: the operand pairs (arrays that broadcast together), or None for the
    standard distribution:
      float modes: n pairs of operands with uniformly random fraction bits and
        exponent 0, i.e. uniform over the 2^23 fp32 values in [1, 2) (the
        "random mantissas" of docs/multipliers.md, section 6), drawn with
        numpy's default_rng(seed);
      8-bit tables: every one of the 65536 code pairs once (exhaustive, as
        EvoApproxLib characterises its multipliers).
    """
    m = multiplier(mode)
    if a is None and b is None:
        if m.codes:
            codes = np.arange(256, dtype=np.uint8)
            if m.codes == "s":
                codes = codes.view(np.int8)
            a, b = np.meshgrid(codes, codes, indexing="ij")
        else:
            rng = np.random.default_rng(seed)
            ones = np.uint32(127 << 23)
            a = (rng.integers(0, 1 << 23, n, dtype=np.uint32) | ones).view(np.float32)
            b = (rng.integers(0, 1 << 23, n, dtype=np.uint32) | ones).view(np.float32)
    elif a is None or b is None:
        raise errors.ArgumentError("error_stats: give both a and b, or neither (the standard distribution)")
    approx = multiply(a, b, m)
    if m.codes:
        x, y = np.broadcast_arrays(_code_operand(a, "a", m.codes), _code_operand(b, "b", m.codes))
        exact = (x.astype(np.int64) * y.astype(np.int64)).astype(np.float64)
        diff = approx.astype(np.float64) - exact
        valid = np.ones(diff.shape, dtype=bool)
    else:
        x, y = np.broadcast_arrays(_float_operand(a, "a"), _float_operand(b, "b"))
        exact = x.astype(np.float64) * y.astype(np.float64)
        approx64 = approx.astype(np.float64)
        valid = np.isfinite(exact) & np.isfinite(approx64)
        with np.errstate(invalid="ignore"):
            diff = np.where(valid, approx64 - exact, 0.0)
    e = diff[valid]
    ok_rel = valid & (exact != 0)
    rel = diff[ok_rel] / np.abs(exact[ok_rel])
    count = int(e.size)
    abs_e = np.abs(e)
    return ErrorStats(
        mode=m.name, n=count,
        bias=float(e.mean()) if count else 0.0,
        mean_abs_error=float(abs_e.mean()) if count else 0.0,
        max_abs_error=float(abs_e.max()) if count else 0.0,
        mse=float((e * e).mean()) if count else 0.0,
        error_rate=float((e != 0).mean()) if count else 0.0,
        n_rel=int(rel.size),
        mean_rel_error=float(rel.mean()) if rel.size else 0.0,
        mean_abs_rel_error=float(np.abs(rel).mean()) if rel.size else 0.0,
        max_abs_rel_error=float(np.abs(rel).max()) if rel.size else 0.0,
    )
