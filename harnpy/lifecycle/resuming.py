"""Resuming a parked worker (lifecycle.md 2.4, T6/T14): ``resume_agent``, ``daemon_resume``,
``load_agent`` and the claim-restore-deliver steps they share, also driven from Python
(triggers, timers, the CLI)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness
from harnpy.lifecycle.checkpoint_store import is_store_ref, stored_worker_ref
from harnpy.lifecycle.claims import (
    adopt,
    busy_elsewhere,
    claim,
    hold_claim,
    recover_stale_claim,
    refresh_from_disk,
    rollback,
)
from harnpy.lifecycle.continuity import check_input, resume_payload
from harnpy.lifecycle.parking import (
    _caller_loop_state,
    _dispatcher,
    _parent_audit,
    _resume_span,
    cancel_wait,
    parse_initiator,
)
from harnpy.lifecycle.restore import attach_thread, precheck_sources, restore_thread
from harnpy.lifecycle.services import services
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.worker_documents import (
    SnapshotLoadError,
    canonical_snapshot,
    read_document,
    record_from_document,
)
from harnpy.lifecycle.workers import (
    WorkerRecord,
    emit,
    lifecycle_error,
    state_dir,
)
from harnpy.runtime.errors import HarnError, runtime_error
from harnpy.runtime.scheduler import Block
from harnpy.runtime.snapshot import SnapshotError
from harnpy.runtime.values import CallRequest
from harnpy.stdlib.registry import builtin
from harnpy.store.errors import StoreError
from harnpy.store.records import CheckpointClaim

Gen = Generator[Any, Any, Any]


class ResumeArgs:
    """Parsed ``resume_agent`` arguments (lifecycle.md 2.4 parse_resume_options)."""

    __slots__ = ("input", "continue_transcript", "initiator", "trigger_event", "trigger_info")

    def __init__(self) -> None:
        self.input: Any = None
        self.continue_transcript = True
        self.initiator: str | None = None
        self.trigger_event: Any = None
        self.trigger_info: dict[str, Any] | None = None


_OPTION_KEYS = (
    "input",
    "resume_input",
    "continue_transcript",
    "initiator",
    "resume_initiator",
    "trigger_event",
)


def parse_resume_args(args: tuple[Any, ...]) -> ResumeArgs:
    """Arguments 2 and 3 of ``resume_agent``: an options dict (when it has one of
    ``input, resume_input, continue_transcript, initiator, resume_initiator,
    trigger_event``) or the input itself; argument 3 overrides ``continue_transcript``."""
    from harnpy.runtime.ops import truthy

    out = ResumeArgs()
    second = arg(args, 1)
    if type(second) is dict and any(k in second for k in _OPTION_KEYS):
        out.input = second.get("input", second.get("resume_input"))
        if second.get("continue_transcript") is not None:
            out.continue_transcript = bool(truthy(second["continue_transcript"]))
        ini = second.get("initiator", second.get("resume_initiator"))
        out.initiator = parse_initiator(ini, "operator", "resume_agent") if ini else None
        out.trigger_event = second.get("trigger_event")
    elif second is not None:
        out.input = second
    third = arg(args, 2)
    if third is not None:
        out.continue_transcript = bool(truthy(third))
    return out


def _snapshot_target(target: str, runtime: Any = None) -> str:
    """A checkpoint reference for a target string (2.4 step 3): a path or store reference
    as given; a bare id names ``<state dir>/<id>.json`` when that file exists or no SQL
    store is configured, else that worker's checkpoint in the store
    (:func:`~harnpy.lifecycle.checkpoint_store.stored_worker_ref`)."""
    if "/" in target or target.endswith(".json") or is_store_ref(target):
        return target
    path = os.path.join(state_dir(), f"{target}.json")
    if os.path.exists(path):
        return path
    try:
        stored = stored_worker_ref(target, runtime)
    except StoreError:
        stored = None
    return stored if stored is not None else path


def _live_worker(runtime: Any, target: Any) -> WorkerRecord | None:
    rec = _live_record(runtime, target)
    if rec is not None:
        refresh_from_disk(runtime, rec)
    return rec


def _live_record(runtime: Any, target: Any) -> WorkerRecord | None:
    workers = services(runtime).workers
    if type(target) is dict:
        wid = target.get("id")
        if wid is None:
            raise lifecycle_error("agent handle dict is missing an id field")
        return workers.get(wid) if type(wid) is str else None
    if type(target) is str:
        rec = workers.get(target)
        if rec is None:
            base = os.path.basename(target)
            if base.endswith(".json"):
                rec = workers.get(base[:-5])
        return rec
    if target is None:
        raise lifecycle_error("resume_agent: missing worker handle")
    raise lifecycle_error("expected agent handle or worker id")


def _load_failure(target: str, cause: Any) -> HarnError:
    return sus_error(4, f"resume_agent: failed to load snapshot `{target}`: {cause}")


def _unexpected(e: BaseException) -> str:
    """The cause shown for an unexpected exception while restoring a snapshot (a damaged
    file the load checks did not catch, or a harnpy bug)."""
    return f"the snapshot cannot be restored ({type(e).__name__}: {e})"


def resume_gen(
    thread: Any,
    target: Any,
    ra: ResumeArgs,
    *,
    where: str = "resume_agent",
) -> Gen:
    """``resume_agent`` (lifecycle.md 2.4): a callback-builtin generator (PreResume /
    PostResume hooks run as Harn calls) returning the summary. ``thread`` only needs
    ``runtime`` (sync callers pass a stand-in)."""
    from harnpy.lifecycle import hooks

    rt = thread.runtime
    input_text = check_input(ra.input)  # HARN-SUS-009 before anything happens
    rec = _live_worker(rt, target)
    doc: dict[str, Any] | None = None
    path: str | None = None
    if rec is None:
        ref = target.get("id") if type(target) is dict else target
        if type(ref) is not str or not ref.strip():
            raise sus_error(4, "resume_agent: missing worker id or snapshot path")
        # 2.4 step 3: a handle or id that is not live names <state_dir>/<id>.json (a handle
        # kept across a program snapshot or a REPL :save/:restore)
        path = _snapshot_target(ref, rt)
        with contextlib.suppress(OSError):
            recover_stale_claim(path)  # a resume that died mid-run: its park goes back
        try:
            doc, _ = read_document(path)
            path, doc = canonical_snapshot(path, doc)
        except SnapshotLoadError as e:
            raise _load_failure(ref, e) from None
        live = services(rt).workers.get(doc["id"])
        if (
            live is not None
            and live.snapshot_path
            and os.path.abspath(live.snapshot_path) == os.path.abspath(path)
        ):
            rec, doc = live, None
        else:
            busy = busy_elsewhere(doc, doc["id"])
            if busy is not None:
                raise busy
            rec = record_from_document(rt, doc, path)
            if rec.status != "suspended":
                return _read_mode(rt, rec, input_text, ra)
            if doc.get("harnpy_thread") is None:
                raise _load_failure(
                    ref, "the worker has not reached its suspend checkpoint (no evaluator state)"
                )
            try:
                precheck_sources(rt, doc, path)
            except SnapshotError as e:
                raise _load_failure(ref, e.message) from None
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    if rec.status != "suspended":
        raise sus_error(3, f"resume_agent: worker {rec.id} is not suspended (status={rec.status})")
    cold = rec.thread is None
    if not cold and rec.park_waker is None:
        raise lifecycle_error(
            f"resume_agent: worker {rec.id} has not reached its suspend checkpoint yet"
        )
    initiator = ra.initiator or (
        "triggered"
        if ra.trigger_event is not None
        else "parent"
        if _caller_loop_state(thread) is not None
        else "operator"
    )
    if hooks.has_hooks(rt, ("PreResume",)):
        ctl = yield from hooks.fire(
            thread,
            "PreResume",
            {
                "event": "PreResume",
                "worker": {"id": rec.id},
                "resume_input": ra.input,
                "continue_transcript": ra.continue_transcript,
            },
        )
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreResume hook denied the resume"
            services(rt).audit("pre_resume_denied", {"worker": {"id": rec.id}, "reason": why})
            return {**rec.summary(), "pre_resume_denied": why}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and mod.get("resume_input") is not None:
            ra.input = mod["resume_input"]
            input_text = check_input(ra.input)
    digest_text = None
    if not ra.continue_transcript:
        from harnpy.lifecycle.transcript import coerce, digest

        t = rec.transcript
        if type(t) is dict and t.get("_type") == "transcript" and type(t.get("messages")) is list:
            digest_text = digest(coerce(t, "resume_agent")) or None
    # re-check after the hooks (another resume may have won meanwhile)
    if rec.status != "suspended" or (not cold and rec.park_waker is None):
        raise sus_error(
            6,
            f"resume_agent: worker {rec.id} changed before resume could complete "
            f"(status={rec.status})",
        )
    commit_resume(
        rt,
        rec,
        doc=doc,
        input_value=ra.input,
        input_text=input_text,
        continue_transcript=ra.continue_transcript,
        initiator=initiator,
        trigger_event=ra.trigger_event,
        trigger_info=ra.trigger_info,
        digest_text=digest_text,
    )
    if initiator == "parent":
        _parent_audit(thread, "subagent_resume", rec, None)
    if hooks.has_hooks(rt, ("PostResume",)):
        yield from hooks.fire(
            thread, "PostResume", {"event": "PostResume", "worker": {"id": rec.id}}
        )
    return rec.summary()


def _read_mode(
    runtime: Any, rec: WorkerRecord, input_text: str | None, ra: ResumeArgs
) -> dict[str, Any]:
    """2.4 step 4 for a cold-loaded worker that is not suspended: register it, apply the
    input and the transcript policy, return its summary (no new run)."""
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    services(runtime).workers[rec.id] = rec
    if input_text is not None:
        rec.task = input_text
        rec.history.append(input_text)
    if not ra.continue_transcript and type(rec.transcript) is dict:
        from harnpy.lifecycle.transcript import coerce, digest, new_transcript

        d = digest(coerce(rec.transcript, "resume_agent")) if rec.transcript.get("messages") else ""
        rec.transcript = (
            new_transcript(messages=[{"role": "user", "content": d}], summary=d) if d else None
        )
    return rec.summary()


def commit_resume(
    runtime: Any,
    rec: WorkerRecord,
    *,
    doc: dict[str, Any] | None = None,
    input_value: Any = None,
    input_text: str | None = None,
    continue_transcript: bool = True,
    initiator: str = "operator",
    trigger_event: Any = None,
    trigger_info: dict[str, Any] | None = None,
    digest_text: str | None = None,
    fresh: bool = False,
    claimed: bool = False,
) -> None:
    """Steps 4-9 of the warm resume (2.4) once the checks passed: claim the snapshot file,
    restore the thread for a cold resume (``doc``, or the file when the record has no
    thread), flip the record to ``running``, build the payload and deliver it (waker, or the
    restored thread's pending slot), unregister the wait, emit ``WorkerResumed``.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` (lost the claim), ``HARN-SUS-004`` (the snapshot
            cannot be restored; the file is put back as it was).
    """
    cold = rec.thread is None
    path = rec.snapshot_path
    original: CheckpointClaim | None = None
    if not claimed:
        park_id = None if doc is not None else getattr(rec, "park_id", None)
        original = claim(path, rec.id, park_id) if path else None
        if original is None and cold:
            raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: file not found")
        hold_claim(rec, path, original)
    th = None
    if cold:
        try:
            if doc is None:
                doc, _ = read_document(path)
                if doc.get("harnpy_thread") is None:
                    raise SnapshotLoadError("the snapshot has no evaluator state")
            th = restore_thread(runtime, rec, doc, path, fresh=fresh)
        except (SnapshotLoadError, SnapshotError, HarnError) as e:
            rollback(path, original)
            msg = e.message if isinstance(e, (SnapshotError, HarnError)) else str(e)
            raise _load_failure(path, msg) from None
        except Exception as e:  # noqa: BLE001 - data the checks let through broke the restore
            rollback(path, original)
            raise _load_failure(path, _unexpected(e)) from None
        except BaseException:
            rollback(path, original)  # an interrupt: the park stays
            raise
    if th is not None and digest_text is None and not continue_transcript:
        # a transcript kept beside the snapshot is only known once restored
        t = rec.transcript
        if type(t) is dict and type(t.get("messages")) is list and t["messages"]:
            from harnpy.lifecycle.transcript import digest

            digest_text = digest(t) or None
    sus = dict(rec.suspension or {})
    if not sus and doc is not None and isinstance(doc.get("suspension"), dict):
        sus = dict(doc["suspension"])
    waker = rec.park_waker
    rec.park_waker = None
    rec.suspend_request = None
    rec.suspension = None
    rec.status = "running"
    rec.finished_at = None
    rec.error = None
    rec.pending_error = None
    if input_text is not None:
        rec.task = input_text
        rec.history.append(input_text)
    rec.cancelled_durable_wait = None  # type: ignore[attr-defined]
    cancel_wait(runtime, rec)
    if trigger_info is None and trigger_event is not None:
        ev = trigger_event if type(trigger_event) is dict else {}
        trigger_info = {
            "id": None,
            "event_id": ev.get("id"),
            "kind": ev.get("kind"),
            "provider": ev.get("provider"),
            "dedupe_key": ev.get("dedupe_key"),
            "timeout_action": None,
        }
    payload = resume_payload(
        rec,
        sus,
        input_value=input_value,
        input_text=input_text,
        continue_transcript=continue_transcript,
        initiator=initiator,
        trigger_info=trigger_info,
        digest=digest_text,
    )
    services(runtime).workers[rec.id] = rec
    emit(runtime, rec, "WorkerResumed", initiator=initiator)
    _resume_span(runtime, rec, sus, continue_transcript, input_text is not None, initiator)
    if th is not None:
        attach_thread(runtime, rec, th)
        if th.pending_slot >= 0:
            th.frame.slots[th.pending_slot] = payload
        runtime.scheduler.add(th)
    elif waker is not None:
        waker.wake(payload)


class _Caller:
    """Stand-in calling thread for resumes driven from Python (triggers, timers, CLI)."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.frame = None


