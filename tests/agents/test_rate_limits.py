"""Provider rate limits (harnpy/lifecycle/rate_limits.py): set / read / clear, and
with_rate_limit waiting on the (mock) clock once a minute's permits are used up."""

from __future__ import annotations

from tests.agents.conftest import RunHarn, lines


def test_llm_rate_limit_set_read_clear(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
println(llm_rate_limit("p"))
llm_rate_limit("p", {rpm: 100})
println(llm_rate_limit("p"))
llm_rate_limit("p", {rpm: 0})
println(llm_rate_limit("p"))
println(unwrap_err(try { llm_rate_limit("p", {rpm: -1}) }))
println(unwrap_err(try { with_rate_limit("p", 3) }))
"""
    )
    assert lines(out) == [
        "nil",
        "100",
        "nil",
        "llm_rate_limit: rpm must be a non-negative int, got -1",
        "with_rate_limit: expected a function, got 3",
    ]


def test_with_rate_limit_waits_for_the_window(run_harn: RunHarn) -> None:
    out, _ = run_harn(
        """
mock_time(0)
llm_rate_limit("p", {rpm: 2})
var at = []
for i in range(0, 5) {
  at = at.push(with_rate_limit("p", { -> monotonic_ms() }))
}
println(at)
"""
    )
    # two permits per minute: the 3rd waits for the 1st to expire, the 5th for the 3rd
    assert lines(out) == ["[0, 0, 60000, 60000, 120000]"]
