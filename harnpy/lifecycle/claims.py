"""Exactly-once resumes of a parked worker's checkpoint: the claim (``running`` with this
process as owner), putting a claim back, adoption by another process, and noticing that
another process took a park over (lifecycle.md 10).

The park a claim replaced is kept beside the snapshot while the resume runs
(``<snapshot>.park``, written before the claim, removed when the resumed worker commits its
next park or settles): a resume killed mid-run (SIGKILL, power loss) leaves a snapshot that
says ``running`` with an owner that is gone, and :func:`recover_stale_claim` puts that park
back, so the worker can be resumed again, once (issue 13 point 6). An owner is known to be
gone when it ran on this host and its pid is dead; an owner on another host is never
presumed dead (a shared store's leases decide there)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from harnpy.lifecycle.checkpoint_store import _dumps, _loads
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.workers import (
    WorkerRecord,
    stop_thread,
)
from harnpy.runtime.errors import HarnError


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


def drop_park_copy(path: str | None) -> None:
    """Remove the kept park of ``path`` (the resumed worker committed its next state)."""
    if path:
        with contextlib.suppress(OSError):
            os.unlink(park_copy_path(path))


def recover_stale_claim(path: str) -> bool:
    """Put back the last park of a worker whose resume died mid-run: under the directory
    lock, when ``path`` says ``running`` with an owner that is gone (:func:`owner_gone`)
    and the kept park (``<path>.park``) is a sealed snapshot of the same worker, suspended,
    the park replaces ``path`` (atomically) and the kept copy is removed. Returns whether
    the park was put back. Anything else (a live owner, no kept park, unreadable files)
    changes nothing."""
    from harnpy.runtime.snapshot import write_atomic

    copy = park_copy_path(path)
    if not os.path.isfile(copy):
        return False
    with _dir_lock(path):
        try:
            with open(path, "rb") as fh:
                doc = _loads(fh.read())
            with open(copy, "rb") as fh:
                park_raw = fh.read()
            park = _loads(park_raw)
        except (OSError, ValueError):
            return False
        if not isinstance(doc, dict) or not isinstance(park, dict):
            return False
        if doc.get("status") != "running" or not owner_gone(doc):
            return False
        if park.get("id") != doc.get("id") or park.get("status") != "suspended":
            return False
        write_atomic(path, park_raw, max_bytes=None, fsync=True)
        drop_park_copy(path)
    return True


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


def _remember_file(rec: WorkerRecord, path: str) -> None:
    """Remember the size and mtime of the snapshot this process just wrote, so that
    :func:`refresh_from_disk` does not read its own writes back (a park / resume cycle
    stays free of a full read of the growing file)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    rec.file_sig = (st.st_mtime_ns, st.st_size)  # type: ignore[attr-defined]


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
        st = os.stat(path)
    except OSError:
        return
    sig = (st.st_mtime_ns, st.st_size)
    if getattr(rec, "file_sig", None) == sig:
        return
    try:
        with open(path, "rb") as fh:
            doc = _loads(fh.read())
    except (OSError, ValueError):
        return
    rec.file_sig = sig  # type: ignore[attr-defined]
    if not isinstance(doc, dict) or doc.get("id") != rec.id:
        return
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


def _dir_lock(path: str) -> contextlib.AbstractContextManager[None]:
    """An exclusive ``flock`` of the directory holding ``path`` (claims are short)."""
    from harnpy.lifecycle.triggers._util import dir_lock

    return dir_lock(path)


def claim(path: str, worker_id: str, park_id: str | None = None) -> bytes | None:
    """Claim a parked worker's snapshot for one resume (lifecycle.md 10 "exactly-once"):
    under an exclusive lock of its directory, re-read the file, require ``status:
    "suspended"`` (and ``park_id`` when given) and rewrite it with ``status: "running"``.

    Returns the previous bytes (see :func:`rollback`), or None when there is no file.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` when another resume got there first (the file is
            not modified); ``HARN-SUS-004`` when it is unreadable.
    """
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: {e}") from None
        try:
            doc = _loads(raw)
        except ValueError as e:
            raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: {e}") from None
        status = doc.get("status") if isinstance(doc, dict) else None
        if status != "suspended" or (park_id is not None and doc.get("park_id") != park_id):
            shown = status if status != "suspended" else "suspended again elsewhere"
            raise sus_error(
                6,
                f"resume_agent: worker {worker_id} changed before resume could complete "
                f"(status={shown})",
            )
        doc["status"] = "running"
        doc["suspension"] = None
        doc["owner"] = _owner()
        # the park, kept until the resumed worker commits: a resume that dies mid-run
        # leaves it to be put back (recover_stale_claim)
        write_atomic(park_copy_path(path), raw, max_bytes=None, fsync=True)
        write_atomic(path, _dumps(doc), max_bytes=None, fsync=True)
        return raw


def rollback(path: str, raw: bytes | None) -> None:
    """Put back the bytes a :func:`claim` replaced (a resume that failed before it took
    effect leaves the snapshot as it was)."""
    if raw is None:
        return
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        write_atomic(path, raw, max_bytes=None, fsync=True)
        drop_park_copy(path)


def adopt(path: str, worker_id: str, park_id: Any) -> str:
    """Take over a parked worker's snapshot for this process (under the directory lock):
    it must still be ``suspended`` at ``park_id``; it gets a new park id and this process as
    owner, so a process that held the same park can no longer resume it (``HARN-SUS-006``).
    Returns the new park id."""
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        with open(path, "rb") as fh:
            doc = _loads(fh.read())
        if doc.get("status") != "suspended" or doc.get("park_id") != park_id:
            raise sus_error(
                6,
                f"load_agent: worker {worker_id} changed before it could be loaded "
                f"(status={doc.get('status')})",
            )
        new_id = _new_park_id()
        doc["park_id"] = new_id
        doc["owner"] = _owner()
        write_atomic(path, _dumps(doc), max_bytes=None, fsync=True)
    return new_id


def undo_resume(runtime: Any, rec: WorkerRecord) -> bool:
    """Put back the park a resume of ``rec`` claimed when that resume is abandoned before
    the worker settled (Ctrl-C during ``harnpy run --resume``): the snapshot file gets its
    bytes from before the claim (``suspended`` at the same park, so a later resume starts
    again from there) and a durable wait the resume cancelled is pending again. Only while
    the file still says ``running`` with this process as owner. Returns whether the file
    was put back."""
    raw = getattr(rec, "claimed_bytes", None)
    path = rec.snapshot_path
    if raw is None or not path or rec.status != "running":
        return False
    with _dir_lock(path):
        try:
            with open(path, "rb") as fh:
                doc = _loads(fh.read())
        except (OSError, ValueError):
            return False
        owner = doc.get("owner") if isinstance(doc, dict) else None
        if (
            not isinstance(doc, dict)
            or doc.get("status") != "running"
            or not isinstance(owner, dict)
            or owner.get("pid") != os.getpid()
        ):
            return False
        from harnpy.runtime.snapshot import write_atomic

        write_atomic(path, raw, max_bytes=None, fsync=True)
        drop_park_copy(path)
    rec.claimed_bytes = None  # type: ignore[attr-defined]
    origin = getattr(rec, "cancelled_durable_wait", None)
    if type(origin) is dict:
        from harnpy.lifecycle.parking import _store_call

        _store_call(runtime, origin, "reopen")
        rec.cancelled_durable_wait = None  # type: ignore[attr-defined]
    return True


def _new_park_id() -> str:
    return os.urandom(12).hex()
