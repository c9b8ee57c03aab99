"""Models from Python: an ONNX model opened with its multiplier settings (an
amdnn_session), run on numpy batches, its gradients, evaluation on a data
source, per-layer sweeps, training with the command line's options, timing,
saving. Each method is the one library call that the matching command of
`amdnn-onnx` makes, with the same options, so the numbers are the same bits.

Data sources (`data=`) are the command line's specs ("mnist:DIR",
"cifar10:DIR", "images:DIR", "tensors:X.pb,Y.pb") or numpy arrays: (x, y) or
(x, y, x_test, y_test), x float32 [N, C, H, W] and y integer labels [N],
which are written once into a temporary folder as TensorProto files and read
as "tensors:" (without a test pair, the test split is the training data).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

from . import _lib, errors, options
from ._lib import lib
from .tensors import as_tensor, to_array, write_tensor

PathLike = Union[str, os.PathLike]
DataSource = Union[str, Sequence[np.ndarray]]


# ------------------------------------------------------------------ records

@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: name, dtype (ONNX's number and numpy's, None
    when undeclared) and shape (None for an unknown rank; a dimension is an
    int, or the symbolic name, or None when unknown)."""

    name: str
    onnx_dtype: int
    dtype: np.dtype | None
    shape: tuple | None


@dataclass(frozen=True)
class NodeInfo:
    """A node: name, op type, its first output's shape at batch 1, and for a
    Conv / Gemm / MatMul its multiply-accumulates per sample and modes."""

    name: str
    op_type: str
    shape: str
    macs: int
    on_multiplier: bool
    forward_mode: str | None
    backward_mode: str | None


@dataclass(frozen=True)
class ModelInfo:
    """What the model is made of (`amdnn-onnx info`)."""

    path: str
    producer: str
    ir_version: int
    opset: int
    n_inputs: int
    n_outputs: int
    n_nodes: int
    n_gemm_nodes: int
    parameters: int
    n_float_initializers: int
    macs: int  #: multiply-accumulates per sample of the GEMM nodes, at batch 1
    shapes_known: bool
    shape_note: str
    device_summary: str | None


@dataclass(frozen=True)
class EvalResult:
    """An evaluation (`amdnn-onnx eval`): top1 / top5 as fractions and counts,
    the mean cross-entropy, the confusion matrix (rows: label, columns:
    prediction)."""

    n: int
    top1_count: int
    top5_count: int
    loss: float
    seconds: float
    images_per_s: float
    confusion: np.ndarray
    class_names: list | None
    data_note: str

    @property
    def top1(self) -> float:
        return self.top1_count / self.n if self.n else 0.0

    @property
    def top5(self) -> float:
        return self.top5_count / self.n if self.n else 0.0

    def __str__(self) -> str:
        return (f"top1 {100 * self.top1:.2f}%  top5 {100 * self.top5:.2f}%  loss {self.loss:.4f}  "
                f"{self.images_per_s:.0f} images/s ({self.n} samples)")


@dataclass(frozen=True)
class Progress:
    """A progress report of a long call (amdnn_progress)."""

    stage: str  #: "train", "evaluate", "sweep", "decode images", "read headers"
    epoch: int
    done: int
    total: int
    samples: int
    loss: float  #: training: the running mean loss of the epoch so far
    accuracy: float
    elapsed_s: float
    images_per_s: float
    eta_s: float  #: < 0: unknown


