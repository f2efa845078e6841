"""The LLM error envelope (``harnpy.llm.errors``): classification, the one builder, mock
error entries that script it, and the envelope an ``LlmHost`` failure carries."""

from __future__ import annotations

import pytest

from harnpy.llm import LlmError, LlmHost, build_request, parse_mock_entry
from harnpy.llm.errors import classify, envelope_from_value, llm_error_envelope

EMPTY = (
    "openai-compatible model m reported completion_tokens=1 but delivered no content, "
    "reasoning, or tool calls"
)


@pytest.mark.parametrize(
    ("category", "message", "expected"),
    [
        ("rate_limit", "429", ("transient", "rate_limit")),
        ("overloaded", "529 overloaded", ("transient", "server_error")),
        ("server_error", "500", ("transient", "server_error")),
        ("server_error", EMPTY, ("transient", "empty_completion")),
        ("timeout", "timed out", ("transient", "timeout")),
        ("transient_network", "reset", ("transient", "network")),
        ("auth", "401", ("terminal", "auth")),
        ("not_found", "404", ("terminal", "not_found")),
        ("bad_request", "400 bad field", ("terminal", "invalid_request")),
        ("bad_request", "maximum context length is 8192", ("terminal", "context_overflow")),
        ("budget_exceeded", "over", ("terminal", "budget_exceeded")),
        ("schema_validation", "bad", ("terminal", "schema_validation")),
        ("generic", "boom", ("terminal", "unknown")),
        ("provider", "a category only a mock knows", ("terminal", "unknown")),
    ],
)
def test_classify_gives_kind_and_reason(
    category: str, message: str, expected: tuple[str, str]
) -> None:
    assert classify(category, message) == expected


def test_the_envelope_has_harns_fields_and_omits_an_absent_retry_after() -> None:
    env = llm_error_envelope("overloaded", "529 overloaded", provider="mock", model="m")
    assert env == {
        "kind": "transient",
        "reason": "server_error",
        "category": "overloaded",
        "message": "529 overloaded",
        "provider": "mock",
        "model": "m",
    }
    with_retry = llm_error_envelope("rate_limit", "429", retry_after_ms=2500, status=429)
    assert with_retry["retry_after_ms"] == 2500 and with_retry["status"] == 429
    assert with_retry["provider"] is None and with_retry["model"] is None


def test_extra_fields_come_last_and_never_replace_the_standard_ones() -> None:
    env = llm_error_envelope(
        "budget_exceeded", "too dear", projected_cost_usd=0.5, limit="max_cost_usd"
    )
    assert (env["kind"], env["reason"]) == ("terminal", "budget_exceeded")
    assert env["projected_cost_usd"] == 0.5 and env["limit"] == "max_cost_usd"
    assert list(env)[-2:] == ["projected_cost_usd", "limit"]


def test_envelope_from_value_completes_dicts_and_wraps_other_values() -> None:
    old = {"category": "rate_limit", "message": "slow", "retry_after_ms": 10, "hint": "x"}
    env = envelope_from_value(old, provider="openai", model="gpt-4o")
    assert env["kind"] == "transient" and env["reason"] == "rate_limit"
    assert env["retry_after_ms"] == 10 and env["hint"] == "x"
    assert (env["provider"], env["model"]) == ("openai", "gpt-4o")
    scripted = envelope_from_value({"category": "auth", "message": "no", "kind": "transient"})
    assert scripted["kind"] == "transient"  # an explicit kind is kept
    text = envelope_from_value("plain failure")
    assert (text["category"], text["kind"], text["message"]) == (
        "generic",
        "terminal",
        "plain failure",
    )


def test_llm_error_envelope_and_retryable_follow_an_explicit_kind() -> None:
    err = LlmError("auth", "401", 401, kind="transient", reason="key_rotating")
    assert err.retryable
    assert err.envelope()["reason"] == "key_rotating"
    assert not LlmError("rate_limit", "429", kind="terminal").retryable
    assert LlmError("rate_limit", "429").retryable
    assert LlmError("rate_limit", "429", retry_after_s=1.5).envelope()["retry_after_ms"] == 1500


def test_a_status_only_mock_error_takes_its_category_from_the_status() -> None:
    entry = parse_mock_entry(
        {"error": {"status": 503, "kind": "transient", "reason": "upstream_unavailable"}}
    )
    assert entry.error is not None
    err = entry.error.to_llm_error()
    assert (err.category, err.status, err.retryable) == ("overloaded", 503, True)
    assert err.envelope()["reason"] == "upstream_unavailable"
    assert parse_mock_entry({"error": {"message": "x"}}).error.to_llm_error().category == (
        "generic"
    )


def test_a_mock_error_kind_must_be_transient_or_terminal() -> None:
    with pytest.raises(LlmError, match="kind"):
        parse_mock_entry({"error": {"category": "x", "kind": "sometimes"}})


def test_host_failures_name_the_routed_provider_and_model() -> None:
    host = LlmHost(env={})
    host.mock.push({"error": {"category": "rate_limit", "message": "429"}})
    with pytest.raises(LlmError) as info:
        host.complete(build_request("hi", None, {"provider": "mock", "model": "mock-model"}))
    assert (info.value.provider, info.value.model) == ("mock", "mock-model")
    host.mock.push({"error": {"category": "overloaded", "message": "529"}})
    with pytest.raises(LlmError) as info:
        host.complete(build_request("hi", None, {"provider": "mock"}))
    assert (info.value.provider, info.value.model) == ("mock", "mock")
    disabled = LlmHost(env={"HARN_LLM_CALLS_DISABLED": "1", "OPENAI_API_KEY": "k"})
    with pytest.raises(LlmError) as info:
        disabled.complete(build_request("hi", None, {"provider": "openai", "model": "gpt-4o"}))
    assert info.value.category == "disabled"
    assert (info.value.provider, info.value.model) == ("openai", "gpt-4o")


def test_mock_snapshot_state_round_trips_and_refuses_damage() -> None:
    from harnpy.llm import MockProvider

    mock = MockProvider()
    assert mock.snapshot_state() is None
    mock.push({"text": "a"})
    mock.push({"text": "b"})
    mock.complete(build_request("one"))
    state = mock.snapshot_state()
    assert state is not None and [e["text"] for e in state["queue"]] == ["b"]
    other = MockProvider()
    other.check_snapshot_state(state)()
    assert other.calls() == mock.calls() and other.pending() == 1
    assert other.complete(build_request("two")).text == "b"
    for bad in (
        [],
        {"queue": []},
        {"queue": [{"text": 1}], "calls": []},
        {
            "queue": [],
            "calls": [{"keep": 3, "tail": [], "system": None, "tools": None, "thinking": None}],
        },
        {
            "queue": [],
            "calls": [{"keep": 0, "tail": "x", "system": None, "tools": None, "thinking": None}],
        },
    ):
        with pytest.raises(ValueError):
            MockProvider().check_snapshot_state(bad)
