"""A durable waitpoint inside a tool that ``agent_loop`` calls: the whole program parks into
the store mid-tool, and the process that resumes it carries on inside the tool's frame
(its locals intact) with the model replies that were still queued (issue 10, point 2)."""

from __future__ import annotations

from pathlib import Path

from tests.waitpoints.helpers import run

PROGRAM = """
import { create, wait } from "std/waitpoint"

tool approve(title: string) -> string {
  description "Ask an editor to approve a post"
  let asked_for = "post " + title
  let wp = create({id: "ap-" + title})
  let done = wait(wp)
  println("tool resumed: ${asked_for} -> ${done.value}")
  return "approved: " + to_string(done.value)
}

pipeline default() {
  llm_mock({tool_calls: [{name: "approve", arguments: {title: "launch"}}]})
  llm_mock({text: "published after approval"})
  llm_mock({text: "an extra reply nobody asks for"})
  let r = agent_loop("publish it", nil,
    {provider: "mock", tools: tool_registry([approve]), max_iterations: 4})
  println("loop: ${r.status}: ${r.text}")
  let tool_results = r.transcript.messages.filter({ m -> m.role == "tool" })
  println("tool result: ${tool_results[0].content}")
}
"""


def test_agent_loop_parks_inside_a_tool_and_resumes_with_its_queue(
    store_url: str, tmp_path: Path
) -> None:
    (tmp_path / "agent.harn").write_text(PROGRAM)
    first = run("run", "agent.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    assert "parked on waitpoint ap-launch" in first.stderr
    assert "tool resumed" not in first.stdout

    done = run("waitpoint", "complete", "ap-launch", '"yes"', cwd=tmp_path, store=store_url)
    assert done.returncode == 0, done.stderr
    resumed = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
    # the tool's frame continued: its local from before the park is there
    assert "tool resumed: post launch -> yes" in out
    # the next model call took the reply queued before the park, not a default mock reply
    assert "loop: done: published after approval" in out
    assert "tool result: approved: yes" in out
    assert "parked on waitpoint" not in resumed.stderr


TIMED_TOOL = """
import { create, wait } from "std/waitpoint"

tool approve(title: string) -> string {
  description "Ask an editor to approve a post"
  sleep(150)
  let done = wait(create({id: "ap-" + title}))
  sleep(150)
  return "approved: " + to_string(done.value)
}

pipeline default() {
  llm_mock({tool_calls: [{id: "c1", name: "approve", arguments: {title: "launch"}}]})
  llm_mock({text: "published"})
  let r = agent_loop("publish it", nil,
    {provider: "mock", tools: tool_registry([approve]), max_iterations: 4})
  let runs = agent_trace().filter({ e -> e.type == "tool_execution" })
  println("${r.status} ${len(runs)} ${runs[0].tool_use_id} ${runs[0].status}")
  println(to_string(runs[0].duration_ms))
}
"""


def test_a_tool_parked_mid_call_reports_its_running_time_after_a_resume(
    store_url: str, tmp_path: Path
) -> None:
    import time

    (tmp_path / "agent.harn").write_text(TIMED_TOOL)
    first = run("run", "agent.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    time.sleep(2.0)  # parked: this time is not the tool's
    assert (
        run("waitpoint", "complete", "ap-launch", "1", cwd=tmp_path, store=store_url).returncode
        == 0
    )
    resumed = run("waitpoint", "resume", cwd=tmp_path, store=store_url)
    assert resumed.returncode == 0, resumed.stderr
    head, ms = resumed.stdout.splitlines()
    assert head == "done 1 c1 ok"
    # the call's start was kept through the park (another process resumed it): the time it
    # ran before the park and after it, not the two seconds it was parked
    assert 300 <= int(ms) < 1500, resumed.stdout
