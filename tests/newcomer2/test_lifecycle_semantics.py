"""Newcomer round 2: lifecycle behaviour that disagrees with lifecycle.md or the README.

Each test pins one bug found by newcomer testing; they are strict xfails until fixed.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnpy.runtime.sources import sources_dir
from tests.conftest import harnpy

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}


def _snap_status(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8"))["status"])


def test_pre_resume_denial_of_a_trigger_keeps_the_binding(tmp_path: Path) -> None:
    prog = """
pipeline main(harness: Harness) {
  harness.testing.clock_set(1700000000000)
  register_session_hook("pre_resume", { p -> p.resume_input?.payload?.n != 1 })
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r",
    conditions: {trigger: {kind: "k", provider: "github"}}}}]})
  llm_mock({text: "fin"})
  const h = sub_agent_run("y", {provider: "mock", background: true})
  const s = wait_agent(h)
  const trig = s.suspension.auto_resume_trigger
  const f1 = trigger_fire(trig, {provider: "github", kind: "k", payload: {n: 1}})
  println("denied=" + to_string(f1.result?.pre_resume_denied != nil))
  println("bindings=" + to_string(len(trigger_list())))
  const f2 = try { trigger_fire(trig, {provider: "github", kind: "k", payload: {n: 2}}) }
  println("second_fire_ok=" + to_string(is_ok(f2)))
  println("final=" + wait_agent(h).status)
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "denied=true",
        "bindings=1",
        "second_fire_ok=true",
        "final=completed",
    ]


def test_pre_resume_denial_keeps_the_timeout_armed(tmp_path: Path) -> None:
    prog = """
pipeline main(harness: Harness) {
  harness.testing.clock_set(1700000000000)
  var seen = 0
  register_session_hook("pre_resume", { p ->
    println("pre_resume " + to_string(p.resume_input?.payload?.n ?? "timeout"))
    return p.resume_input?.payload?.n != 1
  })
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r",
    conditions: {trigger: {kind: "k", provider: "github"}, timeout: {duration_minutes: 1}}}}]})
  llm_mock({text: "fin"})
  const h = sub_agent_run("y", {provider: "mock", background: true})
  const s = wait_agent(h)
  trigger_fire(s.suspension.auto_resume_trigger, {provider: "github", kind: "k", payload: {n: 1}})
  harness.testing.clock_advance(120000)
  harness.runtime.yield_now()
  harness.runtime.yield_now()
  println("final=" + wait_agent(h).status)
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "final=completed"


DURABLE = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "wait",
    conditions: {trigger: {kind: "review.approved", provider: "github"},
                 timeout: {duration_minutes: 60}}}}]})
  llm_mock({text: "resumed ##DONE##"})
  const r = agent_loop("Park.", nil, {provider: "mock"})
  println(r.snapshot_path)
}
"""


def _durable_park(tmp_path: Path) -> tuple[dict[str, str], str, str]:
    (tmp_path / "main.harn").write_text(DURABLE, encoding="utf-8")
    env = {**ENV, "HARNPY_STORE": "default"}
    p = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    snap = p.stdout.strip()
    ls = harnpy("workers", "ls", "--json", cwd=tmp_path, env=env)
    (wait,) = json.loads(ls.stdout)
    return env, snap, str(wait["worker_id"])


