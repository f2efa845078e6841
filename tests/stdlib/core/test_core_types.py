"""Types and conversion (spec 4.2), Result helpers (4.3) and assertions (4.4)."""

from __future__ import annotations

import math

import pytest

from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.values import (
    Duration,
    EnumValue,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    StructValue,
    err,
    ok,
)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (1, "int"),
        (1.5, "float"),
        ("s", "string"),
        (True, "bool"),
        (None, "nil"),
        ([1], "list"),
        ({"a": 1}, "dict"),
        (HSet([1]), "set"),
        (ok(1), "enum"),
        (StructValue("P", {"x": 1}), "struct"),
        (RangeValue(1, 3, True), "range"),
        (Pair(1, 2), "pair"),
        (IterValue(iter([])), "iter"),
        (Duration(5), "duration"),
    ],
)
def test_type_of_names_each_kind(h, value, name):
    assert h.call("type_of", value) == name


def test_type_of_a_builtin_value(h):
    assert h.call("type_of", h.fn(len)) == "builtin"


@pytest.mark.parametrize(
    ("value", "text"),
    [(42, "42"), (2.0, "2.0"), (0.1 + 0.2, "0.30000000000000004"), ([1, "a"], "[1, a]")],
)
def test_to_string_is_display(h, value, text):
    assert h.call("to_string", value) == text


@pytest.mark.parametrize(
    ("value", "result"),
    [
        (42, 42),
        (3.9, 3),
        (-2.7, -2),
        ("123", 123),
        ("-5", -5),
        ("+5", 5),
        ("abc", None),
        ("1.5", None),
        (" 12", None),
        ("1_000", None),
        ("99999999999999999999", None),
        (None, None),
        (True, None),
        (math.nan, None),
    ],
)
def test_to_int_truncates_floats_and_parses_strict_integers(h, value, result):
    got = h.call("to_int", value)
    assert got == result and type(got) is type(result)


@pytest.mark.parametrize(
    ("value", "result"),
    [
        (3.14, 3.14),
        (10, 10.0),
        ("2.5", 2.5),
        ("-1.0", -1.0),
        ("1e3", 1000.0),
        ("inf", math.inf),
        (".5", 0.5),
        ("xyz", None),
        ("1_0", None),
        (None, None),
    ],
)
def test_to_float_converts_ints_and_parses_strings(h, value, result):
    got = h.call("to_float", value)
    assert got == result and type(got) is type(result)


@pytest.mark.parametrize(
    ("value", "n"),
    [
        ("hello", 5),
        ("café", 4),
        ("🎉", 1),
        ("", 0),
        ([1, 2, 3], 3),
        ({}, 0),
        (HSet([1, 2, 2]), 2),
        (RangeValue(1, 5, True), 5),
        (RangeValue(0, 5, False), 5),
        (RangeValue(5, 5, False), 0),
        (b"abc", 3),
        (42, 0),
        (None, 0),
    ],
)
def test_len_counts_code_points_items_and_ranges(h, value, n):
    assert h.call("len", value) == n


def test_is_same_is_identity_for_collections_and_equality_for_scalars(h):
    xs = [1]
    assert h.call("is_same", xs, xs) is True
    assert h.call("is_same", xs, [1]) is False
    assert h.call("is_same", "a", "a") is True
    assert h.call("is_same", 1, 1.0) is False


def test_text_conversion_helpers(h):
    assert h.call("int_to_string", -7) == "-7"
    assert h.call("float_to_string", 3.5) == "3.5"
    assert h.call("parse_int_or", "12", 0) == 12
    assert h.call("parse_int_or", "oops", 9) == 9
    assert h.call("parse_float_or", "2.25", 0.0) == 2.25
    assert h.call("parse_float_or", "oops", 1.5) == 1.5


# ---------------------------------------------------------------------------- Results


def test_ok_and_err_build_result_variants(h):
    r = h.call("Ok", 42)
    assert isinstance(r, EnumValue) and (r.enum, r.variant, r.fields) == ("Result", "Ok", [42])
    e = h.call("Err", "boom")
    assert (e.variant, e.fields) == ("Err", ["boom"])


