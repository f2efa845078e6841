"""AnthropicProvider against a scripted local Messages API server (real SDK code path)."""

from __future__ import annotations

import pytest
from fake_llm_server import (
    MESSAGES_PATH,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    error_body,
)

from harnpy.llm import LlmError, LlmRequest, Message, ToolCall, ToolSpec
from harnpy.llm.anthropic_provider import AnthropicProvider

SEARCH = ToolSpec(
    name="search",
    description="Search the web",
    parameters={
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    },
)


def make(server, sleeps, **env):
    base = {"ANTHROPIC_API_KEY": "ak-test", "ANTHROPIC_BASE_URL": server.root_url}
    base.update(env)
    return AnthropicProvider(env=base, sleep=sleeps)


def ask(text="hi", **kw):
    kw.setdefault("model", "claude-sonnet-5")
    return LlmRequest(messages=[Message(role="user", content=text)], **kw)


def test_plain_text_and_request_shape(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body=anthropic_text("Bonjour")))
    resp = make(server, sleeps).complete(ask("Say hi in French", system="Be terse"))
    assert resp.text == "Bonjour"
    assert resp.usage.input_tokens == 9 and resp.usage.output_tokens == 4
    assert resp.stop_reason == "end_turn"
    assert resp.provider == "anthropic"
    (req,) = server.requests_to(MESSAGES_PATH)
    assert req.body["system"] == "Be terse"
    assert req.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Say hi in French"}]}
    ]
    assert req.body["max_tokens"] == 8192
    assert "ak-test" in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))
    assert not req.body.get("stream")


def test_tool_use_blocks(server, sleeps):
    server.queue(
        MESSAGES_PATH,
        Reply(body=anthropic_tool_use("search", {"q": "harn"}, text="Let me look.")),
    )
    resp = make(server, sleeps).complete(ask("find harn", tools=[SEARCH]))
    assert resp.text == "Let me look."
    assert [tc.to_dict() for tc in resp.tool_calls] == [
        {"id": "toolu_1", "name": "search", "arguments": {"q": "harn"}}
    ]
    assert resp.stop_reason == "tool_use"
    assert server.requests_to(MESSAGES_PATH)[0].body["tools"] == [
        {"name": "search", "description": "Search the web", "input_schema": SEARCH.parameters}
    ]


def test_null_content_and_usage(server, sleeps):
    body = anthropic_text("x")
    body["content"] = None
    body["usage"] = {"input_tokens": None, "output_tokens": None}
    body["stop_reason"] = None
    server.queue(MESSAGES_PATH, Reply(body=body))
    resp = make(server, sleeps).complete(ask())
    assert resp.text == "" and resp.tool_calls == []
    assert resp.usage.input_tokens == 0 and resp.stop_reason is None


def test_tool_use_with_null_input(server, sleeps):
    body = anthropic_tool_use("search", {})
    body["content"][0]["input"] = None
    server.queue(MESSAGES_PATH, Reply(body=body))
    resp = make(server, sleeps).complete(ask())
    assert resp.tool_calls[0].arguments == {}


def test_thinking_blocks_become_raw_thinking(server, sleeps):
    body = anthropic_text("42")
    body["content"].insert(0, {"type": "thinking", "thinking": "6*7", "signature": "s"})
    server.queue(MESSAGES_PATH, Reply(body=body))
    resp = make(server, sleeps).complete(ask(thinking={"budget_tokens": 1024}))
    assert resp.text == "42" and resp.raw_thinking == "6*7"
    assert server.requests_to(MESSAGES_PATH)[0].body["thinking"] == {
        "type": "enabled",
        "budget_tokens": 1024,
    }


