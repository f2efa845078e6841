"""Core builtins: output (spec language.md 3.3, 4.1), types and conversion (4.2), Result and
error helpers (4.3) and assertions (4.4).

Output goes through ``thread.write_out`` / ``thread.write_err``. The colour helpers read
``thread.runtime`` only through ``getattr`` (``stdout_isatty``, ``color_mode``), so any
runtime object works.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.runtime.display import display, format_float
from harnpy.runtime.errors import HarnThrow, runtime_error
from harnpy.runtime.extensions import register_state
from harnpy.runtime.ops import truthy, values_equal
from harnpy.runtime.values import (
    I64_MAX,
    I64_MIN,
    EnumValue,
    HSet,
    IterValue,
    RangeValue,
    err,
    is_result,
    ok,
    type_name,
)
from harnpy.stdlib.registry import builtin

# ------------------------------------------------------------------- output (3.3, 4.1)


def _one(name: str, args: tuple[Any, ...]) -> str:
    """The display of the one value an output builtin prints ("" with none).

    Harn's output builtins take one value (``println(msg)``; Harn itself ignores the rest).
    Dropping a second argument silently hides a mistake (``println("total", n)`` prints
    ``total``), so harnpy refuses it: a catchable ``E324`` error naming the builtin, with the
    interpolated form as the fix.

    Raises:
        HarnRuntimeError: ``Runtime error: <name>: takes one value, got <n> arguments ...``.
    """
    if len(args) > 1:
        raise runtime_error(
            f"{name}: takes one value, got {len(args)} arguments; join them into one "
            f'string first, e.g. {name}("${{a}} ${{b}}")',
            "E324",
        )
    return display(args[0]) if args else ""


@builtin()
def println(thread: Any, *args: Any) -> None:
    """``println(v?)``: display(v) + newline (3.3). More than one argument is a catchable
    ``E324`` error naming ``println`` (write ``println("${a} ${b}")``)."""
    thread.write_out(_one("println", args) + "\n")


@builtin("print")
def print_(thread: Any, *args: Any) -> None:
    """``print(v?)``: display(v) without a newline (3.3). More than one argument is a
    catchable ``E324`` error naming ``print``."""
    thread.write_out(_one("print", args))


@builtin()
def log(thread: Any, *args: Any) -> None:
    """``log(v?)``: ``[harn] `` + display(v) + newline (3.3). More than one argument is a
    catchable ``E324`` error naming ``log``."""
    thread.write_out("[harn] " + _one("log", args) + "\n")


@builtin()
def eprint(thread: Any, *args: Any) -> None:
    """``eprint(v?)``: display(v) to stderr, no newline. More than one argument is a
    catchable ``E324`` error naming ``eprint``."""
    thread.write_err(_one("eprint", args))


@builtin()
def eprintln(thread: Any, *args: Any) -> None:
    """``eprintln(v?)``: display(v) + newline to stderr. More than one argument is a
    catchable ``E324`` error naming ``eprintln``."""
    thread.write_err(_one("eprintln", args) + "\n")


_NAMED_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@builtin("format")
def format_(thread: Any, template: Any = None, *args: Any) -> str:
    """``format(tpl, ...args)`` (4.1): each ``{}`` takes the display of the next argument
    (surplus ``{}`` stay as they are). When the second argument is a dict, ``{key}`` is
    replaced by display(dict[key]) instead and unknown keys are left untouched."""
    tpl = display(template)
    if len(args) == 1 and type(args[0]) is dict:
        named: dict[str, Any] = args[0]

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            return display(named[key]) if key in named else m.group(0)

        return _NAMED_PLACEHOLDER.sub(sub, tpl)
    parts = tpl.split("{}")
    out = [parts[0]]
    for i, part in enumerate(parts[1:]):
        out.append(display(args[i]) if i < len(args) else "{}")
        out.append(part)
    return "".join(out)


ANSI_COLORS = {
    "black": 30,
    "red": 31,
    "green": 32,
    "yellow": 33,
    "blue": 34,
    "magenta": 35,
    "cyan": 36,
    "white": 37,
    "gray": 90,
    "grey": 90,
    "bright_black": 90,
    "bright_red": 91,
    "bright_green": 92,
    "bright_yellow": 93,
    "bright_blue": 94,
    "bright_magenta": 95,
    "bright_cyan": 96,
    "bright_white": 97,
}

_COLOR_MODES = ("auto", "always", "never")
# Used when the runtime object does not accept a ``color_mode`` attribute.
_fallback_color_mode = {"mode": "auto"}


def _color_enabled(thread: Any) -> bool:
    runtime = getattr(thread, "runtime", None)
    mode = getattr(runtime, "color_mode", None) or _fallback_color_mode["mode"]
    if mode == "always":
        return True
    if mode == "never":
        return False
    return bool(getattr(runtime, "stdout_isatty", False))


def _styled(thread: Any, text: Any, code: int | None) -> str:
    s = display(text)
    if code is None or not _color_enabled(thread):
        return s
    return f"\x1b[{code}m{s}\x1b[0m"


@builtin()
def color(thread: Any, text: Any = None, name: Any = None) -> str:
    """``color(text, name)``: ANSI colour (``red``, ``green``, ``bright_blue``, ``gray``...)
    when colour is enabled (see ``set_color_mode``), else the plain display of ``text``;
    unknown colour names give plain text."""
    return _styled(thread, text, ANSI_COLORS.get(display(name).lower()))


@builtin()
def bold(thread: Any, text: Any = None) -> str:
    """``bold(text)``: ANSI bold when colour is enabled, else plain text."""
    return _styled(thread, text, 1)


@builtin()
def dim(thread: Any, text: Any = None) -> str:
    """``dim(text)``: ANSI dim when colour is enabled, else plain text."""
    return _styled(thread, text, 2)


@builtin()
def set_color_mode(thread: Any, mode: Any = None) -> None:
    """``set_color_mode("auto" | "always" | "never")``: whether ``color``/``bold``/``dim``
    emit ANSI codes (``auto``: only when stdout is a TTY). Stored as ``runtime.color_mode``
    (or module-wide when the runtime object refuses the attribute). Other values throw."""
    m = display(mode)
    if m not in _COLOR_MODES:
        raise HarnThrow(f"set_color_mode: expected auto, always or never, got {m}")
    try:
        thread.runtime.color_mode = m
    except AttributeError:
        _fallback_color_mode["mode"] = m


# ------------------------------------------------------------- types and conversion (4.2)


@builtin()
def type_of(thread: Any, v: Any = None) -> str:
    """``type_of(v)``: the type name of spec 3.1 (``int``, ``list``, ``enum``...)."""
    return type_name(v)


@builtin()
def to_string(thread: Any, v: Any = None) -> str:
    """``to_string(v)``: the display string of ``v`` (3.2)."""
    return display(v)


_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(
    r"[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
    re.IGNORECASE,
)


def parse_int(s: str) -> int | None:
    """Strict i64 parse: optional sign and ASCII digits only; None otherwise or on overflow."""
    if not _INT_RE.fullmatch(s) or len(s.lstrip("+-").lstrip("0")) > 19:
        return None
    n = int(s)
    return n if I64_MIN <= n <= I64_MAX else None


def parse_float(s: str) -> float | None:
    """Float parse accepting ``1e3``, ``.5``, ``inf``, ``NaN``; no spaces or underscores."""
    if not _FLOAT_RE.fullmatch(s):
        return None
    return float(s)


def float_to_int(x: float) -> int:
    """Truncate toward zero with saturation (NaN -> 0), like a Rust ``as i64`` cast."""
    if x != x:
        return 0
    if x >= 9.223372036854776e18:
        return I64_MAX
    if x <= -9.223372036854776e18:
        return I64_MIN
    return int(x)


@builtin()
def to_int(thread: Any, v: Any = None) -> int | None:
    """``to_int(v)``: int as is; float truncated toward zero (nil for NaN/inf); string by
    strict integer parse (``"12"``, ``"-5"``, ``"+5"``) else nil; anything else nil."""
    t = type(v)
    if t is int:
        return v
    if t is float:
        if v != v or v in (float("inf"), float("-inf")):
            return None
        return float_to_int(v)
    if t is str:
        return parse_int(v)
    return None


@builtin()
def to_float(thread: Any, v: Any = None) -> float | None:
    """``to_float(v)``: float as is; int converted; string parsed (``"1e3"``, ``"inf"``)
    else nil; anything else nil."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    if t is str:
        return parse_float(v)
    return None


