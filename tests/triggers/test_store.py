"""The wait store as the trigger layer opens it (the one store, :mod:`harnpy.store`):
exclusive claims across connections and processes, leases (in the store clock), resume
receipts, events, configuration."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harnpy.lifecycle.triggers.store import (
    StoreError,
    WaitRecord,
    open_store,
    resolve_store_path,
)

NOW = 1_780_000_000_000


def due_wait(wid: str, **kw: object) -> WaitRecord:
    base: dict[str, object] = dict(
        id=wid, worker_id=f"worker_{wid}", deadline_ms=NOW - 1, on_timeout="resume_with_summary"
    )
    base.update(kw)
    return WaitRecord(**base)  # type: ignore[arg-type]


def test_claims_are_exclusive_across_connections(tmp_path: Path) -> None:
    path = str(tmp_path / "w.db")
    a, b = open_store(path), open_store(path)
    a.add(due_wait("w1"))
    ca = a.claim("w1", "runner-a", NOW, 1_000)
    assert ca is not None and ca.record.status == "claimed"
    assert b.claim("w1", "runner-b", NOW + 500, 1_000) is None  # lease still live
    b.clock_offset_ms = 1_500  # the store clock moves past runner-a's lease
    cb = b.claim("w1", "runner-b", NOW + 1_001, 1_000)  # runner-a's lease expired
    assert cb is not None and cb.previous_token == ca.token
    # the old holder lost every right: no receipt, no completion, no renewal
    assert not a.begin_resume("w1", ca.token, NOW + 1_002)
    assert not a.complete("w1", ca.token, "completed", {}, NOW + 1_002)
    assert not a.renew("w1", ca.token, NOW + 1_002, 1_000)
    assert b.begin_resume("w1", cb.token, NOW + 1_003, {"by": "b"})
    assert b.complete("w1", cb.token, "completed", {"ok": True}, NOW + 1_004)
    rec = a.get("w1")
    assert rec is not None and rec.status == "completed" and rec.attempts == 2
    assert a.claim("w1", "runner-a", NOW + 10**9, 1_000) is None  # final


def test_receipt_is_inserted_once(tmp_path: Path) -> None:
    s = open_store(str(tmp_path / "w.db"))
    s.add(due_wait("w1"))
    c = s.claim("w1", "r", NOW, 1_000)
    assert c is not None
    assert s.begin_resume("w1", c.token, NOW, {"n": 1})
    assert not s.begin_resume("w1", c.token, NOW, {"n": 2})
    # after a takeover the new holder sees the receipt and must not resume again
    s.clock_offset_ms = 2_000
    c2 = s.claim("w1", "r2", NOW + 2_000, 1_000)
    assert c2 is not None and not s.begin_resume("w1", c2.token, NOW + 2_000)
    rc = s.receipt("w1")
    assert rc is not None and rc["token"] == c.token and rc["info"] == {"n": 1}
    s.finish_receipt("w1", c.token, {"exit_code": 0}, NOW + 3)
    assert s.receipt("w1")["outcome"] == {"exit_code": 0}  # type: ignore[index]
    assert not s.cancel("w1", NOW + 4)  # its resume already began


def test_only_due_waits_are_claimed_unless_forced(tmp_path: Path) -> None:
    s = open_store(str(tmp_path / "w.db"))
    s.add(WaitRecord(id="w2", worker_id="x", deadline_ms=NOW + 60_000))
    assert s.due(NOW) == []
    assert s.claim("w2", "r", NOW, 1_000) is None
    assert s.claim("w2", "r", NOW, 1_000, force=True) is not None  # `workers resume`


def test_events_mark_waits_due(tmp_path: Path) -> None:
    s = open_store(str(tmp_path / "w.db"))
    s.add(WaitRecord(id="e1", worker_id="a", on_event="ci.green"))
    s.add(WaitRecord(id="t1", worker_id="b", provider="github", match_events=["review.approved"]))
    s.add(WaitRecord(id="t2", worker_id="c", provider="github", match_events=["push"]))
    assert s.due(NOW) == []
    assert s.post_event("ci.red", 1, NOW) == []
    assert s.post_event("ci.green", {"ok": True}, NOW) == ["e1"]
    assert s.post_trigger_event("github", "review.approved", {"x": 1}, NOW) == ["t1"]
    due = {r.id: r for r in s.due(NOW)}
    assert set(due) == {"e1", "t1"}
    assert due["e1"].due_instant(NOW) == ("event", NOW)
    assert due["e1"].due_payload == {"topic": "ci.green", "payload": {"ok": True}}
    assert due["t1"].due_reason == "trigger"


def test_cancel(tmp_path: Path) -> None:
    s = open_store(str(tmp_path / "w.db"))
    s.add(due_wait("w1"))
    assert s.cancel("w1", NOW)
    assert not s.cancel("w1", NOW)
    assert s.due(NOW) == [] and s.get("w1").status == "cancelled"  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="already exists"):
        s.add(due_wait("w1"))


RACER = textwrap.dedent(
    """
    import os, sys, time
    from harnpy.lifecycle.triggers.store import open_store
    s = open_store(sys.argv[1])
    out = sys.argv[2]
    while True:
        due = s.due(int(sys.argv[3]))
        if not due:
            break
        for rec in due:
            c = s.claim(rec.id, f"p{os.getpid()}", int(sys.argv[3]), 60_000)
            if c is None:
                continue
            if s.begin_resume(rec.id, c.token, int(sys.argv[3])):
                fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                os.write(fd, f"{rec.id} {os.getpid()}\\n".encode())
                os.close(fd)
            s.complete(rec.id, c.token, "completed", {}, int(sys.argv[3]))
    """
)


def test_claims_are_exclusive_across_processes(tmp_path: Path, store_url: str) -> None:
    path = store_url
    s = open_store(path)
    n = 40
    for i in range(n):
        s.add(due_wait(f"w{i:02d}"))
    out = tmp_path / "resumed.txt"
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, path, str(out), str(NOW)]) for _ in range(3)
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0
    lines = out.read_text().splitlines()
    ids = [ln.split()[0] for ln in lines]
    assert sorted(ids) == [f"w{i:02d}" for i in range(n)]  # each resumed exactly once
    assert all(r.status == "completed" for r in s.list_waits())


def test_store_paths(tmp_path: Path) -> None:
    assert resolve_store_path(None) is None
    assert resolve_store_path("  ") is None
    assert resolve_store_path("default", str(tmp_path)) == str(tmp_path / ".harn/harnpy.sqlite3")
    assert resolve_store_path("sqlite:///tmp/x.db") == "/tmp/x.db"
    assert resolve_store_path("sqlite:rel.db", str(tmp_path)) == str(tmp_path / "rel.db")
    assert resolve_store_path(str(tmp_path)) == str(tmp_path / "harnpy.sqlite3")
    assert resolve_store_path("postgres://db/harn") == "postgres://db/harn"
    assert resolve_store_path(f"directory:{tmp_path}") is None  # snapshots only, no waits
    with pytest.raises(StoreError, match="unknown scheme"):
        resolve_store_path("redis://x")


def test_the_default_store_is_the_legacy_wait_file_when_only_that_exists(tmp_path: Path) -> None:
    legacy = tmp_path / ".harn" / "waits.sqlite3"
    legacy.parent.mkdir()
    s = open_store(str(legacy))  # a store at the old default path, migrated in place
    s.add(due_wait("w1"))
    s.close()
    assert resolve_store_path("default", str(tmp_path)) == str(legacy)
    got = open_store(resolve_store_path("default", str(tmp_path)) or "").get("w1")
    assert got is not None and got.worker_id == "worker_w1"
    (tmp_path / ".harn" / "harnpy.sqlite3").touch()  # once the new file exists it wins
    assert resolve_store_path("default", str(tmp_path)) == str(tmp_path / ".harn/harnpy.sqlite3")


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite3"
    bad.write_text("this is not a database\n")
    with pytest.raises(StoreError, match="bad.sqlite3 is not an SQLite database"):
        open_store(str(bad))


def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    """An SQLite file of some other program (tables, no harnpy_schema) is refused, and
    neither it nor a non-database file gets harnpy's tables or a new mode; an empty file
    and a new one become a private store."""
    import os
    import sqlite3

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE orders (id INTEGER)")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    for f in (other, junk):
        os.chmod(f, 0o644)
    with pytest.raises(
        StoreError, match="app.db is not a harnpy store but the SQLite database of something else"
    ):
        open_store(str(other))
    with pytest.raises(StoreError, match="junk.db is not an SQLite database"):
        open_store(str(junk))
    for f in (other, junk):
        assert os.stat(f).st_mode & 0o777 == 0o644
    with sqlite3.connect(other) as c:
        names = [r[0] for r in c.execute("SELECT name FROM sqlite_master")]
    assert names == ["orders"]
    empty = tmp_path / "empty.db"
    empty.touch()
    os.chmod(empty, 0o644)
    for f in (empty, tmp_path / "new.db"):
        open_store(str(f)).close()
        assert os.stat(f).st_mode & 0o777 == 0o600
