"""``transcript_compact`` strategies, the archive asset (``transcript_assets``), session
notification and the run record's compaction observability
(harnpy/lifecycle/compaction.py, std/agent/_compact)."""

from __future__ import annotations

from pathlib import Path

from tests.agents.conftest import lines

BASE = """
  let base = transcript_from_messages([
    {role: "user", content: "Investigate parser drift."},
    {role: "assistant", content: "I inspected the lexer."},
    {role: "user", content: "Focus on diagnostics next."},
    {role: "assistant", content: "I found three hotspots."},
  ])
"""


def test_truncate_keeps_a_user_turn_and_archives_the_original(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        "pipeline main() {"
        + BASE
        + """
  let c = transcript_compact(base, {strategy: "truncate", keep_last: 1})
  println(transcript_messages(c).map({ m -> m.role }))
  println(transcript_summary(c))
  let ev = transcript_events_by_kind(c, "compaction")[0]
  println([ev.metadata.strategy, ev.metadata.archived_messages, ev.metadata.kept_messages])
  let assets = transcript_assets(c)
  println(len(assets))
  println(assets[0].id == ev.metadata.asset_id)
  println(len(transcript_messages(assets[0].data)))
  println(transcript_id(c) == transcript_id(base))
  println(len(transcript_assets(base)))
}
"""
    )
    got = lines(out)
    assert got[0] == "[user, assistant]"  # keep_last 1 ends on an assistant: the turn stays
    assert got[1] == "[auto-compacted 2 older messages]"
    assert got[2] == "- user: Investigate parser drift."
    assert got[3] == "- assistant: I inspected the lexer."
    assert got[4] == "[truncate, 2, 2]"
    assert got[5:10] == ["1", "true", "4", "true", "0"]


def test_observation_mask_and_target_tokens(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  var long = ""
  for i in range(0, 30) { long = long + "line " + to_string(i) + "\\n" }
  let t = transcript_from_messages([
    {role: "assistant", content: "ran it"},
    {role: "user", content: "error: failed\\n" + long},
    {role: "assistant", content: "looking"},
    {role: "user", content: "ok"},
  ])
  let m = transcript_compact(t, {strategy: "observation_mask", keep_last: 1})
  println(contains(transcript_summary(m), "error: failed [output masked:"))
  println(contains(transcript_summary(m), "line 29"))
  let big = transcript_compact(t, {strategy: "truncate", keep_last: 1, target_tokens: 100000})
  println(len(transcript_messages(big)))
  println(len(transcript_assets(big)))
  println(unwrap_err(try { transcript_compact(t, {strategy: "shrink"}) }))
}
"""
    )
    got = lines(out)
    assert got[0:2] == ["true", "false"]
    assert got[2:4] == ["4", "0"]  # under target_tokens: unchanged
    assert "unknown strategy shrink" in got[4]


def test_llm_strategy_renders_the_prompt_file(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "summary.prompt").write_text(
        "Summarize {{ archived_count }} messages:\n{{ formatted_messages }}\n", encoding="utf-8"
    )
    out, _ = run(
        "pipeline main() {"
        + BASE
        + """
  llm_mock({text: "the short story"})
  let c = transcript_compact(base, {
    provider: "mock", strategy: "llm", keep_last: 1, summarize_prompt: "summary.prompt",
  })
  println(transcript_summary(c))
  let prompt = llm_mock_calls()[0].messages[0].content
  println(starts_with(prompt, "Summarize 2 messages:"))
  println(contains(prompt, "user: Investigate parser drift."))
  println(unwrap_err(try { transcript_compact(base, {strategy: "llm", provider: "mock", keep_last: 1, summarize_prompt: "missing.prompt"}) }))
}
""",
        path=str(tmp_path / "main.harn"),
    )
    got = lines(out)
    assert got[0] == "the short story"
    assert got[1:3] == ["true", "true"]
    assert "cannot read summarize_prompt 'missing.prompt'" in got[3]


def test_given_summary_and_custom_callback(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        "pipeline main() {"
        + BASE
        + """
  println(transcript_summary(transcript_compact(base, {keep_last: 2, summary: "given"})))
  let c = transcript_compact(base, {
    strategy: "custom", keep_last: 2,
    compact_callback: { archived -> "custom of " + to_string(len(archived)) },
  })
  println(transcript_summary(c))
  println(transcript_compact(base, {keep_last: 10}) == base)
}
"""
    )
    assert lines(out) == ["given", "custom of 2", "true"]


def test_session_subscribers_hear_of_a_compaction(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  let s = agent_session_open("compact-me")
  let log = agent_session_open("log")
  agent_session_inject(s, {role: "user", content: "one"})
  agent_session_inject(s, {role: "assistant", content: "two"})
  agent_session_inject(s, {role: "user", content: "three"})
  agent_subscribe(s, { ev ->
    let line = join([ev.type, ev.session_id, ev.strategy, to_string(ev.archived_messages)], " ")
    agent_session_inject(log, {role: "user", content: line})
  })
  let c = transcript_compact(agent_session_snapshot(s), {strategy: "truncate", keep_last: 1})
  let seen = transcript_messages(agent_session_snapshot(log))
  println(len(seen))
  println(seen[0].content)
  let plain = transcript_compact(
    transcript_from_messages([{role: "user", content: "a"}, {role: "user", content: "b"}]),
    {strategy: "truncate", keep_last: 1},
  )
  println(len(transcript_messages(agent_session_snapshot(log))))
}
"""
    )
    got = lines(out)
    assert got[0] == "1"
    assert got[1] == "transcript_compacted compact-me truncate 2"
    assert got[2] == "1"  # a transcript outside any session notifies nobody


def test_run_record_lists_compaction_events(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        "pipeline main() {"
        + BASE
        + """
  let c = transcript_compact(base, {strategy: "truncate", keep_last: 1})
  let stripped = c + {assets: []}
  let run = run_record({id: "r", stages: [
    {id: "s1", node_id: "a", transcript: c},
    {id: "s2", node_id: "b", transcript: stripped},
    {id: "s3", node_id: "c", transcript: base},
  ]})
  println(run.observability.schema_version)
  let evs = run.observability.compaction_events
  println(len(evs))
  println([evs[0].stage_id, evs[0].node_id, evs[0].strategy, evs[0].available])
  println([evs[1].stage_id, evs[1].available])
}
"""
    )
    got = lines(out)
    assert got[0] == "4"
    assert got[1] == "2"
    assert got[2] == "[s1, a, truncate, true]"
    assert got[3] == "[s2, false]"
