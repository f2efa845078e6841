"""Self-park through the model tool ``agent_await_resumption`` (lifecycle.md 2.11, T3/T4)
and the warm-resume hook the suspend layer builds on."""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.services import services
from harnpy.lifecycle.workers import WorkerRecord, resume_parked
from tests.agents.conftest import RunHarn, lines

PARK_WORKER = """
pipeline main() {
  llm_mock({tool_calls: [
    {id: "park_1", name: "agent_await_resumption", arguments: {reason: "waiting on review"}},
    {id: "side_1", name: "list_files", arguments: {path: "."}},
  ]})
  llm_mock({text: "finished after resume"})
  let h = sub_agent_run("Park until review.", {provider: "mock", background: true, session_id: "s-park"})
  let s = wait_agent(h)
  println(s.status)
  println(s.suspension.initiator + "|" + s.suspension.reason + "|" + to_string(s.suspension.conditions) + "|" + to_string(s.suspension.auto_resume_trigger))
  println(s.suspension.suspended_at_turn)
  println(s.result.status + "|" + s.result.initiator + "|" + s.result.reason + "|" + to_string(s.result.iterations_completed))
  println(s.result.handle.id == h.id)
  let msgs = agent_session_messages("s-park")
  for m in msgs.filter({ m -> m.role == "tool" }) { println(m.tool_call_id + ": " + m.content) }
  println(worker_events().map({ e -> e.event }))
}
"""


def _drive(rt: Any, rec: WorkerRecord) -> None:
    """Run the scheduler until the worker's thread has finished."""
    sched = rt.scheduler
    th = rec.thread
    while not th.finished:
        if sched.ready:
            sched.run_thread(sched.ready.popleft())
        else:
            assert sched._wait_for_event(), "worker blocked forever"


def test_worker_parks_with_placeholder_results_and_resumes(run_harn: RunHarn) -> None:
    out, rt = run_harn(PARK_WORKER)
    got = lines(out)
    assert got[0] == "suspended"
    assert got[1] == "self_initiated|waiting on review|nil|nil"
    assert got[2] == "1"
    assert got[3] == "suspended|self|waiting on review|1"
    assert got[4] == "true"
    assert got[5] == (
        "park_1: Tool call park_1 (agent_await_resumption) was not dispatched: "
        "awaiting_resumption (reason: waiting on review)"
    )
    assert got[6].startswith("side_1: Tool call side_1 (list_files) was not dispatched: skipped")
    assert got[7] == "[WorkerSpawned, WorkerSuspended]"

    (rec,) = services(rt).workers.values()
    assert rec.status == "suspended" and rec.park_waker is not None
    # the parked thread is plain data: its top frame is the loop, no native frame
    fr = rec.thread.frame
    while fr is not None:
        assert not fr.native
        fr = fr.parent
    resume_parked(
        rt,
        rec,
        {
            "reminders": [
                {"dedupe_key": "resume_continuity", "body": "You were suspended; carry on."}
            ]
        },
    )
    assert rec.status == "running" and rec.suspension is None
    _drive(rt, rec)
    assert rec.status == "completed"
    assert rec.result["summary"] == "finished after resume"
    calls = services(rt).llm.mock.calls()
    assert calls[1]["messages"][-1] == {
        "role": "user",
        "content": "You were suspended; carry on.",
    }
    # the reminder was delivered once and does not stay on the transcript
    kinds = [e["kind"] for e in rec.transcript["events"]]
    assert "system_reminder" not in kinds
    assert [e["event"] for e in services(rt).worker_events] == [
        "WorkerSpawned",
        "WorkerSuspended",
        "WorkerResumed",
        "WorkerCompleted",
    ]


