"""Durable state: one store interface, named by a URL, over SQLite, PostgreSQL and files.

A store holds what must outlive a process: worker checkpoints (snapshot documents, at most
4 MiB, JSON-validated on write and read) with their claims, committed transcripts, durable
resume waits, durable waitpoints, runs with their events and sessions (``harnpy serve``),
named leases, an audit log and module sources. It is named by a URL
(:mod:`harnpy.store.url`): ``sqlite:///PATH`` (``default`` = ``.harn/harnpy.sqlite3``),
``postgresql://...`` (psycopg 3 + psycopg_pool), ``directory:PATH``. ``HARNPY_STORE`` or
``--store`` selects it; with none configured, worker snapshots are files
(``.harn/workers/*.json``, the ``directory`` backend) and nothing else is durable.

API (stable; every method is atomic with respect to every process on the same store)
------------------------------------------------------------------------------------

``open_store(value) -> SqlStore`` opens (and migrates) the store a URL names; errors are
one-line :class:`StoreError` naming the store. ``configured_store_url(option)`` reads
``--store`` / ``HARNPY_STORE``. An :class:`~harnpy.store.sql.SqlStore` offers:

* schema: ``migrate()``, ``schema_version()``, ``info()``;
* checkpoints (:mod:`.sql_checkpoints`): ``put_checkpoint(worker_id, body, meta, *, fence,
  expect_version, transcript, waiters)``, ``claim_checkpoint(worker_id, holder, *, park_id,
  lease_ms, owner) -> CheckpointClaim``, ``renew_checkpoint_claim``,
  ``release_checkpoint_claim``, ``get_checkpoint``, ``checkpoint_info``,
  ``list_checkpoints``, ``find_checkpoints(prefix)``, ``update_checkpoint_if``,
  ``read_transcript``, ``checkpoint_ref(worker_id)``;
* waits (:mod:`.sql_waits`): ``add``, ``get``, ``find``, ``list_waits``, ``waits_of``,
  ``due``, ``claim``, ``claim_due``, ``renew``, ``release``, ``begin_resume``, ``receipt``,
  ``finish_receipt``, ``revoke_receipt``, ``complete``, ``cancel``, ``reopen``,
  ``post_event``, ``post_trigger_event``;
* runs, events, sessions, waitpoints (:mod:`.sql_runs`): ``create_run``, ``get_run(id,
  owner_user, session_id)``, ``claim_run``, ``renew_run``, ``update_run``,
  ``append_run_event``, ``run_events(after_seq)``, ``ensure_session``, ``get_session``,
  ``create_waitpoint``, ``get_waitpoint``, ``add_waitpoint_waiter``, ``complete_waitpoint``,
  ``cancel_waitpoint``, ``cancel_timer``, ``time_out_waitpoint``, ``due_waitpoint_timeouts``,
  ``list_waitpoints``, ``waitpoints_of``;
* ``acquire_lease`` / ``renew_lease`` / ``release_lease`` / ``lease``; ``audit`` /
  ``audit_events``;
* module sources (:mod:`.sql_sources`): ``put_source(sha256, bytes, checkpoint_id=)`` /
  ``get_source(sha256)`` / ``source_refs(checkpoint_id)`` / ``prune_sources()``.

Leases are in the store clock — the database's on PostgreSQL — so host clock skew cannot
break them; fencing tokens (claim fences, wait claim tokens, run lease fences) make a
holder whose lease expired unable to commit after another took over.

Documents are stored as given (the lifecycle layer seals worker checkpoints with
:mod:`harnpy.security` before they reach a store; a store shared by several machines needs
the same ``HARNPY_SNAPSHOT_KEY`` on all of them).

Exit status of the commands that open a store (``harnpy store``, ``harnpy worker``,
``harnpy workers``): 2 when the store cannot be used (unreachable, credentials refused,
newer schema, not a database), with one line naming it and what to do.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harnpy.store.errors import (
    CheckpointTooLarge,
    ClaimRefused,
    CorruptRecord,
    Fenced,
    SchemaTooNew,
    StoreError,
    StoreUnavailable,
    TimerWaitpoint,
)
from harnpy.store.records import (
    ACTIVE_WAIT_STATUSES,
    FINAL_WAIT_STATUSES,
    CheckpointClaim,
    CheckpointInfo,
    CheckpointMeta,
    Claim,
    RunEvent,
    RunRecord,
    SessionRecord,
    TranscriptAppend,
    WaitpointRecord,
    WaitRecord,
)
from harnpy.store.url import StoreURL, parse_store_url

if TYPE_CHECKING:
    from harnpy.store.sql import SqlStore

__all__ = [
    "ACTIVE_WAIT_STATUSES",
    "FINAL_WAIT_STATUSES",
    "STORE_ENV",
    "CheckpointClaim",
    "CheckpointInfo",
    "CheckpointMeta",
    "CheckpointTooLarge",
    "Claim",
    "ClaimRefused",
    "CorruptRecord",
    "Fenced",
    "RunEvent",
    "RunRecord",
    "SchemaTooNew",
    "SessionRecord",
    "StoreError",
    "StoreURL",
    "StoreUnavailable",
    "TimerWaitpoint",
    "TranscriptAppend",
    "WaitRecord",
    "WaitpointRecord",
    "configured_store_url",
    "open_store",
    "parse_store_url",
]

STORE_ENV = "HARNPY_STORE"


def configured_store_url(option: str | None = None, cwd: str | None = None) -> StoreURL | None:
    """The store named by ``option`` (``--store``) or, when that is None, ``HARNPY_STORE``;
    None when neither names one.

    Raises:
        StoreError: an unknown URL scheme (``kind="config"``).
    """
    value = option if option is not None else os.environ.get(STORE_ENV)
    return parse_store_url(value, cwd)


def open_store(value: str | StoreURL, *, migrate: bool = True) -> SqlStore:
    """Open the SQL store ``value`` names (a URL, a path, or a parsed :class:`StoreURL`),
    applying pending migrations unless ``migrate`` is false.

    Raises:
        StoreError: not an SQL store URL, or the store cannot be opened / reached / used
            (:class:`StoreUnavailable`, :class:`SchemaTooNew`...).
    """
    from harnpy.store.sql import SqlStore

    url = value if isinstance(value, StoreURL) else parse_store_url(value)
    if url is None:
        raise StoreError(
            "no store named (give a URL: sqlite:///PATH or postgresql://...)", "config"
        )
    if url.kind not in ("sqlite", "postgresql"):
        raise StoreError(f"store {url}: not a database store (sqlite or postgresql)", "config")
    return SqlStore(url, migrate=migrate)
