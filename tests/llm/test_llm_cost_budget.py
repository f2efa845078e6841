"""LLM cost builtins, the session budget and the ``budget`` option's preflight
(harnpy/lifecycle/llm_session.py; Harn ``llm/llm_call.md``, "Cost tracking")."""

from __future__ import annotations

import pytest

from harnpy.llm import catalog
from harnpy.llm.errors import LlmError
from harnpy.llm.options import build_request, parse_budget
from harnpy.llm.types import Usage
from tests.agents.conftest import lines


def test_llm_cost_uses_catalog_prices(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  println(llm_cost("gpt-4o-mini", 1000, 500))
  println(llm_cost("claude-opus-4-20250514", 2000, 100))
  println(llm_cost("mid", 1000000, 0))
  println(llm_cost("unknown-model", 1000, 500))
  println(unwrap_err(try { llm_cost("gpt-4o", -1, 0) }))
  println(unwrap_err(try { llm_cost(nil, 1, 1) }))
}
"""
    )
    got = lines(out)
    # gpt-4o-mini: $0.15 / $0.60 per million tokens
    assert float(got[0]) == pytest.approx(1000 * 0.15 / 1e6 + 500 * 0.60 / 1e6)
    opus = catalog.pricing("claude-opus-4")
    assert opus is not None
    assert float(got[1]) == pytest.approx(
        (2000 * opus["input_per_mtok"] + 100 * opus["output_per_mtok"]) / 1e6
    )
    assert float(got[2]) == pytest.approx(0.15)  # the `mid` alias is gpt-4o-mini
    assert got[3] == "0.0"
    assert "input_tokens must be a non-negative int" in got[4]
    assert "model must be a string" in got[5]


def test_cache_tokens_are_priced_at_cache_rates() -> None:
    p = catalog.pricing("claude-sonnet-4")
    assert p is not None
    got = catalog.cost_usd(
        "claude-sonnet-4", 100, 10, cache_read_tokens=1000, cache_write_tokens=50
    )
    want = (
        100 * p["input_per_mtok"]
        + 10 * p["output_per_mtok"]
        + 1000 * p["cached_input_per_mtok"]
        + 50 * p["cache_write_per_mtok"]
    ) / 1e6
    assert got == pytest.approx(want)


def test_session_cost_counts_every_answer(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  let z = llm_session_cost()
  println([z.total_cost, z.input_tokens, z.output_tokens, z.cache_read_tokens, z.cache_write_tokens, z.call_count])
  llm_mock({text: "a", input_tokens: 1000, output_tokens: 200, model: "gpt-4o-mini"})
  llm_mock({text: "b", input_tokens: 500, output_tokens: 100, cache_read_tokens: 300, model: "gpt-4o-mini"})
  llm_call("one", nil, {provider: "mock", model: "gpt-4o-mini"})
  llm_call("two", nil, {provider: "mock", model: "gpt-4o-mini"})
  let s = llm_session_cost()
  println(s.call_count)
  println(s.input_tokens)
  println(s.output_tokens)
  println(s.cache_read_tokens)
  println(s.total_cost)
}
"""
    )
    got = lines(out)
    assert got[0] == "[0.0, 0, 0, 0, 0, 0]"
    assert got[1:5] == ["2", "1500", "300", "300"]
    want = catalog.cost_usd("gpt-4o-mini", 1000, 200) + catalog.cost_usd(
        "gpt-4o-mini", 500, 100, cache_read_tokens=300
    )
    assert float(got[5]) == pytest.approx(want)


