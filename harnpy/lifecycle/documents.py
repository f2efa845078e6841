"""The worker snapshot file's envelope as a validated shape (lifecycle.md 3.6, 3.7).

Read on every cold ``harnpy run --resume``, so it is an attrs shape (:mod:`harnpy.shapes`),
cheap to import and to check, like the evaluator snapshot's envelope
(:mod:`harnpy.runtime.snapshot_model`). The data shapes scripts see (Suspension,
ResumeConditions, worker summaries) are the pydantic models of :mod:`harnpy.lifecycle.models`,
validated at park time, off the start-up path.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from harnpy.shapes import field_problem, kind_name, min_len, shape

#: Worker modes (3.1).
WorkerMode = Literal["workflow", "stage", "sub_agent", "delegated_stage", "top_level_agent"]

#: Envelope fields the embedded evaluator snapshot may refer to (``{"$ext": name}``).
ExternalName = Literal["config", "transcript"]


@shape()
@attrs.define(kw_only=True)
class ConfigRecord:
    """``config`` of a worker snapshot (3.6 load rules): its ``mode``, and ``spec`` (the
    worker's name, task, options...) a dict when present — every reader does
    ``spec.get(...)``."""

    mode: WorkerMode
    spec: dict[str, Any] | None = None


@shape()
@attrs.define(kw_only=True)
class EmbeddedThreadRecord:
    """The worker-specific keys of ``harnpy_thread`` (its evaluator-snapshot envelope is
    checked by :func:`harnpy.runtime.snapshot.validate_document`): the frame slot the resume
    payload goes to (-1: none) and the envelope fields its frames refer to."""

    pending_slot: int
    external_names: list[ExternalName] = attrs.field(factory=list)


@shape()
@attrs.define(kw_only=True)
class LlmMockRecord:
    """``llm_mock``: the mock replies a parked worker's process had queued and its
    ``--llm-mock`` fixture. Both keys are always written (an empty queue is ``[]``, no
    fixture ``null``), so a missing one is damage, not "no replies": the queue would be
    silently dropped."""

    queue: list[dict[str, Any]]
    fixture: list[dict[str, Any]] | None


@shape()
@attrs.define(kw_only=True)
class AgentLoopStateRecord:
    """The ``agent_loop_state`` dict a parked loop's frames hold (built by
    ``harnpy.lifecycle.agents``; lifecycle.md 2.13): every key the loop primitives read
    with ``st[...]`` and its type, checked when a worker snapshot is restored so a damaged
    state is ``HARN-SUS-004`` at load, not a ``KeyError`` mid-turn. Other keys (read with
    ``.get``, or added by later versions) are not checked."""

    type_: Literal["agent_loop_state"] = attrs.field(metadata={"key": "_type"})
    system: Any
    llm_options: dict[str, Any]
    tools: list[dict[str, Any]]
    tool_format: Literal["native", "text"]
    policy: Any
    max_iterations: int
    loop_until_done: bool
    done_sentinel: str | None
    max_nudges: int
    nudge: str
    daemon: bool
    wake_interval_ms: int | None
    watch_paths: list[Any]
    persist_path: str | None
    session_id: str = attrs.field(validator=min_len(1))
    transcript: dict[str, Any]
    iteration: int
    nudges: int
    text_parts: list[Any]
    last_text: str
    input_tokens: int
    output_tokens: int
    started_ms: int
    records: list[dict[str, Any]]
    pending_calls: list[dict[str, Any]]
    reminders: list[Any]
    status: str | None
    finished: bool
    error: Any
    suspension: Any
    model: Any
    provider: Any


@shape()
@attrs.define(kw_only=True)
class TranscriptRecord:
    """A worker's restored transcript (checked after the thread is decoded, since in the
    tagged encoding its parts may be heap references): what the agent loop relies on."""

    type_: Literal["transcript"] = attrs.field(metadata={"key": "_type"})
    messages: list[dict[str, Any]]
    events: list[dict[str, Any]]
    metadata: dict[str, Any] = attrs.field(factory=dict)
    assets: list[Any] = attrs.field(factory=list)


def _check_externals(doc: dict[str, Any]) -> None:
    """Every envelope field the embedded frames refer to (``external_names``) is a dict."""
    tdoc = doc.get("harnpy_thread")
    names = tdoc.get("external_names") if type(tdoc) is dict else None
    if type(names) is not list:
        return  # no thread, or a malformed list (reported by EmbeddedThreadRecord)
    for name in names:
        if name in ("config", "transcript") and type(doc.get(name)) is not dict:
            raise field_problem(
                name,
                f"expected a dict, got {kind_name(doc.get(name))} (the worker's frames refer "
                "to it)",
            )


@shape(check=_check_externals)
@attrs.define(kw_only=True)
class WorkerSnapshotDoc:
    """The envelope of ``.harn/workers/<id>.json`` (3.6, 3.7; extra keys allowed).

    ``harnpy_thread`` is the embedded evaluator snapshot (a ``harnpy_snapshot`` document plus
    ``pending_slot``) of a parked worker, or nil when the worker has not reached a suspend
    checkpoint. Every field a resume reads is typed here, so a damaged or hand-edited file is
    refused on load (``HARN-SUS-004`` naming the field) before it is claimed; nil stands for
    a missing optional field (3.6 load rules fill in the defaults).
    """

    type_: Literal["worker_snapshot", "daemon_snapshot"] = attrs.field(metadata={"key": "_type"})
    harnpy_snapshot_version: int = 1
    id: str = attrs.field(validator=min_len(1))
    name: str = "worker"
    task: str = ""
    status: str = "interrupted"
    mode: str = "workflow"
    history: list[Any] = attrs.field(factory=list)
    config: ConfigRecord
    transcript: dict[str, Any] | None = None
    snapshot_path: str | None = None
    suspension: dict[str, Any] | None = None
    session_id: str | None = None
    parent_session_id: str | None = None
    parent_worker_id: str | None = None
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    awaiting_started_at: str | None = None
    latest_error: str | None = None
    error: str | None = None
    request: dict[str, Any] | None = None
    carry_policy: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    audit: dict[str, Any] | None = None
    park_id: str | None = None
    resume_wait: dict[str, Any] | None = None
    reminders_enabled: bool = True
    owner: dict[str, Any] | None = None
    llm_mock: LlmMockRecord | None = None
    harnpy_encoding: str | None = None
    harnpy_thread: EmbeddedThreadRecord | None = None
    #: where the transcript's lists are kept (a file beside the snapshot; checked when it is
    #: read, :func:`harnpy.lifecycle.transcript_store.load`)
    transcript_file: dict[str, Any] | None = None
