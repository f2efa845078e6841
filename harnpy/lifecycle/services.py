"""The per-runtime record of agent services: LLM host, workers, events and sessions.

One :class:`AgentServices` hangs off each :class:`~harnpy.runtime.runtime.Runtime` as
``runtime.agent_state`` (created on first use by :func:`services`). It is host state, not
snapshot data: a worker's *thread* is snapshot data, its Python record here is metadata that
the lifecycle layer persists separately (lifecycle.md 3.6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harnpy.lifecycle.workers import WorkerRecord
    from harnpy.llm import LlmHost

#: A run-event sink (lifecycle.md 9.1): ``sink(event_type, data)`` gets one observable event
#: of the run -- ``tool_call``, ``tool_result``, ``hook`` -- whose ``data`` is a dict of Harn
#: values (the sink converts them). ``harnpy run --resume --json`` installs one that writes
#: NDJSON envelopes (:class:`harnpy.resume_cli.JsonEvents`).
RunEventSink = Callable[[str, dict[str, Any]], None]


class AgentServices:
    """Agent state of one runtime.

    Attributes:
        runtime: the owning runtime.
        workers: worker id -> :class:`~harnpy.lifecycle.workers.WorkerRecord`.
        worker_events: worker lifecycle events, oldest first (lifecycle.md 12), each
            ``{event, status, worker_id, worker: {id, name, task, mode, status}, at}``.
        event_listeners: callables run with each new worker event (the session-hook layer
            subscribes here to fire ``WorkerSpawned``... hooks).
        session_events: agent events tagged with their session id (``agent_capture_events``).
        sessions: session id -> latest transcript dict of the session (or of the loop
            using it); see :mod:`harnpy.lifecycle.sessions`.
        session_lineage: session id -> ``{parent_id, child_ids, branched_at_event_index}``.
        audit_log: entries written by ``harness.emit_audit`` (``{seq, kind, payload,
            pipeline_id}``, lifecycle.md 2.16).
        mock_scopes: saved mock-provider states of enclosing ``with_llm_script`` scopes.
        harness: the cached ``Harness`` value (built on first use).
        inflight: model calls submitted and not answered yet.
        ids: the runtime's time-ordered UUIDv7 source (worker and session ids).
        run_events: the run-event sink (:data:`RunEventSink`), or None (the default: the
            agent loop and the hook layer then build no event at all; see
            :func:`run_event_sink`).
        llm_listeners: callables run with every model answer (an
            :class:`~harnpy.llm.types.LlmResponse`) as it arrives (``harnpy serve`` records
            per-call metadata and token usage this way).
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self._llm: LlmHost | None = None
        self.workers: dict[str, WorkerRecord] = {}
        self.worker_events: list[dict[str, Any]] = []
        self.event_listeners: list[Callable[[dict[str, Any]], None]] = []
        self.session_events: list[dict[str, Any]] = []
        self.sessions: dict[str, Any] = {}
        self.session_lineage: dict[str, dict[str, Any]] = {}
        self.audit_log: list[dict[str, Any]] = []
        self.audit_seq = 0
        self.mock_scopes: list[dict[str, Any]] = []
        self.harness: Any = None
        self.inflight = 0
        from harnpy.lifecycle._common import IdSource

        self.ids = IdSource()
        self.run_events: RunEventSink | None = None
        self.llm_listeners: list[Callable[[Any], None]] = []

    @property
    def llm(self) -> LlmHost:
        """The runtime's :class:`~harnpy.llm.LlmHost`, created on first use.

        ``runtime.llm_cli_options`` (set by ``harnpy run --llm-mock FILE`` /
        ``--llm-mock-record FILE``) loads a fixture or enables recording.

        Raises:
            LlmError: ``config`` when the fixture file cannot be read.
        """
        if self._llm is None:
            from harnpy.llm import LlmHost, load_mock_jsonl

            opts = getattr(self.runtime, "llm_cli_options", None) or {}
            fixture = load_mock_jsonl(opts["mock_file"]) if opts.get("mock_file") else None
            self._llm = LlmHost(fixture=fixture, record_path=opts.get("record_file"))
        return self._llm

    def emit_session_event(self, session_id: Any, event: dict[str, Any]) -> None:
        """Append ``event`` (a Harn dict) tagged with ``session_id`` to the session log."""
        self.session_events.append({**event, "session_id": session_id})

    def audit(self, kind: str, payload: Any, pipeline_id: Any = None) -> dict[str, Any]:
        """Append one audit entry (``harness.emit_audit``) and return it."""
        self.audit_seq += 1
        entry = {
            "seq": self.audit_seq,
            "kind": kind,
            "payload": payload,
            "pipeline_id": pipeline_id,
        }
        self.audit_log.append(entry)
        return entry


def run_event_sink(runtime: Any) -> RunEventSink | None:
    """The run-event sink of ``runtime``, or None when no observer is installed (the common
    case; reporters check this first so that an unobserved run builds no event data). Never
    creates the runtime's :class:`AgentServices`."""
    svc = getattr(runtime, "agent_state", None)
    return None if svc is None else svc.run_events


def services(runtime: Any) -> AgentServices:
    """The :class:`AgentServices` of ``runtime`` (created and attached on first use)."""
    svc = getattr(runtime, "agent_state", None)
    if svc is None:
        svc = AgentServices(runtime)
        runtime.agent_state = svc
    return svc
