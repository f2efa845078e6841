"""Build an :class:`LlmRequest` from ``llm_call(prompt, system?, options?)`` arguments.

Recognized option keys (others, e.g. ``agent_loop``'s, are ignored): ``provider``, ``model``,
``base_url``, ``api_key``, ``messages`` (replaces the prompt), ``system``, ``temperature``,
``max_tokens``, ``tools`` (a list, or a registry dict with a ``tools`` list), ``tool_format``
(``native``/``text``; ``auto`` = unset), ``response_format`` (``text``/``json``),
``output_schema`` (aliases ``schema``, ``json_schema``), ``thinking`` (normalized by
:func:`normalize_thinking`), ``budget`` (validated by :func:`parse_budget`), ``timeout``
(seconds) or ``timeout_ms``, ``llm_retries`` (alias ``retries``), ``llm_backoff_ms`` (alias
``backoff_ms``), ``model_tier`` (``small`` / ``mid`` / ``frontier`` or another catalog
alias: the model when ``model`` is not given, see :func:`tier_model`). ``nil`` values count
as absent.

The provider request builders read the normalized thinking config through
:func:`anthropic_thinking` (the Messages API ``thinking`` parameter) and
:func:`openai_reasoning` (Chat Completions ``reasoning_effort``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harnpy.llm.errors import CONFIG, LlmError, type_name
from harnpy.llm.types import LlmRequest, Message, ToolCall, ToolSpec, validation_message
from harnpy.shapes import ShapeError, structure

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "thinking_blocks")
# LlmRequest field -> the llm_call option users wrote (for error messages).
_OPTION_NAMES = {
    "retries": "llm_retries",
    "backoff_ms": "llm_backoff_ms",
    "timeout_s": "timeout",
}


def coerce_message(value: Any, where: str = "messages") -> Message:
    """Turn a message dict (Harn or OpenAI shaped) into a :class:`Message`.

    Tool calls may be ``{id, name, arguments}`` or OpenAI's ``{id, function: {name,
    arguments}}`` with arguments as a dict or a JSON string. Unknown keys are ignored.

    Raises:
        LlmError: ``config`` for a non-dict, a bad role or undecodable arguments.
    """
    if isinstance(value, Message):
        return value
    if not isinstance(value, Mapping):
        raise LlmError(CONFIG, f"{where}: expected a message dict, got {type_name(value)}")
    data = {k: value[k] for k in _MESSAGE_KEYS if value.get(k) is not None}
    calls = data.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise LlmError(CONFIG, f"{where}: `tool_calls` must be a list")
        data["tool_calls"] = [_coerce_tool_call(c, where) for c in calls]
    try:
        return structure(data, Message)
    except ShapeError as exc:
        raise LlmError(CONFIG, validation_message(exc, where)) from None


class MessageCache:
    """Coerced :class:`Message` objects by the identity of the message dict they came from.

    An agent loop sends its whole transcript on every turn; validating it all again makes a
    turn O(transcript). With a cache, :func:`build_request` validates only the message dicts
    it has not seen: a dict seen before, still holding the same values (checked against a
    shallow copy kept with the entry, so a key reassigned in place is noticed), gives back the
    same :class:`Message`. Harn code cannot change a dict this cache references: the
    in-place update fast path only touches containers nothing else references, and every
    other update copies. Entries hold their dict (so an id is never reused while cached); the
    cache is emptied when it reaches ``max_entries``. Not snapshot data: a cold cache only
    costs one validation per message.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self.max_entries = max_entries
        self._entries: dict[int, tuple[Any, dict[Any, Any], Message]] = {}
        self.misses = 0

    def coerce_all(self, values: list[Any], where: str) -> list[Message]:
        """:func:`coerce_message` of each of ``values`` (``where: messages[i]`` in errors),
        known dicts from the cache.

        Raises:
            LlmError: as :func:`coerce_message` (a message that fails is not cached).
        """
        entries = self._entries
        out: list[Message] = []
        for i, value in enumerate(values):
            hit = entries.get(id(value))
            if hit is not None and hit[0] is value and hit[1] == value:
                out.append(hit[2])
                continue
            message = coerce_message(value, f"{where}: messages[{i}]")
            if type(value) is dict:
                self.misses += 1
                if len(entries) >= self.max_entries:
                    entries.clear()
                entries[id(value)] = (value, dict(value), message)
            out.append(message)
        return out


