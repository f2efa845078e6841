"""The worker snapshot file (lifecycle.md 3.6, 10; issue point 4): where it goes, what it
holds, how it is written and validated, and what is refused."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from harnpy.lifecycle.suspend import read_document
from harnpy.runtime.sources import sources_dir
from tests.conftest import harnpy
from tests.lifecycle.conftest import PARK_ONCE, RunHarn, lines, load, snapshots
from tests.sealing import write_doc


def test_file_layout_and_envelope(run_harn: RunHarn, state_dir: Path) -> None:
    out, _ = run_harn(
        "pipeline main() {"
        + PARK_ONCE
        + """
  const s = wait_agent(h)
  println(s.snapshot_path)
  println(s.suspension.snapshot_ref == s.snapshot_path)
}
"""
    )
    got = lines(out)
    (snap,) = snapshots(state_dir)
    assert got == [str(snap), "true"]
    assert stat.S_IMODE(snap.stat().st_mode) == 0o600
    # no temp file left: the snapshot, its transcript file (issue 15) and the directory's
    # lock file only
    (tfile,) = state_dir.glob(f"{snap.stem}.transcript-*.jsonl")
    assert sorted(p.name for p in state_dir.iterdir()) == sorted(
        [snap.name, tfile.name, ".harnpy-dir.lock"]
    )
    assert stat.S_IMODE(tfile.stat().st_mode) == 0o600
    doc = load(snap)
    assert doc["_type"] == "worker_snapshot"
    assert doc["harnpy_snapshot_version"] == 1
    assert doc["status"] == "suspended" and doc["mode"] == "sub_agent"
    for key in (
        "id name task created_at started_at finished_at awaiting_started_at history config "
        "request latest_payload latest_error transcript artifacts parent_worker_id "
        "parent_stage_id child_run_id child_run_path carry_policy execution snapshot_path "
        "audit suspension"
    ).split():
        assert key in doc, key
    assert doc["config"]["mode"] == "sub_agent"
    assert set(doc["carry_policy"]) >= {
        "artifact_mode",
        "transcript_mode",
        "context_policy",
        "resume_workflow",
        "persist_state",
        "retriggerable",
        "policy",
    }
    thread = doc["harnpy_thread"]
    assert thread["_type"] == "harnpy_snapshot" and isinstance(thread["pending_slot"], int)
    assert {m["key"] for m in thread["modules"]} >= {"std/agent/_loop"}
    assert all(len(m["hash"]) == 64 for m in thread["modules"])
    # the transcript is written once, at top level; the frames refer to it, and its
    # message and event lists are in the transcript file beside the snapshot (issue 15)
    text = json.dumps(thread)
    assert '{"$ext": "transcript"}' in text
    # no message is written inside the frames, nor in the document
    assert '"role": "user"' not in text and '"role": "assistant"' not in text
    assert doc["transcript"]["messages"] == {"$ext": "transcript.messages"}
    assert doc["transcript"]["events"] == {"$ext": "transcript.events"}
    assert doc["transcript_file"]["name"] == tfile.name
    entries = [json.loads(x) for x in tfile.read_text().splitlines()]
    assert entries[0] == ["m", {"role": "user", "content": "Park until review."}]
    assert "was not dispatched: awaiting_resumption" in tfile.read_text()
    assert "pickle" not in snap.read_text()
    read_document(str(snap))  # validates


_PARK_AND_SHOW = (
    "pipeline main() {"
    + PARK_ONCE
    + """
  const s = wait_agent(h)
  println(s.snapshot_path)
  println(file_exists(s.snapshot_path))
}
"""
)


def test_read_only_default_state_dir_falls_back_to_tmp(
    run_harn: RunHarn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without HARN_WORKER_STATE_DIR, a checkout where `.harn/workers` cannot be written
    still parks, in a per-user temporary directory (here under the test's own tmp)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.delenv("HARN_WORKER_STATE_DIR")
    monkeypatch.chdir(ro)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    ro.chmod(0o555)
    try:
        out, _ = run_harn(_PARK_AND_SHOW)
    finally:
        ro.chmod(0o755)
    path, exists = lines(out)
    assert exists == "true"
    assert path.startswith(str(tmp / "harnpy-")) and path.endswith(".json")
    assert not (ro / ".harn").exists()


def test_unusable_explicit_state_dir_is_reported_not_replaced(
    run_harn: RunHarn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adjusted test (it pinned the /tmp fallback for an explicit HARN_WORKER_STATE_DIR
    too): a directory the user chose is never silently replaced. A background worker's park
    stays in memory with a warning naming the directory (a root loop's park fails)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", str(ro / "workers"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    ro.chmod(0o555)
    try:
        out, _ = run_harn(_PARK_AND_SHOW)
    finally:
        ro.chmod(0o755)
    path, exists = lines(out)
    assert path == str(ro / "workers" / Path(path).name) and exists == "false"
    assert f"HARN_WORKER_STATE_DIR `{ro / 'workers'}` cannot be used" in out, out
    assert not (ro / "workers").exists()
    assert not (tmp / f"harnpy-{os.getuid()}").exists()  # no fallback dir


def test_a_value_that_is_not_data_fails_the_park_with_its_path(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
fn tools(r) {
  return tool_define(tool_registry(), "roll", "roll", {parameters: {},
    handler: { a -> return type_of(r) }})
}
pipeline main() {
  const r = stream.map([1, 2], { x -> x })
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "x"}}]})
  println(unwrap_err(try { agent_loop("t", nil, {provider: "mock", tools: tools(r)}) }))
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "x"}}]})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools(r)})
  println(unwrap_err(try { wait_agent(h) }))
  println(wait_agent(h).status)
}
"""
    )
    got = lines(out)
    # the park fails (in the snapshot-everywhere mode the turn boundary before it does),
    # naming the variable: the closure's captured `r` in the loop state's tools or in the
    # worker's config
    for msg in got[:2]:
        assert "cannot snapshot stream_node held at " in msg, msg
        assert "tools[0].handler<<closure>>.r" in msg, msg
        assert msg.endswith("it is a host object (open handle or client), not data")
    assert got[2] == "failed"