@dataclass(frozen=True)
class Epoch:
    """One epoch of training (accuracies as fractions)."""

    epoch: int
    epochs: int
    train_loss: float
    train_acc: float
    test_loss: float
    test_acc: float
    val_loss: float | None
    val_acc: float | None
    lr: float
    images_per_s: float
    train_s: float
    loss_scale: float
    skipped: int

    def __str__(self) -> str:
        """The epoch's line as `amdnn-onnx train` prints it."""
        s = (f"epoch {self.epoch + 1}/{self.epochs}  train loss {self.train_loss:.4f} acc {100 * self.train_acc:.2f}%"
             f"  test loss {self.test_loss:.4f} top1 {100 * self.test_acc:.2f}%")
        if self.val_loss is not None:
            s += f"  val loss {self.val_loss:.4f} top1 {100 * self.val_acc:.2f}%"
        s += f"  lr {self.lr:.4g}  {self.images_per_s:.0f} img/s  {self.train_s:.1f} s"
        if self.loss_scale != 1.0:
            s += f"  loss scale {self.loss_scale:g} ({self.skipped} steps skipped)"
        return s


@dataclass(frozen=True)
class SweepRow:
    """A row of a sweep: the node alone in the mode (the first row is the
    exact baseline, the last every node in the mode)."""

    node: str
    op_type: str
    index: int
    count: int
    macs: int
    top1: float
    top5: float
    loss: float
    top1_drop: float
    loss_rise: float
    n: int
    resumed: bool


@dataclass(frozen=True)
class BenchResult:
    """Timed training steps or inference passes (`amdnn-onnx bench`)."""

    batch: int
    steps: int
    seconds: float
    images_per_s: float
    ms_per_step: float
    inference: bool


@dataclass
class TrainResult:
    """What a training run reported: an Epoch per epoch."""

    epochs: list = field(default_factory=list)

    @property
    def last(self) -> Epoch | None:
        return self.epochs[-1] if self.epochs else None


# ---------------------------------------------------------------- callbacks

MessageFn = Callable[[str, str], Any]  # (kind, text): kind "info", "note", "warning", "error", "debug"
_KIND_NAMES = {_lib.MSG_INFO: "info", _lib.MSG_NOTE: "note", _lib.MSG_WARNING: "warning", _lib.MSG_ERROR: "error",
               _lib.MSG_DEBUG: "debug"}


def print_message(kind: str, text: str) -> None:
    """The default printer of the library's messages, as the command line
    prints them: info lines on stdout, warnings and errors on stderr."""
    if kind == "info":
        print(text, flush=True)
    elif kind in ("warning", "error"):
        print(f"amdnn: {kind}: {text}" if kind == "warning" else f"amdnn: {text}", file=sys.stderr, flush=True)


def warn_message(kind: str, text: str) -> None:
    """The library's messages where nothing asked for them: its warnings as
    Python warnings (RuntimeWarning), the rest dropped."""
    if kind == "warning":
        warnings.warn(f"amdnn: {text}", RuntimeWarning, stacklevel=2)


