"""Structured logging, trace spans, timers and stderr capture builtins.

* ``log_set_level``, ``log_debug``/``log_info``/``log_warn``/``log_error(msg, fields?)``:
  one JSON line per record (``{"fields", "level", "message", "timestamp"}``) written to
  **stderr** when the record's level is at or above the current level (default ``info``).
* ``trace_start(name)``/``trace_end(span)``/``trace_id()``: nested spans; ``trace_end``
  logs the span at info level. ``enable_tracing(bool)``, ``trace_spans()``,
  ``trace_summary()`` collect finished spans.
* ``timer_start(name?)``/``timer_end(t)``: ``timer_end`` prints ``[timer] NAME: <n>ms`` to
  stdout and returns ``n``.
* ``capture_stderr_start()``/``capture_stderr_take()``: collect what ``eprint`` and friends
  write (through ``thread.write_err``) instead of sending it to stderr.

Runtime attributes used: ``runtime.log_level`` (str), ``runtime.trace_stack`` (list of open
span dicts), ``runtime.trace_enabled`` (bool), ``runtime.trace_finished`` (list of span
dicts), ``runtime.stderr_capture`` (list[str] or None). Capturing works by shadowing the
runtime's ``write_err`` method with an instance attribute that appends to
``runtime.stderr_capture``; ``capture_stderr_take`` removes the shadow again.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from harnpy.runtime.extensions import register_state
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.jsonlib import dumps
from harnpy.stdlib.registry import builtin

_LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "warning": 3, "error": 4, "off": 5}


def _now_iso(thread: Any) -> str:
    ms = thread.runtime.clock.now_ms()
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _enabled(thread: Any, level: str) -> bool:
    current = getattr(thread.runtime, "log_level", "info")
    return _LEVELS[level] >= _LEVELS.get(current, 2)


def emit_log(thread: Any, level: str, message: Any, fields: Any = None) -> None:
    """Write one structured record to stderr when ``level`` passes the current filter."""
    if not _enabled(thread, level):
        return
    record: dict[str, Any] = {
        "level": level,
        "message": text(message),
        "timestamp": _now_iso(thread),
    }
    if type(fields) is dict and fields:
        record["fields"] = fields
    stack = getattr(thread.runtime, "trace_stack", None)
    if stack:
        record["trace_id"] = stack[-1]["trace_id"]
        record["span_id"] = stack[-1]["span_id"]
    thread.write_err(dumps(record) + "\n")


@builtin()
def log_set_level(thread: Any, level: Any = None) -> None:
    """``log_set_level(level)``: ``trace``, ``debug``, ``info``, ``warn``, ``error`` or
    ``off``; records below the level are dropped. Throws on other names."""
    name = text(level).lower()
    if name not in _LEVELS:
        raise fail(f"log_set_level: unknown level '{text(level)}'")
    thread.runtime.log_level = "warn" if name == "warning" else name


@builtin()
def log_get_level(thread: Any) -> str:
    """``log_get_level()``: the current level name."""
    return str(getattr(thread.runtime, "log_level", "info"))


def _logger(level: str) -> Any:
    def fn(thread: Any, message: Any = None, fields: Any = None) -> None:
        emit_log(thread, level, message, fields)

    fn.__doc__ = f"``log_{level}(msg, fields?)``: structured {level} record to stderr."
    return fn


for _level in ("trace", "debug", "info", "warn", "error"):
    builtin(f"log_{_level}")(_logger(_level))


# ------------------------------------------------------------------ spans


def _stack(thread: Any) -> list[dict[str, Any]]:
    stack = getattr(thread.runtime, "trace_stack", None)
    if stack is None:
        stack = []
        thread.runtime.trace_stack = stack
    return stack


@builtin()
def trace_start(thread: Any, name: Any = None, attributes: Any = None) -> dict[str, Any]:
    """``trace_start(name, attrs?)``: open a span nested in the current one; returns
    ``{name, trace_id, span_id, parent_id, start_ms}``."""
    stack = _stack(thread)
    parent = stack[-1] if stack else None
    span: dict[str, Any] = {
        "name": text(name),
        "trace_id": parent["trace_id"] if parent else os.urandom(16).hex(),
        "span_id": os.urandom(8).hex(),
        "parent_id": parent["span_id"] if parent else None,
        "start_ms": thread.runtime.clock.now_ms(),
    }
    if type(attributes) is dict:
        span["attributes"] = attributes
    stack.append(span)
    return span


@builtin()
def trace_end(thread: Any, span: Any = None) -> Any:
    """``trace_end(span)``: close ``span`` (and any spans opened inside it); logs it at
    info level and returns it with ``end_ms`` and ``duration_ms``."""
    if type(span) is not dict or "span_id" not in span:
        raise fail("trace_end: expected a span from trace_start")
    stack = _stack(thread)
    ids = [s["span_id"] for s in stack]
    if span["span_id"] in ids:
        del stack[ids.index(span["span_id"]) :]
    end = thread.runtime.clock.now_ms()
    finished = dict(span)
    finished["end_ms"] = end
    start = span.get("start_ms")
    finished["duration_ms"] = end - start if type(start) is int else 0
    if getattr(thread.runtime, "trace_enabled", False):
        done = getattr(thread.runtime, "trace_finished", None)
        if done is None:
            done = []
            thread.runtime.trace_finished = done
        done.append(finished)
    emit_log(
        thread,
        "info",
        f"span {finished['name']} finished",
        {"duration_ms": finished["duration_ms"], "span_id": finished["span_id"]},
    )
    return finished


@builtin()
def trace_id(thread: Any) -> Any:
    """``trace_id()``: the trace id of the innermost open span, or nil."""
    stack = getattr(thread.runtime, "trace_stack", None)
    return stack[-1]["trace_id"] if stack else None


@builtin()
def enable_tracing(thread: Any, on: Any = True) -> None:
    """``enable_tracing(bool)``: start or stop collecting finished spans."""
    thread.runtime.trace_enabled = on is True
    if on is True and getattr(thread.runtime, "trace_finished", None) is None:
        thread.runtime.trace_finished = []


@builtin()
def trace_spans(thread: Any) -> list[Any]:
    """``trace_spans()``: spans finished while tracing was enabled."""
    return list(getattr(thread.runtime, "trace_finished", None) or [])


@builtin()
def trace_summary(thread: Any) -> str:
    """``trace_summary()``: one line per collected span, ``name: <n>ms``."""
    spans = getattr(thread.runtime, "trace_finished", None) or []
    return "\n".join(f"{s['name']}: {s['duration_ms']}ms" for s in spans)


# ------------------------------------------------------------------ timers


@builtin()
def timer_start(thread: Any, name: Any = None) -> dict[str, Any]:
    """``timer_start(name?)``: ``{name, start_ms}`` with the wall-clock start."""
    return {
        "name": "timer" if name is None else text(name),
        "start_ms": thread.runtime.clock.now_ms(),
    }


@builtin()
def timer_end(thread: Any, timer: Any = None) -> int:
    """``timer_end(t)``: elapsed ms since ``timer_start``; prints ``[timer] NAME: <n>ms``."""
    if type(timer) is not dict or type(timer.get("start_ms")) is not int:
        raise fail("timer_end: expected a timer from timer_start")
    ms = max(0, thread.runtime.clock.now_ms() - timer["start_ms"])
    thread.write_out(f"[timer] {text(timer.get('name'))}: {ms}ms\n")
    return ms


# ------------------------------------------------------------------ stderr capture


@builtin()
def capture_stderr_start(thread: Any) -> None:
    """``capture_stderr_start()``: collect stderr writes until ``capture_stderr_take()``."""
    rt = thread.runtime
    if getattr(rt, "stderr_capture", None) is not None:
        return
    buffer: list[str] = []
    rt.stderr_capture = buffer
    if "write_err" not in vars(rt):
        rt.write_err = buffer.append


@builtin()
def capture_stderr_take(thread: Any) -> str:
    """``capture_stderr_take()``: the captured text; capturing stops."""
    rt = thread.runtime
    buffer = getattr(rt, "stderr_capture", None)
    rt.stderr_capture = None
    if vars(rt).get("write_err") is not None and buffer is not None:
        if getattr(vars(rt)["write_err"], "__self__", None) is buffer:
            del rt.write_err
    return "".join(buffer or [])


# ------------------------------------------------------------------ snapshot state


def _save_log_level(thread: Any) -> str | None:
    level = getattr(thread.runtime, "log_level", None)
    return None if level in (None, "info") else str(level)


def _load_log_level(thread: Any, data: Any) -> Any:
    if data not in _LEVELS:
        raise ValueError(f"unknown log level {data!r}")
    rt = thread.runtime
    return lambda: setattr(rt, "log_level", data)


def _save_trace(thread: Any) -> dict[str, Any] | None:
    """Open spans (innermost last), whether tracing collects, and the finished spans."""
    rt = thread.runtime
    stack = getattr(rt, "trace_stack", None)
    enabled = getattr(rt, "trace_enabled", False)
    finished = getattr(rt, "trace_finished", None)
    if not stack and not enabled and finished is None:
        return None
    return {"stack": list(stack or []), "enabled": enabled is True, "finished": finished}


def _load_trace(thread: Any, data: Any) -> Any:
    stack, enabled, finished = data["stack"], data["enabled"], data["finished"]
    if type(stack) is not list or any(type(s) is not dict or "span_id" not in s for s in stack):
        raise TypeError("the open spans must be a list of span dicts")
    if type(enabled) is not bool or not (finished is None or type(finished) is list):
        raise TypeError("enabled must be a bool and finished a list or nil")
    rt = thread.runtime

    def apply() -> None:
        rt.trace_stack = stack
        rt.trace_enabled = enabled
        rt.trace_finished = finished

    return apply


register_state("log_level", _save_log_level, _load_log_level)
register_state("trace", _save_trace, _load_trace)
