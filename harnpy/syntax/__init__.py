"""Syntax stage: Harn source text to AST (spec language.md sections 1-2).

Public API: :func:`parse` (a file to :class:`ast.Module`), :func:`parse_expression` (one
expression) and :class:`HarnSyntaxError` (raised for every lexing/parsing problem, with
``E1xx`` diagnostics). Invariants: this package knows nothing of the runtime; parsing never
evaluates code; every AST node carries a span. Importing the package stays cheap: Lark and
the grammar load on the first parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnpy.syntax.errors import HarnSyntaxError

if TYPE_CHECKING:
    from harnpy.syntax import ast

__all__ = ["HarnSyntaxError", "parse", "parse_expression"]


def parse(source: str, path: str = "<input>") -> ast.Module:
    """Parse a whole Harn file into an :class:`ast.Module`.

    A file path (one not written ``<...>``, like ``<input>`` or ``<repl>``) and ``<-e>`` (the
    code of ``harnpy run -e``) use the parsed module cache of :mod:`harnpy.syntax.cache`: an
    unchanged file, or the same ``-e`` code again, is not parsed again (so Lark is not even
    imported).

    Raises:
        HarnSyntaxError: on any lexing or parsing error.
    """
    cacheable = not path.startswith("<") or path == "<-e>"
    if cacheable:
        from harnpy.syntax import cache

        hit = cache.load_module(source, path)
        if hit is not None:
            return hit
    from harnpy.syntax.parser import parse as _parse

    module = _parse(source, path)
    if cacheable:
        cache.store_module(source, path, module)
    return module


def parse_expression(source: str, path: str = "<input>") -> ast.Expr:
    """Parse ``source`` as exactly one expression.

    Raises:
        HarnSyntaxError: when ``source`` is not a single well-formed expression.
    """
    from harnpy.syntax.parser import parse_expression as _parse_expression

    result: ast.Expr = _parse_expression(source, path)
    return result
