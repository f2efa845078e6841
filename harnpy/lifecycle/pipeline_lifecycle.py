"""Pipeline-finish lifecycle: ``pipeline_on_finish``, unsettled state, partial handoffs and
the ``harness`` lifecycle methods (lifecycle.md 6.1, 2.16).

Per-runtime state lives in a :class:`PipelineLifecycle` record (``runtime.pipeline_lifecycle``,
created on first use by :func:`state`): the one pending ``on_finish`` callback
(last-write-wins), the partial-handoff envelopes recorded by ``harness.handoff_to`` and the
disposition stored by ``harness.finalize``. Audit entries go to the agent services' audit
log (``services(runtime).audit``); envelope ids share its ``seq`` counter, so ids are
deterministic (``envelope_<seq>``).

When the entry program finishes, :func:`run_finish` runs the finish lifecycle written in
Harn (``std/lifecycle/_finish``): ``PreFinish`` hooks, ``OnUnsettledDetected`` hooks (only
when something is unsettled), the ``on_finish(harness, value)`` callback whose return
replaces the program's value, then ``PostFinish`` hooks. Nothing runs (and no module is
loaded) when no callback and no finish hook is registered.

``unsettled_state`` buckets (6.1): ``suspended_subagents`` (suspended workers, and awaiting
``sub_agent`` workers, from the worker registry), ``queued_triggers`` (events queued on
``worker://`` trigger handlers in the trigger dispatcher), ``partial_handoffs`` (envelopes
of ``harness.handoff_to``), ``in_flight_llm_calls`` (model calls submitted and not answered)
and ``pool_pending_tasks`` (always empty in harnpy).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.values import Builtin, CallRequest, Closure, Duration, type_name
from harnpy.stdlib.registry import BUILTINS, builtin

Gen = Generator[Any, Any, Any]

#: Internal Harn module holding the finish lifecycle.
FINISH_MODULE = "std/lifecycle/_finish"
BUCKETS = (
    "suspended_subagents",
    "queued_triggers",
    "partial_handoffs",
    "in_flight_llm_calls",
    "pool_pending_tasks",
)


class PipelineLifecycle:
    """Lifecycle state of one runtime: ``on_finish`` (pending callback or None),
    ``handoffs`` (envelope records, oldest first), ``disposition`` (``harness.finalize``)."""

    def __init__(self) -> None:
        self.on_finish: Any = None
        self.handoffs: list[dict[str, Any]] = []
        self.disposition: Any = None


def state(runtime: Any) -> PipelineLifecycle:
    """The runtime's :class:`PipelineLifecycle` (``runtime.pipeline_lifecycle``)."""
    st = getattr(runtime, "pipeline_lifecycle", None)
    if st is None:
        st = PipelineLifecycle()
        runtime.pipeline_lifecycle = st
    return st


def _services(runtime: Any) -> Any:
    from harnpy.lifecycle.services import services

    return services(runtime)


def audit(runtime: Any, kind: str, payload: Any) -> dict[str, Any]:
    """Append one lifecycle audit entry (``{seq, kind, payload, pipeline_id}``)."""
    return _services(runtime).audit(kind, payload)  # type: ignore[no-any-return]


def _next_seq(runtime: Any) -> int:
    svc = _services(runtime)
    svc.audit_seq += 1
    return svc.audit_seq  # type: ignore[no-any-return]


# ------------------------------------------------------------------ unsettled state


def _rfc3339_ms(text: Any) -> int | None:
    """Epoch ms of an RFC 3339 UTC timestamp (``2026-05-01T00:00:20Z``), else None."""
    if type(text) is not str or len(text) < 19:
        return None
    try:
        return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) * 1000
    except ValueError:
        return None


