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

With --train-goldens NAMES (a subset of --models) it also writes training
goldens for NAME_train.onnx into --out/golden/NAME/ (tests/golden/
grad_golden.sh and train_golden.sh):
  input.pb              a batch of 16 samples (TensorProto "input", float32)
  labels.pb             its class labels (TensorProto "labels", int64 [16])
  loss.pb               F.cross_entropy (mean) of the train-mode logits
                        (TensorProto "loss", float32, rank 0)
  grads/INIT.pb         d loss / d parameter for every nn.Parameter, named
                        after the ONNX initializer INIT of NAME_train.onnx
                        that holds it
  step3/INIT.pb         every float initializer (parameters and BN running
                        statistics) after 3 steps of torch.optim.SGD(lr=0.05,
                        momentum=0.9, weight_decay=5e-4) on that batch
  train_losses.txt      the loss before each of the 3 steps (information)
File names are initializer names with every character outside
[A-Za-z0-9._-] replaced by '_'; the TensorProto keeps the initializer name.
"""

import argparse
import collections
import inspect
import copy
import gzip
import os
import re
import sys
import warnings

try:  # say which interpreter to use, instead of a bare ImportError
    import numpy, onnx, torch  # noqa: E401,F401
except ImportError as e:
    sys.exit(f"export_models.py: {e}: run it with a Python that has numpy and onnx and torch, e.g. "
             "$(tools/torch_python.sh torch onnx) tools/export_models.py ...")
import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 13
BATCH = 4  # samples in the golden input batch
SEED = 20240601

# Training goldens (--train-goldens): batch, classes, optimiser, steps.
TRAIN_BATCH = 16
NUM_CLASSES = 10
SGD_ARGS = dict(lr=0.05, momentum=0.9, weight_decay=5e-4)
TRAIN_STEPS = 3

WHITEN_IMAGES = 5000  # --cifar10: the training images whose patches make the fastnets' whitening filters


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


class LeNet5Dropout(LeNet5):
    """LeNet-5 with Dropout(0.25) after each hidden FC layer: the model that
    checks that stop/resume and kill -9 restore the dropout stream."""

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        x = F.dropout(F.relu(self.fc1(x)), 0.25, self.training)
        x = F.dropout(F.relu(self.fc2(x)), 0.25, self.training)
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


class ResNet9(nn.Module):
    """The fast CIFAR-10 network of the DAWNBench entries (issue 8): a prep
    conv of 64, three stages of 128 / 256 / 512 channels that each convolve
    and halve the resolution with a 2x2 max-pool, a residual pair of convs
    after the first and the last stage, a global max pool and an FC layer
    whose output is scaled by 1/8 (it keeps the logits small at the start,
    as those entries do). Every conv is 3x3, pad 1, bias-free, then BN, ReLU."""

    def __init__(self, num_classes=10):
        super().__init__()

        def unit(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

        self.prep = unit(3, 64)
        self.stage1 = nn.Sequential(unit(64, 128), nn.MaxPool2d(2))
        self.res1 = nn.Sequential(unit(128, 128), unit(128, 128))
        self.stage2 = nn.Sequential(unit(128, 256), nn.MaxPool2d(2))
        self.stage3 = nn.Sequential(unit(256, 512), nn.MaxPool2d(2))
        self.res3 = nn.Sequential(unit(512, 512), unit(512, 512))
        self.linear = nn.Linear(512, num_classes, bias=False)

    def forward(self, x):
        x = self.prep(x)
        x = self.stage1(x)
        x = x + self.res1(x)
        x = self.stage2(x)
        x = self.stage3(x)
        x = x + self.res3(x)
        x = F.adaptive_max_pool2d(x, 1)  # GlobalMaxPool
        x = torch.flatten(x, 1)
        return self.linear(x) * 0.125


class ScaledBiasBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d whose bias enters as bias_scale x the stored parameter (a
    Mul node before BatchNormalization's B input). SGD then moves the
    effective bias bias_scale^2 times faster, with the same relative weight
    decay: a per-parameter learning-rate factor carried by the graph.
    momentum and eps as in nn.BatchNorm2d (momentum in PyTorch's convention:
    the weight of the new batch statistics)."""

    def __init__(self, channels, bias_scale, momentum=0.1, eps=1e-5):
        super().__init__(channels, eps=eps, momentum=momentum)
        self.bias_scale = bias_scale

    def forward(self, x):
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias * self.bias_scale,
                            use_batch, self.momentum, self.eps)


