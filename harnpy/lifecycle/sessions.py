"""Agent sessions (Harn ``sessions.md``) and captured agent events (``std/agent/state``,
``std/agent/events``).

A **session** owns a transcript history and its place in a fork tree. The runtime keeps,
per session id, the latest transcript (``AgentServices.sessions``: id -> transcript dict)
and its lineage (``AgentServices.session_lineage``: id -> ``{parent_id, child_ids,
branched_at_event_index}``). Every agent loop belongs to a session (``options.session_id``,
generated when absent); a loop given the id of an existing session starts from that
session's messages and writes its transcript back as it goes.

The lifecycle builtins (``agent_session_open``, ``_exists``, ``_length``, ``_snapshot``,
``_ancestry``, ``_reset``, ``_fork``, ``_fork_at``, ``_trim``, ``_inject``, ``_close``,
``_current_id``) fail loudly: an unknown id is a thrown string for every verb except
``exists``, ``open``, ``snapshot`` and ``ancestry``.

Sessions are snapshot data: the runtime-state provider ``agent_sessions`` carries both
tables in program snapshots (``harnpy run --resume`` sees the sessions it left).

The runtime also keeps a log of agent events tagged with their session id (``llm_call``,
``tool_call``, ``tool_result``, ``tool_call_audit``, ``system_reminder``, ``loop_status``;
each event dict has ``type`` and ``session_id``).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import arg, strip_harness, thrown
from harnpy.lifecycle.services import services
from harnpy.lifecycle.transcript import append_message, new_transcript, normalize_message
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnRuntimeError
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin


def _sid(v: Any) -> str:
    return v if type(v) is str else display(v)


def _lineage(svc: Any, sid: str) -> dict[str, Any]:
    rec = svc.session_lineage.get(sid)
    if rec is None:
        rec = {"parent_id": None, "child_ids": [], "branched_at_event_index": None}
        svc.session_lineage[sid] = rec
    return rec  # type: ignore[no-any-return]


def open_session(runtime: Any, sid: str | None = None) -> str:
    """Open session ``sid`` (a new UUIDv7 id when None) and return its id; an existing
    session is left as it is."""
    svc = services(runtime)
    if sid is None:
        sid = svc.ids.uuid7(runtime)
    if sid not in svc.sessions:
        svc.sessions[sid] = new_transcript(metadata={"session_id": sid})
    _lineage(svc, sid)
    return sid


def _known(thread: Any, v: Any, where: str) -> tuple[Any, str]:
    svc = services(thread.runtime)
    if type(v) is not str:
        raise thrown(f"{where}: session id must be a string, got {display(v)}")
    if v not in svc.sessions:
        raise thrown(f"{where}: unknown session id {v!r}")
    return svc, v


def _count(v: Any, where: str, what: str) -> int:
    if type(v) is not int or v < 0:
        raise thrown(f"{where}: {what} must be a non-negative int, got {display(v)}")
    return v


@builtin("agent_session_open")
def agent_session_open(thread: Any, sid: Any = None) -> str:
    """``agent_session_open(id?)``: open (or keep) the session ``id`` and return its id;
    ``nil`` mints a UUIDv7. Idempotent. Throws for an id that is not a string."""
    if sid is not None and type(sid) is not str:
        raise thrown(f"agent_session_open: session id must be a string or nil, got {display(sid)}")
    return open_session(thread.runtime, sid)


@builtin("agent_session_exists")
def agent_session_exists(thread: Any, sid: Any = None) -> bool:
    """``agent_session_exists(id)``: whether the session is open (false for anything else)."""
    return type(sid) is str and sid in services(thread.runtime).sessions


@builtin("agent_session_length")
def agent_session_length(thread: Any, sid: Any = None) -> int:
    """``agent_session_length(id)``: the session's message count. Throws for an unknown id."""
    svc, s = _known(thread, sid, "agent_session_length")
    return len(svc.sessions[s].get("messages") or [])


