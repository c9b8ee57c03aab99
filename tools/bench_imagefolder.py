#!/usr/bin/env python3
"""The PyTorch side of the image-folder evaluation benchmark (issue 17), and
the folder it reads.

  make DIR --count N      writes N ImageNet-sized JPEGs (sides 300-640, mostly
                          500x375 / 375x500 / 500x333, quality 85-95, smooth
                          colour fields plus noise, about 60-150 KB) into
                          DIR/<class>/ for 10 classes, in parallel.
  torch DIR [--model resnet50] [--workers 16] [--batch 256]
                          torchvision's standard evaluation pipeline over DIR:
                          ImageFolder, Resize(256), CenterCrop(224), ToTensor,
                          Normalize(ImageNet), DataLoader(workers, pinned);
                          prints the images/s of the pipeline alone (every
                          batch made, nothing computed) and end to end with
                          the model in FP32 eval mode on the GPU (TF32 off,
                          random weights), each timed from the first batch
                          request to the last result on the host.
  infer [--model resnet50] [--batch 256] [--steps 20]
                          PyTorch FP32 inference on one random batch on the
                          GPU (TF32 off), the figure `amdnn-onnx bench --infer`
                          is compared with.

  idx IDX_DIR DIR [--train N] [--val N]
                          an ImageFolder with DIR/train and DIR/val from an
                          IDX set (MNIST, Fashion-MNIST: the first N of its
                          training and test images): each grey image tinted
                          over a colour gradient, scaled to 40-120 pixels a
                          side, saved as JPEG (quality 75-95) in its class
                          folder (the fine-tuning demo, tools/demo_pretrained.sh).

tools/bench_imagefolder.sh runs these and amdnn-onnx in one command.
"""
import argparse
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

SIZES = [(500, 375), (375, 500), (500, 333), (333, 500), (640, 480), (500, 400), (400, 300), (480, 640)]


def make_one(args):
    path, seed = args
    from PIL import Image

    rng = np.random.default_rng(seed)
    w, h = SIZES[seed % len(SIZES)]
    # a smooth colour field (low-resolution noise upsampled), then fine noise: photo-like JPEG sizes
    low = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(low).resize((w, h), Image.BICUBIC), dtype=np.float32)
    img += rng.normal(0.0, 12.0, size=img.shape)
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path, quality=int(85 + seed % 11))
    return os.path.getsize(path)


def cmd_make(a):
    jobs = []
    for i in range(a.count):
        d = os.path.join(a.dir, "class%02d" % (i % 10))
        os.makedirs(d, exist_ok=True)
        jobs.append((os.path.join(d, "img%06d.jpg" % i), i))
    with Pool(a.jobs) as p:
        sizes = p.map(make_one, jobs, chunksize=16)
    print("made %d JPEGs in %s, mean %.0f KB" % (len(sizes), a.dir, sum(sizes) / len(sizes) / 1024))


def read_idx(d, prefix, n):
    import gzip

    def opener(name):
        p = os.path.join(d, name)
        return gzip.open(p + ".gz") if os.path.exists(p + ".gz") else open(p, "rb")

    with opener(prefix + "-images-idx3-ubyte") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with opener(prefix + "-labels-idx1-ubyte") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return x, y


def idx_one(args):
    path, img, seed = args
    from PIL import Image

    rng = np.random.default_rng(seed)
    side = int(rng.integers(40, 121))
    g = np.asarray(Image.fromarray(img).resize((side, side), Image.BILINEAR), np.float32) / 255.0
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    t = np.linspace(0.0, 1.0, side)[None, :, None]
    bg = c0 * (1 - t) + c1 * t
    ink = rng.uniform(0, 255, 3)
    rgb = bg * (1 - g[..., None]) + ink * g[..., None]
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).save(path, quality=int(75 + seed % 21))


def cmd_idx(a):
    jobs = []
    for split, prefix, n in (("train", "train", a.train), ("val", "t10k", a.val)):
        x, y = read_idx(a.idx_dir, prefix, n)
        for i in range(len(y)):
            d = os.path.join(a.dir, split, "class%d" % y[i])
            os.makedirs(d, exist_ok=True)
            jobs.append((os.path.join(d, "%s%06d.jpg" % (split, i)), x[i], i + (0 if split == "train" else 10 ** 6)))
    with Pool(a.jobs) as p:
        p.map(idx_one, jobs, chunksize=64)
    print("made %d JPEGs in %s (train %d, val %d)" % (len(jobs), a.dir, a.train, a.val))


def torch_model(name):
    import torch
    import torchvision

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    return getattr(torchvision.models, name)(weights=None).cuda().eval()


def cmd_torch(a):
    import torch
    import torchvision
    from torchvision import transforms as T

    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = torchvision.datasets.ImageFolder(a.dir, transform=tf)

    def loader():
        return torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers, pin_memory=True)

    t0 = time.perf_counter()
    n = 0
    for x, _ in loader():
        n += x.shape[0]
    dt = time.perf_counter() - t0
    print("torchvision pipeline alone: %d images in %.2f s: %.0f images/s (%d workers)" % (n, dt, n / dt, a.workers))
    model = torch_model(a.model)
    correct = n = 0
    t0 = time.perf_counter()
    with torch.no_grad():
        for x, y in loader():
            out = model(x.cuda(non_blocking=True))
            correct += int((out.argmax(1).cpu() == y).sum())
            n += x.shape[0]
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("torchvision end to end, %s FP32: %d images in %.2f s: %.0f images/s (top-1 %.2f%%, random weights)"
          % (a.model, n, dt, n / dt, 100.0 * correct / n))


def cmd_infer(a):
    import torch

    model = torch_model(a.model)
    x = torch.randn(a.batch, 3, 224, 224, device="cuda")
    with torch.no_grad():
        for _ in range(5):
            model(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            model(x)
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("PyTorch %s FP32 inference, batch %d: %.0f images/s (%.2f ms/batch)"
          % (a.model, a.batch, a.batch * a.steps / dt, 1000 * dt / a.steps))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--count", type=int, default=5000)
    m.add_argument("--jobs", type=int, default=os.cpu_count())
    t = sub.add_parser("torch")
    t.add_argument("dir")
    t.add_argument("--model", default="resnet50")
    t.add_argument("--workers", type=int, default=16)
    t.add_argument("--batch", type=int, default=256)
    i = sub.add_parser("infer")
    i.add_argument("--model", default="resnet50")
    i.add_argument("--batch", type=int, default=256)
    i.add_argument("--steps", type=int, default=20)
    d = sub.add_parser("idx")
    d.add_argument("idx_dir")
    d.add_argument("dir")
    d.add_argument("--train", type=int, default=10000)
    d.add_argument("--val", type=int, default=2000)
    d.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    {"make": cmd_make, "torch": cmd_torch, "infer": cmd_infer, "idx": cmd_idx}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
