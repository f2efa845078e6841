"""OpenAI-compatible chat-completions provider (OpenAI, Ollama, vLLM, llama.cpp, ...).

Uses the official ``openai`` package (imported on the first call) with its retries off, sends
``chat.completions`` with native ``tools`` (streaming off, except for ``llm_stream``:
:meth:`~harnpy.llm._remote.RemoteProvider.stream`, events read by
:class:`~harnpy.llm.streaming.OpenAIStream`), and parses the raw JSON body itself so that ``null`` fields (``content: null`` beside tool calls, ``usage: null``) and
small deviations of local servers are handled without the SDK's models.

Three presets share this class:

* ``openai``: base URL from the request, ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``;
  key from the request or ``OPENAI_API_KEY`` (required for api.openai.com; a placeholder key
  is sent to any other base URL, since local servers ignore it); model default ``gpt-4o``.
* ``ollama``: ``OLLAMA_HOST`` (default ``http://localhost:11434``) + ``/v1``; no key needed;
  model default ``llama3.2``.
* ``local``: ``LOCAL_LLM_BASE_URL`` (default ``http://localhost:8000``) + ``/v1``; key from
  ``LOCAL_LLM_API_KEY`` if set; model from ``LOCAL_LLM_MODEL`` (required).

Model precedence (all presets): request model, ``HARNPY_MODEL``, ``HARN_LLM_MODEL``, preset
default. ``finish_reason`` is mapped to Anthropic's stop-reason words (stop -> end_turn,
length -> max_tokens, tool_calls -> tool_use).
"""

from __future__ import annotations

import json
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
    CONFIG,
    MALFORMED_RESPONSE,
    LlmError,
    empty_completion,
    one_line,
    raise_error_envelope,
    type_name,
)
from harnpy.llm.options import openai_reasoning
from harnpy.llm.routing import env_model
from harnpy.llm.streaming import OnDelta, OpenAIStream, sse_events
from harnpy.llm.types import LlmRequest, LlmResponse, Message, ToolCall, Usage
from harnpy.shapes import kind_name

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o"
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
OLLAMA_DEFAULT_MODEL = "llama3.2"
LOCAL_DEFAULT_BASE_URL = "http://localhost:8000"
#: Sent as the bearer token to non-OpenAI servers when no key is configured.
PLACEHOLDER_KEY = "sk-no-key-required"

_FINISH_TO_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}


def _with_v1(url: str) -> str:
    url = url.rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIProvider(RemoteProvider):
    """Chat-completions provider over the ``openai`` SDK (presets: openai, ollama, local).

    Args:
        name: ``"openai"`` (default), ``"ollama"`` or ``"local"``.
        env: environment mapping (None: ``os.environ`` at call time).
        sleep: backoff sleep callable (seconds).
    """

    sdk_module = "openai"

    def __init__(self, name: str = "openai", **kwargs: Any) -> None:
        if name not in ("openai", "ollama", "local"):
            raise LlmError(CONFIG, f"openai: unknown preset {name!r}")
        super().__init__(name, **kwargs)

    def settings(self, request: LlmRequest) -> Settings:
        """Resolve model, base URL and key for this preset (see module docstring).

        Raises:
            LlmError: ``config`` when ``OPENAI_API_KEY`` is needed but unset, or when the
                ``local`` preset has no model.
        """
        env = self.env
        model = request.model or env_model(env)
        if self.name == "ollama":
            base_url = request.base_url or _with_v1(env.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST)
            return Settings(
                model=model or OLLAMA_DEFAULT_MODEL,
                base_url=base_url,
                api_key=request.api_key or "ollama",
                key_env="OLLAMA_HOST",
            )
        if self.name == "local":
            base_url = request.base_url or _with_v1(
                env.get("LOCAL_LLM_BASE_URL") or LOCAL_DEFAULT_BASE_URL
            )
            model = model or env.get("LOCAL_LLM_MODEL")
            if not model:
                raise LlmError(
                    CONFIG, "local: no model given (pass `model` or set LOCAL_LLM_MODEL)"
                )
            return Settings(
                model=model,
                base_url=base_url,
                api_key=request.api_key or env.get("LOCAL_LLM_API_KEY") or PLACEHOLDER_KEY,
                key_env="LOCAL_LLM_API_KEY",
            )
        model = model or OPENAI_DEFAULT_MODEL
        base_url = (
            request.base_url or env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        ).rstrip("/")
        key = request.api_key or env.get("OPENAI_API_KEY")
        if not key:
            if "api.openai.com" in base_url:
                raise LlmError(
                    CONFIG, f"openai: OPENAI_API_KEY is not set (needed for model {model})"
                )
            key = PLACEHOLDER_KEY
        return Settings(model=model, base_url=base_url, api_key=key, key_env="OPENAI_API_KEY")

    def _new_client(self, sdk: ModuleType, settings: Settings) -> Any:
        return sdk.OpenAI(api_key=settings.api_key, base_url=settings.base_url, max_retries=0)

    def _send(self, client: Any, request: LlmRequest, settings: Settings) -> str:
        raw = client.chat.completions.with_raw_response.create(
            **build_chat_body(request, settings.model),
            timeout=request.effective_timeout_s,
        )
        return str(raw.http_response.text)

    def _parse(self, data: Any, settings: Settings) -> LlmResponse:
        return parse_chat_completion(data, provider=self.name, fallback_model=settings.model)

    def _stream(
        self, client: Any, request: LlmRequest, settings: Settings, on_delta: OnDelta
    ) -> dict[str, Any]:
        body = build_chat_body(request, settings.model)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        acc = OpenAIStream(self.name, on_delta)
        with client.chat.completions.with_streaming_response.create(
            **body, timeout=request.effective_timeout_s
        ) as response:
            for _event, data in sse_events(response.iter_lines()):
                acc.feed(data)
                if acc.done:
                    break
        if not acc.done and acc.finish is None:
            raise stream_ended_early(self.name)
        return acc.body()


