"""Math builtins (spec 4.9), range(), randomness and statistics."""

from __future__ import annotations

import math

import pytest

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.values import I64_MAX, I64_MIN, RangeValue
from harnpy.stdlib.mathlib import GLOBAL_CONSTANTS


def same(a, b):
    """Equal value and equal Python type (int vs float matters in Harn)."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def test_pi_and_e_are_global_float_values():
    assert GLOBAL_CONSTANTS == {"pi": math.pi, "e": math.e}


@pytest.mark.parametrize(
    ("name", "args", "result"),
    [
        ("abs", [-3], 3),
        ("abs", [-2.5], 2.5),
        ("abs", [I64_MIN], I64_MIN),
        ("abs", ["x"], None),
        ("min", [1, 2], 1),
        ("min", [1, 2.0], 1.0),
        ("max", [3, 2.5], 3.0),
        ("max", [1, "a"], None),
        ("max", [[4, 9, 2]], 9),
        ("floor", [2.7], 2),
        ("floor", [-2.1], -3),
        ("floor", [5], 5),
        ("ceil", [2.1], 3),
        ("ceil", [-2.7], -2),
        ("round", [2.5], 3),
        ("round", [-2.5], -3),
        ("round", [2.4], 2),
        ("round", [0.49999999999999994], 0),
        ("round", [7], 7),
        ("round", [math.nan], 0),
        ("round", [math.inf], I64_MAX),
        ("sqrt", [25], 5.0),
        ("sqrt", [-1], math.nan),
        ("pow", [5, 2], 25),
        ("pow", [2, -1], 0.5),
        ("pow", [2, 100], 2.0**100),
        ("pow", [2.0, 3], 8.0),
        ("sign", [42], 1),
        ("sign", [-5], -1),
        ("sign", [0], 0),
        ("sign", [3.14], 1),
        ("sign", [-2.5], -1),
        ("sin", [0], 0.0),
        ("cos", [0], 1.0),
        ("tan", [0], 0.0),
        ("asin", [0], 0.0),
        ("acos", [1], 0.0),
        ("atan", [0], 0.0),
        ("asin", [2], math.nan),
        ("ln", [1], 0.0),
        ("ln", [0], -math.inf),
        ("log2", [8], 3.0),
        ("log10", [100], 2.0),
        ("exp", [0], 1.0),
        ("exp", [1000], math.inf),
        ("is_nan", [math.nan], True),
        ("is_nan", [1.0], False),
        ("is_nan", ["NaN"], False),
        ("is_infinite", [-math.inf], True),
        ("is_infinite", [1.0], False),
    ],
)
def test_math_builtins(h, name, args, result):
    assert same(h.call(name, *args), result)


def test_atan2_is_the_angle_of_a_point(h):
    assert 0.78 < h.call("atan2", 1, 1) < 0.79


def test_range_builds_half_open_ranges(h):
    r = h.call("range", 5)
    assert (r.start, r.end, r.inclusive) == (0, 5, False)
    assert display(r) == "0 to 5 exclusive"
    assert list(h.call("range", 3, 7).py_range()) == [3, 4, 5, 6]
    assert len(h.call("range", 5, 5)) == 0


@pytest.mark.parametrize("args", [[1.5], ["3"], [1, None], []])
def test_range_rejects_non_int_arguments(h, args):
    with pytest.raises(HarnError, match="^Type error: "):
        h.call("range", *args)


def test_seeded_generators_repeat_their_sequence(h):
    a = h.call("rng_seed", 42)
    b = h.call("rng_seed", 42)
    assert h.call("type_of", a) == "rng"
    assert h.call("random", a) == h.call("random", b)
    assert h.call("random_int", a, 10, 99) == h.call("random_int", b, 10, 99)
    words = ["alpha", "beta", "gamma"]
    assert h.call("random_choice", a, words) == h.call("random_choice", b, words)
    assert h.call("random_shuffle", a, [1, 2, 3, 4, 5]) == h.call(
        "random_shuffle", b, [1, 2, 3, 4, 5]
    )


def test_unseeded_random_helpers(h):
    x = h.call("random")
    assert 0.0 <= x < 1.0
    assert all(1 <= h.call("random_int", 1, 3) <= 3 for _ in range(20))
    assert h.call("random_choice", ["only"]) == "only"
    assert h.call("random_choice", []) is None
    assert sorted(h.call("random_shuffle", [3, 1, 2])) == [1, 2, 3]


def test_runtime_rng_is_used_when_present(h):
    import random

    h.thread.runtime.rng = random.Random(7)
    first = h.call("random")
    h.thread.runtime.rng = random.Random(7)
    assert h.call("random") == first


@pytest.mark.parametrize(
    ("name", "args", "result"),
    [
        ("mean", [[2, 4, 6]], 4.0),
        ("median", [[7, 1, 5]], 5.0),
        ("median", [[1, 2, 10, 20]], 6.0),
        ("percentile", [[1, 2, 3, 4], 25], 1.75),
        ("percentile", [[1, 2, 3, 4], 50], 2.5),
        ("percentile", [[1, 2, 3, 4], 100], 4.0),
        ("variance", [[1, 2, 3, 4]], 1.25),
    ],
)
def test_statistics(h, name, args, result):
    assert h.call(name, *args) == result


def test_stddev_and_sample_variance(h):
    assert h.call("round", h.call("stddev", [1, 2, 3, 4]) * 1000) == 1118
    assert h.call("round", h.call("variance", [1, 2, 3, 4], True) * 1000) == 1667
    assert h.call("round", h.call("stddev", [1, 2, 3, 4], True) * 1000) == 1291


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("median", [[]], "items must not be empty"),
        ("mean", [[]], "items must not be empty"),
        ("percentile", [[1, 2, 3], 101], "percentile must be between 0 and 100"),
        ("variance", [[1], True], "sample variance requires at least 2 values"),
    ],
)
def test_statistics_errors(h, name, args, message):
    with pytest.raises(HarnThrow) as exc:
        h.call(name, *args)
    assert exc.value.value == message


def test_statistics_reject_non_numbers(h):
    with pytest.raises(HarnError, match="^Type error: "):
        h.call("mean", [1, "x"])
    assert h.call("len", RangeValue(1, 3, True)) == 3
