"""The Harn parser: Lark LALR over ``grammar/harn.lark`` with the Harn lexer, to AST.

The Lark object is built lazily on first use and cached on disk (Lark's ``cache=``, file
keyed by a hash of the grammar text, the Lark version and the Python version) in the
directory :func:`harnpy.syntax.cache.cache_dirs` picks, or not cached when there is none.
Parsed files are cached too (:mod:`harnpy.syntax.cache`), so a run whose files are all
unchanged never loads Lark's tables. Every failure becomes a :class:`HarnSyntaxError`.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import replace
from typing import Any

import lark
from lark import Lark, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken

from harnpy.diagnostics import Diagnostic
from harnpy.syntax import ast
from harnpy.syntax.cache import cache_dirs
from harnpy.syntax.errors import (
    E_UNEXPECTED_CHAR,
    E_UNEXPECTED_EOF,
    E_UNEXPECTED_TOKEN,
    HarnSyntaxError,
    syntax_error,
)
from harnpy.syntax.grammar_file import grammar_path
from harnpy.syntax.lexer import (
    CLOSER_OF,
    CONTEXTUAL,
    KEYWORDS,
    PUNCTUATION_TEXT,
    HarnLexer,
    LexInput,
    lr_accepts,
)
from harnpy.syntax.transform import AstBuilder

_parser: Lark | None = None


def _cache_file(grammar_text: str) -> str | None:
    """A writable cache file path for this grammar, or None (then no cache is used)."""
    key = f"{grammar_text}\0{lark.__version__}\0{sys.version_info[:2]}".encode()
    name = f"harn-grammar-{hashlib.sha256(key).hexdigest()[:20]}.lark-cache"
    dirs = cache_dirs()
    return str(dirs[0] / name) if dirs else None


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
        if cache:
            _make_private(cache)
    return _parser


def _make_private(path: str) -> None:
    """Lark writes its cache file with the umask's mode (0666 under umask 000): make it
    0600 like every other file harnpy keeps (its directory is 0700 already)."""
    try:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError:
        pass


# ------------------------------------------------------------------------ parsing


def _parse_tree(inp: LexInput, start: str) -> Tree:
    try:
        return get_parser().parse(inp, start=start)  # type: ignore[arg-type]
    except UnexpectedInput as exc:
        raise _translate(exc, inp) from None


def _build(tree: Tree, source: str, path: str) -> Any:
    return AstBuilder(source, path).transform(tree)


_SIMPLE_SEGMENT = re.compile(r"[ \t]*([^\W\d]\w*)[ \t]*")


def _segment_parser(path: str) -> Any:
    def parse_segment(outer: LexInput, start: int, end: int, line: int, line_start: int) -> Any:
        text = outer.text
        simple = _SIMPLE_SEGMENT.fullmatch(text, start, end)
        if simple and simple.group(1) not in KEYWORDS:
            # `${name}`, by far the most common segment: no parser run needed
            a, b = simple.span(1)
            span = ast.Span(line, a - line_start + 1, a, b, line, b - line_start)
            return ast.Name(simple.group(1), span=span)
        inp = LexInput(
            text,
            start,
            end,
            path,
            line,
            line_start,
            parse_segment,
            True,
            depth=outer.depth + 1,
            braces=outer.braces,
        )
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
        HarnSyntaxError: on any lexing or parsing error (``E1xx`` diagnostics). The first
            diagnostic is the first error; later ones come from re-parsing with the bad
            line blanked out, when that is safe (see :func:`_later_errors`).
    """
    try:
        return _parse_module(source, path)
    except HarnSyntaxError as exc:
        first = exc.diagnostics[0]
        raise HarnSyntaxError([first, *_later_errors(source, path, first)]) from None


def _parse_module(source: str, path: str) -> ast.Module:
    inp = LexInput(source, 0, len(source), path, parse_segment=_segment_parser(path))
    module = _build(_parse_tree(inp, "module"), source, path)
    assert isinstance(module, ast.Module)
    return module


_MAX_ERRORS = 10
_RECOVERABLE = frozenset({E_UNEXPECTED_TOKEN, E_UNEXPECTED_CHAR})


