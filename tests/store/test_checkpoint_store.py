"""The checkpoint-store interface on its three real backends (directory, SQLite,
PostgreSQL): the same contract tests for each — versioned puts, exclusive fenced claims,
release, dead-owner recovery, conditional updates, listing, transcripts, the 4 MiB cap —
plus the directory backend's on-disk layout and an exactly-once claim race between
processes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.snapshot import open_document, seal_document
from harnpy.store import (
    CheckpointMeta,
    CheckpointTooLarge,
    ClaimRefused,
    CorruptRecord,
    Fenced,
    StoreError,
    TranscriptAppend,
    open_store,
)
from harnpy.store.checkpoint_api import CheckpointStore
from harnpy.store.directory import DirectoryStore

BACKENDS = ["directory", "sqlite", "postgresql"]


def _url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "directory":
        return "directory:" + str(tmp_path / "workers")
    if kind == "sqlite":
        return "sqlite:///" + str(tmp_path / "s.sqlite3")
    return str(request.getfixturevalue("pg_url"))


def _open(url: str) -> Any:
    if url.startswith("directory:"):
        return DirectoryStore(url[len("directory:") :])
    return open_store(url)


@pytest.fixture(params=BACKENDS)
def ck_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _url(request.param, tmp_path, request)


@pytest.fixture
def ck(ck_url: str) -> Iterator[Any]:
    s = _open(ck_url)
    yield s
    close = getattr(s, "close", None)
    if close is not None:
        close()


def body(status: str = "suspended", park: str | None = "p1", **extra: Any) -> bytes:
    return seal_document(
        {"_type": "worker_snapshot", "id": "w1", "status": status, "park_id": park, **extra}
    )


def meta(status: str = "suspended", park: str | None = "p1") -> CheckpointMeta:
    return CheckpointMeta(status=status, park_id=park, name="w", mode="sub_agent")


def opened(raw: bytes) -> Any:
    return open_document(raw, "test")


def dead_owner() -> dict[str, Any]:
    import socket

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return {"pid": p.pid, "host": socket.gethostname()}


def test_every_backend_implements_the_interface(ck: Any) -> None:
    assert isinstance(ck, CheckpointStore)
    assert ck.display


def test_puts_are_versioned(ck: Any) -> None:
    v1 = ck.put_checkpoint("w1", body(), meta())
    with pytest.raises(StoreError) as e:
        ck.put_checkpoint("w1", body(), meta())  # a second first checkpoint
    assert e.value.kind == "conflict"
    v2 = ck.put_checkpoint("w1", body(park="p2"), meta(park="p2"), expect_version=v1)
    assert v2 != v1
    with pytest.raises(StoreError) as e:
        ck.put_checkpoint("w1", body(park="p3"), meta(park="p3"), expect_version=v1)
    assert e.value.kind == "conflict"
    info, raw = ck.get_checkpoint("w1")
    assert info.version == v2 and info.status == "suspended" and info.park_id == "p2"
    assert opened(raw)["park_id"] == "p2"


def test_a_claim_is_exclusive_and_its_commits_fenced(ck: Any) -> None:
    ck.put_checkpoint("w1", body(), meta())
    c = ck.claim_checkpoint("w1", "A", park_id="p1")
    assert opened(c.body)["status"] == "suspended" and c.park_id == "p1"
    with pytest.raises(ClaimRefused) as e:
        ck.claim_checkpoint("w1", "B", park_id="p1")
    assert e.value.reason == "busy"
    info, raw = ck.get_checkpoint("w1")
    assert info.status == "running" and opened(raw)["status"] == "suspended"  # the park
    assert ck.renew_checkpoint_claim("w1", c.fence, 60_000)
    ck.put_checkpoint(
        "w1", body(status="completed", park=None), meta("completed", None), fence=c.fence
    )
    info, raw = ck.get_checkpoint("w1")
    assert info.status == "completed" and opened(raw)["status"] == "completed"
    with pytest.raises(Fenced):  # the claim ended with that commit
        ck.put_checkpoint("w1", body(status="failed"), meta("failed"), fence=c.fence)
    with pytest.raises(ClaimRefused) as e:
        ck.claim_checkpoint("w1", "B")
    assert e.value.reason == "changed"
    with pytest.raises(ClaimRefused) as e:
        ck.claim_checkpoint("nobody", "B")
    assert e.value.reason == "missing"


def test_a_released_claim_leaves_the_park_claimable_and_old_fences_dead(ck: Any) -> None:
    ck.put_checkpoint("w1", body(), meta())
    c1 = ck.claim_checkpoint("w1", "A")
    assert ck.release_checkpoint_claim("w1", c1.fence)
    assert not ck.release_checkpoint_claim("w1", c1.fence)
    info, raw = ck.get_checkpoint("w1")
    assert info.status == "suspended" and opened(raw)["park_id"] == "p1"
    c2 = ck.claim_checkpoint("w1", "B", park_id="p1")
    assert c2.fence > c1.fence
    with pytest.raises(Fenced):
        ck.put_checkpoint("w1", body("completed", None), meta("completed", None), fence=c1.fence)
    ck.put_checkpoint("w1", body(park="p9"), meta(park="p9"), fence=c2.fence)
    assert ck.checkpoint_info("w1").park_id == "p9"


def test_a_dead_owners_claim_goes_back_to_the_park(ck: Any) -> None:
    ck.put_checkpoint("w1", body(), meta())
    ck.claim_checkpoint("w1", "A", owner=dead_owner())
    info = ck.checkpoint_info("w1")
    assert info.status == "suspended" and info.park_id == "p1"
    c = ck.claim_checkpoint("w1", "B", park_id="p1")
    assert c.holder == "B"


def test_over_the_cap_writes_nothing(ck: Any) -> None:
    v = ck.put_checkpoint("w1", body(), meta())
    huge = body(pad="x" * (4 * 1024 * 1024))
    with pytest.raises(CheckpointTooLarge):
        ck.put_checkpoint("w1", huge, meta(), expect_version=v)
    info, raw = ck.get_checkpoint("w1")
    assert info.version == v and opened(raw)["park_id"] == "p1"
    with pytest.raises(StoreError):
        ck.put_checkpoint("w2", b"[1, 2]", meta())
    assert ck.checkpoint_info("w2") is None


def test_conditional_update_only_while_parked_and_unclaimed(ck: Any) -> None:
    ck.put_checkpoint("w1", body(), meta())

    def close(raw: bytes) -> tuple[bytes, CheckpointMeta]:
        return body("cancelled", None), meta("cancelled", None)

    assert not ck.update_checkpoint_if("w1", close, expect_park_id="other")
    c = ck.claim_checkpoint("w1", "A")
    assert not ck.update_checkpoint_if("w1", close, expect_status="suspended")
    ck.release_checkpoint_claim("w1", c.fence)
    assert ck.update_checkpoint_if("w1", close, expect_status="suspended", expect_park_id="p1")
    assert ck.checkpoint_info("w1").status == "cancelled"
    assert not ck.update_checkpoint_if("w1", close, expect_status="suspended")


def test_listing_finding_and_deleting(ck: Any) -> None:
    ck.put_checkpoint("abc1", body(), meta())
    ck.put_checkpoint("abc2", body("completed", None), meta("completed", None))
    ck.put_checkpoint("xyz", body(), meta())
    assert sorted(i.worker_id for i in ck.list_checkpoints()) == ["abc1", "abc2", "xyz"]
    assert sorted(i.worker_id for i in ck.list_checkpoints(("suspended",))) == ["abc1", "xyz"]
    assert ck.find_checkpoints("abc") == ["abc1", "abc2"]
    assert ck.find_checkpoints("abc1") == ["abc1"]
    assert ck.delete_checkpoint("abc1")
    assert not ck.delete_checkpoint("abc1")
    assert ck.checkpoint_info("abc1") is None
    assert ck.find_checkpoints("abc") == ["abc2"]


def test_transcripts_commit_with_their_checkpoint(ck: Any) -> None:
    rows = [("m", i, json.dumps({"role": "user", "content": f"m{i}"}).encode()) for i in range(3)]
    v = ck.put_checkpoint("w1", body(), meta(), transcript=TranscriptAppend("g1", rows))
    more = [("m", 3, b'{"role":"assistant","content":"m3"}'), ("e", 0, b'{"kind":"x"}')]
    v = ck.put_checkpoint(
        "w1",
        body(park="p2"),
        meta(park="p2"),
        expect_version=v,
        transcript=TranscriptAppend("g1", more),
    )
    got = ck.read_transcript("w1", "g1", "m", 4)
    assert [json.loads(b)["content"] for b in got] == ["m0", "m1", "m2", "m3"]
    assert ck.read_transcript("w1", "g1", "e", 1) == [b'{"kind":"x"}']
    with pytest.raises(CorruptRecord):
        ck.read_transcript("w1", "g1", "m", 5)
    # a re-append from an earlier entry (a takeover) replaces the entries from there on
    again = [("m", 2, b'{"role":"user","content":"again"}')]
    v = ck.put_checkpoint(
        "w1", body(), meta(), expect_version=v, transcript=TranscriptAppend("g1", again)
    )
    got = ck.read_transcript("w1", "g1", "m", 3)
    assert json.loads(got[2])["content"] == "again"
    with pytest.raises(CorruptRecord):
        ck.read_transcript("w1", "g1", "m", 4)
    # a new generation replaces the old one
    ck.put_checkpoint(
        "w1", body(), meta(), expect_version=v,
        transcript=TranscriptAppend("g2", [("m", 0, b'{"n":0}')], drop_others=True),
    )  # fmt: skip
    assert ck.read_transcript("w1", "g2", "m", 1) == [b'{"n":0}']
    with pytest.raises(CorruptRecord):
        ck.read_transcript("w1", "g1", "m", 1)


_RACE = """
import sys
from harnpy.store import ClaimRefused, open_store
from harnpy.store.directory import DirectoryStore
url = sys.argv[1]
s = DirectoryStore(url[10:]) if url.startswith("directory:") else open_store(url)
sys.stdin.readline()
try:
    c = s.claim_checkpoint("w1", sys.argv[2], park_id="p1")
    print("won", c.fence)