def test_session_budget_remaining_and_exceeded(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  println(llm_budget_remaining())
  llm_budget(0.01)
  llm_mock({text: "a", input_tokens: 10000, output_tokens: 10000, model: "gpt-4o-mini"})
  llm_call("one", nil, {provider: "mock", model: "gpt-4o-mini", max_tokens: 10})
  println(llm_budget_remaining())
  llm_budget(0.0075)
  let r = try { llm_call("two", nil, {provider: "mock", model: "gpt-4o-mini", max_tokens: 10}) }
  let e = unwrap_err(r)
  println(e.category + " " + e.kind + " " + e.limit)
  println(len(llm_mock_calls()))
  llm_budget_clear()
  println(llm_budget_remaining())
  println(unwrap_err(try { llm_budget(-1) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "nil"
    spent = catalog.cost_usd("gpt-4o-mini", 10000, 10000)
    assert float(got[1]) == pytest.approx(0.01 - spent)
    assert got[2] == "budget_exceeded terminal llm_budget"
    assert got[3] == "1"  # the over-budget call never reached the provider
    assert got[4] == "nil"
    assert "must be a non-negative number" in got[5]


def test_budget_option_preflight_limits(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  let opus = {provider: "mock", model: "claude-opus-4-20250514", max_tokens: 1024}
  let e1 = unwrap_err(try { llm_call("hi", nil, opus + {budget: {max_cost_usd: 0.0001}}) })
  println([e1.kind, e1.reason, e1.category, e1.limit, e1.provider, e1.model])
  println(e1.projected_cost_usd > 0.0001)
  println(e1.projected_output_tokens)
  let e2 = unwrap_err(try { llm_call("a prompt of several tokens", nil, opus + {budget: {max_input_tokens: 2}}) })
  println(e2.limit + " " + to_string(e2.projected_input_tokens > 2))
  let e3 = unwrap_err(try { llm_call("x", nil, opus + {budget: {max_output_tokens: 100}}) })
  println(e3.limit)
  println(len(llm_mock_calls()))
  let ok = llm_call("x", nil, opus + {budget: {max_cost_usd: 1.0, max_input_tokens: 100}})
  println(ok.provider)
  let bad = unwrap_err(try { llm_call("x", nil, {provider: "mock", budget: {max_usd: 1}}) })
  println(bad.category)
}
"""
    )
    got = lines(out)
    assert got[0] == (
        "[terminal, budget_exceeded, budget_exceeded, max_cost_usd, mock, claude-opus-4-20250514]"
    )
    assert got[1] == "true"
    assert got[2] == "1024"
    assert got[3] == "max_input_tokens true"
    assert got[4] == "max_output_tokens"
    assert got[5] == "0"
    assert got[6] == "mock"
    assert got[7] == "config"


def test_agent_loop_total_budget_ends_with_budget_exhausted(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({text: "never", input_tokens: 1, output_tokens: 1})
  let r = agent_loop("task", nil, {
    provider: "mock", model: "claude-opus-4-20250514", max_tokens: 1024, max_iterations: 2,
    budget: {total_budget_usd: 0.0001},
  })
  println(r.status)
  println(len(llm_mock_calls()))
  llm_mock_clear()
  let cheap = agent_loop("task", nil, {
    provider: "mock", model: "gpt-4o-mini", max_tokens: 16, max_iterations: 1,
    budget: {total_budget_usd: 1.0},
  })
  println(cheap.status)
}
"""
    )
    got = lines(out)
    assert got[0] == "budget_exhausted"
    assert got[1] == "0"
    assert got[2] == "done"


def test_parse_budget_validates() -> None:
    assert parse_budget(None) is None
    assert parse_budget({"max_cost_usd": 1, "max_input_tokens": None}) == {"max_cost_usd": 1}
    with pytest.raises(LlmError, match="unknown budget field `cost`"):
        parse_budget({"cost": 1})
    with pytest.raises(LlmError, match="max_input_tokens` must be a non-negative int"):
        parse_budget({"max_input_tokens": 1.5})
    with pytest.raises(LlmError, match="max_cost_usd` must be a non-negative number"):
        parse_budget({"max_cost_usd": -1})
    req = build_request("hi", None, {"budget": {"total_budget_usd": 2}})
    assert req.budget == {"total_budget_usd": 2}


def test_cache_usage_accounting() -> None:
    from harnpy.lifecycle.llm_session import cache_usage, response_cost

    p = catalog.pricing("claude-sonnet-4")
    assert p is not None
    u = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=300, cache_write_tokens=100)
    got = cache_usage("claude-sonnet-4", "anthropic", u)
    assert got["cache_creation_input_tokens"] == 100
    assert got["cache_hit_ratio"] == pytest.approx(300 / 500)
    want = (
        300 * (p["input_per_mtok"] - p["cached_input_per_mtok"])
        - 100 * (p["cache_write_per_mtok"] - p["input_per_mtok"])
    ) / 1e6
    assert got["cache_savings_usd"] == pytest.approx(want)
    assert got["served_fast"] is False
    # OpenAI counts cached tokens inside prompt_tokens: the ratio is over input_tokens and
    # the cached part is not charged twice
    o = Usage(input_tokens=1000, output_tokens=0, cache_read_tokens=400)
    assert cache_usage("gpt-4o", "openai", o)["cache_hit_ratio"] == pytest.approx(0.4)
    assert response_cost("gpt-4o", "openai", o) == pytest.approx(
        catalog.cost_usd("gpt-4o", 600, 0, cache_read_tokens=400)
    )


def test_session_state_is_snapshot_data(run) -> None:  # type: ignore[no-untyped-def]
    from harnpy.lifecycle import llm_session

    _, rt = run(
        """
pipeline main() {
  llm_budget(2.5)
  llm_mock({text: "a", input_tokens: 10, output_tokens: 5, model: "gpt-4o-mini"})
  llm_call("one", nil, {provider: "mock", model: "gpt-4o-mini"})
}
"""
    )

    class T:
        runtime = rt

    saved = llm_session._save(T())
    assert saved["budget_usd"] == 2.5 and saved["call_count"] == 1

    class Fresh:
        runtime = type("R", (), {})()

    apply = llm_session._load(Fresh(), saved)
    apply()
    assert llm_session.state(Fresh.runtime) == saved
    with pytest.raises(TypeError):
        llm_session._load(Fresh(), {"budget_usd": 1})


def test_llm_call_result_has_prompt_cache_accounting(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({text: "a", input_tokens: 100, output_tokens: 5, cache_read_tokens: 300,
            cache_write_tokens: 100, model: "claude-sonnet-4-20250514"})
  let r = llm_call("x", nil, {provider: "mock", model: "claude-sonnet-4-20250514"})
  println([r.usage.cache_creation_input_tokens, r.usage.cache_hit_ratio, r.usage.served_fast])
  println([r.cache_creation_input_tokens, r.cache_hit_ratio, r.served_fast])
  println(r.usage.cache_savings_usd == r.cache_savings_usd)
  println(r.cache_savings_usd)
}
"""
    )
    got = lines(out)
    assert got[0] == "[100, 0.6, false]"
    assert got[1] == "[100, 0.6, false]"
    assert got[2] == "true"
    p = catalog.pricing("claude-sonnet-4")
    assert p is not None
    want = (
        300 * (p["input_per_mtok"] - p["cached_input_per_mtok"])
        - 100 * (p["cache_write_per_mtok"] - p["input_per_mtok"])
    ) / 1e6
    assert float(got[3]) == pytest.approx(want)