def _later_errors(source: str, path: str, first: Diagnostic) -> list[Diagnostic]:
    """Further errors after ``first``, found by blanking the offending line and re-parsing.

    Recovery only happens when it cannot invent errors: the error is an unexpected token or
    character that is not the first token of its line (else the real fault is likely on an
    earlier line), and the line holds balanced brackets and no triple quote. Each new error
    must lie on a later line than the previous one.
    """
    found: list[Diagnostic] = []
    text, diag = source, first
    while len(found) < _MAX_ERRORS - 1 and diag.code in _RECOVERABLE:
        lines = text.split("\n")
        if not 0 < diag.line <= len(lines):
            break
        line_text = lines[diag.line - 1]
        before, at = line_text[: max(0, diag.col - 1)], line_text[max(0, diag.col - 1) :]
        if at[:1] in (")", "]", "}"):  # a stray closer is the error itself
            at = at[1:]
        if not before.strip() or not _balanced(before + at):
            break
        lines[diag.line - 1] = " " * len(line_text)
        text = "\n".join(lines)
        try:
            _parse_module(text, path)
            break
        except HarnSyntaxError as exc:
            nxt = exc.diagnostics[0]
        if nxt.line <= diag.line:
            break
        nxt = replace(nxt, source=source)
        found.append(nxt)
        diag = nxt
    return found


_STRING_RE = re.compile(r'r?"(?:[^"\\\n]|\\.)*"?')


def _balanced(line: str) -> bool:
    if '"""' in line:
        return False
    depth = 0
    for c in _STRING_RE.sub("", line.split("//", 1)[0]):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def parse_expression(source: str, path: str = "<input>") -> Any:
    """Parse ``source`` as a single expression (interpolation segments, the REPL).

    Raises:
        HarnSyntaxError: when ``source`` is not exactly one expression.
    """
    inp = LexInput(source, 0, len(source), path, parse_segment=_segment_parser(path))
    return _build(_parse_tree(inp, "expr_only"), source, path)


# ------------------------------------------------------------------------ errors

# Readable names of terminals, for "Expected X" messages.
_TERM_TEXT: dict[str, str] = {
    **PUNCTUATION_TEXT,
    **{word.upper(): word for word in KEYWORDS},
    **{term: word for word, term in CONTEXTUAL.items()},
    "_NL": "newline",
    "$END": "end of file",
    "NAME": "identifier",
    "INT": "number",
    "FLOAT": "number",
    "DURATION": "duration",
    "STRING": "string",
    "ISTRING": "string",
    "RAWSTRING": "string",
    "_LBLOCK": "{",
    "_LDICT": "{",
    "_LCLOSURE": "{",
    "_LSTRUCT": "{",
    "_QTERN": "?",
    "QPOST": "?",
    "QLSQB": "?[",
    "_TLT": "<",
}

# Terminals that only continue an expression; left out of "Expected X" when anything else
# would also fit (`f(1 2)` says "Expected `,` or `)`", not every binary operator).
_OPERATORS = frozenset(
    {
        "LT", "GT", "LE", "GE", "TO", "EXCLUSIVE", "ANDAND", "OROR", "DOT", "QDOT", "QQ",
        "MINUS", "PLUS", "STAR", "SLASH", "PERCENT", "POW", "QPOST", "PIPE", "EQEQ", "NOTEQ",
        "NOT", "IN", "_QTERN", "QLSQB", "LSQB", "LPAR", "_TLT", "_LSTRUCT",
    }
)  # fmt: skip

