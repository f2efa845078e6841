"""Scoped shared state: cells, maps, mailboxes; and named circuit breakers.

Shared cells and maps are the one way for tasks to share mutable data besides atomics.
Each lives under a *scope* resolved from the opening task's runtime context (``task_group``
by default: the ``parallel`` group, else the root task), so tasks of one group open the
same cell by key. Handles are plain dicts ``{_type, scope, key}``; the data itself is on
the runtime (``runtime.shared_state``). Every write bumps a version; ``*_snapshot`` returns
``{_type: "shared_snapshot", value, version}`` and a compare-and-swap given a snapshot
succeeds only when both the value and the version still match (a stale snapshot fails
and counts as a stale read).

Mailboxes are named bounded channels under the same scoping (``mailbox_send("name", v)``
from any task of the scope).

Circuit breakers (``circuit_breaker(name, threshold?, reset_ms?)``) count failures: at
``threshold`` consecutive failures the circuit is ``"open"``; after ``reset_ms`` it reads
``"half_open"`` (one probe allowed: a success closes it, a failure opens it again).
"""

from __future__ import annotations

from collections.abc import Generator as PyGenerator
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.extensions import register_state
from harnpy.runtime.ops import values_equal
from harnpy.runtime.values import Channel, Duration
from harnpy.stdlib.registry import builtin
from harnpy.stdlib.task_context import context_of

Gen = PyGenerator[Any, Any, Any]
Scoped = tuple[str, str]


# ----------------------------------------------------------------------- scopes


def resolve_scope(thread: Any, raw: str | None, options: dict[str, Any] | None, what: str) -> str:
    """The scope id ``"<scope>:<id>"`` of scope name ``raw`` (default ``task_group``) for
    the running task. Runtime error for ``durable``/``external`` scopes and a ``tenant``
    scope without a ``tenant_id``."""
    ctx = context_of(thread)
    scope = raw or "task_group"
    root = ctx["root_task_id"] or "task_root"
    if scope in ("task", "task_local", "task-local"):
        resolved = ctx["task_id"] or "task_root"
    elif scope in ("root_task", "root-task"):
        resolved = root
    elif scope in (
        "task_group",
        "task-group",
        "workflow",
        "workflow_local",
        "workflow-local",
        "workflow_run",
        "workflow-run",
        "run",
        "agent_session",
        "agent-session",
        "session",
    ):
        resolved = ctx["task_group_id"] or root
    elif scope in ("tenant", "tenant_scoped", "tenant-scoped"):
        tenant = (options or {}).get("tenant_id") or ctx["values"].get("tenant_id")
        if not tenant:
            raise runtime_error(
                f"{what}: tenant scope requires tenant_id in options or runtime context"
            )
        resolved = display(tenant)
    elif scope in ("process", "global"):
        resolved = "process"
    elif scope in ("durable", "event_log", "event-log"):
        raise runtime_error(
            f"{what}: durable shared state is explicit; use store_* or agent_state_* APIs"
        )
    elif scope in ("external", "host"):
        raise runtime_error(
            f"{what}: external shared state must be provided by a host/connector builtin"
        )
    else:
        resolved = scope
    return f"{scope}:{resolved}"


def _opt_str(d: dict[str, Any], k: str) -> str | None:
    v = d.get(k)
    if v is None or v == "":
        return None
    return display(v)


def _open_args(thread: Any, arg: Any, what: str, key_field: str) -> tuple[Scoped, dict | None]:
    options = arg if type(arg) is dict else None
    if options is not None:
        key = _opt_str(options, key_field) or _opt_str(options, "key") or _opt_str(options, "name")
    else:
        key = display(arg) if arg is not None and display(arg) != "" else None
    if key is None:
        raise runtime_error(f"{what}: key/name is required")
    raw = _opt_str(options, "scope") if options is not None else None
    return (resolve_scope(thread, raw, options, what), key), options


def _handle(kind: str, scoped: Scoped) -> dict[str, Any]:
    return {"_type": kind, "scope": scoped[0], "key": scoped[1]}