def suspended_subagents(runtime: Any) -> list[dict[str, Any]]:
    """Suspended workers and awaiting ``sub_agent`` workers (6.1 item shapes)."""
    svc = getattr(runtime, "agent_state", None)
    if svc is None:
        return []
    now = runtime.clock.now_ms()
    out: list[dict[str, Any]] = []
    for rec in list(svc.workers.values()):
        session = rec.session_id or None
        if rec.status == "suspended":
            sus = rec.suspension or {}
            at = _rfc3339_ms(sus.get("suspended_at"))
            auto = sus.get("auto_resume_trigger")
            out.append(
                {
                    "handle": rec.id,
                    "session_id": session,
                    "reason": sus.get("reason") or "suspended",
                    "conditions": sus.get("conditions"),
                    "age_ms": max(0, now - at) if at is not None else 0,
                    "initiator": sus.get("initiator") or "operator",
                    "mode": rec.mode,
                    "status": "suspended",
                    "suspended_at": sus.get("suspended_at"),
                    "snapshot_ref": sus.get("snapshot_ref", rec.snapshot_path),
                    "auto_resume_trigger": auto,
                }
            )
        elif rec.status == "awaiting" and rec.mode == "sub_agent":
            at = _rfc3339_ms(rec.awaiting_started_at)
            out.append(
                {
                    "handle": rec.id,
                    "session_id": session,
                    "reason": "awaiting_input",
                    "conditions": {
                        "status": rec.status,
                        "retriggerable": bool((rec.carry or {}).get("retriggerable")),
                        "awaiting_started_at": rec.awaiting_started_at,
                    },
                    "age_ms": max(0, now - at) if at is not None else 0,
                    "initiator": rec.parent_worker_id or "pipeline",
                    "mode": rec.mode,
                    "status": rec.status,
                    "suspended_at": None,
                    "snapshot_ref": rec.snapshot_path,
                    "auto_resume_trigger": None,
                }
            )
    return out


def queued_triggers(runtime: Any) -> list[dict[str, Any]]:
    """Events queued on ``worker://<queue>`` trigger handlers, oldest first."""
    d = getattr(runtime, "trigger_dispatcher", None)
    if d is None:
        return []
    now = runtime.clock.now_ms()
    out: list[dict[str, Any]] = []
    for queue, items in d.worker_queues.items():
        for ev in items:
            ev = ev if type(ev) is dict else {}
            at = ev.get("received_at_ms") if type(ev.get("received_at_ms")) is int else None
            out.append(
                {
                    "id": ev.get("id"),
                    "source": "worker_queue",
                    "queue": queue,
                    "binding_id": ev.get("binding_id") or ev.get("trigger_id"),
                    "provider": ev.get("provider"),
                    "kind": ev.get("kind"),
                    "queued_at_ms": at,
                    "age_ms": max(0, now - at) if at is not None else 0,
                    "event": ev,
                }
            )
    out.sort(key=lambda x: (x["queued_at_ms"] or 0, str(x["id"])))
    return out


def in_flight_llm_calls(runtime: Any) -> list[dict[str, Any]]:
    """One ``{index}`` record per model call submitted and not answered yet."""
    svc = getattr(runtime, "agent_state", None)
    n = svc.inflight if svc is not None else 0
    return [{"index": i} for i in range(max(0, n))]


def _envelope_view(env: dict[str, Any], now: int) -> dict[str, Any]:
    return {
        "envelope_id": env["envelope_id"],
        "from": env["origin_pipeline"],
        "to": env["target_pipeline"],
        "payload_summary": _payload_summary(env["payload"]),
        "queued_at_ms": env["queued_at_ms"],
        "age_ms": max(0, now - env["queued_at_ms"]),
        "target_pipeline": env["target_pipeline"],
        "origin_pipeline": env["origin_pipeline"],
        "payload": env["payload"],
        "seq": env["seq"],
    }


def _payload_summary(payload: Any) -> str:
    if payload is None:
        return "nil"
    if type(payload) is dict:
        return f"dict:keys={len(payload)}"
    if type(payload) is list:
        return f"list:len={len(payload)}"
    if type(payload) is str:
        return "string:" + (payload[:80] + "..." if len(payload) > 80 else payload)
    return type_name(payload)


def snapshot(runtime: Any) -> dict[str, Any]:
    """The unsettled-state dict (6.1), one list per bucket."""
    now = runtime.clock.now_ms()
    return {
        "suspended_subagents": suspended_subagents(runtime),
        "queued_triggers": queued_triggers(runtime),
        "partial_handoffs": [_envelope_view(e, now) for e in state(runtime).handoffs],
        "in_flight_llm_calls": in_flight_llm_calls(runtime),
        "pool_pending_tasks": [],
    }


def _bucket_len(st: dict[str, Any], key: str) -> int:
    v = st.get(key)
    if v is None:
        return 0
    if type(v) is not list:
        raise runtime_error(f"unsettled-state field `{key}` must be a list, got {type_name(v)}")
    return len(v)


