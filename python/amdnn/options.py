"""Keyword arguments as the library's options.

Every option of every call is declared once, in the library's option table
(amdnn_option_count / amdnn_option_at): its name, kind, range, default, help
and the calls that take it. Here a keyword argument becomes the option of the
same name with underscores as dashes (mode_map -> "mode-map"), its value text
as on the command line (True / False -> "1" / "0", numbers -> their text, a
path -> its text); None leaves the option unset. The library checks each value
as it is set and its message becomes the exception's. The docstrings of the
calls list their options from the same table (`options_doc`).
"""
from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from typing import Any, Iterable

from . import _lib, errors
from ._lib import lib

_KINDS = {_lib.OPTION_FLAG: "flag", _lib.OPTION_INT: "int", _lib.OPTION_FLOAT: "float", _lib.OPTION_TEXT: "text"}
_CALLS = ("session", "info", "run", "grad", "train", "eval", "bench", "sweep", "lut")


@dataclass(frozen=True)
class Option:
    """One entry of the library's option table."""

    name: str  #: the command line's name ("mode-map"); the keyword is keyword
    keyword: str  #: the Python keyword ("mode_map")
    kind: str  #: "flag", "int", "float" or "text"
    metavar: str | None
    min: float
    max: float
    default: str | None  #: as text; None: unset by default (the help says what that means)
    group: str
    help: str
    used_by: int  #: the AMDNN_FOR_* bits

    @property
    def calls(self) -> list[str]:
        """The calls that take the option: "session", "train", "eval", ..."""
        return [c for b, c in enumerate(_CALLS) if self.used_by & (1 << b)]


def _read_table() -> dict[str, Option]:
    table = {}
    for i in range(lib.amdnn_option_count()):
        o = lib.amdnn_option_at(i).contents
        name = _lib.text(o.name)
        table[name] = Option(name=name, keyword=name.replace("-", "_"), kind=_KINDS.get(o.kind, "text"),
                             metavar=_lib.text(o.metavar), min=o.min, max=o.max,
                             default=_lib.text(o.default_value), group=_lib.text(o.group),
                             help=_lib.text(o.help), used_by=o.used_by)
    return table


OPTIONS: dict[str, Option] = _read_table()
_BY_KEYWORD = {o.keyword: o for o in OPTIONS.values()}


def option_table() -> list[Option]:
    """The library's option table, in --help order."""
    return list(OPTIONS.values())


def value_text(value: Any) -> str | None:
    """A Python value as an option's text: True / False -> "1" / "0", numbers
    as Python writes them (repr of a float round-trips), paths as text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):  # mode_map / augment / freeze as lists
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):  # mode_map={"conv1": "acc32", "Gemm": "am32"}
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


class Options:
    """An amdnn_options handle holding checked values (freed with the object)."""

    def __init__(self, call_bit: int, call_name: str, kwargs: dict[str, Any]):
        h = _lib.c_void_p()
        _lib.check(lib.amdnn_options_create(_lib.ctypes.byref(h)))
        self.handle = h
        for key, value in kwargs.items():
            opt = _BY_KEYWORD.get(key) or OPTIONS.get(key)
            if opt is None:
                # the library's own message for a name it does not know
                st = lib.amdnn_options_set(h, key.replace("_", "-").encode(), None)
                _lib.check(st)
                raise errors.OptionError(f"unknown option '{key}'")  # (the library knew it after all)
            if not opt.used_by & call_bit:
                raise errors.OptionError(f"{call_name} takes no option '{opt.keyword}' (it is an option of: "
                                         f"{', '.join(opt.calls)})")
            text = value_text(value)
            _lib.check(lib.amdnn_options_set(h, opt.name.encode(), None if text is None else text.encode()))

    def __del__(self):
        h = getattr(self, "handle", None)
        if h:
            lib.amdnn_options_free(h)
            self.handle = None

    @property
    def as_parameter(self):
        return self.handle


def split(kwargs: dict[str, Any], call_bit: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """kwargs divided into the options `call_bit` takes and the rest."""
    mine, rest = {}, {}
    for k, v in kwargs.items():
        opt = _BY_KEYWORD.get(k)
        (mine if opt is not None and opt.used_by & call_bit else rest)[k] = v
    return mine, rest


def options_doc(call_bit: int, exclude: Iterable[str] = (), width: int = 76) -> str:
    """The options of one call as a docstring section, from the library's table."""
    lines = []
    skip = set(exclude)
    for o in OPTIONS.values():
        if not o.used_by & call_bit or o.keyword in skip:
            continue
        if call_bit != _lib.FOR_SESSION and o.used_by & _lib.FOR_SESSION:
            continue  # set when the model opens
        if o.kind == "flag":
            kind = "bool"
        elif o.kind == "int":
            kind = "int"
        elif o.kind == "float":
            kind = "float"
        else:
            kind = f"str ({o.metavar})" if o.metavar else "str"
        default = f", default {o.default}" if o.default is not None else ""
        lines.append(f"{o.keyword}: {kind}{default}")
        body = " ".join(o.help.split())
        lines.extend(textwrap.wrap(body, width - 4, initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)
