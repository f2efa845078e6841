"""``agent_loop`` and the ``__agent_*`` primitives the Harn loop code runs on
(lifecycle.md 2.13; the loop itself is ``stdlib/std/agent/_loop.harn``).

Loop state is one Harn dict threaded through the loop frame (``st = prim(st, ...)``); every
primitive returns a new dict and never mutates its argument. Its keys::

    _type: "agent_loop_state", prompt, system, llm_options (provider/model/... for requests),
    tools: [registry entry], tool_format, policy, max_iterations, loop_until_done,
    done_sentinel, max_nudges, nudge, daemon, wake_interval_ms, session_id, worker_id,
    transcript, iteration, nudges, text_parts, last_text, input_tokens, output_tokens,
    started_ms, records: [tool call record], pending_calls, reminders, status, finished,
    error, idle, suspend_request, suspension, daemon_state, watch_paths, persist_path,
    reminders_enabled, resume_by, idle_park, park_request, post_turn_callback, on_delta

One turn (the Harn side): ``__agent_llm_turn`` (blocks on the model; with ``on_delta`` the
streamed ``__agent_llm_stream`` instead: :mod:`harnpy.lifecycle.loop_turn`) ->
``__agent_prepare_calls`` -> either park (``agent_await_resumption``) or dispatch each call
from Harn (``__agent_tool_start``, ``try`` around the handler, then ``__agent_tool_done``)
-> ``__agent_after_turn`` (stop conditions) -> ``__turn_boundary``.

Run events (lifecycle.md 9.1): when the runtime has a run-event sink
(:func:`harnpy.lifecycle.services.run_event_sink`, installed by ``run --resume --json``),
each dispatched or rejected call reports ``tool_call {call_id, name, args, started_at}``
from ``__agent_tool_start`` (before the handler runs) and ``tool_result {call_id, name, ok,
result, error?, status, denied}`` from ``__agent_tool_done``. Without a sink both cost one
attribute lookup. A turn that parks dispatches nothing and reports no tool events.

Tool formats: ``native`` (default) offers the tools through the provider's tool-calling
API and answers with ``tool`` messages; ``text`` describes them in the system prompt,
parses ``<tool_call>{"name", "arguments"}</tool_call>`` blocks from the answer and returns
results as user messages holding ``<tool_result name=... id=...>`` blocks (for models
without native tool calls).

Stop conditions: a text-only answer ends the loop (``done``) unless ``loop_until_done``
(alias ``persistent``) asks for the done sentinel (``done_sentinel``; default ``##DONE##``
when the loop offers no tools, none in native-tool loops), in which case the loop nudges
the model up to ``max_nudges`` (default 8) consecutive times (``stuck``); ``max_iterations``
(default 50) model calls give ``budget_exhausted``; a provider failure ends it with
``provider_error`` and ``error``. Daemon loops (``daemon: true``) idle after a text-only turn
instead: they record an internal ``agent_await_resumption`` audit and, with
``wake_interval_ms`` (or ``watch_paths``), sleep and take another turn; with no wake source
they park (``idle_park``; the Suspension comes back with ``daemon_state: "idle"``, and
``persist_path`` gets a copy of the snapshot as ``daemon.json`` for ``daemon_resume``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from harnpy.lifecycle import loop_trace, text_tools, tool_hooks
from harnpy.lifecycle._common import (
    arg,
    error_text,
    loop_function,
    now_rfc3339,
    push_call,
    require_instruction_call,
    strip_harness,
    thrown,
)
from harnpy.lifecycle.compaction import loop_policy
from harnpy.lifecycle.llm_builtins import (
    assistant_message,
    visible_text,
)
from harnpy.lifecycle.outcome_report import report_root_outcome
from harnpy.lifecycle.permissions import denied_content
from harnpy.lifecycle.post_turn import post_turn_option
from harnpy.lifecycle.resume_conditions import ConditionsError, await_request
from harnpy.lifecycle.services import run_event_sink, services
from harnpy.lifecycle.tools import (
    outcome_of,
    prepare_call,
    render_result,
    to_entries,
)
from harnpy.lifecycle.transcript import append_event, append_message, coerce, new_transcript
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, plain_error
from harnpy.runtime.scheduler import block_control
from harnpy.runtime.values import type_name
from harnpy.stdlib.registry import builtin

DEFAULT_MAX_ITERATIONS = 50
DEFAULT_MAX_NUDGES = 8
DONE_SENTINEL = "##DONE##"
DEFAULT_NUDGE = (
    "You have not signalled completion yet. Continue working on the task; when it is "
    "complete, reply with {sentinel}."
)
PARK_TOOL = "agent_await_resumption"

#: Options copied into every model request of a loop.
_LLM_KEYS = (
    "provider",
    "model",
    "base_url",
    "api_key",
    "temperature",
    "max_tokens",
    "thinking",
    "timeout",
    "timeout_ms",
    "llm_retries",
    "retries",
    "llm_backoff_ms",
    "backoff_ms",
    "budget",
)


# ------------------------------------------------------------------------------ state


def _int_option(opts: dict[str, Any], key: str, default: int) -> int:
    v = opts.get(key)
    if v is None:
        return default
    if type(v) is not int or v < 0:
        raise thrown(f"agent_loop: option `{key}` must be a non-negative int")
    return v


_POLICY_NAME_LISTS = ("tools", "allowed_tools", "deny", "denied_tools")


def _check_policy(
    policy: dict[str, Any], prefix: str, where: str, keys: tuple[str, ...] = _POLICY_NAME_LISTS
) -> None:
    """Reject tool allow-/deny-lists that are not lists of tool names: a malformed policy
    must be a configuration error, never silently ignored (which would fail open)."""
    for key in keys:
        names = policy.get(key)
        if names is not None and (
            type(names) is not list or any(type(n) is not str for n in names)
        ):
            raise thrown(
                f"{where}: option `{prefix}{key}` must be a list of tool names, "
                f"got {type_name(names)} {json.dumps(names) if type(names) is str else display(names)}"
            )


def current_worker_id(thread: Any) -> str | None:
    """The worker id of ``thread`` when it is a worker's thread, else None."""
    return getattr(thread, "worker_id", None)


