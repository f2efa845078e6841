"""Tool search (harnpy/lifecycle/tool_search.py): BM25 and regex ranking, client-mode
promotion and budget eviction inside agent loops (state that survives a snapshot),
native payloads and their capability gate, and the option's validation."""

from __future__ import annotations

from pathlib import Path

from harnpy.lifecycle.tool_search import bm25, regex_search, run_search
from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy

_DOCS = [
    {
        "name": "deploy_service",
        "description": "Deploy the production stack",
        "parameters": {"env": "string"},
        "defer_loading": True,
    },
    {
        "name": "query_metrics",
        "description": "Query observability metrics",
        "parameters": {"q": "string"},
        "defer_loading": True,
    },
    {
        "name": "rollback",
        "description": "Undo the last deploy of the service",
        "parameters": {},
        "defer_loading": True,
    },
]


def test_bm25_ranks_by_term_weight_and_ignores_non_matches() -> None:
    hits = [n for _, n in bm25("deploy service", _DOCS)]
    assert hits[0] == "deploy_service" and "rollback" in hits and "query_metrics" not in hits
    assert bm25("nothing here", _DOCS) == []


def test_regex_is_case_insensitive_re2() -> None:
    assert [n for _, n in regex_search("QUERY|undo", _DOCS)] == ["query_metrics", "rollback"]


def test_budget_evicts_the_oldest_promotion() -> None:
    state = {
        "config": {"variant": "bm25", "max_results": 1, "budget_tokens": 60, "name": "s"},
        "promoted": [],
    }
    state, first = run_search(_DOCS, state, "metrics")
    state, second = run_search(_DOCS, state, "undo")
    assert first["promoted"] == ["query_metrics"]
    assert second["evicted"] == ["query_metrics"] and state["promoted"] == ["rollback"]


_LOOP = """
pipeline main(task) {
  var r = tool_registry()
  r = tool_define(r, "base", "Always there", {parameters: {}, handler: { a -> "b" }})
  r = tool_define(r, "secret_op", "Rotate the credentials", {parameters: {}, defer_loading: true, handler: { a -> "rotated" }})
  llm_mock({text: "", tool_calls: [{id: "s", name: "__harn_tool_search", arguments: {query: "rotate credentials"}}]})
  llm_mock({text: "", tool_calls: [{id: "c", name: "secret_op", arguments: {}}]})
  llm_mock({text: "<done>##DONE##</done>"})
  let res = agent_loop("go", nil, {provider: "mock", tools: r, tool_search: {mode: "client"}, persistent: true, max_iterations: 4})
  let calls = llm_mock_calls()
  println(calls[0].tools.map({ t -> t.name }))
  println(calls[1].tools.map({ t -> t.name }))
  println(len(transcript_events_by_kind(res.transcript, "tool_search_result")))
}
"""


def test_client_mode_promotes_into_the_next_turn(run_harn: RunHarn) -> None:
    out, _ = run_harn(_LOOP)
    assert lines(out) == [
        "[base, __harn_tool_search]",
        "[base, secret_op, __harn_tool_search]",
        "1",
    ]


def test_promotions_survive_a_snapshot_of_the_loop(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    src = _LOOP.replace(
        'handler: { a -> "rotated" }',
        'handler: { a ->\n    __snapshot_exit(env("SNAP"))\n    return "rotated"\n  }',
    )
    prog.write_text(src)
    snap = tmp_path / "s.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap), "HARN_LLM_CALLS_DISABLED": "1"})
    assert first.returncode == 3, first.stderr
    assert '"promoted"' in snap.read_text()
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # the mock's call log is host state of the first process; the loop state is not
    assert resumed.stdout.splitlines()[-1] == "1"


def test_native_payloads_and_gate(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  var r = tool_registry()
  r = tool_define(r, "a", "A", {parameters: {}, handler: { x -> 1 }})
  r = tool_define(r, "b", "B", {parameters: {}, defer_loading: true, handler: { x -> 2 }})
  llm_call("x", nil, {provider: "mock", model: "claude-opus-4-7", tools: r, tool_search: {variant: "regex", mode: "native"}})
  let t = llm_mock_calls()[0].tools
  println([t[0].type, t[1].name, t[2].defer_loading])
  llm_call("x", nil, {provider: "mock", model: "gpt-4o", tools: r, tool_search: {mode: "auto"}})
  println(llm_mock_calls()[1].tools.map({ x -> x.name }))
  println(try { llm_call("x", nil, {provider: "mock", tools: r, tool_search: {mode: "psychic"}}) } catch (e) { contains(e, "tool_search.mode") })
}
"""
    )
    assert lines(out) == [
        "[tool_search_tool_regex_20251119, a, true]",
        "[a, __harn_tool_search]",
        "true",
    ]
