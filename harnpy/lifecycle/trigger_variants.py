"""The ``interrupt_and_suspend`` trigger handler variant: a "panic" broadcast that suspends
every running worker in a target scope (std/triggers ``InterruptAndSuspend``).

The trigger dispatcher (:mod:`harnpy.lifecycle.triggers.dispatcher`) runs handler variants
through ``variant_executors``; :func:`install` puts :func:`interrupt_and_suspend` there
(``std/triggers`` calls ``__triggers_install_variants()`` when imported and from its
constructors). The executor:

1. resolves the targets: ``all`` = every worker id of the registry in sorted order;
   ``concrete`` = the ids given; ``closure`` = the ids the closure returns for the event
   (nil = none; other types fail the dispatch);
2. with no targets, records one roll-up audit ``triggers.interrupt_and_suspend.audit``
   ``{trigger_id, binding_key, event_id, outcome: "broadcast", scope_kind, reason,
   target_count: 0, suspended_count: 0, skipped_count: 0}``;
3. otherwise suspends each target (outcome ``suspended``, or skipped as
   ``already_suspended`` / ``not_running`` / ``unknown``), records one audit per target
   ``{..., outcome, worker_id}`` and then the roll-up audit with the counts;
4. returns ``{status: "broadcast", scope_kind, target_count, suspended_count,
   skipped_count, reason, targets: [{worker_id, outcome}]}`` (no ``targets`` when empty).

Suspending one worker skips the Pre/PostSuspend hooks (the panic is the explicit override):
it calls ``harnpy.lifecycle.workers.panic_suspend(runtime, rec, reason)`` when the worker
layer provides it (returning the outcome string), and otherwise queues the suspension on
the record (``rec.suspend_request = {reason, initiator: "triggered"}``), which the loop
honours at its next turn boundary.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harnpy.runtime.values import CallRequest, type_name
from harnpy.stdlib.registry import builtin

Gen = Generator[Any, Any, Any]
AUDIT_KIND = "triggers.interrupt_and_suspend.audit"


class VariantError(Exception):
    """A dispatch failure of the variant (the dispatcher records it in the DLQ)."""


def _suspend_one(runtime: Any, worker_id: str, reason: str) -> str:
    from harnpy.lifecycle import workers
    from harnpy.lifecycle.services import services

    rec = services(runtime).workers.get(worker_id)
    if rec is None:
        return "unknown"
    if rec.status == "suspended":
        return "already_suspended"
    if rec.status != "running":
        return "not_running"
    panic = getattr(workers, "panic_suspend", None)
    if panic is not None:
        return str(panic(runtime, rec, reason))
    rec.suspend_request = {"reason": reason, "initiator": "triggered"}
    return "suspended"


def interrupt_and_suspend(dispatcher: Any, binding: Any, event: dict[str, Any]) -> Gen:
    """Executor of the ``interrupt_and_suspend`` variant (see the module docstring);
    a generator (the closure scope calls Harn).

    Raises:
        VariantError: a closure scope returned something other than nil or a list of
            strings.
    """
    from harnpy.lifecycle.services import services

    runtime = dispatcher.runtime
    cfg = binding.spec.handler.config
    live = binding.spec.handler.live
    scope_kind = cfg.get("scope_kind", "all")
    reason = cfg.get("reason") or "panic"
    if scope_kind == "all":
        ids = sorted(services(runtime).workers)
    elif scope_kind == "closure":
        value = yield CallRequest(live["target_agents"], [event])
        if value is None:
            ids = []
        elif type(value) is list:
            ids = []
            for item in value:
                if type(item) is not str:
                    raise VariantError(
                        f"trigger '{binding.id}': InterruptAndSuspend target closure list "
                        f"entries must be strings, got {type_name(item)}"
                    )
                if item.strip():
                    ids.append(item.strip())
        else:
            raise VariantError(
                f"trigger '{binding.id}': InterruptAndSuspend target closure must return a "
                f"list of worker-id strings or nil, got {type_name(value)}"
            )
    else:
        ids = list(cfg.get("targets") or [])
    base = {
        "trigger_id": binding.id,
        "binding_key": f"{binding.id}@v{binding.version}",
        "event_id": event.get("id"),
    }
    svc = services(runtime)
    per_worker: list[dict[str, Any]] = []
    suspended = 0
    for wid in ids:
        outcome = _suspend_one(runtime, wid, reason)
        if outcome == "suspended":
            suspended += 1
        svc.audit(
            AUDIT_KIND,
            {
                **base,
                "outcome": outcome,
                "scope_kind": scope_kind,
                "reason": reason,
                "worker_id": wid,
            },
        )
        per_worker.append({"worker_id": wid, "outcome": outcome})
    counts = {
        "target_count": len(ids),
        "suspended_count": suspended,
        "skipped_count": len(ids) - suspended,
    }
    svc.audit(
        AUDIT_KIND,
        {**base, "outcome": "broadcast", "scope_kind": scope_kind, "reason": reason, **counts},
    )
    out: dict[str, Any] = {"status": "broadcast", "scope_kind": scope_kind, **counts}
    out["reason"] = reason
    if ids:
        out["targets"] = per_worker
    return out


def _executor(dispatcher: Any, binding: Any, event: dict[str, Any]) -> Gen:
    from harnpy.runtime.errors import runtime_error

    try:
        return (yield from interrupt_and_suspend(dispatcher, binding, event))
    except VariantError as e:
        raise runtime_error(str(e)) from None


def install(runtime: Any) -> None:
    """Register the executor on the runtime's dispatcher (kept when already present)."""
    from harnpy.lifecycle.triggers import get_dispatcher

    get_dispatcher(runtime).variant_executors.setdefault("interrupt_and_suspend", _executor)


@builtin("__triggers_install_variants")
def triggers_install_variants(thread: Any, *args: Any) -> bool:
    """``__triggers_install_variants()``: make the trigger dispatcher able to run the
    ``interrupt_and_suspend`` handler variant (used by ``std/triggers``); returns true."""
    install(thread.runtime)
    return True


__all__ = ["AUDIT_KIND", "install", "interrupt_and_suspend"]
