"""List methods (spec 4.6), including callback methods driven through CallRequests."""

from __future__ import annotations

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import HSet

NUMS = [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize(
    ("name", "recv", "args", "shown"),
    [
        ("count", [1, 2, 3], [], "3"),
        ("empty", [], [], "true"),
        ("first", NUMS, [], "1"),
        ("last", NUMS, [], "8"),
        ("first", [], [], "nil"),
        ("first", NUMS, [3], "[1, 2, 3]"),
        ("last", NUMS, [2], "[7, 8]"),
        ("last", NUMS, [0], "[]"),
        ("sort", [3, 1, 4, 1, 5, 9], [], "[1, 1, 3, 4, 5, 9]"),
        ("sort", ["b", "a", "C"], [], "[C, a, b]"),
        ("sort", [2, 1.5, 1], [], "[1, 1.5, 2]"),
        ("reverse", [3, 1, 4, 1, 5, 9], [], "[9, 5, 1, 4, 1, 3]"),
        ("join", [1, 2, 3], [", "], "1, 2, 3"),
        ("join", ["a", "b"], [], "ab"),
        ("contains", [1, 2, 3], [2], "true"),
        ("contains", [[1], [2]], [[2]], "true"),
        ("index_of", [1, 2, 3], [2], "1"),
        ("index_of", [1, 2, 3], [9], "-1"),
        ("unique", [1, 2, 3, 2, 1], [], "[1, 2, 3]"),
        ("unique", [1, "1", True], [], "[1, 1, true]"),
        ("unique", [[1, 2], [3, 4], [1, 2]], [], "[[1, 2], [3, 4]]"),
        ("unique", [{"a": 1}, {"b": 2}, {"a": 1}], [], "[{a: 1}, {b: 2}]"),
        ("unique", [None, 1, None], [], "[nil, 1]"),
        ("unique", [True, False, True, False], [], "[true, false]"),
        ("unique", [1.5, 2.5, 1.5], [], "[1.5, 2.5]"),
        ("unique", ["a,b", "a", "b"], [], "[a,b, a, b]"),
        ("take", [1, 2, 3, 4, 5], [3], "[1, 2, 3]"),
        ("take", [1, 2], [5], "[1, 2]"),
        ("skip", [1, 2, 3, 4, 5], [2], "[3, 4, 5]"),
        ("slice", [1, 2, 3, 4, 5], [1, 3], "[2, 3]"),
        ("slice", [1, 2, 3, 4, 5], [-2], "[4, 5]"),
        ("slice", [1, 2, 3, 4, 5], [3, 1], "[]"),
        ("sum", [1, 2, 3], [], "6"),
        ("sum", [1, 2.5, "x"], [], "3.5"),
        ("sum", [], [], "0"),
        ("min", [3, 1, 2], [], "1"),
        ("max", [3, 1, 2], [], "3"),
        ("max", [], [], "nil"),
        ("push", [1, 2], [3], "[1, 2, 3]"),
        ("pop", [1, 2, 3], [], "[1, 2]"),
        ("compact", [1, None, 2, None, 3], [], "[1, 2, 3]"),
        ("flatten", [[1, 2], 3, [[4]]], [], "[1, 2, 3, [4]]"),
        ("enumerate", ["a", "b"], [], "[{index: 0, value: a}, {index: 1, value: b}]"),
        ("zip", [1, 2, 3], [["a", "b"]], "[[1, a], [2, b]]"),
        ("zip", [1, 2], [5], "[]"),
        ("tally", ["a", "b", "a", "c", "b", "a"], [], "{a: 3, b: 2, c: 1}"),
        ("chunk", [1, 2, 3, 4, 5], [2], "[[1, 2], [3, 4], [5]]"),
        ("each_slice", [1, 2, 3], [5], "[[1, 2, 3]]"),
        ("window", [1, 2, 3, 4], [2], "[[1, 2], [2, 3], [3, 4]]"),
        ("window", ["a", "b", "c"], [4], "[]"),
        ("each_cons", [1, 2, 3, 4], [2], "[[1, 2], [2, 3], [3, 4]]"),
        ("to_set", [1, 2, 1], [], "set(1, 2)"),
    ],
)
def test_plain_list_methods(h, name, recv, args, shown):
    assert display(h.meth("list", name, recv, *args)) == shown


def test_plain_list_methods_return_new_lists(h):
    xs = [3, 1, 2]
    h.meth("list", "sort", xs)
    h.meth("list", "push", xs, 4)
    h.meth("list", "reverse", xs)
    assert xs == [3, 1, 2]


@pytest.mark.parametrize(
    ("name", "recv", "fn", "shown"),
    [
        ("map", [1, 2, 3], lambda x: x * 2, "[2, 4, 6]"),
        ("filter", NUMS, lambda x: x % 2 == 0, "[2, 4, 6, 8]"),
        ("flat_map", [1, 2], lambda x: [x, x * 10], "[1, 10, 2, 20]"),
        ("flat_map", [1, 2], lambda x: x, "[1, 2]"),
        ("find", ["foo", "bar", "baz"], lambda x: x.startswith("ba"), "bar"),
        ("find", [1, 2], lambda x: x > 5, "nil"),
        ("find_index", NUMS, lambda x: x > 3, "3"),
        ("find_index", NUMS, lambda x: x > 100, "-1"),
        ("any", NUMS, lambda x: x > 7, "true"),
        ("all", NUMS, lambda x: x > 0, "true"),
        ("every", NUMS, lambda x: x > 5, "false"),
        ("none", NUMS, lambda x: x > 100, "true"),
        ("none", NUMS, lambda x: x > 5, "false"),
        ("sort_by", ["ccc", "a", "bb", "b"], lambda s: len(s), "[a, b, bb, ccc]"),
        ("min_by", ["hello", "hi", "hey"], lambda w: len(w), "hi"),
        ("max_by", ["hello", "hi", "hey"], lambda w: len(w), "hello"),
        ("min_by", ["aa", "bb"], lambda w: len(w), "aa"),
        ("min_by", [], lambda w: w, "nil"),
        ("partition", NUMS, lambda x: x % 2 == 0, "[[2, 4, 6, 8], [1, 3, 5, 7]]"),
        (
            "group_by",
            [1, 2, 3, 4, 5, 6],
            lambda x: x % 2 == 0,
            "{false: [1, 3, 5], true: [2, 4, 6]}",
        ),
        ("group_by", ["b", "a"], lambda x: x, "{a: [a], b: [b]}"),
    ],
)
def test_callback_list_methods(h, name, recv, fn, shown):
    assert display(h.meth("list", name, recv, h.fn(fn))) == shown


def test_reduce_folds_left_to_right(h):
    seen = []

    def step(acc, x):
        seen.append((acc, x))
        return acc + x

    assert h.meth("list", "reduce", [1, 2, 3], 10, h.fn(step)) == 16
    assert seen == [(10, 1), (11, 2), (13, 3)]


@pytest.mark.parametrize(("name", "stop_after"), [("any", 2), ("all", 2), ("find", 2)])
def test_short_circuit_methods_stop_at_the_decisive_item(h, name, stop_after):
    def pred(x):
        return x != 2 if name == "all" else x == 2

    h.meth("list", name, [1, 2, 3, 4], h.fn(pred))
    assert h.calls == stop_after


def test_none_without_callback_means_empty(h):
    assert h.meth("list", "none", []) is True
    assert h.meth("list", "none", [1]) is False


def test_callback_methods_with_a_non_callable_return_neutral_values(h):
    assert h.meth("list", "map", [1], 5) is None
    assert h.meth("list", "any", [1], 5) is False
    assert h.meth("list", "all", [1], 5) is True
    assert h.meth("list", "find_index", [1], 5) == -1
    assert h.calls == 0


def test_errors_thrown_by_a_callback_propagate(h):
    def boom(x):
        raise HarnThrow("boom")

    with pytest.raises(HarnThrow):
        h.meth("list", "map", [1, 2], h.fn(boom))


def test_callbacks_may_be_builtin_values(h):
    from harnpy.stdlib.registry import BUILTINS

    assert h.meth("list", "map", [1, [2]], BUILTINS["to_string"]) == ["1", "[2]"]


def test_to_set_gives_an_hset(h):
    s = h.meth("list", "to_set", [1, 1.0, 2])
    assert isinstance(s, HSet) and s.items == [1, 2]