class _Reporter:
    """The amdnn_callbacks of one call, made of Python callables. An exception
    raised by a callable (KeyboardInterrupt included) asks the library to stop;
    the call then raises it. Ctrl-C during the call (interruptible) is a
    flag that the next callback turns into a stop request and the call into
    KeyboardInterrupt: a KeyboardInterrupt raised by Python's own handler could
    surface at the first instruction of a callback, outside any try, where
    ctypes would print it and let the library go on."""

    def __init__(self, on_message: MessageFn | None = None, on_progress: Callable | None = None,
                 on_epoch: Callable | None = None, on_row: Callable | None = None, verbose: bool = True,
                 every_step: bool = False):
        self.error: BaseException | None = None
        self.interrupted = False
        self.epochs: list[Epoch] = []
        self.rows: list[SweepRow] = []
        self._on_message = on_message if on_message is not None else (print_message if verbose else warn_message)
        self._print_epochs = verbose
        self._on_progress, self._on_epoch, self._on_row = on_progress, on_epoch, on_row
        self._fns = (_lib.MESSAGE_FN(self._message), _lib.PROGRESS_FN(self._progress),
                     _lib.EPOCH_FN(self._epoch), _lib.SWEEP_ROW_FN(self._row))
        self.struct = _lib.Callbacks(None, *self._fns, int(every_step), 0)

    def _guard(self, fn, *args) -> int:
        if self.interrupted and self.error is None:
            self.error = KeyboardInterrupt()
        if self.error is not None:
            return 1
        try:
            return 1 if fn(*args) else 0
        except BaseException as e:  # noqa: B902: KeyboardInterrupt too: stop the library, raise it after
            self.error = e
            return 1

    def _message(self, user, kind, text) -> None:
        if self._on_message is not None:
            self._guard(self._on_message, _KIND_NAMES.get(kind, "info"), _lib.text(text))

    def _progress(self, user, p) -> int:
        if self._on_progress is None:
            return self._guard(lambda: 0)  # (the call into Python lets a Ctrl-C arrive)
        q = p.contents
        rec = Progress(_lib.text(q.stage), q.epoch, q.done, q.total, q.samples, q.loss, q.accuracy, q.elapsed_s,
                       q.images_per_s, q.eta_s)
        return self._guard(self._on_progress, rec)

    def _epoch(self, user, e) -> int:
        q = e.contents
        rec = Epoch(q.epoch, q.epochs, q.train_loss, q.train_acc, q.test_loss, q.test_acc,
                    q.val_loss if q.has_val else None, q.val_acc if q.has_val else None, q.lr, q.images_per_s,
                    q.train_s, q.loss_scale, q.skipped)
        self.epochs.append(rec)
        if self._print_epochs:
            print(rec, flush=True)
        return self._guard(self._on_epoch, rec) if self._on_epoch is not None else self._guard(lambda: 0)

    def _row(self, user, r) -> int:
        q = r.contents
        rec = SweepRow(_lib.text(q.node), _lib.text(q.op_type), q.index, q.count, q.macs, q.top1, q.top5, q.loss,
                       q.top1_drop, q.loss_rise, q.n, bool(q.resumed))
        self.rows.append(rec)
        return self._guard(self._on_row, rec) if self._on_row is not None else self._guard(lambda: 0)

    @contextlib.contextmanager
    def interruptible(self):
        """While the library works: Ctrl-C (SIGINT) sets the flag (a second one
        ends the process, as the command line's second signal does). Only in
        the main thread, and only over Python's default handler."""
        if (threading.current_thread() is not threading.main_thread() or
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            yield
            return

        def on_sigint(signum, frame):
            if self.interrupted:
                os.write(2, b"amdnn: a second Ctrl-C: exiting\n")
                os._exit(128 + signal.SIGINT)
            self.interrupted = True

        old = signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, old)

    def finish(self, st) -> None:
        """Raises what a callback raised (it made the library stop), else the
        call's own error; KeyboardInterrupt after a Ctrl-C."""
        if self.interrupted and self.error is None:
            self.error = KeyboardInterrupt()
        if self.error is not None:
            if st:
                lib.amdnn_status_free(st)
            err, self.error = self.error, None
            raise err
        _lib.check(st)


# -------------------------------------------------------------- data sources

class _Data:
    """A data option's value: a spec as it is, or numpy arrays written once
    into a temporary folder as tensors:X.pb,Y.pb[,XT.pb,YT.pb]."""

    def __init__(self, data: DataSource):
        self.tmp = None
        if isinstance(data, (str, os.PathLike)):
            self.spec = os.fspath(data)
            return
        if not isinstance(data, (tuple, list)) or len(data) not in (2, 4):
            raise errors.ArgumentError("data: a spec such as 'mnist:DIR', or numpy arrays (x, y) or "
                                       "(x, y, x_test, y_test)")
        self.tmp = tempfile.mkdtemp(prefix="amdnn-data-")
        names = ["x.pb", "y.pb", "x_test.pb", "y_test.pb"][:len(data)]
        try:
            for k, (name, arr) in enumerate(zip(names, data)):
                a = np.asarray(arr)
                if k % 2 == 0 and a.dtype != np.float32:
                    if a.dtype.kind not in "fiu":
                        raise errors.ArgumentError(f"data: inputs of dtype {a.dtype}")
                    a = a.astype(np.float32)
                if k % 2 == 1 and a.dtype not in (np.int64, np.int32):
                    if a.dtype.kind not in "iu":
                        raise errors.ArgumentError(f"data: labels must be integers, not {a.dtype}")
                    a = a.astype(np.int64)
                write_tensor(os.path.join(self.tmp, name), a, name[:-3])
        except BaseException:
            self.close()
            raise
        self.spec = "tensors:" + ",".join(os.path.join(self.tmp, n) for n in names)

    def close(self) -> None:
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -------------------------------------------------------------------- Model

