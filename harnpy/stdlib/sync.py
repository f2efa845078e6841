"""Named synchronization primitives: mutexes, semaphores, gates and read-write locks.

Every primitive is a counting semaphore identified by ``(kind, key)`` with a capacity of
permits; state lives on the runtime (``runtime.sync_state``), so any task may use a
primitive by name. An acquire either gets its permits at once, or waits in FIFO order
(a later small request never overtakes an earlier big one, so writers are not starved),
or gives up: after ``timeout_ms`` (``0`` = only try) it returns nil.

A granted acquire returns a *permit*, a dict ``{_type: "sync_permit", id, kind, key,
permits}``; ``sync_release(permit)`` gives the permits back (true), or returns false when
that permit was already released.

Builtins: ``sync_mutex_acquire(key?, timeout_ms?)`` (capacity 1),
``sync_semaphore_acquire(key?, capacity?, permits?, timeout_ms?)``,
``sync_gate_acquire(key?, limit?, timeout_ms?)``, ``sync_rwlock_acquire(key?, mode?,
timeout_ms?)`` (``"read"`` takes 1 of 1024 permits, ``"write"`` all 1024),
``sync_release(permit)``, ``sync_metrics(kind?, key?)``.
"""

from __future__ import annotations

from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import plain_error, runtime_error
from harnpy.runtime.extensions import register_state
from harnpy.runtime.scheduler import Block, Waker
from harnpy.runtime.values import Duration
from harnpy.stdlib.registry import builtin

Gen = PyGenerator[Any, Any, Any]

RWLOCK_CAPACITY = 1024


class _Waiter:
    __slots__ = ("permits", "waker", "thread", "timed_out")

    def __init__(self, permits: int, waker: Waker, thread: Any) -> None:
        self.permits = permits
        self.waker = waker
        self.thread = thread
        self.timed_out = False


class _Sem:
    """One named primitive: capacity, permits in use, holders and FIFO waiters."""

    def __init__(self, kind: str, key: str, capacity: int) -> None:
        self.kind = kind
        self.key = key
        self.capacity = capacity
        self.in_use = 0
        self.holders: dict[str, tuple[Any, int]] = {}  # permit id -> (thread, permits)
        self.waiters: list[_Waiter] = []
        self.acquired = 0
        self.released = 0
        self.timeouts = 0

    def metrics(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "capacity": self.capacity,
            "in_use": self.in_use,
            "available": self.capacity - self.in_use,
            "holders": len(self.holders),
            "waiting": len(self.waiters),
            "acquired_count": self.acquired,
            "released_count": self.released,
            "timeout_count": self.timeouts,
        }


def _state(rt: Any) -> dict[tuple[str, str], _Sem]:
    st = getattr(rt, "sync_state", None)
    if st is None:
        st = rt.sync_state = {}
    return st  # type: ignore[no-any-return]


def _grant(rt: Any, sem: _Sem, thread: Any, permits: int) -> dict[str, Any]:
    rt.sync_permit_counter = getattr(rt, "sync_permit_counter", 0) + 1
    pid = f"permit_{rt.sync_permit_counter}"
    sem.in_use += permits
    sem.acquired += 1
    sem.holders[pid] = (thread, permits)
    return {"_type": "sync_permit", "id": pid, "kind": sem.kind, "key": sem.key, "permits": permits}


def _wake_waiters(rt: Any, sem: _Sem) -> None:
    """Grant permits to waiters in FIFO order while the first one fits."""
    while sem.waiters:
        w = sem.waiters[0]
        if w.waker.done or w.thread.finished:
            sem.waiters.pop(0)
            continue
        if sem.in_use + w.permits > sem.capacity:
            return
        sem.waiters.pop(0)
        w.waker.wake(_grant(rt, sem, w.thread, w.permits))


def _timeout_ms(v: Any) -> float | None:
    """``timeout_ms`` argument: ms number, duration or ``{timeout_ms}``; None = wait."""
    if type(v) is dict:
        v = v.get("timeout_ms", v.get("max_wait_ms"))
    if type(v) is Duration:
        return max(0.0, float(v.ms))
    if type(v) in (int, float):
        return max(0.0, float(v))
    return None


def _positive(v: Any, default: int, what: str, name: str) -> int:
    if v is None:
        return default
    if type(v) is not int:
        raise runtime_error(f"{what}: {name} must be an int")
    if v <= 0:
        raise runtime_error(f"{what}: {name} must be > 0")
    return v


