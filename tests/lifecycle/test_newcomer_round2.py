"""Lifecycle behaviour fixed after the second newcomer round (in-process; the end-to-end
regressions are in ``tests/newcomer2``): the subagent tools of ``agent_loop``, a blocking
``sub_agent_run`` that parks, ``max_iterations: 0``, a worker waiting on itself, worker
event hooks still queued when the program ends, and the Suspension a root loop returns."""

from __future__ import annotations

from tests.lifecycle.conftest import RunHarn, lines


def test_subagent_resume_tool_resumes_the_child_with_its_input(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({match: "*childtask*", consume_match: true, tool_calls: [{id: "cp",
    name: "agent_await_resumption", arguments: {reason: "child parks"}}]})
  const child = sub_agent_run("childtask", {provider: "mock", background: true})
  println(wait_agent(child).status)
  llm_mock({match: "*You were suspended at turn*", consume_match: true, text: "child done"})
  llm_mock({match: "*parent*", consume_match: true, tool_calls: [{name: "subagent_resume",
    arguments: {handle: child.id, input: "go on"}}]})
  llm_mock({match: "*parent*", consume_match: true, text: "parent done"})
  const r = agent_loop("parent", nil, {provider: "mock", subagent_tools: true})
  println(r.tool_calls.map({ c -> c.name + ":" + c.status }))
  const w = wait_agent(child)
  println(w.status + " " + w.result.summary + " " + to_string(w.history))
}
"""
    )
    assert lines(out) == [
        "suspended",
        "[subagent_resume:ok]",
        "completed child done [childtask, go on]",
    ]


def test_a_worker_waiting_for_itself_gets_a_catchable_error(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool wait_self(id: string) -> string {
  description "waits for a worker"
  const r = try { wait_agent(id) }
  return if is_err(r) { "error: " + to_string(unwrap_err(r)) } else { "waited" }
}
pipeline main() {
  const h = sub_agent_run("t", {provider: "mock", background: true,
    tools: tool_registry([wait_self]), max_iterations: 2})
  llm_mock({tool_calls: [{name: "wait_self", arguments: {id: h.id}}]})
  llm_mock({text: "done"})
  const w = wait_agent(h)
  println(w.status)
  println(w.transcript.messages.filter({ m -> m.role == "tool" })[0].content)
}
"""
    )
    status, result = lines(out)
    assert status == "completed"
    assert result.startswith("error: ") and "cannot wait for itself" in result


def test_max_iterations_zero_ends_before_any_model_call(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
const r = agent_loop("x", nil, {provider: "mock", max_iterations: 0})
println(r.status + " " + to_string(r.llm.iterations) + " " + to_string(len(llm_mock_calls())))
"""
    )
    assert lines(out) == ["budget_exhausted 0 0"]


def test_a_blocking_sub_agent_that_parks_says_how_to_resume(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "blocking park"}}]})
llm_mock({text: "finished"})
const r = sub_agent_run("x", {provider: "mock"})
println(to_string(r.ok) + " " + r.status + " " + r.error.category + " " + r.reason)
const w = wait_agent(resume_agent(r.snapshot_path))
println(w.status + " " + w.result.summary)
"""
    )
    assert lines(out) == ["false suspended suspended blocking park", "completed finished"]


def test_a_worker_resumed_by_another_process_is_refreshed_here(run_harn: RunHarn) -> None:
    import sys

    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({text: "finished elsewhere"})
  const h = sub_agent_run("t", {provider: "mock", background: true})
  const s = wait_agent(h)
  println(s.status)
  const r = exec(PYTHON, "-m", "harnpy", "run", "--resume", s.snapshot_path)
  println(r.status)
  const w = wait_agent(h)
  println(w.status + " " + w.result.summary)
  println(list_agents()[0].status)
  const again = try { resume_agent(h) }
  println(contains(to_string(unwrap_err(again)), "HARN-SUS-003"))
}
""".replace("PYTHON", '"' + sys.executable + '"')
    )
    assert lines(out) == [
        "suspended",
        "0",
        "completed finished elsewhere",
        "completed",
        "true",
    ]


def test_a_trigger_resume_that_fails_before_taking_effect_keeps_the_wait(
    run_harn: RunHarn,
) -> None:
    out, _ = run_harn(
        """
pipeline main(harness: Harness) {
  register_session_hook("pre_resume", { p ->
    if p.resume_input?.payload?.n == 1 { throw "hook broke" }
    return true
  })
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r",
    conditions: {trigger: {kind: "k", provider: "github"}}}}]})
  llm_mock({text: "fin"})
  const h = sub_agent_run("y", {provider: "mock", background: true})
  const trig = wait_agent(h).suspension.auto_resume_trigger
  const f1 = trigger_fire(trig, {provider: "github", kind: "k", payload: {n: 1}})
  println(f1.status + " " + to_string(contains(f1.error ?? "", "hook broke")))
  println(wait_agent(h).status + " " + to_string(len(trigger_list())))
  const f2 = trigger_fire(trig, {provider: "github", kind: "k", payload: {n: 2}})
  println(f2.status + " " + wait_agent(h).status)
}
"""
    )
    assert lines(out) == ["dlq true", "suspended 1", "dispatched completed"]
