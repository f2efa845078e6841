"""``harnpy run --resume <worker snapshot>`` (lifecycle.md 9.1): claim, restore into a fresh
runtime, resume, and drive the scheduler until the worker settles; an interrupt puts the
park back."""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle.claims import busy_elsewhere, claim, hold_claim, rollback, undo_resume
from harnpy.lifecycle.continuity import check_input
from harnpy.lifecycle.restore import import_mock_state, precheck_sources
from harnpy.lifecycle.resuming import _load_failure, _unexpected, commit_resume
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.worker_documents import record_from_document
from harnpy.lifecycle.workers import (
    WorkerRecord,
)
from harnpy.runtime.errors import HarnError
from harnpy.runtime.snapshot import SnapshotError


def resume_from_cli(
    runtime: Any,
    path: str,
    doc: dict[str, Any],
    *,
    initiator: str = "operator",
    input_value: Any = None,
    continue_transcript: bool = True,
    trigger_event: Any = None,
) -> WorkerRecord:
    """``harnpy run --resume <worker snapshot>``: claim the file, restore the worker into
    the fresh ``runtime`` (its snapshot's main module becomes the program), queue its mock
    replies and resume it warm (initiator ``operator``, continuity reminder). The caller
    drives the scheduler until the record settles.

    Raises:
        HarnRuntimeError: ``HARN-SUS-003/004/006/009/010`` as ``resume_agent``.
    """
    busy = busy_elsewhere(doc, str(doc.get("id")))
    if busy is not None:
        raise busy
    rec = record_from_document(runtime, doc, path)
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    if rec.status != "suspended":
        raise sus_error(3, f"resume_agent: worker {rec.id} is not suspended (status={rec.status})")
    if doc.get("harnpy_thread") is None:
        raise _load_failure(path, "the worker has not reached its suspend checkpoint")
    input_text = check_input(input_value)
    park_id = _requested_park_id()
    if park_id is not None and doc.get("park_id") not in (None, park_id):
        raise sus_error(
            6,
            f"resume_agent: worker {rec.id} changed before resume could complete (the wait "
            "belongs to an earlier park; the worker parked again since)",
        )
    try:
        precheck_sources(runtime, doc, path)
    except SnapshotError as e:
        raise _load_failure(path, e.message) from None
    original = claim(path, rec.id, park_id if doc.get("park_id") is not None else None)
    hold_claim(rec, path, original)
    # From the claim on, any failure puts the claimed bytes back (the park is not lost).
    try:
        try:
            import_mock_state(runtime, doc)
        except Exception as e:  # noqa: BLE001 - an invalid mock queue is a load failure
            raise _load_failure(path, e) from None
        digest_text = None
        if not continue_transcript:
            rec_doc_t = doc.get("transcript")
            if isinstance(rec_doc_t, dict) and isinstance(rec_doc_t.get("messages"), list):
                from harnpy.lifecycle.transcript import digest

                digest_text = digest(rec_doc_t) or None
        commit_resume(
            runtime,
            rec,
            doc=doc,
            input_value=input_value,
            input_text=input_text,
            continue_transcript=continue_transcript,
            initiator=initiator,
            trigger_event=trigger_event,
            digest_text=digest_text,
            fresh=True,
            claimed=True,
        )
    except BaseException as e:
        rollback(path, original)
        if isinstance(e, Exception) and not isinstance(e, HarnError):
            # damaged data the load checks let through (or a harnpy bug)
            raise _load_failure(path, _unexpected(e)) from None
        raise
    return rec


def _requested_park_id() -> str | None:
    """The park id of the wait a ``harnpy worker`` resume is for (``park_id`` of the
    ``HARNPY_RESUME_REQUEST`` it sets), or None outside such a resume."""
    import json

    raw = os.environ.get("HARNPY_RESUME_REQUEST")
    if not raw or not os.environ.get("HARNPY_WAIT_ID"):
        return None
    try:
        req = json.loads(raw)
    except ValueError:
        return None
    park = req.get("park_id") if isinstance(req, dict) else None
    return park if isinstance(park, str) else None


def drive_until_settled(runtime: Any, rec: WorkerRecord) -> bool:
    """Run the scheduler until ``rec`` is settled (not running, not mid-turn); False when
    every thread is blocked and nothing can wake them.

    An interrupt (Ctrl-C: ``KeyboardInterrupt`` / ``HarnInterrupt``) or an internal error
    (a Python exception other than a Harn error escaping the scheduler) while the worker runs puts its park back
    first (:func:`undo_resume`), then propagates: the worker stays resumable from the same
    snapshot."""
    from harnpy.runtime.errors import HarnInterrupt

    sched = runtime.scheduler
    try:
        while rec.busy():
            if sched.ready:
                sched.fire_due_timers()
                sched.run_thread(sched.ready.popleft())
                continue
            if not sched._wait_for_event():
                return False
    except (KeyboardInterrupt, HarnInterrupt, Exception) as e:
        if isinstance(e, HarnError):
            raise
        why = (
            "interrupted" if isinstance(e, (KeyboardInterrupt, HarnInterrupt)) else "internal error"
        )
        try:
            if undo_resume(runtime, rec):
                runtime.write_err(
                    f"harnpy: {why}; worker {rec.id} is parked again at {rec.snapshot_path}\n"
                )
        except OSError:
            pass
        raise
    return True
