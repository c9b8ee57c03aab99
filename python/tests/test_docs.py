"""The Python examples of the documentation run: every block fenced
```python example in docs/python.md and README.md, page by page in a fresh
folder where models, tools, tests and build link to the tree, in page order
in one namespace (a later block may use what an earlier one made), as a
reader would run them. (The shell blocks marked runnable are the docs test's,
tests/docs/run_blocks.py; it leaves these alone.) And the example training
script runs a few steps."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

FENCE = re.compile(r"^```python example\s*$")


def python_blocks(page):
    """[(line, code)] of the page's ```python example blocks."""
    lines = (REPO / page).read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((start, "\n".join(body) + "\n"))
        i += 1
    return out


@pytest.mark.parametrize("page", ["docs/python.md", "README.md"])
def test_python_examples_run(page, tmp_path, monkeypatch):
    blocks = python_blocks(page)
    assert blocks, f"{page} has no ```python example block"
    for name in ("models", "tools", "tests", "build"):
        if (REPO / name).exists():
            os.symlink(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc_example__"}
    for line, code in blocks:
        if "torch" in code and not _have("torch"):
            pytest.skip(f"{page}:{line} needs PyTorch")
        if "tabulate_c" in code and not _have_cc():
            pytest.skip(f"{page}:{line} needs a C compiler")
        for path in re.findall(r"/usr/share/[\w./-]+", code):  # Debian's data packages (tools/setup.sh)
            if not os.path.exists(path):
                pytest.skip(f"{page}:{line} reads {path}, which this machine does not have")
        try:
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{page}:{line}: the example fails: {type(e).__name__}: {e}") from e


def _have(mod):
    import importlib.util
    return importlib.util.find_spec(mod) is not None


def _have_cc():
    import shutil
    return shutil.which(os.environ.get("CC", "cc")) is not None


@pytest.mark.torch
def test_the_example_training_script_runs(tmp_path):
    pytest.importorskip("torch")
    import amdnn
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(amdnn.__file__)))  # the amdnn this test imports
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg_parent] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    r = subprocess.run([sys.executable, str(REPO / "examples" / "pytorch_cifar_am16.py"), "--fake", "--epochs", "1",
                        "--limit", "40", "--batch", "20", "--device", "cpu", "--save", str(tmp_path / "m.pt")],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"epoch 1/1  train loss [\d.]+  test top1 [\d.]+%", r.stdout), r.stdout
    import torch
    keys = list(torch.load(tmp_path / "m.pt"))
    assert "0.weight" in keys and "13.weight" in keys  # a plain resnet18's keys: loads without amdnn
