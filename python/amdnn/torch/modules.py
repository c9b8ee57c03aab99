"""approximate(module): every Conv1d / Conv2d, Linear and the batched matrix
products of attention of a PyTorch module through the library's mode GEMM.

The layers keep their class's parameters, buffers, state_dict keys and
isinstance (each becomes an instance of a subclass: ApproxConv2d is an
nn.Conv2d), so optimizers, checkpoints, DistributedDataParallel and the rest
of a training script work unchanged. restore(module) gives the classes back.
F.scaled_dot_product_attention (PyTorch 2) and, on request, torch.matmul /
torch.bmm / the @ operator called inside the module's forward are caught by a
TorchFunctionMode that is active while the module runs.
"""
from __future__ import annotations

import fnmatch
import functools
import types
from typing import Iterable, Optional, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ._gemm import Modes
from .functional import Conv2dFunction, LinearFunction, MatMulFunction, _pair, _same_padding, _sdpa

_ATTR = "_amdnn_modes"


def _modes_of(mod: nn.Module) -> Modes:
    return getattr(mod, _ATTR)


class ApproxConv2d(nn.Conv2d):
    """An nn.Conv2d whose products go through the multiplier (amdnn.torch.approximate)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            x = F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = (0, 0)
        elif isinstance(self.padding, str):
            padding = _same_padding(self.padding, self.weight, _pair(self.stride), _pair(self.dilation))
        else:
            padding = _pair(self.padding)
        return Conv2dFunction.apply(x, self.weight, self.bias, _pair(self.stride), padding, _pair(self.dilation),
                                    self.groups, _modes_of(self))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", amdnn={_modes_of(self).name}"


class ApproxConv1d(nn.Conv1d):
    """An nn.Conv1d whose products go through the multiplier (as a 1 x k Conv2d)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            x = F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            p = 0
        elif isinstance(self.padding, str):
            p = _same_padding(self.padding, self.weight, (self.stride[0],), (self.dilation[0],))[0] \
                if self.padding != "valid" else 0
        else:
            p = self.padding[0]
        y = Conv2dFunction.apply(x.unsqueeze(2), self.weight.unsqueeze(2), self.bias, (1, self.stride[0]), (0, p),
                                 (1, self.dilation[0]), self.groups, _modes_of(self))
        return y.squeeze(2)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", amdnn={_modes_of(self).name}"


class ApproxLinear(nn.Linear):
    """An nn.Linear whose products go through the multiplier."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LinearFunction.apply(x, self.weight, self.bias, _modes_of(self))

    def extra_repr(self) -> str:
        return super().extra_repr() + f", amdnn={_modes_of(self).name}"


class ApproxMultiheadAttention(nn.MultiheadAttention):
    """An nn.MultiheadAttention whose input and output projections and both
    batched matrix products (Q K^T, weights x V) go through the multiplier;
    masks, softmax and dropout are PyTorch's (fp32)."""

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        modes = _modes_of(self)
        if self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        tgt, bsz, embed = query.shape
        h, hd = self.num_heads, self.head_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        else:
            b_q = b_k = b_v = None
        q = LinearFunction.apply(query, w_q, b_q, modes)
        k = LinearFunction.apply(key, w_k, b_k, modes)
        v = LinearFunction.apply(value, w_v, b_v, modes)
        if self.bias_k is not None:
            k = torch.cat([k, self.bias_k.repeat(1, bsz, 1)])
            v = torch.cat([v, self.bias_v.repeat(1, bsz, 1)])
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        # [L, N, E] -> [N, h, L, hd]
        q = q.reshape(tgt, bsz, h, hd).permute(1, 2, 0, 3)
        k = k.reshape(k.shape[0], bsz, h, hd).permute(1, 2, 0, 3)
        v = v.reshape(v.shape[0], bsz, h, hd).permute(1, 2, 0, 3)
        if self.add_zero_attn:
            k = torch.cat([k, k.new_zeros(bsz, h, 1, hd)], dim=2)
            v = torch.cat([v, v.new_zeros(bsz, h, 1, hd)], dim=2)
            if attn_mask is not None:
                attn_mask = F.pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = F.pad(key_padding_mask, (0, 1))
        S = k.shape[2]
        scores = MatMulFunction.apply(q, k.transpose(-2, -1), modes) * (1.0 / float(hd) ** 0.5)
        if is_causal and attn_mask is None:
            attn_mask = torch.ones(tgt, S, dtype=torch.bool, device=q.device).triu(1)
        if attn_mask is not None:
            if attn_mask.dim() == 3:  # [N * h, L, S]
                attn_mask = attn_mask.reshape(bsz, h, tgt, S)
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
        if key_padding_mask is not None:
            kpm = key_padding_mask.reshape(bsz, 1, 1, S)
            if kpm.dtype == torch.bool:
                scores = scores.masked_fill(kpm, float("-inf"))
            else:
                scores = scores + kpm
        weights = torch.softmax(scores, dim=-1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, p=self.dropout)
        out = MatMulFunction.apply(weights, v, modes)  # [N, h, L, hd]
        out = out.permute(2, 0, 1, 3).reshape(tgt, bsz, embed)
        out = LinearFunction.apply(out, self.out_proj.weight, self.out_proj.bias, modes)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, (weights.mean(dim=1) if average_attn_weights else weights)

    def extra_repr(self) -> str:
        return f"amdnn={_modes_of(self).name}"


