#!/usr/bin/env python3
"""The basic blocks of CUDA kernels' SASS, for counting what a loop spends
per iteration without a GPU (docs/gpu.md, "The shares of 2026-11-29").

Reads the text of `cuobjdump -sass` (of an object file or a binary) and, for
each kernel whose mangled name matches PATTERN, prints one line per basic
block: its address, its instruction count, its commonest opcodes and its last
instruction (so the branches and their targets show), and marks the blocks
that backward branches return to (loop heads, `<- loop from ADDR`).

    cuobjdump -sass build/cuda/libamdnn_cuda.a.p/mode_gemm.cu.o > mg.sass
    tools/sass_blocks.py mg.sass 'mode_kernelILi5ELi2ELi1E'      # mit16, 128 rows, layout 1

cuobjdump is in the CUDA toolkit, or in PyPI's nvidia-cuda-cuobjdump wheel
(nvidia/cu13/bin/cuobjdump), which runs on a machine without a GPU. Which
blocks one iteration passes through (the fast path, the inner loop picked)
is read off the branches by hand: the tool does not guess it.
"""
import collections
import re
import sys

INSN = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
TARGET = re.compile(r"0x([0-9a-f]+)")


def opcode(text):
    """The opcode of an instruction, without its predicate and modifiers."""
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return text.split()[0].split(".")[0]


def blocks_of(body):
    """[(address, [instruction text])] of one function's SASS text."""
    insns = [(int(m.group(1), 16), m.group(2)) for m in map(INSN.match, body.split("\n")) if m]
    if not insns:
        return [], {}
    leaders, back = {insns[0][0]}, collections.defaultdict(list)
    for i, (addr, text) in enumerate(insns):
        op = opcode(text)
        if op in ("BRA", "BRX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC"):
            m = TARGET.search(text)
            if m and op in ("BRA", "BSSY"):
                target = int(m.group(1), 16)
                leaders.add(target)
                if op == "BRA" and target <= addr:
                    back[target].append(addr)
            if i + 1 < len(insns):
                leaders.add(insns[i + 1][0])
    blocks = []
    for addr, text in insns:
        if addr in leaders:
            blocks.append((addr, []))
        blocks[-1][1].append(text)
    return blocks, back


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: sass_blocks.py CUOBJDUMP_SASS.txt PATTERN\n")
        return 2
    text = open(argv[1]).read()
    found = 0
    for part in text.split("Function : ")[1:]:
        name, body = part.split("\n", 1)
        if not re.search(argv[2], name):
            continue
        found += 1
        blocks, back = blocks_of(body)
        total = sum(len(b) for _, b in blocks)
        print("== %s: %d instructions, %d blocks" % (name.strip(), total, len(blocks)))
        for addr, insns in blocks:
            hist = collections.Counter(opcode(t) for t in insns)
            top = " ".join("%s:%d" % kv for kv in hist.most_common(6))
            loop = "  <- loop from " + ", ".join("%05x" % a for a in back[addr]) if addr in back else ""
            print("%05x n=%5d  %-60s | %s%s" % (addr, len(insns), top, insns[-1][:56], loop))
    if not found:
        sys.stderr.write("sass_blocks.py: no function matches %s\n" % argv[2])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
