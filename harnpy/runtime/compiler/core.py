"""The compiler: AST -> code objects of flat instruction lists over frame slots.

Design (see dev/impl.md): a resolver gives every local a slot; expressions without
suspension points compile to Python closures ``ev(frame) -> value``; every call, method
call, generator step and control transfer is an instruction of its own (A-normal form:
intermediate results of such steps live in temporary slots). So between any two
instructions a frame's state is exactly ``(code, pc, slots)``, which is what a snapshot
stores.

Name resolution, innermost first: local slot -> captured value (copied into the closure
when it is created; spec 3.10 "closures capture by value") -> module global (names declared
at the module's top level, and imported names) -> builtin -> late-bound lookup at run time
(function names declared later in an enclosing scope, spec 3.10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harnpy.runtime import instrs as I
from harnpy.runtime import ops
from harnpy.runtime.code import CodeObject, Frame
from harnpy.runtime.compiler.control import (
    ControlFlowMixin,
)
from harnpy.runtime.compiler.evals import (
    _EXPR_NODE_NAMES,
    _binop_ev,
    _capture_checked_ev,
    _const,
    _dict_general_ev,
    _dynamic_ev,
    _global_ev,
    _interp_ev,
    _is_primitive,
    _is_stable,
    _list_spread_ev,
    _locate,
    _make_closure_ev,
    _op_check_param,
    _op_missing_to_nil,
    _op_skip_if_passed,
    _opt_index,
    _pipeline_arg_ev,
    _slot_ev,
    _temp_ev,
    _watching,
    type_checker,
)
from harnpy.runtime.compiler.ir import (
    CompileError,
    Ev,
    FnBuilder,
    Label,
    ModuleContext,
    contains_placeholder,
    contains_yield,
    declares_nested_fns,
    referenced_names,
)
from harnpy.runtime.compiler.statements import (
    StatementsMixin,
)
from harnpy.runtime.errors import (
    HarnError,
    HarnRuntimeError,
    type_error,
)
from harnpy.runtime.outcomes import WATCHED_KEYS
from harnpy.runtime.outcomes import checked as outcome_checked
from harnpy.runtime.values import (
    Duration,
    EnumNamespace,
    EnumValue,
    RangeValue,
    StructValue,
    type_name,
)
from harnpy.syntax import ast as A

if TYPE_CHECKING:
    from harnpy.runtime import direct
else:  # imported when the first fn or loop is compiled: a program with neither never needs it
    from harnpy._lazy import lazy_module

    direct = lazy_module("harnpy.runtime.direct")


class Compiler(StatementsMixin, ControlFlowMixin):
    """Compiles one module (or one REPL entry) against a :class:`ModuleContext`.

    ``self.b`` is the :class:`FnBuilder` of the function being compiled. Nodes are
    compiled by methods named after their AST class:

    * ``s_<NodeType>(node)`` compiles statement node ``NodeType`` (``A.LetStmt`` ->
      ``s_LetStmt``) and emits its instructions into ``self.b``; it returns None.
      :meth:`stmt` dispatches.
    * ``e_<NodeType>(node)`` compiles expression node ``NodeType`` and returns an ``Ev``
      (``ev(frame) -> value``), first emitting instructions for the calls and control
      flow it contains (their results live in temporary slots). ``e_IfExpr``,
      ``e_MatchExpr`` and ``e_TryExpr`` also accept ``discard=True`` when the value is not
      wanted. :meth:`expr` dispatches.

    Both raise :class:`CompileError` for errors known before running (``break`` outside
    a loop, a misplaced spread, reading ``_``); errors the reference reports only when
    the code runs (redeclaring a ``let``, assigning an immutable binding) compile to an
    instruction that raises them.
    """

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx
        self.b: FnBuilder = None  # type: ignore[assignment]
        self.declared_globals: dict[str, str] = {}
        self._suspends_memo: dict[int, bool] = {}
        self._names_memo: dict[int, frozenset[str]] = {}

    # ================================================================ entry points

    def compile_module_body(
        self,
        stmts: list[A.Stmt],
        code_id: int,
        name: str,
        returns_last: bool = False,
        pipelines: list[A.PipelineDecl] | None = None,
    ) -> CodeObject:
        """Compile top-level statements as the module initialiser (script mode / REPL).

        With ``pipelines`` (pipeline mode, spec 2.1) the statements are the top-level
        bindings and declarations, followed by calls of the pipeline chain (``extends``
        parents first); the entry pipeline's value is the module's result.
        """
        code = CodeObject(code_id, name, self.ctx.module)
        code.returns_last = returns_last
        b = FnBuilder(self.ctx, code, None, module_level=True)
        self.b = b
        result = self.block_stmts(stmts, want_value=returns_last)
        for pipe in pipelines or []:
            b.span = pipe.span
            make = self.closure_expr(pipe, self_name=None)
            target = b.temp()
            args = [_pipeline_arg_ev(p.name) for p in pipe.params]
            b.emit(I.op_call, make, args, [False] * len(args), target)
            result = _slot_ev(target)
        b.span = stmts[-1].span if stmts else A.NO_SPAN
        b.emit(I.op_return, result or _const(None), nxt=False)
        return self._finish(b)

    def compile_function(
        self,
        node: A.FnDecl | A.ClosureExpr | A.PipelineDecl | A.ToolDecl,
        name: str,
        parent: FnBuilder | None,
        module_level: bool = False,
        captures: list[tuple[str, int | str, bool]] | None = None,
        self_name: str | None = None,
    ) -> CodeObject:
        """Compile a function-like node. ``captures`` lists (name, parent slot) pairs."""
        code = CodeObject(A.node_id(node), name, self.ctx.module)
        self.ctx.codes.append(code)
        self.ctx.code_ids[code.id] = code
        b = FnBuilder(self.ctx, code, parent, module_level=module_level)
        saved = self.b
        self.b = b
        try:
            b.span = node.span
            params = node.params
            code.param_names = [p.name for p in params]
            code.nparams = len(params)
            code.rest = bool(params) and params[-1].rest
            for p in params:
                b.declare(p.name, True, "param")
            for cname, src, mutable in captures or []:
                b.declare(cname, mutable, "capture")
                code.capture_names.append(cname)
                code.capture_from.append(src)
                if type(src) is str:
                    b.global_captures.add(cname)
            code.has_defaults = any(p.default is not None for p in params)
            is_closure = isinstance(node, A.ClosureExpr)
            code.returns_last = is_closure
            if isinstance(node, A.FnDecl) and node.is_gen:
                code.is_generator = True
                code.gen_kind = "stream"
            elif not isinstance(node, A.PipelineDecl) and contains_yield(node.body):
                code.is_generator = True
                code.gen_kind = "generator"
            b.in_generator = code.is_generator
            b.declares_fns = declares_nested_fns(node.body)
            self._prologue(params)
            code.simple = not (code.has_defaults or code.rest or code.param_checks)
            body = list(node.body.body)
            if (
                is_closure
                and code.simple
                and not code.is_generator
                and len(body) == 1
                and type(body[0]) is A.ExprStmt
                and not self.suspends(body[0].value)
            ):
                # A call-free expression emits no instructions: its ev is both the inline
                # fast path and the frame's return value. Compiled once (compiling it twice
                # would double the work at every level of nested closures: exponential).
                b.span = body[0].span
                mark = b.mark()
                code.pure_ev = ev = self.expr(body[0].value)
                del b.ir[mark:]  # be safe anyway
                slot = b.temp()
                b.emit(I.op_store, slot, ev)
                result: Ev | None = _slot_ev(slot)
            else:
                result = self.block_stmts(body, want_value=is_closure)
            b.span = node.body.span
            b.emit(I.op_return, result or _const(None), nxt=False)
            self._finish(b)
            direct.plan(self, node, code)
            return code
        finally:
            self.b = saved

    def _finish(self, b: FnBuilder) -> CodeObject:
        code = b.code
        if code.defer_slot is not None:
            tramp = Label()
            b.place(tramp)
            b.emit(I.op_return_trampoline, code.defer_slot, nxt=False)
            b.assemble()
            code.defer_trampoline = tramp.pos
            return code
        return b.assemble()

    def _prologue(self, params: tuple[A.Param, ...]) -> None:
        b = self.b
        for i, p in enumerate(params):
            if p.default is not None:
                end = Label()
                b.emit(_op_skip_if_passed, i, end)
                ev = self.expr(p.default)
                b.emit(I.op_store, i, ev)
                b.place(end)
            elif b.code.has_defaults and not p.rest:
                b.emit(_op_missing_to_nil, i)
            if p.type is not None:
                schema = self.param_schema(p.type)
                if schema is not None:
                    quick = type_checker(p.type, self.ctx) if _is_primitive(p.type) else None
                    b.code.param_checks.append((i, schema))
                    b.emit(_op_check_param, i, p.name, quick, schema)

    # ================================================================ statements

    def block_stmts(self, stmts: list[A.Stmt], want_value: bool) -> Ev | None:
        """Compile statements; with ``want_value`` return an ev of the last one's value."""
        result: Ev | None = None
        n = len(stmts)
        for i, st in enumerate(stmts):
            last = i == n - 1
            if want_value and last:
                result = self.stmt_value(st)
            else:
                self.stmt(st)
        return result

    def block(self, block: A.Block, want_value: bool = False) -> Ev | None:
        """Compile a ``{ ... }`` block in a new scope (spec 3.10). With ``want_value`` returns an
        ev of the block's value, or None when the last statement is not an expression (the value
        is nil, spec 2.5); otherwise None."""
        b = self.b
        b.push_scope()
        try:
            return self.block_stmts(list(block.body), want_value)
        finally:
            b.pop_scope()

    def stmt_value(self, st: A.Stmt) -> Ev | None:
        """Compile a statement whose value is wanted (last statement of a value block)."""
        t = type(st)
        if t is A.ExprStmt:
            self.b.span = st.span
            ev = self.expr(st.value)  # type: ignore[arg-type]
            slot = self.b.temp()
            self.b.emit(I.op_store, slot, ev)
            return _slot_ev(slot)
        if t in (A.IfExpr, A.MatchExpr, A.TryExpr):
            return self.expr(st)  # type: ignore[arg-type]
        self.stmt(st)
        return None

    def stmt(self, st: A.Stmt) -> None:
        """Compile one statement with its ``s_<NodeType>`` method; an expression node in
        statement position is evaluated for its effects.

        Raises:
            CompileError: the node has no compiler, or a static error in it.
        """
        b = self.b
        b.span = st.span
        method = getattr(self, "s_" + type(st).__name__, None)
        if method is None:
            if isinstance(st, A.Node) and type(st).__name__ in _EXPR_NODE_NAMES:
                ev = self.expr(st)  # type: ignore[arg-type]
                b.emit(I.op_eval, ev)
                return
            raise CompileError(f"unsupported statement {type(st).__name__}", st.span)
        method(st)

    def expr(self, e: A.Expr, discard: bool = False) -> Ev:
        """Compile an expression to an ev closure, emitting instructions for its calls."""
        method = getattr(self, "e_" + type(e).__name__)
        return method(e) if not discard else method(e, discard=True)  # type: ignore[no-any-return]

    def e_Literal(self, e: A.Literal) -> Ev:
        return _const(e.value)

    def e_DurationLit(self, e: A.DurationLit) -> Ev:
        return _const(Duration(e.ms))

    def e_InterpString(self, e: A.InterpString) -> Ev:
        parts: list[Any] = []
        later = self._later_suspends(e.parts)  # one reverse scan: linear in the parts
        for i, p in enumerate(e.parts):
            if isinstance(p, str):
                parts.append(p)
            else:
                parts.append(self.spill(self.expr(p)) if later[i] else self.expr(p))
        return _interp_ev(parts)

    def e_Name(self, e: A.Name) -> Ev:
        return self.name_ev(e.id, e.span)

    def name_ev(self, name: str, span: A.Span) -> Ev:
        """An ev reading ``name``, resolved innermost first: local slot or capture (checked when
        the captured name may still be unbound), enum namespace, module global, builtin, global
        constant, ``type``/struct schema, else a lookup by name at run time (late binding, spec
        3.10).

        Raises:
            CompileError: E210 for ``_`` outside a pipe placeholder (spec 3.10).
        """
        b = self.b
        if name == "_":
            if b.placeholder_slot is not None:
                return _slot_ev(b.placeholder_slot)
            if not getattr(self.ctx.module, "repl", False):
                # `_` is never bound (spec 3.10): reading it is an error known before running.
                raise CompileError("Undefined variable: _", span, "E210")
            # in the REPL, `_` outside a pipe is the last echoed value (a session global)
        binding = b.lookup_local(name)
        if binding is not None:
            if binding.kind == "capture" and self._capture_may_be_unbound(name):
                return _capture_checked_ev(binding.slot, name, span)
            return _slot_ev(binding.slot)
        ctx = self.ctx
        if name in ctx.enums:
            return _const(EnumNamespace(name, ctx.enums[name]))
        if self._is_global(name):
            return _global_ev(ctx.module.globals, name, ctx.builtins.get(name))
        bi = ctx.builtins.get(name)
        if bi is not None:
            return _const(bi)
        if name in ctx.module.constants:
            return _const(ctx.module.constants[name])
        schema = self.type_schema(name)
        if schema is not None:
            return _const(schema)
        return _dynamic_ev(name, span)

    def param_schema(self, t: A.TypeExpr) -> dict[str, Any] | None:
        """Schema a typed parameter is checked against at call time (spec 3.11), or None
        when the type has no run-time check (``any``, generics, unknown names)."""
        from harnpy.stdlib.schema import type_to_schema

        schema = type_to_schema(t, lambda n: self.type_schema(n))
        if schema == {"type": "any"} or schema.get("type") == "any" and len(schema) == 1:
            return None
        return schema  # type: ignore[no-any-return]

    def tool_param_schema(self, t: A.TypeExpr | None) -> dict[str, Any] | None:
        """JSON Schema of a ``tool`` parameter type for the model (structs and aliases
        expanded, an enum as the list of its variant names), or None when it says nothing
        (``any``, generics, unknown names)."""
        if t is None:
            return None
        from harnpy.stdlib.schema import to_json_schema, type_to_schema

        enums = self.ctx.enums

        def resolve(n: str) -> Any:
            if n in enums:
                return {"type": "string", "enum": list(enums[n])}
            return self.type_schema(n)

        schema = to_json_schema(type_to_schema(t, resolve))
        return schema or None

    def type_schema(self, name: str) -> dict[str, Any] | None:
        """The schema of a ``type`` alias (or struct) used as a value, e.g. the argument of
        ``schema_of(T)`` / ``schema_is(v, T)`` (types have no other run-time effect)."""
        ctx = self.ctx
        if name not in ctx.type_aliases and name not in ctx.structs_decl:
            return None
        from harnpy.stdlib.schema import type_to_schema

        seen: set[str] = set()

        def resolve(n: str) -> Any:
            if n in seen:
                return None
            seen.add(n)
            try:
                if n in ctx.type_aliases:
                    return type_to_schema(ctx.type_aliases[n], resolve)
                decl = ctx.structs_decl.get(n)
                if decl is not None:
                    shape = A.TypeShape(
                        tuple(
                            A.ShapeField(f.name, f.type or A.TypeName("any"), f.optional)
                            for f in decl.fields
                        )
                    )
                    return type_to_schema(shape, resolve)
                return None
            finally:
                seen.discard(n)

        return resolve(name)  # type: ignore[no-any-return]

    def _capture_may_be_unbound(self, name: str) -> bool:
        if name in self.b.global_captures:
            return True
        p = self.b.parent
        while p is not None:
            bnd = p.lookup_local(name)
            if bnd is not None:
                return bnd.kind == "fn" or (bnd.kind == "capture" and p.parent is not None)
            p = p.parent
        return False

    def e_ListLit(self, e: A.ListLit) -> Ev:
        evs0 = self._operands(e.items)
        items = [(type(it) is A.Spread, ev) for it, ev in zip(e.items, evs0)]
        if any(sp for sp, _ in items):
            return _list_spread_ev(items)
        evs = [ev for _, ev in items]
        if not evs:
            return lambda f: []
        if len(evs) == 1:
            a0 = evs[0]
            return lambda f: [a0(f)]
        if len(evs) == 2:
            a0, a1 = evs
            return lambda f: [a0(f), a1(f)]
        return lambda f: [ev(f) for ev in evs]

    def _later_suspends(self, siblings: tuple[Any, ...]) -> list[bool]:
        """For each element: does any *later* sibling contain a call? (one reverse scan)"""
        out = [False] * len(siblings)
        seen = False
        for i in range(len(siblings) - 1, -1, -1):
            out[i] = seen
            seen = seen or self._suspends_any(siblings[i])
        return out

    def _operands(self, siblings: tuple[Any, ...]) -> list[Ev]:
        """Compile a list of operands left to right; an operand is spilled to a temporary
        when a later one contains a call, preserving left-to-right evaluation order."""
        later = self._later_suspends(siblings)
        return [self._operand(node, later[i]) for i, node in enumerate(siblings)]

    def _operand(self, node: Any, spill: bool) -> Ev:
        target = node.value if type(node) is A.Spread else node
        if isinstance(target, str):
            return _const(target)
        ev = self.expr(target)
        if spill and not _is_stable(target):
            return self.spill(ev)
        return ev

    def _suspends_any(self, x: Any) -> bool:
        if isinstance(x, str):
            return False
        if type(x) is A.Spread:
            return self.suspends(x.value)
        if type(x) is A.DictEntry:
            return (x.computed and self.suspends(x.key)) or self.suspends(x.value)  # type: ignore[arg-type]
        if isinstance(x, A.Node):
            return self.suspends(x)
        return False

    def spill(self, ev: Ev) -> Ev:
        """Store the value of ``ev`` in a new temporary now and return an ev reading it (keeps
        left-to-right order when a later operand runs a call). A call result's temporary is
        returned as it is: only its own call writes it, so a later call cannot change it."""
        if getattr(ev, "_temp_slot", None) is not None:
            return ev
        slot = self.b.temp()
        self.b.emit(I.op_store, slot, ev)
        return _slot_ev(slot)

    def e_DictLit(self, e: A.DictLit) -> Ev:
        entries: list[tuple[int, Any, Ev]] = []  # kind 0 static key, 1 computed, 2 spread
        later = self._later_suspends(e.entries)
        for i, ent in enumerate(e.entries):
            if type(ent) is A.Spread:
                entries.append((2, None, self._operand(ent, later[i])))
            elif ent.computed:
                kev = self.expr(ent.key)  # type: ignore[arg-type]
                if later[i] or self.suspends(ent.value):
                    kev = self.spill(kev)
                entries.append((1, kev, self._entry_value(ent, later[i])))  # type: ignore[arg-type]
            else:
                entries.append((0, ent.key, self._entry_value(ent, later[i])))  # type: ignore[arg-type]
        if all(k == 0 for k, _, _ in entries):
            pairs = [(key, ev) for _, key, ev in entries]
            return lambda f: {k: ev(f) for k, ev in pairs}
        return _dict_general_ev(entries)

    def _entry_value(self, ent: A.DictEntry, spill: bool) -> Ev:
        ev = self.expr(ent.value)
        if spill and not _is_stable(ent.value):
            return self.spill(ev)
        return ev

    def e_ClosureExpr(self, e: A.ClosureExpr) -> Ev:
        return self.closure_expr(e, self_name=None)

    def e_FnDecl(self, e: A.FnDecl) -> Ev:
        return self.closure_expr(e, self_name=None)

    def closure_expr(self, node: Any, self_name: str | None) -> Ev:
        """Compile a nested function and return an ev that creates the closure value."""
        b = self.b
        names = referenced_names(node, self._names_memo)
        for p in node.params:
            names.discard(p.name)  # a parameter shadows any outer name
        captures: list[tuple[str, int | str, bool]] = []
        kinds = self.ctx.module.global_kinds
        for name in sorted(names):
            binding = b.lookup_local(name)
            if binding is not None:
                captures.append((name, binding.slot, True))
            elif self.ctx.capture_globals and kinds.get(name) in ("let", "var"):
                # Top-level bindings of the main program are captured by value too
                # (spec 3.10); a name not yet bound when the closure is created stays
                # late-bound (read live from the module).
                captures.append((name, name, kinds.get(name) == "var"))
        name = getattr(node, "name", None) or "<closure>"
        code = self.compile_function(node, name, b, False, captures, self_name)
        sources = [src for _, src, _ in captures]
        self_index = None
        if self_name is not None:
            for i, (cname, _, _) in enumerate(captures):
                if cname == self_name:
                    self_index = i
        return _make_closure_ev(code, sources, self.ctx.module, self_index)

    def e_BinOp(self, e: A.BinOp) -> Ev:
        left = self.expr(e.left)
        if self.suspends(e.right) and not _is_stable(e.left):
            left = self.spill(left)
        right = self.expr(e.right)
        return _binop_ev(e.op, left, right, e.left, e.right, self, e.span)

    def e_LogicalOp(self, e: A.LogicalOp) -> Ev:
        left = self.expr(e.left)
        if not self.suspends(e.right):
            right = self.expr(e.right)
            if e.op == "&&":
                return lambda f: ops.truthy(left(f)) and ops.truthy(right(f))
            return lambda f: ops.truthy(left(f)) or ops.truthy(right(f))
        b = self.b
        res = b.temp()
        end = Label()
        b.emit(I.op_store, res, lambda f: ops.truthy(left(f)))
        if e.op == "&&":
            b.emit(I.op_jump_if_false, _slot_ev(res), True, end)
        else:
            b.emit(I.op_jump_if_true, _slot_ev(res), True, end)
        right = self.expr(e.right)
        b.emit(I.op_store, res, lambda f: ops.truthy(right(f)))
        b.place(end)
        return _slot_ev(res)

    def e_NilCoalesce(self, e: A.NilCoalesce) -> Ev:
        left = self.expr(e.left)
        if not self.suspends(e.right):
            right = self.expr(e.right)

            def coalesce(f: Frame) -> Any:
                v = left(f)
                return right(f) if v is None else v

            return coalesce
        b = self.b
        res = b.temp()
        end = Label()
        b.emit(I.op_store, res, left)
        b.emit(I.op_jump_if_not_nil, res, end)
        b.emit(I.op_store, res, self.expr(e.right))
        b.place(end)
        return _slot_ev(res)

    def e_UnaryOp(self, e: A.UnaryOp) -> Ev:
        operand = self.expr(e.operand)
        if e.op == "-":
            if type(e.operand) is A.Literal and type(e.operand.value) in (int, float):
                return _const(ops.negate(e.operand.value))
            span = e.span

            def neg(f: Frame) -> Any:
                try:
                    return ops.negate(operand(f))
                except HarnError as err:
                    _locate(err, span)
                    raise

            return neg
        if e.op == "!":
            return lambda f: not ops.truthy(operand(f))
        raise CompileError(f"unknown unary operator {e.op}", e.span)

    def e_Ternary(self, e: A.Ternary) -> Ev:
        cond = self.expr(e.cond)
        if not self.suspends(e.then) and not self.suspends(e.otherwise):
            a = self.expr(e.then)
            c = self.expr(e.otherwise)
            return lambda f: a(f) if ops.truthy(cond(f)) else c(f)
        b = self.b
        res = b.temp()
        other = Label()
        end = Label()
        b.emit(I.op_jump_if_false, cond, False, other)
        b.emit(I.op_store, res, self.expr(e.then))
        b.emit(I.op_jump, end, nxt=False)
        b.place(other)
        b.emit(I.op_store, res, self.expr(e.otherwise))
        b.place(end)
        return _slot_ev(res)

    def e_RangeExpr(self, e: A.RangeExpr) -> Ev:
        start = self.expr(e.start)
        if self.suspends(e.end) and not _is_stable(e.start):
            start = self.spill(start)
        end = self.expr(e.end)
        inclusive = e.inclusive

        def make(f: Frame) -> RangeValue:
            a = start(f)
            z = end(f)
            if type(a) is not int or type(z) is not int:
                raise type_error(
                    f"range bounds must be integers, got {type_name(a)} and {type_name(z)}"
                )
            return RangeValue(a, z, inclusive)

        return make

    def e_Pipe(self, e: A.Pipe) -> Ev:
        b = self.b
        left = self.expr(e.left)
        if contains_placeholder(e.right):
            slot = b.temp()
            b.emit(I.op_store, slot, left)
            saved = b.placeholder_slot
            b.placeholder_slot = slot
            try:
                return self.expr(e.right)
            finally:
                b.placeholder_slot = saved
        if not _is_stable(e.left):
            left = self.spill(left)
        fn = self.expr(e.right)
        target = b.temp()
        b.emit(I.op_call, fn, [left], [False], target)
        return _slot_ev(target)

    def e_Call(self, e: A.Call) -> Ev:
        if self._is_pure_call(e):
            return self.pure_call(e)
        target = self.b.temp()
        self.call(e, target)
        return _temp_ev(target)

    def e_MethodCall(self, e: A.MethodCall) -> Ev:
        enum_ev = self._enum_constructor(e)
        if enum_ev is not None:
            return enum_ev
        target = self.b.temp()
        self.call(e, target)
        return _temp_ev(target)

    def _enum_constructor(self, e: A.MethodCall) -> Ev | None:
        if type(e.obj) is not A.Name:
            return None
        ename = e.obj.id
        variants = self._enum_variants(ename)
        if variants is None or e.name not in variants:
            return None
        argevs = self._operands(e.args)
        variant = e.name
        return lambda f: EnumValue(ename, variant, [a(f) for a in argevs])

    def _enum_variants(self, name: str) -> dict[str, int] | None:
        if self.b.lookup_local(name) is not None:
            return None
        if name in self.ctx.enums:
            return self.ctx.enums[name]
        if name == "Result":
            return {"Ok": 1, "Err": 1}
        return None

    def _dotted_builtin(self, e: A.MethodCall) -> Any:
        """A builtin registered under a dotted name (``stream.map``) called as
        ``stream.map(...)`` where ``stream`` is not a variable."""
        if type(e.obj) is not A.Name:
            return None
        ns = e.obj.id
        if self.b.lookup_local(ns) is not None or self._is_global(ns):
            return None
        return self.ctx.builtins.get(f"{ns}.{e.name}")

    def _is_pure_call(self, e: A.Call) -> bool:
        name = e.func.id
        if self.b.lookup_local(name) is not None or self._is_global(name):
            return False
        bi = self.ctx.builtins.get(name)
        return bi is not None and name in self.ctx.pure_builtins

    def pure_call(self, e: A.Call) -> Ev:
        """An ev calling a pure builtin inline, without an instruction (``e`` must pass
        ``_is_pure_call``); more arguments than the builtin's ``max_args`` are evaluated and
        then raise the registry's ``E324`` (:func:`~harnpy.stdlib.registry.surplus_error`)."""
        from harnpy.stdlib.registry import surplus_error

        bi = self.ctx.builtins[e.func.id]
        fn = bi.fn
        spread = [type(a) is A.Spread for a in e.args]
        argevs = self._operands(e.args)
        mx = bi.max_args
        span = e.span
        if any(spread):
            build = I._args_builder(argevs, spread)

            def call_spread(f: Frame) -> Any:
                try:
                    args = build(f)
                    if mx is not None and len(args) > mx:
                        raise surplus_error(bi, len(args))
                    return fn(f.thread, *args)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call_spread
        if mx is not None and len(argevs) > mx:

            def call_surplus(f: Frame) -> Any:
                try:
                    for a in argevs:
                        a(f)
                    raise surplus_error(bi, len(argevs))
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call_surplus
        n = len(argevs)
        if n == 0:

            def call0(f: Frame) -> Any:
                try:
                    return fn(f.thread)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call0
        if n == 1:
            a0 = argevs[0]

            def call1(f: Frame) -> Any:
                try:
                    return fn(f.thread, a0(f))
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call1
        if n == 2:
            a0, a1 = argevs

            def call2(f: Frame) -> Any:
                try:
                    return fn(f.thread, a0(f), a1(f))
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call2

        def calln(f: Frame) -> Any:
            try:
                return fn(f.thread, *[a(f) for a in argevs])
            except HarnError as err:
                _locate(err, span)
                raise

        return calln

    def call(self, e: A.Call | A.MethodCall, target: int | None) -> None:
        """Emit a call instruction; its result goes to ``target`` (a temp if None)."""
        b = self.b
        if target is None:
            target = b.temp()
        if type(e) is A.MethodCall:
            enum_ev = self._enum_constructor(e)
            if enum_ev is not None:
                b.emit(I.op_store, target, enum_ev)
                return
            dotted = self._dotted_builtin(e)
            if dotted is not None:
                spread = [type(a) is A.Spread for a in e.args]
                argevs = self._operands(e.args)
                b.span = e.span
                b.emit(I.op_call, _const(dotted), argevs, spread, target)
                return
            obj = self.expr(e.obj)
            if any(self._suspends_any(a) for a in e.args) and not _is_stable(e.obj):
                obj = self.spill(obj)
            spread = [type(a) is A.Spread for a in e.args]
            argevs = self._operands(e.args)
            b.span = e.span
            b.emit(I.op_method, obj, e.name, argevs, spread, e.optional, target)
            return
        assert type(e) is A.Call
        if self._is_pure_call(e):
            b.emit(I.op_store, target, self.pure_call(e))
            return
        spread = [type(a) is A.Spread for a in e.args]
        argevs = self._operands(e.args)
        b.span = e.span
        name = e.func.id
        binding = b.lookup_local(name)
        if binding is not None:
            b.emit(I.op_call, self.name_ev(name, e.span), argevs, spread, target)
            return
        if self._is_global(name):
            b.emit(
                I.op_call_global,
                self.ctx.module.globals,
                name,
                self.ctx.builtins.get(name),
                argevs,
                spread,
                target,
            )
            return
        bi = self.ctx.builtins.get(name)
        if bi is not None:
            b.emit(I.op_call, _const(bi), argevs, spread, target)
            return
        b.emit(I.op_call_dynamic, name, argevs, spread, target)

    def tail_call(self, e: A.Call) -> None:
        """Emit ``return f(args)`` as a tail call, so the callee does not grow the frame stack
        (spec 3.11), followed by the return of its result."""
        b = self.b
        spread = [type(a) is A.Spread for a in e.args]
        argevs = self._operands(e.args)
        target = b.temp()
        name = e.func.id
        b.span = e.span
        binding = b.lookup_local(name)
        if binding is not None:
            b.emit(I.op_tail_call, self.name_ev(name, e.span), argevs, spread, target)
        elif self._is_global(name):
            b.emit(
                I.op_tail_call_global,
                self.ctx.module.globals,
                name,
                self.ctx.builtins.get(name),
                argevs,
                spread,
                target,
            )
        else:
            callee = self.name_ev(name, e.span)
            b.emit(I.op_tail_call, callee, argevs, spread, target)
        b.emit(I.op_return, _slot_ev(target), nxt=False)

    def e_Attribute(self, e: A.Attribute) -> Ev:
        if type(e.obj) is A.Name:
            variants = self._enum_variants(e.obj.id)
            if variants is not None and e.name in variants:
                return _const(EnumValue(e.obj.id, e.name, []))
        obj = self.expr(e.obj)
        name = e.name
        watch = name in WATCHED_KEYS and self._watches_outcomes()
        if e.optional:

            def opt(f: Frame) -> Any:
                o = obj(f)
                if o is None:
                    return None
                if type(o) is dict:
                    if watch and f.thread.runtime.unchecked_outcomes:
                        outcome_checked(f.thread.runtime, o)
                    return o.get(name)
                try:
                    return ops.get_property(o, name)
                except HarnRuntimeError:
                    return None

            return opt

        span = e.span
        if watch:

            def watched_prop(f: Frame) -> Any:
                o = obj(f)
                if type(o) is dict:
                    if f.thread.runtime.unchecked_outcomes:
                        outcome_checked(f.thread.runtime, o)
                    return o.get(name)
                try:
                    return ops.get_property(o, name)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return watched_prop

        def prop(f: Frame) -> Any:
            o = obj(f)
            if type(o) is dict:
                return o.get(name)
            try:
                return ops.get_property(o, name)
            except HarnError as err:
                _locate(err, span)
                raise

        return prop

    def _watches_outcomes(self) -> bool:
        """Whether reads of ``status`` / ``error`` in this module mark a failed agent-loop
        result as checked (:mod:`harnpy.runtime.outcomes`): the program's own modules do,
        the bundled ``std/`` modules do not (a library reading a result is not the program
        looking at it)."""
        return not str(getattr(self.ctx.module, "path", "")).startswith("std/")

    def e_Index(self, e: A.Index) -> Ev:
        obj = self.expr(e.obj)
        if self.suspends(e.index) and not _is_stable(e.obj):
            obj = self.spill(obj)
        idx = self.expr(e.index)
        if (
            type(e.index) is A.Literal
            and e.index.value in WATCHED_KEYS
            and self._watches_outcomes()
        ):
            # r["status"] checks a failed agent-loop result like r.status does
            obj = _watching(obj)
        if e.optional:
            return lambda f: _opt_index(obj(f), idx(f))
        span = e.span

        def index(f: Frame) -> Any:
            try:
                return ops.index(obj(f), idx(f))
            except HarnError as err:
                _locate(err, span)
                raise

        return index

    def e_Slice(self, e: A.Slice) -> Ev:
        obj = self.expr(e.obj)
        start = self.expr(e.start) if e.start is not None else _const(None)
        end = self.expr(e.end) if e.end is not None else _const(None)
        span = e.span

        def slice_(f: Frame) -> Any:
            try:
                return ops.slice_value(obj(f), start(f), end(f))
            except HarnError as err:
                _locate(err, span)
                raise

        return slice_

    def e_TryPropagate(self, e: A.TryPropagate) -> Ev:
        b = self.b
        slot = b.temp()
        b.emit(I.op_store, slot, self.expr(e.value))
        b.emit(I.op_propagate, slot)
        return _slot_ev(slot)

    def e_TryStar(self, e: A.TryStar) -> Ev:
        if self.b.module_level and self.b.code.id == -1:
            raise CompileError("try* requires an enclosing function", e.span, "E205")
        return self.expr(e.value)

    def e_StructLit(self, e: A.StructLit) -> Ev:
        name = e.name
        later = self._later_suspends(e.fields)
        fields = [(ent.key, self._entry_value(ent, later[i])) for i, ent in enumerate(e.fields)]
        return lambda f: StructValue(name, {k: ev(f) for k, ev in fields})  # type: ignore[misc]

    def e_Spread(self, e: A.Spread) -> Ev:
        raise CompileError(
            "spread (...) is only allowed in lists, dicts and call arguments", e.span
        )
