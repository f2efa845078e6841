"""No lost or doubled work when processes die (issue 13 points 5, 6, 7, 12):

* a ``harnpy run --resume`` SIGKILLed after its claim leaves its park behind, which the
  next resume takes back, once (point 6);
* a ``harnpy worker`` killed between the resume receipt and the resume's claim: the next
  runner re-runs exactly that resume (point 5);
* the temporary files of a killed snapshot write are swept by the next write (point 7);
* SIGTERM interrupts ``harnpy run`` / ``run --resume`` / ``harnpy worker`` as Ctrl-C does:
  ``finally`` blocks run, the park is put back, exit 143 (point 12).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import harnpy
from tests.sealing import read_doc

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARNPY_STORE": ""}


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker snapshots in this test's own ``.harn/workers``."""
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", str(tmp_path / ".harn" / "workers"))


#: A root loop that parks, then (resumed) calls a slow tool that logs each call, then parks
#: again and finishes.
SLOW_STEP = """
fn tools() {
  return tool_define(tool_registry(), "step", "one step", {
    parameters: {},
    handler: { args ->
      append_file("steps.log", "step\\n")
      sleep_ms(STEP_MS)
      return "ok"
    },
  })
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "park 1"}}]})
  llm_mock({tool_calls: [{id: "s1", name: "step", arguments: {}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", tools: tools(), max_iterations: 10})
  println(r.status)
}
"""


def _env(**extra: str) -> dict[str, str]:
    full = dict(os.environ)
    full.pop("HARNPY_DEBUG", None)
    full.update(ENV)
    full.update(extra)
    return full


def _park(tmp_path: Path, step_ms: int = 4000) -> Path:
    (tmp_path / "w.harn").write_text(SLOW_STEP.replace("STEP_MS", str(step_ms)))
    p = harnpy("run", "w.harn", cwd=tmp_path, env=ENV)
    assert p.returncode == 0 and p.stdout.strip() == "suspended", p.stderr
    (snap,) = (tmp_path / ".harn" / "workers").glob("worker_*.json")
    return snap


def _stored_status(store_path: str, worker_id: str) -> str:
    """The status of a worker checkpoint kept in the SQLite store ``store_path``."""
    from harnpy.store import open_store

    info = open_store(f"sqlite://{store_path}").checkpoint_info(worker_id)
    assert info is not None
    return info.status


def _status(snap: Path) -> str:
    return str(read_doc(snap)["status"])


