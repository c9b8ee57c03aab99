#!/usr/bin/env python3
"""Writes a small ImageFolder of JPEGs and PNGs made from Fashion-MNIST, for
the images: tests (test_images.py, test_images_cli.sh) and the decode speed
measurement. Needs PIL and numpy (Debian python3-pil, python3-numpy).

usage: make_image_folder.py FASHION_DIR OUT_DIR KIND [PER_CLASS] [SEED]
KIND:
  mixed   OUT/train/<class>/ and OUT/val/<class>/ for 4 classes: JPEGs of sizes
          40x50 .. 300x230, qualities 50-95, colour (the garment tinted over a
          gradient), grey, CMYK (PIL's, and YCCK through TurboJPEG), progressive, 4:4:4, 4:2:2 and 4:2:0, optimised,
          and PNGs (RGB, grey, 1-bit, palette, 2-bit palette with tRNS, RGBA,
          grey+alpha, grey with tRNS)
  grey    OUT/train/<class>/, OUT/val/<class>/, 10 classes: grey 28x28 PNGs
          (a 1-channel set, e.g. for LeNet-5)
  rgb32   OUT/<class>/ (one split), 10 classes: colour JPEGs of 32..64 pixels
  speed   OUT/<class>/: colour JPEGs of 500x375 (or 375x500), quality 90, with
          texture (noise), about the size of ImageNet's validation images
"""
import gzip
import os
import sys

import numpy as np
from PIL import Image


def load_fashion(d, n):
    with gzip.open(os.path.join(d, "t10k-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(d, "t10k-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return x[:n], y[:n]


def colourise(g, rng, size):
    """A garment (28x28 grey) upscaled to size (w, h), tinted over a gradient."""
    w, h = size
    big = np.asarray(Image.fromarray(g).resize((w, h), Image.BICUBIC)).astype(np.float32) / 255
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    tint = rng.uniform(0.3, 1.0, 3)
    bg = np.stack([xx / w, yy / h, 1 - xx / w], -1) * rng.uniform(0.2, 0.8)
    img = bg * (1 - big[..., None]) + big[..., None] * tint
    return Image.fromarray(np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8), "RGB")


def save_variant(img, path_noext, k, rng):
    """One of the encodings, chosen by k; returns the path written."""
    q = int(rng.integers(50, 96))
    v = k % 15
    if v == 0:
        img.save(path_noext + ".jpg", quality=q)
    elif v == 1:
        img.convert("L").save(path_noext + ".jpg", quality=q)
    elif v == 2:
        img.convert("CMYK").save(path_noext + ".jpg", quality=q)
    elif v == 3:
        img.save(path_noext + ".jpeg", quality=q, progressive=True)
    elif v == 4:
        img.save(path_noext + ".JPG", quality=q, subsampling=0)
    elif v == 5:
        img.save(path_noext + ".png")
    elif v == 6:
        img.convert("L").save(path_noext + ".png")
    elif v == 7:
        img.convert("P", palette=Image.ADAPTIVE, colors=64).save(path_noext + ".png")
    elif v == 8:
        a = img.convert("RGBA")
        a.putalpha(128)
        a.save(path_noext + ".png")
    elif v == 9:
        img.save(path_noext + ".jpg", quality=q, optimize=True, subsampling=1)
    elif v == 10:
        img.convert("1").save(path_noext + ".png")  # 1-bit
    elif v == 11:
        p = img.convert("P", palette=Image.ADAPTIVE, colors=4)
        p.save(path_noext + ".png", bits=2, transparency=1)  # 2-bit palette with tRNS
    elif v == 12:
        img.convert("LA").save(path_noext + ".png")
    elif v == 13:
        g = img.convert("L")
        g.save(path_noext + ".png", transparency=128)  # grey with tRNS
    else:
        data = ycck_jpeg(img, q)  # Adobe YCCK (transform 2), as Photoshop writes CMYK
        if data is None:
            img.convert("CMYK").save(path_noext + ".jpg", quality=q)
        else:
            with open(path_noext + ".jpg", "wb") as f:
                f.write(data)


def ycck_jpeg(img, q):
    """A YCCK JPEG of img's CMYK form through TurboJPEG (ctypes), or None
    without libturbojpeg. PIL writes CMYK JPEGs without the YCCK transform."""
    import ctypes
    try:
        tj = ctypes.CDLL("libturbojpeg.so.0")
    except OSError:
        return None
    tj.tjInitCompress.restype = ctypes.c_void_p
    h = ctypes.c_void_p(tj.tjInitCompress())
    a = np.ascontiguousarray(np.asarray(img.convert("CMYK")))
    buf, size = ctypes.POINTER(ctypes.c_ubyte)(), ctypes.c_ulong(0)
    # TJPF_CMYK = 11, TJSAMP_420 = 2
    rc = tj.tjCompress2(h, a.ctypes.data_as(ctypes.c_void_p), a.shape[1], a.shape[1] * 4, a.shape[0], 11,
                        ctypes.byref(buf), ctypes.byref(size), 2, q, 0)
    data = ctypes.string_at(buf, size.value) if rc == 0 else None
    tj.tjFree(buf)
    tj.tjDestroy(h)
    return data


SIZES = [(40, 50), (50, 40), (64, 64), (97, 61), (120, 160), (160, 120), (201, 133), (256, 256), (300, 230),
         (230, 300), (255, 257), (224, 224)]


def main():
    fashion, out, kind = sys.argv[1:4]
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rng = np.random.default_rng(seed)
    x, y = load_fashion(fashion, 10000)
    names = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]
    if kind == "mixed":
        classes, splits = [0, 1, 7, 9], ["train", "val"]
    elif kind == "grey":
        classes, splits = list(range(10)), ["train", "val"]
    else:
        classes, splits = list(range(10)), [""]
    k = 0
    for si, split in enumerate(splits):
        for c in classes:
            d = os.path.join(out, split, names[c]) if split else os.path.join(out, names[c])
            os.makedirs(d, exist_ok=True)
            idx = np.nonzero(y == c)[0]
            take = idx[si * per:(si + 1) * per] if len(splits) == 2 else idx[:per]
            for j, i in enumerate(take):
                base = os.path.join(d, "img%05d" % i)
                if kind == "mixed":
                    size = SIZES[int(rng.integers(len(SIZES)))]
                    save_variant(colourise(x[i], rng, size), base, k, rng)
                elif kind == "grey":
                    Image.fromarray(x[i], "L").save(base + ".png")
                elif kind == "rgb32":
                    s = int(rng.integers(32, 65))
                    colourise(x[i], rng, (s, s + int(rng.integers(0, 9)))).save(base + ".jpg", quality=90)
                else:  # speed
                    size = (500, 375) if j % 4 else (375, 500)
                    a = np.asarray(colourise(x[i], rng, size)).astype(np.float32)
                    a += rng.normal(0, 12, a.shape)
                    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(base + ".jpg", quality=90)
                k += 1


if __name__ == "__main__":
    main()
