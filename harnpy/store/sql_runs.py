"""Runs, run events, sessions and durable waitpoints in the SQL store.

These serve ``harnpy serve`` (issue 11) and durable waitpoints (issue 10 item 2); harnpy's
own commands do not use them yet.

* **Runs** belong to an ``owner_user`` and optionally a session. :meth:`RunsMixin.create_run`
  is idempotent per ``(owner_user, idempotency_key)``; :meth:`~RunsMixin.get_run` looks a
  run up by id *and* owner *and* session in one query, so another user's run, another
  session's run and an unknown id all answer None through the same code path.
  :meth:`~RunsMixin.claim_run` takes a runnable run (``queued``, or ``in_progress`` with an
  expired lease: its replica died) with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, returning
  a fence (``lease_fence``); :meth:`~RunsMixin.update_run` with that fence is refused once
  another replica took the run over. The completion snapshot (``output``) is JSON, at most
  4 MiB.
* **Events** are numbered per run from 1 with no gaps (``run_events.seq``, allocated from
  ``runs.event_seq`` in the inserting transaction): an SSE client resumes with
  :meth:`~RunsMixin.run_events` ``after_seq``.
* **Waitpoints** are created idempotently (``submission_key``), completed or cancelled once
  (a conditional update: of two completions exactly one wins), and carry their waiters
  (worker + park) for fan-in / fan-out.
"""

from __future__ import annotations

import uuid
from typing import Any

from harnpy.store._common import MAX_DOCUMENT_BYTES, dump_json
from harnpy.store.backends import Conn
from harnpy.store.errors import (
    CheckpointTooLarge,
    CorruptRecord,
    Fenced,
    StoreError,
    TimerWaitpoint,
)
from harnpy.store.records import RUN_STATUSES, RunEvent, RunRecord, SessionRecord, WaitpointRecord
from harnpy.store.sql_base import SqlBase

__all__ = ["RunsMixin"]

_RUN_COLS = (
    "id, owner_user, session_id, idempotency_key, entry, status, input, output, error, "
    "worker_id, metadata, created_at_ms, updated_at_ms, completed_at_ms, lease_holder, "
    "lease_fence, lease_expires_at_ms, event_seq"
)
_WP_COLS = (
    "id, status, submission_key, owner_user, run_id, worker_id, value, error, timeout_at_ms, "
    "created_at_ms, completed_at_ms, completed_by, metadata"
)
_FINAL_RUN = ("completed", "failed", "cancelled")


