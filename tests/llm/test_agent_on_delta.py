"""``agent_loop`` option ``on_delta``: a closure called with each streamed chunk of the
assistant's visible text as it arrives, observational (harnpy/lifecycle/loop_turn.py; Harn
``llm/agent_loop.md``, "Streaming visible-text deltas")."""

from __future__ import annotations

import threading

import pytest
from fake_llm_server import CHAT_PATH, FakeLlmServer, Reply, openai_stream_events, openai_text

from tests.agents.conftest import lines

TURNS = """
tool probe(path: string) -> string {
  description "Probe."
  return "probed " + path
}
pipeline main() {
  llm_mock({text: "Let me <think>private notes</think>check it.",
    tool_calls: [{id: "c1", name: "probe", arguments: {path: "a"}}]})
  llm_mock({tool_calls: [{id: "c2", name: "probe", arguments: {path: "b"}}]})
  llm_mock({text: "All done: fine."})
  let r = agent_loop("go", nil, {provider: "mock", tools: [probe], OPTION})
  println("status " + r.status)
  println("visible " + r.visible_text)
  println("calls " + json_stringify(r.tools.successful))
  println("messages " + to_string(len(r.transcript.messages)))
  println("trace " + json_stringify(agent_trace().map({ e -> e.type })))
}
"""


def test_on_delta_sees_each_chunk_of_the_visible_text_and_changes_nothing(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(TURNS.replace("OPTION", 'on_delta: { d -> println("delta [" + d + "]") }'))
    got = lines(out)
    deltas = [x[len("delta [") : -1] for x in got if x.startswith("delta [")]
    # the mock streams word by word; the <think> block is never shown; a turn with only
    # tool calls streams nothing
    assert deltas == ["Let ", "me ", "check ", "it.", "All ", "done: ", "fine."]
    assert "".join(deltas[:4]) == "Let me check it."
    # the deltas come while the loop runs: before anything it prints afterwards
    assert got.index("delta [fine.]") < got.index("status done")
    plain, _ = run(TURNS.replace("OPTION", "max_iterations: 10"))
    assert [x for x in got if not x.startswith("delta [")] == lines(plain)


def test_a_callback_that_throws_changes_nothing(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(TURNS.replace("OPTION", 'on_delta: { d -> throw "boom: " + d }'))
    plain, _ = run(TURNS.replace("OPTION", "max_iterations: 10"))
    assert lines(out) == lines(plain)


def test_a_transient_failure_is_retried_and_a_final_one_is_a_provider_error(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({error: {category: "rate_limit", message: "slow down"}})
  llm_mock({text: "second try"})
  let show = { d -> println("delta [" + d + "]") }
  let r = agent_loop("go", nil, {provider: "mock", on_delta: show, llm_backoff_ms: 0})
  println(r.status + " " + r.text + " " + to_string(len(llm_mock_calls())))
  llm_mock({error: {category: "auth", message: "bad key"}})
  let f = agent_loop("go", nil, {provider: "mock", on_delta: show, llm_retries: 0})
  println(f.status + " " + f.error.category + " " + f.error.message)
}
"""
    )
    assert lines(out) == [
        "delta [second ]",
        "delta [try]",
        "done second try 2",
        "provider_error auth bad key",
    ]


def test_on_delta_must_be_a_function(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  const r = try { agent_loop("go", nil, {provider: "mock", on_delta: "print"}) }
  println(unwrap_err(r))
}
"""
    )
    assert lines(out) == ["agent_loop: on_delta must be a function, got print"]


def test_deltas_reach_the_callback_while_the_provider_is_still_sending(
    run,  # type: ignore[no-untyped-def]
    server: FakeLlmServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server holds the rest of the answer until it has served a second request, which
    # the callback makes when it sees the first delta: a loop that called on_delta only
    # once the answer was complete would wait for the hold to time out, and the server's
    # log would show the held event sent before the release.
    monkeypatch.delenv("HARN_LLM_CALLS_DISABLED")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    release = threading.Event()
    events = openai_stream_events(["Once ", "upon ", "a time"])
    stream = Reply(events=events, hold=release, hold_at=3, hold_timeout_s=15)
    server.queue(
        CHAT_PATH, stream, Reply(body=openai_text("released"), sets=release, label="release")
    )
    out, _ = run(
        """
pipeline main() {
  let on_delta = { d ->
    println("delta [" + d + "]")
    if d == "Once " {
      println(llm_call("release", nil, {provider: "openai", model: "gpt-4o"}).text)
    }
  }
  let r = agent_loop("story", nil, {provider: "openai", model: "gpt-4o", on_delta: on_delta})
  println(r.status + ": " + r.text)
}
"""
    )
    assert lines(out) == [
        "delta [Once ]",
        "released",
        "delta [upon ]",
        "delta [a time]",
        "done: Once upon a time",
    ]
    assert server.log == ["served release", "held event sent"]
    assert server.requests_to(CHAT_PATH)[0].body["stream"] is True
