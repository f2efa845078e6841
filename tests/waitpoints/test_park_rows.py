"""A program parked on a durable waitpoint inside an agent loop stores its transcript (and
the mock call log) as rows appended per park, not inside every checkpoint (issue 10's
benchmark goal, issue 15's long transcripts): the bytes a park writes do not grow with the
transcript, a resume in a fresh runtime gets every message and model call back, and rows
changed behind the checkpoint's back are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

PROGRAM = """
import { create, wait } from "std/waitpoint"

fn lookup_reply(i) {
  return {text: "Looking up item " + to_string(i),
    tool_calls: [{id: "call_" + to_string(i), name: "lookup", arguments: {q: "item " + to_string(i)}}]}
}

fn park_reply(i) {
  return {text: "Waiting for approval of item " + to_string(i),
    tool_calls: [{id: "park_" + to_string(i), name: "approve", arguments: {item: i}}]}
}

tool lookup(q: string) -> string {
  description "Look something up"
  return "found: the figures for " + q + " are stable"
}

tool approve(item: int) -> string {
  description "Wait until an editor approves the item"
  let note = "asked for " + to_string(item)
  let done = wait(create({id: "ok-" + argv()[0] + "-" + to_string(item)}))
  if item + 1 < to_int(argv()[1]) {
    llm_mock(park_reply(item + 1))
  } else {
    llm_mock({text: "all approved"})
  }
  return note + ": " + to_string(done.value)
}

