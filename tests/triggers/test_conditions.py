"""Table tests: ``parse_resume_conditions`` (lifecycle.md §4.1) and the raw suspend path
(§4.2) — results, error codes and messages with their field paths."""

from __future__ import annotations

from typing import Any

import pytest

from harnpy.lifecycle.triggers.conditions import (
    ignored_timeout_warning,
    parse_resume_conditions,
    parse_wait_conditions,
)
from harnpy.runtime.errors import HarnError

GH = {"kind": "review.approved", "provider": "github"}

# (conditions, expected result) — §4.1 rows that succeed
OK_ROWS: list[tuple[str, Any, Any]] = [
    ("nil", None, None),
    ("empty dict (open park)", {}, {}),
    ("trigger nil dropped", {"trigger": None}, {}),
    ("timeout nil dropped", {"timeout": None}, {}),
    ("on_event nil dropped", {"on_event": None}, {}),
    ("trigger kept", {"trigger": GH}, {"trigger": GH}),
    (
        "on_timeout default filled",
        {"timeout": {"duration_minutes": 5}},
        {"timeout": {"duration_minutes": 5, "on_timeout": "resume_with_summary"}},
    ),
    (
        "on_timeout nil -> default",
        {"timeout": {"duration_minutes": 1, "on_timeout": None}},
        {"timeout": {"duration_minutes": 1, "on_timeout": "resume_with_summary"}},
    ),
    (
        "on_timeout fail",
        {"timeout": {"duration_minutes": 2, "on_timeout": "fail"}},
        {"timeout": {"duration_minutes": 2, "on_timeout": "fail"}},
    ),
    (
        "on_timeout resume_with_input",
        {"timeout": {"duration_minutes": 2, "on_timeout": "resume_with_input"}},
        {"timeout": {"duration_minutes": 2, "on_timeout": "resume_with_input"}},
    ),
    ("on_event trimmed", {"on_event": "  build.done "}, {"on_event": "build.done"}),
    (
        "all three",
        {"trigger": GH, "timeout": {"duration_minutes": 3}, "on_event": "ci.green"},
        {
            "trigger": GH,
            "timeout": {"duration_minutes": 3, "on_timeout": "resume_with_summary"},
            "on_event": "ci.green",
        },
    ),
    (
        "cron trigger",
        {"trigger": {"kind": "cron", "provider": "cron", "schedule": "30 2 * * *"}},
        {"trigger": {"kind": "cron", "provider": "cron", "schedule": "30 2 * * *"}},
    ),
]


@pytest.mark.parametrize(("name", "value", "expected"), OK_ROWS, ids=[r[0] for r in OK_ROWS])
def test_parse_resume_conditions_ok(name: str, value: Any, expected: Any) -> None:
    assert parse_resume_conditions(value) == expected


def test_parse_resume_conditions_returns_new_dict() -> None:
    value = {"timeout": {"duration_minutes": 5}}
    out = parse_resume_conditions(value)
    assert out is not value
    assert value == {"timeout": {"duration_minutes": 5}}  # input unchanged


