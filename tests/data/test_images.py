#!/usr/bin/env python3
"""images: against torchvision, and its bad inputs.

usage: test_images.py DUMP_IMAGES FASHION_DIR [compare|bad|speed|model AMDNN_ONNX EXPORT_TOOL]

compare: a mixed ImageFolder made from Fashion-MNIST (make_image_folder.py:
  JPEGs of 40x50 .. 300x230, qualities 50-95, grey, CMYK, progressive, PNGs)
  is loaded by dump-images (the data layer of amdnn-onnx) and by torchvision's
  ImageFolder with Resize / CenterCrop (PIL images), for several option sets;
  the uint8 pixels before normalisation must be equal (max difference 0
  levels) and the normalised values (ToTensor, Normalize) within 2e-6; with
  --fast-decode the differences are printed, not checked (it changes pixels).
bad: every bad-input case (corrupt, truncated, non-image content, empty class
  folder, unreadable file, decompression bombs, labels files that do not
  match, sizes that differ): one line naming the file, and --skip-bad counts.
speed: images/s of decode + resize 256 + crop 224 on 500x375 JPEGs (printed).
model: a torchvision ResNet-18 exported to ONNX, `eval` against PyTorch on
  the folder (top-1 and loss), and one epoch of `train` (see model()).
Exit 77 (skipped) without PIL, numpy or torchvision.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP = None
failures = 0


def check(cond, what):
    global failures
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures += 1


def run_dump(spec, opts, out):
    p = subprocess.run([DUMP, spec, out] + opts, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def read_dump(path):
    with open(path, "rb") as f:
        b = f.read()
    n_tr, n_te, c, h, w, k, tit, skipped = struct.unpack("<8q", b[:64])
    off = 64
    mean = np.frombuffer(b, np.float32, c, off); off += 4 * c
    std = np.frombuffer(b, np.float32, c, off); off += 4 * c
    splits = []
    for n in (n_tr, n_te):
        u8 = np.frombuffer(b, np.uint8, n * c * h * w, off).reshape(n, c, h, w); off += n * c * h * w
        lab = np.frombuffer(b, np.int64, n, off); off += 8 * n
        x = np.frombuffer(b, np.float32, n * c * h * w, off).reshape(n, c, h, w); off += 4 * n * c * h * w
        splits.append((u8, lab, x))
    return dict(c=c, h=h, w=w, classes=k, test_is_train=tit, skipped=skipped, mean=mean, std=std, splits=splits)


def make(fashion, d, kind, per=10, seed=1):
    subprocess.run([sys.executable, os.path.join(HERE, "make_image_folder.py"), fashion, d, kind, str(per), str(seed)],
                   check=True)


# ---------------------------------------------------------------- compare

def compare(fashion, tmp):
    try:
        import torch
        import torchvision
        from torchvision import transforms as T
    except ImportError as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    d = os.path.join(tmp, "mixed")
    make(fashion, d, "mixed", 12)
    cases = [  # (our options, torchvision transforms before ToTensor, normalisation)
        (["--resize", "256", "--crop", "224", "--normalize", "imagenet"], [T.Resize(256), T.CenterCrop(224)], "imagenet"),
        (["--resize", "64", "--crop", "56", "--normalize", "imagenet"], [T.Resize(64), T.CenterCrop(56)], "imagenet"),
        (["--resize", "33", "--crop", "33", "--normalize", "none"], [T.Resize(33), T.CenterCrop(33)], "none"),
        (["--resize", "57", "--crop", "31x45"], [T.Resize(57), T.CenterCrop((31, 45))], "dataset"),
        (["--resize", "48x80", "--normalize", "0.5,0.4,0.3/0.2,0.25,0.3"], [T.Resize((48, 80))],
         ((0.5, 0.4, 0.3), (0.2, 0.25, 0.3))),
        (["--crop", "100", "--normalize", "imagenet"], [T.CenterCrop(100)], "imagenet"),  # padding and cropping
        (["--resize", "320", "--crop", "299", "--normalize", "imagenet", "--workers", "1"],
         [T.Resize(320), T.CenterCrop(299)], "imagenet"),  # upscaling
    ]
    worst_u8, worst_f = 0, 0.0
    for opts, tfs, norm in cases:
        out = os.path.join(tmp, "dump.bin")
        rc, so, se = run_dump("images:" + d, opts, out)
        check(rc == 0, "load %s: %s%s" % (" ".join(opts), so.splitlines()[0] if so else "", se.strip()))
        if rc:
            continue
        r = read_dump(out)
        if norm == "imagenet":
            mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        elif norm == "none":
            mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
        elif norm == "dataset":
            mean, std = tuple(float(v) for v in r["mean"]), tuple(float(v) for v in r["std"])
        else:
            mean, std = norm
        d_u8, d_f = 0, 0.0
        for si, split in enumerate(["train", "val"]):
            ds_raw = torchvision.datasets.ImageFolder(os.path.join(d, split), transform=T.Compose(tfs))
            ds_norm = torchvision.datasets.ImageFolder(
                os.path.join(d, split), transform=T.Compose(tfs + [T.ToTensor(), T.Normalize(mean, std)]))
            u8, lab, x = r["splits"][si]
            check(len(ds_raw) == len(lab) and list(lab) == [t for _, t in ds_raw.samples],
                  "%s labels and order as ImageFolder (%d images)" % (split, len(lab)))
            for i in range(len(ds_raw)):
                ref = np.asarray(ds_raw[i][0].convert("RGB")).transpose(2, 0, 1).astype(np.int32)
                if ref.shape != u8[i].shape:
                    check(False, "%s shape %s vs torchvision %s" % (ds_raw.samples[i][0], u8[i].shape, ref.shape))
                    continue
                d_u8 = max(d_u8, int(np.abs(ref - u8[i].astype(np.int32)).max()))
                refn = ds_norm[i][0].numpy()
                d_f = max(d_f, float(np.abs(refn - x[i]).max()))
        print("     %s: max |difference| %d levels (uint8), %.3g after normalisation" % (" ".join(opts), d_u8, d_f))
        check(d_u8 == 0, "pixels equal to torchvision's")
        check(d_f <= 2e-6, "normalised values within 2e-6 of torchvision's")
        worst_u8, worst_f = max(worst_u8, d_u8), max(worst_f, d_f)
    print("     all cases: max %d levels, %.3g normalised" % (worst_u8, worst_f))

    # --fast-decode: measured, not required to match
    for opts, tfs in [(["--resize", "64", "--crop", "56"], [T.Resize(64), T.CenterCrop(56)]),
                      (["--resize", "128", "--crop", "112"], [T.Resize(128), T.CenterCrop(112)])]:
        out = os.path.join(tmp, "dump.bin")
        rc, so, se = run_dump("images:" + d, opts + ["--fast-decode", "--normalize", "none"], out)
        check(rc == 0, "load with --fast-decode %s" % " ".join(opts))
        if rc:
            continue
        r = read_dump(out)
        ds_raw = torchvision.datasets.ImageFolder(os.path.join(d, "train"), transform=T.Compose(tfs))
        u8 = r["splits"][0][0]
        diffs = [np.abs(np.asarray(ds_raw[i][0].convert("RGB")).transpose(2, 0, 1).astype(np.int32) - u8[i]) for i in
                 range(len(ds_raw))]
        allv = np.concatenate([q.ravel() for q in diffs])
        print("     --fast-decode %s: max |difference| %d levels, mean %.2f, %.1f%% of values differ by > 2" %
              (" ".join(opts), allv.max(), allv.mean(), 100.0 * (allv > 2).mean()))


# ---------------------------------------------------------------- bad inputs

def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def jpeg_bytes(w=40, h=30, **kw):
    import io
    b = io.BytesIO()
    a = (np.arange(w * h * 3) % 251).astype(np.uint8).reshape(h, w, 3)
    Image.fromarray(a).save(b, "JPEG", **kw)
    return b.getvalue()


def good_tree(d, classes=("a", "b"), per=3):
    for c in classes:
        for i in range(per):
            write(os.path.join(d, c, "%s%d.jpg" % (c, i)), jpeg_bytes(40 + i, 30))


def bad(fashion, tmp):
    n = [0]

    def fresh():
        n[0] += 1
        d = os.path.join(tmp, "bad%d" % n[0])
        good_tree(d)
        return d

    def expect(spec, opts, what, names, skipped=None):
        out = os.path.join(tmp, "dump.bin")
        rc, so, se = run_dump(spec, opts, out)
        lines = [l for l in se.splitlines() if l.startswith("error:")]
        if skipped is None:
            ok = rc == 1 and len(lines) == 1 and all(s in lines[0] for s in names)
            check(ok, "%s: %s" % (what, lines[0] if lines else "rc %d %s" % (rc, se.strip())))
        else:
            r = read_dump(out) if rc == 0 else None
            ok = r is not None and r["skipped"] == skipped and "%d bad files skipped" % skipped in se
            check(ok, "%s with --skip-bad: %s" % (what, (se.strip().splitlines() or ["rc %d" % rc])[-1]))

    base = ["--resize", "32", "--crop", "32"]
    d = fresh()
    j = jpeg_bytes()
    write(os.path.join(d, "a", "a1.jpg"), j[:len(j) * 7 // 10])
    expect("images:" + d, base, "truncated JPEG (in the image data)", ["a1.jpg", "Premature end"])
    expect("images:" + d, base + ["--skip-bad", "--workers", "1"], "truncated JPEG", [], skipped=1)
    d = fresh()
    write(os.path.join(d, "a", "a1.jpg"), j[:300])
    expect("images:" + d, base, "truncated JPEG (in the tables)", ["a1.jpg", "bad JPEG"])
    expect("images:" + d, base + ["--skip-bad", "--workers", "1"], "truncated JPEG, the next file still decodes", [],
           skipped=1)

    d = fresh()
    j = bytearray(jpeg_bytes())
    for i in range(len(j) // 2, len(j) - 2):
        j[i] = 0xFF if i % 7 == 0 else (j[i] * 13 + 5) & 0xFF
    write(os.path.join(d, "b", "b0.jpg"), bytes(j))
    rc, so, se = run_dump("images:" + d, base, os.path.join(tmp, "dump.bin"))
    check(rc in (0, 1) and (rc == 0 or ("b0.jpg" in se and se.count("\n") == 1)),
          "corrupt JPEG data: loads (libjpeg's warning, as PIL) or one line naming the file: %s" % se.strip())

    d = fresh()  # extraneous bytes before EOI: libjpeg warns, PIL loads it, so do we (and the next file too)
    j = jpeg_bytes(40, 30)
    write(os.path.join(d, "a", "a0.jpg"), j[:-2] + b"\x00\x11\x22" + j[-2:])
    out = os.path.join(tmp, "dump.bin")
    rc, so, se = run_dump("images:" + d, base + ["--workers", "1", "--normalize", "none"], out)
    r = read_dump(out) if rc == 0 else None
    # torchvision: Resize(32) of 40x30 is 42x32 (int(32 * 40 / 30)), CenterCrop(32) from x = round(10 / 2) = 5
    ref = np.asarray(Image.open(os.path.join(d, "a", "a0.jpg")).convert("RGB").resize((42, 32), Image.BILINEAR))
    ref = ref[:, 5:37].transpose(2, 0, 1)
    check(r is not None and r["splits"][0][0].shape[0] == 6 and np.array_equal(r["splits"][0][0][0], ref),
          "a JPEG with a libjpeg warning (extraneous bytes) loads as PIL loads it, and so does the next file")

    d = fresh()
    write(os.path.join(d, "a", "a2.jpg"), b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 10)
    expect("images:" + d, base, "JPEG header without a frame", ["a2.jpg"])

    d = fresh()
    write(os.path.join(d, "b", "notes.png"), b"this is text, not an image\n")
    expect("images:" + d, base, "non-image content with an image extension", ["notes.png", "not a JPEG or PNG"])
    expect("images:" + d, base + ["--skip-bad"], "non-image", [], skipped=1)

    d = fresh()
    write(os.path.join(d, "b", "readme.txt"), b"ignored")
    out = os.path.join(tmp, "dump.bin")
    rc, so, se = run_dump("images:" + d, base, out)
    check(rc == 0 and read_dump(out)["splits"][0][0].shape[0] == 6, "other files are ignored")

    d = fresh()
    os.makedirs(os.path.join(d, "c"))
    expect("images:" + d, base, "empty class folder", [os.path.join(d, "c"), "empty class folder"])

    d = fresh()
    os.symlink(os.path.join(d, "nowhere.jpg"), os.path.join(d, "a", "a9.jpg"))
    expect("images:" + d, base, "unreadable file (dangling link)", ["a9.jpg", "cannot open"])
    expect("images:" + d, base + ["--skip-bad"], "unreadable file", [], skipped=1)
    d = fresh()
    os.mkfifo(os.path.join(d, "b", "pipe.jpg"))
    expect("images:" + d, base, "a FIFO named .jpg (must not block)", ["pipe.jpg", "not a regular file"])
    if os.geteuid() != 0:
        d = fresh()
        os.chmod(os.path.join(d, "a", "a0.jpg"), 0)
        expect("images:" + d, base, "unreadable file (mode 000)", ["a0.jpg", "cannot open"])

    # decompression bombs: the header says 65000x65000 (JPEG) / 70000x10 and 20000x20000 (PNG)
    d = fresh()
    j = bytearray(jpeg_bytes())
    i = 2
    while j[i + 1] != 0xC0:
        i += 2 + (j[i + 2] << 8 | j[i + 3])
    j[i + 5:i + 9] = struct.pack(">HH", 65000, 65000)
    write(os.path.join(d, "a", "bomb.jpg"), bytes(j))
    expect("images:" + d, base, "JPEG bomb (65000x65000)", ["bomb.jpg", "refused"])
    expect("images:" + d, base + ["--skip-bad"], "JPEG bomb", [], skipped=1)
    import zlib

    def png_header(w, h):
        ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
        chunk = b"IHDR" + ihdr
        idat = zlib.compress(b"\x00" * 1000)
        return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk)) +
                struct.pack(">I", len(idat)) + b"IDAT" + idat + struct.pack(">I", zlib.crc32(b"IDAT" + idat)))
    d = fresh()
    write(os.path.join(d, "a", "wide.png"), png_header(70000, 10))
    expect("images:" + d, base, "PNG side > 65535", ["wide.png", "refused"])
    d = fresh()
    write(os.path.join(d, "b", "big.png"), png_header(20000, 20000))
    expect("images:" + d, base, "PNG of 4e8 pixels", ["big.png", "refused"])
    d = fresh()  # within the pixel limits, but 62 bytes cannot hold 15000x15000 RGB pixels (deflate: at most ~1032:1)
    write(os.path.join(d, "b", "zbomb.png"), png_header(15000, 15000))
    expect("images:" + d, base, "PNG bomb within the size limits (62 bytes for 675 MB of rows)", ["zbomb.png", "cannot hold"])
    expect("images:" + d, base + ["--skip-bad"], "PNG bomb", [], skipped=1)
    import resource
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    check(rss < 300, "no load so far took more than 300 MB (the largest: %.0f MB)" % rss)

    d = fresh()
    write(os.path.join(d, "b", "short.png"), png_header(64, 64))
    expect("images:" + d, base, "PNG with too little data", ["short.png", "bad PNG"])
    expect("images:" + d, base + ["--skip-bad"], "PNG with too little data", [], skipped=1)

    # sizes
    d = fresh()
    expect("images:" + d, [], "different sizes without --resize/--crop", ["a0.jpg", "a1.jpg", "--resize"])
    d = fresh()
    write(os.path.join(d, "a", "a0.jpg"), jpeg_bytes(60, 30))
    expect("images:" + d, ["--resize", "30"], "different shapes after --resize", ["--crop"])

    # layouts
    d = os.path.join(tmp, "split")
    good_tree(os.path.join(d, "train"))
    good_tree(os.path.join(d, "val"), per=2)
    rc, so, se = run_dump("images:" + d, base, out)
    r = read_dump(out) if rc == 0 else None
    check(r is not None and r["splits"][0][0].shape[0] == 6 and r["splits"][1][0].shape[0] == 4 and
          not r["test_is_train"], "train/ and val/ folders: 6 + 4 images")
    d = fresh()
    rc, so, se = run_dump("images:" + d, base, out)
    r = read_dump(out) if rc == 0 else None
    check(r is not None and r["test_is_train"] and "test = train" in so, "class folders only: one split (%s)" %
          so.splitlines()[0] if so else se)
    d = os.path.join(tmp, "train_only")
    good_tree(os.path.join(d, "train"))
    expect("images:" + d, base, "train/ without val/ or test/", [d, "val"])

    # labels files
    d = os.path.join(tmp, "flat")
    for i in range(5):
        write(os.path.join(d, "v%02d.jpg" % (4 - i)), jpeg_bytes(40, 30 + i))
    write(os.path.join(tmp, "l_ok.txt"), b"3\n1\n4\n1\n5\n")
    rc, so, se = run_dump("images:%s,labels=%s" % (d, os.path.join(tmp, "l_ok.txt")), base, out)
    r = read_dump(out) if rc == 0 else None
    check(r is not None and list(r["splits"][0][1]) == [3, 1, 4, 1, 5] and r["classes"] == 6,
          "labels file: one integer per line, names in order")
    write(os.path.join(tmp, "l_names.txt"), b"v03 n02\nv00.jpg n01\nv01, n02\nv02 n09\n\n# comment\nv04 n01\n")
    rc, so, se = run_dump("images:%s,labels=%s" % (d, os.path.join(tmp, "l_names.txt")), base, out)
    r = read_dump(out) if rc == 0 else None
    check(r is not None and list(r["splits"][0][1]) == [0, 1, 2, 1, 0] and r["classes"] == 3,
          "labels file: NAME WORD lines, classes in name order")
    lf = os.path.join(tmp, "l_short.txt")
    write(lf, b"1\n2\n3\n")
    expect("images:%s,labels=%s" % (d, lf), base, "labels file with too few labels", [lf, "3 labels", "5 images"])
    write(lf, b"1\n2\nx\n4\n5\n")
    expect("images:%s,labels=%s" % (d, lf), base, "labels file with a word among integers", [lf, "line 3"])
    write(lf, b"v00 1\nv01 2\nv02 3\nv03 4\nv04 5\nv05 6\n")
    expect("images:%s,labels=%s" % (d, lf), base, "labels file naming a missing image", [lf, "v05"])
    write(lf, b"v00 1\nv01 2\nv02 3\nv04 5\n")
    expect("images:%s,labels=%s" % (d, lf), base, "an image without a label", [lf, "v03.jpg"])
    write(lf, b"1\n2\n-3\n4\n5\n")
    expect("images:%s,labels=%s" % (d, lf), base, "negative label", [lf, "negative"])
    expect("images:%s,labels=%s" % (d, os.path.join(tmp, "none.txt")), base, "missing labels file", ["none.txt"])


# ---------------------------------------------------------------- a torchvision model

def model(fashion, tmp):
    """ResNet-18 (torchvision, seeded random weights, 4 classes) exported by
    tools/export_torchvision.py: `amdnn-onnx eval` on the mixed folder with
    --resize 256 --crop 224 --normalize imagenet gives PyTorch's top-1 and
    mean loss on the same folder through ImageFolder + the standard eval
    transform; then one epoch of `train` on it (fine-tuning) runs."""
    try:
        import importlib.util
        import re
        import torch
        from torchvision import datasets
        from torchvision import transforms as T
    except ImportError as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    amd, tool = sys.argv[4], sys.argv[5]
    d = os.path.join(tmp, "mixed")
    make(fashion, d, "mixed", 12)
    exp = os.path.join(tmp, "exp")
    p = subprocess.run([sys.executable, tool, "resnet18", "-o", exp, "--num-classes", "4", "--exporter", "torchscript"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "export resnet18 (4 classes): %s" % (p.stdout + p.stderr).strip().splitlines()[-1:])
    if p.returncode:
        return
    spec = importlib.util.spec_from_file_location("export_torchvision", tool)
    etv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(etv)
    torch.manual_seed(0)  # as export_both does before building
    net = etv.build("resnet18", 4, 224, None).eval()
    ds = datasets.ImageFolder(os.path.join(d, "val"), transform=T.Compose(
        [T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
    x = torch.stack([ds[i][0] for i in range(len(ds))])
    y = torch.tensor([t for _, t in ds.samples])
    with torch.no_grad():
        z = net(x)
    t_top1 = 100.0 * float((z.argmax(1) == y).float().mean())
    t_loss = float(torch.nn.functional.cross_entropy(z, y))
    opts = ["--data", "images:" + d, "--resize", "256", "--crop", "224", "--normalize", "imagenet", "--device", "cpu"]
    p = subprocess.run([amd, "eval", os.path.join(exp, "resnet18.onnx")] + opts, capture_output=True, text=True)
    m = re.search(r"^top1 ([0-9.]+)%  top5 [0-9.]+%  loss ([0-9.]+)", p.stdout, re.M)
    print("     PyTorch: top1 %.2f%% loss %.4f; amdnn-onnx eval: %s" % (t_top1, t_loss, m.group(0) if m else p.stderr))
    check(m is not None and abs(float(m.group(1)) - t_top1) < 0.01 and abs(float(m.group(2)) - t_loss) < 2e-4,
          "eval of a torchvision ResNet-18 on the JPEG/PNG folder: PyTorch's top-1 and loss")
    p = subprocess.run([amd, "train", os.path.join(exp, "resnet18_train.onnx")] + opts +
                       ["--epochs", "1", "--batch", "8", "--limit", "16", "--lr", "0.001", "-o", os.path.join(tmp, "tuned.onnx")],
                       capture_output=True, text=True)
    check(p.returncode == 0 and re.search(r"^epoch 1/1 ", p.stdout, re.M) is not None and
          os.path.exists(os.path.join(tmp, "tuned.onnx")),
          "one epoch of train (fine-tuning) of ResNet-18 on the folder: %s" %
          ([l for l in p.stdout.splitlines() if l.startswith("epoch")] or p.stderr.strip()))


# ---------------------------------------------------------------- speed

def speed(fashion, tmp):
    d = os.path.join(tmp, "speed")
    make(fashion, d, "speed", 50)
    nfiles = sum(len(f) for _, _, f in os.walk(d))
    mb = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs) / 1e6
    print("     %d JPEGs of 500x375, %.1f MB" % (nfiles, mb))
    for opts in (["--workers", "1"], ["--workers", "2"], ["--workers", "2", "--fast-decode"]):
        best = 0
        for _ in range(3):
            rc, so, se = run_dump("images:" + d, ["--resize", "256", "--crop", "224"] + opts, "/dev/null")
            if rc == 0:
                best = max(best, float(so.splitlines()[1].split(",")[1].split()[0]))
        print("     decode + resize 256 + crop 224, %s: %.0f images/s" % (" ".join(opts), best))
    try:
        import time
        from torchvision import transforms as T
        from torchvision.datasets import ImageFolder
        ds = ImageFolder(d, transform=T.Compose([T.Resize(256), T.CenterCrop(224)]))
        t0 = time.time()
        for i in range(len(ds)):
            ds[i]
        print("     torchvision ImageFolder + Resize + CenterCrop (PIL, one process): %.0f images/s" %
              (len(ds) / (time.time() - t0)))
    except ImportError:
        pass


def main():
    global DUMP
    DUMP, fashion = sys.argv[1], sys.argv[2]
    what = sys.argv[3] if len(sys.argv) > 3 else "compare"
    if not os.path.exists(os.path.join(fashion, "t10k-images-idx3-ubyte.gz")):
        print("SKIP: no Fashion-MNIST in %s" % fashion)
        sys.exit(77)
    tmp = tempfile.mkdtemp()
    try:
        {"compare": compare, "bad": bad, "speed": speed, "model": model}[what](fashion, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
