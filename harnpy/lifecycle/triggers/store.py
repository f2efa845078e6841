"""The durable wait store: parked workers and their resume conditions, with exclusive claims.

Spec: lifecycle.md §10 (exactly-once resume: one replica atomically claims a wait before
resuming it; the default store is the filesystem, here an embedded SQLite file), §5.1
(``ResumeBy.cloud_harness`` binds to it), §4.4 (trigger / timeout resume).

Configuration: ``HARNPY_STORE`` (or an explicit path) names the store.

* unset or empty: no store is configured (``cloud_harness`` declines with
  ``no_cloud_session``); ``harnpy worker`` then uses the default below;
* ``default`` / ``sqlite`` / ``1``: ``.harn/waits.sqlite3`` under the working directory;
* a path (``sqlite:///abs/path.db``, ``sqlite:relative.db`` or a plain path; a directory
  gets ``waits.sqlite3`` inside it);
* ``postgres://...`` / ``postgresql://...``: reserved for the PostgreSQL backend (the
  :class:`WaitStore` protocol is written so that one can implement it with row locks or
  ``UPDATE ... WHERE`` claims); not available yet, :func:`open_store` says so.

Life of a wait (``status``):

``pending`` — registered, waiting for its cron tick / deadline / event; an arriving event
sets ``due_reason``/``due_payload`` without changing the status. → ``claimed`` — one runner
holds it: ``claim_token`` and a lease (``lease_until_ms``); a claim whose lease expired can
be taken over by another runner. → ``completed`` / ``failed`` (outcome recorded) or
``cancelled`` (``close``).

Exactly-once resume rests on two records:

1. the **claim** (a conditional ``UPDATE`` inside ``BEGIN IMMEDIATE``): only one runner at a
   time may try to resume a wait;
2. the **resume receipt** (:meth:`SqliteWaitStore.begin_resume`): inserted by the code that
   performs the resume at the moment it takes effect (primary key = wait id, and only while
   the caller's claim token is the current one). A second insert fails, so a resume can
   begin at most once per wait, even across a runner crash, lease takeover or race. A
   runner that finds a receipt on a wait it (re)claimed knows the resume already happened
   and only records the outcome.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

STORE_ENV = "HARNPY_STORE"
DEFAULT_STORE_RELPATH = os.path.join(".harn", "waits.sqlite3")

#: Statuses a wait moves through.
ACTIVE_STATUSES = ("pending", "claimed")
FINAL_STATUSES = ("completed", "failed", "cancelled")


class StoreError(RuntimeError):
    """The store is misconfigured or unreadable; ``str(e)`` says why."""


@dataclass
class WaitRecord:
    """One parked worker's wait (a row of the store).

    Times are UTC epoch milliseconds. ``conditions`` is the normalized ResumeConditions
    dict; ``trigger`` the parsed trigger spec as JSON (or None for on_event-only waits);
    ``match_events`` the event kinds the trigger matches; ``schedule``/``timezone``/
    ``catchup_mode`` and ``next_fire_ms``/``last_tick_ms`` describe a cron trigger;
    ``deadline_ms``/``on_timeout`` the absolute timeout. ``snapshot_sha256`` is the hash of
    the worker snapshot when the wait was registered; ``park_id`` the snapshot's park id
    then (a wait only ever resumes the park that registered it; None in records written
    before park ids were stored).
    """

    id: str
    worker_id: str
    version: int = 1
    snapshot_path: str | None = None
    snapshot_sha256: str | None = None
    park_id: str | None = None
    conditions: dict[str, Any] = field(default_factory=dict)
    trigger: dict[str, Any] | None = None
    provider: str | None = None
    kind: str | None = None
    match_events: list[str] = field(default_factory=list)
    on_event: str | None = None
    deadline_ms: int | None = None
    on_timeout: str | None = None
    schedule: str | None = None
    timezone: str | None = None
    catchup_mode: str | None = None
    next_fire_ms: int | None = None
    last_tick_ms: int | None = None
    status: str = "pending"
    due_reason: str | None = None
    due_payload: Any = None
    due_at_ms: int | None = None
    claimed_by: str | None = None
    claim_token: str | None = None
    claimed_at_ms: int | None = None
    lease_until_ms: int | None = None
    attempts: int = 0
    last_error: str | None = None
    created_at_ms: int = 0
    updated_at_ms: int = 0
    completed_at_ms: int | None = None
    outcome: Any = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)

    def due_instant(self, now_ms: int) -> tuple[str, int] | None:
        """``(reason, at_ms)`` of the earliest due cause at ``now_ms`` (``event``, ``cron``
        or ``timeout``), or None when nothing is due yet."""
        causes: list[tuple[int, int, str]] = []
        if self.due_reason is not None:
            causes.append((self.due_at_ms or 0, 0, self.due_reason))
        if self.next_fire_ms is not None and self.next_fire_ms <= now_ms:
            causes.append((self.next_fire_ms, 1, "cron"))
        if self.deadline_ms is not None and self.deadline_ms <= now_ms:
            causes.append((self.deadline_ms, 2, "timeout"))
        if not causes:
            return None
        at, _, reason = min(causes)
        return reason, at


@dataclass
class Claim:
    """A runner's exclusive hold on a wait: the record as claimed and its ``token``.
    ``previous_token`` is set when the claim took over an expired one."""

    record: WaitRecord
    token: str
    previous_token: str | None = None


class WaitStore(Protocol):
    """What a wait store offers (SQLite now, PostgreSQL next). All times are epoch ms.

    Implementations must make :meth:`claim` and :meth:`begin_resume` atomic with respect to
    every other process using the same store.
    """

    location: str

    def add(self, rec: WaitRecord) -> None:
        """Insert a new wait (``id`` unique)."""

    def get(self, wait_id: str) -> WaitRecord | None:
        """The wait with this id, or None."""

    def list_waits(self, statuses: Iterable[str] | None = None) -> list[WaitRecord]:
        """Waits (optionally only those with one of ``statuses``), oldest first."""

    def find(self, key: str) -> WaitRecord | None:
        """A wait by id, else the newest wait of worker ``key``."""

    def due(self, now_ms: int, limit: int = 100) -> list[WaitRecord]:
        """Pending waits with a due cause, and claimed waits whose lease expired."""

    def post_event(self, topic: str, payload: Any, now_ms: int) -> list[str]:
        """Mark pending ``on_event == topic`` waits due; returns their ids."""

    def post_trigger_event(
        self,
        provider: str,
        kind: str,
        payload: Any,
        now_ms: int,
        match: Callable[[WaitRecord], bool] | None = None,
    ) -> list[str]:
        """Mark pending waits whose trigger matches ``provider``/``kind`` (or ``match``) due;
        returns their ids."""

    def claim(
        self, wait_id: str, runner_id: str, now_ms: int, lease_ms: int, *, force: bool = False
    ) -> Claim | None:
        """Take the wait for ``runner_id`` (pending, or claimed with an expired lease; with
        ``force`` also claimed-and-live is refused but not-yet-due pending is allowed)."""

    def renew(self, wait_id: str, token: str, now_ms: int, lease_ms: int) -> bool:
        """Extend the lease of the current claim ``token``."""

    def release(self, wait_id: str, token: str, now_ms: int, error: str | None) -> bool:
        """Give the claim back (the resume did not start); the wait is pending again."""

    def begin_resume(self, wait_id: str, token: str, now_ms: int, info: Any = None) -> bool:
        """Record that the resume takes effect now; False if it already began (any token)
        or ``token`` is not the current claim."""

    def receipt(self, wait_id: str) -> dict[str, Any] | None:
        """The resume receipt (``{wait_id, token, began_at_ms, info, outcome, ...}``)."""

    def finish_receipt(self, wait_id: str, token: str, outcome: Any, now_ms: int) -> None:
        """Attach the resume's own outcome to its receipt."""

    def revoke_receipt(self, wait_id: str, token: str) -> bool:
        """Delete the receipt written by claim ``token`` when that resume did not take
        effect (it was refused before changing anything)."""

    def reopen(self, wait_id: str, now_ms: int) -> bool:
        """Make a wait cancelled by a resume that was then undone (Ctrl-C) pending again."""

    def complete(
        self, wait_id: str, token: str | None, status: str, outcome: Any, now_ms: int
    ) -> bool:
        """Record the final ``status``/``outcome`` (only for the current claim ``token``;
        ``None`` = the in-process owner that never claimed)."""

    def cancel(self, wait_id: str, now_ms: int, reason: str = "cancelled") -> bool:
        """Cancel an active wait whose resume has not begun."""

    def close(self) -> None:
        """Release connections."""


