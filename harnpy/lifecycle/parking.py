"""Parking a worker (lifecycle.md 2.3, 3.2-3.3, 4.2, T2-T5): Suspension records, the
auto-resume wait of a park, trace spans and advisory hooks, the ``__agent_*`` parking
builtins, ``suspend_agent`` and the ``subagent_pause`` / ``subagent_resume`` tools."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import arg, now_rfc3339, strip_harness
from harnpy.lifecycle.checkpoint_store import _cache, _target_path
from harnpy.lifecycle.claims import _new_park_id
from harnpy.lifecycle.restore import _is_loop_frame, bottom_frame, loop_frame
from harnpy.lifecycle.services import services
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.worker_documents import _jsonable, persist
from harnpy.lifecycle.workers import (
    WorkerRecord,
    emit,
    lifecycle_error,
    resolve,
)
from harnpy.runtime.display import display
from harnpy.runtime.scheduler import block_control
from harnpy.runtime.values import Closure
from harnpy.stdlib.registry import builtin

Gen = Generator[Any, Any, Any]

INITIATORS = ("self", "parent", "operator", "triggered")


def parse_initiator(value: Any, default: str, where: str, *, allow_timeout: bool = True) -> str:
    """``self`` / ``parent`` / ``operator`` / ``triggered`` (``self_initiated`` = self), and
    ``timeout`` for resumes (``allow_timeout``; a suspension has no timeout initiator).

    Raises:
        HarnRuntimeError: ``<where>: unknown initiator `<x>```.
    """
    if value is None:
        return default
    text = value.strip().lower() if type(value) is str else display(value)
    if text == "self_initiated":
        return "self"
    if text not in INITIATORS and not (allow_timeout and text == "timeout"):
        raise lifecycle_error(
            f"{where}: unknown initiator `{text}`; expected self, parent, operator or triggered"
        )
    return text


def new_suspension(
    runtime: Any, rec: WorkerRecord, reason: str, initiator: str, conditions: Any, turn: Any
) -> dict[str, Any]:
    """A WorkerSuspension record (3.2; ``self`` shows as ``self_initiated``, 13 Q1)."""
    return {
        "reason": reason,
        "initiator": "self_initiated" if initiator == "self" else initiator,
        "suspended_at": now_rfc3339(runtime),
        "snapshot_ref": rec.snapshot_path,
        "suspended_at_turn": turn,
        "conditions": conditions,
        "auto_resume_trigger": None,
        "prior_span_link": None,
        "pipeline_span_link": None,
    }


def redacted_handle(rec: WorkerRecord) -> dict[str, Any]:
    """``rec``'s summary without transcript, task history, task text, request or result:
    the resumable reference a Suspension carries (seed: the envelope never holds transcript
    text or resume input)."""
    from harnpy.lifecycle.models import PRIVATE_HANDLE_KEYS

    return {k: v for k, v in rec.summary().items() if k not in PRIVATE_HANDLE_KEYS}


def suspension_payload(
    rec: WorkerRecord,
    *,
    reason: str,
    initiator: str,
    conditions: Any,
    iterations: int,
    mechanism: Any = None,
    validate: bool = True,
) -> dict[str, Any]:
    """The Suspension returned to the parent / caller (3.3), validated with
    :class:`harnpy.lifecycle.models.Suspension`. ``conditions`` that are not a dict (raw
    ``suspend_agent`` path, 4.2: nothing was registered, an open park) show as nil.

    Raises:
        HarnRuntimeError: the envelope does not match the shape (never a ShapeError).
    """
    sus = rec.suspension or {}
    if conditions is not None and type(conditions) is not dict:
        conditions = None
    trig = sus.get("auto_resume_trigger")
    payload = {
        "status": "suspended",
        "final_status": "suspended",
        "handle": redacted_handle(rec),
        "reason": reason,
        "initiator": "self" if initiator == "self_initiated" else initiator,
        "conditions": conditions,
        "iterations_completed": iterations,
        "suspended_at": sus.get("suspended_at"),
        "suspended_at_turn": sus.get("suspended_at_turn"),
        "snapshot_path": rec.snapshot_path,
        "resume_by_mechanism": mechanism if type(mechanism) is str else None,
        "auto_resume_trigger": trig.get("id") if type(trig) is dict else None,
    }
    if validate:
        from harnpy.lifecycle import models

        models.validate(models.Suspension, payload, "the Suspension of worker " + rec.id)
    return payload


def _dispatcher(runtime: Any) -> Any:
    from harnpy.lifecycle.triggers import get_dispatcher

    d = get_dispatcher(runtime)
    from harnpy.lifecycle.wait_resumes import install

    install(d)
    return d


def register_wait(
    runtime: Any, rec: WorkerRecord, conditions: Any, durable: bool, *, root: bool = False
) -> None:
    """Register the auto-resume wait of ``conditions`` (raw suspend path, 4.2) and record
    ``suspension.auto_resume_trigger = {id, version}`` and the absolute deadlines
    (``rec.resume_wait``). Open parks register nothing. The park of a root loop (``root``)
    whose trigger / timeout / event wait no store records gets a warning: once this process
    exits nothing will wake it (issue 14 point 3).

    Raises:
        HarnRuntimeError: ``HARN-SUS-002`` / ``-007`` / ``-008``.
    """
    rec.resume_wait = None  # type: ignore[attr-defined]
    if type(conditions) is not dict or not conditions:
        return
    d = _dispatcher(runtime)
    handle = d.register_resume_wait(
        rec.id,
        conditions,
        rec.snapshot_path,
        durable=durable and d.store is not None,
        park_id=getattr(rec, "park_id", None),
    )
    if handle is None:
        return
    if rec.suspension is not None:
        rec.suspension["auto_resume_trigger"] = {"id": handle["id"], "version": handle["version"]}
    if root and not handle.get("durable"):
        runtime.write_err(
            f"harnpy: warning: worker {rec.id} waits for {_wait_words(conditions)}, but no store "
            "records the wait: once this process exits nothing will wake it; set "
            "HARNPY_STORE=default and run `harnpy worker`, or resume it yourself with "
            f"`harnpy run --resume {rec.snapshot_path}`\n"
        )
    rec.resume_wait = {  # type: ignore[attr-defined]
        **handle,
        "conditions": _jsonable(conditions),
        "registered_at_ms": runtime.clock.now_ms(),
    }


def _wait_words(conditions: dict[str, Any]) -> str:
    """``a trigger and a timeout`` ... : what a wait's conditions wait for, in words."""
    parts = [
        words
        for key, words in (
            ("trigger", "a trigger"),
            ("timeout", "a timeout"),
            ("on_event", "an event"),
        )
        if conditions.get(key) is not None
    ]
    return " and ".join(parts) or "a condition"


