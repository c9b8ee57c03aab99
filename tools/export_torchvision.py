#!/usr/bin/env python3
"""Exports a torchvision classification model (or one of this project's
transformer and CIFAR-sized models) to ONNX in the two forms amdnn-onnx uses,
with a dynamic batch:

    $(tools/torch_python.sh) tools/export_torchvision.py resnet50 -o models/            # random weights
    $(tools/torch_python.sh) tools/export_torchvision.py resnet50 -o models/ --weights DEFAULT
    $(tools/torch_python.sh) tools/export_torchvision.py vit_cifar -o models/ --image-size 32

writes into the folder given with -o:
  MODEL.onnx        eval mode (BatchNormalization with running statistics,
                    no dropout): for `amdnn-onnx eval`, `run`, `bench --infer`
  MODEL_train.onnx  training mode, no constant folding (BatchNormalization
                    keeps its running statistics as initializers; dropout
                    kept): for `amdnn-onnx train`

Both have one input "input" [batch, 3, H, W] and one output "logits"
[batch, classes]; the batch is a named dynamic dimension, so the files work
at any batch size. Model names are torchvision's (`--list` prints them) and:
  transformer_encoder  nn.TransformerEncoder (4 layers, width 128, 4 heads)
                       over 8x8 patches, mean-pooled, a linear head
  vit_cifar            torchvision's VisionTransformer for 32x32 images:
                       patch 4, width 192, depth 6, 3 heads, MLP 768
  mobilenet_v3_cifar   mobilenet_v3_small with its first stride set to 1
                       (32x32 inputs keep enough resolution)

--exporter picks PyTorch's exporter: `dynamo` (torch.onnx.export(...,
dynamo=True), the default of PyTorch 2.9 and later) or `torchscript` (the
older one, the only one before PyTorch 2.5); `auto` (the default) takes
dynamo for the eval form where it exists and TorchScript for the training
form (dynamo's training-mode export folds BatchNormalization into the
convolutions). --opset sets the opset (default: the exporter's own: 17 for
TorchScript, 20 for dynamo).

--census MODEL ... (or `all`) exports each model in both modes with the
chosen exporter(s) and prints the ONNX op types each uses and how often
(`--tsv FILE` writes them as a table): the list of ops amdnn-onnx must
implement. Use --jobs to export in parallel.
"""
import argparse
import collections
import os
import sys
import tempfile
import traceback
import warnings

try:  # say which interpreter to use, instead of a bare ImportError
    import torch, torchvision  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"export_torchvision.py: {e}: run it with a Python that has torch and torchvision, e.g. "
             "$(tools/torch_python.sh torch torchvision) tools/export_torchvision.py ...")
import torch
import torch.nn as nn
import torchvision

EXTRA_MODELS = ("transformer_encoder", "vit_cifar", "mobilenet_v3_cifar")


class PatchTransformer(nn.Module):
    """8x8 patches -> linear embedding + learned positions -> nn.TransformerEncoder -> mean -> linear."""

    def __init__(self, image_size=32, patch=8, width=128, depth=4, heads=4, num_classes=10, dropout=0.1):
        super().__init__()
        self.patch = patch
        n = (image_size // patch) ** 2
        self.embed = nn.Linear(3 * patch * patch, width)
        self.pos = nn.Parameter(torch.zeros(1, n, width).normal_(std=0.02))
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=4 * width, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False) \
            if "enable_nested_tensor" in nn.TransformerEncoder.__init__.__code__.co_varnames \
            else nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        b, c, h, w = x.shape
        p = self.patch
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // p) * (w // p), c * p * p)
        x = self.embed(x) + self.pos
        x = self.encoder(x)
        return self.head(self.norm(x).mean(dim=1))


def build(name, num_classes, image_size, weights):
    """The model, the input size and the class count it was built with."""
    if name == "transformer_encoder":
        return PatchTransformer(image_size=image_size, num_classes=num_classes)
    if name == "vit_cifar":
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=image_size, patch_size=4, num_layers=6, num_heads=3,
                                 hidden_dim=192, mlp_dim=768, num_classes=num_classes)
    if name == "mobilenet_v3_cifar":
        m = torchvision.models.mobilenet_v3_small(num_classes=num_classes)
        m.features[0][0].stride = (1, 1)
        return m
    kwargs = {}
    if weights:
        kwargs["weights"] = weights
    else:
        kwargs["num_classes"] = num_classes
    if name.startswith(("vit_", "swin", "maxvit")) and not weights:
        if name.startswith("vit_"):
            kwargs["image_size"] = image_size
    if name in ("googlenet", "inception_v3") and not weights:
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = True
    return torchvision.models.get_model(name, **kwargs)


def default_size(name):
    if name in ("transformer_encoder", "vit_cifar", "mobilenet_v3_cifar"):
        return 32
    if name == "inception_v3":
        return 299
    return 224


def has_dynamo():
    return hasattr(torch.onnx, "export") and "dynamo" in torch.onnx.export.__code__.co_varnames