def acquire(
    thread: Any, kind: str, key: str, capacity: int, permits: int, timeout: float | None
) -> Gen:
    """Acquire ``permits`` of primitive ``(kind, key)`` (created with ``capacity``); the
    permit dict, or nil when ``timeout`` ms passed first. Raises a runtime error when the
    request can never be granted (more permits than capacity, or an unbounded wait on
    permits this task already holds)."""
    rt = thread.runtime
    st = _state(rt)
    sem = st.get((kind, key))
    if sem is None:
        sem = st[(kind, key)] = _Sem(kind, key, capacity)
    if permits > sem.capacity:
        raise runtime_error(
            f"sync {kind} '{key}': {permits} permit(s) requested, capacity is {sem.capacity}"
        )
    live = [w for w in sem.waiters if not (w.waker.done or w.thread.finished)]
    if not live and sem.in_use + permits <= sem.capacity:
        return _grant(rt, sem, thread, permits)
    if timeout == 0:
        sem.timeouts += 1
        return None
    if timeout is None:
        held = sum(n for th, n in sem.holders.values() if th is thread)
        if held and held + permits > sem.capacity:
            raise plain_error(
                f"Runtime error: deadlock: re-entrant acquire of {permits} permit(s) of "
                f"{kind} '{key}' while this task already holds {held}/{sem.capacity}",
                "E320",
            )
    box: list[_Waiter] = []

    def register(w: Waker) -> None:
        waiter = _Waiter(permits, w, thread)
        box.append(waiter)
        sem.waiters.append(waiter)
        if timeout is not None:

            def on_timeout() -> None:
                if w.done:
                    return
                waiter.timed_out = True
                if waiter in sem.waiters:
                    sem.waiters.remove(waiter)
                sem.timeouts += 1
                w.wake(None)
                _wake_waiters(rt, sem)

            rt.scheduler.at(rt.clock.monotonic_ms() + timeout, on_timeout)

    permit = yield Block(register, f"{kind} '{key}'")
    return permit


def release(thread: Any, permit: Any) -> bool:
    """Give back the permits of ``permit``; False when it was already released."""
    if type(permit) is not dict or permit.get("_type") != "sync_permit":
        raise runtime_error("sync_release: first argument must be a sync permit")
    rt = thread.runtime
    sem = _state(rt).get((permit.get("kind"), permit.get("key")))  # type: ignore[arg-type]
    if sem is None:
        return False
    held = sem.holders.pop(permit.get("id"), None)  # type: ignore[arg-type]
    if held is None:
        return False
    sem.in_use -= held[1]
    sem.released += 1
    _wake_waiters(rt, sem)
    return True


def held_permits_of(thread: Any) -> list[dict[str, Any]]:
    """The permits thread ``thread`` holds, as ``{kind, key, permit_id, permits}`` dicts."""
    out = []
    for sem in _state(thread.runtime).values():
        for pid, (th, n) in sem.holders.items():
            if th is thread:
                out.append({"kind": sem.kind, "key": sem.key, "permit_id": pid, "permits": n})
    return out


def _key(v: Any, default: str) -> str:
    return default if v is None else display(v)


@builtin("sync_mutex_acquire", callback=True)
def sync_mutex_acquire(thread: Any, key: Any = None, timeout_ms: Any = None) -> Gen:
    """``sync_mutex_acquire(key?, timeout_ms?)``: the permit of mutex ``key`` (default
    ``"__default__"``), waiting for it; nil after ``timeout_ms`` (0 = only try)."""
    return (
        yield from acquire(thread, "mutex", _key(key, "__default__"), 1, 1, _timeout_ms(timeout_ms))
    )


@builtin("sync_semaphore_acquire", callback=True)
def sync_semaphore_acquire(
    thread: Any, key: Any = None, capacity: Any = None, permits: Any = None, timeout: Any = None
) -> Gen:
    """``sync_semaphore_acquire(key?, capacity?, permits?, timeout_ms?)``: take ``permits``
    (default 1) of semaphore ``key`` of ``capacity`` (default 1; fixed when first used).
    Returns the permit, or nil after ``timeout_ms``. Runtime error when capacity or permits
    is not a positive int."""
    cap = _positive(capacity, 1, "sync_semaphore_acquire", "capacity")
    n = _positive(permits, 1, "sync_semaphore_acquire", "permits")
    return (
        yield from acquire(thread, "semaphore", _key(key, "default"), cap, n, _timeout_ms(timeout))
    )


@builtin("sync_gate_acquire", callback=True)
def sync_gate_acquire(thread: Any, key: Any = None, limit: Any = None, timeout: Any = None) -> Gen:
    """``sync_gate_acquire(key?, limit?, timeout_ms?)``: one of ``limit`` (default 1)
    concurrent places of gate ``key``; the permit, or nil after ``timeout_ms``."""
    cap = _positive(limit, 1, "sync_gate_acquire", "limit")
    return (yield from acquire(thread, "gate", _key(key, "default"), cap, 1, _timeout_ms(timeout)))


@builtin("sync_rwlock_acquire", callback=True)
def sync_rwlock_acquire(thread: Any, key: Any = None, mode: Any = None, timeout: Any = None) -> Gen:
    """``sync_rwlock_acquire(key?, mode?, timeout_ms?)``: a ``"read"`` (default; shared)
    or ``"write"`` (exclusive) permit of lock ``key``; nil after ``timeout_ms``. Runtime
    error for another mode."""
    m = "read" if mode is None else display(mode)
    if m not in ("read", "write"):
        raise runtime_error("sync_rwlock_acquire: mode must be read or write")
    n = 1 if m == "read" else RWLOCK_CAPACITY
    return (
        yield from acquire(
            thread, "rwlock", _key(key, "default"), RWLOCK_CAPACITY, n, _timeout_ms(timeout)
        )
    )


