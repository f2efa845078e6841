"""``ResumeConditions``: the pure validator and the raw suspend-path parser.

Spec: lifecycle.md §4.1 (``parse_resume_conditions``: always ``HARN-SUS-002`` with the field
path), §4.2 (raw suspend path: ``HARN-SUS-002`` for shape and duration, ``HARN-SUS-007`` for
the trigger spec, ``HARN-SUS-008`` for ``on_timeout``), §3.4 (shapes), §13 Q4 and Q8.

harnpy limit (not in the spec): ``timeout.duration_minutes`` is at most
:data:`MAX_TIMEOUT_MINUTES` (100 years), ``HARN-SUS-002`` with the field path on both paths.

Both paths share the one trigger-spec parser (:func:`~harnpy.lifecycle.triggers.spec.
parse_trigger_spec`) with the resume handler injected, so a trigger that
``trigger_register`` would reject is rejected here too (including cron schedules that can
never fire, e.g. 31 February).

harnpy difference (documented, §13 Q4/§4.5): the raw path also wires ``on_event`` — a wait
is registered when the conditions have a ``trigger`` *or* an ``on_event`` topic, and
``emit_event(topic, payload)`` wakes it. A ``timeout`` with neither is not armed (parity
with the reference); :func:`ignored_timeout_warning` gives the warning text to log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnpy.runtime.errors import HarnError, plain_error

TIMEOUT_ACTIONS = ("resume_with_summary", "fail", "resume_with_input")
DEFAULT_TIMEOUT_ACTION = "resume_with_summary"

#: The longest ``timeout.duration_minutes`` accepted: 100 years (of 365 days). harnpy limit,
#: not in the spec: a deadline must stay a representable instant (the store keeps it as
#: 64-bit epoch milliseconds and ``harnpy workers`` shows it as a date).
MAX_TIMEOUT_MINUTES = 100 * 365 * 24 * 60


def sus_error(code: int, message: str) -> HarnError:
    """The lifecycle diagnostic ``HARN-SUS-<code>: <message>`` (error code ``E4<code>``)."""
    return plain_error(f"HARN-SUS-{code:03d}: {message}", f"E4{code:02d}")


def _invalid(path: str, why: str) -> HarnError:
    return sus_error(2, f"invalid ResumeConditions.{path}: {why}")


def _tn(v: Any) -> str:
    from harnpy.runtime.values import type_name

    return type_name(v)


def _parse_trigger(value: Any) -> dict[str, Any]:
    """Validate a trigger dict with the shared parser; return its JSON-able copy."""
    from harnpy.lifecycle.triggers.spec import (
        RESUME_HANDLER_URI,
        TriggerSpecError,
        jsonable,
        parse_trigger_spec,
    )

    try:
        parse_trigger_spec(value, default_handler=RESUME_HANDLER_URI)
    except TriggerSpecError as e:
        raise _invalid("trigger", str(e)) from None
    return jsonable(value)


def _duration(value: dict[str, Any]) -> int:
    """``timeout.duration_minutes``: a positive int of at most :data:`MAX_TIMEOUT_MINUTES`
    (``HARN-SUS-002`` on both the validator and the raw suspend path)."""
    duration = value.get("duration_minutes")
    if type(duration) is not int or duration <= 0:
        raise _invalid("timeout.duration_minutes", "must be a positive int")
    if duration > MAX_TIMEOUT_MINUTES:
        raise _invalid(
            "timeout.duration_minutes",
            f"must be at most {MAX_TIMEOUT_MINUTES} (100 years), got {duration}",
        )
    return duration


def _parse_timeout(value: Any) -> dict[str, Any]:
    for key in value:
        if key not in ("duration_minutes", "on_timeout"):
            raise _invalid(
                f"timeout.{key}", "unknown field; expected duration_minutes or on_timeout"
            )
    duration = _duration(value)
    action = value.get("on_timeout")
    if action is None:
        action = DEFAULT_TIMEOUT_ACTION
    elif type(action) is str:
        if action not in TIMEOUT_ACTIONS:
            raise _invalid(
                "timeout.on_timeout",
                f"unsupported action `{action}`; expected one of: {', '.join(TIMEOUT_ACTIONS)}",
            )
    else:
        raise _invalid("timeout.on_timeout", f"expected string, got {_tn(action)}")
    return {"duration_minutes": duration, "on_timeout": action}


def _parse_on_event(value: Any) -> str:
    from harnpy.lifecycle.triggers.spec import validate_topic

    if type(value) is not str:
        raise _invalid("on_event", f"expected string or nil, got {_tn(value)}")
    topic = value.strip()
    if not topic:
        raise _invalid("on_event", "must be a non-empty string")
    why = validate_topic(topic)
    if why is not None:
        raise _invalid("on_event", f"invalid runtime event channel: {why}")
    return topic


def parse_resume_conditions(value: Any = None) -> dict[str, Any] | None:
    """``parse_resume_conditions(conditions?)`` (§4.1): nil -> nil, else a new dict with only
    the present keys (``trigger`` as given, ``timeout`` as ``{duration_minutes,
    on_timeout}`` with the default action filled in, ``on_event`` trimmed).

    Raises:
        HarnError: ``HARN-SUS-002: invalid ResumeConditions.<path>: <why>``.
    """
    if value is None:
        return None
    if type(value) is not dict:
        raise _invalid("root", f"expected dict or nil, got {_tn(value)}")
    for key in value:
        if key not in ("trigger", "timeout", "on_event"):
            raise _invalid(key, "unknown field; expected trigger, timeout, or on_event")
    out: dict[str, Any] = {}
    trigger = value.get("trigger")
    if trigger is not None:
        if type(trigger) is not dict:
            raise _invalid("trigger", f"expected dict or nil, got {_tn(trigger)}")
        out["trigger"] = _parse_trigger(trigger)
    timeout = value.get("timeout")
    if timeout is not None:
        if type(timeout) is not dict:
            raise _invalid("timeout", f"expected dict or nil, got {_tn(timeout)}")
        out["timeout"] = _parse_timeout(timeout)
    on_event = value.get("on_event")
    if on_event is not None:
        out["on_event"] = _parse_on_event(on_event)
    return out


@dataclass
class WaitConditions:
    """Conditions of one registrable wait (raw suspend path, §4.2).

    ``trigger`` is the parsed :class:`~harnpy.lifecycle.triggers.spec.TriggerSpec` (with the
    resume handler) or None for an ``on_event``-only wait; ``trigger_config`` its JSON form
    as given; ``timeout`` ``{duration_minutes, on_timeout}`` or None; ``on_event`` the topic
    or None; ``raw`` the JSON-able conditions as given (stored with the wait).
    """

    trigger: Any
    trigger_config: dict[str, Any] | None
    timeout: dict[str, Any] | None
    on_event: str | None
    raw: dict[str, Any]

    def match_events(self) -> list[str]:
        """Event kinds the trigger listens to (``match.events`` or ``[kind]``); [] if none."""
        return self.trigger.events() if self.trigger is not None else []

    def to_json(self) -> dict[str, Any]:
        """JSON-able normalized conditions (what the store persists)."""
        out: dict[str, Any] = {}
        if self.trigger_config is not None:
            out["trigger"] = self.trigger_config
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.on_event is not None:
            out["on_event"] = self.on_event
        return out


def parse_wait_conditions(conditions: Any) -> WaitConditions | None:
    """Parse conditions on the raw suspend path (§4.2); None when nothing is registered
    (not a dict, or neither ``trigger`` nor ``on_event``: an open park).

    Raises:
        HarnError: ``HARN-SUS-002`` (trigger not a dict, timeout not a dict, bad duration,
            bad ``on_event``), ``HARN-SUS-007`` (trigger spec rejected by the parser),
            ``HARN-SUS-008`` (unsupported or non-string ``on_timeout``).
    """
    from harnpy.lifecycle.triggers.spec import (
        RESUME_HANDLER_URI,
        TriggerSpecError,
        jsonable,
        parse_trigger_spec,
    )

    if type(conditions) is not dict:
        return None
    trigger = conditions.get("trigger")
    on_event_value = conditions.get("on_event")
    if trigger is None and on_event_value is None:
        return None
    spec = None
    trigger_config = None
    if trigger is not None:
        if type(trigger) is not dict:
            raise _invalid("trigger", f"expected dict or nil, got {_tn(trigger)}")
        try:
            spec = parse_trigger_spec(trigger, default_handler=RESUME_HANDLER_URI)
        except TriggerSpecError as e:
            raise sus_error(
                7, f"auto_resume: failed to parse conditions.trigger for registration: {e}"
            ) from None
        trigger_config = jsonable(trigger)
    timeout = _raw_timeout(conditions.get("timeout"))
    on_event = _parse_on_event(on_event_value) if on_event_value is not None else None
    wc = WaitConditions(spec, trigger_config, timeout, on_event, {})
    wc.raw = jsonable(conditions)
    return wc


def _raw_timeout(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise _invalid("timeout", f"expected dict or nil, got {_tn(value)}")
    duration = _duration(value)
    action = value.get("on_timeout")
    if action is None:
        action = DEFAULT_TIMEOUT_ACTION
    elif type(action) is str:
        if action not in TIMEOUT_ACTIONS:
            raise sus_error(
                8,
                f"auto_resume: unsupported conditions.timeout.on_timeout `{action}`; expected "
                "resume_with_summary, resume_with_input, or fail",
            )
    else:
        raise sus_error(
            8,
            "auto_resume: conditions.timeout.on_timeout must be resume_with_summary, "
            f"resume_with_input, or fail; got {_tn(action)}",
        )
    return {"duration_minutes": duration, "on_timeout": action}


def ignored_timeout_warning(conditions: Any) -> str | None:
    """The warning to log when ``conditions`` has a ``timeout`` but neither a ``trigger`` nor
    an ``on_event`` (the timeout is not armed, §13 Q4); None otherwise."""
    if type(conditions) is not dict or conditions.get("timeout") is None:
        return None
    if conditions.get("trigger") is not None or conditions.get("on_event") is not None:
        return None
    return (
        "harnpy: warning: ResumeConditions.timeout without a trigger or on_event is not armed "
        "(timeouts are scheduled with a registered trigger); the worker is parked open"
    )
