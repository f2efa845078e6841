"""Human in the loop (harnpy/lifecycle/hitl.py): host mocks, pending requests answered by
hitl_respond, quorum and distinct reviewers, denials and timeouts, dual_control running its
action only after the quorum, std/plan approval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_request_approval_quorum_from_host_mocks(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { clear_host_mocks, mock_host_response } from "std/testing"
pipeline main() {
  mock_host_response("hitl", "approval", [
    {approved: true, reviewer: "mallory"},
    {approved: true, reviewer: "alice", reason: "checked"},
    {approved: true, reviewer: "alice"},
    {approved: true, reviewer: "bob"},
  ])
  let r = request_approval("deploy", {quorum: 2, reviewers: ["alice", "bob", "carol"]})
  println([r.approved, r.reviewers, r.reason, len(r.signatures)])
  println(r.signatures[0].signature.starts_with("sha256:") && len(r.signatures[0].signature) == 71)
  mock_host_response("hitl", "approval", [{approved: false, reviewer: "bob", reason: "no"}])
  let denied = try { request_approval("deploy", {reviewers: ["bob"]}) }
  println(unwrap_err(denied).name + ": " + unwrap_err(denied).message)
  println(unwrap_err(try { request_approval("x", {quorum: 3, reviewers: ["a"]}) }))
  clear_host_mocks()
}
"""
    )
    got = lines(out)
    assert got[0] == "[true, [alice, bob], checked, 2]"  # mallory is not a reviewer; alice once
    assert got[1] == "true"
    assert got[2] == "ApprovalDeniedError: approval denied by bob: no"
    assert got[3] == "request_approval: quorum 3 exceeds the 1 reviewers"


def test_dual_control_runs_the_action_only_after_the_quorum(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { mock_host_response } from "std/testing"
var ran = 0
fn step() { ran = ran + 1; return "deleted" }
pipeline main() {
  mock_host_response("hitl", "dual_control", [{approved: true, reviewer: "alice"}])
  println(unwrap_err(try { dual_control(2, 3, step, ["alice", "bob", "carol"]) }).name)
  println(ran)
  mock_host_response("hitl", "dual_control", [{approved: true, reviewer: "alice"}, {approved: true, reviewer: "bob"}])
  println(dual_control(2, 3, step, ["alice", "bob", "carol"]))
}
"""
    )
    assert lines(out) == ["ApprovalDeniedError", "0", "deleted"]


def test_pending_requests_are_answered_by_hitl_respond(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let asker = spawn { ask_user("Which env?", {timeout: 5m}) }
  let approver = spawn { request_approval("ship", {quorum: 2, reviewers: ["a", "b"]}) }
  sleep(10ms)
  let rows = hitl_pending({})
  println(rows.map({ r -> r.request_kind }))
  println(hitl_pending({kinds: ["question"]})[0].prompt)
  let q = hitl_pending({kinds: ["question"]})[0].request_id
  println(hitl_respond(q, {answer: "staging"}))
  println(await(asker))
  let a = hitl_pending({kinds: ["approval"]})[0]
  println(a.approvers)
  println(hitl_respond(a.request_id, {approved: true, reviewer: "a"}))
  println(hitl_respond(a.request_id, {approved: true, reviewer: "b"}))
  println(await(approver).reviewers)
  println(hitl_pending({}))
  println(unwrap_err(try { hitl_respond("nope", 1) }))
  println(len(hitl_events()) > 0)
}
"""
    )
    got = lines(out)
    assert got[0] == "[approval, question]"  # newest first
    assert got[1] == "Which env?"
    assert got[2:4] == ["true", "staging"]
    assert got[4] == "[a, b]"
    assert got[5:7] == ["false", "true"]
    assert got[7] == "[a, b]"
    assert got[8] == "[]"
    assert got[9] == "hitl_respond: no pending HITL request nope"
    assert got[10] == "true"


