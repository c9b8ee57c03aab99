"""The C library (include/amdnn.h) through ctypes: finding and loading
libamdnn.so, the structs of the header, the prototypes of its functions and
statuses turned into exceptions.

ctypes releases the GIL around every foreign call, so long calls (train,
evaluate, a large GEMM) leave other Python threads running; the callbacks
that the library makes (CFUNCTYPE) take the GIL back while they run.

Where the library comes from, first found wins:
  1. $AMDNN_LIBRARY, a path to libamdnn.so (development, other builds);
  2. libamdnn.so.0 that `pip install .` installed with the package (in
     site-packages/.amdnn.mesonpy.libs, meson-python's folder for it);
  3. build/src/libamdnn.so of the repository around a source checkout
     (python/amdnn imported from the tree, as the tests can do).
"""
from __future__ import annotations

import ctypes
import os
import sys
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint, c_void_p)
from pathlib import Path

from . import errors

MAX_RANK = 8

# amdnn_dtype: ONNX's TensorProto.DataType numbers
FLOAT, UINT8, INT8, INT32, INT64, BOOL, FLOAT16, DOUBLE = 1, 2, 3, 6, 7, 9, 10, 11

# amdnn_option_kind
OPTION_FLAG, OPTION_INT, OPTION_FLOAT, OPTION_TEXT = 0, 1, 2, 3

# AMDNN_FOR_* bits
FOR_SESSION, FOR_INFO, FOR_RUN, FOR_GRAD, FOR_TRAIN, FOR_EVAL, FOR_BENCH, FOR_SWEEP, FOR_LUT = (
    1 << i for i in range(9))

# amdnn_message_kind
MSG_INFO, MSG_NOTE, MSG_WARNING, MSG_ERROR, MSG_DEBUG = range(5)

# amdnn_gemm_tier
GEMM_FAST, GEMM_EXACT = 0, 1


class Tensor(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK),
                ("data", c_void_p)]


class Conv2dShape(Structure):
    _fields_ = [("n", c_int64), ("c", c_int64), ("h", c_int64), ("w", c_int64), ("m", c_int64), ("kh", c_int64),
                ("kw", c_int64), ("groups", c_int64), ("stride", c_int64 * 2), ("dilation", c_int64 * 2),
                ("pads", c_int64 * 4)]


class OptionInfo(Structure):
    _fields_ = [("name", c_char_p), ("short_name", c_char), ("metavar", c_char_p), ("kind", c_int),
                ("min", c_double), ("max", c_double), ("default_value", c_char_p), ("group", c_char_p),
                ("help", c_char_p), ("used_by", c_uint)]


class TableInfo(Structure):
    _fields_ = [("format", c_char * 96), ("sha256", c_char * 65), ("bytes", c_int64), ("lut_bits", c_int),
                ("is_signed", c_int), ("lo", c_int32), ("hi", c_int32), ("n_diff", c_int64),
                ("mean_abs_error", c_double), ("mean_rel_error", c_double), ("max_abs_error", c_int64),
                ("bilinear", c_int), ("bit_weight", (c_double * 8) * 8)]


class Progress(Structure):
    _fields_ = [("stage", c_char_p), ("epoch", c_int64), ("done", c_int64), ("total", c_int64),
                ("samples", c_int64), ("loss", c_double), ("accuracy", c_double), ("elapsed_s", c_double),
                ("images_per_s", c_double), ("eta_s", c_double)]


class Epoch(Structure):
    _fields_ = [("epoch", c_int64), ("epochs", c_int64), ("train_loss", c_double), ("train_acc", c_double),
                ("test_loss", c_double), ("test_acc", c_double), ("has_val", c_int), ("val_loss", c_double),
                ("val_acc", c_double), ("lr", c_double), ("images_per_s", c_double), ("train_s", c_double),
                ("loss_scale", c_double), ("skipped", c_int64)]


class SweepRow(Structure):
    _fields_ = [("node", c_char_p), ("op_type", c_char_p), ("index", c_int), ("count", c_int), ("macs", c_int64),
                ("top1", c_double), ("top5", c_double), ("loss", c_double), ("top1_drop", c_double),
                ("loss_rise", c_double), ("n", c_int64), ("resumed", c_int)]


MESSAGE_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
PROGRESS_FN = CFUNCTYPE(c_int, c_void_p, POINTER(Progress))
EPOCH_FN = CFUNCTYPE(c_int, c_void_p, POINTER(Epoch))
SWEEP_ROW_FN = CFUNCTYPE(c_int, c_void_p, POINTER(SweepRow))


class Callbacks(Structure):
    _fields_ = [("user", c_void_p), ("message", MESSAGE_FN), ("progress", PROGRESS_FN), ("epoch", EPOCH_FN),
                ("sweep_row", SWEEP_ROW_FN), ("progress_every_step", c_int), ("catch_signals", c_int)]


class ValueInfo(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK),
                ("dim_names", c_char_p * MAX_RANK)]


