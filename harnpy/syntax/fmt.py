"""``harnpy fmt``: lay out a Harn file's lines without changing a single token.

The formatter works on the raw token stream of :class:`harnpy.syntax.lexer._Scanner`, so
what it may change is only the whitespace *between* tokens at the start and end of lines:

* each line is indented two spaces per bracket level, counted per line: a line that leaves
  brackets open (``foo({ x ->``) indents the lines after it by one level, and a line that
  starts with a closer (``})``) goes back to the level of the line that opened it;
* a line that continues an expression (it starts with ``.``, ``|>``, ``&&``, ``+``... or the
  line before ends with an operator, ``=`` or ``->`` outside brackets) gets one more level;
* trailing whitespace is removed, whitespace-only lines become empty, runs of blank lines
  shrink to one, blank lines at the start and the end go, and the file ends with one newline.

Lines that start inside a triple-quoted string or a block comment are kept byte for byte
(their whitespace is content), and so is the end of a line that ends inside one. Comments
are kept where they are (a comment line is indented like the code around it). A file whose
lines all end in CRLF keeps CRLF endings. The result parses to the same AST (spans aside),
and formatting it again changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from harnpy.syntax.lexer import CONTINUATION, LexInput, _Scanner, block_comment_end

INDENT = "  "

_OPENERS = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSERS = frozenset({"RPAR", "RSQB", "RBRACE"})
# Tokens that, at the end of a line outside brackets, mean the next line continues it.
_TRAILING_CONTINUES = frozenset(
    {
        "EQUAL", "PLUSEQ", "MINUSEQ", "STAREQ", "SLASHEQ", "PERCENTEQ", "PIPE",
        "OROR", "ANDAND", "EQEQ", "NOTEQ", "LT", "GT", "LE", "GE", "QQ", "PLUS", "MINUS",
        "STAR", "SLASH", "PERCENT", "POW", "DOT", "QDOT",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Line:
    """What the formatter knows of one source line."""

    verbatim: bool  # starts inside a triple-quoted string or a block comment
    keep_end: bool  # ends inside one: its trailing whitespace is content
    first: str | None  # type of its first token (None: blank or comment only)
    closers: int  # how many closers it starts with
    last: str | None  # type of its last token (None: blank or comment only)


def format_source(source: str, path: str = "<input>") -> str:
    """The formatted text of ``source`` (module docstring).

    Raises:
        HarnSyntaxError: the file does not parse (the syntax errors ``harnpy check``
            reports); such a file is not formatted.
    """
    from harnpy.syntax.parser import parse

    # a file that does not parse is not formatted: its brackets may not say where its
    # blocks are, and a layout guessed from them would move code the author placed
    parse(source, path)
    if "\r\n" in source and source.count("\r\n") == source.count("\n"):
        # a CRLF file stays CRLF, inside triple-quoted strings too (their bytes are kept)
        return format_source(source.replace("\r\n", "\n"), path).replace("\n", "\r\n")
    lines = source.split("\n")
    info, brackets = _line_info(source, path, len(lines))
    out: list[str] = []
    opened: list[int] = []  # indent level of the line that opened each open bracket
    cont = False  # the previous code line leaves its expression unfinished
    level = 0  # indent level of the last line laid out
    base = 0  # the same without the continuation level
    blank_run = 0
    for i, text in enumerate(lines):
        li = info[i]
        if li.verbatim:
            out.append(text)
            blank_run = 0
        else:
            body = text.strip(" \t\r\f\v") if not li.keep_end else text.lstrip(" \t\f\v")
            if not body:
                blank_run += 1
                if blank_run == 1 and out:
                    out.append("")
                continue
            blank_run = 0
            if li.closers and opened:
                level = base = opened[max(0, len(opened) - li.closers)]
            else:
                level = base = opened[-1] + 1 if opened else 0
                if cont or li.first in CONTINUATION:
                    level += 1
            out.append(INDENT * level + body)
        for kind in brackets[i]:
            if kind in _OPENERS:
                # a block opened on a continued line (`if a\n  && b {`) indents from the
                # statement; a call's or a list's brackets from the line itself
                opened.append(base if kind == "LBRACE" else level)
            elif opened:
                opened.pop()
        if li.last is not None:
            cont = li.last in _TRAILING_CONTINUES
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def _line_info(source: str, path: str, nlines: int) -> tuple[list[_Line], list[list[str]]]:
    """Per line: its :class:`_Line`, and the types of the brackets it opens and closes, in
    order."""
    scanner = _Scanner(LexInput(source, 0, len(source), path, parse_segment=_skip_segment))
    verbatim = [False] * nlines
    keep_end = [False] * nlines
    first: list[str | None] = [None] * nlines
    last: list[str | None] = [None] * nlines
    closers = [0] * nlines
    brackets: list[list[str]] = [[] for _ in range(nlines)]
    seen_other = [False] * nlines
    prev_end = 0
    while True:
        tok = scanner.scan()
        _mark_block_comments(
            source,
            prev_end,
            len(source) if tok is None else (tok.start_pos or 0),
            verbatim,
            keep_end,
        )
        if tok is None:
            break
        prev_end = tok.end_pos or 0
        if tok.type == "NL":
            continue
        line = (tok.line or 1) - 1
        end_line = (tok.end_line or tok.line or 1) - 1
        typ = tok.type
        if end_line > line:  # a triple-quoted string over several lines
            _span_lines(line, end_line, verbatim, keep_end)
        if first[line] is None:
            first[line] = typ
        if typ in _CLOSERS and not seen_other[line]:
            closers[line] += 1
        else:
            seen_other[line] = True
        if typ in _OPENERS or typ in _CLOSERS:
            brackets[end_line].append(typ)
        last[end_line] = typ
        seen_other[end_line] = True
    lines = [_Line(verbatim[i], keep_end[i], first[i], closers[i], last[i]) for i in range(nlines)]
    return lines, brackets


def _skip_segment(_inp: LexInput, _start: int, _end: int, _line: int, _line_start: int) -> None:
    """The formatter's stand-in for parsing an interpolation: a string with ``${...}`` parts
    is one token whose extent is all the layout needs (the text inside is kept as it is)."""
    return None


def _span_lines(first: int, last: int, verbatim: list[bool], keep_end: list[bool]) -> None:
    """Lines ``first``..``last`` are covered by one string or comment: the later ones are
    kept as they are, and every one but the last ends inside it."""
    for k in range(first, last):
        keep_end[k] = True
        verbatim[k + 1] = True


def _mark_block_comments(
    source: str, start: int, stop: int, verbatim: list[bool], keep_end: list[bool]
) -> None:
    """Mark the lines covered by the multi-line block comments in ``source[start:stop]`` (a
    gap between two tokens: whitespace and comments only)."""
    i = start
    while i < stop:
        if source.startswith("//", i):
            nl = source.find("\n", i, stop)
            i = stop if nl < 0 else nl
        elif source.startswith("/*", i):
            j, _open = block_comment_end(source, i, stop)
            a, b = source.count("\n", 0, i), source.count("\n", 0, j)
            if b > a:
                _span_lines(a, b, verbatim, keep_end)
            i = j
        else:
            i += 1