def drive_sync(runtime: Any, gen: Gen) -> Any:
    """Run a callback-builtin generator from Python: each ``CallRequest`` (a hook) runs to
    completion on a fresh thread. A hook that would wait raises a runtime error (hooks of
    trigger- and timer-driven resumes must not block)."""
    from harnpy.stdlib.concurrency import start_thread

    value: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        value, exc = None, None
        if type(req) is not CallRequest:
            gen.close()
            raise runtime_error("internal: a resume step tried to wait outside a Harn thread")
        try:
            th = start_thread(runtime, req.fn, list(req.args), "hook")
            if not th.finished:
                value = th.run()
                if not th.finished:
                    from harnpy.stdlib.concurrency import kill_thread

                    kill_thread(runtime, th)
                    raise runtime_error(
                        "a lifecycle hook of a trigger- or timer-driven resume cannot wait"
                    )
            else:
                value = th.result
        except HarnError as e:
            exc = e


def resume_sync(runtime: Any, target: Any, ra: ResumeArgs) -> Any:
    """``resume_agent`` from Python (see :func:`resume_gen`)."""
    gen = resume_gen(_Caller(runtime), target, ra)
    return drive_sync(runtime, gen)


@builtin("resume_agent", aliases=("__resume_agent",), callback=True)
def resume_agent(thread: Any, *args: Any) -> Gen:
    """``resume_agent(target, input_or_options?, continue_transcript?)`` (lifecycle.md 2.4,
    T6/T14): resume a suspended worker — a live handle (summary dict / id) or a snapshot
    (path, or an id under the state dir: cold load, then resume) — and return its summary
    (``status: "running"``). Options: ``{input, continue_transcript (default true),
    initiator, trigger_event}``; default initiator ``parent`` inside an agent loop, else
    ``operator``. With ``continue_transcript: false`` the worker continues from a digest of
    its transcript. The first resumed request carries the one-shot ``resume_continuity``
    reminder (8). A cold-loaded snapshot that is not suspended is registered and returned
    without running.

    Raises:
        HarnRuntimeError: ``HARN-SUS-003`` (not suspended), ``-004`` (snapshot missing /
            unreadable / invalid, or empty target), ``-006`` (another resume won),
            ``-009`` (blank input), ``-010`` (closed); ``has not reached its suspend
            checkpoint yet``; ``unknown worker: <id>``.
    """
    args = strip_harness(args)
    ra = parse_resume_args(args)
    return (yield from resume_gen(thread, arg(args, 0), ra))