class ModelInfo(Structure):
    _fields_ = [("path", c_char_p), ("producer", c_char_p), ("ir_version", c_int64), ("opset", c_int),
                ("n_inputs", c_int), ("n_outputs", c_int), ("n_nodes", c_int), ("n_gemm_nodes", c_int),
                ("parameters", c_int64), ("n_float_initializers", c_int), ("macs", c_int64),
                ("shapes_known", c_int), ("shape_note", c_char_p), ("device_summary", c_char_p)]


class NodeInfo(Structure):
    _fields_ = [("name", c_char_p), ("op_type", c_char_p), ("shape", c_char * 160), ("macs", c_int64),
                ("on_multiplier", c_int), ("forward_mode", c_char_p), ("backward_mode", c_char_p)]


class EvalResult(Structure):
    _fields_ = [("n", c_int64), ("top1", c_int64), ("top5", c_int64), ("loss", c_double), ("seconds", c_double),
                ("images_per_s", c_double), ("n_classes", c_int64), ("confusion", POINTER(c_int64)),
                ("class_names", POINTER(c_char_p)), ("data_note", c_char * 1024)]


class BenchResult(Structure):
    _fields_ = [("batch", c_int64), ("steps", c_int64), ("seconds", c_double), ("images_per_s", c_double),
                ("ms_per_step", c_double), ("inference", c_int)]


_status = c_void_p  # amdnn_status *: NULL on success
_p = c_void_p

# name: (restype, argtypes)
_PROTOTYPES = {
    "amdnn_version": (c_char_p, []),
    "amdnn_status_code": (c_int, [_status]),
    "amdnn_status_message": (c_char_p, [_status]),
    "amdnn_status_free": (None, [_status]),
    "amdnn_tensor_numel": (c_int64, [POINTER(Tensor)]),
    "amdnn_dtype_size": (c_size_t, [c_int]),
    "amdnn_dtype_name": (c_char_p, [c_int]),
    "amdnn_tensors_free": (None, [POINTER(Tensor), c_int]),
    "amdnn_tensor_read": (_status, [c_char_p, POINTER(POINTER(Tensor))]),
    "amdnn_tensor_write": (_status, [c_char_p, POINTER(Tensor)]),
    "amdnn_option_count": (c_int, []),
    "amdnn_option_at": (POINTER(OptionInfo), [c_int]),
    "amdnn_option_find": (POINTER(OptionInfo), [c_char_p]),
    "amdnn_options_create": (_status, [POINTER(_p)]),
    "amdnn_options_free": (None, [_p]),
    "amdnn_options_set": (_status, [_p, c_char_p, c_char_p]),
    "amdnn_options_get": (c_char_p, [_p, c_char_p]),
    "amdnn_mode_count": (c_int, []),
    "amdnn_mode_name": (c_char_p, [c_int]),
    "amdnn_mode_summary": (c_char_p, [c_int]),
    "amdnn_mode_choices": (c_char_p, []),
    "amdnn_multiplier_open": (_status, [c_char_p, POINTER(_p)]),
    "amdnn_multiplier_close": (None, [_p]),
    "amdnn_multiplier_name": (c_char_p, [_p]),
    "amdnn_multiplier_codes": (c_int, [_p]),
    "amdnn_multiply": (_status, [_p, _p, _p, _p, c_size_t]),
    "amdnn_multiply_codes": (_status, [_p, _p, _p, _p, c_size_t]),
    "amdnn_gemm": (_status, [_p, c_int, c_int, c_int64, c_int64, c_int64, c_float, _p, c_int64, _p, c_int64,
                             c_float, _p, c_int64]),
    "amdnn_gemm_batched": (_status, [_p, c_int, c_int, c_int64, c_int64, c_int64, c_float, _p, c_int64, c_int64,
                                     _p, c_int64, c_int64, c_float, _p, c_int64, c_int64, c_int64]),
    "amdnn_gemm_cuda": (_status, [_p, c_int, c_int, c_int, c_int64, c_int64, c_int64, c_float, _p, c_int64,
                                  c_int64, _p, c_int64, c_int64, c_float, _p, c_int64, c_int64, c_int64, _p]),
    "amdnn_cuda_device_count": (c_int, []),
    "amdnn_conv2d_plan": (_status, [POINTER(Conv2dShape), POINTER(c_int64), POINTER(c_int64), POINTER(c_size_t),
                                    POINTER(c_size_t)]),
    "amdnn_conv2d_cuda": (_status, [_p, c_int, POINTER(Conv2dShape), _p, _p, _p, _p, _p, c_size_t, _p]),
    "amdnn_conv2d_backward_cuda": (_status, [_p, c_int, POINTER(Conv2dShape), _p, _p, _p, _p, _p, _p, c_size_t,
                                             _p]),
    "amdnn_table_write": (_status, [c_char_p, c_char_p, c_char_p]),
    "amdnn_q8_table_write": (_status, [_p, c_int, c_char_p, c_char_p]),
    "amdnn_q8_table_read": (_status, [c_char_p, c_int, _p, POINTER(c_int)]),
    "amdnn_table_describe": (_status, [c_char_p, c_int, POINTER(TableInfo)]),
    "amdnn_session_open": (_status, [c_char_p, _p, POINTER(_p)]),
    "amdnn_session_close": (None, [_p]),
    "amdnn_session_info": (_status, [_p, POINTER(POINTER(ModelInfo))]),
    "amdnn_session_input": (_status, [_p, c_int, POINTER(ValueInfo)]),
    "amdnn_session_output": (_status, [_p, c_int, POINTER(ValueInfo)]),
    "amdnn_session_node": (_status, [_p, c_int, POINTER(NodeInfo)]),
    "amdnn_session_device": (_status, [_p, POINTER(c_char_p)]),
    "amdnn_session_run": (_status, [_p, POINTER(Tensor), c_int, POINTER(POINTER(Tensor)), POINTER(c_int)]),
    "amdnn_session_grad": (_status, [_p, POINTER(Tensor), POINTER(Tensor), _p, POINTER(Callbacks),
                                     POINTER(c_double), POINTER(POINTER(Tensor)), POINTER(c_int)]),
    "amdnn_session_evaluate": (_status, [_p, _p, POINTER(Callbacks), POINTER(POINTER(EvalResult))]),
    "amdnn_eval_result_free": (None, [POINTER(EvalResult)]),
    "amdnn_session_sweep": (_status, [_p, _p, POINTER(Callbacks)]),
    "amdnn_session_train": (_status, [_p, _p, POINTER(Callbacks)]),
    "amdnn_session_bench": (_status, [_p, _p, POINTER(Callbacks), POINTER(BenchResult)]),
    "amdnn_session_save": (_status, [_p, c_char_p]),
}