_SWAP = [(nn.Conv2d, ApproxConv2d), (nn.Conv1d, ApproxConv1d), (nn.MultiheadAttention, ApproxMultiheadAttention),
         (nn.Linear, ApproxLinear)]
_APPROX = tuple(a for _, a in _SWAP)
_ORIGINAL = "_amdnn_original_class"
_FAST_FLAG = "_amdnn_activation_relu_or_gelu"


class _FunctionalMode(TorchFunctionMode):
    """While the approximated module runs: F.scaled_dot_product_attention
    (and with matmuls, torch.matmul / bmm / @) through the multiplier."""

    def __init__(self, modes: Modes, matmuls: bool):
        super().__init__()
        self.modes = modes
        self.matmuls = matmuls
        self._sdpa = getattr(F, "scaled_dot_product_attention", None)
        self._mm = {torch.matmul, torch.bmm, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.bmm} \
            if matmuls else set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._sdpa is not None and func is self._sdpa:
            return _sdpa_call(self.modes, *args, **kwargs)
        if func in self._mm and len(args) == 2 and not kwargs and all(
                isinstance(a, torch.Tensor) and a.dim() >= 2 and a.is_floating_point() for a in args):
            return MatMulFunction.apply(args[0], args[1], self.modes)
        return func(*args, **kwargs)


def _sdpa_call(modes: Modes, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
    return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, modes, enable_gqa)


def _forward_in_mode(self, *args, **kwargs):
    """The root module's forward with the functional interception on: with
    matmuls, a TorchFunctionMode (every torch function called passes through
    it, SDPA and the matrix products are replaced); else only
    F.scaled_dot_product_attention, swapped for the call (the mode would cost
    a Python call per operation of the forward)."""
    modes, matmuls = getattr(self, "_amdnn_functional")
    if matmuls:
        with _FunctionalMode(modes, matmuls):
            return type(self).forward(self, *args, **kwargs)
    original = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = functools.partial(_sdpa_call, modes)
    try:
        return type(self).forward(self, *args, **kwargs)
    finally:
        F.scaled_dot_product_attention = original


SkipSpec = Union[str, type]


def _skipped(name: str, mod: nn.Module, skip: Iterable[SkipSpec]) -> bool:
    for s in skip:
        if isinstance(s, type):
            if isinstance(mod, s):
                return True
        elif name == s or name.startswith(s + ".") or fnmatch.fnmatchcase(name, s):
            return True
    return False