class FastNet(nn.Module):
    """The fast CIFAR-10 network of issue 8's 94% target, after the later
    descendants of the DAWNBench ResNet-9 (Keller Jordan's airbench): a 2x2
    conv of 24 channels without padding (32 -> 31 pixels; see
    set_whitening), ReLU, then three blocks of 96 / 384 / 384 channels
    (airbench94: 64 / 256 / 256, with more tricks), each a 3x3 conv, a 2x2
    max-pool, BN, ReLU, a second 3x3 conv, BN, ReLU (31 -> 15 -> 7 -> 3), a
    3x3 max-pool and an FC layer whose output is scaled by 1/9. About 255 M
    multiply-accumulates per image, two thirds of ResNet-9's. The BN biases
    learn 64 times faster than the other parameters, as in airbench
    (ScaledBiasBatchNorm2d with 8); that recipe also keeps the BN scales at
    1 (tools/train_fastnet.sh: --freeze *.bn1.weight,*.bn2.weight).

    The keyword arguments give airbench94's own network ("fastnet_narrow"):
    act "gelu" puts nn.GELU() (the erf form; the ONNX export writes it as
    Div, Erf, Add, Mul, Mul) where the ReLUs are; dirac True sets, in every
    3x3 conv of the blocks with weight [out, in, 3, 3], the first in output
    channels to the identity kernel (torch.nn.init.dirac_), the others
    keeping PyTorch's default initialisation; bn_momentum (PyTorch's
    convention, None: ScaledBiasBatchNorm2d's default) and bn_eps go to
    every BN. The defaults build "fastnet", with the same random draws."""

    def __init__(self, widths=(96, 384, 384), num_classes=10, act="relu", dirac=False, bn_momentum=None,
                 bn_eps=1e-5):
        super().__init__()
        if act not in ("relu", "gelu"):
            raise ValueError("FastNet: act must be relu or gelu, not %r" % (act,))
        self.act = act
        bn_args = {"eps": bn_eps}
        if bn_momentum is not None:
            bn_args["momentum"] = bn_momentum

        def activation():
            return nn.GELU() if act == "gelu" else nn.ReLU()

        self.whiten = nn.Conv2d(3, 24, 2, bias=True)
        blocks, cin = [], 24
        for w in widths:  # initializers blocks.K.conv1.weight, blocks.K.bn1.weight, ...
            # relu1 / relu2 whatever act is: the names of fastnet's nodes stay.
            blocks.append(nn.Sequential(collections.OrderedDict([
                ("conv1", nn.Conv2d(cin, w, 3, padding=1, bias=False)), ("pool", nn.MaxPool2d(2)),
                ("bn1", ScaledBiasBatchNorm2d(w, 8.0, **bn_args)), ("relu1", activation()),
                ("conv2", nn.Conv2d(w, w, 3, padding=1, bias=False)),
                ("bn2", ScaledBiasBatchNorm2d(w, 8.0, **bn_args)), ("relu2", activation())])))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.linear = nn.Linear(cin, num_classes, bias=False)
        if dirac:
            with torch.no_grad():
                for block in self.blocks:
                    for conv in (block.conv1, block.conv2):
                        torch.nn.init.dirac_(conv.weight[:conv.weight.shape[1]])

    def forward(self, x):
        x = self.whiten(x)
        x = F.gelu(x) if self.act == "gelu" else F.relu(x)
        x = self.blocks(x)
        x = torch.flatten(F.max_pool2d(x, 3), 1)
        return self.linear(x) / 9.0

    def set_whitening(self, images, eps=5e-4):
        """Fixed whitening filters from training images [n, 3, 32, 32]
        (normalised as amdnn-onnx feeds them): the eigenvectors of the
        covariance of their 2x2 patches, each divided by the square root of
        its eigenvalue (+ eps), and the same 12 negated, so that the ReLU
        after them keeps both signs; bias 0. Train with --freeze
        whiten.weight to keep them."""
        patches = images.unfold(2, 2, 1).unfold(3, 2, 1)  # n, 3, 31, 31, 2, 2
        patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(-1, 12).double()
        values, vectors = torch.linalg.eigh(patches.T @ patches / len(patches))
        filters = (vectors.T / torch.sqrt(values + eps)[:, None]).reshape(12, 3, 2, 2).float()
        with torch.no_grad():
            self.whiten.weight.copy_(torch.cat([filters, -filters]))
            self.whiten.bias.zero_()