def export(model, path, exporter, opset, image_size, train):
    if exporter == "auto":
        # dynamo's training-mode export folds BatchNormalization into the
        # convolutions (PyTorch 2.11): training forms come from TorchScript
        exporter = "dynamo" if has_dynamo() and not train else "torchscript"
    model.train(train)
    x = torch.randn(2, 3, image_size, image_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            batch = torch.export.Dim("batch", min=1, max=65536)
            kw = dict(dynamo=True, input_names=["input"], output_names=["logits"],
                      dynamic_shapes=({0: batch},), external_data=False)
            if opset:
                kw["opset_version"] = opset
            if train:
                kw["training"] = torch.onnx.TrainingMode.TRAINING
                kw["do_constant_folding"] = False
            prog = torch.onnx.export(model, (x,), None, **kw)
            prog.save(path)
        else:
            kw = dict(input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=opset or 17)
            if train:
                kw["training"] = torch.onnx.TrainingMode.TRAINING
                kw["do_constant_folding"] = False
            if "dynamo" in torch.onnx.export.__code__.co_varnames:
                kw["dynamo"] = False
            torch.onnx.export(model, (x,), path, **kw)


def export_both(name, out_dir, exporter, opset, image_size, num_classes, weights):
    torch.manual_seed(0)
    model = build(name, num_classes, image_size, weights)
    paths = []
    for train in (False, True):
        path = os.path.join(out_dir, name + ("_train" if train else "") + ".onnx")
        export(model, path, exporter, opset, image_size, train)
        paths.append(path)
    return paths


def op_counts(path):
    import onnx
    m = onnx.load(path)
    counts = collections.Counter()
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), -1)

    def walk(g):
        for n in g.node:
            counts[(n.domain or "") + ("::" if n.domain else "") + n.op_type] += 1
            for a in n.attribute:
                if a.g is not None and a.g.node:
                    walk(a.g)
    walk(m.graph)
    return opset, counts


def census_one(args):
    name, exporter, opset = args
    with tempfile.TemporaryDirectory() as d:
        try:
            paths = export_both(name, d, exporter, opset, default_size(name), 10 if name in EXTRA_MODELS else 1000,
                                None)
            return name, exporter, [op_counts(p) for p in paths], None
        except Exception as e:  # one model's failure is reported, not fatal
            return name, exporter, None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])


def all_models():
    names = torchvision.models.list_models(module=torchvision.models)
    return sorted(names) + list(EXTRA_MODELS)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="*", help="model name (see --list)")
    ap.add_argument("-o", "--out", help="output folder")
    ap.add_argument("--exporter", choices=("auto", "dynamo", "torchscript", "both"), default="auto")
    ap.add_argument("--opset", type=int, default=0, help="opset (default: the exporter's)")
    ap.add_argument("--image-size", type=int, default=0, help="input height and width (default: the model's)")
    ap.add_argument("--num-classes", type=int, default=0,
                    help="classes of a random-weight model (default 1000; 10 for the CIFAR models)")
    ap.add_argument("--weights", default=None, help="torchvision weights to load, e.g. DEFAULT")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--census", action="store_true", help="print the op types each model's exports use")
    ap.add_argument("--tsv", help="with --census: write model, exporter, mode, opset, op, count rows")
    ap.add_argument("--jobs", type=int, default=1, help="with --census: parallel exports")
    a = ap.parse_args()
    if a.list:
        print("\n".join(all_models()))
        return 0
    exporters = {"both": ["torchscript", "dynamo"]}.get(a.exporter, [a.exporter])
    if "dynamo" in exporters and not has_dynamo():
        sys.exit("this PyTorch (%s) has no dynamo exporter; use --exporter torchscript" % torch.__version__)
    if a.census:
        names = all_models() if a.model in ([], ["all"]) else a.model
        jobs = [(n, e, a.opset) for n in names for e in exporters]
        tsv = open(a.tsv, "w") if a.tsv else None
        if tsv:
            tsv.write("model\texporter\tmode\topset\top\tcount\n")
        if a.jobs > 1:
            import multiprocessing as mp
            pool = mp.get_context("spawn").Pool(a.jobs)
            results = pool.imap_unordered(census_one, jobs, chunksize=1)
        else:
            results = map(census_one, jobs)
        union = collections.Counter()
        for name, exporter, res, err in results:  # printed as each export ends
            if err:
                print("%-24s %-11s FAILED %s" % (name, exporter, err), flush=True)
                continue
            for mode, (opset, counts) in zip(("eval", "train"), res):
                print("%-24s %-11s %-5s opset %2d: %s" % (name, exporter, mode, opset,
                                                          " ".join("%s:%d" % kv for kv in sorted(counts.items()))),
                      flush=True)
                for op, c in counts.items():
                    union[op] += 1
                    if tsv:
                        tsv.write("\t".join(map(str, (name, exporter, mode, opset, op, c))) + "\n")
                        tsv.flush()
        print("ops over all exports (number of exports using each):")
        print(" ".join("%s:%d" % kv for kv in sorted(union.items())))
        return 0
    if len(a.model) != 1 or not a.out:
        ap.error("give one MODEL and -o DIR (or --census, --list)")
    name = a.model[0]
    if name not in all_models():
        sys.exit("unknown model '%s' (--list prints the names)" % name)
    os.makedirs(a.out, exist_ok=True)
    size = a.image_size or default_size(name)
    classes = a.num_classes or (10 if name in EXTRA_MODELS else 1000)
    try:
        paths = export_both(name, a.out, exporters[0], a.opset, size, classes, a.weights)
    except Exception:
        traceback.print_exc()
        sys.exit("export of %s failed (exporter %s)" % (name, exporters[0]))
    for p in paths:
        opset, counts = op_counts(p)
        print("%s: opset %d, %d nodes, input [batch, 3, %d, %d]" % (p, opset, sum(counts.values()), size, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
