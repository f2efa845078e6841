"""Transcripts as data: messages with roles, tool calls and results, system reminders.

A transcript is a plain Harn dict (so it lives in loop state and snapshots as is)::

    {_type: "transcript", id, messages: [message], events: [event], summary: string|nil,
     metadata: dict, assets: list}

A message is ``{role, content, tool_calls?, tool_call_id?, name?}`` with role ``system``,
``user``, ``assistant`` or ``tool``. ``events`` is the append-only canonical stream: every
message appended also appends ``{kind: "message", role, content, ...}``; the agent loop adds
``tool_call``, ``tool_result``, ``tool_call_audit``, ``system_reminder`` and ``loop_status``
events. All helpers return new dicts and never mutate their argument (value semantics).

A transcript also has a lifecycle ``state`` (``active``, ``archived``, ``abandoned``):
``transcript_archive`` / ``transcript_abandon`` / ``transcript_resume`` set it and append
an internal ``transcript_lifecycle`` event. Events carry a ``visibility`` (``public`` for
messages, ``internal`` for runtime records); ``transcript_render_visible`` renders the
public messages (``role: text`` lines), ``transcript_render_full`` every event
(``[visibility] ...`` lines).

Builtins: ``transcript``, ``transcript_from_messages``, ``transcript_messages``,
``transcript_events``, ``transcript_events_by_kind``, ``transcript_summary``,
``transcript_id``, ``transcript_add_message``, ``add_message``, ``add_user``,
``add_assistant``, ``add_system``, ``transcript_stats``, ``transcript_export``,
``transcript_import``, ``transcript_fork``, ``transcript_reset``,
``transcript_archive``, ``transcript_abandon``, ``transcript_resume``,
``transcript_render_visible``, ``transcript_render_full``. (``transcript_compact`` and
``transcript_assets`` are in :mod:`harnpy.lifecycle.compaction`.)
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
        "state": "active",
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
    event = {"kind": "message", **msg, "index": len(t["messages"]), "visibility": "public"}
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


#: Event visibilities a human sees (``transcript_stats`` ``visible_event_count``).
VISIBLE = ("public", "visible")


def stats(t: dict[str, Any]) -> dict[str, Any]:
    """Counts of a transcript's messages and events (``transcript_stats``); ``tool_result``
    messages count as tool results, user-facing messages are the user and assistant ones."""
    msgs = [m for m in t.get("messages") or [] if type(m) is dict]
    roles = ["tool" if m.get("role") == "tool_result" else m.get("role") for m in msgs]
    by_role = {r: roles.count(r) for r in _ROLES}
    evs = [e for e in t.get("events") or [] if type(e) is dict]
    return {
        "message_count": len(msgs),
        "system_message_count": by_role["system"],
        "user_message_count": by_role["user"],
        "assistant_message_count": by_role["assistant"],
        "user_facing_message_count": by_role["user"] + by_role["assistant"],
        "tool_result_message_count": by_role["tool"],
        "tool_call_count": sum(len(m.get("tool_calls") or []) for m in msgs),
        "event_count": len(evs),
        "visible_event_count": sum(1 for e in evs if e.get("visibility") in VISIBLE),
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
    assistant_message_count, system_message_count, user_facing_message_count,
    tool_result_message_count, tool_call_count, event_count, visible_event_count,
    system_reminder_count, has_summary}`` (all zero for nil)."""
    if is_transcript(v):
        return stats(v)  # hand-built transcripts are counted as they are
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


# ------------------------------------------------------------------- lifecycle, rendering


def _lifecycle(v: Any, state: str, where: str) -> dict[str, Any]:
    t = coerce(v, where)
    out = {**t, "state": state}
    return append_event(
        out,
        {
            "kind": "transcript_lifecycle",
            "state": state,
            "text": f"transcript {state if state != 'active' else 'resumed'}",
            "visibility": "internal",
        },
    )


@builtin("transcript_reset")
def transcript_reset(thread: Any, options: Any = None) -> dict[str, Any]:
    """``transcript_reset(options?)``: a fresh active transcript; ``options.metadata``
    (a dict) becomes its metadata."""
    opts = options if type(options) is dict else {}
    return new_transcript(metadata=opts.get("metadata"))


@builtin("transcript_archive")
def transcript_archive(thread: Any, v: Any = None) -> dict[str, Any]:
    """``transcript_archive(t)``: a copy with ``state: "archived"`` and an internal
    ``transcript_lifecycle`` event ("transcript archived")."""
    return _lifecycle(v, "archived", "transcript_archive")


