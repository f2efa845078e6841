"""Private numeric primitives used by the bundled ``std/*.harn`` modules.

The ``std/*`` library modules (repository ``stdlib/std/``) are written in Harn. A few
functions need numerics that Harn code cannot express precisely (the error function and the
inverse normal CDF); they are provided here under leading-underscore names so that they do
not collide with user functions. Spec language.md 3.18 (``std/`` modules) and 4.9 (math).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from harnpy.runtime.values import type_name
from harnpy.stdlib._util import fail
from harnpy.stdlib.registry import builtin

_STANDARD_NORMAL = statistics.NormalDist()


def _number(name: str, x: Any) -> float:
    if type(x) is int or type(x) is float:
        return float(x)
    raise fail(f"{name}: expected a number, got {type_name(x)}")


@builtin()
def _math_erf(thread: Any, x: Any = None) -> float:
    """``_math_erf(x)``: the Gauss error function of ``x`` (float). Used by ``std/math``
    ``normal_cdf``. Throws ``_math_erf: expected a number, got T`` for a non-number."""
    return math.erf(_number("_math_erf", x))


@builtin()
def _math_normal_quantile(thread: Any, p: Any = None) -> float:
    """``_math_normal_quantile(p)``: the standard normal quantile (inverse CDF) of a
    probability ``0 < p < 1`` (float). Used by ``std/math`` ``normal_quantile``. Throws
    ``probability must be between 0 and 1`` outside that open interval."""
    q = _number("_math_normal_quantile", p)
    if not 0.0 < q < 1.0:
        raise fail("probability must be between 0 and 1")
    return _STANDARD_NORMAL.inv_cdf(q)
