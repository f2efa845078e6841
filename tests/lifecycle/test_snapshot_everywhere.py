"""The snapshot-everywhere mode (``HARNPY_SNAPSHOT_EVERYWHERE=1``, ``pytest
--snapshot-everywhere``): every turn boundary snapshots the loop, restores it into a fresh
thread and continues; programs print exactly what they print without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harnpy.lifecycle import turns
from tests.conftest import harnpy
from tests.lifecycle.conftest import RunHarn, lines

PROGRAMS = {
    "root_loop_with_closure_tools": """
fn tools(prefix) {
  let count = [0]
  return tool_define(tool_registry(), "note", "n", {parameters: {text: "string"},
    handler: { a -> prefix + a.text + " #" + to_string(len(count)) }})
}
pipeline main() {
  llm_mock({tool_calls: [{id: "a", name: "note", arguments: {text: "one"}}]})
  llm_mock({tool_calls: [{id: "b", name: "note", arguments: {text: "two"}}]})
  llm_mock({text: "done"})
  const r = agent_loop("go", nil, {provider: "mock", tools: tools(">"), max_iterations: 5})
  println(r.status + " " + to_string(r.llm.iterations))
  println(r.tool_calls.map({ c -> c.result }))
}
""",
    "workers_park_and_resume": """
pipeline main() {
  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", arguments: {reason: "r"}}]})
  llm_mock({text: "w1 done"})
  llm_mock({text: "w2 done"})
  const a = sub_agent_run("a", {provider: "mock", background: true})
  println(wait_agent(a).status)
  const b = sub_agent_run("b", {provider: "mock", background: true})
  resume_agent(a, "go")
  println(wait_agent([a, b]).map({ s -> s.status + ":" + s.result.summary }))
}
""",
    "channel_shared_with_a_task": """
fn tools(ch) {
  return tool_define(tool_registry(), "send", "s", {parameters: {v: "int"},
    handler: { a -> send(ch, a.v); return "sent" }})
}
pipeline main() {
  const ch = channel("c", 10)
  const reader = spawn {
    var got = []
    for i in range(2) { got = got + [receive(ch)] }
    got
  }
  llm_mock({tool_calls: [{id: "a", name: "send", arguments: {v: 1}}]})
  llm_mock({tool_calls: [{id: "b", name: "send", arguments: {v: 2}}]})
  llm_mock({text: "done"})
  println(agent_loop("go", nil, {provider: "mock", tools: tools(ch), max_iterations: 4}).status)
  println(await(reader))
}
""",
    "rng_shared_by_the_script_and_a_tool": """
fn tools(r) {
  return tool_define(tool_registry(), "roll", "r", {parameters: {},
    handler: { a -> to_string(random_int(r, 1, 1000000)) }})
}
pipeline main() {
  const r = rng_seed(7)
  llm_mock({tool_calls: [{id: "a", name: "roll", arguments: {}}]})
  llm_mock({tool_calls: [{id: "b", name: "roll", arguments: {}}]})
  llm_mock({text: "done"})
  const res = agent_loop("go", nil, {provider: "mock", tools: tools(r), max_iterations: 4})
  println(res.tool_calls.map({ c -> c.result }))
  println(random_int(r, 1, 1000000))
}
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_output_is_the_same_with_a_snapshot_at_every_turn(name: str, tmp_path: Path) -> None:
    prog = tmp_path / f"{name}.harn"
    prog.write_text(PROGRAMS[name], encoding="utf-8")
    env = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": str(tmp_path / "w")}
    plain = harnpy("run", str(prog), cwd=tmp_path, env={**env, "HARNPY_SNAPSHOT_EVERYWHERE": ""})
    every = harnpy("run", str(prog), cwd=tmp_path, env={**env, "HARNPY_SNAPSHOT_EVERYWHERE": "1"})
    assert plain.returncode == 0, plain.stderr
    assert every.returncode == 0, every.stderr
    assert every.stdout == plain.stdout


def test_every_turn_boundary_round_trips(
    run_harn: RunHarn, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real = turns.roundtrip_thread

    def counting(thread: Any) -> dict[str, Any]:
        before = thread.frame
        doc = real(thread)
        assert thread.frame is not before  # the frames were replaced by decoded ones
        seen.append(len(doc["heap"]))
        return doc

    monkeypatch.setattr(turns, "roundtrip_thread", counting)
    monkeypatch.setenv("HARNPY_SNAPSHOT_EVERYWHERE", "1")
    out, _ = run_harn(PROGRAMS["root_loop_with_closure_tools"])
    assert lines(out)[0] == "done 3"
    assert len(seen) == 3  # one round trip per turn


def test_pytest_option_sets_the_mode(pytestconfig: pytest.Config) -> None:
    from tests.conftest import snapshot_everywhere_mode

    if pytestconfig.getoption("--snapshot-everywhere"):
        assert snapshot_everywhere_mode()
    else:
        pytest.skip("the session runs without --snapshot-everywhere")