@builtin("agent_session_snapshot")
def agent_session_snapshot(thread: Any, sid: Any = None) -> Any:
    """``agent_session_snapshot(id)``: the session's transcript with ``id`` set to the
    session id plus ``parent_id``, ``child_ids`` and ``branched_at_event_index``; nil for an
    unknown id."""
    svc = services(thread.runtime)
    if type(sid) is not str or sid not in svc.sessions:
        return None
    lin = _lineage(svc, sid)
    return {
        **svc.sessions[sid],
        "id": sid,
        "parent_id": lin["parent_id"],
        "child_ids": list(lin["child_ids"]),
        "branched_at_event_index": lin["branched_at_event_index"],
    }


@builtin("agent_session_ancestry")
def agent_session_ancestry(thread: Any, sid: Any = None) -> Any:
    """``agent_session_ancestry(id)``: ``{parent_id, child_ids, root_id}`` — ``root_id`` is
    the farthest ancestor still reachable through parent links (the session itself when it
    has no parent); nil for an unknown id."""
    svc = services(thread.runtime)
    if type(sid) is not str or sid not in svc.sessions:
        return None
    lin = _lineage(svc, sid)
    root, seen = sid, {sid}
    while True:
        parent = svc.session_lineage.get(root, {}).get("parent_id")
        if parent is None or parent in seen or parent not in svc.sessions:
            break
        seen.add(parent)
        root = parent
    return {"parent_id": lin["parent_id"], "child_ids": list(lin["child_ids"]), "root_id": root}


@builtin("agent_session_reset")
def agent_session_reset(thread: Any, sid: Any = None) -> None:
    """``agent_session_reset(id)``: wipe the session's history, keeping its id and lineage.
    Throws for an unknown id."""
    svc, s = _known(thread, sid, "agent_session_reset")
    svc.sessions[s] = new_transcript(metadata={"session_id": s})


def _fork(thread: Any, src: Any, dst: Any, keep_first: int | None, where: str) -> str:
    svc, s = _known(thread, src, where)
    if dst is not None and type(dst) is not str:
        raise thrown(f"{where}: destination id must be a string or nil, got {display(dst)}")
    d = dst if dst is not None else svc.ids.uuid7(thread.runtime)
    if d == s:
        raise thrown(f"{where}: destination id must differ from the source {s!r}")
    source = svc.sessions[s]
    msgs = list(source.get("messages") or [])
    if keep_first is not None:
        msgs = msgs[:keep_first]
    meta = {**(source.get("metadata") or {}), "session_id": d, "forked_from": s}
    svc.sessions[d] = new_transcript(messages=msgs, metadata=meta, summary=source.get("summary"))
    child = _lineage(svc, d)
    old_parent = child["parent_id"]
    if old_parent is not None and old_parent in svc.session_lineage:
        prev = svc.session_lineage[old_parent]
        prev["child_ids"] = [c for c in prev["child_ids"] if c != d]
    child["parent_id"] = s
    child["branched_at_event_index"] = keep_first
    parent = _lineage(svc, s)
    if d not in parent["child_ids"]:
        parent["child_ids"] = [*parent["child_ids"], d]
    return d


@builtin("agent_session_fork")
def agent_session_fork(thread: Any, src: Any = None, dst: Any = None) -> str:
    """``agent_session_fork(src, dst?)``: a new session (id ``dst`` or a UUIDv7) holding a
    copy of ``src``'s transcript, recorded as ``src``'s child. Throws for an unknown
    ``src``."""
    return _fork(thread, src, dst, None, "agent_session_fork")


@builtin("agent_session_fork_at")
def agent_session_fork_at(
    thread: Any, src: Any = None, keep_first: Any = None, dst: Any = None
) -> str:
    """``agent_session_fork_at(src, keep_first, dst?)``: like ``agent_session_fork`` but the
    child keeps only the first ``keep_first`` messages; its snapshot records
    ``branched_at_event_index: keep_first``. Throws for an unknown ``src`` or a negative
    ``keep_first``."""
    n = _count(keep_first, "agent_session_fork_at", "keep_first")
    return _fork(thread, src, dst, n, "agent_session_fork_at")