def _scoped(thread: Any, v: Any, kind: str, what: str) -> Scoped:
    """The scoped key of a handle dict of ``kind``, or of a name in the default scope."""
    if v is None:
        raise runtime_error(f"{what}: handle is required")
    if type(v) is dict:
        if v.get("_type") != kind:
            raise runtime_error(f"{what}: expected {kind} handle")
        scope, key = v.get("scope"), v.get("key")
        if not scope:
            raise runtime_error(f"{what}: {kind} handle missing scope")
        if not key:
            raise runtime_error(f"{what}: {kind} handle missing key")
        return display(scope), display(key)
    name = display(v)
    if not name:
        raise runtime_error(f"{what}: name must not be empty")
    return resolve_scope(thread, None, None, what), name


# ------------------------------------------------------------------ cells, maps


class _Metrics:
    __slots__ = ("reads", "writes", "cas_ok", "cas_fail", "stale")

    def __init__(self) -> None:
        self.reads = self.writes = self.cas_ok = self.cas_fail = self.stale = 0

    def value(self, version: int) -> dict[str, Any]:
        return {
            "version": version,
            "read_count": self.reads,
            "write_count": self.writes,
            "cas_success_count": self.cas_ok,
            "cas_failure_count": self.cas_fail,
            "stale_read_count": self.stale,
        }


class _Cell:
    def __init__(self, value: Any) -> None:
        self.value = value
        self.version = 0
        self.metrics = _Metrics()


class _Map:
    def __init__(self, entries: dict[str, Any] | None) -> None:
        self.entries: dict[str, Any] = dict(entries or {})
        self.version = 0
        self.metrics = _Metrics()


class _Mailbox:
    def __init__(self, name: str, capacity: int) -> None:
        self.channel = Channel(name, capacity)
        self.capacity = capacity
        self.sent = self.received = self.failed = 0

    def metrics(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "depth": len(self.channel.items),
            "sent_count": self.sent,
            "received_count": self.received,
            "failed_send_count": self.failed,
            "closed": self.channel.closed,
        }


class _Shared:
    def __init__(self) -> None:
        self.cells: dict[Scoped, _Cell] = {}
        self.maps: dict[Scoped, _Map] = {}
        self.mailboxes: dict[Scoped, _Mailbox] = {}
        self.circuits: dict[str, dict[str, Any]] = {}


def _shared(thread: Any) -> _Shared:
    rt = thread.runtime
    st = getattr(rt, "shared_state", None)
    if st is None:
        st = rt.shared_state = _Shared()
    return st  # type: ignore[no-any-return]


def _snapshot(value: Any, version: int) -> dict[str, Any]:
    return {"_type": "shared_snapshot", "value": value, "version": version}


def _expected(v: Any) -> tuple[Any, int | None]:
    if type(v) is dict and v.get("_type") == "shared_snapshot":
        ver = v.get("version")
        return v.get("value"), ver if type(ver) is int and ver >= 0 else None
    return v, None


def _cell(thread: Any, h: Any, what: str) -> _Cell:
    scoped = _scoped(thread, h, "shared_cell", what)
    cells = _shared(thread).cells
    c = cells.get(scoped)
    if c is None:
        c = cells[scoped] = _Cell(None)
    return c


def _map(thread: Any, h: Any, what: str) -> _Map:
    scoped = _scoped(thread, h, "shared_map", what)
    maps = _shared(thread).maps
    m = maps.get(scoped)
    if m is None:
        m = maps[scoped] = _Map(None)
    return m


@builtin("shared_scope_id")
def shared_scope_id(thread: Any, scope: Any = None, options: Any = None) -> str:
    """``shared_scope_id(scope?, options?)``: the resolved scope id, e.g.
    ``"task_group:task_root"``."""
    opts = options if type(options) is dict else None
    return resolve_scope(thread, None if scope is None else display(scope), opts, "shared_scope_id")


@builtin("shared_cell")
def shared_cell(thread: Any, options: Any = None, initial: Any = None) -> dict[str, Any]:
    """``shared_cell({scope?, key, initial?})`` or ``shared_cell(key, initial?)``: open (or
    create with ``initial``) a shared cell; returns its handle."""
    scoped, opts = _open_args(thread, options, "shared_cell", "key")
    init = opts["initial"] if opts is not None and "initial" in opts else initial
    cells = _shared(thread).cells
    if scoped not in cells:
        cells[scoped] = _Cell(init)
    return _handle("shared_cell", scoped)


@builtin("shared_get")
def shared_get(thread: Any, handle: Any = None) -> Any:
    """``shared_get(cell)``: the cell's value."""
    c = _cell(thread, handle, "shared_get")
    c.metrics.reads += 1
    return c.value


