"""Agent workers: cooperatively scheduled agent loops with a registry (lifecycle.md 1-3, 12).

A worker is an evaluator :class:`~harnpy.runtime.thread.Thread` whose bottom frame runs
``__agent_worker_main(state)`` of ``std/agent/_loop`` (so its whole state is frames and
Harn values), plus a :class:`WorkerRecord` in the runtime's registry
(``services(runtime).workers``) holding the metadata the spec's WorkerSummary shows.

Builtins: ``spawn_agent(config)``, ``sub_agent_run(task, options?)``, ``wait_agent(h |
[h])``, ``send_input(h, task)``, ``worker_trigger(h, payload)``, ``list_agents()``,
``close_agent(h)``, ``agent_lifecycle_tools(registry?, options?)``, ``worker_events()``;
each also accepts a leading Harness argument. ``h`` is a summary dict, a worker id or a
worker snapshot path.

Statuses (1.1): ``running`` -> ``completed`` | ``failed`` | ``cancelled``, ``suspended``
when the loop parks (model-issued ``agent_await_resumption``, T3), and ``awaiting`` when a
retriggerable worker (``carry: {retriggerable: true}``) ends a cycle (T8; not terminal:
``worker_trigger`` (T13) or ``send_input`` (T12) start the next cycle, ``close_agent``
cancels it). Worker events (12) go to ``services(runtime).worker_events`` and to every
callable in ``event_listeners`` (the hook machinery subscribes there).

Parking blocks the worker's thread inside the control builtin ``__agent_park`` with its
waker kept on the record (``park_waker``); suspending, resuming, snapshots and auto-resume
waits are :mod:`harnpy.lifecycle.suspend`'s (:func:`resume_parked` is the bare warm-resume
delivery, kept for tests). A worker is *busy* while it runs, and also while it is
``suspended`` by ``suspend_agent`` but has not reached its turn boundary yet (lifecycle.md
13 Q20): ``wait_agent`` returns once it is not busy — so also at ``awaiting`` (harnpy
decision; lifecycle.md 2.6 has the reference keep waiting through ``awaiting``, which in a
cooperative scheduler blocks forever unless another thread triggers the worker).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from harnpy.lifecycle._common import (
    arg,
    error_text,
    loop_function,
    now_rfc3339,
    push_call,
    require_instruction_call,
    strip_harness,
    thrown,
)
from harnpy.lifecycle.agents import current_worker_id, new_state
from harnpy.lifecycle.services import services
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnRuntimeError
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib.registry import builtin

TERMINAL = ("completed", "failed", "cancelled", "stopped", "interrupted")
#: Bridge status strings of worker events (lifecycle.md 12).
EVENT_STATUS = {
    "WorkerSpawned": "running",
    "WorkerProgressed": "progressed",
    "WorkerWaitingForInput": "awaiting_input",
    "WorkerCompleted": "completed",
    "WorkerFailed": "failed",
    "WorkerCancelled": "cancelled",
    "WorkerSuspended": "suspended",
    "WorkerResumed": "running",
}
TRANSCRIPT_MODES = ("inherit", "fork", "reset", "compact")


def lifecycle_error(message: str) -> HarnRuntimeError:
    """A lifecycle runtime error whose message is exactly ``message`` (1.3)."""
    return HarnRuntimeError(message, "E410")


def state_dir() -> str:
    """``HARN_WORKER_STATE_DIR`` or ``.harn/workers`` (relative to the working directory)."""
    return os.environ.get("HARN_WORKER_STATE_DIR") or os.path.join(".harn", "workers")


class WorkerRecord:
    """Metadata of one worker (the WorkerSummary fields of lifecycle.md 3.1 and the
    scheduling links). ``thread`` is the running evaluator thread (None once finished);
    ``waiters`` are callbacks run when the status leaves ``running``; ``pending_error`` is
    re-raised by the first ``wait_agent`` after the worker's task raised."""

    def __init__(
        self,
        runtime: Any,
        *,
        name: str,
        task: str,
        mode: str,
        session_id: str,
        parent_worker_id: str | None,
        config: dict[str, Any],
        carry: dict[str, Any],
        execution: dict[str, Any],
        audit: dict[str, Any],
    ) -> None:
        svc = services(runtime)
        self.runtime = runtime
        self.id = f"worker_{svc.ids.uuid7(runtime)}"
        self.name = name
        self.task = task
        self.mode = mode
        self.status = "running"
        self.history = [task]
        now = now_rfc3339(runtime)
        self.created_at = now
        self.started_at = now
        self.finished_at: str | None = None
        self.awaiting_started_at: str | None = None
        self.session_id = session_id
        self.parent_worker_id = parent_worker_id
        self.parent_session_id: str | None = None
        self.config = config
        self.carry = carry
        self.execution = execution
        self.audit = audit
        self.result: Any = None
        self.error: str | None = None
        self.transcript: Any = None
        self.suspension: dict[str, Any] | None = None
        self.snapshot_path = os.path.join(state_dir(), f"{self.id}.json")
        self.thread: Any = None
        self.waiters: list[Callable[[], None]] = []
        self.pending_error: HarnError | None = None
        self.park_waker: Any = None
        #: Set by ``suspend_agent`` (suspend layer); honoured at the next turn boundary.
        self.suspend_request: dict[str, Any] | None = None

    # ---- views

    def summary(self) -> dict[str, Any]:
        """The WorkerSummary dict (lifecycle.md 3.1; ``suspension`` only while suspended).
        ``transcript`` is added because upstream fixtures read ``summary.transcript``."""
        out: dict[str, Any] = {
            "_type": "agent_handle",
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "mode": self.mode,
            "status": self.status,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "awaiting_started_at": self.awaiting_started_at,
            "history": list(self.history),
            "request": self.request(),
            "provenance": {
                "worker_id": self.id,
                "worker_name": self.name,
                "mode": self.mode,
                "parent_worker_id": self.parent_worker_id,
                "parent_stage_id": None,
                "session_id": self.session_id,
                "parent_session_id": self.parent_session_id,
                "snapshot_path": self.snapshot_path,
                "run_id": None,
                "run_path": None,
            },
            "result": self.result,
            "error": self.error,
            "artifact_count": 0,
            "has_transcript": self.transcript is not None,
            "parent_worker_id": self.parent_worker_id,
            "parent_stage_id": None,
            "child_run_id": None,
            "child_run_path": None,
            "execution": dict(self.execution),
            "snapshot_path": self.snapshot_path,
            "audit": dict(self.audit),
            "transcript": self.transcript,
        }
        if self.suspension is not None:
            out["suspension"] = dict(self.suspension)
        return out

    def request(self) -> dict[str, Any]:
        """The worker's original request (Harn's worker provenance): ``{task, system,
        payload, research_questions, action_items, workflow_stages, verification_steps}``
        — ``task`` is the first task (``send_input`` does not change it), the rest come
        from the options the worker was started with (``request`` is the payload)."""
        spec: dict[str, Any] = self.config.get("spec") or {}
        raw = spec.get("options")
        opts: dict[str, Any] = raw if type(raw) is dict else {}
        task = spec.get("task") if type(spec.get("task")) is str else self.task

        def listed(key: str) -> list[Any]:
            v = opts.get(key)
            return list(v) if type(v) is list else ([] if v is None else [v])

        return {
            "task": task,
            "system": spec.get("system"),
            "payload": opts.get("request"),
            "research_questions": listed("research_questions"),
            "action_items": listed("action_items"),
            "workflow_stages": listed("workflow_stages"),
            "verification_steps": listed("verification_steps"),
        }

    def brief(self) -> dict[str, Any]:
        """``{id, name, task, mode, status}`` (worker event payloads)."""
        return {
            "id": self.id,
            "name": self.name,
            "task": self.task,
            "mode": self.mode,
            "status": self.status,
        }

    # ---- transitions

    def busy(self) -> bool:
        """True while the worker runs, or is ``suspended`` but still mid-turn (a
        ``suspend_agent`` request waiting for the next turn boundary)."""
        if self.status == "running":
            return True
        return self.status == "suspended" and self.thread is not None and self.park_waker is None

    def settle(self) -> None:
        """Run the waiters once the worker is no longer busy (see :meth:`busy`)."""
        if self.busy():
            return
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            w()


