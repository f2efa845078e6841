"""Time, date and duration builtins (spec language.md 4.13).

Every reading of the current time goes through ``thread.runtime.clock`` (a
:class:`harnpy.runtime.clock.Clock`), so ``mock_time``/``advance_time`` make programs
deterministic. Timestamps are Unix seconds: an int when whole, else a float. Date
formatting follows chrono's ``strftime`` dialect (``%3f``, ``%.f``, ``%:z``, ``%s``,
``%-d`` ...), implemented by :func:`strftime`. Time zones are IANA names (via
:mod:`zoneinfo`), ``UTC``, ``local`` or fixed offsets such as ``+05:30``.
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harnpy.runtime.values import Duration
from harnpy.stdlib._util import fail, millis, text
from harnpy.stdlib.registry import builtin

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# ------------------------------------------------------------------ conversions


def _clock(thread: Any) -> Any:
    return thread.runtime.clock


def seconds_value(total_us: int) -> int | float:
    """Unix seconds from integer microseconds: an int when whole, else a float."""
    if total_us % 1_000_000 == 0:
        return total_us // 1_000_000
    return total_us / 1_000_000


def to_micros(thread: Any, ts: Any) -> int:
    """Integer Unix microseconds from a timestamp argument: int/float seconds, a dict with a
    ``timestamp`` key, or nil (= now). Throws on any other value."""
    t = type(ts)
    if ts is None:
        return round(_clock(thread).now_s() * 1_000_000)
    if t is dict:
        return to_micros(thread, ts.get("timestamp"))
    if t is int:
        return ts * 1_000_000
    if t is float:
        if not math.isfinite(ts):
            raise fail(f"invalid timestamp: {ts}")
        return round(ts * 1_000_000)
    if t is str:
        return _parse_micros(ts)
    raise fail(f"expected a timestamp (seconds), got {type(ts).__name__}")


def resolve_zone(name: Any, where: str = "") -> tzinfo:
    """A tzinfo for ``name``: nil/``UTC``/``Z`` -> UTC, ``local`` -> the host zone,
    ``+05:30``-style offsets, else an IANA zone. Throws ``<where>: unknown time zone
    '<name>'`` (``where``: the builtin asking, named in the message when given)."""
    at = f"{where}: " if where else ""
    if name is None:
        return UTC
    s = text(name).strip()
    if s.upper() in ("UTC", "Z", "GMT", ""):
        return UTC
    if s.lower() == "local":
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})?", s)
    if m:
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        if delta >= timedelta(hours=24) or int(m.group(3) or 0) >= 60:
            raise fail(f"{at}unknown time zone '{s}' (a UTC offset must be under 24:00)")
        return timezone(-delta if m.group(1) == "-" else delta)
    try:
        return ZoneInfo(s)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise fail(f"{at}unknown time zone '{s}'") from None


def to_datetime(total_us: int, tz: tzinfo) -> datetime:
    """The aware datetime in zone ``tz`` for Unix microseconds ``total_us``."""
    try:
        return (_EPOCH + timedelta(microseconds=total_us)).astimezone(tz)
    except OverflowError:
        raise fail("timestamp out of range") from None


def _zone_name(tz: tzinfo, dt: datetime) -> str:
    key = getattr(tz, "key", None)
    if key:
        return str(key)
    if tz is UTC:
        return "UTC"
    return _offset(dt, colon=True)


def _offset(dt: datetime, colon: bool) -> str:
    off = dt.utcoffset() or timedelta(0)
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    h, m = secs // 3600, (secs % 3600) // 60
    return f"{sign}{h:02d}:{m:02d}" if colon else f"{sign}{h:02d}{m:02d}"


def rfc3339(dt: datetime) -> str:
    """RFC 3339 text with the zone's numeric offset and automatic fraction digits
    (none, 3, 6), like chrono's ``to_rfc3339``."""
    base = dt.strftime("%Y-%m-%dT%H:%M:%S")
    us = dt.microsecond
    if us:
        base += f".{us // 1000:03d}" if us % 1000 == 0 else f".{us:06d}"
    return base + _offset(dt, colon=True)


# ------------------------------------------------------------------ strftime (chrono dialect)


