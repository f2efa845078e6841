"""``parse_resume_conditions`` and ``agent_await_resumption`` (lifecycle.md 2.11, 2.12, 4.1).

Both are pure validators: they normalize a model's (or a script's) park request and raise
``HARN-SUS-002`` (conditions) / ``HARN-SUS-005`` (blank reason) runtime errors whose
message starts with the code. The agent loop calls :func:`parse` when the model issues the
``agent_await_resumption`` tool and feeds a failure back to the model as the tool result.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness
from harnpy.runtime.errors import HarnRuntimeError
from harnpy.runtime.values import type_name
from harnpy.stdlib.registry import builtin

TIMEOUT_ACTIONS = ("resume_with_summary", "fail", "resume_with_input")
_TOPIC = re.compile(r"^[A-Za-z0-9_.:/\-]+$")


class ConditionsError(HarnRuntimeError):
    """``HARN-SUS-002: invalid ResumeConditions.<path>: <why>``; ``path`` and ``why`` kept."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"HARN-SUS-002: invalid ResumeConditions.{path}: {why}", "E410")
        self.path = path
        self.why = why


def _tname(v: Any) -> str:
    return type_name(v)


def parse_trigger(trigger: dict[str, Any]) -> dict[str, Any]:
    """Minimal trigger-spec check (lifecycle.md 4.3): ``kind`` and ``provider`` strings.

    Raises:
        ValueError: the parser message.
    """
    for key in ("kind", "provider"):
        v = trigger.get(key)
        if v is None:
            raise ValueError(f"missing required field `{key}`")
        if type(v) is not str or not v.strip():
            raise ValueError(f"`{key}` must be a non-empty string")
    return dict(trigger)


def parse(conditions: Any) -> dict[str, Any] | None:
    """Validate and normalize ResumeConditions (table of lifecycle.md 4.1).

    Returns None for nil, else a new dict with only the present keys (``timeout`` always
    ``{duration_minutes, on_timeout}``).

    Raises:
        ConditionsError: the first violation, with its field path.
    """
    if conditions is None:
        return None
    if type(conditions) is not dict:
        raise ConditionsError("root", f"expected dict or nil, got {_tname(conditions)}")
    for key in conditions:
        if key not in ("trigger", "timeout", "on_event"):
            raise ConditionsError(key, "unknown field; expected trigger, timeout, or on_event")
    out: dict[str, Any] = {}
    trigger = conditions.get("trigger")
    if trigger is not None:
        if type(trigger) is not dict:
            raise ConditionsError("trigger", f"expected dict or nil, got {_tname(trigger)}")
        try:
            out["trigger"] = parse_trigger(trigger)
        except ValueError as exc:
            raise ConditionsError("trigger", str(exc)) from None
    timeout = conditions.get("timeout")
    if timeout is not None:
        if type(timeout) is not dict:
            raise ConditionsError("timeout", f"expected dict or nil, got {_tname(timeout)}")
        for key in timeout:
            if key not in ("duration_minutes", "on_timeout"):
                raise ConditionsError(
                    f"timeout.{key}", "unknown field; expected duration_minutes or on_timeout"
                )
        minutes = timeout.get("duration_minutes")
        if type(minutes) is not int or minutes <= 0:
            raise ConditionsError("timeout.duration_minutes", "must be a positive int")
        action = timeout.get("on_timeout")
        if action is None:
            action = "resume_with_summary"
        elif type(action) is not str:
            raise ConditionsError("timeout.on_timeout", f"expected string, got {_tname(action)}")
        elif action not in TIMEOUT_ACTIONS:
            raise ConditionsError(
                "timeout.on_timeout",
                f"unsupported action `{action}`; expected one of: " + ", ".join(TIMEOUT_ACTIONS),
            )
        out["timeout"] = {"duration_minutes": minutes, "on_timeout": action}
    on_event = conditions.get("on_event")
    if on_event is not None:
        if type(on_event) is not str:
            raise ConditionsError("on_event", f"expected string or nil, got {_tname(on_event)}")
        topic = on_event.strip()
        if not topic:
            raise ConditionsError("on_event", "must be a non-empty string")
        if not _TOPIC.match(topic):
            raise ConditionsError("on_event", f"`{topic}` is not a valid event topic name")
        out["on_event"] = topic
    return out


def await_request(reason: Any, conditions: Any = None, resume_by: Any = None) -> dict[str, Any]:
    """``{reason, conditions, resume_by}`` with ``reason`` trimmed and conditions parsed.

    Raises:
        HarnRuntimeError: ``HARN-SUS-005`` for a blank reason; ConditionsError.
    """
    text = reason.strip() if type(reason) is str else ""
    if not text:
        raise HarnRuntimeError(
            "HARN-SUS-005: agent_await_resumption: reason must be a non-empty string", "E410"
        )
    return {"reason": text, "conditions": parse(conditions), "resume_by": resume_by}


@builtin("parse_resume_conditions")
def parse_resume_conditions(thread: Any, *args: Any) -> Any:
    """``parse_resume_conditions(conditions?)``: the normalized ResumeConditions or nil;
    throws ``HARN-SUS-002: invalid ResumeConditions.<path>: <why>``."""
    return parse(arg(strip_harness(args), 0))


@builtin("agent_await_resumption")
def agent_await_resumption(thread: Any, *args: Any) -> dict[str, Any]:
    """``agent_await_resumption(reason, conditions?, resume_by?)``: the normalized
    AgentAwaitResumptionRequest ``{reason, conditions, resume_by}`` (lifecycle.md 2.11).
    Inside ``agent_loop`` the model-facing tool of the same name parks the loop instead."""
    args = strip_harness(args)
    return await_request(arg(args, 0), arg(args, 1), arg(args, 2))
