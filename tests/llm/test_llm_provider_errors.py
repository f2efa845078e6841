"""Error categories, envelope kind/reason and retry waits of both SDK providers against a
scripted local server (real SDK code paths): rate-limit reset headers, quota and context
errors, Anthropic error types, empty completions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fake_llm_server import (
    CHAT_PATH,
    MESSAGES_PATH,
    Reply,
    anthropic_text,
    error_body,
    openai_text,
)

from harnpy.llm import LlmError, LlmRequest, Message
from harnpy.llm._retry import parse_rate_limit_reset, parse_reset_duration
from harnpy.llm.anthropic_provider import AnthropicProvider
from harnpy.llm.openai_provider import OpenAIProvider


def openai(server, sleeps):
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    return OpenAIProvider(env=env, sleep=sleeps)


def anthropic(server, sleeps):
    env = {"ANTHROPIC_API_KEY": "ak-test", "ANTHROPIC_BASE_URL": server.root_url}
    return AnthropicProvider(env=env, sleep=sleeps)


def ask(model="gpt-4o", **kw):
    return LlmRequest(messages=[Message(role="user", content="hi")], model=model, **kw)


def openai_error(message: str, code: str, type_: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": type_, "code": code, "param": None}}


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("2", 2.0)],
)
def test_reset_durations(raw: str, seconds: float) -> None:
    assert parse_reset_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "soon", "1x", "s1", "-1"])
def test_bad_reset_durations_are_ignored(raw: str) -> None:
    assert parse_reset_duration(raw) is None


def test_rate_limit_reset_headers_in_order_and_anthropic_timestamps() -> None:
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert parse_rate_limit_reset({"x-ratelimit-reset-tokens": "3s"}, now) == 3.0
    both = {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "9s"}
    assert parse_rate_limit_reset(both, now) == 1.0
    stamp = {"anthropic-ratelimit-requests-reset": "2026-12-02T00:00:12Z"}
    assert parse_rate_limit_reset(stamp, now) == 12.0
    past = {"anthropic-ratelimit-tokens-reset": "2026-12-01T00:00:00Z"}
    assert parse_rate_limit_reset(past, now) == 0.0
    assert parse_rate_limit_reset({"x-ratelimit-reset-requests": "never"}, now) is None


def test_a_429_without_retry_after_waits_for_the_openai_reset(server, sleeps) -> None:
    busy = Reply(
        status=429,
        body=openai_error("Rate limit reached", "rate_limit_exceeded", "requests"),
        headers={"x-ratelimit-reset-requests": "1.5s"},
    )
    server.queue(CHAT_PATH, busy, Reply(body=openai_text("ok")))
    assert openai(server, sleeps).complete(ask(retries=1, backoff_ms=10)).text == "ok"
    assert sleeps.delays == [1.5]


def test_retry_after_wins_over_the_reset_headers(server, sleeps) -> None:
    server.queue(
        CHAT_PATH,
        Reply(
            status=429,
            body=error_body("slow"),
            headers={"retry-after": "2", "x-ratelimit-reset-requests": "30s"},
        ),
    )
    with pytest.raises(LlmError) as info:
        openai(server, sleeps).complete(ask(retries=0))
    assert info.value.envelope()["retry_after_ms"] == 2000


def test_insufficient_quota_is_terminal_and_not_retried(server, sleeps) -> None:
    quota = Reply(
        status=429,
        body=openai_error("You exceeded your current quota", "insufficient_quota"),
        headers={"x-ratelimit-reset-requests": "1s"},
    )
    server.queue(CHAT_PATH, quota, Reply(body=openai_text("never")))
    with pytest.raises(LlmError) as info:
        openai(server, sleeps).complete(ask(retries=3))
    env = info.value.envelope()
    assert (env["category"], env["kind"], env["reason"]) == (
        "rate_limit",
        "terminal",
        "quota_exceeded",
    )
    assert "retry_after_ms" not in env
    assert (env["provider"], env["model"], env["status"]) == ("openai", "gpt-4o", 429)
    assert len(server.requests_to(CHAT_PATH)) == 1 and sleeps.delays == []


def test_context_length_exceeded_is_a_terminal_context_overflow(server, sleeps) -> None:
    server.queue(
        CHAT_PATH,
        Reply(status=400, body=openai_error("too many tokens", "context_length_exceeded")),
    )
    with pytest.raises(LlmError) as info:
        openai(server, sleeps).complete(ask(retries=2))
    env = info.value.envelope()
    assert (env["category"], env["kind"], env["reason"]) == (
        "bad_request",
        "terminal",
        "context_overflow",
    )
    assert len(server.requests_to(CHAT_PATH)) == 1


@pytest.mark.parametrize(
    ("status", "etype", "category", "reason"),
    [
        (500, "api_error", "server_error", "server_error"),
        (529, "overloaded_error", "overloaded", "server_error"),
        (401, "authentication_error", "auth", "auth"),
        (403, "permission_error", "auth", "auth"),
        (404, "not_found_error", "not_found", "not_found"),
        (413, "request_too_large", "bad_request", "request_too_large"),
        (400, "invalid_request_error", "bad_request", "invalid_request"),
    ],
)
def test_anthropic_error_types(server, sleeps, status, etype, category, reason) -> None:
    server.queue(MESSAGES_PATH, Reply(status=status, body=error_body("nope", etype)))
    with pytest.raises(LlmError) as info:
        anthropic(server, sleeps).complete(ask("claude-sonnet-5", retries=0))
    env = info.value.envelope()
    assert (env["category"], env["reason"], env["status"]) == (category, reason, status)
    assert (env["provider"], env["model"]) == ("anthropic", "claude-sonnet-5")


def test_anthropic_prompt_too_long_is_a_context_overflow(server, sleeps) -> None:
    body = error_body("prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error")
    server.queue(MESSAGES_PATH, Reply(status=400, body=body))
    with pytest.raises(LlmError) as info:
        anthropic(server, sleeps).complete(ask("claude-sonnet-5", retries=0))
    assert info.value.classified() == ("terminal", "context_overflow")


def test_anthropic_2xx_error_envelope_uses_the_error_type(server, sleeps) -> None:
    server.queue(MESSAGES_PATH, Reply(body=error_body("try later", "overloaded_error")))
    with pytest.raises(LlmError) as info:
        anthropic(server, sleeps).complete(ask("claude-sonnet-5", retries=0))
    assert info.value.category == "overloaded" and info.value.retryable


def test_openai_2xx_quota_envelope_is_terminal(server, sleeps) -> None:
    server.queue(CHAT_PATH, Reply(body=openai_error("quota", "insufficient_quota")))
    with pytest.raises(LlmError) as info:
        openai(server, sleeps).complete(ask(retries=2))
    assert info.value.classified() == ("terminal", "quota_exceeded")
    assert len(server.requests_to(CHAT_PATH)) == 1


def _empty_openai() -> dict:
    body = openai_text("")
    body["usage"]["completion_tokens"] = 5
    return body


def test_an_empty_openai_completion_is_a_transient_error_and_retried(server, sleeps) -> None:
    server.queue(CHAT_PATH, Reply(body=_empty_openai()), Reply(body=_empty_openai()))
    with pytest.raises(LlmError) as info:
        openai(server, sleeps).complete(ask(retries=0))
    err = info.value
    assert err.category == "server_error" and err.classified() == (
        "transient",
        "empty_completion",
    )
    assert "reported completion_tokens=5 but delivered no content" in err.message
    server.queue(CHAT_PATH, Reply(body=openai_text("there it is")))
    assert openai(server, sleeps).complete(ask(retries=1, backoff_ms=1)).text == "there it is"


def test_an_empty_answer_without_output_tokens_is_not_an_error(server, sleeps) -> None:
    body = openai_text("")
    body["usage"]["completion_tokens"] = 0
    server.queue(CHAT_PATH, Reply(body=body))
    assert openai(server, sleeps).complete(ask(retries=0)).text == ""


def test_an_empty_anthropic_completion_is_a_transient_error(server, sleeps) -> None:
    body = anthropic_text("")
    body["content"] = []
    server.queue(MESSAGES_PATH, Reply(body=body))
    with pytest.raises(LlmError) as info:
        anthropic(server, sleeps).complete(ask("claude-sonnet-5", retries=0))
    assert info.value.classified() == ("transient", "empty_completion")
    assert info.value.provider == "anthropic"
