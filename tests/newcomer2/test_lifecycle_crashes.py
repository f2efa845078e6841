"""Newcomer round 2: internal errors and Python tracebacks in the lifecycle layer.

Each test pins one bug found by newcomer testing; they are strict xfails until fixed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import harnpy

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": "state"}


def no_crash(p: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "internal error" not in p.stderr, p.stderr[-2000:]
    assert "E999" not in p.stderr, p.stderr[-2000:]


SUSPEND_WITH_CONDITIONS = """
tool step(n: int) -> int {
  description "a step"
  return n + 1
}
pipeline main() {
  for i in 0 to 5 { llm_mock({tool_calls: [{name: "step", arguments: {n: i}}]}) }
  const h = sub_agent_run("Count.", {provider: "mock", background: true,
    tools: tool_registry([step]), max_iterations: 20})
  const s = try { suspend_agent(h, "pause", {conditions: COND}) }
  const w = try { wait_agent(h) }
  println("survived")
  close_agent(h)
}
"""


@pytest.mark.parametrize("cond", ['"soon"', "[1, 2]", "5"])
def test_suspend_agent_with_non_dict_conditions_is_not_an_internal_error(
    tmp_path: Path, cond: str
) -> None:
    (tmp_path / "m.harn").write_text(SUSPEND_WITH_CONDITIONS.replace("COND", cond))
    p = harnpy("run", "m.harn", cwd=tmp_path, env=ENV)
    no_crash(p)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("survived")


@pytest.mark.parametrize("cmd", [["workers", "ls"], ["workers", "show", "x"], ["worker", "--once"]])
def test_store_that_is_not_a_database_is_a_clean_error(tmp_path: Path, cmd: list[str]) -> None:
    bad = tmp_path / "bad.sqlite3"
    bad.write_text("this is not a database\n")
    p = harnpy(*cmd, "--store", str(bad), cwd=tmp_path, env=ENV)
    no_crash(p)
    assert p.returncode == 2
    assert "bad.sqlite3" in p.stderr


def test_park_with_a_corrupt_store_is_a_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "bad.sqlite3").write_text("garbage")
    prog = (
        'llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: '
        '{reason: "r", conditions: {trigger: {kind: "k", provider: "github"}}}}]})\n'
        'const r = try { agent_loop("x", nil, {provider: "mock"}) }\n'
        "println(is_err(r))\n"
    )
    p = harnpy("run", "-e", prog, cwd=tmp_path, env={**ENV, "HARNPY_STORE": "bad.sqlite3"})
    no_crash(p)


def test_llm_mock_record_unwritable_path_is_a_usage_error(tmp_path: Path) -> None:
    prog = 'println("side effect")\nprintln(llm_call("a", nil, {provider: "mock"}).text)\n'
    p = harnpy(
        "run",
        "--llm-mock-record",
        str(tmp_path / "no" / "such" / "dir" / "rec.jsonl"),
        "-e",
        prog,
        cwd=tmp_path,
        env=ENV,
    )
    no_crash(p)
    assert p.returncode == 2
    assert p.stdout == ""


def test_exit_inside_a_resumed_worker_is_not_a_traceback(tmp_path: Path) -> None:
    prog = """
tool quit(code: int) -> string {
  description "exit"
  exit(code)
  return "never"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({tool_calls: [{name: "quit", arguments: {code: 7}}]})
  const r = agent_loop("x", nil, {provider: "mock", tools: tool_registry([quit])})
  println(r.snapshot_path)
}
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip()
    p = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    no_crash(p)
    assert p.returncode == 7


def test_snapshot_exit_inside_a_resumed_worker_is_not_a_traceback(tmp_path: Path) -> None:
    prog = """
tool freeze(p: string) -> string {
  description "freeze"
  __snapshot_exit(p)
  return "thawed"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({tool_calls: [{name: "freeze", arguments: {p: "frozen.json"}}]})
  llm_mock({text: "done"})
  const r = agent_loop("x", nil, {provider: "mock", tools: tool_registry([freeze])})
  println(r.snapshot_path)
}
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    p = harnpy("run", "--resume", first.stdout.strip(), cwd=tmp_path, env=ENV)
    no_crash(p)


def test_resume_cmd_with_unbalanced_quote_is_a_usage_error(tmp_path: Path) -> None:
    store = tmp_path / "waits.sqlite3"
    p = harnpy(
        "worker",
        "--once",
        "--store",
        str(store),
        "--resume-cmd",
        'run "{snapshot}',
        cwd=tmp_path,
        env=ENV,
    )
    no_crash(p)
    assert p.returncode == 2