def emit(runtime: Any, rec: WorkerRecord, event: str, **extra: Any) -> dict[str, Any]:
    """Record worker event ``event`` and notify the listeners; returns the event dict
    ``{event, status, worker_id, worker, at, ...extra}``."""
    svc = services(runtime)
    ev = {
        "event": event,
        "status": EVENT_STATUS.get(event, rec.status),
        "worker_id": rec.id,
        "worker": rec.brief(),
        "at": now_rfc3339(runtime),
        **extra,
    }
    svc.worker_events.append(ev)
    for listener in list(svc.event_listeners):
        listener(ev)
    return ev


def resolve(runtime: Any, h: Any, where: str) -> WorkerRecord:
    """The worker a handle names (summary dict, id string).

    Raises:
        HarnRuntimeError: ``agent handle dict is missing an id field``, ``expected agent
            handle or worker id``, ``unknown worker: <id>`` (1.3).
    """
    if type(h) is dict:
        wid = h.get("id")
        if wid is None:
            raise lifecycle_error("agent handle dict is missing an id field")
    elif type(h) is str:
        wid = h
    elif h is None:
        raise lifecycle_error(f"{where}: missing worker handle")
    else:
        raise lifecycle_error("expected agent handle or worker id")
    wid = wid if type(wid) is str else display(wid)
    rec = services(runtime).workers.get(wid)
    if rec is None:
        base = os.path.basename(wid)
        if base.endswith(".json"):
            rec = services(runtime).workers.get(base[:-5])
    if rec is None:
        raise lifecycle_error(f"unknown worker: {wid}")
    if rec.status == "suspended":
        from harnpy.lifecycle.suspend import refresh_from_disk

        refresh_from_disk(runtime, rec)  # another process may have resumed it
    return rec


