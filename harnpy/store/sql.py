"""The SQL store: one class over SQLite and PostgreSQL (same tables, same semantics).

:class:`SqlStore` opens the backend (:mod:`harnpy.store.backends`), applies pending
migrations (:mod:`harnpy.store.migrations`), and offers the store's methods, grouped by
table in mixins: waits and resume receipts (:mod:`.sql_waits`), worker checkpoints and
committed transcripts (:mod:`.sql_checkpoints`), runs / events / sessions / waitpoints
(:mod:`.sql_runs`), module sources (:mod:`.sql_sources`); this module holds the schema,
named leases and the audit log.

Every database error is re-raised as a one-line :class:`~harnpy.store.errors.StoreError`
naming the store. Rows are validated when read: a row whose JSON does not parse is a
:class:`~harnpy.store.errors.CorruptRecord` naming the table and key, and is never changed
by the read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harnpy.store._common import MAX_DOCUMENT_BYTES, dump_json
from harnpy.store.backends import Conn
from harnpy.store.errors import SchemaTooNew
from harnpy.store.migrations import LATEST, MIGRATIONS, SCHEMA_TABLE, statements
from harnpy.store.sql_checkpoints import CheckpointsMixin
from harnpy.store.sql_runs import RunsMixin
from harnpy.store.sql_sources import SourcesMixin
from harnpy.store.url import StoreURL

__all__ = ["MAX_DOCUMENT_BYTES", "SqlStore"]


class SqlStore(CheckpointsMixin, RunsMixin, SourcesMixin):
    """A store on SQLite or PostgreSQL (module docstring).

    Args:
        url: the parsed store URL (``sqlite`` or ``postgresql``).
        migrate: apply pending migrations now (every command that opens a store does).
        warn: ``fn(text)`` for one-line warnings (default: stderr), e.g. a corrupt row
            skipped by a listing.

    Raises:
        StoreError: the database cannot be opened or reached, refused the credentials, or
            is at a newer schema version (:class:`~harnpy.store.errors.SchemaTooNew`).
    """

    def __init__(
        self,
        url: StoreURL,
        *,
        migrate: bool = True,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(url, warn=warn)
        try:
            if migrate:
                self.migrate()
            else:
                self._check_version()
        except BaseException:
            self.backend.close()
            raise

    def __enter__(self) -> SqlStore:
        return self

    # ------------------------------------------------------------------ schema

    def _current_version(self, c: Conn) -> int:
        if "harnpy_schema" not in self.backend.table_names(c):
            return 0
        row = c.one("SELECT max(version) FROM harnpy_schema")
        return int(row[0]) if row and row[0] is not None else 0

    def schema_version(self) -> int:
        """The schema version of the database (0 for an empty one)."""
        with self.read() as c:
            return self._current_version(c)

    def _too_new(self, found: int) -> SchemaTooNew:
        return SchemaTooNew(
            f"store {self.display} is at schema version {found}, newer than this harnpy "
            f"knows ({LATEST}): upgrade harnpy to use it (a store is never migrated back)",
            found,
            LATEST,
        )

    def _check_version(self) -> int:
        found = self.schema_version()
        if found > LATEST:
            raise self._too_new(found)
        return found

    def migrate(self) -> list[int]:
        """Apply the pending migrations (module :mod:`harnpy.store.migrations`); returns
        the versions applied (empty when the schema is current). Safe to run from several
        processes at once.

        Raises:
            SchemaTooNew: the database is at a newer version (nothing is changed).
            StoreError: a migration failed (its transaction is rolled back).
        """
        if self._check_version() == LATEST:
            return []
        from harnpy import __version__

        applied: list[int] = []
        with self.txn() as c:
            self.backend.migration_lock(c)
            c.run(statements(SCHEMA_TABLE, self.dialect)[0])
            current = self._current_version(c)
            if current > LATEST:
                raise self._too_new(current)
            for m in MIGRATIONS:
                if m.version <= current:
                    continue
                for stmt in m.all_statements(self.dialect):
                    c.run(stmt)
                c.run(
                    "INSERT INTO harnpy_schema (version, description, applied_at_ms, "
                    "harnpy_version) VALUES (?, ?, ?, ?)",
                    (m.version, m.description, time.time_ns() // 1_000_000, __version__),
                )
                applied.append(m.version)
        return applied

    def info(self) -> dict[str, Any]:
        """What ``harnpy store info`` shows: URL, backend, schema version, the migrations
        applied, and row counts per table and status."""
        out: dict[str, Any] = {
            "store": self.display,
            "backend": self.dialect,
            "schema_version": 0,
            "latest_version": LATEST,
            "migrations": [],
            "tables": {},
        }
        with self.read() as c:
            out["schema_version"] = self._current_version(c)
            if out["schema_version"]:
                out["migrations"] = [
                    {"version": r[0], "description": r[1], "applied_at_ms": r[2], "harnpy": r[3]}
                    for r in c.all(
                        "SELECT version, description, applied_at_ms, harnpy_version FROM "
                        "harnpy_schema ORDER BY version"
                    )
                ]
            tables = self.backend.table_names(c)
            for table, col in (
                ("checkpoints", "status"),
                ("waits", "status"),
                ("runs", "status"),
                ("waitpoints", "status"),
                ("sessions", None),
                ("run_events", None),
                ("transcript_rows", None),
                ("audit", None),
                ("sources", None),
                ("source_refs", None),
                ("leases", None),
            ):
                if table not in tables:
                    continue
                if col is None:
                    row = c.one(f"SELECT count(*) FROM {table}")
                    out["tables"][table] = int(row[0]) if row else 0
                else:
                    rows = c.all(f"SELECT {col}, count(*) FROM {table} GROUP BY {col}")
                    out["tables"][table] = {str(r[0]): int(r[1]) for r in rows}
        return out

    # ------------------------------------------------------------------ leases

    def acquire_lease(self, resource: str, holder: str, ttl_ms: int) -> int | None:
        """Take the named lease for ``holder`` for ``ttl_ms`` (store clock) when it is free
        or expired; returns its fencing token (higher than every earlier holder's), or
        None while another holder's lease is live."""
        with self.txn() as c:
            now = c.now_ms()
            row = c.one(
                "SELECT holder, fence, expires_at_ms FROM leases WHERE resource = ?"
                + self.backend.for_update,
                (resource,),
            )
            if row is None:
                created = c.run(
                    "INSERT INTO leases (resource, holder, fence, acquired_at_ms, expires_at_ms) "
                    "VALUES (?, ?, 1, ?, ?) ON CONFLICT DO NOTHING",
                    (resource, holder, now, now + ttl_ms),
                )
                return 1 if created else None  # None: another process created it first
            cur_holder, fence, expires = row
            if cur_holder is not None and expires is not None and expires >= now:
                return None
            c.run(
                "UPDATE leases SET holder = ?, fence = ?, acquired_at_ms = ?, expires_at_ms = ? "
                "WHERE resource = ?",
                (holder, int(fence) + 1, now, now + ttl_ms, resource),
            )
            return int(fence) + 1

    def renew_lease(self, resource: str, holder: str, fence: int, ttl_ms: int) -> bool:
        """Extend a lease still held under ``fence``; False when it was lost."""
        with self.txn() as c:
            now = c.now_ms()
            return bool(
                c.run(
                    "UPDATE leases SET expires_at_ms = ? WHERE resource = ? AND holder = ? "
                    "AND fence = ?",
                    (now + ttl_ms, resource, holder, fence),
                )
            )

    def release_lease(self, resource: str, holder: str, fence: int) -> bool:
        """Give a lease back (its fence counter stays); False when it was not held."""
        with self.txn() as c:
            return bool(
                c.run(
                    "UPDATE leases SET holder = NULL, expires_at_ms = NULL WHERE resource = ? "
                    "AND holder = ? AND fence = ?",
                    (resource, holder, fence),
                )
            )

    def lease(self, resource: str) -> dict[str, Any] | None:
        """``{resource, holder, fence, acquired_at_ms, expires_at_ms, live}``, or None."""
        with self.read() as c:
            now = c.now_ms()
            row = c.one(
                "SELECT holder, fence, acquired_at_ms, expires_at_ms FROM leases WHERE "
                "resource = ?",
                (resource,),
            )
        if row is None:
            return None
        holder, fence, acquired, expires = row
        live = holder is not None and expires is not None and expires >= now
        return {
            "resource": resource,
            "holder": holder,
            "fence": int(fence),
            "acquired_at_ms": acquired,
            "expires_at_ms": expires,
            "live": live,
        }

    # ------------------------------------------------------------------ audit

    def audit(
        self, kind: str, data: Any, *, subject: str | None = None, actor: str | None = None
    ) -> int:
        """Append one audit event; returns its id (increasing)."""
        with self.txn() as c:
            return self._audit(c, kind, data, subject=subject, actor=actor)

    def _audit(
        self, c: Conn, kind: str, data: Any, *, subject: str | None, actor: str | None
    ) -> int:
        params = (c.now_ms(), kind, subject, actor, dump_json(data))
        if self.dialect == "postgresql":
            row = c.one(
                "INSERT INTO audit (at_ms, kind, subject, actor, data) VALUES (?, ?, ?, ?, ?) "
                "RETURNING id",
                params,
            )
        else:
            c.run(
                "INSERT INTO audit (at_ms, kind, subject, actor, data) VALUES (?, ?, ?, ?, ?)",
                params,
            )
            row = c.one("SELECT last_insert_rowid()")
        assert row is not None
        return int(row[0])

    def audit_events(
        self, subject: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Audit events after ``after_id`` (optionally of one ``subject``), oldest first."""
        sql = "SELECT id, at_ms, kind, subject, actor, data FROM audit WHERE id > ?"
        params: list[Any] = [after_id]
        if subject is not None:
            sql += " AND subject = ?"
            params.append(subject)
        sql += " ORDER BY id LIMIT ?"
        params.append(limit)
        with self.read() as c:
            rows = c.all(sql, params)
        return [
            {
                "id": int(r[0]),
                "at_ms": r[1],
                "kind": r[2],
                "subject": r[3],
                "actor": r[4],
                "data": self.load_json(r[5], f"audit event {r[0]}"),
            }
            for r in rows
        ]
