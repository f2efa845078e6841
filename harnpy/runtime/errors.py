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

from collections.abc import Callable
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
    tail_calls: int = 0  # callers this frame replaced by tail calls (left out of the trace)


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


def render_error(
    exc: HarnError, source_of: Callable[[str], str | None], *, min_trace: int = 1
) -> str:
    """The text of an uncaught runtime error, as ``harnpy run`` and the REPL print it:
    ``path:line:col: error[CODE]: message``, the source line with a caret under the failing
    expression, then the Harn stack trace (most recent call first; runs of one repeated
    entry collapsed, frames replaced by tail calls noted) when it has at least
    ``min_trace`` entries. ``source_of(path)`` gives a module's source text, or None."""
    from harnpy.diagnostics import Diagnostic

    trace = list(exc.trace)
    if not trace:
        return f"error[{exc.code}]: {exc.message}"
    top = trace[0]
    d = Diagnostic(
        exc.code,
        exc.message,
        top.path,
        top.line,
        top.col,
        source=source_of(top.path),
        end_col=top.end_col,
    )
    lines = [d.render()]
    if len(trace) >= min_trace:
        lines.append("stack trace (most recent call first):")
        i = 0
        while i < len(trace):
            t = trace[i]
            j = i
            while j + 1 < len(trace) and trace[j + 1] == t:
                j += 1
            lines.append(f"  at {t.function} ({t.path}:{t.line}:{t.col})")
            if j > i:
                lines.append(f"  ... the frame above repeated {j - i} more times")
            if t.tail_calls:
                frames = "frame" if t.tail_calls == 1 else "frames"
                lines.append(f"  ... {t.tail_calls} {frames} elided by tail calls")
            i = j + 1
    return "\n".join(lines)
