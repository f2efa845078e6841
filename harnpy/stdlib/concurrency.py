"""Concurrency builtins (spec language.md 3.16, 4.15): tasks, channels, atomics, select.

Tasks are threads of the evaluator scheduled cooperatively by
:class:`~harnpy.runtime.scheduler.Scheduler`. A task's output is buffered and handed to
the thread that awaits it (spec 3.3).
"""

from __future__ import annotations

import math
from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnThrow, plain_error, runtime_error, type_error
from harnpy.runtime.scheduler import Block, Waker
from harnpy.runtime.values import (
    Atomic,
    Builtin,
    CallRequest,
    Channel,
    Closure,
    Duration,
    StructType,
    TaskHandle,
    type_name,
)
from harnpy.stdlib.registry import builtin, method

Gen = PyGenerator[Any, Any, Any]


def start_thread(runtime: Any, fn: Any, args: list[Any], name: str, out: Any = None) -> Any:
    """A new thread whose bottom frame calls ``fn(*args)``; not yet scheduled."""
    from harnpy.runtime.calls import closure_slots
    from harnpy.runtime.code import Frame
    from harnpy.runtime.thread import Thread

    th = Thread(runtime, name, out=out)
    if type(fn) is Closure:
        th.frame = Frame(fn.code, closure_slots(fn, list(args)), th)
        th.depth = 1
    elif type(fn) is Builtin:
        from harnpy.stdlib.registry import ARGUMENT_ERRORS, argument_error, fit_args

        th.frame = None
        try:
            th.result = fn.fn(th, *fit_args(fn, list(args)))
        except ARGUMENT_ERRORS as e:
            bad = argument_error(e)
            if bad is None:
                raise
            raise bad from None
        th.finished = True
    elif type(fn) is StructType:
        th.frame = None
        th.result = fn.construct(list(args))
        th.finished = True
    else:
        raise type_error(f"Cannot call {display(fn)}")
    return th


class TaskRun:
    """One task started by :func:`launch`: its thread, buffered output and outcome.

    ``done`` turns true exactly once, when the task returned (``result``), failed
    (``error``) or was killed (``killed``); ``output`` is the text it printed.
    """

    __slots__ = ("thread", "buf", "done", "result", "error", "killed")

    def __init__(self) -> None:
        self.thread: Any = None
        self.buf: list[str] = []
        self.done = False
        self.result: Any = None
        self.error: HarnError | None = None
        self.killed = False

    @property
    def output(self) -> str:
        """Everything the task printed so far."""
        return "".join(self.buf)


def launch(
    parent: Any,
    fn: Any,
    args: list[Any],
    *,
    name: str,
    ctx: dict[str, Any] | None = None,
    token: Any = None,
    on_done: Any = None,
) -> TaskRun:
    """Start ``fn(*args)`` as a new scheduled thread (child task of thread ``parent``).

    ``ctx`` is the child's runtime-context record (see :mod:`harnpy.stdlib.task_context`;
    default: a copy of the parent's), ``token`` its cancel token (default: new).
    ``on_done(run)`` is called once when the task ends (also when it is killed with
    :func:`kill_task`); it may run synchronously when ``fn`` is a builtin.
    Raises a type error when ``fn`` is not callable.
    """
    from harnpy.stdlib import task_context as tc

    run = TaskRun()
    rt = parent.runtime
    th = start_thread(rt, fn, args, name, out=run.buf.append)
    run.thread = th
    if ctx is None:
        p = tc.context_of(parent)
        ctx = tc.child_context(parent, p["task_id"], p["task_name"] or "task", p["task_group_id"])
    tc.install(th, ctx, token)

    def finished(result: Any, error: HarnError | None) -> None:
        if run.done:
            return
        run.done = True
        run.result = result
        run.error = error
        if on_done is not None:
            on_done(run)

    th.on_done = finished
    if th.finished:
        finished(th.result, None)
    else:
        rt.scheduler.add(th)
    return run


def kill_thread(runtime: Any, th: Any) -> None:
    """Stop thread ``th`` at once (it never runs again); its ``on_done`` is not called."""
    sched = runtime.scheduler
    if th in sched.ready:
        sched.ready.remove(th)
    sched.blocked.discard(th)
    th.on_done = None
    th.frame = None
    th.finished = True
    th.blocked_on = None


