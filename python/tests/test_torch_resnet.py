"""A small ResNet (ResNet-8, CIFAR form, from tools/export_models.py) trained
by PyTorch under amdnn.torch, against `amdnn-onnx grad` and `amdnn-onnx
train` on its ONNX export, on the CPU.

What can be equal, and the bounds where it cannot:
- With BatchNormalization folded into the convolutions (Conv with bias,
  Relu, Add, GlobalAveragePool, Gemm: every operation the library and
  PyTorch compute with the same fp32 operations in the same order), the
  logits are the CLI's bit for bit, and so is the gradient of every weight
  whose output gradient is one path's (all but the stem convolution, where
  the residual branches' gradients are summed in another order). The rest
  (the stem's weight gradient, the biases: fp32 sums in another order) is
  within 1e-5 of the largest value.
- With BatchNormalization in training mode, PyTorch's normalisation differs
  from the library's in the last bit of some activations. acc32 keeps that
  difference at fp32 rounding (the gradients agree within 1e-5 relative).
  Under am16 a last-bit difference can move an operand's 7-bit truncation
  (about 1 operand in 65536), which changes that product by up to 2^-7 of
  itself; the network amplifies this (the library's own am16 gradient moves
  by a few percent when the input moves by one ulp). The bound for am16 is
  therefore the library's own sensitivity: PyTorch's gradient (and its
  weights after three SGD steps) may differ from the CLI's by at most 3 times
  what the CLI's differ between the batch and the batch moved by one ulp, and
  must be much closer to the CLI's am16 result than to its acc32 result.
"""
import copy
import re
import warnings

import numpy as np
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.cli]
torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
import torch.nn.functional as F  # noqa: E402

import amdnn  # noqa: E402
import amdnn.torch as at  # noqa: E402
from conftest import fold_bn, run_cli, same_bits, warmed_model_and_batch  # noqa: E402

SGD = dict(lr=0.05, momentum=0.9, weight_decay=5e-4)