def test_over_4_mib_is_refused_naming_the_biggest_parts(run_harn: RunHarn) -> None:
    # a 5 MiB tool result lives in the transcript file (issue 15); a 5 MiB string the
    # tool's closure captures is in the snapshot itself
    out, _ = run_harn(
        """
fn tools(big) {
  return tool_define(tool_registry(), "dump", "big", {parameters: {},
    handler: { a -> return len(big) }})
}
pipeline main() {
  const big = "x" * (5 * 1024 * 1024)
  llm_mock({tool_calls: [{id: "d", name: "dump", arguments: {}}]})
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "x"}}]})
  const h = sub_agent_run("t", {provider: "mock", background: true, tools: tools(big)})
  println(unwrap_err(try { wait_agent(h) }))
}
"""
    )
    (msg,) = lines(out)
    assert "over the 4194304-byte (4 MiB) limit; largest parts: " in msg
    # the captured string is named, not the variable `st`
    assert "the string `big` captured by the closure at " in msg, msg


def test_load_checks_version_mode_and_source_hash(run_harn: RunHarn, state_dir: Path) -> None:
    run_harn("pipeline main() {" + PARK_ONCE + " wait_agent(h) }")
    (snap,) = snapshots(state_dir)
    doc = load(snap)
    variants = {
        "v2": {**doc, "harnpy_snapshot_version": 2},
        "codegen": {**doc, "harnpy_thread": {**doc["harnpy_thread"], "codegen_version": -1}},
        "type": {**doc, "_type": "something_else"},
        "mode": {**doc, "config": {**doc["config"], "mode": "bogus"}},
        "hash": {
            **doc,
            "harnpy_thread": {
                **doc["harnpy_thread"],
                "modules": [
                    {**m, "hash": "0" * 64} if m["key"] == "<test>" else m
                    for m in doc["harnpy_thread"]["modules"]
                ],
            },
        },
    }
    paths = {}
    for name, variant in variants.items():
        p = state_dir / f"{name}.json"
        write_doc(p, variant)
        paths[name] = p
    out, _ = run_harn(
        "pipeline main() {\n"
        + "\n".join(f'  println(unwrap_err(try {{ resume_agent("{p}") }}))' for p in paths.values())
        + "\n}"
    )
    got = lines(out)
    assert all(x.startswith("HARN-SUS-004: resume_agent: failed to load snapshot") for x in got)
    assert "format version 2" in got[0]
    assert "codegen version" in got[1]
    assert "not a worker snapshot" in got[2]
    assert "missing a valid config mode" in got[3]
    assert "changed since the snapshot was taken" in got[4]
    # a refused resume leaves every file as it was
    for name, p in paths.items():
        assert load(p) == variants[name]