def new_state(
    runtime: Any,
    prompt: Any,
    system: Any,
    options: Any,
    *,
    worker_id: str | None = None,
    transcript: Any = None,
    where: str = "agent_loop",
) -> dict[str, Any]:
    """The initial loop state for ``agent_loop(prompt, system, options)``.

    ``transcript`` (a transcript or message list) continues an earlier conversation; the
    prompt is appended to it as a user message. ``options.messages`` replaces the prompt.

    Raises:
        HarnThrow: for malformed options or tools.
    """
    if options is not None and type(options) is not dict:
        raise thrown(f"{where}: options must be a dict")
    if system is not None and type(system) is not str:
        raise thrown(f"{where}: system must be a string or nil")
    from harnpy.lifecycle.option_names import warn_misspelt_options
    from harnpy.lifecycle.profiles import apply_profile

    if options and where in ("agent_loop", "sub_agent_run"):
        # the script's own options dict (a worker's mixes in its node's other keys)
        warn_misspelt_options(runtime, options, where)
    opts: dict[str, Any] = apply_profile(dict(options or {}), where)
    if system is None and type(opts.get("system")) is str:
        system = opts["system"]
    svc = services(runtime)
    entries = to_entries(runtime, opts.get("tools"), where)
    if opts.get("subagents") or opts.get("subagent_tools"):
        # lifecycle.md 2.10 / 2.13: the model-facing subagent_pause / subagent_resume tools
        from harnpy.lifecycle.suspend import subagent_tool_entries

        names = {e.get("name") for e in entries}
        entries = entries + [e for e in subagent_tool_entries(runtime) if e["name"] not in names]
    tool_format = opts.get("tool_format") or "native"
    if tool_format not in ("native", "text", "auto"):
        raise thrown(f'{where}: tool_format must be "native" or "text"')
    policy = opts.get("policy")
    if policy is not None and type(policy) is not dict:
        raise thrown(f"{where}: option `policy` must be a dict")
    _check_policy(policy or {}, "policy.", where)
    _check_policy(opts, "", where, ("allowed_tools", "denied_tools"))
    if opts.get("allowed_tools") is not None or opts.get("denied_tools") is not None:
        policy = dict(policy or {})
        if opts.get("allowed_tools") is not None:
            policy["tools"] = opts["allowed_tools"]
        if opts.get("denied_tools") is not None:
            policy["deny"] = opts["denied_tools"]
    from harnpy.lifecycle.permissions import check_options

    approval_policy, permissions = check_options(opts, where)
    loop_until_done = bool(opts.get("loop_until_done") or opts.get("persistent"))
    if "done_sentinel" in opts:
        sentinel = opts["done_sentinel"]
    elif loop_until_done and not entries:
        sentinel = DONE_SENTINEL
    else:
        sentinel = None
    if sentinel is not None and (type(sentinel) is not str or not sentinel):
        raise thrown(f"{where}: done_sentinel must be a non-empty string or nil")
    nudge = opts.get("nudge")
    if type(nudge) is not str:
        nudge = DEFAULT_NUDGE.format(sentinel=sentinel or DONE_SENTINEL)
    session_id = opts.get("session_id")
    if session_id is None:
        session_id = f"agent_session_{svc.ids.uuid7(runtime)}"
    elif type(session_id) is not str:
        session_id = display(session_id)
    if transcript is None and opts.get("session_id") is not None:
        # an open session's messages are the prefix of the loop (Harn sessions.md)
        transcript = svc.sessions.get(session_id)
    t = coerce(transcript, where) if transcript is not None else new_transcript()
    t = {**t, "metadata": {**(t.get("metadata") or {}), "session_id": session_id}}
    if type(opts.get("messages")) is list:
        for m in opts["messages"]:
            t = append_message(t, m)
    elif prompt is not None:
        t = append_message(
            t, {"role": "user", "content": prompt if type(prompt) is str else display(prompt)}
        )
    wake = opts.get("wake_interval_ms")
    reminders = opts.get("reminders")
    reminders_enabled = not (
        reminders is False or (type(reminders) is dict and reminders.get("enabled") is False)
    )
    watch = opts.get("watch_paths")
    persist_path = opts.get("persist_path")
    st: dict[str, Any] = {
        "_type": "agent_loop_state",
        "prompt": prompt,
        "system": system,
        "llm_options": {k: opts[k] for k in _LLM_KEYS if opts.get(k) is not None},
        "tools": entries,
        "tool_format": "native" if tool_format == "auto" else tool_format,
        "policy": policy,
        "approval_policy": approval_policy,
        "permissions": permissions,
        "permission_grants": [],
        "max_iterations": _int_option(opts, "max_iterations", DEFAULT_MAX_ITERATIONS),
        "token_budget": _int_option(opts, "token_budget", 0) or None,
        "native_tool_fallback": text_tools.fallback_policy(opts, where),
        "compaction": loop_policy(opts, where),
        "post_turn_callback": post_turn_option(opts, where),
        "on_delta": post_turn_option(opts, where, "on_delta"),
        "native_fallbacks": 0,
        "native_fallback_rejections": 0,
        "loop_until_done": loop_until_done,
        "done_sentinel": sentinel,
        "max_nudges": _int_option(opts, "max_nudges", DEFAULT_MAX_NUDGES),
        "nudge": nudge,
        "daemon": bool(opts.get("daemon")),
        "daemon_state": None,
        "wake_interval_ms": wake if type(wake) is int and wake > 0 else None,
        "watch_paths": list(watch) if type(watch) is list else [],
        "persist_path": persist_path if type(persist_path) is str else None,
        "reminders_enabled": reminders_enabled,
        "resume_by": opts.get("resume_by"),
        "idle_park": False,
        "park_request": None,
        "session_id": session_id,
        "worker_id": worker_id,
        "transcript": t,
        "iteration": 0,
        "nudges": 0,
        "text_parts": [],
        "last_text": "",
        "input_tokens": 0,
        "output_tokens": 0,
        "started_ms": int(runtime.clock.monotonic_ms()),
        "records": [],
        "pending_calls": [],
        "reminders": [],
        "status": None,
        "finished": False,
        "error": None,
        "idle": False,
        "suspend_request": None,
        "suspension": None,
        "model": None,
        "provider": None,
    }
    from harnpy.lifecycle import tool_search

    search = tool_search.loop_state(opts, entries)
    if search is not None:
        st["tool_search"] = search
    elif opts.get("tool_search") is not None:
        st["llm_options"]["tool_search"] = opts["tool_search"]  # native: the request carries it
    svc.sessions[session_id] = t
    return st


