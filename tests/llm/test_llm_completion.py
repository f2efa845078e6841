"""``llm_completion``, ``llm_pick_model`` and the ``model_tier`` option
(harnpy/lifecycle/llm_stream.py, catalog_builtins.py, harnpy/llm/options.py)."""

from __future__ import annotations

import pytest

from harnpy.llm import catalog
from harnpy.llm.errors import LlmError
from harnpy.llm.options import build_request
from tests.agents.conftest import lines


def test_completion_asks_for_the_gap(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  let r = llm_completion("let total = ", ";", nil, {provider: "mock", model_tier: "small"})
  println(r.text)
  println(r.model)
  let call = llm_mock_calls()[0]
  println(contains(call.messages[0].content, "let total = "))
  println(contains(call.system, "gap"))
  llm_mock({text: "a + b"})
  let scripted = llm_completion("fn add(a, b) { return ", nil, "Rust code.", {provider: "mock"})
  println(scripted.text)
  println(starts_with(llm_mock_calls()[1].system, "Rust code."))
  println(unwrap_err(try { llm_completion(1, "") }))
}
"""
    )
    got = lines(out)
    assert got[0] == "Mock completion after 12 chars before 1 chars"
    assert got[1] == catalog.bundled()["aliases"]["small"]["id"]
    assert got[2:4] == ["true", "true"]
    assert got[4] == "a + b"
    assert got[5] == "true"
    assert "prefix must be a string" in got[6]


def test_model_tier_option() -> None:
    req = build_request("q", None, {"model_tier": "frontier"})
    alias = catalog.bundled()["aliases"]["frontier"]
    assert (req.model, req.provider) == (alias["id"], alias["provider"])
    mocked = build_request("q", None, {"model_tier": "mid", "provider": "mock"})
    assert (mocked.model, mocked.provider) == ("gpt-4o-mini", "mock")
    explicit = build_request("q", None, {"model_tier": "mid", "model": "o3"})
    assert explicit.model == "o3"
    with pytest.raises(LlmError, match="model_tier` must be one of"):
        build_request("q", None, {"model_tier": "huge"})


def test_pick_model(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  let f = llm_pick_model("frontier")
  println([f.provider, f.tier, f.alias, f.model == f.id])
  let m = llm_pick_model("mid", {provider: "anthropic"})
  println([m.provider, m.tier])
  println(llm_pick_model("small").provider)
  println(unwrap_err(try { llm_pick_model("gigantic") }))
}
"""
    )
    got = lines(out)
    assert got[0] == "[anthropic, frontier, frontier, true]"
    assert got[1] == "[anthropic, mid]"
    assert got[2] == catalog.bundled()["aliases"]["small"]["provider"]
    assert "unknown tier 'gigantic'" in got[3]
