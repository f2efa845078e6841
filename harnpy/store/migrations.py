"""Versioned schema migrations of the SQL stores (SQLite and PostgreSQL hold the same tables).

Each :class:`Migration` is applied once, in order, and recorded in ``harnpy_schema``
(``version``, ``description``, ``applied_at_ms``, ``harnpy_version``). Applying runs inside
one transaction that first takes the store's migration lock — ``pg_advisory_xact_lock`` on
PostgreSQL, the database write lock (``BEGIN IMMEDIATE``) on SQLite — and re-reads the
version under it, so any number of processes may migrate at once: one applies, the others
find nothing left to do. A database whose version is above :data:`LATEST` (migrated by a
newer harnpy) is refused, never changed.

Version 1 is the layout of the SQLite wait store harnpy kept before (``waits``,
``resume_receipts``; ``CREATE ... IF NOT EXISTS``), so an old ``.harn/waits.sqlite3``
migrates in place. Version 2 adds everything else (see :data:`TABLES` for the columns).

Tables (both backends; JSON values are stored as text, documents as bytes):

* ``waits`` / ``resume_receipts`` — durable resume waits and the receipts that make a
  resume begin at most once (:mod:`harnpy.store.sql_waits`);
* ``checkpoints`` — one row per worker: the current snapshot document (sealed bytes, at
  most 4 MiB), its status / park id, a commit counter ``version``, and the claim of the
  resume in progress (``claim_holder``, ``claim_fence``, ``claim_expires_at_ms`` in the
  database clock); ``transcript_rows`` — committed transcript entries, appended per turn;
* ``runs`` (owner user, session, idempotency key, status, input, output snapshot, error,
  lease), ``run_events`` (``seq`` per run, for SSE resume) and ``sessions`` — issue 11;
* ``waitpoints`` and ``waitpoint_waiters`` — durable waitpoints (issue 10 item 2);
* ``leases`` — named leases with fencing tokens; ``audit`` — an append-only event log;
* ``sources`` — module sources by SHA-256 (resume across code changes); ``source_refs``
  (version 3) — which checkpoint needs which source, so unused sources can be pruned
  (:mod:`harnpy.store.sql_sources`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LATEST", "MIGRATIONS", "Migration", "statements"]


@dataclass(frozen=True)
class Migration:
    """One schema version: its number, a one-line description, its DDL statements (written
    once; ``{blob}``, ``{bigint}``, ``{serial}`` are filled per dialect) and statements
    that differ per dialect (``per_dialect``: run after the DDL)."""

    version: int
    description: str
    ddl: tuple[str, ...]
    per_dialect: tuple[tuple[str, str], ...] = ()

    def all_statements(self, dialect: str) -> list[str]:
        """Every statement of this migration for ``dialect``, in order."""
        extra = tuple(sql for d, sql in self.per_dialect if d == dialect)
        return statements(self.ddl + extra, dialect)


_TYPES = {
    "sqlite": {
        "blob": "BLOB",
        "bigint": "INTEGER",
        "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
    },
    "postgresql": {"blob": "BYTEA", "bigint": "BIGINT", "serial": "BIGSERIAL PRIMARY KEY"},
}

SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS harnpy_schema (
  version INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at_ms {bigint} NOT NULL,
  harnpy_version TEXT
)"""

_V1 = (
    """
CREATE TABLE IF NOT EXISTS waits (
  id TEXT PRIMARY KEY,
  worker_id TEXT NOT NULL,
  status TEXT NOT NULL,
  on_event TEXT,
  provider TEXT,
  deadline_ms {bigint},
  next_fire_ms {bigint},
  due_reason TEXT,
  claim_token TEXT,
  lease_until_ms {bigint},
  created_at_ms {bigint} NOT NULL,
  record TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS waits_status ON waits(status)",
    "CREATE INDEX IF NOT EXISTS waits_worker ON waits(worker_id)",
    """
CREATE TABLE IF NOT EXISTS resume_receipts (
  wait_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  began_at_ms {bigint} NOT NULL,
  info TEXT,
  outcome TEXT,
  finished_at_ms {bigint}
)""",
)

_V2 = (
    "ALTER TABLE waits ADD COLUMN park_id TEXT",
    "CREATE INDEX waits_park ON waits(worker_id, park_id)",
    """
CREATE TABLE checkpoints (
  worker_id TEXT PRIMARY KEY,
  version {bigint} NOT NULL,
  status TEXT NOT NULL,
  park_id TEXT,
  name TEXT,
  mode TEXT,
  reason TEXT,
  run_id TEXT,
  wake TEXT,
  body {blob} NOT NULL,
  size {bigint} NOT NULL,
  sha256 TEXT NOT NULL,
  created_at_ms {bigint} NOT NULL,
  updated_at_ms {bigint} NOT NULL,
  claim_holder TEXT,
  claim_fence {bigint} NOT NULL DEFAULT 0,
  claim_expires_at_ms {bigint},
  claim_owner TEXT,
  claim_park_id TEXT
)""",
    "CREATE INDEX checkpoints_status ON checkpoints(status)",
    "CREATE INDEX checkpoints_run ON checkpoints(run_id)",
    """
CREATE TABLE transcript_rows (
  worker_id TEXT NOT NULL,
  generation TEXT NOT NULL,
  stream TEXT NOT NULL,
  seq {bigint} NOT NULL,
  body {blob} NOT NULL,
  PRIMARY KEY (worker_id, generation, stream, seq)
)""",
    """
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  owner_user TEXT NOT NULL,
  created_at_ms {bigint} NOT NULL,
  updated_at_ms {bigint} NOT NULL,
  metadata TEXT NOT NULL
)""",
    "CREATE INDEX sessions_owner ON sessions(owner_user)",
    """
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  owner_user TEXT NOT NULL,
  session_id TEXT,
  idempotency_key TEXT,
  entry TEXT,
  status TEXT NOT NULL,
  input TEXT,
  output TEXT,
  error TEXT,
  worker_id TEXT,
  metadata TEXT NOT NULL,
  created_at_ms {bigint} NOT NULL,
  updated_at_ms {bigint} NOT NULL,
  completed_at_ms {bigint},
  lease_holder TEXT,
  lease_fence {bigint} NOT NULL DEFAULT 0,
  lease_expires_at_ms {bigint},
  event_seq {bigint} NOT NULL DEFAULT 0,
  UNIQUE (owner_user, idempotency_key)
)""",
    "CREATE INDEX runs_status ON runs(status, updated_at_ms)",
    "CREATE INDEX runs_session ON runs(owner_user, session_id)",
    "CREATE INDEX runs_worker ON runs(worker_id)",
    """