@builtin("shared_snapshot")
def shared_snapshot(thread: Any, handle: Any = None) -> dict[str, Any]:
    """``shared_snapshot(cell)``: ``{_type: "shared_snapshot", value, version}``."""
    c = _cell(thread, handle, "shared_snapshot")
    c.metrics.reads += 1
    return _snapshot(c.value, c.version)


@builtin("shared_set")
def shared_set(thread: Any, handle: Any = None, value: Any = None) -> Any:
    """``shared_set(cell, value)``: store ``value``; returns the previous value."""
    c = _cell(thread, handle, "shared_set")
    old, c.value = c.value, value
    c.version += 1
    c.metrics.writes += 1
    return old


@builtin("shared_cas")
def shared_cas(thread: Any, *args: Any) -> bool:
    """``shared_cas(cell, expected, value)``: store ``value`` when the cell equals
    ``expected`` (a plain value, or a snapshot whose version must also match)."""
    if len(args) < 3:
        raise runtime_error("shared_cas: requires handle, expected, and new value")
    c = _cell(thread, args[0], "shared_cas")
    exp, ver = _expected(args[1])
    if (ver is None or ver == c.version) and values_equal(c.value, exp):
        c.value = args[2]
        c.version += 1
        c.metrics.writes += 1
        c.metrics.cas_ok += 1
        return True
    c.metrics.cas_fail += 1
    if ver is not None and ver != c.version:
        c.metrics.stale += 1
    return False


@builtin("shared_map")
def shared_map(thread: Any, options: Any = None, initial: Any = None) -> dict[str, Any]:
    """``shared_map({scope?, key, initial?})`` or ``shared_map(key, initial?)``: open (or
    create with the ``initial`` dict) a shared map; returns its handle."""
    scoped, opts = _open_args(thread, options, "shared_map", "key")
    init = opts.get("initial") if opts is not None and "initial" in opts else initial
    maps = _shared(thread).maps
    if scoped not in maps:
        maps[scoped] = _Map(init if type(init) is dict else None)
    return _handle("shared_map", scoped)


def _need(args: tuple[Any, ...], n: int, msg: str) -> None:
    if len(args) < n:
        raise runtime_error(msg)


@builtin("shared_map_get")
def shared_map_get(thread: Any, *args: Any) -> Any:
    """``shared_map_get(map, key, default?)``: an entry, else ``default`` (nil)."""
    _need(args, 2, "shared_map_get: requires handle and key")
    m = _map(thread, args[0], "shared_map_get")
    m.metrics.reads += 1
    k = display(args[1])
    return m.entries[k] if k in m.entries else (args[2] if len(args) > 2 else None)


@builtin("shared_map_snapshot")
def shared_map_snapshot(thread: Any, *args: Any) -> dict[str, Any]:
    """``shared_map_snapshot(map, key)``: the entry and the map's version as a snapshot."""
    _need(args, 2, "shared_map_snapshot: requires handle and key")
    m = _map(thread, args[0], "shared_map_snapshot")
    m.metrics.reads += 1
    return _snapshot(m.entries.get(display(args[1])), m.version)


@builtin("shared_map_entries")
def shared_map_entries(thread: Any, handle: Any = None) -> dict[str, Any]:
    """``shared_map_entries(map)``: a copy of all entries as a dict."""
    m = _map(thread, handle, "shared_map_entries")
    m.metrics.reads += 1
    return dict(m.entries)


@builtin("shared_map_set")
def shared_map_set(thread: Any, *args: Any) -> Any:
    """``shared_map_set(map, key, value)``: store an entry; returns the previous value."""
    _need(args, 3, "shared_map_set: requires handle, key, and value")
    m = _map(thread, args[0], "shared_map_set")
    k = display(args[1])
    old = m.entries.get(k)
    m.entries[k] = args[2]
    m.version += 1
    m.metrics.writes += 1
    return old


@builtin("shared_map_delete")
def shared_map_delete(thread: Any, *args: Any) -> Any:
    """``shared_map_delete(map, key)``: remove an entry; returns the removed value."""
    _need(args, 2, "shared_map_delete: requires handle and key")
    m = _map(thread, args[0], "shared_map_delete")
    old = m.entries.pop(display(args[1]), None)
    if old is not None:
        m.version += 1
        m.metrics.writes += 1
    return old


