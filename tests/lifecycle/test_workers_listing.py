"""Parked work is easy to find (issue 14 point 3): ``harnpy workers ls`` lists parked
workers from the snapshot directory without a store and from the store's waits with one,
with the reason and wake conditions, in 100 columns (``--wide``, ``--json``); short id
prefixes name a worker; a park whose trigger / timeout nothing will wake warns; ``run
--resume PATH --input TEXT`` delivers resume input from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import harnpy
from tests.sealing import read_doc

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARNPY_STORE": ""}

ON_TRIGGER = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {
    reason: "waiting for the review of a pull request whose title is rather long indeed",
    conditions: {trigger: {kind: "review.approved", provider: "github"},
                 timeout: {duration_minutes: 30, on_timeout: "fail"}}}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", max_iterations: 5})
  println(r.status)
}
"""

BY_HAND = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "needs input"}}]})
  llm_mock({text: "got it"})
  const r = agent_loop("go", nil, {provider: "mock", max_iterations: 5})
  println(r.status)
}
"""


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", str(tmp_path / ".harn" / "workers"))


def _run(tmp_path: Path, name: str, source: str, env: dict[str, str]) -> str:
    (tmp_path / name).write_text(source)
    p = harnpy("run", name, cwd=tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip() == "suspended", p.stderr
    return p.stderr


def _workers(tmp_path: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
    p = harnpy("workers", "ls", "--json", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    return {str(r["reason"]): r for r in json.loads(p.stdout)}


def test_ls_lists_parked_workers_from_the_snapshot_directory(tmp_path: Path) -> None:
    warned = _run(tmp_path, "t.harn", ON_TRIGGER, ENV)
    assert "waits for a trigger and a timeout, but no store records the wait" in warned
    assert "nothing will wake it" in warned and "HARNPY_STORE" in warned
    quiet = _run(tmp_path, "h.harn", BY_HAND, ENV)
    assert "nothing will wake it" not in quiet  # resumed by hand: nothing to warn about
    p = harnpy("workers", "ls", cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert rows[0].split() == ["WORKER", "STATUS", "WAKE", "REASON"]
    assert len(rows) == 3 and all(len(r) <= 100 for r in rows), rows
    assert "no parked workers" not in p.stdout
    trig = next(r for r in rows if "trigger github:review.approved" in r)
    assert "suspended" in trig and "waiting for the review" in trig and trig.endswith("…")
    assert any("resume by hand" in r and "needs input" in r for r in rows)
    wide = harnpy("workers", "ls", "--wide", cwd=tmp_path, env=ENV).stdout
    listed = _workers(tmp_path, ENV)
    t = listed["waiting for the review of a pull request whose title is rather long indeed"]
    assert t["status"] == "suspended" and t["snapshot_status"] == "suspended"
    assert t["wake"][0] == "trigger github:review.approved"
    assert t["wake"][1].startswith("timeout 20") and t["wake"][1].endswith("(fail)")
    assert "nothing wakes it" in t["wake"][2]
    assert str(t["worker_id"]) in wide and str(t["snapshot_path"]) in wide
    assert str(t["reason"]) in wide  # nothing cut
    assert listed["needs input"]["wake"] == ["resume by hand (harnpy run --resume)"]


def test_run_resume_takes_a_short_id_and_input(tmp_path: Path) -> None:
    _run(tmp_path, "h.harn", BY_HAND, ENV)
    _run(tmp_path, "t.harn", ON_TRIGGER, ENV)
    by_hand = _workers(tmp_path, ENV)["needs input"]
    short = str(by_hand["short_id"])
    assert 8 <= len(short) < len(str(by_hand["worker_id"]))
    common = short[:4]  # both ids start with the same time stamp
    amb = harnpy("run", "--resume", common, "--input", "x", cwd=tmp_path, env=ENV)
    assert amb.returncode == 2 and f"`{common}` is the start of 2 worker ids" in amb.stderr
    assert amb.stderr.count("error") <= 1 and "program snapshot" not in amb.stderr  # one message
    p = harnpy("run", "--resume", short, "--input", "ship it", cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "got it"
    doc = read_doc(Path(str(by_hand["snapshot_path"])))
    assert doc["status"] == "completed" and "ship it" in doc["history"]
    assert list(_workers(tmp_path, ENV)) == [
        "waiting for the review of a pull request whose title is rather long indeed"
    ]
    done = harnpy("workers", "ls", "--all", "--json", cwd=tmp_path, env=ENV)
    assert {r["status"] for r in json.loads(done.stdout)} == {"completed", "suspended"}
    # the short id `ls` shows for the one still parked resumes it, even when the finished
    # worker's id starts the same way (ls shortens among the parked workers it lists)
    (left,) = _workers(tmp_path, ENV).values()
    p = harnpy("run", "--resume", common, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert read_doc(Path(str(left["snapshot_path"])))["status"] != "suspended"


def test_input_is_refused_for_a_program_snapshot(tmp_path: Path) -> None:
    (tmp_path / "p.harn").write_text('__snapshot_exit("s.json")\nprintln("after")\n')
    assert harnpy("run", "p.harn", cwd=tmp_path, env=ENV).returncode == 3
    p = harnpy("run", "--resume", "s.json", "--input", "x", cwd=tmp_path, env=ENV)
    assert p.returncode == 2 and "--input is the resume input of a parked worker" in p.stderr
    q = harnpy("run", "p.harn", "--input", "x", cwd=tmp_path, env=ENV)
    assert q.returncode == 2 and "--input applies to --resume" in q.stderr


def test_ls_merges_the_store_wait_with_its_snapshot(tmp_path: Path, store_url: str) -> None:
    env = {**ENV, "HARNPY_STORE": store_url}
    warned = _run(tmp_path, "t.harn", ON_TRIGGER, env)
    assert "nothing will wake it" not in warned  # the store records it: harnpy worker wakes it
    _run(tmp_path, "h.harn", BY_HAND, env)
    listed = _workers(tmp_path, env)
    t = listed["waiting for the review of a pull request whose title is rather long indeed"]
    assert t["status"] == "pending" and str(t["id"]).startswith("auto_resume_")
    assert t["snapshot_status"] == "suspended" and t["due"] != "-"
    assert t["wake"] == ["trigger github:review.approved", f"timeout {t['due'][:19]}Z (fail)"]
    assert listed["needs input"]["status"] == "suspended"  # no wait: from the directory
    p = harnpy("workers", "show", str(t["short_id"]), cwd=tmp_path, env=env)
    assert p.returncode == 0 and f"worker       {t['worker_id']}" in p.stdout, p.stderr


def test_show_without_a_store_reads_the_snapshot_directory(tmp_path: Path) -> None:
    _run(tmp_path, "h.harn", BY_HAND, ENV)
    row = _workers(tmp_path, ENV)["needs input"]
    p = harnpy("workers", "show", str(row["short_id"]), cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    assert f"worker       {row['worker_id']}\n" in p.stdout
    assert "reason       needs input\n" in p.stdout
    assert "wakes on     resume by hand (harnpy run --resume)\n" in p.stdout
    assert f"resume with  harnpy run --resume {row['short_id']} [--input TEXT]" in p.stdout
    shown = json.loads(
        harnpy("workers", "show", str(row["worker_id"]), "--json", cwd=tmp_path, env=ENV).stdout
    )
    assert shown["snapshot_path"] == row["snapshot_path"]
    missing = harnpy("workers", "show", "nope", cwd=tmp_path, env=ENV)
    assert missing.returncode == 1 and "no wait for `nope`" in missing.stderr
    res = harnpy("workers", "resume", str(row["short_id"]), cwd=tmp_path, env=ENV)
    assert res.returncode == 1 and "harnpy run --resume ID" in res.stderr
