"""What the package's tests share: the repository, the command-line tool they
compare against, the spec's vectors, Fashion-MNIST, and the markers.

Environment:
  AMDNN_ONNX        the amdnn-onnx binary to compare with (default: build/src/
                    amdnn-onnx of the repository, else build-cpu/src/...);
                    the tests that need it skip when there is none
  AMDNN_IDX_DATA    an IDX data set (default /usr/share/datasets/fashion-mnist)

Markers: torch (needs PyTorch), cuda (needs a GPU and a CUDA build: skipped
otherwise, with the reason), cli (needs the command-line tool).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import amdnn

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "tests" / "mult" / "am_vectors.tsv"
MODELS = REPO / "models"
IDX = Path(os.environ.get("AMDNN_IDX_DATA", "/usr/share/datasets/fashion-mnist"))


def _find_cli() -> str | None:
    env = os.environ.get("AMDNN_ONNX")
    if env:
        return env
    for b in ("build", "build-cpu"):
        p = REPO / b / "src" / "amdnn-onnx"
        if p.exists():
            return str(p)
    return shutil.which("amdnn-onnx")


CLI = _find_cli()


def have_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def cuda_reason() -> str | None:
    """Why the CUDA tests cannot run here (None: they can)."""
    if not have_torch():
        return "no PyTorch"
    import torch
    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch"
    if amdnn.cuda_device_count() == 0:
        return "this build of libamdnn has no CUDA backend (or sees no GPU)"
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs PyTorch")
    config.addinivalue_line("markers", "cuda: needs a GPU and libamdnn built with CUDA")
    config.addinivalue_line("markers", "cli: needs the amdnn-onnx command-line tool")


def pytest_collection_modifyitems(config, items):
    no_torch = pytest.mark.skip(reason="needs PyTorch (Debian: python3-torch)")
    reason = cuda_reason()
    no_cuda = pytest.mark.skip(reason=f"CUDA test: {reason}") if reason else None
    no_cli = pytest.mark.skip(reason="no amdnn-onnx binary (build it, or set AMDNN_ONNX)")
    for item in items:
        if "torch" in item.keywords and not have_torch():
            item.add_marker(no_torch)
        if "cuda" in item.keywords and no_cuda is not None:
            item.add_marker(no_cuda)
        if "cli" in item.keywords and not CLI:
            item.add_marker(no_cli)


def run_cli(*args, check: bool = True, cwd=None) -> subprocess.CompletedProcess:
    """Runs amdnn-onnx with args (str() of each); its output as text."""
    r = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True, cwd=cwd)
    if check and r.returncode != 0:
        raise AssertionError(f"amdnn-onnx {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


def read_vectors():
    """(names of the mode columns, uint32 array [rows, 2 + modes]) of am_vectors.tsv."""
    with open(VECTORS) as f:
        header = f.readline().lstrip("#").split()
        rows = [[int(v, 16) for v in line.split()] for line in f if line.strip() and not line.startswith("#")]
    return header[2:], np.array(rows, dtype=np.uint32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-equal float32 arrays, any NaN equal to any NaN."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        return False
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(nan | (a.view(np.uint32) == b.view(np.uint32))))


def load_export_models():
    """tools/export_models.py as a module (its model definitions and export helpers)."""
    spec = importlib.util.spec_from_file_location("export_models", REPO / "tools" / "export_models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def idx_data() -> str:
    if not (IDX / "train-images-idx3-ubyte.gz").exists() and not (IDX / "train-images-idx3-ubyte").exists():
        pytest.skip(f"no IDX data set in {IDX} (Debian: dataset-fashion-mnist)")
    return f"mnist:{IDX}"


def export_layer(module, x, path) -> None:
    """A module of one input ("input") and one output ("y") as ONNX (opset
    13, no constant folding), by PyTorch's TorchScript exporter (PyTorch 2.9
    on would take the dynamo one, which needs onnxscript); skips without onnx."""
    import inspect
    import pytest
    import torch
    pytest.importorskip("onnx")
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(module, (x,), str(path), input_names=["input"], output_names=["y"], opset_version=13,
                      do_constant_folding=False, **kw)


def warmed_model_and_batch(arch: str, batch: int, seed: int = 0):
    """(export_models module, model, x, y): a tools/export_models.py model
    (seeded) with warmed-up BatchNormalization (export_models.warm_up_bn), a
    batch of inputs in [-0.5, 1.5) and its labels, all from one generator."""
    import torch
    em = load_export_models()
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    ctor, shape = em.MODELS[arch]
    model = ctor()
    em.warm_up_bn(model, shape, gen)
    x = torch.rand((batch,) + shape, generator=gen) * 2 - 0.5
    y = torch.randint(0, 10, (batch,), generator=gen)
    return em, model, x, y


def fold_bn(model):
    """A copy of a tools/export_models.py ResNet with every BatchNormalization
    (its running statistics) folded into the Conv before it: a network of
    Conv with bias, Relu, Add, GlobalAveragePool and Gemm."""
    import copy
    import torch
    import torch.nn as nn
    m = copy.deepcopy(model).eval()
    for parent in list(m.modules()):
        ch = parent._modules
        for cname, bname in (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3"), ("0", "1")):
            c, b = ch.get(cname), ch.get(bname)
            if isinstance(c, nn.Conv2d) and isinstance(b, nn.BatchNorm2d):
                s = b.weight / torch.sqrt(b.running_var + b.eps)
                fused = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding, bias=True)
                with torch.no_grad():
                    fused.weight.copy_(c.weight * s.view(-1, 1, 1, 1))
                    fused.bias.copy_(b.bias - b.running_mean * s)
                ch[cname], ch[bname] = fused, nn.Identity()
    return m