@builtin("transcript_abandon")
def transcript_abandon(thread: Any, v: Any = None) -> dict[str, Any]:
    """``transcript_abandon(t)``: a copy with ``state: "abandoned"`` and an internal
    ``transcript_lifecycle`` event ("transcript abandoned")."""
    return _lifecycle(v, "abandoned", "transcript_abandon")


@builtin("transcript_resume")
def transcript_resume(thread: Any, v: Any = None) -> dict[str, Any]:
    """``transcript_resume(t)``: a copy with ``state: "active"`` again and an internal
    ``transcript_lifecycle`` event ("transcript resumed")."""
    return _lifecycle(v, "active", "transcript_resume")


def content_text(content: Any) -> str:
    """The text of a message content: a string as is, a block list's public text blocks
    joined (other blocks as ``<type>``), anything else displayed."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    if type(content) is list:
        parts = []
        for b in content:
            if type(b) is dict:
                if b.get("visibility") in ("internal", "private"):
                    continue
                if b.get("type") == "text":
                    parts.append(str(b.get("text") or ""))
                else:
                    parts.append(f"<{b.get('type')}>")
            else:
                parts.append(display(b))
        return " ".join(p for p in parts if p)
    return display(content)


def render_visible(t: dict[str, Any]) -> str:
    """``role: text`` lines of the user and assistant messages that have text."""
    lines = []
    for m in t.get("messages") or []:
        if type(m) is not dict or m.get("role") not in ("user", "assistant"):
            continue
        text = content_text(m.get("content"))
        if text:
            lines.append(f"{m.get('role')}: {text}")
    return "\n".join(lines)


def _event_line(e: dict[str, Any]) -> str:
    kind = e.get("kind")
    vis = e.get("visibility") or ("public" if kind == "message" else "internal")
    if kind == "message":
        body = f"{e.get('role')}: {content_text(e.get('content'))}"
        for tc in e.get("tool_calls") or []:
            if type(tc) is dict:
                body += f" [tool_call {tc.get('name')}]"
    elif type(e.get("text")) is str:
        body = e["text"]
    else:
        rest = {k: v for k, v in e.items() if k not in ("kind", "visibility")}
        body = f"{kind}: {display(rest)}" if rest else str(kind)
    return f"[{vis}] {body}"


def render_full(t: dict[str, Any]) -> str:
    """One ``[visibility] ...`` line per event (the whole execution history)."""
    return "\n".join(_event_line(e) for e in t.get("events") or [] if type(e) is dict)


@builtin("transcript_render_visible")
def transcript_render_visible(thread: Any, v: Any = None) -> str:
    """``transcript_render_visible(t)``: the human-visible conversation, one ``role: text``
    line per user or assistant message with text."""
    return render_visible(coerce(v, "transcript_render_visible"))


@builtin("transcript_render_full")
def transcript_render_full(thread: Any, v: Any = None) -> str:
    """``transcript_render_full(t)``: the full history, one ``[visibility] ...`` line per
    event (messages ``[public] role: text``, runtime events ``[internal] kind: {...}``)."""
    return render_full(coerce(v, "transcript_render_full"))


def _add(v: Any, msg: dict[str, Any], where: str) -> Any:
    if type(v) is list:
        return [*v, normalize_message(msg)]
    return append_message(coerce(v, where), msg)


@builtin("add_message")
def add_message(
    thread: Any, v: Any = None, role: Any = None, content: Any = None, extra: Any = None
) -> Any:
    """``add_message(t, role, content, extra?)``: ``t`` (a transcript or a message list)
    with one more message; a list stays a list. Throws for an unknown role."""
    msg = {"role": role, "content": content}
    if type(extra) is dict:
        msg.update(extra)
    return _add(v, msg, "add_message")


@builtin("add_user")
def add_user(thread: Any, v: Any = None, content: Any = None) -> Any:
    """``add_user(t, content)``: ``t`` with a user message (content: a string or blocks)."""
    return _add(v, {"role": "user", "content": content}, "add_user")


@builtin("add_assistant")
def add_assistant(thread: Any, v: Any = None, content: Any = None) -> Any:
    """``add_assistant(t, content)``: ``t`` with an assistant message."""
    return _add(v, {"role": "assistant", "content": content}, "add_assistant")


@builtin("add_system")
def add_system(thread: Any, v: Any = None, content: Any = None) -> Any:
    """``add_system(t, content)``: ``t`` with a system message."""
    return _add(v, {"role": "system", "content": content}, "add_system")
