"""Pydantic models of the suspend/resume data shapes (lifecycle.md 3; seed 000 "Suspension",
"ResumeConditions", "agent_await_resumption").

They validate values where they cross a boundary — a Suspension built at park time, a
request normalized by ``agent_await_resumption``, a worker snapshot read from disk — and are
never used on hot paths (a turn boundary does not build models). Schemas are built on first
use (``defer_build``), so loading a snapshot pays only for the models it validates. Harn code sees plain dicts:
``Model.model_validate(d).model_dump()`` round-trips them.

* :data:`TimeoutAction` — ``"resume_with_summary"`` (default) | ``"fail"`` |
  ``"resume_with_input"``.
* :class:`ResumeTimeout` / :class:`ResumeConditions` — ``{trigger?, timeout?: {duration_minutes,
  on_timeout?}, on_event?}`` (validation errors are produced by the shared trigger-package
  parser, :func:`harnpy.lifecycle.triggers.conditions.parse_resume_conditions`; the model
  pins the normalized shape).
* :class:`AgentAwaitResumptionRequest` — ``{reason, conditions, resume_by}``.
* :class:`WorkerHandle` / :class:`Suspension` — the envelope returned to the parent or the
  caller of a root loop. It never carries transcript text, resume input or the worker's task
  history (:func:`redacted_handle`); ``extra="forbid"`` rejects anything else.
* :class:`WorkerSuspension` — the ``suspension`` record of a worker summary (3.2).
* :class:`WorkerSummary` — the WorkerSummary fields of 3.1 (extra keys allowed).

The envelope of the worker snapshot file is not here: it is read on every cold resume, so
it is a cheap attrs shape (:mod:`harnpy.lifecycle.documents`); these models are imported
only when a worker parks or a request is normalized.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harnpy.lifecycle.triggers.conditions import MAX_TIMEOUT_MINUTES

TimeoutAction = Literal["resume_with_summary", "fail", "resume_with_input"]
Initiator = Literal["self", "parent", "operator", "triggered"]
#: Worker ``status`` strings (lifecycle.md 1.1).
WorkerStatus = Literal[
    "running",
    "suspended",
    "completed",
    "cancelled",
    "failed",
    "awaiting",
    "stopped",
    "interrupted",
]
#: Worker modes (3.1).
WorkerMode = Literal["workflow", "stage", "sub_agent", "delegated_stage", "top_level_agent"]
#: Keys of a WorkerSummary that may hold conversation text or resume input; a Suspension's
#: ``handle`` never carries them (seed: "never persists transcript text, resume input...").
PRIVATE_HANDLE_KEYS = ("transcript", "history", "task", "request", "result")


class ResumeTimeout(BaseModel):
    """``timeout`` of ResumeConditions: a positive number of minutes and the action taken
    when they elapse."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    duration_minutes: int = Field(gt=0, le=MAX_TIMEOUT_MINUTES)
    on_timeout: TimeoutAction = "resume_with_summary"


