"""Dict builtins/methods (spec 4.7) and sets (4.8)."""

from __future__ import annotations

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.values import HSet, StructValue

D = {"c": 3, "a": 1, "b": 2}


def test_dict_builtins_use_sorted_key_order(h):
    assert h.call("keys", D) == ["a", "b", "c"]
    assert h.call("values", D) == [1, 2, 3]
    assert (
        display(h.call("entries", D))
        == "[{key: a, value: 1}, {key: b, value: 2}, {key: c, value: 3}]"
    )
    assert h.call("keys", StructValue("P", {"y": 1, "x": 2})) == ["x", "y"]
    assert h.call("keys", 5) == []


@pytest.mark.parametrize(
    ("name", "args", "shown"),
    [
        ("keys", [], "[a, b, c]"),
        ("values", [], "[1, 2, 3]"),
        ("count", [], "3"),
        ("has", ["a"], "true"),
        ("has", ["z"], "false"),
        ("get", ["a"], "1"),
        ("get", ["z"], "nil"),
        ("get", ["z", "default_value"], "default_value"),
        ("get", ["a", "fallback"], "1"),
        ("get", ["z", False], "false"),
        ("get", [], "nil"),
        ("merge", [{"a": 9, "d": 4}], "{a: 9, b: 2, c: 3, d: 4}"),
        ("merge", [5], "{a: 1, b: 2, c: 3}"),
        ("remove", ["b"], "{a: 1, c: 3}"),
        ("remove", ["zz"], "{a: 1, b: 2, c: 3}"),
    ],
)
def test_plain_dict_methods(h, name, args, shown):
    assert display(h.meth("dict", name, dict(D), *args)) == shown


def test_dict_get_renders_non_string_keys(h):
    assert h.meth("dict", "get", {"1": "one"}, 1) == "one"
    assert h.meth("dict", "has", {"true": 1}, True) is True


def test_dict_methods_do_not_mutate(h):
    d = dict(D)
    h.meth("dict", "remove", d, "a")
    h.meth("dict", "merge", d, {"z": 0})
    assert d == D


def test_map_values_and_filter_pass_values_in_key_order(h):
    seen = []

    def double(v):
        seen.append(v)
        return v * 2

    assert h.meth("dict", "map_values", dict(D), h.fn(double)) == {"a": 2, "b": 4, "c": 6}
    assert seen == [1, 2, 3]
    kept = h.meth("dict", "filter", dict(D), h.fn(lambda v: v > 1))
    assert list(kept) == ["b", "c"]


def test_rekey_and_map_keys(h):
    snake = {"first_name": "Ada", "birth_year": 1815}
    from harnpy.stdlib.registry import BUILTINS

    camel = h.meth("dict", "rekey", snake, BUILTINS["snake_to_camel"])
    assert camel == {"birthYear": 1815, "firstName": "Ada"}
    upper = h.meth("dict", "map_keys", snake, h.fn(str.upper))
    assert upper["FIRST_NAME"] == "Ada"
    collided = h.meth("dict", "rekey", {"aa": 1, "bb": 2}, h.fn(lambda k: "same"))
    assert collided == {"same": 2}


# ------------------------------------------------------------------------------- sets


def test_set_builtin_flattens_collections_one_level(h):
    assert display(h.call("set", [1, 2, 2])) == "set(1, 2)"
    assert display(h.call("set", 1, "1", True)) == "set(1, 1, true)"
    assert display(h.call("set")) == "set()"
    assert len(h.call("set", [[1, 2], [3, 4], [1, 2]]).items) == 2
    assert len(h.call("set", [{"a": 1}, {"b": 2}, {"a": 1}]).items) == 2
    assert len(h.call("set", None, 1, None).items) == 2
    assert h.call("set", HSet([1, 2]), [[3]]).items == [1, 2, [3]]


A = HSet([1, 2, 3, 4])
B = HSet([3, 4, 5, 6])


@pytest.mark.parametrize(
    ("name", "args", "shown"),
    [
        ("set_union", [A, B], "set(1, 2, 3, 4, 5, 6)"),
        ("set_intersect", [A, B], "set(3, 4)"),
        ("set_difference", [A, B], "set(1, 2)"),
        ("set_symmetric_difference", [A, B], "set(1, 2, 5, 6)"),
        ("set_symmetric_difference", [A, A], "set()"),
        ("set_is_subset", [HSet([2, 3]), A], "true"),
        ("set_is_subset", [A, HSet([2, 3])], "false"),
        ("set_is_subset", [HSet(), A], "true"),
        ("set_is_superset", [A, HSet([2, 3])], "true"),
        ("set_is_superset", [A, A], "true"),
        ("set_is_disjoint", [A, HSet([10, 20])], "true"),
        ("set_is_disjoint", [A, B], "false"),
        ("set_is_disjoint", [HSet(), HSet()], "true"),
        ("set_add", [A, 5], "set(1, 2, 3, 4, 5)"),
        ("set_add", [A, 1], "set(1, 2, 3, 4)"),
        ("set_remove", [A, 1], "set(2, 3, 4)"),
        ("set_contains", [A, 2], "true"),
        ("set_contains", [A, 9], "false"),
        ("set_contains", [HSet(["a,b", "a"]), "a,b"], "true"),
        (
            "set_union",
            [HSet([[1, 2], [3, 4]]), HSet([[3, 4], [5, 6]])],
            "set([1, 2], [3, 4], [5, 6])",
        ),
    ],
)
def test_set_builtins(h, name, args, shown):
    assert display(h.call(name, *args)) == shown


@pytest.mark.parametrize(
    ("name", "args", "shown"),
    [
        ("count", [], "4"),
        ("len", [], "4"),
        ("empty", [], "false"),
        ("contains", [2], "true"),
        ("contains", [9], "false"),
        ("add", [5], "set(1, 2, 3, 4, 5)"),
        ("remove", [1], "set(2, 3, 4)"),
        ("delete", [1], "set(2, 3, 4)"),
        ("union", [B], "set(1, 2, 3, 4, 5, 6)"),
        ("intersect", [B], "set(3, 4)"),
        ("intersection", [B], "set(3, 4)"),
        ("difference", [B], "set(1, 2)"),
        ("symmetric_difference", [B], "set(1, 2, 5, 6)"),
        ("is_subset", [HSet([1, 2, 3, 4, 5])], "true"),
        ("is_superset", [HSet([2, 3])], "true"),
        ("is_disjoint", [B], "false"),
        ("to_list", [], "[1, 2, 3, 4]"),
    ],
)
def test_set_methods(h, name, args, shown):
    assert display(h.meth("set", name, A, *args)) == shown
    assert A.items == [1, 2, 3, 4]


def test_set_callback_methods(h):
    assert display(h.meth("set", "map", HSet([1, 2, 3]), h.fn(lambda x: x % 2))) == "set(1, 0)"
    assert display(h.meth("set", "filter", A, h.fn(lambda x: x % 2 == 0))) == "set(2, 4)"
    assert h.meth("set", "any", A, h.fn(lambda x: x > 3)) is True
    assert h.meth("set", "all", A, h.fn(lambda x: x > 0)) is True
    assert h.meth("set", "every", A, h.fn(lambda x: x > 2)) is False
