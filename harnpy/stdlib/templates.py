"""The template mini-language behind ``render(path, bindings?)`` and
``render_string(text, bindings?)`` (spec language.md 4.16).

Syntax::

    {{ path }}                     interpolation (a.b, a[0], a["k"], a[-1]); nil renders ""
    {{ name }}                     a bare name that is not bound stays as written
    {{ v | upper | default: "x" }} filters (see _FILTERS), arguments after ':'
    {{ if e }}..{{ elif e }}..{{ else }}..{{ end }}
    {{ for x in xs }}..{{ else }}(empty)..{{ end }}   loop.index/index0/first/last/length
    {{ for k, v in dict }}..{{ end }}                 keys in sorted order
    {{ include "file" }}  {{ include "file" with { k: v } }}
    {{# comment #}}  {{ raw }}..{{ endraw }}  {{- trim -}}

Expressions: literals (``"x"``, ``'x'``, numbers, ``true``, ``false``, ``nil``), paths,
``not``/``!``, ``== != < <= > >=``, ``and``/``&&``, ``or``/``||``, parentheses and filters.
Falsy: nil, false, 0, whitespace-only strings, empty collections. ``and``/``or`` return
an operand, like the reference. A trim marker strips the spaces/tabs and at most one
newline on that side of the directive.

``render`` resolves its path against the calling file's directory; includes resolve
against the including template's directory (``render_string`` uses the calling file's
directory). Errors throw ``<template> at L:C: <message>``; an include cycle throws
``... circular include detected: a → b → a``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.ops import values_equal
from harnpy.runtime.values import HSet, RangeValue, StructValue
from harnpy.stdlib._util import fail, text
from harnpy.stdlib.registry import builtin

MAX_INCLUDE_DEPTH = 32


class TemplateError(Exception):
    """A template syntax or evaluation error at 1-based ``line``/``col``."""

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.col = col
        self.message = message


# ------------------------------------------------------------------ lexer


@dataclass
class _Text:
    content: str
    trim_left: bool = False
    trim_right: bool = False


@dataclass
class _Directive:
    body: str
    raw: str
    line: int
    col: int


@dataclass
class _Raw:
    content: str


def _line_col(src: str, offset: int) -> tuple[int, int]:
    line = src.count("\n", 0, offset) + 1
    return line, offset - (src.rfind("\n", 0, offset) + 1) + 1


def _find_close(src: str, start: int) -> tuple[int, bool] | None:
    """Offset of the ``}}`` closing a directive body starting at ``start`` (quotes are
    skipped) and whether a ``-`` trim marker precedes it."""
    i = start
    quote = ""
    n = len(src)
    while i + 1 < n:
        c = src[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "}" and src[i + 1] == "}":
            return i, i > start and src[i - 1] == "-"
        i += 1
    return None


_RAW_OPEN = re.compile(r"[ \t]*raw(?=[ \t\r\n]|-?}})")


def _find_endraw(src: str, start: int) -> tuple[int, int] | None:
    pos = start
    while True:
        open_ = src.find("{{", pos)
        if open_ < 0:
            return None
        body_start = open_ + 2 + (src.startswith("-", open_ + 2))
        close = _find_close(src, body_start)
        if close is None:
            return None
        end = close[0] - (1 if close[1] else 0)
        if src[body_start:end].strip() == "endraw":
            return open_, close[0] + 2
        pos = close[0] + 2


def tokenize(src: str) -> list[Any]:
    """Split template source into text, directive and raw tokens (comments dropped)."""
    tokens: list[Any] = []
    pos = 0
    pending_trim_left = False
    n = len(src)
    while pos < n:
        open_ = src.find("{{", pos)
        end_text = n if open_ < 0 else open_
        trim_right = open_ >= 0 and src.startswith("-", open_ + 2)
        if end_text > pos or pending_trim_left or trim_right:
            tokens.append(_Text(src[pos:end_text], pending_trim_left, trim_right))
        pending_trim_left = False
        if open_ < 0:
            break
        body_start = open_ + 2 + (1 if trim_right else 0)
        line, col = _line_col(src, open_)
        if src.startswith("#", body_start):
            close_hash = src.find("#}}", body_start + 1)
            if close_hash < 0:
                raise TemplateError(line, col, "unterminated comment")
            pos = close_hash + 3
            continue
        if _RAW_OPEN.match(src, body_start):
            close = _find_close(src, body_start)
            if close is None:
                raise TemplateError(line, col, "unterminated directive")
            found = _find_endraw(src, close[0] + 2)
            if found is None:
                raise TemplateError(line, col, "unterminated `{{ raw }}` block")
            tokens.append(_Raw(src[close[0] + 2 : found[0]]))
            pos = found[1]
            continue
        close = _find_close(src, body_start)
        if close is None:
            raise TemplateError(line, col, "unterminated directive")
        close_at, trim_after = close
        body_end = close_at - 1 if trim_after else close_at
        tokens.append(
            _Directive(src[body_start:body_end].strip(), src[open_ : close_at + 2], line, col)
        )
        pos = close_at + 2
        pending_trim_left = trim_after
    return tokens


def _trim_leading_line(s: str) -> str:
    i = 0
    while i < len(s) and s[i] in " \t":
        i += 1
    if s.startswith("\r\n", i):
        return s[i + 2 :]
    if s.startswith("\n", i) or s.startswith("\r", i):
        return s[i + 1 :]
    return s[i:]


def _trim_trailing_line(s: str) -> str:
    i = len(s)
    while i > 0 and s[i - 1] in " \t":
        i -= 1
    if i > 0 and s[i - 1] == "\n":
        i -= 1
        if i > 0 and s[i - 1] == "\r":
            i -= 1
    return s[:i]


# ------------------------------------------------------------------ expressions

_EXPR_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>\d+\.\d+|\d+)
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>==|!=|<=|>=|&&|\|\||[<>!|.,:()\[\]{}-])
    | (?P<ident>[^\W\d]\w*)
    )""",
    re.X,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