def _check_state(st: Any, name: str) -> dict[str, Any]:
    if type(st) is not dict or st.get("_type") != "agent_loop_state":
        raise plain_error(f"Runtime error: {name}: internal: not an agent loop state", "E300")
    return st


def _emit(
    runtime: Any, st: dict[str, Any], t: dict[str, Any], event: dict[str, Any]
) -> dict[str, Any]:
    """Append ``event`` to transcript ``t`` and mirror it to the session event log."""
    svc = services(runtime)
    svc.emit_session_event(st["session_id"], {"type": event["kind"], **event})
    return append_event(t, event)


def _with_transcript(
    runtime: Any, st: dict[str, Any], t: dict[str, Any], **changes: Any
) -> dict[str, Any]:
    services(runtime).sessions[st["session_id"]] = t
    return {**st, "transcript": t, **changes}


# ----------------------------------------------------------------------------- builtins


@builtin("agent_loop", aliases=("__agent_loop",), control=True)
def agent_loop(thread: Any, *args: Any) -> Any:
    """``agent_loop(prompt, system?, options?)`` (also ``agent_loop(harness, ...)``): run an
    agent loop to its end and return ``{status, text, visible_text, llm:
    {iterations, duration_ms, input_tokens, output_tokens}, tools: {calls, successful,
    rejected, mode}, tool_calls: [record], deferred_user_messages, daemon_state,
    daemon_snapshot_path, task_ledger, trace, transcript, session_id}`` (lifecycle.md 2.13).

    Runs the Harn loop of ``std/agent/_loop`` as a frame of the calling thread (no Python
    state in between), so the loop can be snapshotted at every turn boundary.
    ``agent_loop(prompt, options)`` with a dict second argument is accepted too.
    """
    require_instruction_call(thread, "agent_loop")
    args = strip_harness(args)
    prompt, system, options = arg(args, 0), arg(args, 1), arg(args, 2)
    if type(system) is dict and options is None:
        system, options = None, system
    rt = thread.runtime
    st = new_state(rt, prompt, system, options, worker_id=current_worker_id(thread))
    push_call(thread, loop_function(rt, "__agent_loop_run"), [st])
    return None


