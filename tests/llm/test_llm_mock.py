"""MockProvider: every selection rule of lifecycle.md 2.15, defaults, JSONL fixtures."""

from __future__ import annotations

import json

import pytest

from harnpy.llm import (
    LlmError,
    LlmRequest,
    Message,
    MockProvider,
    ToolSpec,
    load_mock_jsonl,
    parse_mock_entry,
)
from harnpy.llm.mock import glob_match, last_prompt_text, match_text


def req(*texts, system=None, tools=None, tool_format=None, model=None, thinking=None):
    return LlmRequest(
        messages=[Message(role="user", content=t) for t in texts],
        system=system,
        tools=tools,
        tool_format=tool_format,
        model=model,
        thinking=thinking,
    )


# -- glob -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "text", "hit"),
    [
        ("*", "", True),
        ("*", "anything at all", True),
        ("hello", "hello", True),
        ("hello", "hello world", False),
        ("hello*", "hello world", True),
        ("hello*", "say hello", False),
        ("*world", "hello world", True),
        ("*world", "world peace", False),
        ("*lo wo*", "hello world", True),
        ("*xyz*", "hello world", False),
        ("h*o*d", "hello world", True),
        ("h*w*o", "hello world", False),
        ("a*b*c", "a-c-b", False),
        ("ab*b", "ab", False),
        ("what?", "what?", True),
        ("[x]*", "[x] marks", True),
    ],
)
def test_glob_table(pattern, text, hit):
    assert glob_match(pattern, text) is hit


def test_match_text_joins_every_string_in_messages():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    assert match_text(messages) == "user\nhi\nassistant"


def test_last_prompt_skips_blank_messages():
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "  "}]
    assert last_prompt_text(messages) == "first"


# -- selection rules --------------------------------------------------------------------------
def test_fifo_entries_are_consumed_in_order():
    mock = MockProvider()
    mock.push({"text": "one"})
    mock.push({"text": "two"})
    assert [mock.complete(req("q")).text for _ in range(2)] == ["one", "two"]
    assert mock.pending() == 0


def test_fifo_wins_over_matching_pattern_regardless_of_order():
    mock = MockProvider()
    mock.push({"text": "pattern", "match": "*weather*"})
    mock.push({"text": "fifo"})
    assert mock.complete(req("what is the weather")).text == "fifo"
    assert mock.complete(req("what is the weather")).text == "pattern"


def test_patterns_scan_in_declaration_order_and_persist_by_default():
    mock = MockProvider()
    mock.push({"text": "first", "match": "*a*"})
    mock.push({"text": "second", "match": "*abc*"})
    for _ in range(3):
        assert mock.complete(req("xabcx")).text == "first"
    assert mock.pending() == 2


def test_consume_match_removes_the_pattern_after_use():
    mock = MockProvider()
    mock.push({"text": "once", "match": "*ping*", "consume_match": True})
    mock.push({"text": "always", "match": "*ping*"})
    assert mock.complete(req("ping")).text == "once"
    assert mock.complete(req("ping")).text == "always"
    assert mock.complete(req("ping")).text == "always"


def test_pattern_matches_against_all_messages_joined():
    mock = MockProvider()
    mock.push({"text": "hit", "match": "user\nalpha\nuser\nbeta"})
    assert mock.complete(req("alpha", "beta")).text == "hit"


def test_unmatched_pattern_falls_back_to_default():
    mock = MockProvider()
    mock.push({"text": "nope", "match": "*zzz*"})
    assert mock.complete(req("hello there")).text.startswith("Mock response to")


def test_error_entry_raises_categorized_error():
    mock = MockProvider()
    mock.push({"error": {"category": "rate_limit", "message": "slow down", "retry_after_ms": 1500}})
    with pytest.raises(LlmError) as info:
        mock.complete(req("x"))
    assert info.value.category == "rate_limit"
    assert info.value.message == "slow down"
    assert info.value.retry_after_s == 1.5
    assert mock.pending() == 0


def test_scripted_tool_calls_ids_and_tokens():
    mock = MockProvider()
    mock.push(
        {
            "text": "calling",
            "tool_calls": [
                {"name": "read", "arguments": {"path": "a"}},
                {"id": "custom", "name": "write"},
            ],
            "output_tokens": 7,
            "thinking": "hmm",
            "stop_reason": "tool_use",
            "model": "m1",
        }
    )
    resp = mock.complete(req("héllo"))
    assert [tc.to_dict() for tc in resp.tool_calls] == [
        {"id": "mock_call_1", "name": "read", "arguments": {"path": "a"}},
        {"id": "custom", "name": "write", "arguments": {}},
    ]
    # input tokens default to the UTF-8 byte length of the match text "user\nhéllo"
    assert resp.usage.input_tokens == len("user\nhéllo".encode())
    assert resp.usage.output_tokens == 7
    assert (resp.raw_thinking, resp.stop_reason, resp.model) == ("hmm", "tool_use", "m1")
    assert resp.provider == "mock"


def test_scripted_defaults_output_30_and_request_model():
    mock = MockProvider()
    mock.push({"text": "x", "input_tokens": 3})
    resp = mock.complete(req("q", model="gpt-4o"))
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.model) == (3, 30, "gpt-4o")


# -- default behaviour ------------------------------------------------------------------------
def test_default_text_counts_words_and_truncates_to_100_chars():
    prompt = "word " * 30  # 150 chars, 30 words
    resp = MockProvider().complete(req(prompt.strip()))
    stripped = prompt.strip()
    assert resp.text == f"Mock response to 30-word prompt: {stripped[:100]}"
    assert resp.usage.input_tokens == len(stripped) and resp.usage.output_tokens == 30
    assert resp.tool_calls == [] and resp.model == "mock"


