"""Exactly-once resumes of a parked worker's checkpoint: the claim (``running`` with this
process as owner), putting a claim back, adoption by another process, committing the
worker's next state under its claim, and noticing that another process took a park over
(lifecycle.md 10).

Every read-check-write goes through the checkpoint-store interface
(:class:`harnpy.store.checkpoint_api.CheckpointStore`); for a snapshot file that is the
directory backend of the file's directory (:func:`~harnpy.lifecycle.checkpoint_store.directory_for`,
:mod:`harnpy.store.directory`). The park a claim replaced is kept beside the snapshot
while the resume runs (``<snapshot>.park``, with the claim in ``<snapshot>.claim``, both
removed when the resumed worker commits its next park or settles): a resume killed
mid-run (SIGKILL, power loss) leaves a snapshot that says ``running`` with an owner that
is gone, and the backend puts that park back (:func:`recover_stale_claim`, and before any
claim), so the worker can be resumed again, once (issue 13 point 6). An owner is known to
be gone when it ran on this host and its pid is dead; an owner on another host is never
presumed dead (a shared store's leases decide there)."""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle.checkpoint_store import (
    _dumps,
    _loads,
    checkpoint_for,
    checkpoint_version,
    is_store_ref,
)
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.waitpoints.state import LeaseKeeper, checkpoint_lease_ms
from harnpy.lifecycle.workers import (
    WorkerRecord,
    stop_thread,
)
from harnpy.runtime.errors import HarnError
from harnpy.store.errors import ClaimRefused, StoreError
from harnpy.store.records import CheckpointClaim, CheckpointMeta


def _owner() -> dict[str, Any]:
    """The process writing a snapshot (``{pid, host}``): a ``running`` snapshot whose owner
    is alive is being resumed right now (``HARN-SUS-006``), otherwise it was interrupted."""
    return {"pid": os.getpid(), "host": os.uname().nodename}


def owner_alive(doc: dict[str, Any]) -> bool:
    """Whether the process recorded as ``owner`` of a snapshot still runs (same host)."""
    owner = doc.get("owner")
    if not isinstance(owner, dict) or owner.get("host") != os.uname().nodename:
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_gone(doc: dict[str, Any]) -> bool:
    """Whether the ``owner`` of a snapshot is known to be gone: it ran on this host, is not
    this process, and no process has its pid."""
    owner = doc.get("owner")
    if not isinstance(owner, dict) or owner.get("host") != os.uname().nodename:
        return False
    pid = owner.get("pid")
    if type(pid) is not int or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


PARK_SUFFIX = ".park"


def park_copy_path(path: str) -> str:
    """Where the park a claim replaced is kept while its resume runs."""
    return path + PARK_SUFFIX


def recover_stale_claim(path: str) -> bool:
    """Put back the last park of a worker whose resume died mid-run: when ``path`` is
    claimed by an owner that is gone (:func:`owner_gone`) and the kept park
    (``<path>.park``) is a sealed snapshot of the same worker, suspended, the park replaces
    ``path`` (atomically, under the directory lock). Returns whether the park was put back.
    Anything else (a live owner, no kept park, unreadable files) changes nothing."""
    if is_store_ref(path):
        return False  # a store's claims end with their lease
    try:
        store, key = checkpoint_for(path)
    except StoreError:
        return False
    return store.recover(key)  # type: ignore[attr-defined,no-any-return]


def busy_elsewhere(doc: dict[str, Any], worker_id: str) -> HarnError | None:
    """``HARN-SUS-006`` when a snapshot says ``running`` and its owner process is alive
    (another resume is in progress), else None."""
    if doc.get("status") == "running" and owner_alive(doc):
        owner = doc.get("owner") or {}
        return sus_error(
            6,
            f"resume_agent: worker {worker_id} changed before resume could complete "
            f"(status=running, owner pid {owner.get('pid')})",
        )
    return None


