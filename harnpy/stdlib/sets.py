"""Set builtins and methods (spec language.md 3.1, 4.8).

Sets are :class:`~harnpy.runtime.values.HSet` values: insertion-ordered, deduplicated by
Harn ``==`` and never mutated (every operation returns a new set). Membership uses
:class:`~harnpy.stdlib._common.EqIndex`, so operations on scalar-valued sets are linear.
Builtins accept a list where a set is expected (it is deduplicated first); any other
non-set argument counts as an empty set.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from harnpy.runtime.ops import truthy
from harnpy.runtime.values import CallRequest, HSet, RangeValue
from harnpy.stdlib._common import EqIndex, dedupe, is_callable, make_set
from harnpy.stdlib.registry import builtin, method

Gen = Generator[CallRequest, Any, Any]


def _items(v: Any) -> list[Any]:
    t = type(v)
    if t is HSet:
        return v.items
    if t is list:
        return dedupe(v)
    return []


def union(a: Any, b: Any) -> HSet:
    """Members of ``a`` then the members of ``b`` not already present."""
    return make_set([*_items(a), *_items(b)])


def intersect(a: Any, b: Any) -> HSet:
    """Members of ``a`` that are also in ``b`` (``a``'s order)."""
    idx = EqIndex(_items(b))
    return HSet.from_unique([x for x in _items(a) if x in idx])


def difference(a: Any, b: Any) -> HSet:
    """Members of ``a`` that are not in ``b``."""
    idx = EqIndex(_items(b))
    return HSet.from_unique([x for x in _items(a) if x not in idx])


def symmetric_difference(a: Any, b: Any) -> HSet:
    """Members in exactly one of ``a`` and ``b`` (``a``'s first, then ``b``'s)."""
    ia, ib = _items(a), _items(b)
    idx_a, idx_b = EqIndex(ia), EqIndex(ib)
    return HSet.from_unique([x for x in ia if x not in idx_b] + [x for x in ib if x not in idx_a])


def is_subset(a: Any, b: Any) -> bool:
    """Every member of ``a`` is in ``b``."""
    idx = EqIndex(_items(b))
    return all(x in idx for x in _items(a))


def is_disjoint(a: Any, b: Any) -> bool:
    """No member of ``a`` is in ``b``."""
    idx = EqIndex(_items(b))
    return not any(x in idx for x in _items(a))


# --------------------------------------------------------------------------- builtins


@builtin("set")
def set_(thread: Any, *args: Any) -> HSet:
    """``set(...)``: a set of the arguments; list, set and range arguments contribute their
    items (one level): ``set([1, 2, 2])`` is ``set(1, 2)``, ``set()`` is empty."""
    items: list[Any] = []
    for a in args:
        t = type(a)
        if t is list:
            items.extend(a)
        elif t is HSet:
            items.extend(a.items)
        elif t is RangeValue:
            items.extend(a.to_list("set"))
        else:
            items.append(a)
    return make_set(items)


@builtin()
def set_add(thread: Any, s: Any = None, v: Any = None) -> HSet:
    """``set_add(s, v)``: a new set with ``v`` added."""
    return make_set([*_items(s), v])


@builtin()
def set_remove(thread: Any, s: Any = None, v: Any = None) -> HSet:
    """``set_remove(s, v)``: a new set without ``v``."""
    return difference(s, [v])


@builtin()
def set_contains(thread: Any, s: Any = None, v: Any = None) -> bool:
    """``set_contains(s, v)``: ``v`` is a member of ``s``."""
    if type(s) is HSet:
        return s.contains(v)
    return v in EqIndex(_items(s))


@builtin("set_union")
def set_union_(thread: Any, a: Any = None, b: Any = None) -> HSet:
    """``set_union(a, b)``."""
    return union(a, b)


@builtin("set_intersect", aliases=("set_intersection",))
def set_intersect_(thread: Any, a: Any = None, b: Any = None) -> HSet:
    """``set_intersect(a, b)``."""
    return intersect(a, b)


@builtin("set_difference")
def set_difference_(thread: Any, a: Any = None, b: Any = None) -> HSet:
    """``set_difference(a, b)``: members of ``a`` not in ``b``."""
    return difference(a, b)


@builtin("set_symmetric_difference")
def set_symmetric_difference_(thread: Any, a: Any = None, b: Any = None) -> HSet:
    """``set_symmetric_difference(a, b)``: members in exactly one of the two."""
    return symmetric_difference(a, b)


@builtin("set_is_subset")
def set_is_subset_(thread: Any, a: Any = None, b: Any = None) -> bool:
    """``set_is_subset(a, b)``: every member of ``a`` is in ``b``."""
    return is_subset(a, b)


@builtin("set_is_superset")
def set_is_superset_(thread: Any, a: Any = None, b: Any = None) -> bool:
    """``set_is_superset(a, b)``: every member of ``b`` is in ``a``."""
    return is_subset(b, a)


@builtin("set_is_disjoint")
def set_is_disjoint_(thread: Any, a: Any = None, b: Any = None) -> bool:
    """``set_is_disjoint(a, b)``: no common member."""
    return is_disjoint(a, b)


# ---------------------------------------------------------------------------- methods


@method("set", aliases=("len",))
def set__count(thread: Any, s: HSet) -> int:
    """``s.count()`` / ``s.len()``: number of members."""
    return len(s.items)


@method("set")
def set__empty(thread: Any, s: HSet) -> bool:
    """``s.empty()``: no members."""
    return not s.items


@method("set")
def set__contains(thread: Any, s: HSet, v: Any = None) -> bool:
    """``s.contains(v)``."""
    return s.contains(v)


@method("set")
def set__add(thread: Any, s: HSet, v: Any = None) -> HSet:
    """``s.add(v)``: a new set with ``v`` added."""
    return s if s.contains(v) else HSet.from_unique([*s.items, v])


@method("set", aliases=("delete",))
def set__remove(thread: Any, s: HSet, v: Any = None) -> HSet:
    """``s.remove(v)`` / ``delete(v)``: a new set without ``v``."""
    return difference(s, [v])


@method("set")
def set__union(thread: Any, s: HSet, other: Any = None) -> HSet:
    """``s.union(other)``."""
    return union(s, other)


@method("set", aliases=("intersection",))
def set__intersect(thread: Any, s: HSet, other: Any = None) -> HSet:
    """``s.intersect(other)`` / ``intersection(other)``."""
    return intersect(s, other)


@method("set")
def set__difference(thread: Any, s: HSet, other: Any = None) -> HSet:
    """``s.difference(other)``."""
    return difference(s, other)


@method("set")
def set__symmetric_difference(thread: Any, s: HSet, other: Any = None) -> HSet:
    """``s.symmetric_difference(other)``."""
    return symmetric_difference(s, other)


@method("set")
def set__is_subset(thread: Any, s: HSet, other: Any = None) -> bool:
    """``s.is_subset(other)``."""
    return is_subset(s, other)


@method("set")
def set__is_superset(thread: Any, s: HSet, other: Any = None) -> bool:
    """``s.is_superset(other)``."""
    return is_subset(other, s)


@method("set")
def set__is_disjoint(thread: Any, s: HSet, other: Any = None) -> bool:
    """``s.is_disjoint(other)``."""
    return is_disjoint(s, other)


@method("set")
def set__to_list(thread: Any, s: HSet) -> list[Any]:
    """``s.to_list()``: the members in insertion order."""
    return list(s.items)


@method("set", callback=True)
def set__map(thread: Any, s: HSet, f: Any = None) -> Gen:
    """``s.map(f)``: the set of ``f(x)`` (deduplicated); nil when ``f`` is not callable."""
    if not is_callable(f):
        return None
    out = []
    for x in s.items:
        out.append((yield CallRequest(f, [x])))
    return make_set(out)


@method("set", callback=True)
def set__filter(thread: Any, s: HSet, f: Any = None) -> Gen:
    """``s.filter(f)``: members where ``f(x)`` is truthy."""
    if not is_callable(f):
        return None
    out = []
    for x in s.items:
        if truthy((yield CallRequest(f, [x]))):
            out.append(x)
    return HSet.from_unique(out)


@method("set", callback=True)
def set__any(thread: Any, s: HSet, f: Any = None) -> Gen:
    """``s.any(f)``: some ``f(x)`` is truthy (stops at the first)."""
    if is_callable(f):
        for x in s.items:
            if truthy((yield CallRequest(f, [x]))):
                return True
    return False


@method("set", aliases=("every",), callback=True)
def set__all(thread: Any, s: HSet, f: Any = None) -> Gen:
    """``s.all(f)`` / ``every(f)``: every ``f(x)`` is truthy (stops at the first falsy)."""
    if is_callable(f):
        for x in s.items:
            if not truthy((yield CallRequest(f, [x]))):
                return False
    return True
