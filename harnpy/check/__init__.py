"""Check stage: static checks over a parsed Harn file (spec language.md 3.10, 3.11, 3.19).

Public API:

* :func:`check_file` — what ``harnpy check FILE`` runs: parse (syntax errors become the
  result) and run every static check.
* :func:`static_errors` — the subset ``harnpy run`` enforces before running a program (the
  reference type-checks first; a static error aborts with only its message). It never raises.

Invariants: this package imports only :mod:`harnpy.syntax` and :mod:`harnpy.diagnostics`
(never :mod:`harnpy.runtime`); it never evaluates code; a check reports an error only when the
program is certainly wrong (false positives are worse than misses); every error found is
reported, with an ``E2xx`` code (table in :mod:`harnpy.check._checker`), the path, line,
column and the source text for the caret.
"""

from __future__ import annotations

from collections.abc import Collection

from harnpy.diagnostics import Diagnostic
from harnpy.syntax import HarnSyntaxError, parse
from harnpy.syntax import ast as A

__all__ = ["check_file", "static_errors"]


def check_file(
    path: str,
    source: str,
    builtin_names: Collection[str] | None = None,
    method_names: dict[str, frozenset[str]] | None = None,
) -> list[Diagnostic]:
    """Parse ``source`` and run every static check.

    Args:
        path: the file's path (shown in diagnostics; relative imports resolve from it).
        source: the file's text.
        builtin_names: names the runtime provides without a declaration (the builtin
            registry plus global constants such as ``pi``; a dotted name such as
            ``stream.map`` also defines its namespace ``stream``). When None, the
            undefined-name checks (``Undefined variable``, ``call target ... is not
            defined``) are skipped.
        method_names: receiver kind (``"string"``, ``"list"``, ``"set"``) -> the builtin
            methods it has, for the ``W201`` warning (a call that is certainly nil); None
            skips it.

    Returns:
        The syntax errors (``E1xx``) when the file does not parse, else the static errors
        (``E2xx``), sorted by position; empty when the file is fine.
    """
    try:
        tree = parse(source, path)
    except HarnSyntaxError as exc:
        return list(exc.diagnostics)
    from harnpy.check._checker import Checker

    return Checker(
        tree, path, source, _names(builtin_names), check_only=True, method_names=method_names
    ).run()


def _names(builtin_names: Collection[str] | None) -> frozenset[str] | None:
    """The builtin names plus the namespaces of dotted ones (``stream`` for ``stream.map``)."""
    if builtin_names is None:
        return None
    names = set(builtin_names)
    names.update(n.split(".", 1)[0] for n in builtin_names if "." in n)
    return frozenset(names)


def static_errors(
    module_ast: A.Module,
    path: str,
    source: str,
    builtin_names: Collection[str] | None = None,
) -> list[Diagnostic]:
    """The static errors ``harnpy run`` must report before running ``module_ast``.

    Same checks as :func:`check_file` except those the runtime reports itself when the code
    runs (``Undefined variable``, ``try*`` outside a function). One pre-pass and one walk over
    the AST; imported files are read only when a call target is otherwise unresolved.

    Args:
        module_ast: the parsed main file.
        path / source: the file's path and text (for diagnostics and relative imports).
        builtin_names: as for :func:`check_file` (None skips the call-target check).

    Returns:
        ``E2xx`` diagnostics sorted by position (empty when the program may run). Never
        raises: an internal failure of a check yields no diagnostics rather than blocking
        the program. A clean verdict is cached on disk (:mod:`harnpy.check.verdicts`), so a
        warm run of an unchanged file does not load the checker.
    """
    names = _names(builtin_names)
    try:
        from harnpy.check import verdicts
        from harnpy.syntax.cache import enabled

        key = verdicts.verdict_key(path, source, names) if enabled() else None
        if key is not None and verdicts.is_clean(path, key):
            return []
    except (OSError, ValueError):
        key = None
    try:
        from harnpy.check._checker import Checker

        checker = Checker(module_ast, path, source, names, check_only=False)
        diags = checker.run()
    except Exception:  # noqa: BLE001 - a checker bug must never stop a program from running
        return []
    if key is not None and not diags and checker.complete and not checker.read_imports:
        verdicts.record_clean(path, key)
    return diags