def apply_response(
    runtime: Any, st: dict[str, Any], resp: Any, empty_retries: int = 0, duration_ms: int = 0
) -> dict[str, Any]:
    """The state after the model answered ``resp`` (see ``__agent_llm_turn``);
    ``empty_retries``: the empty completions retried before this answer; ``duration_ms``:
    how long the request took (its ``llm_call`` trace event, :mod:`.loop_trace`)."""
    iteration = st["iteration"] + 1
    t = st["transcript"]
    if st["reminders"]:
        delivered = {r.get("dedupe_key") for r in st["reminders"]}
        t = {
            **t,
            "events": [
                e
                for e in t["events"]
                if not (
                    e.get("kind") == "system_reminder"
                    and (e.get("reminder") or {}).get("dedupe_key") in delivered
                )
            ],
        }
    t = append_message(t, assistant_message(resp))
    calls = [tc.to_dict() for tc in resp.tool_calls]
    fallback: dict[str, Any] = {}
    if st["tool_format"] == "text" and st["tools"]:
        calls += text_tools.parse_text_tool_calls(resp.text, iteration)
    elif not calls and st["tools"]:
        # a native-tool loop answered with text-mode <tool_call> blocks
        calls, t, fallback = text_tools.native_fallback(st, t, resp.text, iteration)
        for e in t["events"][len(st["transcript"]["events"]) :]:
            if e.get("kind") == "native_tool_fallback":
                services(runtime).emit_session_event(st["session_id"], {"type": e["kind"], **e})
    for c in calls:
        t = _emit(runtime, st, t, {"kind": "tool_call", "iteration": iteration, **c})
    services(runtime).emit_session_event(
        st["session_id"],
        {
            "type": "llm_call",
            "iteration": iteration,
            "model": resp.model,
            "provider": resp.provider,
            "input_tokens": resp.usage.input_tokens,
            "output_tokens": resp.usage.output_tokens,
            "tool_calls": len(calls),
        },
    )
    loop_trace.llm_call(runtime, st, resp, iteration, len(calls), duration_ms)
    parts = st["text_parts"] + [resp.text] if resp.text else st["text_parts"]
    return _with_transcript(
        runtime,
        st,
        t,
        iteration=iteration,
        pending_calls=calls,
        last_text=resp.text,
        text_parts=parts,
        input_tokens=st["input_tokens"] + resp.usage.input_tokens,
        output_tokens=st["output_tokens"] + resp.usage.output_tokens,
        reminders=[],
        model=resp.model,
        provider=resp.provider,
        empty_completion_retries=st.get("empty_completion_retries", 0) + empty_retries,
        **fallback,
    )


@builtin("__agent_provider_error")
def agent_provider_error(thread: Any, st: Any = None, error: Any = None) -> dict[str, Any]:
    """``__agent_provider_error(st, err)``: end the loop with ``status: "provider_error"``
    and ``error``: the error envelope (``{kind, reason, category, message,
    retry_after_ms?, provider, model}``, :func:`harnpy.llm.errors.envelope_from_value`)
    plus ``phase``, ``iteration``, ``tool_format`` and ``after_tool_result`` (the failed
    request carried tool results), as Harn's loop reports it (an exceeded
    ``total_budget_usd`` ends it with ``status: "budget_exhausted"`` instead)."""
    from harnpy.lifecycle.llm_session import is_loop_budget_error
    from harnpy.llm.errors import envelope_from_value

    st = _check_state(st, "__agent_provider_error")
    if is_loop_budget_error(error):  # total_budget_usd: a graceful end, not a failure
        return _finish(thread.runtime, st, "budget_exhausted", pending_calls=[], budget_error=error)
    opts = st["llm_options"]
    err = envelope_from_value(
        error if type(error) is dict else display(error),
        provider=opts.get("provider"),
        model=opts.get("model"),
    )
    err["phase"] = "llm_call"
    err["iteration"] = st["iteration"] + 1
    err["tool_format"] = st["tool_format"]
    err["after_tool_result"] = any(
        type(m) is dict and m.get("role") == "tool" for m in st["transcript"]["messages"]
    )
    t = _emit(
        thread.runtime,
        st,
        st["transcript"],
        {"kind": "loop_status", "status": "provider_error", "error": err},
    )
    return _with_transcript(
        thread.runtime, st, t, finished=True, status="provider_error", error=err
    )


@builtin("__agent_prepare_calls")
def agent_prepare_calls(thread: Any, st: Any = None) -> list[dict[str, Any]]:
    """``__agent_prepare_calls(st)``: one decision per pending tool call (see
    :func:`harnpy.lifecycle.tools.prepare_call`); a valid ``agent_await_resumption`` call
    gives ``{action: "park", request}``, an invalid one a rejection whose message carries
    the ``HARN-SUS-002``/``HARN-SUS-005`` diagnostic and the failing argument path."""
    st = _check_state(st, "__agent_prepare_calls")
    out = []
    search = st.get("tool_search")
    for call in st["pending_calls"]:
        if call.get("name") == PARK_TOOL:
            decision, why = _prepare_park(call)
            if why is not None:
                # the model is told (its tool result), but a park that did not happen is
                # also the script author's business: say it where they look
                thread.runtime.write_err(
                    f"harnpy: warning: the model's {PARK_TOOL} call was refused, the worker did "
                    f"not park: {why} (the model was told; the loop goes on)\n"
                )
            out.append(decision)
        elif search is not None and call.get("name") == search["config"]["name"]:
            from harnpy.lifecycle.tool_search import prepare_search

            out.append(prepare_search(call))
        else:
            # tool hooks (register_tool_hook) may refuse the call or add pre/post closures
            out.append(
                tool_hooks.screen(thread.runtime, prepare_call(st["tools"], st["policy"], call))
            )
    return out


