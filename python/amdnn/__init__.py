"""amdnn: ONNX models and PyTorch layers with every product of their
convolutions and matrix products computed by an emulated hardware multiplier
(acc32, acc16, am16, am32, fp16, mit16, ..., lut:FILE 16-bit tables, q8u:/q8s:
8-bit tables), on the CPU and on NVIDIA GPUs. docs/multipliers.md is the
bit-level contract of every mode; docs/python.md the guide to this package.

    amdnn.modes(), amdnn.multiply(a, b, "am16"), amdnn.error_stats("am16")
    amdnn.write_q8_table(path, fn), amdnn.tabulate_c(src, fn_name, path),
    amdnn.write_lut(path, fn), amdnn.describe_table(path)
    amdnn.Model(path, mode="am16").run / grad / evaluate / sweep / train / save
    amdnn.torch.approximate(module, mode="am16")   (import amdnn.torch: PyTorch)

The package binds the C library libamdnn (include/amdnn.h) with ctypes;
everything but amdnn.torch needs only numpy.
"""
from ._lib import lib as _libhandle
from .errors import (ArgumentError, DivergedError, Error, FailedError, NoMemoryError, OptionError,
                     StoppedError)
from .model import (BenchResult, Epoch, EvalResult, Model, ModelInfo, NodeInfo, Progress, SweepRow, TrainResult,
                    ValueInfo, print_message)
from .multipliers import (ErrorStats, Multiplier, error_stats, matmul, mode_choices, mode_summaries, modes,
                          multiplier, multiply)
from .options import Option, option_table
from .tables import (Q8Table, TableInfo, describe_table, lut_from_function, q8_table_from_function,
                     read_q8_table, tabulate_c, write_lut, write_q8_table, write_table)
from .tensors import read_tensor, write_tensor

#: the version of the library that was loaded (the package's own version)
__version__: str = _libhandle.amdnn_version().decode()
#: the path of the loaded libamdnn.so
library_path: str = _libhandle.path


def cuda_device_count() -> int:
    """CUDA devices usable by this build of the library (0 without CUDA, a
    driver or a GPU)."""
    return int(_libhandle.amdnn_cuda_device_count())


__all__ = [
    "ArgumentError", "BenchResult", "DivergedError", "Epoch", "Error", "ErrorStats", "EvalResult", "FailedError",
    "Model", "ModelInfo", "Multiplier", "NoMemoryError", "NodeInfo", "Option", "OptionError", "Progress",
    "Q8Table", "StoppedError", "SweepRow", "TableInfo", "TrainResult", "ValueInfo", "__version__",
    "cuda_device_count", "describe_table", "error_stats", "library_path", "lut_from_function", "matmul",
    "mode_choices", "mode_summaries", "modes", "multiplier", "multiply", "option_table", "print_message",
    "q8_table_from_function", "read_q8_table", "read_tensor", "tabulate_c", "write_lut", "write_q8_table",
    "write_table", "write_tensor",
]