def _unquote(s: str) -> str:
    body = s[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


@dataclass
class _Expr:
    """An expression node: ``kind`` in lit/path/not/and/or/cmp/filter."""

    kind: str
    value: Any = None
    args: list[Any] = field(default_factory=list)


class _ExprParser:
    def __init__(self, src: str, line: int, col: int) -> None:
        self.src = src
        self.line = line
        self.col = col
        self.toks: list[tuple[str, Any]] = []
        pos = 0
        src = src.rstrip()
        while pos < len(src):
            m = _EXPR_TOKEN.match(src, pos)
            if not m or m.end() == pos:
                self.error(f"unexpected character {src[pos:].lstrip()[:1]!r}")
            assert m is not None
            pos = m.end()
            kind = m.lastgroup or ""
            val = m.group(kind)
            if kind == "num":
                self.toks.append(("lit", float(val) if "." in val else int(val)))
            elif kind == "str":
                self.toks.append(("lit", _unquote(val)))
            elif kind == "ident" and val in ("true", "false", "nil", "null"):
                self.toks.append(("lit", {"true": True, "false": False}.get(val)))
            elif kind == "ident" and val in ("and", "or", "not"):
                self.toks.append(("op", val))
            else:
                self.toks.append((kind, val))
        self.toks.append(("eof", None))
        self.pos = 0

    def error(self, msg: str) -> None:
        raise TemplateError(self.line, self.col, f"{msg} in `{self.src}`")

    def peek(self, *ops: str) -> bool:
        kind, val = self.toks[self.pos]
        return kind == "op" and val in ops

    def take(self) -> tuple[str, Any]:
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, op: str) -> None:
        if not self.peek(op):
            self.error(f"expected `{op}`")
        self.pos += 1

    def parse(self) -> _Expr:
        e = self.or_()
        if self.toks[self.pos][0] != "eof":
            self.error(f"unexpected `{self.toks[self.pos][1]}`")
        return e

    def or_(self) -> _Expr:
        e = self.and_()
        while self.peek("or", "||"):
            self.take()
            e = _Expr("or", args=[e, self.and_()])
        return e

    def and_(self) -> _Expr:
        e = self.not_()
        while self.peek("and", "&&"):
            self.take()
            e = _Expr("and", args=[e, self.not_()])
        return e

    def not_(self) -> _Expr:
        if self.peek("not", "!"):
            self.take()
            return _Expr("not", args=[self.not_()])
        return self.cmp()

    def cmp(self) -> _Expr:
        e = self.filtered()
        if self.peek("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            e = _Expr("cmp", op, [e, self.filtered()])
        return e

    def filtered(self) -> _Expr:
        e = self.primary()
        while self.peek("|"):
            self.take()
            kind, name = self.take()
            if kind != "ident":
                self.error("expected a filter name after `|`")
            args: list[_Expr] = []
            if self.peek(":"):
                self.take()
                args.append(self.primary())
                while self.peek(","):
                    self.take()
                    args.append(self.primary())
            e = _Expr("filter", name, [e, *args])
        return e

    def primary(self) -> _Expr:
        kind, val = self.take()
        if kind == "lit":
            return _Expr("lit", val)
        if kind == "op" and val == "-" and self.toks[self.pos][0] == "lit":
            lit = self.take()[1]
            if type(lit) not in (int, float):
                self.error("expected a number after `-`")
            return _Expr("lit", -lit)
        if kind == "op" and val == "(":
            e = self.or_()
            self.expect(")")
            return e
        if kind == "ident":
            segs: list[Any] = [val]
            while True:
                if self.peek("."):
                    self.take()
                    k, name = self.take()
                    if k not in ("ident",) and not (k == "lit" and type(name) is int):
                        self.error("expected a name after `.`")
                    segs.append(name if k == "ident" else int(name))
                elif self.peek("["):
                    self.take()
                    sub = self.primary()
                    if sub.kind != "lit":
                        self.error("expected a literal index")
                    self.expect("]")
                    segs.append(sub.value)
                else:
                    return _Expr("path", segs)
        self.error(f"unexpected `{val}`" if val is not None else "unexpected end of expression")
        raise AssertionError("unreachable")


def parse_expr(src: str, line: int = 1, col: int = 1) -> _Expr:
    """Parse a template expression (raises :class:`TemplateError`)."""
    if not src.strip():
        raise TemplateError(line, col, "empty expression")
    return _ExprParser(src, line, col).parse()


# ------------------------------------------------------------------ parser

_IDENT = re.compile(r"[^\W\d]\w*")


@dataclass
class _Node:
    """A template node: ``kind`` in text/expr/bare/if/for/include."""

    kind: str
    line: int = 0
    col: int = 0
    content: str = ""
    expr: Any = None
    branches: list[tuple[_Expr, list[_Node]]] = field(default_factory=list)
    body: list[_Node] = field(default_factory=list)
    other: list[_Node] | None = None
    names: tuple[str, str | None] = ("", None)
    pairs: list[tuple[str, _Expr]] = field(default_factory=list)


def _first_word(body: str) -> str:
    return body.split(None, 1)[0] if body.strip() else ""


def _split_top(s: str, sep: str, once: bool = False) -> list[str]:
    """Split ``s`` at ``sep`` outside quotes and brackets."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + len(sep)
            i = start
            if once:
                break
            continue
        i += 1
    parts.append(s[start:])
    return parts


class _Parser:
    def __init__(self, tokens: list[Any]) -> None:
        self.tokens = tokens
        self.pos = 0

    def block(self, stops: tuple[str, ...], depth: int = 0) -> list[_Node]:
        if depth > 64:
            raise TemplateError(1, 1, "template nesting too deep")
        out: list[_Node] = []
        while self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            if isinstance(tok, _Text):
                s = tok.content
                if tok.trim_left:
                    s = _trim_leading_line(s)
                if tok.trim_right:
                    s = _trim_trailing_line(s)
                if s:
                    out.append(_Node("text", content=s))
                self.pos += 1
                continue
            if isinstance(tok, _Raw):
                if tok.content:
                    out.append(_Node("text", content=tok.content))
                self.pos += 1
                continue
            word = _first_word(tok.body)
            if word in stops:
                return out
            self.pos += 1
            line, col, body = tok.line, tok.col, tok.body
            if word in ("end", "else", "elif", "endraw"):
                raise TemplateError(line, col, f"unexpected `{{{{ {word} }}}}`")
            if word == "if":
                out.append(self.if_(body[2:].strip(), line, col, depth))
            elif word == "for":
                out.append(self.for_(body[3:].strip(), line, col, depth))
            elif word == "include":
                out.append(self.include(body[7:].strip(), line, col))
            elif _IDENT.fullmatch(body) and body not in ("true", "false", "nil", "null"):
                out.append(_Node("bare", line, col, content=tok.raw, expr=body))
            else:
                out.append(_Node("expr", line, col, expr=parse_expr(body, line, col)))
        return out

    def _closer(self) -> _Directive | None:
        if self.pos < len(self.tokens) and isinstance(self.tokens[self.pos], _Directive):
            tok: _Directive = self.tokens[self.pos]
            self.pos += 1
            return tok
        return None

    def if_(self, cond_src: str, line: int, col: int, depth: int) -> _Node:
        node = _Node("if", line, col)
        cond = parse_expr(cond_src, line, col)
        while True:
            body = self.block(("end", "else", "elif"), depth + 1)
            node.branches.append((cond, body))
            tok = self._closer()
            if tok is None:
                raise TemplateError(line, col, "`{{ if }}` missing matching `{{ end }}`")
            word = _first_word(tok.body)
            if word == "end":
                return node
            if word == "elif":
                cond = parse_expr(tok.body[4:].strip(), tok.line, tok.col)
                continue
            node.other = self.block(("end",), depth + 1)
            if self._closer() is None:
                raise TemplateError(tok.line, tok.col, "`{{ else }}` missing matching `{{ end }}`")
            return node

    def for_(self, spec: str, line: int, col: int, depth: int) -> _Node:
        parts = _split_top(spec, " in ", once=True)
        if len(parts) != 2:
            raise TemplateError(line, col, "expected `in` in for-loop")
        head, iter_src = parts[0].strip(), parts[1].strip()
        names = [n.strip() for n in head.split(",")]
        if len(names) > 2 or not all(_IDENT.fullmatch(n) for n in names):
            raise TemplateError(line, col, "invalid for-loop variables")
        node = _Node("for", line, col, expr=parse_expr(iter_src, line, col))
        node.names = (names[-1], names[0] if len(names) == 2 else None)
        node.body = self.block(("end", "else"), depth + 1)
        tok = self._closer()
        if tok is None:
            raise TemplateError(line, col, "`{{ for }}` missing matching `{{ end }}`")
        if _first_word(tok.body) == "else":
            node.other = self.block(("end",), depth + 1)
            if self._closer() is None:
                raise TemplateError(tok.line, tok.col, "`{{ else }}` missing matching `{{ end }}`")
        return node

    def include(self, spec: str, line: int, col: int) -> _Node:
        parts = _split_top(spec, " with ", once=True)
        node = _Node("include", line, col, expr=parse_expr(parts[0].strip(), line, col))
        if len(parts) == 2:
            src = parts[1].strip()
            if not (src.startswith("{") and src.endswith("}")):
                raise TemplateError(line, col, "expected `{ ... }` after `with`")
            for chunk in _split_top(src[1:-1], ","):
                if not chunk.strip():
                    continue
                kv = _split_top(chunk, ":", once=True)
                key = kv[0].strip().strip("\"'")
                if len(kv) != 2 or not _IDENT.fullmatch(key):
                    raise TemplateError(line, col, "expected `key: value` in include bindings")
                node.pairs.append((key, parse_expr(kv[1].strip(), line, col)))
        return node


def parse_template(src: str) -> list[_Node]:
    """Parse template source into nodes (raises :class:`TemplateError`)."""
    return _Parser(tokenize(src)).block(())


# ------------------------------------------------------------------ evaluation


def truthy(v: Any) -> bool:
    """Template truthiness: nil, false, 0, blank strings and empty collections are false."""
    t = type(v)
    if v is None or v is False:
        return False
    if t is int or t is float:
        return v != 0
    if t is str:
        return bool(v.strip())
    if t is list or t is dict:
        return bool(v)
    if t is HSet:
        return bool(v.items)
    return True


def _render_value(v: Any) -> str:
    return "" if v is None else display(v)


def _lookup(scopes: list[dict[str, Any]], name: str) -> tuple[bool, Any]:
    for scope in reversed(scopes):
        if name in scope:
            return True, scope[name]
    return False, None


def _step(cur: Any, seg: Any) -> Any:
    t = type(cur)
    if t is StructValue:
        cur, t = cur.fields, dict
    if t is dict:
        return cur.get(seg if type(seg) is str else display(seg))
    if type(seg) is int and (t is list or t is str):
        return cur[seg] if -len(cur) <= seg < len(cur) else None
    return None


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return values_equal(a, b)
    if op == "!=":
        return not values_equal(a, b)
    nums = (int, float)
    if (type(a) in nums and type(b) in nums and type(a) is not bool and type(b) is not bool) or (
        type(a) is str and type(b) is str
    ):
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    return False


def _filter(name: str, v: Any, args: list[Any], line: int, col: int) -> Any:
    def need(n: int) -> None:
        if len(args) != n:
            raise TemplateError(line, col, f"filter `{name}` got wrong number of arguments")

    s = _render_value(v)
    if name in ("upper", "lower", "trim", "capitalize", "title", "escape_md"):
        need(0)
        if name == "upper":
            return s.upper()
        if name == "lower":
            return s.lower()
        if name == "trim":
            return s.strip()
        if name == "capitalize":
            return s[:1].upper() + s[1:].lower()
        if name == "title":
            return re.sub(r"\S+", lambda m: m.group(0)[:1].upper() + m.group(0)[1:].lower(), s)
        return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>])", r"\\\1", s)
    if name == "length":
        need(0)
        t = type(v)
        if v is None:
            return 0
        if t in (str, list, dict):
            return len(v)
        if t is HSet:
            return len(v.items)
        if t is RangeValue:
            return len(v)
        raise TemplateError(line, col, f"`length` not defined for {type(v).__name__}")
    if name in ("first", "last"):
        need(0)
        seq = v.items if type(v) is HSet else v
        if type(seq) in (list, str) and seq:
            return seq[0] if name == "first" else seq[-1]
        return None
    if name == "reverse":
        need(0)
        return v[::-1] if type(v) in (list, str) else v
    if name == "join":
        need(1)
        seq = v.items if type(v) is HSet else v
        if type(seq) is str:
            return seq
        if type(seq) is not list:
            raise TemplateError(line, col, "`join` requires a list")
        return _render_value(args[0]).join(_render_value(x) for x in seq)
    if name == "default":
        need(1)
        return v if truthy(v) else args[0]
    if name == "json":
        if len(args) > 1:
            need(1)
        from harnpy.stdlib.jsonlib import dumps

        return dumps(v, 2 if args and truthy(args[0]) else None)
    if name == "indent":
        if not args or len(args) > 2 or type(args[0]) is not int:
            raise TemplateError(line, col, "`indent` requires an integer width")
        pad = " " * max(0, args[0])
        first = len(args) == 2 and truthy(args[1])
        lines = s.split("\n")
        return "\n".join(
            (pad + ln) if ln and (i > 0 or first) else ln for i, ln in enumerate(lines)
        )
    if name == "lines":
        need(0)
        return s.split("\n")
    if name == "replace":
        need(2)
        return s.replace(_render_value(args[0]), _render_value(args[1]))
    raise TemplateError(line, col, f"unknown filter `{name}`")


class _Renderer:
    def __init__(self, base_dir: str, include_stack: list[str]) -> None:
        self.base_dir = base_dir
        self.include_stack = include_stack

    def eval(self, e: _Expr, scopes: list[dict[str, Any]], line: int, col: int) -> Any:
        k = e.kind
        if k == "lit":
            return e.value
        if k == "path":
            found, cur = _lookup(scopes, e.value[0])
            if not found:
                return None
            for seg in e.value[1:]:
                cur = _step(cur, seg)
            return cur
        if k == "not":
            return not truthy(self.eval(e.args[0], scopes, line, col))
        if k == "and":
            a = self.eval(e.args[0], scopes, line, col)
            return self.eval(e.args[1], scopes, line, col) if truthy(a) else a
        if k == "or":
            a = self.eval(e.args[0], scopes, line, col)
            return a if truthy(a) else self.eval(e.args[1], scopes, line, col)
        if k == "cmp":
            a = self.eval(e.args[0], scopes, line, col)
            b = self.eval(e.args[1], scopes, line, col)
            return _compare(e.value, a, b)
        v = self.eval(e.args[0], scopes, line, col)
        args = [self.eval(a, scopes, line, col) for a in e.args[1:]]
        return _filter(e.value, v, args, line, col)

    def render(self, nodes: list[_Node], scopes: list[dict[str, Any]], out: list[str]) -> None:
        for n in nodes:
            k = n.kind
            if k == "text":
                out.append(n.content)
            elif k == "expr":
                out.append(_render_value(self.eval(n.expr, scopes, n.line, n.col)))
            elif k == "bare":
                found, v = _lookup(scopes, n.expr)
                out.append(_render_value(v) if found else n.content)
            elif k == "if":
                for cond, body in n.branches:
                    if truthy(self.eval(cond, scopes, n.line, n.col)):
                        self.render(body, scopes, out)
                        break
                else:
                    if n.other:
                        self.render(n.other, scopes, out)
            elif k == "for":
                self.render_for(n, scopes, out)
            else:
                self.render_include(n, scopes, out)

    def render_for(self, n: _Node, scopes: list[dict[str, Any]], out: list[str]) -> None:
        v = self.eval(n.expr, scopes, n.line, n.col)
        t = type(v)
        items: list[tuple[Any, Any]]
        if v is None:
            items = []
        elif t is list:
            items = list(enumerate(v))
        elif t is HSet:
            items = list(enumerate(v.items))
        elif t is dict or t is StructValue:
            d = v.fields if t is StructValue else v
            items = [(key, d[key]) for key in sorted(d)]
        elif t is RangeValue:
            items = list(enumerate(v.to_list("template for loop")))
        else:
            raise TemplateError(
                n.line,
                n.col,
                f"cannot iterate over {display(v)!r}: expected list, dict, set, or range",
            )
        if not items:
            if n.other:
                self.render(n.other, scopes, out)
            return
        value_var, key_var = n.names
        total = len(items)
        for i, (key, item) in enumerate(items):
            layer: dict[str, Any] = {
                value_var: item,
                "loop": {
                    "index": i + 1,
                    "index0": i,
                    "first": i == 0,
                    "last": i == total - 1,
                    "length": total,
                },
            }
            if key_var is not None:
                layer[key_var] = key
            scopes.append(layer)
            try:
                self.render(n.body, scopes, out)
            finally:
                scopes.pop()

    def render_include(self, n: _Node, scopes: list[dict[str, Any]], out: list[str]) -> None:
        target = self.eval(n.expr, scopes, n.line, n.col)
        if type(target) is not str:
            raise TemplateError(n.line, n.col, "include path must be a string")
        path = os.path.normpath(os.path.join(self.base_dir, target))
        if path in self.include_stack:
            chain = " → ".join([*self.include_stack, path])
            raise TemplateError(n.line, n.col, f"circular include detected: {chain}")
        if len(self.include_stack) >= MAX_INCLUDE_DEPTH:
            raise TemplateError(n.line, n.col, f"include depth exceeded ({MAX_INCLUDE_DEPTH})")
        from harnpy.security import read_text_limited

        try:
            src = read_text_limited(path, newline="")
        except OSError as e:
            raise TemplateError(
                n.line, n.col, f"cannot read included template '{target}': {e.strerror or e}"
            ) from None
        bindings: dict[str, Any] = {}
        for scope in scopes:
            bindings.update(scope)
        for key, expr in n.pairs:
            bindings[key] = self.eval(expr, scopes, n.line, n.col)
        child = _Renderer(os.path.dirname(path), [*self.include_stack, path])
        try:
            child.render(parse_template(src), [bindings], out)
        except TemplateError as e:
            if not hasattr(e, "where"):
                e.where = path  # type: ignore[attr-defined]
            raise


def render_template(src: str, bindings: Any, base_dir: str, name: str | None = None) -> str:
    """Render template source ``src`` with ``bindings`` (a dict, struct or nil); includes
    resolve against ``base_dir``; ``name`` (the template's path) labels errors and seeds
    include-cycle detection. Throws the Harn error described in the module docstring."""
    if type(bindings) is StructValue:
        bindings = bindings.fields
    scope = dict(bindings) if type(bindings) is dict else {}
    stack = [os.path.normpath(name)] if name else []
    out: list[str] = []
    try:
        _Renderer(base_dir, stack).render(parse_template(src), [scope], out)
    except TemplateError as e:
        where = getattr(e, "where", None) or name
        prefix = f"{where} " if where else ""
        raise fail(f"{prefix}at {e.line}:{e.col}: {e.message}") from None
    except RecursionError:
        raise fail("template nesting too deep") from None
    return "".join(out)


def _caller_dir(thread: Any) -> str:
    src = thread.source_path()
    return os.path.dirname(os.path.abspath(src)) if src else os.getcwd()


@builtin()
def render(thread: Any, path: Any = None, bindings: Any = None) -> str:
    """``render(path, bindings?)``: render the template file at ``path`` (relative to the
    calling source file's directory). The file, and each file it includes, must be a regular
    file of at most ``HARNPY_MAX_READ_BYTES`` (default 64 MiB): a bigger one, a FIFO or a
    device throws ``render: cannot read template '<path>': <path> is <n> bytes, over the
    <limit>-byte limit ...`` before it is read."""
    rel = text(path)
    from harnpy.security import read_text_limited

    full = os.path.normpath(os.path.join(_caller_dir(thread), rel))
    try:
        src = read_text_limited(full, newline="")
    except OSError as e:
        raise fail(f"render: cannot read template '{rel}': {e.strerror or e}") from None
    return render_template(src, bindings, os.path.dirname(full), full)


@builtin()
def render_string(thread: Any, template: Any = None, bindings: Any = None) -> str:
    """``render_string(text, bindings?)``: render inline template text (includes resolve
    against the calling file's directory)."""
    return render_template(text(template), bindings, _caller_dir(thread))
