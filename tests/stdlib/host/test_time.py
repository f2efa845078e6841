"""Clock, date and duration builtins (spec 4.13); all time reads go through the Clock."""

from __future__ import annotations

import pytest

from harnpy.runtime.clock import Clock
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import Duration


def test_clock_mock_mode_advances_only_on_request():
    clock = Clock()
    clock.set(1_700_000_000_000)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1_700_000_000_000, 0)
    clock.sleep_ms(250)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1_700_000_000_250, 250)
    clock.advance(1000)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1_700_000_001_250, 1250)
    clock.reset()
    assert not clock.mocked and clock.now_ms() > 1_700_000_001_250


def test_mock_time_builtins_drive_now_and_monotonic(thread):
    thread.call("mock_time", 1700000000000)
    readings = [(thread.call("now_ms"), thread.call("monotonic_ms"))]
    thread.runtime.clock.sleep_ms(250)  # what the scheduler does for sleep_ms(250)
    readings.append((thread.call("now_ms"), thread.call("monotonic_ms")))
    thread.call("advance_time", Duration(1000))
    readings.append((thread.call("now_ms"), thread.call("monotonic_ms")))
    assert readings == [(1700000000000, 0), (1700000000250, 250), (1700000001250, 1250)]
    thread.runtime.clock.sleep_ms(60_000)  # returns at once under the mock
    assert thread.call("now_ms") == 1700000061250
    assert thread.call("timestamp") == 1700000061.25
    thread.call("unmock_time")
    assert not thread.runtime.clock.mocked


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-15 00:00:00", 1705276800),
        ("2024-01-15", 1705276800),
        ("1969-12-31T23:00:00Z", -3600),
        ("2026-04-25T17:32:09.481Z", 1777138329.481),
        ("2026-04-25T19:32:09+02:00", 1777138329),
        ("Sat, 25 Apr 2026 17:32:09 GMT", 1777138329),
    ],
)
def test_date_parse_returns_unix_seconds(thread, text, expected):
    got = thread.call("date_parse", text)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not a date", "Cannot parse date"),
        ("2024-13-01", "Invalid month"),
        ("2024-01-32", "Invalid day"),
        ("2023-02-29", "Invalid day"),
    ],
)
def test_date_parse_rejects_bad_dates(thread, text, message):
    with pytest.raises(HarnThrow, match=message):
        thread.call("date_parse", text)


@pytest.mark.parametrize(
    ("ts", "fmt", "tz", "expected"),
    [
        (1705276800.0, "%Y-%m-%d", None, "2024-01-15"),
        (-3600, None, None, "1969-12-31 23:00:00"),
        (1777138329.481, "%Y-%m-%dT%H:%M:%S.%3fZ", None, "2026-04-25T17:32:09.481Z"),
        (1777138329.481, "%s.%3f", None, "1777138329.481"),
        (1777138329.123456, "%6f", None, "123456"),
        (1777075200, "%A %B %j %s", None, "Saturday April 115 1777075200"),
        (1777138329, "%Y-%m-%d %H:%M %Z %:z", "America/Los_Angeles", "2026-04-25 10:32 PDT -07:00"),
        (1777138329, "%a %e %b %-d %I:%M %p %z", "UTC", "Sat 25 Apr 25 05:32 PM +0000"),
        (1777138329, "%F %T%.f|%%", None, "2026-04-25 17:32:09|%"),
    ],
)
def test_date_format_follows_chrono_strftime(thread, ts, fmt, tz, expected):
    assert thread.call("date_format", ts, fmt, tz) == expected


@pytest.mark.parametrize(
    ("ts", "tz", "expected"),
    [
        (-3600, "America/Los_Angeles", "1969-12-31T15:00:00-08:00"),
        (1777138329.481, "UTC", "2026-04-25T17:32:09.481+00:00"),
        (1777138329, "America/Los_Angeles", "2026-04-25T10:32:09-07:00"),
        (1777138329, "+05:30", "2026-04-25T23:02:09+05:30"),
    ],
)
def test_date_to_zone_renders_rfc3339(thread, ts, tz, expected):
    assert thread.call("date_to_zone", ts, tz) == expected


def test_date_in_zone_and_components(thread):
    la = thread.call("date_in_zone", 1777138329, "America/Los_Angeles")
    assert (la["year"], la["month"], la["day"], la["hour"]) == (2026, 4, 25, 10)
    assert (la["offset_seconds"], la["zone"]) == (-25200, "America/Los_Angeles")
    built = thread.call(
        "date_from_components",
        {"year": 2026, "month": 4, "day": 25, "hour": 10, "minute": 32, "second": 9},
        "America/Los_Angeles",
    )
    assert thread.call("date_to_zone", built, "UTC") == "2026-04-25T17:32:09+00:00"
    assert thread.call("weekday_name", 1777075200) == "Saturday"
    assert thread.call("month_name", 1777075200) == "April"


def test_unknown_zone_throws(thread):
    with pytest.raises(HarnThrow, match="unknown time zone"):
        thread.call("date_to_zone", 0, "Mars/Olympus")


def test_date_now_reads_the_clock(thread):
    thread.runtime.clock.set(1705276800_500)
    now = thread.call("date_now")
    assert (now["year"], now["month"], now["day"]) == (2024, 1, 15)
    assert now["timestamp"] == 1705276800.5 and "T" in now["iso8601"]
    assert thread.call("date_now_iso") == "2024-01-15T00:00:00.500Z"


def test_date_arithmetic(thread):
    assert thread.call("date_add", 100, Duration(90_000)) == 190
    assert thread.call("date_add", 100, Duration(1500)) == 101.5
    diff = thread.call("date_diff", 200, 100)
    assert type(diff) is Duration and diff.ms == 100_000


@pytest.mark.parametrize(
    ("name", "n", "ms"),
    [
        ("duration_ms", 5, 5),
        ("duration_seconds", 90, 90_000),
        ("duration_minutes", 2, 120_000),
        ("duration_hours", 1.5, 5_400_000),
        ("duration_days", 1, 86_400_000),
    ],
)
def test_duration_constructors(thread, name, n, ms):
    assert thread.call(name, n).ms == ms


@pytest.mark.parametrize(
    ("ms", "human"),
    [
        (11_640_000, "3h 14m"),
        (-7_200_000, "-2h"),
        (250, "250ms"),
        (93_600_000, "1d 2h"),
        (0, "0ms"),
    ],
)
def test_duration_to_human(thread, ms, human):
    assert thread.call("duration_to_human", Duration(ms)) == human


def test_duration_to_seconds(thread):
    assert display(thread.call("duration_to_seconds", Duration(90_000))) == "90"
    assert thread.call("duration_to_seconds", Duration(1500)) == 1.5


def test_elapsed_is_monotonic(thread):
    a = thread.call("elapsed")
    b = thread.call("elapsed")
    assert 0 <= a <= b
