"""amdnn.Model against the command-line tool: run, grad, evaluate with a limit,
a sweep, a short training run saved and evaluated, bit for bit (both make the
same library calls); numpy data sets; the errors as exceptions; callbacks
that stop a run; the generated docstrings."""
import re

import numpy as np
import pytest

import amdnn
from conftest import MODELS, run_cli, same_bits

LENET = MODELS / "lenet5.onnx"
LENET_TRAIN = MODELS / "lenet5_train.onnx"


def _cli_eval_numbers(out: str):
    """(top1 text, top5 text, loss text, confusion matrix) from `amdnn-onnx eval`'s output."""
    m = re.search(r"top1 ([\d.]+)%  top5 ([\d.]+)%  loss ([\d.]+)", out)
    lines = out.split("confusion matrix")[1].splitlines()[2:]  # past the title and the column numbers
    conf = np.array([[int(v) for v in line.split()[1:]] for line in lines if line.strip()])
    return m.group(1), m.group(2), m.group(3), conf


def _same_as_cli(r: amdnn.EvalResult, out: str):
    top1, top5, loss, conf = _cli_eval_numbers(out)
    assert f"{100 * r.top1:.2f}" == top1 and f"{100 * r.top5:.2f}" == top5 and f"{r.loss:.4f}" == loss
    assert np.array_equal(r.confusion, conf)


@pytest.mark.cli
@pytest.mark.parametrize("mode", ["acc32", "am16"])
def test_run_equals_cli(tmp_path, mode):
    run_cli("run", LENET, "--input", MODELS / "lenet5.input.pb", "--output-dir", tmp_path, "--mode", mode,
            "--device", "cpu")
    m = amdnn.Model(LENET, mode=mode, device="cpu")
    out = m.run(amdnn.read_tensor(MODELS / "lenet5.input.pb"))
    assert list(out) == ["logits"]
    assert same_bits(out["logits"], amdnn.read_tensor(tmp_path / "logits.pb"))
    assert same_bits(m(input=amdnn.read_tensor(MODELS / "lenet5.input.pb")), out["logits"])


@pytest.mark.cli
def test_grad_equals_cli(tmp_path):
    x = amdnn.read_tensor(MODELS / "lenet5.input.pb")
    y = np.array([3, 1, 4, 1], dtype=np.int64)
    amdnn.write_tensor(tmp_path / "y.pb", y, "labels")
    run_cli("grad", LENET_TRAIN, "--input", MODELS / "lenet5.input.pb", "--labels", tmp_path / "y.pb",
            "--output-dir", tmp_path / "g", "--mode", "am16", "--backward-mode", "mit16", "--label-smoothing", "0.1",
            "--device", "cpu")
    m = amdnn.Model(LENET_TRAIN, mode="am16", backward_mode="mit16", device="cpu")
    loss, grads = m.grad(x, y.astype(np.int32), label_smoothing=0.1)
    assert np.float32(loss) == amdnn.read_tensor(tmp_path / "g" / "loss.pb")
    assert len(grads) == 10
    for name, g in grads.items():
        cli = amdnn.read_tensor(tmp_path / "g" / (re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".pb"))
        assert same_bits(g, cli), name


def test_grad_warns_of_folded_batchnorm():
    """The training set-up's warning of grad (a model exported in eval mode:
    BatchNormalization folded into its Conv nodes) is a RuntimeWarning, or
    goes to on_message; a training export has none."""
    x = np.linspace(-0.5, 0.5, 2 * 3 * 32 * 32, dtype=np.float32).reshape(2, 3, 32, 32)
    y = np.array([3, 7], dtype=np.int64)
    with pytest.warns(RuntimeWarning, match="exported in eval mode"):
        amdnn.Model(MODELS / "resnet8.onnx", device="cpu").grad(x, y)
    heard = []
    amdnn.Model(MODELS / "resnet8.onnx", device="cpu").grad(x, y, on_message=lambda k, t: heard.append((k, t)))
    assert [k for k, _ in heard] == ["warning"] and "BatchNormalization was folded" in heard[0][1]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        amdnn.Model(MODELS / "resnet8_train.onnx", device="cpu").grad(x, y)


@pytest.mark.cli
def test_evaluate_equals_cli(idx_data):
    out = run_cli("eval", LENET, "--data", idx_data, "--mode", "mbm12", "--limit", "700", "--batch", "64",
                  "--device", "cpu").stdout
    m = amdnn.Model(LENET, mode="mbm12", device="cpu")
    r = m.evaluate(idx_data, limit=700, batch=64)
    assert r.n == 700 and r.confusion.shape == (10, 10) and r.confusion.sum() == 700
    _same_as_cli(r, out)
    assert "mnist" in r.data_note


