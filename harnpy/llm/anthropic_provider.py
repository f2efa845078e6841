"""Anthropic Messages API provider through the official ``anthropic`` package.

The SDK is imported on the first call and its retries are off; ``llm_stream`` sends
``stream: true`` and reads the events with :class:`~harnpy.llm.streaming.AnthropicStream`. The request puts the system
prompt in the top-level ``system`` field, turns assistant tool calls into ``tool_use`` blocks
and tool results into ``tool_result`` blocks of a user turn (consecutive turns of the same
role are merged, as the API requires alternation). The raw JSON body is parsed here: ``text``
blocks are concatenated, ``tool_use`` blocks become tool calls, ``thinking`` blocks become
``raw_thinking``; ``thinking`` / ``redacted_thinking`` blocks are also kept verbatim
(``thinking_blocks``, with their ``signature``) and put back at the start of the assistant
turn when the conversation is sent again, as the API requires with extended thinking.

Settings: key from the request or ``ANTHROPIC_API_KEY`` (required); base URL from the
request, ``ANTHROPIC_BASE_URL`` or ``https://api.anthropic.com`` (a trailing ``/v1`` is
dropped because the SDK adds it); model from the request, ``HARNPY_MODEL``,
``HARN_LLM_MODEL`` or ``claude-sonnet-5``; ``max_tokens`` defaults to 8192 (the API
requires one). ``output_schema`` / ``response_format`` are not sent (no portable native
equivalent); callers parse JSON from the text.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from harnpy.llm._remote import (
    RemoteProvider,
    Settings,
    as_int,
    require_str,
    stream_ended_early,
)
from harnpy.llm.errors import (
    ANTHROPIC_ERROR_TYPES,
    CONFIG,
    MALFORMED_RESPONSE,
    SERVER_ERROR,
    LlmError,
    empty_completion,
    one_line,
    type_name,
)
from harnpy.llm.options import anthropic_thinking
from harnpy.llm.routing import env_model
from harnpy.llm.streaming import AnthropicStream, OnDelta, sse_events
from harnpy.llm.types import LlmRequest, LlmResponse, Message, ToolCall, Usage

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-5"
ANTHROPIC_DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider(RemoteProvider):
    """Messages API provider over the ``anthropic`` SDK.

    Args:
        env: environment mapping (None: ``os.environ`` at call time).
        sleep: backoff sleep callable (seconds).
    """

    sdk_module = "anthropic"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("anthropic", **kwargs)

    def settings(self, request: LlmRequest) -> Settings:
        """Resolve model, base URL and key (see module docstring).

        Raises:
            LlmError: ``config`` naming ``ANTHROPIC_API_KEY`` when no key is available.
        """
        env = self.env
        model = request.model or env_model(env) or ANTHROPIC_DEFAULT_MODEL
        base_url = (
            request.base_url or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE_URL
        ).rstrip("/")
        if base_url.endswith("/v1"):
            base_url = base_url[: -len("/v1")]
        key = request.api_key or env.get("ANTHROPIC_API_KEY")
        if not key:
            raise LlmError(
                CONFIG, f"anthropic: ANTHROPIC_API_KEY is not set (needed for model {model})"
            )
        return Settings(model=model, base_url=base_url, api_key=key, key_env="ANTHROPIC_API_KEY")

    def _new_client(self, sdk: ModuleType, settings: Settings) -> Any:
        return sdk.Anthropic(api_key=settings.api_key, base_url=settings.base_url, max_retries=0)

    def _send(self, client: Any, request: LlmRequest, settings: Settings) -> str:
        raw = client.messages.with_raw_response.create(
            **build_messages_body(request, settings.model),
            timeout=request.effective_timeout_s,
        )
        return str(raw.http_response.text)

    def _parse(self, data: Any, settings: Settings) -> LlmResponse:
        return parse_message(data, fallback_model=settings.model)

    def _stream(
        self, client: Any, request: LlmRequest, settings: Settings, on_delta: OnDelta
    ) -> dict[str, Any]:
        acc = AnthropicStream(on_delta)
        with client.messages.with_streaming_response.create(
            **build_messages_body(request, settings.model),
            stream=True,
            timeout=request.effective_timeout_s,
        ) as response:
            for event, data in sse_events(response.iter_lines()):
                acc.feed(event, data)
                if acc.done:
                    break
        if not acc.done and acc.message.get("stop_reason") is None:
            raise stream_ended_early(self.name)
        return acc.body()


# -- request ----------------------------------------------------------------------------------
def build_messages_body(request: LlmRequest, model: str) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request`` (streaming off)."""
    system_parts = [request.system] if request.system else []
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            if message.text():
                system_parts.append(message.text())
            continue
        role, blocks = _wire_blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system_parts:
        body["system"] = "\n\n".join(system_parts)
    tools = request.native_tools()
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    thinking = anthropic_thinking(request.thinking, body["max_tokens"])
    if thinking is not None:
        body["thinking"] = thinking
    return body


