"""``llm_retries`` / ``llm_backoff_ms`` end to end, mock interception of real providers and
``llm_call_safe`` (Harn ``llm/llm_call.md``), run in-process on a fresh runtime."""

from __future__ import annotations

import time

import pytest
from fake_llm_server import CHAT_PATH, FakeLlmServer, Reply, openai_text

from harnpy.runtime.runtime import Runtime
from tests.conftest import snapshot_everywhere_mode


def run(source: str) -> list[str]:
    """Run ``source`` on a fresh runtime; its output lines (stderr notes dropped)."""
    out: list[str] = []
    rt = Runtime(stdout=out.append, stderr=out.append)
    rt.run_module(rt.load_main("<test>", source))
    text = "".join(out).rstrip("\n")
    return [x for x in text.split("\n") if not x.startswith("harnpy: ")] if text else []


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARN_LLM_CALLS_DISABLED", "1")
    monkeypatch.delenv("HARN_LLM_PROVIDER", raising=False)
    if not snapshot_everywhere_mode():
        monkeypatch.delenv("HARNPY_SNAPSHOT_EVERYWHERE", raising=False)


def test_llm_retries_retry_transient_mock_errors() -> None:
    got = run(
        """
llm_mock({error: {category: "rate_limit", message: "429 one"}})
llm_mock({error: {category: "server_error", message: "500 two"}})
llm_mock({text: "third time"})
let r = llm_call("hi", nil, {provider: "mock", llm_retries: 2, llm_backoff_ms: 0})
println(r.text)
println(len(llm_mock_calls()))
"""
    )
    assert got == ["third time", "3"]


def test_llm_call_is_fail_fast_by_default() -> None:
    got = run(
        """
llm_mock({error: {category: "rate_limit", message: "429 once"}})
llm_mock({text: "not reached by the first call"})
let r = try { llm_call("hi", nil, {provider: "mock"}) }
println(unwrap_err(r).message)
println(len(llm_mock_calls()))
println(llm_call("again", nil, {provider: "mock"}).text)
"""
    )
    assert got == ["429 once", "1", "not reached by the first call"]


def test_terminal_errors_are_not_retried_and_exhausted_retries_say_so() -> None:
    got = run(
        """
llm_mock({error: {category: "auth", message: "401 bad key"}})
llm_mock({text: "unused"})
let a = unwrap_err(try { llm_call("x", nil, {provider: "mock", llm_retries: 3, llm_backoff_ms: 0}) })
println(a.kind + " " + a.message + " " + to_string(len(llm_mock_calls())))
llm_mock_clear()
llm_mock({error: {category: "overloaded", message: "529 busy"}})
llm_mock({error: {category: "overloaded", message: "529 busy"}})
let b = unwrap_err(try { llm_call("x", nil, {provider: "mock", llm_retries: 1, llm_backoff_ms: 0}) })
println(b.kind + " " + b.reason + " " + b.message)
"""
    )
    assert got == ["terminal 401 bad key 1", "transient server_error 529 busy (after 2 attempts)"]


def test_a_scripted_kind_decides_whether_a_mock_error_is_retried() -> None:
    got = run(
        """
llm_mock({error: {status: 503, kind: "transient", reason: "upstream_unavailable"}})
llm_mock({error: {category: "rate_limit", message: "quota gone", kind: "terminal"}})
let e = unwrap_err(try { llm_call("x", nil, {provider: "mock", llm_retries: 2, llm_backoff_ms: 0}) })
println(e.category + " " + e.kind + " " + e.message)
println(len(llm_mock_calls()))
"""
    )
    assert got == ["rate_limit terminal quota gone (after 2 attempts)", "2"]


def test_backoff_waits_on_the_runtime_clock() -> None:
    # under mock_time the waits are virtual: the exponential backoff (100 + 200 ms) and a
    # server's retry_after_ms (2500 ms) advance the runtime's monotonic clock, not real time
    started = time.monotonic()
    got = run(
        """
mock_time(1000)
let t0 = monotonic_ms()
llm_mock({error: {category: "timeout", message: "slow"}})
llm_mock({error: {category: "timeout", message: "slow"}})
llm_mock({text: "ok"})
llm_call("x", nil, {provider: "mock", llm_retries: 2, llm_backoff_ms: 100})
println(monotonic_ms() - t0)
llm_mock({error: {category: "rate_limit", message: "429", retry_after_ms: 2500}})
llm_mock({text: "ok"})
let t1 = monotonic_ms()
llm_call("x", nil, {provider: "mock", llm_retries: 1, llm_backoff_ms: 1})
println(monotonic_ms() - t1)
"""
    )
    assert got == ["300", "2500"]
    assert time.monotonic() - started < 2.0


