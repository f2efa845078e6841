"""Worker checkpoints and committed transcripts in the SQL store.

One ``checkpoints`` row per worker holds its current snapshot document (``body``: the
bytes as written — sealed by the lifecycle layer —, JSON-validated on write and read, at
most 4 MiB), the document's ``status`` / ``park_id``, a commit counter ``version`` and the
claim of the resume in progress.

Claims and fencing: :meth:`CheckpointsMixin.claim_checkpoint` takes a parked checkpoint
for one resume — the row must be ``suspended`` (at the expected park) and not held by a
live claim — and returns a *fence*, ``claim_fence`` incremented (strictly increasing per
worker). The stored body stays the park while the resume runs, so a resume that dies
(its lease expires, or its owner pid is gone on this host) leaves the park claimable again
(issue 13 point 6): nothing has to be rolled back. Every commit made for the resume
presents its fence (:meth:`~CheckpointsMixin.put_checkpoint` ``fence=``): when another
process took over after the lease expired the fence no longer matches and the commit is
refused (:class:`~harnpy.store.errors.Fenced`) with nothing written. Commits not made under
a claim (the process that spawned a worker writing its metadata, its first park) present
the version they last wrote (``expect_version``) and are refused when anyone else committed
since or a live claim holds the row. Lease times are in the store clock.

A commit that moves the worker off a park completes that park's waits in the same
transaction (:meth:`~harnpy.store.sql_waits.WaitsMixin._consume_waits`), and transcript
entries appended with it (:class:`~harnpy.store.records.TranscriptAppend`) are committed
in the same transaction too: outcomes and transcript turns are committed exactly once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from harnpy.store._common import MAX_DOCUMENT_BYTES, dump_json, owner_gone, parse_json_object
from harnpy.store.backends import Conn
from harnpy.store.errors import (
    CheckpointTooLarge,
    ClaimRefused,
    CorruptRecord,
    Fenced,
    StoreError,
)
from harnpy.store.records import CheckpointClaim, CheckpointInfo, CheckpointMeta, TranscriptAppend
from harnpy.store.sql_waits import WaitsMixin

__all__ = ["CheckpointsMixin"]

_INFO_COLS = (
    "worker_id, version, status, park_id, name, mode, reason, run_id, wake, size, "
    "updated_at_ms, claim_holder, claim_expires_at_ms, claim_owner"
)


class CheckpointsMixin(WaitsMixin):
    """Checkpoint and transcript methods (module docstring)."""

    # ---- plumbing

    def checkpoint_ref(self, worker_id: str) -> str:
        """The reference of a worker's checkpoint in this store (``<url>#<worker id>``),
        what ``harnpy run --resume`` accepts and a worker's ``snapshot_path`` shows."""
        return f"{self.display}#{worker_id}"

    def _check_body(self, worker_id: str, body: bytes) -> None:
        if len(body) > MAX_DOCUMENT_BYTES:
            raise CheckpointTooLarge(
                f"store {self.display}: the checkpoint of {worker_id} is {len(body)} bytes, "
                f"over the {MAX_DOCUMENT_BYTES}-byte (4 MiB) limit; nothing was written",
                len(body),
                MAX_DOCUMENT_BYTES,
            )
        try:
            doc = parse_json_object(body)
        except ValueError as e:
            raise StoreError(
                f"store {self.display}: the checkpoint of {worker_id} is not JSON ({e}); "
                "nothing was written",
                "config",
            ) from None
        if not isinstance(doc, dict):
            raise StoreError(
                f"store {self.display}: the checkpoint of {worker_id} is not a JSON object; "
                "nothing was written",
                "config",
            )

    def _checked_body(self, worker_id: str, raw: Any, sha: str | None) -> bytes:
        body = self.blob(raw, f"the checkpoint row of {worker_id}")
        what = f"store {self.display}: the checkpoint row of {worker_id} is corrupted"
        if sha is not None and hashlib.sha256(body).hexdigest() != sha:
            raise CorruptRecord(f"{what} (its bytes do not match their hash); it was left as it is")
        try:
            doc = parse_json_object(body)
        except ValueError as e:
            raise CorruptRecord(f"{what} (not JSON: {e}); it was left as it is") from None
        if not isinstance(doc, dict):
            raise CorruptRecord(f"{what} (not a JSON object); it was left as it is")
        return body

    def _info(self, row: tuple[Any, ...], now: int) -> CheckpointInfo:
        (wid, version, status, park, name, mode, reason, run_id, wake, size, updated,
         holder, expires, owner) = row  # fmt: skip
        owner_v = None
        if owner:
            try:
                owner_v = self.load_json(owner, f"the claim of checkpoint {wid}")
            except CorruptRecord:
                owner_v = None
        wake_v: list[str] = []
        if wake:
            try:
                loaded = self.load_json(wake, f"the wake conditions of checkpoint {wid}")
                wake_v = [str(x) for x in loaded] if isinstance(loaded, list) else []
            except CorruptRecord:
                wake_v = []
        try:  # a row is data from outside: a damaged one is listed as such, never a crash
            ints = (int(version), int(size or 0), int(updated or 0))
            expires = None if expires is None else int(expires)
            texts = (status, park, name, mode, reason, run_id, holder)
            if not isinstance(status, str) or not all(
                t is None or isinstance(t, str) for t in texts
            ):
                raise ValueError("a text column holds something else")
        except (TypeError, ValueError, OverflowError) as e:
            return CheckpointInfo(
                worker_id=str(wid),
                ref=self.checkpoint_ref(str(wid)),
                status="corrupt",
                reason=f"damaged row in store {self.display} ({e}); it was left as it is",
            )
        info = CheckpointInfo(
            worker_id=wid,
            ref=self.checkpoint_ref(wid),
            status=status,
            version=ints[0],
            park_id=park,
            name=name,
            mode=mode,
            reason=reason,
            run_id=run_id,
            size=ints[1],
            updated_at_ms=ints[2],
            claim_holder=holder,
            claim_expires_at_ms=expires,
            claim_owner=owner_v if isinstance(owner_v, dict) else None,
            wake=wake_v,
        )
        if holder is not None and self._claim_live(expires, owner_v, now):
            info.status = "running"
        return info

    @staticmethod
    def _claim_live(expires: Any, owner: Any, now: int) -> bool:
        """Whether a claim still holds: its lease has not expired and its owner is not
        known to be gone (a dead pid on this host)."""
        if expires is None or int(expires) < now:
            return False
        return not owner_gone(owner)

    # ---- reads

    def checkpoint_info(self, worker_id: str) -> CheckpointInfo | None:
        """The listing columns of one checkpoint (``status`` ``running`` while a live claim
        holds it), or None."""
        with self.read() as c:
            row = c.one(f"SELECT {_INFO_COLS} FROM checkpoints WHERE worker_id = ?", (worker_id,))
            return self._info(row, c.now_ms()) if row else None

    def get_checkpoint(self, worker_id: str) -> tuple[CheckpointInfo, bytes] | None:
        """The checkpoint of ``worker_id``: its info and the stored body (the parked
        document while a resume holds the claim), or None.

        Raises:
            CorruptRecord: the stored body fails its hash or JSON check.
        """
        with self.read() as c:
            row = c.one(
                f"SELECT {_INFO_COLS}, body, sha256 FROM checkpoints WHERE worker_id = ?",
                (worker_id,),
            )
            if row is None:
                return None
            info = self._info(row[:-2], c.now_ms())
        return info, self._checked_body(worker_id, row[-2], row[-1])

    def list_checkpoints(self, statuses: tuple[str, ...] | None = None) -> list[CheckpointInfo]:
        """Checkpoints, newest first (``statuses`` filters on the shown status, in which a
        live claim shows as ``running``)."""
        with self.read() as c:
            rows = c.all(f"SELECT {_INFO_COLS} FROM checkpoints ORDER BY updated_at_ms DESC")
            now = c.now_ms()
        infos = [self._info(r, now) for r in rows]
        if statuses is not None:
            infos = [i for i in infos if i.status in statuses]
        return infos

    def find_checkpoints(self, prefix: str) -> list[str]:
        """Worker ids of the checkpoints whose id starts with ``prefix`` (or equals it)."""
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self.read() as c:
            rows = c.all(
                "SELECT worker_id FROM checkpoints WHERE worker_id = ? OR worker_id LIKE ? "
                "ESCAPE '\\' ORDER BY worker_id",
                (prefix, like),
            )
        ids = [str(r[0]) for r in rows]
        return [prefix] if prefix in ids else ids

    def read_transcript(
        self, worker_id: str, generation: str, stream: str, upto: int
    ) -> list[bytes]:
        """The committed transcript entries ``0 .. upto-1`` of one stream, in order.

        Raises:
            CorruptRecord: an entry is missing.
        """
        with self.read() as c:
            rows = c.all(
                "SELECT seq, body FROM transcript_rows WHERE worker_id = ? AND generation = ? "
                "AND stream = ? AND seq < ? ORDER BY seq",
                (worker_id, generation, stream, upto),
            )
        if len(rows) != upto or (rows and int(rows[-1][0]) != upto - 1):
            raise CorruptRecord(
                f"store {self.display}: the transcript of {worker_id} is incomplete ({len(rows)} "
                f"of {upto} entries of stream {stream}); it was left as it is"
            )
        what = f"the transcript of {worker_id} (stream {stream})"
        return [self.blob(r[1], what) for r in rows]

    def delete_checkpoint(self, worker_id: str) -> bool:
        """Remove the checkpoint of ``worker_id`` and its transcript rows (``harnpy
        workers rm``); False when there was none. Its waits and waitpoints are left."""
        with self.txn() as c:
            c.run("DELETE FROM transcript_rows WHERE worker_id = ?", (worker_id,))
            return bool(c.run("DELETE FROM checkpoints WHERE worker_id = ?", (worker_id,)))

    # ---- writes

    def _append_transcript(self, c: Conn, worker_id: str, t: TranscriptAppend) -> None:
        if t.drop_others:
            c.run(
                "DELETE FROM transcript_rows WHERE worker_id = ? AND generation <> ?",
                (worker_id, t.generation),
            )
        firsts: dict[str, int] = {}
        for stream, seq, _ in t.rows:
            firsts[stream] = min(seq, firsts.get(stream, seq))
        if firsts:
            # entries past the committed count left by nothing (rows commit with their
            # checkpoint), but a re-append after a takeover must never collide: one
            # statement for every stream of the append
            cond = " OR ".join(["(stream = ? AND seq >= ?)"] * len(firsts))
            c.run(
                f"DELETE FROM transcript_rows WHERE worker_id = ? AND generation = ? AND ({cond})",
                (worker_id, t.generation, *[x for sf in firsts.items() for x in sf]),
            )
        c.run_many(
            "INSERT INTO transcript_rows (worker_id, generation, stream, seq, body) "
            "VALUES (?, ?, ?, ?, ?)",
            [(worker_id, t.generation, stream, seq, body) for stream, seq, body in t.rows],
        )

    def put_checkpoint(
        self,
        worker_id: str,
        body: bytes,
        meta: CheckpointMeta,
        *,
        fence: int | None = None,
        expect_version: int | None = None,
        transcript: TranscriptAppend | None = None,
        waiters: Sequence[str] = (),
        run_fence: int | None = None,
    ) -> int:
        """Commit ``body`` as the checkpoint of ``worker_id``; returns the new version.

        With ``fence`` (a resume's claim): only while that claim is current; the claim is
        released unless ``meta.status`` is ``running``. Without: ``expect_version`` None
        inserts the first checkpoint; an int updates only a row still at that version and
        not held by a live claim. Waits of a park the worker left are completed,
        ``transcript`` entries appended and the worker recorded as a waiter (at
        ``meta.park_id``) of each waitpoint id in ``waiters``, all in the same transaction:
        a process killed mid-park leaves either no new checkpoint or one its waitpoints
        will wake (issue 11: no run stranded between the checkpoint and its waiter rows).
        With ``run_fence`` (a served run's first park): only while the claim of run
        ``meta.run_id`` is still that fence, so a replica whose run lease expired cannot
        plant a checkpoint after another replica took the run over.

        Raises:
            CheckpointTooLarge: over 4 MiB; StoreError: not a JSON object (nothing written).
            Fenced: the claim is no longer current (another process took over).
            StoreError: ``kind="conflict"`` when the row changed since ``expect_version``;
                ``kind="config"`` when a waitpoint of ``waiters`` does not exist.
        """
        self._check_body(worker_id, body)
        sha = hashlib.sha256(body).hexdigest()
        wake = dump_json(meta.wake)
        with self.txn() as c:
            now = c.now_ms()
            if run_fence is not None:
                run = c.one(
                    "SELECT lease_fence, lease_holder FROM runs WHERE id = ?"
                    + self.backend.for_update,
                    (meta.run_id,),
                )
                if run is None or run[1] is None or int(run[0] or 0) != run_fence:
                    raise Fenced(
                        f"store {self.display}: the claim on run {meta.run_id} was lost "
                        "(its lease expired and another replica took it over); this park "
                        "was refused and nothing was written"
                    )
            row = c.one(
                "SELECT version, claim_holder, claim_fence, claim_expires_at_ms, claim_owner "
                "FROM checkpoints WHERE worker_id = ?" + self.backend.for_update,
                (worker_id,),
            )
            if fence is not None:
                if row is None or row[1] is None or int(row[2]) != fence:
                    raise Fenced(
                        f"store {self.display}: the claim on worker {worker_id} was lost "
                        "(its lease expired and another process took the work over); this "
                        "commit was refused and nothing was written"
                    )
                version = int(row[0]) + 1
                keep = meta.status == "running"
                c.run(
                    "UPDATE checkpoints SET version = ?, status = ?, park_id = ?, name = ?, "
                    "mode = ?, reason = ?, run_id = ?, wake = ?, body = ?, size = ?, sha256 = ?, "
                    "updated_at_ms = ?, claim_holder = CASE WHEN ? THEN claim_holder END, "
                    "claim_expires_at_ms = CASE WHEN ? THEN claim_expires_at_ms END, "
                    "claim_owner = CASE WHEN ? THEN claim_owner END, "
                    "claim_park_id = CASE WHEN ? THEN claim_park_id END WHERE worker_id = ?",
                    (version, meta.status, meta.park_id, meta.name, meta.mode, meta.reason,
                     meta.run_id, wake, body, len(body), sha, now, keep, keep, keep, keep,
                     worker_id),
                )  # fmt: skip
            elif expect_version is None:
                if row is not None:
                    raise StoreError(
                        f"store {self.display}: a checkpoint of worker {worker_id} exists already",
                        "conflict",
                    )
                version = 1
                c.run(
                    "INSERT INTO checkpoints (worker_id, version, status, park_id, name, mode, "
                    "reason, run_id, wake, body, size, sha256, created_at_ms, updated_at_ms) "
                    "VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (worker_id, meta.status, meta.park_id, meta.name, meta.mode, meta.reason,
                     meta.run_id, wake, body, len(body), sha, now, now),
                )  # fmt: skip
            else:
                owner = self.load_json(row[4], "claim") if row and row[4] else None
                if (
                    row is None
                    or int(row[0]) != expect_version
                    or (row[1] is not None and self._claim_live(row[3], owner, now))
                ):
                    raise StoreError(
                        f"store {self.display}: the checkpoint of worker {worker_id} changed "
                        "since this process wrote it (another process resumed or closed it)",
                        "conflict",
                    )
                version = expect_version + 1
                c.run(
                    "UPDATE checkpoints SET version = ?, status = ?, park_id = ?, name = ?, "
                    "mode = ?, reason = ?, run_id = ?, wake = ?, body = ?, size = ?, sha256 = ?, "
                    "updated_at_ms = ?, claim_holder = NULL, claim_expires_at_ms = NULL, "
                    "claim_owner = NULL, claim_park_id = NULL WHERE worker_id = ?",
                    (version, meta.status, meta.park_id, meta.name, meta.mode, meta.reason,
                     meta.run_id, wake, body, len(body), sha, now, worker_id),
                )  # fmt: skip
            if transcript is not None:
                self._append_transcript(c, worker_id, transcript)
            for waitpoint_id in waiters:
                self._insert_waiter(c, waitpoint_id, worker_id, meta.park_id)
            keep_park = meta.park_id if meta.status == "suspended" else None
            self._consume_waits(c, worker_id, keep_park, now, version)
            return version

    def claim_checkpoint(
        self,
        worker_id: str,
        holder: str,
        *,
        park_id: str | None = None,
        lease_ms: int = 60_000,
        owner: dict[str, Any] | None = None,
    ) -> CheckpointClaim:
        """Claim a parked checkpoint for one resume (module docstring).

        Raises:
            ClaimRefused: ``missing`` (no checkpoint), ``changed`` (not suspended, or at
                another park than ``park_id``; ``status`` says what it is), ``busy``
                (a live claim holds it; ``owner`` says whose).
            CorruptRecord: the stored body fails its checks (nothing is claimed).
        """
        with self.txn() as c:
            now = c.now_ms()
            row = c.one(
                "SELECT status, park_id, claim_holder, claim_fence, claim_expires_at_ms, "
                "claim_owner, body, sha256, version FROM checkpoints WHERE worker_id = ?"
                + self.backend.for_update,
                (worker_id,),
            )
            if row is None:
                raise ClaimRefused(
                    f"store {self.display}: no checkpoint of worker {worker_id}", "missing"
                )
            status, park, cur, fence, expires, owner_t, body, sha, version = row
            try:
                fence, version = int(fence or 0), int(version)
                expires = None if expires is None else int(expires)
            except (TypeError, ValueError, OverflowError):
                raise CorruptRecord(
                    f"store {self.display}: the row of checkpoint {worker_id} is damaged (its "
                    "version, fence or lease is not a number); it was left as it is"
                ) from None
            cur_owner = self.load_json(owner_t, "claim") if owner_t else None
            if cur is not None and self._claim_live(expires, cur_owner, now):
                raise ClaimRefused(
                    f"store {self.display}: worker {worker_id} is being resumed by {cur}",
                    "busy",
                    "running",
                    cur_owner,
                )
            if status != "suspended" or (park_id is not None and park != park_id):
                shown = status if status != "suspended" else "suspended again elsewhere"
                raise ClaimRefused(
                    f"store {self.display}: worker {worker_id} is not parked at that park "
                    f"(status={shown})",
                    "changed",
                    status,
                )
            checked = self._checked_body(worker_id, body, sha)
            new_fence = fence + 1
            c.run(
                "UPDATE checkpoints SET claim_holder = ?, claim_fence = ?, "
                "claim_expires_at_ms = ?, claim_owner = ?, claim_park_id = ? WHERE worker_id = ?",
                (holder, new_fence, now + lease_ms, dump_json(owner or {}), park, worker_id),
            )
            return CheckpointClaim(worker_id, new_fence, holder, checked, version, park)

    def renew_checkpoint_claim(self, worker_id: str, fence: int, lease_ms: int) -> bool:
        """Extend the lease of claim ``fence``; False when it is no longer current."""
        with self.txn() as c:
            return bool(
                c.run(
                    "UPDATE checkpoints SET claim_expires_at_ms = ? WHERE worker_id = ? AND "
                    "claim_fence = ? AND claim_holder IS NOT NULL",
                    (c.now_ms() + lease_ms, worker_id, fence),
                )
            )

    def release_checkpoint_claim(self, worker_id: str, fence: int) -> bool:
        """Give claim ``fence`` back without committing (the resume did not take effect:
        the park stays as it was). False when it is no longer current."""
        with self.txn() as c:
            return bool(
                c.run(
                    "UPDATE checkpoints SET claim_holder = NULL, claim_expires_at_ms = NULL, "
                    "claim_owner = NULL, claim_park_id = NULL WHERE worker_id = ? AND "
                    "claim_fence = ? AND claim_holder IS NOT NULL",
                    (worker_id, fence),
                )
            )

    def update_checkpoint_if(
        self,
        worker_id: str,
        transform: Callable[[bytes], tuple[bytes, CheckpointMeta] | None],
        *,
        expect_status: str | None = None,
        expect_park_id: str | None = None,
    ) -> bool:
        """Rewrite a checkpoint atomically while it still has ``expect_status`` /
        ``expect_park_id`` and no live claim holds it (``harnpy workers close``, an
        ``on_timeout: "fail"`` timeout): ``transform(body)`` returns the new body and
        meta, or None to leave it. Returns whether it was rewritten."""
        with self.txn() as c:
            now = c.now_ms()
            row = c.one(
                "SELECT status, park_id, claim_holder, claim_expires_at_ms, claim_owner, body, "
                "sha256, version FROM checkpoints WHERE worker_id = ?" + self.backend.for_update,
                (worker_id,),
            )
            if row is None:
                return False
            status, park, holder, expires, owner_t, body, sha, version = row
            owner = self.load_json(owner_t, "claim") if owner_t else None
            if holder is not None and self._claim_live(expires, owner, now):
                return False
            if expect_status is not None and status != expect_status:
                return False
            if expect_park_id is not None and park != expect_park_id:
                return False
            out = transform(self._checked_body(worker_id, body, sha))
            if out is None:
                return False
            new_body, meta = out
            self._check_body(worker_id, new_body)
            v = int(version) + 1
            c.run(
                "UPDATE checkpoints SET version = ?, status = ?, park_id = ?, name = ?, mode = ?, "
                "reason = ?, run_id = ?, wake = ?, body = ?, size = ?, sha256 = ?, "
                "updated_at_ms = ?, claim_holder = NULL, claim_expires_at_ms = NULL, "
                "claim_owner = NULL, claim_park_id = NULL WHERE worker_id = ?",
                (v, meta.status, meta.park_id, meta.name, meta.mode, meta.reason, meta.run_id,
                 dump_json(meta.wake), new_body, len(new_body),
                 hashlib.sha256(new_body).hexdigest(), now, worker_id),
            )  # fmt: skip
            keep_park = meta.park_id if meta.status == "suspended" else None
            self._consume_waits(c, worker_id, keep_park, now, v)
            return True
