"""Cron schedules in an IANA time zone: validation, next fire instant, missed-tick catch-up.

Spec: lifecycle.md §4.3 (cron provider: ``schedule``, ``timezone``, ``catchup_mode``), §13 Q5
(cron resume triggers fire from the harnpy clock). Expressions are parsed by ``croniter``:
five fields (``min hour dom month dow``), a sixth field for seconds *last* (croniter's order;
a six-field expression whose seconds-first reading, Quartz's and croner's, is valid too is
rejected as ambiguous), names (``jan``,
``mon``), ``L``, ``#``, ``?`` and the ``@hourly``/``@daily``/``@weekly``/``@monthly``/
``@yearly``/``@annually``/``@midnight`` aliases. Hashed (``H``) and random (``R``) fields are
rejected: they would not give the same instants twice.

Day matching (the either-field rule): when both day-of-month and day-of-week are restricted
(neither is ``*``/``?``), a day matches when **either** field matches (Vixie/POSIX cron,
croniter ``day_or=True``, croner's default); otherwise both must match.

A schedule that can never fire (``0 0 31 2 *``: 31 February; ``0 0 31 4,6,9,11 *``) is
rejected by :func:`parse_schedule` with :class:`CronError`.

Time zones and DST (all instants are UTC epoch milliseconds):

Cron fields describe *local wall-clock readings*. Around a DST transition a reading can be
missing (spring forward: the clock jumps over it) or repeated (fall back: it happens twice).
harnpy resolves both by the kind of schedule:

* **wall-clock schedules** — the hour field is restricted (``30 1 * * *``, ``*/15 2 * * *``):
  each matching local reading fires **exactly once**. A repeated reading fires at its first
  occurrence (the earlier instant, before the clocks go back). A missing reading fires at the
  first valid instant after the gap (the transition instant itself, e.g. 03:00 EDT for
  ``30 2 * * *`` on the New York spring-forward day). Readings that resolve to the same
  instant fire once (``0,30 2 * * *`` on that day fires once, at 03:00 EDT).
* **periodic schedules** — the hour field is unrestricted (``*/15 * * * *``, ``0 * * * *``):
  the schedule follows elapsed time. A repeated reading fires at **both** of its instants
  (they are an hour, or 30 minutes on Lord Howe Island, apart), a missing reading does not
  fire (the instants on either side of the gap are already the right distance apart), so
  ``*/15 * * * *`` keeps firing every 15 real minutes straight through both transitions.

Missed ticks (the process was down, or the clock jumped): :meth:`CronSchedule.due` reports
every tick in ``(last, now]`` and, per ``catchup_mode``, which of them should fire:

* ``latest`` (default): one fire for the whole backlog — the latest due tick, with the
  number of ticks it stands for (``coalesced``). Missed ticks during downtime fire once.
* ``skip``: the backlog is dropped unless the latest due tick is within ``grace_ms`` of now
  (then it fires once, as for ``latest``).
* ``all``: every missed tick fires, oldest first (capped by ``max_ticks``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

#: Catch-up policies accepted by ``catchup_mode``.
CATCHUP_MODES = ("latest", "skip", "all")
DEFAULT_CATCHUP = "latest"
#: How late a tick may be polled and still fire under ``catchup_mode: "skip"``.
DEFAULT_SKIP_GRACE_MS = 60_000
#: Upper bound on ticks enumerated for one ``due`` call (a clock that jumped years).
MAX_TICKS = 10_000

_ALIASES = {
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
}


class CronError(ValueError):
    """An invalid cron schedule or time zone; ``str(e)`` is the user-facing reason."""


def resolve_timezone(name: Any) -> tzinfo:
    """The tzinfo for an IANA zone name (``"UTC"``/nil -> UTC).

    Offset literals such as ``+02:00`` are rejected (a fixed offset has no DST rules, so a
    schedule written against it silently drifts by an hour twice a year; spec §4.3).

    Raises:
        CronError: not a string, an offset literal, or an unknown zone.
    """
    if name is None:
        return UTC
    if not isinstance(name, str):
        raise CronError(f"timezone must be an IANA zone name string, got {type(name).__name__}")
    s = name.strip()
    if s == "" or s.upper() in ("UTC", "Z", "ETC/UTC"):
        return UTC
    if s[0] in "+-" or s[:3].upper() in ("UTC", "GMT") and len(s) > 3 and s[3] in "+-":
        raise CronError(
            f"timezone `{name}` is an offset literal; use an IANA zone name (e.g. Europe/Paris)"
        )
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(s)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown timezone `{name}`") from None


@dataclass(frozen=True)
class CronTicks:
    """Result of :meth:`CronSchedule.due`.

    ``due`` are the tick instants (UTC epoch ms, ascending) in ``(last, now]``; ``fire`` the
    ones to dispatch under the catch-up policy; ``next_ms`` the first tick after ``now``
    (None when the schedule has no future tick). ``coalesced`` is how many due ticks the
    last entry of ``fire`` stands for (``latest``/``skip``), 1 for ``all``.
    """

    due: list[int] = field(default_factory=list)
    fire: list[int] = field(default_factory=list)
    next_ms: int | None = None
    coalesced: int = 0
    truncated: bool = False


class CronSchedule:
    """A validated cron expression bound to a time zone.

    Build it with :func:`parse_schedule`. ``periodic`` tells which DST rule applies (module
    docstring). Instances are immutable and cheap to share.
    """

    __slots__ = ("expression", "tz", "tz_name", "periodic")

    def __init__(self, expression: str, tz: tzinfo, tz_name: str, periodic: bool) -> None:
        self.expression = expression
        self.tz = tz
        self.tz_name = tz_name
        self.periodic = periodic

    def __repr__(self) -> str:
        return f"CronSchedule({self.expression!r}, {self.tz_name!r})"

    # ---- local wall time <-> instants

    def _instants(self, wall: datetime) -> list[int]:
        """UTC epoch-ms instants at which the local reading ``wall`` (naive) fires."""
        tz = self.tz
        first = wall.replace(tzinfo=tz, fold=0)
        second = wall.replace(tzinfo=tz, fold=1)
        t0 = first.astimezone(UTC)
        t1 = second.astimezone(UTC)
        exists0 = t0.astimezone(tz).replace(tzinfo=None) == wall
        exists1 = t1.astimezone(tz).replace(tzinfo=None) == wall
        if exists0 and exists1:
            if t0 == t1:
                return [_ms(t0)]
            # a repeated reading (fall back): fold=0 is the first occurrence
            a, b = sorted((t0, t1))
            return [_ms(a), _ms(b)] if self.periodic else [_ms(a)]
        if exists0 or exists1:
            return [_ms(t0 if exists0 else t1)]
        # a missing reading (spring forward)
        if self.periodic:
            return []
        return [_ms(_transition_after(tz, min(t0, t1), max(t0, t1)))]

    # ---- schedule queries

    def next_after(self, after_ms: int) -> int | None:
        """The first fire instant strictly after ``after_ms`` (UTC epoch ms), or None."""
        from croniter import CroniterBadDateError

        after = _dt(after_ms)
        margin = _dst_margin(self.tz, after)
        local_after = after.astimezone(self.tz).replace(tzinfo=None)
        start = local_after - margin - timedelta(seconds=1)
        it = _croniter(self.expression, start)
        best: int | None = None
        best_wall: datetime | None = None
        for _ in range(MAX_TICKS):
            try:
                wall = it.get_next(datetime)
            except CroniterBadDateError:
                return best
            if best_wall is not None and wall > best_wall + margin:
                break
            for inst in self._instants(wall):
                if inst > after_ms and (best is None or inst < best):
                    best = inst
                    best_wall = wall
        return best

    def due(
        self,
        last_ms: int,
        now_ms: int,
        catchup_mode: str = DEFAULT_CATCHUP,
        *,
        grace_ms: int = DEFAULT_SKIP_GRACE_MS,
        max_ticks: int = MAX_TICKS,
    ) -> CronTicks:
        """Ticks in ``(last_ms, now_ms]`` and the ones to fire under ``catchup_mode``.

        Raises:
            CronError: unknown ``catchup_mode``.
        """
        if catchup_mode not in CATCHUP_MODES:
            raise CronError(
                f"catchup_mode must be one of {', '.join(CATCHUP_MODES)}; got `{catchup_mode}`"
            )
        due: list[int] = []
        truncated = False
        cursor = last_ms
        nxt = self.next_after(cursor)
        while nxt is not None and nxt <= now_ms:
            if len(due) >= max_ticks:
                truncated = True
                nxt = self.next_after(now_ms)
                break
            due.append(nxt)
            cursor = nxt
            nxt = self.next_after(cursor)
        if not due:
            return CronTicks([], [], nxt, 0, False)
        if catchup_mode == "all":
            return CronTicks(due, list(due), nxt, 1, truncated)
        if catchup_mode == "skip" and now_ms - due[-1] > grace_ms:
            return CronTicks(due, [], nxt, 0, truncated)
        return CronTicks(due, [due[-1]], nxt, len(due), truncated)

    def describe(self) -> dict[str, Any]:
        """JSON-able description: ``{schedule, timezone, semantics}``."""
        return {
            "schedule": self.expression,
            "timezone": self.tz_name,
            "semantics": "periodic" if self.periodic else "wall_clock",
        }


def parse_schedule(expression: Any, timezone: Any = None) -> CronSchedule:
    """Validate ``expression`` in ``timezone`` and return the schedule.

    Raises:
        CronError: not a string, not a cron expression croniter accepts, a hashed/random
            field, an unknown or offset time zone, or a schedule that can never fire.
    """
    from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError

    if not isinstance(expression, str):
        raise CronError(
            f"schedule must be a cron expression string, got {type(expression).__name__}"
        )
    expr = " ".join(expression.split())
    if not expr:
        raise CronError("schedule cannot be empty")
    tz = resolve_timezone(timezone)
    tz_name = "UTC" if tz is UTC else str(timezone).strip()
    if expr.lower() in ("@reboot",):
        raise CronError("schedule `@reboot` has no fire instants")
    if not expr.startswith("@"):
        fields = expr.split(" ")
        if len(fields) not in (5, 6):
            raise CronError(
                f"schedule `{expression}` must have 5 fields (min hour dom month dow) "
                f"or 6 (with seconds); got {len(fields)}"
            )
        if any(_has_token(f, "H") or _has_token(f, "R") for f in fields):
            raise CronError(
                f"schedule `{expression}`: hashed (H) and random (R) fields are not supported"
            )
    elif expr.lower() not in _ALIASES:
        raise CronError(f"unknown schedule alias `{expr}`")
    try:
        expanded, _ = _expand(expr)
    except (CroniterBadCronError, CroniterError, ValueError, KeyError) as e:
        raise CronError(f"invalid cron schedule `{expression}`: {e}") from None
    fields = expr.split(" ")
    if len(fields) == 6 and fields[0] != fields[5]:
        # croniter reads a sixth field as seconds *last*; Quartz and croner write seconds
        # first. When the seconds-first reading is valid too, the meaning is a guess.
        try:
            _expand(" ".join([*fields[1:], fields[0]]))
        except (CroniterBadCronError, CroniterError, ValueError, KeyError):
            pass  # only the seconds-last reading is a schedule: not ambiguous
        else:
            raise CronError(
                f"schedule `{expression}` is ambiguous: 6 fields read as `min hour dom month "
                "dow sec` (seconds last) here, but as `sec min hour dom month dow` elsewhere "
                "(Quartz, croner); write 5 fields (min hour dom month dow), or put the same "
                "value first and last"
            )
    hours = expanded[1]
    periodic = hours == ["*"] or sorted(hours) == list(range(24))
    sched = CronSchedule(expr, tz, tz_name, periodic)
    # impossible schedules (31 February) are found by croniter's bounded search
    try:
        _croniter(expr, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError:
        raise CronError(
            f"schedule `{expression}` can never fire (no calendar date matches)"
        ) from None
    except (CroniterError, ValueError) as e:
        raise CronError(f"invalid cron schedule `{expression}`: {e}") from None
    return sched


# ---------------------------------------------------------------- helpers


def _has_token(field_text: str, letter: str) -> bool:
    """True when ``letter`` appears as a cron token (not inside a month/day name)."""
    import re

    return re.search(rf"(^|[,/\-]){letter}($|[,/\-()])", field_text.upper()) is not None


@functools.lru_cache(maxsize=256)
def _expand(expr: str) -> tuple[list[list[Any]], dict[Any, Any]]:
    from croniter import croniter

    return croniter.expand(expr)


def _croniter(expr: str, start: datetime) -> Any:
    from croniter import croniter

    return croniter(expr, start, day_or=True, max_years_between_matches=30)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(d: datetime) -> int:
    return (d - _EPOCH) // timedelta(milliseconds=1)


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _dst_margin(tz: tzinfo, around: datetime) -> timedelta:
    """Largest UTC-offset difference in the zone within two days of ``around`` (0 without
    DST there). Bounds how far wall-time order and instant order can disagree."""
    if tz is UTC:
        return timedelta(0)
    return _margin_at(tz, int(around.timestamp()) // 3600)


@functools.lru_cache(maxsize=1024)
def _margin_at(tz: tzinfo, hour: int) -> timedelta:
    offsets = set()
    for h in range(hour - 48, hour + 49):
        off = datetime.fromtimestamp(h * 3600, tz=UTC).astimezone(tz).utcoffset()
        if off is not None:
            offsets.add(off)
    if len(offsets) <= 1:
        return timedelta(0)
    return max(offsets) - min(offsets)


def _transition_after(tz: tzinfo, lo: datetime, hi: datetime) -> datetime:
    """The first instant in ``(lo, hi]`` whose UTC offset differs from ``lo``'s: the end of
    the spring-forward gap that the missing reading fell into (second precision)."""
    base = lo.astimezone(tz).utcoffset()
    a = int(lo.timestamp())
    b = int(hi.timestamp())
    while b - a > 1:
        m = (a + b) // 2
        if datetime.fromtimestamp(m, tz=UTC).astimezone(tz).utcoffset() == base:
            a = m
        else:
            b = m
    return datetime.fromtimestamp(b, tz=UTC)
