"""Text-mode tool builtins: ``tool_parse_call``, ``tool_format_result``, ``tool_prompt``.

For models without native tool calling a program describes its registry in the system
prompt (``tool_prompt``), finds the calls in the answer (``tool_parse_call``) and sends the
results back as text (``tool_format_result``). The wire format is Harn's: a call is
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, a result
``<tool_result>{"name": ..., "result": ...}</tool_result>`` (Harn ``builtins.md``, "Tool
registry (low-level)").
"""

from __future__ import annotations

import json
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.tools import is_registry, json_schema
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"


def parse_calls(text: str) -> list[Any]:
    """The JSON values of the ``<tool_call>...</tool_call>`` blocks of ``text``, in order.

    A block whose body is not JSON is skipped; an opening tag without a closing one ends
    the scan. JSON objects become Harn dicts, arrays lists, and so on.
    """
    out: list[Any] = []
    pos = 0
    while True:
        start = text.find(_OPEN, pos)
        if start < 0:
            break
        body_start = start + len(_OPEN)
        end = text.find(_CLOSE, body_start)
        if end < 0:
            break
        try:
            out.append(json.loads(text[body_start:end].strip()))
        except ValueError:
            pass
        pos = end + len(_CLOSE)
    return out


@builtin("tool_parse_call")
def tool_parse_call(thread: Any, text: Any = None, more: Any = None) -> list[Any]:
    """``tool_parse_call(text)``: the tool calls written in ``text`` as
    ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>`` blocks, as a list of the
    parsed JSON values (``[{name, arguments}]``; always a list, empty when there is none).
    Blocks whose body is not JSON are skipped. ``tool_parse_call(registry, text)`` is
    accepted too (the registry is not consulted). A non-string ``text`` is read in its
    display form."""
    if is_registry(text) and more is not None:
        text = more
    return parse_calls(text if type(text) is str else display(text))


@builtin("tool_format_result")
def tool_format_result(thread: Any, *args: Any) -> str:
    """``tool_format_result(name, result)``: the text block that hands a tool's result back
    to a text-mode model, ``<tool_result>{"name": "<name>", "result": "<result>"}
    </tool_result>`` (one line; both values in their display form, JSON-escaped). Throws
    ``tool_format_result: requires name and result`` with fewer than two arguments."""
    if len(args) < 2:
        raise thrown("tool_format_result: requires name and result")
    name = json.dumps(display(args[0]), ensure_ascii=False)
    result = json.dumps(display(args[1]), ensure_ascii=False)
    return f'<tool_result>{{"name": {name}, "result": {result}}}</tool_result>'


def _type_text(schema: Any) -> str:
    """A short type for a JSON schema: ``string``, ``array<integer>``, ``string | null``,
    ``"a" | "b"`` for an enum, ``object`` or ``any``."""
    if type(schema) is not dict:
        return "any"
    if type(schema.get("enum")) is list:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if type(schema.get(key)) is list:
            return " | ".join(_type_text(s) for s in schema[key])
    t = schema.get("type")
    if type(t) is list:
        return " | ".join(str(x) for x in t)
    if t == "array" and type(schema.get("items")) is dict:
        return f"array<{_type_text(schema['items'])}>"
    if t == "object" and type(schema.get("properties")) is dict and schema["properties"]:
        fields = ", ".join(f"{k}: {_type_text(v)}" for k, v in schema["properties"].items())
        return "{" + fields + "}"
    return str(t) if type(t) is str else "any"


def _parameters_text(entry: dict[str, Any]) -> str:
    """One line per parameter: ``- name (type, required|optional[, default: v]): text``."""
    schema = json_schema(entry)
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    lines = []
    for pname, p in props.items():
        bits = [_type_text(p), "required" if pname in required else "optional"]
        if type(p) is dict and "default" in p:
            bits.append("default: " + json.dumps(p["default"], ensure_ascii=False, default=str))
        desc = p.get("description") if type(p) is dict else None
        line = f"- {pname} ({', '.join(bits)})"
        lines.append(f"{line}: {desc}" if type(desc) is str and desc else line)
    return "\n".join(lines)


@builtin("tool_prompt")
def tool_prompt(thread: Any, registry: Any = None) -> str:
    """``tool_prompt(registry)``: a system-prompt section that describes the registry's
    tools to a text-mode model: a ``# Available Tools`` heading, how to write a call
    (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), then a ``### name``
    block per tool (sorted by name) with its description, its parameters (type, required or
    optional, default, description) and its output schema when it has one. ``No tools are
    available.`` for an empty registry. Throws ``tool_prompt: requires a tool registry``
    for anything else."""
    if not is_registry(registry):
        raise thrown("tool_prompt: requires a tool registry")
    tools = [t for t in registry["tools"] if type(t) is dict]
    if not tools:
        return "No tools are available."
    parts = [
        "# Available Tools",
        "",
        "Call a tool by writing one block in exactly this form:",
        "",
        '<tool_call>{"name": "tool_name", "arguments": {"param": "value"}}</tool_call>',
        "",
        "One answer may hold several tool calls. Wait for their results before you go on.",
        "",
        "## Tools",
    ]
    for t in sorted(tools, key=lambda t: display(t.get("name"))):
        parts += ["", f"### {display(t.get('name'))}"]
        desc = t.get("description")
        if desc:
            parts.append(display(desc))
        params = _parameters_text(t)
        if params:
            parts += ["Parameters:", params]
        if t.get("outputSchema") is not None:
            parts.append(f"Returns: {_type_text(t['outputSchema'])}")
    return "\n".join(parts)