def kill_task(run: TaskRun) -> bool:
    """Stop a task started by :func:`launch`; True when it was still running. Its
    ``on_done`` is called with ``run.killed`` set."""
    if run.done:
        return False
    th = run.thread
    cb = getattr(th, "on_done", None)
    kill_thread(th.runtime, th)
    run.killed = True
    if cb is not None:
        cb(None, None)
    return True


#: Longest sleep accepted, in milliseconds (100 years, the limit trigger timeouts have too):
#: every deadline stays a date the host clock can represent.
MAX_SLEEP_MS = 100 * 365 * 24 * 3600 * 1000


def _ms(v: Any, what: str) -> float:
    """A sleep's length in milliseconds. Raises a catchable runtime error naming ``what``
    for a value that is not a duration or number, NaN, or over :data:`MAX_SLEEP_MS`."""
    if type(v) is Duration:
        ms = float(v.ms)
    elif type(v) in (int, float):
        try:
            ms = float(v)
        except OverflowError:
            ms = math.inf
    else:
        raise runtime_error(f"{what}: expected a duration or milliseconds, got {type_name(v)}")
    if ms != ms:
        raise runtime_error(f"{what}: the duration is NaN")
    if ms > MAX_SLEEP_MS:
        shown = "an infinite time" if ms == math.inf else f"{ms:.0f} ms"
        raise runtime_error(f"{what}: {shown} is too long (at most {MAX_SLEEP_MS} ms, 100 years)")
    return ms


# ------------------------------------------------------------------------ tasks


class _Task:
    """Scheduler bookkeeping of one spawned task (joiners waiting for it)."""

    def __init__(self, handle: TaskHandle) -> None:
        self.handle = handle
        self.joiners: list[Waker] = []


@builtin("__spawn")
def spawn_(thread: Any, body: Any) -> TaskHandle:
    """``spawn { body }``: start ``body`` as a task; returns its handle. The task's
    runtime context is a child of the caller's (``<parent>:spawn:<n>``)."""
    from harnpy.stdlib import task_context as tc

    rt = thread.runtime
    rt.task_counter = getattr(rt, "task_counter", 0) + 1
    n = tc.next_child_number(thread, "spawn")
    parent = tc.context_of(thread)
    ctx = tc.child_context(
        thread, f"{parent['task_id']}:spawn:{n}", "spawn", parent["task_group_id"]
    )
    holder: list[TaskHandle] = []

    def on_done(run: TaskRun) -> None:
        h = holder[0]
        h.done = True
        h.result = run.result
        h.error = run.error
        h.output = run.output
        for w in h.thread.task.joiners:
            w.wake(None)
        h.thread.task.joiners.clear()

    # the handle must exist before the task can finish (a builtin body ends at once)
    run = TaskRun()
    th = start_thread(rt, body, [], f"task {rt.task_counter}", out=run.buf.append)
    run.thread = th
    tc.install(th, ctx)
    h = TaskHandle(rt.task_counter, th)
    holder.append(h)
    th.task = _Task(h)
    th.task_run = run

    def finished(result: Any, error: HarnError | None) -> None:
        if run.done:
            return
        run.done = True
        run.result = result
        run.error = error
        on_done(run)

    th.on_done = finished
    if th.finished:
        finished(th.result, None)
    else:
        rt.scheduler.add(th)
    return h


@builtin("await", callback=True)
def await_(thread: Any, h: Any = None) -> Gen:
    """``await(handle)``: wait for a task; its buffered output is written, its value returned
    (its error rethrown). Non-task values are returned unchanged."""
    if type(h) is not TaskHandle:
        return h
    if h.cancelled:
        return None
    if not h.done:
        task = h.thread.task

        def register(w: Waker) -> None:
            task.joiners.append(w)

        yield Block(register, f"task {h.id}")
    if h.output:
        thread.write_out(h.output)
        h.output = ""
    if h.error is not None:
        raise h.error
    return h.result