@builtin("shared_map_cas")
def shared_map_cas(thread: Any, *args: Any) -> bool:
    """``shared_map_cas(map, key, expected, value)``: compare-and-swap one entry
    (``expected`` a value or a snapshot); a nil ``value`` deletes the entry."""
    _need(args, 4, "shared_map_cas: requires handle, key, expected, and new value")
    m = _map(thread, args[0], "shared_map_cas")
    k = display(args[1])
    exp, ver = _expected(args[2])
    if (ver is None or ver == m.version) and values_equal(m.entries.get(k), exp):
        if args[3] is None:
            m.entries.pop(k, None)
        else:
            m.entries[k] = args[3]
        m.version += 1
        m.metrics.writes += 1
        m.metrics.cas_ok += 1
        return True
    m.metrics.cas_fail += 1
    if ver is not None and ver != m.version:
        m.metrics.stale += 1
    return False


@builtin("shared_metrics")
def shared_metrics(thread: Any, handle: Any = None) -> Any:
    """``shared_metrics(handle)``: ``{version, read_count, write_count, cas_success_count,
    cas_failure_count, stale_read_count}`` of a cell or map (mailboxes: their metrics);
    without a handle, a list of every object's metrics with ``_type``/``scope``/``key``."""
    sh = _shared(thread)
    if type(handle) is dict:
        kind = handle.get("_type")
        if kind is None:
            raise runtime_error("shared_metrics: handle missing _type")
        kind = display(kind)
        scoped = _scoped(thread, handle, kind, "shared_metrics")
        if kind == "shared_cell":
            c = sh.cells.get(scoped)
            return c.metrics.value(c.version) if c else _Metrics().value(0)
        if kind == "shared_map":
            m = sh.maps.get(scoped)
            return m.metrics.value(m.version) if m else _Metrics().value(0)
        if kind == "mailbox":
            mb = sh.mailboxes.get(scoped)
            return mb.metrics() if mb else _Mailbox("", 0).metrics()
    out: list[Any] = []
    for s, c in sh.cells.items():
        out.append({**c.metrics.value(c.version), **_handle("shared_cell", s)})
    for s, m in sh.maps.items():
        out.append({**m.metrics.value(m.version), **_handle("shared_map", s)})
    for s, mb in sh.mailboxes.items():
        out.append({**mb.metrics(), **_handle("mailbox", s)})
    return out


# --------------------------------------------------------------------- mailboxes


def _mailbox(thread: Any, target: Any, what: str) -> tuple[Scoped, _Mailbox | None]:
    scoped = _scoped(thread, target, "mailbox", what)
    return scoped, _shared(thread).mailboxes.get(scoped)


@builtin("mailbox_open")
def mailbox_open(thread: Any, options: Any = None, capacity: Any = None) -> dict[str, Any]:
    """``mailbox_open({scope?, name, capacity?})`` or ``mailbox_open(name, capacity?)``:
    open (or create; capacity default 256) a mailbox; returns its handle. Runtime error
    when capacity is not a positive int."""
    scoped, opts = _open_args(thread, options, "mailbox_open", "name")
    cap = opts.get("capacity") if opts is not None and "capacity" in opts else capacity
    if cap is None:
        cap = 256
    if type(cap) is not int or cap < 1:
        raise runtime_error("mailbox_open: capacity must be >= 1")
    boxes = _shared(thread).mailboxes
    if scoped not in boxes:
        boxes[scoped] = _Mailbox(scoped[1], cap)
    return _handle("mailbox", scoped)


@builtin("mailbox_lookup")
def mailbox_lookup(thread: Any, target: Any = None) -> Any:
    """``mailbox_lookup(name | handle)``: the mailbox's handle, or nil when not open."""
    scoped, mb = _mailbox(thread, target, "mailbox_lookup")
    return _handle("mailbox", scoped) if mb is not None else None


@builtin("mailbox_send", callback=True)
def mailbox_send(thread: Any, target: Any = None, *rest: Any) -> Gen:
    """``mailbox_send(name | handle, value)``: queue a message, waiting while the mailbox
    is full; true, or false when there is no such mailbox or it is closed."""
    from harnpy.stdlib.concurrency import send

    if not rest:
        raise runtime_error("mailbox_send: requires target and value")
    _, mb = _mailbox(thread, target, "mailbox_send")
    if mb is None:
        return False
    ok = yield from send(thread, mb.channel, rest[0])
    if ok:
        mb.sent += 1
    else:
        mb.failed += 1
    return ok