@builtin("daemon_resume", callback=True)
def daemon_resume(thread: Any, *args: Any) -> Gen:
    """``daemon_resume(path, input?)``: cold-restore a parked daemon loop (or any worker
    snapshot) and run it until it settles again; returns its summary (``status:
    "suspended"`` when it idled again, ``completed`` when the loop ended). ``path`` is the
    daemon's state directory (holding ``daemon.json``), a snapshot file, or a worker id.

    Raises:
        HarnRuntimeError: as ``resume_agent`` (``HARN-SUS-004`` for a missing snapshot).
    """
    args = strip_harness(args)
    target = arg(args, 0)
    if type(target) is not str or not target.strip():
        raise sus_error(4, "daemon_resume: missing daemon state directory or snapshot path")
    path = os.path.join(target, "daemon.json") if os.path.isdir(target) else target
    ra = ResumeArgs()
    ra.input = arg(args, 1)
    ra.initiator = "operator"
    summary = yield from resume_gen(thread, path, ra, where="daemon_resume")
    rec = services(thread.runtime).workers.get(summary.get("id"))
    if rec is None or not rec.busy():
        return rec.summary() if rec is not None else summary

    def register(waker: Any) -> None:
        rec.waiters.append(lambda: waker.wake(rec.summary()))
        rec.settle()

    return (yield Block(register, f"daemon {rec.id}"))