# ------------------------------------------------------------------------ starting


def start(thread: Any, rec: WorkerRecord, state: dict[str, Any]) -> None:
    """Start the worker's loop as a new scheduled thread named after the worker id."""
    from harnpy.stdlib.concurrency import start_thread

    rt = thread.runtime
    fn = loop_function(rt, "__agent_worker_main")
    th = start_thread(rt, fn, [state], rec.id)
    th.worker_id = rec.id
    rec.thread = th

    def on_done(result: Any, error: HarnError | None) -> None:
        finished(rt, rec, th, result, error)

    th.on_done = on_done
    rt.scheduler.add(th)


def finished(
    runtime: Any, rec: WorkerRecord, th: Any, result: Any, error: HarnError | None
) -> None:
    """The worker's thread ended: record the outcome, emit the event, wake waiters.

    T7 ``completed`` (``WorkerCompleted``, ``finished_at`` set); T8 ``awaiting`` when
    ``carry.retriggerable`` (``WorkerWaitingForInput``, status string ``awaiting_input``;
    ``awaiting_started_at`` set, ``finished_at`` nil; the cycle's result is kept for the
    next ``worker_trigger``); T9 ``failed`` (``WorkerFailed``, also for a retriggerable
    worker). The final metadata is persisted either way (``carry.persist_state``)."""
    if rec.thread is not th or rec.status == "cancelled":
        return
    rec.thread = None
    rec.park_waker = None
    rec.suspension = None
    rec.awaiting_started_at = None
    rec.finished_at = now_rfc3339(runtime)
    if error is not None:
        rec.status = "failed"
        rec.error = error_text(error)
        rec.pending_error = error
        emit(runtime, rec, "WorkerFailed", error=rec.error)
    else:
        loop = result if type(result) is dict else {"status": "done", "text": result}
        rec.transcript = loop.get("transcript", rec.transcript)
        rec.result = {
            "status": loop.get("status"),
            "summary": loop.get("visible_text", loop.get("text")),
            "text": loop.get("text"),
            "visible_text": loop.get("visible_text"),
            "iterations": (loop.get("llm") or {}).get("iterations"),
            "llm": loop.get("llm"),
            "tools": loop.get("tools"),
            "session_id": loop.get("session_id"),
        }
        if rec.mode == "stage":
            # a delegated stage's result carries the loop's own result and transcript
            # (Harn's worker.result.result / worker.result.transcript)
            rec.result["result"] = {k: v for k, v in loop.items() if k != "transcript"}
            rec.result["transcript"] = loop.get("transcript")
        if rec.mode == "sub_agent":
            # a background sub_agent_run's result is the sub-agent envelope (Harn); its
            # transcript stays the worker's own (rec.transcript), not a copy in the result
            from harnpy.lifecycle.envelopes import build

            spec = rec.config.get("spec") if type(rec.config) is dict else None
            opts = spec.get("options") if type(spec) is dict else None
            provider = opts.get("provider") if type(opts) is dict else None
            rec.result.update({**build(loop, provider), "transcript": None})
        if loop.get("status") in ("provider_error", "failed"):
            rec.status = "failed"
            err = loop.get("error")
            rec.error = (
                err.get("message")
                if type(err) is dict
                else f"agent loop ended with {loop.get('status')}"
            )
            emit(runtime, rec, "WorkerFailed", error=rec.error)
        elif rec.carry.get("retriggerable"):
            rec.status = "awaiting"
            rec.awaiting_started_at = rec.finished_at
            rec.finished_at = None
            emit(runtime, rec, "WorkerWaitingForInput")
        else:
            rec.status = "completed"
            emit(runtime, rec, "WorkerCompleted")
    from harnpy.lifecycle.suspend import on_finished

    on_finished(runtime, rec)
    rec.settle()


