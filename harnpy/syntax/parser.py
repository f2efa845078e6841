"""The Harn parser: Lark LALR over ``grammar/harn.lark`` with the Harn lexer, to AST.

The Lark object is built lazily on first use and cached on disk (Lark's ``cache=``, file
keyed by a hash of the grammar text, the Lark version and the Python version) under
``$XDG_CACHE_HOME/harnpy`` or ``~/.cache/harnpy``, falling back to the temp directory and then
to no cache when neither is writable. Every failure becomes a :class:`HarnSyntaxError`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import lark
from lark import Lark, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError

from harnpy.syntax import ast
from harnpy.syntax.errors import (
    E_UNEXPECTED_EOF,
    E_UNEXPECTED_TOKEN,
    HarnSyntaxError,
    syntax_error,
)
from harnpy.syntax.lexer import CLOSER_OF, HarnLexer, LexInput
from harnpy.syntax.transform import AstBuilder

_GRAMMAR_CANDIDATES = (
    Path(__file__).resolve().parent.parent / "_data" / "grammar" / "harn.lark",  # wheel
    Path(__file__).resolve().parents[2] / "grammar" / "harn.lark",  # source checkout
)

_parser: Lark | None = None


def grammar_path() -> Path:
    """Location of ``harn.lark`` (installed wheel first, then the source checkout).

    Raises:
        FileNotFoundError: neither location holds the grammar.
    """
    for path in _GRAMMAR_CANDIDATES:
        if path.is_file():
            return path
    raise FileNotFoundError("harn.lark not found in " + ", ".join(map(str, _GRAMMAR_CANDIDATES)))


def _cache_dirs() -> list[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [Path(base) / "harnpy", Path(tempfile.gettempdir()) / "harnpy-cache"]


def _cache_file(grammar_text: str) -> str | None:
    """A writable cache file path for this grammar, or None (then no cache is used)."""
    key = f"{grammar_text}\0{lark.__version__}\0{sys.version_info[:2]}".encode()
    name = f"harn-grammar-{hashlib.sha256(key).hexdigest()[:20]}.lark-cache"
    for directory in _cache_dirs():
        target = directory / name
        if target.is_file() and os.access(target, os.R_OK):
            return str(target)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return str(target)
    return None


def get_parser() -> Lark:
    """The shared Lark LALR parser (built, or loaded from the cache, on first call)."""
    global _parser
    if _parser is None:
        text = grammar_path().read_text(encoding="utf-8")
        cache = _cache_file(text)
        options: dict[str, Any] = {
            "parser": "lalr",
            "lexer": HarnLexer,
            "start": ["module", "expr_only"],
            "propagate_positions": True,
            "maybe_placeholders": True,
        }
        try:
            _parser = Lark(text, cache=cache or False, **options)
        except OSError:  # unreadable or corrupt cache file: build without it
            _parser = Lark(text, **options)
    return _parser


# ------------------------------------------------------------------------ parsing


def _parse_tree(inp: LexInput, start: str) -> Tree:
    try:
        return get_parser().parse(inp, start=start)  # type: ignore[arg-type]
    except UnexpectedInput as exc:
        raise _translate(exc, inp) from None


def _build(tree: Tree, source: str, path: str) -> Any:
    try:
        return AstBuilder(source, path).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, HarnSyntaxError):
            raise exc.orig_exc from None
        raise


def _segment_parser(path: str) -> Any:
    def parse_segment(text: str, start: int, end: int, line: int, line_start: int) -> Any:
        inp = LexInput(text, start, end, path, line, line_start, _segment_parser(path))
        return _build(_parse_tree(inp, "expr_only"), text, path)

    return parse_segment


def parse(source: str, path: str = "<input>") -> ast.Module:
    """Parse a whole Harn file (spec language.md sections 1-2).

    Args:
        source: the file's text.
        path: the file path, recorded in the Module and in diagnostics.

    Returns:
        The :class:`ast.Module`; every node carries its span.

    Raises:
        HarnSyntaxError: on any lexing or parsing error (``E1xx`` diagnostics).
    """
    inp = LexInput(source, 0, len(source), path, parse_segment=_segment_parser(path))
    module = _build(_parse_tree(inp, "module"), source, path)
    assert isinstance(module, ast.Module)
    return module


def parse_expression(source: str, path: str = "<input>") -> Any:
    """Parse ``source`` as a single expression (interpolation segments, the REPL).

    Raises:
        HarnSyntaxError: when ``source`` is not exactly one expression.
    """
    inp = LexInput(source, 0, len(source), path, parse_segment=_segment_parser(path))
    return _build(_parse_tree(inp, "expr_only"), source, path)


# ------------------------------------------------------------------------ errors

# Readable names of terminals, for "Expected X" messages.
_TERM_TEXT = {
    "_NL": "newline",
    "$END": "end of file",
    "NAME": "identifier",
    "INT": "integer",
    "FLOAT": "float",
    "DURATION": "duration",
    "STRING": "string",
    "ISTRING": "string",
    "RAWSTRING": "raw string",
    "_LBLOCK": "{",
    "_LDICT": "{",
    "_LCLOSURE": "{",
    "_LSTRUCT": "{",
    "_QTERN": "?",
    "QPOST": "?",
    "QLSQB": "?[",
    "_TLT": "<",
}

# Known-bad snippets (in the spirit of Lark's match_examples): an error whose parser state
# and offending token match one of these examples gets the message instead of the generic
# one. Matching ignores the nesting depth, so the examples work inside any block.
_KNOWN_BAD: list[tuple[str, list[str]]] = [
    (
        "Only names and methods can be called (`f(x)`, `obj.m(x)`); bind the result to a "
        "name first",
        ["f(1)(2)", "let x = f(1)(2)", "let y = (g)(1)", "a.b(1)(2)", "let z = [1](2)"],
    ),
    (
        "Assignment is a statement, not an expression (use == to compare)",
        ["let x = a = 1", "f(a = 1)", "if a = 1 { }", "a = b = c", "return x = 1"],
    ),
    (
        "Expected a binding name or a {…} / […] pattern after let",
        ["let 5 = 1", "let = 1", "var 5 = 1", "var = 1"],
    ),
    (
        "Keywords cannot be used as names",
        ["let type = 1", "let for = 2", "fn match() { }", "fn f(type) { }", "var in = 1"],
    ),
    ("`else` without a matching `if`", ["else { }", "let x = 1\nelse { }"]),
]

_known_bad_index: dict[tuple[Any, str], str] | None = None


def _known_bad() -> dict[tuple[Any, str], str]:
    global _known_bad_index
    if _known_bad_index is None:
        index: dict[tuple[Any, str], str] = {}
        for message, examples in _KNOWN_BAD:
            for example in examples:
                try:
                    get_parser().parse(LexInput(example), start="module")  # type: ignore[arg-type]
                except UnexpectedToken as exc:
                    index.setdefault((exc.state.position, exc.token.type), message)
                except (UnexpectedInput, HarnSyntaxError):
                    pass
        _known_bad_index = index
    return _known_bad_index


def _describe_token(tok: Any, source: str) -> str:
    typ = tok.type
    if typ in ("_NL", "$END"):
        return _TERM_TEXT[typ]
    text = source[tok.start_pos : tok.end_pos] if tok.end_pos is not None else str(tok)
    text = text.split("\n", 1)[0]
    return text if len(text) <= 24 else text[:21] + "..."


def _describe_expected(expected: set[str]) -> str:
    names: list[str] = []
    for term in sorted(expected):
        if term in ("INT", "FLOAT", "DURATION", "ISTRING", "RAWSTRING", "$END"):
            continue
        text = _TERM_TEXT.get(term)
        if text is None:
            pattern = get_parser().get_terminal(term).pattern
            text = getattr(pattern, "value", term)
        if text not in names:
            names.append(text)
    if not names:
        return "something else"
    if len(names) > 6:
        names = names[:6] + ["..."]
    return ", ".join(names[:-1]) + (" or " if len(names) > 1 else "") + names[-1]


def _translate(exc: UnexpectedInput, inp: LexInput) -> HarnSyntaxError:
    """A HarnSyntaxError for a Lark error (spec 1.9 and the conformance messages)."""
    source, path = inp.text, inp.path
    if not isinstance(exc, UnexpectedToken):
        line, col = getattr(exc, "line", 0) or 0, getattr(exc, "column", 0) or 0
        return syntax_error(
            E_UNEXPECTED_TOKEN,
            f"Syntax error at {line}:{col}",
            path=path,
            source=source,
            line=line,
            col=col,
        )
    tok = exc.token
    expected = set(exc.expected)
    token_filter = inp.token_filter
    if tok.type == "$END":
        line, col = _end_position(inp)
        closer = None
        if token_filter is not None and token_filter.stack:
            closer = CLOSER_OF[token_filter.stack[-1].type]
        if closer is not None and closer in {_expected_text(t) for t in expected}:
            what = closer
        elif expected & {"INT", "NAME"} and "LET" not in expected:
            what = "expression"
        else:
            what = _describe_expected(expected)
        return syntax_error(
            E_UNEXPECTED_EOF,
            f"Unexpected end of file, expected {what} at {line}:{col}",
            path=path,
            source=source,
            line=line,
            col=col,
        )
    line, col = tok.line or 0, tok.column or 0
    got = _describe_token(tok, source)
    known = None
    if exc.state is not None:
        known = _known_bad().get((exc.state.position, tok.type))
    if known is not None:
        message = f"{known}, got {got}"
    elif "_NL" in expected or "SEMICOLON" in expected:
        top = token_filter is None or token_filter.stack_before == 0
        what = "top-level item separator" if top else "statement separator"
        message = f"Expected {what} (`;` or newline), got {got}"
    elif "INT" in expected and "NAME" in expected:
        message = f"Expected {'statement' if 'LET' in expected else 'expression'}, got {got}"
    else:
        message = f"Expected {_describe_expected(expected)}, got {got}"
    return syntax_error(
        E_UNEXPECTED_TOKEN,
        f"{message} at {line}:{col}",
        path=path,
        source=source,
        line=line,
        col=col,
        end_col=(tok.end_column or 0) if tok.end_line == tok.line else 0,
    )


def _expected_text(term: str) -> str:
    text = _TERM_TEXT.get(term)
    if text is not None:
        return text
    if term == "RBRACE":
        return "}"
    if term == "RPAR":
        return ")"
    if term == "RSQB":
        return "]"
    return term


def _end_position(inp: LexInput) -> tuple[int, int]:
    text = inp.text[: inp.end]
    line = inp.line + text.count("\n", inp.start)
    col = len(text) - (text.rfind("\n") + 1) + 1
    return line, col
