"""Lifecycle hooks around suspend / resume (lifecycle.md 7, 13 Q12/Q21) and transcript
continuity on resume (8)."""

from __future__ import annotations

from tests.lifecycle.conftest import PARK_ONCE, RunHarn, lines

SLOW_WORKER = """
fn tools() {
  return tool_define(tool_registry(), "slow", "s", {parameters: {},
    handler: { a -> sleep_ms(5); return "ok" }})
}
"""


def test_pre_suspend_deny_block_false_and_modify(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        SLOW_WORKER
        + """
fn worker() {
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "end"})
  return sub_agent_run("t", {provider: "mock", background: true, tools: tools()})
}
pipeline main() {
  let seen = []
  for control in [{decision: "deny", reason: "policy"}, false, {block: true}] {
    clear_session_hooks()
    register_session_hook("pre_suspend", { e -> return control })
    const h = worker()
    const s = suspend_agent(h, "pause")
    println(s.status + " | " + s.pre_suspend_denied)
    println(wait_agent(h).status)
  }
  clear_session_hooks()
  register_session_hook("pre_suspend", { e -> return {modify: {reason: "amended: " + e.reason}} })
  register_session_hook("post_suspend", { e ->
    println("post " + to_string(keys(e)) + " " + e.reason)
    return nil
  })
  const h = worker()
  println(suspend_agent(h, "pause").suspension.reason)
  println(wait_agent(h).status)
  println(lifecycle_audit_log_take().filter({ a -> a.kind == "pre_suspend_denied" })
    .map({ a -> a.payload.reason }))
  println(worker_events().filter({ e -> e.event == "WorkerSuspended" }).map({ e -> e.reason }))
}
"""
    )
    assert lines(out) == [
        "running | policy",
        "completed",
        "running | PreSuspend hook returned false",
        "completed",
        "running | PreSuspend hook blocked the operation",
        "completed",
        "post [event, reason, snapshot_path, worker] amended: pause",
        "amended: pause",
        "suspended",
        "[policy, PreSuspend hook returned false, PreSuspend hook blocked the operation]",
        "[amended: pause]",
    ]


def test_pre_suspend_deny_of_a_self_park_keeps_the_loop_running(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  register_session_hook("pre_suspend", { e ->
    println("pre " + to_string(keys(e)) + " " + e.initiator + " " + e.reason)
    return {block: true, reason: "not now"}
  })
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "bored"}}]})
  llm_mock({text: "kept working"})
  const done = wait_agent(sub_agent_run("t", {provider: "mock", background: true}))
  println(done.status + " " + done.result.summary)
  const calls = llm_mock_calls()
  println(calls[1].messages[len(calls[1].messages) - 1].content)
}
"""
    )
    assert lines(out) == [
        "pre [conditions, event, initiator, reason, worker] self bored",
        "completed kept working",
        "[agent_await_resumption was denied by a PreSuspend hook: not now. Continue working.]",
    ]


def test_pre_resume_deny_and_modify_post_resume(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  wait_agent(h)
  register_session_hook("pre_resume", { e ->
    println("pre " + to_string(keys(e)) + " " + to_string(e.resume_input))
    return {decision: "deny", reason: "hold"}
  })
  const denied = resume_agent(h, "first try")
  println(denied.status + " " + denied.pre_resume_denied)
  clear_session_hooks()
  register_session_hook("pre_resume", { e -> return {modify: {resume_input: "amended"}} })
  register_session_hook("post_resume", { e ->
    println("post " + to_string(keys(e)) + " " + to_string(e.worker.id == h.id))
    return {block: true}
  })
  println(resume_agent(h, "second try").status)
  println(wait_agent(h).history)
}
"""
    )
    assert lines(out) == [
        "pre [continue_transcript, event, resume_input, worker] first try",
        "suspended hold",
        "post [event, worker] true",
        "running",
        "[Park until review., amended]",
    ]