def _loop_options(options: dict[str, Any], policy_tools: Any) -> dict[str, Any]:
    opts = dict(options)
    if policy_tools is not None:
        policy = dict(opts.get("policy") or {})
        policy["tools"] = policy_tools
        opts["policy"] = policy
    return opts


def _carry(raw: Any, where: str) -> dict[str, Any]:
    carry = raw if type(raw) is dict else {}
    mode = carry.get("transcript_mode", carry.get("transcript", "inherit"))
    if type(mode) is not str or mode not in TRANSCRIPT_MODES:
        raise thrown(
            f"{where}: carry.transcript_mode must be one of inherit, fork, reset, compact; "
            f"got `{display(mode)}`"
        )
    return {
        "artifact_mode": carry.get("artifact_mode", carry.get("artifacts", "inherit")),
        "transcript_mode": mode,
        "context_policy": carry.get("context_policy"),
        "resume_workflow": carry.get("resume_workflow", True),
        "persist_state": carry.get("persist_state", True),
        "retriggerable": carry.get("retriggerable", False),
    }


def _launch(
    thread: Any,
    *,
    task: str,
    name: str,
    mode: str,
    system: Any,
    options: dict[str, Any],
    session_id: str,
    carry: dict[str, Any],
    execution: Any,
    audit: Any,
    config_extra: dict[str, Any] | None = None,
) -> WorkerRecord:
    rt = thread.runtime
    svc = services(rt)
    spec = {
        "name": name,
        "task": task,
        "system": system,
        "options": options,
        "returns_schema": options.get("returns_schema"),
        "session_id": session_id,
        "parent_session_id": None,
    }
    rec = WorkerRecord(
        rt,
        name=name,
        task=task,
        mode=mode,
        session_id=session_id,
        parent_worker_id=current_worker_id(thread),
        config={"mode": mode, "spec": spec, **(config_extra or {})},
        carry=carry,
        execution={
            "cwd": (execution or {}).get("cwd") if type(execution) is dict else None,
            "env": (execution or {}).get("env") if type(execution) is dict else None,
            "worktree": (execution or {}).get("worktree") if type(execution) is dict else None,
        },
        audit={
            "session_id": session_id,
            "parent_session_id": None,
            "mutation_scope": (audit or {}).get("mutation_scope") if type(audit) is dict else None,
            "approval_policy": (audit or {}).get("approval_policy")
            if type(audit) is dict
            else None,
        },
    )
    state = new_state(
        rt, task, system, {**options, "session_id": session_id}, worker_id=rec.id, where=mode
    )
    svc.workers[rec.id] = rec
    from harnpy.lifecycle.suspend import on_spawned

    on_spawned(rt, rec)
    start(thread, rec, state)
    emit(rt, rec, "WorkerSpawned")
    return rec


# ------------------------------------------------------------------------- builtins