def test_run_resume_cancels_the_durable_wait(tmp_path: Path) -> None:
    env, snap, _ = _durable_park(tmp_path)
    r = harnpy("run", "--resume", snap, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    ls = harnpy("workers", "ls", "--json", cwd=tmp_path, env=env)
    assert json.loads(ls.stdout) == []


def test_refused_workers_resume_keeps_the_wait_resumable(tmp_path: Path) -> None:
    env, snap, wid = _durable_park(tmp_path)
    bad = harnpy("workers", "resume", wid, "--input", "   ", cwd=tmp_path, env=env)
    assert bad.returncode == 1
    assert "HARN-SUS-009" in bad.stderr
    assert _snap_status(tmp_path / snap) == "suspended"
    good = harnpy("workers", "resume", wid, "--input", "approved", cwd=tmp_path, env=env)
    assert good.returncode == 0, good.stderr
    assert _snap_status(tmp_path / snap) == "completed"


def test_workers_resume_after_reverting_an_edit(tmp_path: Path) -> None:
    env, snap, wid = _durable_park(tmp_path)
    main = tmp_path / "main.harn"
    main.write_text(DURABLE + "// edited\n", encoding="utf-8")
    # without the stored copy of the code it ran (with it, the resume runs on that copy:
    # tests/lifecycle/test_resume_code_changes.py)
    stored = sources_dir(str(tmp_path / snap))
    shutil.move(stored, stored + ".away")
    bad = harnpy("workers", "resume", wid, cwd=tmp_path, env=env)
    assert bad.returncode == 1
    main.write_text(DURABLE, encoding="utf-8")
    good = harnpy("workers", "resume", wid, cwd=tmp_path, env=env)
    assert good.returncode == 0, good.stderr
    assert _snap_status(tmp_path / snap) == "completed"


def test_size_cap_error_names_the_big_capture(tmp_path: Path) -> None:
    prog = """
pipeline main() {
  const big = (0 to 50000).map({ i -> "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + to_string(i) }).to_list()
  let tools = tool_define(tool_registry(), "t", "t", {parameters: {}, handler: { a -> len(big) }})
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "park"}}]})
  const r = try { agent_loop("x", nil, {provider: "mock", tools: tools}) }
  println(unwrap_err(r))
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    msg = p.stdout
    assert "4 MiB" in msg
    part = msg.split("largest parts: ", 1)[1].split(",")[0]
    # the biggest part named must be (nearly) the whole overflow, and name the capture
    size = int(part.split("(")[1].split(" ")[0])
    assert size > 3_000_000, msg
    assert "big" in part, msg


def test_completed_worker_snapshot_over_the_cap_is_not_silently_running(tmp_path: Path) -> None:
    prog = """
tool big(n: int) -> string {
  description "big output"
  return "z" * 600000
}
pipeline main() {
  for i in 0 to 8 { llm_mock({tool_calls: [{name: "big", arguments: {n: i}}]}) }
  llm_mock({text: "done"})
  const h = sub_agent_run("grow", {provider: "mock", background: true,
    tools: tool_registry([big]), max_iterations: 20})
  println(wait_agent(h).status)
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "completed"
    (snap,) = (tmp_path / ".harn" / "workers").glob("worker_*.json")
    # either the file says completed, or the user was told the final state was not saved
    assert _snap_status(snap) != "running" or "4 MiB" in p.stderr


def test_ctrl_c_during_resume_keeps_the_worker_resumable(tmp_path: Path) -> None:
    prog = """
tool slow(ms: int) -> string {
  description "sleeps"
  write_file("started", "1")
  sleep(ms)
  return "slept"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({tool_calls: [{name: "slow", arguments: {ms: 30000}}]})
  llm_mock({text: "finished ##DONE##"})
  const r = agent_loop("Do it.", nil, {provider: "mock", tools: tool_registry([slow]), persistent: true})
  println(r.snapshot_path)
}
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    snap = first.stdout.strip()
    import os

    full_env = {**os.environ, **ENV}
    full_env.pop("HARNPY_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", "--resume", snap],
        cwd=tmp_path,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the resumed worker is inside the tool's sleep once this exists
    assert (tmp_path / "started").exists(), "the resumed worker never reached its tool"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    again = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert "HARN-SUS-003" not in again.stderr, again.stderr


PARK_IN_SUBDIR = """
import "./lib"
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({text: "finished " + lib_word()})
  const r = agent_loop("Do it.", nil, {provider: "mock"})
  println(r.snapshot_path)
}
"""


def test_resume_moved_project_with_script_in_a_subdirectory(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "agents").mkdir(parents=True)
    (proj / "agents" / "main.harn").write_text(PARK_IN_SUBDIR, encoding="utf-8")
    (proj / "agents" / "lib.harn").write_text('pub fn lib_word() { return "LIB" }\n')
    first = harnpy("run", "agents/main.harn", cwd=proj, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip()
    moved = tmp_path / "moved"
    shutil.move(str(proj), str(moved))
    r = harnpy("run", "--resume", snap, cwd=moved, env=ENV)
    assert r.returncode == 0, r.stderr


def test_resume_moved_project_from_another_directory(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "main.harn").write_text(PARK_IN_SUBDIR, encoding="utf-8")
    (proj / "lib.harn").write_text('pub fn lib_word() { return "LIB" }\n')
    first = harnpy("run", "main.harn", cwd=proj, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip()
    moved = tmp_path / "moved"
    shutil.move(str(proj), str(moved))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = harnpy("run", "--resume", str(moved / snap), cwd=elsewhere, env=ENV)
    assert r.returncode == 0, r.stderr


def test_blocking_sub_agent_run_that_parks_says_how_to_resume(tmp_path: Path) -> None:
    prog = """
llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "blocking park"}}]})
const r = sub_agent_run("x", {provider: "mock"})
println(r.status)
println(r?.snapshot_path != nil || r?.handle != nil || r?.data?.snapshot_path != nil)
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["suspended", "true"]


def test_worker_event_hooks_run_before_exit(tmp_path: Path) -> None:
    prog = """
pipeline main() {
  register_session_hook("worker_cancelled", { p -> println("hook cancelled " + p.worker.name) })
  const h = sub_agent_run("x", {provider: "mock", background: true, name: "w1"})
  wait_agent(h)
  close_agent(h)
  println("end")
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert "hook cancelled w1" in p.stdout


def test_max_iterations_zero_makes_no_model_call(tmp_path: Path) -> None:
    prog = """