class TinyFormer(nn.Module):
    """A small transformer encoder (the golden of issue 16's attention ops):
    4x4 patches of a 16x16 image embedded by a strided conv, a learned
    position embedding, two pre-norm nn.TransformerEncoderLayer (width 32,
    2 heads, MLP 64, GELU, no dropout, so train-mode logits are
    deterministic), LayerNorm, the mean over tokens, a linear head. Exported
    at opset 13 the layer norms become ReduceMean/Sub/Pow/Sqrt/Div and the
    attention MatMuls of two activations, batched over heads."""

    def __init__(self, width=32, depth=2, heads=2, num_classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, width, 4, stride=4)
        self.pos = nn.Parameter(torch.randn(1, 16, width) * 0.1)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(dim=1))


class MobileV3Block(nn.Module):
    """A MobileNetV3-style network (the golden of issue 16's mobile ops): a
    stem conv + BN + HardSwish, one inverted residual block (1x1 expand,
    depthwise 3x3, squeeze-and-excitation with ReLU and HardSigmoid, 1x1
    project, residual add), global average pooling, a linear head."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(16, 48, 1, bias=False), nn.BatchNorm2d(48), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(48, 48, 3, padding=1, groups=48, bias=False), nn.BatchNorm2d(48),
                                nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(48, 12, 1), nn.ReLU(), nn.Conv2d(12, 48, 1),
                                nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(48, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(self.expand(x))
        y = self.project(y * self.se(y))
        x = x + y
        return self.head(x.mean(dim=(2, 3)))


def cifar10_train_images(folder, n):
    """The first n training images of the CIFAR-10 binary batches in folder
    (data_batch_K.bin or .bin.gz), normalised per channel with the mean and
    standard deviation of all the training images, as amdnn-onnx does."""
    raw = []
    for k in range(1, 6):
        path = os.path.join(folder, "data_batch_%d.bin" % k)
        opener = open
        if not os.path.exists(path):
            path, opener = path + ".gz", gzip.open
        with opener(path, "rb") as f:
            raw.append(np.frombuffer(f.read(), np.uint8).reshape(-1, 3073)[:, 1:])
    pixels = np.concatenate(raw).reshape(-1, 3, 32, 32).astype(np.float64) / 255.0
    mean, std = pixels.mean(axis=(0, 2, 3)), pixels.std(axis=(0, 2, 3))
    return torch.from_numpy((pixels[:n] - mean[:, None, None]) / std[:, None, None]).float()


WIDE = ([64, 128, 256, 512], [1, 2, 2, 2])

MODELS = {
    # name: (constructor, input shape of one sample)
    "lenet300": (LeNet300, (1, 28, 28)),
    "lenet5": (LeNet5, (1, 28, 28)),
    "lenet5d": (LeNet5Dropout, (1, 28, 28)),
    "resnet8": (lambda: CifarResNet(BasicBlock, [1, 1, 1], [16, 32, 64], [1, 2, 2], stem=16), (3, 32, 32)),
    "resnet18": (lambda: CifarResNet(BasicBlock, [2, 2, 2, 2], *WIDE), (3, 32, 32)),
    "resnet34": (lambda: CifarResNet(BasicBlock, [3, 4, 6, 3], *WIDE), (3, 32, 32)),
    "resnet50": (lambda: CifarResNet(Bottleneck, [3, 4, 6, 3], *WIDE), (3, 32, 32)),
    "resnet9": (ResNet9, (3, 32, 32)),
    "fastnet": (FastNet, (3, 32, 32)),
    # airbench94's network: BN momentum 0.6 in airbench's convention (and
    # ONNX's), 0.4 in PyTorch's
    "fastnet_narrow": (lambda: FastNet(widths=(64, 256, 256), act="gelu", dirac=True, bn_momentum=0.4,
                                       bn_eps=1e-12), (3, 32, 32)),
    "tinyformer": (TinyFormer, (3, 16, 16)),
    "mbv3block": (MobileV3Block, (3, 16, 16)),
}

# Networks for training from scratch: BatchNormalization keeps PyTorch's
# initial scale 1 and bias 0 (warm_up_bn gives the others random ones, which
# the golden tests want).
FROM_SCRATCH = {"fastnet", "fastnet_narrow"}

# Networks with Dropout: PyTorch's train-mode logits depend on its own random
# masks, so no NAME_train.logits.pb is written for them.
WITH_DROPOUT = {"lenet5d"}


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
    # Newer torch (2.9 on) exports through dynamo by default, which ignores
    # `training` and folds BatchNormalization away: ask for the TorchScript
    # exporter, the one torch 1.13 (Debian) has.
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
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
        **extra,
    )
    onnx.checker.check_model(onnx.load(path))


def write_tensor(path, array, name):
    # np.array, not np.ascontiguousarray: the latter turns a scalar (the loss,
    # rank 0) into shape [1].
    tp = onnx.numpy_helper.from_array(np.array(array, dtype=np.float32, order="C"), name)
    with open(path, "wb") as f:
        f.write(tp.SerializeToString())


def report(path):
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))


def file_name(initializer_name):
    """The file name of an initializer's golden: characters outside
    [A-Za-z0-9._-] become '_', then '.pb' (the `amdnn-onnx grad` rule)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", initializer_name) + ".pb"


