"""List methods (spec language.md 4.6).

All methods return new values (lists are values, 3.8). Methods taking a Harn function are
callback builtins: Python generators that do ``r = yield CallRequest(f, [x])`` for each call
(see :mod:`harnpy.stdlib.registry`); ``find``/``any``/``all``/``none``/``find_index`` stop
at the first decisive result. A callback method given a non-callable argument returns the
reference's neutral value (``nil`` for ``map``, ``false`` for ``any``, ...).
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import Any

from harnpy.runtime.calls import fast_function
from harnpy.runtime.display import display
from harnpy.runtime.ops import compare, truthy, values_equal
from harnpy.runtime.values import CallRequest, HSet, RangeValue, wrap_i64
from harnpy.stdlib._common import as_int, dedupe, is_callable, sorted_dict
from harnpy.stdlib.registry import method

Gen = Generator[CallRequest, Any, Any]

_cmp_key = functools.cmp_to_key(compare)


def sort_values(items: list[Any]) -> list[Any]:
    """Stable sort by the 3.5 ordering (incomparable values compare equal).

    Homogeneous lists of ints/floats (without NaN) or of strings use Python's native
    ordering directly, which agrees with 3.5 there and is much faster."""
    kinds = {type(x) for x in items}
    if kinds <= _NUMERIC and not (float in kinds and any(x != x for x in items)):
        return sorted(items)
    if kinds == _STR:
        return sorted(items)
    return sorted(items, key=_cmp_key)


_NUMERIC = frozenset({int, float})
_STR = frozenset({str})


def sum_values(items: Any) -> int | float:
    """Sum of the numbers among ``items`` (others ignored): wrapping int, float if any float."""
    total_i = 0
    total_f = 0.0
    has_float = False
    for x in items:
        t = type(x)
        if t is int:
            total_i += x
        elif t is float:
            has_float = True
            total_f += x
    if has_float:
        return total_f + total_i
    return wrap_i64(total_i)


def extreme(items: Any, sign: int) -> Any:
    """First minimum (``sign=-1``) or maximum (``sign=1``) under :func:`compare`, or nil."""
    best: Any = None
    first = True
    for x in items:
        if first:
            best = x
            first = False
        elif compare(x, best) == sign:
            best = x
    return best


# ------------------------------------------------------------------- size and ends


@method("list")
def list__count(thread: Any, xs: list[Any]) -> int:
    """``xs.count()``: number of items (same as the ``.count`` property)."""
    return len(xs)


@method("list")
def list__empty(thread: Any, xs: list[Any]) -> bool:
    """``xs.empty()``: no items."""
    return not xs


@method("list")
def list__first(thread: Any, xs: list[Any], n: Any = None) -> Any:
    """``xs.first()``: first item or nil; ``xs.first(n)``: list of the first ``n`` items."""
    if n is None:
        return xs[0] if xs else None
    k = max(as_int(n, 0) or 0, 0)
    return xs[:k]


@method("list")
def list__last(thread: Any, xs: list[Any], n: Any = None) -> Any:
    """``xs.last()``: last item or nil; ``xs.last(n)``: list of the last ``n`` items."""
    if n is None:
        return xs[-1] if xs else None
    k = max(as_int(n, 0) or 0, 0)
    return xs[len(xs) - k :] if k else []


# -------------------------------------------------------------------- callback methods


@method("list", callback=True)
def list__map(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.map(f)``: list of ``f(x)`` (nil when ``f`` is not callable)."""
    if not is_callable(f):
        return None
    fast = fast_function(f)
    if fast is not None:
        return [fast(thread, x) for x in xs]
    out = []
    for x in xs:
        out.append((yield CallRequest(f, [x])))
    return out


