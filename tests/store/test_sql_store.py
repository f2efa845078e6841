"""The SQL store on both backends: schema migrations, waits, checkpoint claims and fencing,
transcripts, runs / events / sessions / waitpoints, leases, sources, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnpy.store import (
    CheckpointMeta,
    CheckpointTooLarge,
    ClaimRefused,
    CorruptRecord,
    Fenced,
    SchemaTooNew,
    StoreError,
    TranscriptAppend,
    WaitRecord,
    open_store,
)
from harnpy.store.migrations import LATEST
from harnpy.store.sql import SqlStore

NOW = 1_780_000_000_000


def due_wait(wid: str, **kw: Any) -> WaitRecord:
    base: dict[str, Any] = dict(
        id=wid, worker_id=f"worker_{wid}", deadline_ms=NOW - 1, on_timeout="resume_with_summary"
    )
    base.update(kw)
    return WaitRecord(**base)


def doc(status: str = "suspended", park: str | None = "p1", **extra: Any) -> bytes:
    return json.dumps(
        {"_type": "worker_snapshot", "status": status, "park_id": park, **extra}
    ).encode()


def meta(status: str = "suspended", park: str | None = "p1") -> CheckpointMeta:
    return CheckpointMeta(status=status, park_id=park, name="w", mode="sub_agent")


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def raw_exec(store: SqlStore, sql: str, params: tuple[Any, ...] = ()) -> None:
    with store.txn() as c:
        c.run(sql, params)


# ---------------------------------------------------------------- schema


def test_migrate_creates_every_table_once(store_url: str) -> None:
    s = open_store(store_url)
    assert s.schema_version() == LATEST
    assert s.migrate() == []
    info = s.info()
    assert info["schema_version"] == LATEST
    assert [m["version"] for m in info["migrations"]] == list(range(1, LATEST + 1))
    for table in ("checkpoints", "waits", "runs", "waitpoints", "sessions", "run_events",
                  "transcript_rows", "audit", "sources", "leases"):  # fmt: skip
        assert table in info["tables"], table
    s.close()


def test_concurrent_migrations_apply_each_version_once(store_url: str) -> None:
    code = (
        "import sys; from harnpy.store import open_store; s = open_store(sys.argv[1]); "
        "print(s.schema_version()); s.close()"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, store_url], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]  # fmt: skip
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert {o[0].strip() for o in outs} == {str(LATEST)}
    s = open_store(store_url)
    with s.read() as c:
        rows = c.all("SELECT version FROM harnpy_schema ORDER BY version")
    assert [r[0] for r in rows] == list(range(1, LATEST + 1))
    s.close()


def test_newer_schema_is_refused_and_left_alone(store_url: str) -> None:
    s = open_store(store_url)
    s.add(due_wait("w1"))
    raw_exec(
        s,
        "INSERT INTO harnpy_schema (version, description, applied_at_ms) VALUES (?, ?, ?)",
        (LATEST + 1, "from the future", 1),
    )
    s.close()
    with pytest.raises(SchemaTooNew) as e:
        open_store(store_url)
    assert f"schema version {LATEST + 1}" in e.value.message and "upgrade harnpy" in e.value.message
    r = subprocess.run(
        [sys.executable, "-m", "harnpy", "store", "migrate", store_url],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "newer than this harnpy" in r.stderr
    s2 = SqlStore.__new__(SqlStore)  # read it without the version check
    from harnpy.store.sql_base import SqlBase
    from harnpy.store.url import parse_store_url

    SqlBase.__init__(s2, parse_store_url(store_url))  # type: ignore[arg-type]
    assert s2.get("w1") is not None  # nothing was lost
    assert s2.schema_version() == LATEST + 1
    s2.close()


def test_legacy_sqlite_wait_store_migrates_in_place(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "waits.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE waits (id TEXT PRIMARY KEY, worker_id TEXT NOT NULL, status TEXT NOT NULL,
          on_event TEXT, provider TEXT, deadline_ms INTEGER, next_fire_ms INTEGER,
          due_reason TEXT, claim_token TEXT, lease_until_ms INTEGER,
          created_at_ms INTEGER NOT NULL, record TEXT NOT NULL);
        CREATE TABLE resume_receipts (wait_id TEXT PRIMARY KEY, token TEXT NOT NULL,
          began_at_ms INTEGER NOT NULL, info TEXT, outcome TEXT, finished_at_ms INTEGER);
        """
    )
    rec = due_wait("old", park_id="park-x")
    db.execute(
        "INSERT INTO waits (id, worker_id, status, created_at_ms, record) VALUES (?,?,?,?,?)",
        ("old", rec.worker_id, "pending", 0, json.dumps(rec.to_json())),
    )
    db.commit()
    db.close()
    r = subprocess.run(
        [sys.executable, "-m", "harnpy", "store", "migrate", f"sqlite://{path}"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "from schema version 0 to" in r.stdout
    s = open_store(f"sqlite://{path}")
    got = s.get("old")
    assert got is not None and got.park_id == "park-x"
    with s.read() as c:
        assert c.one("SELECT park_id FROM waits WHERE id = 'old'") == ("park-x",)
    s.close()


# ---------------------------------------------------------------- bad input


def test_unreachable_and_refused_postgres_are_one_line_each() -> None:
    cases = [
        ("postgresql://postgres@127.0.0.1:1/x", "cannot connect"),
        ("postgresql://no_such_role_harnpy:pw@127.0.0.1:5432/test", "refused the credentials"),
    ]
    for url, needle in cases:
        r = subprocess.run(
            [sys.executable, "-m", "harnpy", "store", "info", url], capture_output=True, text=True
        )
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        if needle == "refused the credentials" and "cannot connect" in lines[0]:
            pytest.skip("no PostgreSQL server to refuse the credentials")
        assert needle in lines[0] and "pw@" not in lines[0]


def test_not_a_database_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("just text, not sqlite\n" * 100)
    with pytest.raises(StoreError) as e:
        open_store(f"sqlite://{f}")
    assert "not an SQLite database" in e.value.message
    assert f.read_text().startswith("just text")


def test_corrupted_rows_are_reported_and_left_alone(store_url: str) -> None:
    s = open_store(store_url)
    warnings: list[str] = []
    s._warn = warnings.append
    s.add(due_wait("good"))
    s.add(due_wait("bad"))
    raw_exec(s, "UPDATE waits SET record = ? WHERE id = ?", ("{not json", "bad"))
    with pytest.raises(CorruptRecord) as e:
        s.get("bad")
    assert "the wait row bad is corrupted" in e.value.message
    assert [w.id for w in s.list_waits()] == ["good"]
    assert len(warnings) == 1 and "bad" in warnings[0]
    s.put_checkpoint("w", doc(), meta())
    raw_exec(s, "UPDATE checkpoints SET body = ? WHERE worker_id = ?", (b'{"x": 1', "w"))
    with pytest.raises(CorruptRecord):
        s.get_checkpoint("w")
    with pytest.raises(CorruptRecord):
        s.claim_checkpoint("w", "r1")
    with s.read() as c:
        row = c.one("SELECT body, claim_holder FROM checkpoints WHERE worker_id = 'w'")
    assert row is not None and bytes(row[0]) == b'{"x": 1' and row[1] is None
    s.close()


def test_checkpoint_row_with_a_non_number_column_is_listed_as_damaged(store_url: str) -> None:
    """SQLite keeps whatever a hand edit writes: a version, fence or lease that is not a
    number is a damaged row (listed as ``corrupt``, claims refused with one line), never a
    Python error, and the row is left as it is."""
    if not store_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's integer columns cannot hold such a value")
    s = open_store(store_url)
    s.put_checkpoint("w", doc(), meta())
    s.put_checkpoint("ok", doc(), meta())
    raw_exec(s, "UPDATE checkpoints SET version = 'x' WHERE worker_id = 'w'")
    info = s.checkpoint_info("w")
    assert info is not None and info.status == "corrupt"
    assert "damaged row" in (info.reason or "")
    listed = {i.worker_id: i.status for i in s.list_checkpoints()}
    assert listed == {"w": "corrupt", "ok": "suspended"}
    with pytest.raises(CorruptRecord) as e:
        s.claim_checkpoint("w", "r1")
    assert "is damaged" in e.value.message
    raw_exec(s, "UPDATE checkpoints SET claim_expires_at_ms = 'soon' WHERE worker_id = 'ok'")
    assert s.checkpoint_info("ok").status == "corrupt"  # type: ignore[union-attr]
    with s.read() as c:
        row = c.one("SELECT version FROM checkpoints WHERE worker_id = 'w'")
    assert row is not None and row[0] == "x"
    s.close()


def test_checkpoint_over_the_cap_writes_nothing(store_url: str) -> None:
    s = open_store(store_url)
    s.put_checkpoint("w", doc(), meta())
    big = doc(pad="x" * (4 * 1024 * 1024))
    with pytest.raises(CheckpointTooLarge) as e:
        s.put_checkpoint("w", big, meta(), expect_version=1)
    assert "4 MiB" in e.value.message and "nothing was written" in e.value.message
    got = s.get_checkpoint("w")
    assert got is not None and got[1] == doc() and got[0].version == 1
    with pytest.raises(StoreError):
        s.put_checkpoint("w", b"[1, 2]", meta(), expect_version=1)
    s.close()


# ---------------------------------------------------------------- waits


def test_wait_claims_are_exclusive_and_fenced(store_url: str) -> None:
    a, b = open_store(store_url), open_store(store_url)
    a.add(due_wait("w1"))
    ca = a.claim("w1", "runner-a", NOW, 1_000)
    assert ca is not None and ca.record.status == "claimed"
    assert b.claim("w1", "runner-b", NOW, 1_000) is None  # lease still live
    b.clock_offset_ms = 1_001  # runner-a's lease expired
    cb = b.claim("w1", "runner-b", NOW, 1_000)
    assert cb is not None and cb.previous_token == ca.token
    assert not a.begin_resume("w1", ca.token, NOW)
    assert not a.complete("w1", ca.token, "completed", {}, NOW)
    assert not a.renew("w1", ca.token, NOW, 1_000)
    assert b.begin_resume("w1", cb.token, NOW, {"by": "b"})
    assert not b.begin_resume("w1", cb.token, NOW, {"by": "b again"})
    assert b.complete("w1", cb.token, "completed", {"ok": True}, NOW)
    rec = a.get("w1")
    assert rec is not None and rec.status == "completed" and rec.attempts == 2
    assert a.claim("w1", "runner-a", NOW + 10**9, 1_000) is None  # final
    a.close()
    b.close()


def test_wait_lease_uses_the_store_clock_not_the_callers(store_url: str) -> None:
    s = open_store(store_url)
    s.add(due_wait("w1"))
    c1 = s.claim("w1", "r1", NOW, 60_000)
    assert c1 is not None
    # a caller whose clock runs an hour ahead cannot take the claim over
    assert s.claim("w1", "r2", NOW + 3_600_000, 60_000) is None
    assert s.claim_due("r2", NOW + 3_600_000, 60_000) == []
    s.close()


def test_events_triggers_and_due(store_url: str) -> None:
    s = open_store(store_url)
    s.add(WaitRecord(id="e", worker_id="we", on_event="deploy.done", created_at_ms=1))
    s.add(WaitRecord(id="t", worker_id="wt", provider="github", match_events=["pr.merged"],
                     created_at_ms=2))  # fmt: skip
    s.add(WaitRecord(id="later", worker_id="wl", deadline_ms=NOW + 10**6, created_at_ms=3))
    assert s.due(NOW) == []
    assert s.post_event("deploy.done", {"x": 1}, NOW) == ["e"]
    assert s.post_event("deploy.done", {"x": 2}, NOW) == []  # the first event wins
    assert s.post_trigger_event("github", "pr.opened", {}, NOW) == []
    assert s.post_trigger_event("github", "pr.merged", {"n": 7}, NOW) == ["t"]
    assert [r.id for r in s.due(NOW)] == ["e", "t"]
    e = s.get("e")
    assert e is not None and e.due_payload == {"topic": "deploy.done", "payload": {"x": 1}}
    claims = s.claim_due("r", NOW, 1_000, limit=10)
    assert sorted(c.record.id for c in claims) == ["e", "t"]
    assert s.claim_due("r2", NOW, 1_000, limit=10) == []
    s.close()


def test_release_revoke_cancel_reopen(store_url: str) -> None:
    s = open_store(store_url)
    s.add(due_wait("w1"))
    c = s.claim("w1", "r", NOW, 1_000)
    assert c is not None and s.begin_resume("w1", c.token, NOW)
    assert not s.cancel("w1", NOW)  # its resume began
    assert s.revoke_receipt("w1", c.token)
    assert s.release("w1", c.token, NOW, "refused", disarm=("timeout",))
    rec = s.get("w1")
    assert rec is not None and rec.status == "pending" and rec.deadline_ms is None
    assert rec.last_error == "refused"
    assert s.cancel("w1", NOW, "resumed")
    assert s.reopen("w1", NOW)
    rec = s.get("w1")
    assert rec is not None and rec.status == "pending"
    s.close()


def test_find_by_worker_and_unique_prefix(store_url: str) -> None:
    s = open_store(store_url)
    s.add(WaitRecord(id="auto_resume_abc_1", worker_id="worker_abc", created_at_ms=1))
    s.add(WaitRecord(id="auto_resume_abd_1", worker_id="worker_abd", created_at_ms=2))
    found = s.find("worker_abc")
    assert found is not None and found.id == "auto_resume_abc_1"
    found = s.find("worker_abd")
    assert found is not None and found.id == "auto_resume_abd_1"
    with pytest.raises(StoreError) as e:
        s.find("worker_ab")
    assert "give more of the id" in e.value.message
    found = s.find("auto_resume_abd")
    assert found is not None and found.worker_id == "worker_abd"
    assert s.find("nothing") is None
    s.close()


# ---------------------------------------------------------------- checkpoints


def test_checkpoint_claim_commit_and_fencing(store_url: str) -> None:
    a, b = open_store(store_url), open_store(store_url)
    assert a.put_checkpoint("w", doc(park="p1"), meta(park="p1")) == 1
    with pytest.raises(StoreError) as e:
        a.put_checkpoint("w", doc(), meta())  # a second first write
    assert e.value.kind == "conflict"
    with pytest.raises(ClaimRefused) as r:
        a.claim_checkpoint("w", "ra", park_id="p0")
    assert r.value.reason == "changed"
    ca = a.claim_checkpoint("w", "ra", park_id="p1", lease_ms=1_000)
    assert ca.body == doc(park="p1") and ca.version == 1
    info = a.checkpoint_info("w")
    assert info is not None and info.status == "running" and info.claim_holder == "ra"
    with pytest.raises(ClaimRefused) as r:
        b.claim_checkpoint("w", "rb")
    assert r.value.reason == "busy"
    # an unfenced writer cannot overwrite a live claim
    with pytest.raises(StoreError) as e:
        b.put_checkpoint("w", doc(), meta(), expect_version=1)
    assert e.value.kind == "conflict"
    # ra's lease expires; rb takes over from the same park (the body never changed)
    b.clock_offset_ms = 1_001
    cb = b.claim_checkpoint("w", "rb", lease_ms=60_000)
    assert cb.fence > ca.fence and cb.body == doc(park="p1")
    with pytest.raises(Fenced):
        a.put_checkpoint("w", doc(park="p2"), meta(park="p2"), fence=ca.fence)
    assert not a.renew_checkpoint_claim("w", ca.fence, 1_000)
    assert b.put_checkpoint("w", doc(park="p2"), meta(park="p2"), fence=cb.fence) == 2
    got = a.get_checkpoint("w")
    assert got is not None and got[1] == doc(park="p2")
    assert got[0].status == "suspended" and got[0].claim_holder is None  # claim released
    with pytest.raises(Fenced):  # a claim is good for one commit that leaves "running"
        b.put_checkpoint("w", doc(park="p3"), meta(park="p3"), fence=cb.fence)
    a.close()
    b.close()


def test_claim_of_a_dead_owner_goes_back_to_the_park(store_url: str) -> None:
    s = open_store(store_url)
    s.put_checkpoint("w", doc(), meta())
    import socket

    c1 = s.claim_checkpoint("w", "gone", lease_ms=600_000,
                            owner={"pid": dead_pid(), "host": socket.gethostname()})  # fmt: skip
    info = s.checkpoint_info("w")
    assert info is not None and info.status == "suspended"  # the claim does not hold
    c2 = s.claim_checkpoint("w", "next", lease_ms=600_000)
    assert c2.fence == c1.fence + 1 and c2.body == doc()
    with pytest.raises(ClaimRefused):  # exactly one takes it over
        s.claim_checkpoint("w", "third")
    assert s.release_checkpoint_claim("w", c2.fence)
    assert s.claim_checkpoint("w", "third").fence == c2.fence + 1
    s.close()


def test_unfenced_writes_need_the_version_they_read(store_url: str) -> None:
    s = open_store(store_url)
    v1 = s.put_checkpoint("w", doc("running", None), meta("running", None))
    v2 = s.put_checkpoint("w", doc(), meta(), expect_version=v1)
    with pytest.raises(StoreError) as e:
        s.put_checkpoint("w", doc("cancelled"), meta("cancelled"), expect_version=v1)
    assert e.value.kind == "conflict"
    assert s.put_checkpoint("w", doc("cancelled"), meta("cancelled"), expect_version=v2) == 3
    s.close()


def test_commit_leaving_a_park_consumes_its_waits(store_url: str) -> None:
    s = open_store(store_url)
    s.put_checkpoint("worker_w1", doc(park="p1"), meta(park="p1"))
    s.add(due_wait("w1", park_id="p1"))
    s.add(due_wait("w1-other", worker_id="worker_w1", park_id="p0"))
    c = s.claim_checkpoint("worker_w1", "r")
    s.put_checkpoint("worker_w1", doc(park="p1"), meta("running", None), fence=c.fence)
    rec = s.get("w1")
    assert rec is not None and rec.status == "completed"
    assert rec.outcome["status"] == "consumed"
    # parking again keeps the new park's waits
    s.add(due_wait("w2", worker_id="worker_w1", park_id="p2"))
    s.put_checkpoint("worker_w1", doc(park="p2"), meta(park="p2"), fence=c.fence)
    rec2 = s.get("w2")
    assert rec2 is not None and rec2.status == "pending"
    s.close()


def test_update_if_only_while_parked_and_unclaimed(store_url: str) -> None:
    s = open_store(store_url)
    s.put_checkpoint("w", doc(), meta())

    def cancel(body: bytes) -> tuple[bytes, CheckpointMeta]:
        d = json.loads(body)
        d["status"] = "cancelled"
        return json.dumps(d).encode(), meta("cancelled", None)

    c = s.claim_checkpoint("w", "r")
    assert not s.update_checkpoint_if("w", cancel, expect_status="suspended")
    s.release_checkpoint_claim("w", c.fence)
    assert not s.update_checkpoint_if("w", cancel, expect_park_id="other")
    assert s.update_checkpoint_if("w", cancel, expect_status="suspended", expect_park_id="p1")
    got = s.get_checkpoint("w")
    assert got is not None and json.loads(got[1])["status"] == "cancelled"
    assert not s.update_checkpoint_if("w", cancel, expect_status="suspended")
    s.close()


def test_transcript_rows_commit_with_their_checkpoint(store_url: str) -> None:
    s = open_store(store_url)
    rows = [("m", i, f"msg{i}".encode()) for i in range(3)]
    s.put_checkpoint("w", doc(), meta(), transcript=TranscriptAppend("g1", rows))
    assert s.read_transcript("w", "g1", "m", 3) == [b"msg0", b"msg1", b"msg2"]
    assert s.read_transcript("w", "g1", "m", 2) == [b"msg0", b"msg1"]
    with pytest.raises(CorruptRecord):
        s.read_transcript("w", "g1", "m", 4)
    # a refused commit appends nothing
    with pytest.raises(StoreError):
        s.put_checkpoint("w", doc(), meta(), expect_version=7,
                         transcript=TranscriptAppend("g1", [("m", 3, b"lost")]))  # fmt: skip
    with pytest.raises(CorruptRecord):
        s.read_transcript("w", "g1", "m", 4)
    s.put_checkpoint("w", doc(), meta(), expect_version=1,
                     transcript=TranscriptAppend("g2", [("m", 0, b"new")], drop_others=True))  # fmt: skip
    assert s.read_transcript("w", "g2", "m", 1) == [b"new"]
    with pytest.raises(CorruptRecord):
        s.read_transcript("w", "g1", "m", 1)
    s.close()


def test_listing_and_prefixes(store_url: str) -> None:
    s = open_store(store_url)
    s.put_checkpoint("worker_aa1", doc(), meta())
    s.put_checkpoint("worker_ab2", doc("completed", None), meta("completed", None))
    assert {i.worker_id for i in s.list_checkpoints(("suspended",))} == {"worker_aa1"}
    assert s.find_checkpoints("worker_a") == ["worker_aa1", "worker_ab2"]
    assert s.find_checkpoints("worker_ab") == ["worker_ab2"]
    assert s.checkpoint_ref("worker_aa1").endswith("#worker_aa1")
    s.close()


# ---------------------------------------------------------------- runs, events, sessions


def test_runs_are_idempotent_and_isolated(store_url: str) -> None:
    s = open_store(store_url)
    r1, created = s.create_run("alice", session_id="s1", input={"q": 1}, idempotency_key="k")
    assert created and r1.status == "queued"
    r2, created2 = s.create_run("alice", session_id="s1", input={"q": 2}, idempotency_key="k")
    assert not created2 and r2.id == r1.id and r2.input == {"q": 1}
    r3, created3 = s.create_run("bob", session_id="s1", idempotency_key="k")
    assert created3 and r3.id != r1.id
    assert s.get_run(r1.id, "alice", "s1") is not None
    for args in ((r1.id, "bob", "s1"), (r1.id, "alice", "s2"), (r1.id, "alice", None),
                 ("run_unknown", "alice", "s1")):  # fmt: skip
        assert s.get_run(*args) is None
    s.close()


def test_run_claims_are_fenced(store_url: str) -> None:
    a, b = open_store(store_url), open_store(store_url)
    run, _ = a.create_run("u")
    got = a.claim_run("replica-a", 1_000)
    assert got is not None and got.id == run.id and got.status == "in_progress"
    assert b.claim_run("replica-b", 1_000) is None
    b.clock_offset_ms = 1_001
    taken = b.claim_run("replica-b", 60_000)
    assert taken is not None and taken.lease_fence > got.lease_fence
    with pytest.raises(Fenced):
        a.update_run(run.id, fence=got.lease_fence, status="completed", output={"x": 1})
    with pytest.raises(Fenced):
        a.append_run_event(run.id, "stdout", {"payload": "late"}, fence=got.lease_fence)
    done = b.update_run(run.id, fence=taken.lease_fence, status="completed", output={"x": 2})
    assert done.status == "completed" and done.output == {"x": 2} and done.lease_holder is None
    with pytest.raises(CheckpointTooLarge):
        b.update_run(run.id, output="y" * (4 * 1024 * 1024 + 1))
    a.close()
    b.close()


def test_a_final_event_commits_with_the_outcome_or_not_at_all(store_url: str) -> None:
    """The ``result`` event of a run is written in the outcome's transaction: a replica
    whose claim was lost writes neither, so the replica that finishes the run writes the one
    result (the chaos test saw two when they were separate writes)."""
    a, b = open_store(store_url), open_store(store_url)
    run, _ = a.create_run("u")
    got = a.claim_run("replica-a", 1_000)
    assert got is not None
    b.clock_offset_ms = 1_001
    taken = b.claim_run("replica-b", 60_000)
    assert taken is not None
    with pytest.raises(Fenced):
        a.update_run(run.id, fence=got.lease_fence, status="completed", output={"x": 1},
                     event=("result", {"value": 1}))  # fmt: skip
    assert b.run_events(run.id) == []
    b.update_run(run.id, fence=taken.lease_fence, status="completed", output={"x": 2},
                 event=("result", {"value": 2}))  # fmt: skip
    assert [(e.event_type, e.data) for e in b.run_events(run.id)] == [("result", {"value": 2})]
    a.close()
    b.close()


def test_first_park_of_a_run_is_fenced_by_the_run_claim(store_url: str) -> None:
    """A replica whose run lease expired cannot plant the run's first checkpoint after
    another replica took the run over (it would run the program from a stale prefix, or
    make the new holder's own park fail as a conflict)."""
    a, b = open_store(store_url), open_store(store_url)
    run, _ = a.create_run("u")
    got = a.claim_run("replica-a", 1_000)
    assert got is not None
    b.clock_offset_ms = 1_001
    taken = b.claim_run("replica-b", 60_000)
    assert taken is not None
    meta = CheckpointMeta(status="suspended", park_id="p1", mode="program", run_id=run.id)
    body = b'{"kind": "x"}'
    wid = f"prog-{run.id}"
    with pytest.raises(Fenced):
        a.put_checkpoint(wid, body, meta, run_fence=got.lease_fence)
    assert b.checkpoint_info(wid) is None  # nothing was written
    assert b.put_checkpoint(wid, body, meta, run_fence=taken.lease_fence) == 1
    assert b.checkpoint_info(wid) is not None
    a.close()
    b.close()


def test_run_events_are_numbered_without_gaps(store_url: str) -> None:
    s = open_store(store_url)
    run, _ = s.create_run("u")
    seqs = [s.append_run_event(run.id, "stdout", {"payload": f"line {i}"}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert [e.seq for e in s.run_events(run.id, after_seq=3)] == [4, 5]
    assert s.run_events(run.id, after_seq=1)[0].data == {"payload": "line 1"}
    with pytest.raises(StoreError):
        s.append_run_event("run_nope", "x", {})
    s.close()


def test_sessions_belong_to_their_user(store_url: str) -> None:
    s = open_store(store_url)
    assert s.ensure_session("s1", "alice", {"a": 1}) is not None
    assert s.ensure_session("s1", "bob") is None
    got = s.get_session("s1", "alice")
    assert got is not None and got.metadata == {"a": 1}
    assert s.get_session("s1", "bob") is None
    s.close()


def test_waitpoints_create_once_complete_once(store_url: str) -> None:
    s = open_store(store_url)
    wp, created = s.create_waitpoint(submission_key="run1:frame2:call3", timeout_at_ms=NOW)
    again, created2 = s.create_waitpoint(submission_key="run1:frame2:call3")
    assert created and not created2 and again.id == wp.id
    named, _ = s.create_waitpoint(waitpoint_id="approve-42")
    assert named.id == "approve-42" and named.status == "open"
    s.add_waitpoint_waiter(wp.id, "worker_1", "p1")
    s.add_waitpoint_waiter(wp.id, "worker_2", "p9")
    assert [w for w, _ in s.get_waitpoint(wp.id).waiters] == ["worker_1", "worker_2"]  # type: ignore[union-attr]
    assert [w.id for w in s.waitpoints_of("worker_2")] == [wp.id]
    assert s.due_waitpoint_timeouts(NOW) == [wp.id]
    assert s.complete_waitpoint(wp.id, {"ok": True}, by="alice")
    assert not s.complete_waitpoint(wp.id, {"ok": False})
    assert not s.time_out_waitpoint(wp.id)
    final = s.get_waitpoint(wp.id)
    assert final is not None and final.status == "completed" and final.value == {"ok": True}
    assert s.cancel_waitpoint("approve-42")
    assert [w.id for w in s.list_waitpoints(("open",))] == []
    s.close()


def test_a_park_commits_its_checkpoint_and_waiter_rows_together(store_url: str) -> None:
    s = open_store(store_url)
    a, _ = s.create_waitpoint(waitpoint_id="wp-a")
    b, _ = s.create_waitpoint(waitpoint_id="wp-b")
    s.put_checkpoint("w", doc(park="p1"), meta(park="p1"), waiters=[a.id, b.id])
    assert [w.id for w in s.waitpoints_of("w")] == ["wp-a", "wp-b"]
    assert s.get_waitpoint("wp-a").waiters == [("w", "p1")]  # type: ignore[union-attr]
    # a waiter row that cannot be written (no such waitpoint) takes the checkpoint with it:
    # the previous park stays as it was, no half-registered park is left to strand
    with pytest.raises(StoreError, match="no waitpoint wp-missing"):
        s.put_checkpoint(
            "w", doc(park="p2"), meta(park="p2"), expect_version=1, waiters=["wp-missing"]
        )
    info = s.checkpoint_info("w")
    assert info is not None and info.version == 1 and info.park_id == "p1"
    with pytest.raises(StoreError, match="no waitpoint"):
        s.put_checkpoint("w2", doc(), meta(), waiters=["wp-missing"])
    assert s.checkpoint_info("w2") is None and s.waitpoints_of("w2") == []
    # parking again re-points the waiter rows at the new park, in the same commit
    s.put_checkpoint("w", doc(park="p3"), meta(park="p3"), expect_version=1, waiters=[b.id])
    assert s.get_waitpoint("wp-b").waiters == [("w", "p3")]  # type: ignore[union-attr]
    s.close()


# ---------------------------------------------------------------- leases, audit, sources


def test_named_leases_fence_and_expire(store_url: str) -> None:
    s = open_store(store_url)
    f1 = s.acquire_lease("scheduler", "a", 1_000)
    assert f1 == 1
    assert s.acquire_lease("scheduler", "b", 1_000) is None
    assert s.renew_lease("scheduler", "a", f1, 1_000)
    s.clock_offset_ms = 1_001
    f2 = s.acquire_lease("scheduler", "b", 1_000)
    assert f2 == 2
    assert not s.renew_lease("scheduler", "a", f1, 1_000)
    assert not s.release_lease("scheduler", "a", f1)
    assert s.release_lease("scheduler", "b", 2)
    lease = s.lease("scheduler")
    assert lease is not None and not lease["live"] and lease["fence"] == 2
    assert s.acquire_lease("scheduler", "c", 1_000) == 3
    s.close()


def test_audit_and_sources(store_url: str) -> None:
    import hashlib

    s = open_store(store_url)
    ids = [s.audit("park", {"n": i}, subject="worker_1") for i in range(3)]
    s.audit("other", {}, subject="worker_2")
    assert ids == sorted(ids)
    evs = s.audit_events("worker_1", after_id=ids[0])
    assert [e["data"]["n"] for e in evs] == [1, 2]
    body = b"pipeline main() { println(1) }\n"
    sha = hashlib.sha256(body).hexdigest()
    s.put_source(sha, body)
    s.put_source(sha, body)  # idempotent
    assert s.get_source(sha) == body
    assert s.get_source("0" * 64) is None
    with pytest.raises(StoreError):
        s.put_source("0" * 64, body)
    s.close()


# ---------------------------------------------------------------- races


RACER = """
import sys, time
from harnpy.store import open_store
s = open_store(sys.argv[1])
mine = []
while True:
    got = s.claim_due(sys.argv[2], 1_780_000_000_000, 60_000, limit=3)
    if not got:
        break
    for c in got:
        if s.begin_resume(c.record.id, c.token, 0, {"by": sys.argv[2]}):
            mine.append(c.record.id)
        s.complete(c.record.id, c.token, "completed", {"by": sys.argv[2]}, 0)
print(" ".join(mine))
"""


def test_ten_replicas_claim_each_wait_exactly_once(store_url: str) -> None:
    s = open_store(store_url)
    for i in range(100):
        s.add(due_wait(f"w{i:03d}", created_at_ms=i))
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, store_url, f"r{k}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(10)
    ]  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    resumed = [w for o in outs for w in o[0].split()]
    assert sorted(resumed) == [f"w{i:03d}" for i in range(100)]  # each once, none twice
    assert all(r.status == "completed" for r in s.list_waits())
    assert all(s.receipt(f"w{i:03d}") is not None for i in range(100))
    s.close()
