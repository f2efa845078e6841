"""Transcripts as data: messages with roles, tool calls and results, system reminders.

A transcript is a plain Harn dict (so it lives in loop state and snapshots as is)::

    {_type: "transcript", id, messages: [message], events: [event], summary: string|nil,
     metadata: dict, assets: list}

A message is ``{role, content, tool_calls?, tool_call_id?, name?}`` with role ``system``,
``user``, ``assistant`` or ``tool``. ``events`` is the append-only canonical stream: every
message appended also appends ``{kind: "message", role, content, ...}``; the agent loop adds
``tool_call``, ``tool_result``, ``tool_call_audit``, ``system_reminder`` and ``loop_status``
events. All helpers return new dicts and never mutate their argument (value semantics).

Builtins: ``transcript``, ``transcript_from_messages``, ``transcript_messages``,
``transcript_events``, ``transcript_events_by_kind``, ``transcript_summary``,
``transcript_id``, ``transcript_add_message``, ``transcript_stats``, ``transcript_export``,
``transcript_import``, ``transcript_fork``, ``transcript_compact``.
"""

from __future__ import annotations

import json
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness, thrown
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

_ROLES = ("system", "user", "assistant", "tool")


def new_transcript(
    messages: list[Any] | None = None,
    metadata: Any = None,
    tid: str | None = None,
    summary: Any = None,
) -> dict[str, Any]:
    """A transcript holding ``messages`` (each also recorded as a ``message`` event)."""
    import uuid as _uuid

    t: dict[str, Any] = {
        "_type": "transcript",
        "id": tid or f"transcript_{_uuid.uuid4().hex[:16]}",
        "messages": [],
        "events": [],
        "summary": summary,
        "metadata": dict(metadata) if type(metadata) is dict else {},
        "assets": [],
    }
    for m in messages or []:
        t = append_message(t, m)
    return t


def is_transcript(v: Any) -> bool:
    """True for a transcript dict."""
    return type(v) is dict and v.get("_type") == "transcript"


def coerce(v: Any, where: str) -> dict[str, Any]:
    """A transcript from a transcript dict, a message list or nil.

    Raises:
        HarnThrow: ``<where>: expected a transcript or a list of messages``.
    """
    if is_transcript(v):
        return v  # type: ignore[no-any-return]
    if v is None:
        return new_transcript()
    if type(v) is list:
        return new_transcript(messages=v)
    raise thrown(f"{where}: expected a transcript or a list of messages")


def normalize_message(m: Any) -> dict[str, Any]:
    """A message dict with a valid role and only the known keys (strings for content).

    Raises:
        HarnThrow: for a non-dict or an unknown role.
    """
    if type(m) is not dict:
        raise thrown(f"transcript: a message must be a dict, got {display(m)}")
    role = m.get("role", "user")
    if role == "tool_result":
        role = "tool"
    if role not in _ROLES:
        raise thrown(f"transcript: unknown message role {display(role)}")
    out: dict[str, Any] = {"role": role, "content": m.get("content")}
    for key in ("tool_calls", "tool_call_id", "name", "thinking_blocks"):
        if m.get(key) is not None:
            out[key] = m[key]
    return out


def append_message(t: dict[str, Any], m: Any) -> dict[str, Any]:
    """A copy of ``t`` with message ``m`` appended (and its ``message`` event)."""
    msg = normalize_message(m)
    event = {"kind": "message", **msg, "index": len(t["messages"])}
    return {**t, "messages": [*t["messages"], msg], "events": [*t["events"], event]}