def _wire_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        return "user", [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.text(),
            }
        ]
    blocks: list[dict[str, Any]]
    if isinstance(message.content, list):
        blocks = [dict(b) for b in message.content]
    elif message.content:
        blocks = [{"type": "text", "text": message.content}]
    else:
        blocks = []
    if message.role == "assistant":
        # signed thinking blocks go first in the turn that holds the tool_use blocks
        blocks[:0] = [dict(b) for b in message.thinking_blocks]
        blocks.extend(
            {"type": "tool_use", "id": tc.id, "name": tc.name, "input": tc.arguments}
            for tc in message.tool_calls
        )
    if not blocks:
        blocks = [{"type": "text", "text": ""}]
    return message.role, blocks


# -- response ---------------------------------------------------------------------------------
def parse_message(data: dict[str, Any], *, fallback_model: str) -> LlmResponse:
    """Normalize a decoded Messages API body.

    Tolerates ``content: null``, null ``usage`` fields, ``input: null`` on tool_use blocks
    and unknown block types (ignored).

    Raises:
        LlmError: ``malformed_response`` for a non-list content or a tool_use block without a
            name or with non-object input; the error's category
            (:data:`~harnpy.llm.errors.ANTHROPIC_ERROR_TYPES`, else ``server_error``) when a
            2xx body is an error envelope; a transient ``server_error`` (reason
            ``empty_completion``) when output tokens were reported but no text, thinking or
            tool call came.
    """
    if data.get("type") == "error":
        err = data.get("error") if isinstance(data.get("error"), dict) else {}
        assert isinstance(err, dict)
        category = ANTHROPIC_ERROR_TYPES.get(str(err.get("type")), SERVER_ERROR)
        detail = one_line(err.get("message") or err.get("type") or "unknown error", 200)
        raise LlmError(category, f"anthropic: error in response body: {detail}")
    content = data.get("content")
    if content is None:
        content = []
    if not isinstance(content, list):
        raise LlmError(MALFORMED_RESPONSE, "anthropic: response content is not a list")
    texts: list[str] = []
    thinking: list[str] = []
    thinking_blocks: list[dict[str, Any]] = []
    tool_calls: list[ToolCall] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise LlmError(
                MALFORMED_RESPONSE, f"anthropic: content block #{i + 1} is not an object"
            )
        kind = block.get("type")
        if kind == "text":
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
        elif kind == "thinking":
            if isinstance(block.get("thinking"), str):
                thinking.append(block["thinking"])
            thinking_blocks.append(block)
        elif kind == "redacted_thinking":
            thinking_blocks.append(block)
        elif kind == "tool_use":
            name = require_str(block.get("name"), f"name of tool_use block #{i + 1}", "anthropic")
            args = block.get("input")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise LlmError(
                    MALFORMED_RESPONSE,
                    f"anthropic: tool_use `{name}` input is a {type_name(args)}, expected an object",
                )
            call_id = block.get("id")
            tool_calls.append(
                ToolCall(
                    id=call_id if isinstance(call_id, str) and call_id else f"toolu_{i + 1}",
                    name=name,
                    arguments=args,
                )
            )
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    stop = data.get("stop_reason")
    model = data.get("model")
    output_tokens = as_int(usage.get("output_tokens"))
    if output_tokens > 0 and not any(texts) and not thinking_blocks and not tool_calls:
        name = model if isinstance(model, str) and model else fallback_model
        raise empty_completion("anthropic", name, output_tokens)
    return LlmResponse(
        text="".join(texts),
        tool_calls=tool_calls,
        usage=Usage(
            input_tokens=as_int(usage.get("input_tokens")),
            output_tokens=output_tokens,
            cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
        ),
        stop_reason=stop if isinstance(stop, str) else ("tool_use" if tool_calls else None),
        model=model if isinstance(model, str) and model else fallback_model,
        provider="anthropic",
        raw_thinking="\n".join(thinking) if thinking else None,
        thinking_blocks=thinking_blocks,
    )
