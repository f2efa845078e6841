"""Harn builtins of the trigger dispatcher (lifecycle.md §2.12, §4).

``parse_resume_conditions(conditions?)``, ``trigger_register(config)``,
``trigger_fire(handle_or_id, event)``, ``trigger_unregister(id_or_handle)``,
``trigger_list()``, ``emit_event(topic, payload)``, ``emit_channel(name, payload,
options?)`` and the harnpy extension ``trigger_poll()`` (fire what the clock made due now:
useful after ``advance_time`` in tests; the runtime also does it from a scheduler timer).

They work on the runtime's dispatcher (``thread.runtime.trigger_dispatcher``, created on
first use). Heavy modules (pydantic, croniter, sqlite3) are imported only when a builtin
runs, so programs that never use triggers do not pay for them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harnpy.runtime.errors import runtime_error
from harnpy.stdlib.registry import BUILTINS, builtin

Gen = Generator[Any, Any, Any]


def _strip(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop a leading Harness argument (harness-first call form, lifecycle.md §0)."""
    try:
        from harnpy.lifecycle._common import strip_harness
    except ImportError:  # pragma: no cover - the agents layer is absent
        return args
    return tuple(strip_harness(args))


def _arg(args: tuple[Any, ...], i: int) -> Any:
    return args[i] if i < len(args) else None


def _dispatcher(thread: Any) -> Any:
    from harnpy.lifecycle.triggers.dispatcher import get_dispatcher

    return get_dispatcher(thread.runtime)


def _harn_errors(gen: Gen) -> Gen:
    """Run a dispatch generator, turning registry/argument errors into Harn runtime errors."""
    from harnpy.lifecycle.triggers.bindings import TriggerRegistryError

    try:
        return (yield from gen)
    except TriggerRegistryError as e:
        raise runtime_error(f"trigger stdlib: {e}") from None
    except ValueError as e:
        raise runtime_error(str(e)) from None


def parse_resume_conditions_(thread: Any, *args: Any) -> Any:
    """``parse_resume_conditions(conditions?)`` -> ResumeConditions dict or nil (§4.1).

    Throws ``HARN-SUS-002: invalid ResumeConditions.<path>: <why>`` on invalid input; the
    ``trigger`` goes through the same parser as ``trigger_register``."""
    from harnpy.lifecycle.triggers.conditions import parse_resume_conditions

    return parse_resume_conditions(_arg(_strip(args), 0))


def _claim_builtin(name: str, fn: Any) -> None:
    """Register ``fn`` as builtin ``name`` (the only ``parse_resume_conditions``: the agent
    loop and ``agent_await_resumption`` validate through the same parser, see
    :mod:`harnpy.lifecycle.resume_conditions`)."""
    from harnpy.runtime.values import Builtin

    BUILTINS[name] = Builtin(name, fn, max_args=None, doc=fn.__doc__ or "")


_claim_builtin("parse_resume_conditions", parse_resume_conditions_)


@builtin("trigger_register")
def trigger_register(thread: Any, *args: Any) -> Any:
    """``trigger_register(config)`` -> TriggerHandle (binding snapshot dict: ``id``,
    ``version``, ``kind``, ``provider``, ``handler_kind``, ``state``, ``metrics``...).

    ``config``: ``{kind, provider, handler, id?, match?: {events}, when?, retry?, schedule?,
    timezone?, catchup_mode?, ...}`` (§4.3). Errors are runtime errors with the reference
    texts (``trigger_register: missing string field `kind```)."""
    from harnpy.lifecycle.triggers.bindings import TriggerRegistryError
    from harnpy.lifecycle.triggers.spec import TriggerSpecError, parse_trigger_spec

    config = _arg(_strip(args), 0)
    if config is None:
        raise runtime_error("trigger_register: missing dict argument at position 1")
    try:
        spec = parse_trigger_spec(config)
    except TriggerSpecError as e:
        raise runtime_error(str(e)) from None
    try:
        b = _dispatcher(thread).register(spec)
    except TriggerRegistryError as e:
        raise runtime_error(f"trigger stdlib: {e}") from None
    return b.snapshot()