def _file(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".pb"


@pytest.fixture(scope="module")
def resnet8():
    """ResNet-8 with warmed-up BatchNormalization, a batch of 16 and its labels."""
    return warmed_model_and_batch("resnet8", 16)


def _export(em, model, x, path, training):
    sd = copy.deepcopy(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em.export(model, x, str(path), training=training)
    model.load_state_dict(sd)  # (a training export runs one forward that moves the running statistics)


def _grads(model, x, y, mode):
    m = at.approximate(copy.deepcopy(model), mode=mode)
    m.train()
    m.zero_grad()
    out = m(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    return out.detach(), loss.item(), {k: p.grad.numpy().copy() for k, p in m.named_parameters()}


def _cli_grads(tmp, onnx_path, x, y, mode, tag):
    amdnn.write_tensor(tmp / f"x_{tag}.pb", x, "input")
    amdnn.write_tensor(tmp / f"y_{tag}.pb", y.numpy().astype(np.int64), "labels")
    out = tmp / f"g_{tag}"
    run_cli("grad", onnx_path, "--input", tmp / f"x_{tag}.pb", "--labels", tmp / f"y_{tag}.pb", "--output-dir",
            out, "--mode", mode, "--device", "cpu")
    return out


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_folded_resnet_is_the_clis_bits(tmp_path, resnet8):
    em, model, x, y = resnet8
    folded = fold_bn(model)
    _export(em, folded, x, tmp_path / "r8_fold.onnx", training=False)
    amdnn.write_tensor(tmp_path / "x.pb", x.numpy(), "input")
    run_cli("run", tmp_path / "r8_fold.onnx", "--input", tmp_path / "x.pb", "--output-dir", tmp_path / "run",
            "--mode", "am16", "--device", "cpu")
    g = _cli_grads(tmp_path, tmp_path / "r8_fold.onnx", x.numpy(), y, "am16", "fold")
    out, loss, grads = _grads(folded, x, y, "am16")
    assert same_bits(out.numpy(), amdnn.read_tensor(tmp_path / "run" / "logits.pb"))
    assert abs(loss - float(amdnn.read_tensor(g / "loss.pb"))) <= 1e-6 * loss
    exact = 0
    for name, gt in grads.items():
        cli = amdnn.read_tensor(g / _file(name))
        if name.endswith("weight") and name != "conv1.weight":
            assert same_bits(gt, cli), f"{name}: {int((gt != cli).sum())} of {gt.size} differ"
            exact += 1
        else:
            assert np.abs(gt - cli).max() <= 1e-5 * np.abs(cli).max(), name
    assert exact == 9  # 8 convolutions and the classifier


def _param_vec(d, names):
    return np.concatenate([np.asarray(d[n], np.float64).ravel() for n in names])


@pytest.mark.parametrize("mode", ["acc32", "am16"])
def test_resnet_gradients_against_cli_grad(tmp_path, resnet8, mode):
    em, model, x, y = resnet8
    _export(em, model, x, tmp_path / "r8.onnx", training=True)
    _, loss, grads = _grads(model, x, y, mode)
    names = list(grads)
    g = _cli_grads(tmp_path, tmp_path / "r8.onnx", x.numpy(), y, mode, "x")
    cli = {n: amdnn.read_tensor(g / _file(n)) for n in names}
    assert len(cli) == 29
    d = _rel(_param_vec(grads, names), _param_vec(cli, names))
    if mode == "acc32":
        print(f"acc32 gradients: PyTorch vs CLI {d:.3g} (relative L2)")
        assert d <= 1e-5, f"acc32 gradients differ by {d:.3g} (relative L2)"
        for n in names:
            assert np.abs(grads[n] - cli[n]).max() <= 1e-5 * np.abs(cli[n]).max() + 1e-12, n
        return
    # am16: the library's own sensitivity to a one-ulp move of the input, and its acc32 gradient
    x1 = np.nextafter(x.numpy(), np.float32(np.inf))
    g1 = _cli_grads(tmp_path, tmp_path / "r8.onnx", x1, y, mode, "x1")
    ga = _cli_grads(tmp_path, tmp_path / "r8.onnx", x.numpy(), y, "acc32", "acc32")
    cli1 = {n: amdnn.read_tensor(g1 / _file(n)) for n in names}
    cli_acc = {n: amdnn.read_tensor(ga / _file(n)) for n in names}
    noise = _rel(_param_vec(cli1, names), _param_vec(cli, names))
    to_acc32 = _rel(_param_vec(cli_acc, names), _param_vec(cli, names))
    print(f"am16 gradients: PyTorch vs CLI {d:.3g}, CLI one-ulp noise {noise:.3g}, CLI am16 vs acc32 {to_acc32:.3g}")
    assert noise > 0
    assert d <= 3 * noise, f"am16 gradients differ from the CLI's by {d:.3g}; the CLI's own one-ulp noise {noise:.3g}"
    assert d <= 0.2 * to_acc32, f"am16 gradients {d:.3g} from the CLI's am16, which is {to_acc32:.3g} from acc32"
    assert abs(loss - float(amdnn.read_tensor(g / "loss.pb"))) <= 1e-3 * loss


def _sgd_torch(model, x, y, mode, device="cpu", steps=3):
    m = at.approximate(copy.deepcopy(model).to(device), mode=mode)
    m.train()
    opt = torch.optim.SGD(m.parameters(), **SGD)
    x, y = x.to(device), y.to(device)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()
    return {k: p.detach().cpu().numpy().copy() for k, p in m.named_parameters()}


def _sgd_cli(tmp, onnx_path, x, y, mode, tag, device="cpu", steps=3):
    amdnn.write_tensor(tmp / f"tx_{tag}.pb", x, "x")
    amdnn.write_tensor(tmp / f"ty_{tag}.pb", y.numpy().astype(np.int64), "y")
    out = tmp / f"trained_{tag}.onnx"
    run_cli("train", onnx_path, "--data", f"tensors:{tmp / f'tx_{tag}.pb'},{tmp / f'ty_{tag}.pb'}", "--mode", mode,
            "--device", device, "--epochs", steps, "--batch", len(x), "--no-shuffle", "--lr", SGD["lr"],
            "--momentum", SGD["momentum"], "--wd", SGD["weight_decay"], "-o", out)
    import onnx
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(out)).graph.initializer}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("mode", ["acc32", "am16"])
def test_three_sgd_steps_against_cli_train(tmp_path, resnet8, mode, device):
    """Three steps of torch.optim.SGD (momentum 0.9, weight decay 5e-4) on
    one batch of 16, against `amdnn-onnx train` for 3 epochs of that one
    batch, both on the CPU or both on the GPU (the CLI then a CUDA build):
    the weights' change differs by at most 1e-4 of itself in acc32; in am16
    by at most 3 times the CLI's own one-ulp noise."""
    em, model, x, y = resnet8
    _export(em, model, x, tmp_path / "r8.onnx", training=True)
    start = {k: p.detach().numpy().copy() for k, p in model.named_parameters()}
    names = list(start)
    got = _sgd_torch(model, x, y, mode, device)
    cli = _sgd_cli(tmp_path, tmp_path / "r8.onnx", x.numpy(), y, mode, "x", device)
    w0 = _param_vec(start, names)
    step_cli = _param_vec(cli, names) - w0
    d = _rel(_param_vec(got, names) - w0, step_cli)
    assert np.linalg.norm(step_cli) > 1e-3 * np.linalg.norm(w0)  # the steps moved the weights
    if mode == "acc32":
        print(f"acc32, 3 SGD steps on {device}: the weights' change, PyTorch vs CLI {d:.3g}")
        assert d <= 1e-4, f"acc32: the weights' change differs by {d:.3g} of itself"
        return
    cli1 = _sgd_cli(tmp_path, tmp_path / "r8.onnx", np.nextafter(x.numpy(), np.float32(np.inf)), y, mode, "x1", device)
    noise = _rel(_param_vec(cli1, names) - w0, step_cli)
    acc = _sgd_cli(tmp_path, tmp_path / "r8.onnx", x.numpy(), y, "acc32", "acc32", device)
    to_acc32 = _rel(_param_vec(acc, names) - w0, step_cli)
    print(f"am16, 3 SGD steps on {device}: PyTorch vs CLI {d:.3g}, CLI one-ulp noise {noise:.3g}, CLI am16 vs acc32 {to_acc32:.3g}")
    assert d <= 3 * noise, f"am16: the weights' change differs by {d:.3g}; the CLI's own one-ulp noise {noise:.3g}"
    assert d <= 0.2 * to_acc32, f"am16: {d:.3g} from the CLI's am16 steps, which are {to_acc32:.3g} from acc32"
