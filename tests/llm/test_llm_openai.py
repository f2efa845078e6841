"""OpenAIProvider against a scripted local chat-completions server (real SDK code path)."""

from __future__ import annotations

import socket
import time

import pytest
from fake_llm_server import (
    CHAT_PATH,
    Reply,
    error_body,
    openai_text,
    openai_tool_call,
)

from harnpy.llm import LlmError, LlmRequest, Message, ToolCall, ToolSpec
from harnpy.llm.openai_provider import OpenAIProvider

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def make(server, sleeps, **env):
    base = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    base.update(env)
    return OpenAIProvider(env=base, sleep=sleeps)


def ask(text="hi", **kw):
    return LlmRequest(messages=[Message(role="user", content=text)], model="gpt-4o", **kw)


def test_plain_text_and_request_shape(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("Hello there", prompt_tokens=12)))
    resp = make(server, sleeps).complete(ask("Say hello", system="Be brief", temperature=0.2))
    assert resp.text == "Hello there"
    assert resp.tool_calls == []
    assert resp.usage.input_tokens == 12 and resp.usage.output_tokens == 3
    assert resp.stop_reason == "end_turn"
    assert resp.provider == "openai" and resp.model == "gpt-4o"
    (req,) = server.requests_to(CHAT_PATH)
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "gpt-4o"
    assert req.body["messages"] == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "Say hello"},
    ]
    assert req.body["temperature"] == 0.2
    assert not req.body.get("stream")
    assert sleeps.delays == []


def test_native_tool_call_with_null_content(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_tool_call("get_weather", '{"city": "Oslo"}')))
    resp = make(server, sleeps).complete(ask("weather?", tools=[WEATHER]))
    assert resp.text == ""
    assert [tc.to_dict() for tc in resp.tool_calls] == [
        {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    ]
    assert resp.stop_reason == "tool_use"
    (req,) = server.requests_to(CHAT_PATH)
    assert req.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER.parameters,
            },
        }
    ]


def test_text_tool_format_does_not_send_tools(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("ok")))
    make(server, sleeps).complete(ask(tools=[WEATHER], tool_format="text"))
    assert "tools" not in server.requests_to(CHAT_PATH)[0].body


def test_null_fields_everywhere(server, sleeps):
    body = openai_text("x")
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": None}
    body["choices"][0]["finish_reason"] = None
    body["usage"] = None
    body["model"] = None
    server.queue(CHAT_PATH, Reply(body=body))
    resp = make(server, sleeps).complete(ask())
    assert resp.text == "" and resp.tool_calls == []
    assert resp.usage.input_tokens == 0 and resp.usage.output_tokens == 0
    assert resp.stop_reason is None
    assert resp.model == "gpt-4o"


def test_tool_arguments_as_empty_string_and_missing_id(server, sleeps):
    body = openai_tool_call("ping", "")
    del body["choices"][0]["message"]["tool_calls"][0]["id"]
    server.queue(CHAT_PATH, Reply(body=body))
    resp = make(server, sleeps).complete(ask())
    assert [tc.to_dict() for tc in resp.tool_calls] == [
        {"id": "call_1", "name": "ping", "arguments": {}}
    ]


def test_multi_turn_tool_history_encoding(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("It is sunny")))
    request = LlmRequest(
        model="gpt-4o",
        messages=[
            Message(role="user", content="weather in Oslo?"),
            Message(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id="call_9", name="get_weather", arguments={"city": "Oslo"})],
            ),
            Message(role="tool", tool_call_id="call_9", content="sunny"),
        ],
    )
    assert make(server, sleeps).complete(request).text == "It is sunny"
    sent = server.requests_to(CHAT_PATH)[0].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "sunny"}


def test_429_with_retry_after_then_success(server, sleeps):
    server.queue(
        CHAT_PATH,
        Reply(status=429, body=error_body("slow down"), headers={"Retry-After": "3"}),
        Reply(body=openai_text("finally")),
    )
    resp = make(server, sleeps).complete(ask())
    assert resp.text == "finally"
    assert sleeps.delays == [3.0]
    assert len(server.requests_to(CHAT_PATH)) == 2


def test_500_then_success_uses_exponential_backoff(server, sleeps):
    server.queue(
        CHAT_PATH,
        Reply(status=500, body=error_body("boom")),
        Reply(status=502, body=error_body("bad gateway")),
        Reply(body=openai_text("recovered")),
    )
    resp = make(server, sleeps).complete(ask(backoff_ms=100))
    assert resp.text == "recovered"
    assert sleeps.delays == [0.1, 0.2]


def test_repeated_500_gives_clear_server_error(server, sleeps):
    server.queue(CHAT_PATH, *[Reply(status=500, body=error_body("kaput")) for _ in range(3)])
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(retries=2, backoff_ms=10))
    err = info.value
    assert err.category == "server_error"
    assert err.status == 500
    assert err.message == "openai: server error (HTTP 500): kaput (after 3 attempts)"
    assert len(server.requests_to(CHAT_PATH)) == 3
    assert sleeps.delays == [0.01, 0.02]


def test_503_is_overloaded_and_retried(server, sleeps):
    server.queue(
        CHAT_PATH, Reply(status=503, body=error_body("busy")), Reply(body=openai_text("ok"))
    )
    assert make(server, sleeps).complete(ask()).text == "ok"
    assert sleeps.delays == [0.25]


