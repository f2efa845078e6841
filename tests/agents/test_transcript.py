"""Transcripts as data and their helpers."""

from __future__ import annotations

from tests.agents.conftest import RunHarn, lines


def test_transcript_helpers(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  var t = transcript({purpose: "demo"})
  println(t._type + " " + to_string(len(transcript_messages(t))) + " " + t.metadata.purpose)
  t = transcript_add_message(t, "system", "rules")
  t = transcript_add_message(t, "user", "hi")
  t = transcript_add_message(t, "assistant", nil, {tool_calls: [{id: "c", name: "f", arguments: {}}]})
  t = transcript_add_message(t, "tool", "result", {tool_call_id: "c"})
  t = transcript_add_message(t, "assistant", "bye")
  println(transcript_messages(t).map({ m -> m.role }))
  println(transcript_events_by_kind(t, "message").map({ e -> e.index }))
  println(transcript_stats(t))
  let copy = transcript_import(transcript_export(t))
  println(copy == t)
  let fork = transcript_fork(t, {drop_messages: true})
  println(to_string(len(transcript_messages(fork))) + " " + to_string(fork.metadata.forked_from == transcript_id(t)))
  let small = transcript_compact(t, {keep_last: 2})
  println(transcript_messages(small).map({ m -> m.role }))
  println(transcript_summary(small))
  println(len(transcript_events_by_kind(small, "compaction")))
  println(transcript_messages(transcript_from_messages([{role: "user", content: "x"}]))[0].content)
  println(unwrap_err(try { transcript_add_message(t, "robot", "beep") }))
  println(transcript_messages(nil))
}
"""
    )
    got = lines(out)
    assert got[0] == "transcript 0 demo"
    assert got[1] == "[system, user, assistant, tool, assistant]"
    assert got[2] == "[0, 1, 2, 3, 4]"
    assert got[3] == (
        "{assistant_message_count: 2, event_count: 5, has_summary: false, message_count: 5, "
        "system_message_count: 1, system_reminder_count: 0, tool_call_count: 1, "
        "tool_result_message_count: 1, user_facing_message_count: 3, user_message_count: 1, "
        "visible_event_count: 5}"
    )
    assert got[4] == "true"
    assert got[5] == "0 true"
    assert got[6] == "[tool, assistant]"
    assert got[7:10] == ["system: rules", "user: hi", "assistant: called f"]
    assert got[10] == "1"
    assert got[11] == "x"
    assert got[12] == "transcript: unknown message role robot"
    assert got[13] == "[]"


def test_transcript_lifecycle_and_rendering(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let t = add_assistant(add_user(transcript(), "hello"), "hi there")
  let archived = transcript_archive(t)
  println(archived.state + " " + transcript_resume(archived).state + " " + transcript_abandon(t).state)
  println(t.state)
  println(transcript_render_visible(transcript_resume(archived)))
  println(transcript_render_full(transcript_resume(archived)))
  let fresh = transcript_reset({metadata: {source: "test"}})
  println(to_string(len(transcript_messages(fresh))) + " " + fresh.metadata.source + " " + fresh.state)
  println(add_message([{role: "user", content: "a"}], "assistant", "b"))
  println(unwrap_err(try { add_message(t, "robot", "x") }))
}
"""
    )
    got = lines(out)
    assert got[0] == "archived active abandoned"
    assert got[1] == "active"  # value semantics: the argument is not changed
    assert got[2:4] == ["user: hello", "assistant: hi there"]
    assert got[4:8] == [
        "[public] user: hello",
        "[public] assistant: hi there",
        "[internal] transcript archived",
        "[internal] transcript resumed",
    ]
    assert got[8] == "0 test active"
    assert got[9] == "[{content: a, role: user}, {content: b, role: assistant}]"
    assert got[10] == "transcript: unknown message role robot"


def test_transcript_stats_counts_hand_built_transcripts(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let t = {
    _type: "transcript",
    messages: [
      {role: "user", content: "hi"},
      {role: "assistant", content: "", tool_calls: [{id: "a"}, {id: "b"}]},
      {role: "tool", content: "ok"},
      {role: "tool_result", content: "ok"},
    ],
    events: [{kind: "message", visibility: "visible"}, {kind: "x", visibility: "hidden"}],
  }
  let s = transcript_stats(t)
  println([s.user_facing_message_count, s.tool_result_message_count, s.tool_call_count, s.visible_event_count])
  println(transcript_stats(nil).message_count)
}
"""
    )
    assert lines(out) == ["[2, 2, 2, 1]", "0"]


def test_estimate_tokens_and_microcompact(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  println(estimate_tokens([{role: "user", content: "a".repeat(400)}, {role: "assistant", content: "b".repeat(40)}]))
  println(microcompact("short", 100))
  let cut = microcompact("x".repeat(1000), 100)
  println(cut.contains("[... 900 chars snipped ...]"))
  println(len(cut) < 200)
  println(unwrap_err(try { microcompact(3, 10) }))
}
"""
    )
    assert lines(out) == [
        "110",
        "short",
        "true",
        "true",
        "microcompact: text must be a string, got 3",
    ]