class Model:
    """An ONNX model opened with its multiplier settings.

    >>> m = amdnn.Model("models/lenet5.onnx", mode="am16", device="cpu")
    >>> logits = m(x)                          # x: float32 [N, 1, 28, 28]
    >>> r = m.evaluate("mnist:/usr/share/datasets/fashion-mnist", limit=1000)

    path: the .onnx file. Keyword arguments are the options of the session
    (as on the command line; underscores for dashes), from the library's
    option table:

    """

    def __init__(self, path: PathLike, **options_kw: Any):
        self._h = None
        self._lock = threading.RLock()
        self.path = os.fspath(path)
        self.options = dict(options_kw)
        o = options.Options(_lib.FOR_SESSION, "Model", options_kw)
        h = ctypes.c_void_p()
        _lib.check(lib.amdnn_session_open(os.fsencode(self.path), o.handle, ctypes.byref(h)))
        self._h = h

    # -- lifetime
    def close(self) -> None:
        """Releases the session (its model, device memory); the object is unusable afterwards."""
        with self._lock:
            if self._h:
                lib.amdnn_session_close(self._h)
                self._h = None

    def __del__(self):
        if getattr(self, "_h", None):
            lib.amdnn_session_close(self._h)
            self._h = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _handle(self):
        if not self._h:
            raise errors.ArgumentError("this Model is closed")
        return self._h

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"Model({self.path!r}{opts})"

    # -- what it is made of
    @property
    def mode(self) -> str:
        return str(self.options.get("mode", "acc32"))

    @property
    def info(self) -> ModelInfo:
        """The model's summary (shapes and MACs at batch 1)."""
        with self._lock:
            p = ctypes.POINTER(_lib.ModelInfo)()
            _lib.check(lib.amdnn_session_info(self._handle(), ctypes.byref(p)))
            i = p.contents
            return ModelInfo(_lib.text(i.path), _lib.text(i.producer) or "", i.ir_version, i.opset, i.n_inputs,
                             i.n_outputs, i.n_nodes, i.n_gemm_nodes, i.parameters, i.n_float_initializers, i.macs,
                             bool(i.shapes_known), _lib.text(i.shape_note) or "", _lib.text(i.device_summary))

    def _values(self, fn, count: int) -> list[ValueInfo]:
        from .tensors import _FROM_ONNX
        out = []
        for k in range(count):
            v = _lib.ValueInfo()
            _lib.check(fn(self._handle(), k, ctypes.byref(v)))
            shape = None
            if v.rank >= 0:
                shape = tuple(_lib.text(v.dim_names[d]) if v.dim_names[d] else (v.dims[d] if v.dims[d] >= 0 else None)
                              for d in range(v.rank))
            out.append(ValueInfo(_lib.text(v.name), v.dtype, _FROM_ONNX.get(v.dtype), shape))
        return out

    @property
    def inputs(self) -> list[ValueInfo]:
        """The graph inputs (not the initializers), in the model's order."""
        with self._lock:
            return self._values(lib.amdnn_session_input, self.info.n_inputs)

    @property
    def outputs(self) -> list[ValueInfo]:
        with self._lock:
            return self._values(lib.amdnn_session_output, self.info.n_outputs)

    @property
    def nodes(self) -> list[NodeInfo]:
        """Every node, with the multiplier of each Conv, Gemm and MatMul."""
        with self._lock:
            out = []
            for k in range(self.info.n_nodes):
                n = _lib.NodeInfo()
                _lib.check(lib.amdnn_session_node(self._handle(), k, ctypes.byref(n)))
                out.append(NodeInfo(_lib.text(n.name), _lib.text(n.op_type), n.shape.decode(), n.macs,
                                    bool(n.on_multiplier), _lib.text(n.forward_mode), _lib.text(n.backward_mode)))
            return out

    @property
    def device(self) -> str:
        """The device the model runs on ("cpu", "cuda:0"), opening it if needed."""
        with self._lock:
            name = ctypes.c_char_p()
            _lib.check(lib.amdnn_session_device(self._handle(), ctypes.byref(name)))
            return _lib.text(name.value)

    # -- one batch
    def run(self, *inputs: Any, **named: Any) -> dict:
        """Runs the model once with its own ONNX semantics (`amdnn-onnx run`)
        and returns every graph output as {name: array}, in the model's order.

        Inputs: positional arrays in the model's input order, or keyword
        arguments by input name, or one dict {name: array}. Arrays keep their
        dtype (the model's inputs are usually float32) and are not copied when
        C-contiguous."""
        if len(inputs) == 1 and isinstance(inputs[0], Mapping) and not named:
            named = dict(inputs[0])
            inputs = ()
        if inputs and named:
            raise errors.ArgumentError("run: give the inputs by position or by name, not both")
        items = [(None, a) for a in inputs] + [(k, v) for k, v in named.items()]
        self._check_inputs(items)
        arr_t = (_lib.Tensor * max(len(items), 1))()
        keep = []
        for k, (name, a) in enumerate(items):
            t, arr = as_tensor(a, name, f"input {name or k}")
            arr_t[k] = t
            keep.append((t, arr))
        out = ctypes.POINTER(_lib.Tensor)()
        n = ctypes.c_int()
        with self._lock:
            _lib.check(lib.amdnn_session_run(self._handle(), arr_t, len(items), ctypes.byref(out), ctypes.byref(n)))
        try:
            return {_lib.text(out[k].name): to_array(out[k]) for k in range(n.value)}
        finally:
            lib.amdnn_tensors_free(out, n.value)

    def _check_inputs(self, items) -> None:
        """A wrong dtype or shape as ArgumentError (a ValueError) before the
        library's run, which would report it as a failed run."""
        decl = self.inputs
        by_name = {v.name: v for v in decl}
        for k, (name, a) in enumerate(items):
            v = by_name.get(name) if name is not None else (decl[k] if k < len(decl) else None)
            if v is None:
                continue  # the library names what is wrong
            arr = np.asarray(a)
            if v.dtype is not None and arr.dtype != v.dtype:
                raise errors.ArgumentError(f"input '{v.name}' has dtype {arr.dtype}, the model expects {v.dtype}")
            if v.shape is None:
                continue
            want = "[" + ",".join(str(d) if d is not None else "?" for d in v.shape) + "]"
            if arr.ndim != len(v.shape) or any(isinstance(d, int) and d != n for d, n in zip(v.shape, arr.shape)):
                raise errors.ArgumentError(f"input '{v.name}' has shape {list(arr.shape)}, the model expects {want}")

    def __call__(self, *inputs: Any, **named: Any) -> np.ndarray:
        """The model's first output for these inputs (see run)."""
        return next(iter(self.run(*inputs, **named).values()))

    def grad(self, x: Any, labels: Any, *, on_message: MessageFn | None = None, verbose: bool = False,
             **options_kw: Any) -> tuple[float, dict]:
        """One batch in training mode (`amdnn-onnx grad`): the mean softmax
        cross-entropy of the first output for labels (int64 or int32 [N]), and
        the gradient of every trainable initializer as {name: array}. The
        training set-up's warning (a node without a backward pass,
        BatchNormalization folded at export) goes to on_message(kind, text),
        printed with verbose, else it is a RuntimeWarning. Options:

        """
        o = options.Options(_lib.FOR_GRAD, "grad", options_kw)
        xt, xa = as_tensor(x, None, "x")
        la = np.asarray(labels)
        if la.dtype not in (np.int64, np.int32):
            if la.dtype.kind not in "iu":
                raise errors.ArgumentError(f"labels must be integers (int64 or int32), not {la.dtype}")
            la = la.astype(np.int64)
        yt, ya = as_tensor(la, None, "labels")
        loss = ctypes.c_double()
        out = ctypes.POINTER(_lib.Tensor)()
        n = ctypes.c_int()
        rep = _Reporter(on_message, verbose=verbose)
        with self._lock:
            st = lib.amdnn_session_grad(self._handle(), ctypes.byref(xt), ctypes.byref(yt), o.handle,
                                        ctypes.byref(rep.struct), ctypes.byref(loss), ctypes.byref(out),
                                        ctypes.byref(n))
        rep.finish(st)
        del xa, ya
        try:
            return loss.value, {_lib.text(out[k].name): to_array(out[k]) for k in range(n.value)}
        finally:
            lib.amdnn_tensors_free(out, n.value)

    # -- data sets
    def evaluate(self, data: DataSource, *, on_progress: Callable | None = None, on_message: MessageFn | None = None,
                 verbose: bool = False, **options_kw: Any) -> EvalResult:
        """Accuracy on a data source in inference mode (`amdnn-onnx eval`):
        BatchNormalization on its running statistics, no dropout.

        data: a spec ("mnist:DIR", "cifar10:DIR", "images:DIR", ...) or numpy
        arrays (x, y) / (x, y, x_test, y_test). on_progress(Progress) and
        on_message(kind, text) receive the library's reports (a true return
        from on_progress stops the call with StoppedError); verbose prints the
        messages. Options:

        """
        rep = _Reporter(on_message, on_progress, verbose=verbose)
        with _Data(data) as d:
            o = options.Options(_lib.FOR_EVAL, "evaluate", dict(options_kw, data=d.spec))
            out = ctypes.POINTER(_lib.EvalResult)()
            with self._lock, rep.interruptible():
                st = lib.amdnn_session_evaluate(self._handle(), o.handle, ctypes.byref(rep.struct), ctypes.byref(out))
            rep.finish(st)
        try:
            r = out.contents
            c = r.n_classes
            conf = np.ctypeslib.as_array(r.confusion, shape=(c * c,)).reshape(c, c).copy() if c else \
                np.zeros((0, 0), np.int64)
            names = [_lib.text(r.class_names[k]) for k in range(c)] if r.class_names else None
            return EvalResult(r.n, r.top1, r.top5, r.loss, r.seconds, r.images_per_s, conf, names,
                              r.data_note.decode("utf-8", "replace"))
        finally:
            lib.amdnn_eval_result_free(out)

    def sweep(self, data: DataSource, *, on_row: Callable | None = None, on_progress: Callable | None = None,
              on_message: MessageFn | None = None, verbose: bool = False, **options_kw: Any) -> list:
        """Per-layer sensitivity to the model's mode (`amdnn-onnx sweep`): the
        test split with every product exact (the baseline row), then with each
        Conv / Gemm / MatMul alone in the mode, then all of them; returns the
        SweepRows (on_row(SweepRow) sees each as it is made; a true return
        stops). Options:

        """
        rep = _Reporter(on_message, on_progress, on_row=on_row, verbose=verbose)
        with _Data(data) as d:
            o = options.Options(_lib.FOR_SWEEP, "sweep", dict(options_kw, data=d.spec))
            with self._lock, rep.interruptible():
                st = lib.amdnn_session_sweep(self._handle(), o.handle, ctypes.byref(rep.struct))
            rep.finish(st)
        return sorted(rep.rows, key=lambda r: r.index)

    def train(self, data: DataSource, *, on_epoch: Callable | None = None, on_progress: Callable | None = None,
              on_message: MessageFn | None = None, verbose: bool = True, **options_kw: Any) -> TrainResult:
        """Trains the model (`amdnn-onnx train`); afterwards the Model holds
        the trained weights (save them with save, or output=PATH here).

        data: a spec or numpy arrays (see evaluate). on_epoch(Epoch) after
        each epoch, on_progress(Progress) after each step, on_message(kind,
        text) for the library's lines (default with verbose: printed as the
        command line prints them). A callable that returns true, or raises,
        stops the run at the next step (with a checkpoint where
        checkpoint_dir is set); a true return raises StoppedError, an
        exception (KeyboardInterrupt: Ctrl-C) is raised again. DivergedError:
        the loss became NaN or Inf. Options:

        """
        kw = dict(options_kw)
        scratch = None
        if kw.get("output") is None and kw.get("o") is None:
            # the library's run writes the model at its end whatever the caller wants (src/train/run.c):
            # without output=, it goes to a scratch file, deleted (the Model holds the weights)
            scratch = tempfile.mkdtemp(prefix="amdnn-train-")
            kw["output"] = os.path.join(scratch, "trained.onnx")
            user_message = on_message if on_message is not None else (print_message if verbose else None)

            def on_message(kind, text, _inner=user_message, _hidden="wrote " + kw["output"]):
                if _inner is not None and not (kind == "info" and text.startswith(_hidden)):
                    return _inner(kind, text)
        rep = _Reporter(on_message, on_progress, on_epoch=on_epoch, verbose=verbose, every_step=True)
        try:
            with _Data(data) as d:
                o = options.Options(_lib.FOR_TRAIN, "train", dict(kw, data=d.spec))
                with self._lock, rep.interruptible():
                    st = lib.amdnn_session_train(self._handle(), o.handle, ctypes.byref(rep.struct))
                rep.finish(st)
        finally:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
        return TrainResult(list(rep.epochs))

    def bench(self, *, on_message: MessageFn | None = None, verbose: bool = False,
              **options_kw: Any) -> BenchResult:
        """Times training steps (or inference passes, infer=True) on one random
        batch of the model's input shape (`amdnn-onnx bench`). Options:

        """
        rep = _Reporter(on_message, verbose=verbose)
        o = options.Options(_lib.FOR_BENCH, "bench", options_kw)
        r = _lib.BenchResult()
        with self._lock, rep.interruptible():
            st = lib.amdnn_session_bench(self._handle(), o.handle, ctypes.byref(rep.struct), ctypes.byref(r))
        rep.finish(st)
        return BenchResult(r.batch, r.steps, r.seconds, r.images_per_s, r.ms_per_step, bool(r.inference))

    def save(self, path: PathLike) -> None:
        """Writes the model with its current weights as an inference ONNX file
        (BatchNormalization on running statistics, Dropout off), atomically."""
        with self._lock:
            _lib.check(lib.amdnn_session_save(self._handle(), os.fsencode(os.fspath(path))))


def _add_options_doc(fn, call_bit: int, exclude=()) -> None:
    doc = fn.__doc__ or ""
    table = options.options_doc(call_bit, exclude)
    indented = "\n".join(("        " + line) if line else "" for line in table.splitlines())
    fn.__doc__ = doc.rstrip() + "\n\n" + indented + "\n"


Model.__doc__ = (Model.__doc__ or "").rstrip() + "\n\n" + "\n".join(
    "    " + line for line in options.options_doc(_lib.FOR_SESSION).splitlines()) + "\n"
_add_options_doc(Model.grad, _lib.FOR_GRAD)
_add_options_doc(Model.evaluate, _lib.FOR_EVAL, exclude=("data",))
_add_options_doc(Model.sweep, _lib.FOR_SWEEP, exclude=("data",))
_add_options_doc(Model.train, _lib.FOR_TRAIN, exclude=("data",))
_add_options_doc(Model.bench, _lib.FOR_BENCH)
