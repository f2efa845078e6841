"""Long transcripts: requests validate only new messages, the mock log grows with the calls."""

from __future__ import annotations

import pytest

from harnpy.llm import LlmError, LlmRequest, Message
from harnpy.llm.mock import MockProvider
from harnpy.llm.mock_log import CallLog
from harnpy.llm.options import MessageCache, build_request


def _transcript(n: int) -> list[dict[str, object]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n)
    ]


def test_a_known_message_dict_is_validated_once() -> None:
    cache = MessageCache()
    msgs = _transcript(50)
    first = build_request(None, None, {"messages": msgs}, cache=cache)
    assert cache.misses == 50
    msgs = msgs + [{"role": "user", "content": "one more"}]
    second = build_request(None, None, {"messages": msgs}, cache=cache)
    assert cache.misses == 51
    assert all(a is b for a, b in zip(first.messages, second.messages))
    assert second.messages[-1] == Message(role="user", content="one more")
    # the same request as without a cache
    assert second == build_request(None, None, {"messages": msgs})


def test_a_dict_changed_in_place_is_validated_again() -> None:
    cache = MessageCache()
    msgs = _transcript(3)
    build_request(None, None, {"messages": msgs}, cache=cache)
    msgs[1]["content"] = "edited"
    again = build_request(None, None, {"messages": msgs}, cache=cache)
    assert again.messages[1].content == "edited" and cache.misses == 4


def test_errors_still_name_the_message() -> None:
    cache = MessageCache()
    with pytest.raises(LlmError, match=r"messages\[1\]"):
        build_request(None, None, {"messages": [{"role": "user"}, {"role": "bogus"}]}, cache=cache)


def test_the_call_log_stores_each_message_once() -> None:
    log = CallLog()
    messages = [Message(role="user", content="m0")]
    for i in range(1, 200):
        log.record(messages, None, None, None)
        messages = [*messages, Message(role="assistant", content=f"m{i}")]
    stored = sum(len(call.tail) for call in log._calls)
    assert stored == 199  # one new message per call, not 1 + 2 + ... + 199
    calls = log.export()
    assert len(calls) == 199
    assert [m["content"] for m in calls[-1]["messages"]] == [f"m{i}" for i in range(199)]
    restored = CallLog()
    restored.load(calls)
    assert restored.export() == calls
    assert sum(len(call.tail) for call in restored._calls) == 199


def test_a_call_that_drops_the_trailing_message_shares_the_rest() -> None:
    log = CallLog()
    base = [Message(role="user", content="a"), Message(role="assistant", content="b")]
    reminder = Message(role="user", content="reminder")
    log.record([*base, reminder], None, None, None)
    _, text = log.record([*base, Message(role="user", content="c")], "sys", None, None)
    assert text() == "user\na\nassistant\nb\nuser\nc"
    assert [m["content"] for m in log.export()[1]["messages"]] == ["a", "b", "c"]
    assert log._calls[1].keep == 2


def test_mock_calls_and_match_text_are_unchanged() -> None:
    mock = MockProvider()
    mock.push({"match": "*needle*", "text": "found"})
    msgs = [Message(role="user", content="hay"), Message(role="user", content="a needle")]
    resp = mock.complete(LlmRequest(messages=msgs))
    assert resp.text == "found"
    assert mock.calls()[0]["messages"] == [m.to_wire() for m in msgs]
