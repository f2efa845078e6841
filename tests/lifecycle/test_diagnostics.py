"""Every HARN-SUS code of lifecycle.md 1.3 / 1.4 raised by the transition that owns it,
and the state left unchanged by the refused call."""

from __future__ import annotations

import json
from pathlib import Path

from harnpy.security import seal
from tests.lifecycle.conftest import PARK_ONCE, RunHarn, lines, snapshots
from tests.sealing import write_doc

#: A ``tools()`` registry with one ``slow`` tool (sleeps 5 ms), to keep a worker running.
SLOW_TOOLS = """
fn tools() {
  return tool_define(tool_registry(), "slow", "s", {parameters: {}, handler: { a -> sleep_ms(5); return "ok" }})
}"""


def test_sus_001_suspend_of_a_worker_that_is_not_running(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "done at once"})
  const h = sub_agent_run("t", {provider: "mock", background: true})
  wait_agent(h)
  println(unwrap_err(try { suspend_agent(h, "too late") }))
  println(wait_agent(h).status)
}
"""
    )
    got = lines(out)
    assert got[0].startswith("HARN-SUS-001: suspend_agent: worker worker_")
    assert got[0].endswith("is not running (status=completed)")
    assert got[1] == "completed"


def test_sus_002_invalid_conditions_name_the_field(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(unwrap_err(try { parse_resume_conditions({timeout: {duration_minutes: -1}}) }))
  println(unwrap_err(try { agent_await_resumption("r", {on_event: 5}) }))
  // spawn_agent validates options.resume_when (stored, not armed: 13 Q15)
  println(unwrap_err(try { spawn_agent({task: "t", node: {provider: "mock"},
    options: {resume_when: {timeout: 3}}}) }))
}
"""
    )
    assert lines(out) == [
        "HARN-SUS-002: invalid ResumeConditions.timeout.duration_minutes: must be a positive int",
        "HARN-SUS-002: invalid ResumeConditions.on_event: expected string or nil, got int",
        "HARN-SUS-002: invalid ResumeConditions.timeout: expected dict or nil, got int",
    ]


def test_sus_003_resume_of_a_running_worker(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        SLOW_TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "end"})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools()})
  println(unwrap_err(try { resume_agent(h) }))
  println(wait_agent(h).status)
}
"""
    )
    got = lines(out)
    assert got[0].startswith("HARN-SUS-003: resume_agent: worker worker_")
    assert got[0].endswith("is not suspended (status=running)")
    assert got[1] == "completed"


def test_sus_004_snapshot_missing_unreadable_or_invalid(run_harn: RunHarn, tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_bytes(seal(b"{not json"))  # broken JSON under a good seal
    no_mode = tmp_path / "nomode.json"
    write_doc(no_mode, {"_type": "worker_snapshot", "id": "w", "config": {}})
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (4 * 1024 * 1024 + 1))
    out, _ = run_harn(
        f"""
pipeline main() {{
  for target in ["", "{tmp_path}/missing.json", "{bad_json}", "{no_mode}", "{big}"] {{
    println(unwrap_err(try {{ resume_agent(target) }}))
  }}
}}
"""
    )
    got = lines(out)
    assert got[0] == "HARN-SUS-004: resume_agent: missing worker id or snapshot path"
    assert got[1] == (
        f"HARN-SUS-004: resume_agent: failed to load snapshot `{tmp_path}/missing.json`: "
        "No such file or directory"
    )
    assert got[2].startswith(f"HARN-SUS-004: resume_agent: failed to load snapshot `{bad_json}`")
    assert "the file is not valid JSON" in got[2]
    assert got[3].endswith("worker snapshot is missing a valid config mode")
    assert got[4].endswith("over the 4194304-byte limit")


def test_sus_005_blank_reason_and_tool_outside_the_loop(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { agent_lifecycle_tools } from "std/agent/workers"
pipeline main() {
  println(unwrap_err(try { agent_await_resumption("   ") }))
  const park_tool = tool_find(agent_lifecycle_tools(), "agent_await_resumption")
  println(unwrap_err(try { park_tool.handler({reason: "outside"}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "HARN-SUS-005: agent_await_resumption: reason must be a non-empty string"
    assert got[1].startswith("HARN-SUS-005: agent_await_resumption can only park from inside")


def test_sus_006_concurrent_resumes_exactly_one_wins(run_harn: RunHarn) -> None:
    # The PreResume hook yields, so the second resume runs while the first one waits in
    # its hook: the first to continue wins, the other finds the worker running.
    out, rt = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  register_session_hook("pre_resume", { e ->
    yield_now()
    return nil
  })
  const a = spawn { try { resume_agent(h) } }
  const b = spawn { try { resume_agent(h) } }
  const ra = await(a)
  const rb = await(b)
  clear_session_hooks()
  println([is_ok(ra), is_ok(rb)])
  for r in [ra, rb] {
    if is_err(r) { println(unwrap_err(r)) }
  }
  println(wait_agent(h).status)
  println(worker_events().filter({ e -> e.event == "WorkerResumed" }).map({ e -> e.event }))
}
"""
    )
    got = lines(out)
    assert got[0] == "[true, false]"
    assert got[1].startswith("HARN-SUS-006: resume_agent: worker worker_")
    assert "changed before resume could complete (status=running)" in got[1]
    assert got[2] == "completed"
    assert got[3] == "[WorkerResumed]"


