"""``--upgrade-code`` on the commands that resume parked runs themselves (issue 10 point 5):
``harnpy worker``, ``harnpy workers resume``, ``harnpy waitpoint resume`` and ``harnpy
waitpoint complete --resume``, in real subprocesses.

The semantics are ``harnpy run --resume --upgrade-code``'s: without the flag a parked run
resumes on the code it started with; with it, on the current files when the functions on
its parked stack did not change, and a changed one is refused naming it (the run stays
parked). ``harnpy worker`` resumes trigger waits in a ``harnpy run --resume`` child (the
flag reaches it through ``HARNPY_UPGRADE_CODE``) and waitpoint parks in its own process:
both are covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import harnpy
from tests.lifecycle.test_resume_code_changes import PARK, _park_on_store
from tests.waitpoints.helpers import run as run_with_store

WORKER = """
fn make_tools(label) {
  return tool_define(tool_registry(), "record", "record a note", {
    parameters: {note: "string"},
    handler: { args ->
      append_file("log.txt", "tool:" + args.note + ":" + label + "\\n")
      return "recorded " + args.note
    },
  })
}

pipeline main() {
  llm_mock({tool_calls: [{id: "t1", name: "record", arguments: {note: "one"}}]})
  llm_mock({tool_calls: [{id: "p1", name: "agent_await_resumption", arguments: {reason: "x",
    conditions: {trigger: {kind: "go", provider: "webhook"}, timeout: {duration_minutes: 60}}}}]})
  llm_mock({tool_calls: [{id: "t2", name: "record", arguments: {note: "two"}}]})
  llm_mock({text: "all done"})
  const r = agent_loop("work", nil, {provider: "mock", tools: make_tools("L"), max_iterations: 6})
  println(r.snapshot_path)
}
"""

ENV = {
    "HARN_LLM_CALLS_DISABLED": "1",
    "HARN_WORKER_STATE_DIR": ".harn/workers",
    "HARNPY_STORE": "default",
}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _park_worker(tmp_path: Path) -> tuple[str, Path]:
    (tmp_path / "w.harn").write_text(WORKER, encoding="utf-8")
    first = harnpy("run", "w.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = tmp_path / first.stdout.strip().splitlines()[-1]
    worker_id = snap.name.removeprefix("worker_").removesuffix(".json")
    return worker_id, snap


@pytest.mark.parametrize("upgrade", [False, True])
def test_workers_resume_runs_the_stored_or_with_the_flag_the_current_handler(
    tmp_path: Path, upgrade: bool
) -> None:
    worker_id, _ = _park_worker(tmp_path)
    _edit(tmp_path / "w.harn", '"tool:" + args.note', '"tool-v2:" + args.note')
    flags = ["--upgrade-code"] if upgrade else []
    res = harnpy("workers", "resume", worker_id, *flags, cwd=tmp_path, env=ENV)
    assert res.returncode == 0, res.stderr
    assert "all done" in res.stdout
    log = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    assert log == ["tool:one:L", "tool-v2:two:L" if upgrade else "tool:two:L"]
    assert ("a closure in `make_tools` (w.harn:5) changed" in res.stdout + res.stderr) is upgrade


def test_workers_resume_upgrade_refuses_a_change_it_cannot_bind(tmp_path: Path) -> None:
    # a worker parks at a turn boundary: its handlers are values, and one that now captures
    # a local the parked run never had cannot be bound to its new version
    worker_id, snap = _park_worker(tmp_path)
    before = snap.read_bytes()
    _edit(tmp_path / "w.harn", "fn make_tools(label) {", 'fn make_tools(label) {\n  let v = "2"')
    _edit(tmp_path / "w.harn", '":" + label', '":" + label + v')
    res = harnpy("workers", "resume", worker_id, "--upgrade-code", cwd=tmp_path, env=ENV)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "a closure in `make_tools` (w.harn:6) changed what it captures" in out, out
    assert "the worker is still parked" in res.stderr
    assert snap.read_bytes() == before
    assert (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines() == ["tool:one:L"]
    # the same resume without the opt-in runs the code the worker started with
    ok = harnpy("workers", "resume", worker_id, cwd=tmp_path, env=ENV)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()[-1] == "tool:two:L"


def test_worker_once_upgrade_code_on_a_waitpoint_park(tmp_path: Path, store_url: str) -> None:
    _park_on_store(tmp_path, store_url)
    src = tmp_path / "park.harn"
    _edit(src, 'let local = "kept-"', 'let local = "KEPT-"')  # step: on the parked stack
    refused = run_with_store("worker", "--once", "--upgrade-code", cwd=tmp_path, store=store_url)
    assert "function `step` (park.harn:8) is on the parked stack and changed" in (
        refused.stdout + refused.stderr
    )
    assert "kept-7" not in refused.stdout
    # the run stays parked: with the edit replaced by one off the stack it upgrades
    src.write_text(PARK.replace('"got "', '"GOT "'), encoding="utf-8")
    up = run_with_store("worker", "--once", "--upgrade-code", cwd=tmp_path, store=store_url)
    assert up.returncode == 0, up.stderr
    assert up.stdout.splitlines() == ['GOT {"ok":true} kept-7', "result true"]


def test_waitpoint_resume_and_complete_take_upgrade_code(tmp_path: Path, store_url: str) -> None:
    _park_on_store(tmp_path, store_url)
    src = tmp_path / "park.harn"
    _edit(src, "return got.value.ok", "return got.value")  # step: on the parked stack
    refused = run_with_store("waitpoint", "resume", "--upgrade-code", cwd=tmp_path, store=store_url)
    assert refused.returncode == 1
    assert "function `step` (park.harn:8) is on the parked stack and changed" in refused.stderr
    src.write_text(PARK.replace('"got "', '"GOT "'), encoding="utf-8")
    up = run_with_store("waitpoint", "resume", "--upgrade-code", cwd=tmp_path, store=store_url)
    assert up.returncode == 0, up.stderr
    assert up.stdout.splitlines() == ['GOT {"ok":true} kept-7', "result true"]
    assert "function `shown` (park.harn:4) changed" in up.stderr


def test_waitpoint_complete_resume_upgrade_code(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "park.harn").write_text(PARK, encoding="utf-8")
    first = run_with_store("run", "park.harn", cwd=tmp_path, store=store_url)
    assert first.returncode == 3, first.stderr
    (tmp_path / "park.harn").write_text(PARK.replace('"got "', '"GOT "'), encoding="utf-8")
    bad = run_with_store(
        "waitpoint", "complete", "approval", "true", "--upgrade-code", cwd=tmp_path, store=store_url
    )
    assert bad.returncode == 2 and "--upgrade-code applies with --resume only" in bad.stderr
    res = run_with_store(
        "waitpoint", "complete", "approval", '{"ok": 5}', "--resume", "--upgrade-code",
        cwd=tmp_path, store=store_url,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-2:] == ['GOT {"ok":5} kept-7', "result 5"]
