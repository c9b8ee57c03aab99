#!/usr/bin/env python3
"""Runs airbench94 (Keller Jordan's public CIFAR-10 speed run: the file
legacy/airbench94.py of github.com/KellerJordan/cifar10-airbench, your own
copy; none of it is in this repository) on this machine's GPU, timed, so
that its accuracy and time sit beside amdnn-onnx's runs of the same job in
the same arithmetic, in the same lease.

    $(tools/torch_python.sh torch torchvision) tools/race_airbench94.py \\
        --airbench ~/cifar10-airbench/legacy/airbench94.py --cifar10 DIR [--runs 3] [--epochs 9.9] \\
        [--precision fp32|fp16] [--work DIR] [--tsv FILE]
    $(tools/torch_python.sh torch) tools/race_airbench94.py --cifar10 DIR --work DIR --convert-only

DIR holds CIFAR-10's binary batches (data_batch_1..5.bin, test_batch.bin,
or .bin.gz: per image a label byte and 3072 pixel bytes, CHW), the files
amdnn-onnx reads. They become the WORK/cifar10/train.pt and test.pt that
airbench's CifarLoader loads (a dict of 'images' uint8 [N, 32, 32, 3],
'labels' int64 [N], 'classes'), so it downloads nothing; the runs work in
WORK (default: a temporary folder, removed after).

The script is loaded with runpy (run_name "airbench94": its __main__ block
does not run) and its own main(run) is called: once with 'warmup' (random
labels, for cuDNN's benchmark choices; not counted), then for runs
0..N-1. main returns the TTA accuracy; the time, from its CUDA events, is
taken from the final row it prints. --precision fp32 (the default) turns
TF32 off and makes airbench's .half() casts no-ops for the runs
(Tensor.half gives a float tensor, Module.half leaves the module as it
is), so everything runs in FP32; fp16 runs it as published (FP16 network,
FP32 BatchNorm). Prints each run and the mean and standard deviation;
--tsv also writes run, epochs, tta_val_acc, total_time_seconds per run and
a mean row. Exit 2, with one line, without a CUDA GPU, with a file that
is not airbench94 or without the CIFAR-10 batches.
"""
import argparse
import contextlib
import gzip
import hashlib
import os
import runpy
import shutil
import statistics
import sys
import tempfile

try:  # say which interpreter to use, instead of a bare ImportError
    import numpy as np
    import torch
except ImportError as e:
    sys.exit(f"race_airbench94.py: {e}: run it with a Python that has numpy and torch (and torchvision, "
             "for airbench94), e.g. $(tools/torch_python.sh torch torchvision) tools/race_airbench94.py ...")

# torchvision's CIFAR10.classes, which airbench's CifarLoader stores
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
TRAIN_BATCHES = ["data_batch_%d" % k for k in range(1, 6)]
TEST_BATCHES = ["test_batch"]
RECORD = 1 + 3 * 32 * 32  # a label byte, then the pixels, CHW
NEEDED = ("main", "hyp", "print_training_details")


def refuse(message):
    """One line on stderr, exit 2."""
    print("race_airbench94.py: " + message, file=sys.stderr)
    sys.exit(2)


def batch_path(folder, name):
    """folder/name.bin, else folder/name.bin.gz, else None."""
    for path in (os.path.join(folder, name + ".bin"), os.path.join(folder, name + ".bin.gz")):
        if os.path.isfile(path):
            return path
    return None


def missing_batches(folder):
    """The CIFAR-10 batches that folder lacks (names without .bin)."""
    return [n for n in TRAIN_BATCHES + TEST_BATCHES if batch_path(folder, n) is None]


