"""Shapes of durable waitpoints as scripts see them (Harn's ``std/waitpoint`` types).

A waitpoint value is a dict ``{id, status, created_at, completed_at, cancelled_at,
completed_by, cancelled_by, value, reason, metadata, key}`` (times RFC 3339 UTC strings or
nil; ``status`` ``"open"`` / ``"completed"`` / ``"cancelled"`` / ``"timed_out"``; ``key``
the submission key it was created under). Errors a wait throws are dicts too
(``WaitpointTimeoutError`` / ``WaitpointCancelledError``, see :func:`timeout_error`,
:func:`cancelled_error`), so ``try { ... } catch e { e.category }`` works as in Harn.
"""

from __future__ import annotations

import time
from typing import Any

from harnpy.runtime.errors import runtime_error, type_error
from harnpy.runtime.values import Duration

__all__ = [
    "cancelled_error",
    "handle_ids",
    "iso_ms",
    "record_value",
    "timeout_error",
    "timeout_ms",
]


def iso_ms(ms: int | None) -> str | None:
    """An epoch-milliseconds time as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (None stays None)."""
    if ms is None:
        return None
    s, frac = divmod(int(ms), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{frac:03d}Z"


def record_value(rec: Any) -> dict[str, Any]:
    """The script-side dict of a store :class:`~harnpy.store.records.WaitpointRecord`
    (module docstring). ``value`` is the stored JSON (dicts, lists, scalars)."""
    cancelled = rec.status in ("cancelled", "timed_out")
    err = rec.error if isinstance(rec.error, dict) else {}
    meta = dict(rec.metadata or {})
    user_meta = meta.get("user")
    return {
        "id": rec.id,
        "status": rec.status,
        "created_at": iso_ms(rec.created_at_ms),
        "completed_at": iso_ms(rec.completed_at_ms) if rec.status == "completed" else None,
        "cancelled_at": iso_ms(rec.completed_at_ms) if cancelled else None,
        "completed_by": rec.completed_by if rec.status == "completed" else None,
        "cancelled_by": rec.completed_by if cancelled else None,
        "value": rec.value if rec.status == "completed" else None,
        "reason": err.get("reason") if cancelled else None,
        "metadata": user_meta if isinstance(user_meta, dict) else None,
        "key": rec.submission_key,
    }


def handle_ids(name: str, waitpoints: Any) -> tuple[list[str], bool]:
    """The waitpoint ids a ``wait`` names and whether it named a single one: a string id,
    a waitpoint dict (its ``id``) or a list of those (fan-in).

    Raises:
        HarnRuntimeError: anything else, or an empty list.
    """
    if type(waitpoints) is list:
        if not waitpoints:
            raise runtime_error(f"{name}: the list of waitpoints is empty")
        return [_one_id(name, w) for w in waitpoints], False
    return [_one_id(name, waitpoints)], True


def _one_id(name: str, w: Any) -> str:
    if type(w) is str and w:
        return w
    if type(w) is dict and type(w.get("id")) is str and w["id"]:
        return str(w["id"])
    raise type_error(
        f"{name}: a waitpoint is its id (a string) or the dict waitpoint_create returned, "
        f"got {type(w).__name__ if not isinstance(w, (dict, list, str)) else _kind(w)}"
    )


def _kind(v: Any) -> str:
    from harnpy.runtime.values import type_name

    return type_name(v)


def timeout_ms(name: str, options: Any) -> int | None:
    """The ``timeout`` of a wait's options (a duration, or milliseconds as an int), or None.

    Raises:
        HarnRuntimeError: options that are not a dict, or a timeout that is not a
            non-negative duration / int.
    """
    if options is None:
        return None
    if type(options) is not dict:
        raise type_error(f"{name}: options must be a dict like {{timeout: 1h}}")
    t = options.get("timeout")
    if t is None:
        return None
    if type(t) is Duration:
        ms = t.ms
    elif type(t) is int:
        ms = t
    else:
        raise type_error(f"{name}: timeout must be a duration (30s, 1h) or milliseconds")
    if ms < 0:
        raise runtime_error(f"{name}: timeout must not be negative")
    return int(ms)


def timeout_error(wait_id: str, ids: list[str], ms: int | None) -> dict[str, Any]:
    """The ``WaitpointTimeoutError`` a wait throws when its timeout passes first."""
    after = f" after {ms} ms" if ms is not None else ""
    return {
        "name": "WaitpointTimeoutError",
        "category": "timeout",
        "message": f"waitpoint wait timed out{after} ({', '.join(ids)})",
        "wait_id": wait_id,
        "waitpoint_ids": list(ids),
    }


def cancelled_error(wait_id: str, ids: list[str], wp_id: str, reason: Any) -> dict[str, Any]:
    """The ``WaitpointCancelledError`` a wait throws when one of its waitpoints was
    cancelled (or timed out on its own deadline)."""
    why = f": {reason}" if isinstance(reason, str) and reason else ""
    return {
        "name": "WaitpointCancelledError",
        "category": "cancelled",
        "message": f"waitpoint {wp_id} was cancelled{why}",
        "wait_id": wait_id,
        "waitpoint_ids": list(ids),
        "cancelled_waitpoint_id": wp_id,
        "reason": reason if isinstance(reason, str) else None,
    }
