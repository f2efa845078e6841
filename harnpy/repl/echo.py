"""How the REPL shows a value: Harn literal syntax, quoted strings, nested values broken over
lines when they do not fit (a harnpy extension of lifecycle.md 9.2, which echoes with the
display rules).

``println`` prints a string as its bare text, so a JSON string echoed with the display rules
(``{"a": 1}``) looks like a dict. The echo therefore writes strings as Harn string literals
(``"{\\"a\\": 1}"``), inside collections too, and keeps every other value in its display
form (``nil``, ``true``, ``2.0``, ``5s``, ``Color.Red``, ``<fn(x)>``...). A list, dict, set,
struct or enum payload whose one-line form is wider than ``width`` columns is written one
element per line, indented by two spaces, recursively.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.values import EnumValue, HSet, Pair, StructValue

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def quote(s: str) -> str:
    """``s`` as a Harn string literal: ``"`` and ``\\`` escaped, ``\\n`` ``\\t`` ``\\r`` ``\\0``
    written as escapes, a ``${`` written ``\\${`` (so the text cannot read as an
    interpolation)."""
    out = "".join(_ESCAPES.get(ch, ch) for ch in s).replace("${", "\\${")
    return f'"{out}"'


def _key(k: Any) -> str:
    return k if type(k) is str and _IDENT.match(k) else quote(str(k))


def _parts(v: Any) -> tuple[str, str, list[str], list[Any]] | None:
    """``(open, close, labels, children)`` of a value shown with its elements, or None for
    a leaf. ``labels[i]`` is the text before child ``i`` (``"key: "`` or "")."""
    t = type(v)
    if t is list:
        return "[", "]", [""] * len(v), list(v)
    if t is dict:
        keys = sorted(v)
        return "{", "}", [f"{_key(k)}: " for k in keys], [v[k] for k in keys]
    if t is StructValue:
        keys = sorted(v.fields)
        return f"{v.name} {{", "}", [f"{_key(k)}: " for k in keys], [v.fields[k] for k in keys]
    if t is HSet:
        items = list(v.items)
        return "set(", ")", [""] * len(items), items
    if t is EnumValue and v.fields:
        return f"{v.enum}.{v.variant}(", ")", [""] * len(v.fields), list(v.fields)
    if t is Pair:
        return "(", ")", ["", ""], [v.first, v.second]
    return None


def flat(v: Any) -> str:
    """The one-line echo form of ``v``."""
    if type(v) is str:
        return quote(v)
    parts = _parts(v)
    if parts is None:
        return display(v)
    opening, closing, labels, children = parts
    if not children and type(v) is dict:
        return "{}"
    inner = ", ".join(label + flat(child) for label, child in zip(labels, children))
    return f"{opening}{inner}{closing}"


def echo(v: Any, width: int = 100) -> str:
    """The echo of ``v`` (module docstring): its :func:`flat` form when it fits in ``width``
    columns, else its elements one per line."""
    return _pretty(v, 0, 0, max(20, width))


def _pretty(v: Any, level: int, used: int, width: int) -> str:
    """``v`` at nesting ``level`` (indentation of its closing line), its first line starting
    after ``used`` columns."""
    one = flat(v)
    parts = _parts(v)
    if parts is None or used + len(one) <= width or not parts[3]:
        return one
    opening, closing, labels, children = parts
    pad = "  " * (level + 1)
    lines = [opening]
    for i, (label, child) in enumerate(zip(labels, children)):
        comma = "," if i < len(children) - 1 else ""
        body = _pretty(child, level + 1, len(pad) + len(label) + len(comma), width)
        lines.append(f"{pad}{label}{body}{comma}")
    lines.append("  " * level + closing)
    return "\n".join(lines)


__all__ = ["echo", "flat", "quote"]
