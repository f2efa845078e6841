"""Statement compilation (the ``s_<NodeType>`` methods of
:class:`~harnpy.runtime.compiler.core.Compiler`): bindings, assignment, declarations, loops,
jumps, ``defer``, ``yield``, ``mutex`` and ``select``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harnpy.runtime import instrs as I
from harnpy.runtime.code import Frame
from harnpy.runtime.compiler.evals import (
    _BIN_OPS,
    _PERMIT_NAME,
    _binop_ev,
    _const,
    _destructure_dict_ev,
    _destructure_list_ev,
    _err_const,
    _is_bool_expr,
    _is_stable,
    _list_item_ev,
    _literal_value,
    _op_move_global,
    _op_pending_jump,
    _op_store_existing_global,
    _pair_part_ev,
    _runtime_builtin,
    _slot_ev,
    _type_label,
    type_checker,
)
from harnpy.runtime.compiler.ir import (
    Binding,
    CompileError,
    Ev,
    Label,
    LoopCtx,
    contains_placeholder,
)
from harnpy.runtime.values import (
    StructType,
    type_name,
)
from harnpy.syntax import ast as A

if TYPE_CHECKING:
    from harnpy.runtime import direct_loops
else:  # imported when the first fn or loop is compiled: a program with neither never needs it
    from harnpy._lazy import lazy_module

    direct_loops = lazy_module("harnpy.runtime.direct_loops")


if TYPE_CHECKING:
    from harnpy.runtime.compiler.core import Compiler


class StatementsMixin:
    """The statement half of the compiler (mixed into ``Compiler``)."""

    def s_ExprStmt(self: Compiler, st: A.ExprStmt) -> None:
        v = st.value
        t = type(v)
        if t is A.Call or t is A.MethodCall:
            self.call(v, target=None)  # type: ignore[arg-type]
            return
        if t in (A.IfExpr, A.MatchExpr, A.TryExpr):
            self.expr(v, discard=True)
            return
        ev = self.expr(v)
        self.b.emit(I.op_eval, ev)

    def s_LetStmt(self: Compiler, st: A.LetStmt) -> None:
        b = self.b
        value = st.value
        pat = st.pattern
        if (
            st.type is not None
            and type(pat) is A.NamePattern
            and type(value) is A.Literal
            and value.value is not None
        ):
            check = type_checker(st.type, self.ctx)
            if check is not None and not check(value.value):
                raise CompileError(
                    f"'{pat.name}' declared as {_type_label(st.type)}, but assigned "
                    f"{type_name(value.value)}",
                    st.span,
                    "E202",
                )
        if (
            type(pat) is A.NamePattern
            and type(value) is A.ClosureExpr
            and not b.at_module_top()
            and pat.name != "_"
        ):
            # Let-bound closures can refer to themselves (recursive closures).
            mutable = st.mutable or (self.ctx.let_mutable and not st.is_const)
            slot = b.declare(pat.name, mutable, "var" if mutable else "let")
            ev = self.closure_expr(value, self_name=pat.name)
            b.emit(I.op_store, slot, ev)
            return
        ev = self.expr(value)
        self.bind_pattern(pat, ev, st.mutable or (self.ctx.let_mutable and not st.is_const))

    def bind_pattern(self: Compiler, pat: A.Pattern, ev: Ev, mutable: bool) -> None:
        """Bind the value of ``ev`` to a ``let``/``var``/``for`` pattern (spec 2.3): a name, a
        dict or list destructuring (defaults apply when the extracted value is nil, ``...rest``
        collects the rest) or a ``(a, b)`` pair (spec 3.13). At the module top names become
        module globals, elsewhere new slots; ``_`` evaluates and discards. Redeclaring an
        immutable name in the same scope compiles to a run-time E203 raise (spec 3.10).

        Raises:
            CompileError: an unsupported pattern node.
        """
        b = self.b
        kind = "var" if mutable else "let"
        if type(pat) is A.NamePattern:
            if pat.name == "_":
                b.emit(I.op_eval, ev)
                return
            self._check_redeclare(pat.name, mutable, pat.span)
            if b.at_module_top():
                tmp = getattr(ev, "_temp_slot", None)
                if tmp is not None:
                    b.emit(_op_move_global, self.ctx.module.globals, pat.name, tmp)
                else:
                    b.emit(I.op_store_global, self.ctx.module.globals, pat.name, ev)
                self.ctx.module.global_kinds[pat.name] = kind
                return
            b.store(b.declare(pat.name, mutable, kind), ev)
            return
        tmp = b.temp()
        b.emit(I.op_store, tmp, ev)
        if type(pat) is A.DictPattern:
            keys = [(fld.key, fld.rest) for fld in pat.fields]
            vals = b.temp()
            b.emit(I.op_store, vals, _destructure_dict_ev(tmp, keys))
            for i, fld in enumerate(pat.fields):
                name = fld.key if fld.rest else (fld.alias or fld.key)
                self._bind_extracted(name, vals, i, fld.default, mutable)
            return
        if type(pat) is A.ListPattern:
            n = len(pat.elems)
            rest = bool(pat.elems) and pat.elems[-1].rest
            vals = b.temp()
            b.emit(I.op_store, vals, _destructure_list_ev(tmp, n, rest))
            for i, el in enumerate(pat.elems):
                self._bind_extracted(el.name, vals, i, el.default, mutable)
            return
        if type(pat) is A.PairPattern:
            for i, name in enumerate((pat.first, pat.second)):
                getter = _pair_part_ev(tmp, i)
                self.bind_pattern(A.NamePattern(name, span=pat.span), getter, mutable)
            return
        raise CompileError(f"unsupported pattern {type(pat).__name__}", pat.span)

    def _bind_extracted(
        self: Compiler, name: str, vals: int, i: int, default: A.Expr | None, mutable: bool
    ) -> None:
        b = self.b
        getter = _list_item_ev(vals, i)
        if default is not None:
            tmp = b.temp()
            b.emit(I.op_store, tmp, getter)
            done = Label()
            b.emit(I.op_jump_if_not_nil, tmp, done)
            b.emit(I.op_store, tmp, self.expr(default))
            b.place(done)
            getter = _slot_ev(tmp)
        self.bind_pattern(A.NamePattern(name), getter, mutable)

    def _check_redeclare(self: Compiler, name: str, mutable: bool, span: A.Span) -> None:
        b = self.b
        if b.at_module_top():
            kind = self.declared_globals.get(name)
            self.declared_globals[name] = "var" if mutable else "let"
            if kind == "let" and not mutable and not self.ctx.module.repl:
                b.emit(
                    I.op_raise,
                    _err_const(
                        f"Cannot redeclare immutable variable '{name}' in the same scope", "E203"
                    ),
                )
            return
        existing = b.scopes[-1].get(name)
        if existing is not None and existing.kind == "let" and not mutable:
            b.emit(
                I.op_raise,
                _err_const(
                    f"Cannot redeclare immutable variable '{name}' in the same scope", "E203"
                ),
            )

    def s_AssignStmt(self: Compiler, st: A.AssignStmt) -> None:
        b = self.b
        target = st.target
        opfn = _BIN_OPS.get(st.op) if st.op else None
        if st.op and opfn is None:
            raise CompileError(f"unsupported compound operator {st.op}=", st.span)
        if type(target) is A.Name:
            name = target.id
            if self._grow_in_place(st, name):
                return
            if st.op:
                value_ev = _binop_ev(st.op, self.name_ev(name, target.span), self.expr(st.value))
            else:
                value_ev = self.expr(st.value)
            self.store_name(name, value_ev, st.span)
            return
        # property / subscript assignment: root variable gets the last key (spec 3.8 quirk)
        root = target
        while type(root) in (A.Attribute, A.Index):
            root = root.obj  # type: ignore[union-attr]
        if type(root) is not A.Name:
            raise CompileError("invalid assignment target", st.span)
        if type(target) is A.Attribute:
            key_ev: Ev = _const(target.name)
        else:
            key_ev = self.expr(target.index)  # type: ignore[union-attr]
        value_ev = self.expr(st.value)
        name = root.id
        binding = b.lookup_local(name)
        if binding is not None:
            if not binding.mutable:
                b.emit(
                    I.op_raise, _err_const(f"Cannot assign to immutable binding: {name}", "E204")
                )
                return
            b.emit(I.op_assign_slot_index, binding.slot, key_ev, value_ev, opfn)
            return
        if self._is_global(name):
            if self.ctx.module.global_kinds.get(name) == "let":
                b.emit(
                    I.op_raise, _err_const(f"Cannot assign to immutable binding: {name}", "E204")
                )
                return
            b.emit(I.op_assign_global_index, self.ctx.module.globals, name, key_ev, value_ev, opfn)
            return
        b.emit(I.op_raise, _err_const(f"Undefined variable: {name}", "E301"))

    def _grow_in_place(self: Compiler, st: A.AssignStmt, name: str) -> bool:
        """``xs = xs.push(v)`` and ``xs += ys``: the idiomatic ways to build a list (and
        ``d += {...}`` for dicts). Value semantics make them copies; when nothing else
        holds the container the copy is unobservable, so grow it in place (linear instead
        of quadratic list building). Returns False when the statement is not such a form.
        """
        b = self.b
        value = st.value
        is_push = (
            st.op is None
            and type(value) is A.MethodCall
            and value.name == "push"
            and not value.optional
            and type(value.obj) is A.Name
            and value.obj.id == name
            and len(value.args) == 1
            and type(value.args[0]) is not A.Spread
        )
        if not (is_push or st.op == "+"):
            return False
        binding = b.lookup_local(name)
        if binding is not None:
            if not binding.mutable:
                return False
            where: Any = binding.slot
        elif self._is_global(name) and self.ctx.module.global_kinds.get(name) == "var":
            where = (self.ctx.module.globals, name)
        else:
            return False
        if is_push:
            b.span = st.span
            arg = self.expr(value.args[0])  # type: ignore[union-attr]
            if type(where) is int:
                b.emit(I.op_push_in_place, where, arg)
            else:
                tmp = b.temp()
                done = Label()
                b.emit(I.op_push_global, where[0], where[1], arg, tmp, done)
                b.emit(_op_move_global, where[0], where[1], tmp)
                b.place(done)
        else:
            b.emit(I.op_add_in_place, where, self.expr(value))
        return True

    def store_name(self: Compiler, name: str, ev: Ev, span: A.Span) -> None:
        """Compile ``name = value`` for a plain name: a local slot or an existing module global.
        Assigning a ``let``, ``fn`` or struct name compiles to a run-time E204 raise, an unknown
        name to an E301 ``Undefined variable`` raise (spec 3.10). ``span`` is not used."""
        b = self.b
        binding = b.lookup_local(name)
        if binding is not None:
            if not binding.mutable:
                b.emit(
                    I.op_raise, _err_const(f"Cannot assign to immutable binding: {name}", "E204")
                )
                return
            b.store(binding.slot, ev)
            return
        if self._is_global(name):
            kind = self.ctx.module.global_kinds.get(name)
            if kind in ("let", "fn"):
                b.emit(
                    I.op_raise, _err_const(f"Cannot assign to immutable binding: {name}", "E204")
                )
                return
            b.emit(_op_store_existing_global, self.ctx.module.globals, name, ev)
            return
        b.emit(
            I.op_raise,
            _err_const(
                f"Undefined variable: {name} (declare it first: `var {name} = ...`)", "E301"
            ),
        )

    def s_FnDecl(self: Compiler, st: A.FnDecl) -> None:
        b = self.b
        if b.at_module_top():
            ev = self.closure_expr(st, self_name=None)
            b.emit(I.op_store_global, self.ctx.module.globals, st.name, ev)
            self.ctx.module.global_kinds[st.name] = "fn"
            return
        slot = b.declare(st.name, False, "fn")
        ev = self.closure_expr(st, self_name=st.name)
        b.emit(I.op_store, slot, ev)

    def s_ToolDecl(self: Compiler, st: A.ToolDecl) -> None:
        b = self.b
        clo = self.closure_expr(st, self_name=None)
        params: list[dict[str, Any]] = []
        for p in st.params:
            param: dict[str, Any] = {
                "name": p.name,
                "type": _type_label(p.type) if p.type is not None else "any",
                "required": p.default is None,
                "schema": self.tool_param_schema(p.type),
            }
            known, default = _literal_value(p.default)
            if known:
                param["default"] = default  # a literal default goes into the schema
            params.append(param)
        spec: dict[str, Any] = {"name": st.name, "description": st.description, "params": params}
        if st.ret_type is not None:
            spec["returns"] = self.tool_param_schema(st.ret_type)

        def make(f: Frame) -> Any:
            return f.thread.runtime.make_tool(spec, clo(f))

        if b.at_module_top():
            b.emit(I.op_store_global, self.ctx.module.globals, st.name, make)
            self.ctx.module.global_kinds[st.name] = "fn"
        else:
            slot = b.declare(st.name, False, "fn")
            b.emit(I.op_store, slot, make)

    def s_StructDecl(self: Compiler, st: A.StructDecl) -> None:
        b = self.b
        stype = StructType(
            st.name, [f.name for f in st.fields], {f.name for f in st.fields if f.optional}
        )
        if b.at_module_top():
            b.emit(I.op_store_global, self.ctx.module.globals, st.name, _const(stype))
            self.ctx.module.global_kinds[st.name] = "fn"
        else:
            slot = b.declare(st.name, False, "struct")
            b.emit(I.op_set_const, slot, stype)

    def s_EnumDecl(self: Compiler, st: A.EnumDecl) -> None:
        pass  # enums are resolved at compile time (ModuleContext.enums)

    def s_InterfaceDecl(self: Compiler, st: A.InterfaceDecl) -> None:
        pass

    def s_TypeDecl(self: Compiler, st: A.TypeDecl) -> None:
        self.ctx.module.type_aliases[st.name] = st.type

    def s_OverrideDecl(self: Compiler, st: A.OverrideDecl) -> None:
        pass

    def s_ImportDecl(self: Compiler, st: A.ImportDecl) -> None:
        pass  # imports are resolved before compilation (modules.py)

    def s_PipelineDecl(self: Compiler, st: A.PipelineDecl) -> None:
        pass  # pipelines are entry points, handled by the module loader

    def s_AttributedDecl(self: Compiler, st: A.AttributedDecl) -> None:
        self.stmt(st.decl)

    def s_ImplDecl(self: Compiler, st: A.ImplDecl) -> None:
        b = self.b
        for m in st.methods:
            ev = self.closure_expr(m, self_name=None)
            type_name_ = st.type_name
            mname = m.name

            def make(f: Frame, ev: Ev = ev, t: str = type_name_, n: str = mname) -> None:
                f.thread.runtime.register_impl(t, n, ev(f))

            b.emit(I.op_eval, make)

    def s_SkillDecl(self: Compiler, st: A.SkillDecl) -> None:
        from harnpy.stdlib.skills import new_skill_registry, skill_define

        b = self.b
        fields = [(k, self.expr(v)) for k, v in st.fields]
        name = st.name

        def make(f: Frame) -> Any:
            cfg = {k: ev(f) for k, ev in fields}
            return skill_define(f.thread, new_skill_registry(), name, cfg)

        self._check_redeclare(name, False, st.span)
        if b.at_module_top():
            b.emit(I.op_store_global, self.ctx.module.globals, name, make)
            self.ctx.module.global_kinds[name] = "let"
        else:
            slot = b.declare(name, False, "let")
            b.emit(I.op_store, slot, make)

    def s_IfExpr(self: Compiler, st: A.IfExpr) -> None:
        self.if_expr(st, None)

    def s_MatchExpr(self: Compiler, st: A.MatchExpr) -> None:
        self.match_expr(st, None)

    def s_TryExpr(self: Compiler, st: A.TryExpr) -> None:
        self.try_expr(st, None)

    def s_WhileStmt(self: Compiler, st: A.WhileStmt) -> None:
        b = self.b
        top = Label()
        end = Label()
        cont = Label()
        b.place(top)
        b.place(cont)
        n0 = len(b.ir)
        self.cond_jump(st.cond, end, jump_if=False)
        head = b.ir[n0:]
        body = Label()
        b.place(body)
        b.loops.append(LoopCtx(end, cont, len(b.finallies)))
        self.block(st.body)
        b.loops.pop()
        b.span = st.span
        if len(head) == 1 and head[0].factory is I.op_jump_if_false:
            # The condition is one instruction: the back-edge tests it itself and jumps
            # straight into the body (same instruction count and pcs as a plain back-jump).
            cond, is_bool = head[0].args[0], head[0].args[1]
            lb = direct_loops.loop_body(self, st.body, self._direct_resolve, cond=st.cond)
            if lb is not None:
                # the iterations run as one Python loop (runtime/direct_loops.py)
                b.emit(
                    direct_loops.op_direct_loop,
                    I.op_loop_back_if,
                    lb,
                    body,
                    end,
                    -1,
                    cond,
                    is_bool,
                    body,
                    end,
                    nxt=False,
                )
            else:
                b.emit(I.op_loop_back_if, cond, is_bool, body, end, nxt=False)
        else:
            b.emit(I.op_loop_back, top, nxt=False)
        b.place(end)

    def s_ForStmt(self: Compiler, st: A.ForStmt) -> None:
        b = self.b
        it_slot = b.temp()
        b.emit(I.op_iter_init, self.expr(st.iterable), it_slot)
        top = Label()
        end = Label()
        gen_item = Label()
        body = Label()
        b.push_scope()
        pat = st.pattern
        simple = type(pat) is A.NamePattern
        var_slot = b.declare(pat.name, True, "for") if simple else b.temp()  # type: ignore[union-attr]
        b.place(top)
        b.emit(I.op_for_next, it_slot, var_slot, end, gen_item)
        b.emit(I.op_jump, body, nxt=False)
        b.place(gen_item)
        b.emit(I.op_for_gen_item, it_slot, var_slot, end)
        b.place(body)
        if not simple:
            self.bind_pattern(pat, _slot_ev(var_slot), True)
        b.loops.append(LoopCtx(end, top, len(b.finallies)))
        self.block(st.body)
        b.loops.pop()
        b.span = st.span
        lb = None
        if simple:
            lb = direct_loops.loop_body(self, st.body, self._direct_resolve, var_slot=var_slot)
        if lb is not None:
            # the iterations run as one Python loop (runtime/direct_loops.py)
            b.emit(
                direct_loops.op_direct_loop,
                I.op_for_back,
                lb,
                body,
                end,
                it_slot,
                it_slot,
                var_slot,
                end,
                top,
                body,
                nxt=False,
            )
        else:
            b.emit(I.op_for_back, it_slot, var_slot, end, top, body, nxt=False)
        b.pop_scope()
        b.place(end)

    def s_GuardStmt(self: Compiler, st: A.GuardStmt) -> None:
        b = self.b
        ok_label = Label()
        self.cond_jump(st.cond, ok_label, jump_if=True)
        self.block(st.otherwise)
        b.place(ok_label)

    def s_RequireStmt(self: Compiler, st: A.RequireStmt) -> None:
        b = self.b
        ok_label = Label()
        self.cond_jump(st.cond, ok_label, jump_if=True)
        msg = (
            self.expr(st.message) if st.message is not None else _const("require condition failed")
        )
        b.emit(I.op_throw, msg)
        b.place(ok_label)

    def s_ThrowStmt(self: Compiler, st: A.ThrowStmt) -> None:
        self.b.emit(I.op_throw, self.expr(st.value))

    def s_ReturnStmt(self: Compiler, st: A.ReturnStmt) -> None:
        b = self.b
        value = st.value
        if b.finallies:
            ev = self.expr(value) if value is not None else _const(None)
            fc = b.finallies[-1]
            b.emit(I.op_pending_return, fc.pending_slot, ev, fc.finally_label, nxt=False)
            return
        if (
            value is not None
            and type(value) is A.Call
            and not b.in_generator
            and not b.declares_fns
            and not self._is_pure_call(value)
        ):
            self.tail_call(value)
            return
        if (
            value is not None
            and type(value) is A.Pipe
            and not b.in_generator
            and not b.declares_fns
            and not contains_placeholder(value.right)
        ):
            left = self.expr(value.left)
            if not _is_stable(value.left):
                left = self.spill(left)
            fn = self.expr(value.right)
            target = b.temp()
            b.emit(I.op_tail_call, fn, [left], [False], target)
            b.emit(I.op_return, _slot_ev(target), nxt=False)
            return
        ev = self.expr(value) if value is not None else _const(None)
        b.emit(I.op_return, ev, nxt=False)

    def s_BreakStmt(self: Compiler, st: A.BreakStmt) -> None:
        self._loop_jump(st, is_break=True)

    def s_ContinueStmt(self: Compiler, st: A.ContinueStmt) -> None:
        self._loop_jump(st, is_break=False)

    def _loop_jump(self: Compiler, st: A.Node, is_break: bool) -> None:
        b = self.b
        if not b.loops:
            raise CompileError(f"{'break' if is_break else 'continue'} outside of a loop", st.span)
        loop = b.loops[-1]
        target = loop.break_label if is_break else loop.continue_label
        if len(b.finallies) > loop.finally_depth:
            fc = b.finallies[-1]
            b.emit(_op_pending_jump, fc.pending_slot, target, fc.finally_label, nxt=False)
            return
        b.emit(I.op_jump, target, nxt=False)

    def s_DeferStmt(self: Compiler, st: A.DeferStmt) -> None:
        b = self.b
        code = b.code
        if code.defer_slot is None:
            code.defer_slot = b.temp()
            code.defer_discard = b.temp()
        closure_node = A.ClosureExpr((), st.body, span=st.span)
        ev = self.closure_expr(closure_node, self_name=None)
        b.emit(I.op_defer, ev)

    def s_YieldStmt(self: Compiler, st: A.YieldStmt) -> None:
        ev = self.expr(st.value) if st.value is not None else _const(None)
        self.b.emit(I.op_yield, ev)

    def s_EmitStmt(self: Compiler, st: A.EmitStmt) -> None:
        self.b.emit(I.op_yield, self.expr(st.value))

    def s_MutexStmt(self: Compiler, st: A.MutexStmt) -> None:
        """``mutex { body }``: hold the default mutex around the body (released on throw)."""
        b = self.b
        permit = b.temp()
        b.emit(I.op_call, _runtime_builtin("__mutex_enter"), [], [], permit)
        release = A.ExprStmt(A.Call(A.Name("__mutex_exit"), (A.Name(_PERMIT_NAME),)))
        b.push_scope()
        b.scopes[-1][_PERMIT_NAME] = Binding(permit, False, "let")
        self.try_expr(A.TryExpr(st.body, finally_body=A.Block((release,))), None)
        b.pop_scope()

    def s_SelectStmt(self: Compiler, st: A.SelectStmt) -> None:
        ev = self.select_expr(st)
        self.b.emit(I.op_eval, ev)

    # ================================================================ helpers

    def _direct_resolve(self: Compiler, name: str) -> tuple[str, Any, bool, bool] | None:
        """An outer name of a direct loop body (runtime/direct_loops.py), resolved as
        :meth:`name_ev` would: ``("s", slot, mutable, may_be_unbound)`` for a local or a
        capture, ``("g", name, mutable, False)`` for a module global, None otherwise."""
        binding = self.b.lookup_local(name)
        if binding is not None:
            check = binding.kind == "capture" and self._capture_may_be_unbound(name)
            return ("s", binding.slot, binding.mutable, check)
        if name in self.ctx.enums or not self._is_global(name):
            return None
        return ("g", name, self.ctx.module.global_kinds.get(name) == "var", False)

    def _is_global(self: Compiler, name: str) -> bool:
        return name in self.ctx.global_names or name in self.ctx.module.globals

    def cond_jump(self: Compiler, cond: A.Expr, label: Label, jump_if: bool) -> None:
        """Emit a jump to ``label`` taken when the truthiness of ``cond`` (spec 3.4) equals
        ``jump_if``."""
        ev = self.expr(cond)
        is_bool = _is_bool_expr(cond)
        if jump_if:
            self.b.emit(I.op_jump_if_true, ev, is_bool, label)
        else:
            self.b.emit(I.op_jump_if_false, ev, is_bool, label)

    # ================================================================ expressions