def cancel_wait(runtime: Any, rec: WorkerRecord, reason: str = "resumed") -> None:
    """Unregister ``rec``'s auto-resume wait (any resume or close, lifecycle.md 4.4; a late
    timer is a no-op). A durable wait this process does not hold — the worker was parked by
    another process and is resumed here (``harnpy run --resume``, ``load_agent``) — is
    cancelled in the wait store it was recorded in, so ``harnpy worker`` never fires it."""
    wait = getattr(rec, "resume_wait", None)
    rec.resume_wait = None  # type: ignore[attr-defined]
    if type(wait) is not dict:
        return
    d = getattr(runtime, "trigger_dispatcher", None)
    wid = wait.get("id")
    held = d is not None and type(wid) is str and wid in d.waits
    if d is not None and held:
        d.cancel_resume_wait(wid, reason=reason)
    origin = wait.get("durable_origin")
    if origin is None and wait.get("durable") and not held:
        origin = {"id": wid, "store": wait.get("store")}
    if type(origin) is dict and type(origin.get("id")) is str:
        if _store_call(runtime, origin, "cancel", reason):
            rec.cancelled_durable_wait = origin  # type: ignore[attr-defined]


def _store_call(runtime: Any, origin: dict[str, Any], op: str, reason: str = "") -> bool:
    """``cancel`` / ``reopen`` durable wait ``origin`` (``{id, store}``) in its store (the
    recorded file, else the configured one); problems are warnings, never errors."""
    from harnpy.lifecycle.triggers.store import (
        StoreError,
        configured_store_path,
        is_sqlite_path,
        open_store,
    )

    try:
        path = origin.get("store") or configured_store_path(
            getattr(runtime, "wait_store_path", None)
        )
        if not path or (is_sqlite_path(path) and not os.path.exists(path)):
            return False
        store = open_store(path)
        try:
            now = runtime.clock.now_ms()
            if op == "cancel":
                return bool(store.cancel(origin["id"], now, reason))
            return bool(store.reopen(origin["id"], now))
        finally:
            store.close()
    except (StoreError, OSError, Exception) as e:  # noqa: BLE001 - sqlite3 errors too
        runtime.write_err(f"harnpy: warning: could not {op} durable wait {origin.get('id')}: {e}\n")
        return False


