"""The exceptions of the package: one class per status code of the library
(include/amdnn.h, amdnn_code), each carrying the library's one-line message.

    Error                    every failure the library reports
    ├── ArgumentError        a bad argument (also a ValueError): an unknown mode,
    │   │                    a value out of range, a wrong dtype or shape
    │   └── OptionError      an option name that the call does not take (also a
    │                        TypeError, as for an unexpected keyword argument)
    ├── FailedError          the work failed (also a RuntimeError): an unreadable
    │                        model or data file, I/O, a device
    ├── NoMemoryError        out of memory (also a MemoryError)
    ├── StoppedError         training stopped early (a callback's request,
    │                        KeyboardInterrupt, walltime, stop_after)
    └── DivergedError        the loss or a gradient became NaN or Inf (also a
                             FloatingPointError)
"""
from __future__ import annotations

OK, ERR_ARGUMENT, ERR_FAILED, ERR_NO_MEMORY, ERR_STOPPED, ERR_DIVERGED = range(6)


class Error(Exception):
    """A failure reported by the library; `code` is its amdnn_code, `message`
    its one-line message (what failed and where)."""

    code = -1

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ArgumentError(Error, ValueError):
    """A bad argument: an unknown mode, a bad option value, a wrong dtype or shape."""

    code = ERR_ARGUMENT


class OptionError(ArgumentError, TypeError):
    """An option name that the library does not know, or that this call does not take."""


class FailedError(Error, RuntimeError):
    """The work failed: an unreadable or invalid model or data file, I/O, a device."""

    code = ERR_FAILED


class NoMemoryError(Error, MemoryError):
    """The library ran out of memory."""

    code = ERR_NO_MEMORY


class StoppedError(Error):
    """Training stopped early (with a checkpoint where a checkpoint folder is
    set): a callback asked to stop, KeyboardInterrupt, walltime or stop_after.
    Train again with resume=True to continue."""

    code = ERR_STOPPED


class DivergedError(Error, FloatingPointError):
    """Training stopped: the loss or a gradient became NaN or Inf."""

    code = ERR_DIVERGED


_BY_CODE = {ERR_ARGUMENT: ArgumentError, ERR_FAILED: FailedError, ERR_NO_MEMORY: NoMemoryError,
            ERR_STOPPED: StoppedError, ERR_DIVERGED: DivergedError}


def from_code(code: int, message: str) -> Error:
    """The exception of a status code (an unknown code gives Error)."""
    if code == ERR_ARGUMENT and message.startswith("unknown option"):
        return OptionError(message, code)
    cls = _BY_CODE.get(code, Error)
    return cls(message, code) if cls is Error else cls(message)
