"""Ranges, pairs and lazy iterators (spec 3.17, 4.15)."""

from __future__ import annotations

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError
from harnpy.runtime.values import Channel, HSet, IterValue, Pair, RangeValue
from harnpy.stdlib.iters import iter_pull

XS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


def it(h, v):
    return h.call("iter", v)


def to_list(h, v):
    return h.meth("iter", "to_list", v)


def test_iter_sources_snapshot_and_dicts_yield_sorted_pairs(h):
    xs = [1, 2, 3]
    i = it(h, xs)
    xs.append(99)
    assert to_list(h, i) == [1, 2, 3]
    assert display(to_list(h, it(h, {"b": 2, "a": 1}))) == "[(a, 1), (b, 2)]"
    assert to_list(h, it(h, HSet([10, 20]))) == [10, 20]
    assert to_list(h, it(h, "abc")) == ["a", "b", "c"]
    assert to_list(h, it(h, RangeValue(1, 3, True))) == [1, 2, 3]
    i2 = it(h, [1])
    assert it(h, i2) is i2


def test_iter_of_a_channel_drains_queued_messages(h):
    ch = Channel("c", None)
    ch.items.extend(["a", "b"])
    assert to_list(h, it(h, ch)) == ["a", "b"]
    assert ch.items == []


def test_iter_rejects_non_iterables(h):
    with pytest.raises(HarnError, match="^Type error: iter: cannot iterate over int"):
        it(h, 5)


def test_iter_over_a_generator_pulls_with_next_requests(h):
    g = h.fake_generator([100, 200])
    i = it(h, g)
    assert i.source is None and i.origin is g
    assert to_list(h, i) == [100, 200]
    assert i.exhausted


def test_iter_methods_on_collections(h):
    for type_name, v in [("list", [1]), ("set", HSet([1])), ("dict", {"a": 1}), ("string", "a")]:
        assert isinstance(h.meth(type_name, "iter", v), IterValue)


def test_printing_does_not_consume_and_iters_are_fused(h):
    i = it(h, [1, 2, 3])
    assert display(i) == "<iter>"
    assert to_list(h, i) == [1, 2, 3]
    assert display(i) == "<iter (exhausted)>"
    assert to_list(h, i) == []


@pytest.mark.parametrize(
    ("build", "shown"),
    [
        (lambda h: h.meth("iter", "chain", it(h, [1, 2]), [3, 4]), "[1, 2, 3, 4]"),
        (lambda h: h.meth("iter", "chain", it(h, []), []), "[]"),
        (lambda h: h.meth("iter", "chunks", it(h, [1, 2, 3, 4, 5]), 2), "[[1, 2], [3, 4], [5]]"),
        (lambda h: h.meth("iter", "chunks", it(h, [1, 2, 3]), 10), "[[1, 2, 3]]"),
        (lambda h: h.meth("iter", "chunks", it(h, []), 2), "[]"),
        (
            lambda h: h.meth("iter", "windows", it(h, [1, 2, 3, 4, 5]), 3),
            "[[1, 2, 3], [2, 3, 4], [3, 4, 5]]",
        ),
        (lambda h: h.meth("iter", "windows", it(h, [1, 2, 3]), 10), "[]"),
        (lambda h: h.meth("iter", "skip", it(h, [1, 2, 3, 4, 5]), 2), "[3, 4, 5]"),
        (lambda h: h.meth("iter", "skip", it(h, [1, 2, 3]), 10), "[]"),
        (lambda h: h.meth("iter", "take", it(h, [1, 2, 3]), 0), "[]"),
        (lambda h: h.meth("iter", "enumerate", it(h, ["a", "b"])), "[(0, a), (1, b)]"),
        (lambda h: h.meth("iter", "zip", it(h, [1, 2, 3, 4]), [10, 20]), "[(1, 10), (2, 20)]"),
    ],
)
def test_callback_free_combinators(h, build, shown):
    result = build(h)
    assert isinstance(result, IterValue)
    # stages are kept as data (snapshot-able), never as Python generators
    assert result.source is None and result.stages
    assert display(to_list(h, result)) == shown


@pytest.mark.parametrize(
    ("build", "shown"),
    [
        (
            lambda h: h.meth("range", "enumerate", RangeValue(10, 12, True)),
            "[(0, 10), (1, 11), (2, 12)]",
        ),
        (
            lambda h: h.meth("range", "zip", RangeValue(1, 1000000, True), [10, 20, 30]),
            "[(1, 10), (2, 20), (3, 30)]",
        ),
    ],
)
def test_range_combinators_give_reusable_lazy_sequences(h, build, shown):
    seq = build(h)
    assert isinstance(seq, IterValue) and seq.memo is not None
    # a sequence can be consumed again: each use reads through a fresh cursor
    assert display(h.call("to_list", seq)) == shown
    assert display(h.call("to_list", seq)) == shown


