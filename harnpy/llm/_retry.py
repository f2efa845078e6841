"""Our retry loop for real providers: exponential backoff that honours ``Retry-After``.

The SDKs' own retries are disabled (``max_retries=0``) so that exactly one policy applies and
tests can observe every wait through an injected ``sleep`` callable.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TypeVar

from harnpy.llm.errors import LlmError

T = TypeVar("T")

#: Upper bound on any single wait (seconds), whatever the server asks for.
MAX_DELAY_S = 120.0


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``Retry-After``, or None.

    ``Retry-After`` may be delta-seconds (``"2"``, ``"1.5"``) or an HTTP date; dates in the
    past give 0.0. Unparseable or negative values are ignored (None). Header lookup is
    case-insensitive when ``headers`` is (httpx headers are); plain dicts should use
    lower-case keys.
    """
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = -1.0
        if ms >= 0:
            return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        secs = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = now or datetime.now(UTC)
        return max(0.0, (when - current).total_seconds())
    return secs if secs >= 0 else None


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset_duration(raw: str) -> float | None:
    """Seconds in an OpenAI-style reset duration (``"1s"``, ``"6m0s"``, ``"20ms"``,
    ``"1h2m3.5s"``; a bare number is seconds), or None when it is not one."""
    text = raw.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        return value if value >= 0 else None
    total, pos = 0.0, 0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos:
            return None
        amount, unit = float(m.group(1)), m.group(2)
        total += amount * {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}[unit]
        pos = m.end()
    return total if pos == len(text) and pos > 0 else None


#: Rate-limit reset headers tried, in order, when a 429 carries no ``Retry-After``: OpenAI's
#: durations and Anthropic's RFC 3339 reset times.
RESET_HEADERS = (
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
)


def parse_rate_limit_reset(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds until the provider's rate limit resets according to :data:`RESET_HEADERS`
    (the first header present that parses), or None. OpenAI sends durations
    (:func:`parse_reset_duration`), Anthropic RFC 3339 timestamps (a time in the past gives
    0.0). Used for a 429 without ``Retry-After``; header lookup as in
    :func:`parse_retry_after`."""
    for name in RESET_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        secs = parse_reset_duration(raw)
        if secs is None:
            try:
                when = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
            except ValueError:
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            secs = max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
        return secs
    return None


def backoff_delay(attempt: int, backoff_ms: int, retry_after_s: float | None) -> float:
    """Wait before retry number ``attempt + 1`` (0-based attempt that just failed), seconds.

    ``Retry-After`` wins when present; otherwise ``backoff_ms * 2**attempt``. Capped at
    :data:`MAX_DELAY_S`. No jitter, so waits are deterministic.
    """
    delay = retry_after_s if retry_after_s is not None else backoff_ms / 1000.0 * (2**attempt)
    return min(max(delay, 0.0), MAX_DELAY_S)


def call_with_retries(
    attempt: Callable[[], T],
    *,
    retries: int,
    backoff_ms: int,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``attempt`` up to ``retries + 1`` times while it raises a retryable LlmError.

    Non-retryable errors propagate at once. When the last attempt fails after earlier ones,
    the error message gains `` (after N attempts)`` so users see that retries happened.

    Raises:
        LlmError: the last failure.
    """
    n = 0
    while True:
        try:
            return attempt()
        except LlmError as err:
            if not err.retryable or n >= retries:
                if n > 0:
                    err.message = f"{err.message} (after {n + 1} attempts)"
                    err.args = (err.message,)
                raise
            sleep(backoff_delay(n, backoff_ms, err.retry_after_s))
            n += 1
