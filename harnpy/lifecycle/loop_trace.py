"""The ``agent_trace()`` events of ``agent_loop`` turns (Harn's agent trace events: the
loop's model calls, tool executions and rejections, compactions and its completion), and
``agent_trace_summary()``.

Each event is a plain dict with a ``type`` and the loop's ``session_id``, appended to the
run's trace by :func:`harnpy.lifecycle.structured_calls.trace_event` (snapshot data, the
last 10,000 events shown; a park stores the trace as rows appended per park, outside the
checkpoint body, like the transcript):

* ``{type: "llm_call", call: "agent_loop", call_id, session_id, iteration, provider,
  model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, duration_ms,
  stop_reason, tool_calls}`` per model answer (``call_id``: ``"<session_id>:<iteration>"``;
  ``duration_ms``: from the request to the answer, retries included; ``tool_calls``: how
  many calls it asked for, text-mode ones included);
* ``{type: "tool_execution", session_id, iteration, tool_name, tool_use_id, status,
  duration_ms}`` per dispatched tool call (``status``: ``ok`` or ``error``;
  ``duration_ms``: the time it ran, on the run's monotonic clock, which a restored snapshot
  continues: a call that parked mid-tool and was resumed in another process counts its time
  before and after the park, not the time it was parked);
* ``{type: "tool_rejected", session_id, iteration, tool_name, tool_use_id, reason}`` per
  call the loop refused (``reason``: the text the model got back);
* ``{type: "context_compaction", session_id, iteration, archived_messages,
  new_summary_len}`` per compaction before a model call;
* ``{type: "loop_complete", session_id, status, iterations, total_duration_ms,
  tools_used, successful_tools}`` once the loop has finished (not when it parks).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.structured_calls import MAX_TRACE_EVENTS, trace_event, trace_events
from harnpy.stdlib.registry import builtin

#: Key of a tool call's start (monotonic ms) in the loop's dispatch record (``prep``).
STARTED_KEY = "started_mono_ms"


def _base(kind: str, st: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "session_id": st.get("session_id")}


def _now(runtime: Any) -> int:
    return int(runtime.clock.monotonic_ms())


def llm_call(
    runtime: Any, st: dict[str, Any], resp: Any, iteration: int, calls: int, duration_ms: int
) -> None:
    """Trace the model answer ``resp`` (an :class:`~harnpy.llm.types.LlmResponse`) of turn
    ``iteration`` (``calls``: the tool calls it asked for, text-mode ones included;
    ``duration_ms``: how long the request took)."""
    usage = resp.usage
    trace_event(
        runtime,
        {
            **_base("llm_call", st),
            "call": "agent_loop",
            "call_id": f"{st.get('session_id')}:{iteration}",
            "iteration": iteration,
            "provider": resp.provider,
            "model": resp.model,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "duration_ms": max(0, int(duration_ms)),
            "stop_reason": resp.stop_reason,
            "tool_calls": calls,
        },
    )


def tool_start(runtime: Any, prep: dict[str, Any]) -> dict[str, Any]:
    """A tool call of the loop is about to run: ``prep`` (its dispatch record) with its start
    (:data:`STARTED_KEY`, monotonic ms) added, for the ``duration_ms`` of its
    ``tool_execution`` event. The record is a local of the loop's Harn frame, so the start
    is snapshot data and survives a park inside the tool."""
    return {**prep, STARTED_KEY: _now(runtime)}


def tool_done(
    runtime: Any, st: dict[str, Any], record: dict[str, Any], content: str, started: Any
) -> None:
    """Trace one tool call's outcome (``record``: the loop's tool record ``{id, name,
    status, iteration, ...}``, ``content``: what the model got back; ``started``: the call's
    :data:`STARTED_KEY` from :func:`tool_start`, None when it has none)."""
    status = record.get("status")
    if type(started) is not int:
        started = None
    if status in ("ok", "error"):
        event = {
            **_base("tool_execution", st),
            "iteration": record.get("iteration"),
            "tool_name": record.get("name"),
            "tool_use_id": record.get("id"),
            "status": status,
            "duration_ms": None if started is None else max(0, _now(runtime) - started),
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
    """Trace the end of a finished loop from its result dict (``agent_loop``'s)."""
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


def _int(v: Any) -> int:
    return v if type(v) is int else 0


@builtin("agent_trace_summary")
def agent_trace_summary(thread: Any) -> dict[str, Any]:
    """``agent_trace_summary()``: the trace events of ``agent_trace()`` rolled up:
    ``{llm_calls, total_input_tokens, total_output_tokens, total_llm_duration_ms,
    tool_executions, tool_rejections, tool_errors, total_tool_duration_ms, tools_used,
    compactions, schema_retries, iterations, loops_completed, status, total_duration_ms}``.

    ``llm_calls`` and the token totals count every traced model answer (agent loop turns
    and structured calls alike); ``tools_used``: the distinct tool names executed, in
    first-use order; ``iterations``: the loop turns traced; ``status`` and
    ``total_duration_ms``: those of the last ``loop_complete`` (``"unknown"`` and nil
    when no loop has finished).
    """
    llm_calls = inputs = outputs = llm_ms = 0
    executions = rejections = errors = tool_ms = compactions = retries = 0
    iterations = completed = 0
    used: list[str] = []
    status: Any = "unknown"
    total_ms: Any = None
    for e in trace_events(thread.runtime)[-MAX_TRACE_EVENTS:]:
        kind = e.get("type")
        if kind == "llm_call":
            llm_calls += 1
            inputs += _int(e.get("input_tokens"))
            outputs += _int(e.get("output_tokens"))
            llm_ms += _int(e.get("duration_ms"))
            if e.get("call") == "agent_loop":
                iterations += 1
        elif kind == "tool_execution":
            executions += 1
            tool_ms += _int(e.get("duration_ms"))
            if e.get("status") == "error":
                errors += 1
            name = e.get("tool_name")
            if type(name) is str and name not in used:
                used.append(name)
        elif kind == "tool_rejected":
            rejections += 1
        elif kind == "context_compaction":
            compactions += 1
        elif kind == "schema_retry":
            retries += 1
        elif kind == "loop_complete":
            completed += 1
            status = e.get("status")
            total_ms = e.get("total_duration_ms")
    return {
        "llm_calls": llm_calls,
        "total_input_tokens": inputs,
        "total_output_tokens": outputs,
        "total_llm_duration_ms": llm_ms,
        "tool_executions": executions,
        "tool_rejections": rejections,
        "tool_errors": errors,
        "total_tool_duration_ms": tool_ms,
        "tools_used": used,
        "compactions": compactions,
        "schema_retries": retries,
        "iterations": iterations,
        "loops_completed": completed,
        "status": status,
        "total_duration_ms": total_ms,
    }
