"""``llm_call`` result shapes and the mock builtins (lifecycle.md 2.14, 2.15)."""

from __future__ import annotations

import json

from tests.agents.conftest import RunHarn, lines


def test_result_dict_has_the_spec_fields(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "<assistant_prose>Hello.</assistant_prose>\\n<done>##DONE##</done>",
            input_tokens: 11, output_tokens: 4, model: "m1"})
  let r = llm_call("hi there", "be brief", {provider: "mock"})
  println(sorted_keys(r))
  println(r.text)
  println(r.visible_text)
  println(r.prose)
  println(r.model + " " + r.provider + " " + to_string(r.input_tokens) + " " + to_string(r.output_tokens))
  println(r.usage)
  println(r.tool_calls)
  println(len(transcript_messages(r.transcript)))
}
fn sorted_keys(d) { return keys(d).sort() }
"""
    )
    got = lines(out)
    keys = got[0]
    for field in (
        "text",
        "visible_text",
        "prose",
        "model",
        "provider",
        "input_tokens",
        "output_tokens",
        "tool_calls",
        "stop_reason",
        "transcript",
        "usage",
    ):
        assert field in keys, field
    assert "data" not in keys  # only for JSON answers
    assert got[1] == "<assistant_prose>Hello.</assistant_prose>"  # first line of the text
    assert got[3] == "Hello."
    assert got[4] == "Hello."
    assert got[5] == "m1 mock 11 4"
    assert "total_tokens: 15" in got[6]
    assert got[7] == "[]"
    assert got[8] == "2"  # the user prompt and the answer


def test_json_answer_is_parsed_into_data_and_validated(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  llm_mock({text: "Sure: ```json\\n{\\"name\\": \\"Ada\\", \\"age\\": 36}\\n```"})
  let schema = {type: "object", properties: {name: {type: "string"}, age: {type: "integer"}},
                required: ["name", "age"]}
  let r = llm_call("who?", nil, {provider: "mock", output_schema: schema})
  println(r.data.name + " " + to_string(r.data.age))
}
"""
    )
    assert lines(out) == ["Ada 36"]


def test_schema_retries_ask_again_then_succeed(run_harn: RunHarn) -> None:
    out, rt = run_harn(
        """
pipeline main() {
  llm_mock({text: "{\\"name\\": 5}"})
  llm_mock({text: "{\\"name\\": \\"Bo\\"}"})
  let schema = {type: "object", properties: {name: {type: "string"}}, required: ["name"]}
  let r = llm_call("name?", nil, {provider: "mock", output_schema: schema, schema_retries: 1})
  println(r.data.name)
  let calls = llm_mock_calls()
  println(len(calls))
  println(calls[1].messages[len(calls[1].messages) - 1].content)
}
"""
    )
    got = lines(out)
    assert got[0] == "Bo"
    assert got[1] == "2"
    assert "not valid for the requested output" in got[2] and "at name" in got[2]


def test_schema_failure_after_retries_throws_schema_validation(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "not json at all"})
  llm_mock({text: "still not json"})
  let r = try { llm_call("x", nil, {provider: "mock", response_format: "json", schema_retries: 1}) }
  let e = unwrap_err(r)
  println(e.category)
  println(error_category(e))
  println(len(llm_mock_calls()))
}
"""
    )
    assert lines(out) == ["schema_validation", "schema_validation", "2"]


def test_disabled_real_calls_throw_a_categorized_error(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let r = try { llm_call("x", nil, {provider: "openai", model: "gpt-4o"}) }
  println(is_err(r))
  println(unwrap_err(r).category)
}
"""
    )
    assert lines(out) == ["true", "disabled"]


def test_mock_error_entries_and_clear(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({error: {category: "rate_limit", message: "429 slow down"}})
  let r = try { llm_call("x", nil, {provider: "mock"}) }
  println(unwrap_err(r).message)
  println(is_rate_limited(unwrap_err(r)))
  println(len(llm_mock_calls()))
  llm_mock_clear()
  println(len(llm_mock_calls()))
}
"""
    )
    assert lines(out) == ["429 slow down", "true", "1", "0"]


def test_calls_record_system_messages_and_tools(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  llm_mock({text: "ok"})
  llm_call("q", "sys", {provider: "mock", tools: [{name: "t", parameters: {x: "string"}}]})
  println(json_stringify(llm_mock_calls()[0]))
}
"""
    )
    call = json.loads(lines(out)[0])
    assert call["system"] == "sys"
    assert call["messages"] == [{"role": "user", "content": "q"}]
    assert call["tools"][0]["name"] == "t"
    assert call["tools"][0]["parameters"]["required"] == ["x"]


def test_with_llm_script_scopes_the_mock_queue(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
import { llm_text, with_llm_script } from "std/testing"
pipeline main() {
  llm_mock({text: "outer"})
  let inner = with_llm_script([llm_text("inner"), "plain string"], { ->
    let a = llm_call("x", nil, {provider: "mock"}).text
    let b = llm_call("y", nil, {provider: "mock"}).text
    return a + "+" + b + " calls=" + to_string(len(llm_mock_calls()))
  })
  println(inner)
  println(llm_call("z", nil, {provider: "mock"}).text)
}
"""
    )
    assert lines(out) == ["inner+plain string calls=2", "outer"]


def test_llm_call_cannot_be_passed_directly_to_a_callback_builtin(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main() {
  let r = try { ["a"].map(llm_call) }
  println(unwrap_err(r))
}
"""
    )
    assert "llm_call cannot be called directly from map" in out


def test_llm_mock_cli_fixture_serves_every_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import harnpy

    fixture = tmp_path / "replies.jsonl"
    fixture.write_text('{"text": "from the fixture"}\n{"text": "second"}\n', encoding="utf-8")
    prog = tmp_path / "p.harn"
    prog.write_text(
        "pipeline main() {\n"
        '  println(llm_call("a", nil, {provider: "openai", model: "gpt-4o"}).text)\n'
        '  println(agent_loop("b", nil, {model: "claude-x"}).text)\n'
        "}\n",
        encoding="utf-8",
    )
    proc = harnpy(
        "run", "--llm-mock", str(fixture), str(prog), env={"HARN_LLM_CALLS_DISABLED": "1"}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["from the fixture", "second"]
