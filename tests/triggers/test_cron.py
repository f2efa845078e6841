"""Cron triggers against an injected clock: DST in both directions (America/New_York,
Europe/London, Australia/Lord_Howe with its 30-minute shift), the either-field rule,
impossible schedules, missed-tick coalescing.

DST semantics under test (harnpy/lifecycle/triggers/cron.py): a schedule with a restricted
hour fires each matching local reading exactly once — a repeated reading at its first
occurrence, a missing reading at the first valid instant after the gap; a schedule with an
unrestricted hour (``*/15 * * * *``) follows elapsed time and so fires every 15 real minutes
straight through both transitions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harnpy.lifecycle.triggers.bindings import ResumeRequest
from harnpy.lifecycle.triggers.cron import CronError, parse_schedule
from harnpy.lifecycle.triggers.dispatcher import TriggerDispatcher
from harnpy.lifecycle.triggers.spec import parse_trigger_spec
from harnpy.runtime.clock import Clock
from harnpy.runtime.errors import HarnError

STEP_MS = 60_000  # the test clock moves one minute per poll


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def iso_utc(m: int) -> str:
    return datetime.fromtimestamp(m / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cron_binding(d: TriggerDispatcher, schedule: str, tz: str, mode: str = "latest") -> Any:
    spec = parse_trigger_spec(
        {
            "kind": "cron.tick",
            "provider": "cron",
            "handler": "worker://ticks",
            "schedule": schedule,
            "timezone": tz,
            "catchup_mode": mode,
        }
    )
    return d.register(spec)


def step_through(schedule: str, tz: str, start: str, end: str) -> list[dict[str, Any]]:
    """Register the schedule at ``start`` and poll every minute up to ``end``; return the
    fire records, checking that no poll fires twice and no tick waits past its minute."""
    clock = Clock()
    clock.set(ms(start))
    d = TriggerDispatcher(clock=clock)
    cron_binding(d, schedule, tz)
    fires = []
    while clock.now_ms() < ms(end):
        clock.advance(STEP_MS)
        got = d.poll()
        assert len(got) <= 1, got  # never a doubled fire in one step
        for f in got:
            assert f["coalesced"] == 1  # polled every minute: nothing was missed
            assert 0 <= f["fired_at_ms"] - f["at_ms"] < STEP_MS  # not stalled
        fires.extend(got)
    # the queued events are the fires, in order, each a distinct tick
    ticks = [e["provider_payload"]["raw"]["tick_at_ms"] for e in d.worker_queues.get("ticks", [])]
    assert ticks == [f["at_ms"] for f in fires]
    assert len(set(ticks)) == len(ticks)
    return fires


# window: local 23:00 the evening before a transition -> 05:00 local after it
WINDOWS = {
    ("America/New_York", "spring"): ("2026-03-07T23:00:00-05:00", "2026-03-08T05:00:00-04:00"),
    ("America/New_York", "fall"): ("2026-10-31T23:00:00-04:00", "2026-11-01T05:00:00-05:00"),
    ("Europe/London", "spring"): ("2026-03-28T23:00:00+00:00", "2026-03-29T05:00:00+01:00"),
    ("Europe/London", "fall"): ("2026-10-24T23:00:00+01:00", "2026-10-25T05:00:00+00:00"),
    ("Australia/Lord_Howe", "fall"): ("2026-04-04T23:00:00+11:00", "2026-04-05T05:00:00+10:30"),
    ("Australia/Lord_Howe", "spring"): (
        "2026-10-03T23:00:00+10:30",
        "2026-10-04T05:00:00+11:00",
    ),
}

# Expected single fire of the daily schedules, as local times with the offset in force:
# NY springs 02:00 EST -> 03:00 EDT and falls 02:00 EDT -> 01:00 EST; London springs
# 01:00 GMT -> 02:00 BST and falls 02:00 BST -> 01:00 GMT; Lord Howe falls 02:00 +11 ->
# 01:30 +10:30 (5 April) and springs 02:00 +10:30 -> 02:30 +11 (4 October).
DAILY = [
    ("America/New_York", "spring", "30 1 * * *", "2026-03-08T01:30:00-05:00"),  # exists
    ("America/New_York", "spring", "30 2 * * *", "2026-03-08T03:00:00-04:00"),  # in the gap
    ("America/New_York", "fall", "30 1 * * *", "2026-11-01T01:30:00-04:00"),  # first of two
    ("America/New_York", "fall", "30 2 * * *", "2026-11-01T02:30:00-05:00"),
    ("Europe/London", "spring", "30 1 * * *", "2026-03-29T02:00:00+01:00"),  # in the gap
    ("Europe/London", "spring", "30 2 * * *", "2026-03-29T02:30:00+01:00"),
    ("Europe/London", "fall", "30 1 * * *", "2026-10-25T01:30:00+01:00"),  # first of two
    ("Europe/London", "fall", "30 2 * * *", "2026-10-25T02:30:00+00:00"),
    ("Australia/Lord_Howe", "fall", "30 1 * * *", "2026-04-05T01:30:00+11:00"),  # first of two
    ("Australia/Lord_Howe", "fall", "30 2 * * *", "2026-04-05T02:30:00+10:30"),
    ("Australia/Lord_Howe", "spring", "30 1 * * *", "2026-10-04T01:30:00+10:30"),
    ("Australia/Lord_Howe", "spring", "30 2 * * *", "2026-10-04T02:30:00+11:00"),  # gap end
]


@pytest.mark.parametrize(("tz", "which", "schedule", "expected"), DAILY)
def test_daily_schedule_fires_once_across_dst(
    tz: str, which: str, schedule: str, expected: str
) -> None:
    start, end = WINDOWS[(tz, which)]
    fires = step_through(schedule, tz, start, end)
    assert [iso_utc(f["at_ms"]) for f in fires] == [iso_utc(ms(expected))]


@pytest.mark.parametrize(("tz", "which"), sorted(WINDOWS))
def test_every_15_minutes_follows_elapsed_time_across_dst(tz: str, which: str) -> None:
    start, end = WINDOWS[(tz, which)]
    fires = step_through("*/15 * * * *", tz, start, end)
    # every offset of these zones is a multiple of 15 minutes, so local quarter hours are
    # exactly the UTC quarter hours: one fire per 15 elapsed minutes, none missed or doubled
    expected = list(range(ms(start) + 15 * 60_000, ms(end) + 1, 15 * 60_000))
    assert [f["at_ms"] for f in fires] == expected


def test_fall_back_repeats_quarter_hours_for_periodic_schedules() -> None:
    # NY 1 November: 01:00-01:59 happens twice; */15 fires in both passes, 15 min apart
    start, end = WINDOWS[("America/New_York", "fall")]
    fires = step_through("*/15 * * * *", "America/New_York", start, end)
    local = [
        datetime.fromtimestamp(f["at_ms"] / 1000, tz=UTC)
        .astimezone(parse_schedule("* * * * *", "America/New_York").tz)
        .strftime("%H:%M%z")
        for f in fires
    ]
    assert local.count("01:30-0400") == 1 and local.count("01:30-0500") == 1
    assert "02:00-0500" in local and "02:00-0400" not in local


def test_missing_readings_coalesce_into_one_fire() -> None:
    # 02:00 and 02:30 do not exist on 8 March in New York: one fire at 03:00 EDT
    start, end = WINDOWS[("America/New_York", "spring")]
    fires = step_through("0,30 2 * * *", "America/New_York", start, end)
    assert [iso_utc(f["at_ms"]) for f in fires] == [iso_utc(ms("2026-03-08T03:00:00-04:00"))]


def test_cron_resume_wait_fires_once_at_gap_end() -> None:
    clock = Clock()
    clock.set(ms("2026-03-07T12:00:00-05:00"))
    d = TriggerDispatcher(clock=clock)
    got: list[ResumeRequest] = []
    d.resume_handler = got.append
    h = d.register_resume_wait(
        "worker_a",
        {
            "trigger": {
                "kind": "cron.tick",
                "provider": "cron",
                "schedule": "30 2 * * *",
                "timezone": "America/New_York",
            }
        },
    )
    assert h is not None and h["next_fire_ms"] == ms("2026-03-08T03:00:00-04:00")
    while clock.now_ms() < ms("2026-03-09T12:00:00-04:00"):
        clock.advance(5 * 60_000)
        d.poll()
    assert len(got) == 1  # a resume wait is one-shot: it never fires again
    raw = got[0].input
    assert raw["tick_at"] == "2026-03-08T07:00:00Z" and raw["coalesced"] == 1
    assert got[0].initiator == "triggered" and got[0].cause == "cron"


# ---------------------------------------------------------------- the either-field rule


def fires_between(schedule: str, start: str, n: int, tz: str = "UTC") -> list[str]:
    s = parse_schedule(schedule, tz)
    t = ms(start)
    out = []
    for _ in range(n):
        nxt = s.next_after(t)
        assert nxt is not None
        out.append(iso_utc(nxt)[:10])
        t = nxt
    return out


def test_either_field_rule_when_both_days_restricted() -> None:
    # 13 April 2026 is a Monday: "the 13th OR a Friday"
    assert fires_between("0 9 13 * 5", "2026-04-01T00:00:00+00:00", 6) == [
        "2026-04-03",
        "2026-04-10",
        "2026-04-13",
        "2026-04-17",
        "2026-04-24",
        "2026-05-01",
    ]


def test_day_fields_and_when_one_is_unrestricted() -> None:
    assert fires_between("0 9 * * 5", "2026-04-01T00:00:00+00:00", 3) == [
        "2026-04-03",
        "2026-04-10",
        "2026-04-17",
    ]
    assert fires_between("0 9 13 * *", "2026-04-01T00:00:00+00:00", 2) == [
        "2026-04-13",
        "2026-05-13",
    ]


def test_either_field_rule_makes_31_february_possible_with_a_weekday() -> None:
    # "31 February OR a Friday in February" is satisfiable: Fridays of February
    assert fires_between("0 0 31 2 5", "2026-01-01T00:00:00+00:00", 2) == [
        "2026-02-06",
        "2026-02-13",
    ]


# ---------------------------------------------------------------- impossible schedules


@pytest.mark.parametrize("expr", ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30 feb ?"])
def test_impossible_schedules_rejected(expr: str) -> None:
    with pytest.raises(CronError, match="can never fire"):
        parse_schedule(expr, "UTC")


def test_leap_day_is_possible() -> None:
    assert fires_between("0 0 29 2 *", "2026-01-01T00:00:00+00:00", 1) == ["2028-02-29"]


def test_impossible_schedule_rejected_when_wait_declared() -> None:
    d = TriggerDispatcher(clock=Clock())
    with pytest.raises(HarnError) as ei:
        d.register_resume_wait(
            "worker_x", {"trigger": {"kind": "cron", "provider": "cron", "schedule": "0 0 31 2 *"}}
        )
    assert ei.value.message.startswith("HARN-SUS-007: auto_resume: failed to parse conditions")
    assert "can never fire" in ei.value.message
    assert d.pending_waits() == []


@pytest.mark.parametrize(
    ("expr", "tz", "why"),
    [
        ("61 * * * *", "UTC", "invalid cron schedule"),
        ("* * *", "UTC", "must have 5 fields"),
        ("H * * * *", "UTC", "hashed (H) and random (R)"),
        ("0 9 * * *", "+02:00", "offset literal"),
        ("0 9 * * *", "Mars/Olympus", "unknown timezone"),
        ("@fortnightly", "UTC", "unknown schedule alias"),
    ],
)
def test_invalid_schedules(expr: str, tz: str, why: str) -> None:
    with pytest.raises(CronError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_schedule(expr, tz)


def test_croniter_forms_accepted() -> None:
    for expr in [
        "@hourly",
        "@daily",
        "0 9 * * mon-fri",
        "0 0 L * *",
        "0 0 * * 5#2",
        "*/5 * * * * 30",
    ]:
        assert parse_schedule(expr, "Europe/London").next_after(ms("2026-01-01T00:00:00+00:00"))


# ---------------------------------------------------------------- missed ticks


def test_missed_ticks_during_downtime_fire_once() -> None:
    clock = Clock()
    clock.set(ms("2026-06-01T10:00:00+00:00"))
    d = TriggerDispatcher(clock=clock)
    cron_binding(d, "*/15 * * * *", "UTC")
    clock.advance(3 * 3600_000 + 5 * 60_000)  # down for 3h05m: 12 ticks missed
    fires = d.poll()
    assert len(fires) == 1
    assert fires[0]["coalesced"] == 12
    assert iso_utc(fires[0]["at_ms"]) == "2026-06-01T13:00:00Z"  # the latest due tick
    raw = d.worker_queues["ticks"][0]["provider_payload"]["raw"]
    assert raw["missed_ticks"] == 11 and raw["first_due_at"] == "2026-06-01T10:15:00Z"
    assert d.poll() == []  # nothing left over
    clock.advance(10 * 60_000)  # 13:15 is the next tick
    nxt = d.poll()
    assert [iso_utc(f["at_ms"]) for f in nxt] == ["2026-06-01T13:15:00Z"]
    assert nxt[0]["coalesced"] == 1


def test_catchup_all_and_skip() -> None:
    clock = Clock()
    clock.set(ms("2026-06-01T10:00:00+00:00"))
    d = TriggerDispatcher(clock=clock)
    cron_binding(d, "0 * * * *", "UTC", mode="all")
    cron_binding(d, "30 * * * *", "UTC", mode="skip")
    clock.advance(4 * 3600_000)  # 14:00
    fires = d.poll()
    hourly = [iso_utc(f["at_ms"]) for f in fires]
    # "all": 11:00..14:00 each fire; "skip": 13:30 is 30 min late (> grace), dropped
    assert hourly == [
        "2026-06-01T11:00:00Z",
        "2026-06-01T12:00:00Z",
        "2026-06-01T13:00:00Z",
        "2026-06-01T14:00:00Z",
    ]
    clock.advance(30 * 60_000 + 20_000)  # 14:30:20, 20 s late: within the skip grace
    assert [iso_utc(f["at_ms"]) for f in d.poll()] == ["2026-06-01T14:30:00Z"]


def test_due_reports_backlog() -> None:
    s = parse_schedule("*/15 * * * *", "UTC")
    t0 = ms("2026-06-01T10:00:00+00:00")
    ticks = s.due(t0, t0 + 3600_000 + 1, "latest")
    assert len(ticks.due) == 4 and ticks.fire == [ticks.due[-1]] and ticks.coalesced == 4
    assert ticks.next_ms == t0 + 75 * 60_000
    assert s.due(t0, t0 + 60_000).due == []
    assert timedelta(milliseconds=ticks.due[1] - ticks.due[0]) == timedelta(minutes=15)


def test_an_ambiguous_six_field_schedule_is_refused_with_a_hint() -> None:
    # seconds first (Quartz, croner) would read `0 0 9 * * 1` as 09:00:00 on Mondays;
    # croniter reads seconds last (00:00:01 on the 9th): refuse rather than guess
    with pytest.raises(CronError, match="ambiguous.*write 5 fields"):
        parse_schedule("0 0 9 * * 1", "UTC")
    # only one reading is a schedule, or both readings agree: accepted
    assert parse_schedule("*/5 * * * * 30", "UTC")
    assert parse_schedule("0 * * * * 0", "UTC")
