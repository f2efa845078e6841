"""Every snapshot harnpy writes is sealed and every load checks the seal before decoding
(issue 13 point 1; findings F06 and F09): forged or edited program snapshots, worker
snapshots and REPL sessions are refused (E404 / HARN-SUS-004) and left unchanged."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from harnpy.security import is_sealed
from tests.conftest import REPO, harnpy
from tests.sealing import read_doc, write_doc

REPORT = """fn main_job() {
  println("collecting")
  __snapshot_exit("state.json")
  println("report done")
}
main_job()
"""

NOTIFY = """fn notify(msg) {
  println("notify: " + msg)
}
let note = "job finished"
__snapshot_exit("state2.json")
notify(note)
"""


def _flip_one_bit(data: bytes, old: bytes, new: bytes) -> bytes:
    i = data.index(old)
    diff = [j for j in range(len(old)) if old[j] != new[j]]
    assert len(diff) == 1 and bin(old[diff[0]] ^ new[diff[0]]).count("1") == 1
    return data[:i] + new + data[i + len(old) :]


def _refused_program(res: object, snap: Path, before: bytes) -> None:
    out = res.stdout + res.stderr  # type: ignore[attr-defined]
    assert res.returncode == 2, out  # type: ignore[attr-defined]
    assert "error[E404]" in res.stderr and "Traceback" not in out  # type: ignore[attr-defined]
    assert snap.read_bytes() == before


def test_program_snapshot_is_sealed(tmp_path: Path) -> None:
    (tmp_path / "report.harn").write_text(REPORT)
    assert harnpy("run", "report.harn", cwd=tmp_path).returncode == 3
    data = (tmp_path / "state.json").read_bytes()
    assert is_sealed(data)
    assert json.loads(data)["_type"] == "harnpy_snapshot"  # still a JSON document
    res = harnpy("run", "--resume", "state.json", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == "report done\n"


def test_f09_forged_inline_source_for_a_file_does_not_run(tmp_path: Path) -> None:
    # (1) a forged snapshot names the victim's unchanged script but carries its own code
    (tmp_path / "report.harn").write_text(REPORT)
    assert harnpy("run", "report.harn", cwd=tmp_path).returncode == 3
    snap = tmp_path / "state.json"
    doc = json.loads(snap.read_text())
    evil = REPORT.replace('println("report done")', 'println(shell("id -un > PWNED").stdout)')
    for m in doc["modules"]:
        if m["role"] == "main":
            m["source"] = evil
            m["hash"] = hashlib.sha256(evil.encode()).hexdigest()
    del doc["_seal"]
    snap.write_text(json.dumps(doc))  # what the attacker can write: no key, no seal
    before = snap.read_bytes()
    res = harnpy("run", "--resume", "state.json", cwd=tmp_path)
    _refused_program(res, snap, before)
    assert "is not sealed" in res.stderr
    assert not (tmp_path / "PWNED").exists()


def test_inline_source_is_ignored_for_a_file_module_even_when_sealed(tmp_path: Path) -> None:
    # defence in depth: a document carrying a `source` for a module that has a file (which
    # harnpy never writes) still runs the file's code, or is refused when its hash differs
    (tmp_path / "report.harn").write_text(REPORT)
    assert harnpy("run", "report.harn", cwd=tmp_path).returncode == 3
    snap = tmp_path / "state.json"
    doc = read_doc(snap)
    evil = REPORT.replace('println("report done")', 'println(shell("id -un > PWNED").stdout)')
    for m in doc["modules"]:
        if m["role"] == "main":
            m["source"] = evil
    write_doc(snap, doc)
    res = harnpy("run", "--resume", "state.json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "report done\n"
    assert not (tmp_path / "PWNED").exists()
    for m in doc["modules"]:
        if m["role"] == "main":
            m["hash"] = hashlib.sha256(evil.encode()).hexdigest()
    write_doc(snap, doc)
    res = harnpy("run", "--resume", "state.json", cwd=tmp_path)
    assert res.returncode == 2 and "error[E406]" in res.stderr
    assert not (tmp_path / "PWNED").exists()


def test_f09_data_only_edit_to_a_builtin_is_refused(tmp_path: Path) -> None:
    # (2) genuine source, only data changed: a closure replaced by the shell builtin
    (tmp_path / "notify.harn").write_text(NOTIFY)
    assert harnpy("run", "notify.harn", cwd=tmp_path).returncode == 3
    snap = tmp_path / "state2.json"
    doc = json.loads(snap.read_text())
    g = doc["globals"][str(tmp_path / "notify.harn")]
    g["notify"] = {"$t": "builtin", "name": "shell"}
    g["note"] = "id -un > PWNED_2"
    # the seal member kept in front (compact JSON, as harnpy writes it), the content changed
    snap.write_text(json.dumps(doc, separators=(",", ":")))
    before = snap.read_bytes()
    res = harnpy("run", "--resume", "state2.json", cwd=tmp_path)
    _refused_program(res, snap, before)
    assert "was changed after it was written" in res.stderr
    assert not (tmp_path / "PWNED_2").exists()


def test_f06_one_flipped_bit_in_a_program_snapshot_is_refused(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text(
        'let one = [1, 2]\nlet two = [one, one]\n__snapshot_exit("s.json")\nprintln(two)\n'
    )
    assert harnpy("run", "p.harn", cwd=tmp_path).returncode == 3
    snap = tmp_path / "s.json"
    good = snap.read_bytes()
    assert b'"$ref"' in good
    bad = _flip_one_bit(good, b'"$ref"', b'"$rdf"')
    assert json.loads(bad)  # still valid JSON
    snap.write_bytes(bad)
    res = harnpy("run", "--resume", "s.json", cwd=tmp_path)
    _refused_program(res, snap, bad)
    snap.write_bytes(good)
    res = harnpy("run", "--resume", "s.json", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == "[[1, 2], [1, 2]]\n"


def test_a_snapshot_sealed_with_another_key_names_the_keys(tmp_path: Path) -> None:
    (tmp_path / "report.harn").write_text(REPORT)
    env_a = {"HARNPY_SNAPSHOT_KEY": "a" * 40}
    assert harnpy("run", "report.harn", cwd=tmp_path, env=env_a).returncode == 3
    snap = tmp_path / "state.json"
    before = snap.read_bytes()
    res = harnpy(
        "run", "--resume", "state.json", cwd=tmp_path, env={"HARNPY_SNAPSHOT_KEY": "b" * 40}
    )
    _refused_program(res, snap, before)
    assert "sealed with another key" in res.stderr and "HARNPY_SNAPSHOT_KEY" in res.stderr
    res = harnpy("run", "--resume", "state.json", cwd=tmp_path, env=env_a)
    assert res.returncode == 0 and res.stdout == "report done\n"


# ------------------------------------------------------------------ worker snapshots


@pytest.fixture
def parked_worker(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """The approval example parked in ``tmp_path``: (project dir, snapshot, env)."""
    for name in ("approval.harn", "approval.jsonl"):
        shutil.copy(REPO / "examples" / "lifecycle" / name, tmp_path / name)
    env = {"HARN_WORKER_STATE_DIR": str(tmp_path / "workers"), "HARN_LLM_CALLS_DISABLED": "1"}
    res = harnpy("run", "--llm-mock", "approval.jsonl", "approval.harn", cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    (snap,) = sorted((tmp_path / "workers").glob("worker_*.json"))
    assert is_sealed(snap.read_bytes())
    return tmp_path, snap, env


def _refused_worker(res: object, snap: Path, before: bytes) -> None:
    out = res.stdout + res.stderr  # type: ignore[attr-defined]
    assert res.returncode == 1, out  # type: ignore[attr-defined]
    assert "HARN-SUS-004" in res.stderr and "Traceback" not in out  # type: ignore[attr-defined]
    assert snap.read_bytes() == before


def test_f09_forged_worker_snapshot_does_not_run(
    parked_worker: tuple[Path, Path, dict[str, str]],
) -> None:
    # (3) the worker's main module given inline evil source and a matching hash
    d, snap, env = parked_worker
    doc = json.loads(snap.read_text())
    src = (d / "approval.harn").read_text()
    evil = src.replace(
        'println("  [tool] check_tests ran")', 'println(shell("id -un > PWNED_3").stdout)'
    )
    for m in doc["harnpy_thread"]["modules"]:
        if m["role"] == "main":
            m["source"] = evil
            m["hash"] = hashlib.sha256(evil.encode()).hexdigest()
    doc["llm_mock"]["fixture"].insert(
        0, {"tool_calls": [{"id": "t9", "name": "check_tests", "arguments": {}}]}
    )
    snap.write_text(json.dumps(doc, separators=(",", ":")))
    before = snap.read_bytes()
    res = harnpy("run", "--resume", str(snap), cwd=d, env=env)
    _refused_worker(res, snap, before)
    assert "was changed after it was written" in res.stderr
    assert not (d / "PWNED_3").exists()


@pytest.mark.parametrize(
    ("old", "new"),
    [(b'"queue"', b'"aueue"'), (b'__agent_turn"', b'__agent_turl"')],
    ids=["mock-queue", "builtin-name"],
)
def test_f06_one_flipped_bit_in_a_worker_snapshot_is_refused(
    parked_worker: tuple[Path, Path, dict[str, str]], old: bytes, new: bytes
) -> None:
    d, snap, env = parked_worker
    good = snap.read_bytes()
    bad = _flip_one_bit(good, old, new)
    snap.write_bytes(bad)
    res = harnpy("run", "--resume", str(snap), cwd=d, env=env)
    _refused_worker(res, snap, bad)  # the park is not overwritten with "failed"
    # the genuine snapshot still resumes and finishes
    snap.write_bytes(good)
    res = harnpy("run", "--resume", str(snap), cwd=d, env=env)
    assert res.returncode == 0, res.stderr
    assert "Release 2.4 is approved and shipped." in res.stdout


def test_an_unsealed_worker_snapshot_is_refused_by_the_workers_cli_too(
    parked_worker: tuple[Path, Path, dict[str, str]],
) -> None:
    d, snap, env = parked_worker
    doc = read_doc(snap)
    snap.write_text(json.dumps(doc))  # no seal
    before = snap.read_bytes()
    res = harnpy("run", "--resume", str(snap), cwd=d, env=env)
    _refused_worker(res, snap, before)
    assert "is not sealed" in res.stderr


# ------------------------------------------------------------------ REPL sessions


def test_repl_session_is_sealed_and_an_edited_one_is_refused(tmp_path: Path) -> None:
    from harnpy.runtime.session import Session
    from harnpy.runtime.snapshot import SnapshotError

    s = Session()
    s.eval("let secret = 41")
    path = tmp_path / "s.json"
    s.save(str(path))
    assert is_sealed(path.read_bytes())
    doc = json.loads(path.read_text())
    for m in doc["modules"]:
        if m.get("source") is not None:
            m["source"] = m["source"].replace("41", "42")
    path.write_text(json.dumps(doc, separators=(",", ":")))
    before = path.read_bytes()
    other = Session()
    other.eval("let mine = 5")
    with pytest.raises(SnapshotError) as ei:
        other.restore(str(path))
    assert ei.value.code == "E404" and "changed after it was written" in ei.value.message
    assert other.eval("mine").value == 5 and path.read_bytes() == before
    s.save(str(path))
    other.restore(str(path))
    assert other.eval("secret + 1").value == 42
