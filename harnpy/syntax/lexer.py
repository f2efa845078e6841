"""The Harn lexer: source text to Lark tokens (spec language.md section 1).

Two layers, both driven lazily by the LALR parser:

* :class:`_Scanner` turns characters into *raw* tokens. It knows comments (nested ``/* */``),
  the shebang, backslash-newline joins, numbers and durations (1.5, 1.6), and the three
  string forms of 1.7 (escapes, ``${...}`` interpolation scanned by counting braces only,
  raw strings, triple-quoted strings with their dedent quirks). Identifiers, keywords
  included, come out as ``NAME``; ``{``, ``?`` and ``<`` come out unclassified.
* :class:`_TokenFilter` (the "token filter" of the 1.9 implementation hint) types each raw
  token before the parser sees it. It may look ahead in the raw stream, and it asks the
  *live* parser state which terminals are acceptable (an exact LR simulation, see
  :meth:`_TokenFilter.accepts`). That single question implements:

  - newlines (1.9): a newline is a separator only where the parser accepts one, and not
    when the next line starts with a continuation operator, ``else``/``catch``/``finally``,
    or the ``{`` of a statement header (``if c⏎{``). Runs of newlines collapse.
  - ``{`` classification: struct literal (``Name {`` followed by ``}`` or ``key :``), closure
    (a ``->`` at depth 0 before the matching ``}``), block (the grammar demands one here),
    else dict.
  - keywords: a word after ``.``/``?.`` is a ``NAME``; contextual words (``gen``, ``each``,
    ``not``, ``where`` ...) become keywords only where the parser expects them.
  - ``?`` as ternary, postfix ``?`` or ``?[``; ``<`` opening call type arguments ``f<T>(x)``.

String interpolation segments are parsed as expressions right away through the
``parse_segment`` callback of :class:`LexInput` (so their spans are real file positions);
the ``ISTRING`` token's value is the tuple of parts (``str`` at even, Expr at odd indices).

Invariant: this module builds no AST itself and never evaluates anything.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lark import Token
from lark.lexer import Lexer
from lark.parsers.lalr_analysis import Shift

from harnpy.syntax.errors import (
    E_INTERPOLATION,
    E_UNEXPECTED_CHAR,
    E_UNTERMINATED_COMMENT,
    E_UNTERMINATED_STRING,
    HarnSyntaxError,
    syntax_error,
)

KEYWORDS = frozenset(
    """break catch continue deadline defer emit else enum eval_pack exclusive extends false
    finally fn for from guard if impl import in interface let match mutex nil override
    parallel pipeline pub require retry return select skill spawn struct throw to tool true
    try type var while yield""".split()
)

# Contextual word -> the terminal it becomes where the parser expects it (spec 1.4).
CONTEXTUAL = {
    "gen": "GEN",
    "each": "EACH",
    "settle": "SETTLE",
    "with": "WITH",
    "as": "AS",
    "stream": "STREAM",
    "timeout": "TIMEOUT",
    "default": "DEFAULT",
    "not": "NOT",
    "where": "WHERE",
    "out": "OUT",
    "description": "DESCRIPTION",
    "const": "CONST",
}

_THREE = {"...": "ELLIPSIS"}
_TWO = {
    "==": "EQEQ",
    "!=": "NOTEQ",
    "&&": "ANDAND",
    "||": "OROR",
    "|>": "PIPE",
    "??": "QQ",
    "**": "POW",
    "?.": "QDOT",
    "->": "ARROW",
    "<=": "LE",
    ">=": "GE",
    "+=": "PLUSEQ",
    "-=": "MINUSEQ",
    "*=": "STAREQ",
    "/=": "SLASHEQ",
    "%=": "PERCENTEQ",
}
_ONE = {
    "=": "EQUAL",
    "!": "BANG",
    ".": "DOT",
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "%": "PERCENT",
    "<": "LT",
    ">": "GT",
    "?": "QMARK",
    "|": "VBAR",
    "@": "AT",
    "{": "LBRACE",
    "}": "RBRACE",
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    ",": "COMMA",
    ":": "COLON",
    ";": "SEMICOLON",
}
_OP_START = frozenset(k[0] for k in (*_THREE, *_TWO, *_ONE))
# Terminal name -> its text, for every operator and punctuation token.
PUNCTUATION_TEXT = {name: text for text, name in (*_ONE.items(), *_TWO.items(), *_THREE.items())}

# Tokens that, at the start of the next line, continue the previous line (spec 1.9 table).
CONTINUATION = frozenset(
    {
        "PIPE",
        "OROR",
        "ANDAND",
        "EQEQ",
        "NOTEQ",
        "LT",
        "GT",
        "LE",
        "GE",
        "QQ",
        "PLUS",
        "STAR",
        "SLASH",
        "PERCENT",
        "POW",
        "DOT",
        "QDOT",
    }
)
_JOIN_WORDS = frozenset({"else", "catch", "finally"})
# Keywords that may not be bare dict keys (spec 1.4).
_NOT_KEYS = frozenset({"finally", "require", "select", "skill", "eval_pack"})

# Raw tokens after which `?` starts a ternary rather than being postfix (spec 2.12).
_TERNARY_START = frozenset(
    {
        "INT",
        "FLOAT",
        "DURATION",
        "STRING",
        "ISTRING",
        "RAWSTRING",
        "LPAR",
        "LBRACE",
        "BANG",
        "MINUS",
    }
)
_TERNARY_WORDS = frozenset({"true", "false", "nil", "fn"})

# Raw tokens allowed between `<` and `>` of call type arguments (`f<list<int>>(x)`).
_TYPE_ARG_TOKENS = frozenset(
    {
        "NAME",
        "COMMA",
        "LSQB",
        "RSQB",
        "VBAR",
        "STRING",
        "INT",
        "MINUS",
        "LBRACE",
        "RBRACE",
        "COLON",
        "QMARK",
        "LPAR",
        "RPAR",
        "ARROW",
    }
)

OPENERS = frozenset({"LPAR", "LSQB", "QLSQB", "_LBLOCK", "_LDICT", "_LCLOSURE", "_LSTRUCT"})
CLOSER_OF = {
    "LPAR": ")",
    "LSQB": "]",
    "QLSQB": "]",
    "_LBLOCK": "}",
    "_LDICT": "}",
    "_LCLOSURE": "}",
    "_LSTRUCT": "}",
}
_CLOSERS = {"RPAR": ")", "RSQB": "]", "RBRACE": "}"}

# Hints for characters other languages use and Harn does not (spec 1.7, 2.x).
_CHAR_HINTS = {
    "'": 'hint: Harn strings use double quotes: "text"',
    "#": "hint: Harn comments start with `//` (or `/* ... */`)",
    "`": 'hint: Harn strings use double quotes, with `${...}` to interpolate: "a ${x}"',
}

_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "$": "$"}
_I64_MAX = 2**63 - 1

_IDENT = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_PLAIN_CHUNK = re.compile(r'[^"\\\n$]+')
_TRIPLE_CHUNK = re.compile(r'[^"$]+')
_BLANK = re.compile(r"\s*")
#: Stops of :func:`interpolation_end`: in code, in a plain string, in a triple-quoted one.
_INTERP_CODE = re.compile(r'[{}"\n]')
_INTERP_PLAIN = re.compile(r'[\\"$\n]')
_INTERP_TRIPLE = re.compile(r'["$]')
_IDENT_CHAR = re.compile(r"\w")


def interpolation_end(
    text: str, i: int, end: int, multiline: bool, known: dict[int, int] | None = None
) -> int:
    """Offset of the ``}`` closing a ``${`` whose body starts at ``i`` (spec 1.7): braces
    are counted, and a string literal inside the body is skipped as a whole (its quotes,
    its braces and its own ``${...}`` parts), so ``"${ "{" }"`` and ``"${d["}"]}"`` are the
    strings they look like.

    Returns ``-1`` when a newline ends the body first while ``multiline`` is false (a plain
    string ends with its line; a nested plain string always does), ``-2`` when the text
    ends first. Every ``{`` the scan passes that closes within the body gets its match
    recorded in ``known`` (offset of ``{`` -> offset of ``}``), so the lexers of nested
    segments find their ends without scanning again. Linear in ``end - i``.
    """
    if known is None:
        known = {}
    # a stack of open contexts above the body's own code: ("{", offset) for a brace in
    # code, ('"', 0) for a plain string, ('"""', 0) for a triple-quoted string
    stack: list[tuple[str, int]] = []
    while i < end:
        ctx = stack[-1][0] if stack else "{"
        if ctx == "{":
            m = _INTERP_CODE.search(text, i, end)
            if m is None:
                return -2
            i = m.start()
            c = text[i]
            if c == "{":
                stack.append(("{", i))
            elif c == "}":
                if not stack:
                    return i
                known[stack.pop()[1]] = i
            elif c == "\n":
                if not multiline:
                    return -1
            elif text.startswith('"""', i):
                stack.append(('"""', 0))
                i += 3
                continue
            elif i > 0 and text[i - 1] == "r" and not (i > 1 and _IDENT_CHAR.match(text, i - 2)):
                j = i + 1  # a raw string: no escapes, no interpolation, one line
                while j < end and text[j] not in '"\n':
                    j += 1
                if j >= end:
                    return -2
                if text[j] == "\n":
                    return -1
                i = j
            else:
                stack.append(('"', 0))
            i += 1
            continue
        m = (_INTERP_PLAIN if ctx == '"' else _INTERP_TRIPLE).search(text, i, end)
        if m is None:
            return -2
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "\n":
            return -1
        elif c == "$":
            if text.startswith("${", i):
                stack.append(("{", i + 1))
                i += 2
            else:
                i += 1
        elif ctx == '"':
            stack.pop()
            i += 1
        elif text.startswith('"""', i):
            stack.pop()
            i += 3
        else:
            i += 1
    return -2


@dataclass(frozen=True, slots=True)
class Segment:
    """A ``${...}`` segment found by the scanner: offsets of the expression text (without the
    braces) and the position of its ``$``."""

    start: int
    end: int
    line: int
    col: int
    line_start: int


SegmentParser = Callable[["LexInput", int, int, int, int], Any]
"""``(inp, start, end, line, line_start) -> Expr``: parses ``inp.text[start:end]`` (a segment
of the string being lexed from ``inp``) as one expression whose first character is at ``line``
(1-based), ``line_start`` being the offset of that line's first character."""

#: How deep ``${...}`` interpolations may nest inside one another (each level is a parse of
#: its own on Python's stack); deeper is ``E109``.
MAX_INTERPOLATION_DEPTH = 200
E_NESTED_TOO_DEEPLY = "E109"


class BraceIndex:
    """Facts about one source text shared by the lexers of all its interpolation segments, so
    nested ``${...}`` cost linear time in total: ``close`` maps the offset of a ``{`` to the
    offset of the ``}`` that matches it by counting braces only (spec 1.7), recorded for
    every ``{`` a scan passes; ``newlines`` lists the offsets of the text's newlines (built
    on first use)."""

    __slots__ = ("close", "newlines")

    def __init__(self) -> None:
        self.close: dict[int, int] = {}
        self.newlines: list[int] | None = None

    def has_newline(self, text: str, start: int, stop: int) -> bool:
        """Whether ``text[start:stop]`` holds a newline (O(log n) after the first call)."""
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer("\n", text)]
        i = bisect.bisect_left(self.newlines, start)
        return i < len(self.newlines) and self.newlines[i] < stop


@dataclass(slots=True)
class LexInput:
    """What :class:`HarnLexer` lexes: ``text[start:end]`` of a file.

    ``line``/``line_start`` give the position of ``start`` (1-based line, offset of that line's
    first character) so slices (interpolation segments) keep real file positions;
    ``segment`` is true for such a slice (error messages then say "interpolation");
    ``depth`` counts the interpolations it is nested in; ``braces`` is shared by every
    slice of one text (:class:`BraceIndex`).
    ``token_filter`` is set by the lexer, for error reporting after a failed parse.
    """

    text: str
    start: int = 0
    end: int = -1
    path: str = "<input>"
    line: int = 1
    line_start: int = 0
    parse_segment: SegmentParser | None = None
    segment: bool = False
    token_filter: _TokenFilter | None = field(default=None, repr=False)
    depth: int = 0
    braces: BraceIndex = field(default_factory=BraceIndex, repr=False)

    def __post_init__(self) -> None:
        if self.end < 0:
            self.end = len(self.text)


# --------------------------------------------------------------------------- strings


def _leading_ws(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _common_indent(text: str) -> int:
    indents = [_leading_ws(ln) for ln in text.split("\n") if ln.strip()]
    return min(indents) if indents else 0


def dedent_triple(text: str) -> str:
    """Dedent a triple-quoted string without interpolation (spec 1.7).

    ``text`` is the body after the optional first newline was dropped. Lines that are not
    whitespace-only set the common indent; that many characters go from each such line,
    whitespace-only lines become empty, and one trailing newline is removed. With a common
    indent of 0 only the trailing newline is removed.
    """
    indent = _common_indent(text)
    if indent > 0:
        text = "\n".join("" if not ln.strip() else ln[indent:] for ln in text.split("\n"))
    if text.endswith("\n"):
        text = text[:-1]
    return text


def dedent_triple_parts(literals: list[str]) -> list[str]:
    """Dedent the literal segments of an interpolated triple-quoted string (spec 1.7 quirk).

    The common indent is computed over the concatenated literals. If positive, each segment is
    processed alone: whitespace-only lines become empty, other lines (also the first line of a
    segment that follows a ``${}``) lose up to ``indent`` leading spaces/tabs, and one trailing
    newline is stripped from the segment. If zero, only a final whitespace-only segment is
    dropped (replaced by ``""``).
    """
    indent = _common_indent("".join(literals))
    out = list(literals)
    if indent > 0:
        for i, seg in enumerate(out):
            lines = []
            for ln in seg.split("\n"):
                if not ln.strip():
                    lines.append("")
                else:
                    lines.append(ln[min(indent, _leading_ws(ln)) :])
            seg = "\n".join(lines)
            if seg.endswith("\n"):
                seg = seg[:-1]
            out[i] = seg
    elif out and not out[-1].strip():
        out[-1] = ""
    return out


# --------------------------------------------------------------------------- scanner


def block_comment_end(text: str, i: int, stop: int) -> tuple[int, int]:
    """Scan the (nestable) block comment opening at ``text[i:i+2] == "/*"``.

    Returns ``(end, depth)``: the index just past its closing ``*/`` and 0, or ``stop`` and
    the number of comments still open when ``stop`` came first."""
    depth = 0
    while i < stop:
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i, 0
        else:
            i += 1
    return stop, depth


class _Scanner:
    """Characters to raw tokens (types: NAME, INT, FLOAT, DURATION, STRING, ISTRING,
    RAWSTRING, NL, LBRACE, QMARK and the operator names of :data:`_ONE`/:data:`_TWO`)."""

    def __init__(self, inp: LexInput) -> None:
        self.inp = inp
        self.text = inp.text
        self.pos = inp.start
        self.end = inp.end
        self.line = inp.line
        self.line_start = inp.line_start
        self.braces = inp.braces
        # (offset, line, line start) of the last interpolation found in the current string
        self._cursor = (0, 0, 0)
        if self.pos == 0 and self.text.startswith("\ufeff"):
            # A UTF-8 byte order mark (editors on Windows write one) is not part of the
            # program; columns on line 1 count from after it.
            self.pos = self.line_start = 1

    # -- positions

    def _error(
        self, code: str, message: str, offset: int, notes: tuple[str, ...] = ()
    ) -> HarnSyntaxError:
        line = self.inp.line + self.text.count("\n", self.inp.start, offset)
        line_start = self.text.rfind("\n", 0, offset) + 1
        if line_start == 0 and self.text.startswith("\ufeff"):
            line_start = 1
        col = offset - line_start + 1
        return syntax_error(
            code,
            f"{message} at {line}:{col}",
            path=self.inp.path,
            source=self.text,
            line=line,
            col=col,
            notes=notes,
        )

    def _advance_lines(self, start: int, stop: int) -> None:
        """Account for the newlines in ``text[start:stop]`` (multi-line tokens)."""
        n = self.text.count("\n", start, stop)
        if n:
            self.line += n
            self.line_start = self.text.rfind("\n", start, stop) + 1

    def _token(self, typ: str, value: Any, start: int, end: int, line: int, col: int) -> Token:
        end_col = end - self.line_start + 1
        return Token(typ, value, start, line, col, self.line, end_col, end)

    # -- main loop

    def scan(self) -> Token | None:
        """The next raw token, or None at the end of the input. Raises HarnSyntaxError."""
        text, end = self.text, self.end
        while self.pos < end:
            pos = self.pos
            c = text[pos]
            if c in " \t\r":
                self.pos += 1
                continue
            line, col = self.line, pos - self.line_start + 1
            if c == "\n":
                self.pos += 1
                tok = self._token("NL", "\n", pos, pos + 1, line, col)
                self.line += 1
                self.line_start = pos + 1
                return tok
            if c == "/" and pos + 1 < end and text[pos + 1] == "/":
                nl = text.find("\n", pos, end)
                self.pos = end if nl < 0 else nl
                continue
            if c == "/" and pos + 1 < end and text[pos + 1] == "*":
                self._block_comment(pos)
                continue
            if c == "\\":
                if text.startswith("\n", pos + 1) or text.startswith("\r\n", pos + 1):
                    stop = text.index("\n", pos + 1) + 1
                    self.pos = stop
                    self.line += 1
                    self.line_start = stop
                    continue
                raise self._error(E_UNEXPECTED_CHAR, "Unexpected character '\\'", pos)
            if c == "#" and pos == 0 and text.startswith("#!"):
                nl = text.find("\n", pos, end)
                self.pos = end if nl < 0 else nl
                continue
            if c == '"':
                if text.startswith('"""', pos):
                    return self._triple_string(pos, line, col)
                return self._plain_string(pos, line, col)
            if c.isdigit() and c.isascii():
                return self._number(pos, line, col)
            m = _IDENT.match(text, pos, end)
            if m:
                word = m.group()
                if word == "r" and m.end() < end and text[m.end()] == '"':
                    return self._raw_string(pos, line, col)
                self.pos = m.end()
                return self._token("NAME", word, pos, m.end(), line, col)
            if c in _OP_START:
                for table, width in ((_THREE, 3), (_TWO, 2), (_ONE, 1)):
                    s = text[pos : pos + width]
                    if len(s) == width and s in table and pos + width <= end:
                        self.pos = pos + width
                        return self._token(table[s], s, pos, pos + width, line, col)
            shown = c if c.isprintable() else f"\\u{{{ord(c):04x}}}"
            notes = (_CHAR_HINTS[c],) if c in _CHAR_HINTS else ()
            raise self._error(E_UNEXPECTED_CHAR, f"Unexpected character '{shown}'", pos, notes)
        return None

    def _block_comment(self, pos: int) -> None:
        i, depth = block_comment_end(self.text, pos, self.end)
        if depth:
            raise self._error(E_UNTERMINATED_COMMENT, "Unterminated block comment", pos)
        self._advance_lines(pos, i)
        self.pos = i

    def _number(self, pos: int, line: int, col: int) -> Token:
        text, end = self.text, self.end
        m = _NUMBER.match(text, pos, end)
        assert m is not None
        stop = m.end()
        s = m.group()
        if "." in s:
            self.pos = stop
            return self._token("FLOAT", float(s), pos, stop, line, col)
        unit = ""
        if text.startswith("ms", stop) and stop + 2 <= end:
            unit = "ms"
        elif stop < end and text[stop] in "smhdw":
            nxt = text[stop + 1] if stop + 1 < end else ""
            if not nxt.isalnum():
                unit = text[stop]
        if unit:
            self.pos = stop + len(unit)
            ms = int(s) * _DURATION_MS[unit] if len(s) <= 19 else _I64_MAX
            return self._token("DURATION", min(ms, _I64_MAX), pos, self.pos, line, col)
        self.pos = stop
        if len(s) > 19:  # beyond i64 for sure: a float (spec 1.5), inf past the float range
            return self._token("INT", float(s), pos, stop, line, col)
        n = int(s)
        return self._token("INT", n if n <= _I64_MAX else float(n), pos, stop, line, col)

    def _raw_string(self, pos: int, line: int, col: int) -> Token:
        text, end = self.text, self.end
        i = pos + 2
        while i < end and text[i] not in '"\n':
            i += 1
        if i >= end or text[i] != '"':
            raise self._error(E_UNTERMINATED_STRING, "Unterminated string", pos)
        self.pos = i + 1
        return self._token("RAWSTRING", text[pos + 2 : i], pos, i + 1, line, col)

    def _interp_end(self, i: int, multiline: bool) -> int:
        """Index of the ``}`` closing a ``${`` whose body starts at ``i`` (see
        :func:`interpolation_end`: braces counted, string literals inside skipped); -1 if
        none. Every ``{`` the scan passes gets its match recorded in :attr:`braces`, so the
        nested strings of the segment's own lexer find their ends without scanning again."""
        text, end = self.text, self.end
        known = self.braces.close
        close = known.get(i - 1)
        if close is not None and close < end:
            if not multiline and self.braces.has_newline(text, i, close):
                return -1
            return close
        close = interpolation_end(text, i, end, multiline, known)
        return close if close >= 0 else -1

    def _segment(self, dollar: int, close: int) -> Segment:
        # The line of `dollar` is found from the previous segment of the same string (or
        # the string's start): linear in the string's length however many segments it has.
        pos, line, line_start = self._cursor
        n = self.text.count("\n", pos, dollar)
        if n:
            line += n
            line_start = self.text.rfind("\n", pos, dollar) + 1
        self._cursor = (dollar, line, line_start)
        return Segment(dollar + 2, close, line, dollar - line_start + 1, line_start)

    def _plain_string(self, pos: int, line: int, col: int) -> Token:
        text, end = self.text, self.end
        i = pos + 1
        self._cursor = (pos, self.line, self.line_start)
        parts: list[Any] = []
        buf: list[str] = []
        while True:
            m = _PLAIN_CHUNK.match(text, i, end)
            if m:
                buf.append(m.group())
                i = m.end()
            if i >= end or text[i] == "\n":
                raise self._error(E_UNTERMINATED_STRING, "Unterminated string", pos)
            c = text[i]
            if c == '"':
                i += 1
                break
            if c == "\\":
                esc = _ESCAPES.get(text[i + 1]) if i + 1 < end else None
                if esc is not None:
                    buf.append(esc)
                    i += 2
                else:
                    buf.append("\\")
                    i += 1
                continue
            # c == "$"
            if i + 1 < end and text[i + 1] == "{":
                close = self._interp_end(i + 2, multiline=False)
                if close < 0:
                    raise self._error(E_UNTERMINATED_STRING, "Unterminated string", pos)
                parts.append("".join(buf))
                buf = []
                parts.append(self._segment(i, close))
                i = close + 1
            else:
                buf.append("$")
                i += 1
        parts.append("".join(buf))
        self.pos = i
        return self._string_token(parts, pos, i, line, col)

    def _triple_string(self, pos: int, line: int, col: int) -> Token:
        text, end = self.text, self.end
        i = pos + 3
        self._cursor = (pos, self.line, self.line_start)
        if text.startswith("\n", i):
            i += 1
        elif text.startswith("\r\n", i):
            i += 2
        parts: list[Any] = []
        buf: list[str] = []
        while True:
            m = _TRIPLE_CHUNK.match(text, i, end)
            if m:
                buf.append(m.group())
                i = m.end()
            if i >= end:
                raise self._error(E_UNTERMINATED_STRING, "Unterminated string", pos)
            if text.startswith('"""', i) and i + 3 <= end:
                break
            if text[i] == "$" and i + 1 < end and text[i + 1] == "{":
                close = self._interp_end(i + 2, multiline=True)
                if close < 0:
                    raise self._error(E_UNTERMINATED_STRING, "Unterminated string", pos)
                parts.append("".join(buf))
                buf = []
                parts.append(self._segment(i, close))
                i = close + 1
            else:
                buf.append(text[i])
                i += 1
        parts.append("".join(buf))
        stop = i + 3
        literals = dedent_triple_parts(parts[0::2]) if len(parts) > 1 else None
        if literals is None:
            parts = [dedent_triple(parts[0])]
        else:
            parts[0::2] = literals
        self._advance_lines(pos, stop)
        self.pos = stop
        return self._string_token(parts, pos, stop, line, col)

    def _string_token(self, parts: list[Any], start: int, stop: int, line: int, col: int) -> Token:
        if len(parts) == 1:
            return self._token("STRING", parts[0], start, stop, line, col)
        values: list[Any] = []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                values.append(part)
                continue
            seg: Segment = part
            if _BLANK.fullmatch(self.text, seg.start, seg.end):
                raise self._error(E_INTERPOLATION, "empty interpolation `${}`", seg.start - 2)
            if self.inp.parse_segment is None:
                raise self._error(E_INTERPOLATION, "interpolation is not allowed here", seg.start)
            if self.inp.depth >= MAX_INTERPOLATION_DEPTH:
                raise self._error(
                    E_NESTED_TOO_DEEPLY,
                    f"interpolations nested more than {MAX_INTERPOLATION_DEPTH} deep",
                    seg.start - 2,
                )
            values.append(
                self.inp.parse_segment(self.inp, seg.start, seg.end, seg.line, seg.line_start)
            )
        # The token's text is not its value here: Token is a str built from its value, and the
        # str() of nested parts would cost time quadratic in the nesting.
        tok = self._token("ISTRING", "", start, stop, line, col)
        tok.value = tuple(values)
        return tok


# --------------------------------------------------------------------------- filter


def lr_accepts(
    states: dict[Any, dict[str, Any]], state_stack: list[Any], term: str, end_state: Any = None
) -> bool:
    """Exact LR check: from ``state_stack``, does ``term`` get shifted after the reductions it
    triggers? (A state's action table alone is not enough: LALR merges look-aheads.) For
    ``$END`` pass the parse's ``end_state``: reaching it means the input may end here."""
    # The stack is simulated without copying it (parses may be thousands of states deep):
    # ``state_stack[:base] + extra``.
    base = len(state_stack)
    extra: list[Any] = []
    while True:
        top = extra[-1] if extra else state_stack[base - 1]
        if term == "$END" and top == end_state:
            return True
        action = states[top].get(term)
        if action is None:
            return False
        kind, arg = action
        if kind is Shift:
            return True
        n = len(arg.expansion)
        if n:
            k = min(n, len(extra))
            if k:
                del extra[len(extra) - k :]
            base -= n - k
        top = extra[-1] if extra else state_stack[base - 1]
        goto = states[top].get(arg.origin.name)
        if goto is None:
            return False
        extra.append(goto[1])


class _LexError:
    """A scanner error met while looking ahead: raised when the stream reaches it."""

    __slots__ = ("error",)

    def __init__(self, error: HarnSyntaxError) -> None:
        self.error = error


class _TokenFilter:
    """Types raw tokens using look-ahead and the live parser state (see module docstring).

    ``stack`` holds the open bracket tokens; ``stack_before`` is the bracket depth before the
    last token was emitted (used to word errors at top level vs inside blocks)."""

    def __init__(self, inp: LexInput, parser_state: Any) -> None:
        self.inp = inp
        self.scanner = _Scanner(inp)
        # Raw tokens read ahead: ``buf[head:]`` (a list, so ``peek(i)`` is O(1) however far
        # ahead it looks; consumed items are dropped in batches).
        self.buf: list[Token | _LexError] = []
        self.head = 0
        self.done = False
        # ``{`` start offset -> does a ``->`` follow at its depth before its closer? Filled
        # for every ``{`` a look-ahead scan passes, so nested braces are classified in
        # linear total time (see :meth:`_arrow_ahead`).
        self.arrow_memo: dict[int, bool] = {}
        self.parser_state = parser_state
        self.states = parser_state.parse_conf.states
        self.last: Token | None = None
        self.prev: Token | None = None  # the token before ``last``
        self.stack: list[Token] = []
        self.stack_before = 0

    # -- raw stream

    def _fill(self, n: int) -> bool:
        """Make sure ``buf`` holds at least ``n`` items if the input has them."""
        n += self.head
        while len(self.buf) < n and not self.done:
            try:
                tok = self.scanner.scan()
            except HarnSyntaxError as exc:
                self.buf.append(_LexError(exc))
                self.done = True
                break
            if tok is None:
                self.done = True
                break
            self.buf.append(tok)
        return len(self.buf) >= n

    def peek(self, i: int = 0) -> Token | None:
        """The raw token ``i`` positions ahead (None at the end or at a lexing error)."""
        if not self._fill(i + 1):
            return None
        tok = self.buf[self.head + i]
        return tok if isinstance(tok, Token) else None

    def _ahead(self, i: int = 0, skip_nl: bool = False) -> Iterator[Token]:
        """Raw tokens from position ``i`` on, lazily."""
        while True:
            tok = self.peek(i)
            if tok is None:
                return
            i += 1
            if skip_nl and tok.type == "NL":
                continue
            yield tok

    def _next_raw(self) -> Token | None:
        if not self._fill(1):
            return None
        tok = self.buf[self.head]
        self.head += 1
        if self.head >= 1024 and self.head * 2 >= len(self.buf):
            del self.buf[: self.head]
            self.head = 0
        if isinstance(tok, _LexError):
            raise tok.error
        return tok

    # -- parser questions

    def accepts(self, term: str) -> bool:
        """Would the parser, in its current state, shift ``term`` (after any reductions)?"""
        return lr_accepts(self.states, self.parser_state.state_stack, term)

    # -- decisions

    def _keep_newline(self) -> bool:
        if not self.accepts("_NL"):
            return False
        i = 0
        while True:
            nxt = self.peek(i)
            if nxt is None:
                return True
            if nxt.type != "NL":
                break
            i += 1
        if nxt.type in CONTINUATION:
            return False
        if nxt.type == "NAME" and nxt.value in _JOIN_WORDS:
            return False
        if nxt.type == "LBRACE":
            kind = self._classify_brace(i + 1, nxt, allow_struct=False)
            if kind in ("_LBLOCK", "_LCLOSURE"):
                return False
        return True

    def _classify_brace(self, content: int, brace: Token, allow_struct: bool) -> str | None:
        """Kind of ``brace`` (a ``{`` whose contents start at raw position ``content``),
        among the kinds the parser accepts now; None if it accepts none."""
        last = self.last
        if (
            allow_struct
            and last is not None
            and last.type == "NAME"
            and last.value[:1].isupper()
            and self.accepts("_LSTRUCT")
            and self._struct_ahead(content)
        ):
            return "_LSTRUCT"
        if self.accepts("_LCLOSURE") and self._arrow_ahead(content, brace):
            return "_LCLOSURE"
        if self.accepts("_LBLOCK"):
            return "_LBLOCK"
        if self.accepts("_LDICT"):
            return "_LDICT"
        return None

    def _struct_ahead(self, content: int) -> bool:
        toks = self._ahead(content, skip_nl=True)
        first = next(toks, None)
        if first is None:
            return False
        if first.type == "RBRACE":
            return True
        if first.type in ("NAME", "STRING"):
            second = next(toks, None)
            return second is not None and second.type == "COLON"
        return False

    def _arrow_ahead(self, content: int, brace: Token) -> bool:
        """Is there a ``->`` at depth 0 between ``brace`` (whose contents start at raw
        position ``content``) and its closer (any closer at depth 0 ends the search)?

        The scan records the answer for every ``{`` it passes (a stack of the brackets open
        in it, each with "arrow seen at its own depth"), so a ``{`` met again later is
        answered from :attr:`arrow_memo`: nested braces cost linear time in total."""
        memo = self.arrow_memo
        key = brace.start_pos
        hit = memo.get(key)  # type: ignore[arg-type]
        if hit is not None:
            return hit
        # open brackets inside the scan: [start_pos of a `{` or -1 for ( [, arrow seen]
        opened: list[list[Any]] = []
        found = False
        for tok in self._ahead(content):
            t = tok.type
            if t in ("LPAR", "LSQB", "LBRACE"):
                opened.append([tok.start_pos if t == "LBRACE" else -1, False])
            elif t in ("RPAR", "RSQB", "RBRACE"):
                if not opened:
                    break
                pos, seen = opened.pop()
                if pos >= 0:
                    memo[pos] = seen
            elif t == "ARROW":
                if not opened:
                    found = True
                    break
                opened[-1][1] = True
        else:
            # end of input: a `{` left open has an arrow only if one was seen at its depth
            for pos, seen in opened:
                if pos >= 0:
                    memo[pos] = seen
        memo[key] = found  # type: ignore[index]
        return found

    def _type_args_ahead(self) -> bool:
        depth = 1
        for n, tok in enumerate(self._ahead(0)):
            if n > 64:
                return False
            t = tok.type
            if t == "LT":
                depth += 1
            elif t == "GT":
                depth -= 1
                if depth == 0:
                    nxt = self.peek(n + 1)
                    return nxt is not None and nxt.type == "LPAR"
            elif t not in _TYPE_ARG_TOKENS:
                return False
        return False

    def _word_type(self, tok: Token) -> str:
        word = tok.value
        last = self.last
        if last is not None and last.type in ("DOT", "QDOT"):
            return "NAME"
        if word in KEYWORDS:
            term = word.upper()
            if word not in _NOT_KEYS:
                nxt = self.peek(0)
                # `{type: 1}`: a keyword before `:` where the parser wants a key.
                if (
                    nxt is not None
                    and nxt.type == "COLON"
                    and not self.accepts(term)
                    and self.accepts("NAME")
                ):
                    return "NAME"
            return term
        term = CONTEXTUAL.get(word)
        if term is None or not self.accepts(term):
            return "NAME"
        nxt = self.peek(0)
        if word == "gen":
            ok = nxt is not None and nxt.type == "NAME" and nxt.value == "fn"
        elif word == "not":
            ok = nxt is not None and nxt.type == "NAME" and nxt.value == "in"
        elif word in ("timeout", "default"):
            ok = not (nxt is not None and nxt.type == "NAME" and nxt.value == "from")
        elif word == "out":
            ok = nxt is not None and nxt.type == "NAME" and nxt.value not in KEYWORDS
        elif word == "description":
            ok = nxt is not None and nxt.type == "STRING"
        elif word == "const":
            ok = nxt is not None and nxt.type in ("NAME", "LBRACE")
        else:
            ok = True
        return term if ok else "NAME"

    def _question(self, tok: Token) -> Token:
        nxt = self.peek(0)
        if nxt is not None and nxt.type == "LSQB":
            self._next_raw()
            return Token(
                "QLSQB",
                "?[",
                tok.start_pos,
                tok.line,
                tok.column,
                nxt.end_line,
                nxt.end_column,
                nxt.end_pos,
            )
        if nxt is not None and (
            nxt.type in _TERNARY_START
            or (nxt.type == "NAME" and (nxt.value not in KEYWORDS or nxt.value in _TERNARY_WORDS))
        ):
            tok.type = "_QTERN"
        else:
            tok.type = "QPOST"
        return tok

    # -- the stream the parser reads

    def tokens(self) -> Iterator[Token]:
        """Typed tokens for the parser (lazy: each decision sees the current parser state)."""
        while True:
            tok = self._next_raw()
            if tok is None:
                return
            typ = tok.type
            if typ == "NL":
                if not self._keep_newline():
                    continue
                typ = "_NL"
            elif typ == "NAME":
                typ = self._word_type(tok)
            elif typ == "LBRACE":
                kind = self._classify_brace(0, tok, allow_struct=True)
                if kind is None:
                    kind = "_LCLOSURE" if self._arrow_ahead(0, tok) else "_LDICT"
                typ = kind
            elif typ == "QMARK":
                tok = self._question(tok)
                typ = tok.type
            elif typ == "LT":
                last = self.last
                if (
                    last is not None
                    and last.type == "NAME"
                    and self.accepts("_TLT")
                    and self._type_args_ahead()
                ):
                    typ = "_TLT"
            tok.type = typ
            self.stack_before = len(self.stack)
            if typ in OPENERS:
                self.stack.append(tok)
            elif typ in _CLOSERS and self.stack:
                if CLOSER_OF[self.stack[-1].type] == _CLOSERS[typ]:
                    self.stack.pop()
            self.prev = self.last
            self.last = tok
            yield tok


class HarnLexer(Lexer):
    """Lark custom lexer (interface 2): lexes a :class:`LexInput` with a fresh
    :class:`_TokenFilter` per parse; keeps no state of its own, so parses may nest."""

    __future_interface__ = 2

    def __init__(self, lexer_conf: Any) -> None:
        self.lexer_conf = lexer_conf

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        """Lark's lexer entry point: the tokens of ``lexer_state.text``, typed by a fresh
        :class:`_TokenFilter` that consults the live ``parser_state``.

        Raises:
            TypeError: the input is not a :class:`LexInput`.
            HarnSyntaxError: a lexing error, when the token stream reaches it.
        """
        inp = lexer_state.text
        if not isinstance(inp, LexInput):
            raise TypeError("HarnLexer lexes LexInput objects")
        token_filter = _TokenFilter(inp, parser_state)
        inp.token_filter = token_filter
        return token_filter.tokens()
