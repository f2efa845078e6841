"""A parked worker's transcript is stored once, beside its snapshot, and appended
incrementally (issue 15; :mod:`harnpy.lifecycle.transcript_store`)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from harnpy.lifecycle.services import services
from tests.conftest import harnpy
from tests.lifecycle.conftest import RunHarn, lines, load, snapshots

TOOLS = """
fn tools() {
  return tool_define(tool_registry(), "lookup", "look something up", {
    parameters: {q: "string"},
    handler: { args -> "found: " + args.q },
  })
}
fn lookup_reply(i) {
  return {text: "Looking up " + to_string(i), tool_calls: [{id: "call_" + to_string(i),
    name: "lookup", arguments: {q: "item " + to_string(i)}}]}
}
fn park_reply(i) {
  return {tool_calls: [{id: "park_" + to_string(i), name: "agent_await_resumption",
    arguments: {reason: "park " + to_string(i)}}]}
}
"""

# N lookup turns, a park, one more lookup turn, a park, the answer
PARK = (
    TOOLS
    + """
pipeline main() {
  const n = to_int(argv()[0])
  for i in range(n) { llm_mock(lookup_reply(i)) }
  llm_mock(park_reply(0))
  llm_mock(lookup_reply(n))
  llm_mock(park_reply(1))
  llm_mock({text: "all done"})
  const h = sub_agent_run("Collect.", {provider: "mock", background: true, tools: tools(),
    max_iterations: n + 10})
  const s = wait_agent(h)
  println(s.status)
  println(json_stringify(s.transcript))
}
"""
)

# cold-load the parked worker in a fresh runtime, show its transcript, resume it: one more
# lookup turn and a park (argv[1] "park"), or the answer
RESUME = (
    TOOLS
    + """
