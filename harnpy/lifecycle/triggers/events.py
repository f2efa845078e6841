"""Trigger events as data: the envelope every event gets (:func:`normalize_event`), the
events of timeouts and cron ticks, the resume request built from a fired wait, and the
small helpers of dispatch handles (lifecycle.md §4.3-4.5).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.triggers._util import rfc3339, uuid7
from harnpy.lifecycle.triggers.bindings import (
    ResumeRequest,
)


def build_resume_request(
    wait_id: str,
    version: int,
    worker_id: str,
    snapshot_path: str | None,
    on_timeout: str | None,
    cause: str,
    event: dict[str, Any] | None,
    manual_input: Any = None,
    *,
    park_id: str | None = None,
) -> ResumeRequest:
    """The resume request for a wait firing because of ``cause`` (lifecycle.md §4.4):

    * ``trigger`` / ``event`` / ``cron``: input = ``event.provider_payload.raw`` (else the
      provider payload), ``continue_transcript`` true, initiator ``triggered``;
    * ``timeout`` with ``on_timeout``: ``fail`` -> action ``fail``; ``resume_with_summary``
      -> no input, ``continue_transcript`` false, initiator ``timeout``;
      ``resume_with_input`` -> the raw timeout record as input, initiator ``triggered``;
    * ``manual`` (``harnpy workers resume``): ``manual_input``, initiator ``operator``.
    """
    req = ResumeRequest(
        wait_id,
        version,
        worker_id,
        cause=cause,
        trigger_event=event,
        snapshot_path=snapshot_path,
        park_id=park_id,
    )
    payload = (event or {}).get("provider_payload")
    raw = payload.get("raw") if isinstance(payload, dict) else None
    if cause == "manual":
        req.initiator = "operator"
        req.input = manual_input
        return req
    if cause == "timeout":
        action = on_timeout or "resume_with_summary"
        req.timeout_action = action
        if action == "fail":
            req.action = "fail"
            req.initiator = "timeout"
        elif action == "resume_with_input":
            req.initiator = "triggered"
            req.input = raw
        else:
            req.initiator = "timeout"
            req.continue_transcript = False
        return req
    req.input = raw if raw is not None else payload
    return req


def timeout_event(
    wait_id: str, worker_id: str, on_timeout: str | None, deadline_ms: int | None, now_ms: int
) -> dict[str, Any]:
    """The synthetic ``harn`` / ``auto_resume.timeout`` event of a timeout (§4.4)."""
    raw = {
        "type": "auto_resume.timeout",
        "worker_id": worker_id,
        "trigger_id": wait_id,
        "on_timeout": on_timeout or "resume_with_summary",
    }
    return {
        "id": f"auto_resume_timeout:{wait_id}:{uuid7(now_ms)}",
        "provider": "harn",
        "kind": "auto_resume.timeout",
        "received_at": rfc3339(now_ms),
        "occurred_at": rfc3339(deadline_ms if deadline_ms is not None else now_ms),
        "dedupe_key": f"auto_resume_timeout:{wait_id}",
        "headers": {},
        "signature_status": {"state": "unsigned"},
        "provider_payload": {"provider": "harn", "schema_name": "AutoResumeTimeout", "raw": raw},
    }


def cron_tick_event(
    binding_id: str,
    provider: str,
    kind: str,
    schedule: str,
    timezone: str,
    tick_ms: int,
    due: list[int],
    now_ms: int,
) -> dict[str, Any]:
    """The event of a (possibly coalesced) cron tick: ``provider_payload.raw`` carries
    ``tick_at`` (the latest due tick), ``first_due_at``, ``coalesced`` and
    ``missed_ticks``."""
    raw = {
        "type": "cron.tick",
        "cron_id": binding_id,
        "schedule": schedule,
        "timezone": timezone,
        "tick_at": rfc3339(tick_ms),
        "tick_at_ms": tick_ms,
        "first_due_at": rfc3339(due[0] if due else tick_ms),
        "coalesced": len(due) if due else 1,
        "missed_ticks": max(0, len(due) - 1),
    }
    return {
        "id": f"cron_tick:{binding_id}:{tick_ms}",
        "provider": provider,
        "kind": kind,
        "received_at": rfc3339(now_ms),
        "occurred_at": rfc3339(tick_ms),
        "dedupe_key": f"cron:{binding_id}:{tick_ms}",
        "headers": {},
        "signature_status": {"state": "unsigned"},
        "provider_payload": {
            "provider": "cron",
            "cron_id": binding_id,
            "schedule": schedule,
            "tick_at": rfc3339(tick_ms),
            "raw": raw,
        },
    }


class _DispatchFailure(Exception):
    """A dispatch that fails without a Harn error (reported in the dispatch handle)."""


def _error_text(e: Any) -> str:
    """A handler error as text: a thrown string as-is, other thrown values displayed, runtime
    errors by message."""
    from harnpy.runtime.errors import HarnThrow

    if isinstance(e, HarnThrow):
        v = e.value
        if type(v) is str:
            return v
        from harnpy.runtime.display import display

        return display(v)
    return str(getattr(e, "message", e))


def _truthy(v: Any) -> bool:
    from harnpy.runtime.ops import truthy

    return bool(truthy(v))


def _handle_parts(handle: Any, builtin: str) -> tuple[str, int | None]:
    if type(handle) is str:
        return handle, None
    if type(handle) is dict:
        tid = handle.get("id")
        if type(tid) is not str:
            raise ValueError(f"{builtin}: trigger handle is missing string field `id`")
        version = handle.get("version")
        return tid, version if type(version) is int else None
    if handle is None:
        raise ValueError(f"{builtin}: missing trigger handle")
    from harnpy.runtime.values import type_name

    raise ValueError(
        f"{builtin}: expected trigger handle dict or id string, got {type_name(handle)}"
    )


def _default_provider_payload(provider: str, kind: str, raw: Any, now: int) -> dict[str, Any]:
    if provider == "webhook":
        return {
            "provider": "webhook",
            "source": "trigger_fire",
            "content_type": "application/json",
            "raw": raw,
        }
    if provider == "github":
        return {
            "provider": "github",
            "event": kind,
            "action": None,
            "delivery_id": None,
            "installation_id": None,
            "raw": raw,
        }
    if provider == "cron":
        return {
            "provider": "cron",
            "cron_id": None,
            "schedule": None,
            "tick_at": rfc3339(now),
            "raw": raw,
        }
    return {"provider": provider, "event": kind, "raw": raw}


def normalize_event(raw: Any, now: int, *, builtin: str = "trigger_fire") -> dict[str, Any]:
    """Fill the trigger-event envelope of ``raw`` (``id``, ``received_at``, ``dedupe_key``,
    ``trace_id``, ``headers``, ``signature_status``, ``provider_payload`` with ``raw``) at
    time ``now`` (epoch ms); ``builtin`` names the caller in errors.

    Raises:
        ValueError: not a dict, or ``provider`` / ``kind`` missing.
    """
    from harnpy.lifecycle.triggers.spec import jsonable

    if type(raw) is not dict:
        raise ValueError(f"{builtin}: trigger event must be a dict-like value")
    provider = raw.get("provider")
    kind = raw.get("kind")
    if type(provider) is not str:
        raise ValueError(f"{builtin}: trigger event is missing string field `provider`")
    if type(kind) is not str:
        raise ValueError(f"{builtin}: trigger event is missing string field `kind`")
    ev = dict(raw)
    ev.setdefault("id", f"trigger_evt_{uuid7(now)}")
    ev.setdefault("received_at", rfc3339(now))
    ev.setdefault("occurred_at", None)
    ev.setdefault("dedupe_key", f"synthetic:{provider}:{kind}:{uuid7(now)}")
    ev.setdefault("trace_id", f"trace_{uuid7(now)}")
    ev.setdefault("tenant_id", None)
    ev.setdefault("headers", {})
    ev.setdefault("signature_status", {"state": "unsigned"})
    if "provider_payload" not in ev:
        ev["provider_payload"] = _default_provider_payload(provider, kind, jsonable(raw), now)
    return ev
