"""Per-provider request rate limits (Harn ``builtins.md``: ``llm_rate_limit``,
``with_rate_limit``).

``llm_rate_limit(provider, {rpm})`` sets a provider's limit in requests per minute (``rpm:
0`` clears it); ``llm_rate_limit(provider)`` reads it (nil when unset). ``with_rate_limit
(provider, fn)`` takes a permit of the provider's sliding one-minute window — waiting on the
runtime clock, as data, until the oldest permit of a full window expires — and then calls
``fn()`` as an ordinary Harn call (``std/agent/_builtins``), returning its value. Without a
limit the permit is free.

The limits and the windows (monotonic milliseconds of the permits taken in the last
minute) are runtime state carried by program snapshots (provider ``llm_rate_limits``).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import push_call, require_instruction_call, thrown
from harnpy.runtime.display import display
from harnpy.runtime.extensions import register_state
from harnpy.runtime.scheduler import block_control
from harnpy.runtime.values import Builtin, Closure
from harnpy.stdlib.registry import builtin

WINDOW_MS = 60_000
BUILTINS_MODULE = "std/agent/_builtins"


class RateLimits:
    """``limits``: provider -> rpm; ``windows``: provider -> monotonic ms of the permits
    taken within the last minute, oldest first."""

    def __init__(self) -> None:
        self.limits: dict[str, int] = {}
        self.windows: dict[str, list[float]] = {}


def state(runtime: Any) -> RateLimits:
    """The runtime's :class:`RateLimits` (created on first use)."""
    st = getattr(runtime, "llm_rate_limits", None)
    if st is None:
        st = RateLimits()
        runtime.llm_rate_limits = st
    return st


def _provider(v: Any, where: str) -> str:
    if type(v) is not str or not v:
        raise thrown(f"{where}: provider must be a non-empty string, got {display(v)}")
    return v


@builtin("llm_rate_limit")
def llm_rate_limit(thread: Any, provider: Any = None, options: Any = None) -> Any:
    """``llm_rate_limit(provider, options?)``: with ``options: {rpm: int}`` set the
    provider's limit (``rpm: 0`` clears it) and return nil; without, return the provider's
    rpm or nil. Throws for a bad provider or ``rpm``."""
    name = _provider(provider, "llm_rate_limit")
    st = state(thread.runtime)
    if options is None:
        return st.limits.get(name)
    if type(options) is not dict:
        raise thrown("llm_rate_limit: options must be a dict like {rpm: 60}")
    rpm = options.get("rpm")
    if type(rpm) is not int or rpm < 0:
        raise thrown(f"llm_rate_limit: rpm must be a non-negative int, got {display(rpm)}")
    if rpm == 0:
        st.limits.pop(name, None)
        st.windows.pop(name, None)
    else:
        st.limits[name] = rpm
    return None


def _take(runtime: Any, name: str) -> float:
    """Take a permit now if the window has room: returns 0, else the monotonic ms at which
    one frees up."""
    st = state(runtime)
    rpm = st.limits.get(name)
    if rpm is None:
        return 0
    now = runtime.clock.monotonic_ms()
    window = [t for t in st.windows.get(name, []) if t > now - WINDOW_MS]
    if len(window) < rpm:
        window.append(now)
        st.windows[name] = window
        return 0
    st.windows[name] = window
    return window[0] + WINDOW_MS


@builtin("__rate_limit_acquire", control=True)
def rate_limit_acquire(thread: Any, provider: Any = None) -> Any:
    """``__rate_limit_acquire(provider)``: take a permit of the provider's window, waiting
    (blocked as data) until one is free. Returns nil."""
    name = _provider(provider, "with_rate_limit")
    rt = thread.runtime
    due = _take(rt, name)
    if not due:
        return None
    waker = block_control(thread, f"a rate-limit permit for {name}")

    def retry() -> None:
        again = _take(rt, name)
        if again:
            rt.scheduler.at(again, retry)
        else:
            waker.wake(None)

    rt.scheduler.at(due, retry)
    return None


@builtin("with_rate_limit", control=True)
def with_rate_limit(thread: Any, provider: Any = None, fn: Any = None) -> Any:
    """``with_rate_limit(provider, fn)``: take a permit of ``provider``'s rate limit
    (``llm_rate_limit``; waits when the last minute's permits are used up), then return
    ``fn()``. Throws for a bad provider or a non-function ``fn``."""
    require_instruction_call(thread, "with_rate_limit")
    _provider(provider, "with_rate_limit")
    if type(fn) not in (Closure, Builtin):
        raise thrown(f"with_rate_limit: expected a function, got {display(fn)}")
    from harnpy.lifecycle.compaction import std_function

    push_call(
        thread, std_function(thread.runtime, BUILTINS_MODULE, "__with_rate_limit"), [provider, fn]
    )
    return None


def _save(thread: Any) -> Any:
    st = getattr(thread.runtime, "llm_rate_limits", None)
    if st is None or not st.limits:
        return None
    return {"limits": dict(st.limits), "windows": {k: list(v) for k, v in st.windows.items()}}


def _load(thread: Any, data: Any) -> Any:
    if type(data) is not dict:
        raise TypeError("llm_rate_limits must be a dict")
    limits, windows = data.get("limits"), data.get("windows")
    if type(limits) is not dict or any(type(v) is not int for v in limits.values()):
        raise TypeError("llm_rate_limits.limits must map providers to ints")
    if type(windows) is not dict or any(
        type(w) is not list or any(type(t) not in (int, float) for t in w) for w in windows.values()
    ):
        raise TypeError("llm_rate_limits.windows must map providers to lists of numbers")
    rt = thread.runtime

    def apply() -> None:
        st = RateLimits()
        st.limits = dict(limits)
        st.windows = {k: [float(t) for t in v] for k, v in windows.items()}
        rt.llm_rate_limits = st

    return apply


register_state("llm_rate_limits", _save, _load)