def read_batches(folder, names):
    """Images uint8 [N, 32, 32, 3] (HWC, as torchvision's CIFAR10.data) and
    labels int64 [N] of the batches named, in order."""
    images, labels = [], []
    for name in names:
        path = batch_path(folder, name)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = np.frombuffer(f.read(), np.uint8)
        if raw.size % RECORD:
            refuse("%s: %d bytes, not a whole number of %d-byte CIFAR-10 records" % (path, raw.size, RECORD))
        records = raw.reshape(-1, RECORD)
        labels.append(records[:, 0].astype(np.int64))
        images.append(records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


def convert_cifar10(folder, work):
    """Writes work/cifar10/train.pt and test.pt for airbench's CifarLoader
    from the binary batches in folder; returns the folder written."""
    out = os.path.join(work, "cifar10")
    os.makedirs(out, exist_ok=True)
    for file_name, names in (("train.pt", TRAIN_BATCHES), ("test.pt", TEST_BATCHES)):
        images, labels = read_batches(folder, names)
        data = {"images": torch.from_numpy(images), "labels": torch.from_numpy(labels), "classes": list(CLASSES)}
        torch.save(data, os.path.join(out, file_name))
        print("wrote %s: images %s uint8, labels %s int64" % (os.path.join(out, file_name),
                                                            list(images.shape), list(labels.shape)))
    return out


def load_airbench(path):
    """Executes the airbench94 script without its __main__ block and returns
    its module globals (main.__globals__: run_path returns a copy, and
    main looks its names up in the real ones)."""
    if not os.path.isfile(path):
        refuse("--airbench %s: no such file" % path)
    try:
        names = runpy.run_path(path, run_name="airbench94")
    except Exception as e:  # any failure of their script is a refusal
        refuse("--airbench %s: loading it failed: %s: %s" % (path, type(e).__name__, e))
    lacking = [n for n in NEEDED if n not in names]
    if lacking or not callable(names["main"]):
        refuse("--airbench %s: not airbench94.py (it lacks %s)" % (path, ", ".join(lacking or ["a callable main"])))
    g = names["main"].__globals__
    try:
        g["hyp"]["opt"]["train_epochs"]
    except (KeyError, TypeError):
        refuse("--airbench %s: not airbench94.py (no hyp['opt']['train_epochs'])" % path)
    return g


def set_own_attr(cls, name, value):
    """Sets cls.name to value, or removes cls's own entry when value is None
    (the attribute then comes from a base class again)."""
    if value is not None:
        setattr(cls, name, value)
    elif name in cls.__dict__:
        delattr(cls, name)


def half_as_float(tensor, memory_format=torch.preserve_format):
    """Tensor.half for --precision fp32: a float tensor."""
    return tensor.float(memory_format=memory_format)


def module_half_unchanged(module):
    """nn.Module.half for --precision fp32: the module as it is."""
    return module


@contextlib.contextmanager
def precision(mode):
    """fp32: TF32 off for matmuls and cuDNN, Tensor.half and nn.Module.half
    no-ops; everything restored on the way out. fp16: nothing changed."""
    if mode != "fp32":
        yield
        return
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.Tensor.__dict__.get("half"), torch.nn.Module.__dict__.get("half"))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.Tensor.half = half_as_float
    torch.nn.Module.half = module_half_unchanged
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[0], saved[1]
        set_own_attr(torch.Tensor, "half", saved[2])
        set_own_attr(torch.nn.Module, "half", saved[3])


def settings_line(mode, g):
    """What the runs use, in one line (call it inside precision(mode))."""
    casts = ("airbench's .half() casts are no-ops (Tensor.half -> float, Module.half -> unchanged): FP32 throughout"
             if mode == "fp32" else "airbench's own casts (FP16 network, FP32 BatchNorm)")
    return ("precision %s: torch.backends.cuda.matmul.allow_tf32=%s, torch.backends.cudnn.allow_tf32=%s, "
            "torch.backends.cudnn.benchmark=%s; %s; train_epochs %g, batch_size %s"
            % (mode, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
               torch.backends.cudnn.benchmark, casts, g["hyp"]["opt"]["train_epochs"],
               g["hyp"]["opt"].get("batch_size")))


def race(g, runs):
    """main('warmup'), then main(0..runs-1); returns [(tta_val_acc,
    total_time_seconds)] of the counted runs."""
    original = g["print_training_details"]
    final_times = []

    def print_and_keep(variables, is_final_entry=False):
        if is_final_entry:
            final_times.append(variables["total_time_seconds"])
        return original(variables, is_final_entry=is_final_entry)

    g["print_training_details"] = print_and_keep
    try:
        if "print_columns" in g and "logging_columns_list" in g:
            g["print_columns"](g["logging_columns_list"], is_head=True)
        g["main"]("warmup")
        results = []
        for run in range(runs):
            before = len(final_times)
            acc = g["main"](run)
            # nan when main printed no final row (not airbench94's main)
            seconds = final_times[-1] if len(final_times) > before else float("nan")
            results.append((float(acc), float(seconds)))
    finally:
        g["print_training_details"] = original
    return results


