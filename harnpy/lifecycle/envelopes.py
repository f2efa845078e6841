"""The ``sub_agent_run`` result envelope (Harn ``llm/agent_loop.md``, "sub_agent_run";
lifecycle.md 2.2): ``{ok, status, summary, artifacts, evidence_added, tokens_used,
budget_exceeded, session_id, transcript, data, error, provider}`` built from a finished
child loop's result. A blocking ``sub_agent_run`` returns it; a background one keeps it as
the worker's ``result``.
"""

from __future__ import annotations

from typing import Any

from harnpy.stdlib.registry import builtin


@builtin("__agent_envelope")
def agent_envelope(thread: Any, st: Any = None, result: Any = None) -> dict[str, Any]:
    """``__agent_envelope(state, loop_result)``: the blocking ``sub_agent_run`` envelope.

    A sub-agent whose model parked (``agent_await_resumption``) has not finished: the
    envelope says ``ok: false``, ``status: "suspended"``, with an ``error`` of category
    ``suspended`` naming the snapshot, and the Suspension's ``handle``, ``snapshot_path``,
    ``reason``, ``initiator``, ``conditions`` — resume it with ``resume_agent(snapshot_path)``
    or ``harnpy run --resume``."""
    r = result if type(result) is dict else {}
    if r.get("status") == "suspended":
        return _suspended_envelope(st, r)
    opts = st.get("llm_options") if type(st) is dict else {}
    envelope = build(r, opts.get("provider") if type(opts) is dict else None)
    from harnpy.runtime.outcomes import transfer

    transfer(thread.runtime, result, envelope)  # checking the envelope checks the loop
    return envelope


def build(r: dict[str, Any], provider: Any) -> dict[str, Any]:
    """The envelope of the finished (not parked) loop result ``r``: ``ok`` when it ended
    ``done`` without a refused call; ``data`` the JSON value of the answer, if any."""
    from harnpy.lifecycle.llm_builtins import extract_json

    status = r.get("status")
    ok = status in ("done",)
    denied = next(
        (c for c in r.get("tool_calls") or [] if type(c) is dict and c.get("status") == "denied"),
        None,
    )
    if denied is not None:  # a capability denial fails the child (Harn: ok false)
        ok = False
    text = r.get("visible_text") or r.get("text") or ""
    data = None
    parsed, value = extract_json(text) if text else (False, None)
    if parsed:
        data = value
    llm = r.get("llm") or {}
    envelope: dict[str, Any] = {
        "ok": ok,
        "status": status,
        "summary": text,
        "artifacts": [],
        "evidence_added": 0,
        "tokens_used": (llm.get("input_tokens") or 0) + (llm.get("output_tokens") or 0),
        "budget_exceeded": status == "budget_exhausted",
        "session_id": r.get("session_id"),
        "transcript": r.get("transcript"),
        "data": data,
        "error": None if ok else _envelope_error(r, status, denied),
        "provider": provider,
    }
    return envelope


def _envelope_error(r: dict[str, Any], status: Any, denied: Any) -> dict[str, Any]:
    """The ``error`` of a failed sub-agent envelope: ``{category: "permission_denied",
    message, tool}`` when a call was refused, else the loop's error (or ``agent``)."""
    if denied is not None:
        return {
            "category": "permission_denied",
            "message": f"the sub-agent was refused tool '{denied.get('name')}'",
            "tool": denied.get("name"),
        }
    err = r.get("error")
    if type(err) is dict:
        return err
    return {"category": "agent", "message": f"sub-agent ended with {status}"}


def _suspended_envelope(st: Any, r: dict[str, Any]) -> dict[str, Any]:
    """The blocking ``sub_agent_run`` envelope of a sub-agent that parked (see
    ``__agent_envelope``)."""
    opts = st.get("llm_options") if type(st) is dict else {}
    llm = r.get("llm") or {}
    path = r.get("snapshot_path")
    reason = r.get("reason") or ""
    return {
        "ok": False,
        "status": "suspended",
        "summary": "",
        "artifacts": [],
        "evidence_added": 0,
        "tokens_used": (llm.get("input_tokens") or 0) + (llm.get("output_tokens") or 0),
        "budget_exceeded": False,
        "session_id": r.get("session_id"),
        "transcript": None,
        "data": None,
        "error": {
            "category": "suspended",
            "message": f"the sub-agent parked before finishing (reason: {reason}); resume it "
            f'with resume_agent("{path}") or `harnpy run --resume {path}`',
        },
        "provider": opts.get("provider") if type(opts) is dict else None,
        **{
            k: r.get(k)
            for k in (
                "handle",
                "snapshot_path",
                "reason",
                "initiator",
                "conditions",
                "iterations_completed",
                "suspended_at",
                "auto_resume_trigger",
            )
        },
    }
