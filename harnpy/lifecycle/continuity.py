"""What a resumed worker is told (lifecycle.md 8): resume input as text, the one-shot
``resume_continuity`` reminder and the payload the blocked ``__agent_park`` returns."""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.workers import (
    WorkerRecord,
)

RESUME_CONTINUITY = "resume_continuity"


def render_input(value: Any) -> str:
    """Resume input as text: strings as they are, other values as JSON."""
    if type(value) is str:
        return value
    from harnpy.stdlib.jsonlib import dumps

    return dumps(value)


def check_input(value: Any) -> str | None:
    """The resume input as text, None for nil.

    Raises:
        HarnRuntimeError: ``HARN-SUS-009`` for blank text.
    """
    if value is None:
        return None
    text = render_input(value)
    if not text.strip():
        raise sus_error(9, "resume_agent: resume input must be nil or non-empty text")
    return text


def _collapse(text: str) -> str:
    return " ".join(text.split())


def continuity_reminder(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """The one-shot ``resume_continuity`` system reminder of lifecycle.md 8."""
    turn = sus.get("suspended_at_turn")
    if type(turn) is not int:
        prev = rec.result if type(rec.result) is dict else {}
        turn = prev.get("iterations_completed") or prev.get("iterations") or 0
    reason = _collapse(str(sus.get("reason") or "")) or "unspecified"
    if initiator == "parent":
        cause = "You have been resumed by your parent agent"
    elif initiator == "timeout":
        cause = "Your timeout elapsed; resuming with summary"
    elif initiator == "triggered":
        tinfo = trigger_info or {}
        cause = (
            f"You have been resumed by trigger {tinfo.get('id') or 'unknown'} matching event "
            f"{tinfo.get('event_id') or 'unknown'}"
        )
    else:
        cause = "You have been resumed by the operator"
    if input_text is not None:
        rendered = _collapse(input_text) or "<unrenderable input>"
        input_part = f"The resumer provided input: {rendered}"
    else:
        input_part = "No input was provided"
    body = f"You were suspended at turn {turn} for reason: '{reason}'. {cause}. {input_part}."
    if not continue_transcript and digest:
        body += f" Pre-suspend conversation digest: {digest}"
    return {
        "body": body,
        "dedupe_key": RESUME_CONTINUITY,
        "tags": [RESUME_CONTINUITY],
        "ttl_turns": 1,
        "preserve_on_compact": True,
        "propagate": "none",
        "role_hint": "system",
        "fired_at_turn": 0,
        "source": RESUME_CONTINUITY,
    }


def _continuity_payload(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_value: Any,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """``options._resume_continuity`` (lifecycle.md 8)."""
    resume = {
        "initiator": initiator,
        "input": input_value,
        "input_rendered": input_text,
        "input_present": input_text is not None,
        "continue_transcript": continue_transcript,
        "digest": digest,
        "trigger": trigger_info,
    }
    return {
        "session_id": rec.session_id,
        "session": {"id": rec.session_id},
        "worker": {"id": rec.id, "name": rec.name, "mode": rec.mode},
        "suspension": {
            k: sus.get(k)
            for k in (
                "reason",
                "initiator",
                "suspended_at",
                "snapshot_ref",
                "suspended_at_turn",
                "conditions",
            )
        },
        "reason": sus.get("reason"),
        "suspended_at_turn": sus.get("suspended_at_turn") or 0,
        "resume": resume,
        **{k: v for k, v in resume.items() if k != "trigger"},
        "turn": 0,
        "iteration": 0,
    }


def resume_payload(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_value: Any,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """What the blocked ``__agent_park`` returns on resume (see ``__agent_apply_resume``):
    the continuity reminder (sub_agent / top_level_agent workers with reminders enabled),
    the input as a user message otherwise, and the replacement transcript when
    ``continue_transcript`` is false (one user message holding the digest)."""
    from harnpy.lifecycle.transcript import new_transcript

    # ``input`` is the resume input as given: a worker parked on a human wait (hitl.py)
    # takes its answer from it; __agent_apply_resume ignores it
    payload: dict[str, Any] = {"reminders": [], "messages": [], "input": input_value}
    if not continue_transcript:
        if digest:
            payload["transcript"] = new_transcript(
                messages=[{"role": "user", "content": digest}], summary=digest
            )
        else:
            payload["transcript"] = new_transcript()
    reminders = getattr(rec, "reminders_enabled", True) and rec.mode in (
        "sub_agent",
        "top_level_agent",
    )
    if reminders:
        payload["reminders"].append(
            continuity_reminder(
                rec,
                sus,
                input_text=input_text,
                continue_transcript=continue_transcript,
                initiator=initiator,
                trigger_info=trigger_info,
                digest=digest,
            )
        )
        cont = _continuity_payload(
            rec,
            sus,
            input_value=input_value,
            input_text=input_text,
            continue_transcript=continue_transcript,
            initiator=initiator,
            trigger_info=trigger_info,
            digest=digest,
        )
        spec = rec.config.get("spec") if type(rec.config) is dict else None
        if type(spec) is dict:
            options = dict(spec.get("options") or {})
            options["_resume_continuity"] = cont
            rec.config = {**rec.config, "spec": {**spec, "options": options}}
    elif input_text is not None:
        payload["messages"].append({"role": "user", "content": input_text})
    return payload
