"""Incremental answers: Server-Sent Events parsing and the providers' stream accumulators.

``llm_stream`` (harnpy/lifecycle/llm_stream.py) asks a provider to *stream*: the provider
calls ``on_delta(text)`` with each piece of visible text as it arrives and returns the
complete :class:`~harnpy.llm.types.LlmResponse` at the end, exactly as ``complete`` would
have. The OpenAI-compatible provider sends ``stream: true`` (with ``stream_options:
{include_usage: true}`` so the last event carries the token counts) and reads
``chat.completion.chunk`` events; the Anthropic provider reads the Messages API events
(``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``,
``message_stop``, ``error``). Each accumulator rebuilds the non-streaming response body
from the events and hands it to the provider's own parser, so a streamed answer is
normalized (tool calls, thinking blocks, usage, stop reason, empty completions) exactly
like a complete one.

The mock streams too: its answer's text in :func:`chunks` (each word with the whitespace
after it), one ``on_delta`` per chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harnpy.llm.errors import (
    ANTHROPIC_ERROR_TYPES,
    MALFORMED_RESPONSE,
    SERVER_ERROR,
    LlmError,
    one_line,
    raise_error_envelope,
)

#: ``on_delta(text)``: called with each visible text delta, on the provider's thread.
OnDelta = Callable[[str], None]

_CHUNK = re.compile(r"\S+\s*|\s+")


def chunks(text: str) -> list[str]:
    """``text`` split into stream chunks: each word with the whitespace after it (leading
    whitespace is a chunk of its own); joined they give ``text`` back."""
    return _CHUNK.findall(text)


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str | None, str]]:
    """The events of a Server-Sent Events body given line by line: ``(event, data)`` per
    event (``event`` None when the event has no ``event:`` field; several ``data:`` lines
    are joined with newlines). Comments (``:`` lines) and ``id:``/``retry:`` fields are
    skipped; a last event without its blank line still counts."""
    event: str | None = None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
    if data:
        yield event, "\n".join(data)


def _decode(data: str, provider: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise LlmError(
            MALFORMED_RESPONSE,
            f"{provider}: stream event is not valid JSON: {one_line(data, 80)!r}",
        ) from None
    if not isinstance(value, dict):
        raise LlmError(MALFORMED_RESPONSE, f"{provider}: stream event is not a JSON object")
    return value


def _index(value: dict[str, Any], default: int) -> int:
    """The event's ``index`` when it is an int, else ``default``."""
    index = value.get("index")
    return index if type(index) is int else default


