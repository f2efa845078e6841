"""Operator semantics: truthiness, equality, ordering, arithmetic, indexing, properties.

Implements spec language.md 3.4 (truthiness), 3.5 (equality and ordering), 3.6
(arithmetic), 3.7 (indexing, slicing, properties). Every function here is pure: it never
touches interpreter state, so compiled expression closures call these directly.
"""

from __future__ import annotations

import math
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import (
    MAX_BUILD_SIZE,
    plain_error,
    runtime_error,
    too_large,
    type_error,
)
from harnpy.runtime.values import (
    I64_MAX,
    I64_MIN,
    Duration,
    EnumValue,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    StructValue,
    type_name,
    wrap_i64,
)

# ---------------------------------------------------------------- truthiness


def truthy(v: Any) -> bool:
    """Spec 3.4: false, nil, 0, 0.0, "", empty collections and ``0ms`` are falsy."""
    if v is None or v is False:
        return False
    if v is True:
        return True
    t = type(v)
    if t is int or t is float or t is str or t is list or t is dict or t is bytes:
        return bool(v)
    if t is HSet:
        return bool(v.items)
    if t is Duration:
        return v.ms != 0
    return True


# ------------------------------------------------------------------ equality


def values_equal(a: Any, b: Any) -> bool:
    """Structural ``==`` (spec 3.5). ``int == float`` compares numerically; other kinds differ."""
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is str or ta is int or ta is bool:
            return a == b
        if ta is float:
            return a == b
        if a is None:
            return True
        if ta is list:
            if len(a) != len(b):
                return False
            for x, y in zip(a, b):
                if not values_equal(x, y):
                    return False
            return True
        if ta is dict:
            if len(a) != len(b):
                return False
            for k, x in a.items():
                if k not in b or not values_equal(x, b[k]):
                    return False
            return True
        if ta is EnumValue:
            return a.enum == b.enum and a.variant == b.variant and values_equal(a.fields, b.fields)
        if ta is StructValue:
            return a.name == b.name and values_equal(a.fields, b.fields)
        if ta is HSet:
            return len(a.items) == len(b.items) and all(b.contains(x) for x in a.items)
        if ta is Pair:
            return values_equal(a.first, b.first) and values_equal(a.second, b.second)
        if ta is RangeValue:
            return a.start == b.start and a.end == b.end and a.inclusive == b.inclusive
        if ta is bytes:
            return a == b
        if ta is Duration:
            return False  # spec 3.5 quirk: durations never compare equal
        if ta is IterValue:
            return a is b
        return False
    if (ta is int and tb is float) or (ta is float and tb is int):
        return a == b
    return False


# ------------------------------------------------------------------ ordering


def compare(a: Any, b: Any) -> int:
    """Three-way ordering used by ``<`` and ``sort``: -1, 0 or 1.

    Numbers compare numerically, strings by code point, pairs lexicographically; any other
    combination compares as equal (spec 3.5).
    """
    ta = type(a)
    tb = type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return (a > b) - (a < b)
    if ta is str and tb is str:
        return (a > b) - (a < b)
    if ta is Duration and tb is Duration:
        return (a.ms > b.ms) - (a.ms < b.ms)
    if ta is Pair and tb is Pair:
        c = compare(a.first, b.first)
        return c if c else compare(a.second, b.second)
    return 0


def less(a: Any, b: Any) -> bool:
    """``a < b`` (spec 3.5 ordering)."""

    ta = type(a)
    if (ta is int or ta is float or ta is str) and type(b) is ta:
        return a < b
    return compare(a, b) < 0


def less_eq(a: Any, b: Any) -> bool:
    """``a <= b`` (spec 3.5 ordering)."""

    ta = type(a)
    if (ta is int or ta is float or ta is str) and type(b) is ta:
        return a <= b
    return compare(a, b) <= 0


def greater(a: Any, b: Any) -> bool:
    """``a > b`` (spec 3.5 ordering)."""

    ta = type(a)
    if (ta is int or ta is float or ta is str) and type(b) is ta:
        return a > b
    return compare(a, b) > 0