# ---------------------------------------------------------------- configuration


def resolve_store_path(value: str | None, cwd: str | None = None) -> str | None:
    """The SQLite file a store setting names (see module docstring); None for no store.

    Raises:
        StoreError: a PostgreSQL URL (backend not available yet) or an unknown scheme.
    """
    if value is None:
        return None
    v = value.strip()
    if not v:
        return None
    base = cwd or os.getcwd()
    if v.lower() in ("default", "sqlite", "1", "true", "yes"):
        return os.path.join(base, DEFAULT_STORE_RELPATH)
    low = v.lower()
    if low.startswith(("postgres://", "postgresql://")):
        raise StoreError(
            "the PostgreSQL wait store is not available yet (the WaitStore interface admits "
            "it); use an SQLite path"
        )
    if low.startswith("sqlite:"):
        v = v[len("sqlite:") :]
        if v.startswith("///"):
            v = v[2:]
        elif v.startswith("//"):
            v = v[2:]
    elif "://" in v:
        raise StoreError(f"unsupported store URL `{value}`")
    p = v if os.path.isabs(v) else os.path.join(base, v)
    if os.path.isdir(p) or v.endswith(("/", os.sep)):
        p = os.path.join(p, "waits.sqlite3")
    return os.path.normpath(p)


def configured_store_path(option: str | None = None) -> str | None:
    """The store named by ``option`` or, when that is None, by ``HARNPY_STORE``."""
    return resolve_store_path(option if option is not None else os.environ.get(STORE_ENV))