@builtin("sync_release")
def sync_release(thread: Any, permit: Any = None) -> bool:
    """``sync_release(permit)``: release a permit; true, or false if already released."""
    return release(thread, permit)


@builtin("sync_metrics")
def sync_metrics(thread: Any, kind: Any = None, key: Any = None) -> Any:
    """``sync_metrics(kind?, key?)``: metrics of one primitive (``{kind, key, capacity,
    in_use, available, holders, waiting, acquired_count, released_count, timeout_count}``)
    when both are given, else a list of them (filtered by ``kind``)."""
    st = _state(thread.runtime)
    if kind is not None and key is not None:
        sem = st.get((display(kind), display(key)))
        if sem is None:
            return _Sem(display(kind), display(key), 0).metrics()
        return sem.metrics()
    return [s.metrics() for (k, _), s in st.items() if kind is None or k == display(kind)]


@builtin("__mutex_enter", callback=True)
def mutex_enter(thread: Any, key: Any = None) -> Gen:
    """Lowering target of ``mutex { body }`` (spec 3.16): wait for the permit of mutex
    ``key`` (default ``"__default__"``, the one ``sync_mutex_acquire()`` names) and return
    it; the compiled block hands it to ``__mutex_exit`` when the body ends or throws."""
    return (yield from acquire(thread, "mutex", _key(key, "__default__"), 1, 1, None))


@builtin("__mutex_exit")
def mutex_exit(thread: Any, permit: Any = None) -> None:
    """Release the permit taken by ``__mutex_enter`` (no-op for nil)."""
    if permit is not None:
        release(thread, permit)


# ------------------------------------------------------------------ snapshot state


class _EndedHolder:
    """Stands, after a restore, for a task that ended while holding permits (they stay
    held, as before the snapshot; no live thread is that holder)."""

    finished = True


def _save_sync(thread: Any) -> dict[str, Any] | None:
    """Every primitive with its counters and held permits: ``{counter, primitives: [[kind,
    key, capacity, acquired, released, timeouts, [[permit id, holder, permits]...]]]}``;
    ``holder`` is ``"self"`` (the snapshotted thread) or ``"ended"`` (a finished task).

    Raises SnapshotError E402 when another live task holds or waits for permits (its
    thread cannot be snapshotted with this one)."""
    from harnpy.runtime.snapshot import SnapshotError

    rt = thread.runtime
    st: dict[tuple[str, str], _Sem] | None = getattr(rt, "sync_state", None)
    if not st:
        return None
    prims = []
    for sem in st.values():
        holders = []
        for pid, (th, n) in sem.holders.items():
            if th is thread:
                who = "self"
            elif getattr(th, "finished", False):
                who = "ended"
            else:
                raise SnapshotError(
                    f"cannot snapshot: the running task {getattr(th, 'name', '?')} holds "
                    f"{n} permit(s) of {sem.kind} '{sem.key}'",
                    "E402",
                )
            holders.append([pid, who, n])
        for w in sem.waiters:
            if not (w.waker.done or w.thread.finished):
                raise SnapshotError(
                    f"cannot snapshot: the task {getattr(w.thread, 'name', '?')} is waiting "
                    f"for {sem.kind} '{sem.key}'",
                    "E402",
                )
        prims.append(
            [sem.kind, sem.key, sem.capacity, sem.acquired, sem.released, sem.timeouts, holders]
        )
    return {"counter": getattr(rt, "sync_permit_counter", 0), "primitives": prims}


def _load_sync(thread: Any, data: Any) -> Any:
    counter = data["counter"]
    if type(counter) is not int:
        raise TypeError("the permit counter must be an int")
    st: dict[tuple[str, str], _Sem] = {}
    ended = _EndedHolder()
    for kind, key, capacity, acquired, released, timeouts, holders in data["primitives"]:
        if not all(type(x) is str for x in (kind, key)) or not all(
            type(x) is int for x in (capacity, acquired, released, timeouts)
        ):
            raise TypeError(f"malformed primitive record for {kind!r} {key!r}")
        sem = _Sem(kind, key, capacity)
        sem.acquired, sem.released, sem.timeouts = acquired, released, timeouts
        for pid, who, n in holders:
            if type(pid) is not str or who not in ("self", "ended") or type(n) is not int:
                raise TypeError(f"malformed permit record {pid!r} of {kind} {key!r}")
            sem.holders[pid] = (thread if who == "self" else ended, n)
            sem.in_use += n
        st[(kind, key)] = sem
    rt = thread.runtime

    def apply() -> None:
        rt.sync_state = st
        rt.sync_permit_counter = counter

    return apply


register_state("sync", _save_sync, _load_sync)