def greater_eq(a: Any, b: Any) -> bool:
    """``a >= b`` (spec 3.5 ordering)."""

    ta = type(a)
    if (ta is int or ta is float or ta is str) and type(b) is ta:
        return a >= b
    return compare(a, b) >= 0


# ---------------------------------------------------------------- arithmetic


def _num(t: type) -> bool:
    return t is int or t is float


def add(a: Any, b: Any) -> Any:
    """``a + b`` (spec 3.6): numbers, string/list concatenation, dict merge."""
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        r = a + b
        if I64_MIN <= r <= I64_MAX:
            return r
        return wrap_i64(r)
    if ta is str and tb is str:
        return a + b
    if _num(ta) and _num(tb):
        return a + b
    if ta is list and tb is list:
        return a + b
    if ta is dict and tb is dict:
        r2 = dict(a)
        r2.update(b)
        return r2
    if ta is Duration and tb is Duration:
        return Duration(a.ms + b.ms)
    raise type_error(f"Cannot add {type_name(a)} and {type_name(b)}")


def sub(a: Any, b: Any) -> Any:
    """``a - b`` (spec 3.6); raises ``Type error: Cannot subtract U from T``."""

    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        r = a - b
        if I64_MIN <= r <= I64_MAX:
            return r
        return wrap_i64(r)
    if _num(ta) and _num(tb):
        return a - b
    if ta is Duration and tb is Duration:
        return Duration(a.ms - b.ms)
    raise type_error(f"Cannot subtract {type_name(b)} from {type_name(a)}")


def mul(a: Any, b: Any) -> Any:
    """``a * b`` incl. string repetition (spec 3.6)."""

    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        r = a * b
        if I64_MIN <= r <= I64_MAX:
            return r
        return wrap_i64(r)
    if _num(ta) and _num(tb):
        return a * b
    if ta is str and tb is int:
        return repeat_str(a, b, "string * int")
    if ta is int and tb is str:
        return repeat_str(b, a, "int * string")
    if ta is Duration and tb is int:
        return Duration(a.ms * b)
    if ta is int and tb is Duration:
        return Duration(a * b.ms)
    raise type_error(f"Cannot multiply {type_name(a)} and {type_name(b)}")


def repeat_str(s: str, n: int, what: str) -> str:
    """``s`` repeated ``n`` times (``""`` for ``n <= 0``); a result longer than
    ``MAX_BUILD_SIZE`` code points is a catchable ``E323`` error naming ``what``, raised
    before allocating."""
    if n <= 0:
        return ""
    size = len(s) * n
    if size > MAX_BUILD_SIZE:
        raise too_large(what, size, "code points")
    return s * n


def div(a: Any, b: Any) -> Any:
    """``a / b``: ints truncate toward zero, int division by zero errors, floats give inf/NaN."""

    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        if b == 0:
            raise plain_error("Division by zero", "E303")
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return wrap_i64(q) if q > I64_MAX else q
    if _num(ta) and _num(tb):
        try:
            return a / b
        except ZeroDivisionError:
            if a != a or a == 0:
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
    if ta is Duration and tb is int:
        if b == 0:
            raise plain_error("Division by zero", "E303")
        return Duration(int(a.ms / b))
    raise runtime_error(f"Cannot divide {type_name(a)} by {type_name(b)}")


def mod(a: Any, b: Any) -> Any:
    """``a % b`` with the sign of the dividend (C ``fmod``); ``% 0`` errors."""

    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        if b == 0:
            raise plain_error("Division by zero", "E303")
        return int(math.fmod(a, b)) if abs(a) < 2**52 and abs(b) < 2**52 else _int_rem(a, b)
    if _num(ta) and _num(tb):
        if b == 0:
            raise plain_error("Division by zero", "E303")
        return math.fmod(a, b)
    raise runtime_error(f"Cannot modulo {type_name(a)} by {type_name(b)}")


