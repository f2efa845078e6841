"""``llm_stream``: the answer as a channel filled while the model writes; a failure is the
last item (harnpy/lifecycle/llm_stream.py, harnpy/llm/streaming.py; Harn
``llm/streaming.md``)."""

from __future__ import annotations

import threading

import pytest
from fake_llm_server import (
    CHAT_PATH,
    MESSAGES_PATH,
    FakeLlmServer,
    Reply,
    anthropic_stream_events,
    openai_stream_events,
    openai_text,
)

from harnpy.llm import LlmRequest, Message
from harnpy.llm.anthropic_provider import AnthropicProvider
from harnpy.llm.openai_provider import OpenAIProvider
from harnpy.llm.streaming import chunks, sse_events
from tests.agents.conftest import lines


def test_chunks_join_back() -> None:
    text = "  Once upon\na time,  there was\t a parser. "
    parts = chunks(text)
    assert "".join(parts) == text
    assert parts[0] == "  " and parts[1] == "Once "
    assert chunks("") == []


def test_sse_events_split_fields_and_events() -> None:
    body = [
        ": a comment",
        "event: ping",
        "data: {}",
        "",
        "data: one",
        "data: two",
        "id: 7",
        "",
        "data: tail",
    ]
    assert list(sse_events(body)) == [("ping", "{}"), (None, "one\ntwo"), (None, "tail")]


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


def test_the_call_is_not_waited_for(run) -> None:  # type: ignore[no-untyped-def]
    # llm_stream returns the open channel at once; the answer arrives while the caller runs
    out, _ = run(
        """
pipeline main() {
  llm_mock({text: "a b"})
  let ch = llm_stream("x", nil, {provider: "mock"})
  println(len(ch.iter().to_list()))
  println(receive(ch))
  println(receive(ch))
  println(receive(ch))
}
"""
    )
    assert lines(out) == ["0", "a ", "b", "nil"]


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
  println([items[0].category, items[0].message, items[0].partial])
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
    assert got[1] == "[auth, bad key, ]"
    assert got[2] == "budget_exceeded"
    assert got[3] == "config"


def test_a_transient_failure_before_the_first_chunk_is_retried(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({error: {category: "rate_limit", message: "slow down"}})
  llm_mock({text: "second try"})
  var parts = []
  for c in llm_stream("x", nil, {provider: "mock", llm_retries: 1, llm_backoff_ms: 0}) {
    parts = parts.push(c)
  }
  println(join(parts, ""))
  println(len(llm_mock_calls()))
  llm_mock({error: {category: "rate_limit", message: "slow down"}})
  let items = receive(llm_stream("x", nil, {provider: "mock"}))
  println(items.category)
}
"""
    )
    assert lines(out) == ["second try", "2", "rate_limit"]


def _enable_openai(server: FakeLlmServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARN_LLM_CALLS_DISABLED")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_openai_chunks_arrive_before_the_server_sends_the_last(
    run,  # type: ignore[no-untyped-def]
    server: FakeLlmServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server holds the last content delta until it has served a second request, which
    # the Harn program makes only after it received the first chunk: with a stream that is
    # not incremental the program would get nothing until the hold timed out, and the
    # server's log would show the held event sent before the release.
    _enable_openai(server, monkeypatch)
    release = threading.Event()
    events = openai_stream_events(["Once ", "upon ", "a time"])
    stream = Reply(events=events, hold=release, hold_at=3, hold_timeout_s=15)
    server.queue(
        CHAT_PATH, stream, Reply(body=openai_text("released"), sets=release, label="release")
    )
    out, rt = run(
        """
pipeline main() {
  let ch = llm_stream("story", "Be brief", {provider: "openai", model: "gpt-4o"})
  println("first: " + receive(ch))
  println(llm_call("release", nil, {provider: "openai", model: "gpt-4o"}).text)
  var rest = []
  for c in ch {
    rest = rest.push(c)
  }
  println(join(rest, "|"))
}
"""
    )
    assert lines(out) == ["first: Once ", "released", "upon |a time"]
    assert server.log == ["served release", "held event sent"]
    first = server.requests_to(CHAT_PATH)[0].body
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["messages"][0] == {"role": "system", "content": "Be brief"}


def test_anthropic_chunks_arrive_before_the_server_sends_the_last(
    run,  # type: ignore[no-untyped-def]
    server: FakeLlmServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HARN_LLM_CALLS_DISABLED")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    release = threading.Event()
    events = anthropic_stream_events(["Hello ", "from ", "Claude"])
    stream = Reply(events=events, hold=release, hold_at=4, hold_timeout_s=15)
    from fake_llm_server import anthropic_text

    server.queue(
        MESSAGES_PATH,
        stream,
        Reply(body=anthropic_text("released"), sets=release, label="release"),
    )
    out, _ = run(
        """
pipeline main() {
  let ch = llm_stream("hi", nil, {provider: "anthropic"})
  println("first: " + receive(ch))
  println(llm_call("release", nil, {provider: "anthropic"}).text)
  var rest = []
  for c in ch {
    rest = rest.push(c)
  }
  println(join(rest, "|"))
}
"""
    )
    assert lines(out) == ["first: Hello ", "released", "from |Claude"]
    assert server.log == ["served release", "held event sent"]
    assert server.requests_to(MESSAGES_PATH)[0].body["stream"] is True


def test_a_failure_mid_stream_is_the_last_item_with_the_partial_text(
    run,  # type: ignore[no-untyped-def]
    server: FakeLlmServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _enable_openai(server, monkeypatch)
    events = openai_stream_events(["par", "tial"])[:3]
    events.append((None, {"error": {"message": "upstream overloaded", "code": 503}}))
    server.queue(CHAT_PATH, Reply(events=events))
    out, _ = run(
        """
