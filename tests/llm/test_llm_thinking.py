"""The ``thinking`` option: one normalized config, lowered by the Anthropic and OpenAI
request builders (harnpy/llm/options.py; Harn ``llm/llm_call.md``, option ``thinking``)."""

from __future__ import annotations

import pytest

from harnpy.llm.anthropic_provider import build_messages_body
from harnpy.llm.errors import LlmError
from harnpy.llm.mock import MockProvider
from harnpy.llm.openai_provider import build_chat_body
from harnpy.llm.options import (
    anthropic_thinking,
    build_request,
    normalize_thinking,
    openai_reasoning,
)


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (None, None),
        (True, {"mode": "enabled"}),
        (False, {"mode": "disabled"}),
        ("adaptive", {"mode": "adaptive"}),
        ({"budget_tokens": 3000}, {"mode": "enabled", "budget_tokens": 3000}),
        ({"mode": "enabled", "budget_tokens": 8000}, {"mode": "enabled", "budget_tokens": 8000}),
        ({"mode": "effort"}, {"mode": "effort", "level": "medium"}),
        ({"level": "high"}, {"mode": "effort", "level": "high"}),
        ({"mode": "disabled"}, {"mode": "disabled"}),
    ],
)
def test_normalize_thinking_forms(given, want) -> None:  # type: ignore[no-untyped-def]
    assert normalize_thinking(given) == want


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"mode": "turbo"}, "thinking mode must be one of"),
        ({"mode": "effort", "level": "max"}, "thinking level must be one of"),
        ({"budget_tokens": 0}, "budget_tokens must be a positive int"),
        ({"budget_tokens": "8k"}, "budget_tokens must be a positive int"),
        (3, "must be a bool or a dict, got int"),
    ],
)
def test_normalize_thinking_rejects(given, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LlmError, match=message) as info:
        normalize_thinking(given)
    assert info.value.category == "config"


def test_anthropic_lowering() -> None:
    assert anthropic_thinking({"mode": "disabled"}, 8192) is None
    assert anthropic_thinking(None, 8192) is None
    assert anthropic_thinking({"mode": "adaptive"}, 8192) == {"type": "adaptive"}
    assert anthropic_thinking({"mode": "enabled", "budget_tokens": 5000}, 8192) == {
        "type": "enabled",
        "budget_tokens": 5000,
    }
    # the budget stays below max_tokens and at least 1024
    assert anthropic_thinking({"budget_tokens": 50_000}, 4096)["budget_tokens"] == 4095  # type: ignore[index]
    assert anthropic_thinking({"budget_tokens": 10}, 4096)["budget_tokens"] == 1024  # type: ignore[index]
    assert anthropic_thinking({"mode": "effort", "level": "none"}, 8192) is None
    low = anthropic_thinking({"mode": "effort", "level": "low"}, 8192)
    high = anthropic_thinking({"mode": "effort", "level": "high"}, 16_000)
    assert low is not None and high is not None
    assert low["budget_tokens"] < high["budget_tokens"]


def test_openai_lowering() -> None:
    assert openai_reasoning(None) == {}
    assert openai_reasoning({"mode": "disabled"}) == {}
    assert openai_reasoning({"mode": "effort", "level": "high"}) == {"reasoning_effort": "high"}
    assert openai_reasoning({"mode": "enabled"}) == {"reasoning_effort": "medium"}
    assert openai_reasoning({"budget_tokens": 20_000}) == {"reasoning_effort": "high"}
    assert openai_reasoning({"budget_tokens": 1024}) == {"reasoning_effort": "low"}


def test_request_builders_send_the_config() -> None:
    req = build_request("q", None, {"model": "o3", "thinking": {"mode": "effort", "level": "low"}})
    assert req.thinking == {"mode": "effort", "level": "low"}
    assert build_chat_body(req, "o3")["reasoning_effort"] == "low"
    plain = build_request("q", None, {"model": "gpt-4o"})
    assert "reasoning_effort" not in build_chat_body(plain, "gpt-4o")
    areq = build_request("q", None, {"thinking": {"mode": "adaptive"}})
    assert build_messages_body(areq, "claude-opus-4-7")["thinking"] == {"type": "adaptive"}
    off = build_request("q", None, {"thinking": False})
    assert "thinking" not in build_messages_body(off, "claude-opus-4-7")


def test_mock_records_normalized_config_and_summary() -> None:
    mock = MockProvider()
    mock.push({"text": "done", "thinking_summary": "checked constraints"})
    resp = mock.complete(build_request("q", None, {"thinking": True}))
    assert mock.calls()[0]["thinking"] == {"mode": "enabled"}
    assert resp.thinking_summary == "checked constraints"
    assert resp.to_harn_fields()["thinking_summary"] == "checked constraints"
    plain = mock.complete(build_request("q", None, None))
    assert "thinking_summary" not in plain.to_harn_fields()
