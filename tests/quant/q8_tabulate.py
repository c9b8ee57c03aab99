"""The 8-bit table files from the command line: `amdnn-onnx lut` and
tools/tabulate_mul8.py.

usage: python3 q8_tabulate.py AMDNN_ONNX TOOLS_DIR

Checks:
  - bad tables in --mode / lut fail with a message naming the file (missing,
    wrong size, a signed AMDQ8TAB given as q8u);
  - `lut --mode q8u:exact -o F` / `--format bin` write the exact table, and
    `lut --describe` reports 0 differing entries and its SHA-256 (checked
    against hashlib);
  - tools/tabulate_mul8.py on a tiny C multiplier (exact but for one pair)
    writes the expected AMDQ8TAB and .bin bytes, and `lut --describe` counts
    exactly one differing entry with error 1; a signed multiplier (mul8s_);
    a C file that does not compile and a product out of the .bin range fail
    with status 1;
  - the multipliers of tools/mul8/ tabulate, and their tables' errors are the
    documented ones (docs/quantized.md); `lut --describe` finds the
    truncated and broken-array ones bilinear in the code bits (trunc4's
    partial-product weights checked) and DRUM and Mitchell not.
Exit 0 when all hold, 1 otherwise, 77 when no C compiler (cc) is found."""
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

amd, tools = sys.argv[1], sys.argv[2]
fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def exact(signed):
    v = [(a - 256 if signed and a > 127 else a) for a in range(256)]
    return [v[a] * v[b] for a in range(256) for b in range(256)]


def amdq8(vals, signed):
    return b"AMDQ8TAB" + (b"s" if signed else b"u") + b"\x01" + bytes(6) + struct.pack("<65536i", *vals)