@builtin("agent_session_trim")
def agent_session_trim(thread: Any, sid: Any = None, keep_last: Any = None) -> int:
    """``agent_session_trim(id, keep_last)``: keep the last ``keep_last`` messages; returns
    how many were kept. Throws for an unknown id or a negative ``keep_last``."""
    svc, s = _known(thread, sid, "agent_session_trim")
    n = _count(keep_last, "agent_session_trim", "keep_last")
    t = svc.sessions[s]
    msgs = list(t.get("messages") or [])
    kept = msgs[len(msgs) - n :] if n else []
    svc.sessions[s] = new_transcript(
        messages=kept, metadata=t.get("metadata"), tid=t.get("id"), summary=t.get("summary")
    )
    return len(kept)


@builtin("agent_session_inject")
def agent_session_inject(thread: Any, sid: Any = None, message: Any = None) -> None:
    """``agent_session_inject(id, message)``: append a ``{role, content, ...}`` message.
    Throws for an unknown id, a non-dict message or one without ``role``."""
    svc, s = _known(thread, sid, "agent_session_inject")
    if type(message) is not dict or message.get("role") is None:
        raise thrown("agent_session_inject: message must be a dict with a `role`")
    normalize_message(message)  # unknown roles are refused
    svc.sessions[s] = append_message(svc.sessions[s], message)


_COMPACT_KEYS = (
    "keep_last",
    "token_threshold",
    "tool_output_max_chars",
    "compact_strategy",
    "hard_limit_tokens",
    "hard_limit_strategy",
    "custom_compactor",
    "mask_callback",
    "compress_callback",
)


@builtin("agent_session_compact", control=True)
def agent_session_compact(thread: Any, sid: Any = None, options: Any = None) -> Any:
    """``agent_session_compact(id, options?)``: compact the session's history with the
    ``transcript_auto_compact`` pipeline — ``keep_last`` (default 12), ``compact_strategy``
    (``truncate`` default, ``observation_mask``, ``llm``, ``custom`` with
    ``custom_compactor: { archived -> summary }``), ``token_threshold`` (compact only when
    the history's estimated tokens exceed it). Returns the message count afterwards.
    Throws for an unknown id, an unknown option key or a negative ``keep_last``."""
    from harnpy.lifecycle._common import push_call, require_instruction_call
    from harnpy.lifecycle.compaction import std_function

    require_instruction_call(thread, "agent_session_compact")
    _known(thread, sid, "agent_session_compact")
    if options is not None and type(options) is not dict:
        raise thrown("agent_session_compact: options must be a dict")
    opts = dict(options or {})
    unknown = sorted(k for k in opts if k not in _COMPACT_KEYS)
    if unknown:
        raise thrown(
            f"agent_session_compact: unknown option `{unknown[0]}` (expected "
            + ", ".join(_COMPACT_KEYS)
            + ")"
        )
    if "keep_last" in opts:
        _count(opts["keep_last"], "agent_session_compact", "keep_last")
    fn = std_function(thread.runtime, "std/agent/_compact", "__session_compact")
    push_call(thread, fn, [sid, opts])
    return None


@builtin("__agent_session_store")
def agent_session_store(thread: Any, sid: Any = None, out: Any = None) -> int:
    """``__agent_session_store(id, compacted)``: write a compaction result back to the
    session (messages, summary, a ``compaction`` event); returns the message count."""
    from harnpy.lifecycle.transcript import append_event

    svc, s = _known(thread, sid, "agent_session_compact")
    if type(out) is not dict or not out.get("archived"):
        return len(svc.sessions[s].get("messages") or [])
    t = svc.sessions[s]
    msgs = list(out.get("messages") or [])
    summary = out.get("summary")
    t = {**t, "messages": msgs, "summary": summary if type(summary) is str else t.get("summary")}
    t = append_event(
        t,
        {
            "kind": "compaction",
            "visibility": "internal",
            "strategy": out.get("strategy"),
            "archived": out.get("archived"),
        },
    )
    svc.sessions[s] = t
    return len(msgs)