@pytest.mark.cli
def test_evaluate_numpy_data_equals_cli_tensors(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 50)
    amdnn.write_tensor(tmp_path / "x.pb", x, "x")
    amdnn.write_tensor(tmp_path / "y.pb", y.astype(np.int64), "y")
    out = run_cli("eval", LENET, "--data", f"tensors:{tmp_path / 'x.pb'},{tmp_path / 'y.pb'}", "--mode", "am16",
                  "--device", "cpu").stdout
    r = amdnn.Model(LENET, mode="am16", device="cpu").evaluate((x, y))
    assert r.n == 50
    _same_as_cli(r, out)


@pytest.mark.cli
def test_sweep_equals_cli(tmp_path, idx_data):
    run_cli("sweep", LENET, "--data", idx_data, "--mode", "mbm12", "--limit", "200", "--tsv", tmp_path / "cli.tsv",
            "--device", "cpu")
    seen = []
    rows = amdnn.Model(LENET, mode="mbm12", device="cpu").sweep(idx_data, limit=200, tsv=tmp_path / "py.tsv",
                                                                 on_row=seen.append)
    assert (tmp_path / "py.tsv").read_text() == (tmp_path / "cli.tsv").read_text()
    assert [r.node for r in rows][0] == "(baseline)" and rows[-1].node == "(all)" and len(rows) == 7
    assert len(seen) == 7
    tsv = (tmp_path / "cli.tsv").read_text().splitlines()[2:]
    for r, line in zip(rows, tsv):
        f = line.split("\t")
        assert f[0] == r.node and f[3] == f"{r.top1:.6f}" and f[5] == f"{r.loss:.6f}"


@pytest.mark.cli
def test_train_save_evaluate_equals_cli(tmp_path, idx_data):
    """A short run (2 epochs of 600 samples) from the command line and from
    Python: the same saved model, byte for byte, the same metrics (but the
    times), and the saved model evaluates to the CLI's numbers."""
    args = dict(limit=600, epochs=2, batch=50, lr=0.05, momentum=0.9, wd=5e-4, schedule="cosine", seed=7)
    run_cli("train", LENET_TRAIN, "--data", idx_data, "--mode", "am16", "--device", "cpu", "--metrics",
            tmp_path / "cli.tsv", "-o", tmp_path / "cli.onnx",
            *[a for k, v in args.items() for a in (f"--{k}", v)])
    epochs = []
    m = amdnn.Model(LENET_TRAIN, mode="am16", device="cpu")
    res = m.train(idx_data, metrics=tmp_path / "py.tsv", output=tmp_path / "py.onnx", on_epoch=epochs.append,
                  verbose=False, **args)
    assert len(res.epochs) == 2 and epochs == res.epochs and res.last.epoch == 1
    assert (tmp_path / "py.onnx").read_bytes() == (tmp_path / "cli.onnx").read_bytes()
    drop_time = [lambda line: [f for i, f in enumerate(line.split("\t")) if i not in (1, 7)]]
    cli_rows = [drop_time[0](line) for line in (tmp_path / "cli.tsv").read_text().splitlines()]
    py_rows = [drop_time[0](line) for line in (tmp_path / "py.tsv").read_text().splitlines()]
    assert cli_rows == py_rows and len(py_rows) == 3
    assert py_rows[2][1] == f"{res.last.train_loss:.6f}" and py_rows[2][4] == f"{res.last.test_acc:.6f}"
    # the saved model (a fresh Model: a session that trained is not evaluated again here)
    out = run_cli("eval", tmp_path / "cli.onnx", "--data", idx_data, "--limit", "500", "--mode", "am16",
                  "--device", "cpu").stdout
    _same_as_cli(amdnn.Model(tmp_path / "py.onnx", mode="am16", device="cpu").evaluate(idx_data, limit=500), out)
    # and the Model that trained saves the same weights again
    m.save(tmp_path / "again.onnx")
    assert (tmp_path / "again.onnx").read_bytes() == (tmp_path / "py.onnx").read_bytes()


def test_info_inputs_nodes():
    m = amdnn.Model(LENET, mode="am16", mode_map={"/fc3/Gemm": "acc32"}, device="cpu")
    assert m.info.n_gemm_nodes == 5 and m.info.macs == 416520
    assert m.inputs[0].name == "input" and m.inputs[0].shape == ("batch", 1, 28, 28)
    assert m.inputs[0].dtype == np.float32 and m.outputs[0].name == "logits"
    modes = {n.name: n.forward_mode for n in m.nodes if n.on_multiplier}
    assert modes["/conv1/Conv"] == "am16" and modes["/fc3/Gemm"] == "acc32"
    assert m.device == "cpu"
    m.close()
    with pytest.raises(amdnn.ArgumentError, match="closed"):
        m.info