def _pad(n: int, width: int, flag: str) -> str:
    """Pad ``n`` to ``width``: zeros by default, spaces for flag ``_``, none for ``-``."""
    if flag == "-":
        return str(n)
    s = str(abs(n)).rjust(width, " " if flag == "_" else "0")
    return ("-" + s) if n < 0 else s


def _iso_week(dt: datetime) -> tuple[int, int]:
    y, w, _ = dt.isocalendar()
    return y, w


def _spec(dt: datetime, total_us: int, spec: str, flag: str) -> str:
    """Expand one conversion ``spec`` (the letters after ``%`` and the pad flag)."""
    nanos = (total_us % 1_000_000) * 1000
    if spec == "Y":
        return _pad(dt.year, 4, flag)
    if spec == "C":
        return _pad(dt.year // 100, 2, flag)
    if spec == "y":
        return _pad(dt.year % 100, 2, flag)
    if spec == "m":
        return _pad(dt.month, 2, flag)
    if spec in ("b", "h"):
        return _MONTHS[dt.month - 1][:3]
    if spec == "B":
        return _MONTHS[dt.month - 1]
    if spec == "d":
        return _pad(dt.day, 2, flag)
    if spec == "e":
        return _pad(dt.day, 2, flag or "_")
    if spec == "a":
        return _WEEKDAYS[dt.weekday()][:3]
    if spec == "A":
        return _WEEKDAYS[dt.weekday()]
    if spec == "w":
        return str((dt.weekday() + 1) % 7)
    if spec == "u":
        return str(dt.weekday() + 1)
    if spec == "j":
        return _pad(dt.timetuple().tm_yday, 3, flag)
    if spec == "U":
        return _pad(int(dt.strftime("%U")), 2, flag)
    if spec == "W":
        return _pad(int(dt.strftime("%W")), 2, flag)
    if spec == "G":
        return _pad(_iso_week(dt)[0], 4, flag)
    if spec == "g":
        return _pad(_iso_week(dt)[0] % 100, 2, flag)
    if spec == "V":
        return _pad(_iso_week(dt)[1], 2, flag)
    if spec == "H":
        return _pad(dt.hour, 2, flag)
    if spec == "k":
        return _pad(dt.hour, 2, flag or "_")
    if spec == "I":
        return _pad((dt.hour % 12) or 12, 2, flag)
    if spec == "l":
        return _pad((dt.hour % 12) or 12, 2, flag or "_")
    if spec == "P":
        return "am" if dt.hour < 12 else "pm"
    if spec == "p":
        return "AM" if dt.hour < 12 else "PM"
    if spec == "M":
        return _pad(dt.minute, 2, flag)
    if spec == "S":
        return _pad(dt.second, 2, flag)
    if spec == "f":
        return f"{nanos:09d}"
    if spec in ("3f", "6f", "9f"):
        return f"{nanos:09d}"[: int(spec[0])]
    if spec in (".3f", ".6f", ".9f"):
        return "." + f"{nanos:09d}"[: int(spec[1])]
    if spec == ".f":
        if nanos == 0:
            return ""
        if nanos % 1_000_000 == 0:
            return f".{nanos // 1_000_000:03d}"
        if nanos % 1000 == 0:
            return f".{nanos // 1000:06d}"
        return f".{nanos:09d}"
    if spec == "Z":
        name = dt.tzname()
        return name if name else _offset(dt, colon=True)
    if spec == "z":
        return _offset(dt, colon=False)
    if spec == ":z":
        return _offset(dt, colon=True)
    if spec == "s":
        return str(total_us // 1_000_000)
    if spec == "T":
        return f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if spec == "R":
        return f"{dt.hour:02d}:{dt.minute:02d}"
    if spec == "r":
        return f"{(dt.hour % 12) or 12:02d}:{dt.minute:02d}:{dt.second:02d} " + (
            "AM" if dt.hour < 12 else "PM"
        )
    if spec in ("D", "x"):
        return f"{dt.month:02d}/{dt.day:02d}/{dt.year % 100:02d}"
    if spec == "F":
        return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
    if spec == "X":
        return f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if spec == "v":
        return f"{dt.day:>2}-{_MONTHS[dt.month - 1][:3]}-{dt.year:04d}"
    if spec == "c":
        return (
            f"{_WEEKDAYS[dt.weekday()][:3]} {_MONTHS[dt.month - 1][:3]} {dt.day:>2} "
            f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d} {dt.year:04d}"
        )
    if spec == "+":
        return rfc3339(dt)
    if spec == "n":
        return "\n"
    if spec == "t":
        return "\t"
    if spec == "%":
        return "%"
    raise fail(f"date_format: unsupported format specifier '%{spec}'")


_SPEC = re.compile(r"%([-_0]?)(\.?[369]f|\.f|:z|[A-Za-z%+])")


def strftime(dt: datetime, total_us: int, fmt: str) -> str:
    """Format ``dt`` (whose instant is ``total_us`` Unix microseconds) with chrono-style
    ``fmt``. Throws on an unknown specifier."""
    return _SPEC.sub(lambda m: _spec(dt, total_us, m.group(2), m.group(1)), fmt)


# ------------------------------------------------------------------ parsing

_DATE_RE = re.compile(
    r"""\s*(?P<y>[+-]?\d{4,})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})
    (?:[Tt\s]+(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<frac>\d+))?)?)?
    \s*(?P<tz>[Zz]|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?\s*""",
    re.X,
)


def _check_range(name: str, value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise fail(f"Invalid {name}: {value} (must be {lo}-{hi})")


def _parse_micros(s: str) -> int:
    """Unix microseconds of a date string: RFC 3339 / ISO 8601 (``2024-01-15``,
    ``2024-01-15 10:00:00``, ``2024-01-15T10:00:00.5+02:00``; no zone means UTC) or
    RFC 2822. Throws ``Cannot parse date: <s>`` or ``Invalid <field>: ...``."""
    m = _DATE_RE.fullmatch(s)
    if not m:
        from email.utils import parsedate_to_datetime

        try:
            dt = parsedate_to_datetime(s)
        except (TypeError, ValueError, IndexError):
            raise fail(f"Cannot parse date: {s}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return (dt - _EPOCH) // timedelta(microseconds=1)
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    h, mi, sec = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    _check_range("month", mo, 1, 12)
    _check_range("day", d, 1, calendar.monthrange(y, mo)[1] if 1 <= y <= 9999 else 31)
    _check_range("hour", h, 0, 23)
    _check_range("minute", mi, 0, 59)
    _check_range("second", sec, 0, 60)
    frac_us = 0
    if m["frac"]:
        frac_us = int(round(int(m["frac"][:9].ljust(9, "0")) / 1000))
    offset_s = 0
    tz = m["tz"]
    if tz and tz[0] in "+-":
        digits = tz[1:].replace(":", "")
        offset_s = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
        if tz[0] == "-":
            offset_s = -offset_s
    days = _days_from_civil(y, mo, d)
    total_s = days * 86400 + h * 3600 + mi * 60 + sec - offset_s
    return total_s * 1_000_000 + frac_us


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# ------------------------------------------------------------------ builtins: clock


@builtin()
def timestamp(thread: Any) -> float:
    """``timestamp()``: current Unix time in float seconds."""
    return float(_clock(thread).now_s())


@builtin()
def now_ms(thread: Any) -> int:
    """``now_ms()``: current Unix time in integer milliseconds."""
    return int(_clock(thread).now_ms())


@builtin()
def monotonic_ms(thread: Any) -> int:
    """``monotonic_ms()``: integer milliseconds of the monotonic clock (0 when mocked)."""
    return int(_clock(thread).monotonic_ms())


@builtin()
def elapsed(thread: Any) -> int:
    """``elapsed()``: integer milliseconds since the runtime's clock started."""
    return int(_clock(thread).monotonic_ms())


def _sleep_arg(name: str, v: Any) -> float:
    ms = millis(v)
    if ms is None:
        if v is None:
            return 0.0
        raise fail(f"{name}: expected a duration or milliseconds")
    return ms


@builtin()
def mock_time(thread: Any, ms: Any = None) -> None:
    """``mock_time(epoch_ms)``: freeze the clock at ``epoch_ms``; monotonic time restarts
    at 0; sleeping then advances the mock time instantly."""
    value = millis(ms)
    if value is None:
        raise fail("mock_time: expected epoch milliseconds")
    _clock(thread).set(int(value))


@builtin()
def unmock_time(thread: Any) -> None:
    """``unmock_time()``: return to the real clock."""
    _clock(thread).reset()


@builtin()
def advance_time(thread: Any, ms: Any = None) -> None:
    """``advance_time(ms | duration)``: move the mock clock forward."""
    value = millis(ms)
    if value is None:
        raise fail("advance_time: expected a duration or milliseconds")
    _clock(thread).advance(value)


# ------------------------------------------------------------------ builtins: dates


def _components(dt: datetime, total_us: int) -> dict[str, Any]:
    return {
        "year": dt.year,
        "month": dt.month,
        "day": dt.day,
        "hour": dt.hour,
        "minute": dt.minute,
        "second": dt.second,
        "millisecond": dt.microsecond // 1000,
        "weekday": (dt.weekday() + 1) % 7,
        "day_of_year": dt.timetuple().tm_yday,
        "timestamp": seconds_value(total_us),
    }


@builtin()
def date_now(thread: Any, tz: Any = None) -> dict[str, Any]:
    """``date_now(tz?)``: dict ``{year, month, day, hour, minute, second, millisecond,
    weekday (0 = Sunday), day_of_year, timestamp (float), iso8601}`` for now (UTC default)."""
    total_us = round(_clock(thread).now_s() * 1_000_000)
    dt = to_datetime(total_us, resolve_zone(tz, "date_now"))
    d = _components(dt, total_us)
    d["timestamp"] = total_us / 1_000_000
    d["iso8601"] = rfc3339(dt)
    return d


@builtin()
def date_now_iso(thread: Any) -> str:
    """``date_now_iso()``: current UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    total_us = _clock(thread).now_ms() * 1000
    dt = to_datetime(total_us, UTC)
    return strftime(dt, total_us, "%Y-%m-%dT%H:%M:%S%.3fZ")


@builtin()
def date_parse(thread: Any, s: Any = None) -> int | float:
    """``date_parse(s)``: RFC 3339 / ISO 8601 / RFC 2822 text -> Unix seconds (int when
    whole). Throws ``Cannot parse date: <s>`` or ``Invalid month: 13 (must be 1-12)``."""
    return seconds_value(_parse_micros(text(s)))


@builtin()
def date_format(thread: Any, ts: Any = None, fmt: Any = None, tz: Any = None) -> str:
    """``date_format(ts, fmt?, tz?)``: chrono-style strftime (default
    ``%Y-%m-%d %H:%M:%S``) of timestamp ``ts`` in zone ``tz`` (default UTC)."""
    total_us = to_micros(thread, ts)
    dt = to_datetime(total_us, resolve_zone(tz, "date_format"))
    return strftime(dt, total_us, "%Y-%m-%d %H:%M:%S" if fmt is None else text(fmt))


@builtin()
def date_to_zone(thread: Any, ts: Any = None, tz: Any = None) -> str:
    """``date_to_zone(ts, tz)``: RFC 3339 text of ``ts`` in zone ``tz``
    (``2026-04-25T10:32:09-07:00``)."""
    total_us = to_micros(thread, ts)
    return rfc3339(to_datetime(total_us, resolve_zone(tz, "date_to_zone")))


@builtin()
def date_in_zone(thread: Any, ts: Any = None, tz: Any = None) -> dict[str, Any]:
    """``date_in_zone(ts, tz)``: calendar fields of ``ts`` in ``tz`` plus
    ``offset_seconds``, ``zone`` (the zone name) and ``iso8601``."""
    total_us = to_micros(thread, ts)
    zone = resolve_zone(tz, "date_in_zone")
    dt = to_datetime(total_us, zone)
    d = _components(dt, total_us)
    off = dt.utcoffset() or timedelta(0)
    d["offset_seconds"] = int(off.total_seconds())
    d["zone"] = _zone_name(zone, dt) if tz is not None else "UTC"
    d["iso8601"] = rfc3339(dt)
    return d


def _field(parts: dict[str, Any], name: str, default: int) -> int:
    v = parts.get(name, default)
    if v is None:
        return default
    if type(v) is not int:
        if type(v) is float and v == int(v):
            return int(v)
        raise fail(f"date_from_components: field '{name}' must be an int")
    return v


@builtin()
def date_from_components(thread: Any, parts: Any = None, tz: Any = None) -> int | float:
    """``date_from_components({year, month, day, hour?, minute?, second?, millisecond?},
    tz?)``: the Unix timestamp of that local time in ``tz`` (default UTC). Ambiguous local
    times take the first occurrence."""
    if type(parts) is not dict:
        raise fail("date_from_components: expected a dict of components")
    y = _field(parts, "year", 1970)
    mo = _field(parts, "month", 1)
    d = _field(parts, "day", 1)
    h, mi, s = _field(parts, "hour", 0), _field(parts, "minute", 0), _field(parts, "second", 0)
    ms = _field(parts, "millisecond", 0)
    _check_range("month", mo, 1, 12)
    _check_range("day", d, 1, calendar.monthrange(y, mo)[1])
    _check_range("hour", h, 0, 23)
    _check_range("minute", mi, 0, 59)
    _check_range("second", s, 0, 59)
    zone = resolve_zone(tz, "date_from_components")
    local = datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=zone)
    total_us = (local - _EPOCH) // timedelta(microseconds=1)
    return seconds_value(total_us)


@builtin()
def date_add(thread: Any, ts: Any = None, dur: Any = None) -> int | float:
    """``date_add(ts, duration | ms)``: timestamp ``ts`` moved by the duration."""
    delta = millis(dur)
    if delta is None:
        raise fail("date_add: expected a duration")
    return seconds_value(to_micros(thread, ts) + round(delta * 1000))


@builtin()
def date_diff(thread: Any, a: Any = None, b: Any = None) -> Duration:
    """``date_diff(a, b)``: the duration ``a - b`` (milliseconds, truncated)."""
    return Duration(int((to_micros(thread, a) - to_micros(thread, b)) / 1000))


@builtin()
def weekday_name(thread: Any, ts: Any = None, tz: Any = None) -> str:
    """``weekday_name(ts, tz?)``: English weekday name (``Saturday``)."""
    return _WEEKDAYS[to_datetime(to_micros(thread, ts), resolve_zone(tz, "weekday_name")).weekday()]


@builtin()
def month_name(thread: Any, ts: Any = None, tz: Any = None) -> str:
    """``month_name(ts, tz?)``: English month name (``April``)."""
    return _MONTHS[to_datetime(to_micros(thread, ts), resolve_zone(tz, "month_name")).month - 1]


# ------------------------------------------------------------------ builtins: durations


def _duration_ctor(name: str, unit_ms: int) -> Any:
    def fn(thread: Any, n: Any = None) -> Duration:
        if type(n) is not int and type(n) is not float:
            raise fail(f"{name}: expected a number")
        return Duration(int(round(n * unit_ms)))

    fn.__doc__ = f"``{name}(n)``: a duration of ``n`` × {unit_ms} ms."
    return fn


for _name, _unit in (
    ("duration_ms", 1),
    ("duration_seconds", 1000),
    ("duration_minutes", 60_000),
    ("duration_hours", 3_600_000),
    ("duration_days", 86_400_000),
    ("duration_weeks", 604_800_000),
):
    builtin(_name)(_duration_ctor(_name, _unit))


def _duration_ms(name: str, d: Any) -> int:
    ms = millis(d)
    if ms is None:
        raise fail(f"{name}: expected a duration")
    return int(ms)


@builtin()
def duration_to_ms(thread: Any, d: Any = None) -> int:
    """``duration_to_ms(d)``: whole milliseconds of ``d``."""
    return _duration_ms("duration_to_ms", d)


@builtin()
def duration_to_seconds(thread: Any, d: Any = None) -> int | float:
    """``duration_to_seconds(d)``: seconds of ``d`` (int when whole, else float)."""
    ms = _duration_ms("duration_to_seconds", d)
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


@builtin()
def duration_to_human(thread: Any, d: Any = None) -> str:
    """``duration_to_human(d)``: compact text such as ``3h 14m``, ``1d 2h``, ``1.5s``,
    ``250ms`` or ``-2h``; zero units are left out."""
    ms = _duration_ms("duration_to_human", d)
    if ms == 0:
        return "0ms"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    parts: list[str] = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000)):
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
    if ms:
        if ms >= 1000:
            secs = ms / 1000
            parts.append(f"{secs:g}s")
        else:
            parts.append(f"{ms}ms")
    return sign + " ".join(parts)