def open_store(path: str) -> SqliteWaitStore:
    """Open (creating if needed) the SQLite wait store at ``path``.

    Raises:
        StoreError: not a database / cannot be opened (the message names ``path``).
    """
    return SqliteWaitStore(path)


def new_token() -> str:
    """A fresh claim token."""
    return uuid.uuid4().hex


# ---------------------------------------------------------------- SQLite backend

_SCHEMA = """
CREATE TABLE IF NOT EXISTS waits (
  id TEXT PRIMARY KEY,
  worker_id TEXT NOT NULL,
  status TEXT NOT NULL,
  on_event TEXT,
  provider TEXT,
  deadline_ms INTEGER,
  next_fire_ms INTEGER,
  due_reason TEXT,
  claim_token TEXT,
  lease_until_ms INTEGER,
  created_at_ms INTEGER NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS waits_status ON waits(status);
CREATE INDEX IF NOT EXISTS waits_worker ON waits(worker_id);
CREATE TABLE IF NOT EXISTS resume_receipts (
  wait_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  began_at_ms INTEGER NOT NULL,
  info TEXT,
  outcome TEXT,
  finished_at_ms INTEGER
);
"""

# Columns mirrored out of the JSON record so that queries and conditional updates can use
# them; the JSON ``record`` column is the source of truth for everything else.
_MIRRORED = (
    "worker_id",
    "status",
    "on_event",
    "provider",
    "deadline_ms",
    "next_fire_ms",
    "due_reason",
    "claim_token",
    "lease_until_ms",
    "created_at_ms",
)


