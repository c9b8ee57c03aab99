"""Multiplier tables: a mode's table, 8-bit tables from a Python function, an
array or a C file, 16-bit (section 5) tables from a Python function, reading
and describing a table file.

Formats (docs/multipliers.md, section 5, and docs/quantized.md):
  section 5 table   2^(2m) bytes, entry [i * 2^m + j] describing
                    (1 + i/2^m)(1 + j/2^m): bit 7 the carry (product >= 2), the
                    low m bits the product's top m fraction bits ("lut:FILE");
  AMDQ8TAB          a 16-byte header and 65536 little-endian int32 entries
                    [a * 256 + b], a the data code, b the weight code
                    ("q8u:FILE", "q8s:FILE");
  .bin              TFApprox's 65536 little-endian 16-bit entries.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

import numpy as np

from . import _lib, errors
from ._lib import lib

PathLike = Union[str, os.PathLike]


def _path(p: PathLike) -> bytes:
    return os.fsencode(os.fspath(p))


def write_table(mode: str, path: PathLike, format: str | None = None) -> None:
    """Writes the table of a mode to path, atomically (`amdnn-onnx lut`): the
    16384-byte section 5 table of a 7-bit design (acc16, am16, mit16), or an
    8-bit table (q8u:..., q8s:...) in format "amdq8" (default) or "bin"."""
    _lib.check(lib.amdnn_table_write(mode.encode(), _path(path), None if format is None else format.encode()))


def _codes(signed: bool) -> np.ndarray:
    c = np.arange(256, dtype=np.uint8)
    return c.view(np.int8) if signed else c


def q8_table_from_function(fn: Callable, signed: bool = False) -> np.ndarray:
    """The [256, 256] int32 table of fn: entry [a, b] = fn(a, b) for the code
    bytes a (the data) and b (the weight), given to fn as uint8 values 0..255,
    or int8 values -128..127 (signed; row r is the code whose byte is r).

    fn is first called once on two [256, 256] integer arrays (numpy
    broadcasting: most formulas work as they are); when that fails or gives
    another shape, it is called for each of the 65536 pairs with Python ints.
    """
    c = _codes(signed).astype(np.int64)
    a, b = np.meshgrid(c, c, indexing="ij")
    out = None
    try:
        with np.errstate(all="ignore"):
            r = fn(a, b)
        r = np.asarray(r)
        if r.shape == (256, 256) and r.dtype.kind in "iub":
            out = r.astype(np.int64)
    except Exception:
        out = None
    if out is None:
        codes = [int(v) for v in c]
        out = np.array([[int(fn(x, y)) for y in codes] for x in codes], dtype=np.int64)
    return out


def write_q8_table(path: PathLike, table, signed: bool = False, format: str | None = None) -> np.ndarray:
    """Writes an 8-bit multiplier table (for --mode q8u:PATH or q8s:PATH),
    atomically, and returns its [256, 256] int32 entries.

    table: a function fn(a, b) of two codes (see q8_table_from_function), or
    the entries as an array of 65536 integers ([256, 256], [a, b] with a the
    data code's byte and b the weight code's).
    signed: the codes are int8 (q8s) rather than uint8 (q8u).
    format: "amdq8" (default: AMDQ8TAB, 65536 int32) or "bin" (TFApprox's
    16-bit entries, which must fit uint16 / int16)."""
    if callable(table):
        t = q8_table_from_function(table, signed)
    else:
        t = np.asarray(table)
        if t.dtype.kind not in "iub":
            raise errors.ArgumentError(f"an 8-bit table holds integers, not {t.dtype}")
        if t.size != 65536:
            raise errors.ArgumentError(f"an 8-bit table has 65536 entries ([256, 256]), not {t.shape}")
    t64 = t.reshape(256, 256).astype(np.int64)
    if (np.abs(t64) > (1 << 31) - 1).any():
        raise errors.ArgumentError("an entry does not fit int32")
    t32 = np.ascontiguousarray(t64.astype(np.int32))
    _lib.check(lib.amdnn_q8_table_write(t32.ctypes.data, int(bool(signed)), _path(path),
                                        None if format is None else format.encode()))
    return t32


def lut_from_function(fn: Callable, bits: int = 7) -> bytes:
    """The section 5 table (4^bits bytes) of a (1, 8, bits) float multiplier
    given by its significand product: fn(x, y) for x = 1 + i/2^bits and
    y = 1 + j/2^bits (float64 arrays of shape [2^bits, 2^bits], or one pair of
    floats when the array call fails) returns the product in [1, 4). Entry
    [i * 2^bits + j] is carry << 7 | the product's top `bits` fraction bits
    after normalisation, truncated (carry: product >= 2)."""
    if not 1 <= bits <= 7:
        raise errors.ArgumentError(f"bits {bits}: a section 5 table keeps 1 to 7 fraction bits")
    k = 1 << bits
    s = 1.0 + np.arange(k, dtype=np.float64) / k
    x, y = np.meshgrid(s, s, indexing="ij")
    p = None
    try:
        r = np.asarray(fn(x, y), dtype=np.float64)
        if r.shape == (k, k):
            p = r
    except Exception:
        p = None
    if p is None:
        p = np.array([[float(fn(float(u), float(v))) for v in s] for u in s], dtype=np.float64)
    bad = ~np.isfinite(p) | (p < 1.0) | (p >= 4.0)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise errors.ArgumentError(f"fn({s[i]}, {s[j]}) = {p[i, j]}: a significand product is in [1, 4)")
    carry = (p >= 2.0).astype(np.int64)
    frac = np.floor((p / (1 << carry) - 1.0) * k).astype(np.int64)
    return ((carry << 7) | (frac & (k - 1))).astype(np.uint8).tobytes()


def write_lut(path: PathLike, fn: Callable, bits: int = 7) -> bytes:
    """Writes the section 5 table of fn (see lut_from_function) to path for
    --mode lut:PATH, and returns its bytes. The special cases (zero, Inf,
    NaN, subnormals) and the exponents are the library's (section 2)."""
    data = lut_from_function(fn, bits)
    p = os.fspath(path)
    tmp = f"{p}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, p)
    return data


