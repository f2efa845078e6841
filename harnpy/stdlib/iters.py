"""Ranges, pairs and lazy iterators (spec language.md 3.17, 4.15): ``iter``, ``pair``,
``to_list``, range methods and iter combinators/sinks.

Representation (fields of :class:`~harnpy.runtime.values.IterValue`):

* **pure** iter: ``source`` is a Python iterator of ready Harn values (lists, dicts as
  :class:`Pair` s in sorted key order, sets, strings, ranges, channels, and every
  callback-free combinator over a pure iter). Consumers may iterate ``source`` directly and
  must set ``exhausted = True`` when it runs out.
* **generator-backed** iter: ``source is None``, ``stages == []``, ``origin`` is the Harn
  :class:`Generator`. Items are fetched with ``yield CallRequest(BoundMethod(gen, "next"),
  [])`` which the interpreter answers with the generator's ``{done, value}`` dict.
* **staged** iter: ``source is None``, ``origin`` is the upstream :class:`IterValue` and
  ``stages == [(kind, state)]`` holds exactly one lazy stage (``map``, ``filter``,
  ``take`` ...). ``state`` is a small dict of the stage's function and counters.

:func:`iter_pull` is the one way to get the next item of any iter: a generator that yields
:class:`CallRequest` s for stage functions and returns ``(True, value)`` or ``(False,
None)``. Sinks (``to_list``, ``sum``, ``.next()`` ...) are callback builtins built on it, so
``iter(xs).map(f).take(2).to_list()`` calls ``f`` twice. Iters are single-pass and fused:
once a pull reports the end, ``exhausted`` stays true and later pulls return the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterator
from typing import Any

from harnpy.runtime.calls import fast_function
from harnpy.runtime.errors import type_error
from harnpy.runtime.ops import compare, truthy, values_equal
from harnpy.runtime.values import (
    BoundMethod,
    CallRequest,
    Channel,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    type_name,
    wrap_i64,
)
from harnpy.runtime.values import (
    Generator as HarnGenerator,
)
from harnpy.stdlib._common import is_callable, make_set, sorted_dict
from harnpy.stdlib.registry import builtin, method

Gen = Generator[CallRequest, Any, Any]
Pulled = tuple[bool, Any]
_END: Pulled = (False, None)

# ------------------------------------------------------------------------- construction


def _channel_items(ch: Channel) -> Iterator[Any]:
    # Tasks run sequentially, so the queued messages are all there will be for now.
    while ch.items:
        yield ch.items.pop(0)


def make_iter(v: Any) -> IterValue:
    """``iter(v)``: a lazy iter over a list, dict (pairs in sorted key order), set, string
    (characters), range, generator/stream or channel; an iter is returned as is. The source
    collection is snapshotted.

    Raises ``Type error: iter: cannot iterate over T`` for other values."""
    t = type(v)
    if t is IterValue:
        return v if v.memo is None else sequence_cursor(v)
    if t is list:
        return IterValue(iter(list(v)))
    if t is RangeValue:
        return IterValue(iter(v.py_range()))
    if t is dict:
        return IterValue(iter([Pair(k, v[k]) for k in sorted(v)]))
    if t is HSet:
        return IterValue(iter(list(v.items)))
    if t is str:
        return IterValue(iter(list(v)))
    if t is HarnGenerator:
        return IterValue(None, origin=v)
    if t is Channel:
        return IterValue(_channel_items(v), origin=v)
    raise type_error(f"iter: cannot iterate over {type_name(v)}")


def _staged(up: IterValue, kind: str, **state: Any) -> IterValue:
    it = IterValue(None, origin=up)
    it.stages.append((kind, state))
    return it


def _range_aware(fn: Callable[..., IterValue]) -> Callable[..., IterValue]:
    """Combinators called on a range return a lazy sequence (see the section below)."""

    def wrapper(thread: Any, v: Any, *args: Any) -> IterValue:
        # the registry takes the arity of ``fn`` (``__wrapped__``): a surplus argument is
        # its E324 error before this runs
        r = fn(thread, v, *args)
        return make_sequence(r) if type(v) is RangeValue else r

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _pure(it: IterValue) -> bool:
    """Whether a combinator may wrap ``it`` in a Python generator pipeline.

    Always False: every stage is kept as data (``stages``) over a list/range iterator
    source, so that iterators in flight can be snapshotted (see harnpy/runtime/snapshot/).
    The ``_gen_*`` helpers remain for sources that are host iterators already.
    """
    return False


def _drain_source(it: IterValue) -> Iterator[Any]:
    """Items of a pure iter, marking it exhausted when its source runs out."""
    if it.exhausted:
        return
    assert it.source is not None
    yield from it.source
    it.exhausted = True


# ------------------------------------------------------------------------------ pulling


def iter_pull(it: IterValue, thread: Any = None) -> Gen:
    """Next item of ``it``: ``(True, value)`` or ``(False, None)`` at the end.

    A generator: it yields :class:`CallRequest` s for stage functions (and generator
    ``next`` calls) and expects their results to be sent back."""
    if it.exhausted:
        return _END
    if it.source is not None:
        for v in it.source:
            return (True, v)
        it.exhausted = True
        return _END
    if not it.stages:
        origin = it.origin
        if type(origin) is HarnGenerator and not origin.done:
            r = yield CallRequest(BoundMethod(origin, "next"), [])
            if type(r) is dict and not truthy(r.get("done")):
                return (True, r.get("value"))
        it.exhausted = True
        return _END
    kind, state = it.stages[0]
    res = yield from _STAGE_PULL[kind](it.origin, state, thread)
    if not res[0]:
        it.exhausted = True
    return res


def _fast_iter(it: Any, thread: Any) -> Iterator[Any] | None:
    """A Python iterator over the remaining items of ``it`` when ``it`` is a chain of ``map``
    and ``filter`` stages whose functions are expression closures
    (:func:`~harnpy.runtime.calls.fast_function`: they cannot call, block or park) over a
    pure source or a lazy sequence's memo; None otherwise. Nothing is consumed until it is
    iterated.

    It is as lazy as the pulls it replaces (one item at a time through every stage, a lazy
    sequence's memo filled as items pass), so the order of evaluation, and so the first
    error, are those of the callback path; it only runs without a native frame per pull."""
    if type(it) is not IterValue or it.exhausted or it.memo is not None:
        return None
    if it.source is not None:
        return _drain_source(it)
    if len(it.stages) != 1:
        return None
    kind, st = it.stages[0]
    if kind == "memo":
        seq = it.origin
        if type(seq) is not IterValue or seq.memo is None:
            return None
        up = None
        if not seq.exhausted:
            up = _fast_iter(seq.origin, thread)
            if up is None:
                return None
        return _memo_tee(it, seq, st, up)
    if kind not in ("map", "filter"):
        return None
    fast = fast_function(st["f"])
    if fast is None:
        return None
    up = _fast_iter(it.origin, thread)
    if up is None:
        return None
    if kind == "map":
        return _map_items(it, fast, up, thread)
    return _filter_items(it, fast, up, thread)


def _map_items(it: IterValue, fast: Any, up: Iterator[Any], thread: Any) -> Iterator[Any]:
    for v in up:
        yield fast(thread, v)
    it.exhausted = True


def _filter_items(it: IterValue, fast: Any, up: Iterator[Any], thread: Any) -> Iterator[Any]:
    for v in up:
        if truthy(fast(thread, v)):
            yield v
    it.exhausted = True


def _memo_tee(
    it: IterValue, seq: IterValue, st: dict[str, Any], up: Iterator[Any] | None
) -> Iterator[Any]:
    """A memo cursor's items: those already memoized, then (``up``) new ones, memoized as
    they pass (see :func:`_pull_memo`)."""
    memo = seq.memo
    assert memo is not None
    while st["pos"] < len(memo):
        v = memo[st["pos"]]
        st["pos"] += 1
        yield v
    if up is not None:
        for v in up:
            memo.append(v)
            st["pos"] = len(memo)
            yield v
        seq.exhausted = True
    it.exhausted = True


def pull_all(it: IterValue, thread: Any = None) -> Gen:
    """All remaining items of ``it`` as a list (callback generator, see :func:`iter_pull`)."""
    if it.source is not None:
        return list(_drain_source(it))
    fast = _fast_iter(it, thread)
    if fast is not None:
        return list(fast)
    out: list[Any] = []
    while True:
        ok, v = yield from iter_pull(it, thread)
        if not ok:
            return out
        out.append(v)


def _pull_map(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    ok, v = yield from iter_pull(up, thread)
    if not ok:
        return _END
    fast = fast_function(st["f"])
    if fast is not None:
        return (True, fast(thread, v))
    return (True, (yield CallRequest(st["f"], [v])))


def _pull_filter(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    fast = fast_function(st["f"])
    while True:
        ok, v = yield from iter_pull(up, thread)
        if not ok:
            return _END
        if fast is not None:
            if truthy(fast(thread, v)):
                return (True, v)
        elif truthy((yield CallRequest(st["f"], [v]))):
            return (True, v)


def _pull_flat_map(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    while True:
        cur = st["cur"]
        if cur is not None:
            ok, v = yield from iter_pull(cur, thread)
            if ok:
                return (True, v)
            st["cur"] = None
        ok, v = yield from iter_pull(up, thread)
        if not ok:
            return _END
        r = yield CallRequest(st["f"], [v])
        if type(r) is list or type(r) is IterValue:
            st["cur"] = make_iter(r)
        else:
            return (True, r)


def _pull_take(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    if st["n"] <= 0:
        return _END
    ok, v = yield from iter_pull(up, thread)
    if not ok:
        return _END
    st["n"] -= 1
    return (True, v)


def _pull_skip(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    while st["n"] > 0:
        ok, _ = yield from iter_pull(up, thread)
        if not ok:
            return _END
        st["n"] -= 1
    return (yield from iter_pull(up, thread))


def _pull_take_while(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    if st["stopped"]:
        return _END
    ok, v = yield from iter_pull(up, thread)
    if ok and truthy((yield CallRequest(st["f"], [v]))):
        return (True, v)
    st["stopped"] = True
    return _END


def _pull_skip_while(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    if st["primed"]:
        return (yield from iter_pull(up, thread))
    while True:
        ok, v = yield from iter_pull(up, thread)
        if not ok:
            return _END
        if not truthy((yield CallRequest(st["f"], [v]))):
            st["primed"] = True
            return (True, v)


def _pull_zip(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    ok, a = yield from iter_pull(up, thread)
    if not ok:
        return _END
    ok, b = yield from iter_pull(st["other"], thread)
    if not ok:
        return _END
    return (True, Pair(a, b))


def _pull_enumerate(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    ok, v = yield from iter_pull(up, thread)
    if not ok:
        return _END
    i = st["i"]
    st["i"] = i + 1
    return (True, Pair(i, v))


def _pull_chain(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    if st["on_first"]:
        ok, v = yield from iter_pull(up, thread)
        if ok:
            return (True, v)
        st["on_first"] = False
    return (yield from iter_pull(st["other"], thread))


def _pull_chunks(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    buf: list[Any] = []
    while len(buf) < st["n"]:
        ok, v = yield from iter_pull(up, thread)
        if not ok:
            break
        buf.append(v)
    return (True, buf) if buf else _END


def _pull_windows(up: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    buf: list[Any] = st["buf"]
    if not st["started"]:
        while len(buf) < st["n"]:
            ok, v = yield from iter_pull(up, thread)
            if not ok:
                return _END
            buf.append(v)
        st["started"] = True
        return (True, list(buf))
    ok, v = yield from iter_pull(up, thread)
    if not ok:
        return _END
    buf.pop(0)
    buf.append(v)
    return (True, list(buf))


_STAGE_PULL: dict[str, Callable[..., Gen]] = {
    "map": _pull_map,
    "filter": _pull_filter,
    "flat_map": _pull_flat_map,
    "take": _pull_take,
    "skip": _pull_skip,
    "take_while": _pull_take_while,
    "skip_while": _pull_skip_while,
    "zip": _pull_zip,
    "enumerate": _pull_enumerate,
    "chain": _pull_chain,
    "chunks": _pull_chunks,
    "windows": _pull_windows,
}


# ----------------------------------------------------------- pure (callback-free) stages


def _gen_enumerate(src: Iterator[Any]) -> Iterator[Pair]:
    for i, v in enumerate(src):
        yield Pair(i, v)


def _gen_zip(a: Iterator[Any], b: Iterator[Any]) -> Iterator[Pair]:
    for x, y in zip(a, b):
        yield Pair(x, y)


def _gen_chunks(src: Iterator[Any], n: int) -> Iterator[list[Any]]:
    while True:
        chunk = list(itertools.islice(src, n))
        if not chunk:
            return
        yield chunk


def _gen_windows(src: Iterator[Any], n: int) -> Iterator[list[Any]]:
    buf = list(itertools.islice(src, n))
    if len(buf) < n:
        return
    yield list(buf)
    for v in src:
        buf.pop(0)
        buf.append(v)
        yield list(buf)


# --------------------------------------------------------------------------- builtins


@builtin("iter")
def iter_(thread: Any, v: Any = None) -> IterValue:
    """``iter(x)``: a lazy single-pass iter over ``x`` (see :func:`make_iter`)."""
    return make_iter(v)


@builtin()
def pair(thread: Any, a: Any = None, b: Any = None) -> Pair:
    """``pair(a, b)``: the pair ``(a, b)`` with ``.first``/``.second``."""
    return Pair(a, b)


@builtin(callback=True)
def to_list(thread: Any, v: Any = None) -> Gen:
    """``to_list(v)``: items of a list (copy), set, range or iter (drained); ``[v]`` for
    anything else."""
    t = type(v)
    if t is list:
        return list(v)
    if t is HSet:
        return list(v.items)
    if t is RangeValue:
        return v.to_list()
    if t is IterValue:
        return (yield from pull_all(make_iter(v), thread))
    return [v]


# ----------------------------------------------------------------- .iter() on collections


@method(("list", "dict", "set", "string", "range", "iter"), "iter")
def collection__iter(thread: Any, v: Any) -> IterValue:
    """``x.iter()``: same as ``iter(x)``."""
    return make_iter(v)


# ------------------------------------------------------------------------ range methods


@method("range", aliases=("count",))
def range__len(thread: Any, r: RangeValue) -> int:
    """``r.len()`` / ``r.count()``: number of ints in the range (O(1); saturates at the
    largest int)."""
    return r.len_i64()


@method("range")
def range__empty(thread: Any, r: RangeValue) -> bool:
    """``r.empty()``: the range has no ints."""
    return r.length() == 0


@method("range")
def range__first(thread: Any, r: RangeValue) -> int | None:
    """``r.first()``: the start, nil if empty."""
    pr = r.py_range()
    return pr[0] if pr else None


@method("range")
def range__last(thread: Any, r: RangeValue) -> int | None:
    """``r.last()``: the last int, nil if empty."""
    pr = r.py_range()
    return pr[-1] if pr else None


@method("range")
def range__contains(thread: Any, r: RangeValue, n: Any = None) -> bool:
    """``r.contains(n)``: ``n`` is an int inside the range."""
    return type(n) is int and n in r.py_range()


@method("range")
def range__to_list(thread: Any, r: RangeValue) -> list[int]:
    """``r.to_list()``: the ints as a list (at most ``MAX_BUILD_SIZE``, else E323)."""
    return r.to_list("range.to_list")


@method("range")
def range__sum(thread: Any, r: RangeValue) -> int:
    """``r.sum()``: sum of the ints (O(1), wrapping)."""
    pr = r.py_range()
    return wrap_i64((pr[0] + pr[-1]) * r.length() // 2) if pr else 0


@method("range")
def range__min(thread: Any, r: RangeValue) -> int | None:
    """``r.min()``: the smallest int, nil if empty."""
    pr = r.py_range()
    return pr[0] if pr else None


@method("range")
def range__max(thread: Any, r: RangeValue) -> int | None:
    """``r.max()``: the largest int, nil if empty."""
    pr = r.py_range()
    return pr[-1] if pr else None


@method("range")
def range__to_set(thread: Any, r: RangeValue) -> HSet:
    """``r.to_set()``: the ints as a set."""
    return HSet.from_unique(r.to_list("range.to_set"))


# ---------------------------------------------------------- combinators (iter and range)

_BOTH = ("iter", "range")


def _need_callable(name: str, f: Any) -> None:
    if not is_callable(f):
        raise type_error(f"iter.{name}: expected callable")


def _need_count(name: str, n: Any, positive: bool) -> int:
    if type(n) is not int or n < (1 if positive else 0):
        if positive:
            raise type_error(f"iter.{name}: size must be a positive int")
        raise type_error(f"iter.{name}: expected non-negative int")
    return int(n)


@method(_BOTH, "map")
@_range_aware
def iter__map(thread: Any, v: Any, f: Any = None) -> IterValue:
    """``it.map(f)``: lazy ``f(x)`` for each item."""
    _need_callable("map", f)
    return _staged(make_iter(v), "map", f=f)


@method(_BOTH, "filter")
@_range_aware
def iter__filter(thread: Any, v: Any, f: Any = None) -> IterValue:
    """``it.filter(f)``: lazily keep items where ``f(x)`` is truthy."""
    _need_callable("filter", f)
    return _staged(make_iter(v), "filter", f=f)


@method(_BOTH, "flat_map")
@_range_aware
def iter__flat_map(thread: Any, v: Any, f: Any = None) -> IterValue:
    """``it.flat_map(f)``: lazily splice list/iter results of ``f(x)`` (others kept)."""
    _need_callable("flat_map", f)
    return _staged(make_iter(v), "flat_map", f=f, cur=None)


@method(_BOTH, "take_while")
@_range_aware
def iter__take_while(thread: Any, v: Any, f: Any = None) -> IterValue:
    """``it.take_while(f)``: items until the first where ``f(x)`` is falsy (that item is
    consumed and dropped)."""
    _need_callable("take_while", f)
    return _staged(make_iter(v), "take_while", f=f, stopped=False)


@method(_BOTH, "skip_while")
@_range_aware
def iter__skip_while(thread: Any, v: Any, f: Any = None) -> IterValue:
    """``it.skip_while(f)``: drop items while ``f(x)`` is truthy, then yield the rest."""
    _need_callable("skip_while", f)
    return _staged(make_iter(v), "skip_while", f=f, primed=False)


@method(_BOTH, "take")
@_range_aware
def iter__take(thread: Any, v: Any, n: Any = None) -> IterValue:
    """``it.take(n)``: at most the next ``n`` items (never reads further)."""
    count = _need_count("take", n, positive=False)
    up = make_iter(v)
    if _pure(up):
        return IterValue(itertools.islice(_drain_source(up), count))
    return _staged(up, "take", n=count)


@method(_BOTH, "skip")
@_range_aware
def iter__skip(thread: Any, v: Any, n: Any = None) -> IterValue:
    """``it.skip(n)``: all but the next ``n`` items (skipped lazily on the first pull)."""
    count = _need_count("skip", n, positive=False)
    up = make_iter(v)
    if _pure(up):
        return IterValue(itertools.islice(_drain_source(up), count, None))
    return _staged(up, "skip", n=count)


@method(_BOTH, "zip")
@_range_aware
def iter__zip(thread: Any, v: Any, other: Any = None) -> IterValue:
    """``it.zip(other)``: pairs ``(x, y)`` with the items of ``iter(other)``, up to the
    shorter one."""
    up = make_iter(v)
    b = make_iter(other)
    if _pure(up) and _pure(b):
        return IterValue(_gen_zip(_drain_source(up), _drain_source(b)))
    return _staged(up, "zip", other=b)


@method(_BOTH, "enumerate")
@_range_aware
def iter__enumerate(thread: Any, v: Any) -> IterValue:
    """``it.enumerate()``: pairs ``(index, item)`` from 0."""
    up = make_iter(v)
    if _pure(up):
        return IterValue(_gen_enumerate(_drain_source(up)))
    return _staged(up, "enumerate", i=0)


@method(_BOTH, "chain")
@_range_aware
def iter__chain(thread: Any, v: Any, other: Any = None) -> IterValue:
    """``it.chain(other)``: the items of ``it`` then those of ``iter(other)``."""
    up = make_iter(v)
    b = make_iter(other)
    if _pure(up) and _pure(b):
        return IterValue(itertools.chain(_drain_source(up), _drain_source(b)))
    return _staged(up, "chain", other=b, on_first=True)


@method(_BOTH, "chunks")
@_range_aware
def iter__chunks(thread: Any, v: Any, n: Any = None) -> IterValue:
    """``it.chunks(n)``: lists of ``n`` consecutive items (the last may be shorter)."""
    size = _need_count("chunks", n, positive=True)
    up = make_iter(v)
    if _pure(up):
        return IterValue(_gen_chunks(_drain_source(up), size))
    return _staged(up, "chunks", n=size)


@method(_BOTH, "windows")
@_range_aware
def iter__windows(thread: Any, v: Any, n: Any = None) -> IterValue:
    """``it.windows(n)``: sliding windows (lists) of ``n`` items; none when fewer items."""
    size = _need_count("windows", n, positive=True)
    up = make_iter(v)
    if _pure(up):
        return IterValue(_gen_windows(_drain_source(up), size))
    return _staged(up, "windows", n=size, buf=[], started=False)


# ------------------------------------------------------------------ sinks (iter, range)


@method("iter", callback=True)
def iter__to_list(thread: Any, it: IterValue) -> Gen:
    """``it.to_list()``: the remaining items as a list (drains the iter)."""
    return (yield from pull_all(it, thread))


@method("iter", callback=True)
def iter__to_set(thread: Any, it: IterValue) -> Gen:
    """``it.to_set()``: the remaining items as a set."""
    return make_set((yield from pull_all(it, thread)))


@method("iter", "to_dict", callback=True)
def iter__to_dict(thread: Any, v: Any) -> Gen:
    """``it.to_dict()``: a dict from an iter of ``(key, value)`` pairs with string keys.

    Raises a type error for a non-pair item or a non-string key."""
    out: dict[str, Any] = {}
    for item in (yield from pull_all(make_iter(v), thread)):
        if type(item) is not Pair:
            raise type_error(f"iter.to_dict: expected pair, got {type_name(item)}")
        if type(item.first) is not str:
            raise type_error(f"iter.to_dict: expected string key, got {type_name(item.first)}")
        out[item.first] = item.second
    return sorted_dict(out)


@method("iter", callback=True)
def iter__count(thread: Any, it: IterValue) -> Gen:
    """``it.count()``: number of remaining items (drains the iter)."""
    if it.source is not None:
        return sum(1 for _ in _drain_source(it))
    n = 0
    while (yield from iter_pull(it, thread))[0]:
        n += 1
    return n


@method("iter", callback=True)
def iter__sum(thread: Any, it: IterValue) -> Gen:
    """``it.sum()``: sum of the items (wrapping int, float if any float).

    Raises ``Type error: iter.sum: expected number, got T`` for a non-number item."""
    total_i = 0
    total_f = 0.0
    has_float = False
    for x in (yield from pull_all(it, thread)):
        t = type(x)
        if t is int:
            total_i += x
        elif t is float:
            has_float = True
            total_f += x
        else:
            raise type_error(f"iter.sum: expected number, got {type_name(x)}")
    return total_f + total_i if has_float else wrap_i64(total_i)


def _extreme(items: list[Any], sign: int) -> Any:
    best: Any = None
    for i, x in enumerate(items):
        if i == 0 or compare(x, best) == sign:
            best = x
    return best


@method("iter", callback=True)
def iter__min(thread: Any, it: IterValue) -> Gen:
    """``it.min()``: first smallest item (3.5 ordering), nil when empty."""
    return _extreme((yield from pull_all(it, thread)), -1)


@method("iter", callback=True)
def iter__max(thread: Any, it: IterValue) -> Gen:
    """``it.max()``: first largest item (3.5 ordering), nil when empty."""
    return _extreme((yield from pull_all(it, thread)), 1)


@method(_BOTH, "reduce", callback=True)
def iter__reduce(thread: Any, v: Any, init: Any = None, f: Any = None) -> Gen:
    """``it.reduce(init, f)``: ``acc = f(acc, x)`` over the remaining items."""
    _need_callable("reduce", f)
    it = make_iter(v)
    acc = init
    fast = fast_function(f)
    if fast is not None:
        items = _fast_iter(it, thread)
        if items is not None:
            # an expression callback over map/filter stages of expression callbacks: the
            # same calls in the same order, without a native-frame round trip per item
            for x in items:
                acc = fast(thread, acc, x)
            return acc
    while True:
        ok, x = yield from iter_pull(it, thread)
        if not ok:
            return acc
        acc = yield CallRequest(f, [acc, x])


@method("iter", callback=True)
def iter__first(thread: Any, it: IterValue) -> Gen:
    """``it.first()``: the next item, nil at the end."""
    return (yield from iter_pull(it, thread))[1]


@method("iter", callback=True)
def iter__last(thread: Any, it: IterValue) -> Gen:
    """``it.last()``: the final item (drains the iter), nil when empty."""
    items = yield from pull_all(it, thread)
    return items[-1] if items else None


@method(_BOTH, "any", callback=True)
def iter__any(thread: Any, v: Any, f: Any = None) -> Gen:
    """``it.any(f)``: some ``f(x)`` is truthy; stops pulling at the first."""
    _need_callable("any", f)
    it = make_iter(v)
    while True:
        ok, x = yield from iter_pull(it, thread)
        if not ok:
            return False
        if truthy((yield CallRequest(f, [x]))):
            return True


@method(_BOTH, "all", aliases=("every",), callback=True)
def iter__all(thread: Any, v: Any, f: Any = None) -> Gen:
    """``it.all(f)``: every ``f(x)`` is truthy; stops pulling at the first falsy."""
    _need_callable("all", f)
    it = make_iter(v)
    while True:
        ok, x = yield from iter_pull(it, thread)
        if not ok:
            return True
        if not truthy((yield CallRequest(f, [x]))):
            return False


@method(_BOTH, "find", callback=True)
def iter__find(thread: Any, v: Any, f: Any = None) -> Gen:
    """``it.find(f)``: first item where ``f(x)`` is truthy, or nil."""
    _need_callable("find", f)
    it = make_iter(v)
    while True:
        ok, x = yield from iter_pull(it, thread)
        if not ok:
            return None
        if truthy((yield CallRequest(f, [x]))):
            return x


@method(_BOTH, "for_each", callback=True)
def iter__for_each(thread: Any, v: Any, f: Any = None) -> Gen:
    """``it.for_each(f)``: calls ``f(x)`` for each remaining item; nil."""
    _need_callable("for_each", f)
    it = make_iter(v)
    while True:
        ok, x = yield from iter_pull(it, thread)
        if not ok:
            return None
        yield CallRequest(f, [x])


@method("iter", callback=True)
def iter__next(thread: Any, it: IterValue) -> Gen:
    """``it.next()``: ``{done: false, value: x}`` for the next item, then
    ``{done: true, value: nil}`` (the generator protocol of 3.15)."""
    ok, v = yield from iter_pull(it, thread)
    return {"done": not ok, "value": v}


@method("iter", callback=True)
def iter__contains(thread: Any, it: IterValue, x: Any = None) -> Gen:
    """``it.contains(x)``: some remaining item ``== x`` (stops at the first)."""
    while True:
        ok, v = yield from iter_pull(it, thread)
        if not ok:
            return False
        if values_equal(v, x):
            return True


# --------------------------------------------------------------- lazy sequences (memo)
#
# Combinators on ranges return lazy *sequences*: items are computed on demand (so
# ``(1 to 10000000).map(f).take(5)`` calls ``f`` five times) and memoized, and the value
# can be used many times (``let xs = range(n).map(f)`` then ``xs.filter(...)``,
# ``xs.sort()``, ``len(xs)``). A sequence is an IterValue whose ``memo`` holds the items
# computed so far and whose ``origin`` is the single-pass pipeline computing the rest;
# every use reads through a fresh cursor. List methods that iters lack (``sort``,
# ``join``, ``index_of``...) force the sequence and apply to the resulting list.

#: Lazy combinators whose result over a sequence is again a sequence.
LAZY_COMBINATORS = frozenset(
    "map filter flat_map take skip take_while skip_while zip enumerate chain chunks windows".split()
)


def make_sequence(pipeline: IterValue) -> IterValue:
    """Wrap a single-pass pipeline as a memoizing lazy sequence."""
    seq = IterValue(None, origin=pipeline)
    seq.memo = []
    return seq


def sequence_cursor(seq: IterValue) -> IterValue:
    """A fresh single-pass iter reading ``seq`` from its first item."""
    return _staged(seq, "memo", pos=0)


def _pull_memo(seq: IterValue, st: dict[str, Any], thread: Any = None) -> Gen:
    memo = seq.memo
    assert memo is not None
    pos = st["pos"]
    if pos < len(memo):
        st["pos"] = pos + 1
        return (True, memo[pos])
    if seq.exhausted:
        return _END
    ok, v = yield from iter_pull(seq.origin, thread)
    if not ok:
        seq.exhausted = True
        return _END
    memo.append(v)
    st["pos"] = pos + 1
    return (True, v)


_STAGE_PULL["memo"] = _pull_memo


def force_sequence(seq: IterValue, thread: Any = None) -> Gen:
    """All items of a lazy sequence as a new list (computing the missing ones)."""
    memo = seq.memo
    assert memo is not None
    fast = None if seq.exhausted else _fast_iter(seq.origin, thread)
    if fast is not None:
        memo.extend(fast)
        seq.exhausted = True
    while not seq.exhausted:
        ok, v = yield from iter_pull(seq.origin, thread)
        if not ok:
            seq.exhausted = True
            break
        memo.append(v)
    return list(memo)


def sequence_method(thread: Any, seq: IterValue, name: str, args: list[Any]) -> Gen:
    """Run method ``name`` on a lazy sequence (callback generator; see module notes)."""
    iter_m = lookup_iter_method(name)
    if iter_m is not None:
        from harnpy.stdlib.registry import fit_args

        args = fit_args(iter_m, args, method=True, called=name)
        cursor = sequence_cursor(seq)
        if iter_m.callback:
            result = yield from iter_m.fn(thread, cursor, *args)
        else:
            result = iter_m.fn(thread, cursor, *args)
        if name in LAZY_COMBINATORS and type(result) is IterValue:
            return make_sequence(result)
        return result
    items = yield from force_sequence(seq, thread)
    return (yield CallRequest(BoundMethod(items, name), list(args)))


def lookup_iter_method(name: str) -> Any:
    """The builtin registered as method ``name`` of ``iter`` values, or None."""
    from harnpy.stdlib.registry import METHODS

    return METHODS.get("iter", {}).get(name)