# -- request ----------------------------------------------------------------------------------
def build_chat_body(request: LlmRequest, model: str) -> dict[str, Any]:
    """The chat.completions keyword arguments for ``request`` (streaming off).

    The system prompt becomes the first ``system`` message; assistant tool calls carry JSON
    string arguments; tool results become ``tool`` messages. ``output_schema`` selects
    ``response_format: json_schema``, ``response_format: "json"`` selects ``json_object``.
    o-series and gpt-5 models get ``max_completion_tokens`` instead of ``max_tokens``. A
    thinking config becomes ``reasoning_effort`` (:func:`harnpy.llm.options.openai_reasoning`).
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_wire_message(m) for m in request.messages)
    body: dict[str, Any] = {"model": model, "messages": messages}
    tools = request.native_tools()
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        lowered = model.lower()
        if lowered.startswith(("o1", "o3", "o4", "gpt-5")):
            body["max_completion_tokens"] = request.max_tokens
        else:
            body["max_tokens"] = request.max_tokens
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": request.output_schema},
        }
    elif request.response_format == "json":
        body["response_format"] = {"type": "json_object"}
    body.update(openai_reasoning(request.thinking))
    return body


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        out: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.text() if not isinstance(message.content, str) else message.content,
        }
        return out
    out = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
            }
            for tc in message.tool_calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    if message.name is not None and message.role == "user":
        out["name"] = message.name
    return out


# -- response ---------------------------------------------------------------------------------
def parse_chat_completion(
    data: dict[str, Any], *, provider: str, fallback_model: str
) -> LlmResponse:
    """Normalize a decoded chat.completion body.

    Tolerates ``content: null``, missing/null ``usage``, ``tool_calls: null``, content given
    as a list of text parts, and ``arguments`` given as an object or empty string; a tool
    call whose arguments are not a JSON object gets ``arguments: {}`` and an
    ``arguments_error`` (the model's mistake, answered by the agent loop as a tool error).

    Raises:
        LlmError: ``malformed_response`` when there is no usable choice/message or a tool
            call has no name; ``server_error`` when a 2xx body is an error envelope (its
            ``code`` refines it, :func:`~harnpy.llm.errors.refine_http_error`); a transient
            ``server_error`` (reason ``empty_completion``) when completion tokens were
            reported but no content, reasoning or tool call came.
    """
    choices = data.get("choices")
    if not choices and data.get("error") is not None:
        raise_error_envelope(provider, data, "response body")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LlmError(MALFORMED_RESPONSE, f"{provider}: response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise LlmError(MALFORMED_RESPONSE, f"{provider}: response choice has no message")
    text = _content_text(message.get("content"), provider)
    thinking = message.get("reasoning_content") or message.get("reasoning")
    tool_calls = [
        _tool_call(i, tc, provider) for i, tc in enumerate(message.get("tool_calls") or [])
    ]
    finish = choice.get("finish_reason")
    stop_reason = _FINISH_TO_STOP.get(finish, finish) if isinstance(finish, str) else None
    if stop_reason is None and tool_calls:
        stop_reason = "tool_use"
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    details = usage.get("prompt_tokens_details")
    cached = as_int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    model = data.get("model")
    output_tokens = as_int(usage.get("completion_tokens"))
    if output_tokens > 0 and not text and not thinking and not tool_calls:
        name = model if isinstance(model, str) and model else fallback_model
        raise empty_completion(provider, name, output_tokens)
    return LlmResponse(
        text=text,
        tool_calls=tool_calls,
        usage=Usage(
            input_tokens=as_int(usage.get("prompt_tokens")),
            output_tokens=output_tokens,
            cache_read_tokens=cached,
        ),
        stop_reason=stop_reason,
        model=model if isinstance(model, str) and model else fallback_model,
        provider=provider,
        raw_thinking=thinking if isinstance(thinking, str) and thinking else None,
    )


def _content_text(content: Any, provider: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    raise LlmError(MALFORMED_RESPONSE, f"{provider}: message content is a {type_name(content)}")


def _tool_call(index: int, raw: Any, provider: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise LlmError(MALFORMED_RESPONSE, f"{provider}: tool call #{index + 1} is not an object")
    fn = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    assert isinstance(fn, dict)
    name = require_str(fn.get("name"), f"name of tool call #{index + 1}", provider)
    args = fn.get("arguments")
    arguments: dict[str, Any] = {}
    problem: str | None = None
    if args is None or (isinstance(args, str) and not args.strip()):
        pass
    elif isinstance(args, dict):
        arguments = args
    elif isinstance(args, str):
        # Undecodable arguments are the model's mistake, not a provider failure: the call
        # carries the reason and an agent loop sends it back as the tool's error result.
        try:
            decoded = json.loads(args)
        except (ValueError, RecursionError):
            decoded, problem = None, f"not valid JSON: {one_line(args, 80)!r}"
        if problem is None:
            if isinstance(decoded, dict):
                arguments = decoded
            else:
                problem = f"a JSON {kind_name(decoded)}, expected an object"
    else:
        problem = f"a {type_name(args)}, expected a JSON object"
    call_id = raw.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index + 1}",
        name=name,
        arguments=arguments,
        arguments_error=None if problem is None else f"the arguments are {problem}",
    )