class ResumeConditions(BaseModel):
    """What may wake a parked worker (3.4). ``{}`` is valid (an open park)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    trigger: dict[str, Any] | None = None
    timeout: ResumeTimeout | None = None
    on_event: str | None = Field(default=None, min_length=1)

    def present(self) -> dict[str, Any]:
        """The normalized dict with only the present keys (parse_resume_conditions' shape)."""
        return self.model_dump(exclude_none=True)


class AgentAwaitResumptionRequest(BaseModel):
    """``agent_await_resumption(reason, conditions?, resume_by?)`` normalized (3.5)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    reason: str = Field(min_length=1)
    conditions: ResumeConditions | None = None
    resume_by: Any = None

    @field_validator("reason")
    @classmethod
    def _trimmed(cls, v: str) -> str:
        if v != v.strip() or not v:
            raise ValueError("reason must be trimmed and non-empty")
        return v

    def as_harn(self) -> dict[str, Any]:
        """The Harn dict ``{reason, conditions, resume_by}`` (conditions with only the
        present keys)."""
        return {
            "reason": self.reason,
            "conditions": self.conditions.present() if self.conditions is not None else None,
            "resume_by": self.resume_by,
        }


class WorkerHandle(BaseModel):
    """The resumable reference inside a Suspension: a WorkerSummary without the keys that
    may hold conversation text or resume input (:data:`PRIVATE_HANDLE_KEYS`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    type_: Literal["agent_handle"] = Field(default="agent_handle", alias="_type")
    id: str = Field(min_length=1)
    name: str
    mode: str
    status: str
    snapshot_path: str

    @model_validator(mode="before")
    @classmethod
    def _no_private(cls, v: Any) -> Any:
        if isinstance(v, dict):
            leaked = [k for k in PRIVATE_HANDLE_KEYS if k in v]
            if leaked:
                raise ValueError(f"a Suspension handle must not carry {', '.join(leaked)}")
        return v


class Suspension(BaseModel):
    """The payload returned to the parent (or the direct caller of a root loop) when a
    worker parks (3.3; seed "Suspension")."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    status: Literal["suspended"] = "suspended"
    final_status: Literal["suspended"] = "suspended"
    handle: WorkerHandle
    reason: str
    initiator: Initiator
    conditions: ResumeConditions | dict[str, Any] | None = None
    iterations_completed: int = Field(ge=0)
    suspended_at: str
    suspended_at_turn: int | None = None
    snapshot_path: str
    resume_by_mechanism: str | None = None
    auto_resume_trigger: str | None = None


class WorkerSuspension(BaseModel):
    """A worker summary's ``suspension`` record (3.2). ``initiator`` prints
    ``self_initiated`` for self-parks (lifecycle.md 13 Q1)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    reason: str
    initiator: str
    suspended_at: str
    snapshot_ref: str
    suspended_at_turn: int | None = None
    conditions: Any = None
    auto_resume_trigger: dict[str, Any] | None = None
    prior_span_link: dict[str, Any] | None = None
    pipeline_span_link: dict[str, Any] | None = None


class WorkerSummary(BaseModel):
    """A WorkerSummary (3.1); extra keys (``transcript``, ``pre_suspend_denied``...) kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    type_: Literal["agent_handle"] = Field(default="agent_handle", alias="_type")
    id: str
    name: str
    task: str
    mode: str
    status: WorkerStatus
    created_at: str
    started_at: str
    finished_at: str | None = None
    awaiting_started_at: str | None = None
    history: list[str] = []
    snapshot_path: str
    has_transcript: bool
    error: str | None = None
    suspension: WorkerSuspension | None = None


M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming the first failing field of a pydantic error (``field `x.y`: <why>``),
    without pydantic's own wording (error counts, ``[type=...]``, documentation links)."""
    errors = exc.errors()
    if not errors:
        return "invalid value"
    err = errors[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    why = err.get("msg", "invalid value")
    if err.get("type") == "extra_forbidden":
        why = "unknown field"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"field `{loc}`: {why}" if loc else str(why)) + more


def validate(model: type[M], data: Any, what: str) -> M:
    """``model.model_validate(data)`` at a lifecycle boundary; a pydantic error never
    escapes (it would be an internal error): it becomes a Harn runtime error.

    Raises:
        HarnRuntimeError: ``<what> is malformed: field `x`: <why>``.
    """
    from harnpy.runtime.errors import runtime_error

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise runtime_error(f"{what} is malformed: {describe_validation_error(exc)}") from None


__all__ = [
    "PRIVATE_HANDLE_KEYS",
    "AgentAwaitResumptionRequest",
    "Initiator",
    "ResumeConditions",
    "ResumeTimeout",
    "Suspension",
    "TimeoutAction",
    "WorkerHandle",
    "WorkerMode",
    "WorkerStatus",
    "WorkerSummary",
    "WorkerSuspension",
    "describe_validation_error",
    "validate",
]
