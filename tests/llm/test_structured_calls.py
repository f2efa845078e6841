"""Structured LLM calls (harnpy.lifecycle.structured_calls): JSON extraction, the schema
loop, ``llm_call_structured`` / ``_safe`` / ``_result``, the repair pass and ``agent_trace``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnpy.lifecycle.llm_builtins import Again
from harnpy.lifecycle.structured_calls import (
    NO_JSON,
    SchemaLoop,
    correction_prompt,
    extract_json_value,
    normalize_output_options,
    schema_loop,
)
from harnpy.llm.types import LlmRequest, LlmResponse, Message
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy

SCHEMA = (
    '{type: "object", required: ["verdict"], properties: {verdict: {type: "string"}, '
    'note: {type: "string"}}}'
)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):
    """Run a Harn program in-process on the mock provider; returns its output lines."""
    monkeypatch.setenv("HARN_LLM_CALLS_DISABLED", "1")

    def go(source: str) -> list[str]:
        out: list[str] = []
        rt = Runtime(stdout=out.append, stderr=out.append)
        rt.run_module(rt.load_main("<test>", source))
        return "".join(out).rstrip("\n").split("\n")

    return go


def mock(text: str) -> str:
    """An ``llm_mock`` call answering ``text``."""
    return f"llm_mock({{text: {json.dumps(text)}}})\n"


# ------------------------------------------------------------------ extraction


def test_extraction_whole_fenced_and_prose() -> None:
    assert extract_json_value('{"a": 1}') == (True, {"a": 1}, False, "")
    assert extract_json_value('Sure:\n```json\n{"a": 2}\n```\nbye') == (True, {"a": 2}, True, "")
    assert extract_json_value('I think {"a": [1, {"b": 3}]} is right {x}') == (
        True,
        {"a": [1, {"b": 3}]},
        True,
        "",
    )
    # a bracket that does not start JSON is skipped; the next one that does is taken
    assert extract_json_value('see [note] then ["x", 1]')[:3] == (True, ["x", 1], True)


def test_extraction_refuses_prose_nan_and_scalars_in_prose() -> None:
    assert extract_json_value("no json here") == (False, None, False, NO_JSON)
    assert extract_json_value("NaN")[0] is False
    # a bare scalar counts only as the whole answer, not when it sits in prose
    assert extract_json_value("42") == (True, 42, False, "")
    assert extract_json_value("the answer is 42")[0] is False


def test_correction_prompt_names_problems_and_schema() -> None:
    text = correction_prompt(["at root: missing required key 'v'"], {"type": "object"})
    assert "missing required key 'v'" in text and "schema" in text
    assert '{"type": "object"}' in text
    assert "JSON schema" not in correction_prompt(["p"], None)


# ------------------------------------------------------------------ llm_call_structured


def test_structured_returns_data_and_retries_without_replaying_the_bad_answer(run) -> None:
    out = run(
        mock('{"note": "x"}')
        + mock('{"verdict": "YES"}')
        + f"let s = {SCHEMA}\n"
        + 'println(llm_call_structured("Grade", s, {provider: "mock", system: "be strict"}))\n'
        "let calls = llm_mock_calls()\n"
        "println(len(calls))\n"
        "println(calls[1].system)\n"
        "println(len(calls[1].messages) - len(calls[0].messages))\n"
        "println(calls[1].messages.map({ m -> m.role }))\n"
    )
    assert out == ["{verdict: YES}", "2", "be strict", "1", "[user, user]"]


def test_structured_throws_schema_validation_after_retries(run) -> None:
    out = run(
        mock('{"note": "a"}')
        + mock('{"note": "b"}')
        + f"let s = {SCHEMA}\n"
        + 'let r = try { llm_call_structured("G", s, {provider: "mock", retries: 1}) }\n'
        "let e = unwrap_err(r)\n"
        "println(e.category)\n"
        "println(e.errors)\n"
        "println(e.text)\n"
        "println(len(llm_mock_calls()))\n"
    )
    assert out[0] == "schema_validation"
    assert "verdict" in out[1]
    assert out[2] == '{"note": "b"}'
    assert out[3] == "2"


def test_structured_struct_schema_builds_the_struct(run) -> None:
    out = run(
        "struct Point { x: int, y: int }\n"
        + mock('{"x": 1, "y": "two"}')
        + mock('{"x": 1, "y": 2}')
        + 'let p = llm_call_structured("pt", Point, {provider: "mock"})\n'
        "println(type_of(p))\n"
        "println(p.x + p.y)\n"
        'println(llm_mock_calls()[1].messages[1].content.contains("at y"))\n'
    )
    assert out == ["struct", "3", "true"]


def test_structured_rejects_a_non_schema(run) -> None:
    out = run(
        'let r = try { llm_call_structured("x", 5, {provider: "mock"}) }\n'
        "println(unwrap_err(r).category)\n"
        "println(unwrap_err(r).message)\n"
    )
    assert out == [
        "config",
        "llm_call_structured: schema must be a schema dict or a type, got int",
    ]


# ------------------------------------------------------------------ _safe


def test_safe_envelopes(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"verdict": "ok"}')
        + 'let a = llm_call_structured_safe("G", s, {provider: "mock"})\n'
        "println([a.ok, a.data.verdict, a.error])\n"
        + mock("prose only")
        + 'let b = llm_call_structured_safe("G", s, {provider: "mock", retries: 0})\n'
        "println([b.ok, b.data, b.error.category])\n"
        'println(b.error.message.contains("parseable JSON"))\n'
        'llm_mock({error: {category: "timeout", message: "slow"}})\n'
        'let c = llm_call_structured_safe("G", s, {provider: "mock", llm_retries: 0})\n'
        "println([c.ok, c.error.category])\n"
        'let d = llm_call_structured_safe("G", s, "nope")\n'
        "println([d.ok, d.error.category])\n"
    )
    assert out == [
        "[true, ok, nil]",
        "[false, nil, schema_validation]",
        "true",
        "[false, timeout]",
        "[false, config]",
    ]


# ------------------------------------------------------------------ _result


def test_result_missing_json_category_and_usage(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + 'llm_mock({text: "I refuse", input_tokens: 7, output_tokens: 2, model: "m9"})\n'
        + 'let r = llm_call_structured_result("G", s, {provider: "mock", schema_retries: 0})\n'
        "println([r.ok, r.error_category, r.attempts, r.raw_text])\n"
        "println([r.usage.input_tokens, r.usage.output_tokens, r.model, r.provider])\n"
    )
    assert out == ["[false, missing_json, 1, I refuse]", "[7, 2, m9, mock]"]


def test_result_repair_uses_its_overrides_and_the_raw_text(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"note": "forgot"}')
        + mock('```json\n{"verdict": "FIXED"}\n```')
        + 'let r = llm_call_structured_result("G", s, {provider: "mock", retries: 0, '
        'repair: {system: "fix it", max_tokens: 50}})\n'
        "println([r.ok, r.data.verdict, r.repaired, r.attempts, r.raw_text])\n"
        "let rep = llm_mock_calls()[1]\n"
        "println(rep.system)\n"
        'println(rep.messages[0].content.contains("forgot"))\n'
    )
    assert out == ['[true, FIXED, true, 1, {"note": "forgot"}]', "fix it", "true"]


def test_result_repair_disabled_and_config_errors(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"note": "x"}')
        + 'let r = llm_call_structured_result("G", s, {provider: "mock", retries: 0, '
        "repair: {enabled: false}})\n"
        "println([r.error_category, len(llm_mock_calls())])\n"
        'let b = llm_call_structured_result("G", s, {provider: "mock", repair: 3})\n'
        "println([b.ok, b.error_category, b.attempts])\n"
        'let c = llm_call_structured_result("G", s, {provider: "mock", schema_retries: -1})\n'
        "println([c.error_category, c.error])\n"
    )
    assert out == [
        "[schema_validation, 1]",
        "[false, config, 0]",
        "[config, llm_call_structured_result: option `schema_retries` must be a non-negative int]",
    ]


# ------------------------------------------------------------------ agent_trace


def test_agent_trace_records_calls_and_retries(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock("nothing")
        + mock('{"verdict": "ok"}')
        + 'llm_call_structured("G", s, {provider: "mock", schema_retry_nudge: false})\n'
        "let t = agent_trace()\n"
        "println(t.map({ e -> e.type }))\n"
        "println([t[1].attempt, t[1].nudge_used, t[1].errors[0]])\n"
        "println(len(llm_mock_calls()[1].messages))\n"
    )
    assert out == [
        "[llm_call, schema_retry, llm_call]",
        f"[1, false, {NO_JSON}]",
        "1",
    ]


LOOP = """
tool probe(path: string) -> string {
  description "Probe."
  return "probed " + path
}
llm_mock({tool_calls: [{id: "c1", name: "probe", arguments: {path: "a"}},
  {id: "c2", name: "nope", arguments: {}}], input_tokens: 11, output_tokens: 5})
