"""Bugs found by a newcomer walking through a fresh clone and the README (xfail until fixed).

Each test asserts the behaviour the README, the spec (``../shared/spec/``) or a reasonable
user expects; it is marked ``xfail(strict=True)`` while harnpy still gets it wrong.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SHARED = REPO.parent / "shared"


def harnpy(
    *args: str, cwd: Path, stdin: str = "", timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    dropped = ("HARNPY_STORE", "HARN_WORKER_STATE_DIR", "HARN_BIN", "HARN_CONFORMANCE_HARN_BIN")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["HARN_LLM_CALLS_DISABLED"] = "1"
    env["HOME"] = str(cwd)
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


PARK_A_WORKER = """
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "hold"}}]})
  llm_mock({text: "finished"})
  const h = sub_agent_run("task", {provider: "mock", background: true})
  println(wait_agent(h).status)
"""


def test_program_snapshot_keeps_a_parked_worker_handle_resumable(tmp_path: Path) -> None:
    # README: __snapshot_exit freezes the whole program; run --resume continues it. The
    # parked worker's own snapshot is in .harn/workers/, so its handle should still resume.
    prog = (
        "pipeline main() {"
        + PARK_A_WORKER
        + """
  __snapshot_exit("frozen.json")
  resume_agent(h, "ok")
  println(wait_agent(h).status)
}
"""
    )
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path)
    assert first.returncode == 3, first.stderr  # parked by __snapshot_exit
    assert first.stdout.strip() == "suspended"
    second = harnpy("run", "--resume", "frozen.json", cwd=tmp_path)
    assert "unknown worker" not in second.stderr
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "completed"


def test_repl_restore_keeps_a_parked_worker_handle_resumable(tmp_path: Path) -> None:
    entries = [line.strip() for line in PARK_A_WORKER.strip().splitlines()]
    first = harnpy(
        "repl", "--strict", cwd=tmp_path, stdin="\n".join([*entries, ":save s.json", ""])
    )
    assert first.returncode == 0, first.stderr
    assert "suspended" in first.stdout
    second = harnpy(
        "repl",
        "--strict",
        cwd=tmp_path,
        stdin=':restore s.json\nresume_agent(h, "ok")\nwait_agent(h).status\n',
    )
    assert "unknown worker" not in second.stderr
    assert second.returncode == 0, second.stderr
    assert "completed" in second.stdout


def test_workers_ls_in_an_empty_directory_writes_nothing(tmp_path: Path) -> None:
    p = harnpy("workers", "ls", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "no parked workers" in p.stdout.lower()
    assert not (tmp_path / ".harn").exists()


def test_repl_doc_comment_typed_above_a_function_is_shown_by_doc(tmp_path: Path) -> None:
    p = harnpy(
        "repl",
        cwd=tmp_path,
        stdin="/// Doubles a number.\nfn dbl(x) { return x * 2 }\n:doc dbl\n",
    )
    assert p.returncode == 0, p.stderr
    assert "Doubles a number." in p.stdout


def test_conformance_runner_points_the_cold_restart_cases_at_harnpy(tmp_path: Path) -> None:
    if not SHARED.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    p = harnpy(
        "test",
        "conformance",
        str(SHARED / "conformance"),
        "--filter",
        "suspend_cold_restart",
        "--timeout",
        "60",  # a cold restart spawns a process; a loaded CI machine needs more than 10 s
        cwd=tmp_path,
        timeout=180,
    )
    assert "2 passed, 0 failed" in p.stdout, p.stdout + p.stderr
    assert p.returncode == 0
