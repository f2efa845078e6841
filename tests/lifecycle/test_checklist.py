"""lifecycle.md 11: the minimal conformance checklist, one test per item."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import harnpy
from tests.lifecycle.conftest import PARK_ONCE, RunHarn, lines


def test_1_self_park_of_a_background_sub_agent(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  const s = wait_agent(h)
  println(s.status)
  println(s.result.status + "|" + s.result.reason + "|" + s.result.initiator)
  println(s.result.conditions == nil)
  println(s.result.handle.id == h.id)
  println(s.result.iterations_completed)
}
"""
    )
    assert lines(out) == ["suspended", "suspended|waiting on review|self", "true", "true", "1"]


def test_2_resume_then_completion(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  println(resume_agent(h).status)
  const done = wait_agent(h)
  println(done.status + " " + to_string(done.has_transcript) + " " + done.result.summary)
}
"""
    )
    assert lines(out) == ["running", "completed true finished after resume"]


def test_3_close_while_suspended(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  println(close_agent(h).status)
  println(unwrap_err(try { resume_agent(h) }))
  println(close_agent(h).status)
}
"""
    )
    got = lines(out)
    assert got[0] == "cancelled"
    assert got[1].startswith("HARN-SUS-010: resume_agent: worker worker_")
    assert got[1].endswith("was closed and cannot be resumed")
    assert got[2] == "cancelled"


def test_4_second_resume_after_completion(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  resume_agent(h)
  wait_agent(h)
  const err = to_string(unwrap_err(try { resume_agent(h) }))
  println(contains(err, "HARN-SUS-003") && contains(err, "not suspended"))
  println(contains(err, "status=completed"))
}
"""
    )
    assert lines(out) == ["true", "true"]


TIMEOUT_PARK = """
pipeline main() {
  mock_time(1700000100000)
  llm_mock({tool_calls: [{id: "park", name: "agent_await_resumption", arguments: {
    reason: "review timeout", conditions: {
      trigger: {kind: "review.approved", provider: "github"},
      timeout: {duration_minutes: 5, on_timeout: "ACTION"}}}}]})
  llm_mock({text: "resumed after the timeout"})
  const h = sub_agent_run("Wait for review.", {provider: "mock", background: true,
    tool_format: "native", max_iterations: 3})
  const s = wait_agent(h)
  println(s.status + " " + to_string(s.suspension.auto_resume_trigger != nil))
  advance_time(4 * 60 * 1000)
  yield_now()
  println(wait_agent(h).status)
  advance_time(2 * 60 * 1000)
  yield_now()
  yield_now()
  const after = wait_agent(h)
  println(after.status + " " + to_string(after.error))
  println(worker_events().map({ e -> e.event }))
  TAIL
}
"""


def test_5_timeout_fail_under_a_mock_clock(run_harn: RunHarn) -> None:
    src = TIMEOUT_PARK.replace("ACTION", "fail").replace(
        "TAIL", "println(is_err(try { resume_agent(h) }))"
    )
    out, _ = run_harn(src)
    assert lines(out) == [
        "suspended true",
        "suspended",
        "failed auto-resume timeout expired",
        "[WorkerSpawned, WorkerSuspended, WorkerFailed]",
        "true",
    ]


def test_5_timeout_resume_with_summary(run_harn: RunHarn) -> None:
    src = TIMEOUT_PARK.replace("ACTION", "resume_with_summary").replace(
        "TAIL",
        """const calls = llm_mock_calls()
  const tail = calls[1].messages[len(calls[1].messages) - 1].content
  println(contains(tail, "Your timeout elapsed; resuming with summary"))
  println(contains(tail, "Pre-suspend conversation digest"))""",
    )
    out, _ = run_harn(src)
    assert lines(out) == [
        "suspended true",
        "suspended",
        "completed nil",
        "[WorkerSpawned, WorkerSuspended, WorkerResumed, WorkerCompleted]",
        "true",
        "true",
    ]


def test_6_self_park_with_input_reminder_once(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
fn tools() {
  return tool_define(tool_registry(), "noop", "n", {parameters: {}, handler: { a -> "ok" }})
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "need   input"}}]})
  llm_mock({tool_calls: [{id: "n", name: "noop", arguments: {}}]})
  llm_mock({text: "done"})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools(), max_iterations: 4})
  wait_agent(h)
  resume_agent(h, "use the blue one", true)
  const done = wait_agent(h)
  const calls = llm_mock_calls()
  const resumed = calls[1].messages[len(calls[1].messages) - 1].content
  const next = calls[2].messages[len(calls[2].messages) - 1].content
  println(resumed)
  println(contains(next, "You were suspended at turn"))
  println(done.history)
}
"""
    )
    got = lines(out)
    assert got[0] == (
        "You were suspended at turn 1 for reason: 'need input'. You have been resumed by "
        "the operator. The resumer provided input: use the blue one."
    )
    assert got[1] == "false"
    assert got[2] == "[t, use the blue one]"


