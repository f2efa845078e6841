"""Module sources in the store (resume across code changes), on both backends: content
addressed and hash-checked both ways, referenced by the checkpoints that need them
(``source_refs``, migration 3), pruned only once no live checkpoint needs them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from harnpy.store import CheckpointMeta, CorruptRecord, StoreError, open_store
from harnpy.store.migrations import LATEST


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _park(store, worker_id: str, status: str = "suspended") -> None:  # type: ignore[no-untyped-def]
    body = json.dumps({"_type": "harnpy_snapshot", "status": status}).encode()
    meta = CheckpointMeta(status=status, park_id="p1", name="w", mode="program")
    if store.checkpoint_info(worker_id) is None:
        store.put_checkpoint(worker_id, body, meta, expect_version=None)
    else:
        version = store.checkpoint_info(worker_id).version
        store.put_checkpoint(worker_id, body, meta, expect_version=version)


def test_source_refs_come_with_migration_3(store_url: str) -> None:
    s = open_store(store_url)
    assert LATEST >= 3
    info = s.info()
    assert {m["version"] for m in info["migrations"]} >= {3}
    assert info["tables"]["source_refs"] == 0
    s.close()


def test_put_records_who_needs_a_source_and_reads_check_the_hash(store_url: str) -> None:
    s = open_store(store_url)
    body = b"fn f() { return 1 }\n"
    sha = _sha(body)
    s.put_source(sha, body, checkpoint_id="prog-a", path="/p/main.harn")
    s.put_source(sha, body, checkpoint_id="prog-a", path="/p/main.harn")  # idempotent
    s.put_source(sha, body, checkpoint_id="prog-b", path="/q/main.harn")
    assert s.get_source(sha) == body
    assert s.source_refs("prog-a") == [{"sha256": sha, "path": "/p/main.harn", "size": len(body)}]
    assert s.info()["tables"]["sources"] == 1 and s.info()["tables"]["source_refs"] == 2
    with pytest.raises(StoreError):
        s.put_source(_sha(b"other"), body, checkpoint_id="prog-a")
    assert s.source_refs("prog-a") == [{"sha256": sha, "path": "/p/main.harn", "size": len(body)}]
    # a row whose bytes were changed is never returned
    with s.txn() as c:
        c.run("UPDATE sources SET body = ? WHERE sha256 = ?", (b"fn f() { return 2 }\n", sha))
    with pytest.raises(CorruptRecord):
        s.get_source(sha)
    s.close()


def test_prune_keeps_what_a_parked_run_needs(store_url: str) -> None:
    s = open_store(store_url)
    a, b, loose = b"fn a() {}\n", b"fn b() {}\n", b"fn loose() {}\n"
    s.put_source(_sha(a), a, checkpoint_id="prog-live")
    s.put_source(_sha(b), b, checkpoint_id="prog-done")
    s.put_source(_sha(loose), loose)
    s.put_source(_sha(a), a, checkpoint_id="prog-not-yet")  # its checkpoint commits later
    _park(s, "prog-live")
    _park(s, "prog-done", "completed")
    # within the grace period nothing without references goes, and nothing of a live or
    # not yet committed checkpoint ever does
    assert s.prune_sources(grace_ms=3_600_000) == {"refs": 1, "sources": 0}
    assert s.get_source(_sha(b)) == b
    s.clock_offset_ms = 7_200_000
    assert s.prune_sources(grace_ms=3_600_000) == {"refs": 1, "sources": 2}
    assert s.get_source(_sha(a)) == a  # still needed by prog-live
    assert s.get_source(_sha(b)) is None and s.get_source(_sha(loose)) is None
    assert s.source_refs("prog-live") and not s.source_refs("prog-not-yet")
    _park(s, "prog-live", "completed")
    assert s.prune_sources(grace_ms=3_600_000) == {"refs": 1, "sources": 1}
    assert s.info()["tables"]["sources"] == 0
    s.close()


def test_prune_sources_command(store_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = open_store(store_url)
    body = b"fn gone() {}\n"
    s.put_source(_sha(body), body)
    s.close()
    env_url = store_url
    out = subprocess.run(
        [sys.executable, "-m", "harnpy", "store", "prune-sources", env_url, "--grace-ms", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "pruned 1 module sources and 0 references" in out.stdout
    assert open_store(store_url).get_source(_sha(body)) is None