@builtin("mailbox_try_receive")
def mailbox_try_receive(thread: Any, target: Any = None) -> Any:
    """``mailbox_try_receive(target)``: the next message, or nil without waiting."""
    from harnpy.stdlib.concurrency import try_receive

    _, mb = _mailbox(thread, target, "mailbox_try_receive")
    if mb is None or not mb.channel.items:
        return None
    mb.received += 1
    return try_receive(thread, mb.channel)


@builtin("mailbox_receive", callback=True)
def mailbox_receive(thread: Any, target: Any = None) -> Gen:
    """``mailbox_receive(target)``: the next message, waiting for one; nil when there is
    no such mailbox, or once it is closed and drained."""
    from harnpy.stdlib.concurrency import receive_item

    _, mb = _mailbox(thread, target, "mailbox_receive")
    if mb is None:
        return None
    got, v = yield from receive_item(thread, mb.channel)
    if got:
        mb.received += 1
    return v


@builtin("mailbox_close")
def mailbox_close(thread: Any, target: Any = None) -> bool:
    """``mailbox_close(target)``: close the mailbox; true when it was open."""
    from harnpy.stdlib.concurrency import channel_close

    _, mb = _mailbox(thread, target, "mailbox_close")
    if mb is None or mb.channel.closed:
        return False
    channel_close(thread.runtime, mb.channel)
    return True


@builtin("mailbox_metrics")
def mailbox_metrics(thread: Any, target: Any = None) -> dict[str, Any]:
    """``mailbox_metrics(target)``: ``{capacity, depth, sent_count, received_count,
    failed_send_count, closed}``."""
    _, mb = _mailbox(thread, target, "mailbox_metrics")
    return mb.metrics() if mb is not None else _Mailbox("", 0).metrics()


# --------------------------------------------------------------- circuit breakers


def _circuit_name(v: Any, what: str) -> str:
    if type(v) is not str:
        raise runtime_error(f"{what}: name must be a string")
    return v


def _ms_arg(v: Any, default: int, what: str, name: str, minimum: int) -> float:
    if v is None:
        return float(default)
    ms = v.ms if type(v) is Duration else v
    if type(ms) not in (int, float) or type(ms) is bool or ms < minimum:
        raise runtime_error(f"{what}: {name} must be >= {minimum}")
    return float(ms)


def _circuit(thread: Any, name: str) -> dict[str, Any]:
    circuits = _shared(thread).circuits
    c = circuits.get(name)
    if c is None:
        c = circuits[name] = {"threshold": 5, "reset_ms": 30000.0, "failures": 0, "opened": None}
    return c


def _circuit_status(thread: Any, c: dict[str, Any]) -> str:
    if c["opened"] is None:
        return "closed"
    if thread.runtime.clock.monotonic_ms() - c["opened"] >= c["reset_ms"]:
        return "half_open"
    return "open"


@builtin("circuit_breaker")
def circuit_breaker(thread: Any, name: Any = None, threshold: Any = None, reset: Any = None) -> str:
    """``circuit_breaker(name, threshold?, reset_ms?)``: create or reset circuit ``name``
    (threshold default 5 failures, reset after 30000 ms); returns the name."""
    n = _circuit_name(name, "circuit_breaker")
    th = _ms_arg(threshold, 5, "circuit_breaker", "threshold", 1)
    ms = _ms_arg(reset, 30000, "circuit_breaker", "reset_ms", 0)
    _shared(thread).circuits[n] = {
        "threshold": int(th),
        "reset_ms": ms,
        "failures": 0,
        "opened": None,
    }
    return n


@builtin("circuit_check")
def circuit_check(thread: Any, name: Any = None) -> str:
    """``circuit_check(name)``: ``"closed"``, ``"open"`` or ``"half_open"``."""
    return _circuit_status(thread, _circuit(thread, _circuit_name(name, "circuit_check")))


@builtin("circuit_record_success")
def circuit_record_success(thread: Any, name: Any = None) -> None:
    """``circuit_record_success(name)``: a success closes the circuit and clears failures."""
    c = _circuit(thread, _circuit_name(name, "circuit_record_success"))
    c["failures"] = 0
    c["opened"] = None


