"""Durable resume waits and resume receipts in the SQL store (lifecycle.md §4, §10).

Life of a wait (``status``): ``pending`` — registered, waiting for its cron tick, deadline
or event (an arriving event sets ``due_reason`` / ``due_payload`` without changing the
status) → ``claimed`` — one runner holds it: ``claim_token`` (its fencing token) and a lease
``lease_until_ms`` in the store clock; a claim whose lease expired can be taken over →
``completed`` / ``failed`` (outcome recorded) or ``cancelled``. A checkpoint commit that
leaves a park also completes the waits of that park (``outcome.status: "consumed"``, in the
same transaction: :mod:`harnpy.store.sql_checkpoints`).

Exactly-once rests on two records: the **claim** (a conditional update inside the write
transaction; on PostgreSQL the due rows are picked with ``FOR UPDATE SKIP LOCKED``), and
the **resume receipt** (:meth:`WaitsMixin.begin_resume`: inserted by the code that performs
the resume, primary key = wait id, only for the current claim token), so a resume begins at
most once per claim even across a runner crash, a lease takeover or a race.

The JSON ``record`` column is the source of truth; the other columns mirror it for queries
and conditional updates. Times passed in (``now_ms``) are the caller's clock and decide
what is *due*; lease arithmetic uses the store clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from harnpy.store._common import dump_json, new_token
from harnpy.store.backends import Conn
from harnpy.store.errors import CorruptRecord, StoreError
from harnpy.store.records import FINAL_WAIT_STATUSES, Claim, WaitRecord
from harnpy.store.sql_base import SqlBase

__all__ = ["WaitsMixin"]

#: Columns mirrored out of the JSON record.
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
    "park_id",
)
_DUE_SQL = (
    "(status = 'pending' AND (due_reason IS NOT NULL OR deadline_ms <= ? OR next_fire_ms <= ?))"
    " OR (status = 'claimed' AND lease_until_ms < ?)"
)


class WaitsMixin(SqlBase):
    """The wait-store methods (module docstring). Every method is atomic with respect to
    every other process using the same store."""

    # ---- plumbing

    def _decode_wait(self, text: Any, key: Any) -> WaitRecord:
        data = self.load_json(text, f"the wait row {key}")
        if not isinstance(data, dict):
            raise CorruptRecord(
                f"store {self.display}: the wait row {key} is corrupted (not a JSON object)"
            )
        known = WaitRecord.__dataclass_fields__
        try:
            rec = WaitRecord(**{k: v for k, v in data.items() if k in known})
        except TypeError as e:
            raise CorruptRecord(
                f"store {self.display}: the wait row {key} is corrupted ({e})"
            ) from None
        if type(rec.id) is not str or type(rec.worker_id) is not str:
            raise CorruptRecord(
                f"store {self.display}: the wait row {key} is corrupted (no id or worker id)"
            )
        return rec

    def _decode_rows(self, rows: Iterable[tuple[Any, ...]]) -> list[WaitRecord]:
        """Decode ``(id, record)`` rows; a corrupt one is skipped with a warning (it stays
        stored as it is)."""
        out = []
        for key, text in rows:
            try:
                out.append(self._decode_wait(text, key))
            except CorruptRecord as e:
                self.warn(f"wait:{key}", e.message.split(": ", 1)[-1] + "; skipped")
        return out

    def _write_wait(self, c: Conn, rec: WaitRecord, insert: bool = False) -> None:
        values = [getattr(rec, col) for col in _MIRRORED]
        blob = json.dumps(rec.to_json(), sort_keys=True, default=str)
        if insert:
            cols = ", ".join(("id", *_MIRRORED, "record"))
            marks = ", ".join("?" * (len(_MIRRORED) + 2))
            c.run(f"INSERT INTO waits ({cols}) VALUES ({marks})", [rec.id, *values, blob])
        else:
            sets = ", ".join(f"{col} = ?" for col in (*_MIRRORED, "record"))
            c.run(f"UPDATE waits SET {sets} WHERE id = ?", [*values, blob, rec.id])

    def _load_wait(self, c: Conn, wait_id: str, lock: bool = False) -> WaitRecord | None:
        sql = "SELECT record FROM waits WHERE id = ?"
        if lock:
            sql += self.backend.for_update
        row = c.one(sql, (wait_id,))
        return self._decode_wait(row[0], wait_id) if row else None

    @staticmethod
    def _has_receipt(c: Conn, wait_id: str) -> bool:
        return c.one("SELECT 1 FROM resume_receipts WHERE wait_id = ?", (wait_id,)) is not None

    # ---- reads

    def get(self, wait_id: str) -> WaitRecord | None:
        """The wait with this id, or None.

        Raises:
            CorruptRecord: its row does not decode.
        """
        with self.read() as c:
            return self._load_wait(c, wait_id)

    def list_waits(self, statuses: Iterable[str] | None = None) -> list[WaitRecord]:
        """Waits, oldest first, optionally only those with one of ``statuses`` (a corrupt
        row is skipped with a warning)."""
        with self.read() as c:
            if statuses is None:
                rows = c.all("SELECT id, record FROM waits ORDER BY created_at_ms, id")
            else:
                st = list(statuses)
                marks = ", ".join("?" * len(st))
                rows = c.all(
                    f"SELECT id, record FROM waits WHERE status IN ({marks}) "
                    "ORDER BY created_at_ms, id",
                    st,
                )
        return self._decode_rows(rows)

    def waits_of(self, worker_id: str, active_only: bool = True) -> list[WaitRecord]:
        """The waits of one worker (by default only pending / claimed ones), oldest first."""
        sql = "SELECT id, record FROM waits WHERE worker_id = ?"
        if active_only:
            sql += " AND status IN ('pending', 'claimed')"
        with self.read() as c:
            rows = c.all(sql + " ORDER BY created_at_ms, id", (worker_id,))
        return self._decode_rows(rows)

    def find(self, key: str) -> WaitRecord | None:
        """A wait by id, else the newest wait of worker ``key`` (active ones first), else
        the newest wait whose id or worker id starts with ``key`` (a unique prefix)."""
        with self.read() as c:
            row = c.one("SELECT record FROM waits WHERE id = ?", (key,))
            if row:
                return self._decode_wait(row[0], key)
            order = (
                " ORDER BY CASE WHEN status IN ('pending', 'claimed') THEN 0 ELSE 1 END, "
                "created_at_ms DESC"
            )
            rows = c.all("SELECT id, record FROM waits WHERE worker_id = ?" + order, (key,))
            if not rows and key:
                like = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                rows = c.all(
                    "SELECT id, record FROM waits WHERE (id LIKE ? ESCAPE '\\' OR worker_id "
                    "LIKE ? ESCAPE '\\')" + order,
                    (like, like),
                )
                ids = {(r[1] and self._peek_worker(r[1])) or r[0] for r in rows}
                if len(ids) > 1:
                    raise StoreError(
                        f"store {self.display}: `{key}` is the start of {len(ids)} waits or "
                        "workers; give more of the id",
                        "conflict",
                    )
        return self._decode_wait(rows[0][1], rows[0][0]) if rows else None

    @staticmethod
    def _peek_worker(text: str) -> str | None:
        try:
            v = json.loads(text)
        except ValueError:
            return None
        w = v.get("worker_id") if isinstance(v, dict) else None
        return w if isinstance(w, str) else None

    def due(self, now_ms: int, limit: int = 100) -> list[WaitRecord]:
        """Pending waits with a due cause at ``now_ms`` and claimed waits whose lease
        expired (a runner died), earliest first."""
        with self.read() as c:
            store_now = c.now_ms()
            rows = c.all(
                f"SELECT id, record FROM waits WHERE {_DUE_SQL} ORDER BY created_at_ms, id LIMIT ?",
                (now_ms, now_ms, store_now, limit),
            )
        return self._decode_rows(rows)

    def receipt(self, wait_id: str) -> dict[str, Any] | None:
        """The resume receipt of ``wait_id``, or None when its resume never began."""
        with self.read() as c:
            row = c.one(
                "SELECT wait_id, token, began_at_ms, info, outcome, finished_at_ms "
                "FROM resume_receipts WHERE wait_id = ?",
                (wait_id,),
            )
        if row is None:
            return None
        return {
            "wait_id": row[0],
            "token": row[1],
            "began_at_ms": row[2],
            "info": self.load_json(row[3], f"the resume receipt {wait_id}") if row[3] else None,
            "outcome": self.load_json(row[4], f"the resume receipt {wait_id}") if row[4] else None,
            "finished_at_ms": row[5],
        }

    # ---- writes

    def add(self, rec: WaitRecord) -> None:
        """Insert a new wait.

        Raises:
            StoreError: a wait with this id exists (``kind="conflict"``).
        """
        with self.txn() as c:
            if c.one("SELECT 1 FROM waits WHERE id = ?", (rec.id,)) is not None:
                raise StoreError(f"store {self.display}: wait {rec.id} already exists", "conflict")
            self._write_wait(c, rec, insert=True)

    def update(self, rec: WaitRecord) -> None:
        """Overwrite a wait's record (tests and maintenance)."""
        with self.txn() as c:
            self._write_wait(c, rec)

    def post_event(self, topic: str, payload: Any, now_ms: int) -> list[str]:
        """Mark pending waits listening on ``topic`` due (the first event wins); returns
        their ids."""
        woken = []
        with self.txn() as c:
            rows = c.all(
                "SELECT id, record FROM waits WHERE status = 'pending' AND on_event = ? "
                "AND due_reason IS NULL" + self.backend.for_update,
                (topic,),
            )
            for rec in self._decode_rows(rows):
                rec.due_reason = "event"
                rec.due_payload = {"topic": topic, "payload": payload}
                rec.due_at_ms = now_ms
                rec.updated_at_ms = now_ms
                self._write_wait(c, rec)
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
        """Mark pending waits whose trigger listens to ``provider`` / ``kind`` due (``match``,
        when given, decides instead of the event-kind test); returns their ids."""
        woken = []
        with self.txn() as c:
            rows = c.all(
                "SELECT id, record FROM waits WHERE status = 'pending' AND provider = ? "
                "AND due_reason IS NULL" + self.backend.for_update,
                (provider,),
            )
            for rec in self._decode_rows(rows):
                if match is not None:
                    if not match(rec):
                        continue
                elif kind not in (rec.match_events or [rec.kind or ""]):
                    continue
                rec.due_reason = "trigger"
                rec.due_payload = payload
                rec.due_at_ms = now_ms
                rec.updated_at_ms = now_ms
                self._write_wait(c, rec)
                woken.append(rec.id)
        return woken

    def _take(
        self, c: Conn, rec: WaitRecord, runner_id: str, now_ms: int, lease_ms: int
    ) -> Claim | None:
        """Claim ``rec`` (read under the transaction's lock) when it is claimable."""
        store_now = c.now_ms()
        previous = None
        if rec.status == "claimed":
            if (rec.lease_until_ms or 0) >= store_now:
                return None
            previous = rec.claim_token
        elif rec.status != "pending":
            return None
        token = new_token()
        rec.status = "claimed"
        rec.claimed_by = runner_id
        rec.claim_token = token
        rec.claimed_at_ms = now_ms
        rec.lease_until_ms = store_now + lease_ms
        rec.attempts += 1
        rec.updated_at_ms = now_ms
        self._write_wait(c, rec)
        return Claim(rec, token, previous)

    def claim(
        self, wait_id: str, runner_id: str, now_ms: int, lease_ms: int, *, force: bool = False
    ) -> Claim | None:
        """Claim ``wait_id`` for ``runner_id`` with a lease of ``lease_ms`` (store clock).

        Claimable: ``pending`` (when ``force`` is false it must also be due at ``now_ms``)
        or ``claimed`` with an expired lease. None when another runner holds it, it is not
        due, or it is final.
        """
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None:
                return None
            if rec.status == "pending" and not force and rec.due_instant(now_ms) is None:
                return None
            return self._take(c, rec, runner_id, now_ms, lease_ms)

    def claim_due(self, runner_id: str, now_ms: int, lease_ms: int, limit: int = 1) -> list[Claim]:
        """Claim up to ``limit`` due waits (as :meth:`due` lists them) in one transaction;
        on PostgreSQL rows another replica is claiming are skipped (``SKIP LOCKED``), so
        replicas never wait on each other."""
        out: list[Claim] = []
        with self.txn() as c:
            store_now = c.now_ms()
            rows = c.all(
                f"SELECT id, record FROM waits WHERE {_DUE_SQL} ORDER BY created_at_ms, id "
                "LIMIT ?" + self.backend.skip_locked,
                (now_ms, now_ms, store_now, limit),
            )
            for rec in self._decode_rows(rows):
                got = self._take(c, rec, runner_id, now_ms, lease_ms)
                if got is not None:
                    out.append(got)
        return out

    def renew(self, wait_id: str, token: str, now_ms: int, lease_ms: int) -> bool:
        """Extend the lease of claim ``token``; False when the claim was lost."""
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None or rec.status != "claimed" or rec.claim_token != token:
                return False
            rec.lease_until_ms = c.now_ms() + lease_ms
            rec.updated_at_ms = now_ms
            self._write_wait(c, rec)
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
        deadline, ``"due"`` the arrived event / trigger."""
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
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
            self._write_wait(c, rec)
            return True

    def revoke_receipt(self, wait_id: str, token: str) -> bool:
        """Delete the receipt of claim ``token`` (the resume it announced did not take
        effect), so the wait can be resumed or closed later. False when there is none."""
        with self.txn() as c:
            return bool(
                c.run(
                    "DELETE FROM resume_receipts WHERE wait_id = ? AND token = ?",
                    (wait_id, token),
                )
            )

    def reopen(self, wait_id: str, now_ms: int) -> bool:
        """Undo the cancellation a resume made that was then put back (``harnpy run
        --resume`` interrupted before the worker settled): a wait cancelled for reason
        ``resumed`` whose resume never began is ``pending`` again."""
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None or rec.status != "cancelled":
                return False
            if not isinstance(rec.outcome, dict) or rec.outcome.get("reason") != "resumed":
                return False
            if self._has_receipt(c, wait_id):
                return False
            rec.status = "pending"
            rec.outcome = None
            rec.completed_at_ms = None
            rec.updated_at_ms = now_ms
            self._write_wait(c, rec)
            return True

    def begin_resume(self, wait_id: str, token: str, now_ms: int, info: Any = None) -> bool:
        """Insert the resume receipt: the resume of ``wait_id`` takes effect now. Succeeds
        once per receipt and only for the current claim ``token``."""
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None or rec.status != "claimed" or rec.claim_token != token:
                return False
            if self._has_receipt(c, wait_id):
                return False
            c.run(
                "INSERT INTO resume_receipts (wait_id, token, began_at_ms, info) "
                "VALUES (?, ?, ?, ?)",
                (wait_id, token, now_ms, dump_json(info)),
            )
            return True

    def finish_receipt(self, wait_id: str, token: str, outcome: Any, now_ms: int) -> None:
        """Attach ``outcome`` to the receipt written by ``token``."""
        with self.txn() as c:
            c.run(
                "UPDATE resume_receipts SET outcome = ?, finished_at_ms = ? "
                "WHERE wait_id = ? AND token = ?",
                (dump_json(outcome), now_ms, wait_id, token),
            )

    def complete(
        self, wait_id: str, token: str | None, status: str, outcome: Any, now_ms: int
    ) -> bool:
        """Record the final ``status`` and ``outcome`` for claim ``token`` (``None``: the
        in-process owner that never claimed). A wait the resumed worker's checkpoint commit
        already consumed under this claim keeps its status and takes the outcome's details.

        Raises:
            StoreError: ``status`` is not a final status.
        """
        if status not in FINAL_WAIT_STATUSES:
            raise StoreError(f"not a final wait status: {status}", "config")
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None:
                return False
            if rec.status in FINAL_WAIT_STATUSES:
                consumed = isinstance(rec.outcome, dict) and rec.outcome.get("status") == "consumed"
                if consumed and token is not None and rec.claim_token == token:
                    rec.outcome = {**rec.outcome, "runner_outcome": outcome}
                    rec.updated_at_ms = now_ms
                    self._write_wait(c, rec)
                return False
            if token is not None and (rec.status != "claimed" or rec.claim_token != token):
                return False
            rec.status = status
            rec.outcome = outcome
            rec.completed_at_ms = now_ms
            rec.updated_at_ms = now_ms
            rec.lease_until_ms = None
            self._write_wait(c, rec)
            return True

    def cancel(self, wait_id: str, now_ms: int, reason: str = "cancelled") -> bool:
        """Cancel an active wait (``close``); False when it is final or its resume began."""
        with self.txn() as c:
            rec = self._load_wait(c, wait_id, lock=True)
            if rec is None or rec.status in FINAL_WAIT_STATUSES:
                return False
            if self._has_receipt(c, wait_id):
                return False
            rec.status = "cancelled"
            rec.outcome = {"status": "cancelled", "reason": reason}
            rec.completed_at_ms = now_ms
            rec.updated_at_ms = now_ms
            rec.claim_token = None
            rec.lease_until_ms = None
            self._write_wait(c, rec)
            return True

    def _consume_waits(
        self, c: Conn, worker_id: str, keep_park_id: str | None, now_ms: int, version: int
    ) -> list[str]:
        """Inside a checkpoint commit: complete every active wait of ``worker_id`` that
        belongs to another park than ``keep_park_id`` (the park the worker left), with
        ``outcome.status: "consumed"``. Returns their ids."""
        rows = c.all(
            "SELECT id, record FROM waits WHERE worker_id = ? AND status IN "
            "('pending', 'claimed') AND park_id IS NOT NULL" + self.backend.for_update,
            (worker_id,),
        )
        done = []
        for rec in self._decode_rows(rows):
            if rec.park_id == keep_park_id:
                continue
            rec.status = "completed"
            rec.outcome = {"status": "consumed", "checkpoint_version": version}
            rec.completed_at_ms = now_ms
            rec.updated_at_ms = now_ms
            rec.lease_until_ms = None
            self._write_wait(c, rec)
            done.append(rec.id)
        return done
