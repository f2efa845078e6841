"""``agent_loop`` stop conditions and result shape (lifecycle.md 2.13)."""

from __future__ import annotations

from tests.agents.conftest import RunHarn, lines

ECHO = """
fn echo_tools() {
  return tool_define(tool_registry(), "echo", "Echo", {
    parameters: {text: "string"},
    handler: { args -> args.text },
  })
}
"""


def test_result_shape(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "echo", arguments: {text: "a"}}], input_tokens: 3, output_tokens: 2})
  llm_mock({text: "final answer", input_tokens: 5, output_tokens: 7})
  let r = agent_loop("task", "system", {provider: "mock", tools: echo_tools(), session_id: "s-1"})
  println(keys(r).sort())
  println(keys(r.llm).sort())
  println(r.llm.iterations + r.llm.input_tokens + r.llm.output_tokens)
  println(keys(r.tools).sort())
  println(r.tools.mode)
  println(r.tool_calls[0])
  println(r.session_id + " " + r.transcript._type)
  println(r.visible_text)
}
"""
    )
    got = lines(out)
    for field in (
        "status",
        "text",
        "visible_text",
        "llm",
        "tools",
        "tool_calls",
        "deferred_user_messages",
        "daemon_state",
        "daemon_snapshot_path",
        "task_ledger",
        "trace",
        "transcript",
    ):
        assert field in got[0], field
    assert "iterations" not in got[0].strip("[]").split(", ")  # Harn's v0.8 shape: llm.iterations
    assert got[1] == "[duration_ms, input_tokens, iterations, output_tokens]"
    assert got[2] == str(2 + 8 + 9)
    assert got[3] == "[calls, mode, rejected, successful]"
    assert got[4] == "native"
    assert got[5] == (
        "{arguments: {text: a}, id: mock_call_1, iteration: 1, name: echo, result: a, status: ok}"
    )
    assert got[6] == "s-1 transcript"
    assert got[7] == "final answer"


def test_stops_when_the_model_answers_without_tool_calls(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  llm_mock({tool_calls: [{name: "echo", arguments: {text: "1"}}]})
  llm_mock({tool_calls: [{name: "echo", arguments: {text: "2"}}]})
  llm_mock({text: "done now"})
  llm_mock({text: "never used"})
  let r = agent_loop("t", nil, {provider: "mock", tools: echo_tools()})
  println(r.status + " " + to_string(r.llm.iterations) + " " + r.text)
}
"""
    )
    assert lines(out) == ["done 3 done now"]


def test_loop_until_done_nudges_until_the_sentinel(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "working on it"})
  llm_mock({text: "still working"})
  llm_mock({text: "Here it is. ##DONE##"})
  let r = agent_loop("t", nil, {provider: "mock", loop_until_done: true})
  println(r.status + " " + to_string(r.llm.iterations))
  println(r.visible_text)
  let last = llm_mock_calls()[2].messages
  println(last[len(last) - 1].role + ": " + last[len(last) - 1].content)
}
"""
    )
    got = lines(out)
    assert got[0] == "done 3"
    # visible_text keeps a bare sentinel (Harn: agent_loop_llm_retries_default)
    assert got[1:4] == ["working on it", "still working", "Here it is. ##DONE##"]
    assert got[4].startswith("user: You have not signalled completion yet.")
    assert "##DONE##" in got[4]


def test_custom_done_sentinel_and_stuck_after_max_nudges(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  for i in range(5) { llm_mock({text: "no sentinel here"}) }
  let r = agent_loop("t", nil, {provider: "mock", loop_until_done: true, done_sentinel: "FIN", max_nudges: 2})
  println(r.status + " " + to_string(r.llm.iterations))
  llm_mock_clear()
  llm_mock({text: "ok FIN"})
  let r2 = agent_loop("t", nil, {provider: "mock", persistent: true, done_sentinel: "FIN"})
  println(r2.status + " " + to_string(r2.llm.iterations))
}
"""
    )
    assert lines(out) == ["stuck 3", "done 1"]


def test_max_iterations_gives_budget_exhausted(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  for i in range(10) { llm_mock({tool_calls: [{name: "echo", arguments: {text: "again"}}]}) }
  let r = agent_loop("t", nil, {provider: "mock", tools: echo_tools(), max_iterations: 3})
  println(r.status + " " + to_string(r.llm.iterations) + " " + to_string(len(r.tool_calls)))
}
"""
    )
    assert lines(out) == ["budget_exhausted 3 3"]


def test_provider_error_ends_the_loop_with_its_error(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "first"})
  llm_mock({error: {category: "overloaded", message: "busy"}})
  let r = agent_loop("t", nil, {provider: "mock", loop_until_done: true, llm_retries: 0})
  println(r.status + " " + r.error.category + " " + r.error.message + " " + to_string(r.iterations))
  let d = agent_loop("t", nil, {provider: "openai", model: "gpt-4o"})
  println(d.status + " " + d.error.category)
}
"""
    )
    # no flat `iterations` in the result (Harn's v0.8 shape: result.llm.iterations)
    assert lines(out) == ["provider_error overloaded busy nil", "provider_error disabled"]


