"""Newcomer round 2: REPL sessions and CLI messages around snapshots.

Each test pins one bug found by newcomer testing; they are strict xfails until fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import harnpy

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}


@pytest.mark.parametrize(
    "entry",
    [
        'let r = agent_loop("x", nil, {provider: "mock"})',
        'let r = sub_agent_run("x", {provider: "mock", background: true})',
    ],
)
def test_repl_restore_after_agent_use(tmp_path: Path, entry: str) -> None:
    sess = tmp_path / "sess.json"
    save = harnpy("repl", cwd=tmp_path, env=ENV, input=f"{entry}\n:save {sess}\n")
    assert save.returncode == 0, save.stderr
    assert sess.exists()
    restore = harnpy(
        "repl", "--strict", cwd=tmp_path, env=ENV, input=f":restore {sess}\nr.status\n"
    )
    assert "E406" not in restore.stderr, restore.stderr
    assert restore.returncode == 0, restore.stderr


@pytest.mark.parametrize("content", ["[]", '{"_type": "harnpy_snapshot"}'])
def test_bad_snapshot_messages_do_not_leak_pydantic(tmp_path: Path, content: str) -> None:
    f = tmp_path / "snap.json"
    f.write_text(content, encoding="utf-8")
    p = harnpy("run", "--resume", str(f), cwd=tmp_path, env=ENV)
    assert p.returncode != 0
    assert "pydantic" not in p.stderr, p.stderr
    assert "validation error" not in p.stderr, p.stderr
    assert "type=" not in p.stderr, p.stderr


def test_truncated_worker_snapshot_is_sus_004(tmp_path: Path) -> None:
    prog = """
llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
const r = agent_loop("x", nil, {provider: "mock"})
println(r.snapshot_path)
"""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    snap = tmp_path / first.stdout.strip()
    data = snap.read_bytes()
    json.loads(data)  # a valid worker snapshot before truncation
    snap.write_bytes(data[: len(data) // 2])
    p = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert "HARN-SUS-004" in p.stderr, p.stderr
    assert p.returncode == 1
