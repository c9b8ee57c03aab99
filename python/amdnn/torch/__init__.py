"""amdnn.torch: PyTorch layers whose products go through the library's
multiplier emulation, forward and both backward GEMMs, on the CPU
(amdnn_gemm_batched) and on CUDA tensors (the library's GPU convolution,
amdnn_conv2d_cuda, and amdnn_gemm_cuda, on the tensor's device and PyTorch's
current stream, with no host synchronisation).

    model = amdnn.torch.approximate(model, mode="am16")   # then train as usual

or the functions conv2d, conv1d, linear, matmul and
scaled_dot_product_attention (torch.autograd.Functions underneath).
"""
try:
    import torch as _torch  # noqa: F401
except ImportError as e:  # pragma: no cover - said to the user
    raise ImportError("amdnn.torch needs PyTorch (pip install torch, or Debian's python3-torch); the rest of "
                      "amdnn needs only numpy") from e

from ._gemm import Modes
from .functional import (Conv2dFunction, LinearFunction, MatMulFunction, conv1d, conv2d, linear, matmul,
                         scaled_dot_product_attention)
from .modules import (ApproxConv1d, ApproxConv2d, ApproxLinear, ApproxMultiheadAttention, approximate, modes_of,
                      restore)

__all__ = ["ApproxConv1d", "ApproxConv2d", "ApproxLinear", "ApproxMultiheadAttention", "Conv2dFunction",
           "LinearFunction", "MatMulFunction", "Modes", "approximate", "conv1d", "conv2d", "linear", "matmul",
           "modes_of", "restore", "scaled_dot_product_attention"]
