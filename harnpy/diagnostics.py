"""The one Diagnostic shape shared by every stage, and its rendering.

Codes by stage (style guide): ``E1xx`` syntax, ``E2xx`` static checks, ``E3xx`` runtime,
``E4xx`` lifecycle. A rendered diagnostic reads::

    path/to/file.harn:3:11: error[E101]: Unterminated string at 3:11
      3 |   let x = "oops
        |           ^

Messages are lower-case where we choose the wording; where the spec fixes a reference
message (``Unterminated string at L:C``) that text is used verbatim so conformance
``.error`` files match.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One error or warning.

    ``line``/``col`` are 1-based (0 when unknown); ``source`` is the full text of the file
    (used to show the offending line with a caret); ``notes`` are extra lines (hints).
    """

    code: str
    message: str
    path: str = "<input>"
    line: int = 0
    col: int = 0
    severity: str = "error"
    source: str | None = field(default=None, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    end_col: int = 0

    def render(self) -> str:
        """The human-readable text: ``file:line:col: severity[code]: message`` + caret."""
        loc = self.path
        if self.line:
            loc += f":{self.line}:{self.col}"
        out = [f"{loc}: {self.severity}[{self.code}]: {self.message}"]
        if self.source is not None and self.line:
            lines = self.source.split("\n")
            if 0 < self.line <= len(lines):
                text = lines[self.line - 1].rstrip("\r").lstrip("\ufeff").expandtabs(1)
                gutter = str(self.line)
                pad = " " * len(gutter)
                start = max(0, self.col - 1)
                stop = self.end_col - 1 if self.end_col > self.col else start + 1
                # Columns count characters; the caret line counts terminal cells, so wide
                # characters (CJK, emoji) before or under the span keep it aligned.
                lead = _cells(text[:start]) + max(0, start - len(text))
                width = max(1, _cells(text[start:stop]))
                out.append(f"  {gutter} | {text}")
                out.append(f"  {pad} | {' ' * lead}{'^' * width}")
        for note in self.notes:
            out.append(f"  = {note}")
        return "\n".join(out)


def _cells(text: str) -> int:
    """Terminal cells ``text`` takes (``wcwidth``: 2 for wide characters and most emoji, 0
    for combining marks); a control character counts as none."""
    from wcwidth import wcswidth, wcwidth

    n = wcswidth(text)
    return n if n >= 0 else sum(max(wcwidth(ch), 0) for ch in text)


class DiagnosticError(Exception):
    """An error that carries one or more :class:`Diagnostic` (syntax and static checks)."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics[0].message if diagnostics else "error")
        self.diagnostics = diagnostics

    def render(self) -> str:
        """Every diagnostic rendered (:meth:`Diagnostic.render`), joined by newlines."""
        return "\n".join(d.render() for d in self.diagnostics)


#: The message for Python's recursion limit reached outside the evaluator's run loop (the
#: parser, the compiler or a module loader recursing over a pathologically nested program).
RECURSION_LIMIT_MESSAGE = "error[E399]: internal error: Python recursion limit reached"


def internal_error_text(e: BaseException) -> str:
    """What a shell prints for a harnpy bug (an unexpected Python exception): ``error[E999]``
    with the exception's type and message, and a hint at ``HARNPY_DEBUG``; no trailing
    newline."""
    return (
        f"error[E999]: internal error in harnpy: {type(e).__name__}: {e}\n"
        "  (this is a bug in harnpy; set HARNPY_DEBUG=1 for the Python traceback)"
    )


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions of code points) between two names."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


#: Names other languages use for Harn's literals: an undefined one is always answered with
#: the Harn word (``None`` -> ``nil``), whatever the other candidates.
HABIT_WORDS = {"None": "nil", "null": "nil", "True": "true", "False": "false"}


def did_you_mean(
    name: str, candidates: Iterable[str], preferred: Collection[str] = ()
) -> str | None:
    """The "did you mean" hint for an unknown ``name`` (spec 3.10), or None.

    A candidate qualifies when its Levenshtein distance to ``name`` is at most 1 for names of
    length <= 2, 2 for lengths 3-5 and 3 otherwise. The closest one wins; ties go to the
    longest common prefix (``printl`` suggests ``println``), then to the program's own names
    (``preferred``: variables and functions in scope, over builtins), then alphabetical order.
    Names starting with ``__`` (harnpy's internal builtins) are only suggested for such names,
    and ``_`` (never bound, spec 3.10) gets no hint; a name of :data:`HABIT_WORDS` gets its
    Harn spelling. This is the one implementation: the static
    checker, the runtime and the REPL use it.
    """
    if name == "_":
        return None
    habit = HABIT_WORDS.get(name)
    if habit is not None:
        return habit
    limit = 1 if len(name) <= 2 else 2 if len(name) <= 5 else 3
    internal = name.startswith("__")
    best: tuple[int, int, bool, str] | None = None
    for c in candidates:
        if c == name or abs(len(c) - len(name)) > limit:
            continue
        if not internal and c.startswith("__"):
            continue
        d = levenshtein(name, c)
        if d > limit:
            continue
        prefix = 0
        for x, y in zip(name, c):
            if x != y:
                break
            prefix += 1
        key = (d, -prefix, c not in preferred, c)
        if best is None or key < best:
            best = key
    return best[3] if best else None