def test_worker_event_hooks_see_the_worker_not_its_transcript(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  register_session_hook("worker_suspended", { e ->
    println(e.event + " " + to_string(keys(e.worker)))
  })
  register_session_hook("worker_resumed", { e -> println(e.event + " " + e.worker.status) })
"""
        + PARK_ONCE
        + """
  wait_agent(h)
  resume_agent(h)
  wait_agent(h)
}
"""
    )
    assert lines(out) == [
        "WorkerSuspended [id, metadata, mode, name, status, task]",
        "WorkerResumed running",
    ]


CONTINUITY = """
fn tools() {
  return tool_define(tool_registry(), "noop", "n", {parameters: {}, handler: { a -> "ok" }})
}
pipeline main() {
  llm_mock({text: "thinking about it", tool_calls: [{id: "n0", name: "noop", arguments: {}}]})
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "first park"}}]})
  llm_mock({tool_calls: [{id: "n1", name: "noop", arguments: {}}]})
  llm_mock({tool_calls: [{id: "p2", name: "agent_await_resumption", arguments: {reason: "second park"}}]})
  llm_mock({text: "done"})
  const h = sub_agent_run("Investigate the outage.", {provider: "mock", background: true,
    tools: tools(), max_iterations: 8, OPTIONS})
  wait_agent(h)
  resume_agent(h, "look at the logs", CONTINUE)
  const second = wait_agent(h)
  println(second.suspension.suspended_at_turn)
  resume_agent(h)
  const done = wait_agent(h)
  println(done.status)
  const calls = llm_mock_calls()
  for k in [2, 3, 4] {
    const msgs = calls[k].messages
    println(to_string(len(msgs)) + " " + msgs[len(msgs) - 1].role + ": " + msgs[len(msgs) - 1].content)
    println(len(msgs.filter({ m -> contains(to_string(m.content), "You were suspended at turn") })))
  }
  println(len(transcript_events_by_kind(done.transcript, "system_reminder")))
}
"""


def test_continue_transcript_true_reminder_is_one_shot(run_harn: RunHarn) -> None:
    out, _ = run_harn(CONTINUITY.replace("OPTIONS", 'name: "w"').replace("CONTINUE", "true"))
    got = lines(out)
    assert got[0] == "4"
    assert got[1] == "completed"
    # the first resumed request: the whole transcript plus the trailing reminder
    assert got[2] == (
        "6 user: You were suspended at turn 2 for reason: 'first park'. You have been "
        "resumed by the operator. The resumer provided input: look at the logs."
    )
    assert got[3] == "1"
    # the next request: the reminder was consumed
    assert got[4] == "7 tool: ok"
    assert got[5] == "0"
    # after the second park: a new reminder, the first one is not re-applied
    assert got[6].startswith("10 user: You were suspended at turn 4 for reason: 'second park'.")
    assert got[6].endswith("No input was provided.")
    assert got[7] == "1"
    assert got[8] == "0"


def test_continue_transcript_false_resumes_from_a_digest(run_harn: RunHarn) -> None:
    out, _ = run_harn(CONTINUITY.replace("OPTIONS", 'name: "w"').replace("CONTINUE", "false"))
    got = lines(out)
    first = got[2]
    # one user message holding the digest, then the reminder (with the digest and input)
    assert first.startswith("2 user: You were suspended at turn 2 for reason: 'first park'.")
    assert "The resumer provided input: look at the logs." in first
    assert "Pre-suspend conversation digest: user: Investigate the outage." in first
    assert got[1] == "completed"


def test_reminders_disabled_input_becomes_a_message(run_harn: RunHarn) -> None:
    out, _ = run_harn(CONTINUITY.replace("OPTIONS", "reminders: false").replace("CONTINUE", "true"))
    got = lines(out)
    assert got[2] == "6 user: look at the logs"
    assert got[3] == "0"
    assert got[4] == "8 tool: ok"  # the input stays in the transcript as a user message


def test_subagent_resume_by_a_parent_loop(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { agent_lifecycle_tools } from "std/agent/workers"
import { agent_capture_events } from "std/agent/events"
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "ask parent"}}]})
  const child = sub_agent_run("child", {provider: "mock", background: true})
  wait_agent(child)
  // the parent's model resumes the child with a lifecycle tool
  llm_mock({tool_calls: [{id: "r", name: "subagent_resume",
    arguments: {handle: child.id, input: "go ahead"}}]})
  llm_mock({text: "parent done"})
  llm_mock({text: "child done"})
  const cap = agent_capture_events("parent-session", { ->
    return agent_loop("parent", nil, {provider: "mock", session_id: "parent-session",
      tools: agent_lifecycle_tools(tool_registry(), {subagents: true}), max_iterations: 3})
  })
  println(cap.result.status)
  const done = wait_agent(child)
  println(done.status)
  const audit = cap.events.filter({ e -> e.type == "tool_call_audit" })
  println(audit.map({ e -> e.tool_name + " " + e.audit.initiator }))
  const child_calls = llm_mock_calls().filter({ c -> c.messages[0].content == "child" })
  const resumed = child_calls[1].messages
  println(resumed[len(resumed) - 1].content)
}
"""
    )
    got = lines(out)
    assert got[0] == "done"
    assert got[1] == "completed"
    assert got[2] == "[subagent_resume parent]"
    assert got[3] == (
        "You were suspended at turn 1 for reason: 'ask parent'. You have been resumed by "
        "your parent agent. The resumer provided input: go ahead."
    )


def test_suspension_and_resume_spans(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        "pipeline main() {\n  enable_tracing(true)"
        + PARK_ONCE
        + """
  wait_agent(h)
  resume_agent(h, "x")
  wait_agent(h)
  for s in trace_spans().filter({ s -> s.kind == "suspension" || s.kind == "resume" }) {
    println(s.kind + " " + to_string(keys(s.metadata)) + " parent=" + to_string(s.parent_id)
      + " links=" + to_string(s.links.map({ l -> l.kind })))
  }
}
"""
    )
    assert lines(out) == [
        "suspension [handle, initiator, pipeline_id, reason] parent=nil links=[]",
        "resume [continue_transcript, had_resume_input, handle, initiator] parent=nil "
        "links=[suspension]",
    ]


def test_suspend_agent_records_the_transcript_line(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        SLOW_WORKER
        + """
pipeline main() {
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "continued"})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools()})
  suspend_agent(h, "operator pause")
  const s = wait_agent(h)
  println(s.result.initiator + " " + s.result.reason + " " + to_string(s.result.iterations_completed))
  const msgs = transcript_messages(s.transcript)
  println(msgs[len(msgs) - 1].content)
  resume_agent(h)
  println(wait_agent(h).status)
}
"""
    )
    assert lines(out) == [
        "operator operator pause 1",
        "Worker suspended before the next turn: operator pause",
        "completed",
    ]