# Known-bad snippets (in the spirit of Lark's match_examples): an error whose parser state
# and offending token match one of these examples gets the message instead of the generic
# one. Matching ignores the nesting depth, so the examples work inside any block.
_KNOWN_BAD: list[tuple[str, list[str]]] = [
    (
        "only names (`f(x)`) and methods (`obj.m(x)`) can be called, bind the result to a "
        "name first",
        ["f(1)(2)", "let x = f(1)(2)", "let y = (g)(1)", "a.b(1)(2)", "let z = [1](2)"],
    ),
    (
        "assignment is a statement, not an expression (use == to compare)",
        ["let x = a = 1", "f(a = 1)", "if a = 1 { }", "a = b = c", "return x = 1"],
    ),
    (
        "expected a binding name or a {…} / […] pattern after let",
        ["let 5 = 1", "let = 1", "var 5 = 1", "var = 1"],
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
    after_expression = bool(expected & {"PLUS", "DOT", "PIPE", "TO", "QPOST"})
    terms = (expected - _OPERATORS or expected) if after_expression else expected
    names: list[str] = []
    for term in sorted(terms):
        text = _TERM_TEXT.get(term, term.lower())
        if text in ("number", "duration", "end of file", "identifier", "string", "newline"):
            continue
        text = f"`{text}`"
        if text not in names:
            names.append(text)
    for term, text in (("NAME", "identifier"), ("STRING", "string"), ("INT", "number")):
        if term in terms:
            names.append(text)
    if not names:
        return "end of file" if "$END" in terms else "expression"
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
            f"syntax error at {line}:{col}",
            path=path,
            source=source,
            line=line,
            col=col,
        )
    tok = exc.token
    expected = set(exc.expected)
    if exc.state is not None:
        # Lark's set comes from a state whose look-aheads LALR merged; keep what really fits.
        conf, stack = exc.state.parse_conf, exc.state.state_stack
        precise = {t for t in expected if lr_accepts(conf.states, stack, t, conf.end_state)}
        expected = precise or expected
    token_filter = inp.token_filter
    if tok.type == "$END":
        line, col = _end_position(inp)
        closer = None
        if token_filter is not None and token_filter.stack:
            closer = CLOSER_OF[token_filter.stack[-1].type]
        if closer is not None and closer in {_TERM_TEXT.get(t) for t in expected}:
            what = closer
        elif "INT" in expected and "NAME" in expected:
            what = "statement" if "LET" in expected else "expression"
        else:
            what = _describe_expected(expected)
        where = "interpolation" if inp.segment else "file"
        return syntax_error(
            E_UNEXPECTED_EOF,
            f"Unexpected end of {where}, expected {what} at {line}:{col}",
            path=path,
            source=source,
            line=line,
            col=col,
        )
    line, col = tok.line or 0, tok.column or 0
    got = _describe_token(tok, source)
    hint = _habit_hint(tok, token_filter)
    known = None
    if exc.state is not None:
        known = _known_bad().get((exc.state.position, tok.type))
    if known is not None:
        message = f"{known}; got {got}"
    elif "_NL" in expected or "SEMICOLON" in expected:
        top = token_filter is None or token_filter.stack_before == 0
        what = "top-level item separator" if top else "statement separator"
        message = f"Expected {what} (`;` or newline), got {got}"
    else:
        if "INT" in expected and "NAME" in expected:
            what = "statement" if "LET" in expected else "expression"
        elif "$END" in expected and inp.segment:
            what = "`}` closing the interpolation"
        else:
            what = _describe_expected(expected)
        message = f"Expected {what}, got {got}"
        if tok.type == "EVAL_PACK" and what == "statement":
            # Spec language.md 2.10: a host-oriented declaration ("implement late") that harnpy does not run yet.
            message = "`eval_pack` declarations are not supported by harnpy yet"
        elif tok.value in KEYWORDS and tok.type == str(tok.value).upper():
            message = f"Expected {what}, got keyword {got}"
            if "NAME" in expected:
                message += " (reserved words cannot be names)"
    return syntax_error(
        E_UNEXPECTED_TOKEN,
        f"{message} at {line}:{col}",
        path=path,
        source=source,
        line=line,
        col=col,
        end_col=(tok.end_column or 0) if tok.end_line == tok.line else 0,
        notes=(f"hint: {hint}",) if hint else (),
    )


# Words of other languages (mostly Python) that Harn spells differently: the hint shown when
# such a word is where the parse failed, or just before it.
_HABIT_AT = {
    "and": "Harn writes `&&` for `and`: `a && b`",
    "or": "Harn writes `||` for `or`: `a || b`",
    "elif": "Harn writes `else if`: `if a { } else if b { }`",
    "def": "Harn declares functions with `fn`: `fn name(x) { ... }`",
    "is": "Harn compares with `==` and `!=`",
}
_HABIT_BEFORE = {
    "def": _HABIT_AT["def"],
    "not": "Harn writes `!` for `not`: `!done` (`not in` tests membership: `x not in xs`)",
    "elif": _HABIT_AT["elif"],
    "lambda": "Harn writes closures with braces: `{ x -> x + 1 }`",
}


def _habit_hint(tok: Any, token_filter: Any) -> str | None:
    """A hint when the token a parse failed at (or the one before it) is a habit from
    another language: ``and``/``or``/``not``, ``elif``, ``def``, ``x++``/``x--``."""
    value = tok.value if isinstance(tok.value, str) else None
    if tok.type == "NAME" or (value is not None and value.isalpha()):
        hint = _HABIT_AT.get(value or "")
        if hint is not None:
            return hint
    prev = token_filter.prev if token_filter is not None else None
    if prev is not None and prev.type == "NAME" and prev.value in _HABIT_BEFORE:
        return _HABIT_BEFORE[prev.value]
    if (
        prev is not None
        and tok.type in ("PLUS", "MINUS")
        and prev.type == tok.type
        and prev.end_pos == tok.start_pos
    ):
        op = "+" if tok.type == "PLUS" else "-"
        return f"Harn has no `{op}{op}`: write `x {op}= 1`"
    return None


def _end_position(inp: LexInput) -> tuple[int, int]:
    text = inp.text[: inp.end]
    line = inp.line + text.count("\n", inp.start)
    col = len(text) - (text.rfind("\n") + 1) + 1
    return line, col