def test_default_uses_last_prompt_only():
    resp = MockProvider().complete(req("first question", "second one here"))
    assert resp.text == "Mock response to 3-word prompt: second one here"


def test_default_empty_prompt():
    resp = MockProvider().complete(LlmRequest(messages=[]))
    assert resp.text == "Mock LLM response"
    assert resp.usage.input_tokens == 0


@pytest.mark.parametrize(
    ("system", "wrapped"),
    [(None, False), ("Reply then <done>##DONE##</done>", True), ("say ##DONE## when done", False)],
)
def test_default_done_wrapping_rule(system, wrapped):
    resp = MockProvider().complete(req("hi there", system=system))
    body = "Mock response to 2-word prompt: hi there"
    expected = (
        f"<assistant_prose>{body}</assistant_prose>\n<done>##DONE##</done>" if wrapped else body
    )
    assert resp.text == expected


TOOLS = [
    ToolSpec(
        name="edit",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "line": {"type": "integer"},
                "ratio": {"type": "number"},
                "force": {"type": "boolean"},
                "lines": {"type": "array"},
                "opts": {"type": "object"},
                "maybe": {"type": ["null", "integer"]},
                "comment": {"type": "string"},
            },
            "required": ["path", "line", "ratio", "force", "lines", "opts", "maybe"],
        },
    ),
    ToolSpec(name="other"),
]


def test_default_calls_first_native_tool_with_placeholders():
    resp = MockProvider().complete(req("fix it", tools=TOOLS))
    assert resp.text == ""
    assert [tc.to_dict() for tc in resp.tool_calls] == [
        {
            "id": "mock_call_1",
            "name": "edit",
            "arguments": {
                "path": "",
                "line": 0,
                "ratio": 0.0,
                "force": False,
                "lines": [],
                "opts": {},
                "maybe": 0,
            },
        }
    ]
    assert resp.usage.output_tokens == 20 and resp.usage.input_tokens == len("fix it")


def test_text_tool_format_gives_text_default():
    resp = MockProvider().complete(req("fix it", tools=TOOLS, tool_format="text"))
    assert resp.tool_calls == [] and resp.text.startswith("Mock response to 2-word prompt")


# -- recording / clear ------------------------------------------------------------------------
def test_calls_are_recorded_with_messages_system_tools_thinking():
    mock = MockProvider()
    mock.complete(req("a", system="S", tools=TOOLS[1:], thinking={"mode": "enabled"}))
    mock.complete(req("b"))
    calls = mock.calls()
    assert calls[0] == {
        "messages": [{"role": "user", "content": "a"}],
        "system": "S",
        "tools": [
            {
                "name": "other",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            }
        ],
        "thinking": {"mode": "enabled"},
    }
    assert calls[1]["tools"] is None and calls[1]["messages"][-1]["content"] == "b"
    calls[0]["system"] = "mutated"
    assert mock.calls()[0]["system"] == "S"


def test_clear_empties_queue_and_calls():
    mock = MockProvider()
    mock.push({"text": "x"})
    mock.complete(req("q"))
    mock.push({"text": "y"})
    mock.clear()
    assert mock.calls() == [] and mock.pending() == 0
    assert mock.complete(req("q")).text.startswith("Mock response")


def test_invalid_entries_are_config_errors():
    with pytest.raises(LlmError) as info:
        parse_mock_entry({"txt": "typo"})
    assert info.value.category == "config"
    assert "unknown field `txt`" in info.value.message
    with pytest.raises(LlmError):
        parse_mock_entry({"tool_calls": [{"arguments": {}}]})
    assert parse_mock_entry({"text": "ok", "match": None}).match is None


# -- --llm-mock fixtures ----------------------------------------------------------------------
def test_fixture_served_first_then_queue_then_unmatched_error(tmp_path):
    path = tmp_path / "replies.jsonl"
    path.write_text(
        json.dumps({"text": "from file"})
        + "\n\n"
        + json.dumps({"tool_calls": [{"name": "t", "arguments": {"a": 1}}]})
        + "\n"
    )
    mock = MockProvider()
    mock.load_fixture(load_mock_jsonl(path))
    mock.push({"text": "inline"})
    assert mock.complete(req("1")).text == "from file"
    assert mock.complete(req("2")).tool_calls[0].arguments == {"a": 1}
    assert mock.complete(req("3")).text == "inline"
    with pytest.raises(LlmError) as info:
        mock.complete(req("4th prompt"))
    assert info.value.category == "mock_unmatched"
    assert info.value.message == 'No --llm-mock fixture matched prompt: "user\\n4th prompt"'


def test_fixture_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "ok"}\n{"text": \n')
    with pytest.raises(LlmError) as info:
        load_mock_jsonl(path)
    assert info.value.category == "config"
    assert info.value.message.startswith(f"{path}:2: invalid JSON")
    with pytest.raises(LlmError) as info:
        load_mock_jsonl(tmp_path / "missing.jsonl")
    assert "cannot read" in info.value.message


def test_state_round_trip():
    mock = MockProvider()
    mock.push({"text": "a"})
    mock.push({"text": "p", "match": "*x*"})
    mock.load_fixture([parse_mock_entry({"text": "f"})])
    mock.complete(req("first"))
    state = json.loads(json.dumps(mock.export_state()))
    other = MockProvider()
    other.import_state(state)
    assert other.calls() == mock.calls()
    assert [other.complete(req("x")).text for _ in range(3)] == ["a", "p", "p"]
