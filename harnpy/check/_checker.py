"""The static checks: one pre-pass collecting file-wide facts, one scoped walk reporting errors.

Spec language.md 3.10 (bindings), 3.11 (calls) and 3.19 (the checks the conformance suite
expects). The walk keeps lexical scopes and a small local type inference (literals, annotated
parameters and lets, declared return types, list/dict literals, calls of known functions) and
reports an error only when it is certain the program is wrong; any doubt means silence.

Codes (``E2xx``; E201/E202/E206 are the runtime compiler's own):

=====  ==============================================================================
E203   ``Cannot redeclare immutable variable 'x' in the same scope``
E204   ``Cannot assign to immutable binding: x``
E205   ``try* requires an enclosing function`` (check only)
E210   ``Undefined variable: x`` (check only)
E211   ``call target `f` is not defined or imported``
E212   ``'x' declared as T, but assigned U``
E213   ``Argument N ('p'): expected T, got U``
E214   ``return type doesn't match: expected T, got U``
E215   operands of known types that an operator rejects (``can't add bool and bool``)
E216   ``Non-exhaustive match on enum E: missing variants ...`` / tagged shape unions
E217   ``yield`` inside ``gen fn`` (``use `emit` inside `gen fn```)
E218   ``type parameter 'T' was inferred as both int and string``
E219   ``type 'S' does not satisfy interface 'I': ...``
E220   variance markers violated (``declared 'in'`` / ``declared 'out'``)
E221   ``cannot destructure int with [...] pattern`` (literal spreads and destructuring)
E222   ``cannot access property `name` on int`` (a plain ``.name`` on a number or bool)
E223   ``cannot call tool `t` directly`` (a ``tool`` declaration binds a one-tool registry)
W201   a method call that certainly returns ``nil``: no such method on a string, list or
       set, or any method on a number, bool or ``nil`` (spec 3.7: unknown methods give
       ``nil`` silently); a warning of ``harnpy check`` only, with a did-you-mean
=====  ==============================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from harnpy.check import _decls as D
from harnpy.check import _types as T
from harnpy.check._imports import ImportResolver
from harnpy.diagnostics import Diagnostic, did_you_mean
from harnpy.syntax import ast as A

E_REDECLARE = "E203"
E_IMMUTABLE = "E204"
E_TRY_STAR = "E205"
E_UNDEFINED = "E210"
E_CALL_TARGET = "E211"
E_DECLARED = "E212"
E_ARGUMENT = "E213"
E_RETURN = "E214"
E_OPERANDS = "E215"
E_MATCH = "E216"
E_YIELD = "E217"
E_GENERIC = "E218"
E_INTERFACE = "E219"
E_VARIANCE = "E220"
E_DESTRUCTURE = "E221"
E_PROPERTY = "E222"
E_TOOL_CALL = "E223"

#: Codes ``harnpy check`` reports but ``harnpy run`` leaves to the runtime (which reports
#: the same message when the code actually executes: ``Cannot call`` for a tool registry).
CHECK_ONLY_CODES = frozenset({E_UNDEFINED, E_TRY_STAR, E_TOOL_CALL})
W_NIL_METHOD = "W201"
#: receiver kinds with no methods at all (spec 3.7)
_NO_METHODS = frozenset({"int", "float", "bool", "nil"})
_LEN_NAMES = frozenset({"len", "length", "size"})

#: The type of the name a ``tool name(params) { ... }`` declaration binds: a one-tool
#: registry ``{_type: "tool_registry", tools: [entry]}`` (a dict, not a function).
TOOL_REGISTRY = T.ShapeT(
    (
        T.Field("_type", T.STRING),
        T.Field("tools", T.ListT(T.DictT(T.STRING, None))),
    )
)

_ARITH = frozenset({"+", "-", "*", "/", "%", "**"})
_OPERAND_KINDS = frozenset({"int", "float", "string", "bool", "nil", "list", "dict"})
_NUMERIC = frozenset({"int", "float"})
_ITER_LAZY = frozenset(
    {
        "map",
        "filter",
        "flat_map",
        "take",
        "skip",
        "take_while",
        "skip_while",
        "zip",
        "enumerate",
        "chain",
        "chunks",
        "windows",
    }
)
_ITERABLE_KINDS = frozenset({"list", "dict", "string", "set", "iter", "range"})
#: Builtins whose result type is certain (only used when the name is not shadowed).
_BUILTIN_RESULTS: dict[str, T.Ty] = {
    "to_string": T.STRING,
    "type_of": T.STRING,
    "len": T.INT,
    "iter": T.NamedT("iter", "builtin"),
}
_COND_FIELDS: dict[type, tuple[str, ...]] = {
    A.IfExpr: ("cond",),
    A.WhileStmt: ("cond",),
    A.GuardStmt: ("cond",),
    A.Ternary: ("cond",),
    A.RequireStmt: ("cond",),
    A.LogicalOp: ("left", "right"),
    A.MatchArm: ("guard",),
}
_IN_COND = 1
_IN_MATCH = 2


class Binding:
    """A name in a lexical scope: ``kind`` (let/var/param/fn/struct/enum/loop/pattern),
    its static type (None when unknown) and, for functions, the declaration."""

    __slots__ = ("kind", "type", "decl")

    def __init__(self, kind: str, type: T.Ty | None = None, decl: Any = None) -> None:
        self.kind = kind
        self.type = type
        self.decl = decl


class FnCtx:
    """The function (or module / pipeline / closure) whose body is being walked."""

    __slots__ = ("kind", "ret", "is_gen", "saw_yield", "pending_returns", "generics")

    def __init__(
        self,
        kind: str,
        ret: T.Ty | None = None,
        is_gen: bool = False,
        generics: frozenset[str] = frozenset(),
    ) -> None:
        self.kind = kind
        self.ret = ret
        self.is_gen = is_gen
        self.saw_yield = False
        self.pending_returns: list[tuple[str, str, A.Span]] = []
        self.generics = generics


def unwrap(s: Any) -> Any:
    """A declaration without its ``@attribute`` wrappers."""
    while type(s) is A.AttributedDecl:
        s = s.decl
    return s


def pattern_binds(p: Any, out: list[str]) -> None:
    """Names a match pattern may bind (an over-approximation: every bare identifier in a
    binding position, recursively)."""
    t = type(p)
    if t is A.Name:
        if p.id != "_":
            out.append(p.id)
    elif t is A.MethodCall or t is A.Call:
        for a in p.args:
            pattern_binds(a, out)
    elif t is A.DictLit:
        for en in p.entries:
            pattern_binds(en.value, out)
    elif t is A.ListLit:
        for it in p.items:
            pattern_binds(it, out)
    elif t is A.Spread:
        pattern_binds(p.value, out)


class Checker:
    """One run of the static checks over one parsed module.

    Nodes are visited by methods named after their AST class: ``s_<NodeType>(node)``
    checks statement node ``NodeType`` (``A.LetStmt`` -> ``s_LetStmt``) and returns None;
    ``e_<NodeType>(node)`` visits expression node ``NodeType`` and returns its static type
    (a :class:`~harnpy.check._types.Ty`), or None when unknown. :meth:`stmt` and
    :meth:`expr` dispatch through the ``_STMT``/``_EXPR`` tables built from these names; a
    node with no ``e_`` method just has its children visited. Problems are recorded with
    :meth:`error` (never raised) and returned by :meth:`run`.

    Args:
        module: the parsed file.
        path / source: for diagnostics (``source`` also feeds :mod:`harnpy.check._decls`).
        builtin_names: names the runtime provides (builtins and global constants); None
            disables the undefined-name checks (E210, E211).
        check_only: also run the checks listed in :data:`CHECK_ONLY_CODES`.
    """

    def __init__(
        self,
        module: A.Module,
        path: str,
        source: str,
        builtin_names: set[str] | frozenset[str] | None,
        check_only: bool,
        method_names: dict[str, frozenset[str]] | None = None,
    ) -> None:
        self.module = module
        #: receiver kind -> its builtin method names (for W201); None: not checked
        self.method_names = method_names
        self.path = path
        self.source = source
        self.builtins = builtin_names
        self.check_only = check_only
        self.diags: list[Diagnostic] = []
        self.scopes: list[dict[str, Binding]] = []
        self.scope_fn: list[int] = []
        self.lets: list[set[str]] = []
        self.fns: list[FnCtx] = []
        self.pipe_depth = 0
        # file-wide facts (pre-pass)
        self.declared: set[str] = set()
        self.enums: dict[str, list[str]] = {"Result": ["Ok", "Err"]}
        self.structs: dict[str, A.StructDecl] = {}
        self.aliases: dict[str, A.TypeDecl] = {}
        self.interfaces: dict[str, A.InterfaceDecl] = {}
        self.impls: dict[str, dict[str, A.FnDecl]] = {}
        self.cond_names: set[str] = set()
        self.match_names: set[str] = set()
        self.imports: list[A.ImportDecl] = []
        #: Whether the walk ran to its end (not cut short by a RecursionError) and whether it
        #: read imported files (its verdict then depends on them): see check/verdicts.py.
        self.complete = False
        self.read_imports = False
        self.consts: set[int] = set()
        self.pending_names: list[tuple[str, str, str, A.Span]] = []
        self._sig_cache: dict[int, tuple[list[T.Ty | None], T.Ty | None]] = {}
        self._where_cache: dict[int, dict[str, str]] = {}
        self._iface_cache: dict[str, D.InterfaceInfo | None] = {}
        self._conform_cache: dict[tuple[str, str], list[str]] = {}
        self.tenv = T.TypeEnv({}, set(), set(), set())

    # ------------------------------------------------------------ reporting

    def error(self, code: str, message: str, span: A.Span) -> None:
        """Record one diagnostic at ``span``."""
        if code in CHECK_ONLY_CODES and not self.check_only:
            return
        end = span.end_col + 1 if span.end_line == span.line and span.end_col >= span.col else 0
        self.diags.append(
            Diagnostic(
                code, message, self.path, span.line, span.col, source=self.source, end_col=end
            )
        )

    # ------------------------------------------------------------ entry

    def run(self) -> list[Diagnostic]:
        """Run every check; diagnostics sorted by position. A program nested too deeply for
        the recursive walk yields the diagnostics found before that point."""
        try:
            self._run()
        except RecursionError:
            pass
        self.diags.sort(key=lambda d: (d.line, d.col))
        return self.diags

    def _run(self) -> None:
        self.prepass()
        self.tenv = T.TypeEnv(
            self.aliases, set(self.structs), set(self.enums) - {"Result"}, set(self.interfaces)
        )
        self.fns.append(FnCtx("module"))
        self.push_scope()
        self.predeclare(self.module.body)
        for s in self.module.body:
            self.stmt(s)
        self.pop_scope()
        self.finish_names()
        self.complete = True

    # ------------------------------------------------------------ pre-pass

    def prepass(self) -> None:
        """Collect declarations, enum/struct/alias/interface/impl tables, imports and the
        names that appear in conditions (candidates for flow narrowing)."""
        declared = self.declared
        alias_count: dict[str, int] = {}
        ambiguous: set[str] = set()
        for s in self.module.body:
            if type(s) is A.ImportDecl:
                self.imports.append(s)
        stack: list[tuple[Any, int]] = [(self.module, 0)]
        while stack:
            n, flag = stack.pop()
            t = type(n)
            if t is A.Name:
                if flag & _IN_COND:
                    self.cond_names.add(n.id)
                if flag & _IN_MATCH:
                    self.match_names.add(n.id)
                continue
            if t is A.LetStmt:
                if not n.mutable and self.source.startswith("const", n.span.start):
                    self.consts.add(n.span.start)
            elif t is A.NamePattern:
                declared.add(n.name)
            elif t is A.DictPatternField:
                declared.add(n.key if n.rest else (n.alias or n.key))
            elif t is A.ListPatternElem:
                declared.add(n.name)
            elif t is A.PairPattern:
                declared.add(n.first)
                declared.add(n.second)
            elif t is A.Param:
                declared.add(n.name)
            elif t is A.FnDecl or t is A.ToolDecl or t is A.PipelineDecl or t is A.SkillDecl:
                declared.add(n.name)
            elif t is A.StructDecl:
                declared.add(n.name)
                self.structs.setdefault(n.name, n)
            elif t is A.EnumDecl:
                declared.add(n.name)
                variants = [v.name for v in n.variants]
                if self.enums.setdefault(n.name, variants) != variants:
                    ambiguous.add(n.name)
            elif t is A.TypeDecl:
                declared.add(n.name)
                alias_count[n.name] = alias_count.get(n.name, 0) + 1
                self.aliases.setdefault(n.name, n)
            elif t is A.InterfaceDecl:
                declared.add(n.name)
                if self.interfaces.setdefault(n.name, n) is not n:
                    ambiguous.add(n.name)
            elif t is A.ImplDecl:
                table = self.impls.setdefault(n.type_name, {})
                for m in n.methods:
                    table.setdefault(m.name, m)
            elif t is A.TryExpr:
                if n.catch_name:
                    declared.add(n.catch_name)
            elif t is A.ParallelExpr:
                if n.param:
                    declared.add(n.param)
            elif t is A.SelectCase:
                if n.name:
                    declared.add(n.name)
            elif t is A.MatchArm:
                binds: list[str] = []
                for p in n.patterns:
                    pattern_binds(p, binds)
                declared.update(binds)
            elif t is A.ImportDecl:
                if n.names:
                    declared.update(n.names)
            cond_fields = _COND_FIELDS.get(t)
            for c in A.children(n):
                cf = flag
                if cond_fields is not None:
                    for fname in cond_fields:
                        if getattr(n, fname) is c:
                            cf |= _IN_COND
                elif t is A.MatchExpr and c is n.value:
                    cf |= _IN_MATCH
                stack.append((c, cf))
        for name, count in alias_count.items():
            if count > 1:
                del self.aliases[name]
        # names declared twice with different meanings are left unresolved (opaque)
        for name in ambiguous:
            self.enums.pop(name, None)
            self.interfaces.pop(name, None)

    # ------------------------------------------------------------ scopes

    def push_scope(self, binds: dict[str, Binding] | None = None) -> None:
        """Open a lexical scope pre-filled with a copy of ``binds``, tied to the current function
        (for E203/E204)."""
        self.scopes.append(dict(binds) if binds else {})
        self.scope_fn.append(len(self.fns))
        self.lets.append(set())

    def pop_scope(self) -> None:
        """Close the innermost lexical scope."""
        self.scopes.pop()
        self.scope_fn.pop()
        self.lets.pop()

    def lookup(self, name: str) -> tuple[Binding, int] | None:
        """The innermost binding of ``name`` and the index of its scope."""
        for i in range(len(self.scopes) - 1, -1, -1):
            b = self.scopes[i].get(name)
            if b is not None:
                return b, i
        return None

    def predeclare(self, stmts: Iterable[Any]) -> None:
        """Bind the block's functions, structs and enums up front (function names are
        late-bound, spec 3.10)."""
        scope = self.scopes[-1]
        for s in stmts:
            u = unwrap(s)
            t = type(u)
            if t is A.FnDecl:
                scope[u.name] = Binding("fn", T.Prim("closure"), u)
            elif t is A.ToolDecl:
                scope[u.name] = Binding("tool", TOOL_REGISTRY, u)
            elif t is A.StructDecl:
                scope[u.name] = Binding("struct", None, u)
            elif t is A.EnumDecl:
                scope[u.name] = Binding("enum", None, u)

    def generics(self) -> frozenset[str]:
        """Type parameter names in scope (of the enclosing functions)."""
        return self.fns[-1].generics

    def convert(self, node: A.TypeExpr | None) -> T.Ty | None:
        """The checker type of annotation ``node`` with the generics in scope as type variables;
        None when absent or not understood."""
        return self.tenv.convert(node, self.generics())

    # ------------------------------------------------------------ statements

    def stmt(self, s: Any) -> None:
        """Check one statement with its ``s_<NodeType>`` method; any other node is visited as an
        expression."""
        m = _STMT.get(type(s))
        if m is not None:
            m(self, s)
        else:
            self.expr(s)

    def block(self, b: A.Block, binds: dict[str, Binding] | None = None) -> None:
        """Check a block in a new scope: ``binds`` pre-bound, then its ``fn``/struct/enum
        declarations predeclared (spec 3.10)."""
        self.push_scope(binds)
        self.predeclare(b.body)
        for s in b.body:
            self.stmt(s)
        self.pop_scope()

    def s_LetStmt(self, s: A.LetStmt) -> None:
        vt = self.expr(s.value)
        fresh = type(s.value) not in (A.Name, A.Attribute, A.Index)
        declared = self.convert(s.type) if s.type is not None else None
        pat = s.pattern
        if declared is not None and type(pat) is A.NamePattern:
            if not T.assignable(vt, declared, fresh):
                self.error(
                    E_DECLARED,
                    f"'{pat.name}' declared as {T.fmt(declared)}, but assigned {T.fmt(vt)}",
                    s.span,
                )
        k = T.kind(vt)
        if type(pat) is A.ListPattern and k in ("string", "int", "float", "bool"):
            self.error(E_DESTRUCTURE, f"cannot destructure {k} with [...] pattern", s.span)
        elif type(pat) is A.DictPattern and k in ("int", "float", "bool"):
            self.error(E_DESTRUCTURE, f"cannot destructure {k} with {{...}} pattern", s.span)
        # A file that uses `const` follows the later language revision where `let` is
        # reassignable and only `const` is immutable.
        mutable = s.mutable or (bool(self.consts) and s.span.start not in self.consts)
        kind = "var" if mutable else "let"
        lets = self.lets[-1]
        scope = self.scopes[-1]
        for name in A.pattern_names(pat):
            if not mutable and name in lets:
                self.error(
                    E_REDECLARE,
                    f"Cannot redeclare immutable variable '{name}' in the same scope",
                    s.span,
                )
            if mutable:
                lets.discard(name)
            else:
                lets.add(name)
            typ: T.Ty | None = None
            if type(pat) is A.NamePattern:
                typ = declared if declared is not None else (None if mutable else vt)
                if mutable and typ is T.UNKNOWN:
                    typ = None  # assignments may narrow a `var u: unknown`
            scope[name] = Binding(kind, typ)

    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        self.expr(s.value)
        root: Any = s.target
        while isinstance(root, (A.Attribute, A.Index)):
            if isinstance(root, A.Index):
                self.expr(root.index)
            root = root.obj
        if not isinstance(root, A.Name):
            self.expr(root)
            return
        name = root.id
        found = self.lookup(name)
        if found is None:
            self.undefined(name, root.span, "assign" if root is s.target else "read")
            return
        b, idx = found
        if b.kind in ("let", "fn", "tool", "struct", "enum") and (
            idx == 0 or self.scope_fn[idx] == len(self.fns)
        ):
            self.error(E_IMMUTABLE, f"Cannot assign to immutable binding: {name}", s.span)

    def s_FnDecl(self, d: A.FnDecl) -> None:
        self.function(d, d.params, d.body, d.ret_type, d.generics, d.is_gen, "fn")

    def s_ToolDecl(self, d: A.ToolDecl) -> None:
        self.function(d, d.params, d.body, d.ret_type, (), False, "fn")

    def function(
        self,
        decl: Any,
        params: tuple[A.Param, ...],
        body: A.Block,
        ret_node: A.TypeExpr | None,
        generics: tuple[str, ...],
        is_gen: bool,
        kind: str,
        ret: T.Ty | None = None,
    ) -> None:
        """Walk a function-like body with its parameters bound."""
        gset = self.generics() | frozenset(generics)
        if ret_node is not None:
            ret = self.tenv.convert(ret_node, gset)
        ctx = FnCtx(kind, None if is_gen else ret, is_gen, gset)
        self.fns.append(ctx)
        self.push_scope()
        scope = self.scopes[-1]
        for p in params:
            if p.default is not None:
                self.expr(p.default)
            ptype = self.tenv.convert(p.type, gset) if p.type is not None else None
            if p.rest:
                ptype = T.ListT(ptype) if ptype is not None else T.ListT(None)
            scope[p.name] = Binding("param", ptype)
        self.block(body)
        self.pop_scope()
        self.fns.pop()
        if not ctx.saw_yield:
            for code, msg, span in ctx.pending_returns:
                self.error(code, msg, span)

    def s_PipelineDecl(self, d: A.PipelineDecl) -> None:
        ret_node = D.pipeline_return(d, self.source) if "->" in self._header(d, d.body) else None
        self.function(d, d.params, d.body, ret_node, (), False, "pipeline")

    def _header(self, decl: A.Node, body: A.Node) -> str:
        return self.source[decl.span.start : body.span.start]

    def s_ImplDecl(self, d: A.ImplDecl) -> None:
        for m in d.methods:
            self.s_FnDecl(m)

    def s_StructDecl(self, d: A.StructDecl) -> None:
        return None

    def s_EnumDecl(self, d: A.EnumDecl) -> None:
        return None

    def s_TypeDecl(self, d: A.TypeDecl) -> None:
        if not d.generics:
            return
        var = D.generic_variance(d, "type", self.source)
        if not var or not any(var.values()):
            return
        occ: list[tuple[str, int]] = []
        _occurrences(d.type, 1, set(var), occ)
        self.variance_errors(var, occ, d.span, "")

    def s_InterfaceDecl(self, d: A.InterfaceDecl) -> None:
        var = D.generic_variance(d, "interface", self.source)
        if not var or not any(var.values()):
            return
        info = self.iface_info(d.name, d)
        if info is None:
            return
        for mname, m in info.methods.items():
            occ: list[tuple[str, int]] = []
            for p in m.params:
                if p.type is not None:
                    _occurrences(p.type, -1, set(var), occ)
            if m.ret_type is not None:
                _occurrences(m.ret_type, 1, set(var), occ)
            self.variance_errors(var, occ, d.span, f" of method '{mname}'")

    def variance_errors(
        self, var: dict[str, str], occ: list[tuple[str, int]], span: A.Span, where: str
    ) -> None:
        """Report E220 for type parameters used against their variance marker. ``var`` maps each
        parameter to ``"in"``/``"out"``/``""``; ``occ`` lists ``(name, polarity)`` (+1 covariant,
        -1 contravariant, see :func:`_occurrences`); ``where`` is appended to the message. At
        most one error per name."""
        seen: set[str] = set()
        for name, pol in occ:
            marker = var.get(name, "")
            if name in seen:
                continue
            if marker == "in" and pol > 0:
                seen.add(name)
                self.error(
                    E_VARIANCE,
                    f"type parameter '{name}' is declared 'in' (contravariant) but appears "
                    f"in a covariant position{where}",
                    span,
                )
            elif marker == "out" and pol < 0:
                seen.add(name)
                self.error(
                    E_VARIANCE,
                    f"type parameter '{name}' is declared 'out' (covariant) but appears "
                    f"in a contravariant position{where}",
                    span,
                )

    def s_ForStmt(self, s: A.ForStmt) -> None:
        self.expr(s.iterable)
        self.block(s.body, {n: Binding("loop") for n in A.pattern_names(s.pattern)})

    def s_WhileStmt(self, s: A.WhileStmt) -> None:
        self.expr(s.cond)
        self.block(s.body)

    def s_GuardStmt(self, s: A.GuardStmt) -> None:
        self.expr(s.cond)
        self.block(s.otherwise)

    def s_RequireStmt(self, s: A.RequireStmt) -> None:
        self.expr(s.cond)
        if s.message is not None:
            self.expr(s.message)

    def s_ThrowStmt(self, s: A.ThrowStmt) -> None:
        self.expr(s.value)

    def s_ReturnStmt(self, s: A.ReturnStmt) -> None:
        if s.value is None:
            return
        t = self.expr(s.value)
        ctx = self.fns[-1]
        if ctx.ret is None:
            return
        fresh = type(s.value) not in (A.Name, A.Attribute, A.Index)
        if not T.assignable(t, ctx.ret, fresh):
            ctx.pending_returns.append(
                (
                    E_RETURN,
                    f"return type doesn't match: expected {T.fmt(ctx.ret)}, got {T.fmt(t)}",
                    s.span,
                )
            )

    def s_BreakStmt(self, s: A.BreakStmt) -> None:
        return None

    def s_ContinueStmt(self, s: A.ContinueStmt) -> None:
        return None

    def s_OverrideDecl(self, s: A.OverrideDecl) -> None:
        return None

    def s_ImportDecl(self, s: A.ImportDecl) -> None:
        return None

    def s_DeferStmt(self, s: A.DeferStmt) -> None:
        self.block(s.body)

    def s_MutexStmt(self, s: A.MutexStmt) -> None:
        self.block(s.body)

    def s_YieldStmt(self, s: A.YieldStmt) -> None:
        ctx = self.fns[-1]
        ctx.saw_yield = True
        if ctx.is_gen:
            self.error(
                E_YIELD, "`yield` is not allowed in a `gen fn`: use `emit` inside `gen fn`", s.span
            )
        if s.value is not None:
            self.expr(s.value)

    def s_EmitStmt(self, s: A.EmitStmt) -> None:
        self.expr(s.value)

    def s_SelectStmt(self, s: A.SelectStmt) -> None:
        for c in s.cases:
            if c.value is not None:
                self.expr(c.value)
            self.block(c.body, {c.name: Binding("loop")} if c.name else None)

    def s_ExprStmt(self, s: A.ExprStmt) -> None:
        self.expr(s.value)

    def s_AttributedDecl(self, s: A.AttributedDecl) -> None:
        self.stmt(s.decl)

    def s_SkillDecl(self, s: A.SkillDecl) -> None:
        for _name, value in s.fields:
            self.expr(value)

    # ------------------------------------------------------------ expressions

    def expr(self, e: Any) -> T.Ty | None:
        """Visit ``e`` (reporting what it contains) and return its static type, if known."""
        m = _EXPR.get(type(e))
        if m is None:
            for c in A.children(e):
                self.expr(c)
            return None
        return m(self, e)

    def e_Literal(self, e: A.Literal) -> T.Ty | None:
        base = T.lit_base(e.value)
        if base == "?":
            return None
        return T.Prim(base, e.value)

    def e_DurationLit(self, e: A.DurationLit) -> T.Ty | None:
        return T.Prim("duration")

    def e_InterpString(self, e: A.InterpString) -> T.Ty | None:
        for p in e.parts:
            if not isinstance(p, str):
                self.expr(p)
        return T.STRING

    def e_Name(self, e: A.Name) -> T.Ty | None:
        name = e.id
        found = self.lookup(name)
        if found is None:
            if name == "_" and self.pipe_depth > 0:
                return None
            self.undefined(name, e.span)
            return None
        b = found[0]
        t = b.type
        if t is None:
            return None
        if name in self.cond_names or name in self.match_names:
            u = T.unalias(t)
            if type(u) is T.Gradual or type(u) is T.UnionT:
                return None
        return t

    def subject_type(self, name: str) -> T.Ty | None:
        """The declared type of a match subject, or None when flow narrowing may apply."""
        if name in self.cond_names:
            return None
        found = self.lookup(name)
        return found[0].type if found else None

    def e_Spread(self, e: A.Spread) -> T.Ty | None:
        self.expr(e.value)
        return None

    def e_ListLit(self, e: A.ListLit) -> T.Ty | None:
        elem: T.Ty | None = None
        uniform = True
        for i, it in enumerate(e.items):
            if type(it) is A.Spread:
                st = self.expr(it.value)
                k = T.kind(st)
                if k in ("int", "float", "bool"):
                    self.error(E_DESTRUCTURE, f"cannot destructure {k} with [...] pattern", it.span)
                uniform = False
                continue
            t = T.widen(self.expr(it))
            if i == 0:
                elem = t
            elif uniform and T.same(elem, t) is not True:
                uniform = False
        if not uniform or type(elem) is not T.Prim:
            return T.ListT(None)
        return T.ListT(elem)

    def e_DictLit(self, e: A.DictLit) -> T.Ty | None:
        fields: list[T.Field] = []
        shaped = True
        for en in e.entries:
            if type(en) is A.Spread:
                st = self.expr(en.value)
                k = T.kind(st)
                if k in ("int", "float", "bool", "list"):
                    self.error(
                        E_DESTRUCTURE, f"cannot destructure {k} with {{...}} pattern", en.span
                    )
                shaped = False
                continue
            if en.computed:
                self.expr(en.key)
                self.expr(en.value)
                shaped = False
                continue
            fields.append(T.Field(str(en.key), self.expr(en.value)))
        if shaped:
            return T.ShapeT(tuple(fields))
        return T.DictT(None, None)

    def e_ClosureExpr(self, e: A.ClosureExpr) -> T.Ty | None:
        self.function(e, e.params, e.body, None, (), False, "closure")
        return T.Prim("closure")

    def e_BinOp(self, e: A.BinOp) -> T.Ty | None:
        # left-nested chains (`a + b + c ...`) are walked iteratively: no recursion limit
        spine = [e]
        node: Any = e.left
        while type(node) is A.BinOp:
            spine.append(node)
            node = node.left
        lt = self.expr(node)
        for b in reversed(spine):
            lt = self.binop_type(b, lt, self.expr(b.right))
        return lt

    def binop_type(self, e: A.BinOp, lt: T.Ty | None, rt: T.Ty | None) -> T.Ty | None:
        """Check an operator against known operand types; the result type if known."""
        op = e.op
        if op not in _ARITH:
            return None if op == "|" else T.BOOL
        kl = T.kind(lt)
        kr = T.kind(rt)
        if kl not in _OPERAND_KINDS or kr not in _OPERAND_KINDS:
            return None
        assert kl is not None and kr is not None
        num = kl in _NUMERIC and kr in _NUMERIC
        if op == "+":
            if not (num or (kl == kr and kl in ("string", "list", "dict"))):
                self.error(E_OPERANDS, f"can't add {kl} and {kr}", e.span)
                return None
            if not num:
                if kl == "string":
                    return T.STRING
                return T.ListT(None) if kl == "list" else T.DictT(None, None)
        elif op == "*":
            if not (num or {kl, kr} == {"string", "int"}):
                self.error(E_OPERANDS, f"can't multiply {kl} and {kr} (try string * int)", e.span)
                return None
            if not num:
                return T.STRING
        elif not num:
            self.error(
                E_OPERANDS, f"can't use '{op}' on {kl} and {kr} (needs numeric operands)", e.span
            )
            return None
        if op == "**":
            return T.FLOAT if "float" in (kl, kr) else None
        return T.INT if kl == "int" and kr == "int" else T.FLOAT

    def e_LogicalOp(self, e: A.LogicalOp) -> T.Ty | None:
        node: Any = e
        rights = []
        while type(node) is A.LogicalOp:
            rights.append(node.right)
            node = node.left
        self.expr(node)
        for r in reversed(rights):
            self.expr(r)
        return T.BOOL

    def e_NilCoalesce(self, e: A.NilCoalesce) -> T.Ty | None:
        node: Any = e
        rights = []
        while type(node) is A.NilCoalesce:
            rights.append(node.right)
            node = node.left
        self.expr(node)
        for r in reversed(rights):
            self.expr(r)
        return None

    def e_UnaryOp(self, e: A.UnaryOp) -> T.Ty | None:
        t = self.expr(e.operand)
        if e.op == "!":
            return T.BOOL
        k = T.kind(t)
        return T.Prim(k) if k in _NUMERIC else None

    def e_Pipe(self, e: A.Pipe) -> T.Ty | None:
        node: Any = e
        rights = []
        while type(node) is A.Pipe:
            rights.append(node.right)
            node = node.left
        self.expr(node)
        self.pipe_depth += 1
        for r in reversed(rights):
            self.expr(r)
        self.pipe_depth -= 1
        return None

    def e_Ternary(self, e: A.Ternary) -> T.Ty | None:
        self.expr(e.cond)
        a = T.widen(self.expr(e.then))
        b = T.widen(self.expr(e.otherwise))
        if type(a) is T.Prim and type(b) is T.Prim and a.name == b.name:
            return a
        return None

    def e_RangeExpr(self, e: A.RangeExpr) -> T.Ty | None:
        self.expr(e.start)
        self.expr(e.end)
        return T.Prim("range")

    def e_Call(self, e: A.Call) -> T.Ty | None:
        name = e.func.id
        arg_types: list[T.Ty | None] = []
        spread_at = len(e.args)
        for i, a in enumerate(e.args):
            if type(a) is A.Spread:
                self.expr(a.value)
                spread_at = min(spread_at, i)
                arg_types.append(None)
            else:
                arg_types.append(self.expr(a))
        found = self.lookup(name)
        if found is None:
            if name in self.declared or self.builtins is None or name in self.builtins:
                return _BUILTIN_RESULTS.get(name) if name not in self.declared else None
            self.pending_names.append((E_CALL_TARGET, name, "call", e.func.span))
            return None
        b = found[0]
        if b.kind == "fn" and type(b.decl) is A.FnDecl:
            return self.call_fn(b.decl, e, arg_types[:spread_at])
        if b.kind == "struct":
            return T.NamedT(name, "struct")
        if b.kind == "tool":
            self.error(
                E_TOOL_CALL,
                f"cannot call tool `{name}` directly: a tool declaration binds a one-tool "
                f"registry (a dict); offer it to agent_loop ({{tools: {name}}}) or call "
                f"{name}.tools[0].handler(...)",
                e.span,
            )
            return None
        return None

    def signature(self, decl: A.FnDecl) -> tuple[list[T.Ty | None], T.Ty | None]:
        """Parameter types and return type of a declared function (cached)."""
        key = id(decl)
        sig = self._sig_cache.get(key)
        if sig is None:
            g = frozenset(decl.generics)
            params = [
                self.tenv.convert(p.type, g) if p.type is not None else None for p in decl.params
            ]
            ret = self.tenv.convert(decl.ret_type, g)
            if decl.is_gen and ret is None:
                ret = T.NamedT("Stream", "builtin")
            sig = (params, ret)
            self._sig_cache[key] = sig
        return sig

    def call_fn(self, decl: A.FnDecl, e: A.Call, arg_types: list[T.Ty | None]) -> T.Ty | None:
        """Check a call of a declared function; return the call's type."""
        ptypes, ret = self.signature(decl)
        where = self.where_of(decl) if decl.generics else {}
        binding: dict[str, T.Ty | None] = {}
        conflicts: set[str] = set()
        g = frozenset(decl.generics)
        for gname, ta in zip(decl.generics, e.type_args):
            bound = T.widen(self.tenv.convert(ta, self.generics()))
            if bound is not None:
                binding[gname] = bound
        for i, (p, at) in enumerate(zip(decl.params, arg_types)):
            if p.rest:
                break
            pt = ptypes[i]
            if pt is None:
                continue
            arg = e.args[i]
            if T.has_vars(pt):
                self.bind_generic(pt, at, binding, conflicts, arg.span)
                if type(pt) is T.VarT and pt.name in where:
                    self.conform(at, where[pt.name], arg.span)
                continue
            u = T.unalias(pt)
            if type(u) is T.NamedT and u.kind == "interface":
                self.conform(at, u.name, arg.span)
                continue
            fresh = type(arg) not in (A.Name, A.Attribute, A.Index)
            if not T.assignable(at, pt, fresh):
                self.error(
                    E_ARGUMENT,
                    f"Argument {i + 1} ('{p.name}'): expected {T.fmt(pt)}, got {T.fmt(at)}",
                    arg.span,
                )
        if ret is None:
            return None
        if g and T.has_vars(ret):
            return T.substitute(ret, {k: binding.get(k) for k in g})
        return ret

    def bind_generic(
        self,
        pt: T.Ty,
        at: T.Ty | None,
        binding: dict[str, T.Ty | None],
        conflicts: set[str],
        span: A.Span,
    ) -> None:
        """Bind type parameters of ``pt`` from the argument type ``at``."""
        at = T.widen(T.unalias(at))
        if at is None:
            return
        if type(pt) is T.VarT:
            if type(at) is T.Gradual or type(at) is T.VarT or T.kind(at) in (None, "nil"):
                return
            name = pt.name
            old = binding.get(name)
            if old is None:
                binding[name] = at
            elif T.same(old, at) is False and name not in conflicts:
                conflicts.add(name)
                self.error(
                    E_GENERIC,
                    f"type parameter '{name}' was inferred as both {T.fmt(old)} and {T.fmt(at)}",
                    span,
                )
        elif type(pt) is T.ListT and type(at) is T.ListT and pt.elem is not None:
            if at.elem is not None:
                self.bind_generic(pt.elem, at.elem, binding, conflicts, span)

    def where_of(self, decl: A.FnDecl) -> dict[str, str]:
        """The ``where`` bounds of generic function ``decl``: type parameter -> interface name
        (cached)."""
        key = id(decl)
        w = self._where_cache.get(key)
        if w is None:
            w = D.where_clauses(decl, self.source)
            self._where_cache[key] = w
        return w

    def iface_info(self, name: str, decl: A.InterfaceDecl | None = None) -> D.InterfaceInfo | None:
        """Methods and associated types of interface ``name`` (read from ``decl`` or the file's
        declaration; cached), or None when unknown or unreadable."""
        if name in self._iface_cache:
            return self._iface_cache[name]
        decl = decl or self.interfaces.get(name)
        info = D.interface_info(decl, self.source) if decl is not None else None
        self._iface_cache[name] = info
        return info

    def conform(self, at: T.Ty | None, iface: str, span: A.Span) -> None:
        """Report when the struct type ``at`` does not satisfy interface ``iface``."""
        st = T.unalias(at)
        if type(st) is not T.NamedT or st.kind != "struct" or iface not in self.interfaces:
            return
        key = (st.name, iface)
        problems = self._conform_cache.get(key)
        if problems is None:
            problems = self.conformance_problems(st.name, iface)
            self._conform_cache[key] = problems
        if problems:
            self.error(
                E_INTERFACE,
                f"type '{st.name}' does not satisfy interface '{iface}': " + "; ".join(problems),
                span,
            )

    def conformance_problems(self, struct: str, iface: str) -> list[str]:
        """Why struct ``struct`` does not satisfy interface ``iface`` (the E219 message parts):
        missing methods, parameter or return types that differ, associated types that resolve
        differently. Empty when it conforms or the interface is unknown; ``self`` parameters and
        types that name associated types are not compared."""
        info = self.iface_info(iface)
        if info is None:
            return []
        igen = frozenset(
            (D.generic_variance(self.interfaces[iface], "interface", self.source) or {}).keys()
        )
        methods = self.impls.get(struct, {})
        problems: list[str] = []
        for mname, want in info.methods.items():
            have = methods.get(mname)
            if have is None:
                problems.append(f"missing method '{mname}'")
                continue
            g_want = igen | frozenset(want.generics)
            g_have = frozenset(have.generics)
            wp = [p for p in want.params if p.name != "self"]
            hp = [p for p in have.params if p.name != "self"]
            for a, b in zip(wp, hp):
                if a.type is None or b.type is None or _names_assoc(a.type, info):
                    continue
                ta = self.tenv.convert(a.type, g_want)
                tb = self.tenv.convert(b.type, g_have)
                if T.same(ta, tb) is False:
                    problems.append(
                        f"method '{mname}' parameter '{b.name}' has type {T.fmt(tb)}, "
                        f"expected {T.fmt(ta)}"
                    )
            if want.ret_type is None or have.ret_type is None:
                continue
            tb = self.tenv.convert(have.ret_type, g_have)
            rt = want.ret_type
            if type(rt) is A.TypeName and not rt.args and rt.name in info.assoc:
                default = info.assoc[rt.name]
                if default is not None:
                    td = self.tenv.convert(default, g_want)
                    if T.same(td, tb) is False:
                        problems.append(
                            f"associated type '{rt.name}' resolves to '{T.fmt(tb)}', "
                            f"expected '{T.fmt(td)}'"
                        )
                continue
            if _names_assoc(rt, info):
                continue
            ta = self.tenv.convert(rt, g_want)
            if T.same(ta, tb) is False:
                problems.append(f"method '{mname}' returns {T.fmt(tb)}, expected {T.fmt(ta)}")
        return problems

    def enum_name(self, e: Any) -> str | None:
        """``E`` when ``e`` is a bare name of an enum not shadowed by a variable."""
        if type(e) is not A.Name or e.id not in self.enums:
            return None
        found = self.lookup(e.id)
        if found is not None and found[0].kind != "enum":
            return None
        return str(e.id)

    def e_MethodCall(self, e: A.MethodCall) -> T.Ty | None:
        ename = self.enum_name(e.obj)
        if ename is not None and e.name in self.enums[ename]:
            for a in e.args:
                self.expr(a)
            if ename == "Result":
                return T.NamedT("Result", "builtin")
            return T.NamedT(ename, "enum")
        # receiver chains (`x.a().b().c()`) are walked iteratively
        chain = [e]
        node: Any = e.obj
        while type(node) is A.MethodCall and self.enum_name(node.obj) is None:
            chain.append(node)
            node = node.obj
        ot = self.expr(node)
        for m in reversed(chain):
            ot = self.method_type(m, ot)
        return ot

    def method_type(self, e: A.MethodCall, ot: T.Ty | None) -> T.Ty | None:
        """Visit a method call's arguments; its result type given the receiver type."""
        for a in e.args:
            self.expr(a)
        k = T.kind(ot)
        if self.check_only and self.method_names is not None:
            self.unknown_method(e, k)
        if k == "iter" and e.name in _ITER_LAZY:
            return T.NamedT("iter", "builtin")
        if e.name == "iter" and k in _ITERABLE_KINDS:
            return T.NamedT("iter", "builtin")
        return None

    def unknown_method(self, e: A.MethodCall, k: str | None) -> None:
        """W201 for ``e`` on a receiver of kind ``k`` when it certainly returns nil."""
        names = self.method_names or {}
        if k in _NO_METHODS:
            if k == "nil" and e.optional:
                return  # `x?.m()` on nil is meant to give nil
            what = "nil" if k == "nil" else ("a bool" if k == "bool" else "a number")
            self.warn(
                W_NIL_METHOD,
                f"`.{e.name}()` on {what} is always nil (numbers, bools and nil have no methods)",
                e.span,
            )
            return
        known = names.get(k or "")
        if known is None or e.name in known:
            return
        hint = did_you_mean(e.name, known, frozenset())
        suffix = f" (did you mean `.{hint}()`?)" if hint else ""
        if not hint and k in ("list", "set") and did_you_mean(e.name, _LEN_NAMES, frozenset()):
            suffix = " (use `len(x)` or `.count`)"
        self.warn(
            W_NIL_METHOD,
            f"{k}s have no method `{e.name}`: the call is always nil{suffix}",
            e.span,
        )

    def warn(self, code: str, message: str, span: A.Span) -> None:
        """Record one warning at ``span``."""
        end = span.end_col + 1 if span.end_line == span.line and span.end_col >= span.col else 0
        self.diags.append(
            Diagnostic(
                code,
                message,
                self.path,
                span.line,
                span.col,
                source=self.source,
                end_col=end,
                severity="warning",
            )
        )

    def e_Attribute(self, e: A.Attribute) -> T.Ty | None:
        ename = self.enum_name(e.obj)
        if ename is not None and e.name in self.enums[ename]:
            self.expr(e.obj)
            if ename == "Result":
                return T.NamedT("Result", "builtin")
            return T.NamedT(ename, "enum")
        ot = self.expr(e.obj)
        k = T.kind(ot)
        if e.name == "variant":
            if k is not None and (k.startswith("enum:") or k == "Result"):
                return T.STRING
        if k in ("int", "float", "bool") and not e.optional:
            self.error(E_PROPERTY, f"cannot access property `{e.name}` on {k}", e.span)
        return None

    def e_Index(self, e: A.Index) -> T.Ty | None:
        self.expr(e.obj)
        self.expr(e.index)
        return None

    def e_Slice(self, e: A.Slice) -> T.Ty | None:
        self.expr(e.obj)
        if e.start is not None:
            self.expr(e.start)
        if e.end is not None:
            self.expr(e.end)
        return None

    def e_TryPropagate(self, e: A.TryPropagate) -> T.Ty | None:
        self.expr(e.value)
        return None

    def e_TryStar(self, e: A.TryStar) -> T.Ty | None:
        if self.fns[-1].kind == "module":
            self.error(E_TRY_STAR, "try* requires an enclosing function", e.span)
        self.expr(e.value)
        return None

    def e_StructLit(self, e: A.StructLit) -> T.Ty | None:
        for f in e.fields:
            self.expr(f.value)
        if e.name in self.structs:
            return T.NamedT(e.name, "struct")
        return None

    def e_IfExpr(self, e: A.IfExpr) -> T.Ty | None:
        self.expr(e.cond)
        self.block(e.then)
        if type(e.otherwise) is A.Block:
            self.block(e.otherwise)
        elif e.otherwise is not None:
            self.expr(e.otherwise)
        return None

    def e_MatchExpr(self, e: A.MatchExpr) -> T.Ty | None:
        self.expr(e.value)
        for arm in e.arms:
            binds: list[str] = []
            for p in arm.patterns:
                pattern_binds(p, binds)
                self.pattern_closures(p)
            self.push_scope({n: Binding("pattern") for n in binds})
            if arm.guard is not None:
                self.expr(arm.guard)
            self.block(arm.body)
            self.pop_scope()
        self.check_exhaustive(e)
        return None

    def pattern_closures(self, p: Any) -> None:
        """Walk closures nested in a pattern (patterns themselves are not reads)."""
        for n in A.walk(p):
            if type(n) is A.ClosureExpr:
                self.expr(n)

    def check_exhaustive(self, e: A.MatchExpr) -> None:
        """Report a guard-free, wildcard-free ``match`` on a user enum (by ``E.V`` patterns
        or on ``x.variant``) or on a tagged shape union's discriminant that misses a case.
        ``Result`` is left alone (matches on it commonly cover one arm and rethrow)."""
        arms = [a for a in e.arms if a.guard is None]
        for a in arms:
            if any(type(p) is A.Name for p in a.patterns):
                return
        v = e.value
        if type(v) is A.Attribute and type(v.obj) is A.Name:
            st = T.unalias(self.subject_type(v.obj.id))
            if v.name == "variant" and type(st) is T.NamedT and st.kind == "enum":
                covered = {p.value for a in arms for p in a.patterns if type(p) is A.Literal}
                self.report_missing_variants(st.name, covered, e.span)
                return
            if type(st) is T.UnionT:
                self.check_tagged_union(st, v.name, arms, e.span)
            return
        if type(v) is A.Name:
            st = T.unalias(self.subject_type(v.id))
            if type(st) is T.NamedT and st.kind == "enum":
                covered = set()
                for a in arms:
                    for p in a.patterns:
                        if (
                            type(p) in (A.Attribute, A.MethodCall)
                            and type(p.obj) is A.Name
                            and p.obj.id == st.name
                        ):
                            covered.add(p.name)
                self.report_missing_variants(st.name, covered, e.span)

    def report_missing_variants(self, enum: str, covered: set[Any], span: A.Span) -> None:
        """Report E216 when ``covered`` misses variants of enum ``enum`` (an unknown enum is
        ignored)."""
        variants = self.enums.get(enum)
        if not variants:
            return
        missing = [v for v in variants if v not in covered]
        if missing:
            self.error(
                E_MATCH,
                f"Non-exhaustive match on enum {enum}: missing variants {', '.join(missing)}",
                span,
            )

    def check_tagged_union(
        self, st: T.UnionT, field: str, arms: list[A.MatchArm], span: A.Span
    ) -> None:
        """Report E216 when a ``match`` on ``x.field``, where ``x`` is a union of shapes whose
        ``field`` has a literal type (a tagged union), leaves some tag uncovered by the arms'
        literal patterns; any other union is ignored."""
        tags: list[Any] = []
        for o in st.options:
            shape = T.unalias(o)
            if type(shape) is not T.ShapeT:
                return
            f = shape.get(field)
            if f is None or type(f.type) is not T.LitT:
                return
            tags.append(f.type.value)
        covered = [p.value for a in arms for p in a.patterns if type(p) is A.Literal]
        missing = [t for t in tags if not any(type(c) is type(t) and c == t for c in covered)]
        if missing:
            self.error(
                E_MATCH,
                "Non-exhaustive match on tagged shape union: missing variants "
                + ", ".join(T.fmt(T.LitT(m)) for m in missing),
                span,
            )

    def e_TryExpr(self, e: A.TryExpr) -> T.Ty | None:
        self.block(e.body)
        if e.catch_body is not None:
            self.block(e.catch_body, {e.catch_name: Binding("pattern")} if e.catch_name else None)
        if e.finally_body is not None:
            self.block(e.finally_body)
        return None

    def e_SpawnExpr(self, e: A.SpawnExpr) -> T.Ty | None:
        self.function(e, (), e.body, None, (), False, "closure")
        return None

    def e_ParallelExpr(self, e: A.ParallelExpr) -> T.Ty | None:
        self.expr(e.value)
        if e.max_concurrent is not None:
            self.expr(e.max_concurrent)
        params = (A.Param(e.param),) if e.param else ()
        self.function(e, params, e.body, None, (), False, "closure")
        return None

    def e_RetryExpr(self, e: A.RetryExpr) -> T.Ty | None:
        self.expr(e.count)
        self.block(e.body)
        return None

    def e_DeadlineExpr(self, e: A.DeadlineExpr) -> T.Ty | None:
        self.expr(e.duration)
        self.block(e.body)
        return None

    # ------------------------------------------------------------ names

    def undefined(self, name: str, span: A.Span, what: str = "read") -> None:
        """A read (``what`` ``"read"``) of, or an assignment (``"assign"``) to, a name with no
        lexical binding: report it unless it may exist."""
        if self.builtins is None or not self.check_only:
            return
        if name != "_" and (name in self.declared or name in self.builtins):
            return
        self.pending_names.append((E_UNDEFINED, name, what, span))

    def finish_names(self) -> None:
        """Report pending undefined names once imports are known."""
        if not self.pending_names or self.builtins is None:
            return
        imported: set[str] = set()
        self.read_imports = True
        resolver = ImportResolver()
        for imp in self.imports:
            names = resolver.names(imp, self.path)
            if names is None:
                return
            imported |= names
        candidates: set[str] | None = None
        for code, name, what, span in self.pending_names:
            if name in imported:
                continue
            if candidates is None:
                candidates = self.declared | set(self.builtins) | imported
            if what == "assign":
                # `x = 1` with no `var x` first (Python's habit): say how to declare it
                suffix = f" (declare it first: `var {name} = ...`)"
            else:
                hint = did_you_mean(name, candidates, self.declared | imported)
                suffix = f" (did you mean `{hint}`?)" if hint else ""
            if code == E_CALL_TARGET:
                self.error(code, f"call target `{name}` is not defined or imported{suffix}", span)
            else:
                self.error(code, f"Undefined variable: {name}{suffix}", span)


_STMT: dict[type, Callable[[Checker, Any], None]] = {
    getattr(A, n[2:]): f for n, f in vars(Checker).items() if n.startswith("s_")
}
_EXPR: dict[type, Callable[[Checker, Any], T.Ty | None]] = {
    getattr(A, n[2:]): f for n, f in vars(Checker).items() if n.startswith("e_")
}


def _names_assoc(node: A.TypeExpr, info: D.InterfaceInfo) -> bool:
    """Whether a type mentions one of the interface's associated types."""
    for n in A.walk(node):
        if type(n) is A.TypeName and n.name in info.assoc:
            return True
    return False


def _occurrences(node: Any, pol: int, params: set[str], out: list[tuple[str, int]]) -> None:
    """Positions of type parameters in a type: ``pol`` +1 covariant, -1 contravariant.
    Only function types flip polarity; other type constructors are not descended into."""
    t = type(node)
    if t is A.TypeName:
        if node.name in params and not node.args:
            out.append((node.name, pol))
    elif t is A.TypeFn:
        for p in node.params:
            _occurrences(p, -pol, params, out)
        _occurrences(node.ret, pol, params, out)
    elif t is A.TypeUnion:
        for o in node.options:
            _occurrences(o, pol, params, out)