@builtin("cancel")
def cancel(thread: Any, h: Any = None) -> bool:
    """``cancel(handle)``: stop a task that has not finished; returns true if it was live.
    Its waiters resume (``await`` then gives nil)."""
    from harnpy.stdlib import task_context as tc

    if type(h) is not TaskHandle or h.done:
        return False
    h.cancelled = True
    h.done = True
    th = h.thread
    tc.cancel_token(th).cancelled = True
    kill_thread(thread.runtime, th)
    for w in th.task.joiners:
        w.wake(None)
    th.task.joiners.clear()
    return True


@builtin("is_cancelled")
def is_cancelled(thread: Any, h: Any = None) -> bool:
    """``is_cancelled(handle)``: true when the task was cancelled. ``is_cancelled()``: true
    once the running task was asked to stop (``cancel``, ``supervisor_stop``)."""
    if h is None:
        from harnpy.stdlib.task_context import is_cancel_requested

        return is_cancel_requested(thread)
    return type(h) is TaskHandle and h.cancelled


@builtin("yield_now", callback=True)
def yield_now(thread: Any) -> Gen:
    """``yield_now()``: let every other ready task run before this one continues."""
    yield Block(lambda w: w.wake(None), "yield_now")
    return None


@builtin("sleep", callback=True)
def sleep(thread: Any, duration: Any = None) -> Gen:
    """``sleep(ms | duration)``: pause this thread; others run meanwhile. Under
    ``mock_time`` the mock clock jumps forward instead of waiting."""
    ms = _ms(duration if duration is not None else 0, "sleep")
    if ms > 0:
        yield thread.runtime.scheduler.sleep(ms)
    return None


@builtin("sleep_ms", callback=True)
def sleep_ms(thread: Any, ms: Any = None) -> Gen:
    """``sleep_ms(ms)``: like ``sleep``."""
    n = _ms(ms if ms is not None else 0, "sleep_ms")
    if n > 0:
        yield thread.runtime.scheduler.sleep(n)
    return None


# --------------------------------------------------------------------- channels


def _channel_state(ch: Channel, rt: Any) -> dict[str, list[Waker]]:
    waits = getattr(rt, "channel_waiters", None)
    if waits is None:
        waits = rt.channel_waiters = {}
    st = waits.get(id(ch))
    if st is None:
        st = waits[id(ch)] = {"recv": [], "send": []}
    return st  # type: ignore[no-any-return,return-value]


def _wake_one(waiters: list[Any]) -> None:
    """Wake the first waiter that still waits (skipping ones already woken elsewhere, e.g.
    by another case of a ``select``, and ones of killed threads)."""
    while waiters:
        w = waiters.pop(0)
        if w.done:
            continue
        th = w.thread if hasattr(w, "thread") else w.frame.thread
        if th.finished:
            continue
        w.wake(None)
        return


def channel_push(runtime: Any, ch: Channel, value: Any) -> None:
    """Queue ``value`` on ``ch`` without waiting (ignores capacity); wakes one receiver."""
    ch.items.append(value)
    _wake_one(_channel_state(ch, runtime)["recv"])


def channel_close(runtime: Any, ch: Channel) -> None:
    """Close ``ch``: waiting receivers get nil (once drained), waiting senders get false."""
    ch.closed = True
    st = _channel_state(ch, runtime)
    for w in st["recv"] + st["send"]:
        w.wake(None)
    st["recv"].clear()
    st["send"].clear()


@builtin("channel")
def channel(thread: Any, name: Any = None, capacity: Any = None) -> Channel:
    """``channel(name?, capacity?)``: a new FIFO channel (unbounded without capacity)."""
    if type(name) is int and capacity is None:
        name, capacity = None, name
    rt = thread.runtime
    rt.channel_counter = getattr(rt, "channel_counter", 0) + 1
    label = name if type(name) is str else f"ch{rt.channel_counter}"
    cap = capacity if type(capacity) is int and capacity > 0 else None
    return Channel(label, cap)


def _need_channel(ch: Any) -> Channel:
    if type(ch) is not Channel:
        raise type_error("first argument must be a channel")
    return ch