def _start_resume(tmp_path: Path, snap: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", "--resume", str(snap)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(cond: object, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _steps(tmp_path: Path) -> int:
    f = tmp_path / "steps.log"
    return len(f.read_text().splitlines()) if f.exists() else 0


def test_a_resume_killed_mid_run_leaves_its_park_to_be_resumed_once(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    p = _start_resume(tmp_path, snap)
    _wait_for(lambda: _steps(tmp_path) == 1)  # inside the slow tool, after the claim
    assert _status(snap) == "running"
    p.kill()
    p.communicate(timeout=30)
    assert _status(snap) == "running"  # what the killed process left
    assert Path(str(snap) + ".park").exists()  # ... and the park it replaced
    # two resumes at once: the park goes back once and exactly one of them resumes it
    a, b = _start_resume(tmp_path, snap), _start_resume(tmp_path, snap)
    outs = [x.communicate(timeout=60) for x in (a, b)]
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 1], outs
    loser = outs[[a.returncode, b.returncode].index(1)][1]
    assert "HARN-SUS-006" in loser or "HARN-SUS-003" in loser, loser
    assert _status(snap) == "completed"
    assert _steps(tmp_path) == 2  # the interrupted turn ran again, once
    assert not Path(str(snap) + ".park").exists()
    again = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert again.returncode == 1 and "not suspended (status=completed)" in again.stderr


def test_a_live_resume_is_never_taken_over(tmp_path: Path) -> None:
    snap = _park(tmp_path, step_ms=60_000)  # still in its tool while the other one tries
    p = _start_resume(tmp_path, snap)
    try:
        _wait_for(lambda: _steps(tmp_path) == 1)
        other = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
        assert other.returncode == 1 and "HARN-SUS-006" in other.stderr, other.stderr
        assert _status(snap) == "running"
    finally:
        p.send_signal(signal.SIGTERM)  # stops it: its park goes back
        p.communicate(timeout=60)
    assert p.returncode == 143 and _status(snap) == "suspended"
    assert _steps(tmp_path) == 1


def test_sigterm_during_a_resume_puts_the_park_back(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    p = _start_resume(tmp_path, snap)
    _wait_for(lambda: _steps(tmp_path) == 1)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert "parked again" in err
    assert _status(snap) == "suspended"
    done = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert done.returncode == 0, done.stderr
    assert _status(snap) == "completed"


def test_sigterm_runs_finally_blocks_and_exits_143(tmp_path: Path) -> None:
    (tmp_path / "t.harn").write_text(
        'pipeline main() {\n  try {\n    println("started")\n    sleep_ms(30000)\n'
        '  } finally {\n    println("cleanup ran")\n  }\n}\n'
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", "t.harn"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "started"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert "cleanup ran" in out


def test_sigterm_stops_harnpy_worker_cleanly(tmp_path: Path) -> None:
    p = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "worker", "--store", str(tmp_path / "s.sqlite3")],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stderr is not None
    assert "harnpy worker: store" in p.stderr.readline()
    time.sleep(1.0)  # polling
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert "stopped" in err


def _dead_pid() -> int:
    q = subprocess.Popen([sys.executable, "-c", "pass"])
    q.wait()
    return q.pid


#: Parks on a trigger with a 30-minute timeout, then (resumed) logs a mark and finishes.
TRIGGER_PARK = """
fn tools() {
  return tool_define(tool_registry(), "mark", "record the resume", {
    parameters: {},
    handler: { args ->
      append_file("steps.log", "mark\\n")
      return "ok"
    },
  })
}
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "wait",
    conditions: {trigger: {kind: "go", provider: "webhook"},
                 timeout: {duration_minutes: 30, on_timeout: "resume_with_summary"}}}}]})
  llm_mock({tool_calls: [{id: "m", name: "mark", arguments: {}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", tools: tools(), max_iterations: 5})
  println(r.status)
}
"""


def test_a_runner_killed_between_receipt_and_claim_loses_no_resume(tmp_path: Path) -> None:
    from harnpy.lifecycle.triggers.store import open_store

    store_path = str(tmp_path / "s.sqlite3")
    # a store and no state directory: the worker checkpoint is a row of the store
    env = {**ENV, "HARNPY_STORE": store_path, "HARN_WORKER_STATE_DIR": ""}
    (tmp_path / "w.harn").write_text(TRIGGER_PARK)
    p = harnpy("run", "w.harn", cwd=tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "suspended", p.stderr
    assert not (tmp_path / ".harn" / "workers").exists()  # the checkpoint is a store row
    s = open_store(store_path)
    (wait,) = s.list_waits()
    ref = wait.snapshot_path
    assert ref == f"sqlite://{store_path}#{wait.worker_id}"
    wait.deadline_ms = 1  # the timeout is due now
    s.update(wait)
    # a runner claimed it and its resume shim wrote the receipt, then both were killed
    # before `harnpy run --resume` claimed the snapshot
    now = int(time.time() * 1000)
    c = s.claim(wait.id, "runner-killed", now, 200)
    assert c is not None
    assert s.begin_resume(wait.id, c.token, now, {"pid": _dead_pid(), "host": os.uname().nodename})
    time.sleep(0.3)  # its lease expires
    w = harnpy("worker", "--once", cwd=tmp_path, env=env)
    assert w.returncode == 0, w.stderr
    assert "never took effect; resuming again" in w.stderr
    assert _stored_status(store_path, wait.worker_id) == "completed"
    assert _steps(tmp_path) == 1
    rec = s.get(wait.id)
    assert rec is not None and rec.status == "completed"
    # the resumed worker's checkpoint commit completed the wait of the park it left (same
    # transaction); the runner's outcome is kept beside
    assert rec.outcome["status"] == "consumed"
    assert rec.outcome["runner_outcome"]["status"] == "resumed"
    # and a receipt whose resume did take effect is only recorded, never run again
    assert harnpy("worker", "--once", cwd=tmp_path, env=env).returncode == 0
    assert _steps(tmp_path) == 1


def _due_file_park(tmp_path: Path) -> tuple[Any, Any, str, dict[str, str]]:
    """TRIGGER_PARK parked with the waits in an SQLite store and the checkpoint a file of
    the state directory, its timeout due now: ``(store, wait, snapshot path, env)``."""
    from harnpy.lifecycle.triggers.store import open_store

    store_path = str(tmp_path / "s.sqlite3")
    env = {**ENV, "HARNPY_STORE": store_path}
    (tmp_path / "w.harn").write_text(TRIGGER_PARK)
    p = harnpy("run", "w.harn", cwd=tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "suspended", p.stderr
    s = open_store(store_path)
    (wait,) = s.list_waits()
    snap = str(wait.snapshot_path)
    assert os.path.isfile(snap)  # a file of the state directory
    wait.deadline_ms = 1  # the timeout is due now
    s.update(wait)
    return s, wait, snap, env


def test_a_resume_that_dies_after_the_runner_looked_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume a receipt announced claimed the worker's snapshot file and was still
    alive when the runner's recovery looked at it (a replica whose lease lapsed under
    load), then died before the runner read the receipt's state: the snapshot says
    ``running`` under a dead owner. That resume took no effect; the runner puts its park
    back and resumes it again (it used to record the wait as ``recovered`` and leave the
    worker ``running`` for ever)."""
    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.lifecycle.triggers import runner as runner_mod

    s, wait, snap, env = _due_file_park(tmp_path)
    # a runner claimed the wait, its shim wrote the receipt, its resume claimed the file
    now = int(time.time() * 1000)
    c = s.claim(wait.id, "runner-lapsed", now, 200)
    assert c is not None
    assert s.begin_resume(wait.id, c.token, now, {"pid": _dead_pid(), "host": os.uname().nodename})
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    ck, key = checkpoint_for(snap)
    ck.claim_checkpoint(key, "resume-lapsed", owner={"pid": owner.pid, "host": os.uname().nodename})
    assert read_doc(Path(snap))["status"] == "running"
    time.sleep(0.3)  # the wait's lease expires

    looked = []
    recover = runner_mod._recover_park

    def recover_then_owner_dies(path: str | None) -> None:
        recover(path)  # the owner still lives: nothing to put back
        looked.append(read_doc(Path(snap))["status"])
        owner.kill()
        owner.wait()

    monkeypatch.setattr(runner_mod, "_recover_park", recover_then_owner_dies)
    monkeypatch.chdir(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = runner_mod.WorkerRunner(s, log=lambda _t: None).process(wait.id)
    assert looked == ["running"]
    assert out is not None and out["status"] == "resumed", out
    assert read_doc(Path(snap))["status"] == "completed"
    assert _steps(tmp_path) == 1
    rec = s.get(wait.id)
    assert rec is not None and rec.status == "completed"
    assert rec.outcome["status"] != "recovered", rec.outcome


def test_a_wait_due_while_a_resume_by_hand_runs_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait of a park becomes due while `harnpy run --resume` (by hand, not through
    the wait) holds the worker: the runner leaves the wait pending (it used to cancel it as
    stale, and a resume by hand that then died left the worker parked with no wait). Once
    that resume died, the runner puts its park back and resumes the worker through the
    wait."""
    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.lifecycle.triggers import runner as runner_mod

    s, wait, snap, env = _due_file_park(tmp_path)
    by_hand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        ck, key = checkpoint_for(snap)
        ck.claim_checkpoint(key, "by-hand", owner={"pid": by_hand.pid, "host": os.uname().nodename})
        monkeypatch.chdir(tmp_path)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        runner = runner_mod.WorkerRunner(s, log=lambda _t: None)
        out = runner.process(wait.id)
        assert out is not None and out["status"] == "in_progress", out
        rec = s.get(wait.id)
        assert rec is not None and rec.status == "pending", rec
        assert read_doc(Path(snap))["status"] == "running"
    finally:
        by_hand.kill()
        by_hand.wait()
    out = runner.process(wait.id)  # the resume by hand died: its park is put back
    assert out is not None and out["status"] == "resumed", out
    assert read_doc(Path(snap))["status"] == "completed"
    assert _steps(tmp_path) == 1


def test_stray_snapshot_temp_files_are_swept_on_the_next_write(tmp_path: Path) -> None:
    from harnpy.runtime.snapshot import write_atomic
    from harnpy.security import files

    tag = files._host_tag()
    dead = tmp_path / f".snapshot-{tag}-{_dead_pid()}-abc.tmp"
    live = tmp_path / f".snapshot-{tag}-{os.getppid()}-def.tmp"  # a writer still running
    other_host = tmp_path / f".snapshot-00000000-{_dead_pid()}-ghi.tmp"
    legacy_old = tmp_path / ".snapshot-k2j4h5g6.tmp"
    legacy_new = tmp_path / ".snapshot-q9w8e7r6.tmp"
    for f in (dead, live, other_host, legacy_old, legacy_new):
        f.write_bytes(b"x" * 1000)
    old = time.time() - 2 * files.LEGACY_TEMP_AGE_S
    os.utime(legacy_old, (old, old))
    files._swept.discard((str(tmp_path), ".snapshot-"))
    write_atomic(str(tmp_path / "snap.json"), b"{}", max_bytes=None)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([live.name, other_host.name, legacy_new.name, "snap.json"])
