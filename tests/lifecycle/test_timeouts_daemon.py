"""Auto-resume waits (lifecycle.md 4.4), absolute deadlines across restarts (issue point
9), and daemon loops that idle by parking (3.7, seed "Daemon idle")."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lifecycle.conftest import RunHarn, lines, load, snapshots

T0 = 1700000000000

PARK_WITH_TIMEOUT = f"""
pipeline main() {{
  mock_time({T0})
  llm_mock({{tool_calls: [{{id: "p", name: "agent_await_resumption", arguments: {{
    reason: "wait for review", conditions: {{
      trigger: {{kind: "review.approved", provider: "github"}},
      timeout: {{duration_minutes: 5}}}}}}}}]}})
  const s = wait_agent(sub_agent_run("t", {{provider: "mock", background: true}}))
  println(s.status)
}}
"""


def _load_later(minutes_after: int, polls: str) -> str:
    return f"""
pipeline main() {{
  mock_time({T0} + {minutes_after} * 60000)
  const path = argv()[0]
  const s = load_agent(path)
  println(s.status + " " + to_string(s.suspension.auto_resume_trigger != nil))
  {polls}
  println(worker_events().map({{ e -> e.event }}))
}}
"""


def test_a_loaded_snapshot_keeps_its_absolute_deadline(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(PARK_WITH_TIMEOUT, path="<park>")
    assert lines(out) == ["suspended"]
    (snap,) = snapshots(state_dir)
    wait = load(snap)["resume_wait"]
    assert wait["deadline_ms"] == T0 + 5 * 60000
    original = snap.read_bytes()

    # "another process" 3 minutes later: the timeout fires 2 minutes later, not 5
    polls = """
  advance_time(60000)
  println(trigger_poll())
  println(wait_agent(s).status)
  advance_time(61000)
  yield_now()
  const d = wait_agent(s)
  println(d.status)
  advance_time(600000)
  println(trigger_poll())
"""
    out, _ = run_harn(_load_later(3, polls), setup=lambda rt: rt.argv.append(str(snap)))
    assert lines(out) == [
        "suspended true",
        "[]",
        "suspended",
        "completed",
        "[]",
        "[WorkerResumed, WorkerCompleted]",
    ]

    # a process started after the deadline fires it once, at the first poll
    snap.write_bytes(original)
    polls = """
  const fired = trigger_poll()
  println(len(fired) == 1 && fired[0].cause == "timeout")
  println(wait_agent(s).status)
  println(trigger_poll())
"""
    out, _ = run_harn(_load_later(10, polls), setup=lambda rt: rt.argv.append(str(snap)))
    assert lines(out) == [
        "suspended true",
        "true",
        "completed",
        "[]",
        "[WorkerResumed, WorkerCompleted]",
    ]


def test_load_agent_takes_the_park_over(run_harn: RunHarn, state_dir: Path) -> None:
    run_harn(PARK_WITH_TIMEOUT, path="<park>")
    (snap,) = snapshots(state_dir)
    park_id = load(snap)["park_id"]
    out, _ = run_harn(
        f"""
pipeline main() {{
  const s = load_agent("{snap}")
  println(s.status)
  println(load_agent("{snap}").id == s.id)
  println(resume_agent(s).status)
  println(wait_agent(s).status)
}}
"""
    )
    assert lines(out) == ["suspended", "true", "running", "completed"]
    assert load(snap)["park_id"] != park_id


def test_trigger_and_event_waits_resume_with_their_payload(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
fn tools() {
  return tool_define(tool_registry(), "slow", "s", {parameters: {},
    handler: { a -> sleep_ms(5); return "ok" }})
}
pipeline main() {
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "resumed by trigger"})
  const a = sub_agent_run("a", {provider: "mock", background: true, tools: tools()})
  suspend_agent(a, "until approved", {conditions:
    {trigger: {kind: "review.approved", provider: "webhook"}}})
  const pa = wait_agent(a)
  const fired = trigger_fire(pa.suspension.auto_resume_trigger,
    {provider: "webhook", kind: "review.approved", payload: {decision: "approved"}})
  println(fired.status + " " + to_string(wait_agent(a).status))
  println(contains(wait_agent(a).task, "approved"))

  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption",
    arguments: {reason: "until event", conditions: {on_event: "build.done"}}}]})
  llm_mock({text: "resumed by event"})
  const b = sub_agent_run("b", {provider: "mock", background: true})
  println(wait_agent(b).status)
  println(emit_event("build.done", {ok: true}).woken == [b.id])
  const db = wait_agent(b)
  println(db.status + " " + db.task)
}
"""
    )
    assert lines(out) == [
        "dispatched completed",
        "true",
        "suspended",
        "true",
        'completed {"ok":true}',
    ]


def test_daemon_without_a_wake_source_parks_and_daemon_resume_continues(
    run_harn: RunHarn, state_dir: Path, tmp_path: Path
) -> None:
    daemon_dir = tmp_path / "daemon"
    out, _ = run_harn(
        f"""
pipeline main() {{
  llm_mock({{text: "nothing to do yet"}})
  llm_mock({{text: "woke up"}})
  const r = agent_loop("watch the queue", nil, {{provider: "mock", daemon: true,
    persist_path: "{daemon_dir}", max_iterations: 2}})
  println(r.status + " " + r.daemon_state + " " + r.reason + " " + r.initiator)
  println(r.daemon_snapshot_path)
  const again = daemon_resume("{daemon_dir}")
  println(again.status + " " + again.result.status)
  println(ends_with(again.result.summary, "woke up"))
  println(unwrap_err(try {{ daemon_resume("{daemon_dir}") }}))
}}
"""
    )
    got = lines(out)
    assert got[0] == "suspended idle daemon idle self"
    assert got[1] == f"{daemon_dir}/daemon.json"
    assert got[2] == "completed budget_exhausted"
    assert got[3] == "true"
    assert got[4].startswith("HARN-SUS-003")
    doc = json.loads((daemon_dir / "daemon.json").read_text())
    assert doc["_type"] == "daemon_snapshot"
    for key in (
        "daemon_state",
        "total_iterations",
        "transcript_summary",
        "pending_event_count",
        "queued_event_count",
        "inflight_event",
        "wake_interval_ms",
        "watch_paths",
        "event_queue_capacity",
    ):
        assert key in doc, key
    assert doc["daemon_state"] == "idle" and doc["total_iterations"] == 1
    assert doc["event_queue_capacity"] == 1024
    (own,) = snapshots(state_dir)
    assert load(own)["status"] == "completed"


def test_daemon_worker_idles_by_parking(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "idle"})
  llm_mock({text: "handled the new message"})
  const h = sub_agent_run("daemon", {provider: "mock", background: true, daemon: true,
    max_iterations: 2})
  const s = wait_agent(h)
  println(s.status + " " + s.suspension.reason + " " + s.result.resume_by_mechanism)
  resume_agent(h, "a new message arrived")
  println(wait_agent(h).status)
}
"""
    )
    assert lines(out) == ["suspended daemon idle ResumeBy.parent_llm", "completed"]