pipeline main() {
  const warm = to_int(argv()[0])
  for i in range(warm) {
    llm_mock(lookup_reply(i))
  }
  llm_mock(park_reply(0))
  let r = agent_loop("Collect the figures, then publish them.", nil,
    {provider: "mock", tools: tool_registry([lookup, approve]), max_iterations: warm + 20})
  let calls = llm_mock_calls()
  println("status " + r.status)
  println("messages " + to_string(len(r.transcript.messages)))
  println("events " + to_string(len(r.transcript.events)))
  println("calls " + to_string(len(calls)))
  println("last call messages " + to_string(len(calls[len(calls) - 1].messages)))
  let trace = agent_trace()
  println("trace " + json_stringify(trace.map({ e -> e.type + ":" + to_string(e?.tool_name ?? e?.iteration) })))
  let tools = r.transcript.messages.filter({ m -> m.role == "tool" && starts_with(m.content, "asked") })
  println("approvals " + json_stringify(tools.map({ m -> m.content })))
}
"""


class Writes:
    """What each ``put_checkpoint`` of a run wrote: (body bytes, row bytes, row count), and
    per park the rows of each stream and the body itself."""

    def __init__(self) -> None:
        self.parks: list[tuple[int, int, int]] = []
        self.streams: list[dict[str, int]] = []
        self.bodies: list[bytes] = []


def _run(store_url: str, tmp_path: Path, warm: int, parks: int) -> tuple[list[str], Writes]:
    from harnpy.lifecycle.waitpoints import durable
    from harnpy.lifecycle.waitpoints.state import state_of
    from harnpy.runtime.errors import SnapshotExit
    from harnpy.runtime.runtime import Runtime
    from harnpy.store import open_store

    store = open_store(store_url)
    writes = Writes()
    real_put = store.put_checkpoint

    def spy(worker_id: str, body: bytes, meta: Any, **k: Any) -> int:
        t = k.get("transcript")
        if meta.status == "suspended":
            rows = t.rows if t is not None else []
            writes.parks.append((len(body), sum(len(r[2]) for r in rows), len(rows)))
            per: dict[str, int] = {}
            for name, _, _ in rows:
                per[name] = per.get(name, 0) + 1
            writes.streams.append(per)
            writes.bodies.append(body)
        return real_put(worker_id, body, meta, **k)

    store.put_checkpoint = spy  # type: ignore[method-assign]
    src = tmp_path / f"agent_{warm}.harn"
    src.write_text(PROGRAM, encoding="utf-8")
    out: list[str] = []
    rt = Runtime(argv=[str(warm), str(parks)], stdout=out.append, stderr=out.append)
    state_of(rt).use_store(store)
    with pytest.raises(SnapshotExit):
        rt.run_module(rt.load_main(str(src), PROGRAM))
        pytest.fail("did not park: " + "".join(out))
    worker_id = state_of(rt).worker_id()
    for i in range(parks):
        assert store.complete_waitpoint(f"ok-{warm}-{i}", f"yes {i}")
        # a fresh runtime each time, as another process would resume it
        r = durable.resume_checkpoint(store, worker_id, stdout=out.append, stderr=out.append)
        assert r is not None, "".join(out)
        assert r.status == ("parked" if i + 1 < parks else "completed"), (r, "".join(out))
    return "".join(out).splitlines(), writes


def test_park_bytes_do_not_grow_with_the_transcript(store_url: str, tmp_path: Path) -> None:
    short_out, short = _run(store_url, tmp_path, warm=10, parks=4)
    long_out, long = _run(store_url, tmp_path, warm=300, parks=4)
    assert len(short.parks) == len(long.parks) == 4
    # the first park writes the whole transcript as rows...
    assert long.parks[0][1] > 20 * short.parks[0][1] / 2
    # ...every later one only the turn that is new, and a checkpoint body of the same size:
    # 30x the transcript, the same bytes per park (up to a few digits more in counters)
    for (sb, sr, sn), (lb, lr, ln) in zip(short.parks[1:], long.parks[1:]):
        assert sn == ln, (short.parks, long.parks)
        assert abs(lr - sr) <= 64, (short.parks, long.parks)
        assert abs(lb - sb) <= 256, (short.parks, long.parks)
    # and the last park's bytes are a small fraction of what the transcript holds
    assert sum(long.parks[-1][:2]) * 10 < long.parks[0][1]
    messages = 1 + 2 * 300 + 2 * 4 + 1
    assert "status done" in long_out, long_out
    assert f"messages {messages}" in long_out, long_out
    assert f"calls {300 + 4 + 1}" in long_out, long_out
    assert f"last call messages {messages - 1}" in long_out, long_out
    assert long_out[-1] == (
        'approvals ["asked for 0: yes 0","asked for 1: yes 1","asked for 2: yes 2",'
        '"asked for 3: yes 3"]'
    )


def test_the_rows_restore_the_transcript_and_the_mock_log(store_url: str, tmp_path: Path) -> None:
    """Resumed from rows in fresh runtimes three times, the run ends with the transcript,
    events and model-call log it would have had without parking."""
    parked, _ = _run(store_url, tmp_path, warm=5, parks=3)
    from harnpy.runtime.runtime import Runtime

    # the same program with every approval already there: never parks
    plain = PROGRAM.replace(
        'let done = wait(create({id: "ok-" + argv()[0] + "-" + to_string(item)}))',
        'let done = {value: "yes " + to_string(item)}',
    )
    out: list[str] = []
    rt = Runtime(argv=["5", "3"], stdout=out.append, stderr=out.append)
    rt.run_module(rt.load_main(str(tmp_path / "plain.harn"), plain))
    assert parked[-7:] == "".join(out).splitlines()[-7:]


def test_the_agent_trace_is_rows_and_the_park_body_stays_flat(
    store_url: str, tmp_path: Path
) -> None:
    """The agent_loop turns' trace events (one llm_call and one tool_execution per turn)
    are appended as rows of stream ``agent.trace`` per park, not kept in the checkpoint's
    body: the body of a park after 300 turns is the size of one after 30; and the fresh
    runtimes that resumed the run answer agent_trace() with every event from before the
    parks."""
    from harnpy.lifecycle.waitpoints.park_rows import TRACE

    short_out, short = _run(store_url, tmp_path, warm=30, parks=3)
    long_out, long = _run(store_url, tmp_path, warm=300, parks=3)
    # the first park stores the whole trace (2 events per lookup turn, the park turn's
    # llm_call): rows, not body
    assert long.streams[0][TRACE] == 2 * 300 + 1, long.streams
    assert short.streams[0][TRACE] == 2 * 30 + 1, short.streams
    # every later park appends the same two events (the approve call that parked before,
    # the model call that asks for the next one), whatever came before
    for s, lg in zip(short.streams[1:], long.streams[1:]):
        assert s[TRACE] == lg[TRACE] == 2, (short.streams, long.streams)
    for sb, lb in zip(short.bodies, long.bodies):
        assert b"tool_execution" not in lb and b"llm_call" not in lb
        assert abs(len(lb) - len(sb)) <= 256, (
            [len(b) for b in short.bodies],
            [len(b) for b in long.bodies],
        )
    (trace_line,) = [x for x in long_out if x.startswith("trace ")]
    events = json.loads(trace_line[len("trace ") :])
    assert events[:4] == [
        "llm_call:1",
        "tool_execution:lookup",
        "llm_call:2",
        "tool_execution:lookup",
    ]
    assert events.count("tool_execution:lookup") == 300
    assert events.count("tool_execution:approve") == 3
    assert sum(e.startswith("llm_call:") for e in events) == 300 + 3 + 1
    assert events[-1] == "loop_complete:nil"


def test_changed_rows_are_refused_and_the_park_is_kept(store_url: str, tmp_path: Path) -> None:
    from harnpy.lifecycle.waitpoints import durable
    from harnpy.lifecycle.waitpoints.state import state_of
    from harnpy.runtime.errors import SnapshotExit
    from harnpy.runtime.runtime import Runtime
    from harnpy.store import open_store

    store = open_store(store_url)
    src = tmp_path / "agent.harn"
    src.write_text(PROGRAM, encoding="utf-8")
    rt = Runtime(argv=["3", "1"], stdout=lambda _t: None, stderr=lambda _t: None)
    state_of(rt).use_store(store)
    with pytest.raises(SnapshotExit):
        rt.run_module(rt.load_main(str(src), PROGRAM))
    worker_id = state_of(rt).worker_id()
    with store.txn() as c:
        n = c.run(
            "UPDATE transcript_rows SET body = ? WHERE worker_id = ? AND stream = ? AND seq = ?",
            (b'["m",{"role":"user","content":"something else"}]', worker_id, "loop0.m", 0),
        )
    assert n == 1
    assert store.complete_waitpoint("ok-3-0", "yes")
    r = durable.resume_checkpoint(store, worker_id, stdout=lambda _t: None)
    assert r is not None and r.status == "refused", r
    assert "E404" in (r.message or "") and "loop0.m" in (r.message or ""), r
    info = store.checkpoint_info(worker_id)
    assert info is not None and info.status == "suspended"  # left as it was, claimable again