@pytest.mark.parametrize(
    ("build", "shown"),
    [
        (
            lambda h, f: h.meth("iter", "map", it(h, XS), f(lambda x: x * 10)),
            "[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]",
        ),
        (lambda h, f: h.meth("iter", "filter", it(h, XS), f(lambda x: x > 8)), "[9, 10]"),
        (
            lambda h, f: h.meth("iter", "flat_map", it(h, [1, 2]), f(lambda x: [x, x])),
            "[1, 1, 2, 2]",
        ),
        (lambda h, f: h.meth("iter", "flat_map", it(h, [1, 2]), f(lambda x: x + 1)), "[2, 3]"),
        (
            lambda h, f: h.meth("iter", "take_while", it(h, [1, 2, 3, 4, 1]), f(lambda x: x < 3)),
            "[1, 2]",
        ),
        (
            lambda h, f: h.meth("iter", "skip_while", it(h, [1, 2, 3, 4, 1]), f(lambda x: x < 3)),
            "[3, 4, 1]",
        ),
    ],
)
def test_callback_combinators(h, build, shown):
    result = build(h, h.fn)
    assert result.source is None and result.stages
    assert display(to_list(h, result)) == shown


def test_map_then_take_calls_the_function_only_for_taken_items(h):
    mapped = h.meth("iter", "map", it(h, XS), h.fn(lambda x: x * 10))
    assert h.calls == 0
    assert to_list(h, h.meth("iter", "take", mapped, 2)) == [10, 20]
    assert h.calls == 2


def test_filter_then_take_stops_pulling_early(h):
    mapped = h.meth("iter", "map", it(h, XS), h.fn(lambda x: x * 10))
    kept = h.meth("iter", "filter", mapped, h.fn(lambda x: x > 30))
    assert to_list(h, h.meth("iter", "take", kept, 3)) == [40, 50, 60]
    assert h.calls == 12  # 6 maps + 6 filters


def test_lazy_pipelines_over_huge_ranges(h):
    big = RangeValue(1, 10_000_000, True)
    doubled = h.meth("range", "map", big, h.fn(lambda x: x * 2))
    assert to_list(h, h.meth("iter", "take", doubled, 5)) == [2, 4, 6, 8, 10]
    evens = h.meth("range", "filter", big, h.fn(lambda x: x % 2 == 0))
    assert to_list(h, h.meth("iter", "take", evens, 3)) == [2, 4, 6]


def test_single_pass_state_is_shared_between_consumers(h):
    chain = h.meth("iter", "map", it(h, [1, 2, 3, 4]), h.fn(lambda x: x * 10))
    assert to_list(h, h.meth("iter", "take", chain, 2)) == [10, 20]
    assert to_list(h, h.meth("iter", "take", chain, 10)) == [30, 40]
    assert to_list(h, chain) == []
    plain = it(h, [1, 2, 3, 4])
    assert to_list(h, h.meth("iter", "take", plain, 2)) == [1, 2]
    assert to_list(h, plain) == [3, 4]


def test_staged_combinators_over_staged_iters(h):
    mapped = lambda: h.meth("iter", "map", it(h, [1, 2, 3, 4, 5]), h.fn(lambda x: x))  # noqa: E731
    cases = [
        (h.meth("iter", "take", mapped(), 2), "[1, 2]"),
        (h.meth("iter", "skip", mapped(), 3), "[4, 5]"),
        (h.meth("iter", "enumerate", mapped()), "[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]"),
        (h.meth("iter", "zip", mapped(), ["a", "b"]), "[(1, a), (2, b)]"),
        (h.meth("iter", "chain", mapped(), mapped()), "[1, 2, 3, 4, 5, 1, 2, 3, 4, 5]"),
        (h.meth("iter", "chunks", mapped(), 2), "[[1, 2], [3, 4], [5]]"),
        (h.meth("iter", "windows", mapped(), 4), "[[1, 2, 3, 4], [2, 3, 4, 5]]"),
        (h.meth("iter", "windows", mapped(), 6), "[]"),
        (h.meth("iter", "zip", it(h, [7, 8]), mapped()), "[(7, 1), (8, 2)]"),
    ]
    for result, shown in cases:
        assert result.stages, shown
        assert display(to_list(h, result)) == shown


