"""numpy arrays as the library's tensors (amdnn_tensor) and TensorProto files."""
from __future__ import annotations

import ctypes
import os
from typing import Union

import numpy as np

from . import _lib, errors
from ._lib import lib

# numpy dtype <-> ONNX TensorProto.DataType (the dtypes the library computes with)
_TO_ONNX = {np.dtype(np.float32): _lib.FLOAT, np.dtype(np.uint8): _lib.UINT8, np.dtype(np.int8): _lib.INT8,
            np.dtype(np.int32): _lib.INT32, np.dtype(np.int64): _lib.INT64, np.dtype(np.bool_): _lib.BOOL,
            np.dtype(np.float16): _lib.FLOAT16, np.dtype(np.float64): _lib.DOUBLE}
_FROM_ONNX = {v: k for k, v in _TO_ONNX.items()}
# other ONNX types a result may have
_FROM_ONNX.update({4: np.dtype(np.uint16), 5: np.dtype(np.int16), 12: np.dtype(np.uint32),
                   13: np.dtype(np.uint64)})

PathLike = Union[str, os.PathLike]


def as_tensor(a, name: str | None = None, what: str = "input") -> tuple[_lib.Tensor, np.ndarray]:
    """A view of array a as an amdnn_tensor (and the contiguous array it
    points into, which must outlive it); a copy only when a is not already
    C-contiguous and of a dtype the library takes."""
    arr = np.asarray(a)
    if arr.dtype not in _TO_ONNX:
        raise errors.ArgumentError(f"{what}: dtype {arr.dtype} is not one the library takes "
                                   f"({', '.join(str(d) for d in _TO_ONNX)})")
    if arr.ndim > _lib.MAX_RANK:
        raise errors.ArgumentError(f"{what}: rank {arr.ndim} (at most {_lib.MAX_RANK})")
    arr = np.ascontiguousarray(arr)
    t = _lib.Tensor()
    t.name = name.encode() if name is not None else None
    t.dtype = _TO_ONNX[arr.dtype]
    t.rank = arr.ndim
    for d, n in enumerate(arr.shape):
        t.dims[d] = n
    t.data = arr.ctypes.data if arr.size else None
    return t, arr


def to_array(t: _lib.Tensor) -> np.ndarray:
    """A numpy copy of a tensor the library returned."""
    shape = tuple(t.dims[d] for d in range(t.rank))
    dt = _FROM_ONNX.get(t.dtype)
    if dt is None:
        raise errors.FailedError(f"a result of dtype {_lib.text(lib.amdnn_dtype_name(t.dtype))}, which numpy "
                                 "cannot hold here")
    n = int(np.prod(shape)) if shape else 1
    if n == 0 or not t.data:
        return np.zeros(shape, dtype=dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(t.data)
    return np.frombuffer(buf, dtype=dt).reshape(shape).copy()


def read_tensor(path: PathLike) -> np.ndarray:
    """A TensorProto file (.pb, as `amdnn-onnx run` writes them and the ONNX
    test suite holds them) as a numpy array."""
    out = ctypes.POINTER(_lib.Tensor)()
    _lib.check(lib.amdnn_tensor_read(os.fsencode(os.fspath(path)), ctypes.byref(out)))
    try:
        return to_array(out[0])
    finally:
        lib.amdnn_tensors_free(out, 1)


def read_tensor_name(path: PathLike) -> str:
    """The name stored in a TensorProto file."""
    out = ctypes.POINTER(_lib.Tensor)()
    _lib.check(lib.amdnn_tensor_read(os.fsencode(os.fspath(path)), ctypes.byref(out)))
    try:
        return _lib.text(out[0].name) or ""
    finally:
        lib.amdnn_tensors_free(out, 1)


def write_tensor(path: PathLike, a, name: str = "") -> None:
    """Writes array a as a TensorProto file (for --input, tensors:X.pb,Y.pb)."""
    t, keep = as_tensor(a, name, "tensor")
    _lib.check(lib.amdnn_tensor_write(os.fsencode(os.fspath(path)), ctypes.byref(t)))
    del keep