def test_7_open_park(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  const s = wait_agent(h)
  println(s.suspension.conditions == nil)
  println(s.suspension.auto_resume_trigger == nil)
  println(s.result.auto_resume_trigger == nil)
  println(s.suspension.initiator)
}
"""
    )
    assert lines(out) == ["true", "true", "true", "self_initiated"]


def test_8_parse_resume_conditions_and_model_feedback(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(parse_resume_conditions(nil))
  println(parse_resume_conditions({}))
  println(parse_resume_conditions({timeout: {duration_minutes: 3}, on_event: "  review.done "}))
  for bad in [7, {bogus: 1}, {trigger: "x"}, {timeout: {duration_minutes: 0}},
              {timeout: {duration_minutes: 1, on_timeout: "explode"}},
              {timeout: {duration_minutes: 1, on_timeout: 3}},
              {timeout: {duration_minutes: 1, extra: 1}}, {on_event: "  "},
              {trigger: {provider: "github"}}] {
    println(unwrap_err(try { parse_resume_conditions(bad) }))
  }
  llm_mock({tool_calls: [{id: "bad", name: "agent_await_resumption",
    arguments: {reason: "r", conditions: {trigger: "review.approved"}}}]})
  llm_mock({text: "carried on"})
  const r = agent_loop("t", nil, {provider: "mock", max_iterations: 3})
  println(r.status + " " + to_string(len(llm_mock_calls())))
  println(r.tool_calls[0].status)
}
"""
    )
    got = lines(out)
    assert got[0] == "nil"
    assert got[1] == "{}"
    assert got[2] == (
        "{on_event: review.done, timeout: {duration_minutes: 3, on_timeout: resume_with_summary}}"
    )
    prefixes = [
        "HARN-SUS-002: invalid ResumeConditions.root: expected dict or nil, got int",
        "HARN-SUS-002: invalid ResumeConditions.bogus: unknown field; expected trigger, "
        "timeout, or on_event",
        "HARN-SUS-002: invalid ResumeConditions.trigger: expected dict or nil, got string",
        "HARN-SUS-002: invalid ResumeConditions.timeout.duration_minutes: must be a positive int",
        "HARN-SUS-002: invalid ResumeConditions.timeout.on_timeout: unsupported action "
        "`explode`; expected one of: resume_with_summary, fail, resume_with_input",
        "HARN-SUS-002: invalid ResumeConditions.timeout.on_timeout: expected string, got int",
        "HARN-SUS-002: invalid ResumeConditions.timeout.extra: unknown field; expected "
        "duration_minutes or on_timeout",
        "HARN-SUS-002: invalid ResumeConditions.on_event: must be a non-empty string",
        "HARN-SUS-002: invalid ResumeConditions.trigger:",
    ]
    for line, prefix in zip(got[3:12], prefixes, strict=True):
        assert line.startswith(prefix), line
    assert got[12] == "done 2"
    assert got[13] == "rejected"


def test_9_resume_by_mechanism_reaches_the_suspension(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({tool_calls: [{id: "a", name: "agent_await_resumption", arguments: {reason: "open"}}]})
  const open = wait_agent(sub_agent_run("t", {provider: "mock", background: true}))
  println(open.result.resume_by_mechanism)
  llm_mock({tool_calls: [{id: "b", name: "agent_await_resumption", arguments: {reason: "cond",
    conditions: {trigger: {kind: "review.approved", provider: "github"}}}}]})
  const cond = wait_agent(sub_agent_run("t", {provider: "mock", background: true}))
  println(cond.result.resume_by_mechanism)
  println(cond.result.auto_resume_trigger == cond.suspension.auto_resume_trigger.id)
  const audits = lifecycle_audit_log_take().map({ a -> a.kind + ":" + a.payload.mechanism })
  println(audits)
}
"""
    )
    assert lines(out) == [
        "ResumeBy.parent_llm",
        "ResumeBy.local_runtime",
        "true",
        "[resume_by_dispatched:ResumeBy.parent_llm, resume_by_dispatched:ResumeBy.local_runtime]",
    ]


COLD_SCRIPT = """
pipeline main() {
  llm_mock({tool_calls: [{id: "park_cold", name: "agent_await_resumption",
    arguments: {reason: "cold restart park"}}]})
  let result = agent_loop("Park until a cold restart resumes you.", nil,
    {provider: "mock", tool_format: "native", max_iterations: 2})
  println("status=" + result.status)
  println("snapshot=" + result.handle.snapshot_path)
}
"""


def test_10_top_level_park_and_run_resume_json(tmp_path: Path) -> None:
    script = tmp_path / "cold.harn"
    script.write_text(COLD_SCRIPT, encoding="utf-8")
    env = {"HARN_WORKER_STATE_DIR": "", "HARN_LLM_CALLS_DISABLED": "1"}
    first = harnpy("run", str(script), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "status=suspended" in first.stdout
    snapshot = first.stdout.split("snapshot=")[1].strip()
    assert snapshot.startswith(".harn/workers/worker_") and (tmp_path / snapshot).is_file()
    second = harnpy("run", "--resume", snapshot, "--json", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    events = [json.loads(x) for x in second.stdout.strip().split("\n")]
    assert all(e["schemaVersion"] == 1 for e in events)
    assert [e["data"]["seq"] for e in events] == list(range(1, len(events) + 1))
    final = events[-1]["data"]
    assert final["event_type"] == "result"
    assert final["exit_code"] == 0
    assert final["value"]["status"] == "completed"
    assert final["value"]["has_transcript"] is True
    assert final["value"]["mode"] == "top_level_agent"
