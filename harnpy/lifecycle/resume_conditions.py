"""``agent_await_resumption`` and the park-request normalizer (lifecycle.md 2.11, 3.5).

ResumeConditions are validated by the one shared parser of the triggers package
(:func:`harnpy.lifecycle.triggers.conditions.parse_resume_conditions`, which is also the
``parse_resume_conditions`` builtin): ``HARN-SUS-002: invalid ResumeConditions.<path>:
<why>``. This module adds the blank-reason rule (``HARN-SUS-005``) and the
:class:`ConditionsError` view the agent loop uses to feed a rejected park back to the
model with the failing field path.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness
from harnpy.runtime.errors import HarnError, HarnRuntimeError
from harnpy.stdlib.registry import builtin

TIMEOUT_ACTIONS = ("resume_with_summary", "fail", "resume_with_input")
_INVALID = re.compile(r"^HARN-SUS-002: invalid ResumeConditions\.([^:]+): (.*)$", re.S)


class ConditionsError(HarnRuntimeError):
    """``HARN-SUS-002: invalid ResumeConditions.<path>: <why>``; ``path`` and ``why`` kept."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"HARN-SUS-002: invalid ResumeConditions.{path}: {why}", "E402")
        self.path = path
        self.why = why


def parse(conditions: Any) -> dict[str, Any] | None:
    """Validate and normalize ResumeConditions (table of lifecycle.md 4.1) with the shared
    trigger-package parser. Returns None for nil, else a new dict with only the present
    keys (``timeout`` always ``{duration_minutes, on_timeout}``).

    Raises:
        ConditionsError: the first violation, with its field path.
    """
    from harnpy.lifecycle.triggers.conditions import parse_resume_conditions

    try:
        return parse_resume_conditions(conditions)
    except HarnError as exc:
        m = _INVALID.match(exc.message)
        if m is None:
            raise
        raise ConditionsError(m.group(1), m.group(2)) from None


def await_request(reason: Any, conditions: Any = None, resume_by: Any = None) -> dict[str, Any]:
    """``{reason, conditions, resume_by}`` with ``reason`` trimmed and conditions parsed
    (the AgentAwaitResumptionRequest of lifecycle.md 3.5).

    Raises:
        HarnRuntimeError: ``HARN-SUS-005`` for a blank reason; ConditionsError.
    """
    text = reason.strip() if type(reason) is str else ""
    if not text:
        raise HarnRuntimeError(
            "HARN-SUS-005: agent_await_resumption: reason must be a non-empty string", "E405"
        )
    return {"reason": text, "conditions": parse(conditions), "resume_by": resume_by}


@builtin("agent_await_resumption")
def agent_await_resumption(thread: Any, *args: Any) -> dict[str, Any]:
    """``agent_await_resumption(reason, conditions?, resume_by?)``: the normalized
    AgentAwaitResumptionRequest ``{reason, conditions, resume_by}`` (lifecycle.md 2.11; a
    pure validator). Inside ``agent_loop`` the model-facing tool of the same name parks the
    loop instead (the loop intercepts it before tool dispatch).

    Raises:
        HarnRuntimeError: ``HARN-SUS-005`` (blank reason), ``HARN-SUS-002`` (conditions,
            with the failing field path).
    """
    from harnpy.lifecycle.models import AgentAwaitResumptionRequest, validate

    args = strip_harness(args)
    req = await_request(arg(args, 0), arg(args, 1), arg(args, 2))
    # boundary check of the shape (the parser already produced the normalized form)
    validate(AgentAwaitResumptionRequest, req, "agent_await_resumption request")
    return req
