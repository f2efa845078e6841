"""The pydantic models of the suspend / resume data shapes (lifecycle.md 3) and the worker
snapshot envelope shape, against the values the runtime really produces."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harnpy.lifecycle.documents import WorkerSnapshotDoc
from harnpy.lifecycle.models import (
    AgentAwaitResumptionRequest,
    ResumeConditions,
    ResumeTimeout,
    Suspension,
    WorkerSummary,
)
from harnpy.lifecycle.services import services
from harnpy.shapes import ShapeError, structure
from tests.lifecycle.conftest import PARK_ONCE, RunHarn, load, snapshots


def test_runtime_values_validate(run_harn: RunHarn, state_dir: Path) -> None:
    _, rt = run_harn("pipeline main() {" + PARK_ONCE + " wait_agent(h) }")
    (rec,) = services(rt).workers.values()
    payload = rec.result
    sus = Suspension.model_validate(payload)
    assert sus.initiator == "self" and sus.reason == "waiting on review"
    assert sus.handle.id == rec.id and sus.handle.status == "suspended"
    summary = WorkerSummary.model_validate(rec.summary())
    assert summary.status == "suspended" and summary.suspension is not None
    assert summary.suspension.initiator == "self_initiated"
    (snap,) = snapshots(state_dir)
    doc = structure(load(snap), WorkerSnapshotDoc)
    assert doc.harnpy_thread is not None and doc.config.mode == "sub_agent"


def test_the_suspension_envelope_carries_no_private_text(run_harn: RunHarn) -> None:
    _, rt = run_harn("pipeline main() {" + PARK_ONCE + " wait_agent(h) }")
    (rec,) = services(rt).workers.values()
    payload = rec.result
    # the worker's own summary has them; the envelope's handle does not
    assert "transcript" in rec.summary() and "history" in rec.summary()
    assert not {"transcript", "history", "task", "request", "result"} & set(payload["handle"])
    for key in ("transcript", "history", "task"):
        bad = {**payload, "handle": {**payload["handle"], key: "secret"}}
        with pytest.raises(ValidationError, match="must not carry"):
            Suspension.model_validate(bad)
    with pytest.raises(ValidationError):
        Suspension.model_validate({**payload, "resume_input": "secret"})


def test_resume_conditions_and_timeout_action() -> None:
    c = ResumeConditions.model_validate(
        {"trigger": {"kind": "k", "provider": "p"}, "timeout": {"duration_minutes": 2}}
    )
    assert c.present() == {
        "trigger": {"kind": "k", "provider": "p"},
        "timeout": {"duration_minutes": 2, "on_timeout": "resume_with_summary"},
    }
    assert ResumeConditions.model_validate({}).present() == {}
    for bad in (
        {"timeout": {"duration_minutes": 0}},
        {"timeout": {"duration_minutes": 1, "on_timeout": "explode"}},
        {"extra": 1},
        {"on_event": ""},
    ):
        with pytest.raises(ValidationError):
            ResumeConditions.model_validate(bad)
    assert ResumeTimeout(duration_minutes=1, on_timeout="fail").on_timeout == "fail"


def test_await_resumption_request(run_harn: RunHarn) -> None:
    req = AgentAwaitResumptionRequest.model_validate(
        {"reason": "why", "conditions": {"on_event": "x"}}
    )
    assert req.as_harn() == {"reason": "why", "conditions": {"on_event": "x"}, "resume_by": None}
    with pytest.raises(ValidationError):
        AgentAwaitResumptionRequest.model_validate({"reason": "  padded  "})
    out, _ = run_harn(
        'pipeline main() { println(agent_await_resumption("  why  ", {timeout: '
        "{duration_minutes: 1}}, { h, s -> nil }).conditions) }"
    )
    assert out.strip() == "{timeout: {duration_minutes: 1, on_timeout: resume_with_summary}}"


def test_worker_snapshot_envelope_errors_name_the_field(state_dir: Path, run_harn: RunHarn) -> None:
    run_harn("pipeline main() {" + PARK_ONCE + " wait_agent(h) }")
    (snap,) = snapshots(state_dir)
    doc = load(snap)
    for bad, message in (
        ({**doc, "config": {"mode": "bogus"}}, "field `config.mode`: expected one of"),
        ({**doc, "id": ""}, "field `id`: must not be empty"),
        ({**doc, "_type": "other"}, "field `_type`: expected one of"),
        ({**doc, "history": "abc"}, "field `history`: expected a list, got string"),
    ):
        with pytest.raises(ShapeError) as err:
            structure(bad, WorkerSnapshotDoc)
        assert str(err.value).startswith(message), str(err.value)