CREATE TABLE run_events (
  run_id TEXT NOT NULL,
  seq {bigint} NOT NULL,
  event_type TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at_ms {bigint} NOT NULL,
  PRIMARY KEY (run_id, seq)
)""",
    """
CREATE TABLE waitpoints (
  id TEXT PRIMARY KEY,
  submission_key TEXT UNIQUE,
  owner_user TEXT,
  run_id TEXT,
  worker_id TEXT,
  status TEXT NOT NULL,
  value TEXT,
  error TEXT,
  timeout_at_ms {bigint},
  created_at_ms {bigint} NOT NULL,
  completed_at_ms {bigint},
  completed_by TEXT,
  metadata TEXT NOT NULL
)""",
    "CREATE INDEX waitpoints_status ON waitpoints(status, timeout_at_ms)",
    "CREATE INDEX waitpoints_run ON waitpoints(run_id)",
    """
CREATE TABLE waitpoint_waiters (
  waitpoint_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  park_id TEXT,
  created_at_ms {bigint} NOT NULL,
  PRIMARY KEY (waitpoint_id, worker_id)
)""",
    "CREATE INDEX waitpoint_waiters_worker ON waitpoint_waiters(worker_id)",
    """
CREATE TABLE leases (
  resource TEXT PRIMARY KEY,
  holder TEXT,
  fence {bigint} NOT NULL,
  acquired_at_ms {bigint},
  expires_at_ms {bigint}
)""",
    """
CREATE TABLE audit (
  id {serial},
  at_ms {bigint} NOT NULL,
  kind TEXT NOT NULL,
  subject TEXT,
  actor TEXT,
  data TEXT NOT NULL
)""",
    "CREATE INDEX audit_subject ON audit(subject, id)",
    """
CREATE TABLE sources (
  sha256 TEXT PRIMARY KEY,
  body {blob} NOT NULL,
  size {bigint} NOT NULL,
  created_at_ms {bigint} NOT NULL
)""",
)

_V3 = (
    """
CREATE TABLE source_refs (
  checkpoint_id TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  path TEXT,
  created_at_ms {bigint} NOT NULL,
  PRIMARY KEY (checkpoint_id, sha256)
)""",
    "CREATE INDEX source_refs_sha ON source_refs(sha256)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "durable wait store (waits, resume receipts)", _V1),
    Migration(
        2,
        "checkpoints, transcripts, runs, sessions, events, waitpoints, leases, audit, sources",
        _V2,
        per_dialect=(
            # waits recorded by an older harnpy keep their park id in the JSON record only
            (
                "sqlite",
                "UPDATE waits SET park_id = json_extract(record, '$.park_id') "
                "WHERE park_id IS NULL",
            ),
            (
                "postgresql",
                "UPDATE waits SET park_id = (record::json ->> 'park_id') WHERE park_id IS NULL",
            ),
        ),
    ),
    Migration(3, "source_refs: which checkpoint needs which module source", _V3),
)
#: The schema version this harnpy writes.
LATEST = MIGRATIONS[-1].version


def statements(ddl: tuple[str, ...] | str, dialect: str) -> list[str]:
    """The DDL statements of a migration (or one statement) for ``dialect`` (``sqlite`` /
    ``postgresql``)."""
    items = (ddl,) if isinstance(ddl, str) else ddl
    return [s.strip().format(**_TYPES[dialect]) for s in items]
