"""What the python tests of this folder share: the amdnn-onnx command, a
check that prints and counts, and reading and writing TensorProto files. Importing it
exits 77 (skip) when numpy or onnx is missing from the python3 on PATH."""
import subprocess
import sys

try:
    import numpy  # noqa: F401  (the tests use it; checked here for the skip)
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

fails = 0


def check(cond, what):
    """Prints ok / FAIL and what; counts the failures."""
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1


def amdnn(binary, *args):
    """Runs amdnn-onnx; its stdout, or exits 1 with its stderr when it fails."""
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode:
        print(f"FAIL amdnn-onnx {' '.join(args)}: {r.stderr.strip()}")
        sys.exit(1)
    return r.stdout


def tensor(path):
    """The array of a TensorProto file (what `run` and `grad` write)."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def write_tensor(path, array, name):
    """Writes array as a TensorProto file named name (what `run --input` and `grad --labels` read)."""
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def finish():
    print(f"{fails} failed")
    sys.exit(1 if fails else 0)