def _int_rem(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def power(a: Any, b: Any) -> Any:
    """``a ** b``: wrapping int power, float for negative exponents or floats."""

    ta = type(a)
    tb = type(b)
    if ta is int and tb is int and b >= 0:
        return wrap_i64(pow(a, b, 2**64)) if b > 64 or abs(a) > 1 else wrap_i64(a**b)
    # int ** negative int is a float like any float power (`0 ** -1` is inf, as `0.0 ** -1`)
    if _num(ta) and _num(tb):
        try:
            r = float(a) ** b
        except ZeroDivisionError:
            return math.inf
        except OverflowError:
            return math.inf
        if isinstance(r, complex):
            return math.nan
        return r
    raise type_error(f"Cannot exponentiate {type_name(a)} by {type_name(b)}")


def negate(a: Any) -> Any:
    """Unary ``-``; raises ``Runtime error: Cannot negate value of type T``."""

    t = type(a)
    if t is int:
        return wrap_i64(-a)
    if t is float:
        return -a
    if t is Duration:
        return Duration(-a.ms)
    raise runtime_error(f"Cannot negate value of type {type_name(a)}")


# ---------------------------------------------------------------- membership


def contains(container: Any, item: Any) -> bool:
    """The ``in`` operator (spec 3.5)."""
    t = type(container)
    if t is list:
        return any(values_equal(item, x) for x in container)
    if t is dict:
        return (item if type(item) is str else display(item)) in container
    if t is str:
        return (item if type(item) is str else display(item)) in container
    if t is HSet:
        return container.contains(item)
    if t is RangeValue:
        return type(item) is int and item in container.py_range()
    return False


# ------------------------------------------------------------------ indexing


def dict_key(k: Any) -> str:
    """Dict keys are strings; any other key is rendered with display rules."""
    return k if type(k) is str else display(k)


def index(obj: Any, key: Any) -> Any:
    """``obj[key]`` (spec 3.7)."""
    t = type(obj)
    if t is list:
        if type(key) is int:
            n = len(obj)
            if -n <= key < n:
                return obj[key]
            return None
        raise type_error(f"cannot index into list with {type_name(key)}")
    if t is dict:
        return obj.get(key if type(key) is str else display(key))
    if t is str:
        if type(key) is int:
            n = len(obj)
            if -n <= key < n:
                return obj[key]
            return None
        raise type_error(f"cannot index into string with {type_name(key)}")
    if t is RangeValue:
        if type(key) is not int:
            raise type_error(f"cannot index into range with {type_name(key)}")
        n = obj.length()
        if -n <= key < n:
            return obj.py_range()[key]
        raise runtime_error(f"range index out of range: index {key} for range of length {n}")
    # structs and bytes are not subscriptable either (spec 3.7): `p.x`, `bytes_to_string`
    if obj is None:
        raise type_error(f"cannot index into nil with {type_name(key)}")
    raise type_error(f"cannot index into {type_name(obj)} with {type_name(key)}")


def slice_value(obj: Any, start: Any, end: Any) -> Any:
    """``obj[start:end]`` on lists and strings with Python-like clamping."""
    for b in (start, end):
        if b is not None and type(b) is not int:
            raise type_error(f"slice bounds must be integers, got {type_name(b)}")
    t = type(obj)
    if t is list or t is str or t is bytes:
        return obj[start:end]
    if obj is None:
        raise type_error("cannot slice nil")
    raise type_error(f"cannot slice {type_name(obj)}")


def get_property(obj: Any, name: str) -> Any:
    """``obj.name`` (spec 3.7)."""
    t = type(obj)
    if t is dict:
        return obj.get(name)
    if t is StructValue:
        return obj.fields.get(name)
    if t is list:
        if name == "count":
            return len(obj)
        if name == "empty":
            return not obj
        if name == "first":
            return obj[0] if obj else None
        if name == "last":
            return obj[-1] if obj else None
        return None
    if t is str:
        if name == "count":
            return len(obj)
        if name == "empty":
            return not obj
        return None
    if t is EnumValue:
        if name == "variant":
            return obj.variant
        if name == "fields":
            return list(obj.fields)
        return None
    if t is Pair:
        if name == "first":
            return obj.first
        if name == "second":
            return obj.second
        raise type_error(f"cannot access property `{name}` on pair")
    # sets, ranges and durations have no properties (spec 3.7): use len(), duration_to_ms()
    from harnpy.runtime.values import Generator, TaskHandle

    if t is Generator and name == "done":
        return obj.done
    if t is TaskHandle and name == "id":
        return obj.id
    raise type_error(f"cannot access property `{name}` on {type_name(obj)}")