def test_a_queued_mock_answers_a_call_for_any_provider() -> None:
    got = run(
        """
llm_mock({text: "intercepted"})
let r = llm_call("hi", nil, {provider: "openai", model: "gpt-4o"})
println(r.text + " " + r.provider + " " + r.model)
println(len(llm_mock_calls()))
let e = unwrap_err(try { llm_call("hi", nil, {provider: "anthropic"}) })
println(e.category + " " + e.provider)
"""
    )
    # with the queue empty the real provider is used (here: disabled, so no network)
    assert got == ["intercepted openai gpt-4o", "1", "disabled anthropic"]


def test_an_unmatched_pattern_entry_leaves_the_call_to_the_real_provider() -> None:
    got = run(
        """
llm_mock({text: "for plans only", match: "*plan*"})
let e = unwrap_err(try { llm_call("write code", nil, {provider: "openai", model: "gpt-4o"}) })
println(e.category)
println(len(llm_mock_calls()))
println(llm_call("make a plan", nil, {provider: "openai", model: "gpt-4o"}).text)
"""
    )
    assert got == ["disabled", "0", "for plans only"]


def test_llm_call_safe_envelopes() -> None:
    got = run(
        """
llm_mock({text: "fine"})
let ok = llm_call_safe("hi", nil, {provider: "mock"})
println(to_string(ok.ok) + " " + ok.response.text + " " + to_string(ok.error))
llm_mock({error: {category: "rate_limit", message: "429", retry_after_ms: 40}})
let bad = llm_call_safe("hi", nil, {provider: "mock", model: "m"})
println(to_string(bad.ok) + " " + to_string(bad.response) + " " + bad.error.kind + " " + bad.error.reason + " " + to_string(bad.error.retry_after_ms) + " " + bad.error.provider + " " + bad.error.model)
let opt = llm_call_safe("hi", nil, {provider: "mock", llm_retries: -1})
println(to_string(opt.ok) + " " + opt.error.category + " " + opt.error.kind)
llm_mock({text: "not json"})
let schema = llm_call_safe("hi", nil, {provider: "mock", output_schema: {type: "object"}, schema_retries: 0})
println(to_string(schema.ok) + " " + schema.error.category + " " + schema.error.reason + " " + schema.error.provider)
let notdict = llm_call_safe("hi", nil, 5)
println(to_string(notdict.ok) + " " + notdict.error.kind)
"""
    )
    assert got == [
        "true fine nil",
        "false nil transient rate_limit 40 mock m",
        "false config terminal",
        "false schema_validation schema_validation mock",
        "false terminal",
    ]


def test_llm_call_safe_retries_like_llm_call() -> None:
    got = run(
        """
llm_mock({error: {category: "overloaded", message: "529"}})
llm_mock({text: "recovered"})
let r = llm_call_safe("hi", nil, {provider: "mock", llm_retries: 1, llm_backoff_ms: 0})
println(to_string(r.ok) + " " + r.response.text)
"""
    )
    assert got == ["true recovered"]


def test_agent_loop_retries_twice_by_default() -> None:
    got = run(
        """
llm_mock({error: {category: "rate_limit", message: "429 a"}})
llm_mock({error: {category: "rate_limit", message: "429 b"}})
llm_mock({error: {category: "rate_limit", message: "429 c"}})
let r = agent_loop("go", nil, {provider: "mock", llm_backoff_ms: 0})
println(r.status + " " + r.error.kind + " " + r.error.message)
println(len(llm_mock_calls()))
"""
    )
    assert got == ["provider_error transient 429 c (after 3 attempts)", "3"]


def test_agent_loop_counts_retried_empty_completions() -> None:
    got = run(
        """
llm_mock({error: {category: "server_error", message: "model x reported completion_tokens=3 but delivered no content, reasoning, or tool calls"}})
llm_mock({error: {category: "rate_limit", message: "429"}})
llm_mock({text: "done"})
let r = agent_loop("go", nil, {provider: "mock", llm_backoff_ms: 0})
println(r.status + " " + to_string(r.trace.empty_completion_retries))
"""
    )
    assert got == ["done 1"]