def _coerce_tool_call(value: Any, where: str) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    if not isinstance(value, Mapping):
        raise LlmError(CONFIG, f"{where}: tool call must be a dict")
    fn = value.get("function") if isinstance(value.get("function"), Mapping) else value
    assert isinstance(fn, Mapping)
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise LlmError(CONFIG, f"{where}: tool call arguments are not valid JSON") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise LlmError(CONFIG, f"{where}: tool call arguments must be a dict")
    return ToolCall(id=str(value.get("id") or ""), name=str(fn.get("name") or ""), arguments=args)


def _first(options: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if options.get(key) is not None:
            return options[key]
    return None


def build_request(
    prompt: str | None,
    system: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    where: str = "llm_call",
    cache: MessageCache | None = None,
) -> LlmRequest:
    """The request for ``llm_call(prompt, system, options)`` (lifecycle.md 2.14).

    ``options.messages`` replaces the prompt; otherwise the prompt becomes one user
    message. The positional ``system`` wins over ``options.system``. With a ``cache``, only
    message dicts it has not seen are validated (see :class:`MessageCache`).

    Raises:
        LlmError: ``config`` with a one-line reason for a malformed option.
    """
    opts: Mapping[str, Any] = options or {}
    raw_messages = opts.get("messages")
    if raw_messages is not None:
        if not isinstance(raw_messages, list):
            raise LlmError(CONFIG, f"{where}: option `messages` must be a list")
        if cache is not None:
            messages = cache.coerce_all(raw_messages, where)
        else:
            messages = [
                coerce_message(m, f"{where}: messages[{i}]") for i, m in enumerate(raw_messages)
            ]
    else:
        messages = [Message(role="user", content=prompt or "")]

    tools_opt = opts.get("tools")
    tools: list[ToolSpec] | None = None
    if tools_opt is not None:
        if isinstance(tools_opt, Mapping) and isinstance(tools_opt.get("tools"), list):
            tools_opt = tools_opt["tools"]
        if not isinstance(tools_opt, list):
            raise LlmError(CONFIG, f"{where}: option `tools` must be a list or a tool registry")
        tools = [ToolSpec.coerce(t) for t in tools_opt]

    timeout_s = opts.get("timeout")
    if timeout_s is None and opts.get("timeout_ms") is not None:
        ms = opts["timeout_ms"]
        if not isinstance(ms, int | float) or isinstance(ms, bool) or not 0 < ms < float("inf"):
            raise LlmError(CONFIG, f"{where}: option `timeout_ms` must be a positive number")
        timeout_s = ms / 1000.0
    tool_format = opts.get("tool_format")
    if tool_format == "auto":
        tool_format = None

    model, provider = opts.get("model"), opts.get("provider")
    if model is None and opts.get("model_tier") is not None:
        model, provider = tier_model(opts["model_tier"], provider, where)
    fields: dict[str, Any] = {
        "messages": [],  # validated above; set after structure() (no second pass over them)
        "system": system if system is not None else opts.get("system"),
        "model": model,
        "provider": provider,
        "tools": tools,
        "tool_format": tool_format,
        "temperature": opts.get("temperature"),
        "max_tokens": opts.get("max_tokens"),
        "response_format": opts.get("response_format"),
        "output_schema": _first(opts, "output_schema", "schema", "json_schema"),
        "thinking": normalize_thinking(opts.get("thinking"), where),
        "budget": parse_budget(opts.get("budget"), where),
        "timeout_s": timeout_s,
        "retries": _first(opts, "llm_retries", "retries"),
        "backoff_ms": _first(opts, "llm_backoff_ms", "backoff_ms"),
        "base_url": opts.get("base_url"),
        "api_key": opts.get("api_key"),
    }
    try:
        request = structure(fields, LlmRequest)
    except ShapeError as exc:
        message = validation_message(exc, where).replace("field `", "option `")
        for field, option in _OPTION_NAMES.items():
            message = message.replace(f"option `{field}`", f"option `{option}`")
        raise LlmError(CONFIG, message) from None
    request.messages = messages
    return request


def tier_model(tier: Any, provider: Any, where: str = "llm_call") -> tuple[str, Any]:
    """``(model, provider)`` of the ``model_tier`` option: the catalog alias named by the
    tier (``small``, ``mid``, ``frontier``, ``fast``...). An explicit ``provider`` is kept
    (the mock provider answers any model); otherwise the alias's provider is used.

    Raises:
        LlmError: ``config`` for a tier that is not a catalog alias.
    """
    from harnpy.llm import catalog

    aliases = catalog.bundled().get("aliases", {})
    if not isinstance(tier, str) or tier not in aliases:
        raise LlmError(
            CONFIG,
            f"{where}: option `model_tier` must be one of {', '.join(aliases)}, got {tier!r}",
        )
    entry = aliases[tier]
    return str(entry["id"]), provider if provider is not None else entry["provider"]


# ----------------------------------------------------------------------------- thinking

#: The ``mode`` values of a thinking config (Harn ``llm/llm_call.md``, option ``thinking``).
THINKING_MODES = ("enabled", "adaptive", "effort", "disabled")
#: The ``level`` values of ``{mode: "effort"}``.
EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")
#: ``budget_tokens`` sent to Anthropic for ``{mode: "enabled"}`` without one.
DEFAULT_THINKING_BUDGET = 2048
#: The level of ``{mode: "effort"}`` without one.
DEFAULT_EFFORT_LEVEL = "medium"


def normalize_thinking(value: Any, where: str = "llm_call") -> dict[str, Any] | None:
    """The ``thinking`` option as one dict shape: ``{mode, budget_tokens?, level?}``.

    Accepted forms (Harn's): ``true`` or ``{budget_tokens: N}`` (``mode: "enabled"``),
    ``false`` (``mode: "disabled"``), a mode name, ``{mode: "enabled", budget_tokens?}``,
    ``{mode: "adaptive"}``, ``{mode: "effort", level?}`` (level one of
    :data:`EFFORT_LEVELS`, default ``medium``; ``{level}`` alone means effort) and
    ``{mode: "disabled"}``. None stays None (no thinking config).

    Raises:
        LlmError: ``config`` for an unknown mode or level, a ``budget_tokens`` that is not
            a positive int, or a value of another type.
    """
    if value is None:
        return None
    if value is True:
        return {"mode": "enabled"}
    if value is False:
        return {"mode": "disabled"}
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, Mapping):
        raise LlmError(
            CONFIG, f"{where}: option `thinking` must be a bool or a dict, got {type_name(value)}"
        )
    mode = value.get("mode")
    if mode is None:
        mode = "effort" if value.get("level") is not None else "enabled"
    if mode not in THINKING_MODES:
        raise LlmError(
            CONFIG,
            f"{where}: thinking mode must be one of {', '.join(THINKING_MODES)}, got {mode!r}",
        )
    out: dict[str, Any] = {"mode": mode}
    budget = value.get("budget_tokens")
    if budget is not None:
        if type(budget) is not int or budget <= 0:
            raise LlmError(CONFIG, f"{where}: thinking budget_tokens must be a positive int")
        out["budget_tokens"] = budget
    level = value.get("level")
    if mode == "effort":
        level = DEFAULT_EFFORT_LEVEL if level is None else level
        if level not in EFFORT_LEVELS:
            raise LlmError(
                CONFIG,
                f"{where}: thinking level must be one of {', '.join(EFFORT_LEVELS)}, got {level!r}",
            )
        out["level"] = level
    elif level is not None:
        out["level"] = level
    return out


