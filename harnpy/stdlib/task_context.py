"""Per-task runtime context: task ids, ambient context values, cooperative cancellation.

Every thread carries a context record in ``thread.locals["runtime_context"]`` (created on
first use; the main thread is the root task ``task_root``). Spawned tasks, ``parallel``
branches and supervisor children get a child record whose ids extend the parent's
(``task_root:spawn:1``, ``task_root:parallel:1:0``) and a copy of the parent's context
values, so a child's ``runtime_context_set`` never leaks to its parent.

Cancellation is cooperative: a thread's :class:`CancelToken` (``thread.locals``) is set by
``cancel``/``supervisor_stop``; ``is_cancelled()`` and ``runtime_context().cancelled`` read it.

Builtins: ``runtime_context()``, ``task_current()``, ``runtime_context_values()``,
``runtime_context_get(key, default?)``, ``runtime_context_set(key, value)``,
``runtime_context_clear(key)``.
"""

from __future__ import annotations

from typing import Any

from harnpy.runtime.errors import runtime_error
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin

_CTX = "runtime_context"
_TOKEN = "cancel_token"


class CancelToken:
    """A cancellation flag shared by whoever may cancel a thread and the thread itself."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


def _root() -> dict[str, Any]:
    return {
        "task_id": "task_root",
        "parent_task_id": None,
        "root_task_id": "task_root",
        "task_name": "root",
        "task_group_id": None,
        "scope_id": None,
        "values": {},
        "counters": {},
    }


def context_of(thread: Any) -> dict[str, Any]:
    """The context record of ``thread`` (a Python dict; the root record when unset).

    Keys: ``task_id``, ``parent_task_id``, ``root_task_id``, ``task_name``,
    ``task_group_id``, ``scope_id`` (strings or None), ``values`` (the Harn dict of context
    values) and ``counters`` (ids handed out to children, by kind).
    """
    ctx = thread.locals.get(_CTX)
    if ctx is None:
        ctx = thread.locals[_CTX] = _root()
    return ctx  # type: ignore[no-any-return]


def next_child_number(thread: Any, kind: str) -> int:
    """Count one more child of ``kind`` (``"spawn"``, ``"parallel"``) of this task; 1-based."""
    counters = context_of(thread)["counters"]
    counters[kind] = counters.get(kind, 0) + 1
    return counters[kind]  # type: ignore[no-any-return]


def child_context(
    parent: Any, task_id: str, task_name: str, group_id: str | None
) -> dict[str, Any]:
    """A context record for a child task of thread ``parent`` (values copied)."""
    p = context_of(parent)
    return {
        "task_id": task_id,
        "parent_task_id": p["task_id"],
        "root_task_id": p["root_task_id"],
        "task_name": task_name,
        "task_group_id": group_id,
        "scope_id": p["scope_id"],
        "values": dict(p["values"]),
        "counters": {},
    }


def install(thread: Any, ctx: dict[str, Any], token: CancelToken | None = None) -> CancelToken:
    """Give ``thread`` the context ``ctx`` and a cancel token (a new one unless given)."""
    thread.locals[_CTX] = ctx
    tok = token if token is not None else CancelToken()
    thread.locals[_TOKEN] = tok
    return tok


def cancel_token(thread: Any) -> CancelToken:
    """The cancel token of ``thread`` (created on first use)."""
    tok = thread.locals.get(_TOKEN)
    if tok is None:
        tok = thread.locals[_TOKEN] = CancelToken()
    return tok  # type: ignore[no-any-return]


def is_cancel_requested(thread: Any) -> bool:
    """True once someone asked ``thread`` to stop."""
    tok = thread.locals.get(_TOKEN)
    return tok is not None and tok.cancelled


def context_value(thread: Any) -> dict[str, Any]:
    """The Harn dict ``runtime_context()`` returns for ``thread`` (fresh copy)."""
    ctx = context_of(thread)
    cancelled = is_cancel_requested(thread)
    out: dict[str, Any] = {
        "task_id": ctx["task_id"],
        "parent_task_id": ctx["parent_task_id"],
        "root_task_id": ctx["root_task_id"],
        "task_name": ctx["task_name"],
        "task_group_id": ctx["task_group_id"],
        "scope_id": ctx["scope_id"],
    }
    for k in (
        "workflow_id",
        "run_id",
        "stage_id",
        "worker_id",
        "agent_session_id",
        "parent_agent_session_id",
        "root_agent_session_id",
        "agent_name",
        "trigger_id",
        "trigger_event_id",
        "binding_key",
        "tenant_id",
        "provider",
        "trace_id",
        "span_id",
        "scheduler_key",
        "runner",
        "capacity_class",
    ):
        out[k] = None
    out["context_values"] = dict(ctx["values"])
    out["cancelled"] = cancelled
    out["debug"] = _debug_value(thread, cancelled)
    return out


def _debug_value(thread: Any, cancelled: bool) -> dict[str, Any]:
    from harnpy.stdlib.supervisors import supervisor_debug_values
    from harnpy.stdlib.sync import held_permits_of

    rt = thread.runtime
    active = [
        context_of(th)["task_id"]
        for th in list(rt.scheduler.ready) + list(rt.scheduler.blocked)
        if th is not thread and _CTX in th.locals
    ]
    return {
        "cancelled": cancelled,
        "waiting_reason": None,
        "active_task_ids": sorted(active),
        "held_synchronization": held_permits_of(thread),
        "supervisors": supervisor_debug_values(rt),
    }


def _key(k: Any, what: str) -> str:
    if type(k) is not str:
        raise runtime_error(f"{what}: first argument must be a string key")
    return k


@builtin("runtime_context")
def runtime_context(thread: Any) -> dict[str, Any]:
    """``runtime_context()``: the current task's ids, context values, cancellation flag and
    a ``debug`` view (active tasks, held permits, supervisors)."""
    return context_value(thread)


@builtin("task_current")
def task_current(thread: Any) -> dict[str, Any]:
    """``task_current()``: same record as ``runtime_context()`` for the running task."""
    return context_value(thread)


@builtin("runtime_context_values")
def runtime_context_values(thread: Any) -> dict[str, Any]:
    """``runtime_context_values()``: a copy of this task's ambient context values."""
    return dict(context_of(thread)["values"])


