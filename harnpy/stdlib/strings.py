"""String builtins and string methods (spec language.md 3.9, 4.5).

Builtins render non-string arguments with display first instead of failing. Lengths,
indices and offsets count code points (Python ``str`` indices), except ``str_pad`` and
``unicode_graphemes`` which work on extended grapheme clusters (UAX #29, via ``wcwidth``).

Two deliberate asymmetries from the reference: ``split(s)`` splits on ``" "`` but
``s.split()`` on ``","``; ``substring(s, start, len)`` takes a length while
``s.substring(start, end)`` takes an end index.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import MAX_BUILD_SIZE, HarnThrow, too_large
from harnpy.runtime.ops import repeat_str, values_equal
from harnpy.stdlib._common import as_int
from harnpy.stdlib.registry import builtin, method


@functools.cache
def _wc_graphemes() -> Any:
    """wcwidth's UAX #29 segmenter (wcwidth >= 0.3), imported on first use (start-up) and
    looked up once (a missing wcwidth is not searched for again on every call)."""
    try:
        from wcwidth import iter_graphemes

        return iter_graphemes
    except ImportError:  # pragma: no cover - old wcwidth
        return None


def graphemes(s: str) -> list[str]:
    """Extended grapheme clusters of ``s`` (falls back to base char + combining marks)."""
    seg = None if (s.isascii() and "\r\n" not in s) else _wc_graphemes()
    if seg is not None:
        return list(seg(s))
    out: list[str] = []
    for ch in s:
        if out and (unicodedata.combining(ch) or ch in "\u200d\ufe0f"):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _str(v: Any) -> str:
    return v if type(v) is str else display(v)


def split_str(s: str, sep: str) -> list[str]:
    """Split like Rust ``str::split``: an empty separator yields ``["", c1, c2, ..., ""]``."""
    if sep == "":
        return ["", *s, ""]
    return s.split(sep)


def char_substring(s: str, start: Any, end: Any) -> str:
    """Code-point substring ``[start, end)`` with both ends clamped into ``[0, len]``
    (``end`` defaults to the length; an end before the start gives ``""``)."""
    n = len(s)
    a = min(max(as_int(start, 0) or 0, 0), n)
    b = n if end is None else min(max(as_int(end, n) or 0, 0), n)
    return s[a:b] if b > a else ""


# ------------------------------------------------------------------------ builtins (4.5)


@builtin()
def split(thread: Any, s: Any = None, sep: Any = None) -> list[str]:
    """``split(s, sep?)``: parts of display(s) around display(sep) (default ``" "``);
    ``split("a,,b", ",")`` is ``[a, , b]``."""
    return split_str(_str(s), " " if sep is None else _str(sep))


@builtin()
def join(thread: Any, items: Any = None, sep: Any = None) -> str:
    """``join(list, sep?)``: display of the items joined by display(sep) (default ``""``);
    a non-list gives ``""``."""
    if type(items) is not list:
        return ""
    return ("" if sep is None else _str(sep)).join(display(x) for x in items)


@builtin()
def trim(thread: Any, s: Any = None) -> str:
    """``trim(s)``: display(s) without leading/trailing whitespace."""
    return _str(s).strip()


@builtin()
def lowercase(thread: Any, s: Any = None) -> str:
    """``lowercase(s)``: display(s) in lower case."""
    return _str(s).lower()


@builtin()
def uppercase(thread: Any, s: Any = None) -> str:
    """``uppercase(s)``: display(s) in upper case."""
    return _str(s).upper()


@builtin()
def starts_with(thread: Any, s: Any = None, prefix: Any = None) -> bool:
    """``starts_with(s, p)``: display(s) starts with display(p)."""
    return _str(s).startswith("" if prefix is None else _str(prefix))


@builtin()
def ends_with(thread: Any, s: Any = None, suffix: Any = None) -> bool:
    """``ends_with(s, p)``: display(s) ends with display(p)."""
    return _str(s).endswith("" if suffix is None else _str(suffix))


@builtin()
def contains(thread: Any, x: Any = None, y: Any = None) -> bool:
    """``contains(x, y)``: substring test for a string ``x`` (``y`` rendered first), element
    ``==`` for a list ``x``, false otherwise."""
    if type(x) is str:
        return ("" if y is None else _str(y)) in x
    if type(x) is list:
        return any(values_equal(y, item) for item in x)
    return False


@builtin()
def replace(thread: Any, s: Any = None, old: Any = None, new: Any = None) -> str:
    """``replace(s, old, new)``: every occurrence of ``old`` replaced (all rendered)."""
    return _str(s).replace(
        "" if old is None else _str(old),
        "" if new is None else _str(new),
    )


@builtin()
def substring(thread: Any, s: Any = None, start: Any = None, length: Any = None) -> str:
    """``substring(s, start, len?)``: ``len`` code points from ``start`` (a **length**, unlike
    the method); negative start counts as 0, everything clamps to the string."""
    text = _str(s)
    a = min(max(as_int(start, 0) or 0, 0), len(text))
    if length is None:
        return text[a:]
    n = max(as_int(length, 0) or 0, 0)
    return text[a : a + n]


@builtin()
def str_pad(
    thread: Any, s: Any = None, width: Any = None, fill: Any = None, side: Any = None
) -> str:
    """``str_pad(s, width, fill?, side?)``: pad display(s) with ``fill`` (default ``" "``)
    to ``width`` grapheme clusters; ``side`` is ``"right"`` (default), ``"left"`` or
    ``"both"`` (extra odd padding goes right). Longer strings are returned unchanged.
    Throws for another side or an empty fill."""
    text = _str(s)
    w = as_int(width, 0) or 0
    pad_with = " " if fill is None else _str(fill)
    where = "right" if side is None else _str(side)
    if where not in ("left", "right", "both"):
        raise HarnThrow(f"str_pad: side must be left, right or both, got {where}")
    if pad_with == "":
        raise HarnThrow("str_pad: fill must not be empty")
    missing = w - len(graphemes(text))
    if missing <= 0:
        return text
    unit = graphemes(pad_with)

    def pad(n: int) -> str:
        return "".join(unit[i % len(unit)] for i in range(n))

    if where == "left":
        return pad(missing) + text
    if where == "right":
        return text + pad(missing)
    left = missing // 2
    return pad(left) + text + pad(missing - left)


@builtin()
def unicode_normalize(thread: Any, s: Any = None, form: Any = None) -> str:
    """``unicode_normalize(s, form)``: Unicode normal form ``NFC`` (default), ``NFD``,
    ``NFKC`` or ``NFKD`` of display(s); throws for another form."""
    f = "NFC" if form is None else _str(form).upper()
    if f not in ("NFC", "NFD", "NFKC", "NFKD"):
        raise HarnThrow(f"unicode_normalize: unknown form {f}")
    return unicodedata.normalize(f, _str(s))  # type: ignore[arg-type]


@builtin()
def unicode_graphemes(thread: Any, s: Any = None) -> list[str]:
    """``unicode_graphemes(s)``: list of the extended grapheme clusters of display(s)."""
    return graphemes(_str(s))


# ----------------------------------------------------------------------- case helpers


def _is_upper(ch: str) -> bool:
    return ch.isupper()


def camel_words(s: str) -> list[str]:
    """Split camelCase / PascalCase / acronyms (``HTTPServer`` -> ``HTTP``, ``Server``) and
    existing ``_``/``-``/space separators into words (empty words dropped)."""
    words: list[str] = []
    cur = ""
    n = len(s)
    for i, ch in enumerate(s):
        if ch in "_- ":
            if cur:
                words.append(cur)
            cur = ""
            continue
        if cur and _is_upper(ch):
            prev = s[i - 1]
            nxt = s[i + 1] if i + 1 < n else ""
            if prev.islower() or prev.isdigit() or (_is_upper(prev) and nxt.islower()):
                words.append(cur)
                cur = ""
        cur += ch
    if cur:
        words.append(cur)
    return words


def _cap(w: str) -> str:
    return w[:1].upper() + w[1:]


def _lowfirst(w: str) -> str:
    return w[:1].lower() + w[1:]


def _from_parts(parts: list[str], pascal: bool) -> str:
    out: list[str] = []
    for p in parts:
        if p:
            out.append(_cap(p) if (pascal or out) else p)
    return "".join(out)


@builtin()
def snake_to_camel(thread: Any, s: Any = None) -> str:
    """``snake_to_camel("a_b_c")`` -> ``aBC``: words after the first get an upper-case
    initial."""
    return _from_parts(_str(s).split("_"), pascal=False)


@builtin()
def snake_to_pascal(thread: Any, s: Any = None) -> str:
    """``snake_to_pascal("test_file")`` -> ``TestFile``."""
    return _from_parts(_str(s).split("_"), pascal=True)


@builtin()
def kebab_to_camel(thread: Any, s: Any = None) -> str:
    """``kebab_to_camel("test-file")`` -> ``testFile``."""
    return _from_parts(_str(s).split("-"), pascal=False)


@builtin()
def kebab_to_pascal(thread: Any, s: Any = None) -> str:
    """``kebab_to_pascal("test-file")`` -> ``TestFile``."""
    return _from_parts(_str(s).split("-"), pascal=True)


@builtin()
def camel_to_snake(thread: Any, s: Any = None) -> str:
    """``camel_to_snake("testFile")`` -> ``test_file``; acronyms stay one word
    (``HTTPServer`` -> ``http_server``); snake input is unchanged."""
    return "_".join(w.lower() for w in camel_words(_str(s)))


@builtin()
def pascal_to_snake(thread: Any, s: Any = None) -> str:
    """``pascal_to_snake("TestFile")`` -> ``test_file`` (same rules as camel_to_snake)."""
    return "_".join(w.lower() for w in camel_words(_str(s)))


@builtin()
def camel_to_kebab(thread: Any, s: Any = None) -> str:
    """``camel_to_kebab("testFile")`` -> ``test-file``."""
    return "-".join(w.lower() for w in camel_words(_str(s)))


@builtin()
def pascal_to_kebab(thread: Any, s: Any = None) -> str:
    """``pascal_to_kebab("TestFile")`` -> ``test-file``."""
    return "-".join(w.lower() for w in camel_words(_str(s)))


@builtin()
def snake_to_kebab(thread: Any, s: Any = None) -> str:
    """``snake_to_kebab("a_b")`` -> ``a-b``."""
    return _str(s).replace("_", "-")


@builtin()
def kebab_to_snake(thread: Any, s: Any = None) -> str:
    """``kebab_to_snake("a-b")`` -> ``a_b``."""
    return _str(s).replace("-", "_")


@builtin()
def uppercase_first(thread: Any, s: Any = None) -> str:
    """``uppercase_first("hello")`` -> ``Hello`` (rest unchanged)."""
    return _cap(_str(s))


@builtin()
def lowercase_first(thread: Any, s: Any = None) -> str:
    """``lowercase_first("Hello")`` -> ``hello`` (rest unchanged)."""
    return _lowfirst(_str(s))


@builtin()
def title_case(thread: Any, s: Any = None) -> str:
    """``title_case("hello world")`` -> ``Hello World``: each whitespace-separated word gets
    an upper-case initial and a lower-case rest; whitespace is kept as is."""
    out = []
    prev_space = True
    for ch in _str(s):
        if ch.isspace():
            out.append(ch)
            prev_space = True
        else:
            out.append(ch.upper() if prev_space else ch.lower())
            prev_space = False
    return "".join(out)


# ------------------------------------------------------------------------ methods (4.5)


@method("string", aliases=("len",))
def string__count(thread: Any, s: str) -> int:
    """``s.count()`` / ``s.len()``: number of code points."""
    return len(s)


@method("string")
def string__empty(thread: Any, s: str) -> bool:
    """``s.empty()``: s is ``""``."""
    return not s


@method("string")
def string__contains(thread: Any, s: str, sub: Any = None) -> bool:
    """``s.contains(sub)``: substring test (``sub`` rendered with display)."""
    return ("" if sub is None else _str(sub)) in s


@method("string")
def string__split(thread: Any, s: str, sep: Any = None) -> list[str]:
    """``s.split(sep?)``: parts around ``sep`` (default ``","``, unlike the builtin)."""
    return split_str(s, "," if sep is None else _str(sep))


@method("string")
def string__trim(thread: Any, s: str) -> str:
    """``s.trim()``: without leading/trailing whitespace."""
    return s.strip()


@method("string")
def string__trim_start(thread: Any, s: str) -> str:
    """``s.trim_start()``: without leading whitespace."""
    return s.lstrip()


@method("string")
def string__trim_end(thread: Any, s: str) -> str:
    """``s.trim_end()``: without trailing whitespace."""
    return s.rstrip()


@method("string")
def string__starts_with(thread: Any, s: str, prefix: Any = None) -> bool:
    """``s.starts_with(p)``."""
    return s.startswith("" if prefix is None else _str(prefix))


@method("string")
def string__ends_with(thread: Any, s: str, suffix: Any = None) -> bool:
    """``s.ends_with(p)``."""
    return s.endswith("" if suffix is None else _str(suffix))


@method("string", aliases=("lower", "to_lower"))
def string__lowercase(thread: Any, s: str) -> str:
    """``s.lowercase()`` / ``lower()`` / ``to_lower()``."""
    return s.lower()


@method("string", aliases=("upper", "to_upper"))
def string__uppercase(thread: Any, s: str) -> str:
    """``s.uppercase()`` / ``upper()`` / ``to_upper()``."""
    return s.upper()


@method("string")
def string__substring(thread: Any, s: str, start: Any = None, end: Any = None) -> str:
    """``s.substring(start, end?)``: code points ``[start, end)`` (an **end index**, unlike
    the builtin), clamped into the string."""
    return char_substring(s, start, end)


@method("string", max_args=2)
def string__replace(thread: Any, s: str, *args: Any) -> str | None:
    """``s.replace(old, new)``: all occurrences replaced (arguments rendered); nil when
    called with fewer than two arguments."""
    if len(args) < 2:
        return None
    return s.replace(_str(args[0]), _str(args[1]))


@method("string")
def string__index_of(thread: Any, s: str, sub: Any = None) -> int:
    """``s.index_of(sub)``: code-point offset of the first occurrence or -1."""
    return s.find("" if sub is None else _str(sub))


@method("string")
def string__last_index_of(thread: Any, s: str, sub: Any = None) -> int:
    """``s.last_index_of(sub)``: code-point offset of the last occurrence or -1."""
    return s.rfind("" if sub is None else _str(sub))


@method("string")
def string__chars(thread: Any, s: str) -> list[str]:
    """``s.chars()``: list of one-code-point strings."""
    return list(s)


@method("string")
def string__lines(thread: Any, s: str) -> list[str]:
    """``s.lines()``: split on ``\\n`` (a trailing ``\\r`` is dropped from each line; a
    final empty line is not produced)."""
    if not s:
        return []
    parts = s.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


@method("string")
def string__char_at(thread: Any, s: str, i: Any = None) -> str | None:
    """``s.char_at(i)``: the code point at ``i`` (default 0), nil when out of range or
    negative."""
    idx = as_int(i, 0) if i is not None else 0
    if idx is None or idx < 0 or idx >= len(s):
        return None
    return s[idx]


@method("string")
def string__repeat(thread: Any, s: str, n: Any = None) -> str:
    """``s.repeat(n)``: ``s`` repeated ``n`` times (default 1; ``n <= 0`` gives ``""``)."""
    count = 1 if n is None else (as_int(n, 0) or 0)
    return repeat_str(s, count, "string.repeat")


@method("string")
def string__reverse(thread: Any, s: str) -> str:
    """``s.reverse()``: code points in reverse order."""
    return s[::-1]


def _pad_width(width: Any, what: str) -> int:
    """The target width of ``pad_left``/``pad_right``; wider than ``MAX_BUILD_SIZE`` is a
    catchable ``E323`` error."""
    w = as_int(width, 0) or 0
    if w > MAX_BUILD_SIZE:
        raise too_large(what, w, "code points")
    return w


def _pad_char(ch: Any) -> str:
    if ch is None:
        return " "
    text = _str(ch)
    return text[0] if text else " "


@method("string")
def string__pad_left(thread: Any, s: str, width: Any = None, ch: Any = None) -> str:
    """``s.pad_left(w, ch?)``: left-padded with the first char of ``ch`` (default space)
    to ``w`` code points."""
    missing = _pad_width(width, "string.pad_left") - len(s)
    return _pad_char(ch) * missing + s if missing > 0 else s


@method("string")
def string__pad_right(thread: Any, s: str, width: Any = None, ch: Any = None) -> str:
    """``s.pad_right(w, ch?)``: right-padded with the first char of ``ch`` (default space)
    to ``w`` code points."""
    missing = _pad_width(width, "string.pad_right") - len(s)
    return s + _pad_char(ch) * missing if missing > 0 else s
