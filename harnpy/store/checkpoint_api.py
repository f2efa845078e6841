"""The checkpoint-store interface: what suspend / resume code asks of wherever worker
checkpoints live (issue 10 point 1: "snapshots and claims of today's file path use the
same interface").

Two kinds of backend implement :class:`CheckpointStore`:

* the SQL store (:class:`harnpy.store.sql.SqlStore`, SQLite or PostgreSQL; the methods are
  in :mod:`harnpy.store.sql_checkpoints`): one ``checkpoints`` row per worker, claims with
  leases in the store clock and fences, transcript rows committed with their checkpoint;
* the directory backend (:class:`harnpy.store.directory.DirectoryStore`): today's
  snapshot directory, ``<dir>/<key>.json`` sealed documents written atomically (0600 in a
  0700 directory), claims under an exclusive ``flock`` of the directory, the claimed park
  kept as ``<key>.json.park`` until the resume commits, a claim whose owner process is
  gone (on this host) put back, transcripts in ``<key>.transcript-<generation>.jsonl``.

Shared contract (what callers may rely on, whatever the backend):

* ``put_checkpoint`` commits a body (sealed JSON bytes, at most 4 MiB: over it raises
  :class:`~harnpy.store.errors.CheckpointTooLarge`, nothing written) and returns its
  *version*; a commit for a resume presents the claim's ``fence`` and is refused with
  :class:`~harnpy.store.errors.Fenced` once the claim is no longer current; a commit not
  made under a claim presents ``expect_version`` (None: the first checkpoint of that
  worker) and is refused with ``StoreError(kind="conflict")`` when someone else committed
  since. Versions are compared for equality only (SQL: a commit counter; directory: a token
  from the file's inode, mtime and size, which every atomic rewrite changes).
* ``claim_checkpoint`` takes a ``suspended`` checkpoint (at ``park_id`` when given) for
  exactly one resume and returns a :class:`~harnpy.store.records.CheckpointClaim` whose
  ``body`` is the park; losers get :class:`~harnpy.store.errors.ClaimRefused`
  (``missing`` / ``changed`` / ``busy``). While the claim holds, ``get_checkpoint`` returns
  the park's body with ``info.status == "running"``. A claim whose holder died (lease
  expired; directory: its pid is gone on this host) leaves the park claimable again.
* ``release_checkpoint_claim`` gives a claim back with the park unchanged (the resume did
  not take effect); ``renew_checkpoint_claim`` extends its lease.
* ``update_checkpoint_if`` rewrites a checkpoint only while it has the expected status /
  park and no live claim holds it (``harnpy workers close``, an ``on_timeout: "fail"``).
* ``list_checkpoints`` / ``find_checkpoints`` / ``checkpoint_info`` read the listing
  columns; ``delete_checkpoint`` removes a checkpoint and its transcript.
* ``read_transcript`` returns the committed entries of one transcript stream, appended with
  :class:`~harnpy.store.records.TranscriptAppend` in the same commit as their checkpoint.

Every method is atomic with respect to every process using the same store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from harnpy.store.records import CheckpointClaim, CheckpointInfo, CheckpointMeta, TranscriptAppend

__all__ = ["CheckpointStore"]


@runtime_checkable
class CheckpointStore(Protocol):
    """Where worker checkpoints, their claims and transcripts live (module docstring)."""

    @property
    def display(self) -> str:
        """The store's name as messages show it (a URL with its password masked, or
        ``directory:PATH``)."""
        ...

    def checkpoint_ref(self, worker_id: str) -> str:
        """The reference of ``worker_id``'s checkpoint in this store, what ``harnpy run
        --resume`` accepts (SQL: ``<url>#<id>``; directory: the file's path)."""
        ...

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
    ) -> int:
        """Commit ``body`` (sealed JSON object bytes, <= 4 MiB) with the listing columns
        ``meta``; returns the new version. ``fence``: a resume's commit (the claim is kept
        while ``meta.status`` is ``running``, released otherwise); else ``expect_version``
        (None: insert the first checkpoint). ``transcript`` entries commit with it;
        ``waiters`` are waitpoint ids the worker waits on at ``meta.park_id`` (SQL only:
        a directory has no waitpoints and refuses a non-empty list).

        Raises:
            CheckpointTooLarge: over 4 MiB (nothing written).
            StoreError: not a JSON object (``kind="config"``), or ``kind="conflict"``.
            Fenced: the claim ``fence`` is no longer current.
        """
        ...

    def get_checkpoint(self, worker_id: str) -> tuple[CheckpointInfo, bytes] | None:
        """The checkpoint's listing columns and body (the park while a claim holds it), or
        None.

        Raises:
            CorruptRecord: the stored body fails its checks (left as it is).
        """
        ...

    def checkpoint_info(self, worker_id: str) -> CheckpointInfo | None:
        """The listing columns of one checkpoint (``running`` while a live claim holds it),
        or None."""
        ...

    def claim_checkpoint(
        self,
        worker_id: str,
        holder: str,
        *,
        park_id: str | None = None,
        lease_ms: int = 60_000,
        owner: dict[str, Any] | None = None,
    ) -> CheckpointClaim:
        """Claim a parked checkpoint for one resume (``owner``: ``{pid, host}`` of the
        resuming process).

        Raises:
            ClaimRefused: ``missing`` / ``changed`` (``status`` says what it is) / ``busy``.
            CorruptRecord: the stored body fails its checks (nothing claimed).
        """
        ...

    def renew_checkpoint_claim(self, worker_id: str, fence: int, lease_ms: int) -> bool:
        """Extend claim ``fence``'s lease; False when it is no longer current."""
        ...

    def release_checkpoint_claim(self, worker_id: str, fence: int) -> bool:
        """Give claim ``fence`` back, the park unchanged; False when it is not current."""
        ...

    def update_checkpoint_if(
        self,
        worker_id: str,
        transform: Callable[[bytes], tuple[bytes, CheckpointMeta] | None],
        *,
        expect_status: str | None = None,
        expect_park_id: str | None = None,
    ) -> bool:
        """Rewrite a checkpoint with ``transform(body)`` (None: leave it) while it still has
        ``expect_status`` / ``expect_park_id`` and no live claim; returns whether it did."""
        ...

    def list_checkpoints(self, statuses: tuple[str, ...] | None = None) -> list[CheckpointInfo]:
        """Checkpoints, newest first, filtered on the shown status."""
        ...

    def find_checkpoints(self, prefix: str) -> list[str]:
        """Worker ids equal to ``prefix`` (then only it) or starting with it, sorted."""
        ...

    def delete_checkpoint(self, worker_id: str) -> bool:
        """Remove a checkpoint and its transcript; False when there was none."""
        ...

    def read_transcript(
        self, worker_id: str, generation: str, stream: str, upto: int
    ) -> list[bytes]:
        """Entries ``0 .. upto-1`` of transcript stream ``stream`` of ``generation``.

        Raises:
            CorruptRecord: fewer than ``upto`` entries are stored.
        """
        ...