except ClaimRefused as e:
    print("lost", e.reason)
sys.stdout.flush()
sys.stdin.readline()  # every process stays alive until all of them tried
"""


def test_five_processes_claim_a_park_exactly_once(ck_url: str, ck: Any) -> None:
    ck.put_checkpoint("w1", body(), meta())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE, ck_url, f"p{i}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(5)
    ]  # fmt: skip
    for p in procs:  # all at once
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    lines = [p.stdout.readline() if p.stdout else "" for p in procs]
    outs = [p.communicate("done\n", timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    words = sorted(line.split()[0] for line in lines if line)
    assert words == ["lost"] * 4 + ["won"], (lines, outs)
    # the winner exited without committing: its claim is put back (directory: its pid is
    # gone) or held until its lease expires (SQL), never claimable twice meanwhile
    if ck_url.startswith("directory:"):
        assert ck.claim_checkpoint("w1", "next", park_id="p1").holder == "next"


# ---------------------------------------------------------------- directory layout


def test_directory_layout_modes_park_and_claim_files(tmp_path: Path) -> None:
    d = tmp_path / "workers"
    s = DirectoryStore(str(d))
    s.put_checkpoint("w1", body(), meta())
    f = d / "w1.json"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    c = s.claim_checkpoint("w1", "A")
    assert opened(f.read_bytes())["status"] == "running"  # what other readers see
    assert opened(f.read_bytes())["owner"]["pid"] == os.getpid()
    assert (d / "w1.json.park").read_bytes() == c.body
    assert json.loads((d / "w1.json.claim").read_text())["fence"] == c.fence
    assert stat.S_IMODE(os.stat(d / "w1.json.park").st_mode) == 0o600
    s.put_checkpoint("w1", body(park="p2"), meta(park="p2"), fence=c.fence)
    assert not (d / "w1.json.park").exists() and not (d / "w1.json.claim").exists()
    assert s.checkpoint_ref("w1") == str(f)


def test_directory_refuses_links_out_and_bad_keys(tmp_path: Path) -> None:
    d = tmp_path / "workers"
    s = DirectoryStore(str(d))
    s.put_checkpoint("w1", body(), meta())
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(body())
    os.symlink(outside, d / "evil.json")
    with pytest.raises(CorruptRecord) as e:
        s.get_checkpoint("evil")
    assert "link out of the directory" in e.value.message
    with pytest.raises(StoreError):
        s.file_of("../w1")
    with pytest.raises(StoreError):
        s.file_of(".hidden")


def test_directory_corrupt_file_is_reported_and_left(tmp_path: Path) -> None:
    d = tmp_path / "workers"
    s = DirectoryStore(str(d))
    s.put_checkpoint("w1", body(), meta())
    (d / "w1.json").write_bytes(b'{"not": "sealed"}')
    with pytest.raises(CorruptRecord):
        s.claim_checkpoint("w1", "A")
    assert (d / "w1.json").read_bytes() == b'{"not": "sealed"}'
    assert not (d / "w1.json.park").exists()


def test_directory_recovers_a_pre_claim_file_park(tmp_path: Path) -> None:
    # a claim written by harnpy before `.claim` files: running + dead owner + `.park`
    d = tmp_path / "workers"
    s = DirectoryStore(str(d))
    s.put_checkpoint("w1", body(), meta())
    park = (d / "w1.json").read_bytes()
    (d / "w1.json.park").write_bytes(park)
    (d / "w1.json").write_bytes(body("running", "p1", owner=dead_owner()))
    assert s.recover("w1")
    assert (d / "w1.json").read_bytes() == park and not (d / "w1.json.park").exists()


_CLAIM_THEN_DIE = """
import os, signal, sys
from harnpy.store import open_store
from harnpy.store._common import owner_record
from harnpy.store.directory import DirectoryStore
url = sys.argv[1]
s = DirectoryStore(url[10:]) if url.startswith("directory:") else open_store(url)
c = s.claim_checkpoint("w1", "doomed", park_id="p1", lease_ms=600_000, owner=owner_record())
print(c.fence, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # between the claim and its commit
"""


def _race(url: str, n: int) -> list[str]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE, url, f"p{i}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(n)
    ]  # fmt: skip
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    lines = [p.stdout.readline() if p.stdout else "" for p in procs]
    outs = [p.communicate("done\n", timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    return sorted(line.split()[0] for line in lines if line)


def test_a_claimer_killed_before_its_commit_leaves_the_park_resumable_once(
    ck_url: str, ck: Any
) -> None:
    ck.put_checkpoint("w1", body(), meta())
    r = subprocess.run(
        [sys.executable, "-c", _CLAIM_THEN_DIE, ck_url], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == -9 and r.stdout.strip().isdigit(), r.stderr
    # its lease (10 minutes) has not expired, but its owner is known to be gone (this host,
    # dead pid): the park is claimable again, by exactly one of five racers
    info, raw = ck.get_checkpoint("w1")
    assert info.status == "suspended" and opened(raw)["park_id"] == "p1"
    assert _race(ck_url, 5) == ["lost"] * 4 + ["won"]


@pytest.mark.parametrize("planted", ["'{}'", "1000000000000", "2.5"])
def test_a_blob_of_another_type_in_an_sqlite_row_is_a_corrupt_record(
    tmp_path: Path, planted: str
) -> None:
    # SQLite keeps whatever a hand edit puts in a BLOB column: a text used to raise a
    # TypeError (a traceback from run --resume), an int to become that many zero bytes
    import hashlib
    import sqlite3

    db = tmp_path / "s.sqlite3"
    s = open_store(f"sqlite:///{db}")
    try:
        src = b"println(1)\n"
        sha = hashlib.sha256(src).hexdigest()
        s.put_source(sha, src)
        s.put_checkpoint(
            "w1", body(), meta(), transcript=TranscriptAppend("g1", [("m", 0, b'{"n":0}')])
        )
        with sqlite3.connect(db) as c:
            for table in ("checkpoints", "sources", "transcript_rows"):
                c.execute(f"UPDATE {table} SET body = {planted}")  # noqa: S608 - test data
        with pytest.raises(CorruptRecord, match="the checkpoint row of w1 is corrupted"):
            s.get_checkpoint("w1")
        with pytest.raises(CorruptRecord, match=f"the module source {sha} is corrupted"):
            s.get_source(sha)
        with pytest.raises(CorruptRecord, match="the transcript of w1"):
            s.read_transcript("w1", "g1", "m", 1)
    finally:
        s.close()