def append_event(t: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``t`` with ``event`` (a dict with ``kind``) appended to ``events``."""
    return {**t, "events": [*t["events"], event]}


def events_of(v: Any) -> list[Any]:
    """The event list of a transcript (a message list gives its ``message`` events)."""
    if is_transcript(v):
        return list(v.get("events") or [])
    if type(v) is list:
        return list(new_transcript(messages=v)["events"])
    return []


def stats(t: dict[str, Any]) -> dict[str, Any]:
    """Counts of a transcript's messages and events (``transcript_stats``)."""
    msgs = t.get("messages") or []
    by_role = {r: sum(1 for m in msgs if m.get("role") == r) for r in _ROLES}
    evs = t.get("events") or []
    return {
        "message_count": len(msgs),
        "system_message_count": by_role["system"],
        "user_message_count": by_role["user"],
        "assistant_message_count": by_role["assistant"],
        "tool_result_message_count": by_role["tool"],
        "tool_call_count": sum(len(m.get("tool_calls") or []) for m in msgs),
        "event_count": len(evs),
        "system_reminder_count": sum(1 for e in evs if e.get("kind") == "system_reminder"),
        "has_summary": t.get("summary") is not None,
    }


def digest(t: dict[str, Any], keep_chars: int = 2000) -> str:
    """A truncation-style summary of a transcript: its summary when set, else
    ``role: content`` lines of the messages, cut to the last ``keep_chars`` characters."""
    if t.get("summary"):
        return str(t["summary"])
    lines = []
    for m in t.get("messages") or []:
        content = m.get("content")
        if content:
            lines.append(
                f"{m.get('role')}: {display(content) if type(content) is not str else content}"
            )
        for tc in m.get("tool_calls") or []:
            lines.append(f"{m.get('role')}: called {tc.get('name')}")
    text = "\n".join(lines)
    return text if len(text) <= keep_chars else "…" + text[-keep_chars:]


# ----------------------------------------------------------------------------- builtins


@builtin("transcript")
def transcript_(thread: Any, *args: Any) -> dict[str, Any]:
    """``transcript(metadata?)``: a new empty transcript."""
    args = strip_harness(args)
    return new_transcript(metadata=arg(args, 0))


@builtin("transcript_from_messages")
def transcript_from_messages(thread: Any, v: Any = None) -> dict[str, Any]:
    """``transcript_from_messages(messages | transcript)``: normalize into a transcript."""
    return coerce(v, "transcript_from_messages")


@builtin("transcript_messages")
def transcript_messages(thread: Any, v: Any = None) -> list[Any]:
    """``transcript_messages(t)``: the message list (``[]`` for nil)."""
    return list(coerce(v, "transcript_messages")["messages"])


@builtin("transcript_events")
def transcript_events(thread: Any, v: Any = None) -> list[Any]:
    """``transcript_events(t)``: the canonical event list."""
    return events_of(v)


@builtin("transcript_events_by_kind")
def transcript_events_by_kind(thread: Any, v: Any = None, kind: Any = None) -> list[Any]:
    """``transcript_events_by_kind(t, kind)``: the events whose ``kind`` equals ``kind``."""
    want = kind if type(kind) is str else display(kind)
    return [e for e in events_of(v) if type(e) is dict and e.get("kind") == want]


@builtin("transcript_summary")
def transcript_summary(thread: Any, v: Any = None) -> Any:
    """``transcript_summary(t)``: the summary string, or nil."""
    return coerce(v, "transcript_summary").get("summary")


@builtin("transcript_id")
def transcript_id(thread: Any, v: Any = None) -> Any:
    """``transcript_id(t)``: the transcript's id string."""
    return coerce(v, "transcript_id").get("id")


@builtin("transcript_add_message")
def transcript_add_message(
    thread: Any, v: Any = None, role: Any = None, content: Any = None, extra: Any = None
) -> dict[str, Any]:
    """``transcript_add_message(t, role, content, extra?)``: a copy with one more message
    (``extra`` may carry ``tool_calls``, ``tool_call_id``, ``name``)."""
    msg = {"role": role, "content": content}
    if type(extra) is dict:
        msg.update(extra)
    return append_message(coerce(v, "transcript_add_message"), msg)


@builtin("transcript_stats")
def transcript_stats(thread: Any, v: Any = None) -> dict[str, Any]:
    """``transcript_stats(t)``: ``{message_count, user_message_count,
    assistant_message_count, system_message_count, tool_result_message_count,
    tool_call_count, event_count, system_reminder_count, has_summary}``."""
    return stats(coerce(v, "transcript_stats"))


@builtin("transcript_export")
def transcript_export(thread: Any, v: Any = None) -> str:
    """``transcript_export(t)``: the transcript as JSON text."""
    return json.dumps(coerce(v, "transcript_export"), ensure_ascii=False)


@builtin("transcript_import")
def transcript_import(thread: Any, text: Any = None) -> dict[str, Any]:
    """``transcript_import(json_text)``: parse a transcript exported by
    ``transcript_export``. Throws for invalid JSON or a non-transcript value."""
    try:
        value = json.loads(text if type(text) is str else "")
    except ValueError:
        raise thrown("transcript_import: invalid JSON") from None
    if not is_transcript(value):
        raise thrown("transcript_import: not a transcript")
    return value  # type: ignore[no-any-return]


@builtin("transcript_fork")
def transcript_fork(thread: Any, v: Any = None, options: Any = None) -> dict[str, Any]:
    """``transcript_fork(t, options?)``: a copy with a new id and ``metadata.forked_from``;
    options ``drop_messages`` (start with no messages) and ``drop_summary``."""
    t = coerce(v, "transcript_fork")
    opts = options if type(options) is dict else {}
    msgs = [] if opts.get("drop_messages") else t["messages"]
    summary = None if opts.get("drop_summary") else t.get("summary")
    meta = {**(t.get("metadata") or {}), "forked_from": t.get("id")}
    return new_transcript(messages=msgs, metadata=meta, summary=summary)


@builtin("transcript_compact")
def transcript_compact(thread: Any, v: Any = None, options: Any = None) -> dict[str, Any]:
    """``transcript_compact(t, options?)``: keep the last ``keep_last`` messages (default
    4) and fold the older ones into ``summary`` (a truncation digest, no model call)."""
    t = coerce(v, "transcript_compact")
    opts = options if type(options) is dict else {}
    keep = opts.get("keep_last", 4)
    keep = keep if type(keep) is int and keep >= 0 else 4
    msgs = t["messages"]
    if len(msgs) <= keep:
        return t
    old = new_transcript(messages=msgs[: len(msgs) - keep], summary=t.get("summary"))
    kept = msgs[len(msgs) - keep :] if keep else []
    out = new_transcript(messages=kept, metadata=t.get("metadata"), tid=t["id"])
    out["summary"] = digest(old)
    return append_event(out, {"kind": "compaction", "dropped": len(msgs) - keep})