const r = agent_loop("x", nil, {provider: "mock", max_iterations: 0})
println(r.status + " " + to_string(len(llm_mock_calls())))
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.stdout.strip() == "budget_exhausted 0"


def test_timeout_fail_does_not_overwrite_a_completed_worker(tmp_path: Path) -> None:
    import sqlite3

    prog = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r",
    conditions: {trigger: {kind: "k", provider: "github"},
                 timeout: {duration_minutes: 60, on_timeout: "fail"}}}}]})
  llm_mock({text: "done ##DONE##"})
  const r = agent_loop("x", nil, {provider: "mock"})
  println(r.snapshot_path)
}
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    env = {**ENV, "HARNPY_STORE": "default"}
    first = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = tmp_path / first.stdout.strip()
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert _snap_status(snap) == "completed"
    # make the timeout due now (instead of waiting an hour)
    db = sqlite3.connect(tmp_path / ".harn" / "harnpy.sqlite3")
    for wid, record in list(db.execute("SELECT id, record FROM waits")):
        rec = json.loads(record)
        rec["deadline_ms"] = 1
        db.execute(
            "UPDATE waits SET deadline_ms = 1, record = ? WHERE id = ?", (json.dumps(rec), wid)
        )
    db.commit()
    db.close()
    w = harnpy("worker", "--once", cwd=tmp_path, env=env)
    assert w.returncode == 0, w.stderr
    assert _snap_status(snap) == "completed"


def test_stale_wait_of_an_earlier_park_does_not_resume_the_new_park(tmp_path: Path) -> None:
    import sqlite3

    prog = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "first",
    conditions: {trigger: {kind: "k1", provider: "github"}, timeout: {duration_minutes: 60}}}}]})
  llm_mock({tool_calls: [{id: "q", name: "agent_await_resumption", arguments: {reason: "second",
    conditions: {trigger: {kind: "k2", provider: "github"}, timeout: {duration_minutes: 600}}}}]})
  llm_mock({text: "done ##DONE##"})
  const r = agent_loop("x", nil, {provider: "mock", persistent: true})
  println(r.snapshot_path)
}
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    env = {**ENV, "HARNPY_STORE": "default"}
    first = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = tmp_path / first.stdout.strip()
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=env)
    assert r.returncode == 3, r.stderr  # parked again, waiting for k2
    db = sqlite3.connect(tmp_path / ".harn" / "harnpy.sqlite3")
    for wid, record in list(db.execute("SELECT id, record FROM waits")):
        rec = json.loads(record)
        if rec.get("kind") == "k1":  # the first park's timeout comes due
            rec["deadline_ms"] = 1
            db.execute(
                "UPDATE waits SET deadline_ms = 1, record = ? WHERE id = ?",
                (json.dumps(rec), wid),
            )
    db.commit()
    db.close()
    harnpy("worker", "--once", cwd=tmp_path, env=env)
    doc = json.loads(snap.read_text(encoding="utf-8"))
    assert doc["status"] == "suspended"
    assert doc["suspension"]["reason"] == "second"


@pytest.mark.parametrize("option", ["subagents", "subagent_tools"])
def test_agent_loop_subagents_option_adds_the_tools(tmp_path: Path, option: str) -> None:
    prog = f"""
pipeline main() {{
  llm_mock({{match: "*childtask*", consume_match: true, tool_calls: [{{id: "cp",
    name: "agent_await_resumption", arguments: {{reason: "child parks"}}}}]}})
  const child = sub_agent_run("childtask", {{provider: "mock", background: true}})
  wait_agent(child)
  llm_mock({{match: "*parent*", consume_match: true, tool_calls: [{{name: "subagent_pause",
    arguments: {{handle: child.id, reason: "again"}}}}]}})
  llm_mock({{match: "*parent*", consume_match: true, text: "parent done"}})
  const r = agent_loop("parent", nil, {{provider: "mock", {option}: true, max_iterations: 3}})
  println(r.tool_calls.map({{ c -> c.name + ":" + c.status }}))
  close_agent(child)
}}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "[subagent_pause:ok]"


def test_root_loop_suspension_carries_no_transcript_text(tmp_path: Path) -> None:
    prog = """
tool lookup(q: string) -> string {
  description "lookup"
  return "TOOL-RESULT-SECRET"
}
pipeline main() {
  llm_mock({tool_calls: [{name: "lookup", arguments: {q: "x"}}]})
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  const r = agent_loop("PROMPT-SECRET", nil, {provider: "mock", tools: tool_registry([lookup])})
  println(r.status)
  println(json_stringify(r))
}
"""
    p = harnpy("run", "-e", prog, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    status, envelope = p.stdout.splitlines()[:2]
    assert status == "suspended"
    assert "PROMPT-SECRET" not in envelope
    assert "TOOL-RESULT-SECRET" not in envelope
