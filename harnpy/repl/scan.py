"""Scanning partial REPL entries: open brackets, strings and comments, and whether an entry
is complete (Enter submits it) or needs more lines (lifecycle.md 9.2; spec 1.2, 1.7, 1.9)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harnpy.syntax.lexer import block_comment_end, interpolation_end

INDENT = "    "


#: Tokens that cannot end an expression: a line ending with one continues (spec 1.9).
_CONTINUING = tuple(
    "|> || && == != <= >= ?? ** -> ?. += -= *= /= %= + - * / % = < > ! . , : |".split()
)
_CONTINUING_WORDS = frozenset({"in", "to", "not", "else", "catch", "finally", "throw"})

_CLOSERS = {")": "(", "]": "[", "}": "{"}


@dataclass
class Scan:
    """What a quick scan of (possibly partial) Harn text found.

    ``brackets`` is the stack of open ``(``/``[``/``{`` outside strings and comments;
    ``open_string`` is ``'\"\"\"'`` inside an unterminated triple-quoted string and
    ``"${"`` inside an unclosed interpolation of a triple-quoted string (plain and raw
    strings, interpolations included, end at the line end, spec 1.7); ``open_comment`` counts
    unclosed nested
    block comments; ``line_join`` is True when the text ends with a backslash;
    ``mismatch`` when a closer did not match (the parser will report it); ``last`` is the
    last token-ish text of the last line (operators, words, punctuation).
    """

    brackets: list[str] = field(default_factory=list)
    open_string: str | None = None
    open_comment: int = 0
    line_join: bool = False
    mismatch: bool = False
    last: str = ""

    @property
    def depth(self) -> int:
        """Number of open brackets."""
        return len(self.brackets)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?[A-Za-z]*")


def scan(text: str) -> Scan:
    """Scan ``text`` for open brackets, strings and comments (lexical rules of spec 1.2,
    1.7): strings with ``\\`` escapes and ``${...}`` interpolation (ended as the lexer ends
    it, :func:`~harnpy.syntax.lexer.interpolation_end`), raw
    strings, triple-quoted strings, ``//`` and nested ``/* */`` comments."""
    st = Scan()
    i = 0
    n = len(text)
    last = ""
    while i < n:
        c = text[i]
        if c == "\n":
            last = ""
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            i, depth = block_comment_end(text, i, n)
            if depth > 0:
                st.open_comment = depth
                st.last = ""
                return st
            continue
        if text.startswith('r"', i) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            j = i + 2
            while j < n and text[j] not in '"\n':
                j += 1
            i = j + 1 if j < n and text[j] == '"' else j
            last = "str"
            continue
        if text.startswith('"""', i):
            end = _scan_string(text, i + 3, triple=True)
            if end < 0:
                st.open_string = '"""'
                st.last = ""
                return st
            i = end
            last = "str"
            continue
        if c == '"':
            end = _scan_string(text, i + 1, triple=False)
            if end == -2:
                st.open_string = "${"
                st.last = ""
                return st
            i = n if end < 0 else end
            last = "str"
            continue
        if c == "\\" and (i + 1 == n or text[i + 1] == "\n"):
            if i + 1 == n:
                st.line_join = True
            i += 2
            continue
        if c in "([{":
            st.brackets.append(c)
            last = c
            i += 1
            continue
        if c in ")]}":
            if st.brackets and st.brackets[-1] == _CLOSERS[c]:
                st.brackets.pop()
            else:
                st.mismatch = True
            last = c
            i += 1
            continue
        m = _WORD.match(text, i)
        if m:
            last = m.group()
            i = m.end()
            continue
        for op in _CONTINUING:
            if text.startswith(op, i):
                last = op
                i += len(op)
                break
        else:
            last = c
            i += 1
    st.last = last
    return st


def _scan_string(text: str, i: int, triple: bool) -> int:
    """Index after the closing quote of a string whose body starts at ``i``; for a plain
    string ending at a line end (inside an interpolation too), the index of that newline or
    the end of the text (the parser reports it); -1 when the text ends inside the string,
    -2 when it ends inside a ``${...}`` of a triple-quoted string."""
    n = len(text)
    while i < n:
        c = text[i]
        if triple:
            if text.startswith('"""', i):
                return i + 3
        else:
            if c == '"':
                return i + 1
            if c == "\n":
                return i
            if c == "\\":
                i += 2
                continue
        if text.startswith("${", i):
            # the interpolation ends where the lexer ends it (braces counted, strings
            # inside skipped: `"${ "{" }"` is one string)
            close = interpolation_end(text, i + 2, n, multiline=triple)
            if close == -1:
                return text.find("\n", i)  # a plain string's interpolation ends with its line
            if close == -2:
                # a plain string cannot go on to the next line (spec 1.7), so the entry
                # cannot become valid: it is complete and the parser reports it
                return n if not triple else -2
            i = close
        i += 1
    return -1


def _ends_with_doc_comment(text: str) -> bool:
    """Whether ``text`` ends with a doc comment on lines of its own: a ``///`` line or a
    closed ``/** ... */`` block (``////``, ``/***`` and ``/**/`` are not doc comments)."""
    stripped = text.rstrip()
    last = stripped.rsplit("\n", 1)[-1].lstrip()
    if last.startswith("///"):
        return not last.startswith("////")
    if not stripped.endswith("*/"):
        return False
    start = stripped.rfind("/**")
    if start < 0 or stripped.startswith(("/***", "/**/"), start):
        return False
    line_start = stripped.rfind("\n", 0, start) + 1
    return not stripped[line_start:start].strip()


def is_complete(text: str) -> bool:
    """Whether ``text`` is a whole entry (Enter submits it) or needs more lines.

    More lines are needed while a bracket, a triple-quoted string or a block comment is
    open, after a trailing backslash or continuing operator (``+``, ``=``, ``|>``, ``,``,
    ``.``...), after a doc comment (it documents the declaration typed next), or while the
    parser only complains about the end of input (``fn f()``) — an empty last line then
    submits anyway, so the error can be seen.
    """
    if text.lstrip().startswith(":"):
        return True
    st = scan(text)
    if st.open_string or st.open_comment or st.line_join:
        return False
    if st.brackets and not st.mismatch:
        return False
    if st.last in _CONTINUING or st.last in _CONTINUING_WORDS:
        return False
    last_line = text.rsplit("\n", 1)[-1]
    if "\n" in text and not last_line.strip():
        return True
    if _ends_with_doc_comment(text):
        return False  # a doc comment belongs to the declaration typed next (spec 1.2)
    from harnpy.syntax import HarnSyntaxError, parse

    try:
        parse(text, "<repl>")
    except HarnSyntaxError as e:
        # only the end of the *entry* can be fixed by typing more: an interpolation that
        # ends too early (``"${ 1 + }"``) is closed already and stays wrong
        return not any(
            d.code == "E105" and "end of interpolation" not in d.message for d in e.diagnostics
        )
    return True


def indent_for(text_before_cursor: str) -> str:
    """Indentation for a new line at the cursor: four spaces per open bracket."""
    return INDENT * scan(text_before_cursor).depth
