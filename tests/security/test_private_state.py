"""State is private whatever the umask (issue 13 point 3; findings F10 and F11): the worker
state directory and its parents harnpy creates (``.harn``, ``.harn/workers``), the runner's
logs directory and log files (transcripts, tool output) are 0700 / 0600 under umask 000;
the per-user fallback directory under ``$TMPDIR`` is refused when another user created it
first."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PARK = """pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "wait",
    conditions: {trigger: {kind: "go", provider: "webhook"}, timeout: {duration_minutes: 30}}}}]})
  llm_mock({text: "resumed ok"})
  const r = agent_loop("go", nil, {provider: "mock", max_iterations: 5})
  println(r.status)
}
"""


def _harnpy(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HARN_LLM_CALLS_DISABLED": "1", **env}
    full.pop("HARN_WORKER_STATE_DIR", None)  # the default: .harn/workers in cwd
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd,
        env={**full, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0),  # the loosest umask a user can have
    )


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_state_directories_and_logs_are_private_under_umask_000(tmp_path: Path) -> None:
    import json

    (tmp_path / "tw.harn").write_text(PARK)
    # with a store the checkpoint is a row of .harn/harnpy.sqlite3; the runner logs a file
    env = {"HARNPY_STORE": "default"}
    r = _harnpy(["run", "tw.harn"], tmp_path, env)
    assert r.returncode == 0 and r.stdout.strip() == "suspended", r.stderr
    listed = _harnpy(["workers", "ls", "--json"], tmp_path, env)
    (row,) = json.loads(listed.stdout)
    assert row["snapshot_path"].startswith("sqlite://"), row
    w = _harnpy(["workers", "resume", row["worker_id"]], tmp_path, env)
    assert w.returncode == 0, w.stdout + w.stderr
    logs = list((tmp_path / ".harn" / "logs").glob("*.log"))
    assert logs, "the runner wrote no log"
    # without a store the checkpoint is a file of .harn/workers
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "tw.harn").write_text(PARK)
    r = _harnpy(["run", "tw.harn"], tmp_path / "files", {"HARNPY_STORE": ""})
    assert r.returncode == 0 and r.stdout.strip() == "suspended", r.stderr
    (snap,) = (tmp_path / "files" / ".harn" / "workers").glob("worker_*.json")
    dirs = [tmp_path / ".harn", tmp_path / ".harn" / "logs"]
    dirs += [tmp_path / "files" / ".harn", tmp_path / "files" / ".harn" / "workers"]
    for d in dirs:
        assert _mode(d) == 0o700, (d, oct(_mode(d)))
    for f in [snap, *logs, tmp_path / ".harn" / "harnpy.sqlite3"]:
        assert _mode(f) == 0o600, (f, oct(_mode(f)))


def test_the_parser_caches_are_private_under_umask_000(tmp_path: Path) -> None:
    # a cold cache: Lark writes its grammar tables, harnpy the parsed module and the check
    # verdict; every file 0600 in 0700 directories (F10: Lark's file was 0666)
    cache = tmp_path / "cache"
    (tmp_path / "p.harn").write_text("println(1)\n")
    r = _harnpy(["run", "p.harn"], tmp_path, {"HARNPY_CACHE_DIR": str(cache)})
    assert r.returncode == 0 and r.stdout == "1\n", r.stderr
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".lark-cache") for p in files), files
    for p in files:
        assert _mode(p) == 0o600, (p, oct(_mode(p)))
    for d in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
        assert _mode(d) == 0o700, (d, oct(_mode(d)))


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to act as another user"
)
def test_a_fallback_directory_another_user_created_is_refused(tmp_path: Path) -> None:
    import hashlib

    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "job.harn").write_text(PARK.replace('trigger: {kind: "go", provider: "webhook"}, ', ""))
    os.chmod(ro, 0o555)  # a read-only checkout: harnpy falls back to $TMPDIR
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o1777)
    os.chmod(tmp, 0o1777)
    tag = hashlib.sha256(str(ro / ".harn" / "workers").encode()).hexdigest()[:12]
    squat = tmp / f"harnpy-{os.getuid()}" / "workers" / tag
    squat.mkdir(parents=True)
    for d in (squat.parent.parent, squat.parent, squat):
        os.chown(d, 4242, 4242)  # the attacker's
        os.chmod(d, 0o777)
    try:
        r = _harnpy(["run", "job.harn"], ro, {"TMPDIR": str(tmp)})
    finally:
        os.chmod(ro, 0o755)
    assert r.returncode != 0
    assert "belongs to another user" in r.stderr or "another user" in r.stderr, r.stderr
    assert list(squat.iterdir()) == []  # nothing written where the attacker can read it