# ---------------------------------------------------------------- training goldens


def initializer_map(model, onnx_path):
    """Maps every float state_dict entry of `model` (num_batches_tracked
    excluded) to the initializer of onnx_path that holds it; returns
    ({state_dict key: initializer name}, {initializer name: numpy array}).

    With do_constant_folding=False torch 1.13 keeps the state_dict names; an
    entry whose name is missing is matched by value (the one initializer of
    equal shape and bit-equal values). Parameters must be bit-equal to their
    initializer. BatchNormalization running statistics may differ: the
    training-mode export traces one train-mode forward, which updates them
    before they are written (see train_goldens). Fails on an entry without an
    initializer, on two entries sharing one, and on a float initializer that
    belongs to no entry."""
    inits = {}
    for t in onnx.load(onnx_path).graph.initializer:
        inits[t.name] = onnx.numpy_helper.to_array(t)
    params = {k for k, _ in model.named_parameters()}
    mapping = {}
    for key, value in model.state_dict().items():
        if key.endswith("num_batches_tracked"):
            continue
        v = value.detach().cpu().numpy()
        if key in inits and inits[key].shape == v.shape:
            mapping[key] = key
        else:
            hits = [n for n, a in inits.items() if a.shape == v.shape and np.array_equal(a, v)]
            if len(hits) != 1:
                raise SystemExit("%s: state_dict entry %s: no initializer of that name, %d of equal value (%s)"
                                 % (onnx_path, key, len(hits), ", ".join(hits)))
            print("note: state_dict %s is initializer %s in %s" % (key, hits[0], onnx_path))
            mapping[key] = hits[0]
        if key in params and not np.array_equal(inits[mapping[key]], v):
            raise SystemExit("%s: parameter %s differs from initializer %s" % (onnx_path, key, mapping[key]))
    used = list(mapping.values())
    if len(set(used)) != len(used):
        raise SystemExit("%s: two state_dict entries map to one initializer" % onnx_path)
    files = [file_name(n) for n in used]
    if len(set(files)) != len(files):
        raise SystemExit("%s: two initializers sanitise to one file name" % onnx_path)
    floats = {n for n, a in inits.items() if a.dtype == np.float32}
    if floats != set(used):
        raise SystemExit("%s: float initializers without a state_dict entry: %s"
                         % (onnx_path, ", ".join(sorted(floats - set(used)))))
    return mapping, inits


