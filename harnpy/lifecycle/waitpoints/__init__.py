"""Durable waitpoints (issue 10 points 2 and 3): ``std/waitpoint`` and the
``waitpoint_*`` builtins, parking a program on a waitpoint in the store, and resuming it
from any process once the waitpoint is completed.

* :mod:`.builtins` — the builtins (in memory without a store; store rows with one);
* :mod:`.durable` — park into / resume from the store, exactly-once claims and fencing;
* :mod:`.state` — per-runtime state: run id, replay-stable submission keys, the claim;
* :mod:`.model` — the dicts scripts see (waitpoints, WaitpointTimeoutError,
  WaitpointCancelledError);
* :mod:`.cli` — ``harnpy waitpoint ls|show|complete|cancel|resume``.

The Python API other hosts call (``harnpy serve``, a replica loop):
:func:`complete_waitpoint`, :func:`cancel_waitpoint`, :func:`resume_ready`,
:func:`resume_waiters` and :func:`resume_checkpoint`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harnpy.lifecycle.waitpoints.durable import ResumeResult
    from harnpy.store import StoreURL
    from harnpy.store.sql import SqlStore

__all__ = [
    "cancel_waitpoint",
    "complete_waitpoint",
    "resume_checkpoint",
    "resume_ready",
    "resume_waiters",
]


def _open(store: SqlStore | StoreURL | str) -> SqlStore:
    from harnpy.lifecycle.waitpoints.stores import shared_store
    from harnpy.store.sql import SqlStore

    return store if isinstance(store, SqlStore) else shared_store(store)


def complete_waitpoint(
    store: SqlStore | StoreURL | str, waitpoint_id: str, value: Any, *, by: str | None = None
) -> bool:
    """Complete the open waitpoint ``waitpoint_id`` in ``store`` (a URL or an opened store)
    with the JSON value ``value``. True for the one completion that wins; False when it is
    not open (completed, cancelled or timed out already) or unknown. The programs parked on
    it become ready: a resumer (:func:`resume_waiters`, :func:`resume_ready`, ``harnpy
    waitpoint resume``) continues them. Safe to call before the waiting program's
    checkpoint committed.

    Raises:
        StoreError: the store cannot be used, or ``value`` is over 4 MiB of JSON.
    """
    return bool(_open(store).complete_waitpoint(waitpoint_id, value, by=by))


def cancel_waitpoint(
    store: SqlStore | StoreURL | str,
    waitpoint_id: str,
    *,
    reason: str | None = None,
    by: str | None = None,
) -> bool:
    """Cancel the open waitpoint ``waitpoint_id``: its waits throw a
    ``WaitpointCancelledError`` with ``reason`` when resumed. False when it is not open.

    Raises:
        StoreError: the store cannot be used.
    """
    return bool(_open(store).cancel_waitpoint(waitpoint_id, error={"reason": reason}, by=by))


def resume_ready(store: SqlStore | StoreURL | str, **kwargs: Any) -> list[ResumeResult]:
    """One pass: time out due timers and resume, in this process, every parked program
    whose wait is over and whose claim this process wins
    (:func:`harnpy.lifecycle.waitpoints.durable.resume_ready`)."""
    from harnpy.lifecycle.waitpoints import durable

    return durable.resume_ready(_open(store), **kwargs)


def resume_waiters(
    store: SqlStore | StoreURL | str, waitpoint_id: str, **kwargs: Any
) -> list[ResumeResult]:
    """Resume, in this process, the programs parked on ``waitpoint_id`` whose wait is over
    (:func:`harnpy.lifecycle.waitpoints.durable.resume_waiters`)."""
    from harnpy.lifecycle.waitpoints import durable

    return durable.resume_waiters(_open(store), waitpoint_id, **kwargs)


def resume_checkpoint(
    store: SqlStore | StoreURL | str, worker_id: str, **kwargs: Any
) -> ResumeResult | None:
    """Resume one parked program (:func:`harnpy.lifecycle.waitpoints.durable.resume_checkpoint`)."""
    from harnpy.lifecycle.waitpoints import durable

    return durable.resume_checkpoint(_open(store), worker_id, **kwargs)
