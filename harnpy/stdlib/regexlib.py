"""Regex builtins over patterns in the Rust ``regex`` dialect (spec language.md 4.11).

Patterns are translated to Python :mod:`re` syntax by :func:`translate`: ``(?<name>...)``
becomes ``(?P<name>...)``, ``\\z`` becomes ``\\Z``, POSIX classes (``[[:alpha:]]``) are
expanded, and outside multi-line mode ``$`` only matches at the very end of the text (as in
Rust, unlike Python where it also matches before a final newline). Replacement strings use
Rust syntax (``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``) and are expanded by
:func:`expand_replacement`; unknown groups expand to the empty string.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Any

from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin

_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}

_FLAG_BITS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def translate(pattern: str, multiline: bool = False) -> str:
    """Rewrite a Rust-regex pattern into equivalent Python ``re`` syntax."""
    if re.match(r"\(\?[a-zA-Z]*m[a-zA-Z]*\)", pattern):
        multiline = True
    out: list[str] = []
    i = 0
    n = len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append("\\Z" if nxt == "z" and not in_class else c + nxt)
            i += 2
            continue
        if in_class:
            if c == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2 : end] if end > 0 else ""
                if name in _POSIX:
                    out.append(_POSIX[name])
                    i = end + 2
                    continue
            if c == "[":
                out.append("\\[")
                i += 1
                continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # A leading ']' (or '^]') is literal inside a class.
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if (
            c == "("
            and pattern.startswith("(?<", i)
            and not pattern.startswith(("(?<=", "(?<!"), i)
        ):
            out.append("(?P<")
            i += 3
            continue
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _compile(pattern: str, flags: str) -> Any:
    """RE2 first: the same dialect family as Rust's ``regex`` (``\\p{L}``, POSIX classes,
    ``\\z``, ``$`` only at the end) and, like it, linear time with no catastrophic
    backtracking. Patterns RE2 rejects (verbose mode, set operations in classes) go
    through the Python ``re`` translation."""
    re2_pat = _compile_re2(pattern, flags)
    if re2_pat is not None:
        return re2_pat
    bits = 0
    for ch in flags:
        bits |= _FLAG_BITS.get(ch, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. FutureWarning for "[\\w--\\d]"
        return re.compile(translate(pattern, multiline=bool(bits & re.MULTILINE)), bits)


def _compile_re2(pattern: str, flags: str) -> Any:
    if "x" in flags:
        return None
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a declared dependency
        return None
    inline = "".join(ch for ch in "ims" if ch in flags)
    opts = re2.Options()
    opts.log_errors = False
    try:
        return re2.compile(f"(?{inline}){pattern}" if inline else pattern, opts)
    except Exception:  # noqa: BLE001 - re2.error: fall back to the translator
        return None


def compile_pattern(pattern: str, flags: str = "") -> re.Pattern[str]:
    """Compile a Rust-dialect pattern with flag letters ``i m s x`` (``U`` is accepted and
    ignored). Throws ``invalid regex '<pattern>': <reason>`` on a bad pattern."""
    try:
        return _compile(pattern, flags)
    except re.error as e:
        raise fail(f"invalid regex '{pattern}': {e}") from None


_REPL_TOKEN = re.compile(r"\$(?:\$|\{([^}]*)\}|([_0-9A-Za-z]+))")


def expand_replacement(repl: str, m: re.Match[str]) -> str:
    """Expand Rust replacement syntax against match ``m`` (``$1``, ``${name}``, ``$$``)."""

    def group(name: str) -> str:
        try:
            g = m.group(int(name)) if name.isdigit() else m.group(name)
        except IndexError:
            return ""
        return g or ""

    def sub(t: re.Match[str]) -> str:
        if t.group(0) == "$$":
            return "$"
        return group(t.group(1) if t.group(1) is not None else t.group(2))

    return _REPL_TOKEN.sub(sub, repl)


@builtin()
def regex_match(thread: Any, pattern: Any = None, s: Any = None, flags: Any = None) -> Any:
    """``regex_match(pat, text, flags?)``: list of every matched substring, nil if none."""
    rx = compile_pattern(text(pattern), text(flags))
    found = [m.group(0) for m in rx.finditer(text(s))]
    return found or None


def _replace(pattern: Any, repl: Any, s: Any) -> str:
    rx = compile_pattern(text(pattern))
    template = text(repl)
    if "$" not in template:
        return rx.sub(lambda m: template, text(s))
    return rx.sub(lambda m: expand_replacement(template, m), text(s))


@builtin()
def regex_replace(thread: Any, pattern: Any = None, repl: Any = None, s: Any = None) -> str:
    """``regex_replace(pat, repl, text)``: replace every match; ``repl`` may use ``$1``,
    ``${1}``, ``$name``, ``${name}`` and ``$$``."""
    return _replace(pattern, repl, s)


@builtin()
def regex_replace_all(thread: Any, pattern: Any = None, repl: Any = None, s: Any = None) -> str:
    """``regex_replace_all(pat, repl, text)``: alias of ``regex_replace``."""
    return _replace(pattern, repl, s)


@builtin()
def regex_captures(thread: Any, pattern: Any = None, s: Any = None, flags: Any = None) -> Any:
    """``regex_captures(pat, text)``: one dict per match with ``match`` (whole match),
    ``groups`` (every capture group in order, nil when it did not take part) and one key
    per named group."""
    rx = compile_pattern(text(pattern), text(flags))
    out: list[Any] = []
    for m in rx.finditer(text(s)):
        d: dict[str, Any] = {"match": m.group(0), "groups": list(m.groups())}
        for name, value in m.groupdict().items():
            d[name] = value
        out.append(d)
    return out


@builtin()
def regex_split(thread: Any, s: Any = None, pattern: Any = None, flags: Any = None) -> list[str]:
    """``regex_split(text, pat, flags?)``: the pieces of ``text`` between matches (capture
    groups are not included, unlike Python's ``re.split``)."""
    rx = compile_pattern(text(pattern), text(flags))
    src = text(s)
    parts: list[str] = []
    last = 0
    for m in rx.finditer(src):
        if m.end() == m.start() == 0 or (m.start() == m.end() == len(src)):
            continue
        parts.append(src[last : m.start()])
        last = m.end()
    parts.append(src[last:])
    return parts


@builtin()
def regex_test(thread: Any, pattern: Any = None, s: Any = None, flags: Any = None) -> bool:
    """``regex_test(pat, text, flags?)``: true when the pattern matches anywhere."""
    return compile_pattern(text(pattern), text(flags)).search(text(s)) is not None
