"""The injectable clock every time-reading builtin goes through (spec language.md 4.13).

A :class:`Clock` lives on the interpreter's shared services (``thread.runtime.clock``). In real
mode it reads the host clocks; after :meth:`Clock.set` (the ``mock_time`` builtin) it is a mock:
wall-clock and monotonic readings only move when :meth:`Clock.advance` or :meth:`Clock.sleep_ms`
is called, and sleeping returns at once. Tests give their fake runtime a ``Clock()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harnpy.runtime.extensions import register_state

#: Longest single ``time.sleep`` (seconds): a day.
_MAX_SLEEP_STEP_S = 86400.0


class Clock:
    """Wall-clock and monotonic time source with a mock mode.

    Units: wall-clock readings are Unix epoch milliseconds (int); monotonic readings are
    milliseconds (float) since the clock was created (real mode) or since the mock was set
    (mock mode, starting at 0).
    """

    __slots__ = ("_mock_wall_ms", "_mock_mono_ms", "_origin")

    def __init__(self) -> None:
        self._mock_wall_ms: int | None = None
        self._mock_mono_ms = 0.0
        self._origin = time.monotonic()

    @property
    def mocked(self) -> bool:
        """True while the clock is in mock mode."""
        return self._mock_wall_ms is not None

    def now_ms(self) -> int:
        """Wall-clock time as integer Unix epoch milliseconds."""
        if self._mock_wall_ms is not None:
            return self._mock_wall_ms
        return time.time_ns() // 1_000_000

    def now_s(self) -> float:
        """Wall-clock time as float Unix epoch seconds (sub-millisecond precision when real)."""
        if self._mock_wall_ms is not None:
            return self._mock_wall_ms / 1000.0
        return time.time()

    def monotonic_ms(self) -> float:
        """Milliseconds since the clock's origin; never goes backwards."""
        if self._mock_wall_ms is not None:
            return self._mock_mono_ms
        return (time.monotonic() - self._origin) * 1000.0

    def sleep_ms(self, ms: float) -> None:
        """Sleep ``ms`` milliseconds (non-positive values return at once).

        In mock mode the mock time advances by ``ms`` instead and no real time passes.
        """
        if ms <= 0:
            return
        if self._mock_wall_ms is not None:
            self.advance(ms)
            return
        # in steps the host can represent (time.sleep overflows past ~292 years, or past
        # the platform's time_t): a long sleep is many short ones
        remaining = ms / 1000.0
        while remaining > 0:
            step = min(remaining, _MAX_SLEEP_STEP_S)
            time.sleep(step)
            remaining -= step

    def set(self, ms: int) -> None:
        """Enter mock mode with the wall clock at epoch ``ms`` and the monotonic clock at 0."""
        self._mock_wall_ms = int(ms)
        self._mock_mono_ms = 0.0

    def advance(self, ms: float) -> None:
        """Move mock time forward by ``ms`` milliseconds.

        Outside mock mode this first freezes the clock at the current real time, so the
        advance is observable (the reference ``advance_time`` behaves the same way).
        """
        if self._mock_wall_ms is None:
            self._mock_mono_ms = self.monotonic_ms()
            self._mock_wall_ms = self.now_ms()
        self._mock_wall_ms += int(ms)
        self._mock_mono_ms += ms

    def mock_state(self) -> tuple[int, float] | None:
        """``(wall epoch ms, monotonic ms)`` of the mock, or None in real mode."""
        if self._mock_wall_ms is None:
            return None
        return self._mock_wall_ms, self._mock_mono_ms

    def continue_from(self, mono_ms: float) -> None:
        """Real mode: make the monotonic clock read ``mono_ms`` now and run on from there
        (a restored snapshot's clock: deadlines and ``elapsed()`` measured before the
        snapshot go on; the time the program was stopped does not count)."""
        self._origin = time.monotonic() - float(mono_ms) / 1000.0

    def set_mock_state(self, wall_ms: int, mono_ms: float) -> None:
        """Enter mock mode at exactly these readings (a restored snapshot's clock)."""
        self._mock_wall_ms = int(wall_ms)
        self._mock_mono_ms = float(mono_ms)

    def reset(self) -> None:
        """Leave mock mode: readings come from the host clocks again."""
        self._mock_wall_ms = None
        self._mock_mono_ms = 0.0


# ------------------------------------------------------------------ snapshot state
# The clock belongs to every runtime, not to the builtin module that reads it (builtin
# modules load lazily, so a program that only sleeps never imports the time builtins):
# its provider is registered with the runtime itself.


def _save_clock(thread: Any) -> dict[str, Any] | None:
    """The clock: ``{wall_ms, mono_ms}`` when mocked (resumed code sees the virtual time
    it left), ``{wall_ms: nil, mono_ms}`` when real (the wall clock reads the host again;
    the monotonic clock goes on from its reading, so deadlines and ``elapsed()`` started
    before the snapshot keep their meaning)."""
    clock = getattr(thread.runtime, "clock", None)
    if clock is None:
        return None
    state = clock.mock_state()
    if state is None:
        return {"wall_ms": None, "mono_ms": clock.monotonic_ms()}
    return {"wall_ms": state[0], "mono_ms": state[1]}


def _load_clock(thread: Any, data: Any) -> Callable[[], None]:
    wall, mono = data["wall_ms"], data["mono_ms"]
    if not (wall is None or type(wall) is int) or type(mono) not in (int, float):
        raise TypeError("wall_ms must be an int or nil and mono_ms a number")
    clock = thread.runtime.clock
    if clock is None:
        return lambda: None
    if wall is None:
        return lambda: clock.continue_from(mono)
    return lambda: clock.set_mock_state(wall, mono)


register_state("clock", _save_clock, _load_clock)
