"""JSON builtins: parse, stringify, extraction from prose and RFC 6901 pointers.

Implements spec language.md 4.10 (``json_parse``, ``json_stringify``, ``json_extract``,
``json_pointer``, ``json_pointer_set``, ``json_pointer_delete``). The conversion helpers
:func:`to_json_data`, :func:`from_json_data` and :func:`dumps` are shared with the schema,
jq and template modules.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.values import (
    I64_MAX,
    I64_MIN,
    BoundMethod,
    Builtin,
    Closure,
    EnumNamespace,
    EnumValue,
    HSet,
    RangeValue,
    StructType,
    StructValue,
)
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin

# ------------------------------------------------------------------ conversion


def to_json_data(v: Any) -> Any:
    """Harn value -> plain Python JSON data (dict/list/str/int/float/bool/None).

    Structs become objects of their fields, sets arrays, ranges their display string,
    closures, builtins and enum values ``None``; other values (durations, bytes, pairs...)
    their display string. Spec 4.10.
    """
    t = type(v)
    if v is None or t is bool or t is int or t is str or t is float:
        return v
    if t is list:
        return [to_json_data(x) for x in v]
    if t is dict:
        return {k: to_json_data(x) for k, x in v.items()}
    if t is StructValue:
        return {k: to_json_data(x) for k, x in v.fields.items()}
    if t is HSet:
        return [to_json_data(x) for x in v.items]
    if t is Closure or t is Builtin or t is BoundMethod or t is EnumValue:
        return None
    if t is StructType or t is EnumNamespace:  # a constructor (closure) / an enum name
        return None
    if t is RangeValue:
        return display(v)
    return display(v)


def from_json_data(obj: Any) -> Any:
    """Plain Python JSON data -> Harn value. Integers outside the i64 range become floats."""
    t = type(obj)
    if t is int:
        return obj if I64_MIN <= obj <= I64_MAX else float(obj)
    if t is list:
        return [from_json_data(x) for x in obj]
    if t is dict:
        return {str(k): from_json_data(x) for k, x in obj.items()}
    return obj


def format_json_float(x: float) -> str:
    """JSON rendering of a float: integral values without ``.0`` (``1.0`` -> ``1``),
    non-finite values as ``null``, exponents in serde style (``1e-7``)."""
    if not math.isfinite(x):
        return "null"
    if x == int(x) and abs(x) < 2**63:
        return str(int(x))
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        sign = "-" if exp.startswith("-") else ""
        r = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
    return r


def _encode(v: Any, out: list[str], indent: int | None, level: int) -> None:
    t = type(v)
    if v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(str(v))
    elif t is float:
        out.append(format_json_float(v))
    elif t is str:
        out.append(json.dumps(v, ensure_ascii=False))
    elif t is list:
        if not v:
            out.append("[]")
            return
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            if indent is not None:
                out.append("\n" + " " * (indent * (level + 1)))
            _encode(x, out, indent, level + 1)
        if indent is not None:
            out.append("\n" + " " * (indent * level))
        out.append("]")
    elif t is dict:
        if not v:
            out.append("{}")
            return
        out.append("{")
        for i, k in enumerate(sorted(v)):
            if i:
                out.append(",")
            if indent is not None:
                out.append("\n" + " " * (indent * (level + 1)))
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(": " if indent is not None else ":")
            _encode(v[k], out, indent, level + 1)
        if indent is not None:
            out.append("\n" + " " * (indent * level))
        out.append("}")
    else:
        _encode(to_json_data(v), out, indent, level)


def dumps(v: Any, indent: int | None = None) -> str:
    """Serialize a Harn value as JSON: compact (or indented by ``indent`` spaces), keys
    sorted by code point, non-ASCII characters kept raw."""
    out: list[str] = []
    _encode(v, out, indent, 0)
    return "".join(out)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def loads(s: str) -> Any:
    """Parse JSON text into Harn values; raises ``ValueError`` on malformed input."""
    return from_json_data(json.loads(s, parse_constant=_reject_constant, parse_int=_json_int))


def _json_int(text: str) -> int | float:
    """JSON integers: i64 when they fit, else the nearest float (inf beyond its range)."""
    if len(text) <= 19:
        n = int(text)
        if -(2**63) <= n < 2**63:
            return n
    return float(text)


# ------------------------------------------------------------------ builtins


@builtin()
def json_parse(thread: Any, s: Any = None) -> Any:
    """``json_parse(s)``: JSON text -> value (ints stay ints, null -> nil).

    Throws ``JSON parse error: <detail>`` on malformed input (spec 4.10).
    """
    try:
        return loads(text(s))
    except (ValueError, RecursionError) as e:
        raise fail(f"JSON parse error: {e}") from None


@builtin()
def json_stringify(thread: Any, v: Any = None, pretty: Any = None) -> str:
    """``json_stringify(v, pretty?)``: compact JSON with sorted keys (spec 4.10); a truthy
    second argument indents by two spaces."""
    return dumps(v, 2 if pretty is True or (type(pretty) is int and pretty > 0) else None)


@builtin()
def json_stringify_pretty(thread: Any, v: Any = None) -> str:
    """``json_stringify_pretty(v)``: JSON indented by two spaces, keys sorted."""
    return dumps(v, 2)


_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)(?:\r?\n)?[ \t]*```", re.S)


def _balanced_candidates(s: str) -> list[str]:
    """Substrings starting at each ``{``/``[`` and ending at its balanced closer
    (quote-aware), in order of appearance."""
    found: list[str] = []
    for start, ch in enumerate(s):
        if ch not in "{[":
            continue
        depth = 0
        in_str = False
        esc = False
        for i in range(start, len(s)):
            c = s[i]
            if in_str:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
                continue
            if c == '"':
                in_str = True
            elif c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    found.append(s[start : i + 1])
                    break
        if len(found) >= 16:
            break
    return found


def extract_json(s: str) -> Any:
    """Find and parse JSON inside free text: a fenced code block first, then the whole text,
    then the first balanced ``{...}``/``[...]`` that parses. Raises ``ValueError``."""
    candidates: list[str] = []
    m = _FENCE.search(s)
    if m:
        candidates.append(m.group(1).strip())
    candidates.append(s.strip())
    candidates.extend(_balanced_candidates(s))
    last: Exception | None = None
    for c in candidates:
        if not c:
            continue
        try:
            return loads(c)
        except (ValueError, RecursionError) as e:
            last = e
    raise ValueError(str(last) if last else "no JSON found")


@builtin()
def json_extract(thread: Any, s: Any = None, key: Any = None) -> Any:
    """``json_extract(text, key?)``: parse the JSON embedded in ``text`` (code fence, whole
    text, or first balanced object/array); with ``key``, return that field of the result.

    Throws ``json_extract: failed to parse JSON: <detail>`` when nothing parses.
    """
    try:
        value = extract_json(text(s))
    except ValueError as e:
        raise fail(f"json_extract: failed to parse JSON: {e}") from None
    if key is None:
        return value
    if type(value) is dict:
        return value.get(text(key))
    return None


# ------------------------------------------------------------------ pointers


def _pointer_tokens(ptr: str) -> list[str]:
    if ptr == "":
        return []
    if ptr.startswith("#"):
        ptr = ptr[1:]
        if ptr == "":
            return []
    if not ptr.startswith("/"):
        raise fail(f"invalid JSON pointer '{ptr}': must be empty or start with '/'")
    return [tok.replace("~1", "/").replace("~0", "~") for tok in ptr[1:].split("/")]


def _list_index(tok: str, n: int) -> int | None:
    if not tok.isdigit() or (len(tok) > 1 and tok[0] == "0"):
        return None
    i = int(tok)
    return i if i < n else None


def pointer_get(doc: Any, ptr: str) -> Any:
    """Value at RFC 6901 pointer ``ptr`` in ``doc``, or None when any step is missing."""
    cur = doc
    for tok in _pointer_tokens(ptr):
        t = type(cur)
        if t is dict:
            if tok not in cur:
                return None
            cur = cur[tok]
        elif t is StructValue:
            cur = cur.fields.get(tok)
        elif t is list:
            i = _list_index(tok, len(cur))
            if i is None:
                return None
            cur = cur[i]
        else:
            return None
    return cur


def _set_in(cur: Any, toks: list[str], value: Any, ptr: str) -> Any:
    if not toks:
        return value
    tok, rest = toks[0], toks[1:]
    t = type(cur)
    if t is dict or cur is None:
        d = dict(cur) if t is dict else {}
        d[tok] = _set_in(d.get(tok), rest, value, ptr)
        return d
    if t is StructValue:
        fields = dict(cur.fields)
        fields[tok] = _set_in(fields.get(tok), rest, value, ptr)
        return StructValue(cur.name, fields)
    if t is list:
        items = list(cur)
        if tok == "-":
            items.append(_set_in(None, rest, value, ptr))
            return items
        i = _list_index(tok, len(items) + 1)
        if i is None:
            raise fail(f"json_pointer_set: index '{tok}' out of range in '{ptr}'")
        if i == len(items):
            items.append(_set_in(None, rest, value, ptr))
        else:
            items[i] = _set_in(items[i], rest, value, ptr)
        return items
    raise fail(f"json_pointer_set: cannot descend into {display(cur)} at '{tok}' in '{ptr}'")


def pointer_set(doc: Any, ptr: str, value: Any) -> Any:
    """A copy of ``doc`` with ``value`` stored at ``ptr`` (``-`` appends to a list; missing
    object members along the way are created). The input is never mutated."""
    return _set_in(doc, _pointer_tokens(ptr), value, ptr)


def _delete_in(cur: Any, toks: list[str]) -> Any:
    tok, rest = toks[0], toks[1:]
    t = type(cur)
    if t is dict:
        if tok not in cur:
            return cur
        d = dict(cur)
        if rest:
            d[tok] = _delete_in(d[tok], rest)
        else:
            del d[tok]
        return d
    if t is StructValue:
        if tok not in cur.fields:
            return cur
        fields = dict(cur.fields)
        if rest:
            fields[tok] = _delete_in(fields[tok], rest)
        else:
            del fields[tok]
        return StructValue(cur.name, fields)
    if t is list:
        i = _list_index(tok, len(cur))
        if i is None:
            return cur
        items = list(cur)
        if rest:
            items[i] = _delete_in(items[i], rest)
        else:
            del items[i]
        return items
    return cur


def pointer_delete(doc: Any, ptr: str) -> Any:
    """A copy of ``doc`` without the member/element at ``ptr`` (unchanged if absent; the
    empty pointer yields nil)."""
    toks = _pointer_tokens(ptr)
    if not toks:
        return None
    return _delete_in(doc, toks)


@builtin()
def json_pointer(thread: Any, doc: Any = None, ptr: Any = None) -> Any:
    """``json_pointer(v, "/a/0")``: RFC 6901 lookup; nil when the path does not exist."""
    return pointer_get(doc, text(ptr))


@builtin()
def json_pointer_set(thread: Any, doc: Any = None, ptr: Any = None, value: Any = None) -> Any:
    """``json_pointer_set(v, ptr, x)``: new value with ``x`` at ``ptr`` (``/-`` appends)."""
    return pointer_set(doc, text(ptr), value)


@builtin()
def json_pointer_delete(thread: Any, doc: Any = None, ptr: Any = None) -> Any:
    """``json_pointer_delete(v, ptr)``: new value with the member at ``ptr`` removed."""
    return pointer_delete(doc, text(ptr))