@builtin("agent_subscribe")
def agent_subscribe(thread: Any, sid: Any = None, callback: Any = None) -> None:
    """``agent_subscribe(id, callback)``: call ``callback(event)`` for the agent events of
    session ``id`` — ``{type: "turn_end", session_id, iteration, status, text}`` after each
    turn of a loop on the session, ``{type: "transcript_compacted", ...}`` after a loop
    compacted it. A failing callback is ignored. Forks do not copy subscribers; a reset
    keeps them. Throws for an unknown id or a non-function callback."""
    from harnpy.runtime.values import Builtin, Closure

    svc, s = _known(thread, sid, "agent_subscribe")
    if type(callback) not in (Closure, Builtin):
        raise thrown(f"agent_subscribe: callback must be a function, got {display(callback)}")
    rec = _lineage(svc, s)
    rec["subscribers"] = [*(rec.get("subscribers") or []), callback]


@builtin("__agent_subscribers")
def agent_subscribers(thread: Any, sid: Any = None) -> list[Any]:
    """``__agent_subscribers(id)``: the callbacks subscribed to session ``id``."""
    rec = services(thread.runtime).session_lineage.get(sid) if type(sid) is str else None
    return list(rec.get("subscribers") or []) if type(rec) is dict else []


@builtin("agent_session_close")
def agent_session_close(thread: Any, sid: Any = None) -> None:
    """``agent_session_close(id)``: evict the session now (its children keep their
    ``parent_id``). Throws for an unknown id."""
    svc, s = _known(thread, sid, "agent_session_close")
    del svc.sessions[s]
    lin = svc.session_lineage.pop(s, None)
    parent = lin.get("parent_id") if lin else None
    if parent is not None and parent in svc.session_lineage:
        rec = svc.session_lineage[parent]
        rec["child_ids"] = [c for c in rec["child_ids"] if c != s]


@builtin("agent_session_current_id")
def agent_session_current_id(thread: Any) -> Any:
    """``agent_session_current_id()``: the session id of the innermost agent loop running on
    this thread (seen from a tool handler or a callback of the loop), or nil outside any
    loop."""
    fr = getattr(thread, "frame", None)
    while fr is not None:
        slots = getattr(fr, "slots", None)
        if type(slots) is list:
            for v in slots:
                if type(v) is dict and v.get("_type") == "agent_loop_state":
                    return v.get("session_id")
        fr = getattr(fr, "parent", None)
    return None


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


# ------------------------------------------------------------------ snapshot provider


def _save_sessions(thread: Any) -> Any:
    svc = getattr(thread.runtime, "agent_state", None)
    if svc is None or not svc.sessions:
        return None
    return {
        "sessions": dict(svc.sessions),
        "lineage": {k: dict(v) for k, v in svc.session_lineage.items()},
    }


def _load_sessions(thread: Any, data: Any) -> Any:
    if type(data) is not dict:
        raise TypeError("agent_sessions must be a dict")
    sessions, lineage = data.get("sessions"), data.get("lineage")
    if type(sessions) is not dict or type(lineage) is not dict:
        raise TypeError("agent_sessions needs `sessions` and `lineage` dicts")
    for v in sessions.values():
        if type(v) is not dict or v.get("_type") != "transcript":
            raise TypeError("a session must hold a transcript")
    for rec in lineage.values():
        if type(rec) is not dict or type(rec.get("child_ids")) is not list:
            raise TypeError("a session lineage record needs `child_ids`")
    rt = thread.runtime

    def apply() -> None:
        svc = services(rt)
        svc.sessions = dict(sessions)
        svc.session_lineage = {k: dict(v) for k, v in lineage.items()}

    return apply


register_state("agent_sessions", _save_sessions, _load_sessions)