def test_sus_007_and_008_raw_suspend_path(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        SLOW_TOOLS
        + """
pipeline main() {
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "end"})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools()})
  println(unwrap_err(try { suspend_agent(h, "x", {conditions: {trigger: {provider: "github"}}}) }))
  println(unwrap_err(try { suspend_agent(h, "x", {conditions: {trigger: {kind: "k", provider: "github"},
    timeout: {duration_minutes: 5, on_timeout: "explode"}}}) }))
  println(unwrap_err(try { suspend_agent(h, "x", {conditions: {trigger: {kind: "k", provider: "github"},
    timeout: {duration_minutes: 5, on_timeout: 9}}}) }))
  println(unwrap_err(try { suspend_agent(h, "x", {conditions: {trigger: 3}}) }))
  const done = wait_agent(h)
  println(done.status)
}
"""
    )
    got = lines(out)
    assert got[0].startswith(
        "HARN-SUS-007: auto_resume: failed to parse conditions.trigger for registration:"
    )
    assert got[1].startswith(
        "HARN-SUS-008: auto_resume: unsupported conditions.timeout.on_timeout `explode`"
    )
    assert got[2].startswith("HARN-SUS-008: auto_resume: conditions.timeout.on_timeout must be")
    assert got[3].startswith("HARN-SUS-002: invalid ResumeConditions.trigger:")
    # every refused suspend left the worker running: it completed normally
    assert got[4] == "completed"


def test_sus_009_blank_input_changes_nothing(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  println(unwrap_err(try { resume_agent(h, "   ") }))
  println(unwrap_err(try { resume_agent(h, {input: ""}) }))
  const still = wait_agent(h)
  println(still.status + " " + still.suspension.reason)
  println(resume_agent(h, "now").status)
  println(wait_agent(h).history)
}
"""
    )
    got = lines(out)
    assert got[0] == "HARN-SUS-009: resume_agent: resume input must be nil or non-empty text"
    assert got[1] == got[0]
    assert got[2] == "suspended waiting on review"
    assert got[3] == "running"
    assert got[4] == "[Park until review., now]"


def test_sus_010_resume_of_a_closed_worker_also_cold(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  const s = wait_agent(h)
  close_agent(h)
  println(unwrap_err(try { resume_agent(h) }))
  println(unwrap_err(try { resume_agent(s.snapshot_path) }))
}
"""
    )
    got = lines(out)
    assert all(x.startswith("HARN-SUS-010: resume_agent: worker ") for x in got), got
    (snap,) = snapshots(state_dir)
    assert json.loads(snap.read_text())["status"] == "cancelled"


def test_plain_errors_of_the_handle_table(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        SLOW_TOOLS
        + """
pipeline main() {
  println(unwrap_err(try { resume_agent({name: "x"}) }))
  println(unwrap_err(try { resume_agent(42) }))
  println(unwrap_err(try { suspend_agent("worker_nope", "r") }))
  println(unwrap_err(try { suspend_agent(nil) }))
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "end"})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools()})
  suspend_agent(h, "pause")
  println(unwrap_err(try { resume_agent(h) }))
  println(wait_agent(h).status)
}
"""
    )
    got = lines(out)
    # plain runtime errors whose message is exactly the spec's text (1.3)
    assert got[0] == "agent handle dict is missing an id field"
    assert got[1] == "expected agent handle or worker id"
    assert got[2] == "unknown worker: worker_nope"
    assert got[3] == "suspend_agent: missing worker handle"
    assert got[4].endswith("has not reached its suspend checkpoint yet")
    assert got[5] == "suspended"