def counts_of(st: Any) -> dict[str, int]:
    """``{suspended, queued, partial, in_flight, pool_pending}`` of an unsettled-state dict.

    Raises:
        HarnRuntimeError: ``st`` is not a dict or a bucket is not a list.
    """
    if type(st) is not dict:
        raise runtime_error(f"unsettled state must be a dict, got {type_name(st)}")
    return {
        "suspended": _bucket_len(st, "suspended_subagents"),
        "queued": _bucket_len(st, "queued_triggers"),
        "partial": _bucket_len(st, "partial_handoffs"),
        "in_flight": _bucket_len(st, "in_flight_llm_calls"),
        "pool_pending": _bucket_len(st, "pool_pending_tasks"),
    }


def summary_of(st: Any) -> str:
    """The one-line summary of an unsettled-state dict (6.1)."""
    c = counts_of(st)
    if not any(c.values()):
        return "no unsettled work"
    return (
        f"unsettled work: {c['suspended']} suspended subagents, {c['queued']} queued "
        f"triggers, {c['partial']} partial handoffs, {c['in_flight']} in-flight llm calls, "
        f"{c['pool_pending']} pool pending tasks"
    )


def record_handoff(runtime: Any, target: str, payload: Any) -> dict[str, Any]:
    """Record a partial-handoff envelope; returns its view (``envelope_id``, ``to``...)."""
    seq = _next_seq(runtime)
    env = {
        "envelope_id": f"envelope_{seq}",
        "target_pipeline": target,
        "origin_pipeline": None,
        "payload": payload,
        "seq": seq,
        "queued_at_ms": runtime.clock.now_ms(),
    }
    state(runtime).handoffs.append(env)
    return _envelope_view(env, env["queued_at_ms"])


# ------------------------------------------------------------------ finish lifecycle


def finish_pending(runtime: Any) -> bool:
    """True when the finish lifecycle has something to run (a callback or finish hooks)."""
    from harnpy.lifecycle.hooks import FINISH_EVENTS, has_hooks

    st = getattr(runtime, "pipeline_lifecycle", None)
    return (st is not None and st.on_finish is not None) or has_hooks(runtime, FINISH_EVENTS)


def run_finish(runtime: Any, value: Any) -> Any:
    """Run the finish lifecycle for the entry program's ``value`` and return the final
    value (the ``on_finish`` callback's return, or ``value``). Errors of hooks and of the
    callback propagate as Harn errors. Advisory hooks still queued (worker events of the
    last statements) run first, and again after the finish lifecycle."""
    from harnpy.lifecycle.hooks import drain_detached

    drain_detached(runtime)
    if not finish_pending(runtime):
        return value
    value = _run_finish(runtime, value)
    drain_detached(runtime)
    return value


def _run_finish(runtime: Any, value: Any) -> Any:
    from harnpy.runtime.modules import resolve_import
    from harnpy.stdlib.concurrency import start_thread

    mod = runtime.modules.get(FINISH_MODULE)
    if mod is None:
        key, path = resolve_import(FINISH_MODULE, None)  # type: ignore[arg-type]
        mod = runtime.import_module(key, path)
    fn = mod.globals["__run_pipeline_finish"]
    th = start_thread(runtime, fn, [value], "pipeline-finish")
    if th.finished:
        return th.result
    return runtime.scheduler.run_until(th)


# ------------------------------------------------------------------ builtins


@builtin()
def pipeline_on_finish(thread: Any, *args: Any) -> None:
    """``pipeline_on_finish(callback)``: run ``callback(harness, value)`` when the entry
    program finishes; its return replaces the program's value. Last write wins.

    Raises:
        HarnRuntimeError: ``pipeline_on_finish: handler must be a closure, got <type>``.
    """
    args = strip_harness(args)
    cb = arg(args, 0)
    if type(cb) is not Closure and type(cb) is not Builtin:
        if cb is None and not args:
            raise runtime_error("pipeline_on_finish: missing handler")
        raise runtime_error(f"pipeline_on_finish: handler must be a closure, got {type_name(cb)}")
    state(thread.runtime).on_finish = cb


