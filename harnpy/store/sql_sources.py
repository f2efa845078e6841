"""Module sources in the SQL store (resume across code changes; issue 10 point 5).

``sources`` holds each module source once, by the SHA-256 of its bytes; ``source_refs``
(migration 3) says which checkpoint needs which source, so sources no parked run needs any
more can be pruned. A checkpoint's sources are written *before* the checkpoint (a replica
that sees the checkpoint finds its code), which is why an unknown checkpoint id keeps its
references for a grace period rather than losing them.

Reads check the hash: a row whose bytes do not hash to its key is a
:class:`~harnpy.store.errors.CorruptRecord` and is never returned.
"""

from __future__ import annotations

import hashlib
from typing import Any

from harnpy.store.errors import CorruptRecord, StoreError
from harnpy.store.sql_base import SqlBase

__all__ = ["PRUNE_GRACE_MS", "SourcesMixin"]

#: Sources and references younger than this (store clock, ms) are never pruned: a park
#: stores its sources first and commits its checkpoint a moment later.
PRUNE_GRACE_MS = 3_600_000

#: Checkpoint statuses that need no code any more.
_SETTLED = ("completed", "failed", "cancelled")


class SourcesMixin(SqlBase):
    """``put_source`` / ``get_source`` / ``source_refs`` / ``prune_sources`` of the store."""

    def put_source(
        self,
        sha256: str,
        body: bytes,
        *,
        checkpoint_id: str | None = None,
        path: str | None = None,
    ) -> None:
        """Store a module source under its SHA-256 (hex of ``body``; idempotent); with
        ``checkpoint_id``, record that this checkpoint needs it (``path``: the module's
        path, for listings).

        Raises:
            StoreError: ``sha256`` is not the hash of ``body`` (``kind="config"``), or the
                store cannot be written.
        """
        if hashlib.sha256(body).hexdigest() != sha256:
            raise StoreError(
                f"store {self.display}: put_source: {sha256} is not the SHA-256 of the body",
                "config",
            )
        with self.txn() as c:
            now = c.now_ms()
            # content-addressed: two replicas storing the same source at once both succeed
            # (a check-then-insert raced: "duplicate key" failed a run's first park)
            c.run(
                "INSERT INTO sources (sha256, body, size, created_at_ms) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (sha256) DO NOTHING",
                (sha256, body, len(body), now),
            )
            if checkpoint_id is not None:
                row = c.one(
                    "SELECT 1 FROM source_refs WHERE checkpoint_id = ? AND sha256 = ?",
                    (checkpoint_id, sha256),
                )
                if row is None:
                    c.run(
                        "INSERT INTO source_refs (checkpoint_id, sha256, path, created_at_ms) "
                        "VALUES (?, ?, ?, ?)",
                        (checkpoint_id, sha256, path, now),
                    )

    def get_source(self, sha256: str) -> bytes | None:
        """The module source stored under ``sha256``, or None.

        Raises:
            CorruptRecord: the stored bytes no longer have that hash.
        """
        with self.read() as c:
            row = c.one("SELECT body FROM sources WHERE sha256 = ?", (sha256,))
        if row is None:
            return None
        body = self.blob(row[0], f"the module source {sha256}")
        if hashlib.sha256(body).hexdigest() != sha256:
            raise CorruptRecord(
                f"store {self.display}: the module source {sha256} is corrupted (its hash "
                "does not match)"
            )
        return body

    def source_refs(self, checkpoint_id: str) -> list[dict[str, Any]]:
        """``[{sha256, path, size}]`` of the sources checkpoint ``checkpoint_id`` needs."""
        with self.read() as c:
            rows = c.all(
                "SELECT r.sha256, r.path, s.size FROM source_refs r LEFT JOIN sources s "
                "ON s.sha256 = r.sha256 WHERE r.checkpoint_id = ? ORDER BY r.path, r.sha256",
                (checkpoint_id,),
            )
        return [{"sha256": r[0], "path": r[1], "size": r[2]} for r in rows]

    def prune_sources(self, grace_ms: int = PRUNE_GRACE_MS) -> dict[str, int]:
        """Forget the sources no checkpoint needs: references of settled checkpoints
        (completed, failed, cancelled) and, after ``grace_ms``, of checkpoints that do not
        exist; then sources without references older than ``grace_ms``. One transaction.
        Returns ``{"refs": n, "sources": n}`` (how many were deleted).

        Raises:
            StoreError: the store cannot be written.
        """
        marks = ", ".join("?" for _ in _SETTLED)
        with self.txn() as c:
            cutoff = c.now_ms() - max(0, grace_ms)
            settled = c.all(
                "SELECT r.checkpoint_id, r.sha256 FROM source_refs r JOIN checkpoints k "
                f"ON k.worker_id = r.checkpoint_id WHERE k.status IN ({marks}) "
                "AND k.claim_holder IS NULL",
                _SETTLED,
            )
            orphans = c.all(
                "SELECT r.checkpoint_id, r.sha256 FROM source_refs r WHERE r.created_at_ms < ? "
                "AND NOT EXISTS (SELECT 1 FROM checkpoints k WHERE k.worker_id = r.checkpoint_id)",
                (cutoff,),
            )
            gone = {(r[0], r[1]) for r in settled} | {(r[0], r[1]) for r in orphans}
            for cid, sha in sorted(gone):
                c.run("DELETE FROM source_refs WHERE checkpoint_id = ? AND sha256 = ?", (cid, sha))
            unused = c.all(
                "SELECT s.sha256 FROM sources s WHERE s.created_at_ms < ? AND NOT EXISTS "
                "(SELECT 1 FROM source_refs r WHERE r.sha256 = s.sha256)",
                (cutoff,),
            )
            for (sha,) in unused:
                c.run("DELETE FROM sources WHERE sha256 = ?", (sha,))
        return {"refs": len(gone), "sources": len(unused)}
