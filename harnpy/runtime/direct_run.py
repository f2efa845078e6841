"""What runs the direct forms of :mod:`harnpy.runtime.direct`: the abort exceptions and
:func:`run_direct`, the call path's entry into a direct form.

Split from the translator so that the call path (:mod:`harnpy.runtime.calls`) imports only
this small module: the translator is imported when the first ``fn`` or loop is compiled.
"""

from __future__ import annotations

from typing import Any

#: Most nested direct calls in one direct run (Python frames: each direct call is one).
DIRECT_DEPTH = 200


class DirectAbort(Exception):
    """Raised inside a direct run to abandon it (the caller re-runs the call on frames)."""


class DepthAbort(DirectAbort):
    """The direct run nested :data:`DIRECT_DEPTH` calls (or reached ``max_depth``)."""


def run_direct(th: Any, direct: Any, callee: Any, *args: Any) -> Any:
    """Run ``direct`` (a ``code.direct``) for ``callee(*args)`` from a frame or a native
    frame of thread ``th``; returns the value, or :data:`NO` when the call must run on frames
    (the direct run aborted, or direct calls are paused after a depth abort)."""
    depth = th.depth
    if th.direct_lo <= depth < th.direct_hi:
        return NO
    budget = th.max_depth - depth - 1
    if budget > DIRECT_DEPTH:
        budget = DIRECT_DEPTH
    try:
        return direct(th, budget, callee, *args)
    except DepthAbort:
        th.direct_lo = depth
        th.direct_hi = depth + DIRECT_DEPTH
        return NO
    except RecursionError:
        th.direct_lo = depth
        th.direct_hi = depth + DIRECT_DEPTH
        return NO
    except Exception:  # noqa: BLE001 - any failure: the frame path runs it and decides
        return NO


#: Returned by :func:`run_direct` when the call must run on frames.
NO: Any = type("NotDirect", (), {"__repr__": lambda self: "NO"})()
