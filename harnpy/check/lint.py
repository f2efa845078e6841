"""``harnpy lint``: likely mistakes in a program that is otherwise valid (warnings, not errors).

========  =====================================================================
``L001``  unused binding: a ``let``/``var``/``const`` inside a function, pipeline, closure
          or block whose name is never read afterwards (names starting with ``_`` are meant
          to be unused and are not reported; top-level bindings may be imported)
``L002``  unreachable code: a statement after ``return``, ``throw``, ``break`` or
          ``continue`` in the same block
``L003``  shadowed name: a binding that hides a parameter or a binding of an enclosing block
          of the same function
``L004``  long-running wait without cleanup: a ``sleep`` of a minute or more (a literal
          duration) that is neither inside ``try { } finally { }`` nor in a function that
          uses ``defer``: an interrupt during it skips nothing, but a later edit that holds
          a resource across it has nowhere to release it
``L005``  discarded result: a named ``fn`` (or ``impl`` method) whose last statement is a
          bare value — an operator, a name, a literal, a field or index — which a closure
          would return but a named ``fn`` drops (it returns ``nil`` unless ``return expr``
          runs, spec 3.10); calls are not reported (they are usually run for their effect)
========  =====================================================================

Like the checker, a rule reports only what is certainly so in the source (false positives
are worse than misses). A finding on a line that holds ``// lint: allow L00N`` is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from harnpy.diagnostics import Diagnostic
from harnpy.syntax import ast as A

#: Code -> one-line description (``docs/reference/errors.md`` lists them too).
RULES = {
    "L001": "unused binding",
    "L002": "unreachable code",
    "L003": "shadowed name",
    "L004": "long-running wait without cleanup",
    "L005": "discarded result of a named fn",
}

LONG_WAIT_MS = 60_000

_FUNCTIONS = (A.FnDecl, A.ClosureExpr, A.PipelineDecl, A.ToolDecl)
_JUMPS = (A.ReturnStmt, A.ThrowStmt, A.BreakStmt, A.ContinueStmt)
#: expressions that only compute a value: as a named fn's last statement, a likely missing
#: ``return`` (calls, ``if``/``match`` and the like may be there for their effects)
_VALUE_ONLY = (
    A.Literal, A.DurationLit, A.InterpString, A.Name, A.ListLit, A.DictLit, A.BinOp,
    A.LogicalOp, A.NilCoalesce, A.UnaryOp, A.Ternary, A.RangeExpr, A.Attribute, A.Index,
    A.Slice, A.StructLit,
)  # fmt: skip
_ALLOW = re.compile(r"//\s*lint:\s*allow\s+([L0-9 ,]+)")


def lint(module: A.Module, path: str, source: str) -> list[Diagnostic]:
    """The lint findings for ``module`` (parsed from ``source`` at ``path``), sorted by
    position; each a ``warning`` Diagnostic with an ``L00N`` code and a hint note."""
    linter = _Linter(path, source)
    for fn in _functions(module):
        linter.function(fn)
        if type(fn) is A.FnDecl and not fn.is_gen:
            linter.discarded_result(fn)
    linter.unreachable(module)
    allowed = _allowed(source)
    found = [d for d in linter.diags if d.code not in allowed.get(d.line, ())]
    found.sort(key=lambda d: (d.line, d.col, d.code))
    return found


def _allowed(source: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for i, line in enumerate(source.split("\n"), 1):
        m = _ALLOW.search(line)
        if m:
            out[i] = set(re.findall(r"L\d{3}", m.group(1)))
    return out


def _functions(node: A.Node) -> Iterator[A.Node]:
    for n in A.walk(node):
        if isinstance(n, _FUNCTIONS):
            yield n


def _local_nodes(node: A.Node) -> Iterator[A.Node]:
    """``node``'s descendants that belong to its own function (nested functions are yielded,
    not entered)."""
    stack = list(A.children(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, _FUNCTIONS):
            stack.extend(A.children(n))


def _pattern_names(p: A.Node) -> list[str]:
    if type(p) is A.NamePattern:
        return [p.name]
    return [n.name for n in A.walk(p) if hasattr(n, "name") and isinstance(n.name, str)]


class _Linter:
    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self.diags: list[Diagnostic] = []

    def report(self, code: str, message: str, span: A.Span, hint: str) -> None:
        end = span.end_col + 1 if span.end_line == span.line and span.end_col >= span.col else 0
        self.diags.append(
            Diagnostic(
                code,
                message,
                self.path,
                span.line,
                span.col,
                severity="warning",
                source=self.source,
                notes=(f"hint: {hint}",),
                end_col=end,
            )
        )

    # ---- per function: L001, L003, L004

    def function(self, fn: A.Node) -> None:
        body = fn.body  # type: ignore[attr-defined]
        reads = self._reads(fn)
        params = {p.name for p in getattr(fn, "params", ())}
        self.block(body, [set(params)], reads)
        uses_defer = any(type(n) is A.DeferStmt for n in _local_nodes(fn))
        if not uses_defer:
            self.waits(body, protected=False)

    def _reads(self, fn: A.Node) -> set[str]:
        """Names read anywhere in ``fn`` (nested functions included: they capture)."""
        targets: set[int] = set()
        for n in A.walk(fn):
            if type(n) is A.AssignStmt and type(n.target) is A.Name and n.op is None:
                targets.add(id(n.target))
        out = set()
        for n in A.walk(fn):
            if type(n) is A.Name and id(n) not in targets:
                out.add(n.id)
            elif type(n) is A.Call:
                out.add(n.func.id)
        return out

    def block(self, block: A.Block, scopes: list[set[str]], reads: set[str]) -> None:
        """Walk ``block``'s statements with ``scopes`` (outer bindings) for L001/L003, going
        into nested blocks of the same function."""
        mine: set[str] = set()
        for st in block.body:
            if type(st) is A.LetStmt:
                for name in _pattern_names(st.pattern):
                    if name.startswith("_"):
                        continue
                    if any(name in s for s in scopes):
                        self.report(
                            "L003",
                            f"`{name}` shadows a binding of an enclosing scope",
                            st.span,
                            f"rename it, or drop `let` to assign the outer `{name}`",
                        )
                    if name not in reads:
                        self.report(
                            "L001",
                            f"`{name}` is bound but never used",
                            st.span,
                            f"remove it, or name it `_{name}` if it is meant to be unused",
                        )
                    mine.add(name)
            self._nested_blocks(st, [*scopes, mine], reads)

    def _nested_blocks(self, node: A.Node, scopes: list[set[str]], reads: set[str]) -> None:
        if isinstance(node, _FUNCTIONS):
            return
        for c in A.children(node):
            if type(c) is A.Block:
                inner = set()
                if type(node) is A.ForStmt and c is node.body:
                    inner = {n for n in _pattern_names(node.pattern) if not n.startswith("_")}
                    for name in inner:
                        if any(name in s for s in scopes):
                            self.report(
                                "L003",
                                f"`{name}` shadows a binding of an enclosing scope",
                                node.span,
                                "rename the loop variable",
                            )
                self.block(c, [*scopes, inner], reads)
            elif not isinstance(c, _FUNCTIONS):
                self._nested_blocks(c, scopes, reads)

    def waits(self, node: A.Node, protected: bool) -> None:
        """L004: long literal sleeps outside ``try/finally`` in ``node``'s own function."""
        for c in A.children(node):
            if isinstance(c, _FUNCTIONS):
                continue
            if type(c) is A.TryExpr:
                self.waits(c.body, protected or c.finally_body is not None)
                for extra in (c.catch_body, c.finally_body):
                    if extra is not None:
                        self.waits(extra, protected)
                continue
            if type(c) is A.Call and c.func.id in ("sleep", "sleep_ms") and not protected:
                ms = _literal_ms(c.args[0]) if c.args else None
                if ms is not None and ms >= LONG_WAIT_MS:
                    self.report(
                        "L004",
                        f"a wait of {_shown(ms)} with no cleanup",
                        c.span,
                        "wrap it in `try { ... } finally { ... }` or use `defer` so an "
                        "interrupt or a failure releases what the program holds",
                    )
            self.waits(c, protected)

    def discarded_result(self, fn: A.FnDecl) -> None:
        """L005: ``fn``'s last statement is a bare value its caller never gets."""
        if not fn.body.body:
            return
        last = fn.body.body[-1]
        if type(last) is A.ExprStmt and isinstance(last.value, _VALUE_ONLY):
            text = self._text(last.span)
            self.report(
                "L005",
                f"`fn {fn.name}` drops the value of its last expression and returns nil",
                last.span,
                f"write `return {text}`" if text else "add `return` in front of it",
            )

    def _text(self, span: A.Span) -> str | None:
        """The source of ``span`` when it is one short line, else None."""
        if span.end_line != span.line:
            return None
        lines = self.source.split("\n")
        if not 0 < span.line <= len(lines):
            return None
        text = lines[span.line - 1][span.col - 1 : span.end_col].strip()
        return text if 0 < len(text) <= 40 else None

    # ---- whole module: L002

    def unreachable(self, module: A.Module) -> None:
        for n in A.walk(module):
            body = n.body if type(n) is A.Block else None
            if body is None and type(n) is A.Module:
                body = n.body
            if not body:
                continue
            for i, st in enumerate(body[:-1]):
                if isinstance(st, _JUMPS):
                    nxt = body[i + 1]
                    word = type(st).__name__.removesuffix("Stmt").lower()
                    self.report(
                        "L002",
                        f"unreachable code after `{word}`",
                        nxt.span,
                        "remove it, or move it before the jump",
                    )
                    break


def _literal_ms(e: A.Node) -> float | None:
    if type(e) is A.DurationLit:
        return float(e.ms)
    if type(e) is A.Literal and type(e.value) in (int, float):
        return float(e.value)
    return None


def _shown(ms: float) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{int(ms // size)}{unit}"
    return f"{ms:g}ms"
