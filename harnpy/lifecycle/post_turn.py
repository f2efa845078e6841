"""``post_turn_callback`` of ``agent_loop`` (Harn ``llm/agent_loop.md``, "Post-turn
callback"): after a turn that called tools, the loop calls ``callback(info)`` with

    {session_id, iteration, has_tool_calls, tool_results: [{tool_name, ok, status,
     rendered_result, error}], tool_count, successful_tool_names, rejected_tool_names,
     session_successful_tools, session_rejected_tools, text, visible_text}

and applies its answer: a non-empty string is injected as the next user message, ``true``
stops the loop after this turn (``status: "done"``), a dict may carry ``message`` and
``stop``. Anything else (nil, false, "", a thrown error) changes nothing. The callback runs
as an ordinary Harn call of ``std/agent/_loop``.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.llm_builtins import visible_text
from harnpy.lifecycle.tools import outcome_of
from harnpy.lifecycle.transcript import append_event, append_message
from harnpy.runtime.display import display
from harnpy.runtime.values import Builtin, Closure
from harnpy.stdlib.registry import builtin


def post_turn_option(opts: dict[str, Any], where: str, key: str = "post_turn_callback") -> Any:
    """The loop's callback option ``key`` (``post_turn_callback``, ``on_delta``): a
    function or nil.

    Raises:
        HarnThrow: for anything else.
    """
    cb = opts.get(key)
    if cb is None or type(cb) in (Closure, Builtin):
        return cb
    raise thrown(f"{where}: {key} must be a function, got {display(cb)}")


def _names(records: list[Any], ok: bool) -> list[Any]:
    out: list[Any] = []
    for r in records:
        good = r.get("status") == "ok"
        if good == ok and r.get("name") not in out:
            out.append(r.get("name"))
    return out


@builtin("__agent_turn_info")
def agent_turn_info(thread: Any, st: Any = None, count: Any = None) -> dict[str, Any]:
    """``__agent_turn_info(st, n)``: the ``post_turn_callback`` argument for the last ``n``
    tool calls of the turn (module docstring)."""
    if type(st) is not dict:
        return {}
    records = [r for r in st.get("records") or [] if type(r) is dict]
    n = count if type(count) is int and count >= 0 else 0
    turn = records[len(records) - n :] if n else []
    results = [
        {
            "tool_name": r.get("name"),
            "ok": r.get("status") == "ok",
            "status": r.get("status"),
            "rendered_result": display(r.get("result")) if r.get("status") == "ok" else "",
            "error": r.get("error"),
        }
        for r in turn
    ]
    text = st.get("last_text") or ""
    return {
        "session_id": st.get("session_id"),
        "iteration": st.get("iteration"),
        "has_tool_calls": bool(turn),
        "dispatch": None,
        "tool_results": results,
        "tool_count": len(turn),
        "successful_tool_names": _names(turn, True),
        "rejected_tool_names": _names(turn, False),
        "session_successful_tools": _names(records, True),
        "session_rejected_tools": _names(records, False),
        "text": text,
        "visible_text": visible_text(text),
    }


@builtin("__agent_apply_post_turn")
def agent_apply_post_turn(thread: Any, st: Any = None, outcome: Any = None) -> Any:
    """``__agent_apply_post_turn(st, outcome)``: the state after the callback's answer
    (module docstring); a stop ends the loop with ``status: "done"``."""
    from harnpy.lifecycle.services import services

    if type(st) is not dict:
        return st
    ok, value = outcome_of(outcome)
    if not ok:
        return st
    message, stop = None, False
    if type(value) is str:
        message = value or None
    elif value is True:
        stop = True
    elif type(value) is dict:
        m = value.get("message")
        message = m if type(m) is str and m else None
        stop = value.get("stop") is True
    t = st["transcript"]
    if message is not None:
        t = append_message(t, {"role": "user", "content": message})
    changes: dict[str, Any] = {}
    if stop:
        t = append_event(
            t, {"kind": "loop_status", "status": "done", "reason": "post_turn_callback"}
        )
        changes = {"finished": True, "status": "done", "pending_calls": []}
    services(thread.runtime).sessions[st["session_id"]] = t
    return {**st, "transcript": t, **changes}
