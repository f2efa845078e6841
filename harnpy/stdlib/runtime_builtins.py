"""Builtins that act on the interpreter itself: snapshots, argv, exit, and the lowering
targets of ``retry``/``deadline``/``spawn``/``parallel``/``select`` (spec 3.12, 3.16).

Tasks (``spawn``, ``parallel``) run on threads of their own, driven by the runtime's
scheduler; their output is buffered and handed to the parent on ``await`` (spec 3.3).
"""

from __future__ import annotations

from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.errors import HarnError, HarnThrow, SnapshotExit, plain_error, runtime_error
from harnpy.runtime.values import CallRequest, Duration, RangeValue, err, ok, type_name
from harnpy.stdlib.registry import builtin


@builtin("__snapshot_exit", control=True)
def snapshot_exit(thread: Any, path: Any = None) -> Any:
    """Write the current thread's snapshot to ``path`` and end the process with status 0.

    ``harnpy run --resume PATH`` continues right after this call, which then returns nil.
    Raises a runtime error when the state cannot be snapshotted (the message names the
    variable that holds the offending value); nothing is written then.
    """
    from harnpy.runtime.snapshot import SnapshotError, dumps, snapshot, write_atomic

    if type(path) is not str or not path:
        raise runtime_error("__snapshot_exit(path): path must be a non-empty string")
    try:
        doc = snapshot(thread)
        write_atomic(path, dumps(doc))
    except SnapshotError as e:
        raise plain_error(f"Runtime error: snapshot failed: {e.message}", e.code) from None
    except OSError as e:
        raise runtime_error(f"snapshot failed: cannot write {path}: {e.strerror or e}") from None
    raise SnapshotExit(path)


@builtin("argv")
def argv_(thread: Any) -> list[str]:
    """The script's arguments (after ``--`` on the command line), as a list of strings."""
    return list(thread.runtime.argv)


@builtin("__retry", callback=True)
def retry_(thread: Any, count: Any, body: Any) -> PyGenerator[Any, Any, Any]:
    """``retry n { body }``: run ``body`` up to ``n`` times until it does not throw; after
    the last failure rethrow its error (spec 3.12)."""
    n = count if type(count) is int else 1
    last: HarnError | None = None
    for _ in range(max(1, n)):
        try:
            return (yield CallRequest(body, []))
        except HarnError as e:
            last = e
    assert last is not None
    raise last


@builtin("__deadline", callback=True)
def deadline_(thread: Any, duration: Any, body: Any) -> PyGenerator[Any, Any, Any]:
    """``deadline d { body }``: the body's value, or throw ``Deadline exceeded`` when the
    body ran longer than ``d`` (checked when the body completes, on the runtime clock)."""
    ms = duration.ms if type(duration) is Duration else duration
    if type(ms) not in (int, float):
        raise runtime_error(f"deadline expects a duration, got {type_name(duration)}")
    clock = thread.runtime.clock
    start = clock.monotonic_ms()
    value = yield CallRequest(body, [])
    if clock.monotonic_ms() - start > ms:
        raise HarnThrow("Deadline exceeded")
    return value


@builtin("__parallel", callback=True)
def parallel_(
    thread: Any, mode: str, value: Any, body: Any, limit: Any = None
) -> PyGenerator[Any, Any, Any]:
    """``parallel``/``parallel each``/``parallel settle`` run sequentially in index order
    (spec 3.16 allows it when results and output order match)."""
    if mode.startswith("count"):
        if type(value) is not int:
            raise runtime_error(f"parallel count must be an int, got {type_name(value)}")
        items: list[Any] = list(range(value))
    elif type(value) is list:
        items = list(value)
    elif type(value) is RangeValue:
        items = list(value.py_range())
    else:
        from harnpy.runtime.instrs import iterate_source

        src = iterate_source(value)
        items = list(src) if hasattr(src, "__next__") else []
    if mode.startswith("settle"):
        results = []
        succeeded = failed = 0
        for x in items:
            try:
                r = yield CallRequest(body, [x])
                results.append(ok(r))
                succeeded += 1
            except HarnError as e:
                results.append(err(e.message))
                failed += 1
        return {"results": results, "succeeded": succeeded, "failed": failed}
    out = []
    for x in items:
        out.append((yield CallRequest(body, [x])))
    if mode.endswith("_stream"):
        from harnpy.runtime.values import IterValue

        return IterValue(iter(out))
    return out