@builtin("load_agent", aliases=("__load_agent",))
def load_agent(thread: Any, *args: Any) -> dict[str, Any]:
    """``load_agent(path_or_id)`` (harnpy): cold-load a worker snapshot into this process
    *without* resuming it (lifecycle.md 1.2 T14; 2.9 "cold-loaded snapshots appear once
    loaded"). A parked worker's thread is restored and stays parked here — resumable with
    ``resume_agent`` — and its auto-resume wait is registered again at the *absolute*
    deadline stored in the snapshot (a timeout that already passed fires once, at the next
    poll; nothing is re-armed from "now"). Other statuses are registered as they are
    (``running`` becomes ``interrupted``). Returns the summary.

    Raises:
        HarnRuntimeError: ``HARN-SUS-004`` (unreadable snapshot), ``HARN-SUS-006`` (another
            process resumed or loaded it meanwhile).
    """
    args = strip_harness(args)
    rt = thread.runtime
    target = arg(args, 0)
    if type(target) is not str or not target.strip():
        raise sus_error(4, "load_agent: missing worker id or snapshot path")
    path = _snapshot_target(target)
    try:
        doc, _ = read_document(path)
        path, doc = canonical_snapshot(path, doc)
    except SnapshotLoadError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{target}`: {e}") from None
    svc = services(rt)
    live = svc.workers.get(doc["id"])
    if live is not None:
        return live.summary()
    busy = busy_elsewhere(doc, doc["id"])
    if busy is not None:
        raise busy
    rec = record_from_document(rt, doc, path)
    if rec.status != "suspended" or doc.get("harnpy_thread") is None:
        svc.workers[rec.id] = rec
        return rec.summary()
    from harnpy.runtime.scheduler import ControlWaker

    rec.park_id = adopt(path, rec.id, doc.get("park_id"))  # type: ignore[attr-defined]
    try:
        th = restore_thread(rt, rec, doc, path, fresh=False)
    except SnapshotError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{target}`: {e.message}") from None
    attach_thread(rt, rec, th)
    th.status = "blocked"
    th.blocked_on = f"parked worker {rec.id}"
    rt.scheduler.blocked.add(th)
    rec.park_waker = ControlWaker(rt.scheduler, th, th.frame, th.pending_slot)
    svc.workers[rec.id] = rec
    wait = doc.get("resume_wait")
    if isinstance(wait, dict) and isinstance(wait.get("conditions"), dict):
        d = _dispatcher(rt)
        handle = d.register_resume_wait(
            rec.id,
            wait["conditions"],
            path,
            deadline_ms=wait.get("deadline_ms"),
            park_id=rec.park_id,  # type: ignore[attr-defined]
        )
        if handle is not None:
            if rec.suspension is not None:
                rec.suspension["auto_resume_trigger"] = {
                    "id": handle["id"],
                    "version": handle["version"],
                }
            origin = wait.get("durable_origin")
            if wait.get("durable") and type(wait.get("id")) is str:
                origin = {"id": wait["id"], "store": wait.get("store")}
            rec.resume_wait = {  # type: ignore[attr-defined]
                **wait,
                **handle,
                "durable_origin": origin,
            }
    return rec.summary()