pipeline main() {
  var items = []
  for item in llm_stream("x", nil, {provider: "openai", model: "gpt-4o", llm_retries: 3}) {
    items = items.push(item)
  }
  println(items[0] + items[1])
  let err = items[2]
  println([err.category, err.kind, err.provider, err.partial])
}
"""
    )
    got = lines(out)
    assert got[0] == "partial"
    assert got[1] == "[overloaded, transient, openai, partial]"
    assert len(server.requests_to(CHAT_PATH)) == 1  # not retried after a chunk


def _ask(text: str = "hi") -> LlmRequest:
    return LlmRequest(messages=[Message(role="user", content=text)], model="gpt-4o")


def test_openai_stream_assembles_tool_calls_and_usage(server: FakeLlmServer) -> None:
    def chunk(delta, finish=None):  # type: ignore[no-untyped-def]
        return (
            None,
            {"model": "gpt-4o", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]},
        )

    fn = {"index": 0, "id": "call_9", "function": {"name": "get_weather", "arguments": '{"ci'}}
    events = [
        chunk({"content": "Checking. "}),
        chunk({"tool_calls": [fn]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
        chunk({}, "tool_calls"),
        (None, {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 4}}),
        (None, "[DONE]"),
    ]
    server.queue(CHAT_PATH, Reply(events=events))
    provider = OpenAIProvider(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url})
    seen: list[str] = []
    resp = provider.stream(_ask(), seen.append)
    assert seen == ["Checking. "]
    assert resp.text == "Checking. "
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("call_9", "get_weather", {"city": "Oslo"})
    ]
    assert resp.stop_reason == "tool_use"
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (12, 4)


def test_a_stream_cut_short_is_a_transient_network_error(server: FakeLlmServer) -> None:
    from harnpy.llm import LlmError

    server.queue(CHAT_PATH, Reply(events=openai_stream_events(["a ", "b"])[:2]))
    provider = OpenAIProvider(env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url})
    with pytest.raises(LlmError) as info:
        provider.stream(_ask(), lambda _t: None)
    assert info.value.category == "transient_network"
    assert info.value.retryable


def test_anthropic_stream_assembles_tool_input_and_thinking(server: FakeLlmServer) -> None:
    def ev(kind, **fields):  # type: ignore[no-untyped-def]
        return (kind, {"type": kind, **fields})

    events = [
        ev("message_start", message={"model": "claude-sonnet-5", "usage": {"input_tokens": 30}}),
        ev("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hmm"}),
        ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "sig"}),
        ev("content_block_stop", index=0),
        ev(
            "content_block_start",
            index=1,
            content_block={"type": "tool_use", "id": "toolu_5", "name": "look", "input": {}},
        ),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '{"q": '},
        ),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '"x"}'},
        ),
        ev("content_block_stop", index=1),
        ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9}),
        ev("message_stop"),
    ]
    server.queue(MESSAGES_PATH, Reply(events=events))
    provider = AnthropicProvider(
        env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.root_url}
    )
    seen: list[str] = []
    resp = provider.stream(_ask(), seen.append)
    assert seen == []
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("toolu_5", "look", {"q": "x"})
    ]
    assert resp.raw_thinking == "hmm"
    assert resp.thinking_blocks == [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (30, 9)
    assert resp.stop_reason == "tool_use"


def test_a_snapshot_of_an_open_stream_is_refused_and_a_drained_one_resumes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import harnpy

    prog = tmp_path / "prog.harn"
    prog.write_text(
        """
pipeline main(task) {
  llm_mock({text: "one two"})
  let ch = llm_stream("x", nil, {provider: "mock"})
  if env("OPEN") == "1" {
    __snapshot_exit(env("SNAP"))
  }
  let first = receive(ch)
  let second = receive(ch)
  receive(ch)
  __snapshot_exit(env("SNAP"))
  println(first + second)
  println(receive(ch))
}
"""
    )
    snap = tmp_path / "state.json"
    refused = harnpy("run", str(prog), env={"SNAP": str(snap), "OPEN": "1"})
    assert refused.returncode != 0 and refused.returncode != 3
    assert "E402" in refused.stderr
    assert "an llm_stream is still filling it" in refused.stderr
    assert "Traceback" not in refused.stderr
    parked = harnpy("run", str(prog), env={"SNAP": str(snap), "OPEN": "0"})
    assert parked.returncode == 3, parked.stderr
    resumed = harnpy("run", "--resume", str(snap), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines() == ["one two", "nil"]


def test_stream_call_yields_chunk_dicts_hiding_think_blocks(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({text: "<think>plan it</think>Hello there world"})
  let s = llm_stream_call("hi", nil, {provider: "mock"})
  println(type_of(s))
  var deltas = ""
  var visible = ""
  var last = nil
  for chunk in s {
    deltas = deltas + chunk.delta
    visible = visible + chunk.visible_delta
    println(chunk.role)
    last = chunk
  }
  println(deltas)
  println(visible)
  println(last.partial)
  println(last.delta == "")
}
"""
    )
    got = lines(out)
    assert got[0] == "stream"
    assert got[-4] == "<think>plan it</think>Hello there world"
    assert got[-3] == "Hello there world"
    assert got[-2] == "Hello there world"
    assert got[-1] == "true"
    assert set(got[1:-4]) == {"assistant"}


def test_stream_call_failure_is_the_last_item(run) -> None:  # type: ignore[no-untyped-def]
    out, _ = run(
        """
pipeline main() {
  llm_mock({error: {category: "auth", message: "bad key"}})
  var last = nil
  for chunk in llm_stream_call("hi", nil, {provider: "mock"}) {
    last = chunk
  }
  println(last.category)
  println(last.partial)
}
"""
    )
    assert lines(out)[0] == "auth"