@builtin("runtime_context_get")
def runtime_context_get(thread: Any, key: Any = None, default: Any = None) -> Any:
    """``runtime_context_get(key, default?)``: a context value, else ``default`` (nil)."""
    values = context_of(thread)["values"]
    k = _key(key, "runtime_context_get")
    return values[k] if k in values else default


@builtin("runtime_context_set")
def runtime_context_set(thread: Any, key: Any = None, value: Any = None) -> Any:
    """``runtime_context_set(key, value)``: set a context value for this task and the
    tasks it starts afterwards; returns the previous value (nil when unset)."""
    values = context_of(thread)["values"]
    k = _key(key, "runtime_context_set")
    old = values.get(k)
    values[k] = value
    return old


@builtin("runtime_context_clear")
def runtime_context_clear(thread: Any, key: Any = None) -> Any:
    """``runtime_context_clear(key)``: remove a context value; returns the removed value."""
    values = context_of(thread)["values"]
    return values.pop(_key(key, "runtime_context_clear"), None)


# ------------------------------------------------------------------ snapshot state

_CTX_FIELDS = ("task_id", "parent_task_id", "root_task_id", "task_name", "task_group_id")


def _save_context(thread: Any) -> dict[str, Any] | None:
    """The snapshotted thread's context record (ids, values, child counters) and whether
    it was asked to stop; None while it has the untouched root context."""
    if not hasattr(thread, "locals"):
        return None
    ctx = thread.locals.get(_CTX)
    cancelled = is_cancel_requested(thread)
    if ctx is None and not cancelled:
        return None
    return {"context": dict(ctx) if ctx is not None else None, "cancelled": cancelled}


def _load_context(thread: Any, data: Any) -> Any:
    ctx, cancelled = data["context"], data["cancelled"]
    if type(cancelled) is not bool:
        raise TypeError("cancelled must be a bool")
    if ctx is not None:
        if type(ctx) is not dict or type(ctx.get("values")) is not dict:
            raise TypeError("the context record must be a dict with a values dict")
        if type(ctx.get("counters")) is not dict:
            raise TypeError("the context record's counters must be a dict")
        for f in _CTX_FIELDS:
            if not (ctx.get(f) is None or type(ctx.get(f)) is str):
                raise TypeError(f"the context record's {f} must be a string or nil")

    def apply() -> None:
        if ctx is not None:
            thread.locals[_CTX] = ctx
        if cancelled:
            cancel_token(thread).cancelled = True

    return apply


register_state("runtime_context", _save_context, _load_context)