def test_transcript_records_roles_tool_calls_and_results(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  llm_mock({text: "let me check", tool_calls: [{id: "c1", name: "echo", arguments: {text: "x"}}]})
  llm_mock({text: "x it is"})
  let r = agent_loop("q", nil, {provider: "mock", tools: echo_tools()})
  for m in transcript_messages(r.transcript) {
    println(m.role + "|" + to_string(m.content) + "|" + to_string(m?.tool_calls?[0]?.name) + "|" + to_string(m?.tool_call_id))
  }
  println(transcript_events(r.transcript).map({ e -> e.kind }))
}
"""
    )
    got = lines(out)
    assert got[:4] == [
        "user|q|nil|nil",
        "assistant|let me check|echo|nil",
        "tool|x|nil|c1",
        "assistant|x it is|nil|nil",
    ]
    assert got[4] == ("[message, message, tool_call, message, tool_result, message, loop_status]")


def test_messages_option_and_harness_first_form(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { agent_loop } from "std/agent/loop"
pipeline main(harness: Harness) {
  llm_mock({text: "ok"})
  let r = agent_loop(harness, nil, nil, {provider: "mock", messages: [
    {role: "user", content: "first"}, {role: "assistant", content: "reply"}, {role: "user", content: "second"},
  ]})
  println(r.status)
  println(len(llm_mock_calls()[0].messages))
}
"""
    )
    assert lines(out) == ["done", "3"]


def test_invalid_options_throw(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(unwrap_err(try { agent_loop("t", nil, {provider: "mock", max_iterations: -1}) }))
  println(unwrap_err(try { agent_loop("t", nil, {provider: "mock", tools: 42}) }))
}
"""
    )
    assert lines(out) == [
        "agent_loop: option `max_iterations` must be a non-negative int",
        "agent_loop: tools must be a tool registry or a list of tools",
    ]


def test_daemon_loop_idles_and_records_the_internal_park(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "nothing to do"})
  llm_mock({text: "still idle"})
  let r = agent_loop("watch", nil, {provider: "mock", daemon: true, wake_interval_ms: 5, max_iterations: 2})
  println(r.status + " " + to_string(r.llm.iterations) + " " + to_string(r.daemon_state))
  let audits = transcript_events_by_kind(r.transcript, "tool_call_audit")
  println(len(audits))
  println(audits[0].audit)
  let wake = llm_mock_calls()[1].messages
  println(wake[len(wake) - 1].content)
  llm_mock({text: "idle"})
  let parked = agent_loop("watch", nil, {provider: "mock", daemon: true})
  println(parked.status + " " + parked.daemon_state + " " + parked.reason)
}
"""
    )
    got = lines(out)
    assert got[0] == "budget_exhausted 2 idle"
    assert got[1] == "2"
    assert got[2] == (
        "{conditions: {timeout: {duration_minutes: 1, on_timeout: resume_with_input}}, "
        "initiator: self, reason: daemon idle, status: daemon_idle}"
    )
    assert got[3] == "[daemon wake: timer]"
    # no wake source: the daemon parks through agent_await_resumption (seed "Daemon idle")
    assert got[4] == "suspended idle daemon idle"


def test_text_tool_format_parses_tool_call_blocks(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  llm_mock({text: "Checking. <tool_call>{\\"name\\": \\"echo\\", \\"arguments\\": {\\"text\\": \\"hi\\"}}</tool_call>"})
  llm_mock({text: "It said hi."})
  let r = agent_loop("go", "You help.", {provider: "mock", tools: echo_tools(), tool_format: "text"})
  println(r.status + " " + to_string(r.llm.iterations) + " " + r.tool_calls[0].id + " " + r.tool_calls[0].result)
  println(r.visible_text)
  let calls = llm_mock_calls()
  println(calls[0].tools == nil)
  println(contains(calls[0].system, "- echo(text: string): Echo"))
  println(calls[1].messages[2].role)
  println(calls[1].messages[2].content)
}
"""
    )
    got = lines(out)
    assert got[0] == "done 2 text_call_1_1 hi"
    assert got[1:3] == ["Checking.", "It said hi."]
    assert got[3:6] == ["true", "true", "user"]
    assert got[6:] == ['<tool_result name="echo" id="text_call_1_1">', "hi", "</tool_result>"]


def test_post_turn_callback_injects_and_stops(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        ECHO
        + """
pipeline main() {
  for i in range(5) { llm_mock({tool_calls: [{name: "echo", arguments: {text: "x"}}]}) }
  let r = agent_loop("t", nil, {provider: "mock", tools: echo_tools(), max_iterations: 5,
    post_turn_callback: { info ->
      println(to_string(info.iteration) + ":" + info.tool_results[0].tool_name + ":" + info.tool_results[0].status)
      if info.iteration == 2 { return {message: "wrap up", stop: true} }
      return "keep going"
    }})
  println(r.status + " " + to_string(r.llm.iterations))
  println(transcript_messages(r.transcript).filter({ m -> m.role == "user" }).map({ m -> m.content }))
  println(unwrap_err(try { agent_loop("t", nil, {provider: "mock", post_turn_callback: 3}) }))
}
"""
    )
    assert lines(out) == [
        "1:echo:ok",
        "2:echo:ok",
        "done 2",
        "[t, keep going, wrap up]",
        "agent_loop: post_turn_callback must be a function, got 3",
    ]