pipeline main() {
  if len(argv()) > 1 && argv()[1] == "park" {
    llm_mock(lookup_reply(99))
    llm_mock(park_reply(9))
  } else {
    llm_mock({text: "all done"})
  }
  const s = load_agent(argv()[0])
  println(s.status)
  println(json_stringify(s.transcript))
  resume_agent(s.id, {input: "go on"})
  const r = wait_agent(s.id)
  println(r.status)
  println(len(r.transcript.messages))
}
"""
)


def _run(run_harn: RunHarn, source: str, *argv: str) -> list[str]:
    path = "<resume>" if source is RESUME else "<park>"
    out, _ = run_harn(source, path=path, setup=lambda rt: rt.argv.extend(argv))
    return lines(out)


def _transcript_file(snap: Path) -> Path:
    (tfile,) = snap.parent.glob(f"{snap.stem}.transcript-*.jsonl")
    return tfile


def _park(run_harn: RunHarn, state_dir: Path, n: int) -> tuple[Path, list[str]]:
    got = _run(run_harn, PARK, str(n))
    assert got[0] == "suspended", got
    (snap,) = snapshots(state_dir)
    return snap, got


def test_the_transcript_is_kept_once_beside_the_snapshot(
    run_harn: RunHarn, state_dir: Path
) -> None:
    snap, got = _park(run_harn, state_dir, 3)
    doc = load(snap)
    tfile = _transcript_file(snap)
    assert stat.S_IMODE(tfile.stat().st_mode) == 0o600
    rec = doc["transcript_file"]
    assert rec["name"] == tfile.name and rec["bytes"] == tfile.stat().st_size
    # nothing of the conversation is in the snapshot: the lists are detached
    text = snap.read_text()
    assert "found: item 0" not in text and "Looking up 0" not in text
    assert doc["transcript"]["messages"] == {"$ext": "transcript.messages"}
    entries = [json.loads(x) for x in tfile.read_text().splitlines()]
    assert len(entries) == rec["lines"]
    parked = json.loads(got[1])
    msgs = [v for tag, v in entries if tag == "m"]
    assert msgs == parked["messages"]
    assert rec["streams"]["m"] == len(parked["messages"])
    assert rec["streams"]["e"] == len(parked["events"])
    # each message is stored once: its `message` event is a reference to it
    derived = [v for tag, v in entries if tag == "E"]
    message_events = [e for e in parked["events"] if e["kind"] == "message"]
    assert derived == [e["index"] for e in message_events] and derived
    assert not [v for tag, v in entries if tag == "e" and v["kind"] == "message"]
    # the loop's tool-call records grow every turn too: also in the file
    assert rec["streams"]["r"] == 4  # three lookups and the park call


def test_a_cold_resume_restores_the_whole_transcript_and_appends_only_new_entries(
    run_harn: RunHarn, state_dir: Path
) -> None:
    snap, got = _park(run_harn, state_dir, 4)
    tfile = _transcript_file(snap)
    first = tfile.read_bytes()
    doc_size = snap.stat().st_size
    resumed = _run(run_harn, RESUME, str(snap), "park")
    assert resumed[0] == "suspended"
    assert json.loads(resumed[1]) == json.loads(got[1])  # messages and events, all of them
    assert resumed[2] == "suspended"  # parked again after one more turn
    # the same file, its bytes kept, the new turn's entries appended
    assert _transcript_file(snap) == tfile
    second = tfile.read_bytes()
    assert second.startswith(first) and len(second) > len(first)
    new_lines = second[len(first) :].decode().splitlines()
    assert 4 <= len(new_lines) <= 20, new_lines
    assert load(snap)["transcript_file"]["bytes"] == len(second)
    # the snapshot gains the resume's own record (history, suspension), not the transcript
    assert abs(snap.stat().st_size - doc_size) < 4096
    done = _run(run_harn, RESUME, str(snap), "finish")
    assert done[2] == "completed"
    again = json.loads(done[1])  # the second park's transcript, restored from the file
    before = json.loads(got[1])["messages"]
    assert again["messages"][: len(before)] == before
    assert int(done[3]) > len(again["messages"]) > len(before)


def test_bytes_written_per_park_do_not_grow_with_the_transcript(
    run_harn: RunHarn, state_dir: Path
) -> None:
    sizes = {}
    for n in (5, 300):
        snap, _ = _park(run_harn, state_dir, n)
        tfile = _transcript_file(snap)
        before, doc_before = tfile.stat().st_size, snap.stat().st_size
        assert _run(run_harn, RESUME, str(snap), "park")[2] == "suspended"
        sizes[n] = (tfile.stat().st_size - before, doc_before, snap.stat().st_size)
        for p in list(state_dir.iterdir()):
            p.unlink()
    appended_small, doc_small, _ = sizes[5]
    appended_big, doc_big, _ = sizes[300]
    # the second park appends one turn's entries, whatever the transcript length (the
    # numbers in them differ by a few digits); the snapshot itself stays the same size
    assert abs(appended_big - appended_small) < 64, sizes
    assert abs(doc_big - doc_small) < 1024, sizes


def test_lines_past_the_recorded_prefix_are_ignored_then_cut_off(
    run_harn: RunHarn, state_dir: Path
) -> None:
    snap, got = _park(run_harn, state_dir, 2)
    tfile = _transcript_file(snap)
    recorded = tfile.read_bytes()
    # a crash after an append, before the snapshot's rename, leaves lines past the prefix
    ghost = b'["m",{"role":"user","content":"ghost line"}]\n'
    tfile.write_bytes(recorded + ghost)
    resumed = _run(run_harn, RESUME, str(snap), "park")
    assert json.loads(resumed[1]) == json.loads(got[1])
    assert "ghost line" not in resumed[1]
    after = tfile.read_bytes()
    assert after.startswith(recorded) and b"ghost line" not in after


@pytest.mark.parametrize("damage", ["edited", "shortened", "missing"])
def test_a_damaged_transcript_file_is_refused_and_left_as_it_is(
    tmp_path: Path, damage: str
) -> None:
    (tmp_path / "p.harn").write_text(PARK, encoding="utf-8")
    env = {"HARN_WORKER_STATE_DIR": "state", "HARN_LLM_CALLS_DISABLED": "1"}
    first = harnpy("run", "p.harn", "--", "2", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    (snap,) = snapshots(tmp_path / "state")
    tfile = _transcript_file(snap)
    data = tfile.read_bytes()
    if damage == "edited":
        tfile.write_bytes(data.replace(b"Collect.", b"Cellect.", 1))
    elif damage == "shortened":
        tfile.write_bytes(data[:-10])
    else:
        tfile.unlink()
    doc_bytes = snap.read_bytes()
    t_bytes = tfile.read_bytes() if tfile.exists() else None
    r = harnpy("run", "--resume", str(snap), cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stderr
    assert "HARN-SUS-004" in r.stderr and "transcript file" in r.stderr, r.stderr
    want = {
        "edited": "changed since the snapshot was written",
        "shortened": "is shorter than the snapshot records",
        "missing": "cannot be read",
    }[damage]
    assert want in r.stderr, r.stderr
    assert snap.read_bytes() == doc_bytes
    assert (tfile.read_bytes() if tfile.exists() else None) == t_bytes


def _transcript(n: int, tid: str = "transcript_seeded") -> dict[str, Any]:
    """A transcript of ``n`` messages shaped as ``append_message`` builds it (built in
    linear time: appending one message at a time copies the lists)."""
    ms: list[Any] = []
    es: list[Any] = []
    for i in range(n):
        m = {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 8}
        ms.append(m)
        es.append({"kind": "message", **m, "index": i, "visibility": "public"})
    return {
        "_type": "transcript",
        "id": tid,
        "messages": ms,
        "events": es,
        "summary": None,
        "metadata": {},
        "assets": [],
        "state": "active",
    }


def test_a_replaced_transcript_starts_a_new_file(tmp_path: Path) -> None:
    from harnpy.lifecycle import transcript_store
    from harnpy.runtime.runtime import Runtime

    rt = Runtime(stdout=lambda s: None)
    snap = str(tmp_path / "worker_x.json")
    t = _transcript(3)
    p1 = transcript_store.plan(rt, snap, t)
    assert p1 is not None and p1.fresh
    p1.write()
    p1.commit(rt)
    # extended by one message (the same objects first): appended to the same file
    m = {"role": "user", "content": "more"}
    t2 = {
        **t,
        "messages": [*t["messages"], m],
        "events": [*t["events"], {"kind": "message", **m, "index": 3, "visibility": "public"}],
    }
    p2 = transcript_store.plan(rt, snap, t2)
    assert p2 is not None and not p2.fresh and p2.new.name == p1.new.name
    assert p2.data.count(b"\n") == 2  # the message and ["E", 3]
    p2.write()
    p2.commit(rt)
    # equal values but other objects (a compaction, a replaced transcript): a new generation
    p3 = transcript_store.plan(rt, snap, _transcript(4))
    assert p3 is not None and p3.fresh and p3.new.name != p1.new.name
    p3.write()
    p3.commit(rt)
    transcript_store.sweep(snap, p3.new.name)
    assert [f.name for f in tmp_path.glob("worker_x.transcript-*")] == [p3.new.name]


def test_an_entry_that_is_not_self_contained_keeps_the_transcript_inside(
    tmp_path: Path,
) -> None:
    from harnpy.lifecycle import transcript_store
    from harnpy.runtime.runtime import Runtime

    rt = Runtime(stdout=lambda s: None)
    shared: list[Any] = [1, 2]
    t = _transcript(1)
    t["messages"].append({"role": "user", "content": [shared, shared]})  # sharing inside
    assert transcript_store.plan(rt, str(tmp_path / "w.json"), t) is None


BIG_PARK = """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "big"}}]})
  llm_mock({text: "after resume"})
  const h = sub_agent_run("Go on.", {provider: "mock", background: true, session_id: "big",
    max_iterations: 3, compaction: false})
  println(wait_agent(h).status)
}
"""


@pytest.mark.slow
def test_a_worker_with_100000_messages_parks_and_resumes(
    run_harn: RunHarn, state_dir: Path
) -> None:
    n = 100_000

    def seed(rt: Any) -> None:
        services(rt).sessions["big"] = _transcript(n)

    out, _ = run_harn(BIG_PARK, path="<park>", setup=seed)
    assert lines(out) == ["suspended"]
    (snap,) = snapshots(state_dir)
    assert snap.stat().st_size < 64 * 1024  # the snapshot stays small
    assert _transcript_file(snap).stat().st_size > 4 * 1024 * 1024
    got = _run(run_harn, RESUME, str(snap), "finish")
    assert got[0] == "suspended"
    restored = json.loads(got[1])
    assert len(restored["messages"]) == n + 3  # the task, the park call and its result
    assert len(restored["events"]) >= n + 3
    assert restored["messages"][n - 1]["content"] == f"message {n - 1} " * 8
    assert got[2] == "completed" and int(got[3]) > n + 3


def _stored_worker(store_url: str) -> tuple[Any, str]:
    """The SQL store ``store_url`` and the one worker checkpoint it holds."""
    from harnpy.lifecycle.checkpoint_store import WORKER_MODES
    from harnpy.store import open_store

    st = open_store(store_url)
    (info,) = [i for i in st.list_checkpoints() if i.mode in WORKER_MODES]
    return st, info.worker_id


def _row_count(st: Any, worker_id: str) -> int:
    with st.read() as c:
        return int(
            c.all("SELECT count(*) FROM transcript_rows WHERE worker_id = ?", (worker_id,))[0][0]
        )


def test_in_a_store_the_rows_added_per_park_do_not_grow_with_the_transcript(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    monkeypatch.setenv("HARNPY_STORE", store_url)
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", "")  # checkpoints are rows of the store
    added = {}
    for n in (5, 300):
        got = _run(run_harn, PARK, str(n))
        assert got[0] == "suspended", got
        st, wid = _stored_worker(store_url)
        rows, (_, body) = _row_count(st, wid), st.get_checkpoint(wid)
        assert _run(run_harn, RESUME, st.checkpoint_ref(wid), "park")[2] == "suspended"
        added[n] = (_row_count(st, wid) - rows, len(body), len(st.get_checkpoint(wid)[1]))
        st.delete_checkpoint(wid)
    # one turn's entries per park whatever the transcript length; the checkpoint's body
    # stays the same size
    assert added[5][0] == added[300][0] > 0, added
    assert abs(added[300][1] - added[5][1]) < 1024, added


@pytest.mark.slow
def test_a_worker_with_100000_messages_parks_and_resumes_in_a_store(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch, store_url: str
) -> None:
    monkeypatch.setenv("HARNPY_STORE", store_url)
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", "")
    n = 100_000

    def seed(rt: Any) -> None:
        services(rt).sessions["big"] = _transcript(n)

    out, _ = run_harn(BIG_PARK, path="<park>", setup=seed)
    assert lines(out) == ["suspended"]
    st, wid = _stored_worker(store_url)
    assert len(st.get_checkpoint(wid)[1]) < 64 * 1024  # the checkpoint stays small
    assert _row_count(st, wid) > n
    got = _run(run_harn, RESUME, st.checkpoint_ref(wid), "finish")
    assert got[0] == "suspended"
    restored = json.loads(got[1])
    assert len(restored["messages"]) == n + 3
    assert restored["messages"][n - 1]["content"] == f"message {n - 1} " * 8
    assert got[2] == "completed" and int(got[3]) > n + 3