@builtin("send", callback=True)
def send(thread: Any, ch: Any = None, value: Any = None) -> Gen:
    """``send(ch, v)``: queue ``v``; blocks while a bounded channel is full. Returns true,
    or false when the channel is (or gets) closed."""
    c = _need_channel(ch)
    if c.closed:
        return False
    st = _channel_state(c, thread.runtime)
    while c.capacity is not None and len(c.items) >= c.capacity:
        yield Block(lambda w: st["send"].append(w), f"send on {c.name}")
        if c.closed:
            return False
    c.items.append(value)
    _wake_one(st["recv"])
    return True


def receive_item(thread: Any, c: Channel) -> Gen:
    """Wait for the next message of ``c``: ``(True, message)``, or ``(False, None)`` once
    the channel is closed and drained."""
    st = _channel_state(c, thread.runtime)
    while not c.items:
        if c.closed:
            return False, None
        yield Block(lambda w: st["recv"].append(w), f"receive on {c.name}")
    v = c.items.pop(0)
    _wake_one(st["send"])
    return True, v


@builtin("receive", callback=True)
def receive(thread: Any, ch: Any = None) -> Gen:
    """``receive(ch)``: next message, waiting for one; nil once closed and drained."""
    _, v = yield from receive_item(thread, _need_channel(ch))
    return v


@builtin("try_receive")
def try_receive(thread: Any, ch: Any = None) -> Any:
    """``try_receive(ch)``: next message or nil, never waits."""
    c = _need_channel(ch)
    if not c.items:
        return None
    v = c.items.pop(0)
    _wake_one(_channel_state(c, thread.runtime)["send"])
    return v


@builtin("close_channel")
def close_channel(thread: Any, ch: Any = None) -> None:
    """``close_channel(ch)``: no more sends; waiting receivers get nil."""
    channel_close(thread.runtime, _need_channel(ch))


@method("channel", "iter")
def channel__iter(thread: Any, ch: Channel) -> Any:
    """``ch.iter()``: an iter over the messages queued now."""
    from harnpy.stdlib.iters import make_iter

    return make_iter(ch)


def channel_next_for(thread: Any, f: Any, ch: Channel, var_slot: int, end: int, nxt: int) -> int:
    """``for x in ch``: next message into ``var_slot``; end once closed and drained; when
    empty, block and re-run the loop instruction after a send or close."""
    from harnpy.runtime.code import STOP

    if ch.items:
        f.slots[var_slot] = ch.items.pop(0)
        _wake_one(_channel_state(ch, thread.runtime)["send"])
        return nxt
    if ch.closed:
        return end
    f.pc = nxt - 1  # waking re-runs this loop instruction
    sched = thread.runtime.scheduler
    st = _channel_state(ch, thread.runtime)

    class _Retry:
        def __init__(self) -> None:
            self.done = False
            self.thread = thread

        def wake(self, value: Any = None) -> None:
            if not self.done:
                self.done = True
                sched.make_ready(thread)

        def fail(self, exc: Any) -> None:
            self.wake()

    st["recv"].append(_Retry())  # type: ignore[arg-type]
    thread.blocked_on = f"receive on {ch.name}"
    sched.blocked.add(thread)
    return STOP


# ---------------------------------------------------------------------- atomics


def _need_atomic(a: Any, what: str) -> Atomic:
    if type(a) is not Atomic:
        raise type_error(f"{what}: first argument must be an atomic, got {type_name(a)}")
    return a


@builtin("atomic")
def atomic(thread: Any, init: Any = 0) -> Atomic:
    """``atomic(init?)``: a shared mutable cell (default 0)."""
    return Atomic(init)


@builtin("atomic_get")
def atomic_get(thread: Any, a: Any = None) -> Any:
    """Current value of the atomic."""
    return _need_atomic(a, "atomic_get").value


@builtin("atomic_set")
def atomic_set(thread: Any, a: Any = None, v: Any = None) -> Any:
    """Set the value; returns the previous one."""
    at = _need_atomic(a, "atomic_set")
    old = at.value
    at.value = v
    return old


@builtin("atomic_add")
def atomic_add(thread: Any, a: Any = None, d: Any = 1) -> Any:
    """Add ``d``; returns the previous value."""
    from harnpy.runtime.ops import add

    at = _need_atomic(a, "atomic_add")
    old = at.value
    at.value = add(old, d)
    return old


