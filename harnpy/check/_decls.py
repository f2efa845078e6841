"""Declaration details the AST does not keep, recovered from the declaration's source text.

The parser drops pipeline return types, ``where`` clauses, variance markers (``in``/``out``)
and the signatures inside ``interface`` bodies. The checker needs them, so this module reads
them back from ``source[span.start:span.end]`` of the declaration, re-parsing small snippets
with the public :func:`harnpy.syntax.parse`. Anything that does not read cleanly yields None
(the check is then skipped, never guessed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harnpy.syntax import HarnSyntaxError, parse
from harnpy.syntax import ast as A

_WHERE_PAIR = re.compile(r"([A-Za-z_]\w*)\s*:\s*([A-Za-z_]\w*)")
_GENERIC_PARAM = re.compile(r"^\s*(?:(in|out)\s+)?([A-Za-z_]\w*)\s*$")
_ITEM_START = re.compile(r"\b(fn|type)\s+[A-Za-z_]")


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal starting at ``text[i]`` (a quote)."""
    if text.startswith('"""', i):
        end = text.find('"""', i + 3)
        return len(text) if end < 0 else end + 3
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j + 1
        j += 1
    return len(text)


def _matching_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``text[start]``, or -1."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _header(decl: A.Node, body: A.Node, source: str) -> str:
    return source[decl.span.start : body.span.start]


def _after_params(header: str) -> str | None:
    """The part of a declaration header after its parameter list."""
    i = header.find("(")
    if i < 0:
        return None
    j = _matching_close(header, i)
    return None if j < 0 else header[j + 1 :]


def parse_type_text(text: str) -> A.TypeExpr | None:
    """Parse a type expression given as text (None when it is not one)."""
    text = text.strip()
    if not text:
        return None
    try:
        mod = parse(f"let __t: {text} = nil\n")
    except HarnSyntaxError:
        return None
    if len(mod.body) != 1 or type(mod.body[0]) is not A.LetStmt:
        return None
    return mod.body[0].type


def where_clauses(decl: A.FnDecl, source: str) -> dict[str, str]:
    """``{type parameter: interface}`` from ``fn f<T>(...) where T: Iface``."""
    if not decl.generics:
        return {}
    rest = _after_params(_header(decl, decl.body, source))
    if rest is None:
        return {}
    m = re.search(r"\bwhere\b(.*)$", rest, re.S)
    if m is None:
        return {}
    return {a: b for a, b in _WHERE_PAIR.findall(m.group(1))}


def pipeline_return(decl: A.PipelineDecl, source: str) -> A.TypeExpr | None:
    """The declared return type of ``pipeline p(task) -> T { }``, if any."""
    rest = _after_params(_header(decl, decl.body, source))
    if rest is None:
        return None
    rest = rest.strip()
    if not rest.startswith("->"):
        return None
    rest = re.sub(r"\bextends\s+[A-Za-z_]\w*\s*$", "", rest[2:])
    return parse_type_text(rest)


def generic_variance(decl: A.Node, keyword: str, source: str) -> dict[str, str] | None:
    """``{param: "in" | "out" | ""}`` of ``keyword Name<in T, U>``; None without generics."""
    text = source[decl.span.start : decl.span.end]
    m = re.match(rf"\s*(?:pub\s+)?{keyword}\s+[A-Za-z_]\w*\s*<", text)
    if m is None:
        return None
    close = text.find(">", m.end())
    if close < 0:
        return None
    out: dict[str, str] = {}
    for part in text[m.end() : close].split(","):
        pm = _GENERIC_PARAM.match(part)
        if pm is None:
            return None
        out[pm.group(2)] = pm.group(1) or ""
    return out


@dataclass
class InterfaceInfo:
    """An interface's methods (parsed as body-less :class:`~harnpy.syntax.ast.FnDecl`) and
    associated types (name -> default type or None)."""

    name: str
    methods: dict[str, A.FnDecl] = field(default_factory=dict)
    assoc: dict[str, A.TypeExpr | None] = field(default_factory=dict)


def interface_info(decl: A.InterfaceDecl, source: str) -> InterfaceInfo | None:
    """Read an interface body (None when any item does not parse)."""
    text = source[decl.span.start : decl.span.end]
    open_at = text.find("{")
    if open_at < 0:
        return None
    close = _matching_close(text, open_at)
    if close < 0:
        return None
    body = text[open_at + 1 : close]
    starts: list[int] = []
    depth = 0
    i = 0
    while i < len(body):
        c = body[i]
        if c == '"':
            i = _skip_string(body, i)
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            if c == ">" and i > 0 and body[i - 1] == "-":
                i += 1
                continue
            depth -= 1
        elif depth == 0 and (i == 0 or not (body[i - 1].isalnum() or body[i - 1] == "_")):
            m = _ITEM_START.match(body, i)
            if m is not None:
                starts.append(i)
        i += 1
    info = InterfaceInfo(decl.name)
    for k, s in enumerate(starts):
        item = body[s : starts[k + 1] if k + 1 < len(starts) else len(body)].strip()
        if item.startswith("type"):
            m = re.fullmatch(r"type\s+([A-Za-z_]\w*)\s*(?:=\s*(.+))?", item, re.S)
            if m is None:
                return None
            default = None
            if m.group(2) is not None:
                default = parse_type_text(m.group(2))
                if default is None:
                    return None
            info.assoc[m.group(1)] = default
            continue
        try:
            mod = parse(item + " {}\n")
        except HarnSyntaxError:
            return None
        if len(mod.body) != 1 or type(mod.body[0]) is not A.FnDecl:
            return None
        fn = mod.body[0]
        info.methods[fn.name] = fn
    return info
