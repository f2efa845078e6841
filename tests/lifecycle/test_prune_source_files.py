"""``harnpy store prune-sources`` on the sources directory of snapshot files
(``.harn/sources/``, issue 10 point 5), in real subprocesses: a source is deleted once no
snapshot that can still run records it (and it is older than the grace period); the
sources a parked snapshot needs are never deleted, so it still resumes after its file was
edited or deleted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.conftest import harnpy

WORKER = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "x"}}]})
  llm_mock({text: "done LABEL"})
  const r = agent_loop("work", nil, {provider: "mock", max_iterations: 4})
  println(r.snapshot_path)
}
"""

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _park(tmp_path: Path, name: str) -> tuple[str, str]:
    src = WORKER.replace("LABEL", name)
    (tmp_path / f"{name}.harn").write_text(src, encoding="utf-8")
    res = harnpy("run", f"{name}.harn", cwd=tmp_path, env=ENV)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1], src


def _prune(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    env = {**ENV, "HARNPY_STORE": ""}
    return harnpy("store", "prune-sources", *extra, cwd=tmp_path, env=env)


def test_prune_keeps_what_a_parked_worker_needs_and_deletes_the_rest(tmp_path: Path) -> None:
    snap_a, src_a = _park(tmp_path, "a")
    snap_b, src_b = _park(tmp_path, "b")
    sources = tmp_path / ".harn" / "sources"
    assert {p.name for p in sources.iterdir()} == {_sha(src_a) + ".harn", _sha(src_b) + ".harn"}
    done = harnpy("run", "--resume", snap_a, cwd=tmp_path, env=ENV)  # a settles
    assert done.returncode == 0 and "done a" in done.stdout, done.stderr
    # within the grace period nothing goes
    young = _prune(tmp_path)
    assert young.returncode == 0, young.stderr
    assert "pruned 0 module sources" in young.stdout
    dry = _prune(tmp_path, "--grace-ms", "0", "--dry-run")
    assert dry.returncode == 0 and _sha(src_a) in dry.stdout and _sha(src_b) not in dry.stdout
    assert len(list(sources.iterdir())) == 2
    res = _prune(tmp_path, "--grace-ms", "0")
    assert res.returncode == 0, res.stderr
    assert "pruned 1 module sources" in res.stdout
    assert {p.name for p in sources.iterdir()} == {_sha(src_b) + ".harn"}
    # b's file is gone: it resumes from the stored copy pruning kept
    os.unlink(tmp_path / "b.harn")
    back = harnpy("run", "--resume", snap_b, cwd=tmp_path, env=ENV)
    assert back.returncode == 0, back.stderr
    assert "done b" in back.stdout
    # settled too now: its source goes on the next prune
    again = _prune(tmp_path, "--grace-ms", "0")
    assert again.returncode == 0 and "pruned 1 module sources" in again.stdout
    assert list(sources.iterdir()) == []


def test_prune_keeps_the_sources_of_a_program_snapshot_beside_the_state_dir(
    tmp_path: Path,
) -> None:
    src = 'fn f() {\n  __snapshot_exit("s.json")\n  println("after")\n}\nf()\n'
    (tmp_path / "m.harn").write_text(src, encoding="utf-8")
    assert harnpy("run", "m.harn", cwd=tmp_path).returncode == 3
    stray = tmp_path / ".harn" / "sources" / (_sha("old") + ".harn")
    stray.write_bytes(b"old")
    res = _prune(tmp_path, "--grace-ms", "0", "--dir", ".harn")
    assert res.returncode == 0, res.stderr
    assert "pruned 1 module sources" in res.stdout
    assert [p.name for p in (tmp_path / ".harn" / "sources").iterdir()] == [_sha(src) + ".harn"]
    (tmp_path / "m.harn").write_text('println("edited")\n', encoding="utf-8")
    back = harnpy("run", "--resume", "s.json", cwd=tmp_path)
    assert back.returncode == 0 and back.stdout == "after\n", back.stderr


def test_an_unreadable_snapshot_refuses_the_prune(tmp_path: Path) -> None:
    _park(tmp_path, "a")
    workers = tmp_path / ".harn" / "workers"
    (workers / "worker_broken.json").write_text('{"_seal":"x","_type":"worker_snapshot",', "utf-8")
    before = sorted(p.name for p in (tmp_path / ".harn" / "sources").iterdir())
    res = _prune(tmp_path, "--grace-ms", "0")
    assert res.returncode == 1
    assert "worker_broken.json cannot be read" in res.stderr
    assert "nothing was deleted" in res.stderr
    assert sorted(p.name for p in (tmp_path / ".harn" / "sources").iterdir()) == before
