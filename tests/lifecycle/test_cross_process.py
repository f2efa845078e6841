"""Suspend in one process, resume in another (real subprocesses; lifecycle acceptance).

* a root ``agent_loop`` called two calls deep, with tools that are closures over that
  function's locals, parks at turn 2; ``harnpy run --resume`` continues it in a new
  process: the tools still see the captured values and every side effect before the park
  happened exactly once;
* a 10-turn loop parks at turn 3 and at turn 7: two resumes in two processes (exit 3, then
  0);
* two processes resume one snapshot at once: exactly one continues, the other gets
  HARN-SUS-006 and changes nothing;
* SIGKILL at random moments during 200 suspend cycles never leaves a snapshot that fails
  to load.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnpy.lifecycle.suspend import read_document
from tests.conftest import harnpy

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": "state"}

DEEP = """
fn make_tools(label, log_path) {
  let secret = "s-" + label
  let seen = [1, 2, 3]
  return tool_define(tool_registry(), "record", "record a note", {
    parameters: {note: "string"},
    handler: { args ->
      append_file(log_path, "tool:" + args.note + ":" + secret + ":" + to_string(len(seen)) + "\\n")
      return "recorded " + args.note + " with " + secret
    },
  })
}

fn run_agent(label, log_path) {
  const tools = make_tools(label, log_path)
  return agent_loop("work", nil, {provider: "mock", tools: tools, max_iterations: 6})
}

fn outer(label) {
  append_file("log.txt", "outer:before\\n")
  const r = run_agent(label, "log.txt")
  append_file("log.txt", "outer:after\\n")
  return r
}