@method("list", callback=True)
def list__filter(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.filter(f)``: items where ``f(x)`` is truthy."""
    if not is_callable(f):
        return None
    fast = fast_function(f)
    if fast is not None:
        return [x for x in xs if truthy(fast(thread, x))]
    out = []
    for x in xs:
        if truthy((yield CallRequest(f, [x]))):
            out.append(x)
    return out


@method("list", callback=True)
def list__flat_map(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.flat_map(f)``: ``f(x)`` results concatenated; list results are spliced, other
    results kept as single items."""
    if not is_callable(f):
        return None
    out: list[Any] = []
    for x in xs:
        r = yield CallRequest(f, [x])
        if type(r) is list:
            out.extend(r)
        else:
            out.append(r)
    return out


@method("list", callback=True)
def list__reduce(thread: Any, xs: list[Any], init: Any = None, f: Any = None) -> Gen:
    """``xs.reduce(init, f)``: ``acc = f(acc, x)`` left to right starting from ``init``."""
    if not is_callable(f):
        return None
    acc = init
    fast = fast_function(f)
    if fast is not None:
        for x in xs:
            acc = fast(thread, acc, x)
        return acc
    for x in xs:
        acc = yield CallRequest(f, [acc, x])
    return acc


@method("list", callback=True)
def list__find(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.find(f)``: first item where ``f(x)`` is truthy, or nil."""
    if is_callable(f):
        for x in xs:
            if truthy((yield CallRequest(f, [x]))):
                return x
    return None


@method("list", callback=True)
def list__find_index(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.find_index(f)``: index of the first item where ``f(x)`` is truthy, or -1."""
    if is_callable(f):
        for i, x in enumerate(xs):
            if truthy((yield CallRequest(f, [x]))):
                return i
    return -1


@method("list", callback=True)
def list__any(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.any(f)``: some ``f(x)`` is truthy (stops at the first)."""
    if is_callable(f):
        for x in xs:
            if truthy((yield CallRequest(f, [x]))):
                return True
    return False


@method("list", aliases=("every",), callback=True)
def list__all(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.all(f)`` / ``every(f)``: every ``f(x)`` is truthy (stops at the first falsy)."""
    if is_callable(f):
        for x in xs:
            if not truthy((yield CallRequest(f, [x]))):
                return False
    return True


@method("list", callback=True)
def list__none(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.none(f)``: no ``f(x)`` is truthy; ``xs.none()`` is ``xs.empty()``."""
    if not is_callable(f):
        return not xs
    for x in xs:
        if truthy((yield CallRequest(f, [x]))):
            return False
    return True


@method("list", aliases=("each",), callback=True)
def list__for_each(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.for_each(f)`` / ``each(f)``: calls ``f(x)`` for each item; nil."""
    if is_callable(f):
        for x in xs:
            yield CallRequest(f, [x])
    return None


@method("list", callback=True)
def list__sort_by(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.sort_by(f)``: stable sort by the 3.5 ordering of ``f(x)``."""
    if not is_callable(f):
        return None
    keyed = []
    for x in xs:
        keyed.append(((yield CallRequest(f, [x])), x))
    keyed.sort(key=lambda kv: _cmp_key(kv[0]))
    return [x for _, x in keyed]


def _extreme_by(xs: list[Any], f: Any, sign: int) -> Gen:
    if not xs or not is_callable(f):
        return None
    best = xs[0]
    best_key = yield CallRequest(f, [best])
    for x in xs[1:]:
        k = yield CallRequest(f, [x])
        if compare(k, best_key) == sign:
            best, best_key = x, k
    return best


@method("list", callback=True)
def list__min_by(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.min_by(f)``: first item with the smallest ``f(x)``; nil when empty."""
    return (yield from _extreme_by(xs, f, -1))


@method("list", callback=True)
def list__max_by(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.max_by(f)``: first item with the largest ``f(x)``; nil when empty."""
    return (yield from _extreme_by(xs, f, 1))


@method("list", callback=True)
def list__partition(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.partition(f)``: ``[[items with truthy f(x)], [the others]]``."""
    if not is_callable(f):
        return None
    yes: list[Any] = []
    no: list[Any] = []
    for x in xs:
        (yes if truthy((yield CallRequest(f, [x]))) else no).append(x)
    return [yes, no]


@method("list", callback=True)
def list__group_by(thread: Any, xs: list[Any], f: Any = None) -> Gen:
    """``xs.group_by(f)``: dict from display(f(x)) to the list of items with that key."""
    if not is_callable(f):
        return None
    groups: dict[str, list[Any]] = {}
    for x in xs:
        k = display((yield CallRequest(f, [x])))
        groups.setdefault(k, []).append(x)
    return sorted_dict(groups)


# ------------------------------------------------------------------ plain methods


@method("list")
def list__sort(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.sort()``: stable sort by the 3.5 ordering (numbers, strings, pairs)."""
    return sort_values(xs)


@method("list")
def list__reverse(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.reverse()``: items in reverse order."""
    return xs[::-1]


@method("list")
def list__unique(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.unique()``: first occurrence of each distinct item (Harn ``==``), in order."""
    return dedupe(xs)


@method("list")
def list__compact(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.compact()``: items without nils."""
    return [x for x in xs if x is not None]


@method("list")
def list__flatten(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.flatten()``: nested lists spliced one level deep."""
    out: list[Any] = []
    for x in xs:
        if type(x) is list:
            out.extend(x)
        else:
            out.append(x)
    return out


@method("list")
def list__join(thread: Any, xs: list[Any], sep: Any = None) -> str:
    """``xs.join(sep?)``: display of the items joined by display(sep) (default ``""``)."""
    return ("" if sep is None else display(sep)).join(display(x) for x in xs)


@method("list")
def list__contains(thread: Any, xs: list[Any], v: Any = None) -> bool:
    """``xs.contains(v)``: some item ``== v``."""
    return any(values_equal(x, v) for x in xs)


@method("list")
def list__index_of(thread: Any, xs: list[Any], v: Any = None) -> int:
    """``xs.index_of(v)``: index of the first item ``== v``, or -1."""
    for i, x in enumerate(xs):
        if values_equal(x, v):
            return i
    return -1


@method("list")
def list__take(thread: Any, xs: list[Any], n: Any = None) -> list[Any]:
    """``xs.take(n)``: the first ``n`` items."""
    return xs[: max(as_int(n, 0) or 0, 0)]


@method("list")
def list__skip(thread: Any, xs: list[Any], n: Any = None) -> list[Any]:
    """``xs.skip(n)``: all but the first ``n`` items."""
    return xs[max(as_int(n, 0) or 0, 0) :]


@method("list")
def list__slice(thread: Any, xs: list[Any], start: Any = None, end: Any = None) -> list[Any]:
    """``xs.slice(a, b?)``: items ``[a, b)``; negative bounds count from the end; clamped."""
    n = len(xs)

    def bound(v: Any, default: int) -> int:
        i = as_int(v, default)
        assert i is not None
        return max(n + i, 0) if i < 0 else min(i, n)

    a = bound(start, 0)
    b = n if end is None else bound(end, n)
    return xs[a:b] if b > a else []


@method("list")
def list__sum(thread: Any, xs: list[Any]) -> int | float:
    """``xs.sum()``: sum of the numbers (wrapping int; float if any float; others ignored)."""
    return sum_values(xs)


@method("list")
def list__min(thread: Any, xs: list[Any]) -> Any:
    """``xs.min()``: first smallest item by the 3.5 ordering, nil when empty."""
    return extreme(xs, -1)


@method("list")
def list__max(thread: Any, xs: list[Any]) -> Any:
    """``xs.max()``: first largest item by the 3.5 ordering, nil when empty."""
    return extreme(xs, 1)


@method("list", max_args=1)
def list__push(thread: Any, xs: list[Any], *args: Any) -> list[Any]:
    """``xs.push(x)``: a new list with ``x`` appended."""
    return [*xs, args[0]] if args else list(xs)


@method("list")
def list__pop(thread: Any, xs: list[Any]) -> list[Any]:
    """``xs.pop()``: a new list without the last item (the list, not the item)."""
    return xs[:-1]


@method("list")
def list__enumerate(thread: Any, xs: list[Any]) -> list[dict[str, Any]]:
    """``xs.enumerate()``: list of ``{index, value}`` dicts."""
    return [{"index": i, "value": x} for i, x in enumerate(xs)]


def _as_items(v: Any) -> list[Any] | None:
    t = type(v)
    if t is list:
        return v
    if t is HSet:
        return v.items
    if t is RangeValue:
        return v.to_list()
    return None


@method("list")
def list__zip(thread: Any, xs: list[Any], other: Any = None) -> list[list[Any]]:
    """``xs.zip(other)``: ``[[x0, y0], [x1, y1], ...]`` up to the shorter length; a
    non-collection ``other`` gives ``[]``."""
    ys = _as_items(other)
    if ys is None:
        return []
    return [[a, b] for a, b in zip(xs, ys)]


@method("list")
def list__tally(thread: Any, xs: list[Any]) -> dict[str, int]:
    """``xs.tally()``: dict from display(x) to its number of occurrences."""
    counts: dict[str, int] = {}
    for x in xs:
        k = display(x)
        counts[k] = counts.get(k, 0) + 1
    return sorted_dict(counts)


@method("list", aliases=("each_slice",))
def list__chunk(thread: Any, xs: list[Any], n: Any = None) -> list[list[Any]]:
    """``xs.chunk(n)`` / ``each_slice(n)``: consecutive chunks of ``n`` items (the last
    may be shorter); ``n`` defaults to 1 and is at least 1."""
    size = max(as_int(n, 1) or 1, 1) if n is not None else 1
    return [xs[i : i + size] for i in range(0, len(xs), size)]


@method("list", aliases=("each_cons", "sliding_window"))
def list__window(thread: Any, xs: list[Any], n: Any = None, step: Any = None) -> list[list[Any]]:
    """``xs.window(n, step?)`` / ``each_cons(n)``: sliding windows of ``n`` items (default
    2) advancing by ``step`` (default 1); ``[]`` when ``n`` exceeds the length."""
    size = max(as_int(n, 2) or 1, 1) if n is not None else 2
    stride = max(as_int(step, 1) or 1, 1) if step is not None else 1
    return [xs[i : i + size] for i in range(0, len(xs) - size + 1, stride)]


@method("list")
def list__to_set(thread: Any, xs: list[Any]) -> HSet:
    """``xs.to_set()``: a set of the distinct items."""
    return HSet.from_unique(dedupe(xs))