@builtin("len")
def len_(thread: Any, v: Any = None) -> int:
    """``len(v)``: code points of a string; items of a list, dict or set; length of a range
    or bytes; 0 for anything else."""
    t = type(v)
    if t is str or t is list or t is dict or t is bytes:
        return len(v)
    if t is HSet:
        return len(v.items)
    if t is RangeValue:
        return v.len_i64()
    if t is IterValue and v.memo is not None:
        from harnpy.stdlib.iters import force_sequence

        return len(thread.drive_sync(force_sequence(v, thread), "len"))
    return 0


@builtin()
def is_same(thread: Any, a: Any = None, b: Any = None) -> bool:
    """``is_same(a, b)``: identity for heap values (lists, dicts, sets, closures...),
    equality for scalars (same type and equal value)."""
    t = type(a)
    if t in (int, float, str, bool, type(None)):
        return type(b) is t and a == b
    return a is b


@builtin()
def int_to_string(thread: Any, v: Any = None) -> str:
    """``int_to_string(n)``: decimal text of an int (display of anything else)."""
    return display(v)


@builtin()
def float_to_string(thread: Any, v: Any = None) -> str:
    """``float_to_string(x)``: display text of a float (ints are shown as floats)."""
    if type(v) is int:
        return format_float(float(v))
    return display(v)