def test_transcript_auto_compact_strategies(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  let msgs = [
    {role: "user", content: "plan"},
    {role: "assistant", content: "lexer first"},
    {role: "user", content: "error: boom\\n" + "line\\n".repeat(100)},
    {role: "assistant", content: "looking"},
  ]
  let kept = transcript_auto_compact(msgs, {keep_last: 2})
  println(len(kept))
  println(kept[0].content)
  println(kept[1].content == msgs[2].content)
  let masked = transcript_auto_compact(msgs, {keep_last: 1, compact_strategy: "observation_mask"})
  println(masked[0].content.contains("[output masked: "))
  let custom = transcript_auto_compact(msgs, {keep_last: 1, compact_strategy: "custom",
    compact_callback: { archived -> {summary: "custom " + to_string(len(archived))} }})
  println(custom[0].content)
  llm_mock({text: "model summary"})
  let by_model = transcript_auto_compact(msgs, {keep_last: 3, provider: "mock"})
  println(by_model[0].content)
  println(transcript_auto_compact(msgs, {keep_last: 10}) == msgs)
  println(unwrap_err(try { transcript_auto_compact(msgs, {compact_strategy: "magic"}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "3"
    assert got[1:3] == ["[auto-compacted 2 older messages]", "- user: plan"]
    assert got[3] == "- assistant: lexer first"
    assert got[4] == "true"
    assert got[5] == "true"
    assert got[6:8] == ["[auto-compacted 3 older messages]", "custom 3"]
    assert got[8:10] == ["[auto-compacted 1 older messages]", "model summary"]
    assert got[10] == "true"
    assert got[11].startswith("transcript_auto_compact: unknown compact_strategy magic")


def test_agent_loop_compacts_past_its_threshold(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool probe(path: string) -> string {
  description "Probe."
  return "probed " + path
}
pipeline main() {
  llm_mock({tool_calls: [{id: "c1", name: "probe", arguments: {path: "a"}}]})
  llm_mock({tool_calls: [{id: "c2", name: "probe", arguments: {path: "b"}}]})
  llm_mock({text: "done"})
  let r = agent_loop("go", nil, {provider: "mock", tools: [probe], compact_threshold: 1,
    compact_keep_last: 1, compact_strategy: "custom",
    compact_callback: { archived -> {summary: "folded " + to_string(len(archived))} }})
  println(r.status)
  println(transcript_summary(r.transcript))
  let ev = transcript_events_by_kind(r.transcript, "compaction")
  println(ev.map({ e -> e.archived }))
  println(transcript_messages(r.transcript)[0].content.starts_with("[auto-compacted"))
  let quiet = agent_loop("go", nil, {provider: "mock", compaction: "none"})
  println(len(transcript_events_by_kind(quiet.transcript, "compaction")))
  println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", compaction: "magic"}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "done"
    assert got[1] == "folded 3"  # the last compaction folded the previous summary too
    assert got[2] == "[1, 3]"  # a tool result stays with the call that asked for it
    assert got[3] == "true"
    assert got[4] == "0"
    assert got[5].startswith("agent_loop: unknown compaction strategy magic")


def test_agent_loop_threshold_comes_from_the_models_context_window(run_harn: RunHarn) -> None:
    # qwen3:8b has a 40,960-token window in the catalog: 3/4 of it (30,720 estimated
    # tokens, about 123,000 characters) is the threshold; a model the catalog does not
    # know keeps the default 96,000, so the same 40,000-token context is not compacted.
    out, _ = run_harn(
        """
tool bulk() -> string {
  description "A large output."
  return "x".repeat(160000)
}
fn run(model) {
  llm_mock({tool_calls: [{id: "c1", name: "bulk", arguments: {}}]})
  llm_mock({text: "done"})
  let r = agent_loop("go", nil, {provider: "mock", model: model, tools: [bulk],
    compact_keep_last: 1, compaction: "truncate"})
  return transcript_events_by_kind(r.transcript, "compaction")
}
pipeline main() {
  let small = run("qwen3:8b")
  println(len(small))
  println(small[0].estimated_tokens_before > 30720)
  println(len(run("house-model-7")))
}
"""
    )
    assert lines(out) == ["1", "true", "0"]


def test_agent_loop_compaction_keeps_the_first_messages(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool probe(path: string) -> string {
  description "Probe."
  return "probed " + path
}
pipeline main() {
  llm_mock({tool_calls: [{id: "c1", name: "probe", arguments: {path: "a"}}]})
  llm_mock({tool_calls: [{id: "c2", name: "probe", arguments: {path: "b"}}]})
  llm_mock({text: "done"})
  let r = agent_loop("the task", nil, {provider: "mock", tools: [probe], compact_threshold: 1,
    compact_keep_first: 1, compact_keep_last: 1, compaction: "truncate"})
  let msgs = transcript_messages(r.transcript)
  println(msgs[0].content)
  println(msgs[1].content.starts_with("[auto-compacted"))
  let plain = [{role: "user", content: "a"}, {role: "assistant", content: "b"},
    {role: "user", content: "c"}, {role: "assistant", content: "d"}]
  println(transcript_auto_compact(plain, {keep_first: 1, keep_last: 1}).map({ m -> len(m.content) }))
  println(unwrap_err(try { agent_loop("go", nil, {provider: "mock", compact_keep_first: -1}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "the task"
    assert got[1] == "true"
    # a, the summary of b and c ("[auto-compacted 2 older messages]" and two lines), d
    assert got[2] == f"[1, {len('[auto-compacted 2 older messages]') + 25}, 1]"
    assert got[3].startswith("agent_loop: compact_keep_first must be a non-negative int")