# (conditions, path, why) — §4.1 rows that fail, always HARN-SUS-002
ERR_ROWS: list[tuple[str, Any, str, str]] = [
    ("root string", "soon", "root", "expected dict or nil, got string"),
    ("root list", [1], "root", "expected dict or nil, got list"),
    ("root int", 3, "root", "expected dict or nil, got int"),
    (
        "unknown top key",
        {"when": 1},
        "when",
        "unknown field; expected trigger, timeout, or on_event",
    ),
    ("trigger not dict", {"trigger": "github"}, "trigger", "expected dict or nil, got string"),
    (
        "trigger missing kind",
        {"trigger": {"provider": "github"}},
        "trigger",
        "trigger_register: missing string field `kind`",
    ),
    (
        "trigger missing provider",
        {"trigger": {"kind": "x"}},
        "trigger",
        "trigger_register: missing string field `provider`",
    ),
    (
        "trigger impossible cron",
        {"trigger": {"kind": "cron", "provider": "cron", "schedule": "0 0 31 2 *"}},
        "trigger",
        "trigger_register: invalid cron trigger: schedule `0 0 31 2 *` can never fire",
    ),
    (
        "trigger bad handler",
        {"trigger": {**GH, "handler": "http://x"}},
        "trigger",
        "trigger_register: `handler` string must use `a2a://` or `worker://` URI syntax",
    ),
    ("timeout not dict", {"timeout": 5}, "timeout", "expected dict or nil, got int"),
    (
        "timeout extra key",
        {"timeout": {"duration_minutes": 5, "retries": 2}},
        "timeout.retries",
        "unknown field; expected duration_minutes or on_timeout",
    ),
    (
        "duration missing",
        {"timeout": {}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "duration float",
        {"timeout": {"duration_minutes": 1.5}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "duration string",
        {"timeout": {"duration_minutes": "5"}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "duration bool",
        {"timeout": {"duration_minutes": True}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "duration zero",
        {"timeout": {"duration_minutes": 0}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "duration negative",
        {"timeout": {"duration_minutes": -3}},
        "timeout.duration_minutes",
        "must be a positive int",
    ),
    (
        "on_timeout unknown",
        {"timeout": {"duration_minutes": 5, "on_timeout": "retry"}},
        "timeout.on_timeout",
        "unsupported action `retry`; expected one of: resume_with_summary, fail, resume_with_input",
    ),
    (
        "on_timeout non-string",
        {"timeout": {"duration_minutes": 5, "on_timeout": 1}},
        "timeout.on_timeout",
        "expected string, got int",
    ),
    ("on_event blank", {"on_event": "   "}, "on_event", "must be a non-empty string"),
    ("on_event empty", {"on_event": ""}, "on_event", "must be a non-empty string"),
    (
        "on_event bad topic",
        {"on_event": "build done"},
        "on_event",
        "invalid runtime event channel: topic 'build done' contains unsupported characters",
    ),
    ("on_event non-string", {"on_event": 7}, "on_event", "expected string or nil, got int"),
]


@pytest.mark.parametrize(("name", "value", "path", "why"), ERR_ROWS, ids=[r[0] for r in ERR_ROWS])
def test_parse_resume_conditions_errors(name: str, value: Any, path: str, why: str) -> None:
    with pytest.raises(HarnError) as ei:
        parse_resume_conditions(value)
    msg = ei.value.message
    assert msg.startswith(f"HARN-SUS-002: invalid ResumeConditions.{path}: "), msg
    assert why in msg


# ---------------------------------------------------------------- raw suspend path (§4.2)

RAW_NONE: list[tuple[str, Any]] = [
    ("nil", None),
    ("not a dict", "later"),
    ("no trigger", {}),
    ("trigger nil", {"trigger": None}),
    # timeouts are armed only with a registered trigger (or on_event in harnpy): not even
    # validated when there is nothing to register (reference behaviour)
    ("timeout alone", {"timeout": {"duration_minutes": 5}}),
    ("bad timeout alone", {"timeout": {"duration_minutes": -1, "on_timeout": "x"}}),
]


@pytest.mark.parametrize(("name", "value"), RAW_NONE, ids=[r[0] for r in RAW_NONE])
def test_raw_path_registers_nothing(name: str, value: Any) -> None:
    assert parse_wait_conditions(value) is None


def test_raw_path_timeout_alone_warns() -> None:
    assert "not armed" in (ignored_timeout_warning({"timeout": {"duration_minutes": 5}}) or "")
    assert ignored_timeout_warning({"trigger": GH, "timeout": {"duration_minutes": 5}}) is None
    assert ignored_timeout_warning({"on_event": "x", "timeout": {"duration_minutes": 5}}) is None


RAW_ERR: list[tuple[str, Any, int, str]] = [
    (
        "trigger not dict",
        {"trigger": 3},
        2,
        "invalid ResumeConditions.trigger: expected dict or nil, got int",
    ),
    (
        "trigger missing kind",
        {"trigger": {"provider": "github"}},
        7,
        "auto_resume: failed to parse conditions.trigger for registration: "
        "trigger_register: missing string field `kind`",
    ),
    (
        "impossible cron (31 February)",
        {"trigger": {"kind": "cron", "provider": "cron", "schedule": "0 9 31 2 *"}},
        7,
        "auto_resume: failed to parse conditions.trigger for registration: trigger_register: "
        "invalid cron trigger: schedule `0 9 31 2 *` can never fire",
    ),
    (
        "cron offset timezone",
        {
            "trigger": {
                "kind": "cron",
                "provider": "cron",
                "schedule": "0 9 * * *",
                "timezone": "+02:00",
            }
        },
        7,
        "timezone `+02:00` is an offset literal",
    ),
    (
        "timeout not dict",
        {"trigger": GH, "timeout": "5m"},
        2,
        "invalid ResumeConditions.timeout: expected dict or nil, got string",
    ),
    (
        "bad duration",
        {"trigger": GH, "timeout": {"duration_minutes": 0}},
        2,
        "invalid ResumeConditions.timeout.duration_minutes: must be a positive int",
    ),
    (
        "unknown on_timeout",
        {"trigger": GH, "timeout": {"duration_minutes": 5, "on_timeout": "retry"}},
        8,
        "auto_resume: unsupported conditions.timeout.on_timeout `retry`; expected "
        "resume_with_summary, resume_with_input, or fail",
    ),
    (
        "non-string on_timeout",
        {"trigger": GH, "timeout": {"duration_minutes": 5, "on_timeout": True}},
        8,
        "auto_resume: conditions.timeout.on_timeout must be resume_with_summary, "
        "resume_with_input, or fail; got bool",
    ),
    (
        "bad on_event topic",
        {"on_event": "a b"},
        2,
        "invalid ResumeConditions.on_event: invalid runtime event channel",
    ),
]


@pytest.mark.parametrize(("name", "value", "code", "text"), RAW_ERR, ids=[r[0] for r in RAW_ERR])
def test_raw_path_errors(name: str, value: Any, code: int, text: str) -> None:
    with pytest.raises(HarnError) as ei:
        parse_wait_conditions(value)
    msg = ei.value.message
    assert msg.startswith(f"HARN-SUS-{code:03d}: "), msg
    assert text in msg
    assert ei.value.code == f"E4{code:02d}"


def test_raw_path_parses_trigger_timeout_and_event() -> None:
    wc = parse_wait_conditions(
        {
            "trigger": {**GH, "match": {"events": ["review.approved", "review.dismissed"]}},
            "timeout": {"duration_minutes": 5},
            "on_event": " ci.green ",
        }
    )
    assert wc is not None
    assert wc.trigger.provider == "github"
    assert wc.trigger.handler.kind == "worker"  # injected resume handler URI
    assert wc.match_events() == ["review.approved", "review.dismissed"]
    assert wc.timeout == {"duration_minutes": 5, "on_timeout": "resume_with_summary"}
    assert wc.on_event == "ci.green"


def test_raw_path_match_events_default_to_kind() -> None:
    wc = parse_wait_conditions({"trigger": GH})
    assert wc is not None and wc.match_events() == ["review.approved"]


def test_on_event_only_is_registrable_in_harnpy() -> None:
    wc = parse_wait_conditions({"on_event": "deploy.finished"})
    assert wc is not None
    assert wc.trigger is None and wc.on_event == "deploy.finished"
