"""A parked worker's ``agent_trace()`` events are stored like its transcript — lines of the
transcript file beside a snapshot file, rows of an SQL store's checkpoint — appended per
park, never inside the checkpoint body (:mod:`harnpy.lifecycle.transcript_store`, stream
``a``): the body stays the same size after 30 or 300 turns, and a resume in a new process
answers ``agent_trace()`` with the events from before the park. Runs on snapshot files,
SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, harnpy

# n note turns, a park, one note turn that records agent_trace() in STEPS, the answer
PROGRAM = """
tool note(text: string) -> string {
  description "Record a step."
  if text == "after" {
    const seen = agent_trace().map({ e -> e.type + ":" + to_string(e?.tool_name ?? e?.iteration) })
    append_file("STEPS", json_stringify(seen) + "\\n")
  }
  return "noted"
}
pipeline main() {
  const n = to_int(argv()[0])
  for i in range(n) {
    llm_mock({tool_calls: [{id: "a" + to_string(i), name: "note", arguments: {text: "before"}}]})
  }
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption",
    arguments: {reason: "needs approval"}}]})
  llm_mock({tool_calls: [{id: "b", name: "note", arguments: {text: "after"}}]})
  llm_mock({text: "shipped"})
  const r = agent_loop("ship it", nil, {provider: "mock", tools: [note], max_iterations: n + 8})
  println(r.status)
  println(r.snapshot_path)
}
"""


@pytest.fixture(params=["files", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """``files`` (a worker state directory), or a store URL (SQLite, PostgreSQL)."""
    if request.param == "files":
        return "files"
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'store.sqlite3'}"
    return str(request.getfixturevalue("pg_url"))


def _env(backend: str, state: Path) -> dict[str, str]:
    env = {"HARN_LLM_CALLS_DISABLED": "1", "PYTHONPATH": str(REPO), "HARNPY_STORE": ""}
    if backend == "files":
        return {**env, "HARN_WORKER_STATE_DIR": str(state)}
    return {**env, "HARN_WORKER_STATE_DIR": "", "HARNPY_STORE": backend}


def _trace_entries(backend: str, ref: str) -> tuple[bytes, list[list[object]]]:
    """The checkpoint body of ``ref`` and the ``[tag, value]`` entries stored beside it."""
    if backend == "files":
        snap = Path(ref)
        (tfile,) = snap.parent.glob(f"{snap.stem}.transcript-*.jsonl")
        lines = tfile.read_bytes().splitlines()
        return snap.read_bytes(), [json.loads(x) for x in lines]
    from harnpy.store import open_store

    st = open_store(backend)
    wid = ref.rpartition("#")[2]
    got = st.get_checkpoint(wid)
    assert got is not None
    with st.read() as c:
        rows = c.all("SELECT body FROM transcript_rows WHERE worker_id = ? ORDER BY seq", (wid,))
    return bytes(got[1]), [json.loads(bytes(r[0])) for r in rows]


def _park(tmp_path: Path, backend: str, n: int) -> tuple[str, Path]:
    d = tmp_path / f"park{n}"
    d.mkdir()
    (d / "w.harn").write_text(PROGRAM, encoding="utf-8")
    p = harnpy("run", "w.harn", "--", str(n), cwd=d, env=_env(backend, d / "state"), timeout=120)
    assert p.returncode == 0, p.stderr
    status, ref = p.stdout.strip().splitlines()[-2:]
    assert status == "suspended", p.stdout
    return ref, d


def test_the_trace_is_stored_beside_the_checkpoint_and_comes_back_in_a_new_process(
    tmp_path: Path, backend: str
) -> None:
    sizes = {}
    for n in (30, 300):
        ref, d = _park(tmp_path, backend, n)
        body, entries = _trace_entries(backend, ref)
        trace = [v for tag, v in entries if tag == "a"]
        # every turn before the park: its llm_call and tool_execution, then the park turn's
        # llm_call, all stored beside the body and none inside it
        assert len(trace) == 2 * n + 1, [e["type"] for e in trace]  # type: ignore[index]
        assert b"tool_execution" not in body and b"llm_call" not in body
        sizes[n] = len(body)
        # resumed by a new process in another directory (sharing only the snapshot or store)
        b = d / "b"
        b.mkdir()
        r = harnpy("run", "--resume", ref, cwd=b, env=_env(backend, d / "state"), timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "shipped"
        (line,) = (b / "STEPS").read_text(encoding="utf-8").splitlines()
        seen = json.loads(line)
        assert seen[:3] == ["llm_call:1", "tool_execution:note", "llm_call:2"], seen[:5]
        assert seen.count("tool_execution:note") == n  # the note under way is not done yet
        assert seen[-1] == f"llm_call:{n + 2}"  # the model call after the resume
        assert sum(e.startswith("llm_call:") for e in seen) == n + 2
    # the checkpoint body does not grow with the loop (a few digits more in counters)
    assert abs(sizes[300] - sizes[30]) <= 512, sizes
