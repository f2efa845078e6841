"""Agent sessions (Harn sessions.md): open/exists/length/inject/snapshot/reset/trim/close,
forks and their lineage, loops continuing a session, and sessions as snapshot data."""

from __future__ import annotations

from pathlib import Path

from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_session_lifecycle(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let s = agent_session_open()
  println([agent_session_exists(s), s == agent_session_open(s), agent_session_length(s)])
  agent_session_inject(s, {role: "user", content: "one"})
  agent_session_inject(s, {role: "assistant", content: "two"})
  agent_session_inject(s, {role: "user", content: "three"})
  let snap = agent_session_snapshot(s)
  println([len(snap.messages), snap.id == s, snap.parent_id, snap.child_ids])
  println(agent_session_trim(s, 2))
  println(agent_session_snapshot(s).messages.map({ m -> m.content }))
  agent_session_reset(s)
  println([agent_session_length(s), agent_session_exists(s)])
  agent_session_close(s)
  println([agent_session_exists(s), agent_session_snapshot(s), agent_session_ancestry(s)])
  println(unwrap_err(try { agent_session_length(s) }))
  println(unwrap_err(try { agent_session_inject(agent_session_open("x"), {content: "no role"}) }))
  println(unwrap_err(try { agent_session_trim("x", -1) }))
  println(agent_session_current_id())
}
"""
    )
    got = lines(out)
    assert got[0] == "[true, true, 0]"
    assert got[1] == "[3, true, nil, []]"
    assert got[2] == "2"
    assert got[3] == "[two, three]"
    assert got[4] == "[0, true]"
    assert got[5] == "[false, nil, nil]"
    assert got[6].startswith("agent_session_length: unknown session id")
    assert got[7] == "agent_session_inject: message must be a dict with a `role`"
    assert got[8] == "agent_session_trim: keep_last must be a non-negative int, got -1"
    assert got[9] == "nil"


def test_session_forks_and_ancestry(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let root = agent_session_open("root")
  agent_session_inject(root, {role: "user", content: "a"})
  agent_session_inject(root, {role: "assistant", content: "b"})
  let d1 = agent_session_fork(root, "d1")
  let d2 = agent_session_fork_at(d1, 1, "d2")
  agent_session_inject(d1, {role: "user", content: "only d1"})
  println([agent_session_length(root), agent_session_length(d1), agent_session_length(d2)])
  println(agent_session_ancestry(d2))
  let snap = agent_session_snapshot(d2)
  println([snap.parent_id, snap.branched_at_event_index])
  println(agent_session_snapshot(root).child_ids)
  let anon = agent_session_fork(root)
  println(len(agent_session_snapshot(root).child_ids))
  println(anon != root)
}
"""
    )
    got = lines(out)
    assert got[0] == "[2, 3, 1]"
    assert got[1] == "{child_ids: [], parent_id: d1, root_id: root}"
    assert got[2] == "[d1, 1]"
    assert got[3] == "[d1]"
    assert got[4] == "2"
    assert got[5] == "true"


def test_a_loop_continues_its_session(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool probe() -> string {
  description "Report the session."
  return agent_session_current_id()
}
pipeline main() {
  let s = agent_session_open("chat")
  agent_session_inject(s, {role: "user", content: "remember 42"})
  llm_mock({tool_calls: [{id: "c1", name: "probe", arguments: {}}]})
  llm_mock({text: "noted"})
  let r = agent_loop("what did I say?", nil, {provider: "mock", session_id: s, tools: [probe]})
  println(r.status)
  println(transcript_messages(r.transcript)[0].content)
  println(r.tool_calls[0].result)
  println(agent_session_length(s) == len(transcript_messages(r.transcript)))
}
"""
    )
    assert lines(out) == ["done", "remember 42", "chat", "true"]


def test_sessions_survive_a_program_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "main.harn"
    prog.write_text(
        """
let s = agent_session_open("kept")
agent_session_inject(s, {role: "user", content: "before"})
let child = agent_session_fork(s, "child")
__snapshot_exit("snap.json")
agent_session_inject(s, {role: "assistant", content: "after"})
println(agent_session_length(s))
println(agent_session_ancestry(child).root_id)
"""
    )
    first = harnpy("run", str(prog), cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    second = harnpy("run", "--resume", str(tmp_path / "snap.json"), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["2", "kept"]


def test_session_compact(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let s = agent_session_open("c")
  for i in range(0, 5) { agent_session_inject(s, {role: "user", content: "m" + to_string(i)}) }
  println(agent_session_compact(s, {keep_last: 2}))
  let snap = agent_session_snapshot(s)
  println(snap.messages[0].content.starts_with("[auto-compacted 3 older messages]"))
  println(agent_session_compact(s, {keep_last: 1, custom_compactor: { old -> "custom " + to_string(len(old)) }}))
  println(agent_session_snapshot(s).summary)
  println(agent_session_compact(s, {token_threshold: 1000}))
  println(unwrap_err(try { agent_session_compact(s, {keep: 1}) }).starts_with("agent_session_compact: unknown option `keep`"))
}
"""
    )
    assert lines(out) == ["3", "true", "2", "custom 2", "2", "true"]


def test_agent_subscribe_sees_turns_and_compactions(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
tool probe() -> string {
  description "Probe."
  return "ok"
}
pipeline main() {
  let s = agent_session_open("watched")
  agent_subscribe(s, { ev -> println("event " + ev.type + ":" + to_string(ev.iteration)) })
  agent_subscribe(s, { ev -> throw "a broken subscriber" })
  let child = agent_session_fork(s, "child")
  llm_mock({tool_calls: [{id: "c1", name: "probe", arguments: {}}]})
  llm_mock({text: "done"})
  let r = agent_loop("go", nil, {provider: "mock", session_id: s, tools: [probe],
    compact_threshold: 0, compact_keep_last: 1, compact_strategy: "truncate"})
  println(r.status)
  println(len(__agent_subscribers(child)))
  println(unwrap_err(try { agent_subscribe(s, 3) }))
}
"""
    )
    got = lines(out)
    assert got[0:3] == ["event turn_end:1", "event transcript_compacted:1", "event turn_end:2"]
    assert got[3] == "done"
    assert got[4] == "0"  # a fork is not an event fanout
    assert got[5] == "agent_subscribe: callback must be a function, got 3"