def test_ask_user_timeout_default_and_error(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { mock_host_response, clear_host_mocks } from "std/testing"
pipeline main() {
  println(ask_user("Continue?", {timeout: 1ms, default: false}))
  println(unwrap_err(try { ask_user("Name?", {timeout: 1ms}) }).name)
  mock_host_response("hitl", "question", "yes")
  println(ask_user("Continue?", {default: false}))
  clear_host_mocks()
}
"""
    )
    assert lines(out) == ["false", "HumanTimeoutError", "true"]


def test_plan_artifacts_tools_and_approval(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import "std/plan"
import { mock_host_response } from "std/testing"
pipeline main() {
  let p = plan_from({summary: "Fix it", steps: ["look", {content: "patch", status: "done"}]})
  println([p.schema_version, p.steps.map({ s -> s.status }), len(plan_acp_entries(p))])
  println(unwrap_err(try { plan_from({summary: "x", steps: [{content: "a", status: "weird"}]}) }))
  mock_host_response("hitl", "approval", {approved: false, reviewer: "lead", reason: "too vague"})
  println(request_plan_approval(p, {reviewers: ["lead"]}).approval)
  llm_mock({tool_calls: [{id: "p1", name: "emit_plan", arguments: {summary: "S", steps: [{content: "a"}]}}]})
  llm_mock({text: "ok"})
  let r = agent_loop("plan", nil, {provider: "mock", tools: plan_tools()})
  let ev = transcript_events_by_kind(r.transcript, "plan")
  println([len(ev), ev[0].metadata.plan.summary, ev[0].tool_name])
}
"""
    )
    got = lines(out)
    assert got[0] == "[harn.plan.v1, [pending, completed], 2]"
    assert got[1] == (
        "plan_from: step 1 has unknown status weird (expected pending, in_progress or completed)"
    )
    assert got[2] == "{reason: too vague, reviewers: [], state: rejected}"
    assert got[3] == "[1, S, emit_plan]"


WORKER = """
tool choose_env() -> string {
  description "Ask the human which environment to deploy to."
  return "deploying to " + ask_user("Which environment?")
}
tool ship() -> string {
  description "Ship after two approvals."
  let r = request_approval("ship it", {quorum: 2, reviewers: ["a", "b"]})
  return "shipped by " + join(r.reviewers, "+")
}
"""


def test_a_worker_parks_on_a_human_and_hitl_respond_resumes_it(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        WORKER
        + """
pipeline main() {
  llm_mock({tool_calls: [{id: "c1", name: "choose_env", arguments: {}}]})
  llm_mock({text: "done"})
  let h = sub_agent_run("Deploy", {provider: "mock", tools: [choose_env], background: true})
  println(wait_agent(h).status)
  let row = hitl_pending({})[0]
  println([row.request_kind, row.metadata.worker_id == h.id, row.metadata.snapshot_path != nil])
  println(hitl_respond(row.request_id, "staging"))
  let done = wait_agent(h)
  println(done.status)
  println(transcript_messages(done.transcript).filter({ m -> m.role == "tool" })[0].content)
  println(hitl_pending({}))
}
"""
    )
    assert lines(out) == [
        "suspended",
        "[question, true, true]",
        "true",
        "completed",
        "deploying to staging",
        "[]",
    ]


@pytest.mark.parametrize(
    ("tool", "answer", "result"),
    [
        ("choose_env", "staging", "deploying to staging"),
        (
            "ship",
            '[{"approved": true, "reviewer": "a"}, {"approved": true, "reviewer": "b"}]',
            "shipped by a+b",
        ),
    ],
)
def test_a_human_wait_survives_a_process_exit(
    tmp_path: Path, tool: str, answer: str, result: str
) -> None:
    prog = tmp_path / "main.harn"
    prog.write_text(
        WORKER
        + f"""
pipeline main() {{
  llm_mock({{tool_calls: [{{id: "c1", name: "{tool}", arguments: {{}}}}]}})
  llm_mock({{text: "done"}})
  let h = sub_agent_run("Go", {{provider: "mock", tools: [choose_env, ship], background: true}})
  println(wait_agent(h).status)
  println(hitl_pending({{}})[0].metadata.snapshot_path)
}}
"""
    )
    first = harnpy("run", str(prog), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    status, snap = first.stdout.split()
    assert status == "suspended"
    doc = json.loads((tmp_path / snap).read_text(encoding="utf-8"))
    assert doc["status"] == "suspended"
    assert "waiting for a human" in doc["suspension"]["reason"]
    second = harnpy("run", "--resume", snap, cwd=tmp_path, env={"HARNPY_RESUME_INPUT": answer})
    assert second.returncode == 0, second.stderr
    doc = json.loads((tmp_path / snap).read_text(encoding="utf-8"))
    assert doc["status"] == "completed"
    tool_msgs = [m["content"] for m in doc["transcript"]["messages"] if m["role"] == "tool"]
    assert tool_msgs == [result]


def test_escalate_to(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { mock_host_response, clear_host_mocks } from "std/testing"
pipeline main() {
  let t = spawn { escalate_to("oncall-lead", "prod is down") }
  sleep(10ms)
  let row = hitl_pending({kinds: ["escalation"]})[0]
  println([row.prompt, row.metadata.role])
  hitl_respond(row.request_id, {accepted: true, reviewer: "dana"})
  let h = await(t)
  println([h.status, h.role, h.reviewer, h.reason])
  mock_host_response("hitl", "escalation", {accepted: false, reason: "not now"})
  println(unwrap_err(try { escalate_to("cto", "budget") }).message)
  clear_host_mocks()
}
"""
    )
    assert lines(out) == [
        "[prod is down, oncall-lead]",
        "[accepted, oncall-lead, dana, prod is down]",
        "escalation to cto was refused: not now",
    ]