def test_errors_are_exceptions(tmp_path):
    with pytest.raises(amdnn.ArgumentError, match="am17") as e:
        amdnn.Model(LENET, mode="am17")
    assert isinstance(e.value, ValueError) and "valid:" in str(e.value)
    with pytest.raises(amdnn.OptionError, match="unknown option 'frobnicate'") as e:
        amdnn.Model(LENET, frobnicate=1)
    assert isinstance(e.value, TypeError)
    with pytest.raises(TypeError, match="takes no option 'epochs'"):
        amdnn.Model(LENET, epochs=3)
    with pytest.raises(amdnn.ArgumentError, match="--epochs"):
        amdnn.Model(LENET_TRAIN).train("mnist:/x", epochs=0)
    with pytest.raises(amdnn.ArgumentError, match="device"):
        amdnn.Model(LENET, device="tpu")
    with pytest.raises(amdnn.FailedError, match="cannot open"):
        amdnn.Model(tmp_path / "missing.onnx")
    m = amdnn.Model(LENET, device="cpu")
    x = amdnn.read_tensor(MODELS / "lenet5.input.pb")
    with pytest.raises(amdnn.ArgumentError, match="dtype float64"):
        m.run(x.astype(np.float64))
    with pytest.raises(ValueError, match="shape"):
        m.run(x[:, :, :5])
    with pytest.raises(amdnn.ArgumentError, match="no input named 'nope'"):
        m.run(nope=x)
    with pytest.raises(amdnn.ArgumentError, match="labels"):
        amdnn.Model(LENET_TRAIN, device="cpu").grad(x, np.zeros(3, np.int64))
    with pytest.raises(amdnn.FailedError, match="nonexistent"):
        m.evaluate("mnist:/nonexistent/folder")
    with pytest.raises(amdnn.ArgumentError, match="mnist:DIR"):
        m.evaluate("svhn:/x")


def test_a_callback_stops_training(idx_data):
    m = amdnn.Model(LENET_TRAIN, device="cpu")
    seen = []
    with pytest.raises(amdnn.StoppedError, match="stopped"):
        m.train(idx_data, limit=500, epochs=1, batch=50, on_progress=lambda p: seen.append(p) or len(seen) >= 2,
                verbose=False)
    assert len(seen) == 2 and seen[0].stage == "train" and seen[1].done == 2


def test_keyboard_interrupt_in_training_is_raised_not_a_crash(idx_data):
    def interrupt(p):
        if p.done == 3:
            raise KeyboardInterrupt
    m = amdnn.Model(LENET_TRAIN, device="cpu")
    with pytest.raises(KeyboardInterrupt):
        m.train(idx_data, limit=500, epochs=1, batch=50, on_progress=interrupt, verbose=False)
    # the process goes on, and so does the library
    assert amdnn.Model(LENET, device="cpu").info.n_nodes > 0


def test_divergence_is_an_exception(idx_data):
    with pytest.raises(amdnn.DivergedError):
        amdnn.Model(LENET_TRAIN, device="cpu").train(idx_data, limit=300, epochs=1, batch=50, lr=1e30,
                                                      verbose=False)


def test_train_on_numpy_arrays_and_messages():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    lines = []
    m = amdnn.Model(LENET_TRAIN, mode="acc16", device="cpu")
    res = m.train((x, y, x[:32], y[:32]), epochs=2, batch=16, on_message=lambda kind, text: lines.append((kind, text)),
                  verbose=False)
    assert len(res.epochs) == 2 and all(np.isfinite(e.train_loss) for e in res.epochs)
    assert ("info", "training 2 epochs, batch 16, sgd lr 0.01 (constant), mode acc16, 64 training samples") in lines
    assert not any("trained.onnx" in text for _, text in lines)  # the scratch file is not announced
    assert str(res.last).startswith("epoch 2/2  train loss ")


def test_bench():
    r = amdnn.Model(LENET_TRAIN, mode="am16", device="cpu").bench(batch=8, steps=2, warmup_steps=1)
    assert r.batch == 8 and r.steps == 2 and r.images_per_s > 0 and not r.inference


def test_docstrings_come_from_the_option_table():
    for fn, opt in ((amdnn.Model, "mode_map"), (amdnn.Model.train, "label_smoothing"),
                    (amdnn.Model.evaluate, "limit"), (amdnn.Model.sweep, "tsv"), (amdnn.Model.bench, "warmup_steps")):
        assert opt in fn.__doc__, (fn, opt)
    table = {o.name: o for o in amdnn.option_table()}
    assert " ".join(table["epochs"].help.split()) in " ".join(amdnn.Model.train.__doc__.split())
    assert "epochs" not in amdnn.Model.evaluate.__doc__


def test_ctrl_c_during_training(idx_data):
    """A real SIGINT while the library trains: Python's KeyboardInterrupt at
    the next step, the process alive (no crash, no exit inside the library)."""
    import os
    import signal
    import subprocess
    import sys
    # (a child of a shell's background job starts with SIGINT ignored: Python's own handler, as in a terminal)
    code = f"""
import signal, sys, amdnn
signal.signal(signal.SIGINT, signal.default_int_handler)
first = []
def progress(p):
    if not first:
        first.append(1)
        print("started", flush=True)
try:
    amdnn.Model({str(LENET_TRAIN)!r}, device="cpu").train({idx_data!r}, epochs=50, batch=32, verbose=False,
                                                          on_progress=progress)
    print("finished")
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""
    import amdnn
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(amdnn.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg_parent] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "started"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and out.strip() == "interrupted", (p.returncode, out, err[-2000:])
