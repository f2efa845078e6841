"""The worker layer's side of the trigger dispatcher (lifecycle.md 4.4, T10): a wait that
fires resumes (or fails) its parked worker; and what closing, finishing and spawning a
worker write."""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle._common import now_rfc3339
from harnpy.lifecycle.checkpoint_store import is_store_ref
from harnpy.lifecycle.parking import cancel_wait
from harnpy.lifecycle.resuming import ResumeArgs, resume_sync
from harnpy.lifecycle.services import services
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.worker_documents import persist_metadata
from harnpy.lifecycle.workers import (
    WorkerRecord,
    emit,
    stop_thread,
)
from harnpy.runtime.errors import runtime_error


def fail_on_timeout(runtime: Any, rec: WorkerRecord) -> dict[str, Any]:
    """T10: a timeout with ``on_timeout: "fail"`` fired: the parked worker fails (``error:
    "auto-resume timeout expired"``), its suspension is dropped.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` when it is no longer suspended.
    """
    if rec.status != "suspended":
        raise sus_error(
            6,
            f"auto-resume timeout: worker {rec.id} is no longer suspended (status={rec.status})",
        )
    stop_thread(runtime, rec)
    rec.suspension = None
    rec.resume_wait = None  # type: ignore[attr-defined]
    rec.status = "failed"
    rec.error = "auto-resume timeout expired"
    rec.finished_at = now_rfc3339(runtime)
    persist_metadata(runtime, rec)
    emit(runtime, rec, "WorkerFailed", error=rec.error)
    rec.settle()
    return rec.summary()


def _on_wait_fired(runtime: Any, req: Any) -> Any:
    """The dispatcher's resume handler: a trigger, event or timeout of a parked worker's
    wait fired (lifecycle.md 4.4)."""
    rec = services(runtime).workers.get(req.worker_id)
    if rec is None:
        if req.snapshot_path and (
            is_store_ref(req.snapshot_path) or os.path.exists(req.snapshot_path)
        ):
            target: Any = req.snapshot_path
        else:
            raise runtime_error(f"unknown worker: {req.worker_id}")
    else:
        target = rec.id
        if rec.status != "suspended":
            what = "auto-resume timeout" if req.cause == "timeout" else "auto-resume"
            raise sus_error(
                6, f"{what}: worker {rec.id} is no longer suspended (status={rec.status})"
            )
    if req.action == "fail":
        if rec is None:
            raise runtime_error(f"unknown worker: {req.worker_id}")
        return fail_on_timeout(runtime, rec)
    ra = ResumeArgs()
    ra.input = req.input
    ra.continue_transcript = bool(req.continue_transcript)
    ra.initiator = req.initiator
    ra.trigger_event = req.trigger_event
    ra.trigger_info = req.trigger_info()
    return resume_sync(runtime, target, ra)


def install(dispatcher: Any) -> None:
    """Attach the worker layer to a trigger dispatcher: the resume handler of auto-resume
    waits (the ``interrupt_and_suspend`` variant lives in
    :mod:`harnpy.lifecycle.trigger_variants` and suspends through
    :func:`harnpy.lifecycle.workers.panic_suspend`). Idempotent."""
    rt = dispatcher.runtime
    if rt is None or getattr(dispatcher, "_worker_layer", False):
        return
    dispatcher._worker_layer = True
    dispatcher.resume_handler = lambda req: _on_wait_fired(rt, req)
    dispatcher.still_parked = lambda req: _still_parked(rt, req)


def _still_parked(runtime: Any, req: Any) -> bool:
    """Whether the worker of a wait whose resume just failed is still parked at the wait's
    park in this process (the failure changed nothing: the wait is kept)."""
    rec = services(runtime).workers.get(req.worker_id)
    if rec is None or rec.status != "suspended":
        return False
    park = getattr(req, "park_id", None)
    return park is None or getattr(rec, "park_id", None) == park


def on_closed(runtime: Any, rec: WorkerRecord) -> None:
    """After ``close_agent`` (T11): unregister the wait, mark the snapshot ``cancelled``."""
    cancel_wait(runtime, rec, "closed")
    persist_metadata(runtime, rec)


def on_finished(runtime: Any, rec: WorkerRecord) -> None:
    """After a worker's loop ended (T7/T9): drop a suspend request the loop never honoured,
    unregister any wait, write the final metadata."""
    rec.suspend_request = None
    rec.suspension = None
    cancel_wait(runtime, rec, "finished")
    persist_metadata(runtime, rec)


def on_spawned(runtime: Any, rec: WorkerRecord) -> None:
    """After T1: write the metadata snapshot (``carry.persist_state``)."""
    persist_metadata(runtime, rec)
