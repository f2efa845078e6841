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
