"""Syntax errors: the one exception raised for every lexing or parsing problem.

Codes (``E1xx``, style guide "Diagnostics"):

=====  ==========================================================
E101   unexpected character (`` ` ``, ``#``, a lone ``&`` or ``\\``)
E102   unterminated string (plain, raw or triple-quoted)
E103   unterminated block comment
E104   unexpected token (the generic parse error)
E105   unexpected end of file
E106   bad parameter list (default or rest parameter order)
E107   invalid assignment target
E108   empty or malformed string interpolation
=====  ==========================================================
"""

from __future__ import annotations

from harnpy.diagnostics import Diagnostic, DiagnosticError

E_UNEXPECTED_CHAR = "E101"
E_UNTERMINATED_STRING = "E102"
E_UNTERMINATED_COMMENT = "E103"
E_UNEXPECTED_TOKEN = "E104"
E_UNEXPECTED_EOF = "E105"
E_PARAMS = "E106"
E_ASSIGN_TARGET = "E107"
E_INTERPOLATION = "E108"


class HarnSyntaxError(DiagnosticError):
    """A Harn program is not well formed (lexing or parsing).

    ``diagnostics`` holds one :class:`Diagnostic` per error found, first error first; each has
    an ``E1xx`` code, a message ending in ``at LINE:COL`` and the file's source text.
    """


def syntax_error(
    code: str,
    message: str,
    *,
    path: str,
    source: str,
    line: int,
    col: int,
    end_col: int = 0,
    notes: tuple[str, ...] = (),
) -> HarnSyntaxError:
    """Build a :class:`HarnSyntaxError` with a single diagnostic.

    ``line``/``col`` are 1-based; ``message`` is used verbatim (callers append ``at L:C``).
    """
    diag = Diagnostic(
        code=code,
        message=message,
        path=path,
        line=line,
        col=col,
        source=source,
        notes=notes,
        end_col=end_col,
    )
    return HarnSyntaxError([diag])
