#!/usr/bin/env python3
"""images: against torchvision, and its bad inputs.

usage: test_images.py DUMP_IMAGES FASHION_DIR [compare|bad|rrc|speed|model AMDNN_ONNX EXPORT_TOOL]

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
rrc: --augment rrc (RandomResizedCrop from the training images kept after
  --resize, uncropped): the stored images equal torchvision's Resize(N) (or the
  decoded image without --resize), their centre crops the ordinary load; every
  drawn box lies in its image with an area fraction and aspect ratio that
  round from [SMIN, 1] and [3/4, 4/3]; each augmented sample equals
  torchvision's resized_crop (PIL, bilinear) of the stored image with that box
  (0 levels), then hflip, ToTensor and Normalize (2e-6); the same seed gives
  the same bytes, another seed and the next epoch other boxes; the boxes'
  area fraction and log-ratio means agree with RandomResizedCrop.get_params
  on the same image sizes (within 4 standard errors).
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

    # 16-bit PNGs (written here: PIL writes none in colour): grey, grey+alpha, RGB, RGBA
    d16 = os.path.join(tmp, "png16")
    rng = np.random.default_rng(16)
    for k, (ctype, ch) in enumerate([(0, 1), (4, 2), (2, 3), (6, 4), (0, 1), (2, 3)]):
        h, w = int(rng.integers(20, 60)), int(rng.integers(20, 60))
        hi = 600 if ctype == 0 else 65536  # grey: values on both sides of 255 (PIL clips there)
        png16(os.path.join(d16, "c%d" % (k % 2), "p%d.png" % k), rng.integers(0, hi, (h, w, ch)), ctype)
    out = os.path.join(tmp, "dump16.bin")
    rc, so, se = run_dump("images:" + d16, ["--resize", "24", "--crop", "20", "--normalize", "none"], out)
    check(rc == 0, "load 16-bit PNGs: %s" % se.strip())
    if rc == 0:
        u8 = read_dump(out)["splits"][0][0]
        ds16 = torchvision.datasets.ImageFolder(d16, transform=T.Compose([T.Resize(24), T.CenterCrop(20)]))
        diff = max(int(np.abs(np.asarray(ds16[i][0].convert("RGB")).transpose(2, 0, 1).astype(np.int32) -
                              u8[i].astype(np.int32)).max()) for i in range(len(ds16)))
        check(len(ds16) == len(u8) and diff == 0,
              "16-bit PNGs (grey, grey+alpha, RGB, RGBA): %d images equal to torchvision's (max %d levels)" %
              (len(u8), diff))

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


def png16(path, a, ctype):
    """A 16-bit PNG of the uint16 samples a [h, w, channels], colour type ctype."""
    import zlib
    h, w = a.shape[:2]
    raw = b"".join(b"\x00" + a[y].astype(">u2").tobytes() for y in range(h))

    def chunk(t, data):
        return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data) & 0xffffffff)

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, ctype, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


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

    # decompression bombs: the header says 65000x65000 or 10000x10000 (JPEG) / 70000x10 and 20000x20000 (PNG)
    d = fresh()
    j = bytearray(jpeg_bytes())
    i = 2
    while j[i + 1] != 0xC0:
        i += 2 + (j[i + 2] << 8 | j[i + 3])
    j[i + 5:i + 9] = struct.pack(">HH", 65000, 65000)
    write(os.path.join(d, "a", "bomb.jpg"), bytes(j))
    expect("images:" + d, base, "JPEG bomb (65000x65000)", ["bomb.jpg", "refused"])
    expect("images:" + d, base + ["--skip-bad"], "JPEG bomb", [], skipped=1)
    d = fresh()  # within the pixel limits, but a few hundred bytes cannot hold 10000x10000 (1.56 M 8x8 blocks)
    j[i + 5:i + 9] = struct.pack(">HH", 10000, 10000)
    write(os.path.join(d, "a", "jbomb.jpg"), bytes(j))
    expect("images:" + d, base, "JPEG bomb within the size limits", ["jbomb.jpg", "cannot hold"])
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
    print("     PyTorch: top1 %.2f%% loss %.4f; amdnn-onnx eval: %s" % (t_top1, t_loss, m.group(0) if m else "exit %d: %s" % (p.returncode, p.stderr)))
    check(m is not None and abs(float(m.group(1)) - t_top1) < 0.01 and abs(float(m.group(2)) - t_loss) < 2e-4,
          "eval of a torchvision ResNet-18 on the JPEG/PNG folder: PyTorch's top-1 and loss")
    p = subprocess.run([amd, "train", os.path.join(exp, "resnet18_train.onnx")] + opts +
                       ["--epochs", "1", "--batch", "8", "--limit", "16", "--lr", "0.001", "-o", os.path.join(tmp, "tuned.onnx")],
                       capture_output=True, text=True)
    check(p.returncode == 0 and re.search(r"^epoch 1/1 ", p.stdout, re.M) is not None and
          os.path.exists(os.path.join(tmp, "tuned.onnx")),
          "one epoch of train (fine-tuning) of ResNet-18 on the folder: %s" %
          ([l for l in p.stdout.splitlines() if l.startswith("epoch")] or p.stderr.strip()))


# ---------------------------------------------------------------- RandomResizedCrop

def read_augmented(path):
    """read_dump's fields plus the --augment section (dump_images.c)."""
    r = read_dump(path)
    with open(path, "rb") as f:
        b = f.read()
    c, h, w = r["c"], r["h"], r["w"]
    n_tr, n_te = len(r["splits"][0][1]), len(r["splits"][1][1])
    off = 64 + 8 * c + sum(n * (c * h * w * 5 + 8) for n in (n_tr, n_te))
    ragged, = struct.unpack_from("<q", b, off); off += 8
    stored = []
    if ragged:
        hs = np.frombuffer(b, np.int32, n_tr, off); off += 4 * n_tr
        ws = np.frombuffer(b, np.int32, n_tr, off); off += 4 * n_tr
        for i in range(n_tr):
            k = int(hs[i]) * int(ws[i]) * c
            stored.append(np.frombuffer(b, np.uint8, k, off).reshape(hs[i], ws[i], c)); off += k
    epochs, = struct.unpack_from("<q", b, off); off += 8
    eps = []
    for _ in range(epochs):
        rec = np.frombuffer(b, np.int32, 8 * n_tr, off).reshape(n_tr, 8); off += 32 * n_tr
        pix = None
        if ragged:
            pix = np.frombuffer(b, np.uint8, n_tr * c * h * w, off).reshape(n_tr, h, w, c); off += n_tr * c * h * w
        x = np.frombuffer(b, np.float32, n_tr * c * h * w, off).reshape(n_tr, c, h, w); off += 4 * n_tr * c * h * w
        eps.append((rec, pix, x))
    check(off == len(b), "dump %s read to its end" % os.path.basename(path))
    r.update(ragged=ragged, stored=stored, epochs=eps)
    return r


