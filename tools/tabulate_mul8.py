#!/usr/bin/env python3
"""Tabulates an 8-bit multiplier written in C into a table for the q8 modes.

usage: tabulate_mul8.py FILE.c FUNCTION -o OUT [--signed | --unsigned] [--format amdq8|bin] [--cc CC]

FILE.c defines FUNCTION in the EvoApproxLib style,
    uint16_t mul8u_NAME(uint8_t a, uint8_t b)     (unsigned operands)
    int16_t  mul8s_NAME(int8_t a, int8_t b)       (signed operands)
(any integer return type works). The script compiles FILE.c together with a
small driver with the system C compiler (cc, or --cc / $CC), runs it for the
65536 operand pairs and writes OUT:
  amdq8 (default; --format or an OUT not ending in .bin): our format, a 16-byte
        header ("AMDQ8TAB", 'u' or 's', version 1, six zero bytes) and 65536
        little-endian int32, entry [a * 256 + b] = FUNCTION(a, b) with a and b
        the raw code bytes (read as int8 for a signed multiplier);
  bin   (OUT ending in .bin, or --format bin): TFApprox's 65536 little-endian
        uint16 / int16 entries in the same order.
Signedness: --signed / --unsigned, or from the name (mul8s_ / mul8u_).
Load the table with --mode q8u:OUT or q8s:OUT; `amdnn-onnx lut --describe OUT`
prints its error against the exact products. See docs/quantized.md.

Exit status: 0 written, 1 compile / run / range error, 2 usage."""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include "%(src)s"
int main(void) {
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      long long v = (long long)%(fn)s((%(t)s)a, (%(t)s)b);
      printf("%%lld\n", v);
    }
  return 0;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("function")
    ap.add_argument("-o", "--output", required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--signed", action="store_true")
    g.add_argument("--unsigned", action="store_true")
    ap.add_argument("--format", choices=["amdq8", "bin"])
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()

    if args.signed or args.unsigned:
        signed = args.signed
    elif args.function.startswith("mul8s"):
        signed = True
    elif args.function.startswith("mul8u"):
        signed = False
    else:
        print("tabulate_mul8: say --signed or --unsigned (the name does not start with mul8s_ / mul8u_)",
              file=sys.stderr)
        return 2
    fmt = args.format or ("bin" if args.output.endswith(".bin") else "amdq8")
    src = os.path.abspath(args.source)
    if not os.path.isfile(src):
        print(f"tabulate_mul8: no such file: {args.source}", file=sys.stderr)
        return 2
    if not args.function.isidentifier():
        print(f"tabulate_mul8: '{args.function}' is not a C identifier", file=sys.stderr)
        return 2
    if shutil.which(args.cc) is None:
        print(f"tabulate_mul8: C compiler '{args.cc}' not found", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        drv = os.path.join(tmp, "driver.c")
        exe = os.path.join(tmp, "tabulate")
        with open(drv, "w") as f:
            f.write(DRIVER % {"src": src.replace("\\", "\\\\").replace('"', '\\"'), "fn": args.function,
                              "t": "int8_t" if signed else "uint8_t"})
        r = subprocess.run([args.cc, "-O1", "-std=c11", "-o", exe, drv], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"tabulate_mul8: compiling {args.source} failed:\n{r.stderr}", file=sys.stderr)
            return 1
        r = subprocess.run([exe], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"tabulate_mul8: the tabulating program failed (status {r.returncode})", file=sys.stderr)
            return 1
    vals = [int(v) for v in r.stdout.split()]
    if len(vals) != 65536:
        print(f"tabulate_mul8: expected 65536 products, got {len(vals)}", file=sys.stderr)
        return 1

    if fmt == "bin":
        lo, hi = (-32768, 32767) if signed else (0, 65535)
        code = "<65536h" if signed else "<65536H"
    else:
        lo, hi = -(1 << 17), 1 << 17
        code = "<65536i"
    bad = [(i, v) for i, v in enumerate(vals) if v < lo or v > hi]
    if bad:
        i, v = bad[0]
        print(f"tabulate_mul8: {args.function}({i // 256}, {i % 256}) = {v} is outside [{lo}, {hi}] "
              f"({len(bad)} such entries)", file=sys.stderr)
        return 1
    data = struct.pack(code, *vals)
    if fmt == "amdq8":
        data = b"AMDQ8TAB" + (b"s" if signed else b"u") + b"\x01" + bytes(6) + data
    tmp_out = args.output + ".tmp"
    with open(tmp_out, "wb") as f:
        f.write(data)
    os.replace(tmp_out, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