@builtin("spawn_agent", aliases=("__spawn_agent",), control=True)
def spawn_agent(thread: Any, *args: Any) -> Any:
    """``spawn_agent(config)``: start a worker (T1) and return its summary (``status:
    "running"``, or the settled summary with ``wait: true``).

    ``config``: ``task`` (required) and ``node`` (a stage worker running one agent loop;
    ``node`` holds agent_loop options such as ``system``, ``provider``, ``model``, ``tools``,
    ``max_iterations``), optional ``name`` (default ``"worker"``), ``wait``, ``options``,
    ``tools`` (tool-name capability ceiling, not empty), ``policy``, ``carry``,
    ``execution``, ``audit``. Workflow workers (``graph``) are not supported.
    ``options.resume_when`` (ResumeConditions) is validated (``HARN-SUS-002``) and kept in
    the worker's config; the worker does not start parked (lifecycle.md 13 Q15).
    """
    require_instruction_call(thread, "spawn_agent")
    args = strip_harness(args)
    config = arg(args, 0)
    if config is None:
        raise thrown("spawn_agent: missing config")
    if type(config) is not dict:
        raise thrown("spawn_agent: config must be a dict")
    task = config.get("task")
    if type(task) is not str or not task.strip():
        raise thrown("spawn_agent: config.task is required")
    node, graph = config.get("node"), config.get("graph")
    if node is None and graph is None:
        raise thrown("spawn_agent: config requires either graph or node")
    if node is None:
        raise thrown("spawn_agent: workflow workers (config.graph) are not supported by harnpy")
    if type(node) is not dict:
        raise thrown("spawn_agent: config.node must be a dict of agent_loop options")
    tools_ceiling = config.get("tools")
    if tools_ceiling is not None and (type(tools_ceiling) is not list or not tools_ceiling):
        raise thrown("spawn_agent: config.tools must be a non-empty list of tool names")
    options = {**{k: v for k, v in node.items() if k not in ("system", "options")}}
    if type(node.get("options")) is dict:
        options.update(node["options"])
    resume_when = None
    if type(config.get("options")) is dict:
        options.update({k: v for k, v in config["options"].items() if k != "resume_when"})
        if config["options"].get("resume_when") is not None:
            from harnpy.lifecycle.resume_conditions import parse

            # validated and stored, never armed (lifecycle.md 13 Q15): HARN-SUS-002
            resume_when = parse(config["options"]["resume_when"])
    if config.get("policy") is not None:
        options["policy"] = config["policy"]
    if config.get("permissions") is not None:
        options["permissions"] = config["permissions"]
    if type(node.get("model_policy")) is dict:
        # Harn's stage nodes keep the model options under model_policy
        options = {
            **node["model_policy"],
            **{k: v for k, v in options.items() if k != "model_policy"},
        }
    options = _loop_options(options, tools_ceiling)
    raw_name = config.get("name")
    name = raw_name if type(raw_name) is str else "worker"
    session_id = options.get("session_id")
    svc = services(thread.runtime)
    if type(session_id) is not str:
        session_id = f"worker_session_{svc.ids.uuid7(thread.runtime)}"
    rec = _launch(
        thread,
        task=task,
        name=name,
        mode="stage",
        system=node.get("system"),
        options=options,
        session_id=session_id,
        carry=_carry(config.get("carry"), "spawn_agent"),
        execution=config.get("execution"),
        audit=config.get("audit"),
        config_extra={"node": node, "resume_when": resume_when},
    )
    if config.get("wait"):
        _wait_one(thread, rec)
        return None
    return rec.summary()


@builtin("sub_agent_run", aliases=("__sub_agent_run",), control=True)
def sub_agent_run(thread: Any, *args: Any) -> Any:
    """``sub_agent_run(task, options?)`` (lifecycle.md 2.2).

    With ``background: true``: start a ``sub_agent`` worker (default name ``"sub-agent"``,
    session ``sub_agent_session_<uuidv7>`` unless ``session_id``) and return its summary.
    Otherwise run the loop in the calling thread and return ``{ok, summary, artifacts,
    evidence_added, tokens_used, budget_exceeded, session_id, transcript, data, error}``.
    Options are agent_loop's (``provider``, ``model``, ``tools``, ``max_iterations``,
    ``system``, ...) plus ``name``, ``carry``, ``allowed_tools``.
    """
    require_instruction_call(thread, "sub_agent_run")
    args = strip_harness(args)
    task, options = arg(args, 0), arg(args, 1)
    if type(task) is not str or not task.strip():
        raise thrown("sub_agent_run: task must be a non-empty string")
    if options is not None and type(options) is not dict:
        raise thrown("sub_agent_run: options must be a dict")
    opts = dict(options or {})
    rt = thread.runtime
    svc = services(rt)
    session_id = opts.get("session_id")
    if type(session_id) is not str:
        session_id = f"sub_agent_session_{svc.ids.uuid7(rt)}"
    system = opts.pop("system", None)
    background = bool(opts.pop("background", False))
    name = opts.pop("name", None)
    if not background:
        st = new_state(
            rt,
            task,
            system,
            {**opts, "session_id": session_id},
            worker_id=current_worker_id(thread),
            where="sub_agent_run",
        )
        push_call(thread, loop_function(rt, "__agent_sub_agent_inline"), [st])
        return None
    rec = _launch(
        thread,
        task=task,
        name=name if type(name) is str else "sub-agent",
        mode="sub_agent",
        system=system,
        options=opts,
        session_id=session_id,
        carry=_carry(opts.get("carry"), "sub_agent_run"),
        execution=opts.get("execution"),
        audit=opts.get("audit"),
    )
    return rec.summary()


def _wait_one(thread: Any, rec: WorkerRecord) -> None:
    """Block ``thread`` until ``rec`` settles; deliver its summary (or its error)."""
    waker = block_control(thread, f"worker {rec.id}")

    def done() -> None:
        err = rec.pending_error
        if err is not None:
            rec.pending_error = None
            waker.fail(err)
        else:
            waker.wake(rec.summary())

    rec.waiters.append(done)
    rec.settle()


