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
        "tool_result_message_count: 1, user_message_count: 1}"
    )
    assert got[4] == "true"
    assert got[5] == "0 true"
    assert got[6] == "[tool, assistant]"
    assert got[7:10] == ["system: rules", "user: hi", "assistant: called f"]
    assert got[10] == "1"
    assert got[11] == "x"
    assert got[12] == "transcript: unknown message role robot"
    assert got[13] == "[]"