@builtin("trigger_fire", callback=True)
def trigger_fire(thread: Any, *args: Any) -> Gen:
    """``trigger_fire(handle_or_id, event)`` -> DispatchHandle ``{event_id, binding_id,
    binding_version, status, replay_of_event_id, dlq_entry_id, error, result}``.

    ``event`` needs ``provider`` and ``kind``; missing envelope fields are filled in.
    ``status`` is ``dispatched`` (handler ran; ``result`` is its value) or ``dlq`` (the
    handler threw; ``error`` says why). Firing an auto-resume binding resumes its worker."""
    args = _strip(args)
    handle, event = _arg(args, 0), _arg(args, 1)
    if handle is None:
        raise runtime_error("trigger_fire: missing trigger handle")
    if event is None:
        raise runtime_error("trigger_fire: missing trigger event")
    d = _dispatcher(thread)
    return (yield from _harn_errors(d.fire(handle, event)))


@builtin("trigger_unregister")
def trigger_unregister(thread: Any, *args: Any) -> bool:
    """``trigger_unregister(id_or_handle)`` -> bool: true when a live binding was removed
    (an auto-resume binding's wait is cancelled with it)."""
    handle = _arg(_strip(args), 0)
    tid = handle.get("id") if type(handle) is dict else handle
    if type(tid) is not str:
        raise runtime_error("trigger_unregister: expected trigger handle dict or id string")
    d = _dispatcher(thread)
    if tid in d.waits:
        return bool(d.cancel_resume_wait(tid, reason="unregistered"))
    return bool(d.unregister(tid))


@builtin("trigger_list")
def trigger_list(thread: Any) -> list[Any]:
    """``trigger_list()`` -> list of binding snapshots, in registration order."""
    return [b.snapshot() for b in _dispatcher(thread).list_bindings()]


@builtin("trigger_poll")
def trigger_poll(thread: Any) -> list[Any]:
    """``trigger_poll()`` (harnpy) -> fire records ``{binding_id, cause, at_ms, fired_at_ms,
    coalesced, ...}`` for every timeout and cron tick due on the runtime clock now."""
    from harnpy.lifecycle.triggers.spec import jsonable

    fired = _dispatcher(thread).poll()
    return [jsonable({k: v for k, v in rec.items() if k != "result"}) for rec in fired]


@builtin("emit_event")
def emit_event(thread: Any, *args: Any) -> Any:
    """``emit_event(topic, payload)`` -> ``{topic, event_id, seq, woken, stored}``: append
    to EventLog ``topic`` and wake the workers parked with ``on_event: topic`` (harnpy wires
    ``on_event``; the reference only validates it). ``woken`` lists their worker ids."""
    args = _strip(args)
    topic, payload = _arg(args, 0), _arg(args, 1)
    if type(topic) is not str:
        raise runtime_error("emit_event: topic must be a string")
    d = _dispatcher(thread)
    try:
        return d.emit_event(topic, payload)
    except ValueError as e:
        raise runtime_error(str(e)) from None


@builtin("emit_channel", callback=True)
def emit_channel(thread: Any, *args: Any) -> Gen:
    """``emit_channel(name, payload, options?)`` -> receipt ``{id, name, name_resolved,
    scope, scope_id, payload, topic, event_id, inserted, duplicate, dispatched, ...}``.

    Names: ``name``, ``session:name``, ``pipeline:name``, ``tenant[:id]:name``; options
    ``{scope, id, tenant_id, session_id, pipeline_id}``. Bindings with ``provider:
    "channel"`` and a matching ``channel:<name>`` selector are dispatched."""
    args = _strip(args)
    name, payload, options = _arg(args, 0), _arg(args, 1), _arg(args, 2)
    if name is None:
        raise runtime_error("emit_channel: missing name")
    d = _dispatcher(thread)
    return (yield from _harn_errors(d.emit_channel(name, payload, options)))
