"""Display rendering of values: what ``println``, ``to_string`` and interpolation print.

Implements spec language.md 3.2 (display format).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from harnpy.runtime.values import (
    Atomic,
    BoundMethod,
    Builtin,
    Channel,
    Closure,
    Duration,
    EnumNamespace,
    EnumValue,
    Generator,
    HostObject,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    StructType,
    StructValue,
    TaskHandle,
)


def format_float(x: float) -> str:
    """Render a float per spec 3.2: ``2.0``, ``0.30000000000000004``, ``NaN``, ``inf``.

    Integral finite values below 1e15 get one decimal; everything else uses the shortest
    round-trip digits, expanded so that no exponent appears.
    """
    if x != x:
        return "NaN"
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    if x == int(x) and abs(x) < 1e15:
        return f"{x:.1f}"
    r = repr(x)
    if "e" in r or "E" in r:
        r = format(Decimal(r), "f")
    return r


def format_duration(ms: int) -> str:
    """Render a duration: the largest of h/m/s dividing it exactly, else ms (``90s``)."""
    if ms != 0:
        for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
            if ms % size == 0:
                return f"{ms // size}{unit}"
    return f"{ms}ms"


def display(v: Any) -> str:
    """The display string of any Harn value (spec 3.2)."""
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if v is None:
        return "nil"
    if t is float:
        return format_float(v)
    if t is list:
        return "[" + ", ".join([display(x) for x in v]) + "]"
    if t is dict:
        if not v:
            return "{}"
        return "{" + ", ".join([f"{k}: {display(v[k])}" for k in sorted(v)]) + "}"
    return _display_other(v)


def _display_other(v: Any) -> str:
    t = type(v)
    if t is EnumValue:
        if v.fields:
            return f"{v.enum}.{v.variant}(" + ", ".join(display(f) for f in v.fields) + ")"
        return f"{v.enum}.{v.variant}"
    if t is StructValue:
        inner = ", ".join(f"{k}: {display(v.fields[k])}" for k in sorted(v.fields))
        return f"{v.name} {{{inner}}}"
    if t is HSet:
        return "set(" + ", ".join(display(x) for x in v.items) + ")"
    if t is Duration:
        return format_duration(v.ms)
    if t is Closure:
        return "<fn(" + ", ".join(v.code.param_names) + ")>"
    if t is Builtin:
        return f"<builtin {v.name}>"
    if t is BoundMethod:
        return f"<builtin {v.name}>"
    if t is RangeValue:
        return f"{v.start} to {v.end}" + ("" if v.inclusive else " exclusive")
    if t is Pair:
        return f"({display(v.first)}, {display(v.second)})"
    if t is IterValue:
        return "<iter (exhausted)>" if v.exhausted else "<iter>"
    if t is Generator:
        return f"<{v.kind} (done)>" if v.done else f"<{v.kind}>"
    if t is TaskHandle:
        return f"<task:{v.id}>"
    if t is Channel:
        return f"<channel:{v.name}>"
    if t is Atomic:
        return f"<atomic {display(v.value)}>"
    if t is bytes:
        shown = v[:32].hex()
        extra = f"...+{len(v) - 32}" if len(v) > 32 else ""
        return f'b"{shown}"{extra}'
    if t is HostObject:
        return f"<{v.kind}>"
    if t is StructType:
        # The declaration registers a constructor function (spec 3.14): it prints like
        # the reference's constructor closure, whose one parameter is `__fields`.
        return "<fn(__fields)>"
    if t is EnumNamespace:
        return f"<enum {v.name}>"
    return f"<{t.__name__}>"