@builtin()
def parse_int_or(thread: Any, s: Any = None, default: Any = None) -> Any:
    """``parse_int_or(s, default)``: strict int parse of display(s), else ``default``."""
    n = parse_int(display(s).strip())
    return default if n is None else n


@builtin()
def parse_float_or(thread: Any, s: Any = None, default: Any = None) -> Any:
    """``parse_float_or(s, default)``: float parse of display(s), else ``default``."""
    x = parse_float(display(s).strip())
    return default if x is None else x


# ---------------------------------------------------------------- Result and errors (4.3)


@builtin("Ok")
def ok_(thread: Any, v: Any = None) -> EnumValue:
    """``Ok(v)``: ``Result.Ok(v)``."""
    return ok(v)


@builtin("Err")
def err_(thread: Any, e: Any = None) -> EnumValue:
    """``Err(e)``: ``Result.Err(e)``."""
    return err(e)


@builtin()
def is_ok(thread: Any, r: Any = None) -> bool:
    """``is_ok(r)``: r is ``Result.Ok`` (false for non-Results)."""
    return is_result(r) and r.variant == "Ok"


@builtin()
def is_err(thread: Any, r: Any = None) -> bool:
    """``is_err(r)``: r is ``Result.Err`` (false for non-Results)."""
    return is_result(r) and r.variant == "Err"


def _payload(r: EnumValue) -> Any:
    return r.fields[0] if r.fields else None


@builtin()
def unwrap(thread: Any, r: Any = None) -> Any:
    """``unwrap(r)``: the Ok value; a non-Result passes through.

    Raises ``Runtime error: unwrap called on Err: <e>`` on an Err."""
    if is_result(r):
        if r.variant == "Err":
            raise runtime_error(f"unwrap called on Err: {display(_payload(r))}")
        return _payload(r)
    return r


@builtin()
def unwrap_or(thread: Any, r: Any = None, default: Any = None) -> Any:
    """``unwrap_or(r, d)``: the Ok value, ``d`` on Err; a non-Result passes through."""
    if is_result(r):
        return default if r.variant == "Err" else _payload(r)
    return r


@builtin()
def unwrap_err(thread: Any, r: Any = None) -> Any:
    """``unwrap_err(r)``: the Err payload.

    Raises ``Runtime error: unwrap_err called on non-Err`` for anything else."""
    if is_result(r) and r.variant == "Err":
        return _payload(r)
    raise runtime_error("unwrap_err called on non-Err")


@builtin()
def throw_error(thread: Any, message: Any = None, category: Any = None) -> None:
    """``throw_error(msg, category?)``: throws the dict ``{category, message}``
    (category default ``"generic"``)."""
    cat = "generic" if category is None else display(category)
    msg = message if type(message) is str else display(message)
    raise HarnThrow({"category": cat, "message": msg})


