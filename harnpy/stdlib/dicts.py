"""Dict builtins and methods (spec language.md 3.1, 4.7).

Dict keys are strings and a dict's observable order is the sorted key order: every result
built here is inserted in sorted key order, and callbacks run in that order. Keys given as
other values are rendered with display (``d.get(1)`` reads ``"1"``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harnpy.runtime.ops import dict_key, truthy
from harnpy.runtime.values import CallRequest, StructValue
from harnpy.stdlib._common import is_callable, sorted_dict
from harnpy.stdlib.registry import builtin, method

Gen = Generator[CallRequest, Any, Any]


def _fields(d: Any) -> dict[str, Any] | None:
    if type(d) is dict:
        return d
    if type(d) is StructValue:
        return d.fields
    return None


def entries_of(d: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{key, value}, ...]`` in sorted key order."""
    return [{"key": k, "value": d[k]} for k in sorted(d)]


# --------------------------------------------------------------------------- builtins


@builtin()
def keys(thread: Any, d: Any = None) -> list[str]:
    """``keys(d)``: sorted list of the keys of a dict (or struct fields); ``[]`` otherwise."""
    f = _fields(d)
    return sorted(f) if f is not None else []


@builtin()
def values(thread: Any, d: Any = None) -> list[Any]:
    """``values(d)``: the values in sorted key order; ``[]`` for a non-dict."""
    f = _fields(d)
    return [f[k] for k in sorted(f)] if f is not None else []


@builtin()
def entries(thread: Any, d: Any = None) -> list[dict[str, Any]]:
    """``entries(d)``: ``[{key, value}, ...]`` in sorted key order; ``[]`` for a non-dict."""
    f = _fields(d)
    return entries_of(f) if f is not None else []


# ---------------------------------------------------------------------------- methods


@method("dict")
def dict__keys(thread: Any, d: dict[str, Any]) -> list[str]:
    """``d.keys()``: sorted keys."""
    return sorted(d)


@method("dict")
def dict__values(thread: Any, d: dict[str, Any]) -> list[Any]:
    """``d.values()``: values in sorted key order."""
    return [d[k] for k in sorted(d)]


@method("dict")
def dict__entries(thread: Any, d: dict[str, Any]) -> list[dict[str, Any]]:
    """``d.entries()``: ``[{key, value}, ...]`` in sorted key order."""
    return entries_of(d)


@method("dict")
def dict__count(thread: Any, d: dict[str, Any]) -> int:
    """``d.count()``: number of entries (the ``d.count`` property reads a key instead)."""
    return len(d)


@method("dict")
def dict__has(thread: Any, d: dict[str, Any], k: Any = None) -> bool:
    """``d.has(k)``: the key display(k) is present."""
    return dict_key(k) in d


@method("dict", max_args=2)
def dict__get(thread: Any, d: dict[str, Any], *args: Any) -> Any:
    """``d.get(k, default?)``: value at display(k), else ``default`` (nil); ``d.get()`` is
    nil."""
    if not args:
        return None
    k = dict_key(args[0])
    if k in d:
        return d[k]
    return args[1] if len(args) > 1 else None


@method("dict")
def dict__merge(thread: Any, d: dict[str, Any], other: Any = None) -> dict[str, Any]:
    """``d.merge(other)``: a new dict with ``other``'s entries added (other wins); a
    non-dict ``other`` gives a copy of ``d``."""
    if type(other) is not dict:
        return dict(d)
    merged = dict(d)
    merged.update(other)
    return sorted_dict(merged)


@method("dict")
def dict__remove(thread: Any, d: dict[str, Any], k: Any = None) -> dict[str, Any]:
    """``d.remove(k)``: a new dict without the key display(k)."""
    key = dict_key(k)
    return {name: v for name, v in d.items() if name != key}


@method("dict", callback=True)
def dict__map_values(thread: Any, d: dict[str, Any], f: Any = None) -> Gen:
    """``d.map_values(f)``: same keys, values ``f(value)``; nil when ``f`` is not callable."""
    if not is_callable(f):
        return None
    out: dict[str, Any] = {}
    for k in sorted(d):
        out[k] = yield CallRequest(f, [d[k]])
    return out


@method("dict", callback=True)
def dict__filter(thread: Any, d: dict[str, Any], f: Any = None) -> Gen:
    """``d.filter(f)``: entries whose **value** makes ``f(value)`` truthy."""
    if not is_callable(f):
        return None
    out: dict[str, Any] = {}
    for k in sorted(d):
        if truthy((yield CallRequest(f, [d[k]]))):
            out[k] = d[k]
    return out


@method("dict", aliases=("map_keys",), callback=True)
def dict__rekey(thread: Any, d: dict[str, Any], f: Any = None) -> Gen:
    """``d.rekey(f)`` / ``map_keys(f)``: keys replaced by display(f(key)); on a collision
    the later key in sorted order wins."""
    if not is_callable(f):
        return None
    out: dict[str, Any] = {}
    for k in sorted(d):
        out[dict_key((yield CallRequest(f, [k])))] = d[k]
    return sorted_dict(out)
