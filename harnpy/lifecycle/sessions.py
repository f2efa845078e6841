"""Agent sessions and captured agent events (``std/agent/state``, ``std/agent/events``).

Every agent loop belongs to a session (``options.session_id``, generated when absent). The
runtime keeps the latest transcript of each session and a log of agent events tagged with
their session id (``llm_call``, ``tool_call``, ``tool_result``, ``tool_call_audit``,
``system_reminder``, ``loop_status``; each event dict has ``type`` and ``session_id``).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import arg, strip_harness
from harnpy.lifecycle.services import services
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnRuntimeError
from harnpy.stdlib.registry import builtin


def _sid(v: Any) -> str:
    return v if type(v) is str else display(v)


@builtin("agent_session_messages", aliases=("__agent_session_messages",))
def agent_session_messages(thread: Any, *args: Any) -> list[Any]:
    """``agent_session_messages(session_id)``: the messages of the session's latest
    transcript (``[]`` for an unknown session)."""
    t = services(thread.runtime).sessions.get(_sid(arg(strip_harness(args), 0)))
    return list(t.get("messages") or []) if type(t) is dict else []


@builtin("agent_session_transcript", aliases=("__agent_session_transcript",))
def agent_session_transcript(thread: Any, *args: Any) -> Any:
    """``agent_session_transcript(session_id)``: the session's latest transcript, or nil."""
    return services(thread.runtime).sessions.get(_sid(arg(strip_harness(args), 0)))


@builtin("__agent_session_event_mark")
def agent_session_event_mark(thread: Any) -> int:
    """``__agent_session_event_mark()``: the current length of the agent event log."""
    return len(services(thread.runtime).session_events)


@builtin("__agent_session_events_since")
def agent_session_events_since(thread: Any, session_id: Any = None, mark: Any = None) -> list[Any]:
    """``__agent_session_events_since(session_id, mark)``: the events of ``session_id``
    logged after ``mark`` (all sessions when ``session_id`` is nil)."""
    start = mark if type(mark) is int and mark >= 0 else 0
    events = services(thread.runtime).session_events[start:]
    if session_id is None:
        return [dict(e) for e in events]
    sid = _sid(session_id)
    return [dict(e) for e in events if e.get("session_id") == sid]


@builtin("__agent_await_outside_loop")
def agent_await_outside_loop(thread: Any, *args: Any) -> Any:
    """Handler of the ``agent_await_resumption`` tool entry: reached only when the tool is
    invoked outside ``agent_loop``'s structural handling, which is an error
    (``HARN-SUS-005``, lifecycle.md 2.11)."""
    raise HarnRuntimeError(
        "HARN-SUS-005: agent_await_resumption can only park from inside agent_loop", "E410"
    )
