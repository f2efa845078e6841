"""The ``structural_experiment`` option of ``llm_call`` (harnpy/lifecycle/experiments.py):
the call is rewritten before it is sent and the experiment is recorded on the transcript."""

from __future__ import annotations

from tests.agents.conftest import lines


def test_experiments_rewrite_the_call(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
import "std/experiments"

pipeline main() {
  let r = llm_call("hello", "sys", {provider: "mock", structural_experiment: "doubled_prompt"})
  let c0 = llm_mock_calls()[0]
  println(c0.messages.map({ m -> m.role }))
  println(c0.system)
  let ev = transcript_events_by_kind(r.transcript, "provider_payload")[0]
  println(ev.metadata.structural_experiment.kind)
  llm_call("user says", "system says", {provider: "mock", structural_experiment: "inverted_system"})
  let c1 = llm_mock_calls()[1]
  println(c1.system + " / " + c1.messages[0].content)
  let exp = custom("upper", { ctx -> {messages: [{role: "user", content: "REWRITTEN"}], metadata: {n: 1}} })
  let r2 = llm_call("orig", nil, {provider: "mock", structural_experiment: exp})
  println(llm_mock_calls()[2].messages[0].content)
  println(r2.structural_experiment.label)
  println(unwrap_err(try { llm_call("x", nil, {provider: "mock", structural_experiment: "nope"}) }))
}
"""
    )
    got = lines(out)
    assert got[0] == "[user, assistant, user]"
    assert got[1] == "sys"
    assert got[2] == "doubled_prompt"
    assert got[3] == "user says / system says"
    assert got[4] == "REWRITTEN"
    assert got[5] == "upper"
    assert "unknown structural_experiment 'nope'" in got[6]