def _prepare_park(call: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The decision for an ``agent_await_resumption`` call, and why it was refused (None
    when it parks)."""
    raw = call.get("arguments")
    args: dict[str, Any] = raw if type(raw) is dict else {}
    base = {"name": PARK_TOOL, "id": call.get("id"), "args": args}
    try:
        request = await_request(args.get("reason"), args.get("conditions"))
    except ConditionsError as exc:
        return {
            **base,
            "action": "reject",
            "reason": "conditions",
            "message": f"Error: {PARK_TOOL} rejected: {exc.message} (invalid argument "
            f"conditions.{exc.path}: {exc.why}). Fix the conditions or omit them.",
        }, exc.message
    except HarnError as exc:
        return {
            **base,
            "action": "reject",
            "reason": "arguments",
            "message": f"Error: {PARK_TOOL} rejected: {exc.message}",
        }, exc.message
    request["raw_conditions"] = args.get("conditions")
    request["tool_call_id"] = call.get("id")
    return {**base, "action": "park", "request": request}, None


@builtin("__agent_park_index")
def agent_park_index(thread: Any, preps: Any = None) -> int:
    """``__agent_park_index(preps)``: index of the first park decision, or -1."""
    for i, p in enumerate(preps or []):
        if type(p) is dict and p.get("action") == "park":
            return i
    return -1


def _record(st: dict[str, Any], prep: dict[str, Any], status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": prep.get("id"),
        "name": prep.get("name"),
        "arguments": prep.get("args"),
        "status": status,
        "iteration": st["iteration"],
        **extra,
    }


def _tool_message(
    prep: dict[str, Any], content: str, tool_format: str = "native"
) -> dict[str, Any]:
    if tool_format == "text":
        return {
            "role": "user",
            "content": f'<tool_result name="{prep.get("name")}" id="{prep.get("id")}">\n'
            f"{content}\n</tool_result>",
        }
    return {
        "role": "tool",
        "tool_call_id": prep.get("id"),
        "name": prep.get("name"),
        "content": content,
    }


@builtin("__agent_tool_start")
def agent_tool_start(thread: Any, prep: Any = None) -> Any:
    """``__agent_tool_start(prep)``: the loop is about to run (or reject) the tool call of
    ``prep``; reports ``tool_call {call_id, name, args, started_at}`` (RFC 3339) to the
    run-event sink, if any (module docstring). Returns ``prep`` with when it started (the
    ``duration_ms`` of its ``tool_execution`` trace event, :func:`.loop_trace.tool_start`)."""
    if type(prep) is dict:
        prep = loop_trace.tool_start(thread.runtime, prep)
    sink = run_event_sink(thread.runtime)
    if sink is not None and type(prep) is dict:
        sink(
            "tool_call",
            {
                "call_id": prep.get("id"),
                "name": prep.get("name"),
                "args": prep.get("args"),
                "started_at": now_rfc3339(thread.runtime),
            },
        )
    return prep


def _report_tool_result(sink: Any, prep: dict[str, Any], record: dict[str, Any]) -> None:
    """``tool_result`` of one call: ``result`` is the tool's return value when ``ok``, else
    the text the model got back (``Error: ...``); ``error`` the failure message; ``denied``
    whether a policy (``allowed_tools`` / ``denied_tools`` / ``policy``) refused it."""
    status = record["status"]
    ok = status == "ok"
    data: dict[str, Any] = {
        "call_id": prep.get("id"),
        "name": prep.get("name"),
        "ok": ok,
        "result": record.get("result") if ok else record.get("content"),
        "status": status,
        "denied": status == "denied",
    }
    if not ok:
        err = record.get("error")
        # a rejection's error is the model-facing text; report the message itself
        if status != "error" and type(err) is str and err.startswith("Error: "):
            err = err[len("Error: ") :]
        data["error"] = err
    sink("tool_result", data)


@builtin("__agent_tool_done")
def agent_tool_done(
    thread: Any, st: Any = None, prep: Any = None, outcome: Any = None
) -> dict[str, Any]:
    """``__agent_tool_done(st, prep, outcome)``: record one tool call's result and append
    its ``tool`` message. ``outcome`` is the try-expression ``Result`` of the handler call
    (nil for rejections): ``Ok(v)`` gives status ``ok`` and the rendered value, ``Err(e)``
    status ``error`` and ``Error: <message>`` (the model sees the failure, the loop goes
    on); rejections give ``rejected`` (``denied`` for policy denials)."""
    st = _check_state(st, "__agent_tool_done")
    rt = thread.runtime
    if prep.get("tool_search") is True and st.get("tool_search") is not None:
        from harnpy.lifecycle.tool_search import apply_search

        st, outcome = apply_search(st, prep, lambda t, ev: _emit(rt, st, t, ev))
        services(rt).sessions[st["session_id"]] = st["transcript"]
    t = st["transcript"]
    if prep.get("action") == "dispatch":
        ok, value = outcome_of(outcome)
        if ok:
            content = tool_hooks.limit_output(rt, prep.get("name"), render_result(value))
            record = _record(st, prep, "ok", result=value)
            t = _tool_event(rt, st, t, prep, value)
        else:
            message = error_text(_as_error(value))
            content = f"Error: {message}"
            record = _record(st, prep, "error", error=message)
    else:
        content = prep.get("message") or "Error: the tool call was rejected"
        status = "denied" if prep.get("reason") == "policy" else "rejected"
        error = content
        if status == "denied":
            # the model gets Harn's structured denial {error: "permission_denied", tool,
            # reason}; the record keeps the readable "Error: <reason>"
            reason = prep.get("permission_reason")
            if reason is None:  # the capability ceiling (or a tool hook) refused it
                reason = _denial_reason(content)
                if content.startswith("Error: tool '") and "by the agent policy" in content:
                    content = denied_content(prep.get("name"), reason)
            error = f"Error: {reason}"
        record = _record(st, prep, status, error=error)
        if status == "denied":
            t = _emit(
                rt,
                st,
                t,
                {
                    "kind": "tool_call_audit",
                    "tool_name": prep.get("name"),
                    "tool_call_id": prep.get("id"),
                    "audit": {"decision": "deny", "reason": "policy", "message": content},
                },
            )
    t = append_message(t, _tool_message(prep, content, st["tool_format"]))
    t = _emit(
        rt,
        st,
        t,
        {
            "kind": "tool_result",
            "tool_call_id": prep.get("id"),
            "tool_name": prep.get("name"),
            "status": record["status"],
            "content": content,
        },
    )
    loop_trace.tool_done(rt, st, record, content, prep.get(loop_trace.STARTED_KEY))
    sink = run_event_sink(rt)
    if sink is not None:
        _report_tool_result(sink, prep, {**record, "content": content})
    return _with_transcript(rt, st, t, records=[*st["records"], record])


def _denial_reason(content: str) -> str:
    """The reason of a refusal message: ``Error: <reason>`` text, or the ``reason`` of an
    already structured ``{"error": "permission_denied", ...}`` (a tool hook's deny)."""
    if content.startswith("{"):
        try:
            body = json.loads(content)
        except ValueError:
            body = None
        if type(body) is dict and body.get("error") == "permission_denied":
            return str(body.get("reason") or "denied")
    return content[len("Error: ") :] if content.startswith("Error: ") else content


def _tool_event(
    runtime: Any, st: dict[str, Any], t: dict[str, Any], prep: dict[str, Any], value: Any
) -> dict[str, Any]:
    """A tool entry whose ``metadata.transcript_event`` names an event kind (``std/plan``'s
    tools: ``plan``) records its result as ``{kind, tool_name, tool_call_id, metadata:
    {<kind>: result}}``."""
    entry = next((e for e in st["tools"] if e.get("name") == prep.get("name")), None)
    meta = entry.get("metadata") if type(entry) is dict else None
    kind = meta.get("transcript_event") if type(meta) is dict else None
    if type(kind) is not str or not kind:
        return t
    event = {
        "kind": kind,
        "tool_name": prep.get("name"),
        "tool_call_id": prep.get("id"),
        "metadata": {kind: value},
        "visibility": "internal",
    }
    return _emit(runtime, st, t, event)


def _as_error(value: Any) -> HarnError:
    from harnpy.runtime.errors import HarnThrow

    return HarnThrow(value)


@builtin("__agent_close_for_park")
def agent_close_for_park(
    thread: Any, st: Any = None, preps: Any = None, at: Any = None
) -> dict[str, Any]:
    """``__agent_close_for_park(st, preps, i)``: before parking, answer every call of the
    turn with a placeholder tool result (the parked call: ``was not dispatched:
    awaiting_resumption``; its siblings: ``was not dispatched: skipped``) so the persisted
    assistant turn has no orphaned tool call, and record the ``tool_call_audit`` event
    ``{tool_name: "agent_await_resumption", audit: {reason, initiator: "self",
    conditions}}``."""
    st = _check_state(st, "__agent_close_for_park")
    rt = thread.runtime
    t = st["transcript"]
    records = list(st["records"])
    park = preps[at]
    request = park["request"]
    for i, prep in enumerate(preps):
        if i == at:
            content = (
                f"Tool call {prep.get('id')} ({PARK_TOOL}) was not dispatched: "
                f"awaiting_resumption (reason: {request['reason']})"
            )
            records.append(_record(st, prep, "parked", result=content))
        else:
            content = (
                f"Tool call {prep.get('id')} ({prep.get('name')}) was not dispatched: skipped "
                f"(the agent parked with {PARK_TOOL} in the same turn)"
            )
            records.append(_record(st, prep, "skipped", error=content))
        t = append_message(t, _tool_message(prep, content, st["tool_format"]))
    t = _emit(
        rt,
        st,
        t,
        {
            "kind": "tool_call_audit",
            "tool_name": PARK_TOOL,
            "tool_call_id": park.get("id"),
            "audit": {
                "reason": request["reason"],
                "initiator": "self",
                "conditions": request.get("conditions"),
            },
        },
    )
    return _with_transcript(rt, st, t, records=records)


@builtin("__agent_after_turn")
def agent_after_turn(thread: Any, st: Any = None) -> dict[str, Any]:
    """``__agent_after_turn(st)``: apply the stop conditions of the module docstring after
    the turn's tool calls were handled; may append a nudge or mark a daemon idle."""
    st = _check_state(st, "__agent_after_turn")
    if st["finished"]:
        return st
    rt = thread.runtime
    had_calls = bool(st["pending_calls"])
    budget_left = st["iteration"] < st["max_iterations"]
    tokens = st.get("token_budget")
    if tokens is not None and st["input_tokens"] + st["output_tokens"] > tokens:
        # token_budget: the tokens spent so far exceed it, no further model call
        return _finish(rt, st, "budget_exhausted", pending_calls=[], idle=False, idle_park=False)
    changes: dict[str, Any] = {"pending_calls": [], "idle": False, "idle_park": False}
    if had_calls:
        changes["nudges"] = 0
        if not budget_left:
            return _finish(rt, st, "budget_exhausted", **changes)
        return {**st, **changes}
    text = st["last_text"] or ""
    if st["daemon"]:
        t = _emit(
            rt,
            st,
            st["transcript"],
            {
                "kind": "tool_call_audit",
                "tool_name": PARK_TOOL,
                "audit": {
                    "status": "daemon_idle",
                    "reason": "daemon idle",
                    "initiator": "self",
                    "conditions": _daemon_conditions(st),
                },
            },
        )
        st = _with_transcript(rt, st, t)
        if not budget_left:
            return _finish(rt, st, "budget_exhausted", daemon_state="idle", **changes)
        if st["wake_interval_ms"] is None and not st["watch_paths"]:
            # no wake source queued: park through agent_await_resumption (seed "Daemon idle")
            return {**st, **changes, "daemon_state": "idle", "idle_park": True}
        return {**st, **changes, "idle": True}
    if not st["loop_until_done"]:
        return _finish(rt, st, "done", **changes)
    sentinel = st["done_sentinel"]
    if sentinel is None or sentinel in text:
        return _finish(rt, st, "done", **changes)
    nudges = st["nudges"] + 1
    if nudges > st["max_nudges"]:
        return _finish(rt, st, "stuck", nudges=nudges, **changes)
    if not budget_left:
        return _finish(rt, st, "budget_exhausted", nudges=nudges, **changes)
    t = append_message(st["transcript"], {"role": "user", "content": st["nudge"]})
    return _with_transcript(rt, st, t, nudges=nudges, **changes)


@builtin("__agent_budget_exhausted")
def agent_budget_exhausted(thread: Any, st: Any = None) -> dict[str, Any]:
    """``__agent_budget_exhausted(st)``: end the loop with ``status: "budget_exhausted"``
    before a model call that would exceed ``max_iterations`` (``max_iterations: 0`` makes
    no call at all; lifecycle.md 2.13)."""
    st = _check_state(st, "__agent_budget_exhausted")
    return _finish(thread.runtime, st, "budget_exhausted", pending_calls=[])


def _daemon_conditions(st: dict[str, Any]) -> dict[str, Any] | None:
    ms = st["wake_interval_ms"]
    if ms is None:
        return None
    minutes = max(1, -(-ms // 60000))
    return {"timeout": {"duration_minutes": minutes, "on_timeout": "resume_with_input"}}


def _finish(runtime: Any, st: dict[str, Any], status: str, **changes: Any) -> dict[str, Any]:
    t = _emit(runtime, st, st["transcript"], {"kind": "loop_status", "status": status})
    return _with_transcript(runtime, st, t, finished=True, status=status, **changes)


@builtin("__agent_idle", control=True)
def agent_idle(thread: Any, st: Any = None) -> Any:
    """``__agent_idle(st)``: a daemon loop waits ``wake_interval_ms`` on the runtime clock
    (blocking as data), then returns the state with a ``[daemon wake: timer]`` user message
    so the next turn sees why it woke."""
    st = _check_state(st, "__agent_idle")
    rt = thread.runtime
    t = append_message(st["transcript"], {"role": "user", "content": "[daemon wake: timer]"})
    woken = _with_transcript(rt, st, t, idle=False)
    waker = block_control(thread, "daemon idle")
    ms = st["wake_interval_ms"] or 0
    rt.scheduler.at(rt.clock.monotonic_ms() + ms, lambda: waker.wake(woken))
    return None


@builtin("__agent_apply_resume")
def agent_apply_resume(thread: Any, st: Any = None, payload: Any = None) -> dict[str, Any]:
    """``__agent_apply_resume(st, payload)``: continue after ``__agent_park`` returned.

    ``payload`` (built by the lifecycle layer) may carry ``final: true`` with a
    ``suspension`` (a root loop that parked: the loop ends with ``status: "suspended"``),
    ``transcript`` (a replacement transcript, ``continue_transcript: false``),
    ``messages`` (appended) and ``reminders`` (``{body, dedupe_key, ...}``: delivered once
    as the trailing user message of the next request, recorded as ``system_reminder``
    events until then).
    """
    st = _check_state(st, "__agent_apply_resume")
    rt = thread.runtime
    p = payload if type(payload) is dict else {}
    if p.get("final"):
        return _with_transcript(
            rt,
            st,
            st["transcript"],
            finished=True,
            status="suspended",
            suspension=p.get("suspension"),
            suspend_request=None,
            idle_park=False,
            park_request=None,
        )
    t = st["transcript"]
    if p.get("transcript") is not None:
        t = coerce(p["transcript"], "resume")
    for m in p.get("messages") or []:
        t = append_message(t, m)
    reminders = list(st["reminders"])
    for r in p.get("reminders") or []:
        if type(r) is not dict:
            continue
        key = r.get("dedupe_key")
        if key is not None and any(x.get("dedupe_key") == key for x in reminders):
            continue
        reminders.append(r)
        t = _emit(rt, st, t, {"kind": "system_reminder", "reminder": r})
    return _with_transcript(
        rt,
        st,
        t,
        reminders=reminders,
        suspend_request=None,
        idle_park=False,
        park_request=None,
        daemon_state="active" if st["daemon"] else None,
    )


@builtin("__agent_with_park")
def agent_with_park(thread: Any, st: Any = None, request: Any = None) -> dict[str, Any]:
    """``__agent_with_park(st, request)``: the state with ``park_request`` set (the loop
    parks with ``request`` after the turn)."""
    st = _check_state(st, "__agent_with_park")
    return {**st, "park_request": request}


@builtin("__agent_loop_result")
def agent_loop_result(thread: Any, st: Any = None) -> dict[str, Any]:
    """``__agent_loop_result(st)``: the ``agent_loop`` result dict (see ``agent_loop``)."""
    st = _check_state(st, "__agent_loop_result")
    rt = thread.runtime
    out = loop_result(rt, st)
    if st["suspension"] is None:
        loop_trace.loop_complete(rt, st, out)
        report_root_outcome(thread, st, out)  # a failure says so on stderr (issue 14 §2)
    return out


def loop_result(runtime: Any, st: dict[str, Any]) -> dict[str, Any]:
    """The result dict of a finished loop state."""
    text = "\n".join(p for p in st["text_parts"] if p)
    visible = "\n".join(v for v in (visible_text(p) for p in st["text_parts"]) if v)
    calls: list[str] = []
    ok: list[str] = []
    rejected: list[str] = []
    for r in st["records"]:
        name = r.get("name")
        if name not in calls:
            calls.append(name)
        if r.get("status") == "ok" and name not in ok:
            ok.append(name)
        if r.get("status") in ("error", "rejected", "denied") and name not in rejected:
            rejected.append(name)
    duration = int(runtime.clock.monotonic_ms()) - st["started_ms"]
    out: dict[str, Any] = {
        "status": st["status"] or "done",
        "text": text,
        "visible_text": visible,
        "last_text": st["last_text"],
        "llm": {
            "iterations": st["iteration"],
            "duration_ms": max(0, duration),
            "input_tokens": st["input_tokens"],
            "output_tokens": st["output_tokens"],
        },
        "tools": {
            "calls": calls,
            "successful": ok,
            "rejected": rejected,
            "mode": st["tool_format"],
        },
        "tool_calls": list(st["records"]),
        "deferred_user_messages": [],
        "daemon_state": st.get("daemon_state") if st["daemon"] else None,
        "daemon_snapshot_path": (
            os.path.join(st["persist_path"], "daemon.json")
            if st["daemon"] and st.get("persist_path") and st["status"] == "suspended"
            else None
        ),
        "task_ledger": {},
        "trace": {
            "iterations": st["iteration"],
            "events": len(st["transcript"]["events"]),
            "native_text_tool_fallbacks": st.get("native_fallbacks", 0),
            "native_text_tool_fallback_rejections": st.get("native_fallback_rejections", 0),
            "empty_completion_retries": st.get("empty_completion_retries", 0),
        },
        "transcript": st["transcript"],
        "session_id": st["session_id"],
        "model": st["model"],
        "provider": st["provider"],
    }
    if st["error"] is not None:
        out["error"] = st["error"]
    if st["suspension"] is not None:
        # a root loop that parked returns the Suspension (lifecycle.md 3.3): it never
        # carries transcript text, so the loop fields that hold conversation text are left
        # out; the counters and tool names of 2.13 stay (dev/impl.md, "Agents, workers,
        # suspension")
        for key in SUSPENDED_PRIVATE_KEYS:
            out.pop(key, None)
        sus = st["suspension"]
        out.update(sus if type(sus) is dict else {})
        out["status"] = "suspended"
        out["final_status"] = "suspended"
        out.setdefault("iterations_completed", st["iteration"])
    return out


#: Loop-result keys a suspended root loop's result leaves out: they hold transcript text
#: (prompt, model answers, tool arguments and results).
SUSPENDED_PRIVATE_KEYS = ("text", "visible_text", "last_text", "tool_calls", "transcript")


@builtin("__agent_call_count")
def agent_call_count(thread: Any, st: Any = None) -> int:
    """``__agent_call_count(st)``: number of tool calls the model issued in the last turn."""
    return len(_check_state(st, "__agent_call_count")["pending_calls"])


__all__ = [
    "agent_loop",
    "apply_response",
    "current_worker_id",
    "loop_result",
    "new_state",
]