def _not_self(thread: Any, rec: WorkerRecord) -> None:
    """A worker that waits for itself would wait forever (every thread blocked: a global
    deadlock); it is a catchable error instead.

    Raises:
        HarnRuntimeError: ``wait_agent: worker <id> cannot wait for itself``.
    """
    if rec.thread is not None and rec.thread is thread and rec.busy():
        raise lifecycle_error(
            f"wait_agent: worker {rec.id} cannot wait for itself (it is the calling worker; "
            "it would never finish)"
        )


@builtin("wait_agent", aliases=("__wait_agent",), control=True)
def wait_agent(thread: Any, *args: Any) -> Any:
    """``wait_agent(h | [h])`` (2.6): block until the worker is no longer running (nor
    mid-turn with a pending suspend, 13 Q20) and return its summary (a list gives the
    summaries in input order). It returns at ``suspended``, ``completed``, ``failed``,
    ``cancelled``, ``interrupted`` and — unlike the reference, which keeps blocking there —
    ``awaiting`` (a retriggerable worker between cycles; ``worker_trigger`` it and wait
    again for the next cycle). The first wait on a worker whose task raised re-raises that
    error.

    Raises:
        HarnRuntimeError: ``wait_agent: worker <id> cannot wait for itself``, the handle
            errors of :func:`resolve`, or the worker's own error (see above).
    """
    require_instruction_call(thread, "wait_agent")
    args = strip_harness(args)
    h = arg(args, 0)
    rt = thread.runtime
    if type(h) is list:
        recs = [resolve(rt, x, "wait_agent") for x in h]
        for r in recs:
            _not_self(thread, r)
        if not any(r.busy() for r in recs):
            for r in recs:
                if r.pending_error is not None:
                    err, r.pending_error = r.pending_error, None
                    raise err
            return [r.summary() for r in recs]
        waker = block_control(thread, "workers")
        left = [sum(1 for r in recs if r.busy())]

        def one_done() -> None:
            left[0] -= 1
            if left[0] == 0:
                for r in recs:
                    if r.pending_error is not None:
                        err, r.pending_error = r.pending_error, None
                        waker.fail(err)
                        return
                waker.wake([r.summary() for r in recs])

        for r in recs:
            if r.busy():
                r.waiters.append(one_done)
        return None
    rec = resolve(rt, h, "wait_agent")
    _not_self(thread, rec)
    if not rec.busy():
        if rec.pending_error is not None:
            err, rec.pending_error = rec.pending_error, None
            raise err
        return rec.summary()
    _wait_one(thread, rec)
    return None


@builtin("send_input", aliases=("__send_input",))
def send_input(thread: Any, *args: Any) -> dict[str, Any]:
    """``send_input(h, task)`` (lifecycle.md 2.7, T12): restart a settled worker
    (``completed``, ``awaiting``, ``failed``, ``cancelled``, ``interrupted``...) with new task
    text; returns its summary (``status: "running"``, ``result`` and ``error`` cleared).

    The transcript carries over per ``carry.transcript_mode`` (inherit/fork: keep, reset:
    start fresh, compact: keep a digest); the task is appended to ``history``; the snapshot
    is written (``carry.persist_state``); ``WorkerSpawned`` is emitted. Also
    ``send_input(harness, h, task)``.

    Raises:
        HarnRuntimeError: ``send_input: requires worker handle and task text``,
            ``send_input: task text must not be empty``, ``send_input: worker <id> is still
            running``, ``send_input: worker <id> is suspended; resume it with
            resume_agent`` (13 Q6), and the handle errors of :func:`resolve`.
    """
    args = strip_harness(args)
    if len(args) < 2:
        raise lifecycle_error("send_input: requires worker handle and task text")
    rt = thread.runtime
    rec = resolve(rt, args[0], "send_input")
    text = args[1] if type(args[1]) is str else display(args[1])
    if not text.strip():
        raise lifecycle_error("send_input: task text must not be empty")
    if rec.status == "running":
        raise lifecycle_error(f"send_input: worker {rec.id} is still running")
    if rec.status == "suspended":
        raise lifecycle_error(
            f"send_input: worker {rec.id} is suspended; resume it with resume_agent"
        )
    _restart(thread, rec, text, keep_result=False, where="send_input")
    emit(rt, rec, "WorkerSpawned")
    return rec.summary()


