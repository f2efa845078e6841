"""Text-mode tool calls of an agent loop (Harn ``llm/agent_loop.md``: ``tool_format``,
``native_tool_fallback``).

``tool_format: "text"`` offers the tools in the system prompt (:func:`text_tool_contract`)
and reads ``<tool_call>...</tool_call>`` blocks from the answer
(:func:`parse_text_tool_calls`). A block holds ``{"name", "arguments"}`` JSON or a call
``name({key: value, ...})`` (keys may be bare words, as in a Harn dict literal).

In a native-tool loop, a model that answers with such blocks instead of native tool calls
takes the **native tool fallback** (:func:`native_fallback`), per the loop's
``native_tool_fallback`` option: ``"allow"`` (default) runs the calls every time,
``"allow_once"`` runs them the first time and rejects later repeats with corrective
feedback, ``"reject"`` never runs them. Each such turn records a ``native_tool_fallback``
transcript event ``{metadata: {accepted, policy, iteration, tools}}``; the loop result's
``trace`` counts ``native_text_tool_fallbacks`` and
``native_text_tool_fallback_rejections``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.transcript import append_event, append_message
from harnpy.runtime.display import display

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
FALLBACK_POLICIES = ("allow", "allow_once", "reject")
REJECTED_FALLBACK = (
    "Your last reply wrote tool calls as <tool_call> text. This stage only accepts native "
    "tool calls: call the tools through the tool-calling API (or answer without tools)."
)

_CALL_FORM = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*\((.*)\)\s*$", re.DOTALL)
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_]\w*)\s*:")


def text_tool_contract(wire: list[dict[str, Any]]) -> str:
    """System-prompt text that offers ``wire`` tools to a model without native tool calls
    (``tool_format: "text"``)."""
    lines = [
        "You can call tools. To call one, reply with a block",
        '<tool_call>{"name": "<tool name>", "arguments": {<arguments>}}</tool_call>',
        "(one block per call). Each result comes back in a <tool_result> block. Tools:",
    ]
    for tool in wire:
        props = (tool.get("parameters") or {}).get("properties") or {}
        params = ", ".join(
            f"{k}: {v.get('type', 'any') if type(v) is dict else 'any'}" for k, v in props.items()
        )
        lines.append(f"- {tool['name']}({params}): {tool.get('description') or ''}")
    return "\n".join(lines)


def _loads(text: str) -> Any:
    """JSON, or a Harn-style dict literal with bare keys; raises ValueError."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_BARE_KEY.sub(r'\1"\2":', text))


def _parse_block(body: str) -> tuple[str, dict[str, Any]] | None:
    try:
        value = _loads(body)
    except ValueError:
        value = None
    if type(value) is dict and type(value.get("name")) is str:
        args = value.get("arguments")
        return value["name"], args if type(args) is dict else {}
    m = _CALL_FORM.match(body)
    if m is None:
        return None
    inner = m.group(2).strip()
    if not inner:
        return m.group(1), {}
    try:
        args = _loads(inner)
    except ValueError:
        return None
    return (m.group(1), args) if type(args) is dict else None


def parse_text_tool_calls(text: str, iteration: int) -> list[dict[str, Any]]:
    """The ``<tool_call>`` blocks of an answer as ``[{id, name, arguments}]`` (ids
    ``text_call_<iteration>_<k>``; blocks that cannot be read are skipped)."""
    calls: list[dict[str, Any]] = []
    pos = 0
    while True:
        start = text.find(TOOL_CALL_OPEN, pos)
        if start < 0:
            break
        end = text.find(TOOL_CALL_CLOSE, start)
        if end < 0:
            break
        body = text[start + len(TOOL_CALL_OPEN) : end].strip()
        pos = end + len(TOOL_CALL_CLOSE)
        parsed = _parse_block(body)
        if parsed is None:
            continue
        calls.append(
            {
                "id": f"text_call_{iteration}_{len(calls) + 1}",
                "name": parsed[0],
                "arguments": parsed[1],
            }
        )
    return calls


def fallback_policy(opts: dict[str, Any], where: str) -> str:
    """The loop's ``native_tool_fallback`` option (default ``allow``).

    Raises:
        HarnThrow: for another value.
    """
    v = opts.get("native_tool_fallback", "allow")
    if v is None:
        return "allow"
    if v not in FALLBACK_POLICIES:
        raise thrown(
            f'{where}: native_tool_fallback must be "allow", "allow_once" or "reject", got '
            f"{display(v)}"
        )
    return str(v)


def native_fallback(
    st: dict[str, Any], t: dict[str, Any], text: str, iteration: int
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """``(calls, transcript, state changes)`` for a native-tool turn whose answer ``text``
    may hold text-mode tool calls (module docstring). No blocks: nothing changes."""
    calls = parse_text_tool_calls(text or "", iteration) if TOOL_CALL_OPEN in (text or "") else []
    if not calls:
        return [], t, {}
    policy = st.get("native_tool_fallback") or "allow"
    seen = st.get("native_fallbacks", 0)
    accepted = policy == "allow" or (policy == "allow_once" and seen == 0)
    rejections = st.get("native_fallback_rejections", 0) + (0 if accepted else 1)
    t = append_event(
        t,
        {
            "kind": "native_tool_fallback",
            "visibility": "internal",
            "metadata": {
                "accepted": accepted,
                "policy": policy,
                "iteration": iteration,
                "tools": [c["name"] for c in calls],
            },
        },
    )
    changes = {"native_fallbacks": seen + 1, "native_fallback_rejections": rejections}
    if not accepted:
        t = append_message(t, {"role": "user", "content": REJECTED_FALLBACK})
        return [], t, changes
    return calls, t, changes
