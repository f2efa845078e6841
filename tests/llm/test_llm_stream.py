"""``llm_stream``: the answer as a closed channel of text chunks; a failure is the last
(only) item (harnpy/lifecycle/llm_stream.py; Harn ``llm/streaming.md``)."""

from __future__ import annotations

from harnpy.lifecycle.llm_stream import chunks
from tests.agents.conftest import lines


def test_chunks_join_back() -> None:
    text = "  Once upon\na time,  there was\t a parser. "
    parts = chunks(text)
    assert "".join(parts) == text
    assert parts[0] == "  " and parts[1] == "Once "
    assert chunks("") == []


def test_stream_yields_the_answer(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({text: "Tell me a story about parsers"})
  let ch = llm_stream("story", "You are a storyteller", {provider: "mock"})
  var parts = []
  for chunk in ch {
    parts = parts.push(chunk)
  }
  println(len(parts))
  println(join(parts, ""))
  println(llm_mock_calls()[0].system)
}
"""
    )
    got = lines(out)
    assert got[0] == "6"
    assert got[1] == "Tell me a story about parsers"
    assert got[2] == "You are a storyteller"


def test_stream_failure_is_the_last_item(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({error: {category: "auth", message: "bad key"}})
  var items = []
  for item in llm_stream("x", nil, {provider: "mock"}) {
    items = items.push(item)
  }
  println(len(items))
  println([items[0].category, items[0].message])
  var budget_items = []
  for item in llm_stream("x", nil, {provider: "mock", model: "claude-opus-4", max_tokens: 1000, budget: {max_cost_usd: 0.00001}}) {
    budget_items = budget_items.push(item)
  }
  println(budget_items[0].reason)
  println(unwrap_err(try { llm_stream("x", nil, {provider: "mock", budget: 3}) }).category)
}
"""
    )
    got = lines(out)
    assert got[0] == "1"
    assert got[1] == "[auth, bad key]"
    assert got[2] == "budget_exceeded"
    assert got[3] == "config"