def box_plausible(bh, bw, ih, iw, smin):
    """A box that torchvision's get_params could return: sides rounded from
    sqrt(area * s * r) and sqrt(area * s / r) with s in [smin, 1] and r in
    [3/4, 4/3] (so s and r lie in the intervals the rounding leaves), or the
    fallback (the whole image clamped to the ratio range, centred)."""
    area = float(ih * iw)
    s_lo, s_hi = (bh - 0.5) * (bw - 0.5) / area, (bh + 0.5) * (bw + 0.5) / area
    r_lo, r_hi = (bw - 0.5) / (bh + 0.5), (bw + 0.5) / (bh - 0.5)
    drawn = 0 < bh <= ih and 0 < bw <= iw and s_hi >= smin and s_lo <= 1.0 and r_hi >= 0.75 and r_lo <= 4.0 / 3.0
    ratio = iw / ih
    fb = (iw, int(round(iw / 0.75))) if ratio < 0.75 else (int(round(ih * 4.0 / 3.0)), ih) if ratio > 4.0 / 3.0 \
        else (iw, ih)
    return drawn or (bw, bh) == fb


def rrc(fashion, tmp):
    try:
        import torch
        from torchvision import transforms as T
        from torchvision.transforms import functional as F
    except ImportError as e:
        print("SKIP: %s" % e)
        sys.exit(77)
    d = os.path.join(tmp, "mixed")
    make(fashion, d, "mixed", 12)
    imagenet = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    cases = [  # (image options, augment list, SMIN, epochs)
        (["--resize", "64", "--crop", "56", "--normalize", "imagenet"], "rrc,flip", 0.08, 2),
        (["--crop", "48", "--normalize", "imagenet", "--workers", "1"], "flip,rrc:0.3", 0.3, 2),  # full size
        (["--resize", "80", "--crop", "40x56", "--normalize", "none"], "rrc", 0.08, 1),  # a non-square output
    ]
    for opts, aug, smin, epochs in cases:
        what = "%s --augment %s" % (" ".join(opts), aug)
        plain, out, out2 = (os.path.join(tmp, f) for f in ("plain.bin", "rrc.bin", "rrc2.bin"))
        rc0, _, se0 = run_dump("images:" + d, opts, plain)
        rc, so, se = run_dump("images:" + d, opts + ["--augment", aug, "--epochs", str(epochs), "--seed", "7"], out)
        check(rc0 == 0 and rc == 0, "load %s: %s%s" % (what, so.splitlines()[0] if so else "", se0 + se))
        if rc0 or rc:
            continue
        p, r = read_dump(plain), read_augmented(out)
        c, h, w = r["c"], r["h"], r["w"]
        check(r["ragged"] == 1 and len(r["stored"]) == len(p["splits"][0][1]), "%s: training images kept uncropped" % what)
        check(all(np.array_equal(a, b) for a, b in zip(p["splits"][0][:2] + p["splits"][1][:2],
                                                       r["splits"][0][:2] + r["splits"][1][:2])),
              "%s: centre crops of the stored images = the ordinary load (train and val, with labels)" % what)
        # the stored images are torchvision's Resize(N) of the files (or the files)
        resize = [int(opts[i + 1]) for i in range(len(opts) - 1) if opts[i] == "--resize"]
        ds = __import__("torchvision").datasets.ImageFolder(os.path.join(d, "train"))
        worst = 0
        for i, (path, _) in enumerate(ds.samples):
            img = Image.open(path).convert("RGB")
            if resize:
                img = T.Resize(resize[0])(img)
            ref = np.asarray(img)
            st = r["stored"][i]
            worst = max(worst, 256 if ref.shape != st.shape else int(np.abs(ref.astype(int) - st).max()))
        check(worst == 0, "%s: stored images = torchvision's %s (max %d levels)" %
              (what, "Resize(%d)" % resize[0] if resize else "decoded file", worst))
        norm = imagenet if "imagenet" in opts else ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
        tf = T.Compose([T.ToTensor(), T.Normalize(*norm)])
        d_u8, d_f, boxes_ok, same, mirrors = 0, 0.0, True, True, 0
        for rec, pix, x in r["epochs"]:
            for i in range(len(rec)):
                by, bx, bh, bw, mirror, dy, dx, s_ok = (int(v) for v in rec[i])
                ih, iw = r["stored"][i].shape[:2]
                ok = by >= 0 and bx >= 0 and by + bh <= ih and bx + bw <= iw and dy == 0 and dx == 0 and \
                    box_plausible(bh, bw, ih, iw, smin)
                if not ok:
                    print("     box (%d, %d, %d, %d) in %dx%d" % (by, bx, bh, bw, ih, iw))
                boxes_ok &= ok
                same &= s_ok == 1
                mirrors += mirror
                ref = F.resized_crop(Image.fromarray(r["stored"][i]), by, bx, bh, bw, [h, w], T.InterpolationMode.BILINEAR)
                d_u8 = max(d_u8, int(np.abs(np.asarray(ref).astype(int) - pix[i]).max()))
                if mirror:
                    ref = F.hflip(ref)
                d_f = max(d_f, float(np.abs(tf(ref).numpy() - x[i]).max()))
        n_all = sum(len(e[0]) for e in r["epochs"])
        print("     %s: %d crops, %d mirrored; max |difference| %d levels, %.3g normalised" %
              (what, n_all, mirrors, d_u8, d_f))
        check(boxes_ok, "%s: every box inside its image, area and ratio from torchvision's ranges" % what)
        check(same, "%s: amd_dataset_batch = plan + fill (values and the stream)" % what)
        check(d_u8 == 0, "%s: crops equal torchvision's resized_crop of the stored image (PIL bilinear)" % what)
        check(d_f <= 2e-6, "%s: after hflip, ToTensor, Normalize within 2e-6 of torchvision's" % what)
        check(("flip" not in aug and mirrors == 0) or 0 < mirrors < n_all, "%s: mirrored about half the time" % what)
        # reproducibility: the same seed the same bytes; another seed, the next epoch: other boxes
        run_dump("images:" + d, opts + ["--augment", aug, "--epochs", str(epochs), "--seed", "7"], out2)
        with open(out, "rb") as f1, open(out2, "rb") as f2:
            check(f1.read() == f2.read(), "%s: the same seed, the same crops (byte for byte)" % what)
        run_dump("images:" + d, opts + ["--augment", aug, "--epochs", str(epochs), "--seed", "8"], out2)
        other = read_augmented(out2)
        check(not np.array_equal(other["epochs"][0][0][:, :4], r["epochs"][0][0][:, :4]), "%s: another seed, other boxes" % what)
        if epochs > 1:
            check(not np.array_equal(r["epochs"][0][0][:, :4], r["epochs"][1][0][:, :4]), "%s: new boxes each epoch" % what)

    # --skip-bad: a JPEG that fails while decoding (pass 2) leaves the others' stored images in place
    bd = os.path.join(tmp, "skip")
    shutil.copytree(d, bd)
    ds = __import__("torchvision").datasets.ImageFolder(os.path.join(bd, "train"))
    jpgs = [i for i, (pth, _) in enumerate(ds.samples) if open(pth, "rb").read(2) == b"\xff\xd8"]
    victim = jpgs[len(jpgs) // 2]
    with open(ds.samples[victim][0], "rb") as f:
        j = f.read()
    with open(ds.samples[victim][0], "wb") as f:
        f.write(j[:len(j) * 7 // 10])
    out = os.path.join(tmp, "skip.bin")
    rc, _, se = run_dump("images:" + bd, ["--resize", "64", "--crop", "56", "--skip-bad", "--augment", "rrc"], out)
    r = read_augmented(out) if rc == 0 else None
    keep = [i for i in range(len(ds.samples)) if i != victim]
    ok = r is not None and r["skipped"] == 1 and len(r["stored"]) == len(keep) and \
        list(r["splits"][0][1]) == [ds.samples[i][1] for i in keep] and \
        all(np.array_equal(np.asarray(T.Resize(64)(Image.open(ds.samples[i][0]).convert("RGB"))), st)
            for i, st in zip(keep, r["stored"]))
    check(ok, "--skip-bad --augment rrc, a JPEG cut short: %d of %d stored images = torchvision's Resize(64), "
              "labels in order" % (len(keep), len(ds.samples)))

    # statistics: many boxes against torchvision's get_params on the same image sizes
    for smin in (0.08, 0.5):
        out = os.path.join(tmp, "stats.bin")
        rc, _, se = run_dump("images:" + d, ["--resize", "64", "--crop", "8", "--augment", "rrc:%g" % smin,
                                            "--epochs", "60", "--seed", "3"], out)
        check(rc == 0, "statistics load: %s" % se.strip())
        if rc:
            continue
        r = read_augmented(out)
        ours, theirs = [], []
        torch.manual_seed(0)
        for rec, _, _ in r["epochs"]:
            for i in range(len(rec)):
                ih, iw = r["stored"][i].shape[:2]
                by, bx, bh, bw = (int(v) for v in rec[i][:4])
                ours.append((bh * bw / (ih * iw), np.log(bw / bh)))
                ty, tx, th, tw = T.RandomResizedCrop.get_params(torch.zeros(1, ih, iw), (smin, 1.0), (0.75, 4.0 / 3.0))
                theirs.append((th * tw / (ih * iw), np.log(tw / th)))
        a, t = np.array(ours), np.array(theirs)
        for k, name in ((0, "area fraction"), (1, "log aspect ratio")):
            se_ = np.sqrt(a[:, k].var() / len(a) + t[:, k].var() / len(t))
            print("     rrc:%g %s: mean %.4f (sd %.4f), torchvision's get_params %.4f (sd %.4f), %d boxes each" %
                  (smin, name, a[:, k].mean(), a[:, k].std(), t[:, k].mean(), t[:, k].std(), len(a)))
            check(abs(a[:, k].mean() - t[:, k].mean()) < 4 * se_, "rrc:%g: mean %s as torchvision's (|d| < 4 se = %.4f)"
                  % (smin, name, 4 * se_))
        check(a[:, 0].min() >= smin * 0.8 and a[:, 0].max() <= 1.0 and np.abs(a[:, 1]).max() <= np.log(4 / 3) + 0.1,
              "rrc:%g: area fractions in [%.3f, %.3f], |log ratio| <= %.3f" %
              (smin, a[:, 0].min(), a[:, 0].max(), np.abs(a[:, 1]).max()))


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
        {"compare": compare, "bad": bad, "speed": speed, "model": model, "rrc": rrc}[what](fashion, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