def test_audit_event_for_the_park(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { agent_capture_events } from "std/agent/events"
pipeline main() {
  llm_mock({tool_calls: [{name: "agent_await_resumption",
    arguments: {reason: " later ", conditions: {timeout: {duration_minutes: 5}}}}]})
  let cap = agent_capture_events("s-a", { ->
    let h = sub_agent_run("t", {provider: "mock", background: true, session_id: "s-a"})
    return wait_agent(h)
  })
  println(cap.result.status)
  let audit = cap.events.filter({ e -> e.type == "tool_call_audit" })
  println(len(audit))
  println(audit[0].audit)
  println(cap.result.result.conditions)
}
"""
    )
    # a timeout without a trigger is not armed (lifecycle.md 13 Q4): a warning on stderr
    got = [x for x in lines(out) if not x.startswith("harnpy: warning:")]
    assert got == [
        "suspended",
        "1",
        "{conditions: {timeout: {duration_minutes: 5, on_timeout: resume_with_summary}}, "
        "initiator: self, reason: later}",
        "{timeout: {duration_minutes: 5, on_timeout: resume_with_summary}}",
    ]


def test_invalid_park_requests_are_fed_back_and_the_loop_goes_on(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "  "}}]})
  llm_mock({tool_calls: [{name: "agent_await_resumption",
    arguments: {reason: "r", conditions: {timeout: {duration_minutes: 0}}}}]})
  llm_mock({text: "gave up parking"})
  let r = agent_loop("t", nil, {provider: "mock"})
  println(r.status)
  for c in r.tool_calls { println(c.status + ": " + c.error) }
}
"""
    )
    got = lines(out)
    assert got[0] == "done"
    assert got[1] == (
        "rejected: Error: agent_await_resumption rejected: HARN-SUS-005: "
        "agent_await_resumption: reason must be a non-empty string"
    )
    assert got[2].startswith(
        "rejected: Error: agent_await_resumption rejected: HARN-SUS-002: invalid "
        "ResumeConditions.timeout.duration_minutes: must be a positive int"
    )
    assert "conditions.timeout.duration_minutes" in got[2]
    # the script's author hears of it too (stderr shares the sink here), once per refusal
    warned = [x for x in out.splitlines() if x.startswith("harnpy: warning: ")]
    assert len(warned) == 2
    assert (
        "agent_await_resumption call was refused, the worker did not park: HARN-SUS-005"
        in (warned[0])
    )
    assert "HARN-SUS-002: invalid ResumeConditions.timeout.duration_minutes" in warned[1]


def test_root_loop_park_returns_the_suspension(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "top park"}}]})
  let r = agent_loop("t", nil, {provider: "mock", max_iterations: 2})
  println(r.status + " " + r.final_status + " " + r.reason + " " + r.initiator)
  println(r.iterations_completed)
  println(r.handle.mode + " " + r.handle.name + " " + r.handle.status)
  println(ends_with(r.snapshot_path, r.handle.id + ".json"))
}
"""
    )
    assert lines(out) == [
        "suspended suspended top park self",
        "1",
        "top_level_agent top-level-agent suspended",
        "true",
    ]
    (rec,) = services(rt).workers.values()
    assert rec.mode == "top_level_agent" and rec.thread is None


def test_await_resumption_builtin_and_lifecycle_tool_handler(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { agent_lifecycle_tools } from "std/agent/workers"
pipeline main() {
  println(agent_await_resumption("  why  "))
  println(unwrap_err(try { agent_await_resumption("") }))
  println(unwrap_err(try { parse_resume_conditions({bogus: 1}) }))
  let park_tool = tool_find(agent_lifecycle_tools(), "agent_await_resumption")
  println(unwrap_err(try { park_tool.handler({reason: "x"}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "{conditions: nil, reason: why, resume_by: nil}"
    assert got[1] == "HARN-SUS-005: agent_await_resumption: reason must be a non-empty string"
    assert got[2].startswith("HARN-SUS-002: invalid ResumeConditions.bogus: unknown field")
    assert got[3].startswith("HARN-SUS-005")


def test_suspension_handle_carries_no_transcript(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "secret stuff"}}]})
  let s = wait_agent(sub_agent_run("private task text", {provider: "mock", background: true}))
  println(s.result.handle?.transcript == nil)
  println(s.has_transcript)
}
"""
    )
    assert lines(out) == ["true", "true"]
