"""Small helpers shared by the data-format and host builtin modules (private)."""

from __future__ import annotations

from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import Duration


def fail(msg: str) -> HarnThrow:
    """A builtin failure the way the reference reports it: the message string is thrown, so
    ``catch (e)`` binds the bare message and an uncaught one renders ``Thrown: <msg>``."""
    return HarnThrow(msg)


def text(v: Any) -> str:
    """Strings as they are; any other value rendered with display rules (nil -> "")."""
    if type(v) is str:
        return v
    if v is None:
        return ""
    return display(v)


def millis(v: Any) -> float | None:
    """Milliseconds from an int/float count of ms or a duration; None for anything else."""
    t = type(v)
    if t is Duration:
        return float(v.ms)
    if t is int or t is float:
        return float(v)
    return None