def spread(values):
    """Mean and sample standard deviation (0 for one value)."""
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--airbench", metavar="PATH", help="your copy of airbench94.py (cifar10-airbench, legacy/)")
    ap.add_argument("--cifar10", metavar="DIR", required=True,
                    help="CIFAR-10 binary batches: data_batch_1..5.bin, test_batch.bin (or .bin.gz)")
    ap.add_argument("--runs", type=int, default=3, help="counted runs, after one warm-up run (default 3)")
    ap.add_argument("--epochs", type=float,
                    help="hyp['opt']['train_epochs'] (default: airbench's own, 9.9 in airbench94)")
    ap.add_argument("--work", metavar="DIR", help="where cifar10/train.pt and test.pt go and the runs work "
                    "(default: a temporary folder, removed after)")
    ap.add_argument("--tsv", metavar="FILE", help="also write run, epochs, tta_val_acc, total_time_seconds")
    ap.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                    help="fp32 (default): TF32 off, airbench's half casts made no-ops; fp16: as published")
    ap.add_argument("--convert-only", action="store_true",
                    help="only write WORK/cifar10/train.pt and test.pt (needs --work; no GPU, no --airbench)")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.epochs is not None and a.epochs <= 0:
        ap.error("--epochs must be positive")
    if a.convert_only and not a.work:
        ap.error("--convert-only needs --work")
    if not a.convert_only and not a.airbench:
        ap.error("--airbench PATH is required")
    cifar10 = os.path.abspath(a.cifar10)
    tsv = os.path.abspath(a.tsv) if a.tsv else None

    missing = missing_batches(cifar10)
    if missing:
        refuse("--cifar10 %s: no %s (.bin or .bin.gz)" % (cifar10, ", ".join(missing)))
    if a.convert_only:
        convert_cifar10(cifar10, os.path.abspath(a.work))
        return 0
    airbench = os.path.abspath(a.airbench)
    g = load_airbench(airbench)
    if not torch.cuda.is_available():
        refuse("no CUDA GPU (torch %s sees none): airbench94 runs on one" % torch.__version__)

    work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="race_airbench94_")
    convert_cifar10(cifar10, work)
    if a.epochs is not None:
        g["hyp"]["opt"]["train_epochs"] = a.epochs
    epochs = g["hyp"]["opt"]["train_epochs"]
    with open(airbench, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    gpu = torch.cuda.get_device_name(0)
    print("airbench94 %s (sha256 %s...), torch %s, CUDA %s, %s" % (airbench, digest, torch.__version__,
                                                                  torch.version.cuda, gpu))
    here = os.getcwd()
    os.chdir(work)  # airbench's CifarLoader('cifar10', ...) is relative
    try:
        with precision(a.precision):
            print(settings_line(a.precision, g))
            results = race(g, a.runs)
    finally:
        os.chdir(here)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)

    for run, (acc, seconds) in enumerate(results):
        print("run %d: tta_val_acc %.4f  total_time_seconds %.3f" % (run, acc, seconds))
    acc_mean, acc_std = spread([r[0] for r in results])
    time_mean, time_std = spread([r[1] for r in results])
    print("airbench94 %s, %g epochs, %d runs, %s, torch %s: tta_val_acc mean %.4f std %.4f, "
          "total_time_seconds mean %.3f std %.3f" % (a.precision, epochs, len(results), gpu, torch.__version__,
                                                     acc_mean, acc_std, time_mean, time_std))
    if tsv:
        with open(tsv, "w") as f:
            f.write("run\tepochs\ttta_val_acc\ttotal_time_seconds\n")
            for run, (acc, seconds) in enumerate(results):
                f.write("%d\t%g\t%.4f\t%.3f\n" % (run, epochs, acc, seconds))
            f.write("mean\t%g\t%.4f\t%.3f\n" % (epochs, acc_mean, time_mean))
        print("wrote %s" % tsv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
