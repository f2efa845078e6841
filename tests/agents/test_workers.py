"""Workers: spawn, wait, list, close, send_input, statuses, lineage and events
(lifecycle.md 1-3, 12)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harnpy.lifecycle.services import services
from harnpy.llm import LlmResponse
from harnpy.runtime.errors import HarnError
from tests.agents.conftest import RunHarn, lines

SUMMARY_FIELDS = [
    "_type",
    "id",
    "name",
    "task",
    "mode",
    "status",
    "created_at",
    "started_at",
    "finished_at",
    "awaiting_started_at",
    "history",
    "request",
    "provenance",
    "result",
    "error",
    "artifact_count",
    "has_transcript",
    "parent_worker_id",
    "parent_stage_id",
    "child_run_id",
    "child_run_path",
    "execution",
    "snapshot_path",
    "audit",
]


def test_sub_agent_worker_summary_and_wait(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  llm_mock({text: "alpha result", match: "*alpha*"})
  let h = sub_agent_run("do alpha", {provider: "mock", background: true})
  println(h.status + " " + h.mode + " " + h.name + " " + h._type)
  println(h.result == nil && h.finished_at == nil && !h.has_transcript)
  let done = wait_agent(h)
  println(done.status + " " + done.result.summary + " " + to_string(done.has_transcript))
  println(done.finished_at != nil)
  println(done.history)
  println(done.id == h.id && starts_with(h.id, "worker_"))
  println(starts_with(done.provenance.session_id, "sub_agent_session_"))
  println(keys(done).sort())
}
"""
    )
    got = lines(out)
    assert got[0] == "running sub_agent sub-agent agent_handle"
    assert got[1:3] == ["true", "completed alpha result true"]
    assert got[3] == "true"
    assert got[4] == "[do alpha]"
    assert got[5:7] == ["true", "true"]
    keys = got[7].strip("[]").split(", ")
    assert sorted(SUMMARY_FIELDS + ["transcript"]) == keys
    rec = next(iter(services(rt).workers.values()))
    assert rec.created_at.endswith("Z") and "T" in rec.created_at  # RFC 3339 (13 Q2)


def test_spawn_agent_stage_worker_and_config_errors(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "stage out"})
  let h = spawn_agent({task: "stage task", node: {provider: "mock", system: "be terse"}, name: "st", wait: true})
  println(h.status + " " + h.mode + " " + h.name + " " + h.request.system + " " + h.result.summary)
  for bad in [nil, 5, {node: {}}, {task: "x"}, {task: "x", graph: {}}, {task: "x", node: {}, tools: []},
              {task: "x", node: {}, carry: {transcript_mode: "weird"}}] {
    println(unwrap_err(try { spawn_agent(bad) }))
  }
}
"""
    )
    got = lines(out)
    assert got[0] == "completed stage st be terse stage out"
    assert got[1:] == [
        "spawn_agent: missing config",
        "spawn_agent: config must be a dict",
        "spawn_agent: config.task is required",
        "spawn_agent: config requires either graph or node",
        "spawn_agent: workflow workers (config.graph) are not supported by harnpy",
        "spawn_agent: config.tools must be a non-empty list of tool names",
        "spawn_agent: carry.transcript_mode must be one of inherit, fork, reset, compact; "
        "got `weird`",
    ]


def test_wait_on_a_list_list_agents_and_events(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  llm_mock({text: "one", match: "*first*"})
  llm_mock({text: "two", match: "*second*"})
  let a = sub_agent_run("first", {provider: "mock", background: true, name: "a"})
  let b = sub_agent_run("second", {provider: "mock", background: true, name: "b"})
  let both = wait_agent([b, a])
  println(both.map({ s -> s.name + "=" + s.result.summary }))
  println(list_agents().map({ s -> s.name }))
  println(worker_events().map({ e -> e.event + "/" + e.status + "/" + e.worker.name }).sort())
}
"""
    )
    got = lines(out)
    assert got[0] == "[b=two, a=one]"
    assert got[1] == "[a, b]"  # ordered by id = creation order
    assert got[2] == (
        "[WorkerCompleted/completed/a, WorkerCompleted/completed/b, "
        "WorkerSpawned/running/a, WorkerSpawned/running/b]"
    )
    ev = services(rt).worker_events[0]
    assert set(ev) == {"event", "status", "worker_id", "worker", "at"}