def test_sinks(h):
    assert h.meth("iter", "count", it(h, [1, 2, 3])) == 3
    assert h.meth("iter", "sum", it(h, [1, 2, 3])) == 6
    assert h.meth("iter", "sum", it(h, [1, 2.5])) == 3.5
    assert h.meth("iter", "min", it(h, [3, 1, 2])) == 1
    assert h.meth("iter", "max", it(h, [3, 1, 2])) == 3
    assert h.meth("iter", "max", it(h, [])) is None
    assert h.meth("iter", "first", it(h, [7, 8])) == 7
    assert h.meth("iter", "first", it(h, [])) is None
    assert h.meth("iter", "last", it(h, [7, 8])) == 8
    assert display(h.meth("iter", "to_set", it(h, [1, 2, 1]))) == "set(1, 2)"
    assert h.meth("iter", "to_dict", it(h, {"b": 2, "a": 1})) == {"a": 1, "b": 2}
    assert h.meth("iter", "reduce", it(h, [1, 2, 3]), 0, h.fn(lambda a, x: a + x)) == 6
    assert h.meth("iter", "any", it(h, [1, 2, 3]), h.fn(lambda x: x == 2)) is True
    assert h.meth("iter", "all", it(h, [1, 2, 3]), h.fn(lambda x: x < 3)) is False
    assert h.meth("iter", "find", it(h, [1, 2, 3]), h.fn(lambda x: x > 1)) == 2
    seen = []
    assert h.meth("iter", "for_each", it(h, [1, 2]), h.fn(seen.append)) is None
    assert seen == [1, 2]


def test_any_stops_pulling_at_the_first_match(h):
    source = it(h, [1, 2, 3, 4])
    assert h.meth("iter", "any", source, h.fn(lambda x: x == 2)) is True
    assert to_list(h, source) == [3, 4]


def test_sink_type_errors(h):
    with pytest.raises(HarnError, match="iter.sum: expected number, got string"):
        h.meth("iter", "sum", it(h, [1, "x"]))
    with pytest.raises(HarnError, match="iter.to_dict: expected pair, got int"):
        h.meth("iter", "to_dict", it(h, [1]))
    with pytest.raises(HarnError, match="iter.map: expected callable"):
        h.meth("iter", "map", it(h, [1]), 5)
    with pytest.raises(HarnError, match="iter.chunks"):
        h.meth("iter", "chunks", it(h, [1]), 0)


def test_next_follows_the_generator_protocol(h):
    i = h.meth("iter", "map", it(h, [1]), h.fn(lambda x: x + 1))
    assert h.meth("iter", "next", i) == {"done": False, "value": 2}
    assert h.meth("iter", "next", i) == {"done": True, "value": None}
    assert h.meth("iter", "next", i) == {"done": True, "value": None}


def test_iter_pull_is_drivable_by_an_interpreter(h):
    i = h.meth("iter", "map", it(h, [1, 2]), h.fn(lambda x: -x))
    got = []
    while True:
        g = iter_pull(i)
        send = None
        while True:
            try:
                req = g.send(send)
            except StopIteration as stop:
                ok, v = stop.value
                break
            send = req.fn.fn(*req.args)
        if not ok:
            break
        got.append(v)
    assert got == [-1, -2]


# ----------------------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("name", "args", "result"),
    [
        ("len", [], 1_000_000),
        ("count", [], 1_000_000),
        ("empty", [], False),
        ("contains", [42], True),
        ("contains", [0], False),
        ("contains", ["5"], False),
        ("first", [], 1),
        ("last", [], 1_000_000),
        ("sum", [], 500_000_500_000),
        ("min", [], 1),
        ("max", [], 1_000_000),
    ],
)
def test_range_fast_paths(h, name, args, result):
    assert h.meth("range", name, RangeValue(1, 1_000_000, True), *args) == result


def test_range_methods_on_small_and_empty_ranges(h):
    assert h.meth("range", "to_list", RangeValue(0, 4, False)) == [0, 1, 2, 3]
    assert h.meth("range", "sum", RangeValue(1, 10, True)) == 55
    empty = RangeValue(5, 5, False)
    assert h.meth("range", "first", empty) is None
    assert h.meth("range", "last", empty) is None
    assert h.meth("range", "empty", empty) is True
    assert h.meth("range", "sum", empty) == 0
    assert h.meth("range", "reduce", RangeValue(1, 4, True), 1, h.fn(lambda a, x: a * x)) == 24


def test_pair_and_to_list(h):
    p = h.call("pair", 1, "hello")
    assert isinstance(p, Pair) and display(p) == "(1, hello)"
    assert h.call("to_list", HSet([3, 1])) == [3, 1]
    assert h.call("to_list", [1, 2]) == [1, 2]
    assert h.call("to_list", RangeValue(1, 3, True)) == [1, 2, 3]
    assert h.call("to_list", 5) == [5]
    assert h.call("to_list", h.meth("iter", "map", it(h, [1]), h.fn(lambda x: x * 3))) == [3]
