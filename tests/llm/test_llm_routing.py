"""Provider selection rules, request building from llm_call options, Retry-After parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harnpy.llm import LlmError, build_request, resolve_route, select_provider
from harnpy.llm._retry import backoff_delay, parse_retry_after
from harnpy.shapes import unstructure


@pytest.mark.parametrize(
    ("options", "env", "provider"),
    [
        # 1. explicit provider wins (case-insensitive, fake = mock)
        ({"provider": "openai", "model": "claude-x"}, {}, "openai"),
        ({"provider": "Anthropic"}, {"HARN_LLM_PROVIDER": "openai"}, "anthropic"),
        ({"provider": "fake"}, {}, "mock"),
        # 2. provider prefix on the model
        ({"model": "ollama:qwen3:8b"}, {"HARN_LLM_PROVIDER": "openai"}, "ollama"),
        ({"provider": "auto", "model": "mock:anything"}, {}, "mock"),
        # 3. HARN_LLM_PROVIDER beats name heuristics
        ({"model": "gpt-oss:20b"}, {"HARN_LLM_PROVIDER": "ollama"}, "ollama"),
        ({}, {"HARN_LLM_PROVIDER": "mock"}, "mock"),
        ({"provider": "auto"}, {"HARN_LLM_PROVIDER": "auto", "OPENAI_API_KEY": "k"}, "openai"),
        # 4. model names
        ({"model": "mock"}, {}, "mock"),
        ({"model": "claude-opus-5"}, {"OPENAI_BASE_URL": "http://x/v1"}, "anthropic"),
        ({"model": "gpt-4o"}, {}, "openai"),
        ({"model": "o3-mini"}, {}, "openai"),
        ({"model": "o4-mini"}, {}, "openai"),
        ({"model": "o1"}, {}, "openai"),
        ({"model": "GPT-5"}, {}, "openai"),
        # model from the environment
        ({}, {"HARNPY_MODEL": "claude-haiku-4-5"}, "anthropic"),
        ({}, {"HARN_LLM_MODEL": "gpt-4o-mini"}, "openai"),
        # 5. OPENAI_BASE_URL routes unknown names to openai
        ({"model": "llama-3.1-8b"}, {"OPENAI_BASE_URL": "http://localhost:8000/v1"}, "openai"),
        ({}, {"OPENAI_BASE_URL": "http://localhost:8000/v1", "ANTHROPIC_API_KEY": "k"}, "openai"),
        # 6. ollama tags
        ({"model": "qwen2.5:7b"}, {}, "ollama"),
        # 8. no model: keys decide, anthropic last
        ({}, {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}, "anthropic"),
        ({}, {"OPENAI_API_KEY": "o"}, "openai"),
        ({}, {}, "anthropic"),
    ],
)
def test_select_provider_table(options, env, provider):
    assert select_provider(options, env) == provider


def test_route_strips_prefix_and_uses_env_model():
    assert resolve_route({"model": "ollama:qwen3:8b"}, {}).model == "qwen3:8b"
    assert resolve_route({}, {"HARNPY_MODEL": "gpt-4o-mini"}).model == "gpt-4o-mini"
    assert resolve_route({"model": "gpt-4o"}, {"HARNPY_MODEL": "x"}).model == "gpt-4o"
    assert resolve_route({}, {}).model is None


def test_unknown_model_name_is_a_clear_config_error():
    with pytest.raises(LlmError) as info:
        select_provider({"model": "llama3"}, {})
    assert info.value.category == "config"
    assert "llama3" in info.value.message and "provider" in info.value.message


def test_unknown_provider_lists_known_ones():
    with pytest.raises(LlmError) as info:
        select_provider({"provider": "gemini"}, {})
    assert info.value.message == (
        "unknown LLM provider 'gemini' (known: mock, openai, anthropic, ollama, local, auto)"
    )


# -- build_request ----------------------------------------------------------------------------
def test_build_request_maps_harn_options():
    registry = {
        "tools": [
            {"name": "read", "description": "Read a file", "parameters": {"path": "string"}},
            {
                "name": "grep",
                "parameters": {
                    "pattern": {"type": "string", "description": "regex"},
                    "limit": {"type": "integer", "required": False},
                    "glob": {"type": "string", "default": "*"},
                },
            },
        ]
    }
    request = build_request(
        "hello",
        "be nice",
        {
            "provider": "mock",
            "model": "m",
            "tools": registry,
            "tool_format": "native",
            "max_tokens": 100,
            "temperature": 0.5,
            "timeout": 30,
            "llm_retries": 4,
            "llm_backoff_ms": 10,
            "response_format": "json",
            "schema": {"type": "object"},
            "max_iterations": 3,  # agent_loop option: ignored here
            "api_key": "secret",
        },
    )
    assert unstructure(request.messages[0], exclude_defaults=True) == {
        "role": "user",
        "content": "hello",
    }
    assert request.system == "be nice"
    assert (request.timeout_s, request.retries, request.backoff_ms) == (30, 4, 10)
    assert request.output_schema == {"type": "object"}
    read, grep = request.tools or []
    assert read.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    assert grep.parameters["required"] == ["pattern"]
    assert grep.parameters["properties"]["limit"] == {"type": "integer"}
    assert "secret" not in repr(request) and "api_key" not in request.to_dict()


def test_build_request_messages_option_and_openai_shapes():
    request = build_request(
        None,
        None,
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "f", "arguments": '{"x": 1}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "1", "extra": "ignored"},
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            "timeout_ms": 1500,
        },
    )
    assert request.messages[1].tool_calls[0].arguments == {"x": 1}
    assert request.timeout_s == 1.5
    assert request.tools and request.tools[0].name == "f"


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"max_tokens": "many"}, "option `max_tokens`"),
        ({"tool_format": "xml"}, "option `tool_format`"),
        ({"messages": "nope"}, "option `messages` must be a list"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]"),
        ({"tools": [{"description": "no name"}]}, "non-empty string `name`"),
        ({"llm_retries": -1}, "option `llm_retries`"),
        ({"timeout": "soon"}, "option `timeout`"),
    ],
)
def test_build_request_errors_are_one_line_config_errors(options, fragment):
    with pytest.raises(LlmError) as info:
        build_request("p", None, options)
    assert info.value.category == "config"
    assert fragment in info.value.message
    assert "\n" not in info.value.message


# -- Retry-After ------------------------------------------------------------------------------
def test_parse_retry_after_forms():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 12:00:09 GMT"}, now) == 9.0
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None


def test_backoff_delay():
    assert [backoff_delay(n, 250, None) for n in range(3)] == [0.25, 0.5, 1.0]
    assert backoff_delay(5, 250, 4.0) == 4.0
    assert backoff_delay(0, 250, 10_000.0) == 120.0
