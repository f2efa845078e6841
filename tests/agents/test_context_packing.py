"""assemble_context (chunking, dedup, strategies, budgets, ranker callbacks) and friction
events (redaction, suggestions, fixtures, snapshots)."""

from __future__ import annotations

from pathlib import Path

from harnpy.lifecycle.context_assembly import chunk_id, split_text
from harnpy.lifecycle.friction import redact_text, redact_value
from tests.agents.conftest import RunHarn, lines
from tests.conftest import harnpy


def test_split_text_uses_paragraphs_then_lines() -> None:
    text = "aaaa bbbb cccc\ndddd eeee\n\nffff"
    assert split_text(text, None) == [text]
    assert split_text(text, 4) == ["aaaa bbbb cccc", "dddd eeee", "ffff"]
    assert chunk_id("x") == chunk_id("x") != chunk_id("y")


def test_budget_dedup_and_strategies(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  let a = artifact({id: "a", text: "0123456789abcdef"})
  let b = artifact({id: "b", text: "0123456789abcdef"})
  let c = artifact({id: "c", text: "short"})
  let exact = assemble_context({artifacts: [a, b, c], dedup: "exact", budget_tokens: 100})
  println(exact.chunks.map({ x -> x.artifact_id }))
  println(exact.dropped[0].reason)
  let tight = assemble_context({artifacts: [a, c], dedup: "none", strategy: "relevance", budget_tokens: 3})
  // a (4 tokens) does not fit, the later smaller c (2 tokens) still does
  println(tight.chunks.map({ x -> x.artifact_id }))
  println(tight.reasons.map({ r -> r.reason }))
  let recent = assemble_context({artifacts: [c, a], dedup: "none", strategy: "recency"})
  println(recent.chunks[0].artifact_id)
  println(try { assemble_context({artifacts: [], strategy: "magic"}) } catch (e) { contains(e, "unknown strategy") })
  println(try {
    assemble_context({artifacts: [a, c], ranker_callback: { q, cs -> [1] }})
  } catch (e) { contains(e, "one number per chunk") })
}
"""
    )
    # without a query the default strategy is recency: the newest (last) artifact first
    assert lines(out) == [
        "[c, a]",
        "duplicate",
        "[c]",
        "[budget_exceeded, selected]",
        "a",
        "true",
        "true",
    ]


def test_redaction_keeps_references_and_drops_secrets() -> None:
    assert (
        redact_text("use token=abc123 and sk-live-999999") == "use token=[redacted] and [redacted]"
    )
    meta = redact_value({"api_key": "k", "secret_ref": "NAME", "nested": {"password": "p"}})
    assert meta == {
        "api_key": "[redacted]",
        "secret_ref": "NAME",
        "nested": {"password": "[redacted]"},
    }


def test_friction_suggestions_need_recurrence(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
pipeline main(task) {
  friction_record({kind: "manual_lookup", source: "s", estimated_time_ms: 10, metadata: {query: "q1"}})
  friction_record({kind: "manual_lookup", source: "s", estimated_time_ms: 20, metadata: {query: "q1"}})
  friction_record({kind: "manual_lookup", source: "s", estimated_time_ms: 40, metadata: {query: "q2"}})
  let s = context_pack_suggestions(friction_events(), {min_occurrences: 2})
  println(len(s))
  println(s[0].estimated_savings.estimated_time_saved_ms)
  println(s[0].candidate_manifest.included_queries[0].query)
  let three = context_pack_suggestions(friction_events(), {min_occurrences: 3})
  println(len(three))
  let fx = friction_eval_fixture({events: friction_events(), expected_suggestions: [{min_suggestions: 2}]})
  println([fx.pass, fx.suggestion_count])
  println(try { friction_record({source: "x"}) } catch (e) { contains(e, "kind") })
  friction_clear()
  println(len(friction_events()))
}
"""
    )
    assert lines(out) == ["1", "20", "q1", "0", "[false, 1]", "true", "0"]


def test_friction_events_survive_a_snapshot(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text(
        """
pipeline main(task) {
  friction_record({kind: "k", metadata: {token: "t"}})
  __snapshot_exit(env("SNAP"))
  println(friction_events()[0].metadata.token)
}
"""
    )
    snap = tmp_path / "s.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert '"t"' not in snap.read_text()  # only the redacted value is kept
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["[redacted]"]
