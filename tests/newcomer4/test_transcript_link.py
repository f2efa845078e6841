"""A parked worker's transcript file replaced by a symbolic link was refused with the
``ELOOP`` text of ``O_NOFOLLOW`` ("Too many levels of symbolic links"), which reads like a
link loop; it says the file is a symbolic link now (the refusal itself is unchanged: the
snapshot file is left byte for byte, and the resume can go on once the file is back)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import harnpy

WORKER = """pipeline main() {
  llm_mock({tool_calls: [{name: "agent_await_resumption", arguments: {reason: "wait"}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock"})
  println(r.status)
}
"""


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_transcript_that_is_a_symlink_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "w.harn").write_text(WORKER)
    env = {"HARN_WORKER_STATE_DIR": ""}  # .harn/workers here
    r = harnpy("run", "w.harn", cwd=tmp_path, env=env)
    assert (r.returncode, r.stdout) == (0, "suspended\n"), r.stderr
    (snap,) = (tmp_path / ".harn" / "workers").glob("worker_*.json")
    (transcript,) = (tmp_path / ".harn" / "workers").glob("worker_*.transcript-*.jsonl")
    before = snap.read_bytes()
    moved = tmp_path / "elsewhere.jsonl"
    transcript.rename(moved)
    transcript.symlink_to(moved)
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=env)
    assert r.returncode == 1 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert "error[HARN-SUS-004]" in line
    assert (
        f"`{transcript}` is a symbolic link, not the transcript file; refusing to resume"
    ) in line, line
    assert "Too many levels" not in line
    assert snap.read_bytes() == before
    transcript.unlink()
    moved.rename(transcript)
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=env)
    assert (r.returncode, r.stdout) == (0, "done\n"), r.stderr
