#!/usr/bin/env python3
"""What PyTorch keeps for the backward of one training step of a CIFAR model
of tools/export_models.py: the tensors autograd saves in the forward pass
(torch.autograd.graph.saved_tensors_hooks), counted once per storage, the
parameters left out; the total and the count of each size. On the CPU; the
figure to hold against the live peak of an amdnn-onnx allocation trace
(docs/gpu.md, "Where the memory goes").

    $(tools/torch_python.sh torch) tools/torch_saved_bytes.py [--model resnet50] [--batch 128]
"""
import argparse
import collections
import importlib.util
import os
import sys

try:
    import torch
except ImportError as e:
    sys.exit(f"torch_saved_bytes.py: {e}: run it with a Python that has torch, e.g. "
             "$(tools/torch_python.sh torch) tools/torch_saved_bytes.py")

MIB = 1 << 20


def load_models():
    """tools/export_models.py as a module (its models table)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_models.py")
    spec = importlib.util.spec_from_file_location("export_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    models = load_models().MODELS
    if a.model not in models:
        sys.exit(f"torch_saved_bytes.py: no model '{a.model}' (one of {', '.join(sorted(models))})")
    make, shape = models[a.model]
    torch.manual_seed(0)
    model = make()
    params = {p.data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr() not in params:
            saved[s.data_ptr()] = s.nbytes()
        return t

    x = torch.randn(a.batch, *shape)
    y = torch.randint(0, 10, (a.batch,))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    del loss
    print(f"{a.model}, batch {a.batch}, torch {torch.__version__}: saved for backward {sum(saved.values()) / MIB:.1f} MiB "
          f"in {len(saved)} tensors (parameters not counted)")
    for size, n in sorted(collections.Counter(saved.values()).items(), key=lambda kv: -kv[0] * kv[1]):
        print(f"  {size / MIB:9.2f} MiB x {n}")


if __name__ == "__main__":
    main()