def anthropic_thinking(thinking: Any, max_tokens: int) -> dict[str, Any] | None:
    """The Anthropic Messages ``thinking`` parameter of a thinking config (None: send none).

    ``enabled`` -> ``{type: "enabled", budget_tokens}`` (default
    :data:`DEFAULT_THINKING_BUDGET`); ``adaptive`` -> ``{type: "adaptive"}``; ``effort`` ->
    enabled with a budget by level (``minimal`` 1,024 ... ``xhigh`` 16,384; ``none`` sends
    none); ``disabled`` -> none. The API wants ``budget_tokens`` below the request's
    ``max_tokens`` and at least 1,024: the budget is clamped into that range.
    """
    cfg = normalize_thinking(thinking, "anthropic")
    if cfg is None or cfg["mode"] == "disabled":
        return None
    if cfg["mode"] == "adaptive":
        return {"type": "adaptive"}
    if cfg["mode"] == "effort":
        budget = cfg.get("budget_tokens", _EFFORT_BUDGETS[cfg["level"]])
        if budget == 0:
            return None
    else:
        budget = cfg.get("budget_tokens", DEFAULT_THINKING_BUDGET)
    budget = max(MIN_THINKING_BUDGET, min(budget, max_tokens - 1))
    return {"type": "enabled", "budget_tokens": budget}