def commit_document(rec: WorkerRecord, path: str, body: bytes, doc: dict[str, Any],
                    *, durable: bool = True, transcript: Any = None) -> None:  # fmt: skip
    """Commit ``body`` (the sealed document ``doc``) as ``rec``'s snapshot ``path``
    through the store interface (with ``transcript``, a
    :class:`~harnpy.store.records.TranscriptAppend` of a store checkpoint, in the same
    transaction): under ``rec``'s claim (its fence) when this process
    resumed it — the claim ends, and the kept park goes, when ``doc`` is not ``running``
    — else over whatever the file holds, unless another process's live claim holds it.
    The version written is remembered (:func:`refresh_from_disk` does not read this
    process's own writes back).

    Raises:
        OSError: the file cannot be written, or another process holds it (a live claim:
            its resume owns the file now) or took this process's claim away; nothing was
            written.
    """
    try:
        store, key = checkpoint_for(path, rec.runtime)
    except StoreError as e:
        raise OSError(0, e.message) from None
    # a file's transcript was appended beside it already; a row's commits with it
    extra: dict[str, Any] = (
        {"transcript": transcript} if is_store_ref(path) else {"durable": durable}
    )
    status = str(doc.get("status") or "")
    park = doc.get("park_id")
    raw_sus = doc.get("suspension")
    sus: dict[str, Any] = raw_sus if isinstance(raw_sus, dict) and status == "suspended" else {}
    reason = sus.get("reason")
    wake: list[str] = []
    if sus:
        from harnpy.lifecycle.worker_listing import wake_conditions

        rw = doc.get("resume_wait")
        durable = isinstance(rw, dict) and bool(rw.get("durable"))
        wake = wake_conditions(sus.get("conditions"), rw, durable)
    meta = CheckpointMeta(
        status=status,
        park_id=park if type(park) is str else None,
        name=rec.name,
        mode=rec.mode,
        reason=reason if type(reason) is str else None,
        wake=wake,
    )
    claim: CheckpointClaim | None = getattr(rec, "ck_claim", None)
    try:
        if claim is not None and getattr(rec, "ck_claim_path", None) == path:
            try:
                version = store.put_checkpoint(key, body, meta, fence=claim.fence, **extra)
            finally:
                if status != "running":
                    rec.ck_claim = None  # type: ignore[attr-defined]
                    _stop_keeper(rec)
        else:
            version = store.put_checkpoint(
                key, body, meta, expect_version=checkpoint_version(store, key), **extra
            )
    except StoreError as e:
        raise OSError(0, e.message) from None
    rec.ck_version = (path, version)  # type: ignore[attr-defined]


def refresh_from_disk(runtime: Any, rec: WorkerRecord) -> None:
    """Bring a ``suspended`` record up to date when another process took its park over
    (``harnpy run --resume``, ``harnpy workers resume``, ``load_agent`` elsewhere): its
    snapshot file then shows another status or another park. The record takes the file's
    outcome — ``completed`` / ``failed`` / ``cancelled`` / ``interrupted``, or ``awaiting``
    (a retriggerable worker that ended a cycle there), with the result and error, or
    ``suspended`` at the new park (this process can then resume it cold from the file) —
    its parked thread (if any) is dropped and its in-process wait cancelled. A
    file that says ``running`` (a resume in progress elsewhere) changes nothing: a resume
    here gets ``HARN-SUS-006``. Cheap when nothing changed (the file's size and mtime are
    remembered)."""
    path = rec.snapshot_path
    if rec.status != "suspended" or not path:
        return
    try:
        store, key = checkpoint_for(path, runtime)
        version = checkpoint_version(store, key)
    except StoreError:
        return
    if version is None or getattr(rec, "ck_version", None) == (path, version):
        return
    try:
        got = store.get_checkpoint(key)
        if got is None:
            return
        info, raw = got
        doc = _loads(raw)
    except (StoreError, ValueError):
        return
    rec.ck_version = (path, version)  # type: ignore[attr-defined]
    if not isinstance(doc, dict) or doc.get("id") != rec.id:
        return
    if info.status == "running":
        return  # a resume in progress elsewhere (the body shown is its park)
    status = doc.get("status")
    park = doc.get("park_id")
    if status == "running" or (status == "suspended" and park == getattr(rec, "park_id", None)):
        return
    if status not in (
        "suspended",
        "awaiting",
        "completed",
        "failed",
        "cancelled",
        "interrupted",
        "stopped",
    ):
        return
    owner = doc.get("owner")
    if (
        status == "suspended"
        and isinstance(owner, dict)
        and owner.get("pid") != os.getpid()
        and owner_alive(doc)
    ):
        return  # adopted by a live process (load_agent): that process holds the park now
    stop_thread(runtime, rec)
    from harnpy.lifecycle.parking import cancel_wait

    cancel_wait(runtime, rec, "resumed elsewhere")
    rec.result = doc.get("latest_payload", rec.result)
    if status == "suspended":
        rec.park_id = park  # type: ignore[attr-defined]
        sus = doc.get("suspension")
        rec.suspension = sus if isinstance(sus, dict) else None
        rec.resume_wait = doc.get("resume_wait")  # type: ignore[attr-defined]
    else:
        rec.status = status
        rec.suspension = None
        rec.error = doc.get("latest_error", doc.get("error"))
        rec.finished_at = doc.get("finished_at")
        rec.awaiting_started_at = doc.get("awaiting_started_at")
        if doc.get("harnpy_encoding") == "json" and doc.get("transcript") is not None:
            rec.transcript = doc["transcript"]
    rec.settle()


def _holder() -> str:
    return f"{os.uname().nodename}:{os.getpid()}"


