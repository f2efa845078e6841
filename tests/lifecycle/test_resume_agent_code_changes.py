"""``resume_agent`` after the script of a parked worker was edited (issue 10 point 5), in
real subprocesses: in the process that parked it, the worker goes on with the code the
process loaded; a cold ``resume_agent(snapshot)`` from another program runs the code it
parked with (its stored copy); from a process that loaded the edited version of the same
module it is refused with a message saying how to resume it, and that works.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import harnpy

TOOLS = """
fn make_tools() {
  return tool_define(tool_registry(), "record", "record a note", {
    parameters: {note: "string"},
    handler: { args ->
      append_file("log.txt", "v1:" + args.note + "\\n")
      return "recorded"
    },
  })
}
"""

SAME_PROCESS = (
    TOOLS
    + """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "w"}}]})
  llm_mock({tool_calls: [{id: "t", name: "record", arguments: {note: "two"}}]})
  llm_mock({text: "approved"})
  const h = sub_agent_run("Ship.", {provider: "mock", background: true, tools: make_tools()})
  println(wait_agent(h).status)
  write_file("m.harn", read_file("m.harn").replace("\\"v1:\\"", "\\"v2:\\""))
  resume_agent(h, "go")
  println(wait_agent(h).result.summary)
}
"""
)

PARKER = (
    TOOLS
    + """
pipeline main() {
  if len(argv()) > 0 {
    resume_agent(argv()[0], "go")
    return
  }
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "w"}}]})
  const r = agent_loop("work", nil, {provider: "mock", tools: make_tools()})
  println(r.snapshot_path)
}
"""
)

RESUMER = """
llm_mock({tool_calls: [{id: "t", name: "record", arguments: {note: "two"}}]})
llm_mock({text: "approved"})
const h = resume_agent(argv()[0], "go")
println(wait_agent(h).result.summary)
"""

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}


def _log(tmp_path: Path) -> list[str]:
    return (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()


def test_same_process_resume_after_the_file_was_edited(tmp_path: Path) -> None:
    (tmp_path / "m.harn").write_text(SAME_PROCESS, encoding="utf-8")
    res = harnpy("run", "m.harn", cwd=tmp_path, env=ENV)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["suspended", "approved"]
    assert '"v2:"' in (tmp_path / "m.harn").read_text(encoding="utf-8")
    assert _log(tmp_path) == ["v1:two"]  # the code this process loaded


def _park(tmp_path: Path) -> str:
    (tmp_path / "m.harn").write_text(PARKER, encoding="utf-8")
    first = harnpy("run", "m.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip().splitlines()[-1]
    text = (tmp_path / "m.harn").read_text(encoding="utf-8")
    (tmp_path / "m.harn").write_text(text.replace('"v1:"', '"v2:"'), encoding="utf-8")
    return snap


def test_cold_resume_agent_from_another_program_runs_the_parked_code(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    (tmp_path / "r.harn").write_text(RESUMER, encoding="utf-8")
    res = harnpy("run", "r.harn", "--", snap, cwd=tmp_path, env=ENV)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "approved"
    assert _log(tmp_path) == ["v1:two"]  # the stored copy, not the edited file


def test_cold_resume_agent_from_the_edited_module_says_how_to_resume(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    before = (tmp_path / snap).read_bytes()
    res = harnpy("run", "m.harn", "--", snap, cwd=tmp_path, env=ENV)
    assert res.returncode == 1
    assert "HARN-SUS-004" in res.stderr
    assert "the worker parked on another version of" in res.stderr
    assert f"`harnpy run --resume {snap}` runs the code it parked with" in res.stderr
    assert (tmp_path / snap).read_bytes() == before
    assert not (tmp_path / "log.txt").exists()
    # what the message says works
    mock = tmp_path / "replies.jsonl"
    mock.write_text(
        '{"tool_calls": [{"id": "t", "name": "record", "arguments": {"note": "two"}}]}\n'
        '{"text": "approved"}\n',
        encoding="utf-8",
    )
    ok = harnpy("run", "--resume", snap, "--llm-mock", str(mock), cwd=tmp_path, env=ENV)
    assert ok.returncode == 0, ok.stderr
    assert "approved" in ok.stdout
    assert _log(tmp_path) == ["v1:two"]
