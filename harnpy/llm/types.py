"""Normalized request/response models shared by every provider (messages, tools, usage).

All models are attrs shapes (:mod:`harnpy.shapes`) and JSON-friendly: ``to_dict()`` yields
only dict, list, str, int, float, bool and None, so the interpreter can turn them into Harn
values directly and snapshots can store them; :func:`harnpy.shapes.structure` validates
plain data into them. Provider modules translate these shapes to and from their wire
formats; nothing outside ``harnpy.llm`` sees a provider-native object.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from harnpy.llm.errors import CONFIG, LlmError, type_name
from harnpy.shapes import ShapeError, at_least, positive, shape, unstructure

Role = Literal["system", "user", "assistant", "tool"]

#: Harn's `timeout` option default (seconds per attempt).
DEFAULT_TIMEOUT_S = 120.0
#: Retries after the first attempt on transient failures (429, 5xx, timeouts, network).
DEFAULT_RETRIES = 2
#: Base of the exponential backoff (ms); attempt n waits backoff_ms * 2**n unless Retry-After.
DEFAULT_BACKOFF_MS = 250


@shape(forbid_extra=True)
@attrs.define
class ToolCall:
    """A model-requested tool invocation: ``{id, name, arguments}`` (arguments always a dict).

    ``arguments_error`` says why the model's arguments could not be decoded (``arguments``
    is then ``{}``); an agent loop answers such a call with a tool error result.
    """

    id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    arguments_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{id, name, arguments, arguments_error?}`` (a new dict; ``arguments`` copied)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "arguments": unstructure(self.arguments),
        }
        if self.arguments_error is not None:
            out["arguments_error"] = self.arguments_error
        return out


@shape(forbid_extra=True)
@attrs.define
class Message:
    """One chat message.

    ``content`` is a string, a list of provider-neutral content blocks (dicts, passed through
    to the provider) or None (assistant turns that only call tools). ``tool_calls`` appears on
    assistant turns; ``tool_call_id`` (and optionally ``name``) on ``tool`` result turns.
    ``thinking_blocks`` keeps an assistant turn's provider reasoning blocks verbatim
    (Anthropic ``thinking`` with its ``signature``, ``redacted_thinking``): the Messages API
    wants them back at the start of the turn that called tools; other providers ignore them.
    """

    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    thinking_blocks: list[dict[str, Any]] = attrs.field(factory=list)

    def to_wire(self) -> dict[str, Any]:
        """Compact dict (no empty/None fields except ``content``), as recorded by the mock."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [tc.to_dict() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.thinking_blocks:
            out["thinking_blocks"] = [dict(b) for b in self.thinking_blocks]
        return out

    def text(self) -> str:
        """The textual content: the string, or the ``text`` fields of content blocks joined."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        parts = [b.get("text") for b in self.content if isinstance(b.get("text"), str)]
        return "\n".join(p for p in parts if p)


def _empty_object_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@shape(forbid_extra=True)
@attrs.define
class ToolSpec:
    """A tool offered to the model: name, description and a JSON-schema ``parameters`` object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.field(factory=_empty_object_schema)

    def to_dict(self) -> dict[str, Any]:
        """``{name, description, parameters}`` (a new dict)."""
        return unstructure(self)  # type: ignore[no-any-return]

    @classmethod
    def coerce(cls, value: Any) -> ToolSpec:
        """Accept the common tool shapes and normalize them.

        Shapes: ``ToolSpec``; ``{name, description?, parameters?}`` where parameters is a JSON
        schema or Harn's short form ``{param: "type"}`` / ``{param: {type, description?,
        required?}}`` (a short-form param is required unless ``required: false`` or it has a
        ``default``); OpenAI ``{type: "function", function: {...}}``; Anthropic
        ``{name, input_schema}``.

        Raises:
            LlmError: category ``config`` when the value is not a recognizable tool.
        """
        if isinstance(value, ToolSpec):
            return value
        if not isinstance(value, dict):
            raise LlmError(CONFIG, f"tools: expected a tool dict, got {type_name(value)}")
        if isinstance(value.get("function"), dict):
            value = value["function"]
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise LlmError(CONFIG, "tools: every tool needs a non-empty string `name`")
        params = value.get("parameters", value.get("input_schema", value.get("inputSchema")))
        description = value.get("description") or ""
        if not isinstance(description, str):
            description = str(description)
        return cls(name=name, description=description, parameters=_json_schema(name, params))