class RunsMixin(SqlBase):
    """Run, event, session and waitpoint methods (module docstring)."""

    @property
    def _null_eq(self) -> str:
        return "IS" if self.dialect == "sqlite" else "IS NOT DISTINCT FROM"

    def _json_capped(self, value: Any, what: str) -> str:
        text = dump_json(value)
        size = len(text.encode("utf-8"))
        if size > MAX_DOCUMENT_BYTES:
            raise CheckpointTooLarge(
                f"store {self.display}: {what} is {size} bytes of JSON, over the "
                f"{MAX_DOCUMENT_BYTES}-byte (4 MiB) limit; nothing was written",
                size,
                MAX_DOCUMENT_BYTES,
            )
        return text

    # ------------------------------------------------------------------ sessions

    def ensure_session(
        self, session_id: str, owner_user: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord | None:
        """The session ``session_id`` of ``owner_user``, created when missing; None when the
        id belongs to another user (indistinguishable, to a caller, from a refusal)."""
        with self.txn() as c:
            now = c.now_ms()
            row = c.one(
                "SELECT owner_user, created_at_ms, metadata FROM sessions WHERE id = ?"
                + self.backend.for_update,
                (session_id,),
            )
            if row is None:
                if c.run(
                    "INSERT INTO sessions (id, owner_user, created_at_ms, updated_at_ms, "
                    "metadata) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (session_id, owner_user, now, now, dump_json(metadata or {})),
                ):
                    return SessionRecord(session_id, owner_user, now, now, dict(metadata or {}))
                row = c.one(
                    "SELECT owner_user, created_at_ms, metadata FROM sessions WHERE id = ?",
                    (session_id,),
                )
                if row is None:
                    return None
            if row[0] != owner_user:
                return None
            meta = self.load_json(row[2], f"session {session_id}")
            return SessionRecord(session_id, owner_user, int(row[1]), now, meta or {})

    def get_session(self, session_id: str, owner_user: str) -> SessionRecord | None:
        """The session when it belongs to ``owner_user``, else None."""
        with self.read() as c:
            row = c.one(
                "SELECT created_at_ms, updated_at_ms, metadata FROM sessions WHERE id = ? AND "
                "owner_user = ?",
                (session_id, owner_user),
            )
        if row is None:
            return None
        meta = self.load_json(row[2], f"session {session_id}")
        return SessionRecord(session_id, owner_user, int(row[0]), int(row[1]), meta or {})

    # ------------------------------------------------------------------ runs

    def _run(self, row: tuple[Any, ...]) -> RunRecord:
        rid = row[0]
        load = self.load_json
        return RunRecord(
            id=rid,
            owner_user=row[1],
            session_id=row[2],
            idempotency_key=row[3],
            entry=row[4],
            status=row[5],
            input=load(row[6], f"run {rid}"),
            output=load(row[7], f"run {rid}"),
            error=load(row[8], f"run {rid}"),
            worker_id=row[9],
            metadata=load(row[10], f"run {rid}") or {},
            created_at_ms=int(row[11]),
            updated_at_ms=int(row[12]),
            completed_at_ms=row[13],
            lease_holder=row[14],
            lease_fence=int(row[15] or 0),
            lease_expires_at_ms=row[16],
            event_seq=int(row[17] or 0),
        )

    def create_run(
        self,
        owner_user: str,
        *,
        session_id: str | None = None,
        entry: str | None = None,
        input: Any = None,
        idempotency_key: str | None = None,
        status: str = "queued",
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> tuple[RunRecord, bool]:
        """Create a run, or return the one this user already created with the same
        ``idempotency_key``; ``(run, created)``.

        Raises:
            StoreError: an unknown ``status``, or a ``run_id`` already taken.
        """
        if status not in RUN_STATUSES:
            raise StoreError(f"store {self.display}: unknown run status {status!r}", "config")
        rid = run_id or f"run_{uuid.uuid4().hex}"
        inp = self._json_capped(input, f"the input of run {rid}")
        with self.txn() as c:
            now = c.now_ms()
            if idempotency_key is not None:
                row = c.one(
                    f"SELECT {_RUN_COLS} FROM runs WHERE owner_user = ? AND idempotency_key = ?",
                    (owner_user, idempotency_key),
                )
                if row is not None:
                    return self._run(row), False
            inserted = c.run(
                "INSERT INTO runs (id, owner_user, session_id, idempotency_key, entry, status, "
                "input, metadata, created_at_ms, updated_at_ms) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (rid, owner_user, session_id, idempotency_key, entry, status, inp,
                 dump_json(metadata or {}), now, now),
            )  # fmt: skip
            if inserted:
                row = c.one(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (rid,))
                assert row is not None
                return self._run(row), True
            if idempotency_key is not None:  # a concurrent create with the same key won
                row = c.one(
                    f"SELECT {_RUN_COLS} FROM runs WHERE owner_user = ? AND idempotency_key = ?",
                    (owner_user, idempotency_key),
                )
                if row is not None:
                    return self._run(row), False
        raise StoreError(f"store {self.display}: run id {rid} is taken", "conflict")

    def get_run(
        self, run_id: str, owner_user: str, session_id: str | None = None
    ) -> RunRecord | None:
        """The run when it has this id, belongs to ``owner_user`` and to ``session_id``
        (None matches a run without a session); else None — one query for all three."""
        with self.read() as c:
            row = c.one(
                f"SELECT {_RUN_COLS} FROM runs WHERE id = ? AND owner_user = ? AND "
                f"session_id {self._null_eq} ?",
                (run_id, owner_user, session_id),
            )
        return self._run(row) if row else None

    def run_by_id(self, run_id: str) -> RunRecord | None:
        """The run with this id, whoever owns it (for replicas, never for callers)."""
        with self.read() as c:
            row = c.one(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (run_id,))
        return self._run(row) if row else None

    def list_runs(
        self,
        owner_user: str | None = None,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        """Runs, newest first, optionally of one user and with one of ``statuses``."""
        sql = f"SELECT {_RUN_COLS} FROM runs WHERE 1 = 1"
        params: list[Any] = []
        if owner_user is not None:
            sql += " AND owner_user = ?"
            params.append(owner_user)
        if statuses:
            sql += f" AND status IN ({', '.join('?' * len(statuses))})"
            params.extend(statuses)
        sql += " ORDER BY created_at_ms DESC, id LIMIT ?"
        params.append(limit)
        with self.read() as c:
            rows = c.all(sql, params)
        return [self._run(r) for r in rows]

    def claim_run(self, holder: str, lease_ms: int, run_id: str | None = None) -> RunRecord | None:
        """Claim the oldest runnable run — ``queued``, or ``in_progress`` under an expired
        lease — for ``holder`` (skipping rows another replica is claiming); with ``run_id``
        only that run. The returned record's ``lease_fence`` is the fence to present. None
        when nothing is runnable."""
        with self.txn() as c:
            now = c.now_ms()
            only = "" if run_id is None else "id = ? AND "
            row = c.one(
                f"SELECT id, lease_fence FROM runs WHERE {only}(status = 'queued' OR (status = "
                "'in_progress' AND lease_holder IS NOT NULL AND lease_expires_at_ms < ?)) "
                "ORDER BY created_at_ms, id LIMIT 1" + self.backend.skip_locked,
                (now,) if run_id is None else (run_id, now),
            )
            if row is None:
                return None
            fence = int(row[1] or 0) + 1
            c.run(
                "UPDATE runs SET status = 'in_progress', lease_holder = ?, lease_fence = ?, "
                "lease_expires_at_ms = ?, updated_at_ms = ? WHERE id = ?",
                (holder, fence, now + lease_ms, now, row[0]),
            )
            got = c.one(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (row[0],))
            assert got is not None
            return self._run(got)

    def parked_runs(self, limit: int = 1000) -> list[RunRecord]:
        """Runs parked on external work: ``in_progress`` with no lease and a checkpoint
        (``worker_id``), least recently changed first."""
        with self.read() as c:
            rows = c.all(
                f"SELECT {_RUN_COLS} FROM runs WHERE status = 'in_progress' AND lease_holder "
                "IS NULL AND worker_id IS NOT NULL ORDER BY updated_at_ms, id LIMIT ?",
                (limit,),
            )
        return [self._run(r) for r in rows]

    def requeue_parked_run(self, run_id: str) -> bool:
        """Make a parked run (``in_progress``, no lease) runnable again (``queued``); False
        when it is not parked (running under a lease, final, unknown)."""
        with self.txn() as c:
            return bool(
                c.run(
                    "UPDATE runs SET status = 'queued', updated_at_ms = ? WHERE id = ? AND "
                    "status = 'in_progress' AND lease_holder IS NULL",
                    (c.now_ms(), run_id),
                )
            )

    def run_counts(self) -> dict[str, int]:
        """How many runs have each status (``/metrics``)."""
        with self.read() as c:
            rows = c.all("SELECT status, COUNT(*) FROM runs GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}

    def renew_run(self, run_id: str, fence: int, lease_ms: int) -> bool:
        """Extend the lease of claim ``fence``; False when another replica took over."""
        with self.txn() as c:
            return bool(
                c.run(
                    "UPDATE runs SET lease_expires_at_ms = ? WHERE id = ? AND lease_fence = ? "
                    "AND lease_holder IS NOT NULL",
                    (c.now_ms() + lease_ms, run_id, fence),
                )
            )

    def update_run(
        self,
        run_id: str,
        *,
        fence: int | None = None,
        status: str | None = None,
        output: Any = ...,
        error: Any = ...,
        worker_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        release: bool = False,
        expect_statuses: tuple[str, ...] | None = None,
        event: tuple[str, Any] | None = None,
    ) -> RunRecord:
        """Change a run (only fields given); with ``fence`` only while that claim is
        current, with ``expect_statuses`` only while the run has one of them. A final
        ``status`` (or ``release``) gives the lease back. ``event`` (``(event_type,
        data)``) is appended in the same transaction: a final ``result`` / ``error`` event
        is written exactly when the outcome is (a replica killed between the two would
        leave the event without the outcome, and the next replica would write it again).

        Raises:
            Fenced: another replica took the run over, or its status is not one of
            ``expect_statuses``; StoreError: unknown run or status;
            CheckpointTooLarge: ``output`` over 4 MiB (nothing written).
        """
        if status is not None and status not in RUN_STATUSES:
            raise StoreError(f"store {self.display}: unknown run status {status!r}", "config")
        sets: list[str] = []
        params: list[Any] = []
        if status is not None:
            sets.append("status = ?")
            params.append(status)
        if output is not ...:
            sets.append("output = ?")
            params.append(self._json_capped(output, f"the output of run {run_id}"))
        if error is not ...:
            sets.append("error = ?")
            params.append(dump_json(error))
        if worker_id is not None:
            sets.append("worker_id = ?")
            params.append(worker_id)
        if metadata is not None:
            sets.append("metadata = ?")
            params.append(dump_json(metadata))
        event_text = None
        if event is not None:
            try:
                event_text = self._json_capped(event[1], f"an event of run {run_id}")
            except CheckpointTooLarge:  # the outcome still commits; the event says why it is bare
                event_text = dump_json({"event_type": event[0], "too_large": True})
        with self.txn() as c:
            now = c.now_ms()
            sets.append("updated_at_ms = ?")
            params.append(now)
            if status in _FINAL_RUN:
                sets.append("completed_at_ms = ?")
                params.append(now)
            if status in _FINAL_RUN or release:
                sets.append("lease_holder = NULL")
                sets.append("lease_expires_at_ms = NULL")
            where = " WHERE id = ?"
            params.append(run_id)
            if fence is not None:
                where += " AND lease_fence = ? AND lease_holder IS NOT NULL"
                params.append(fence)
            if expect_statuses:
                where += f" AND status IN ({', '.join('?' * len(expect_statuses))})"
                params.extend(expect_statuses)
            if not c.run(f"UPDATE runs SET {', '.join(sets)}{where}", params):
                if c.one("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
                    raise StoreError(f"store {self.display}: no run {run_id}", "config")
                raise Fenced(
                    f"store {self.display}: the claim on run {run_id} was lost (another "
                    "replica took it over); nothing was written"
                )
            if event is not None and event_text is not None:
                self._append_event(c, run_id, event[0], event_text, None)
            row = c.one(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (run_id,))
            assert row is not None
            return self._run(row)

    # ------------------------------------------------------------------ events

    def append_run_event(
        self, run_id: str, event_type: str, data: Any, *, fence: int | None = None
    ) -> int:
        """Append one event to a run; returns its ``seq`` (1, 2, ... with no gaps).

        Raises:
            Fenced: ``fence`` is no longer the run's claim; StoreError: no such run.
        """
        text = self._json_capped(data, f"an event of run {run_id}")
        with self.txn() as c:
            return self._append_event(c, run_id, event_type, text, fence)

    def _append_event(
        self, c: Conn, run_id: str, event_type: str, text: str, fence: int | None
    ) -> int:
        row = c.one(
            "SELECT event_seq, lease_fence, lease_holder FROM runs WHERE id = ?"
            + self.backend.for_update,
            (run_id,),
        )
        if row is None:
            raise StoreError(f"store {self.display}: no run {run_id}", "config")
        if fence is not None and (row[2] is None or int(row[1]) != fence):
            raise Fenced(
                f"store {self.display}: the claim on run {run_id} was lost; the event was "
                "not written"
            )
        seq = int(row[0]) + 1
        c.run("UPDATE runs SET event_seq = ? WHERE id = ?", (seq, run_id))
        c.run(
            "INSERT INTO run_events (run_id, seq, event_type, data, created_at_ms) VALUES "
            "(?, ?, ?, ?, ?)",
            (run_id, seq, event_type, text, c.now_ms()),
        )
        return seq

    def run_events(self, run_id: str, after_seq: int = 0, limit: int = 1000) -> list[RunEvent]:
        """Events of a run with ``seq > after_seq``, in order (SSE ``Last-Event-ID``)."""
        with self.read() as c:
            rows = c.all(
                "SELECT seq, event_type, data, created_at_ms FROM run_events WHERE run_id = ? "
                "AND seq > ? ORDER BY seq LIMIT ?",
                (run_id, after_seq, limit),
            )
        return [
            RunEvent(run_id, int(r[0]), r[1], self.load_json(r[2], f"event {r[0]} of {run_id}"),
                     int(r[3]))
            for r in rows
        ]  # fmt: skip

    # ------------------------------------------------------------------ waitpoints

    def _wp(self, c: Conn, row: tuple[Any, ...]) -> WaitpointRecord:
        wid = row[0]
        load = self.load_json
        rec = WaitpointRecord(
            id=wid,
            status=row[1],
            submission_key=row[2],
            owner_user=row[3],
            run_id=row[4],
            worker_id=row[5],
            value=load(row[6], f"waitpoint {wid}"),
            error=load(row[7], f"waitpoint {wid}"),
            timeout_at_ms=row[8],
            created_at_ms=int(row[9]),
            completed_at_ms=row[10],
            completed_by=row[11],
            metadata=load(row[12], f"waitpoint {wid}") or {},
        )
        rows = c.all(
            "SELECT worker_id, park_id FROM waitpoint_waiters WHERE waitpoint_id = ? ORDER BY "
            "created_at_ms, worker_id",
            (wid,),
        )
        rec.waiters = [(str(r[0]), r[1]) for r in rows]
        if rec.status not in ("open", "completed", "cancelled", "timed_out"):
            raise CorruptRecord(
                f"store {self.display}: waitpoint {wid} is corrupted (status {rec.status!r})"
            )
        return rec

    def create_waitpoint(
        self,
        *,
        waitpoint_id: str | None = None,
        submission_key: str | None = None,
        owner_user: str | None = None,
        run_id: str | None = None,
        worker_id: str | None = None,
        timeout_at_ms: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[WaitpointRecord, bool]:
        """Create a waitpoint, or return the existing one with the same ``submission_key``
        (or id); ``(waitpoint, created)``."""
        wid = waitpoint_id or f"wp_{uuid.uuid4().hex}"
        with self.txn() as c:
            row = None
            if submission_key is not None:
                row = c.one(
                    f"SELECT {_WP_COLS} FROM waitpoints WHERE submission_key = ?",
                    (submission_key,),
                )
            if row is None:
                row = c.one(f"SELECT {_WP_COLS} FROM waitpoints WHERE id = ?", (wid,))
            if row is not None:
                return self._wp(c, row), False
            inserted = c.run(
                "INSERT INTO waitpoints (id, submission_key, owner_user, run_id, worker_id, "
                "status, timeout_at_ms, created_at_ms, metadata) VALUES "
                "(?, ?, ?, ?, ?, 'open', ?, ?, ?) ON CONFLICT DO NOTHING",
                (wid, submission_key, owner_user, run_id, worker_id, timeout_at_ms,
                 c.now_ms(), dump_json(metadata or {})),
            )  # fmt: skip
            if not inserted and submission_key is not None:  # created concurrently
                row = c.one(
                    f"SELECT {_WP_COLS} FROM waitpoints WHERE submission_key = ?",
                    (submission_key,),
                )
                if row is not None:
                    return self._wp(c, row), False
            row = c.one(f"SELECT {_WP_COLS} FROM waitpoints WHERE id = ?", (wid,))
            assert row is not None
            return self._wp(c, row), bool(inserted)

    def get_waitpoint(self, waitpoint_id: str) -> WaitpointRecord | None:
        """The waitpoint with this id (with its waiters), or None."""
        with self.read() as c:
            row = c.one(f"SELECT {_WP_COLS} FROM waitpoints WHERE id = ?", (waitpoint_id,))
            return self._wp(c, row) if row else None

    def list_waitpoints(
        self, statuses: tuple[str, ...] | None = None, limit: int = 1000
    ) -> list[WaitpointRecord]:
        """Waitpoints, oldest first, optionally with one of ``statuses``."""
        sql = f"SELECT {_WP_COLS} FROM waitpoints"
        params: list[Any] = []
        if statuses:
            sql += f" WHERE status IN ({', '.join('?' * len(statuses))})"
            params.extend(statuses)
        sql += " ORDER BY created_at_ms, id LIMIT ?"
        params.append(limit)
        with self.read() as c:
            return [self._wp(c, r) for r in c.all(sql, params)]

    def add_waitpoint_waiter(
        self, waitpoint_id: str, worker_id: str, park_id: str | None
    ) -> WaitpointRecord:
        """Record that ``worker_id`` (at ``park_id``) waits on the waitpoint (again: the
        park id is updated); returns the waitpoint as it is now (it may be final already:
        a completion that arrived before the checkpoint committed).

        Raises:
            StoreError: no such waitpoint.
        """
        with self.txn() as c:
            self._insert_waiter(c, waitpoint_id, worker_id, park_id)
            row = c.one(f"SELECT {_WP_COLS} FROM waitpoints WHERE id = ?", (waitpoint_id,))
            assert row is not None  # locked by _insert_waiter in this transaction
            return self._wp(c, row)

    def waitpoints_of(self, worker_id: str) -> list[WaitpointRecord]:
        """The waitpoints ``worker_id`` waits on."""
        with self.read() as c:
            rows = c.all(
                f"SELECT {', '.join('w.' + x.strip() for x in _WP_COLS.split(','))} FROM "
                "waitpoints w JOIN waitpoint_waiters v ON v.waitpoint_id = w.id WHERE "
                "v.worker_id = ? ORDER BY w.created_at_ms, w.id",
                (worker_id,),
            )
            return [self._wp(c, r) for r in rows]

    def _finish_waitpoint(
        self,
        waitpoint_id: str,
        status: str,
        *,
        value: Any = None,
        error: Any = None,
        by: str | None = None,
        timer: bool = False,
    ) -> bool:
        text = self._json_capped(value, f"the value of waitpoint {waitpoint_id}")
        with self.txn() as c:
            if status in ("completed", "cancelled") and not timer:
                row = c.one("SELECT metadata FROM waitpoints WHERE id = ?", (waitpoint_id,))
                meta = self.load_json(row[0], f"waitpoint {waitpoint_id}") if row else None
                if isinstance(meta, dict) and meta.get("kind") == "timeout":
                    raise TimerWaitpoint(
                        f"store {self.display}: {waitpoint_id} is the timer of a wait with a "
                        "timeout (it fires by itself); complete or cancel the waitpoint it "
                        "times; nothing changed"
                    )
            done = c.run(
                "UPDATE waitpoints SET status = ?, value = ?, error = ?, completed_at_ms = ?, "
                "completed_by = ? WHERE id = ? AND status = 'open'",
                (status, text, dump_json(error), c.now_ms(), by, waitpoint_id),
            )
            return bool(done)

    def complete_waitpoint(self, waitpoint_id: str, value: Any, *, by: str | None = None) -> bool:
        """Complete an open waitpoint with ``value`` (JSON); True for the one completion
        that wins, False when it is not open (already completed, cancelled, timed out) or
        unknown.

        Raises:
            TimerWaitpoint: it is a wait's own timer (nothing changed).
        """
        return self._finish_waitpoint(waitpoint_id, "completed", value=value, by=by)

    def cancel_waitpoint(
        self, waitpoint_id: str, *, error: Any = None, by: str | None = None
    ) -> bool:
        """Cancel an open waitpoint; False when it is not open.

        Raises:
            TimerWaitpoint: it is a wait's own timer (nothing changed).
        """
        return self._finish_waitpoint(waitpoint_id, "cancelled", error=error, by=by)

    def cancel_timer(self, waitpoint_id: str) -> bool:
        """Cancel the timer waitpoint of a wait that ended (answered, cancelled or timed
        out another way) so it never fires; False when it is not open."""
        return self._finish_waitpoint(
            waitpoint_id, "cancelled", error={"reason": "wait ended"}, by="wait", timer=True
        )

    def time_out_waitpoint(self, waitpoint_id: str) -> bool:
        """Mark an open waitpoint ``timed_out``; False when it is not open."""
        return self._finish_waitpoint(
            waitpoint_id, "timed_out", error={"category": "timeout"}, by="timeout"
        )

    def due_waitpoint_timeouts(self, now_ms: int, limit: int = 100) -> list[str]:
        """Ids of open waitpoints whose timeout is at or before ``now_ms``."""
        with self.read() as c:
            rows = c.all(
                "SELECT id FROM waitpoints WHERE status = 'open' AND timeout_at_ms <= ? "
                "ORDER BY timeout_at_ms LIMIT ?",
                (now_ms, limit),
            )
        return [str(r[0]) for r in rows]
