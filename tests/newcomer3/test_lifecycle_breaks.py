"""Newcomer round 3: lifecycle behaviour that breaks under a demanding user.

Each test pins one bug (IDs L1, L2, ... in the round-3 report) and asserts the correct
behaviour; they are strict xfails until fixed.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import harnpy
from tests.sealing import sealed

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ".harn/workers"}

PARK = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "waiting"}}]})
  llm_mock({text: "final answer ##DONE##"})
  const r = agent_loop("do it", nil, {provider: "mock", persistent: true, max_iterations: 5})
  println(r.snapshot_path)
}
"""


def _park(tmp_path: Path, prog: str = PARK, env: dict[str, str] | None = None) -> Path:
    """Run ``prog`` (a root agent_loop that parks); return the snapshot it wrote."""
    (tmp_path / "main.harn").write_text(prog, encoding="utf-8")
    p = harnpy("run", "main.harn", cwd=tmp_path, env={**ENV, **(env or {})})
    assert p.returncode == 0, p.stderr
    snap = tmp_path / p.stdout.strip().splitlines()[-1]
    assert snap.is_file(), p.stdout
    return snap


def _edit(snap: Path, edit: Any) -> bytes:
    doc = json.loads(snap.read_text(encoding="utf-8"))
    edit(doc)
    data = sealed(doc)
    snap.write_bytes(data)
    return data


def _set(key: str, value: object) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc[key] = value

    return edit


def _bad_parent_ref(doc: dict[str, Any]) -> None:
    # the first frame record of the heap (module globals are encoded first, so the heap
    # may start with their closures)
    frame = next(
        r for r in doc["harnpy_thread"]["heap"] if type(r) is dict and r.get("$t") == "frame"
    )
    frame["parent"] = {"$ref": True}


def _unknown_field(doc: dict[str, Any]) -> None:
    # a field the encoder never writes, on a frame and on a closure (the heap's records;
    # module globals put the pipeline's closure there): not harnpy's, refused, not ignored
    heap = doc["harnpy_thread"]["heap"]
    frame = next(r for r in heap if type(r) is dict and r.get("$t") == "frame")
    frame["locals"] = {"x": 1}
    closure = next(r for r in heap if type(r) is dict and r.get("$t") == "closure")
    closure["parent"] = None


DAMAGED = [
    pytest.param(_set("transcript", None), id="transcript-null"),
    pytest.param(_set("execution", "zz"), id="execution-string"),
    pytest.param(_set("audit", 5), id="audit-int"),
    pytest.param(_bad_parent_ref, id="thread-parent-ref-bool"),
    pytest.param(_unknown_field, id="thread-record-unknown-field"),
]


# L1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit", DAMAGED)
def test_damaged_worker_snapshot_is_sus_004_not_a_traceback(tmp_path: Path, edit: Any) -> None:
    snap = _park(tmp_path)
    _edit(snap, edit)
    p = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert "Traceback" not in p.stderr, p.stderr
    assert "HARN-SUS-004" in p.stderr, p.stderr
    assert p.returncode == 1


# L2 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit", DAMAGED)
def test_failed_resume_leaves_damaged_snapshot_untouched(tmp_path: Path, edit: Any) -> None:
    snap = _park(tmp_path)
    before = _edit(snap, edit)
    harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert snap.read_bytes() == before
    again = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert "interrupted" not in again.stderr, again.stderr


def _bad_loop_state(doc: dict[str, Any]) -> None:
    """Damage inside the agent loop's own state (its ``started_ms`` counter), which no load
    check knows about: the worker fails only once it runs."""
    (state,) = [
        h for h in doc["harnpy_thread"]["heap"] if isinstance(h, dict) and "started_ms" in h
    ]
    state["started_ms"] = "zz"


def test_internal_error_while_the_resumed_worker_runs_keeps_the_park(tmp_path: Path) -> None:
    """Adjusted test (was: the damage failed once the worker ran, an internal error): a
    damaged agent loop state is now refused when the snapshot is loaded (issue 13 point 8,
    ``AgentLoopStateRecord``): no traceback, no internal error, exit 1, the file as it was
    (resumable again once repaired)."""
    snap = _park(tmp_path)
    before = _edit(snap, _bad_loop_state)
    p = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert "Traceback" not in p.stderr and "E999" not in p.stderr, p.stderr
    assert "HARN-SUS-004" in p.stderr and "agent loop state" in p.stderr, p.stderr
    assert p.returncode == 1
    assert snap.read_bytes() == before


# L3 ---------------------------------------------------------------------------------------
HUGE_TIMEOUT = """
pipeline main() {
  println(unwrap_err(try { parse_resume_conditions({timeout: {duration_minutes: 9999999999999}}) }))
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "w",
    conditions: {trigger: {kind: "k", provider: "github"},
                 timeout: {duration_minutes: 9999999999999}}}}]})
  llm_mock({text: "fin"})
  const r = agent_loop("go", nil, {provider: "mock"})
  println(r.status)
  println(r.transcript.messages[2].content)
}
"""