with tempfile.TemporaryDirectory() as tmp:
    p = lambda name: os.path.join(tmp, name)
    # ---- errors naming the file
    r = run([amd, "lut", "--mode", "q8u:" + p("missing.bin"), "-o", p("x")])
    check(r.returncode != 0 and "missing.bin" in r.stderr and "cannot open" in r.stderr, f"missing: {r.stderr.strip()}")
    with open(p("short.bin"), "wb") as f:
        f.write(bytes(1000))
    r = run([amd, "lut", "--describe", p("short.bin")])
    check(r.returncode != 0 and "short.bin" in r.stderr and "1000 bytes" in r.stderr, f"size: {r.stderr.strip()}")
    with open(p("s.amdq8"), "wb") as f:
        f.write(amdq8(exact(True), True))
    r = run([amd, "lut", "--mode", "q8u:" + p("s.amdq8"), "-o", p("x")])
    check(r.returncode != 0 and "is signed but the mode is q8u" in r.stderr, f"signedness: {r.stderr.strip()}")
    # ---- lut writes the exact tables
    r = run([amd, "lut", "--mode", "q8u:exact", "-o", p("eu.amdq8")])
    data = open(p("eu.amdq8"), "rb").read() if r.returncode == 0 else b""
    check(data == amdq8(exact(False), False), "lut --mode q8u:exact writes the exact AMDQ8TAB")
    r = run([amd, "lut", "--mode", "q8s:exact", "--format", "bin", "-o", p("es.bin")])
    data = open(p("es.bin"), "rb").read() if r.returncode == 0 else b""
    check(data == struct.pack("<65536h", *exact(True)), "lut --mode q8s:exact --format bin writes int16 LE")
    r = run([amd, "lut", "--describe", p("eu.amdq8")])
    sha = hashlib.sha256(open(p("eu.amdq8"), "rb").read()).hexdigest()
    check(r.returncode == 0 and "differ:    0 of 65536" in r.stdout and sha in r.stdout, "describe exact u8 + sha256")
    r = run([amd, "lut", "--describe", p("es.bin"), "--signed"])
    check(r.returncode == 0 and "differ:    0 of 65536" in r.stdout and "signed int8" in r.stdout,
          "describe exact s8 .bin --signed")

    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        print(f"SKIP: no C compiler ({cc}) for tools/tabulate_mul8.py")
        sys.exit(1 if fails else 77)
    tab = [sys.executable, os.path.join(tools, "tabulate_mul8.py")]
    # ---- a tiny multiplier: exact but 3 x 5 = 16
    with open(p("tiny.c"), "w") as f:
        f.write("#include <stdint.h>\n"
                "uint16_t mul8u_tiny(uint8_t a, uint8_t b) { return a == 3 && b == 5 ? 16 : (uint16_t)(a * b); }\n"
                "int16_t mul8s_plain(int8_t a, int8_t b) { return (int16_t)(a * b); }\n"
                "int mul8u_big(uint8_t a, uint8_t b) { return a * b * 2; }\n")
    want = exact(False)
    want[3 * 256 + 5] = 16
    r = run(tab + [p("tiny.c"), "mul8u_tiny", "-o", p("tiny.amdq8")])
    check(r.returncode == 0 and open(p("tiny.amdq8"), "rb").read() == amdq8(want, False),
          f"tabulate AMDQ8TAB {r.stderr.strip()}")
    r = run(tab + [p("tiny.c"), "mul8u_tiny", "-o", p("tiny.bin")])
    check(r.returncode == 0 and open(p("tiny.bin"), "rb").read() == struct.pack("<65536H", *want), "tabulate .bin")
    r = run([amd, "lut", "--describe", p("tiny.bin")])
    check("differ:    1 of 65536" in r.stdout and "max |e|:   1\n" in r.stdout, "describe counts the one entry")
    r = run(tab + [p("tiny.c"), "mul8s_plain", "-o", p("plain.amdq8")])
    check(r.returncode == 0 and open(p("plain.amdq8"), "rb").read() == amdq8(exact(True), True),
          "tabulate signed (mul8s_ name)")
    r = run(tab + [p("tiny.c"), "mul8u_big", "-o", p("big.bin")])
    check(r.returncode == 1 and "outside" in r.stderr, f"out of .bin range: {r.stderr.strip()}")
    with open(p("broken.c"), "w") as f:
        f.write("int mul8u_broken(unsigned char a, unsigned char b) { return a * ; }\n")
    r = run(tab + [p("broken.c"), "mul8u_broken", "-o", p("broken.bin")])
    check(r.returncode == 1 and "failed" in r.stderr and not os.path.exists(p("broken.bin")), "C error: status 1")
    # ---- tools/mul8: the documented errors (docs/quantized.md)
    doc = {  # name: (max |e|, mean |e|)
        "mul8u_trunc4": (49, 12.25), "mul8u_trunc6": (321, 80.25), "mul8u_bam": (513, 128.25),
        "mul8u_mitchell": (4096, 606.3981), "mul8u_drum4": (7425, 925.8583), "mul8s_trunc6": (321, 80.25)}
    for name, (mx, mean) in doc.items():
        r = run(tab + [os.path.join(tools, "mul8", name + ".c"), name, "-o", p(name + ".amdq8")])
        d = run([amd, "lut", "--describe", p(name + ".amdq8")]).stdout
        check(r.returncode == 0 and f"max |e|:   {mx}\n" in d and f"mean |e|:  {mean:.4f}" in d,
              f"tools/mul8/{name}: max {mx}, mean {mean}")
        # truncated and broken-array multipliers keep or drop whole partial products; DRUM and Mitchell do not
        bilinear = name not in ("mul8u_mitchell", "mul8u_drum4")
        check(("bit form:  bilinear" in d) == bilinear and ("not bilinear" in d) != bilinear,
              f"tools/mul8/{name}: bit form {'bilinear' if bilinear else 'not bilinear'}")
    # trunc4 drops the partial products a_i b_j with i + j < 4: the last row (bit 0 of a) keeps j >= 4
    d = run([amd, "lut", "--describe", p("mul8u_trunc4.amdq8")]).stdout.splitlines()
    rows = [l.split() for l in d[d.index(next(l for l in d if l.startswith("bit form:"))) + 3:]]
    check(len(rows) == 8 and rows[-1] == ["1"] * 4 + ["0"] * 4 and rows[0] == ["1"] * 8,
          f"trunc4's partial-product weights: {rows}")
sys.exit(1 if fails else 0)