def test_send_input_continues_the_transcript(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "first answer"})
  llm_mock({text: "second answer"})
  let h = sub_agent_run("question one", {provider: "mock", background: true})
  println(unwrap_err(try { send_input(h, "too early") }))
  wait_agent(h)
  println(unwrap_err(try { send_input(h, "  ") }))
  println(unwrap_err(try { send_input(h) }))
  let again = send_input(h, "question two")
  println(again.status + " " + again.task + " " + to_string(again.result))
  let done = wait_agent(again)
  println(done.status + " " + done.result.summary + " " + to_string(done.history))
  let seen = llm_mock_calls()[1].messages.map({ m -> m.role + ":" + m.content })
  println(seen)
}
"""
    )
    got = lines(out)
    assert got[0].startswith("send_input: worker worker_") and got[0].endswith(" is still running")
    assert got[1] == "send_input: task text must not be empty"
    assert got[2] == "send_input: requires worker handle and task text"
    assert got[3] == "running question two nil"
    assert got[4] == "completed second answer [question one, question two]"
    assert got[5] == "[user:question one, assistant:first answer, user:question two]"


def test_close_agent_cancels_and_is_idempotent(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "x"})
  let h = sub_agent_run("t", {provider: "mock", background: true})
  let c = close_agent(h)
  println(c.status + " " + c.error)
  println(close_agent(h.id).status)
  println(wait_agent(h).status)
  println(worker_events().map({ e -> e.event }))
  println(unwrap_err(try { close_agent("worker_nope") }))
  println(unwrap_err(try { close_agent({name: "x"}) }))
  println(unwrap_err(try { close_agent(42) }))
}
"""
    )
    assert lines(out) == [
        "cancelled worker cancelled",
        "cancelled",
        "cancelled",
        "[WorkerSpawned, WorkerCancelled]",
        "unknown worker: worker_nope",
        "agent handle dict is missing an id field",
        "expected agent handle or worker id",
    ]


class _SlowProvider:
    """A provider whose answers take ``delay`` seconds (real time, on the pool thread)."""

    name = "openai"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.started = threading.Event()

    def complete(self, request: Any) -> LlmResponse:
        self.started.set()
        time.sleep(self.delay)
        return LlmResponse(text="late answer", model="slow", provider="openai")


def test_close_while_a_model_call_is_in_flight_drops_the_late_answer(run_harn: RunHarn) -> None:
    slow = _SlowProvider(0.2)

    def setup(rt: Any) -> None:
        services(rt).llm._providers["openai"] = slow

    out, rt = run_harn(
        """
pipeline main() {
  let h = sub_agent_run("t", {provider: "openai", model: "slow", background: true})
  yield_now()
  println(close_agent(h).status)
  sleep(400)
  println(wait_agent(h).status)
  println(worker_events().map({ e -> e.event }))
}
""",
        setup=setup,
    )
    assert slow.started.is_set()
    assert lines(out) == ["cancelled", "cancelled", "[WorkerSpawned, WorkerCancelled]"]
    rec = next(iter(services(rt).workers.values()))
    assert rec.thread is None and rec.result is None


def test_lineage_parent_worker_id(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
fn spawner() {
  return tool_define(tool_registry(), "spawn_child", "start a helper", {
    parameters: {},
    handler: { args -> sub_agent_run("child task", {provider: "mock", background: true, name: "child"}).id },
  })
}
pipeline main() {
  llm_mock({tool_calls: [{name: "spawn_child", arguments: {}}], match: "*parent task*", consume_match: true})
  llm_mock({text: "child done", match: "*child task*"})
  llm_mock({text: "parent done", match: "*parent task*", consume_match: true})
  let p = sub_agent_run("parent task", {provider: "mock", background: true, name: "parent", tools: spawner()})
  wait_agent(p)
  let all = list_agents()
  let child = all.filter({ w -> w.name == "child" })[0]
  println(child.parent_worker_id == p.id)
  println(child.provenance.parent_worker_id == p.id)
  println(p.parent_worker_id == nil)
  println(wait_agent(child).status)
}
"""
    )
    assert lines(out) == ["true", "true", "true", "completed"]


def test_provider_failure_marks_the_worker_failed(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let h = sub_agent_run("t", {provider: "openai", model: "gpt-4o", background: true})
  let s = wait_agent(h)
  println(s.status)
  println(contains(s.error, "HARN_LLM_CALLS_DISABLED"))
  println(worker_events().map({ e -> e.event }))
}
"""
    )
    assert lines(out) == ["failed", "true", "[WorkerSpawned, WorkerFailed]"]


