"""``harnpy run --resume SNAP --json``: the tool_call / tool_result / hook events of the
resumed loop (lifecycle.md 9.1), their order with the stdout the tools print, ``--quiet``,
and the run-event sink they come from (none installed: nothing is built)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnpy.lifecycle.services import run_event_sink, services
from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy

ENV = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": "state"}

TOOLS = """
tool say(msg: string) {
  description "print a line"
  println("said " + msg)
  return {echo: msg}
}
tool boom(n: int) {
  description "always fails"
  println("about to fail")
  throw "kaboom " + to_string(n)
}
tool secret() {
  description "denied by the loop's policy"
  println("never printed")
  return "nope"
}
tool check(kind: string) {
  description "fire a session hook"
  register_session_hook("SessionIdle", fn(p) {
    if p.kind == "deny" { return {decision: "deny", reason: "no"} }
    return nil
  })
  return __host_fire_session_hook("SessionIdle", {kind: kind}).control
}
"""


def _program(calls: list[dict[str, Any]]) -> str:
    turn = json.dumps(calls).replace('"id"', "id").replace('"name"', "name")
    turn = turn.replace('"arguments"', "arguments")
    return TOOLS + (
        "pipeline main() {\n"
        '  llm_mock({tool_calls: [{id: "p", name: "agent_await_resumption", '
        'arguments: {reason: "waiting"}}]})\n'
        f"  llm_mock({{tool_calls: {turn}}})\n"
        '  llm_mock({text: "final answer ##DONE##"})\n'
        '  const r = agent_loop("do it", nil, {provider: "mock", persistent: true, '
        'max_iterations: 5, tools: [say, boom, secret, check], denied_tools: ["secret"]})\n'
        "  println(r.snapshot_path)\n"
        "}\n"
    )


def _resume_events(
    tmp_path: Path, calls: list[dict[str, Any]], *flags: str
) -> list[dict[str, Any]]:
    """Park a root loop whose next turn makes ``calls``, resume it with ``--json FLAGS``;
    returns the ``data`` of every envelope (checked: one per line, schemaVersion 1)."""
    (tmp_path / "main.harn").write_text(_program(calls), encoding="utf-8")
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    snap = first.stdout.strip().splitlines()[-1]
    p = harnpy("run", "--resume", snap, "--json", *flags, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    envelopes = [json.loads(line) for line in p.stdout.splitlines()]
    assert all(e["schemaVersion"] == 1 for e in envelopes)
    events = [e["data"] for e in envelopes]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["event_type"] == "result"
    assert events[-1]["value"]["status"] == "completed"
    return events


def _brief(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for e in events[:-1]:
        kind = e["event_type"]
        out.append((kind, e["payload"] if kind == "stdout" else e.get("call_id", e.get("name"))))
    return out


def test_tool_events_bracket_the_stdout_of_their_tool(tmp_path: Path) -> None:
    events = _resume_events(
        tmp_path,
        [
            {"id": "a", "name": "say", "arguments": {"msg": "one"}},
            {"id": "b", "name": "say", "arguments": {"msg": "two"}},
        ],
    )
    assert _brief(events) == [
        ("tool_call", "a"),
        ("stdout", "said one\n"),
        ("tool_result", "a"),
        ("tool_call", "b"),
        ("stdout", "said two\n"),
        ("tool_result", "b"),
    ]
    call, result = events[0], events[2]
    assert call["name"] == "say" and call["args"] == {"msg": "one"}
    assert call["started_at"].endswith("Z") and "T" in call["started_at"]
    assert result == {
        "seq": 3,
        "event_type": "tool_result",
        "call_id": "a",
        "name": "say",
        "ok": True,
        "result": {"echo": "one"},
        "status": "ok",
        "denied": False,
    }


def test_tool_error_is_a_failed_tool_result(tmp_path: Path) -> None:
    events = _resume_events(tmp_path, [{"id": "x", "name": "boom", "arguments": {"n": 7}}])
    assert _brief(events) == [
        ("tool_call", "x"),
        ("stdout", "about to fail\n"),
        ("tool_result", "x"),
    ]
    result = events[2]
    assert result["ok"] is False and result["status"] == "error" and result["denied"] is False
    assert result["error"] == "kaboom 7"
    assert result["result"] == "Error: kaboom 7"  # what the model got back


def test_policy_denied_call_is_reported_denied(tmp_path: Path) -> None:
    events = _resume_events(
        tmp_path,
        [
            {"id": "d", "name": "secret", "arguments": {}},
            {"id": "u", "name": "nosuch", "arguments": {}},
        ],
    )
    assert _brief(events) == [
        ("tool_call", "d"),
        ("tool_result", "d"),
        ("tool_call", "u"),
        ("tool_result", "u"),
    ]
    denied, unknown = events[1], events[3]
    assert denied["ok"] is False and denied["denied"] is True and denied["status"] == "denied"
    assert "denied" in denied["error"] and not denied["error"].startswith("Error: ")
    assert unknown["ok"] is False and unknown["denied"] is False
    assert unknown["status"] == "rejected" and "unknown tool" in unknown["error"]


def test_quiet_keeps_tool_events_and_seq_has_no_gaps(tmp_path: Path) -> None:
    events = _resume_events(
        tmp_path,
        [
            {"id": "a", "name": "say", "arguments": {"msg": "one"}},
            {"id": "x", "name": "boom", "arguments": {"n": 1}},
        ],
        "--quiet",
    )
    assert [e["event_type"] for e in events] == [
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "result",
    ]


def test_hooks_fired_in_the_resumed_run_are_hook_events(tmp_path: Path) -> None:
    events = _resume_events(
        tmp_path,
        [
            {"id": "h1", "name": "check", "arguments": {"kind": "ok"}},
            {"id": "h2", "name": "check", "arguments": {"kind": "deny"}},
        ],
    )
    hooks = [e for e in events if e["event_type"] == "hook"]
    assert [(h["name"], h["phase"]) for h in hooks] == [
        ("SessionIdle", "allow"),
        ("SessionIdle", "decision:deny"),
    ]
    assert hooks[1]["payload"] == {"kind": "deny", "event": "SessionIdle"}
    assert _brief(events)[:3] == [
        ("tool_call", "h1"),
        ("hook", "SessionIdle"),
        ("tool_result", "h1"),
    ]


def test_run_without_json_has_no_sink_and_prints_no_events(tmp_path: Path) -> None:
    rt = Runtime()
    assert run_event_sink(rt) is None
    (tmp_path / "main.harn").write_text(
        _program([{"id": "a", "name": "say", "arguments": {"msg": "one"}}]), encoding="utf-8"
    )
    first = harnpy("run", "main.harn", cwd=tmp_path, env=ENV)
    snap = first.stdout.strip().splitlines()[-1]
    p = harnpy("run", "--resume", snap, cwd=tmp_path, env=ENV)
    assert p.returncode == 0, p.stderr
    # the tool's output, then the completed loop's final text (its visible text keeps a bare
    # ##DONE##, as Harn's does); no event lines
    assert p.stdout == "said one\nfinal answer ##DONE##\n"


def test_the_sink_observes_any_loop_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink is a runtime service, not a CLI special case: an in-process loop with an
    installed sink reports to it."""
    monkeypatch.setenv("HARN_LLM_CALLS_DISABLED", "1")
    seen: list[tuple[str, dict[str, Any]]] = []
    out: list[str] = []
    rt = Runtime(stdout=out.append, stderr=out.append)
    services(rt).run_events = lambda kind, data: seen.append((kind, data))
    src = TOOLS + (
        "pipeline main() {\n"
        '  llm_mock({tool_calls: [{id: "a", name: "say", arguments: {msg: "hi"}}]})\n'
        '  llm_mock({text: "done"})\n'
        '  const r = agent_loop("x", nil, {provider: "mock", tools: [say]})\n'
        "  println(r.status)\n"
        "}\n"
    )
    rt.run_module(rt.load_main("<test>", src))
    assert [k for k, _ in seen] == ["tool_call", "tool_result"]
    assert seen[1][1]["result"] == {"echo": "hi"}
    assert "".join(out) == "said hi\ndone\n"