@pytest.mark.parametrize(
    ("value", "is_ok", "is_err"),
    [(ok(1), True, False), (err("x"), False, True), (1, False, False), (None, False, False)],
)
def test_is_ok_and_is_err_test_the_variant(h, value, is_ok, is_err):
    assert h.call("is_ok", value) is is_ok
    assert h.call("is_err", value) is is_err


def test_unwrap_family(h):
    assert h.call("unwrap", ok(42)) == 42
    assert h.call("unwrap", 7) == 7
    assert h.call("unwrap_or", err("x"), "default") == "default"
    assert h.call("unwrap_or", ok(1), "default") == 1
    assert h.call("unwrap_or", "plain", "default") == "plain"
    assert h.call("unwrap_err", err("something failed")) == "something failed"


def test_unwrap_on_err_is_a_runtime_error_naming_the_payload(h):
    with pytest.raises(HarnError) as exc:
        h.call("unwrap", err("x"))
    assert exc.value.message == "Runtime error: unwrap called on Err: x"
    assert not isinstance(exc.value, HarnThrow)


def test_unwrap_err_on_non_err_is_a_runtime_error(h):
    with pytest.raises(HarnError, match="^Runtime error: unwrap_err called on non-Err$"):
        h.call("unwrap_err", ok(1))


def test_throw_error_throws_a_categorised_dict(h):
    with pytest.raises(HarnThrow) as exc:
        h.call("throw_error", "connection timed out", "timeout")
    assert exc.value.value == {"category": "timeout", "message": "connection timed out"}
    with pytest.raises(HarnThrow) as exc:
        h.call("throw_error", "plain")
    assert exc.value.value["category"] == "generic"


@pytest.mark.parametrize(
    ("error", "category"),
    [
        ({"category": "rate_limit", "message": "x"}, "rate_limit"),
        ({"message": "x"}, "generic"),
        ("some error", "generic"),
        ("Deadline exceeded", "timeout"),
        ("HTTP 429 Too Many Requests", "rate_limit"),
        ('{"type": "overloaded_error"}', "overloaded"),
        ("status 503", "overloaded"),
        ("error 15030", "generic"),
        ("401 Unauthorized", "auth"),
        (42, "generic"),
    ],
)
def test_error_category_reads_dicts_and_classifies_strings(h, error, category):
    assert h.call("error_category", error) == category


def test_is_timeout_and_is_rate_limited(h):
    assert h.call("is_timeout", {"category": "timeout"}) is True
    assert h.call("is_timeout", "too many requests") is False
    assert h.call("is_rate_limited", {"category": "rate_limit"}) is True
    assert h.call("is_rate_limited", "request timed out") is False


def test_unreachable_always_raises(h):
    with pytest.raises(HarnError, match="^Runtime error: unreachable code was reached$"):
        h.call("unreachable")
    with pytest.raises(HarnError, match="reached: bad state"):
        h.call("unreachable", "bad state")


# ------------------------------------------------------------------------- assertions


def test_passing_assertions_return_nil(h):
    assert h.call("assert", True) is None
    assert h.call("assert", 1) is None
    assert h.call("assert_eq", 4, 4.0) is None
    assert h.call("assert_eq", [1, {"a": 2}], [1, {"a": 2}]) is None
    assert h.call("assert_ne", 1, 2) is None


@pytest.mark.parametrize(
    ("name", "args", "thrown"),
    [
        ("assert", [False], "Assertion failed"),
        ("assert", [0, "custom"], "custom"),
        ("assert", [[]], "Assertion failed"),
        ("assert_eq", [1, 2], "Assertion failed: expected 2, got 1"),
        ("assert_eq", ["a", [1]], "Assertion failed: expected [1], got a"),
        ("assert_eq", [1, 2, "msg"], "msg"),
        ("assert_ne", [3, 3], "Assertion failed: values should not be equal: 3"),
        ("assert_ne", [3, 3, {"code": 1}], {"code": 1}),
    ],
)
def test_failing_assertions_throw_harn_values(h, name, args, thrown):
    with pytest.raises(HarnThrow) as exc:
        h.call(name, *args)
    assert exc.value.value == thrown
