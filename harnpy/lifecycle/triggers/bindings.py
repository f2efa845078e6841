"""What the trigger dispatcher holds and hands out: bindings (a parsed trigger spec with its
handler, id and version), the resume waits of parked workers, the resume requests a firing
wait produces, and the registry's error (lifecycle.md §4.2-4.5).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from harnpy.lifecycle.triggers._util import rfc3339

Gen = Generator[Any, Any, Any]


class TriggerRegistryError(RuntimeError):
    """Unknown id/version or duplicate id; ``str(e)`` is the reference's registry text."""


@dataclass
class ResumeRequest:
    """What the worker layer receives when a wait fires (lifecycle.md §4.4, §8).

    ``action``: ``resume`` or ``fail`` (timeout with ``on_timeout: "fail"``: apply T10).
    ``cause``: ``trigger`` | ``event`` | ``cron`` | ``timeout`` | ``manual``.
    ``initiator``: ``triggered`` | ``timeout`` | ``operator``. ``input`` is the resume
    input (None = no input), ``continue_transcript`` the transcript policy,
    ``trigger_event`` the normalized event envelope (or None), ``timeout_action`` the
    ``on_timeout`` value for timeout resumes.
    """

    wait_id: str
    version: int
    worker_id: str
    action: str = "resume"
    cause: str = "trigger"
    initiator: str = "triggered"
    input: Any = None
    continue_transcript: bool = True
    trigger_event: dict[str, Any] | None = None
    timeout_action: str | None = None
    snapshot_path: str | None = None
    #: The park the wait belongs to (the snapshot's ``park_id`` when it was registered): a
    #: resume for it must not resume a later park of the same worker.
    park_id: str | None = None

    def trigger_info(self) -> dict[str, Any]:
        """``{id, event_id, kind, provider, dedupe_key, timeout_action}`` for the resume
        continuity payload (§8)."""
        ev = self.trigger_event or {}
        return {
            "id": self.wait_id,
            "event_id": ev.get("id"),
            "kind": ev.get("kind"),
            "provider": ev.get("provider"),
            "dedupe_key": ev.get("dedupe_key"),
            "timeout_action": self.timeout_action,
        }

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (env/CLI transport)."""
        from harnpy.lifecycle.triggers.spec import jsonable

        return {
            "wait_id": self.wait_id,
            "version": self.version,
            "worker_id": self.worker_id,
            "action": self.action,
            "cause": self.cause,
            "initiator": self.initiator,
            "input": jsonable(self.input),
            "continue_transcript": self.continue_transcript,
            "trigger_event": jsonable(self.trigger_event),
            "timeout_action": self.timeout_action,
            "snapshot_path": self.snapshot_path,
            "park_id": self.park_id,
        }


@dataclass
class ResumeWait:
    """A parked worker's registered wait (in-process view).

    ``state``: ``pending`` until it fires (``fired``) or is cancelled (``cancelled``).
    """

    id: str
    version: int
    worker_id: str
    conditions: Any  # WaitConditions
    snapshot_path: str | None
    deadline_ms: int | None
    on_timeout: str | None
    on_event: str | None
    durable: bool
    created_ms: int
    state: str = "pending"
    park_id: str | None = None

    def handle(self) -> dict[str, Any]:
        """``{id, version}`` (the summary's ``suspension.auto_resume_trigger``)."""
        return {"id": self.id, "version": self.version}


@dataclass
class Binding:
    """A registered trigger binding: spec, version, state, metrics, cron cursor."""

    id: str
    version: int
    spec: Any  # TriggerSpec
    created_ms: int
    state: str = "active"
    listen: bool = True
    wait: ResumeWait | None = None
    cron: Any = None  # CronSchedule
    last_tick_ms: int | None = None
    next_fire_ms: int | None = None
    metrics: dict[str, Any] = field(
        default_factory=lambda: {
            "received": 0,
            "dispatched": 0,
            "failed": 0,
            "dlq": 0,
            "in_flight": 0,
            "last_received_ms": None,
            "cost_total_usd_micros": 0,
            "cost_today_usd_micros": 0,
            "cost_hour_usd_micros": 0,
            "autonomous_decisions_total": 0,
            "autonomous_decisions_today": 0,
            "autonomous_decisions_hour": 0,
        }
    )

    @property
    def handler_kind(self) -> str:
        return "auto_resume" if self.wait is not None else self.spec.handler.kind

    def snapshot(self) -> dict[str, Any]:
        """The ``TriggerBindingSnapshot`` dict ``trigger_register``/``trigger_list`` return."""
        spec = self.spec
        budget = spec.budget or {}
        out: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "source": "dynamic",
            "kind": "auto_resume" if self.wait is not None else spec.kind,
            "provider": spec.provider,
            "autonomy_tier": spec.autonomy_tier,
            "handler_kind": self.handler_kind,
            "state": self.state,
            "metrics": dict(self.metrics),
            "daily_cost_usd": budget.get("daily_cost_usd"),
            "hourly_cost_usd": budget.get("hourly_cost_usd"),
            "max_autonomous_decisions_per_hour": budget.get("max_autonomous_decisions_per_hour"),
            "max_autonomous_decisions_per_day": budget.get("max_autonomous_decisions_per_day"),
            "on_budget_exhausted": budget.get("on_budget_exhausted", "false"),
        }
        if spec.cron is not None:
            out["cron"] = {
                "schedule": spec.cron.schedule,
                "timezone": spec.cron.timezone,
                "catchup_mode": spec.cron.catchup_mode,
                "semantics": spec.cron.semantics,
                "next_fire_at": rfc3339(self.next_fire_ms) if self.next_fire_ms else None,
            }
        return out


def _absolute_ref(ref: str | None) -> str | None:
    """A checkpoint reference as a wait record keeps it: a file path made absolute, a store
    reference ``<url>#<id>`` as it is."""
    if not ref:
        return None
    from harnpy.lifecycle.checkpoint_store import is_store_ref

    return ref if is_store_ref(ref) else os.path.abspath(ref)