def test_timeout_is_timeout_category(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("late"), delay_s=1.5))
    started = time.monotonic()
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(timeout_s=0.2, retries=0))
    assert time.monotonic() - started < 1.2
    assert info.value.category == "timeout"
    assert info.value.message == "openai: request timed out after 0.2s (model gpt-4o)"


def test_timeout_is_retried(server, sleeps):
    server.queue(
        CHAT_PATH, Reply(body=openai_text("late"), delay_s=1.0), Reply(body=openai_text("fast"))
    )
    resp = make(server, sleeps).complete(ask(timeout_s=0.3, retries=1, backoff_ms=50))
    assert resp.text == "fast"
    assert sleeps.delays == [0.05]


def test_malformed_json_body(server, sleeps):
    server.queue(CHAT_PATH, Reply(body='{"choices": [oops'))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "malformed_response"
    assert "not valid JSON" in info.value.message
    assert len(server.requests_to(CHAT_PATH)) == 1  # not retried


def test_json_without_choices_is_malformed(server, sleeps):
    server.queue(CHAT_PATH, Reply(body={"id": "x", "choices": []}))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "malformed_response"
    assert info.value.message == "openai: response has no choices"


def test_bad_tool_arguments_are_reported_on_the_call(server, sleeps):
    # Undecodable arguments are the model's mistake, not a provider failure: the call
    # carries the reason and an agent loop answers it with a tool error result.
    server.queue(CHAT_PATH, Reply(body=openai_tool_call("get_weather", "{city: Oslo")))
    call = make(server, sleeps).complete(ask()).tool_calls[0]
    assert call.name == "get_weather" and call.arguments == {}
    assert call.arguments_error == "the arguments are not valid JSON: '{city: Oslo'"


def test_error_envelope_with_200(server, sleeps):
    server.queue(CHAT_PATH, Reply(body={"error": {"message": "model crashed"}}))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask(retries=0))
    assert info.value.category == "server_error"
    assert "model crashed" in info.value.message


def test_401_is_auth_and_not_retried(server, sleeps):
    server.queue(CHAT_PATH, Reply(status=401, body=error_body("bad key")))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "auth"
    assert "OPENAI_API_KEY" in info.value.message
    assert sleeps.delays == []


def test_400_is_bad_request(server, sleeps):
    server.queue(CHAT_PATH, Reply(status=400, body=error_body("unknown model")))
    with pytest.raises(LlmError) as info:
        make(server, sleeps).complete(ask())
    assert info.value.category == "bad_request"
    assert info.value.message == "openai: request rejected (HTTP 400): unknown model"


def test_missing_key_names_the_variable(sleeps):
    provider = OpenAIProvider(env={}, sleep=sleeps)
    with pytest.raises(LlmError) as info:
        provider.complete(ask())
    assert info.value.category == "config"
    assert info.value.message == "openai: OPENAI_API_KEY is not set (needed for model gpt-4o)"


def test_local_base_url_needs_no_key(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("local")))
    provider = OpenAIProvider(env={"OPENAI_BASE_URL": server.base_url}, sleep=sleeps)
    assert provider.complete(ask()).text == "local"


def test_model_from_environment(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("ok", model="qwen2.5")))
    provider = make(server, sleeps, HARNPY_MODEL="qwen2.5")
    request = LlmRequest(messages=[Message(role="user", content="hi")])
    assert provider.complete(request).model == "qwen2.5"
    assert server.requests_to(CHAT_PATH)[0].body["model"] == "qwen2.5"


def test_calls_disabled_fails_before_network(server, sleeps):
    provider = make(server, sleeps, HARN_LLM_CALLS_DISABLED="1")
    with pytest.raises(LlmError) as info:
        provider.complete(ask())
    assert info.value.category == "disabled"
    assert "HARN_LLM_CALLS_DISABLED" in info.value.message
    assert server.requests == []


def test_connection_refused_is_transient_network(sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(
        env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"},
        sleep=sleeps,
    )
    with pytest.raises(LlmError) as info:
        provider.complete(ask(retries=1, backoff_ms=1))
    assert info.value.category == "transient_network"
    assert f"127.0.0.1:{port}" in info.value.message
    assert sleeps.delays == [0.001]


def test_json_response_format_and_max_tokens(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("{}")), Reply(body=openai_text("{}")))
    provider = make(server, sleeps)
    provider.complete(ask(response_format="json", max_tokens=50))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    provider.complete(
        LlmRequest(
            messages=[Message(role="user", content="x")], model="o3-mini", output_schema=schema
        )
    )
    first, second = (r.body for r in server.requests_to(CHAT_PATH))
    assert first["response_format"] == {"type": "json_object"}
    assert first["max_tokens"] == 50
    assert second["response_format"]["json_schema"]["schema"] == schema


def test_ollama_preset_targets_ollama_host(server, sleeps):
    server.queue(CHAT_PATH, Reply(body=openai_text("from ollama")))
    provider = OpenAIProvider("ollama", env={"OLLAMA_HOST": server.root_url}, sleep=sleeps)
    resp = provider.complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert resp.text == "from ollama" and resp.provider == "ollama"
    assert server.requests_to(CHAT_PATH)[0].body["model"] == "llama3.2"
