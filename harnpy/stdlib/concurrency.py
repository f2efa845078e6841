"""Concurrency builtins (spec language.md 3.16, 4.15): tasks, channels, atomics, select.

Tasks are threads of the evaluator scheduled cooperatively by
:class:`~harnpy.runtime.scheduler.Scheduler`. A task's output is buffered and handed to
the thread that awaits it (spec 3.3).
"""

from __future__ import annotations

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
    TaskHandle,
    type_name,
)
from harnpy.stdlib.registry import builtin, method

Gen = PyGenerator[Any, Any, Any]


def start_thread(runtime: Any, fn: Any, args: list[Any], name: str, out: Any = None) -> Any:
    """A new thread whose bottom frame calls ``fn(*args)``; not yet scheduled."""
    from harnpy.runtime.calls import bind_args
    from harnpy.runtime.code import Frame
    from harnpy.runtime.thread import Thread

    th = Thread(runtime, name, out=out)
    if type(fn) is Closure:
        code = fn.code
        argv = [fn.bound_self, *args] if fn.bound_self is not None else list(args)
        slots = bind_args(code, argv, fn.captures, code.name)
        th.frame = Frame(code, slots, th)
        th.depth = 1
    elif type(fn) is Builtin:
        th.frame = None
        th.result = fn.fn(th, *args)
        th.finished = True
    else:
        raise type_error(f"Cannot call {display(fn)}")
    return th


def _ms(v: Any, what: str) -> float:
    if type(v) is Duration:
        return float(v.ms)
    if type(v) in (int, float):
        return float(v)
    raise runtime_error(f"{what}: expected a duration or milliseconds, got {type_name(v)}")


# ------------------------------------------------------------------------ tasks


class _Task:
    """Scheduler bookkeeping of one spawned task (joiners waiting for it)."""

    def __init__(self, handle: TaskHandle) -> None:
        self.handle = handle
        self.joiners: list[Waker] = []


@builtin("__spawn")
def spawn_(thread: Any, body: Any) -> TaskHandle:
    """``spawn { body }``: start ``body`` as a task; returns its handle."""
    rt = thread.runtime
    rt.task_counter = getattr(rt, "task_counter", 0) + 1
    buf: list[str] = []
    th = start_thread(rt, body, [], f"task {rt.task_counter}", out=buf.append)
    h = TaskHandle(rt.task_counter, th)
    task = _Task(h)

    def on_done(result: Any, error: HarnError | None) -> None:
        h.done = True
        h.result = result
        h.error = error
        h.output = "".join(buf)
        for w in task.joiners:
            w.wake(None)
        task.joiners.clear()

    th.on_done = on_done
    th.task = task
    if th.finished:
        on_done(th.result, None)
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
    """``cancel(handle)``: stop a task that has not finished; returns true if it was live."""
    if type(h) is not TaskHandle or h.done:
        return False
    h.cancelled = True
    h.done = True
    th = h.thread
    sched = thread.runtime.scheduler
    if th in sched.ready:
        sched.ready.remove(th)
    sched.blocked.discard(th)
    th.frame = None
    th.finished = True
    for w in th.task.joiners:
        w.wake(None)
    return True


@builtin("is_cancelled")
def is_cancelled(thread: Any, h: Any = None) -> bool:
    """True when ``h`` is a task handle that was cancelled."""
    return type(h) is TaskHandle and h.cancelled


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
    return st  # type: ignore[no-any-return]


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
    """``send(ch, v)``: queue ``v``; blocks while a bounded channel is full."""
    c = _need_channel(ch)
    if c.closed:
        raise runtime_error(f"send on closed channel {c.name}")
    st = _channel_state(c, thread.runtime)
    while c.capacity is not None and len(c.items) >= c.capacity:
        yield Block(lambda w: st["send"].append(w), f"send on {c.name}")
    c.items.append(value)
    if st["recv"]:
        st["recv"].pop(0).wake(None)
    return True


@builtin("receive", callback=True)
def receive(thread: Any, ch: Any = None) -> Gen:
    """``receive(ch)``: next message, waiting for one; nil once closed and drained."""
    c = _need_channel(ch)
    st = _channel_state(c, thread.runtime)
    while not c.items:
        if c.closed:
            return None
        yield Block(lambda w: st["recv"].append(w), f"receive on {c.name}")
    v = c.items.pop(0)
    if st["send"]:
        st["send"].pop(0).wake(None)
    return v


@builtin("try_receive")
def try_receive(thread: Any, ch: Any = None) -> Any:
    """``try_receive(ch)``: next message or nil, never waits."""
    c = _need_channel(ch)
    if not c.items:
        return None
    v = c.items.pop(0)
    st = _channel_state(c, thread.runtime)
    if st["send"]:
        st["send"].pop(0).wake(None)
    return v


@builtin("close_channel")
def close_channel(thread: Any, ch: Any = None) -> None:
    """``close_channel(ch)``: no more sends; waiting receivers get nil."""
    c = _need_channel(ch)
    c.closed = True
    st = _channel_state(c, thread.runtime)
    for w in st["recv"]:
        w.wake(None)
    st["recv"].clear()


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
        st = _channel_state(ch, thread.runtime)
        if st["send"]:
            st["send"].pop(0).wake(None)
        return nxt
    if ch.closed:
        return end
    f.pc = nxt - 1  # waking re-runs this loop instruction
    sched = thread.runtime.scheduler
    st = _channel_state(ch, thread.runtime)

    class _Retry:
        def __init__(self) -> None:
            self.done = False

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
                return (yield CallRequest(c["body"], [v]))
        if default is not None:
            return (yield CallRequest(default["body"], []))
        if all(c["value"].closed for c in recv) and recv and timeout is None:
            return None
        fired = {"timeout": False}

        def register(w: Waker) -> None:
            for c in recv:
                _channel_state(c["value"], thread.runtime)["recv"].append(w)
            if deadline is not None:

                def on_timeout() -> None:
                    fired["timeout"] = True
                    w.wake(None)

                sched.at(deadline, on_timeout)

        yield Block(register, "select")
        if fired["timeout"] and not any(c["value"].items for c in recv):
            assert timeout is not None
            return (yield CallRequest(timeout["body"], []))


@builtin("parallel_race", callback=True)
def parallel_race(thread: Any, items: Any = None, fn: Any = None) -> Gen:
    """``parallel_race(items, f)``: the first result of ``f(item)`` that does not throw
    (items are tried in order; the last error is rethrown when all fail)."""
    if type(items) is not list:
        raise type_error(f"parallel_race: expected a list, got {type_name(items)}")
    last: HarnError | None = None
    for x in items:
        try:
            return (yield CallRequest(fn, [x]))
        except HarnError as e:
            last = e
    if last is not None:
        raise last
    return None


_ = (HarnThrow, plain_error)
