#!/usr/bin/env python3
"""Runs the command blocks of the documentation that are marked runnable, so
that a renamed option or a moved file fails a test instead of a reader.

A block is runnable when its fence's info string is `sh runnable`:

    ```sh runnable
    build/src/amdnn-onnx info models/lenet5.onnx
    ```

(GitHub highlights it as `sh`, by the first word.) Plain ```sh blocks (GPU,
ImageNet, several nodes) are shown, never run.

Every page (README.md, docs/*.md) gets one fresh temporary folder in which
`build`, `models`, `tools` and `tests` are links to the real tree, and its
runnable blocks run there in page order, as a reader going down the page
would run them: a later block may use what an earlier one wrote (a model, an
image folder). Each block is its own `bash -e -o pipefail` process with a
time limit; CUDA_VISIBLE_DEVICES is empty, so everything runs on the CPU. A
failure is reported as FILE:LINE (the line of the fence) with the block's
output; the rest of that page is skipped (it may need what the block
failed to make) and the other pages still run. No runnable block at all is a
failure too, never a silent empty run.

Only the standard library: any python3 runs it (Debian's, a pyenv one).

usage: run_blocks.py SOURCE_ROOT BUILD_ROOT [--timeout S] [--list] [--only TEXT] [PAGE ...]
  PAGE: a path under SOURCE_ROOT (default: README.md and docs/*.md)
  --list: print the runnable blocks and exit; --only TEXT: run the blocks
  whose FILE:LINE contains TEXT (and the earlier blocks of their page)
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MARK = "runnable"
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def blocks_of(path):
    """[(line of the opening fence, info words, text)] of every fenced block."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group(2)[0] == "`" and "`" in m.group(3)):  # a backtick fence's info has no backtick
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        start, body = i + 1, []
        i += 1
        closed = False
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence) and not c.group(3).strip():
                closed = True
                break
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line)
            i += 1
        if not closed:
            raise SystemExit(f"{path}:{start}: a fenced block that is never closed")
        out.append((start, info.split(), "\n".join(body) + "\n"))
        i += 1
    return out


def runnable(path, rel):
    found = []
    for line, words, text in blocks_of(path):
        if MARK not in words:
            continue
        if words[0] not in ("sh", "bash"):
            raise SystemExit(f"{rel}:{line}: a runnable block must be ```sh {MARK} (or bash), not {' '.join(words)}")
        found.append((line, text))
    return found


def run_block(script, cwd, env, timeout):
    """(exit status or None on time-out, output, seconds)."""
    t0 = time.time()
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = None
    return rc, out.decode("utf-8", "replace"), time.time() - t0


def main(argv):
    args, pages, timeout, only, listing = [], [], 300.0, None, False
    it = iter(argv)
    for a in it:
        if a == "--timeout":
            timeout = float(next(it))
        elif a == "--only":
            only = next(it)
        elif a == "--list":
            listing = True
        else:
            args.append(a)
    if len(args) < 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    src, build = os.path.abspath(args[0]), os.path.abspath(args[1])
    pages = args[2:] or ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    exe = os.path.join(build, "src", "amdnn-onnx")
    if not listing and not os.access(exe, os.X_OK):
        print(f"run_blocks: no {exe}: build the project first", file=sys.stderr)
        return 1

    plan = []
    for rel in pages:
        blocks = runnable(os.path.join(src, rel), rel)
        if only is not None:
            last = max((k for k, (line, _) in enumerate(blocks) if only in f"{rel}:{line}"), default=-1)
            blocks = blocks[:last + 1]
        if blocks:
            plan.append((rel, blocks))
    total = sum(len(b) for _, b in plan)
    if total == 0:
        print(f"run_blocks: no ```sh {MARK} block in {', '.join(pages)}: nothing was checked", file=sys.stderr)
        return 1
    if listing:
        for rel, blocks in plan:
            for line, text in blocks:
                first = next((t for t in text.split("\n") if t.strip() and not t.startswith("#")), "")
                print(f"{rel}:{line}: {first}")
        return 0

    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", AMDNN_DOCS_TEST="1")
    passed = failed = skipped = 0
    for rel, blocks in plan:
        work = tempfile.mkdtemp(prefix="amdnn-docs-")
        try:
            for name, target in (("build", build), ("models", os.path.join(src, "models")),
                                 ("tools", os.path.join(src, "tools")), ("tests", os.path.join(src, "tests"))):
                os.symlink(target, os.path.join(work, name))
            for k, (line, text) in enumerate(blocks):
                script = os.path.join(work, ".block.sh")
                # the block's first line is the fence's next line: bash's "line N" is FILE line (fence + N)
                with open(script, "w", encoding="utf-8") as f:
                    f.write(text)
                rc, out, secs = run_block(script, work, env, timeout)
                where = f"{rel}:{line}"
                if rc == 0:
                    passed += 1
                    print(f"ok   {where} ({secs:.1f} s)", flush=True)
                    continue
                failed += 1
                why = f"timed out after {timeout:.0f} s" if rc is None else f"exit status {rc}"
                print(f"FAIL {where} ({why}, {secs:.1f} s); the block (its line 1 is {rel} line {line + 1}):", flush=True)
                print("".join("    | " + t + "\n" for t in text.rstrip("\n").split("\n")), end="")
                print("  its output (last 60 lines):")
                print("".join("    > " + t + "\n" for t in out.rstrip("\n").split("\n")[-60:]), end="", flush=True)
                for later, _ in blocks[k + 1:]:
                    skipped += 1
                    print(f"skip {rel}:{later} (an earlier block of {rel} failed)")
                break
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