def _tabulate_script() -> Path:
    here = Path(__file__).resolve().parent
    for p in (here / "tabulate_mul8.py", here.parent.parent / "tools" / "tabulate_mul8.py"):
        if p.exists():
            return p
    raise errors.FailedError("tabulate_mul8.py is neither in the package nor in the repository's tools/")


def tabulate_c(source: PathLike, function: str, path: PathLike, signed: bool | None = None,
               format: str | None = None, cc: str | None = None) -> np.ndarray:
    """Tabulates an 8-bit multiplier written in C (EvoApproxLib style:
    `uint16_t mul8u_X(uint8_t, uint8_t)` or `int16_t mul8s_X(int8_t,
    int8_t)`) into a table at path, with the project's own tools/
    tabulate_mul8.py (which compiles the file with the C compiler, cc or $CC,
    and runs it for the 65536 pairs); returns the [256, 256] int32 entries.
    signed: None takes it from the name (mul8s_ / mul8u_). Needs a C compiler."""
    cmd = [sys.executable, str(_tabulate_script()), os.fspath(source), function, "-o", os.fspath(path)]
    if signed is not None:
        cmd.append("--signed" if signed else "--unsigned")
    if format is not None:
        cmd += ["--format", format]
    if cc is not None:
        cmd += ["--cc", cc]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().replace("tabulate_mul8: ", "")
        cls = errors.ArgumentError if r.returncode == 2 else errors.FailedError
        raise cls(f"tabulating {function} of {os.fspath(source)}: {msg}")
    is_signed = signed if signed is not None else function.startswith("mul8s")
    return read_q8_table(path, bin_signed=is_signed).table


@dataclass(frozen=True)
class Q8Table:
    """An 8-bit table read from a file: table[a, b] (int32 [256, 256]) for the
    code bytes a (data) and b (weight); signed: its codes are int8 (q8s)."""

    table: np.ndarray
    signed: bool


def read_q8_table(path: PathLike, bin_signed: bool = False) -> Q8Table:
    """Reads an 8-bit table file (AMDQ8TAB, or a TFApprox .bin, read as int16
    when bin_signed)."""
    t = np.empty(65536, dtype=np.int32)
    sgn = ctypes.c_int()
    _lib.check(lib.amdnn_q8_table_read(_path(path), int(bool(bin_signed)), t.ctypes.data, ctypes.byref(sgn)))
    return Q8Table(table=t.reshape(256, 256), signed=bool(sgn.value))


@dataclass(frozen=True)
class TableInfo:
    """What `amdnn-onnx lut --describe` says of a table file."""

    format: str
    sha256: str
    bytes: int
    lut_bits: int  #: a section 5 table: its m (4^m entries); 0 for an 8-bit table
    signed: bool = False  #: 8-bit tables from here on
    lo: int = 0  #: the smallest entry
    hi: int = 0  #: the largest entry
    n_diff: int = 0  #: entries that differ from the exact products
    mean_abs_error: float = 0.0  #: over all 65536 pairs
    mean_rel_error: float = 0.0  #: mean |e| / |exact| over the pairs with a non-zero exact product
    max_abs_error: int = 0
    bilinear: bool = False  #: T[a][b] = sum over bits of C[i][j] a_i b_j (which partial products it keeps)
    bit_weights: np.ndarray | None = None  #: bilinear: [8, 8] C[i][j] / 2^(i+j)


def describe_table(path: PathLike, bin_signed: bool = False) -> TableInfo:
    """The format, SHA-256, size and (8-bit tables) errors and bit form of a
    table file; bin_signed reads a .bin as int16."""
    i = _lib.TableInfo()
    _lib.check(lib.amdnn_table_describe(_path(path), int(bool(bin_signed)), ctypes.byref(i)))
    w = np.array([[i.bit_weight[r][c] for c in range(8)] for r in range(8)]) if i.bilinear else None
    return TableInfo(format=i.format.decode(), sha256=i.sha256.decode(), bytes=i.bytes, lut_bits=i.lut_bits,
                     signed=bool(i.is_signed), lo=i.lo, hi=i.hi, n_diff=i.n_diff, mean_abs_error=i.mean_abs_error,
                     mean_rel_error=i.mean_rel_error, max_abs_error=i.max_abs_error, bilinear=bool(i.bilinear),
                     bit_weights=w)