llm_mock({tool_calls: [{id: "c3", name: "probe", arguments: {path: "b"}}]})
llm_mock({text: "done"})
let r = agent_loop("go", nil, {provider: "mock", tools: [probe], compact_threshold: 1,
  compact_keep_last: 1, compaction: "truncate"})
"""


def test_agent_trace_records_agent_loop_turns(run) -> None:
    out = run(
        LOOP
        + """
let t = agent_trace()
println(t.map({ e -> e.type }))
let c = t[0]
println([c.call, c.iteration, c.tool_calls, c.provider, c.input_tokens, c.output_tokens,
  c.cache_read_tokens, type_of(c.duration_ms), c.session_id == r.session_id,
  c.call_id == r.session_id + ":1"])
println([t[1].tool_name, t[1].tool_use_id, t[1].status, t[1].iteration, type_of(t[1].duration_ms)])
println([t[2].tool_name, t[2].tool_use_id, t[2].reason.contains("nope"), t[2].iteration])
println([t[3].archived_messages > 0, t[3].new_summary_len > 0, t[3].iteration])
let last = t[len(t) - 1]
println([last.status, last.iterations, last.tools_used, last.successful_tools,
  last.total_duration_ms == r.llm.duration_ms])
"""
    )
    assert out == [
        "[llm_call, tool_execution, tool_rejected, context_compaction, llm_call, "
        "tool_execution, context_compaction, llm_call, loop_complete]",
        "[agent_loop, 1, 2, mock, 11, 5, 0, int, true, true]",
        "[probe, c1, ok, 1, int]",
        "[nope, c2, true, 1]",
        "[true, true, 1]",
        "[done, 3, [probe, nope], [probe], true]",
    ]


def test_agent_trace_summary_rolls_the_trace_up(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock("nothing")
        + mock('{"verdict": "ok"}')
        + 'llm_call_structured("G", s, {provider: "mock"})\n'
        + LOOP
        + """