def trigger_payload_text(payload: Any) -> str:
    """The task text of a ``worker_trigger`` payload (2.8): a string as is, any other value
    as compact JSON (keys sorted; values JSON cannot hold as in ``json_stringify``)."""
    if type(payload) is str:
        return payload
    from harnpy.stdlib.jsonlib import dumps

    try:
        return dumps(payload)
    except (HarnError, TypeError, ValueError):
        return display(payload)


@builtin("worker_trigger", aliases=("__worker_trigger",))
def worker_trigger(thread: Any, *args: Any) -> dict[str, Any]:
    """``worker_trigger(h, payload)`` (lifecycle.md 2.8, T13): start the next cycle of a
    retriggerable worker (``carry: {retriggerable: true}``) that is ``awaiting``; returns its
    summary (``status: "running"``). Also ``worker_trigger(harness, h, payload)``.

    ``payload`` becomes the task text (:func:`trigger_payload_text`: strings as is, other
    values as JSON), appended to ``history``; the transcript carries over per
    ``carry.transcript_mode`` as for ``send_input``; the previous cycle's ``result`` is
    kept until this cycle ends. Events: ``WorkerProgressed`` (status string
    ``progressed``) then ``WorkerSpawned`` (``running``); the snapshot is written
    (``carry.persist_state``).

    Raises:
        HarnRuntimeError: ``worker_trigger: requires worker handle and payload``,
            ``worker_trigger: payload must not be empty`` (nil, or blank text),
            ``worker_trigger: worker <id> is not retriggerable``, ``worker_trigger: worker
            <id> is still running``, ``worker_trigger: worker <id> is not awaiting
            (status=<s>)``, and the handle errors of :func:`resolve`.
    """
    args = strip_harness(args)
    if len(args) < 2:
        raise lifecycle_error("worker_trigger: requires worker handle and payload")
    rt = thread.runtime
    rec = resolve(rt, args[0], "worker_trigger")
    text = "" if args[1] is None else trigger_payload_text(args[1])
    if not text.strip():
        raise lifecycle_error("worker_trigger: payload must not be empty")
    if not rec.carry.get("retriggerable"):
        raise lifecycle_error(f"worker_trigger: worker {rec.id} is not retriggerable")
    if rec.status == "running":
        raise lifecycle_error(f"worker_trigger: worker {rec.id} is still running")
    if rec.status != "awaiting":
        raise lifecycle_error(
            f"worker_trigger: worker {rec.id} is not awaiting (status={rec.status})"
        )
    _restart(thread, rec, text, keep_result=True, where="worker_trigger")
    emit(rt, rec, "WorkerProgressed")
    emit(rt, rec, "WorkerSpawned")
    return rec.summary()


def _restart(thread: Any, rec: WorkerRecord, text: str, *, keep_result: bool, where: str) -> None:
    """Start a new run of a settled worker with task ``text`` (T12 / T13): carry policy for
    the transcript, ``history``, status ``running``, new ``started_at``, cleared
    ``finished_at`` / ``awaiting_started_at`` / ``error`` (and ``result`` unless
    ``keep_result``), snapshot written (``carry.persist_state``), loop thread started."""
    from harnpy.lifecycle.suspend import on_spawned
    from harnpy.lifecycle.transcript import digest, new_transcript

    rt = thread.runtime
    spec = rec.config.get("spec") or {}
    mode = rec.carry.get("transcript_mode", "inherit")
    transcript = rec.transcript
    if mode == "reset":
        transcript = new_transcript()  # empty, not None: None continues the session
    elif mode == "compact" and transcript is not None:
        transcript = new_transcript(
            messages=[{"role": "user", "content": "Earlier work: " + digest(transcript)}]
        )
    state = new_state(
        rt,
        text,
        spec.get("system"),
        {**(spec.get("options") or {}), "session_id": rec.session_id},
        worker_id=rec.id,
        transcript=transcript,
        where=where,
    )
    rec.task = text
    rec.history.append(text)
    rec.status = "running"
    rec.started_at = now_rfc3339(rt)
    rec.finished_at = None
    rec.awaiting_started_at = None
    rec.error = None
    if not keep_result:
        rec.result = None
    rec.pending_error = None
    on_spawned(rt, rec)
    start(thread, rec, state)


def stop_thread(runtime: Any, rec: WorkerRecord) -> None:
    """Kill ``rec``'s Harn thread (when it has one) and forget it with its park waker and
    any pending suspend request."""
    th = rec.thread
    if th is not None:
        from harnpy.stdlib.concurrency import kill_thread

        kill_thread(runtime, th)
    rec.thread = None
    rec.park_waker = None
    rec.suspend_request = None