#: Anthropic's smallest accepted ``budget_tokens``.
MIN_THINKING_BUDGET = 1024
_EFFORT_BUDGETS = {
    "none": 0,
    "minimal": 1024,
    "low": 2048,
    "medium": 4096,
    "high": 8192,
    "xhigh": 16_384,
}


def openai_reasoning(thinking: Any) -> dict[str, Any]:
    """The Chat Completions parameters of a normalized thinking config: ``{reasoning_effort:
    level}`` for ``effort`` (the level as given), ``enabled`` / ``adaptive`` (``medium``;
    ``high`` when ``budget_tokens`` > 8,192, ``low`` when < 4,096); ``{}`` for
    ``disabled`` or no config."""
    cfg = normalize_thinking(thinking, "openai")
    if cfg is None or cfg["mode"] == "disabled":
        return {}
    if cfg["mode"] == "effort":
        return {"reasoning_effort": cfg["level"]}
    budget = cfg.get("budget_tokens")
    level = DEFAULT_EFFORT_LEVEL
    if budget is not None:
        level = "high" if budget > 8192 else "low" if budget < 4096 else DEFAULT_EFFORT_LEVEL
    return {"reasoning_effort": level}


# ----------------------------------------------------------------------------- budget

#: The keys of the ``budget`` option (Harn ``llm/llm_call.md``, "Cost tracking"):
#: per-call limits (``max_cost_usd`` in USD, token counts) and the aggregate
#: ``total_budget_usd`` (an agent loop's whole spend). ``spent_usd`` is what an agent loop
#: has spent before this call (set by the loop, counted against ``total_budget_usd``).
BUDGET_KEYS = (
    "max_cost_usd",
    "max_input_tokens",
    "max_output_tokens",
    "total_budget_usd",
    "spent_usd",
)
_BUDGET_INTS = ("max_input_tokens", "max_output_tokens")


def parse_budget(value: Any, where: str = "llm_call") -> dict[str, Any] | None:
    """The ``budget`` option checked: a dict of :data:`BUDGET_KEYS` (USD amounts are
    non-negative numbers, token limits non-negative ints; nil values dropped), or None.

    Raises:
        LlmError: ``config`` for a non-dict, an unknown key or a bad value.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise LlmError(CONFIG, f"{where}: option `budget` must be a dict, got {type_name(value)}")
    out: dict[str, Any] = {}
    for key, v in value.items():
        if v is None:
            continue
        if key not in BUDGET_KEYS:
            raise LlmError(
                CONFIG,
                f"{where}: unknown budget field `{key}` (expected one of "
                f"{', '.join(BUDGET_KEYS[:-1])})",
            )
        if key in _BUDGET_INTS:
            ok = type(v) is int and v >= 0
            what = "a non-negative int"
        else:
            ok = type(v) in (int, float) and v >= 0 and v != float("inf")
            what = "a non-negative number (USD)"
        if not ok:
            raise LlmError(CONFIG, f"{where}: budget `{key}` must be {what}, got {v!r}")
        out[key] = v
    return out
