"""Turn boundaries: scheduling switch point and the snapshot-everywhere round trip."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnpy.lifecycle import turns
from tests.agents.conftest import RunHarn, lines


def test_turn_boundary_returns_its_argument_and_lets_others_run(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
fn worker(ch, name) {
  for i in range(3) {
    send(ch, name + to_string(i))
    const v = __turn_boundary(i)
    require v == i, "turn boundary changed its argument"
  }
}
pipeline main() {
  const ch = channel("log", 100)
  const a = spawn { worker(ch, "A") }
  const b = spawn { worker(ch, "B") }
  await(a)
  await(b)
  var seen = []
  for i in range(6) { seen = seen + [try_receive(ch)] }
  println(seen)
}
"""
    )
    assert lines(out) == ["[A0, B0, A1, B1, A2, B2]"]


class _Recorder:
    """Wraps :func:`turns.roundtrip_thread`, checking each round trip really replaced the
    frames and that no native frame was on the stack."""

    def __init__(self) -> None:
        self.docs: list[dict[str, Any]] = []
        self.original = turns.roundtrip_thread

    def __call__(self, thread: Any) -> dict[str, Any]:
        before = thread.frame
        fr = before
        while fr is not None:
            assert not fr.native, f"native frame {fr.builtin} at a turn boundary"
            fr = fr.parent
        doc = self.original(thread)
        assert thread.frame is not before
        assert thread.frame.code is before.code and thread.frame.pc == before.pc
        self.docs.append(doc)
        return doc


def test_snapshot_everywhere_round_trips_every_turn(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = """
fn tools() {
  return tool_define(tool_registry(), "inc", "add one", {
    parameters: {n: "int"},
    handler: { args -> args.n + 1 },
  })
}
pipeline main() {
  llm_mock({tool_calls: [{name: "inc", arguments: {n: 1}}]})
  llm_mock({tool_calls: [{name: "inc", arguments: {n: 2}}]})
  llm_mock({text: "three"})
  let r = agent_loop("count", nil, {provider: "mock", tools: tools()})
  println(r.status + " " + r.text + " " + to_string(r.tool_calls.map({ c -> c.result })))
  println(len(transcript_messages(r.transcript)))
}
"""
    plain, _ = run_harn(program)
    recorder = _Recorder()
    monkeypatch.setattr(turns, "roundtrip_thread", recorder)
    monkeypatch.setenv("HARNPY_SNAPSHOT_EVERYWHERE", "1")
    snap, _ = run_harn(program)
    assert snap == plain
    assert lines(plain) == ["done three [2, 3]", "6"]
    assert len(recorder.docs) == 3  # one boundary per turn
    doc = recorder.docs[-1]
    text = json.dumps(doc)
    assert doc["_type"] == "harnpy_snapshot"
    assert '"agent_loop_state"' in text  # the loop state is in the snapshot as data
    assert any(m["key"] == "std/agent/_loop" for m in doc["modules"])


def test_snapshot_everywhere_in_workers(run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr(turns, "roundtrip_thread", recorder)
    monkeypatch.setenv("HARNPY_SNAPSHOT_EVERYWHERE", "1")
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "w1", match: "*one*"})
  llm_mock({text: "w2", match: "*two*"})
  let a = sub_agent_run("one", {provider: "mock", background: true})
  let b = sub_agent_run("two", {provider: "mock", background: true})
  println(wait_agent([a, b]).map({ s -> s.result.summary }))
}
"""
    )
    assert lines(out) == ["[w1, w2]"]
    assert len(recorder.docs) == 2
    # each round trip was of a worker's own thread (named after the worker id)
    names = [d["thread"]["name"] for d in recorder.docs]
    assert all(n.startswith("worker_") for n in names) and len(set(names)) == 2


def test_snapshot_mode_flag() -> None:
    assert turns.SNAPSHOT_ENV == "HARNPY_SNAPSHOT_EVERYWHERE"