def test_a_real_provider_is_retried_by_the_same_loop(
    server: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARN_LLM_CALLS_DISABLED")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    busy = Reply(status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "0"})
    server.queue(CHAT_PATH, busy, Reply(body=openai_text("after one retry")))
    server.queue(CHAT_PATH, busy)
    got = run(
        """
println(llm_call("hi", nil, {provider: "openai", model: "gpt-4o", llm_retries: 1}).text)
let e = unwrap_err(try { llm_call("hi", nil, {provider: "openai", model: "gpt-4o"}) })
println(e.kind + " " + e.reason + " " + to_string(e.status) + " " + e.provider + " " + e.model + " " + to_string(e.retry_after_ms))
"""
    )
    assert got == ["after one retry", "transient rate_limit 429 openai gpt-4o 0"]
    assert len(server.requests_to(CHAT_PATH)) == 3  # 2 for the first call, 1 (fail-fast)


def test_a_program_snapshot_carries_the_mock_queue_and_call_log(tmp_path) -> None:
    from tests.conftest import harnpy

    prog = tmp_path / "prog.harn"
    prog.write_text(
        """
pipeline main(task) {
  llm_mock({text: "before"})
  llm_mock({text: "after the resume"})
  llm_mock({text: "patterned", match: "*plan*"})
  println(llm_call("first", nil, {provider: "mock"}).text)
  __snapshot_exit(env("SNAP"))
  println(llm_call("second", nil, {provider: "mock"}).text)
  println(llm_call("a plan", nil, {provider: "mock"}).text)
  let calls = llm_mock_calls()
  println(len(calls))
  println(calls[0].messages[0].content)
}
"""
    )
    snap = tmp_path / "state.json"
    first = harnpy("run", str(prog), env={"SNAP": str(snap)})
    assert first.returncode == 3, first.stderr
    assert first.stdout == "before\n"
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["after the resume", "patterned", "3", "first"]


def test_a_loops_provider_error_is_the_envelope_with_the_turns_context() -> None:
    got = run(
        """
tool ping() -> string {
  description "Ping."
  return "pong"
}
llm_mock({tool_calls: [{id: "c1", name: "ping", arguments: {}}]})
llm_mock({error: {category: "auth", message: "401 revoked"}})
let r = agent_loop("go", nil, {provider: "mock", model: "m", tools: [ping]})
let e = r.error
println([e.kind, e.reason, e.provider, e.model, e.phase, e.tool_format].join(" "))
println(to_string(e.iteration) + " " + to_string(e.after_tool_result))
"""
    )
    assert got == ["terminal auth mock m llm_call native", "2 true"]


def test_submit_blocking_on_error_may_ask_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure handed to ``on_error`` can answer with ``Again`` (a repair-style re-ask):
    the new request is submitted and its answer delivered, with a retry budget of its own."""
    from harnpy.lifecycle import llm_builtins as lb
    from harnpy.runtime.values import Builtin
    from harnpy.stdlib.registry import BUILTINS

    seen: list[str] = []

    def probe(thread, *args):
        request = lb.build("first", None, {"provider": "mock"})
        tries = [0]

        def on_error(env):
            seen.append(env["message"])
            tries[0] += 1
            if tries[0] == 1:
                return lb.Again(lb.build("second", None, {"provider": "mock"}))
            return "gave up: " + env["message"]

        lb.submit_blocking(thread, request, lambda resp: resp.text, on_error=on_error)

    monkeypatch.setitem(
        BUILTINS, "__test_probe", Builtin("__test_probe", probe, max_args=None, control=True)
    )
    got = run(
        """
llm_mock({error: {category: "auth", message: "401"}})
llm_mock({text: "repaired"})
println(__test_probe())
llm_mock({error: {category: "auth", message: "401"}})
llm_mock({error: {category: "auth", message: "again 401"}})
println(__test_probe())
"""
    )
    assert got == ["repaired", "gave up: again 401"]
    assert seen == ["401", "401", "again 401"]


def test_agent_loop_backs_off_2000_ms_by_default_and_llm_call_250() -> None:
    # Harn llm/agent_loop.md: an agent loop's llm_backoff_ms defaults to 2000; the waits
    # are scheduler timers on the runtime clock, so under mock_time they pass instantly
    # and the mock clock shows them: 2000 then 4000 ms for the loop's two retries.
    got = run(
        """
mock_time(1000000)
llm_mock({error: {category: "rate_limit", message: "429 one"}})
llm_mock({error: {category: "rate_limit", message: "429 two"}})
llm_mock({text: "done ##DONE##"})
let r = agent_loop("go", nil, {provider: "mock"})
println(r.status + " " + to_string(monotonic_ms()))
llm_mock({error: {category: "rate_limit", message: "429"}})
llm_mock({text: "ok"})
let t0 = monotonic_ms()
println(llm_call("hi", nil, {provider: "mock", llm_retries: 1}).text + " " + to_string(monotonic_ms() - t0))
llm_mock({error: {category: "rate_limit", message: "429"}})
llm_mock({text: "done ##DONE##"})
let t1 = monotonic_ms()
let fast = agent_loop("go", nil, {provider: "mock", llm_backoff_ms: 10})
println(fast.status + " " + to_string(monotonic_ms() - t1))
"""
    )
    assert got == ["done 6000", "ok 250", "done 10"]
