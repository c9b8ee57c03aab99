"""What the q8 command-line tests that take AMDNN_ONNX MODELS_DIR FASHION_DIR
share: the arguments (exit 77 without Fashion-MNIST), check(), run() of the
tool, and finish() with the count of failures."""
import os
import subprocess
import sys

_amd = None
_failures = 0


def start():
    """The three arguments; exits 77 (skip) without the data set."""
    global _amd
    amd, models, fashion = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.exists(os.path.join(fashion, "train-images-idx3-ubyte.gz")):
        print("SKIP: no Fashion-MNIST in " + fashion)
        sys.exit(77)
    _amd = amd
    return amd, models, fashion


def check(cond, what):
    global _failures
    print(("ok   " if cond else "FAIL ") + what)
    _failures += 0 if cond else 1


def run(*args):
    """amdnn-onnx ARGS...: (exit code, stdout + stderr)."""
    p = subprocess.run([_amd, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def finish():
    print("all passed" if _failures == 0 else f"{_failures} failed")
    sys.exit(1 if _failures else 0)