PARK_SCRIPT = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "later"}}]})
  llm_mock({text: "answer queued by the script"})
  const r = agent_loop("t", nil, {provider: "mock", max_iterations: 3})
  println(r.snapshot_path)
}
"""


def _park(tmp_path: Path) -> Path:
    (tmp_path / "p.harn").write_text(PARK_SCRIPT, encoding="utf-8")
    first = harnpy("run", "p.harn", cwd=tmp_path, env={"HARN_WORKER_STATE_DIR": "state"})
    assert first.returncode == 0, first.stderr
    return tmp_path / first.stdout.strip()


def _final(stdout: str) -> dict:
    return json.loads(stdout.strip().split("\n")[-1])["data"]


def test_mock_queue_travels_and_llm_mock_replaces_it(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    doc = load(snap)
    assert doc["llm_mock"]["queue"] == [{"text": "answer queued by the script"}]
    original = snap.read_bytes()
    env = {"HARN_WORKER_STATE_DIR": "state"}
    r = harnpy("run", "--resume", str(snap), "--json", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert _final(r.stdout)["value"]["result"]["summary"] == "answer queued by the script"
    snap.write_bytes(original)
    (tmp_path / "m.jsonl").write_text(json.dumps({"text": "answer from --llm-mock"}) + "\n")
    r = harnpy(
        "run", "--resume", str(snap), "--llm-mock", "m.jsonl", "--json", cwd=tmp_path, env=env
    )
    assert r.returncode == 0, r.stderr
    assert _final(r.stdout)["value"]["result"]["summary"] == "answer from --llm-mock"


def test_a_failed_resume_leaves_the_snapshot_untouched(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    before = snap.read_bytes()
    mtime = snap.stat().st_mtime_ns
    (tmp_path / "p.harn").write_text(PARK_SCRIPT + "\n// edited\n", encoding="utf-8")
    # without the stored copy of the code it ran (else it resumes on that copy:
    # tests/lifecycle/test_resume_code_changes.py)
    stored = sources_dir(str(snap))
    shutil.move(stored, stored + ".away")
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env={"HARN_WORKER_STATE_DIR": "state"})
    assert r.returncode == 1
    assert "HARN-SUS-004" in r.stderr and "changed since the snapshot was taken" in r.stderr
    assert snap.read_bytes() == before
    assert snap.stat().st_mtime_ns == mtime
    # with the source back, the same file resumes
    (tmp_path / "p.harn").write_text(PARK_SCRIPT, encoding="utf-8")
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env={"HARN_WORKER_STATE_DIR": "state"})
    assert r.returncode == 0, r.stderr


def test_resume_target_forms(tmp_path: Path) -> None:
    snap = _park(tmp_path)
    wid = snap.stem
    env = {"HARN_WORKER_STATE_DIR": str(tmp_path / "state")}
    original = snap.read_bytes()
    # relative to the working directory
    rel = os.path.relpath(snap, tmp_path)
    assert harnpy("run", "--resume", rel, cwd=tmp_path, env=env).returncode == 0
    snap.write_bytes(original)
    # a bare worker id under the state dir
    r = harnpy("run", "--resume", wid, cwd=tmp_path / "state", env=env)
    assert r.returncode == 0, r.stderr
    # a missing file: nothing to resume (usage error, like a broken program snapshot)
    r = harnpy("run", "--resume", "nope.json", "--json", cwd=tmp_path, env=env)
    assert r.returncode == 2
    err = json.loads(r.stdout.strip().split("\n")[-1])["data"]
    assert err["event_type"] == "error" and "No such file" in err["error"]["message"]


def test_plain_program_snapshots_still_resume(tmp_path: Path) -> None:
    prog = tmp_path / "s.harn"
    prog.write_text(
        'pipeline main() {\n  println("a")\n  __snapshot_exit("s.json")\n  println("b")\n}\n'
    )
    assert harnpy("run", str(prog), cwd=tmp_path).stdout == "a\n"
    r = harnpy("run", "--resume", "s.json", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    events = [json.loads(x)["data"] for x in r.stdout.strip().split("\n")]
    assert events[0] == {"seq": 1, "event_type": "stdout", "payload": "b\n"}
    assert events[-1]["event_type"] == "result" and events[-1]["exit_code"] == 0