def approximate(module: nn.Module, mode: str = "am16", backward_mode: Optional[str] = None,
                skip: Iterable[SkipSpec] = (), *, gemm: str = "fast", attention: bool = True,
                matmuls: bool = False) -> nn.Module:
    """Runs every Conv1d, Conv2d, Linear and nn.MultiheadAttention of module
    (itself included) with all products, forward and both backward GEMMs,
    computed by the multiplier `mode` (docs/multipliers.md), on the tensors'
    own device (CPU or CUDA, on PyTorch's current stream); changes module in
    place and returns it.

    mode: a float mode ("am16", "acc16", "mit16", "lut:FILE", ...).
    backward_mode: the mode of both backward GEMMs; "exact" is acc32; None:
        the forward mode.
    skip: submodules left as they are (PyTorch's own exact ops): qualified
        names as named_modules() gives them ("conv1", "layer4.1"; a name
        covers its children; * and ? patterns), or classes (nn.Linear).
    gemm: the GPU's GEMM tier of am16 and mbm14: "fast" (the default, as on
        the command line) or "exact" (the CPU's bits).
    attention: also catch F.scaled_dot_product_attention (PyTorch 2) called
        inside module's forward as torch.nn.functional's attribute (the name
        is swapped for the call: code that bound the function at import, or a
        forward running in another thread at the same time, is not caught;
        matmuls=True catches every call).
    matmuls: also catch torch.matmul, torch.bmm and @ on float tensors of 2
        or more dimensions, and every F.scaled_dot_product_attention, inside
        module's forward (hand-written attention), through a TorchFunctionMode
        (a Python call per operation of the forward).

    Only the products change: activations, normalisation, softmax, the loss
    and the optimizer stay PyTorch's fp32 operations. Autograd, optimizers,
    DistributedDataParallel (wrap after approximate) and checkpoints work as
    before; run without torch.compile.
    """
    modes = Modes.of(mode, backward_mode, gemm)
    skip = list(skip)
    for name, mod in module.named_modules():
        if _skipped(name, mod, skip):
            continue
        t = type(mod)
        if not issubclass(t, _APPROX):
            for base, approx in _SWAP:
                # the class itself, or a subclass of torch.nn's own (MultiheadAttention's out_proj); a user's
                # subclass has its own forward and stays as it is
                if t is base or (issubclass(t, base) and t.__module__.startswith("torch.nn.")):
                    setattr(mod, _ORIGINAL, t)
                    mod.__class__ = approx
                    break
        if isinstance(mod, _APPROX):
            setattr(mod, _ATTR, modes)
    for mod in module.modules():  # (after the layers: a parent is visited before its children)
        if (isinstance(mod, nn.TransformerEncoderLayer) and any(isinstance(c, _APPROX) for c in mod.modules()) and
                getattr(mod, "activation_relu_or_gelu", 0) and _FAST_FLAG not in mod.__dict__):
            # nn.TransformerEncoderLayer's inference fast path (and nn.TransformerEncoder's nested tensors)
            # computes the layer in one fused kernel on its weights; it is taken only where this flag, which
            # nothing else reads, is set (the activation stays self.activation)
            setattr(mod, _FAST_FLAG, mod.activation_relu_or_gelu)
            mod.activation_relu_or_gelu = 0
    if (attention and hasattr(F, "scaled_dot_product_attention")) or matmuls:
        if not _skipped("", module, skip):
            module._amdnn_functional = (modes, matmuls)
            module.forward = types.MethodType(_forward_in_mode, module)
    return module


def restore(module: nn.Module) -> nn.Module:
    """Undoes approximate: every layer back to its PyTorch class and op."""
    for _, mod in module.named_modules():
        if _FAST_FLAG in mod.__dict__:
            mod.activation_relu_or_gelu = mod.__dict__.pop(_FAST_FLAG)
        orig = mod.__dict__.pop(_ORIGINAL, None)
        if orig is not None:
            mod.__class__ = orig
        mod.__dict__.pop(_ATTR, None)
    if "_amdnn_functional" in module.__dict__:
        del module.__dict__["_amdnn_functional"]
        module.__dict__.pop("forward", None)
    return module


def modes_of(module: nn.Module) -> dict:
    """{qualified name: mode description} of the approximated layers."""
    return {name: _modes_of(m).name for name, m in module.named_modules() if hasattr(m, _ATTR)}
