"""The ``agent_trace()`` events of ``agent_loop`` turns (Harn's ``AgentTraceEvent``: the
loop's model calls, tool executions and rejections, compactions and its completion).

Each event is a plain dict with a ``type`` and the loop's ``session_id``, appended to the
run's trace by :func:`harnpy.lifecycle.structured_calls.trace_event` (snapshot data, at
most 10,000 events kept):

* ``{type: "llm_call", call: "agent_loop", session_id, iteration, provider, model,
  input_tokens, output_tokens, cache_tokens, stop_reason, tool_calls}`` per model answer
  (``cache_tokens``: prompt-cache reads; ``tool_calls``: how many calls it asked for);
* ``{type: "tool_execution", session_id, iteration, tool_name, tool_use_id, status}`` per
  dispatched tool call (``status``: ``ok`` or ``error``);
* ``{type: "tool_rejected", session_id, iteration, tool_name, tool_use_id, reason}`` per
  call the loop refused (``reason``: the text the model got back);
* ``{type: "context_compaction", session_id, iteration, archived_messages,
  new_summary_len}`` per compaction before a model call;
* ``{type: "loop_complete", session_id, status, iterations, total_duration_ms,
  tools_used, successful_tools}`` once the loop has finished (not when it parks).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.structured_calls import trace_event


def _base(kind: str, st: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "session_id": st.get("session_id")}


def llm_call(runtime: Any, st: dict[str, Any], resp: Any, iteration: int, calls: int) -> None:
    """Trace the model answer ``resp`` of turn ``iteration`` (``calls``: the tool calls it
    asked for, text-mode ones included)."""
    trace_event(
        runtime,
        {
            **_base("llm_call", st),
            "call": "agent_loop",
            "iteration": iteration,
            "provider": resp.provider,
            "model": resp.model,
            "input_tokens": resp.usage.input_tokens,
            "output_tokens": resp.usage.output_tokens,
            "cache_tokens": resp.usage.cache_read_tokens,
            "stop_reason": resp.stop_reason,
            "tool_calls": calls,
        },
    )


def tool_done(runtime: Any, st: dict[str, Any], record: dict[str, Any], content: str) -> None:
    """Trace one tool call's outcome (``record``: the loop's tool record, ``content``: what
    the model got back)."""
    status = record.get("status")
    if status in ("ok", "error"):
        event = {
            **_base("tool_execution", st),
            "iteration": record.get("iteration"),
            "tool_name": record.get("name"),
            "tool_use_id": record.get("id"),
            "status": status,
        }
    else:
        event = {
            **_base("tool_rejected", st),
            "iteration": record.get("iteration"),
            "tool_name": record.get("name"),
            "tool_use_id": record.get("id"),
            "reason": content,
        }
    trace_event(runtime, event)


def compaction(runtime: Any, st: dict[str, Any], archived: Any, summary: Any) -> None:
    """Trace a compaction of the loop's context (``archived``: messages folded,
    ``summary``: the text that replaced them)."""
    trace_event(
        runtime,
        {
            **_base("context_compaction", st),
            "iteration": st.get("iteration"),
            "archived_messages": archived if type(archived) is int else 0,
            "new_summary_len": len(summary) if type(summary) is str else 0,
        },
    )


def loop_complete(runtime: Any, st: dict[str, Any], result: dict[str, Any]) -> None:
    """Trace the end of a finished loop from its result dict."""
    llm = result.get("llm") or {}
    tools = result.get("tools") or {}
    trace_event(
        runtime,
        {
            **_base("loop_complete", st),
            "status": result.get("status"),
            "iterations": llm.get("iterations"),
            "total_duration_ms": llm.get("duration_ms"),
            "tools_used": list(tools.get("calls") or []),
            "successful_tools": list(tools.get("successful") or []),
        },
    )