def _candidates() -> list[Path]:
    env = os.environ.get("AMDNN_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    # an installed wheel: meson-python's folder of the package's libraries beside the package
    roots = [here.parent] + [Path(p) for p in sys.path if p and Path(p) != here.parent]
    found = []
    for root in roots:  # (purelib and platlib may be two folders)
        found += sorted((root / ".amdnn.mesonpy.libs").glob("libamdnn.so*"))
        if found:
            break
    found += sorted(here.glob("libamdnn.so*"))
    repo = here.parent.parent  # python/amdnn -> the repository
    for build in ("build", "build-cpu"):
        found += sorted((repo / build / "src").glob("libamdnn.so.*[0-9]"))
    return found


def _preload_cuda_wheels() -> None:
    """Loads the CUDA runtime and cuBLAS from NVIDIA's pip wheels (the
    nvidia/*/lib folders that PyTorch's wheels install) when the system's
    loader finds none: libcudart first, then libcublasLt, then libcublas."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    for stem in ("libcudart.so.*", "libcublasLt.so.*", "libcublas.so.*"):
        for root in roots:
            for path in sorted(Path(root).glob("**/lib/" + stem)):
                try:
                    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    continue
                break


# The libraries that the wheel carries beside libamdnn (src/meson.build): the
# system's copy is used where the loader finds one, these where it does not.
_BUNDLED = ("libz.so.1", "libpng16.so.16", "libturbojpeg.so.0", "libgomp.so.1")


def _preload_bundled(folder: Path) -> None:
    for name in _BUNDLED:
        p = folder / name
        if p.exists():
            try:
                ctypes.CDLL(name)  # the system's, where there is one
            except OSError:
                ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)


def _open(path: Path) -> ctypes.CDLL:
    """ctypes.CDLL of path; on a missing library, the bundled ones, then
    NVIDIA's pip wheels of the CUDA libraries, are loaded first."""
    try:
        return ctypes.CDLL(str(path))
    except OSError as e:
        msg = str(e)
    if any(name in msg for name in _BUNDLED):
        _preload_bundled(path.parent)
        try:
            return ctypes.CDLL(str(path))
        except OSError as e:
            msg = str(e)
    if "libcublas" in msg or "libcudart" in msg:
        _preload_cuda_wheels()
    return ctypes.CDLL(str(path))


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if not path.exists():
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = _open(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (res, args) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        lib.path = str(path)  # type: ignore[attr-defined]
        return lib
    raise ImportError("amdnn: cannot load libamdnn.so; tried " + ("; ".join(tried) or "nothing") +
                      ". Install the package with `pip install .` from the repository, or point "
                      "AMDNN_LIBRARY at a built libamdnn.so")


lib = _load()


def text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


def check(st: int | None) -> None:
    """Raises the error of a status (and frees it); nothing for NULL (success)."""
    if not st:
        return
    code = lib.amdnn_status_code(st)
    msg = text(lib.amdnn_status_message(st)) or ""
    lib.amdnn_status_free(st)
    raise errors.from_code(code, msg)