@builtin("circuit_record_failure")
def circuit_record_failure(thread: Any, name: Any = None) -> bool:
    """``circuit_record_failure(name)``: count a failure; true when the circuit is open
    afterwards (threshold reached, or a failed half-open probe)."""
    c = _circuit(thread, _circuit_name(name, "circuit_record_failure"))
    status = _circuit_status(thread, c)
    c["failures"] += 1
    if status == "half_open" or c["failures"] >= c["threshold"]:
        c["opened"] = thread.runtime.clock.monotonic_ms()
        return True
    return False


@builtin("circuit_reset")
def circuit_reset(thread: Any, name: Any = None) -> None:
    """``circuit_reset(name)``: close the circuit and clear its failures."""
    c = _circuit(thread, _circuit_name(name, "circuit_reset"))
    c["failures"] = 0
    c["opened"] = None


# ------------------------------------------------------------------ snapshot state

_METRIC_FIELDS = _Metrics.__slots__


def _save_shared(thread: Any) -> dict[str, Any] | None:
    """Every cell, map, mailbox and circuit breaker of the runtime, as snapshot data:
    ``cells`` / ``maps``: ``[scope, key, value-or-entries, version, [metrics...]]``;
    ``mailboxes``: ``[scope, key, channel, capacity, sent, received, failed]``;
    ``circuits``: name -> record."""
    st: _Shared | None = getattr(thread.runtime, "shared_state", None)
    if st is None or not (st.cells or st.maps or st.mailboxes or st.circuits):
        return None

    def metrics(m: _Metrics) -> list[int]:
        return [getattr(m, f) for f in _METRIC_FIELDS]

    return {
        "cells": [[s, k, c.value, c.version, metrics(c.metrics)] for (s, k), c in st.cells.items()],
        "maps": [[s, k, m.entries, m.version, metrics(m.metrics)] for (s, k), m in st.maps.items()],
        "mailboxes": [
            [s, k, b.channel, b.capacity, b.sent, b.received, b.failed]
            for (s, k), b in st.mailboxes.items()
        ],
        "circuits": {n: dict(c) for n, c in st.circuits.items()},
    }


def _load_shared(thread: Any, data: Any) -> Any:
    st = _Shared()

    def ints(xs: Any, n: int) -> list[int]:
        if type(xs) is not list or len(xs) != n or any(type(x) is not int for x in xs):
            raise TypeError(f"expected {n} ints, got {xs!r}")
        return xs

    def scoped(rec: Any, n: int) -> Scoped:
        if type(rec) is not list or len(rec) != n:
            raise TypeError(f"expected a record of {n} fields, got {rec!r}")
        if type(rec[0]) is not str or type(rec[1]) is not str:
            raise TypeError("scope and key must be strings")
        return rec[0], rec[1]

    def restore_metrics(target: _Metrics, values: Any) -> None:
        for f, v in zip(_METRIC_FIELDS, ints(values, len(_METRIC_FIELDS)), strict=True):
            setattr(target, f, v)

    for rec in data["cells"]:
        cell = _Cell(rec[2])
        cell.version = ints([rec[3]], 1)[0]
        restore_metrics(cell.metrics, rec[4])
        st.cells[scoped(rec, 5)] = cell
    for rec in data["maps"]:
        if type(rec[2]) is not dict:
            raise TypeError("a shared map's entries must be a dict")
        m = _Map(None)
        m.entries = rec[2]
        m.version = ints([rec[3]], 1)[0]
        restore_metrics(m.metrics, rec[4])
        st.maps[scoped(rec, 5)] = m
    for rec in data["mailboxes"]:
        key = scoped(rec, 7)
        if type(rec[2]) is not Channel:
            raise TypeError("a mailbox must hold a channel")
        box = _Mailbox(rec[2].name, ints([rec[3]], 1)[0])
        box.channel = rec[2]
        box.sent, box.received, box.failed = ints(rec[4:], 3)
        st.mailboxes[key] = box
    circuits = data["circuits"]
    if type(circuits) is not dict or any(type(c) is not dict for c in circuits.values()):
        raise TypeError("circuits must be a dict of records")
    st.circuits = circuits
    rt = thread.runtime
    return lambda: setattr(rt, "shared_state", st)


register_state("shared", _save_shared, _load_shared)
