"""A jq-like query language for ``jq(v, expr)`` and ``jq_first(v, expr)`` (spec 4.10).

Supported subset: paths (``.a``, ``.["k"]``, ``.[0]``, ``.[1:3]``, ``.[]``, ``..``, ``?``),
pipes ``|``, comma, parentheses, literals, array ``[...]`` and object ``{k: v}``
construction, ``==`` ``!=`` ``<`` ``<=`` ``>`` ``>=``, ``and`` ``or``, prefix or postfix
``not``, ``//``, ``+ - * / %``, and the functions listed in :data:`_FUNCTIONS` (``length``,
``keys``, ``values`` (the object's values as an array), ``type``, ``map``, ``select``,
``has``, ``sort_by`` ...). A filter produces a stream of outputs; ``jq`` returns them as a
list, ``jq_first`` the first or nil. Errors throw ``jq: <message>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from harnpy.runtime.ops import values_equal
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.jsonlib import dumps, from_json_data, loads, to_json_data
from harnpy.stdlib.registry import builtin

Filter = Callable[[Any], Iterator[Any]]


class JqError(Exception):
    """A jq parse or evaluation error (message without the ``jq:`` prefix)."""


# -------------------------------------------------------------------- lexer

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<op>\.\.|==|!=|<=|>=|//|[.|,()\[\]{}:<>+\-*/%?;$])
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.X,
)


def _tokenize(src: str) -> list[tuple[str, Any]]:
    toks: list[tuple[str, Any]] = []
    pos = 0
    src = src.rstrip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise JqError(f"unexpected character {src[pos:].strip()[:1]!r} in {src!r}")
        pos = m.end()
        kind = m.lastgroup
        val = m.group(kind or "")
        if kind == "num":
            toks.append(("num", float(val) if any(c in val for c in ".eE") else int(val)))
        elif kind == "str":
            toks.append(("str", loads(val)))
        elif kind == "ident":
            toks.append(("ident", val))
        else:
            toks.append(("op", val))
    toks.append(("eof", None))
    return toks


# -------------------------------------------------------------------- helpers


def _type_name(v: Any) -> str:
    t = type(v)
    if v is None:
        return "null"
    if t is bool:
        return "boolean"
    if t is int or t is float:
        return "number"
    if t is str:
        return "string"
    if t is list:
        return "array"
    return "object"


_ORDER = {"null": 0, "boolean": 1, "number": 2, "string": 3, "array": 4, "object": 5}


def _cmp(a: Any, b: Any) -> int:
    """jq's total order: null < false < true < numbers < strings < arrays < objects."""
    ta, tb = _type_name(a), _type_name(b)
    if ta != tb:
        return (_ORDER[ta] > _ORDER[tb]) - (_ORDER[ta] < _ORDER[tb])
    if ta == "array":
        for x, y in zip(a, b):
            c = _cmp(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ta == "object":
        c = _cmp(sorted(a), sorted(b))
        if c:
            return c
        for k in sorted(a):
            c = _cmp(a[k], b[k])
            if c:
                return c
        return 0
    if ta == "null":
        return 0
    return (a > b) - (a < b)


def _truthy(v: Any) -> bool:
    return v is not None and v is not False


def _index(v: Any, key: Any) -> Any:
    if v is None:
        return None
    if type(key) is str:
        if type(v) is dict:
            return v.get(key)
        raise JqError(f'Cannot index {_type_name(v)} with "{key}"')
    if type(key) in (int, float) and type(key) is not bool:
        if type(v) is list:
            i = int(key)
            if -len(v) <= i < len(v):
                return v[i]
            return None
        raise JqError(f"Cannot index {_type_name(v)} with number")
    raise JqError(f"Cannot index {_type_name(v)} with {_type_name(key)}")


def _iterate(v: Any) -> Iterator[Any]:
    if type(v) is list:
        yield from v
    elif type(v) is dict:
        for k in sorted(v):
            yield v[k]
    else:
        raise JqError(f"Cannot iterate over {_type_name(v)}")


def _recurse(v: Any) -> Iterator[Any]:
    yield v
    if type(v) is list:
        for x in v:
            yield from _recurse(x)
    elif type(v) is dict:
        for k in sorted(v):
            yield from _recurse(v[k])


def _arith(op: str, a: Any, b: Any) -> Any:
    ta, tb = _type_name(a), _type_name(b)
    if op == "+":
        if a is None:
            return b
        if b is None:
            return a
        if ta == tb == "number":
            return a + b
        if ta == tb and ta in ("string", "array"):
            return a + b
        if ta == tb == "object":
            return {**a, **b}
    elif op == "-":
        if ta == tb == "number":
            return a - b
        if ta == tb == "array":
            return [x for x in a if not any(values_equal(x, y) for y in b)]
    elif ta == tb == "number":
        if op == "*":
            return a * b
        if b == 0:
            raise JqError(f"{a} and {b} cannot be divided because the divisor is zero")
        if op == "/":
            q = a / b
            return int(q) if type(a) is int and type(b) is int and a % b == 0 else q
        if op == "%":
            return int(a) % int(b)
    elif op == "/" and ta == tb == "string":
        return a.split(b)
    raise JqError(f"{ta} and {tb} cannot be combined with {op}")


def _length(v: Any) -> Any:
    t = type(v)
    if v is None:
        return 0
    if t is str or t is list or t is dict:
        return len(v)
    if t is int or t is float:
        return abs(v)
    raise JqError(f"{_type_name(v)} has no length")


def _keys(v: Any) -> list[Any]:
    if type(v) is dict:
        return sorted(v)
    if type(v) is list:
        return list(range(len(v)))
    raise JqError(f"{_type_name(v)} has no keys")


def _tostring(v: Any) -> str:
    return v if type(v) is str else dumps(v)


def _tonumber(v: Any) -> Any:
    if type(v) in (int, float) and type(v) is not bool:
        return v
    if type(v) is str:
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                pass
    raise JqError(f"Cannot parse {_tostring(v)!r} as a number")


def _add(v: Any) -> Any:
    acc: Any = None
    for x in _iterate(v):
        acc = _arith("+", acc, x)
    return acc


def _flatten(v: Any, depth: float = float("inf")) -> list[Any]:
    out: list[Any] = []
    for x in v:
        if type(x) is list and depth > 0:
            out.extend(_flatten(x, depth - 1))
        else:
            out.append(x)
    return out


def _to_entries(v: Any) -> list[Any]:
    if type(v) is not dict:
        raise JqError(f"{_type_name(v)} has no keys")
    return [{"key": k, "value": v[k]} for k in sorted(v)]


def _from_entries(v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in _iterate(v):
        if type(e) is not dict:
            raise JqError("from_entries expects an array of objects")
        k = next((e[n] for n in ("key", "k", "name", "Name", "Key", "K") if n in e), None)
        val = next((e[n] for n in ("value", "v", "Value", "V") if n in e), None)
        out[k if type(k) is str else _tostring(k)] = val
    return out


def _unique(xs: list[Any]) -> list[Any]:
    import functools

    out: list[Any] = []
    for x in sorted(xs, key=functools.cmp_to_key(_cmp)):
        if not out or _cmp(out[-1], x) != 0:
            out.append(x)
    return out


def _sorted(xs: Any, key: Callable[[Any], Any] | None = None) -> list[Any]:
    import functools

    if type(xs) is not list:
        raise JqError(f"{_type_name(xs)} cannot be sorted, as it is not an array")
    if key is None:
        return sorted(xs, key=functools.cmp_to_key(_cmp))
    keyed: list[tuple[Any, Any]] = [(key(x), x) for x in xs]

    def by_key(p: tuple[Any, Any], q: tuple[Any, Any]) -> int:
        return _cmp(p[0], q[0])

    keyed.sort(key=functools.cmp_to_key(by_key))
    return [x for _, x in keyed]


# Zero-argument functions: name -> fn(input) -> output.
_SIMPLE: dict[str, Callable[[Any], Any]] = {
    "length": _length,
    "utf8bytelength": lambda v: len(v.encode()) if type(v) is str else _length(v),
    "keys": _keys,
    "keys_unsorted": lambda v: list(v) if type(v) is dict else _keys(v),
    "values": lambda v: list(_iterate(v)),
    "type": _type_name,
    "add": _add,
    "first": lambda v: v[0] if type(v) is list and v else None,
    "last": lambda v: v[-1] if type(v) is list and v else None,
    "reverse": lambda v: v[::-1] if type(v) in (list, str) else [],
    "sort": _sorted,
    "unique": lambda v: _unique(list(_iterate(v))),
    "min": lambda v: _sorted(v)[0] if v else None,
    "max": lambda v: _sorted(v)[-1] if v else None,
    "flatten": _flatten,
    "tostring": _tostring,
    "tonumber": _tonumber,
    "tojson": dumps,
    "fromjson": lambda v: loads(v),
    "ascii_downcase": lambda v: v.lower(),
    "ascii_upcase": lambda v: v.upper(),
    "to_entries": _to_entries,
    "from_entries": _from_entries,
    "not": lambda v: not _truthy(v),
    "any": lambda v: any(_truthy(x) for x in _iterate(v)),
    "all": lambda v: all(_truthy(x) for x in _iterate(v)),
    "floor": lambda v: int(v // 1),
    "ceil": lambda v: int(-(-v // 1)),
    "abs": abs,
    "trim": lambda v: v.strip() if type(v) is str else v,
    "ltrim": lambda v: v.lstrip() if type(v) is str else v,
    "rtrim": lambda v: v.rstrip() if type(v) is str else v,
    "null": lambda v: None,
    "true": lambda v: True,
    "false": lambda v: False,
}


# -------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, src: str) -> None:
        self.toks = _tokenize(src)
        self.pos = 0

    def peek(self, value: Any = None) -> bool:
        kind, val = self.toks[self.pos]
        return val == value and kind in ("op", "ident")

    def take(self) -> tuple[str, Any]:
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, value: str) -> None:
        kind, val = self.take()
        if val != value or kind not in ("op", "ident"):
            raise JqError(f"expected {value!r}, got {val!r}")

    def parse(self) -> Filter:
        f = self.pipe()
        if self.toks[self.pos][0] != "eof":
            raise JqError(f"unexpected token {self.toks[self.pos][1]!r}")
        return f

    def pipe(self) -> Filter:
        left = self.comma()
        if self.peek("|"):
            self.take()
            right = self.pipe()
            return lambda v: (y for x in left(v) for y in right(x))
        return left

    def comma(self) -> Filter:
        parts = [self.alt()]
        while self.peek(","):
            self.take()
            parts.append(self.alt())
        if len(parts) == 1:
            return parts[0]
        return lambda v: (y for p in parts for y in p(v))

    def alt(self) -> Filter:
        left = self.or_()
        while self.peek("//"):
            self.take()
            right = self.or_()

            def f(v: Any, left: Filter = left, right: Filter = right) -> Iterator[Any]:
                got = False
                try:
                    for x in left(v):
                        if _truthy(x):
                            got = True
                            yield x
                except JqError:
                    pass
                if not got:
                    yield from right(v)

            left = f
        return left

    def or_(self) -> Filter:
        left = self.and_()
        while self.peek("or"):
            self.take()
            right = self.and_()

            def f(v: Any, left: Filter = left, right: Filter = right) -> Iterator[Any]:
                for a in left(v):
                    if _truthy(a):
                        yield True
                    else:
                        for b in right(v):
                            yield _truthy(b)

            left = f
        return left

    def and_(self) -> Filter:
        left = self.cmp()
        while self.peek("and"):
            self.take()
            right = self.cmp()

            def f(v: Any, left: Filter = left, right: Filter = right) -> Iterator[Any]:
                for a in left(v):
                    if not _truthy(a):
                        yield False
                    else:
                        for b in right(v):
                            yield _truthy(b)

            left = f
        return left

    def cmp(self) -> Filter:
        left = self.additive()
        for op in ("==", "!=", "<=", ">=", "<", ">"):
            if self.peek(op):
                self.take()
                right = self.additive()
                test = _CMP[op]
                return lambda v: (test(a, b) for b in right(v) for a in left(v))
        return left

    def additive(self) -> Filter:
        left = self.multiplicative()
        while self.peek("+") or self.peek("-"):
            op = self.take()[1]
            right = self.multiplicative()
            left = _binary(op, left, right)
        return left

    def multiplicative(self) -> Filter:
        left = self.unary()
        while self.peek("*") or self.peek("/") or self.peek("%"):
            op = self.take()[1]
            right = self.unary()
            left = _binary(op, left, right)
        return left

    def unary(self) -> Filter:
        if self.peek("-"):
            self.take()
            inner = self.unary()
            return lambda v: (_arith("-", 0, x) for x in inner(v))
        if self.peek("not") and not self._at_filter_end(1):
            self.take()
            inner = self.unary()
            return lambda v: (not _truthy(x) for x in inner(v))
        return self.postfix()

    def _at_filter_end(self, offset: int) -> bool:
        kind, val = self.toks[self.pos + offset]
        return kind == "eof" or (kind == "op" and val in ("|", ",", ")", "]", "}", ";"))

    def postfix(self) -> Filter:
        f = self.primary()
        while True:
            if self.peek("?"):
                self.take()
                f = _try(f)
            elif self.peek("[") or (self.peek(".") and self._suffix_after_dot()):
                if self.peek("."):
                    self.take()
                step = self.index_step()
                f = _chain(f, step)
            else:
                return f

    def _suffix_after_dot(self) -> bool:
        kind, val = self.toks[self.pos + 1]
        return kind in ("ident", "str") or (kind == "op" and val == "[")

    def index_step(self) -> Filter:
        """After a ``.``: ``name``, ``"str"``, ``[...]``."""
        kind, val = self.toks[self.pos]
        if kind == "ident" or kind == "str":
            self.take()
            return _field(val)
        self.expect("[")
        if self.peek("]"):
            self.take()
            return _iterate
        lo: Filter | None = None
        if not self.peek(":"):
            lo = self.pipe()
        if self.peek(":"):
            self.take()
            hi = None if self.peek("]") else self.pipe()
            self.expect("]")
            return _slicer(lo, hi)
        self.expect("]")
        assert lo is not None
        key = lo
        return lambda v: (_index(v, k) for k in key(v))

    def primary(self) -> Filter:
        kind, val = self.toks[self.pos]
        if kind == "num" or kind == "str":
            self.take()
            return _const(val)
        if kind == "op" and val == "..":
            self.take()
            return _recurse
        if kind == "op" and val == ".":
            self.take()
            nk, nv = self.toks[self.pos]
            if nk in ("ident", "str") or (nk == "op" and nv == "["):
                return self.index_step()
            return lambda v: iter((v,))
        if kind == "op" and val == "(":
            self.take()
            f = self.pipe()
            self.expect(")")
            return f
        if kind == "op" and val == "[":
            self.take()
            if self.peek("]"):
                self.take()
                return lambda v: iter(([],))
            inner = self.pipe()
            self.expect("]")
            return lambda v: iter((list(inner(v)),))
        if kind == "op" and val == "{":
            self.take()
            return self.object()
        if kind == "ident":
            self.take()
            return self.function(val)
        raise JqError(f"unexpected token {val!r}")

    def object(self) -> Filter:
        entries: list[tuple[Filter, Filter]] = []
        while not self.peek("}"):
            kind, val = self.take()
            if kind in ("ident", "str"):
                key: Filter = _const(val)
                shorthand: Filter = _field(val)
            elif kind == "op" and val == "(":
                key = self.pipe()
                self.expect(")")
                shorthand = key
            else:
                raise JqError(f"unexpected token {val!r} in object")
            if self.peek(":"):
                self.take()
                value = self.alt_no_comma()
            else:
                value = shorthand
            entries.append((key, value))
            if self.peek(","):
                self.take()
            elif not self.peek("}"):
                raise JqError("expected ',' or '}' in object")
        self.take()

        def build(v: Any) -> Iterator[Any]:
            results: list[dict[str, Any]] = [{}]
            for key, value in entries:
                nxt = []
                for partial in results:
                    for k in key(v):
                        if type(k) is not str:
                            raise JqError(f"Object keys must be strings, got {_type_name(k)}")
                        for x in value(v):
                            d = dict(partial)
                            d[k] = x
                            nxt.append(d)
                results = nxt
            yield from results

        return build

    def alt_no_comma(self) -> Filter:
        left = self.alt()
        if self.peek("|"):
            self.take()
            right = self.alt_no_comma()
            return lambda v: (y for x in left(v) for y in right(x))
        return left

    def args(self) -> list[Filter]:
        out: list[Filter] = []
        if not self.peek("("):
            return out
        self.take()
        out.append(self.pipe())
        while self.peek(";"):
            self.take()
            out.append(self.pipe())
        self.expect(")")
        return out

    def function(self, name: str) -> Filter:
        args = self.args()
        n = len(args)
        if n == 0 and name in _SIMPLE:
            fn = _SIMPLE[name]
            return lambda v: iter((fn(v),))
        if n == 0 and name == "empty":
            return lambda v: iter(())
        if n == 0 and name == "recurse":
            return _recurse
        if n == 0 and name in ("error",):
            return lambda v: _raise(v)
        if n == 1:
            (a,) = args
            factory = _ONE_ARG.get(name)
            if factory is not None:
                return factory(a)
        raise JqError(f"{name}/{n} is not defined")


def _const(c: Any) -> Filter:
    return lambda v: iter((c,))


def _field(k: Any) -> Filter:
    return lambda v: iter((_index(v, k),))


def _raise(v: Any) -> Iterator[Any]:
    raise JqError(v if type(v) is str else dumps(v))


def _chain(f: Filter, g: Filter) -> Filter:
    return lambda v: (y for x in f(v) for y in g(x))


def _try(f: Filter) -> Filter:
    def g(v: Any) -> Iterator[Any]:
        try:
            yield from list(f(v))
        except JqError:
            return

    return g


def _binary(op: str, left: Filter, right: Filter) -> Filter:
    return lambda v: (_arith(op, a, b) for b in right(v) for a in left(v))


def _slicer(lo: Filter | None, hi: Filter | None) -> Filter:
    def f(v: Any) -> Iterator[Any]:
        los = list(lo(v)) if lo else [None]
        his = list(hi(v)) if hi else [None]
        for a in los:
            for b in his:
                if v is None:
                    yield None
                elif type(v) in (list, str):
                    yield v[_int_or_none(a) : _int_or_none(b)]
                else:
                    raise JqError(f"Cannot index {_type_name(v)} with object")

    return f


def _int_or_none(x: Any) -> int | None:
    return None if x is None else int(x)


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: values_equal(a, b),
    "!=": lambda a, b: not values_equal(a, b),
    "<": lambda a, b: _cmp(a, b) < 0,
    "<=": lambda a, b: _cmp(a, b) <= 0,
    ">": lambda a, b: _cmp(a, b) > 0,
    ">=": lambda a, b: _cmp(a, b) >= 0,
}


def _first_of(f: Filter, v: Any) -> Any:
    for x in f(v):
        return x
    return None


def _map(f: Filter) -> Filter:
    return lambda v: iter(([y for x in _iterate(v) for y in f(x)],))


def _select(f: Filter) -> Filter:
    return lambda v: (v for c in f(v) if _truthy(c))


def _map_values(f: Filter) -> Filter:
    def g(v: Any) -> Iterator[Any]:
        if type(v) is dict:
            out = {}
            for k in v:
                for y in f(v[k]):
                    out[k] = y
                    break
            yield out
        else:
            yield [y for x in _iterate(v) for y in list(f(x))[:1]]

    return g


def _with_entries(f: Filter) -> Filter:
    return lambda v: iter((_from_entries([y for e in _to_entries(v) for y in f(e)]),))


def _group_by(f: Filter) -> Filter:
    def g(v: Any) -> Iterator[Any]:
        groups: list[list[Any]] = []
        keys: list[Any] = []
        for x in _sorted(v, lambda x: list(f(x))):
            k = list(f(x))
            if keys and _cmp(keys[-1], k) == 0:
                groups[-1].append(x)
            else:
                keys.append(k)
                groups.append([x])
        yield groups

    return g


def _by(pick: Callable[[list[Any]], Any]) -> Callable[[Filter], Filter]:
    def factory(f: Filter) -> Filter:
        return lambda v: iter((pick(_sorted(v, lambda x: list(f(x)))) if v else None,))

    return factory


def _on_value(fn: Callable[[Any, Any], Any]) -> Callable[[Filter], Filter]:
    def factory(f: Filter) -> Filter:
        return lambda v: (fn(v, a) for a in f(v))

    return factory


def _has(v: Any, k: Any) -> bool:
    if type(v) is dict:
        return k in v
    if type(v) is list and type(k) is int:
        return 0 <= k < len(v)
    raise JqError(f"Cannot check whether {_type_name(v)} has a key")


def _contains(a: Any, b: Any) -> bool:
    if type(a) is dict and type(b) is dict:
        return all(k in a and _contains(a[k], bv) for k, bv in b.items())
    if type(a) is list and type(b) is list:
        return all(any(_contains(x, y) for x in a) for y in b)
    if type(a) is str and type(b) is str:
        return b in a
    return values_equal(a, b)


def _join(v: Any, sep: Any) -> str:
    return text(sep).join("" if x is None else _tostring(x) for x in _iterate(v))


def _test(v: Any, pat: Any) -> bool:
    from harnpy.stdlib.regexlib import compile_pattern

    return compile_pattern(text(pat)).search(text(v)) is not None


_ONE_ARG: dict[str, Callable[[Filter], Filter]] = {
    "map": _map,
    "select": _select,
    "map_values": _map_values,
    "with_entries": _with_entries,
    "group_by": _group_by,
    "sort_by": lambda f: lambda v: iter((_sorted(v, lambda x: list(f(x))),)),
    "unique_by": lambda f: (
        lambda v: iter(
            ([g[0] for g in next(_group_by(f)(v))],)  # first of each group
        )
    ),
    "min_by": _by(lambda xs: xs[0]),
    "max_by": _by(lambda xs: xs[-1]),
    "any": lambda f: lambda v: iter((any(_truthy(y) for x in _iterate(v) for y in f(x)),)),
    "all": lambda f: lambda v: iter((all(_truthy(y) for x in _iterate(v) for y in f(x)),)),
    "recurse": lambda f: lambda v: _recurse_with(f, v),
    "has": _on_value(_has),
    "contains": _on_value(_contains),
    "inside": _on_value(lambda v, a: _contains(a, v)),
    "startswith": _on_value(lambda v, a: text(v).startswith(text(a))),
    "endswith": _on_value(lambda v, a: text(v).endswith(text(a))),
    "ltrimstr": _on_value(lambda v, a: v[len(a) :] if type(v) is str and v.startswith(a) else v),
    "rtrimstr": _on_value(
        lambda v, a: v[: len(v) - len(a)] if type(v) is str and a and v.endswith(a) else v
    ),
    "split": _on_value(lambda v, a: text(v).split(text(a))),
    "join": _on_value(_join),
    "test": _on_value(_test),
    "flatten": _on_value(lambda v, a: _flatten(v, a)),
    "index": _on_value(lambda v, a: v.find(a) if v.find(a) >= 0 else None),
    "first": lambda f: lambda v: iter(list(f(v))[:1]),
    "last": lambda f: lambda v: iter(list(f(v))[-1:]),
    "limit": lambda f: f,
    "error": lambda f: lambda v: _raise(_first_of(f, v)),
    "path": lambda f: f,
}


def _recurse_with(f: Filter, v: Any) -> Iterator[Any]:
    yield v
    for x in f(v):
        if x is not None:
            yield from _recurse_with(f, x)


# -------------------------------------------------------------------- API


def compile_jq(expr: str) -> Filter:
    """Compile a jq expression to a filter (input -> iterator of outputs). Raises JqError."""
    return _Parser(expr).parse()


def run_jq(value: Any, expr: str) -> list[Any]:
    """All outputs of ``expr`` applied to the Harn value ``value``, as Harn values."""
    f = compile_jq(expr)
    return [from_json_data(x) for x in f(to_json_data(value))]


@builtin()
def jq(thread: Any, value: Any = None, expr: Any = None) -> list[Any]:
    """``jq(v, expr)``: list of every output of the jq-like query ``expr`` on ``v``."""
    try:
        return run_jq(value, text(expr))
    except JqError as e:
        raise fail(f"jq: {e}") from None
    except RecursionError:
        raise fail("jq: expression too deeply nested") from None


@builtin()
def jq_first(thread: Any, value: Any = None, expr: Any = None) -> Any:
    """``jq_first(v, expr)``: first output of the query, or nil when it yields nothing."""
    try:
        for x in compile_jq(text(expr))(to_json_data(value)):
            return from_json_data(x)
        return None
    except JqError as e:
        raise fail(f"jq: {e}") from None