# Ordered (category, pattern) heuristics for string errors; first match wins.
_CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (cat, re.compile(pat, re.IGNORECASE))
    for cat, pat in (
        ("timeout", r"deadline exceeded|timed out|timeout|\b(408|504)\b"),
        ("rate_limit", r"rate[ _-]?limit|too many requests|\b429\b"),
        ("overloaded", r"overloaded|service unavailable|\b(503|529)\b"),
        ("auth", r"unauthori[sz]ed|forbidden|invalid api key|\b(401|403)\b"),
        ("not_found", r"not found|\b404\b"),
        ("server_error", r"internal server error|bad gateway|\b(500|502)\b"),
        ("cancelled", r"cancell?ed"),
    )
)


def error_category_of(e: Any) -> str:
    """Category of an error value: a dict's ``category`` (default ``generic``); for a string a
    case-insensitive keyword/HTTP-status heuristic (``Deadline exceeded``/408/504 ->
    ``timeout``, ``overloaded_error``/503/529 -> ``overloaded``, 429 -> ``rate_limit``,
    401/403 -> ``auth``, 404 -> ``not_found``, 500/502 -> ``server_error``, ``cancelled``);
    ``generic`` otherwise."""
    if type(e) is dict:
        c = e.get("category")
        return "generic" if c is None else display(c)
    if type(e) is str:
        for cat, pat in _CATEGORY_RULES:
            if pat.search(e):
                return cat
    return "generic"


@builtin()
def error_category(thread: Any, e: Any = None) -> str:
    """``error_category(e)``: see :func:`error_category_of`."""
    return error_category_of(e)


@builtin()
def is_timeout(thread: Any, e: Any = None) -> bool:
    """``is_timeout(e)``: ``error_category(e) == "timeout"``."""
    return error_category_of(e) == "timeout"


@builtin()
def is_rate_limited(thread: Any, e: Any = None) -> bool:
    """``is_rate_limited(e)``: ``error_category(e) == "rate_limit"``."""
    return error_category_of(e) == "rate_limit"


@builtin()
def unreachable(thread: Any, *args: Any) -> None:
    """``unreachable(v?)``: always raises ``Runtime error: unreachable code was reached``
    (with ``: <display(v)>`` appended when a value is given) (3.12)."""
    msg = "unreachable code was reached"
    if args:
        msg += f": {display(args[0])}"
    raise runtime_error(msg)


# ----------------------------------------------------------------------- assertions (4.4)


@builtin("assert")
def assert_(thread: Any, cond: Any = None, *args: Any) -> None:
    """``assert(cond, msg?)``: throws ``msg`` (default ``"Assertion failed"``) when ``cond``
    is falsy."""
    if not truthy(cond):
        raise HarnThrow(args[0] if args else "Assertion failed")


@builtin()
def assert_eq(thread: Any, a: Any = None, b: Any = None, *args: Any) -> None:
    """``assert_eq(a, b, msg?)``: throws ``msg`` or
    ``Assertion failed: expected <b>, got <a>`` unless ``a == b``."""
    if not values_equal(a, b):
        raise HarnThrow(
            args[0] if args else f"Assertion failed: expected {display(b)}, got {display(a)}"
        )


@builtin()
def assert_ne(thread: Any, a: Any = None, b: Any = None, *args: Any) -> None:
    """``assert_ne(a, b, msg?)``: throws ``msg`` or
    ``Assertion failed: values should not be equal: <a>`` when ``a == b``."""
    if values_equal(a, b):
        raise HarnThrow(
            args[0] if args else f"Assertion failed: values should not be equal: {display(a)}"
        )


# ------------------------------------------------------------------ snapshot state


def _save_color_mode(thread: Any) -> str | None:
    mode = getattr(thread.runtime, "color_mode", None)
    return None if mode in (None, "auto") else str(mode)


def _load_color_mode(thread: Any, data: Any) -> Any:
    if data not in _COLOR_MODES:
        raise ValueError(f"unknown colour mode {data!r}")
    rt = thread.runtime
    return lambda: setattr(rt, "color_mode", data)


register_state("color_mode", _save_color_mode, _load_color_mode)
