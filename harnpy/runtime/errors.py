"""Runtime error types: what a Harn program can throw or fail with.

Two exception roots keep user errors apart from interpreter bugs:

* :class:`HarnError` and subclasses are *user* errors. They carry a Harn value, render as the
  reference's messages (spec language.md 3.12) and may be caught by ``try``/``catch``.
* Any other Python exception escaping the evaluator is an internal bug; the CLI reports it as
  such (with a Python traceback only under ``HARNPY_DEBUG=1``).

Diagnostic codes (style guide): E3xx are runtime errors, E4xx lifecycle errors. E323 is a
value too large to build (:data:`MAX_BUILD_SIZE`, or the interpreter ran out of memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One line of a Harn stack trace: function name and source location (1-based)."""

    function: str
    path: str
    line: int
    col: int
    end_col: int = 0  # exclusive end column of the failing expression on ``line`` (0: unknown)


class HarnError(Exception):
    """A user-level Harn error (catchable by ``try``/``catch``).

    ``code`` is the diagnostic code (``E3xx``); ``trace`` is filled while the error unwinds
    the Harn frame stack, innermost first. ``at`` is the ``(line, col, end_col)`` of the
    innermost expression that failed (set by the compiled expression, consumed by the frame
    it failed in; ``end_col`` is exclusive, 0 when the expression spans several lines).
    """

    code = "E300"
    at: tuple[int, int, int] | None = None

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.trace: list[TraceEntry] = []

    @property
    def catch_value(self) -> Any:
        """The value ``catch (e)`` binds: the message string for runtime errors."""
        return self.message

    def render(self) -> str:
        """The uncaught-error text (``Thrown: x`` / ``Runtime error: ...``)."""
        return self.message


class HarnThrow(HarnError):
    """``throw v``: carries the thrown Harn value itself."""

    code = "E310"

    def __init__(self, value: Any) -> None:
        from harnpy.runtime.display import display

        super().__init__(f"Thrown: {display(value)}")
        self.value = value

    @property
    def catch_value(self) -> Any:
        """The thrown value itself (spec 3.12)."""
        return self.value


class HarnRuntimeError(HarnError):
    """A runtime error with a fixed message (``Division by zero``, ``Type error: ...``)."""


class HarnInterrupt(BaseException):
    """Ctrl-C inside a running evaluation: not catchable by Harn ``catch`` blocks.

    Derives from ``BaseException`` so that ``except HarnError`` in builtins never swallows it.
    """


class HarnExit(BaseException):
    """Raised by the ``exit(code)`` builtin to end the program with status ``code`` (int).

    Derives from ``BaseException`` so Harn ``catch`` blocks and ``except HarnError`` in
    builtins never intercept it; the CLI catches it at top level.
    """

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class SnapshotExit(BaseException):
    """Raised by ``__snapshot_exit`` after the snapshot file is written: ends the run."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def runtime_error(msg: str, code: str = "E300") -> HarnRuntimeError:
    """``Runtime error: <msg>``."""
    return HarnRuntimeError(f"Runtime error: {msg}", code)


def type_error(msg: str) -> HarnRuntimeError:
    """``Type error: <msg>``."""
    return HarnRuntimeError(f"Type error: {msg}", "E302")


def plain_error(msg: str, code: str = "E300") -> HarnRuntimeError:
    """An error whose message has no prefix (``Division by zero``, ``Undefined variable: x``)."""
    return HarnRuntimeError(msg, code)


#: The longest string (code points) or list (items) an operation that builds one from a
#: count (``s * n``, ``s.repeat(n)``, ``pad_left``/``pad_right``, materialising a range) may
#: produce. Larger requests fail with a catchable ``E323`` error before anything is allocated
#: instead of exhausting memory.
MAX_BUILD_SIZE = 100_000_000


def too_large(what: str, size: int, unit: str = "items") -> HarnRuntimeError:
    """The catchable ``E323`` error for a string or list that would exceed
    :data:`MAX_BUILD_SIZE`: ``Runtime error: <what>: result too large (<size> <unit>, the
    limit is 100000000)``."""
    return runtime_error(
        f"{what}: result too large ({size} {unit}, the limit is {MAX_BUILD_SIZE})", "E323"
    )