class OpenAIStream:
    """Accumulates ``chat.completion.chunk`` events into a ``chat.completion`` body.

    ``feed(data)`` takes one event's data (``[DONE]`` ends the stream) and calls
    ``on_delta`` with its ``content`` delta; :meth:`body` is the equivalent complete body
    (content, reasoning, tool calls assembled from their argument fragments, finish reason,
    usage, model) for :func:`~harnpy.llm.openai_provider.parse_chat_completion`.

    Raises (from ``feed``):
        LlmError: ``malformed_response`` for an event that is not a JSON object; the
            refined category of an ``error`` event (a server error by default).
    """

    def __init__(self, provider: str, on_delta: OnDelta) -> None:
        self.provider = provider
        self.on_delta = on_delta
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.finish: Any = None
        self.usage: Any = None
        self.model: Any = None
        self.done = False

    def feed(self, data: str) -> None:
        """Take one event's data (see the class docstring)."""
        if data.strip() == "[DONE]":
            self.done = True
            return
        event = _decode(data, self.provider)
        if event.get("error") is not None and not event.get("choices"):
            raise_error_envelope(self.provider, event, "stream")
        if isinstance(event.get("model"), str) and event["model"]:
            self.model = event["model"]
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        for choice in event.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            if choice.get("finish_reason") is not None:
                self.finish = choice["finish_reason"]
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                self.on_delta(content)
            for key in ("reasoning_content", "reasoning"):
                part = delta.get(key)
                if isinstance(part, str) and part:
                    self.reasoning.append(part)
            for tc in delta.get("tool_calls") or []:
                if isinstance(tc, dict):
                    self._tool_fragment(tc)

    def _tool_fragment(self, tc: dict[str, Any]) -> None:
        index = _index(tc, len(self.tool_calls))
        slot = self.tool_calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        if isinstance(tc.get("id"), str) and tc["id"]:
            slot["id"] = tc["id"]
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
        assert isinstance(fn, dict)
        if isinstance(fn.get("name"), str):
            slot["name"] += fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["arguments"] += fn["arguments"]

    def body(self) -> dict[str, Any]:
        """The complete ``chat.completion`` body the events add up to."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": slot["arguments"]},
                }
                for _, slot in sorted(self.tool_calls.items())
            ]
        out: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
            "usage": self.usage,
        }
        if self.model is not None:
            out["model"] = self.model
        return out


class AnthropicStream:
    """Accumulates Messages API stream events into a ``message`` body.

    ``feed(event, data)`` takes one event and calls ``on_delta`` with each ``text_delta``;
    :meth:`body` is the complete message (content blocks with tool inputs assembled from
    their ``input_json_delta`` fragments, thinking with its signature, usage from
    ``message_start`` and ``message_delta``, stop reason) for
    :func:`~harnpy.llm.anthropic_provider.parse_message`.

    Raises (from ``feed``):
        LlmError: ``malformed_response`` for an event that is not a JSON object or a tool
            input that is not JSON; the category of an ``error`` event
            (:data:`~harnpy.llm.errors.ANTHROPIC_ERROR_TYPES`, else ``server_error``).
    """

    def __init__(self, on_delta: OnDelta) -> None:
        self.on_delta = on_delta
        self.message: dict[str, Any] = {"content": []}
        self.usage: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.done = False

    def feed(self, event: str | None, data: str) -> None:
        """Take one event (see the class docstring)."""
        value = _decode(data, "anthropic")
        kind = value.get("type") or event
        if kind == "error":
            err = value.get("error") if isinstance(value.get("error"), dict) else {}
            assert isinstance(err, dict)
            category = ANTHROPIC_ERROR_TYPES.get(str(err.get("type")), SERVER_ERROR)
            detail = one_line(err.get("message") or err.get("type") or "unknown error", 200)
            raise LlmError(category, f"anthropic: error in stream: {detail}")
        if kind == "message_start":
            msg = value.get("message") if isinstance(value.get("message"), dict) else {}
            assert isinstance(msg, dict)
            if isinstance(msg.get("model"), str):
                self.message["model"] = msg["model"]
            if isinstance(msg.get("usage"), dict):
                self.usage.update(msg["usage"])
        elif kind == "content_block_start":
            index = _index(value, len(self.blocks))
            block = value.get("content_block")
            self.blocks[index] = dict(block) if isinstance(block, dict) else {"type": "text"}
        elif kind == "content_block_delta":
            self._delta(value)
        elif kind == "content_block_stop":
            stopped = _index(value, -1)
            if stopped in self.partial_json:
                self._finish_input(stopped)
        elif kind == "message_delta":
            delta = value.get("delta") if isinstance(value.get("delta"), dict) else {}
            assert isinstance(delta, dict)
            if delta.get("stop_reason") is not None:
                self.message["stop_reason"] = delta["stop_reason"]
            if isinstance(value.get("usage"), dict):
                self.usage.update({k: v for k, v in value["usage"].items() if v is not None})
        elif kind == "message_stop":
            self.done = True

    def _delta(self, value: dict[str, Any]) -> None:
        index = _index(value, 0)
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        delta = value.get("delta") if isinstance(value.get("delta"), dict) else {}
        assert isinstance(delta, dict)
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = (block.get("text") or "") + delta["text"]
            if delta["text"]:
                self.on_delta(delta["text"])
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = (block.get("thinking") or "") + delta["thinking"]
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = (block.get("signature") or "") + delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self.partial_json.setdefault(index, []).append(delta["partial_json"])

    def _finish_input(self, index: int) -> None:
        text = "".join(self.partial_json.pop(index))
        if not text.strip():
            return
        try:
            self.blocks[index]["input"] = json.loads(text)
        except ValueError:
            raise LlmError(
                MALFORMED_RESPONSE,
                f"anthropic: streamed tool input is not valid JSON: {one_line(text, 80)!r}",
            ) from None

    def body(self) -> dict[str, Any]:
        """The complete ``message`` body the events add up to."""
        for index in list(self.partial_json):
            self._finish_input(index)
        out = dict(self.message)
        out["content"] = [block for _, block in sorted(self.blocks.items())]
        out["usage"] = dict(self.usage)
        return out
