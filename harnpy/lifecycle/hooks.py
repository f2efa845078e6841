"""Session lifecycle hooks: the registry, control parsing and firing (lifecycle.md 7).

One :class:`HookRegistry` hangs off each runtime (``runtime.session_hooks``, created on
first use by :func:`registry`). Hooks are Harn closures registered for a canonical event
name (PascalCase, e.g. ``PreSuspend``) with an optional pattern over the payload.

Python API (for the suspend / resume layer and the pipeline-finish lifecycle)
-----------------------------------------------------------------------------

``register(runtime, event, fn, pattern="*")``
    Add ``fn`` for ``event`` (``"pre_suspend"`` or ``"PreSuspend"``; session events and
    worker events ``WorkerSpawned``...). Raises a runtime error for an unknown event.
``clear(runtime)``
    Drop every session-level hook (worker-event hooks too), like ``clear_session_hooks()``.
``matching(runtime, event, payload) -> list[Hook]``
    The hooks that would run for ``payload``, in registration order.
``fire(thread, event, payload) -> Generator`` (use inside a *callback* builtin)
    ``control = yield from fire(thread, "PreSuspend", payload)`` runs the matching hooks as
    Harn calls (each gets ``payload``; a hook closure with two or more parameters gets
    ``(harness, payload)``) and returns the control dict
    ``{control: "allow"}``, ``{control: "block", reason}``, ``{control: "modify", modify}``
    or ``{control: "decision", decision: "allow"|"deny"|"ask", reason?}``.
    The chain stops at the first Block / Decision; a Modify replaces the payload seen by
    later hooks and the last Modify is returned when nobody blocks. ``payload.event`` is
    set to the canonical name when missing.
``is_veto(control) -> bool``
    harnpy's rule (§13 Q21): ``block`` and ``decision: deny`` cancel the operation.

From Harn code (``std/agent/_loop`` or any module): ``__host_fire_session_hook(event,
payload?)`` returns the same control dict.

Builtins: ``register_session_hook(event, pattern?, handler)``, ``clear_session_hooks()``,
``__host_fire_session_hook(event, payload?)``, ``__lifecycle_fire_finish_hooks(event,
payload)`` (the pipeline-finish rules, used by ``std/lifecycle/_finish``). All accept a
leading Harness argument.

Worker events (lifecycle.md 12) run their hooks advisorily: the first worker-event hook
subscribes the registry to ``services(runtime).event_listeners`` and each event starts a
detached thread that calls the hooks with ``{event, worker: {id, name, task, mode, status,
metadata}}``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import is_harness, strip_harness
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.values import Builtin, CallRequest, Closure, type_name
from harnpy.stdlib.registry import builtin

#: Session-level events (``register_session_hook`` / ``clear_session_hooks``).
SESSION_EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreCompact",
    "PostCompact",
    "PostTurn",
    "PermissionAsked",
    "PermissionReplied",
    "FileEdited",
    "SessionError",
    "SessionIdle",
    "PreFinish",
    "PostFinish",
    "OnUnsettledDetected",
    "PreSuspend",
    "PostSuspend",
    "PreResume",
    "PostResume",
    "PreDrain",
    "PostDrain",
    "OnDrainDecision",
    "LoopCheckpoint",
)
#: Worker events (lifecycle.md 12); harnpy also lets ``register_session_hook`` take them.
WORKER_EVENTS = (
    "WorkerSpawned",
    "WorkerProgressed",
    "WorkerWaitingForInput",
    "WorkerSuspended",
    "WorkerResumed",
    "WorkerCompleted",
    "WorkerFailed",
    "WorkerStopped",
    "WorkerCancelled",
)
FINISH_EVENTS = ("PreFinish", "OnUnsettledDetected", "PostFinish")

Gen = Generator[Any, Any, Any]


def _snake(pascal: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", pascal).lower()


_NAMES: dict[str, str] = {}
for _ev in SESSION_EVENTS + WORKER_EVENTS:
    _NAMES[_ev] = _ev
    _NAMES[_snake(_ev)] = _ev
_NAMES["error"] = "SessionError"


def canonical_event(name: Any, where: str = "register_session_hook") -> str:
    """The PascalCase name of a hook event given in PascalCase or snake_case.

    Raises:
        HarnRuntimeError: ``<where>: unknown session hook event `<name>```.
    """
    text = (name if type(name) is str else display(name)).strip()
    ev = _NAMES.get(text)
    if ev is None:
        raise runtime_error(f"{where}: unknown session hook event `{text}`")
    return ev


class Hook:
    """One registration: canonical ``event``, ``pattern`` source and Harn ``handler``."""

    __slots__ = ("event", "pattern", "handler", "name")

    def __init__(self, event: str, pattern: str, handler: Any) -> None:
        self.event = event
        self.pattern = pattern
        self.handler = handler
        self.name = f"session_hook::{event}"


class HookRegistry:
    """The hooks of one runtime, in registration order."""

    def __init__(self) -> None:
        self.hooks: list[Hook] = []
        self.worker_bridge = False
        #: Threads running advisory hooks (worker events, PostSuspend): the program's end
        #: runs those still queued (:func:`drain_detached`).
        self.detached: list[Any] = []


def registry(runtime: Any) -> HookRegistry:
    """The runtime's :class:`HookRegistry` (``runtime.session_hooks``, created on first
    use)."""
    reg = getattr(runtime, "session_hooks", None)
    if reg is None:
        reg = HookRegistry()
        runtime.session_hooks = reg
    return reg


def register(runtime: Any, event: Any, fn: Any, pattern: Any = "*") -> Hook:
    """Register ``fn`` (a Harn closure) for ``event``; returns the registration.

    Raises:
        HarnRuntimeError: unknown event; ``register_session_hook: handler must be a closure,
            got <type>``.
    """
    ev = canonical_event(event)
    if type(fn) is not Closure and type(fn) is not Builtin:
        raise runtime_error(
            f"register_session_hook: handler must be a closure, got {type_name(fn)}"
        )
    pat = pattern if type(pattern) is str else display(pattern)
    hook = Hook(ev, pat, fn)
    reg = registry(runtime)
    reg.hooks.append(hook)
    if ev in WORKER_EVENTS and not reg.worker_bridge:
        _install_worker_bridge(runtime)
        reg.worker_bridge = True
    return hook


def clear(runtime: Any) -> None:
    """Remove every session-level and worker-event hook."""
    registry(runtime).hooks.clear()


def has_hooks(runtime: Any, events: tuple[str, ...]) -> bool:
    """True when a hook is registered for one of ``events`` (canonical names)."""
    reg = getattr(runtime, "session_hooks", None)
    return reg is not None and any(h.event in events for h in reg.hooks)


# ------------------------------------------------------------------ pattern matching


def _path(payload: Any, path: str) -> Any:
    cur = payload
    for seg in path.split("."):
        if type(cur) is not dict or seg not in cur:
            return None
        cur = cur[seg]
    return cur


def _as_text(v: Any) -> str:
    if v is None:
        return ""
    return v if type(v) is str else display(v)


def _truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if type(v) in (int, float):
        return v != 0
    if type(v) in (str, list, dict):
        return len(v) > 0
    return True


def _strip_quotes(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def glob_match(pattern: str, text: str) -> bool:
    """Name glob: ``*`` alone matches everything, no ``*`` means equality, otherwise ``*``
    matches any run of characters."""
    if pattern == "*":
        return True
    if "*" not in pattern:
        return pattern == text
    return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]").replace("?", "[?]"))


def pattern_matches(pattern: str, payload: Any) -> bool:
    """Whether a hook pattern selects ``payload``: ``*`` / empty (all), ``path =~ regex``,
    ``path == value``, ``path != value``, a dotted path (truthy), else a glob over
    ``tool.name``; a glob over ``payload.target`` also matches."""
    p = pattern.strip()
    if not p or p == "*":
        return True
    target = _path(payload, "target")
    if type(target) is str and glob_match(p, target):
        return True
    if "=~" in p:
        lhs, rhs = p.split("=~", 1)
        try:
            return re.search(_strip_quotes(rhs), _as_text(_path(payload, lhs.strip()))) is not None
        except re.error:
            return False
    if "==" in p:
        lhs, rhs = p.split("==", 1)
        return _as_text(_path(payload, lhs.strip())) == _strip_quotes(rhs)
    if "!=" in p:
        lhs, rhs = p.split("!=", 1)
        return _as_text(_path(payload, lhs.strip())) != _strip_quotes(rhs)
    if "." in p:
        return _truthy(_path(payload, p))
    return glob_match(p, _as_text(_path(payload, "tool.name")))


def matching(runtime: Any, event: Any, payload: Any) -> list[Hook]:
    """The hooks registered for ``event`` whose pattern selects ``payload``."""
    reg = getattr(runtime, "session_hooks", None)
    if reg is None:
        return []
    ev = canonical_event(event, "__host_fire_session_hook")
    return [h for h in reg.hooks if h.event == ev and pattern_matches(h.pattern, payload)]


# ------------------------------------------------------------------ control


def parse_control(event: str, value: Any) -> dict[str, Any]:
    """The control dict of one hook return (lifecycle.md 7): nil/true → allow; false →
    block ``"<Event> hook returned false"``; ``{decision}`` → decision; ``{block: truthy}``
    → block (``reason`` or ``"<Event> hook blocked the operation"``); ``{modify: x}`` →
    modify; other dicts → allow. A dict with ``then`` is replaced by its ``then`` value
    (reminder effects are not delivered by harnpy).

    Raises:
        HarnRuntimeError: a bad ``decision`` or a return of another type.
    """
    if type(value) is dict and "then" in value:
        value = value["then"]
    if value is None or value is True:
        return {"control": "allow"}
    if value is False:
        return {"control": "block", "reason": f"{event} hook returned false"}
    if type(value) is dict:
        if "decision" in value:
            kind = _as_text(value["decision"])
            norm = kind.strip().lower()
            if norm not in ("allow", "deny", "ask"):
                raise runtime_error(
                    f'{event} hook `decision` must be "allow", "deny", or "ask"; got "{kind}"'
                )
            out: dict[str, Any] = {"control": "decision", "decision": norm}
            if value.get("reason") is not None:
                out["reason"] = _as_text(value["reason"])
            return out
        if _truthy(value.get("block")):
            reason = value.get("reason")
            return {
                "control": "block",
                "reason": _as_text(reason)
                if reason is not None
                else f"{event} hook blocked the operation",
            }
        if "modify" in value:
            return {"control": "modify", "modify": value["modify"]}
        return {"control": "allow"}
    if type(value) is list:
        return {"control": "allow"}
    raise runtime_error(
        f"{event} hook must return nil, bool, or a control dict; got {type_name(value)}"
    )


def is_veto(control: Any) -> bool:
    """True when a control dict cancels a PreSuspend / PreResume (block, or a ``deny``
    decision: harnpy decision §13 Q21)."""
    if type(control) is not dict:
        return False
    c = control.get("control")
    return c == "block" or (c == "decision" and control.get("decision") == "deny")


def _hook_args(runtime: Any, hook: Hook, payload: Any) -> list[Any]:
    fn = hook.handler
    if type(fn) is Closure and fn.code.nparams >= 2 and not fn.code.rest:
        from harnpy.lifecycle.harness import harness_value

        return [harness_value(runtime), payload]
    return [payload]


def _with_event(event: str, payload: Any) -> dict[str, Any]:
    out = dict(payload) if type(payload) is dict else {}
    out.setdefault("event", event)
    return out


def fire(thread: Any, event: Any, payload: Any) -> Gen:
    """Run the matching hooks of ``event`` (a callback-builtin generator; see the module
    docstring); returns the control dict."""
    ev = canonical_event(event, "__host_fire_session_hook")
    current = _with_event(ev, payload)
    hooks = matching(thread.runtime, ev, current)
    ctl = yield from _run_chain(thread, ev, current, hooks)
    if hooks:
        _report_hook(thread.runtime, ev, ctl, _with_event(ev, payload))
    return ctl


def _run_chain(thread: Any, ev: str, current: Any, hooks: list[Hook]) -> Gen:
    """The control of running ``hooks`` in order (see :func:`fire`)."""
    modified: Any = None
    has_modify = False
    for hook in hooks:
        raw = yield CallRequest(hook.handler, _hook_args(thread.runtime, hook, current))
        ctl = parse_control(ev, raw)
        kind = ctl["control"]
        if kind == "allow":
            continue
        if kind == "modify":
            modified = ctl["modify"]
            has_modify = True
            current = modified
            continue
        return ctl
    if has_modify:
        return {"control": "modify", "modify": modified}
    return {"control": "allow"}


def _report_hook(runtime: Any, event: str, ctl: dict[str, Any], payload: Any) -> None:
    """Report ``hook {name, phase, payload}`` to the run-event sink, if any (lifecycle.md
    9.1): ``phase`` is the chain's control -- ``allow``, ``block``, ``modify`` or
    ``decision:<allow|deny|ask>`` -- and ``payload`` what the first hook was given."""
    from harnpy.lifecycle.services import run_event_sink

    sink = run_event_sink(runtime)
    if sink is None:
        return
    kind = ctl.get("control")
    phase = f"decision:{ctl.get('decision')}" if kind == "decision" else str(kind)
    sink("hook", {"name": event, "phase": phase, "payload": payload})


def fire_finish(thread: Any, event: Any, payload: Any) -> Gen:
    """Pipeline-finish dispatch (``PreFinish`` / ``OnUnsettledDetected`` / ``PostFinish``):
    every matching hook runs with the current payload; a Modify rewrites the payload for the
    next hooks. Returns nil.

    Raises:
        HarnRuntimeError: a ``PreFinish`` Block (``PreFinish hook returned block, which is
            not a valid control: <reason>. ...``) or an ``OnUnsettledDetected`` Block
            (``OnUnsettledDetected hook blocked pipeline finish: <reason>``); PostFinish
            ignores Block.
    """
    ev = canonical_event(event, "__lifecycle_fire_finish_hooks")
    current = _with_event(ev, payload)
    hooks = matching(thread.runtime, ev, current)
    phase: dict[str, Any] = {"control": "allow"}
    for hook in hooks:
        raw = yield CallRequest(hook.handler, _hook_args(thread.runtime, hook, current))
        ctl = parse_control(ev, raw)
        kind = ctl["control"]
        if kind != "allow":
            phase = ctl
        if kind == "block":
            if ev != "PostFinish":
                _report_hook(thread.runtime, ev, ctl, _with_event(ev, payload))
            if ev == "PreFinish":
                raise runtime_error(
                    f"PreFinish hook returned block, which is not a valid control: "
                    f"{ctl['reason']}. To delay pipeline finish until unsettled work clears, "
                    "use on_finish_block_until_settled (std/lifecycle) or return "
                    "Modify/Allow from PreFinish."
                )
            if ev == "PostFinish":
                continue
            raise runtime_error(f"{ev} hook blocked pipeline finish: {ctl['reason']}")
        if kind == "modify":
            current = ctl["modify"]
    if hooks:
        _report_hook(thread.runtime, ev, phase, _with_event(ev, payload))
    return None


# ------------------------------------------------------------------ worker events


def _install_worker_bridge(runtime: Any) -> None:
    """Subscribe to worker events: each event with matching hooks starts a detached thread
    running them (advisory; their returns are ignored)."""
    from harnpy.lifecycle.services import services

    def listener(ev: dict[str, Any]) -> None:
        name = ev.get("event")
        if type(name) is not str or name not in WORKER_EVENTS:
            return
        worker = dict(ev.get("worker") or {})
        worker.setdefault("metadata", None)
        payload = {"event": name, "worker": worker}
        hooks = matching(runtime, name, payload)
        if not hooks:
            return
        from harnpy.stdlib.concurrency import start_thread

        for hook in hooks:
            th = start_thread(
                runtime, hook.handler, _hook_args(runtime, hook, payload), f"hook:{name}"
            )
            th.on_done = _advisory_done(runtime, name)
            if not th.finished:
                track_detached(runtime, th)
                runtime.scheduler.add(th)

    services(runtime).event_listeners.append(listener)


def track_detached(runtime: Any, th: Any) -> None:
    """Remember an advisory hook thread so that :func:`drain_detached` runs it if it is
    still queued when the program ends."""
    registry(runtime).detached.append(th)


def drain_detached(runtime: Any) -> None:
    """Run the advisory hook threads still queued (worker-event and PostSuspend hooks
    started just before the entry program returned: ``close_agent`` as the last statement
    must still run its ``worker_cancelled`` hook, lifecycle.md 7). Only ready hook threads
    run — one that waits (a timer, a model call) is left, the program does not wait for
    it; hooks started by these hooks run too."""
    reg = getattr(runtime, "session_hooks", None)
    sched = getattr(runtime, "scheduler", None)
    if reg is None or sched is None:
        return
    while True:
        reg.detached = [th for th in reg.detached if not th.finished]
        ready = [th for th in reg.detached if th in sched.ready]
        if not ready:
            return
        for th in ready:
            if th in sched.ready:
                sched.ready.remove(th)
                sched.run_thread(th)


def _advisory_done(runtime: Any, event: str) -> Any:
    """``on_done`` of an advisory hook thread: a failing hook is reported on stderr and
    does not stop the program."""

    def done(result: Any, error: Any) -> None:
        if error is not None:
            runtime.write_err(f"warning: {event} hook failed: {error.message}\n")

    return done


# ------------------------------------------------------------------ builtins


@builtin()
def register_session_hook(thread: Any, *args: Any) -> None:
    """``register_session_hook(event, pattern?, handler)``: run ``handler(payload)`` (or
    ``handler(harness, payload)``) when ``event`` fires (lifecycle.md 7). ``event`` is a
    session event (``pre_suspend`` / ``PreSuspend``...) or a worker event; ``pattern``
    (default ``*``) filters on the payload.

    Raises:
        HarnRuntimeError: wrong argument count, unknown event, handler not a closure.
    """
    args = strip_harness(args)
    if len(args) == 2:
        event, pattern, handler = args[0], "*", args[1]
    elif len(args) == 3:
        event, pattern, handler = args
    else:
        raise runtime_error(
            "register_session_hook expects 2 or 3 arguments (event, pattern?, handler); "
            f"got {len(args)}"
        )
    register(thread.runtime, event, handler, pattern)


@builtin()
def clear_session_hooks(thread: Any, *args: Any) -> None:
    """``clear_session_hooks()``: remove every registered session hook."""
    clear(thread.runtime)


@builtin("__host_fire_session_hook", callback=True)
def host_fire_session_hook(thread: Any, *args: Any) -> Gen:
    """``__host_fire_session_hook(event, payload?)``: run the hooks of ``event`` and return
    the control dict ``{control: "allow"|"block"|"modify"|"decision", reason?, modify?,
    decision?}`` (lifecycle.md 7)."""
    args = strip_harness(args)
    if not args:
        raise runtime_error("__host_fire_session_hook: missing event")
    payload = args[1] if len(args) > 1 else None
    return (yield from fire(thread, args[0], payload))


@builtin("__lifecycle_fire_finish_hooks", callback=True)
def lifecycle_fire_finish_hooks(thread: Any, event: Any = None, payload: Any = None) -> Gen:
    """``__lifecycle_fire_finish_hooks(event, payload)``: the pipeline-finish dispatch of
    :func:`fire_finish` (internal, used by ``std/lifecycle/_finish``)."""
    if is_harness(event):
        event, payload = payload, None
    return (yield from fire_finish(thread, event, payload))


__all__ = [
    "FINISH_EVENTS",
    "SESSION_EVENTS",
    "WORKER_EVENTS",
    "Hook",
    "HookRegistry",
    "canonical_event",
    "clear",
    "drain_detached",
    "fire",
    "fire_finish",
    "has_hooks",
    "is_veto",
    "matching",
    "parse_control",
    "pattern_matches",
    "register",
    "registry",
    "track_detached",
]


# The finish lifecycle (a PROGRAM_FINISH hook) runs the advisory hook threads still queued
# here (drain_detached); builtin modules load lazily, so importing this one registers it.
import harnpy.lifecycle.pipeline_lifecycle  # noqa: E402, F401