let m = agent_trace_summary()
println([m.llm_calls, m.iterations, m.tool_executions, m.tool_rejections, m.tool_errors,
  m.tools_used, m.compactions, m.schema_retries, m.loops_completed, m.status])
let calls = agent_trace().filter({ e -> e.type == "llm_call" })
println(m.total_input_tokens == calls.map({ e -> e.input_tokens }).reduce(0, { a, b -> a + b }))
println([type_of(m.total_llm_duration_ms), type_of(m.total_tool_duration_ms),
  m.total_duration_ms == r.llm.duration_ms])
"""
    )
    assert out == [
        "[5, 3, 2, 1, 0, [probe], 2, 1, 1, done]",
        "true",
        "[int, int, true]",
    ]


def test_agent_trace_summary_of_an_empty_trace(run) -> None:
    out = run(
        "let m = agent_trace_summary()\nprintln([m.llm_calls, m.status, m.total_duration_ms])"
    )
    assert out == ["[0, unknown, nil]"]


def test_the_trace_keeps_the_last_events_and_drops_the_oldest_in_batches() -> None:
    from harnpy.lifecycle.structured_calls import (
        MAX_TRACE_EVENTS,
        TRACE_SLACK,
        agent_trace,
        trace_event,
        trace_events,
    )

    rt = Runtime(stdout=lambda _t: None, stderr=lambda _t: None)
    for i in range(MAX_TRACE_EVENTS + TRACE_SLACK):
        trace_event(rt, {"type": "x", "i": i})
    # up to TRACE_SLACK events past the cap are kept (rows are rewritten once per batch)...
    assert len(trace_events(rt)) == MAX_TRACE_EVENTS + TRACE_SLACK

    class _Thread:
        runtime = rt

    shown = agent_trace(_Thread())
    # ...but agent_trace() shows the last MAX_TRACE_EVENTS
    assert len(shown) == MAX_TRACE_EVENTS and shown[-1]["i"] == MAX_TRACE_EVENTS + TRACE_SLACK - 1
    trace_event(rt, {"type": "x", "i": -1})
    assert len(trace_events(rt)) == MAX_TRACE_EVENTS
    assert trace_events(rt)[-1]["i"] == -1


def test_agent_trace_survives_a_program_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "prog.harn"
    prog.write_text(
        f"let s = {SCHEMA}\n"
        + mock('{"verdict": 1}')
        + mock('{"verdict": "ok"}')
        + 'llm_call_structured("G", s, {provider: "mock"})\n'
        '__snapshot_exit(env("SNAP"))\n'
        "println(agent_trace().map({ e -> e.type }))\n"
    )
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap), "HARN_LLM_CALLS_DISABLED": "1"})
    assert first.returncode == 3, first.stderr
    assert json.loads(snap.read_text())["runtime_state"]["agent_trace"]
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["[llm_call, schema_retry, llm_call]"]


# ------------------------------------------------------------------ conformance


CASES = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "agents"
STRUCTURED_CASES = [
    "llm_call_structured_result_fenced",
    "llm_call_structured_result_prose",
    "llm_call_structured_result_repair",
    "llm_call_structured_result_repair_fail",
    "llm_call_structured_result_retry",
    "llm_call_structured_result_schema_fail",
    "llm_call_structured_result_transport",
    "llm_call_structured_result_typed",
    "llm_call_structured_retry",
]


@pytest.mark.parametrize("name", STRUCTURED_CASES)
def test_conformance_case(name: str) -> None:
    case = CASES / "tests" / "integration" / f"{name}.harn"
    if not case.exists():
        pytest.skip("../shared conformance cases are absent")
    proc = harnpy("run", str(case), env={"HARN_LLM_CALLS_DISABLED": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == case.with_suffix(".expected").read_text()


# ------------------------------------------------------------------ llm_call's schema loop


class FakeThread:
    """What SchemaLoop.answer needs of a thread: a runtime and stderr."""

    def __init__(self) -> None:
        self.runtime = Runtime(stdout=lambda s: None, stderr=lambda s: None)
        self.err: list[str] = []

    def write_err(self, text: str) -> None:
        self.err.append(text)


def answer(text: str) -> LlmResponse:
    return LlmResponse(text=text, model="m", provider="mock")


def loop_for(options: dict, thread: FakeThread) -> SchemaLoop:
    request = LlmRequest(messages=[Message(role="user", content="q")], provider="mock")
    return schema_loop(thread, options, request, "llm_call", 1)


def test_normalize_output_format_kinds() -> None:
    schema = {"type": "object"}
    t = FakeThread()
    got = normalize_output_options(
        t, {"output_format": {"kind": "json_schema", "schema": schema}}, "llm_call"
    )
    assert got == {"output_schema": schema, "response_format": "json"}
    assert normalize_output_options(t, {"output_format": "json_object"}, "llm_call") == {
        "response_format": "json"
    }
    assert normalize_output_options(t, {"output_format": {"kind": "text"}}, "llm_call") == {}
    plain = {"provider": "mock"}
    assert normalize_output_options(t, plain, "llm_call") is plain
    with pytest.raises(HarnThrow) as info:
        normalize_output_options(t, {"output_format": "yaml"}, "llm_call")
    assert info.value.value["category"] == "config"


def test_answer_retries_with_the_original_messages_plus_one_nudge() -> None:
    t = FakeThread()
    loop = loop_for({"response_format": "json"}, t)
    again = loop.answer(t, answer("no json"), {})
    assert isinstance(again, Again)
    assert [m.role for m in again.request.messages] == ["user", "user"]
    assert "schema" in again.request.messages[1].content
    assert loop.current is again.request
    out = loop.answer(t, answer('{"a": 1}'), {"text": "x"})
    assert out == {"text": "x", "data": {"a": 1}}
    kinds = [e["type"] for e in t.runtime.structured_agent_trace]
    assert kinds == ["llm_call", "schema_retry", "llm_call"]


def test_answer_without_nudge_replays_the_request_and_throws_at_the_end() -> None:
    t = FakeThread()
    loop = loop_for({"response_format": "json", "schema_retry_nudge": False}, t)
    again = loop.answer(t, answer("prose"), {})
    assert again.request is loop.base
    with pytest.raises(HarnThrow) as info:
        loop.answer(t, answer("more prose"), {})
    err = info.value.value
    assert err["category"] == "schema_validation"
    assert "parseable JSON" in err["message"] and "schema" in err["message"]
    assert err["text"] == "more prose"


def test_answer_warn_and_off_return_the_result_without_data() -> None:
    for mode, warned in (("warn", True), ("off", False)):
        t = FakeThread()
        loop = loop_for(
            {
                "output_schema": {"type": "object", "required": ["k"]},
                "schema_retries": 0,
                "output_validation": mode,
            },
            t,
        )
        out = loop.answer(t, answer("{}"), {"text": "{}"})
        assert out["data"] is None and len(out["validation_errors"]) == 1
        assert bool(t.err) is warned


def test_budgets_refuse_before_sending_in_every_variant(run) -> None:
    big = '"a prompt of several words", s, {provider: "mock", budget: {max_input_tokens: 1}}'
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"verdict": "unused"}')
        + f"let a = llm_call_structured_safe({big})\n"
        "println([a.ok, a.error.category])\n"
        f"let b = llm_call_structured_result({big})\n"
        "println([b.ok, b.error_category, b.attempts])\n"
        f"let c = try {{ llm_call_structured({big}) }}\n"
        "println(unwrap_err(c).category)\n"
        "println(len(llm_mock_calls()))\n"
    )
    assert out == [
        "[false, budget_exceeded]",
        "[false, budget_exceeded, 0]",
        "budget_exceeded",
        "0",
    ]


# ------------------------------------------------------------------ llm_call's schema loop


def test_llm_call_output_format_kinds(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"verdict": "typed"}')
        + 'let a = llm_call("q", nil, {provider: "mock", '
        'output_format: {kind: "json_schema", schema: s, strict: true}})\n'
        "println(a.data.verdict)\n"
        + mock('x {"any": 1} y')
        + 'println(llm_call("q", nil, {provider: "mock", output_format: "json_object"}).data)\n'
        + mock("plain")
        + 'let t = llm_call("q", nil, {provider: "mock", output_format: {kind: "text"}})\n'
        "println(t.data == nil)\n"
        'let bad = try { llm_call("q", nil, {provider: "mock", output_format: "yaml"}) }\n'
        "println(unwrap_err(bad).category)\n"
        'let none = try { llm_call("q", nil, {provider: "mock", '
        'output_format: {kind: "json_schema"}}) }\n'
        "println(unwrap_err(none).message)\n"
    )
    assert out == [
        "typed",
        "{any: 1}",
        "true",
        "config",
        "llm_call: `output_format` of kind `json_schema` needs a `schema`",
    ]


def test_llm_call_output_validation_off_and_warn(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock('{"note": "x"}')
        + 'let r = llm_call("q", nil, {provider: "mock", output_schema: s, schema_retries: 0, '
        'output_validation: "off"})\n'
        "println([r.data, r.text, len(r.validation_errors)])\n"
        + mock("prose")
        + 'let w = llm_call("q", nil, {provider: "mock", response_format: "json", '
        'schema_retries: 0, output_validation: "warn"})\n'
        "println(w.validation_errors)\n"
        'let bad = try { llm_call("q", nil, {provider: "mock", output_validation: "loud"}) }\n'
        "println(unwrap_err(bad).category)\n"
    )
    assert out[0] == '[nil, {"note": "x"}, 1]'
    assert out[1].startswith("warning: llm_call: the model's answer does not match")
    assert out[2] == f"[{NO_JSON}]"
    assert out[3] == "config"


def test_llm_call_retry_keeps_the_transcript_of_the_answered_request(run) -> None:
    out = run(
        f"let s = {SCHEMA}\n"
        + mock("no")
        + mock('{"verdict": "ok"}')
        + 'let r = llm_call("q", nil, {provider: "mock", output_schema: s})\n'
        "println(transcript_messages(r.transcript).map({ m -> m.role }))\n"
    )
    assert out == ["[user, user, assistant]"]


@pytest.mark.parametrize("name", ["llm_schema_retry", "llm_output_format"])
def test_llm_call_conformance_case(name: str) -> None:
    test_conformance_case(name)