def sgd_steps(model, x, y, steps):
    """`steps` steps of SGD (SGD_ARGS) on the one batch (x, y) in train mode;
    returns the loss before each step."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), **SGD_ARGS)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def max_rel_diff(a, b):
    """max |a - b| / max |b| over all tensors of two equal-keyed dicts."""
    worst = 0.0
    for k in b:
        scale = float(np.max(np.abs(b[k]))) if b[k].size else 0.0
        if scale > 0:
            worst = max(worst, float(np.max(np.abs(a[k] - b[k]))) / scale)
    return worst


def train_goldens(name, model, sample_shape, onnx_path, out_dir):
    """The training goldens of one model (see the module comment). They
    start from the initializers of onnx_path, the state `amdnn-onnx` loads:
    the parameters of `model`, and BN running statistics one momentum update
    (with the export batch) past those of `model`, since the training-mode
    export runs the model once in train mode while tracing."""
    mapping, inits = initializer_map(model, onnx_path)
    params = {k for k, _ in model.named_parameters()}
    with torch.no_grad():
        state = model.state_dict()
        changed = []
        for k, n in mapping.items():
            if not np.array_equal(state[k].numpy(), inits[n]):
                changed.append(k)
            state[k].copy_(torch.from_numpy(np.array(inits[n])))
    if changed:
        print("%s: %d running statistics taken from %s (they differ from the eval export's)"
              % (name, len(changed), onnx_path))
    for d in ("grads", "step3"):
        os.makedirs(os.path.join(out_dir, d), exist_ok=True)
        for f in os.listdir(os.path.join(out_dir, d)):  # no stale files
            if f.endswith(".pb"):
                os.remove(os.path.join(out_dir, d, f))

    # The batch: uniform in [-0.5, 1.5) like the logits goldens, labels
    # uniform over the classes; each from its own seed.
    x = torch.rand((TRAIN_BATCH,) + sample_shape, generator=torch.Generator().manual_seed(SEED + 3)) * 2.0 - 0.5
    y = torch.randint(0, NUM_CLASSES, (TRAIN_BATCH,), generator=torch.Generator().manual_seed(SEED + 4))
    path = os.path.join(out_dir, "input.pb")
    write_tensor(path, x.numpy(), "input")
    report(path)
    path = os.path.join(out_dir, "labels.pb")
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(y.numpy().astype(np.int64), "labels").SerializeToString())
    report(path)

    # Loss and gradients: one forward/backward in train mode.
    m = copy.deepcopy(model).train()
    m.zero_grad()
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    path = os.path.join(out_dir, "loss.pb")
    write_tensor(path, np.array(loss.item(), dtype=np.float32), "loss")
    report(path)
    print("%s: loss %.7g" % (name, loss.item()))
    grads = {}
    for k, p in m.named_parameters():
        grads[k] = p.grad.detach().numpy().copy()
        write_tensor(os.path.join(out_dir, "grads", file_name(mapping[k])), grads[k], mapping[k])
    print("%s: wrote %d gradients into %s" % (name, len(grads), os.path.join(out_dir, "grads")))

    # Parameters and running statistics after TRAIN_STEPS SGD steps.
    m = copy.deepcopy(model)
    losses = sgd_steps(m, x, y, TRAIN_STEPS)
    after = {k: v.detach().numpy().copy() for k, v in m.state_dict().items() if k in mapping}
    for k, v in after.items():
        write_tensor(os.path.join(out_dir, "step3", file_name(mapping[k])), v, mapping[k])
    print("%s: wrote %d tensors into %s" % (name, len(after), os.path.join(out_dir, "step3")))
    with open(os.path.join(out_dir, "train_losses.txt"), "w") as f:
        f.write("# %s: F.cross_entropy before each SGD step (%s) on input.pb/labels.pb\n"
                % (name, ", ".join("%s=%g" % kv for kv in SGD_ARGS.items())))
        for i, l in enumerate(losses):
            f.write("step %d loss %.7g\n" % (i + 1, l))
    if abs(losses[0] - loss.item()) > 1e-6 * abs(loss.item()):
        raise SystemExit("%s: first SGD loss %g differs from the gradient loss %g" % (name, losses[0], loss.item()))

    # Sensitivity of the goldens: the same computation in float64. The tests
    # allow 1e-3 relative; float32 rounding alone should stay far below it.
    m64 = copy.deepcopy(model).double().train()
    F.cross_entropy(m64(x.double()), y).backward()
    g64 = {k: p.grad.numpy() for k, p in m64.named_parameters()}
    m64 = copy.deepcopy(model).double()
    sgd_steps(m64, x.double(), y, TRAIN_STEPS)
    s64 = {k: v.numpy() for k, v in m64.state_dict().items() if k in mapping}
    print("%s: float32 vs float64: gradients %.2e, step %d tensors %.2e (max |diff| / max |float64|)"
          % (name, max_rel_diff(grads, g64), TRAIN_STEPS, max_rel_diff(after, s64)))
    missing = params - set(grads)
    if missing:
        raise SystemExit("%s: parameters without gradient: %s" % (name, ", ".join(sorted(missing))))


def export_one(name, out_dir, train_golden_dir=None, cifar10=None):
    ctor, sample_shape = MODELS[name]
    torch.manual_seed(SEED)
    model = ctor()
    gen = torch.Generator().manual_seed(SEED + 1)
    if name not in FROM_SCRATCH:
        warm_up_bn(model, sample_shape, gen)
    if cifar10 and hasattr(model, "set_whitening"):
        model.set_whitening(cifar10_train_images(cifar10, WHITEN_IMAGES))
        print("%s: whitening filters from %d training images of %s" % (name, WHITEN_IMAGES, cifar10))

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
    if train_golden_dir:
        train_goldens(name, copy.deepcopy(model), sample_shape, path, train_golden_dir)

    path = os.path.join(out_dir, name + ".input.pb")
    write_tensor(path, x.numpy(), "input")
    report(path)
    path = os.path.join(out_dir, name + ".logits.pb")
    write_tensor(path, logits.numpy(), "logits")
    report(path)

    if name in WITH_DROPOUT:
        return
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
    ap.add_argument("--train-goldens", default="", metavar="NAMES",
                    help="comma-separated models (from --models) whose training goldens go into OUT/golden/NAME/")
    ap.add_argument("--cifar10", metavar="DIR",
                    help="CIFAR-10 binary batches: the first conv of fastnet and fastnet_narrow becomes the "
                         "whitening filters of their training images (without it: PyTorch's default "
                         "initialisation)")
    args = ap.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model %r (known: %s)" % (n, ", ".join(MODELS)))
    goldens = [n.strip() for n in args.train_goldens.split(",") if n.strip()]
    for n in goldens:
        if n not in names:
            ap.error("--train-goldens %r is not in --models" % n)
    os.makedirs(args.out, exist_ok=True)
    # The training-mode export drops the num_batches_tracked increments (not
    # part of the ONNX graph): expected, and noisy.
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    for n in names:
        export_one(n, args.out, os.path.join(args.out, "golden", n) if n in goldens else None, args.cifar10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
