"""Small helpers shared by the core builtin modules (not builtins themselves).

* :func:`is_callable` - which Harn values a callback builtin accepts as a function;
* :func:`as_int` - lenient int coercion used by optional count/index arguments;
* :func:`hash_key` / :class:`EqIndex` - fast membership under Harn ``==`` (spec 3.5) for
  ``unique``, sets and ``tally``-like operations, falling back to a linear
  :func:`~harnpy.runtime.ops.values_equal` scan for values without a structural key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harnpy.runtime.ops import values_equal
from harnpy.runtime.values import (
    BoundMethod,
    Builtin,
    Closure,
    EnumValue,
    HSet,
    Pair,
    StructType,
    StructValue,
)


def is_callable(v: Any) -> bool:
    """True for values a Harn call can target: closures, builtins, bound methods and struct
    constructors (``xs.map(Point)``). Every callback builtin checks its function argument
    with this; the call itself goes through the VM's ordinary call paths."""
    t = type(v)
    return t is Closure or t is Builtin or t is BoundMethod or t is StructType


def as_int(v: Any, default: int | None = None) -> int | None:
    """``v`` as an int for count/index arguments: ints as is, finite floats truncated,
    anything else ``default``."""
    t = type(v)
    if t is int:
        return int(v)
    if t is float and v == v and v not in (float("inf"), float("-inf")):
        return int(v)
    return default


def is_number(v: Any) -> bool:
    """True for Harn ints and floats (never bools)."""
    t = type(v)
    return t is int or t is float


def hash_key(v: Any) -> Any:
    """A hashable key such that ``hash_key(a) == hash_key(b)`` iff ``a == b`` in Harn, or
    None when ``v`` (or something inside it) has no such key.

    Numbers share one tag so that ``1`` and ``1.0`` collide like Harn ``==``; bools get their
    own tag because Python's ``True == 1``.
    """
    t = type(v)
    if t is str:
        return ("s", v)
    if t is bool:
        return ("b", v)
    if t is int:
        return ("n", v)
    if t is float:
        return None if v != v else ("n", v)
    if v is None:
        return ("z",)
    if t is list:
        parts = []
        for x in v:
            k = hash_key(x)
            if k is None:
                return None
            parts.append(k)
        return ("l", tuple(parts))
    if t is dict:
        parts = []
        for name in sorted(v):
            k = hash_key(v[name])
            if k is None:
                return None
            parts.append((name, k))
        return ("d", tuple(parts))
    if t is EnumValue:
        fk = hash_key(v.fields)
        return None if fk is None else ("e", v.enum, v.variant, fk)
    if t is StructValue:
        fk = hash_key(v.fields)
        return None if fk is None else ("t", v.name, fk)
    if t is Pair:
        a = hash_key(v.first)
        b = hash_key(v.second)
        return None if a is None or b is None else ("p", a, b)
    if t is bytes:
        return ("y", v)
    return None


class EqIndex:
    """A growing collection answering "is a value ``==`` to a member?" quickly.

    Values with a :func:`hash_key` are found in a dict; the rest by a linear scan.
    """

    __slots__ = ("keys", "others")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self.keys: set[Any] = set()
        self.others: list[Any] = []
        for it in items:
            self.add(it)

    def add(self, v: Any) -> bool:
        """Add ``v``; return False when an equal member was already present."""
        k = hash_key(v)
        if k is not None:
            if k in self.keys:
                return False
            self.keys.add(k)
            return True
        if any(values_equal(v, x) for x in self.others):
            return False
        self.others.append(v)
        return True

    def __contains__(self, v: Any) -> bool:
        k = hash_key(v)
        if k is not None:
            return k in self.keys
        return any(values_equal(v, x) for x in self.others)


def dedupe(items: Iterable[Any]) -> list[Any]:
    """The items in order with later duplicates (under Harn ``==``) dropped."""
    seen = EqIndex()
    return [x for x in items if seen.add(x)]


def make_set(items: Iterable[Any]) -> HSet:
    """A new :class:`HSet` of ``items`` (deduplicated, insertion order kept)."""
    return HSet.from_unique(dedupe(items))


def sorted_dict(d: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``d`` whose insertion order is the sorted key order (spec 3.1)."""
    return {k: d[k] for k in sorted(d)}