@builtin("atomic_cas")
def atomic_cas(thread: Any, a: Any = None, expected: Any = None, new: Any = None) -> bool:
    """Compare-and-swap: set ``new`` when the value equals ``expected``; returns success."""
    from harnpy.runtime.ops import values_equal

    at = _need_atomic(a, "atomic_cas")
    if values_equal(at.value, expected):
        at.value = new
        return True
    return False


# ----------------------------------------------------------------------- select


@builtin("__select", callback=True)
def select_(thread: Any, cases: list[dict[str, Any]]) -> Gen:
    """``select { x from ch { } timeout d { } default { } }``: run the first ready case."""
    recv = [c for c in cases if c["kind"] == "recv"]
    default = next((c for c in cases if c["kind"] == "default"), None)
    timeout = next((c for c in cases if c["kind"] == "timeout"), None)
    for c in recv:
        _need_channel(c["value"])
    sched = thread.runtime.scheduler
    deadline = None
    if timeout is not None:
        deadline = thread.runtime.clock.monotonic_ms() + _ms(timeout["value"], "select timeout")
    while True:
        for c in recv:
            ch: Channel = c["value"]
            if ch.items:
                v = ch.items.pop(0)
                _wake_one(_channel_state(ch, thread.runtime)["send"])
                return (yield CallRequest(c["body"], [v]))
        if default is not None:
            return (yield CallRequest(default["body"], []))
        if all(c["value"].closed for c in recv) and recv and timeout is None:
            return None

        def register(w: Waker) -> None:
            for c in recv:
                _channel_state(c["value"], thread.runtime)["recv"].append(w)
            if deadline is not None:
                sched.at(deadline, lambda: w.wake(None))

        yield Block(register, "select")
        if (
            deadline is not None
            and thread.runtime.clock.monotonic_ms() >= deadline
            and not any(c["value"].items for c in recv)
        ):
            assert timeout is not None
            return (yield CallRequest(timeout["body"], []))


def _race_cap(v: Any, total: int) -> int:
    if type(v) is dict:
        v = v.get("max_concurrent")
    if v is None or (type(v) is int and v <= 0):
        return total
    if type(v) is not int:
        raise type_error(f"parallel_race: max_concurrent must be an int, got {type_name(v)}")
    return min(v, total)


@builtin("parallel_race", callback=True)
def parallel_race(thread: Any, items: Any = None, fn: Any = None, cap: Any = None) -> Gen:
    """``parallel_race(items, f, max_concurrent?)``: run ``f(item)`` for the items
    concurrently (at most ``max_concurrent`` at once, an int or ``{max_concurrent}``); the
    first call to finish without failing wins and the others are cancelled. A call fails
    when it throws or returns ``Err``; a winning ``Ok(v)`` gives ``v``. Runtime errors:
    ``parallel_race: expected at least one item`` and, when every call failed,
    ``parallel_race: all N task(s) failed: <messages joined by "; ">``."""
    from harnpy.runtime.values import EnumValue
    from harnpy.stdlib import task_context as tc

    if type(items) is not list:
        raise type_error(f"parallel_race: first argument must be a list, got {type_name(items)}")
    if type(fn) not in (Closure, Builtin, StructType):
        raise type_error(f"parallel_race: argument 2 must be callable, got {type_name(fn)}")
    if not items:
        raise runtime_error("parallel_race: expected at least one item")
    slots = _race_cap(cap, len(items))
    g = tc.next_child_number(thread, "race")
    group = f"{tc.context_of(thread)['task_id']}:race:{g}"
    state: dict[str, Any] = {"winner": None, "next": 0, "waker": None}
    failures: list[str] = []
    runs: list[TaskRun] = []

    def start_next() -> None:
        while (
            state["winner"] is None
            and state["next"] < len(items)
            and sum(1 for r in runs if not r.done) < slots
        ):
            i = state["next"]
            state["next"] += 1
            ctx = tc.child_context(thread, f"{group}:{i}", "race", group)
            runs.append(
                launch(thread, fn, [items[i]], name=f"{group}:{i}", ctx=ctx, on_done=on_done)
            )

    def settled() -> bool:
        return state["winner"] is not None or len(failures) == len(items)

    def on_done(run: TaskRun) -> None:
        if run.killed or state["winner"] is not None:
            return
        v = run.result
        if run.error is not None:
            failures.append(run.error.message)
        elif type(v) is EnumValue and v.enum == "Result" and v.variant == "Err":
            failures.append(display(v.fields[0] if v.fields else None))
        else:
            state["winner"] = run
        start_next()
        w = state["waker"]
        if w is not None and settled():
            w.wake(None)

    def register(w: Waker) -> None:
        state["waker"] = w

    start_next()
    while not settled():
        yield Block(register, "parallel_race")
    for r in runs:
        if not r.done:
            tc.cancel_token(r.thread).cancelled = True
            kill_task(r)
    win: TaskRun | None = state["winner"]
    if win is None:
        raise runtime_error(
            f"parallel_race: all {len(failures)} task(s) failed: {'; '.join(failures)}"
        )
    if win.output:
        thread.write_out(win.output)
    v = win.result
    if type(v) is EnumValue and v.enum == "Result" and v.variant == "Ok":
        return v.fields[0] if v.fields else None
    return v