def claim(path: str, worker_id: str, park_id: str | None = None) -> CheckpointClaim | None:
    """Claim a parked worker's snapshot for one resume (lifecycle.md 10 "exactly-once"):
    the directory backend re-reads the file under an exclusive lock of its directory,
    requires ``status: "suspended"`` (and ``park_id`` when given), keeps the park beside
    it and rewrites it with ``status: "running"`` and this process as owner.

    Returns the claim (its ``body`` is the park, see :func:`rollback`), or None when there
    is no file.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` when another resume got there first (the file is
            not modified); ``HARN-SUS-004`` when it is unreadable.
    """
    try:
        store, key = checkpoint_for(path)
        return store.claim_checkpoint(
            key, _holder(), park_id=park_id, lease_ms=checkpoint_lease_ms(), owner=_owner()
        )
    except ClaimRefused as e:
        if e.reason == "missing":
            return None
        status = e.status or "running"
        shown = status if status != "suspended" else "suspended again elsewhere"
        raise sus_error(
            6,
            f"resume_agent: worker {worker_id} changed before resume could complete "
            f"(status={shown})",
        ) from None
    except StoreError as e:
        raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: {e.message}") from None


def hold_claim(rec: WorkerRecord, path: str, c: CheckpointClaim | None) -> None:
    """Remember that ``rec`` resumes under claim ``c`` of snapshot ``path``: its next
    commits present the claim's fence (:func:`commit_document`)."""
    rec.ck_claim = c  # type: ignore[attr-defined]
    rec.ck_claim_path = path  # type: ignore[attr-defined]
    _stop_keeper(rec)
    if c is not None and is_store_ref(path):
        store, key = checkpoint_for(path, rec.runtime)
        rec.ck_keeper = LeaseKeeper(store, key, c.fence, checkpoint_lease_ms())  # type: ignore[arg-type,attr-defined]


def _stop_keeper(rec: WorkerRecord) -> None:
    """Stop renewing the lease of ``rec``'s claim (committed, given back or lost)."""
    keeper = getattr(rec, "ck_keeper", None)
    if keeper is not None:
        keeper.stop()
        rec.ck_keeper = None  # type: ignore[attr-defined]


def rollback(path: str, c: CheckpointClaim | None) -> None:
    """Give back the claim :func:`claim` took (a resume that failed before it took effect
    leaves the snapshot as it was: the kept park replaces the ``running`` file)."""
    if c is None:
        return
    store, key = checkpoint_for(path)
    store.release_checkpoint_claim(key, c.fence)


def adopt(path: str, worker_id: str, park_id: Any) -> str:
    """Take over a parked worker's snapshot for this process (a conditional update under
    the directory lock): it must still be ``suspended`` at ``park_id`` with no live claim;
    it gets a new park id and this process as owner, so a process that held the same park
    can no longer resume it (``HARN-SUS-006``). Returns the new park id."""
    try:
        store, key = checkpoint_for(path)
    except StoreError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{path}`: {e.message}") from None
    new_id = _new_park_id()

    def transform(raw: bytes) -> tuple[bytes, CheckpointMeta]:
        doc = _loads(raw)
        doc["park_id"] = new_id
        doc["owner"] = _owner()
        return _dumps(doc), CheckpointMeta(status="suspended", park_id=new_id)

    try:
        done = store.update_checkpoint_if(
            key, transform, expect_status="suspended", expect_park_id=park_id
        )
        info = None if done else store.checkpoint_info(key)
    except StoreError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{path}`: {e.message}") from None
    if not done:
        raise sus_error(
            6,
            f"load_agent: worker {worker_id} changed before it could be loaded "
            f"(status={info.status if info is not None else 'missing'})",
        )
    return new_id


def undo_resume(runtime: Any, rec: WorkerRecord) -> bool:
    """Put back the park a resume of ``rec`` claimed when that resume is abandoned before
    the worker settled (Ctrl-C during ``harnpy run --resume``): the claim is given back, so
    the snapshot file gets its bytes from before the claim (``suspended`` at the same park,
    so a later resume starts again from there), and a durable wait the resume cancelled is
    pending again. Only while this process's claim is still current. Returns whether the
    file was put back."""
    c: CheckpointClaim | None = getattr(rec, "ck_claim", None)
    path = getattr(rec, "ck_claim_path", None)
    if c is None or not path or rec.status != "running":
        return False
    try:
        store, key = checkpoint_for(path, runtime)
        if not store.release_checkpoint_claim(key, c.fence):
            return False
    except StoreError:
        return False
    rec.ck_claim = None  # type: ignore[attr-defined]
    _stop_keeper(rec)
    origin = getattr(rec, "cancelled_durable_wait", None)
    if type(origin) is dict:
        from harnpy.lifecycle.parking import _store_call

        _store_call(runtime, origin, "reopen")
        rec.cancelled_durable_wait = None  # type: ignore[attr-defined]
    return True


def _new_park_id() -> str:
    return os.urandom(12).hex()