pipeline main() {
  llm_mock({tool_calls: [{id: "t1", name: "record", arguments: {note: "one"}}]})
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "approval"}}]})
  llm_mock({tool_calls: [{id: "t2", name: "record", arguments: {note: "two"}}]})
  llm_mock({text: "all done"})
  append_file("log.txt", "main:start\\n")
  const r = outer("L")
  println("status=" + r.status + " turns=" + to_string(r.iterations_completed))
  println("snapshot=" + r.snapshot_path)
  append_file("log.txt", "main:end\\n")
}
"""


def _log(d: Path) -> list[str]:
    return (d / "log.txt").read_text(encoding="utf-8").splitlines()


def test_root_loop_two_calls_deep_with_closure_tools(tmp_path: Path) -> None:
    (tmp_path / "deep.harn").write_text(DEEP, encoding="utf-8")
    first = harnpy("run", "deep.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    out = first.stdout.splitlines()
    assert out[0] == "status=suspended turns=2"
    snap = out[1].split("=", 1)[1]
    assert snap.startswith("state/worker_")
    before = ["main:start", "outer:before", "tool:one:s-L:3", "outer:after", "main:end"]
    assert _log(tmp_path) == before
    doc = json.loads((tmp_path / snap).read_text(encoding="utf-8"))
    assert doc["status"] == "suspended" and doc["mode"] == "top_level_agent"
    assert doc["suspension"]["suspended_at_turn"] == 2

    resumed = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert "completed" in resumed.stderr
    # only the loop continued: the closures still see label/secret/seen; nothing before
    # the park ran again and the script after the loop did not run a second time
    assert _log(tmp_path) == [*before, "tool:two:s-L:3"]
    assert json.loads((tmp_path / snap).read_text(encoding="utf-8"))["status"] == "completed"

    again = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert again.returncode == 1
    assert "HARN-SUS-003" in again.stderr
    assert _log(tmp_path) == [*before, "tool:two:s-L:3"]


TEN_TURNS = """
fn tools(tag) {
  return tool_define(tool_registry(), "step", "one step", {
    parameters: {n: "int"},
    handler: { args ->
      append_file("log.txt", tag + to_string(args.n) + "\\n")
      return "ok " + to_string(args.n)
    },
  })
}
pipeline main() {
  for i in range(1, 11) {
    if i == 3 || i == 7 {
      llm_mock({tool_calls: [{id: "p" + to_string(i), name: "agent_await_resumption",
        arguments: {reason: "park at " + to_string(i)}}]})
    } else if i == 10 {
      llm_mock({text: "finished"})
    } else {
      llm_mock({tool_calls: [{id: "s" + to_string(i), name: "step", arguments: {n: i}}]})
    }
  }
  const r = agent_loop("go", nil, {provider: "mock", tools: tools("T"), max_iterations: 20})
  println(r.status + " " + to_string(r.iterations_completed))
}
"""


def test_ten_turns_parking_at_three_and_seven(tmp_path: Path) -> None:
    (tmp_path / "ten.harn").write_text(TEN_TURNS, encoding="utf-8")
    first = harnpy("run", "ten.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "suspended 3"
    (snap,) = list((tmp_path / "state").glob("worker_*.json"))
    assert _log(tmp_path) == ["T1", "T2"]

    second = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert second.returncode == 3, second.stderr  # parked again
    assert "parked again (park at 7)" in second.stderr  # with the new park's reason
    assert _log(tmp_path) == ["T1", "T2", "T4", "T5", "T6"]
    doc = json.loads(snap.read_text(encoding="utf-8"))
    assert doc["status"] == "suspended"
    assert doc["suspension"]["suspended_at_turn"] == 7

    third = harnpy("run", "--resume", str(snap), "--json", cwd=tmp_path, env=ENV)
    assert third.returncode == 0, third.stderr
    final = json.loads(third.stdout.strip().split("\n")[-1])["data"]
    assert final["event_type"] == "result" and final["exit_code"] == 0
    assert final["value"]["status"] == "completed"
    assert final["value"]["result"]["iterations"] == 10
    assert final["value"]["history"] == ["go"]
    assert _log(tmp_path) == ["T1", "T2", "T4", "T5", "T6", "T8", "T9"]


RACE = """
fn tools() {
  return tool_define(tool_registry(), "slow", "slow step", {
    parameters: {},
    handler: { args ->
      append_file("log.txt", "resumed\\n")
      write_file("started", "1")
      var waited = 0
      while !file_exists("go") && waited < 1500 {
        sleep_ms(20)
        waited = waited + 1
      }
      return "ok"
    },
  })
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "race"}}]})
  llm_mock({tool_calls: [{id: "s", name: "slow", arguments: {}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", tools: tools(), max_iterations: 5})
  println(r.status)
}
"""


def _popen(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.update(ENV)
    return subprocess.Popen(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_resume_one_snapshot_exactly_one_wins(tmp_path: Path) -> None:
    (tmp_path / "race.harn").write_text(RACE, encoding="utf-8")
    assert harnpy("run", "race.harn", cwd=tmp_path, env=ENV).returncode == 0
    (snap,) = list((tmp_path / "state").glob("worker_*.json"))
    procs = [_popen(["run", "--resume", str(snap)], tmp_path) for _ in range(2)]
    # the loser exits at once; the winner waits in its tool until we say "go"
    deadline = time.monotonic() + 60
    loser = None
    while loser is None and time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                loser = p
        time.sleep(0.05)
    assert loser is not None, "no process gave up"
    winner = procs[1] if loser is procs[0] else procs[0]
    _, lerr = loser.communicate()
    assert loser.returncode == 1
    assert "HARN-SUS-006" in lerr and "changed before resume could complete" in lerr
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # the loser changed nothing: the file is the winner's claim (status running)
    claimed = snap.read_bytes()
    assert json.loads(claimed)["status"] == "running"
    assert json.loads(claimed)["owner"]["pid"] == winner.pid
    late = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert late.returncode == 1 and "HARN-SUS-006" in late.stderr
    assert snap.read_bytes() == claimed
    (tmp_path / "go").write_text("1")
    wout, werr = winner.communicate(timeout=60)
    assert winner.returncode == 0, werr
    assert _log(tmp_path) == ["resumed"]
    assert json.loads(snap.read_text())["status"] == "completed"


CYCLES = """
pipeline main() {
  for i in range(200) {
    llm_mock({tool_calls: [{id: "p" + to_string(i), name: "agent_await_resumption",
      arguments: {reason: "cycle " + to_string(i)}}]})
  }
  llm_mock({text: "done"})
  const h = sub_agent_run("cycle", {provider: "mock", background: true, max_iterations: 500})
  var s = wait_agent(h)
  var n = 0
  while s.status == "suspended" {
    n = n + 1
    resume_agent(h)
    s = wait_agent(h)
  }
  println(to_string(n) + " " + s.status)
}
"""


def _check_loadable(state: Path) -> list[str]:
    statuses = []
    for path in sorted(state.glob("worker_*.json")):
        doc, _ = read_document(str(path))  # raises if the file does not load
        statuses.append(doc["status"])
    return statuses


@pytest.mark.slow
def test_sigkill_during_200_suspend_cycles_never_breaks_the_snapshot(tmp_path: Path) -> None:
    (tmp_path / "cycles.harn").write_text(CYCLES, encoding="utf-8")
    # a complete run first: 200 parks and resumes, each writing the snapshot
    full = harnpy("run", "cycles.harn", cwd=tmp_path, env=ENV, timeout=120)
    assert full.returncode == 0, full.stderr
    assert full.stdout.strip() == "200 completed"
    seed = int(time.time())
    rnd = random.Random(seed)
    kills = 0
    for trial in range(6):
        state = tmp_path / f"state{trial}"
        env = dict(os.environ)
        env.update(ENV)
        env["HARN_WORKER_STATE_DIR"] = str(state)
        proc = subprocess.Popen(
            [sys.executable, "-m", "harnpy", "run", "cycles.harn"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # wait for the first snapshot, then kill at a random moment of the cycles
        deadline = time.monotonic() + 30
        while not list(state.glob("worker_*.json")) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rnd.uniform(0.0, 2.5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        statuses = _check_loadable(state)
        assert len(statuses) == 1, (seed, trial, statuses)
        assert statuses[0] in ("suspended", "running", "completed"), (seed, trial)
        if statuses[0] == "suspended":
            # the previous park's snapshot is whole: another process continues from it
            (snap,) = list(state.glob("worker_*.json"))
            r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV, timeout=60)
            assert r.returncode in (0, 3), (seed, trial, r.stderr)
            _check_loadable(state)
    assert kills >= 1, f"seed {seed}: every run ended before the kill"


SLOW_DURABLE = """
tool slow(ms: int) -> string {
  description "sleeps"
  sleep(ms)
  return "slept"
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r",
    conditions: {trigger: {kind: "k", provider: "github"}, timeout: {duration_minutes: 60}}}}]})
  llm_mock({tool_calls: [{name: "slow", arguments: {ms: 3000}}]})
  llm_mock({text: "finished ##DONE##"})
  const r = agent_loop("Do it.", nil, {provider: "mock", tools: tool_registry([slow])})
  println(r.snapshot_path)
}
"""


def test_ctrl_c_during_a_durable_resume_puts_back_the_park_and_its_wait(tmp_path: Path) -> None:
    """lifecycle.md 4.4 + M7: ``run --resume`` cancels the durable wait; a Ctrl-C before
    the worker settles puts the snapshot back to ``suspended`` at the same park and makes
    the wait pending again, so ``harnpy worker`` / ``workers resume`` still find it."""
    (tmp_path / "main.harn").write_text(SLOW_DURABLE, encoding="utf-8")
    env = {**ENV, "HARNPY_STORE": "default"}
    first = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = tmp_path / first.stdout.strip()
    before = json.loads(snap.read_text(encoding="utf-8"))
    full_env = {**os.environ, **env}
    full_env.pop("HARNPY_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", "--resume", str(snap)],
        cwd=tmp_path,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while json.loads(snap.read_text(encoding="utf-8"))["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # the resume claims the snapshot first, then cancels the durable wait
    while json.loads(harnpy("workers", "ls", "--json", cwd=tmp_path, env=env).stdout):
        assert time.monotonic() < deadline, "the resume did not cancel the durable wait"
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    after = json.loads(snap.read_text(encoding="utf-8"))
    assert after["status"] == "suspended" and after["park_id"] == before["park_id"]
    (wait,) = json.loads(harnpy("workers", "ls", "--json", cwd=tmp_path, env=env).stdout)
    assert wait["status"] == "pending" and wait["worker_id"] == before["id"]