def _json_schema(tool: str, params: Any) -> dict[str, Any]:
    """Turn a JSON schema or Harn's short parameter form into an object JSON schema."""
    if params is None:
        return {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise LlmError(CONFIG, f"tools: parameters of `{tool}` must be a dict")
    if params.get("type") == "object" or "properties" in params:
        given = dict(params)
        given.setdefault("type", "object")
        given.setdefault("properties", {})
        return given
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, spec in params.items():
        if isinstance(spec, str):
            properties[pname] = {"type": spec}
            required.append(pname)
        elif isinstance(spec, dict):
            prop = {k: v for k, v in spec.items() if k != "required"}
            prop.setdefault("type", "string")
            properties[pname] = prop
            if spec.get("required", "default" not in spec):
                required.append(pname)
        else:
            raise LlmError(CONFIG, f"tools: parameter `{pname}` of `{tool}` must be a dict")
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


@shape(forbid_extra=True)
@attrs.define
class LlmRequest:
    """One model call, provider-neutral.

    ``system`` is kept apart from ``messages`` (providers place it natively). ``provider``
    None or ``"auto"`` means "infer" (see ``harnpy.llm.routing``). ``tool_format`` "text"
    means the caller rendered the tools into the prompt itself, so they are not sent natively
    (and the mock does not auto-call them). ``timeout_s`` is per attempt; ``retries`` counts
    attempts after the first; ``backoff_ms`` is the exponential backoff base. ``api_key`` is
    never dumped or printed.
    """

    messages: list[Message] = attrs.field(factory=list)
    system: str | None = None
    model: str | None = None
    provider: str | None = None
    tools: list[ToolSpec] | None = None
    tool_format: Literal["native", "text"] | None = None
    #: The provider-shaped tools array of a native tool search (``tool_search`` with mode
    #: native: a search meta-tool then the tools with ``defer_loading``), sent instead of
    #: ``tools``; None otherwise (harnpy/lifecycle/tool_search.py). Not dumped (nor is
    #: ``api_key``).
    tool_payload: list[dict[str, Any]] | None = attrs.field(default=None, metadata={"dump": False})
    temperature: float | None = None
    max_tokens: int | None = None
    response_format: Literal["text", "json"] | None = None
    output_schema: dict[str, Any] | None = None
    thinking: Any = None
    #: The checked ``budget`` option (:func:`harnpy.llm.options.parse_budget`): preflight
    #: limits the interpreter enforces before the request is sent; providers ignore it.
    budget: dict[str, Any] | None = attrs.field(default=None, metadata={"dump": False})
    #: ``{prefix, suffix}`` of an ``llm_completion`` (fill-in-the-middle) request, whose
    #: messages already ask for the missing text; None for a chat call. The mock answers
    #: it deterministically (``Mock completion after N chars before M chars``).
    completion: dict[str, str] | None = attrs.field(default=None, metadata={"dump": False})
    timeout_s: float | None = attrs.field(default=None, validator=positive())
    retries: int | None = attrs.field(default=None, validator=at_least(0))
    backoff_ms: int | None = attrs.field(default=None, validator=at_least(0))
    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False, metadata={"dump": False})

    def to_dict(self) -> dict[str, Any]:
        """All fields but ``api_key``, as plain data."""
        return unstructure(self)  # type: ignore[no-any-return]

    def native_tools(self) -> list[ToolSpec]:
        """Tools to send in the provider's native format (empty when ``tool_format`` is text)."""
        if not self.tools or self.tool_format == "text":
            return []
        return list(self.tools)

    @property
    def effective_timeout_s(self) -> float:
        """``timeout_s`` or :data:`DEFAULT_TIMEOUT_S`."""
        return self.timeout_s if self.timeout_s is not None else DEFAULT_TIMEOUT_S

    @property
    def effective_retries(self) -> int:
        """``retries`` or :data:`DEFAULT_RETRIES`."""
        return self.retries if self.retries is not None else DEFAULT_RETRIES

    @property
    def effective_backoff_ms(self) -> int:
        """``backoff_ms`` or :data:`DEFAULT_BACKOFF_MS`."""
        return self.backoff_ms if self.backoff_ms is not None else DEFAULT_BACKOFF_MS


@shape()
@attrs.define
class Usage:
    """Token accounting for one call (provider-reported; the mock uses its documented defaults)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@shape()
@attrs.define
class LlmResponse:
    """A normalized model answer.

    ``text`` is the concatenated visible text ("" when the model only called tools);
    ``stop_reason`` uses Anthropic's vocabulary (``end_turn``, ``max_tokens``, ``tool_use``,
    ``stop_sequence``; OpenAI's finish reasons are mapped) or None when unknown;
    ``raw_thinking`` holds reasoning text when the provider returned any;
    ``thinking_blocks`` the provider's reasoning blocks verbatim when it needs them sent
    back (Anthropic; see :class:`Message`).
    """

    text: str = ""
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: str | None = None
    model: str = ""
    provider: str = ""
    raw_thinking: str | None = None
    thinking_blocks: list[dict[str, Any]] = attrs.field(factory=list)
    #: A provider's summary of its hidden reasoning (OpenAI reasoning summaries; a mock
    #: entry's ``thinking_summary``), or None.
    thinking_summary: str | None = None

    def to_harn_fields(self) -> dict[str, Any]:
        """The provider-level fields of Harn's ``llm_call`` result (lifecycle.md 2.14).

        Returns ``{text, model, provider, input_tokens, output_tokens, cache_read_tokens,
        cache_write_tokens, tool_calls: [{id, name, arguments}], stop_reason, thinking,
        thinking_summary?}`` (``thinking_summary`` only when the provider gave one); the
        interpreter adds ``visible_text``, ``transcript`` and ``data``.
        """
        out = {
            "text": self.text,
            "model": self.model,
            "provider": self.provider,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cache_read_tokens": self.usage.cache_read_tokens,
            "cache_write_tokens": self.usage.cache_write_tokens,
            "tool_calls": [tc.to_dict() for tc in self.tool_calls],
            "stop_reason": self.stop_reason,
            "thinking": self.raw_thinking,
        }
        if self.thinking_summary is not None:
            out["thinking_summary"] = self.thinking_summary
        return out


def validation_message(exc: ShapeError, what: str) -> str:
    """One-line summary of a shape error: ``<what>: field `x`: <reason>`` or ``<what>:
    unknown field `x``` (first problem)."""
    loc, reason = exc.problems[0]
    if reason == "unknown field":
        return f"{what}: unknown field `{loc}`"
    return f"{what}: field `{loc}`: {reason}" if loc else f"{what}: {reason}"
