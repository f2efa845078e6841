"""Math builtins (spec language.md 4.9) and the global constants ``pi`` and ``e`` (3.1).

Numeric builtins return nil for non-numeric arguments instead of failing (like ``min`` and
``max`` in the spec). Float results follow IEEE semantics rather than Python exceptions:
``sqrt(-1)`` is NaN, ``ln(0)`` is ``-inf``, ``exp(1000)`` is ``inf``.

Randomness: a seeded handle from ``rng_seed(n)`` is a
:class:`~harnpy.runtime.values.HostObject` of kind ``"rng"`` wrapping ``random.Random``; it
may be passed as the first argument of ``random``/``random_int``/``random_choice``/
``random_shuffle``. Without one, ``thread.runtime.rng`` is used when the runtime has it, else
a module-private generator.
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable
from typing import Any

from harnpy.runtime.errors import HarnThrow, type_error
from harnpy.runtime.values import I64_MAX, I64_MIN, HostObject, RangeValue, type_name, wrap_i64
from harnpy.stdlib._common import is_number
from harnpy.stdlib.core import float_to_int
from harnpy.stdlib.registry import builtin

#: Global value bindings the interpreter installs next to the builtins (spec 3.1).
GLOBAL_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def _to_int(x: float) -> int:
    """Float -> int for floor/ceil/round (saturating like a Rust cast)."""
    return float_to_int(x)


@builtin("abs")
def abs_(thread: Any, x: Any = None) -> int | float | None:
    """``abs(n)``: absolute value, same kind (int stays int, wrapping at i64 min)."""
    t = type(x)
    if t is int:
        return wrap_i64(-x) if x < 0 else x
    if t is float:
        return abs(x)
    return None


def _numbers(args: tuple[Any, ...]) -> list[Any] | None:
    vals = list(args[0]) if len(args) == 1 and type(args[0]) is list else list(args)
    if not vals or not all(is_number(v) for v in vals):
        return None
    return vals


def _pick(args: tuple[Any, ...], better: Callable[[Any, Any], bool]) -> int | float | None:
    vals = _numbers(args)
    if vals is None:
        return None
    best = vals[0]
    for v in vals[1:]:
        if better(v, best):
            best = v
    if any(type(v) is float for v in vals):
        return float(best)
    return best


@builtin("min")
def min_(thread: Any, *args: Any) -> int | float | None:
    """``min(a, b, ...)`` (or ``min(list)``): the smallest number; float if any argument
    is a float; nil when an argument is not a number or there is none."""
    return _pick(args, lambda a, b: a < b)


@builtin("max")
def max_(thread: Any, *args: Any) -> int | float | None:
    """``max(a, b, ...)`` (or ``max(list)``): the largest number; float if any argument is
    a float; nil otherwise."""
    return _pick(args, lambda a, b: a > b)


@builtin()
def floor(thread: Any, x: Any = None) -> int | None:
    """``floor(x)``: float -> int rounded down; ints pass through."""
    t = type(x)
    if t is int:
        return x
    if t is float:
        return _to_int(math.floor(x) if math.isfinite(x) else x)
    return None


@builtin()
def ceil(thread: Any, x: Any = None) -> int | None:
    """``ceil(x)``: float -> int rounded up; ints pass through."""
    t = type(x)
    if t is int:
        return x
    if t is float:
        return _to_int(math.ceil(x) if math.isfinite(x) else x)
    return None


@builtin("round")
def round_(thread: Any, x: Any = None) -> int | None:
    """``round(x)``: float -> nearest int, halves away from zero (``round(2.5) == 3``,
    ``round(-2.5) == -3``); ints pass through."""
    t = type(x)
    if t is int:
        return x
    if t is float:
        if not math.isfinite(x):
            return _to_int(x)
        ax = abs(x)
        r = math.floor(ax)
        if ax - r >= 0.5:  # exact: no rounding in ax - floor(ax)
            r += 1
        return _to_int(math.copysign(r, x))
    return None


def _float_fn(fn: Callable[[float], float]) -> Callable[[Any], float | None]:
    def run(x: Any) -> float | None:
        if not is_number(x):
            return None
        try:
            return fn(float(x))
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan

    return run


def _ln(x: float) -> float:
    if x == 0:
        return -math.inf
    return math.log(x)


def _log2(x: float) -> float:
    return -math.inf if x == 0 else math.log2(x)


def _log10(x: float) -> float:
    return -math.inf if x == 0 else math.log10(x)


_sqrt = _float_fn(math.sqrt)
_UNARY: dict[str, Callable[[Any], float | None]] = {
    "sin": _float_fn(math.sin),
    "cos": _float_fn(math.cos),
    "tan": _float_fn(math.tan),
    "asin": _float_fn(math.asin),
    "acos": _float_fn(math.acos),
    "atan": _float_fn(math.atan),
    "ln": _float_fn(_ln),
    "log2": _float_fn(_log2),
    "log10": _float_fn(_log10),
    "exp": _float_fn(math.exp),
}


@builtin()
def sqrt(thread: Any, x: Any = None) -> float | None:
    """``sqrt(x)``: always a float (``sqrt(25)`` is ``5.0``; negative -> NaN)."""
    return _sqrt(x)


@builtin()
def sin(thread: Any, x: Any = None) -> float | None:
    """``sin(x)`` (radians), float."""
    return _UNARY["sin"](x)


@builtin()
def cos(thread: Any, x: Any = None) -> float | None:
    """``cos(x)`` (radians), float."""
    return _UNARY["cos"](x)


@builtin()
def tan(thread: Any, x: Any = None) -> float | None:
    """``tan(x)`` (radians), float."""
    return _UNARY["tan"](x)


@builtin()
def asin(thread: Any, x: Any = None) -> float | None:
    """``asin(x)``: radians; NaN outside [-1, 1]."""
    return _UNARY["asin"](x)


@builtin()
def acos(thread: Any, x: Any = None) -> float | None:
    """``acos(x)``: radians; NaN outside [-1, 1]."""
    return _UNARY["acos"](x)


@builtin()
def atan(thread: Any, x: Any = None) -> float | None:
    """``atan(x)``: radians."""
    return _UNARY["atan"](x)


@builtin()
def atan2(thread: Any, y: Any = None, x: Any = None) -> float | None:
    """``atan2(y, x)``: angle of the point (x, y) in radians."""
    if not (is_number(y) and is_number(x)):
        return None
    return math.atan2(float(y), float(x))


@builtin()
def ln(thread: Any, x: Any = None) -> float | None:
    """``ln(x)``: natural logarithm (``ln(0)`` is ``-inf``, negative -> NaN)."""
    return _UNARY["ln"](x)


@builtin()
def log2(thread: Any, x: Any = None) -> float | None:
    """``log2(x)``: base-2 logarithm."""
    return _UNARY["log2"](x)


@builtin()
def log10(thread: Any, x: Any = None) -> float | None:
    """``log10(x)``: base-10 logarithm."""
    return _UNARY["log10"](x)


@builtin()
def exp(thread: Any, x: Any = None) -> float | None:
    """``exp(x)``: e to the power x (overflow -> ``inf``)."""
    return _UNARY["exp"](x)


@builtin("pow")
def pow_(thread: Any, a: Any = None, b: Any = None) -> int | float | None:
    """``pow(a, b)``: like ``**`` but an int result outside i64 falls back to a float;
    a negative int exponent gives a float."""
    if not (is_number(a) and is_number(b)):
        return None
    if type(a) is int and type(b) is int:
        if b >= 0:
            if abs(a) <= 1 or b * max(abs(a), 2).bit_length() <= 4096:
                r = a**b
                if I64_MIN <= r <= I64_MAX:
                    return r
            return _float_pow(float(a), float(b))
        return _float_pow(float(a), float(b))
    return _float_pow(float(a), float(b))


def _float_pow(a: float, b: float) -> float:
    try:
        r = a**b
    except ZeroDivisionError:
        return math.inf
    except OverflowError:
        return math.inf if a > 0 or b % 2 == 0 else -math.inf
    if isinstance(r, complex):
        return math.nan
    return r


@builtin()
def sign(thread: Any, x: Any = None) -> int | None:
    """``sign(x)``: -1, 0 or 1 as an int (0 for NaN)."""
    if not is_number(x):
        return None
    return (x > 0) - (x < 0)


@builtin()
def is_nan(thread: Any, x: Any = None) -> bool:
    """``is_nan(x)``: x is a NaN float (false for non-floats)."""
    return type(x) is float and x != x


@builtin()
def is_infinite(thread: Any, x: Any = None) -> bool:
    """``is_infinite(x)``: x is ``inf`` or ``-inf`` (false for non-floats)."""
    return type(x) is float and math.isinf(x)


# ---------------------------------------------------------------------------- ranges


@builtin("range")
def range_(thread: Any, *args: Any) -> RangeValue:
    """``range(n)`` = ``0 to n exclusive``; ``range(a, b)`` = ``a to b exclusive``.

    Raises ``Type error: range() expects int arguments, got T`` for non-int arguments."""
    if not args or len(args) > 2:
        raise type_error(f"range() expects 1 or 2 int arguments, got {len(args)}")
    for a in args:
        if type(a) is not int:
            raise type_error(f"range() expects int arguments, got {type_name(a)}")
    if len(args) == 1:
        return RangeValue(0, args[0], False)
    return RangeValue(args[0], args[1], False)


# ------------------------------------------------------------------------ randomness

_default_rng = _random.Random()


def _rng(thread: Any, args: tuple[Any, ...]) -> tuple[_random.Random, tuple[Any, ...]]:
    if args and type(args[0]) is HostObject and args[0].kind == "rng":
        return args[0].obj, args[1:]
    shared = getattr(getattr(thread, "runtime", None), "rng", None)
    return (shared if isinstance(shared, _random.Random) else _default_rng), args


@builtin()
def rng_seed(thread: Any, seed: Any = None) -> HostObject:
    """``rng_seed(n)``: a seeded random generator handle (type ``rng``); equal seeds give
    equal sequences."""
    return HostObject("rng", _random.Random(seed if is_number(seed) else str(seed)))


@builtin("random")
def random_(thread: Any, *args: Any) -> float:
    """``random(rng?)``: a float in [0, 1)."""
    rng, _ = _rng(thread, args)
    return rng.random()


@builtin()
def random_int(thread: Any, *args: Any) -> int:
    """``random_int(rng?, a, b)``: an int in [a, b] (inclusive; bounds swapped if needed).

    Raises a type error for non-int bounds."""
    rng, rest = _rng(thread, args)
    a = rest[0] if rest else None
    b = rest[1] if len(rest) > 1 else None
    if type(a) is not int or type(b) is not int:
        raise type_error("random_int(a, b) expects int bounds")
    lo, hi = (a, b) if a <= b else (b, a)
    return rng.randint(lo, hi)


@builtin()
def random_choice(thread: Any, *args: Any) -> Any:
    """``random_choice(rng?, xs)``: a random item of the list, nil when empty."""
    rng, rest = _rng(thread, args)
    xs = rest[0] if rest else None
    if type(xs) is not list or not xs:
        return None
    return xs[rng.randrange(len(xs))]


@builtin()
def random_shuffle(thread: Any, *args: Any) -> list[Any]:
    """``random_shuffle(rng?, xs)``: a shuffled copy of the list (``[]`` for a non-list)."""
    rng, rest = _rng(thread, args)
    xs = rest[0] if rest else None
    if type(xs) is not list:
        return []
    out = list(xs)
    rng.shuffle(out)
    return out


# ------------------------------------------------------------------------ statistics


def _num_list(name: str, xs: Any) -> list[float]:
    if type(xs) is not list:
        raise type_error(f"{name} expects a list of numbers, got {type_name(xs)}")
    for x in xs:
        if not is_number(x):
            raise type_error(f"{name} expects a list of numbers, got {type_name(x)} item")
    if not xs:
        raise HarnThrow("items must not be empty")
    return [float(x) for x in xs]


@builtin()
def mean(thread: Any, xs: Any = None) -> float:
    """``mean(xs)``: arithmetic mean (float). Throws ``items must not be empty``."""
    vals = _num_list("mean", xs)
    return math.fsum(vals) / len(vals)


@builtin()
def median(thread: Any, xs: Any = None) -> float:
    """``median(xs)``: middle value, mean of the two middle values for even counts
    (float). Throws ``items must not be empty``."""
    vals = sorted(_num_list("median", xs))
    n = len(vals)
    mid = n // 2
    return vals[mid] if n % 2 else (vals[mid - 1] + vals[mid]) / 2


def _variance(name: str, xs: Any, sample: Any) -> float:
    vals = _num_list(name, xs)
    n = len(vals)
    if sample is True and n < 2:
        raise HarnThrow("sample variance requires at least 2 values")
    m = math.fsum(vals) / n
    ss = math.fsum((v - m) ** 2 for v in vals)
    return ss / (n - 1 if sample is True else n)


@builtin()
def variance(thread: Any, xs: Any = None, sample: Any = None) -> float:
    """``variance(xs, sample?)``: population variance, or the sample variance (n - 1) when
    ``sample`` is true. Throws for an empty list or a one-item sample."""
    return _variance("variance", xs, sample)


@builtin()
def stddev(thread: Any, xs: Any = None, sample: Any = None) -> float:
    """``stddev(xs, sample?)``: square root of :func:`variance`."""
    return math.sqrt(_variance("stddev", xs, sample))


@builtin()
def percentile(thread: Any, xs: Any = None, p: Any = None) -> float:
    """``percentile(xs, p)``: linear interpolation between closest ranks
    (``percentile([1, 2, 3, 4], 25)`` is ``1.75``). Throws
    ``percentile must be between 0 and 100`` for other ``p``."""
    vals = sorted(_num_list("percentile", xs))
    if not is_number(p) or not 0 <= p <= 100:
        raise HarnThrow("percentile must be between 0 and 100")
    rank = p / 100 * (len(vals) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (rank - lo)