class SqliteWaitStore:
    """:class:`WaitStore` on one SQLite file (WAL mode; safe for several processes).

    Every state change runs in ``BEGIN IMMEDIATE`` (the database write lock is taken before
    the row is read), so read-check-write sequences are atomic across processes.
    """

    def __init__(self, path: str) -> None:
        """Open (creating if needed) the store file ``path``.

        Raises:
            StoreError: the file is not an SQLite database (or not a wait store), or it
                cannot be opened; the message names the file.
        """
        self.location = os.path.abspath(path)
        try:
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(
                f"cannot create the wait store {self.location}: {e.strerror or e}"
            ) from None
        try:
            self._db = sqlite3.connect(self.location, timeout=30.0, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the wait store {self.location}: {e}") from None
        try:
            self._db.execute("PRAGMA busy_timeout = 30000")
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:  # pragma: no cover - e.g. a read-only mount
                pass
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as e:
            self._db.close()
            raise StoreError(
                f"{self.location} is not a usable wait store (an SQLite database): {e}"
            ) from None
        try:
            os.chmod(self.location, 0o600)
        except OSError:  # pragma: no cover
            pass

    # ---- plumbing

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def _txn(self) -> _Txn:
        return _Txn(self._db)

    @staticmethod
    def _decode(row: Any) -> WaitRecord:
        data = json.loads(row[0])
        known = WaitRecord.__dataclass_fields__
        return WaitRecord(**{k: v for k, v in data.items() if k in known})

    def _write(self, rec: WaitRecord, insert: bool = False) -> None:
        values = [getattr(rec, c) for c in _MIRRORED]
        blob = json.dumps(rec.to_json(), sort_keys=True, default=str)
        if insert:
            cols = ", ".join(("id", *_MIRRORED, "record"))
            marks = ", ".join("?" * (len(_MIRRORED) + 2))
            self._db.execute(
                f"INSERT INTO waits ({cols}) VALUES ({marks})", [rec.id, *values, blob]
            )
        else:
            sets = ", ".join(f"{c} = ?" for c in (*_MIRRORED, "record"))
            self._db.execute(f"UPDATE waits SET {sets} WHERE id = ?", [*values, blob, rec.id])

    def _load(self, wait_id: str) -> WaitRecord | None:
        row = self._db.execute("SELECT record FROM waits WHERE id = ?", (wait_id,)).fetchone()
        return self._decode(row) if row else None

    # ---- reads

    def get(self, wait_id: str) -> WaitRecord | None:
        """The wait with this id, or None."""
        return self._load(wait_id)

    def list_waits(self, statuses: Iterable[str] | None = None) -> list[WaitRecord]:
        """Waits, oldest first, optionally filtered by status."""
        if statuses is None:
            rows = self._db.execute("SELECT record FROM waits ORDER BY created_at_ms, id")
        else:
            st = list(statuses)
            marks = ", ".join("?" * len(st))
            rows = self._db.execute(
                f"SELECT record FROM waits WHERE status IN ({marks}) ORDER BY created_at_ms, id",
                st,
            )
        return [self._decode(r) for r in rows.fetchall()]

    def find(self, key: str) -> WaitRecord | None:
        """A wait by id, else the newest wait of worker ``key`` (active ones first)."""
        rec = self._load(key)
        if rec is not None:
            return rec
        rows = self._db.execute(
            "SELECT record FROM waits WHERE worker_id = ? ORDER BY "
            "CASE WHEN status IN ('pending', 'claimed') THEN 0 ELSE 1 END, created_at_ms DESC",
            (key,),
        ).fetchall()
        return self._decode(rows[0]) if rows else None

    def due(self, now_ms: int, limit: int = 100) -> list[WaitRecord]:
        """Pending waits with a due cause at ``now_ms`` and claimed waits whose lease
        expired (a runner died), earliest first."""
        rows = self._db.execute(
            "SELECT record FROM waits WHERE "
            "(status = 'pending' AND (due_reason IS NOT NULL OR deadline_ms <= ? "
            "OR next_fire_ms <= ?)) OR (status = 'claimed' AND lease_until_ms < ?) "
            "ORDER BY created_at_ms, id LIMIT ?",
            (now_ms, now_ms, now_ms, limit),
        ).fetchall()
        return [self._decode(r) for r in rows]

    def receipt(self, wait_id: str) -> dict[str, Any] | None:
        """The resume receipt of ``wait_id``, or None when its resume never began."""
        row = self._db.execute(
            "SELECT wait_id, token, began_at_ms, info, outcome, finished_at_ms "
            "FROM resume_receipts WHERE wait_id = ?",
            (wait_id,),
        ).fetchone()
        if row is None:
            return None
        return {
            "wait_id": row[0],
            "token": row[1],
            "began_at_ms": row[2],
            "info": json.loads(row[3]) if row[3] else None,
            "outcome": json.loads(row[4]) if row[4] else None,
            "finished_at_ms": row[5],
        }

    # ---- writes

    def add(self, rec: WaitRecord) -> None:
        """Insert a new wait.

        Raises:
            StoreError: a wait with this id exists.
        """
        with self._txn():
            if self._load(rec.id) is not None:
                raise StoreError(f"wait {rec.id} already exists")
            self._write(rec, insert=True)

    def update(self, rec: WaitRecord) -> None:
        """Overwrite a wait's record (used by tests and maintenance)."""
        with self._txn():
            self._write(rec)

    def post_event(self, topic: str, payload: Any, now_ms: int) -> list[str]:
        """Mark pending waits listening on ``topic`` due (first event wins)."""
        woken = []
        with self._txn():
            rows = self._db.execute(
                "SELECT record FROM waits WHERE status = 'pending' AND on_event = ? "
                "AND due_reason IS NULL",
                (topic,),
            ).fetchall()
            for row in rows:
                rec = self._decode(row)
                rec.due_reason = "event"
                rec.due_payload = {"topic": topic, "payload": payload}
                rec.due_at_ms = now_ms
                rec.updated_at_ms = now_ms
                self._write(rec)
                woken.append(rec.id)
        return woken

    def post_trigger_event(
        self,
        provider: str,
        kind: str,
        payload: Any,
        now_ms: int,
        match: Callable[[WaitRecord], bool] | None = None,
    ) -> list[str]:
        """Mark pending waits whose trigger listens to ``provider``/``kind`` due (``match``,
        when given, decides instead of the event-kind test)."""
        woken = []
        with self._txn():
            rows = self._db.execute(
                "SELECT record FROM waits WHERE status = 'pending' AND provider = ? "
                "AND due_reason IS NULL",
                (provider,),
            ).fetchall()
            for row in rows:
                rec = self._decode(row)
                if match is not None:
                    if not match(rec):
                        continue
                elif kind not in (rec.match_events or [rec.kind or ""]):
                    continue
                rec.due_reason = "trigger"
                rec.due_payload = payload
                rec.due_at_ms = now_ms
                rec.updated_at_ms = now_ms
                self._write(rec)
                woken.append(rec.id)
        return woken

    def claim(
        self, wait_id: str, runner_id: str, now_ms: int, lease_ms: int, *, force: bool = False
    ) -> Claim | None:
        """Claim ``wait_id`` for ``runner_id`` with a lease of ``lease_ms``.

        Claimable: ``pending`` (when ``force`` is false it must also be due) or ``claimed``
        with an expired lease. Returns None when another runner holds it or it is final.
        """
        with self._txn():
            rec = self._load(wait_id)
            if rec is None:
                return None
            previous = None
            if rec.status == "pending":
                if not force and rec.due_instant(now_ms) is None:
                    return None
            elif rec.status == "claimed" and (rec.lease_until_ms or 0) < now_ms:
                previous = rec.claim_token
            else:
                return None
            token = new_token()
            rec.status = "claimed"
            rec.claimed_by = runner_id
            rec.claim_token = token
            rec.claimed_at_ms = now_ms
            rec.lease_until_ms = now_ms + lease_ms
            rec.attempts += 1
            rec.updated_at_ms = now_ms
            self._write(rec)
            return Claim(rec, token, previous)

    def renew(self, wait_id: str, token: str, now_ms: int, lease_ms: int) -> bool:
        """Extend the lease of claim ``token``; False when the claim was lost."""
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status != "claimed" or rec.claim_token != token:
                return False
            rec.lease_until_ms = now_ms + lease_ms
            rec.updated_at_ms = now_ms
            self._write(rec)
            return True

    def release(
        self,
        wait_id: str,
        token: str,
        now_ms: int,
        error: str | None,
        *,
        disarm: tuple[str, ...] = (),
    ) -> bool:
        """Return claim ``token`` unused: the wait is pending again (``last_error`` kept).
        ``disarm`` names causes that fired and must not fire again: ``"timeout"`` clears the
        deadline, ``"due"`` the arrived event/trigger."""
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status != "claimed" or rec.claim_token != token:
                return False
            rec.status = "pending"
            rec.claimed_by = rec.claim_token = None
            rec.lease_until_ms = None
            rec.last_error = error
            rec.updated_at_ms = now_ms
            if "timeout" in disarm:
                rec.deadline_ms = None
            if "due" in disarm:
                rec.due_reason = rec.due_payload = rec.due_at_ms = None
            self._write(rec)
            return True

    def revoke_receipt(self, wait_id: str, token: str) -> bool:
        """Delete the receipt of claim ``token`` (the resume it announced was refused
        before it changed anything: blank input, changed source, a PreResume hook...), so
        the wait can be resumed or closed later. False when there is no such receipt."""
        with self._txn():
            cur = self._db.execute(
                "DELETE FROM resume_receipts WHERE wait_id = ? AND token = ?", (wait_id, token)
            )
            return bool(cur.rowcount)

    def reopen(self, wait_id: str, now_ms: int) -> bool:
        """Undo the cancellation a resume made (``harnpy run --resume`` interrupted before
        the worker settled: its snapshot was put back to ``suspended``): a wait cancelled
        for reason ``resumed`` whose resume never began is ``pending`` again."""
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status != "cancelled":
                return False
            if not isinstance(rec.outcome, dict) or rec.outcome.get("reason") != "resumed":
                return False
            began = self._db.execute(
                "SELECT 1 FROM resume_receipts WHERE wait_id = ?", (wait_id,)
            ).fetchone()
            if began:
                return False
            rec.status = "pending"
            rec.outcome = None
            rec.completed_at_ms = None
            rec.updated_at_ms = now_ms
            self._write(rec)
            return True

    def begin_resume(self, wait_id: str, token: str, now_ms: int, info: Any = None) -> bool:
        """Insert the resume receipt: the resume of ``wait_id`` takes effect now.

        Succeeds once per wait and only for the current claim ``token``.
        """
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status != "claimed" or rec.claim_token != token:
                return False
            try:
                self._db.execute(
                    "INSERT INTO resume_receipts (wait_id, token, began_at_ms, info) "
                    "VALUES (?, ?, ?, ?)",
                    (wait_id, token, now_ms, json.dumps(info, default=str)),
                )
            except sqlite3.IntegrityError:
                return False
            return True

    def finish_receipt(self, wait_id: str, token: str, outcome: Any, now_ms: int) -> None:
        """Attach ``outcome`` to the receipt written by ``token``."""
        with self._txn():
            self._db.execute(
                "UPDATE resume_receipts SET outcome = ?, finished_at_ms = ? "
                "WHERE wait_id = ? AND token = ?",
                (json.dumps(outcome, default=str), now_ms, wait_id, token),
            )

    def complete(
        self, wait_id: str, token: str | None, status: str, outcome: Any, now_ms: int
    ) -> bool:
        """Record the final ``status`` and ``outcome`` for claim ``token``."""
        if status not in FINAL_STATUSES:
            raise StoreError(f"not a final wait status: {status}")
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status in FINAL_STATUSES:
                return False
            if token is not None and (rec.status != "claimed" or rec.claim_token != token):
                return False
            rec.status = status
            rec.outcome = outcome
            rec.completed_at_ms = now_ms
            rec.updated_at_ms = now_ms
            rec.lease_until_ms = None
            self._write(rec)
            return True

    def cancel(self, wait_id: str, now_ms: int, reason: str = "cancelled") -> bool:
        """Cancel an active wait (``close``); False when it is final or its resume began."""
        with self._txn():
            rec = self._load(wait_id)
            if rec is None or rec.status in FINAL_STATUSES:
                return False
            began = self._db.execute(
                "SELECT 1 FROM resume_receipts WHERE wait_id = ?", (wait_id,)
            ).fetchone()
            if began:
                return False
            rec.status = "cancelled"
            rec.outcome = {"status": "cancelled", "reason": reason}
            rec.completed_at_ms = now_ms
            rec.updated_at_ms = now_ms
            rec.claim_token = None
            rec.lease_until_ms = None
            self._write(rec)
            return True


class _Txn:
    """``with`` block running ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> _Txn:
        self.db.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
