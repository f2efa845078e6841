"""``harnpy worker`` / ``harnpy workers``: resuming due waits from the store exactly once,
including across a runner crash between firing a wait and recording it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from harnpy.lifecycle.triggers.bindings import ResumeRequest
from harnpy.lifecycle.triggers.dispatcher import TriggerDispatcher
from harnpy.lifecycle.triggers.runner import ResumeTicket, WorkerRunner
from harnpy.lifecycle.triggers.store import WaitRecord, open_store
from harnpy.runtime.clock import Clock
from tests.conftest import harnpy
from tests.sealing import write_doc

NOW = 1_780_000_000_000

RECORDER = """
import os, sys
fd = os.open(os.environ["RECORD_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
os.write(fd, (sys.argv[1] + " " + os.environ.get("HARNPY_RESUME_INITIATOR", "")
              + "\\n").encode())
os.close(fd)
"""


def setup(tmp_path: Path) -> tuple[str, Path, str]:
    """A store path, the invocation record file, and a --resume-cmd recording invocations."""
    rec = tmp_path / "rec.py"
    rec.write_text(RECORDER)
    return str(tmp_path / "waits.sqlite3"), tmp_path / "invocations.txt", f"{sys.executable} {rec}"


def snapshot(tmp_path: Path, wid: str) -> str:
    p = tmp_path / f"{wid}.json"
    write_doc(p, {"_type": "worker_snapshot", "id": wid, "status": "suspended"})
    return str(p)


def add_due(store_path: str, tmp_path: Path, wid: str) -> None:
    s = open_store(store_path)
    now = int(time.time() * 1000)
    s.add(
        WaitRecord(
            id=wid,
            worker_id=f"worker_{wid}",
            snapshot_path=snapshot(tmp_path, f"worker_{wid}"),
            deadline_ms=now - 1_000,
            on_timeout="resume_with_summary",
            created_at_ms=now - 60_000,
        )
    )
    s.close()


def invocations(f: Path) -> list[str]:
    return f.read_text().splitlines() if f.exists() else []


def test_crash_between_fire_and_record_resumes_exactly_once(tmp_path: Path) -> None:
    store_path, record, cmd = setup(tmp_path)
    add_due(store_path, tmp_path, "w1")
    env = {"RECORD_FILE": str(record), "HARNPY_STORE": ""}
    args = ["worker", "--store", store_path, "--once", "--resume-cmd", cmd + " {wait_id}"]
    # 1st run: fires the resume, then dies before recording the outcome
    p = harnpy(*args, "--lease-ms", "8000", env={**env, "HARNPY_WORKER_TEST_CRASH": "after_fire"})
    assert p.returncode == 86, p.stderr
    assert invocations(record) == ["w1 timeout"]
    s = open_store(store_path)
    rec = s.get("w1")
    assert rec is not None and rec.status == "claimed" and s.receipt("w1") is not None
    # a restart before the lease expires leaves the claim alone
    assert harnpy(*args, env=env).returncode == 0
    rec = s.get("w1")
    assert rec is not None and rec.status == "claimed" and rec.lease_until_ms is not None
    assert invocations(record) == ["w1 timeout"]
    time.sleep(max(0.0, (rec.lease_until_ms - time.time() * 1000) / 1000) + 0.05)
    # restart after the lease expired: recovers the outcome, does not resume again
    p = harnpy(*args, env=env)
    assert p.returncode == 0, p.stderr
    assert invocations(record) == ["w1 timeout"]
    rec = s.get("w1")
    assert rec is not None and rec.status == "completed"
    assert rec.outcome["status"] == "recovered"
    assert rec.outcome["resume_outcome"] == {"exit_code": 0}
    # and nothing is left to do
    assert harnpy(*args, env=env).returncode == 0
    assert invocations(record) == ["w1 timeout"]


def test_crash_before_fire_resumes_after_restart(tmp_path: Path) -> None:
    store_path, record, cmd = setup(tmp_path)
    add_due(store_path, tmp_path, "w1")
    env = {"RECORD_FILE": str(record), "HARNPY_STORE": ""}
    args = ["worker", "--store", store_path, "--once", "--resume-cmd", cmd + " {wait_id}"]
    p = harnpy(*args, "--lease-ms", "200", env={**env, "HARNPY_WORKER_TEST_CRASH": "before_fire"})
    assert p.returncode == 86
    assert invocations(record) == []
    time.sleep(0.3)
    assert harnpy(*args, env=env).returncode == 0
    assert invocations(record) == ["w1 timeout"]
    rec = open_store(store_path).get("w1")
    assert rec is not None and rec.status == "completed" and rec.outcome["status"] == "resumed"
    assert rec.attempts == 2


def test_two_runners_never_resume_the_same_wait_twice(tmp_path: Path) -> None:
    import os
    import subprocess

    store_path, record, cmd = setup(tmp_path)
    for i in range(6):
        add_due(store_path, tmp_path, f"w{i}")
    env = {"RECORD_FILE": str(record), "HARNPY_STORE": ""}
    args = [sys.executable, "-m", "harnpy", "worker", "--store", store_path, "--once"]
    args += ["--resume-cmd", cmd + " {wait_id}"]
    procs = [subprocess.Popen(args, env={**os.environ, **env}) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    ids = sorted(line.split()[0] for line in invocations(record))
    assert ids == [f"w{i}" for i in range(6)]
    assert all(r.status == "completed" for r in open_store(store_path).list_waits())


def test_missed_cron_ticks_resume_once(tmp_path: Path) -> None:
    clock = Clock()
    clock.set(NOW)
    store = open_store(str(tmp_path / "w.db"))
    d = TriggerDispatcher(clock=clock, store=store)
    h = d.register_resume_wait(
        "w",
        {"trigger": {"kind": "cron.tick", "provider": "cron", "schedule": "*/10 * * * *"}},
        snapshot(tmp_path, "worker_w"),
        durable=True,
    )
    assert h is not None
    calls: list[tuple[ResumeRequest, ResumeTicket]] = []

    def resume(req: ResumeRequest, ticket: ResumeTicket) -> dict[str, Any]:
        calls.append((req, ticket))
        return {"status": "resumed"}

    runner = WorkerRunner(store, resume, clock=clock, lease_ms=1_000)
    clock.advance(2 * 3600_000)  # the host was down for two hours: 12 ticks
    out = runner.run_once()
    assert [o["status"] for o in out] == ["resumed"]
    assert len(calls) == 1
    req = calls[0][0]
    assert req.cause == "cron" and req.input["coalesced"] == 12
    assert req.input["missed_ticks"] == 11
    assert runner.run_once() == []
    rec = store.get(h["id"])
    assert rec is not None and rec.status == "completed" and store.receipt(h["id"]) is not None


def test_timeout_fail_marks_the_snapshot_failed(tmp_path: Path) -> None:
    clock = Clock()
    clock.set(NOW)
    store = open_store(str(tmp_path / "w.db"))
    snap = snapshot(tmp_path, "worker_w")
    d = TriggerDispatcher(clock=clock, store=store)
    h = d.register_resume_wait(
        "w",
        {
            "trigger": {"kind": "x", "provider": "y"},
            "timeout": {"duration_minutes": 3, "on_timeout": "fail"},
        },
        snap,
        durable=True,
    )
    assert h is not None
    runner = WorkerRunner(store, lambda r, t: {"status": "resumed"}, clock=clock)
    clock.advance(2 * 60_000)
    assert runner.run_once() == []
    clock.advance(60_000)
    (res,) = runner.run_once()
    assert res["status"] == "worker_failed"
    doc = json.loads(Path(snap).read_text())
    assert doc["status"] == "failed" and "timeout" in doc["error"] and doc["suspension"] is None


def test_event_posted_by_another_process_wakes_the_wait(store_url: str) -> None:
    clock = Clock()
    clock.set(NOW)
    path = store_url  # the one store, on each backend
    d = TriggerDispatcher(clock=clock, store=open_store(path))
    h = d.register_resume_wait("w", {"on_event": "deploy.done"}, durable=True)
    assert h is not None
    # the parking process is gone; another process emits the event
    TriggerDispatcher(clock=clock, store=open_store(path)).emit_event("deploy.done", {"v": 2})
    seen: list[ResumeRequest] = []
    runner = WorkerRunner(
        open_store(path), lambda r, t: seen.append(r) or {"status": "resumed"}, clock=clock
    )
    runner.run_once()
    assert [(r.cause, r.input) for r in seen] == [("event", {"v": 2})]


def test_workers_cli(tmp_path: Path) -> None:
    store_path, record, cmd = setup(tmp_path)
    s = open_store(store_path)
    for wid in ("a", "b"):
        s.add(
            WaitRecord(
                id=f"wait_{wid}",
                worker_id=f"worker_{wid}",
                snapshot_path=snapshot(tmp_path, f"worker_{wid}"),
                on_event="ci.green",
                deadline_ms=int(time.time() * 1000) + 3600_000,
                on_timeout="fail",
                created_at_ms=1,
            )
        )
    env = {"RECORD_FILE": str(record), "HARNPY_STORE": store_path}
    p = harnpy("workers", "ls", env=env)
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert rows[0].split() == ["WORKER", "STATUS", "WAKE", "REASON"]
    assert any(r.split()[:2] == ["a", "pending"] and "event ci.green" in r for r in rows), rows
    assert all(len(r) <= 100 for r in rows)
    listed = json.loads(harnpy("workers", "ls", "--json", env=env).stdout)
    due = {r["worker_id"]: r["due"] for r in listed}["worker_b"]
    assert due.startswith("20")  # the deadline, as RFC 3339
    assert {r["id"] for r in listed} == {"wait_a", "wait_b"}
    p = harnpy("workers", "show", "worker_b", env=env)
    assert f"due          {due}\n" in p.stdout  # show and ls agree
    assert f"deadline     {due}\n" in p.stdout
    p = harnpy("workers", "show", "worker_b", "--json", env=env)
    data = json.loads(p.stdout)
    assert data["id"] == "wait_b" and data["snapshot_status"] == "suspended"
    p = harnpy("workers", "close", "wait_a", env=env)
    assert p.returncode == 0 and "cancelled (snapshot marked cancelled)" in p.stdout
    doc = json.loads((tmp_path / "worker_a.json").read_text())
    assert doc["status"] == "cancelled" and doc["error"] == "worker cancelled"
    assert harnpy("workers", "close", "wait_a", env=env).returncode == 1
    p = harnpy("workers", "resume", "wait_b", "--resume-cmd", cmd + " {wait_id}", env=env)
    assert p.returncode == 0, p.stderr
    assert invocations(record) == ["wait_b operator"]
    assert harnpy("workers", "resume", "wait_b", env=env).returncode == 1  # already done
    p = harnpy("workers", "ls", "--all", env=env)
    assert "cancelled" in p.stdout and "completed" in p.stdout
    assert harnpy("workers", "show", "nope", env=env).returncode == 1


def _parked_snapshot(tmp_path: Path, wid: str, status: str, park_id: str) -> str:
    p = tmp_path / f"{wid}.json"
    doc = {"_type": "worker_snapshot", "id": wid, "status": status, "park_id": park_id}
    write_doc(p, doc)
    return str(p)


def _timeout_wait(tmp_path: Path, snap: str, park_id: str, action: str) -> tuple[Any, Clock]:
    clock = Clock()
    clock.set(NOW)
    store = open_store(str(tmp_path / "w.db"))
    d = TriggerDispatcher(clock=clock, store=store)
    h = d.register_resume_wait(
        "w",
        {
            "trigger": {"kind": "x", "provider": "y"},
            "timeout": {"duration_minutes": 1, "on_timeout": action},
        },
        snap,
        durable=True,
        park_id=park_id,
    )
    assert h is not None and store.get(h["id"]).park_id == park_id
    clock.advance(2 * 60_000)
    return store, clock


def test_timeout_fail_leaves_a_worker_that_is_no_longer_suspended_alone(tmp_path: Path) -> None:
    snap = _parked_snapshot(tmp_path, "worker_w", "completed", "p1")
    store, clock = _timeout_wait(tmp_path, snap, "p1", "fail")
    (res,) = WorkerRunner(store, lambda r, t: {"status": "resumed"}, clock=clock).run_once()
    assert res["status"] == "stale" and "HARN-SUS-006" in res["outcome"]["error"]
    assert json.loads(Path(snap).read_text())["status"] == "completed"
    assert [w.status for w in store.list_waits()] == ["cancelled"]


def test_a_wait_of_an_earlier_park_never_resumes_a_later_park(tmp_path: Path) -> None:
    snap = _parked_snapshot(tmp_path, "worker_w", "suspended", "p2")  # parked again since
    store, clock = _timeout_wait(tmp_path, snap, "p1", "resume_with_summary")
    calls: list[ResumeRequest] = []
    runner = WorkerRunner(store, lambda r, t: calls.append(r) or {"status": "resumed"}, clock=clock)
    (res,) = runner.run_once()
    assert res["status"] == "stale" and calls == []
    doc = json.loads(Path(snap).read_text())
    assert doc["status"] == "suspended" and doc["park_id"] == "p2"


def test_a_refused_resume_keeps_the_wait_pending(tmp_path: Path) -> None:
    snap = _parked_snapshot(tmp_path, "worker_w", "suspended", "p1")
    store, clock = _timeout_wait(tmp_path, snap, "p1", "resume_with_summary")
    (wait,) = store.list_waits()
    runner = WorkerRunner(store, lambda r, t: {"status": "failed", "exit_code": 1}, clock=clock)
    res = runner.process(wait.id, manual=True)
    assert res is not None and res["status"] == "refused"
    again = store.get(wait.id)
    assert again is not None and again.status == "pending" and store.receipt(wait.id) is None
    assert store.cancel(wait.id, clock.now_ms(), "closed")  # still closable


def test_lease_and_poll_options_must_be_positive(tmp_path: Path) -> None:
    """``--lease-ms 0`` (every claim expired at once) or a negative ``--poll-ms`` is a
    usage error naming the option, exit 2, not accepted silently."""
    store = str(tmp_path / "s.sqlite3")
    for args in (
        ["worker", "--once", "--lease-ms", "0"],
        ["worker", "--once", "--poll-ms", "-1"],
        ["workers", "resume", "w1", "--lease-ms", "-5"],
        ["waitpoint", "resume", "--poll-ms", "0"],
    ):
        p = harnpy(*args, "--store", f"sqlite://{store}")
        opt = args[-2]
        assert p.returncode == 2, (args, p.stderr)
        assert f"error: argument {opt}: must be at least 1, not {args[-1]}" in p.stderr
    huge = str(2**63 - 1)  # was accepted, then an OverflowError traceback
    for opt in ("--lease-ms", "--poll-ms"):
        p = harnpy("worker", "--once", opt, huge, "--store", f"sqlite://{store}")
        assert p.returncode == 2 and f"must be at most {2**31 - 1}" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    p = harnpy("worker", "--once", "--lease-ms", "soon", "--store", f"sqlite://{store}")
    assert p.returncode == 2 and "not a whole number: 'soon'" in p.stderr
    assert not (tmp_path / "s.sqlite3").exists()