# ------------------------------------------------------------ channel selection


def _select_result(i: int, ch: Channel, v: Any) -> dict[str, Any]:
    return {"index": i, "value": v, "channel": ch.name}


def _poll(thread: Any, chans: list[Channel]) -> tuple[dict[str, Any] | None, bool]:
    """First ready channel's message as a select result, and whether all are closed."""
    for i, ch in enumerate(chans):
        if ch.items:
            v = ch.items.pop(0)
            _wake_one(_channel_state(ch, thread.runtime)["send"])
            return _select_result(i, ch, v), False
    return None, all(ch.closed for ch in chans)


def _select_wait(thread: Any, chans: list[Channel], deadline: float | None) -> Gen:
    """Wait for a message on any of ``chans``; returns ``(result, all_closed)`` where the
    result is None on timeout."""
    sched = thread.runtime.scheduler
    clock = thread.runtime.clock
    while True:
        found, closed = _poll(thread, chans)
        if found is not None or closed:
            return found, closed
        if deadline is not None and clock.monotonic_ms() >= deadline:
            return None, False

        def register(w: Waker) -> None:
            for ch in chans:
                _channel_state(ch, thread.runtime)["recv"].append(w)
            if deadline is not None:
                sched.at(deadline, lambda: w.wake(None))

        yield Block(register, "select")


def _channel_list(v: Any, what: str) -> list[Channel]:
    if type(v) is not list:
        raise HarnThrow(f"{what}: first argument must be a list of channels")
    for c in v:
        if type(c) is not Channel:
            raise HarnThrow(f"{what}: channel list must contain only channels")
    return list(v)


def _timeout_ms(v: Any) -> float | None:
    if type(v) is dict:
        v = v.get("timeout_ms", v.get("max_wait_ms"))
    if type(v) is Duration:
        return max(0.0, float(v.ms))
    if type(v) in (int, float):
        return max(0.0, float(v))
    return None


@builtin("channel_select", callback=True)
def channel_select(thread: Any, channels: Any = None, timeout: Any = None) -> Gen:
    """``channel_select(channels, timeout_ms?)``: the first message of any channel as
    ``{index, value, channel}`` (channel = its name); nil on timeout or when every channel
    is closed and drained. Without a timeout it waits as long as needed."""
    chans = _channel_list(channels, "channel_select")
    ms = _timeout_ms(timeout)
    deadline = None if ms is None else thread.runtime.clock.monotonic_ms() + ms
    found, _ = yield from _select_wait(thread, chans, deadline)
    return found


@builtin("channel_is_closed")
def channel_is_closed(thread: Any, ch: Any = None) -> bool:
    """``channel_is_closed(ch)``: true once ``close_channel`` was called on it."""
    if type(ch) is not Channel:
        raise HarnThrow("channel_is_closed: first argument must be a channel")
    return ch.closed


_ = (HarnThrow, plain_error)
