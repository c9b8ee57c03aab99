#!/usr/bin/env python3
"""Writes random images in CIFAR-10's binary format (data_batch_1..5.bin,
test_batch.bin: a label byte, then 3072 pixel bytes, per image), labels
0..9 in turn, for speed runs where the pixels do not matter.

usage: random_cifar10.py OUT_DIR [IMAGES_PER_FILE (default 10000, CIFAR-10's)]"""
import os
import sys

import numpy as np


def main() -> int:
    wants_help = sys.argv[1:2] in (["-h"], ["--help"])
    if wants_help or len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stdout if wants_help else sys.stderr)
        return 0 if wants_help else 2
    out = sys.argv[1]
    try:
        n = int(sys.argv[2]) if len(sys.argv) == 3 else 10000
    except ValueError:
        sys.exit(f"random_cifar10.py: IMAGES_PER_FILE '{sys.argv[2]}' is not a whole number")
    if n < 1:
        sys.exit(f"random_cifar10.py: IMAGES_PER_FILE must be at least 1, not {n}")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        rec = np.empty((n, 3073), np.uint8)
        rec[:, 0] = np.arange(n) % 10
        rec[:, 1:] = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        rec.tofile(os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
