"""Builtins that act on the interpreter itself: snapshots, argv, exit, and the lowering
targets of ``retry``/``deadline``/``spawn``/``parallel``/``select`` (spec 3.12, 3.16).

Tasks (``spawn``, ``parallel``) run on threads of their own, driven by the runtime's
scheduler; their output is buffered and handed to the parent on ``await`` (spec 3.3).
"""

from __future__ import annotations

from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.errors import (
    MAX_BUILD_SIZE,
    SnapshotExit,
    plain_error,
    runtime_error,
    too_large,
)
from harnpy.runtime.scheduler import Block, Waker
from harnpy.runtime.values import (
    CallRequest,
    HostObject,
    RangeValue,
    err,
    ok,
    type_name,
)
from harnpy.stdlib.registry import builtin


@builtin("__snapshot_exit", control=True)
def snapshot_exit(thread: Any, path: Any = None) -> Any:
    """Write the current thread's snapshot to ``path`` and end the process with status 0.

    ``harnpy run --resume PATH`` continues right after this call, which then returns nil.
    Raises a runtime error when the state cannot be snapshotted (the message names the
    variable that holds the offending value); nothing is written then.
    """
    from harnpy.runtime.snapshot import SnapshotError, seal_document, snapshot, write_atomic

    if type(path) is not str or not path:
        raise runtime_error("__snapshot_exit(path): path must be a non-empty string")
    if thread.runtime.snapshot_exit_refusal is not None:
        raise runtime_error(thread.runtime.snapshot_exit_refusal)
    if thread.name == "init":  # Runtime.run_code_sync: an imported module's top level
        # (its snapshot would resume into the initialiser alone, never the main program)
        raise runtime_error(
            "__snapshot_exit: only the main program can be snapshotted, not the top level of "
            "an imported module"
        )
    main = thread.runtime.main_thread
    if main is not None and thread is not main:
        raise runtime_error(
            f"__snapshot_exit: only the main program can be snapshotted, not {thread.name} "
            "(a spawned task or parallel branch)"
        )
    try:
        doc = snapshot(thread)
        write_atomic(path, seal_document(doc), make_dirs=False)
    except SnapshotError as e:
        raise plain_error(f"Runtime error: snapshot failed: {e.message}", e.code) from None
    except OSError as e:
        raise runtime_error(f"snapshot failed: cannot write {path}: {e.strerror or e}") from None
    from harnpy.runtime.sources import persist_sources

    for problem in persist_sources(thread.runtime, doc, snapshot_path=path):
        thread.write_err(f"harnpy: warning: {problem} (a resume then needs the same files)\n")
    raise SnapshotExit(path)


@builtin("argv")
def argv_(thread: Any) -> list[str]:
    """The script's arguments (after ``--`` on the command line), as a list of strings."""
    return list(thread.runtime.argv)


def _parallel_items(thread: Any, mode: str, value: Any) -> PyGenerator[Any, Any, list[Any]]:
    """The items a ``parallel`` expression runs over (callback generator: iters and
    generators/streams are drained first, running their Harn code)."""
    if mode.startswith("count"):
        if type(value) is not int:
            raise runtime_error(f"parallel count must be an int, got {type_name(value)}")
        if value > MAX_BUILD_SIZE:
            raise too_large("parallel", value)
        return list(range(value))
    if type(value) is list:
        return list(value)
    if type(value) is RangeValue:
        return value.to_list("parallel")
    from harnpy.runtime.values import Generator, IterValue
    from harnpy.stdlib.iters import make_iter, pull_all

    if type(value) in (IterValue, Generator):
        return (yield from pull_all(make_iter(value), thread))
    from harnpy.runtime.instrs import iterate_source

    src = iterate_source(value)
    return list(src) if hasattr(src, "__next__") else []


