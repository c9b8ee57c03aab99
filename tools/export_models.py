#!/usr/bin/python3
"""Exports the reference models of amdnn-onnx from PyTorch to ONNX, with a
fixed input batch and PyTorch's logits for it (the golden files of
tests/golden/).

Run with Debian's interpreter (python3-torch, python3-onnx):

    /usr/bin/python3 tools/export_models.py --out models --models lenet300,lenet5,resnet8

For each model NAME it writes, into --out:
  NAME.onnx             eval mode, constant folding on (BatchNormalization
                        folded into the preceding Conv), opset 13
  NAME_train.onnx       training mode (TrainingMode.TRAINING), no constant
                        folding: BatchNormalization kept with its running
                        statistics as initializers, opset 13
  NAME.input.pb         the input batch (TensorProto "input", float32)
  NAME.logits.pb        PyTorch's eval-mode logits for it (TensorProto "logits")
  NAME_train.logits.pb  PyTorch's train-mode logits for the same batch
                        (BatchNormalization normalises with the statistics of
                        the batch; equal to NAME.logits.pb for models without
                        BatchNormalization)

Both graphs have one input "input" and one output "logits", with a dynamic
batch axis named "batch". Everything is seeded: the same command writes the
same tensors (the .onnx bytes may differ between torch versions).
"""

import argparse
import copy
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 13
BATCH = 4  # samples in the golden input batch
SEED = 20240601


# ---------------------------------------------------------------- models


class LeNet300(nn.Module):
    """LeNet-300-100: 784-300-100-10, ReLU. Flattens with x.view so that the
    export contains Shape/Gather/Unsqueeze/Concat/Reshape."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 300)
        self.fc2 = nn.Linear(300, 100)
        self.fc3 = nn.Linear(100, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class LeNet5(nn.Module):
    """LeNet-5: conv 6@5x5 pad 2, ReLU, maxpool 2, conv 16@5x5, ReLU, maxpool 2,
    FC 120, ReLU, FC 84, ReLU, FC 10."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes * self.expansion:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes * self.expansion:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet for 32x32 inputs: 3x3 stem conv, BN, ReLU, no max-pool, stages
    of blocks (the first block of a stage carries the stride), global average
    pool, FC 10."""

    def __init__(self, block, num_blocks, widths, strides, stem=64, num_classes=10):
        super().__init__()
        self.in_planes = stem
        self.conv1 = nn.Conv2d(3, stem, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        layers = []
        for n, w, s in zip(num_blocks, widths, strides):
            layers.append(self._make_layer(block, w, n, s))
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(widths[-1] * block.expansion, num_classes)

    def _make_layer(self, block, planes, n, stride):
        blocks = []
        for s in [stride] + [1] * (n - 1):
            blocks.append(block(self.in_planes, planes, s))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*blocks)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.adaptive_avg_pool2d(out, 1)  # GlobalAveragePool
        out = torch.flatten(out, 1)  # Flatten
        return self.linear(out)


WIDE = ([64, 128, 256, 512], [1, 2, 2, 2])

MODELS = {
    # name: (constructor, input shape of one sample)
    "lenet300": (LeNet300, (1, 28, 28)),
    "lenet5": (LeNet5, (1, 28, 28)),
    "resnet8": (lambda: CifarResNet(BasicBlock, [1, 1, 1], [16, 32, 64], [1, 2, 2], stem=16), (3, 32, 32)),
    "resnet18": (lambda: CifarResNet(BasicBlock, [2, 2, 2, 2], *WIDE), (3, 32, 32)),
    "resnet34": (lambda: CifarResNet(BasicBlock, [3, 4, 6, 3], *WIDE), (3, 32, 32)),
    "resnet50": (lambda: CifarResNet(Bottleneck, [3, 4, 6, 3], *WIDE), (3, 32, 32)),
}


# ---------------------------------------------------------------- helpers


def warm_up_bn(model, sample_shape, gen):
    """Gives BatchNormalization non-trivial parameters and running statistics:
    random affine weight/bias, then running statistics as the cumulative
    average over a few random batches in train mode (momentum=None)."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(torch.empty(bn.num_features).uniform_(0.5, 1.5, generator=gen))
            bn.bias.copy_(torch.empty(bn.num_features).uniform_(-0.2, 0.2, generator=gen))
            bn.reset_running_stats()
            bn.momentum = None
        model.train()
        for _ in range(4):
            x = torch.rand((16,) + sample_shape, generator=gen) * 2.0 - 0.5
            model(x)
        for bn in bns:
            bn.momentum = 0.1


def export(model, x, path, training):
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(
        model,
        (x,),
        path,
        opset_version=OPSET,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=mode,
        do_constant_folding=not training,
    )
    onnx.checker.check_model(onnx.load(path))


def write_tensor(path, array, name):
    tp = onnx.numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name)
    with open(path, "wb") as f:
        f.write(tp.SerializeToString())


def report(path):
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))


def export_one(name, out_dir):
    ctor, sample_shape = MODELS[name]
    torch.manual_seed(SEED)
    model = ctor()
    gen = torch.Generator().manual_seed(SEED + 1)
    warm_up_bn(model, sample_shape, gen)

    # The golden batch: uniform in [-0.5, 1.5), fixed by its own seed.
    x = torch.rand((BATCH,) + sample_shape, generator=torch.Generator().manual_seed(SEED + 2)) * 2.0 - 0.5

    # Each export and each forward works on its own copy: a train-mode export
    # or forward updates the BN running statistics.
    eval_model = copy.deepcopy(model).eval()
    with torch.no_grad():
        logits = eval_model(x)
    path = os.path.join(out_dir, name + ".onnx")
    export(copy.deepcopy(eval_model), x, path, training=False)
    report(path)

    path = os.path.join(out_dir, name + "_train.onnx")
    export(copy.deepcopy(model).train(), x, path, training=True)
    report(path)

    path = os.path.join(out_dir, name + ".input.pb")
    write_tensor(path, x.numpy(), "input")
    report(path)
    path = os.path.join(out_dir, name + ".logits.pb")
    write_tensor(path, logits.numpy(), "logits")
    report(path)

    train_model = copy.deepcopy(model).train()
    with torch.no_grad():
        train_logits = train_model(x)
    path = os.path.join(out_dir, name + "_train.logits.pb")
    write_tensor(path, train_logits.numpy(), "logits")
    report(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (created if missing)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, from: " + ",".join(MODELS))
    args = ap.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
    os.makedirs(args.out, exist_ok=True)
    # The training-mode export drops the num_batches_tracked increments (not
    # part of the ONNX graph): expected, and noisy.
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    for n in names:
        export_one(n, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