def _span_link(span: dict[str, Any] | None) -> dict[str, Any] | None:
    if span is None:
        return None
    return {"trace_id": span["trace_id"], "span_id": span["span_id"], "kind": span["kind"]}


def _record_span(
    runtime: Any,
    kind: str,
    metadata: dict[str, Any],
    *,
    parented: bool,
    links: list[dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Record a finished ``suspension`` / ``resume`` trace span while tracing is enabled
    (a resume span has no parent and links back to the suspension and pipeline spans)."""
    if not getattr(runtime, "trace_enabled", False):
        return None
    stack = getattr(runtime, "trace_stack", None) or []
    parent = stack[-1] if (stack and parented) else None
    now = runtime.clock.now_ms()
    span = {
        "name": kind,
        "kind": kind,
        "trace_id": parent["trace_id"] if parent else os.urandom(16).hex(),
        "span_id": os.urandom(8).hex(),
        "parent_id": parent["span_id"] if parent else None,
        "start_ms": now,
        "end_ms": now,
        "duration_ms": 0,
        "metadata": metadata,
        "attributes": metadata,
        "links": list(links or []),
    }
    done = getattr(runtime, "trace_finished", None)
    if done is None:
        done = []
        runtime.trace_finished = done
    done.append(span)
    return span


def _suspension_span(runtime: Any, rec: WorkerRecord, reason: str, initiator: str) -> None:
    stack = getattr(runtime, "trace_stack", None) or []
    span = _record_span(
        runtime,
        "suspension",
        {
            "handle": rec.id,
            "reason": reason,
            "initiator": initiator,
            "pipeline_id": getattr(runtime, "pipeline_id", None) or "main",
        },
        parented=True,
    )
    if span is not None and rec.suspension is not None:
        rec.suspension["prior_span_link"] = _span_link(span)
        rec.suspension["pipeline_span_link"] = (
            {"trace_id": stack[-1]["trace_id"], "span_id": stack[-1]["span_id"]} if stack else None
        )


def _resume_span(
    runtime: Any, rec: WorkerRecord, sus: dict[str, Any], cont: bool, had_input: bool, ini: str
) -> None:
    links = [x for x in (sus.get("prior_span_link"), sus.get("pipeline_span_link")) if x]
    _record_span(
        runtime,
        "resume",
        {
            "handle": rec.id,
            "continue_transcript": cont,
            "had_resume_input": had_input,
            "initiator": ini,
        },
        parented=False,
        links=links,
    )


def _advisory_hooks(runtime: Any, event: str, payload: dict[str, Any]) -> None:
    """Run the hooks of an advisory event (PostSuspend) on detached threads."""
    from harnpy.lifecycle import hooks

    if not hooks.has_hooks(runtime, (event,)):
        return
    from harnpy.stdlib.concurrency import start_thread

    body = {"event": event, **payload}
    for hook in hooks.matching(runtime, event, body):
        fn = hook.handler
        args: list[Any] = [body]
        if type(fn) is Closure and fn.code.nparams >= 2 and not fn.code.rest:
            from harnpy.lifecycle.harness import harness_value

            args = [harness_value(runtime), body]
        th = start_thread(runtime, fn, args, f"hook:{event}")

        def done(result: Any, error: Any, ev: str = event) -> None:
            if error is not None:
                runtime.write_err(f"warning: {ev} hook failed: {error.message}\n")

        th.on_done = done
        if not th.finished:
            hooks.track_detached(runtime, th)
            runtime.scheduler.add(th)


def _pending_top(runtime: Any) -> dict[str, WorkerRecord]:
    return _cache(runtime, "pending_top")  # type: ignore[no-any-return]


def new_top_level_record(runtime: Any, st: dict[str, Any]) -> WorkerRecord:
    """The worker record of a root ``agent_loop`` that parks (T4): ``name:
    "top-level-agent"``, ``mode: "top_level_agent"``."""
    from harnpy.lifecycle.workers import _carry

    prompt = st.get("prompt")
    task = prompt if type(prompt) is str else display(prompt) if prompt is not None else ""
    session_id = str(st.get("session_id") or "")
    spec = {
        "name": "top-level-agent",
        "task": task,
        "system": st.get("system"),
        "options": dict(st.get("llm_options") or {}),
        "returns_schema": None,
        "session_id": session_id,
        "parent_session_id": None,
    }
    return WorkerRecord(
        runtime,
        name="top-level-agent",
        task=task,
        mode="top_level_agent",
        session_id=session_id,
        parent_worker_id=None,
        config={"mode": "top_level_agent", "spec": spec},
        carry=_carry(None, "agent_loop"),
        execution={"cwd": os.getcwd(), "env": None, "worktree": None},
        audit={
            "session_id": session_id,
            "parent_session_id": None,
            "mutation_scope": None,
            "approval_policy": None,
        },
    )


# ---------------------------------------------------------------- parking builtins


def _preview(rec: WorkerRecord, request: dict[str, Any], st: dict[str, Any]) -> dict[str, Any]:
    """The Suspension handed to ``resume_by`` before the park commits."""
    saved = rec.status
    rec.status = "suspended"
    try:
        payload = suspension_payload(
            rec,
            reason=request.get("reason", ""),
            initiator=request.get("initiator") or "self",
            conditions=request.get("conditions"),
            iterations=st.get("iteration", 0),
            validate=False,
        )
    finally:
        rec.status = saved
    payload["suspended_at"] = now_rfc3339(rec.runtime)
    payload["suspended_at_turn"] = st.get("iteration")
    return payload


@builtin("__agent_suspend_begin", callback=True)
def agent_suspend_begin(thread: Any, st: Any = None, request: Any = None) -> Gen:
    """``__agent_suspend_begin(st, request)``: the first half of a park (std/agent/_loop).
    Runs the PreSuspend hooks of a self-park (T3; a request accepted by ``suspend_agent``
    ran them already, a root loop's park skips them, T4) and returns ``{denied, request,
    suspension}``: ``denied`` is the block reason (the park is cancelled, the worker keeps
    running), ``suspension`` the Suspension preview handed to ``resume_by``."""
    from harnpy.lifecycle import hooks
    from harnpy.lifecycle.agents import current_worker_id

    rt = thread.runtime
    svc = services(rt)
    s: dict[str, Any] = st if type(st) is dict else {}
    req = dict(request) if type(request) is dict else {}
    req.setdefault("reason", "")
    req.setdefault("initiator", "self")
    if req.get("resume_by") is None and s.get("resume_by") is not None:
        req["resume_by"] = s["resume_by"]
    wid = current_worker_id(thread)
    rec = svc.workers.get(wid) if wid else None
    if rec is None or rec.thread is not thread:
        top = new_top_level_record(rt, s)
        _pending_top(rt)[top.id] = top
        req["top_level_id"] = top.id
        return {"denied": None, "request": req, "suspension": _preview(top, req, s)}
    if not req.get("accepted") and hooks.has_hooks(rt, ("PreSuspend",)):
        payload = {
            "event": "PreSuspend",
            "worker": {"id": rec.id},
            "reason": req["reason"],
            "initiator": req["initiator"],
            "conditions": req.get("conditions"),
        }
        ctl = yield from hooks.fire(thread, "PreSuspend", payload)
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreSuspend hook denied the suspend"
            svc.audit("pre_suspend_denied", {"worker": {"id": rec.id}, "reason": why})
            return {"denied": why, "request": req, "suspension": None}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and type(mod.get("reason")) is str:
            req["reason"] = mod["reason"]
    return {"denied": None, "request": req, "suspension": _preview(rec, req, s)}


@builtin("__agent_suspend_denied")
def agent_suspend_denied(thread: Any, st: Any = None, begin: Any = None) -> Any:
    """``__agent_suspend_denied(st, begin)``: a PreSuspend hook denied the loop's park; the
    model is told with a user message and the loop goes on."""
    from harnpy.lifecycle.agents import _with_transcript
    from harnpy.lifecycle.transcript import append_message

    why = begin.get("denied") if type(begin) is dict else None
    t = append_message(
        st["transcript"],
        {
            "role": "user",
            "content": f"[agent_await_resumption was denied by a PreSuspend hook: {why}. "
            "Continue working.]",
        },
    )
    return _with_transcript(thread.runtime, st, t, suspend_request=None, park_request=None)


@builtin("__agent_park", control=True)
def agent_park(thread: Any, st: Any = None, request: Any = None, outcome: Any = None) -> Any:
    """``__agent_park(st, request, resume_by_outcome)``: the loop parks (T2 at the boundary,
    T3, daemon idle). In a worker: the worker becomes ``suspended``, its snapshot is written
    and this call blocks, as data, until a resume delivers the payload it returns. In a
    root loop (T4): the loop's frames are written as a ``top_level_agent`` worker snapshot
    and the call returns ``{final: true, suspension}`` so the loop ends with the
    Suspension."""
    from harnpy.lifecycle.agents import current_worker_id

    rt = thread.runtime
    s: dict[str, Any] = st if type(st) is dict else {}
    req: dict[str, Any] = request if type(request) is dict else {}
    mechanism = outcome.get("mechanism") if type(outcome) is dict else None
    wid = current_worker_id(thread)
    rec = services(rt).workers.get(wid) if wid else None
    if rec is not None and rec.thread is thread:
        park_worker(thread, rec, s, req, mechanism)
        return None
    return {"final": True, "suspension": park_root(thread, s, req, mechanism)}


def _commit_park(
    thread: Any,
    rec: WorkerRecord,
    st: dict[str, Any],
    req: dict[str, Any],
    mechanism: Any,
    bottom: Any,
    *,
    required: bool,
) -> tuple[str, str]:
    """Shared part of T2-at-boundary / T3 / T4: register the wait, flip the record to
    ``suspended`` with its Suspension, write the snapshot (rolled back on failure)."""
    rt = thread.runtime
    accepted = bool(req.get("accepted")) and rec.suspension is not None
    reason = req.get("reason") or ""
    initiator = req.get("initiator") or "self"
    raw_conditions = req.get("raw_conditions", req.get("conditions"))
    conditions = req.get("conditions")
    old = (rec.status, rec.suspension, rec.transcript, rec.result, getattr(rec, "park_id", None))
    with contextlib.suppress(OSError):  # an unusable state dir: persist() reports it
        _target_path(rt, rec)
    if accepted:
        sus = dict(rec.suspension or {})
        sus["suspended_at_turn"] = st.get("iteration")
    else:
        sus = new_suspension(rt, rec, reason, initiator, raw_conditions, st.get("iteration"))
    sus["snapshot_ref"] = rec.snapshot_path
    rec.status = "suspended"
    rec.suspension = sus
    rec.transcript = st.get("transcript", rec.transcript)
    rec.park_id = _new_park_id()  # type: ignore[attr-defined]
    rec.reminders_enabled = st.get("reminders_enabled", True) is not False  # type: ignore[attr-defined]
    try:
        register_wait(
            rt, rec, raw_conditions, durable=mechanism == "ResumeBy.cloud_harness", root=required
        )
        if not accepted:
            _suspension_span(rt, rec, reason, initiator)
        rec.result = suspension_payload(
            rec,
            reason=reason,
            initiator=initiator,
            conditions=conditions,
            iterations=st.get("iteration", 0),
            mechanism=mechanism,
        )
        persist(
            rt,
            rec,
            thread=thread,
            bottom=bottom,
            pending_slot=thread.pending_target,
            st=st,
            durable=True,
            required=required,
        )
    except BaseException:
        cancel_wait(rt, rec, "park failed")
        rec.status, rec.suspension, rec.transcript, rec.result, rec.park_id = old  # type: ignore[attr-defined]
        raise
    return reason, initiator


def park_worker(
    thread: Any, rec: WorkerRecord, st: dict[str, Any], req: dict[str, Any], mechanism: Any
) -> None:
    """Park worker ``rec`` whose thread is blocked in ``__agent_park`` (see there)."""
    rt = thread.runtime
    accepted = bool(req.get("accepted")) and rec.suspension is not None
    reason, initiator = _commit_park(
        thread, rec, st, req, mechanism, bottom_frame(thread), required=False
    )
    rec.suspend_request = None
    rec.park_waker = block_control(thread, f"parked worker {rec.id}")
    if not accepted:
        emit(rt, rec, "WorkerSuspended", reason=reason, initiator=initiator)
        _advisory_hooks(
            rt,
            "PostSuspend",
            {"worker": {"id": rec.id}, "reason": reason, "snapshot_path": rec.snapshot_path},
        )
    rec.settle()


def park_root(
    thread: Any, st: dict[str, Any], req: dict[str, Any], mechanism: Any
) -> dict[str, Any]:
    """T4: a root loop parks; returns the Suspension (see ``__agent_park``)."""
    rt = thread.runtime
    rec = _pending_top(rt).pop(str(req.get("top_level_id")), None) or new_top_level_record(rt, st)
    reason, initiator = _commit_park(
        thread, rec, st, req, mechanism, loop_frame(thread), required=True
    )
    rec.thread = None
    services(rt).workers[rec.id] = rec
    emit(rt, rec, "WorkerSuspended", reason=reason, initiator=initiator)
    rec.settle()
    return rec.result  # type: ignore[no-any-return]


@builtin("__agent_daemon_park_request")
def agent_daemon_park_request(thread: Any, st: Any = None) -> dict[str, Any]:
    """``__agent_daemon_park_request(st)``: the internal ``agent_await_resumption`` request
    of a daemon loop that idles without a wake source (seed "Daemon idle")."""
    return {
        "reason": "daemon idle",
        "initiator": "self",
        "conditions": None,
        "raw_conditions": None,
        "resume_by": None,
        "daemon": True,
    }


def request_suspend(
    runtime: Any, rec: WorkerRecord, reason: str, initiator: str, conditions: Any
) -> None:
    """T2 at call time (lifecycle.md 13 Q20): persist the snapshot saying ``suspended``,
    then flip the record, queue the request for the next turn boundary and emit
    ``WorkerSuspended``. The worker parks (snapshot with its frames) at that boundary."""
    sus = new_suspension(runtime, rec, reason, initiator, conditions, None)
    old = (rec.status, rec.suspension)
    rec.status, rec.suspension = "suspended", sus
    try:
        persist(runtime, rec, durable=True)
    except BaseException:
        rec.status, rec.suspension = old
        raise
    rec.suspend_request = {
        "reason": reason,
        "initiator": initiator,
        "conditions": conditions,
        "raw_conditions": conditions,
        "resume_by": None,
        "accepted": True,
    }
    emit(runtime, rec, "WorkerSuspended", reason=reason, initiator=initiator)
    _suspension_span(runtime, rec, reason, initiator)


def _caller_loop_state(thread: Any) -> dict[str, Any] | None:
    """The state dict of the innermost agent loop running on ``thread`` (None outside)."""
    fr = getattr(thread, "frame", None)
    while fr is not None:
        if _is_loop_frame(fr):
            for i, n in enumerate(fr.code.slot_names):
                if n in ("st", "state") and type(fr.slots[i]) is dict:
                    return fr.slots[i]  # type: ignore[no-any-return]
            return None
        fr = fr.parent
    return None


def _parent_audit(thread: Any, tool: str, rec: WorkerRecord, reason: Any) -> None:
    """``tool_call_audit`` session event of a parent-initiated pause/resume (2.10)."""
    st = _caller_loop_state(thread)
    session = st.get("session_id") if st is not None else rec.session_id
    services(thread.runtime).emit_session_event(
        session,
        {
            "type": "tool_call_audit",
            "kind": "tool_call_audit",
            "tool_name": tool,
            "audit": {"initiator": "parent", "reason": reason, "worker_id": rec.id},
        },
    )


@builtin("suspend_agent", aliases=("__suspend_agent",), callback=True)
def suspend_agent(thread: Any, *args: Any) -> Gen:
    """``suspend_agent(h, reason?, options?)`` (lifecycle.md 2.3, T2/T5): ask a running
    worker to park at its next turn boundary. ``options``: ``{initiator?, conditions?}``
    (initiator ``self|parent|operator|triggered``, default ``operator``; conditions take the
    raw suspend path of 4.2). Returns the summary (``status: "suspended"``; the snapshot is
    written before the status flips, 13 Q20; ``wait_agent`` returns once the worker has
    actually parked).

    PreSuspend hooks run first (also for terminal workers); a veto returns the summary with
    ``pre_suspend_denied`` and records a ``pre_suspend_denied`` audit. A second call on a
    suspended worker returns its summary unchanged (no event, no write).

    Raises:
        HarnRuntimeError: ``HARN-SUS-001`` (not running), ``HARN-SUS-002/007/008``
            (conditions), ``suspend_agent: missing worker handle``.
    """
    from harnpy.lifecycle import hooks
    from harnpy.lifecycle.triggers.conditions import parse_wait_conditions

    args = strip_harness(args)
    rt = thread.runtime
    if not args or args[0] is None:
        raise lifecycle_error("suspend_agent: missing worker handle")
    rec = resolve(rt, args[0], "suspend_agent")
    raw_reason = arg(args, 1)
    reason = (
        "" if raw_reason is None else raw_reason if type(raw_reason) is str else display(raw_reason)
    )
    opts = arg(args, 2)
    opts = opts if type(opts) is dict else {}
    initiator = parse_initiator(
        opts.get("initiator"), "operator", "suspend_agent", allow_timeout=False
    )
    conditions = opts.get("conditions")
    if hooks.has_hooks(rt, ("PreSuspend",)):
        ctl = yield from hooks.fire(
            thread,
            "PreSuspend",
            {
                "event": "PreSuspend",
                "worker": {"id": rec.id},
                "reason": reason,
                "initiator": initiator,
                "conditions": conditions,
            },
        )
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreSuspend hook denied the suspend"
            services(rt).audit("pre_suspend_denied", {"worker": {"id": rec.id}, "reason": why})
            return {**rec.summary(), "pre_suspend_denied": why}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and type(mod.get("reason")) is str:
            reason = mod["reason"]
    if rec.status == "suspended":
        return rec.summary()
    if rec.status != "running" or rec.thread is None:
        raise sus_error(1, f"suspend_agent: worker {rec.id} is not running (status={rec.status})")
    parse_wait_conditions(conditions)  # HARN-SUS-002/007/008 before anything changes
    if conditions is not None and type(conditions) is not dict:
        # raw suspend path (4.2): not a dict -> nothing is registered, the park is open
        from harnpy.runtime.values import type_name

        rt.write_err(
            f"harnpy: warning: suspend_agent: conditions must be a dict, got "
            f"{type_name(conditions)}; worker {rec.id} parks open (nothing registered)\n"
        )
    request_suspend(rt, rec, reason, initiator, conditions)
    if initiator == "parent":
        _parent_audit(thread, "subagent_pause", rec, reason)
    if hooks.has_hooks(rt, ("PostSuspend",)):
        yield from hooks.fire(
            thread,
            "PostSuspend",
            {
                "event": "PostSuspend",
                "worker": {"id": rec.id},
                "reason": reason,
                "snapshot_path": rec.snapshot_path,
            },
        )
    return rec.summary()


def subagent_tool_entries(runtime: Any) -> list[dict[str, Any]]:
    """The registry entries of the model-facing ``subagent_pause`` / ``subagent_resume``
    tools (lifecycle.md 2.10) that ``agent_loop`` adds with ``subagents: true`` (alias
    ``subagent_tools: true``); their handlers are the builtins below."""
    builtins = runtime.builtins
    return [
        {
            "name": "subagent_pause",
            "description": "Suspend a child agent worker.",
            "parameters": {
                "type": "object",
                "properties": {"handle": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["handle"],
            },
            "handler": builtins["__subagent_pause_tool"],
            "executor": "harn",
        },
        {
            "name": "subagent_resume",
            "description": "Resume a suspended child agent worker.",
            "parameters": {
                "type": "object",
                "properties": {
                    "handle": {"type": "string"},
                    "input": {"type": "string"},
                    "continue_transcript": {"type": "boolean"},
                },
                "required": ["handle"],
            },
            "handler": builtins["__subagent_resume_tool"],
            "executor": "harn",
        },
    ]


@builtin("__subagent_pause_tool", callback=True)
def subagent_pause_tool(thread: Any, args: Any = None) -> Gen:
    """Handler of the ``subagent_pause({handle, reason?})`` tool (2.10):
    ``suspend_agent(handle, reason, {initiator: "parent"})``; idempotent on a suspended
    child."""
    a: dict[str, Any] = args if type(args) is dict else {}
    reason = a.get("reason")
    return (
        yield from suspend_agent(
            thread, a.get("handle"), "" if reason is None else reason, {"initiator": "parent"}
        )
    )


@builtin("__subagent_resume_tool", callback=True)
def subagent_resume_tool(thread: Any, args: Any = None) -> Gen:
    """Handler of the ``subagent_resume({handle, input?, continue_transcript? = true})``
    tool (2.10): ``resume_agent`` with initiator ``parent``."""
    a: dict[str, Any] = args if type(args) is dict else {}
    cont = a.get("continue_transcript")
    opts = {
        "input": a.get("input"),
        "continue_transcript": True if cont is None else cont,
        "initiator": "parent",
    }
    from harnpy.lifecycle.resuming import resume_agent

    return (yield from resume_agent(thread, a.get("handle"), opts))