@builtin("list_agents", aliases=("__list_agents",))
def list_agents(thread: Any, *args: Any) -> list[dict[str, Any]]:
    """``list_agents()`` (2.9): the summaries of every worker of this run, by id (creation
    order), terminal, ``suspended`` and ``awaiting`` ones included."""
    from harnpy.lifecycle.suspend import refresh_from_disk

    workers = services(thread.runtime).workers
    for rec in list(workers.values()):
        refresh_from_disk(thread.runtime, rec)  # another process may have resumed it
    return [workers[k].summary() for k in sorted(workers)]


@builtin("close_agent", aliases=("__close_agent",))
def close_agent(thread: Any, *args: Any) -> dict[str, Any]:
    """``close_agent(h)`` (2.5, T11): stop the worker (its thread never runs again, a late
    model answer is dropped), drop its suspension, set ``status: "cancelled"`` and ``error:
    "worker cancelled"`` (``awaiting_started_at`` cleared: an ``awaiting`` worker keeps its
    last ``result``), unregister its auto-resume wait, mark its snapshot ``cancelled`` (a
    later resume raises ``HARN-SUS-010``), emit ``WorkerCancelled``. Idempotent on cancelled
    workers; any other status is accepted. Returns the summary.

    Raises:
        HarnRuntimeError: ``close_agent: worker <id> cannot close itself``, and the handle
            errors of :func:`resolve`.
    """
    args = strip_harness(args)
    rt = thread.runtime
    rec = resolve(rt, arg(args, 0), "close_agent")
    if rec.status == "cancelled":
        return rec.summary()
    if rec.thread is thread:
        raise lifecycle_error(f"close_agent: worker {rec.id} cannot close itself")
    stop_thread(rt, rec)
    rec.suspension = None
    rec.status = "cancelled"
    rec.error = "worker cancelled"
    rec.finished_at = now_rfc3339(rt)
    rec.awaiting_started_at = None
    from harnpy.lifecycle.suspend import on_closed

    on_closed(rt, rec)
    emit(rt, rec, "WorkerCancelled")
    rec.settle()
    return rec.summary()


@builtin("worker_events", aliases=("agent_worker_events",))
def worker_events(thread: Any, *args: Any) -> list[dict[str, Any]]:
    """``worker_events()``: the worker lifecycle events of this run, oldest first
    (``{event, status, worker_id, worker, at}``, lifecycle.md 12)."""
    return [dict(e) for e in services(thread.runtime).worker_events]


# --------------------------------------------------------------------------- parking


def panic_suspend(runtime: Any, rec: WorkerRecord, reason: str) -> str:
    """Suspend ``rec`` for an ``InterruptAndSuspend`` broadcast (initiator ``triggered``;
    panic broadcasts skip the Pre/PostSuspend hooks, lifecycle.md 7). Returns the outcome:
    ``suspended``, ``already_suspended`` or ``not_running``."""
    from harnpy.lifecycle.suspend import request_suspend

    if rec.status == "suspended":
        return "already_suspended"
    if rec.status != "running" or rec.thread is None:
        return "not_running"
    request_suspend(runtime, rec, reason, "triggered", None)
    return "suspended"


def resume_parked(runtime: Any, rec: WorkerRecord, payload: dict[str, Any]) -> None:
    """Deliver ``payload`` to a worker parked in this process (the bare warm resume: no
    hooks, no claim, no continuity reminder — :func:`harnpy.lifecycle.suspend.resume_gen`
    is the full ``resume_agent``). Status ``running``, suspension cleared, wait
    unregistered, ``WorkerResumed`` emitted; ``payload`` is what the blocked ``__agent_park``
    returns (see ``__agent_apply_resume``).

    Raises:
        HarnRuntimeError: when the worker is not parked in this process.
    """
    from harnpy.lifecycle.suspend import cancel_wait

    waker = rec.park_waker
    if rec.status != "suspended" or waker is None:
        raise lifecycle_error(
            f"resume_agent: worker {rec.id} has not reached its suspend checkpoint yet"
        )
    rec.park_waker = None
    rec.suspension = None
    rec.status = "running"
    rec.finished_at = None
    rec.error = None
    cancel_wait(runtime, rec)
    emit(runtime, rec, "WorkerResumed")
    waker.wake(payload)


__all__ = [
    "WorkerRecord",
    "emit",
    "panic_suspend",
    "resolve",
    "resume_parked",
    "trigger_payload_text",
]