DAY_TIMEOUT = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "w",
    conditions: {trigger: {kind: "k", provider: "github"},
                 timeout: {duration_minutes: 1440}}}}]})
  llm_mock({text: "fin"})
  const r = agent_loop("go", nil, {provider: "mock"})
  println(r.snapshot_path)
}
"""


def test_a_huge_timeout_is_refused_when_declared(tmp_path: Path) -> None:
    """Adjusted test (was: park with the huge timeout, then list it): the wait is now refused
    when it is declared (HARN-SUS-002 with the field path; the model gets it back and the
    loop goes on), so the CLI part is pinned below with a huge deadline put in the store."""
    (tmp_path / "main.harn").write_text(HUGE_TIMEOUT, encoding="utf-8")
    p = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    pinned, status, feedback = p.stdout.splitlines()
    why = "invalid ResumeConditions.timeout.duration_minutes: must be at most 52560000"
    assert pinned.startswith(f"HARN-SUS-002: {why}"), pinned
    assert status == "done"
    assert "HARN-SUS-002" in feedback and "timeout.duration_minutes" in feedback, feedback


@pytest.mark.parametrize("cmd", ["ls", "show"])
def test_workers_cli_survives_a_huge_timeout(tmp_path: Path, cmd: str) -> None:
    store = tmp_path / "waits.sqlite3"
    env = {"HARNPY_STORE": str(store)}
    _park(tmp_path, DAY_TIMEOUT, env)
    huge = 600001796054309590  # what a 9999999999999-minute timeout used to store
    with sqlite3.connect(store) as db:
        ((wid, raw),) = db.execute("SELECT id, record FROM waits").fetchall()
        record = json.loads(raw)
        record["deadline_ms"] = huge
        db.execute(
            "UPDATE waits SET deadline_ms = ?, record = ? WHERE id = ?",
            (huge, json.dumps(record), wid),
        )
    listed = harnpy("workers", "ls", "--json", cwd=tmp_path, env={**ENV, **env})
    assert listed.returncode == 0, listed.stderr
    (wait,) = json.loads(listed.stdout)
    assert wait["deadline_ms"] == huge
    args = ["workers", "ls", "--wide"] if cmd == "ls" else ["workers", "show", str(wait["id"])]
    p = harnpy(*args, cwd=tmp_path, env={**ENV, **env})
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 0, p.stderr
    assert str(wait["worker_id"]) in p.stdout
    assert f"{huge} ms since the epoch" in p.stdout


# L4 ---------------------------------------------------------------------------------------
def test_incomplete_worker_snapshot_is_sus_004(tmp_path: Path) -> None:
    f = tmp_path / "worker_x.json"
    f.write_text('{"_type": "agent_handle", "id": "worker_x", "status": "suspended"}')
    p = harnpy("run", "--resume", str(f), cwd=tmp_path, env=ENV)
    assert "HARN-SUS-004" in p.stderr, p.stderr
    assert "expected one of 'harnpy_snapshot'" not in p.stderr, p.stderr
    assert "a worker handle (_type='agent_handle'), not a worker snapshot" in p.stderr
    assert "snapshot_path" in p.stderr, p.stderr
    assert p.returncode == 1


@pytest.mark.parametrize("cut", [0, 1, 2])
def test_empty_and_truncated_worker_snapshots_are_both_sus_004(tmp_path: Path, cut: int) -> None:
    """An empty file, a truncated worker snapshot and half of one: all HARN-SUS-004, exit 1
    (a file that does not say it is a program snapshot takes the worker path)."""
    snap = _park(tmp_path)
    data = snap.read_bytes()
    snap.write_bytes([b"", data[:40], data[: len(data) // 2]][cut])
    p = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=ENV)
    assert "HARN-SUS-004" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert ("the file is empty" in p.stderr) == (cut == 0), p.stderr
    assert p.returncode == 1


# L5 ---------------------------------------------------------------------------------------
def test_unusable_explicit_state_dir_is_not_silently_replaced(tmp_path: Path) -> None:
    (tmp_path / "not_a_dir").write_text("x")
    (tmp_path / "main.harn").write_text(PARK, encoding="utf-8")
    tmp = tmp_path / "tmp"  # where a fallback would go: never the real /tmp
    tmp.mkdir()
    env = {**ENV, "HARN_WORKER_STATE_DIR": "not_a_dir", "TMPDIR": str(tmp)}
    p = harnpy("run", "main.harn", cwd=tmp_path, env=env)
    assert p.returncode != 0 or "not_a_dir" in p.stderr, (p.stdout, p.stderr)
    # a root loop's park needs the file: it fails, naming the directory
    assert p.returncode == 1 and "HARN_WORKER_STATE_DIR `not_a_dir` cannot be used" in p.stderr
    assert not (tmp / f"harnpy-{os.getuid()}").exists()  # no worker fallback dir
    assert (tmp_path / "not_a_dir").read_text() == "x"


# L6 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra", [["other.harn"], ["-e", 'println("never runs")']])
def test_resume_with_a_script_too_is_a_usage_error(tmp_path: Path, extra: list[str]) -> None:
    snap = _park(tmp_path)
    (tmp_path / "other.harn").write_text('println("never runs")\n', encoding="utf-8")
    before = snap.read_bytes()
    p = harnpy("run", "--resume", str(snap), *extra, cwd=tmp_path, env=ENV)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert snap.read_bytes() == before