class _Group:
    """The branches of one ``parallel`` expression: which are running, which finished (in
    completion order), and who waits for the next completion."""

    def __init__(self, thread: Any, body: Any, items: list[Any], limit: int, group: str):
        self.thread = thread
        self.body = body
        self.items = items
        self.limit = limit
        self.group = group
        self.runs: list[Any] = [None] * len(items)
        self.next_index = 0
        self.completed: list[int] = []  # indexes in completion order
        self.delivered = 0  # completions handed to a stream consumer
        self.waker: Waker | None = None

    def start_more(self) -> None:
        """Start branches in index order while fewer than ``limit`` are running."""
        from harnpy.stdlib import task_context as tc
        from harnpy.stdlib.concurrency import launch

        while self.next_index < len(self.items) and self.running() < self.limit:
            i = self.next_index
            self.next_index += 1
            ctx = tc.child_context(self.thread, f"{self.group}:{i}", "parallel", self.group)
            self.runs[i] = launch(
                self.thread,
                self.body,
                [self.items[i]],
                name=f"{self.group}:{i}",
                ctx=ctx,
                on_done=lambda run, i=i: self.finished(i),
            )

    def running(self) -> int:
        return sum(1 for r in self.runs if r is not None and not r.done)

    def finished(self, i: int) -> None:
        self.completed.append(i)
        self.start_more()
        w, self.waker = self.waker, None
        if w is not None:
            w.wake(None)

    def wait(self, ready: Any) -> PyGenerator[Any, Any, None]:
        """Block the calling thread until ``ready()`` holds."""
        while not ready():

            def register(w: Waker) -> None:
                self.waker = w

            yield Block(register, f"parallel group {self.group}")


@builtin("__parallel", callback=True)
def parallel_(
    thread: Any, mode: str, value: Any, body: Any, limit: Any = None
) -> PyGenerator[Any, Any, Any]:
    """``parallel n``/``parallel each``/``parallel settle`` (spec 3.16): every branch runs
    as a task of its own (at most ``max_concurrent`` at once, started in index order).
    Results are in input order; the branches' output is written in input order once all
    are done. A failing branch's error (the lowest index) is rethrown after every branch
    ended; ``settle`` collects ``Ok``/``Err`` instead. ``... as stream`` returns at once a
    stream of the results in completion order."""
    from harnpy.stdlib import task_context as tc

    items = yield from _parallel_items(thread, mode, value)
    cap = limit if type(limit) is int and limit > 0 else max(1, len(items))
    g = tc.next_child_number(thread, "parallel")
    group_id = f"{tc.context_of(thread)['task_id']}:parallel:{g}"
    grp = _Group(thread, body, items, cap, group_id)
    grp.start_more()
    if mode.endswith("_stream"):
        return (
            yield CallRequest(_task_stream_fn(thread.runtime), [HostObject("parallel_stream", grp)])
        )
    yield from grp.wait(lambda: len(grp.completed) == len(items))
    for r in grp.runs:
        if r.output:
            thread.write_out(r.output)
    if mode.startswith("settle"):
        results = []
        succeeded = failed = 0
        for r in grp.runs:
            if r.error is not None:
                results.append(err(r.error.message))
                failed += 1
            else:
                results.append(ok(r.result))
                succeeded += 1
        return {"results": results, "succeeded": succeeded, "failed": failed}
    for r in grp.runs:
        if r.error is not None:
            raise r.error
    return [r.result for r in grp.runs]


def _task_stream_fn(runtime: Any) -> Any:
    """The Harn ``gen fn task_stream(src)`` of the bundled helper module (loaded once)."""
    from pathlib import Path

    path = Path(__file__).resolve().parent / "harn" / "task_streams.harn"
    mod = runtime.import_module("harnpy/task_streams", path)
    return mod.globals["task_stream"]


@builtin("__task_stream_next", callback=True)
def task_stream_next(thread: Any, src: Any = None) -> PyGenerator[Any, Any, Any]:
    """Next result of a ``parallel ... as stream`` group in completion order, as
    ``{done, value}``; waits for a running branch; rethrows a failed branch's error. The
    branch's output is written when its result is delivered."""
    if type(src) is not HostObject or src.kind != "parallel_stream":
        raise runtime_error("__task_stream_next: expected a parallel stream")
    grp: _Group = src.obj
    if grp.delivered >= len(grp.items):
        return {"done": True, "value": None}
    yield from grp.wait(lambda: len(grp.completed) > grp.delivered)
    run = grp.runs[grp.completed[grp.delivered]]
    grp.delivered += 1
    if run.output:
        thread.write_out(run.output)
    if run.error is not None:
        raise run.error
    return {"done": False, "value": run.result}