def test_tool_history_becomes_tool_result_blocks(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body=anthropic_text("done")))
    request = LlmRequest(
        model="claude-sonnet-5",
        system="sys",
        messages=[
            Message(role="system", content="extra rules"),
            Message(role="user", content="find harn"),
            Message(
                role="assistant",
                content="Searching.",
                tool_calls=[ToolCall(id="toolu_7", name="search", arguments={"q": "harn"})],
            ),
            Message(role="tool", tool_call_id="toolu_7", content="3 results"),
            Message(role="user", content="summarize"),
        ],
    )
    make(server, sleeps).complete(request)
    body = server.requests_to(MESSAGES_PATH)[0].body
    assert body["system"] == "sys\n\nextra rules"
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "find harn"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "toolu_7", "name": "search", "input": {"q": "harn"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_7", "content": "3 results"},
                {"type": "text", "text": "summarize"},
            ],
        },
    ]


def test_529_overloaded_with_retry_after_then_success(server, sleeps):
    server.queue(
        MESSAGES_PATH,
        Reply(
            status=529,
            body=error_body("Overloaded", "overloaded_error"),
            headers={"retry-after": "2"},
        ),
        Reply(body=anthropic_text("back")),
    )
    assert make(server, sleeps).complete(ask()).text == "back"
    assert sleeps.delays == [2.0]


def test_429_retry_after_ms_header(server, sleeps):
    server.queue(
        MESSAGES_PATH,
        Reply(status=429, body=error_body("rate"), headers={"retry-after-ms": "1500"}),
        Reply(body=anthropic_text("ok")),
    )
    assert make(server, sleeps).complete(ask()).text == "ok"
    assert sleeps.delays == [1.5]


def test_500_then_success(server, sleeps):
    server.queue(
        MESSAGES_PATH, Reply(status=500, body=error_body("oops")), Reply(body=anthropic_text("ok"))
    )
    assert make(server, sleeps).complete(ask(backoff_ms=40)).text == "ok"
    assert sleeps.delays == [0.04]


def test_repeated_500(server, sleeps):
    server.queue(MESSAGES_PATH, *[Reply(status=500, body=error_body("down")) for _ in range(2)])
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(retries=1, backoff_ms=1))
    assert info.value.category == "server_error"
    assert info.value.message == "anthropic: server error (HTTP 500): down (after 2 attempts)"


def test_timeout(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body=anthropic_text("late"), delay_s=1.5))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(timeout_s=0.2, retries=0))
    assert info.value.category == "timeout"


def test_malformed_json(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body="<html>gateway</html>", content_type="text/html"))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "malformed_response"
    assert "<html>gateway</html>" in info.value.message


def test_tool_use_without_name_is_malformed(server, sleeps):
    body = anthropic_tool_use("search", {"q": "x"})
    del body["content"][0]["name"]
    server.queue(MESSAGES_PATH, Reply(body=body))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "malformed_response"


def test_error_envelope_with_200_keeps_category(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body=error_body("Overloaded", "overloaded_error")))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(retries=0))
    assert info.value.category == "overloaded"


def test_missing_key_names_the_variable(sleeps):
    with pytest.raises(LlmError) as info:
        AnthropicProvider(env={}, sleep=sleeps).complete(ask(model="claude-haiku-4-5"))
    assert info.value.category == "config"
    assert info.value.message == (
        "anthropic: ANTHROPIC_API_KEY is not set (needed for model claude-haiku-4-5)"
    )


def test_calls_disabled(server, sleeps):
    with pytest.raises(LlmError) as info:
        make(server, sleeps, HARN_LLM_CALLS_DISABLED="1").complete(ask())
    assert info.value.category == "disabled"
    assert server.requests == []


def test_base_url_with_v1_suffix_is_normalized(server, sleeps):
    server.queue(MESSAGES_PATH, Reply(body=anthropic_text("ok")))
    provider = make(server, sleeps, ANTHROPIC_BASE_URL=server.root_url + "/v1/")
    assert provider.complete(ask()).text == "ok"
    assert len(server.requests_to(MESSAGES_PATH)) == 1