def test_a_worker_whose_task_raises_fails_and_the_first_wait_reraises(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tool result holding a host object (a stream's pull node) cannot be snapshotted: in
    # snapshot-everywhere mode the turn boundary raises, which ends the worker's task
    # with an error.
    monkeypatch.setenv("HARNPY_SNAPSHOT_EVERYWHERE", "1")
    out, _ = run_harn(
        """
pipeline main() {
  let tools = tool_define(tool_registry(), "rng", "a generator", {parameters: {}, handler: { a -> stream.map([1], { x -> x }) }})
  llm_mock({tool_calls: [{name: "rng", arguments: {}}]})
  let h = sub_agent_run("t", {provider: "mock", background: true, tools: tools})
  let first = try { wait_agent(h) }
  println(is_err(first))
  println(unwrap_err(first))
  let second = wait_agent(h)
  println(second.status)
  println(contains(second.error, "snapshot at turn boundary failed"))
}
"""
    )
    got = lines(out)
    assert got[0] == "true"
    assert "snapshot at turn boundary failed: cannot snapshot stream_node held at" in got[1]
    assert "result" in got[1]  # the message names where the value is held
    assert got[2:] == ["failed", "true"]


def test_resolve_rejects_bad_handles_in_wait() -> None:
    from harnpy.lifecycle.workers import resolve
    from harnpy.runtime.runtime import Runtime

    rt = Runtime()
    with pytest.raises(HarnError, match="unknown worker: worker_x"):
        resolve(rt, "worker_x", "wait_agent")
    with pytest.raises(HarnError, match="missing worker handle"):
        resolve(rt, None, "wait_agent")


def test_event_listeners_see_every_worker_event(run_harn: RunHarn) -> None:
    seen: list[str] = []

    def setup(rt: Any) -> None:
        services(rt).event_listeners.append(
            lambda ev: seen.append(ev["event"] + ":" + ev["status"])
        )

    run_harn(
        """
pipeline main() {
  llm_mock({text: "x"})
  wait_agent(sub_agent_run("t", {provider: "mock", background: true}))
}
""",
        setup=setup,
    )
    assert seen == ["WorkerSpawned:running", "WorkerCompleted:completed"]


def test_background_sub_agent_result_is_the_envelope_and_token_budget(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool search(query: string) -> string {
  description "Search."
  return "found " + query
}
pipeline main() {
  llm_mock({tool_calls: [{id: "b1", name: "search", arguments: {query: "q"}}], input_tokens: 20, output_tokens: 12})
  let env = sub_agent_run("go", {provider: "mock", tools: [search], max_iterations: 3, token_budget: 8})
  println([env.ok, env.status, env.budget_exceeded, env.tokens_used])
  llm_mock({text: "background summary"})
  let h = sub_agent_run("bg", {provider: "mock", background: true})
  let done = wait_agent(h)
  println([done.status, done.result.ok, done.result.summary, done.result.budget_exceeded])
  println(done.result.error)
}
"""
    )
    got = lines(out)
    assert got[0] == "[false, budget_exhausted, true, 32]"
    assert got[1] == "[completed, true, background summary, false]"
    assert got[2] == "nil"


def test_worker_request_and_provenance(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import "std/agents"
pipeline main() {
  llm_mock({text: "first"})
  let h = sub_agent_run("Investigate", {provider: "mock", background: true,
    request: {topic: "t"}, research_questions: ["q1"], action_items: [{id: "a1"}],
    workflow_stages: ["research", "implement"], verification_steps: ["make test"]})
  println([worker_request(h).payload.topic, worker_research_questions(h), worker_action_items(h)[0].id])
  println([worker_workflow_stages(h), worker_verification_steps(h)])
  let done = wait_agent(h)
  println([worker_provenance(done).worker_id == done.id, worker_result(done).summary])
  llm_mock({text: "second"})
  let again = wait_agent(send_input(done, "Follow up"))
  println([again.task, worker_request(again).task])
}
"""
    )
    assert lines(out) == [
        "[t, [q1], a1]",
        "[[research, implement], [make test]]",
        "[true, first]",
        "[Follow up, Investigate]",
    ]