@builtin("__pipeline_on_finish_take")
def pipeline_on_finish_take(thread: Any) -> Any:
    """Internal: the pending ``on_finish`` callback (or nil), clearing the slot."""
    st = state(thread.runtime)
    cb, st.on_finish = st.on_finish, None
    return cb


@builtin("__harness_unsettled_state")
def harness_unsettled_state(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.unsettled_state()``: ``{suspended_subagents, queued_triggers,
    partial_handoffs, in_flight_llm_calls, pool_pending_tasks}`` (lists; 6.1)."""
    return snapshot(thread.runtime)


def _state_arg(thread: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    args = strip_harness(args)
    st = arg(args, 0)
    if st is None and not args:
        return snapshot(thread.runtime)
    return st  # type: ignore[no-any-return]


@builtin("harness_is_empty")
def harness_is_empty(thread: Any, *args: Any) -> bool:
    """``harness.is_empty(state?)``: true when every bucket of ``state`` (default: a fresh
    snapshot) is empty."""
    return not any(counts_of(_state_arg(thread, args)).values())


@builtin("harness_counts")
def harness_counts(thread: Any, *args: Any) -> dict[str, int]:
    """``harness.counts(state?)``: ``{suspended, queued, partial, in_flight,
    pool_pending}``."""
    return counts_of(_state_arg(thread, args))


@builtin("__harness_summary")
def harness_summary(thread: Any, *args: Any) -> str:
    """``harness.summary(state?)``: ``no unsettled work`` or the per-bucket count line."""
    return summary_of(_state_arg(thread, args))


@builtin("harness_handoff_to")
def harness_handoff_to(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.handoff_to(target_pipeline, payload?)``: record a partial-handoff envelope
    (it appears in ``unsettled_state().partial_handoffs``); returns ``{status: "queued",
    method: "handoff_to", envelope}`` (``{status: "rejected", ...}`` without a target)."""
    args = strip_harness(args)
    if not args:
        return {
            "status": "rejected",
            "method": "handoff_to",
            "reason": "missing target pipeline argument",
        }
    target = args[0] if type(args[0]) is str else display(args[0])
    env = record_handoff(thread.runtime, target, arg(args, 1))
    return {"status": "queued", "method": "handoff_to", "envelope": env}


@builtin("__harness_acknowledge_handoff")
def harness_acknowledge_handoff(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.acknowledge_handoff(envelope_id, decision?)``: remove the envelope and
    audit ``handoff_acknowledged`` ``{envelope_id, decision}``; ``{status:
    "acknowledged", envelope}`` or ``{status: "not_found", envelope_id}``."""
    args = strip_harness(args)
    eid = arg(args, 0)
    rt = thread.runtime
    st = state(rt)
    for i, env in enumerate(st.handoffs):
        if env["envelope_id"] == eid:
            del st.handoffs[i]
            audit(rt, "handoff_acknowledged", {"envelope_id": eid, "decision": arg(args, 1)})
            return {
                "status": "acknowledged",
                "method": "acknowledge_handoff",
                "envelope": _envelope_view(env, rt.clock.now_ms()),
            }
    return {"status": "not_found", "method": "acknowledge_handoff", "envelope_id": eid}


def _take_queued(runtime: Any, tid: Any) -> dict[str, Any] | None:
    d = getattr(runtime, "trigger_dispatcher", None)
    if d is None:
        return None
    for queue, items in d.worker_queues.items():
        for i, ev in enumerate(items):
            if type(ev) is dict and ev.get("id") == tid:
                del items[i]
                return {"queue": queue, "event": ev}
    return None


@builtin("harness_acknowledge_trigger")
def harness_acknowledge_trigger(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.acknowledge_trigger(id)``: settle one queued trigger item; ``{status:
    "acknowledged", id, queue}`` or ``{status: "not_found", id}``."""
    args = strip_harness(args)
    tid = arg(args, 0)
    taken = _take_queued(thread.runtime, tid)
    if taken is None:
        return {"status": "not_found", "method": "acknowledge_trigger", "id": tid}
    return {
        "status": "acknowledged",
        "method": "acknowledge_trigger",
        "id": tid,
        "queue": taken["queue"],
    }


@builtin("__harness_defer_trigger")
def harness_defer_trigger(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.defer_trigger(id, target_pipeline?)``: acknowledge the queued trigger and
    record a partial handoff for ``target_pipeline`` (default ``deferred-triggers``).
    A trigger that cannot be acknowledged returns the failed acknowledgement."""
    args = strip_harness(args)
    tid = arg(args, 0)
    target = arg(args, 1)
    target = target if type(target) is str else "deferred-triggers"
    taken = _take_queued(thread.runtime, tid)
    if taken is None:
        return {
            "status": "not_found",
            "method": "defer_trigger",
            "id": tid,
            "acknowledgement": {"status": "not_found", "id": tid},
        }
    env = record_handoff(thread.runtime, target, {"trigger": taken["event"], "id": tid})
    return {"status": "deferred", "method": "defer_trigger", "id": tid, "envelope": env}


def _duration_ms(v: Any) -> int:
    if type(v) is Duration:
        return int(v.ms)
    if type(v) is int:
        return v
    if type(v) is float:
        return int(v)
    return 0


def _settling(runtime: Any, deadline_wall: int) -> bool:
    """True while something unsettled may settle by itself before ``deadline_wall``: an
    in-flight model call, or a suspended worker whose auto-resume trigger or timeout is due
    by then."""
    svc = getattr(runtime, "agent_state", None)
    if svc is not None and svc.inflight > 0:
        return True
    d = getattr(runtime, "trigger_dispatcher", None)
    if d is None:
        return False
    nxt = d.next_due_ms()
    return nxt is not None and nxt <= deadline_wall and bool(d.pending_waits())


@builtin("harness_wait_for_any_settlement", callback=True)
def harness_wait_for_any_settlement(thread: Any, *args: Any) -> Gen:
    """``harness.wait_for_any_settlement(max_duration?)``: ``{status: "settled" |
    "unsettled", timed_out, state}``. Returns at once when nothing is unsettled or when the
    remaining work cannot settle by itself (partial handoffs, queued triggers, open
    parks); otherwise waits (runtime clock, in steps of at most 50 ms) until the work
    settles or ``max_duration`` (duration or ms, default 0) passes."""
    from harnpy.runtime.scheduler import Block

    args = strip_harness(args)
    rt = thread.runtime
    limit = _duration_ms(arg(args, 0))
    deadline = rt.clock.now_ms() + max(0, limit)
    while True:
        snap = snapshot(rt)
        empty = not any(counts_of(snap).values())
        now = rt.clock.now_ms()
        if empty or now >= deadline or not _settling(rt, deadline):
            return {
                "status": "settled" if empty else "unsettled",
                "timed_out": not empty,
                "state": snap,
            }
        step = max(1, min(50, deadline - now))

        def register(w: Any, step: int = step) -> None:
            rt.scheduler.at(rt.clock.monotonic_ms() + step, lambda: w.wake(None))

        yield Block(register, "settlement")


@builtin("__harness_finalize")
def harness_finalize(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.finalize(disposition?)``: store the disposition and audit
    ``pipeline_finalized`` ``{disposition}``; returns ``{status: "finalized", method:
    "finalize", entry}``."""
    args = strip_harness(args)
    disp = arg(args, 0)
    state(thread.runtime).disposition = disp
    entry = audit(thread.runtime, "pipeline_finalized", {"disposition": disp})
    return {"status": "finalized", "method": "finalize", "entry": entry}


@builtin("__harness_spawn_settlement_agent")
def harness_spawn_settlement_agent(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.spawn_settlement_agent(unsettled, return_value)``: harnpy has no
    settlement agent; returns the typed receipt ``{status: "unsupported", method:
    "spawn_settlement_agent", reason, counts, return_value}`` so ``on_finish_drain``
    surfaces the gap instead of dropping the work."""
    args = strip_harness(args)
    unsettled = arg(args, 0)
    counts = counts_of(unsettled) if type(unsettled) is dict else None
    return {
        "status": "unsupported",
        "method": "spawn_settlement_agent",
        "reason": "the settlement agent is not available in harnpy",
        "counts": counts,
        "return_value": arg(args, 1),
    }


@builtin("__harness_current_pipeline_id")
def harness_current_pipeline_id(thread: Any, *args: Any) -> Any:
    """``harness.current_pipeline_id()``: nil (harnpy has no mutation session run id)."""
    return None


@builtin("__harness_resume_subagent", callback=True)
def harness_resume_subagent(thread: Any, *args: Any) -> Gen:
    """``harness.resume_subagent(handle, input?)``: ``resume_agent(handle, input?)``; with
    an input and a worker that is not suspended, ``send_input(handle, input)``."""
    args = strip_harness(args)
    resume = BUILTINS.get("resume_agent")
    if resume is None:
        raise runtime_error("harness.resume_subagent: resume_agent is not available")
    from harnpy.runtime.errors import HarnError

    if len(args) < 2:
        return (yield CallRequest(resume, [arg(args, 0)]))
    try:
        return (yield CallRequest(resume, [args[0], args[1]]))
    except HarnError as e:
        if "not suspended" not in e.message or "send_input" not in BUILTINS:
            raise
    return (yield CallRequest(BUILTINS["send_input"], [args[0], args[1]]))


@builtin("__harness_cancel_subagent", callback=True)
def harness_cancel_subagent(thread: Any, *args: Any) -> Gen:
    """``harness.cancel_subagent(handle, reason?)``: ``close_agent(handle)``."""
    args = strip_harness(args)
    close = BUILTINS.get("close_agent")
    if close is None:
        raise runtime_error("harness.cancel_subagent: close_agent is not available")
    return (yield CallRequest(close, [arg(args, 0)]))


@builtin("lifecycle_audit_log_take")
def lifecycle_audit_log_take(thread: Any, *args: Any) -> list[Any]:
    """``lifecycle_audit_log_take(harness?)``: the audit entries so far, then clear the log
    (2.16; the std/lifecycle export of the same name wraps
    ``pipeline_lifecycle_audit_log_take``)."""
    return BUILTINS["pipeline_lifecycle_audit_log_take"].fn(thread)  # type: ignore[no-any-return]


@builtin("lifecycle_audit_log_snapshot")
def lifecycle_audit_log_snapshot(thread: Any, *args: Any) -> list[Any]:
    """``lifecycle_audit_log_snapshot(harness?)``: the audit entries, kept (2.16)."""
    return BUILTINS["pipeline_lifecycle_audit_log_snapshot"].fn(thread)  # type: ignore[no-any-return]


@builtin("__io_println")
def io_println(thread: Any, *args: Any) -> None:
    """``__io_println(v)``: ``println`` (the host stdio primitive some fixtures call)."""
    BUILTINS["println"].fn(thread, *args)


@builtin("__lifecycle_span_start")
def lifecycle_span_start(thread: Any, *args: Any) -> dict[str, Any]:
    """``__lifecycle_span_start(name)``: open a ``fn_call`` trace span nested in the current
    one (``with_telemetry``); returns the span dict of ``trace_start``."""
    args = strip_harness(args)
    name = arg(args, 0)
    return BUILTINS["trace_start"].fn(  # type: ignore[no-any-return]
        thread, name if type(name) is str else display(name), {"kind": "fn_call"}
    )


@builtin("__lifecycle_span_end")
def lifecycle_span_end(thread: Any, *args: Any) -> Any:
    """``__lifecycle_span_end(span)``: close a span of ``__lifecycle_span_start`` (and any
    span opened inside it) without a log record; it is kept in ``trace_spans()`` while
    tracing is enabled. Returns the finished span (nil for a non-span)."""
    args = strip_harness(args)
    span = arg(args, 0)
    if type(span) is not dict or "span_id" not in span:
        return None
    rt = thread.runtime
    stack = getattr(rt, "trace_stack", None) or []
    ids = [s.get("span_id") for s in stack]
    if span["span_id"] in ids:
        del stack[ids.index(span["span_id"]) :]
    end = rt.clock.now_ms()
    done = dict(span)
    done["end_ms"] = end
    start = span.get("start_ms")
    done["duration_ms"] = end - start if type(start) is int else 0
    if getattr(rt, "trace_enabled", False):
        finished = getattr(rt, "trace_finished", None)
        if finished is None:
            finished = []
            rt.trace_finished = finished
        finished.append(done)
    return done


__all__ = [
    "BUCKETS",
    "PipelineLifecycle",
    "counts_of",
    "finish_pending",
    "record_handoff",
    "run_finish",
    "snapshot",
    "state",
    "summary_of",
]


# Run the finish lifecycle after every main program (registered with the runtime).
from harnpy.runtime import extensions as _extensions  # noqa: E402

_extensions.PROGRAM_FINISH.append(run_finish)
