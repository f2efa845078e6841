"""Control-flow expressions (mixed into :class:`~harnpy.runtime.compiler.core.Compiler`):
``if``/``match`` (with pattern tests), ``try``, ``spawn``, ``parallel``, ``retry``,
``deadline``, ``select``, and the analysis of which expressions can suspend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harnpy.runtime import instrs as I
from harnpy.runtime.code import Frame
from harnpy.runtime.compiler.evals import (
    _const,
    _dict_get_ev,
    _enum_field_ev,
    _eq_slot_ev,
    _list_item_ev,
    _monotonic_ev,
    _op_deadline_check,
    _op_incr,
    _op_retry_again,
    _runtime_builtin,
    _slot_ev,
    _wrap_ok_ev,
)
from harnpy.runtime.compiler.ir import (
    _CODE_NODES,
    Ev,
    FinallyCtx,
    Label,
    _OuterFinally,
)
from harnpy.syntax import ast as A

if TYPE_CHECKING:
    from harnpy.runtime.compiler.core import Compiler


class ControlFlowMixin:
    """Control-flow expressions and suspension analysis (mixed into ``Compiler``)."""

    def e_IfExpr(self: Compiler, e: A.IfExpr, discard: bool = False) -> Ev:
        return self.if_expr(e, None if discard else self.b.temp())

    def if_expr(self: Compiler, e: A.IfExpr, res: int | None) -> Ev:
        """Compile ``if``/``else if``/``else`` (spec 2.5). The value goes to slot ``res`` (nil
        when no branch runs); with ``res`` None it is discarded. Returns an ev of the value (a
        nil constant when discarded)."""
        b = self.b
        end = Label()
        other = Label()
        self.cond_jump(e.cond, other, jump_if=False)
        v = self.block(e.then, want_value=res is not None)
        if res is not None:
            b.emit(I.op_store, res, v or _const(None))
        b.emit(I.op_jump, end, nxt=False)
        b.place(other)
        if e.otherwise is None:
            if res is not None:
                b.emit(I.op_set_const, res, None)
        elif type(e.otherwise) is A.IfExpr:
            b.span = e.otherwise.span
            self.if_expr(e.otherwise, res)
        else:
            v2 = self.block(e.otherwise, want_value=res is not None)  # type: ignore[arg-type]
            if res is not None:
                b.emit(I.op_store, res, v2 or _const(None))
        b.place(end)
        return _slot_ev(res) if res is not None else _const(None)

    def e_MatchExpr(self: Compiler, e: A.MatchExpr, discard: bool = False) -> Ev:
        return self.match_expr(e, None if discard else self.b.temp())

    def match_expr(self: Compiler, e: A.MatchExpr, res: int | None) -> Ev:
        """Compile ``match`` (spec 2.6): arms are tried in order with :meth:`pattern_test`
        (or-pattern alternatives bind nothing; the guard runs after the bindings) and the first
        matching arm's block value goes to slot ``res``; no match throws ``No match arm matched
        the value``. Returns an ev of the value (a nil constant when ``res`` is None)."""
        b = self.b
        val = b.temp()
        b.emit(I.op_store, val, self.expr(e.value))
        end = Label()
        for arm in e.arms:
            b.span = arm.span
            nxt_arm = Label()
            b.push_scope()
            if len(arm.patterns) == 1:
                self.pattern_test(arm.patterns[0], val, nxt_arm)
            else:
                body_label = Label()
                for p in arm.patterns:
                    alt_fail = Label()
                    self.pattern_test(p, val, alt_fail, bind=False)
                    b.emit(I.op_jump, body_label, nxt=False)
                    b.place(alt_fail)
                b.emit(I.op_jump, nxt_arm, nxt=False)
                b.place(body_label)
            if arm.guard is not None:
                self.cond_jump(arm.guard, nxt_arm, jump_if=False)
            v = self.block(arm.body, want_value=res is not None)
            if res is not None:
                b.emit(I.op_store, res, v or _const(None))
            b.emit(I.op_jump, end, nxt=False)
            b.pop_scope()
            b.place(nxt_arm)
        b.span = e.span
        b.emit(I.op_throw, _const("No match arm matched the value"))
        b.place(end)
        return _slot_ev(res) if res is not None else _const(None)

    def pattern_test(self: Compiler, p: A.Expr, val: int, fail: Label, bind: bool = True) -> None:
        """Emit code that jumps to ``fail`` unless ``f.slots[val]`` matches pattern ``p``;
        bindings become new slots in the current scope (spec 2.6)."""
        b = self.b
        t = type(p)
        vev = _slot_ev(val)
        if t is A.Name:
            if p.id == "_":
                return
            if bind:
                slot = b.declare(p.id, False, "let")
                b.emit(I.op_store, slot, vev)
            return
        if t in (A.Attribute, A.MethodCall) and type(p.obj) is A.Name:
            if self._enum_variants(p.obj.id) is not None:
                ename, vname = p.obj.id, p.name
                b.emit(
                    I.op_jump_if_false,
                    lambda f: I.enum_matches(f.slots[val], ename, vname),
                    True,
                    fail,
                )
                # E.V(a, b): identifiers bind fields by position; nested patterns match;
                # other non-identifier arguments are ignored (spec 2.6).
                for i, arg in enumerate(getattr(p, "args", ())):
                    if type(arg) is A.Name:
                        if arg.id != "_" and bind:
                            slot = b.declare(arg.id, False, "let")
                            b.emit(I.op_store, slot, _enum_field_ev(val, i))
                    elif type(arg) in (A.DictLit, A.ListLit, A.MethodCall, A.Attribute):
                        sub = b.temp()
                        b.emit(I.op_store, sub, _enum_field_ev(val, i))
                        self.pattern_test(arg, sub, fail, bind)  # type: ignore[arg-type]
                return
        if t is A.DictLit:
            b.emit(I.op_jump_if_false, lambda f: type(f.slots[val]) is dict, True, fail)
            for ent in p.entries:
                if type(ent) is A.Spread or ent.computed:
                    continue
                key = ent.key
                sub = b.temp()
                b.emit(I.op_store, sub, _dict_get_ev(val, key))  # type: ignore[arg-type]
                if type(ent.value) is A.Name:
                    if ent.value.id != "_" and bind:
                        slot = b.declare(ent.value.id, False, "let")
                        b.emit(I.op_store, slot, _slot_ev(sub))
                elif type(ent.value) in (A.DictLit, A.ListLit):
                    self.pattern_test(ent.value, sub, fail, bind)
                else:
                    want = self.expr(ent.value)
                    b.emit(
                        I.op_jump_if_false,
                        _eq_slot_ev(sub, want),
                        True,
                        fail,
                    )
            return
        if t is A.ListLit:
            n = len(p.items)
            b.emit(I.op_jump_if_false, lambda f: I.list_prefix_matches(f.slots[val], n), True, fail)
            for i, item in enumerate(p.items):
                if type(item) is A.Spread:
                    continue
                sub = b.temp()
                b.emit(I.op_store, sub, _list_item_ev(val, i))
                if type(item) is A.Name:
                    if item.id != "_" and bind:
                        slot = b.declare(item.id, False, "let")
                        b.emit(I.op_store, slot, _slot_ev(sub))
                elif type(item) in (A.DictLit, A.ListLit):
                    self.pattern_test(item, sub, fail, bind)
                else:
                    want = self.expr(item)
                    b.emit(I.op_jump_if_false, _eq_slot_ev(sub, want), True, fail)
            return
        if t is A.BinOp and p.op == "|":
            ok_label = Label()
            alt = Label()
            self.pattern_test(p.left, val, alt, bind=False)
            b.emit(I.op_jump, ok_label, nxt=False)
            b.place(alt)
            self.pattern_test(p.right, val, fail, bind=False)
            b.place(ok_label)
            return
        want = self.expr(p)
        b.emit(I.op_jump_if_false, _eq_slot_ev(val, want), True, fail)

    def e_TryExpr(self: Compiler, e: A.TryExpr, discard: bool = False) -> Ev:
        return self.try_expr(e, None if discard else self.b.temp())

    def try_expr(self: Compiler, e: A.TryExpr, res: int | None) -> Ev:
        """Compile ``try``/``catch``/``finally`` (spec 2.7, 3.12): catch and finally handlers
        cover the protected region, and ``return``/``break``/``continue`` inside it run the
        finally block first. Without catch and finally it is a try-expression producing a
        ``Result``. The value goes to slot ``res`` (discarded when None); returns an ev of it."""
        b = self.b
        if not e.has_catch and e.finally_body is None:
            return self._try_result(e, res if res is not None else b.temp())
        start = Label()
        body_end = Label()
        catch_label = Label()
        region_end = Label()
        finally_label = Label()
        finally_handler = Label()
        end = Label()
        has_finally = e.finally_body is not None
        pending = b.temp() if has_finally else -1
        fctx = FinallyCtx(pending, finally_label, start, region_end)
        if has_finally:
            b.finallies.append(fctx)
        b.place(start)
        v = self.block(e.body, want_value=res is not None)
        if res is not None:
            b.emit(I.op_store, res, v or _const(None))
        b.place(body_end)
        if has_finally:
            b.emit(I.op_set_pending, pending, I.PENDING_NORMAL, None, finally_label, nxt=False)
        else:
            b.emit(I.op_jump, end, nxt=False)
        if e.has_catch:
            b.place(catch_label)
            b.push_scope()
            if e.catch_name:
                cslot = b.declare(e.catch_name, True, "catch")
            else:
                cslot = b.temp()
            ctype = None
            if e.catch_type is not None and type(e.catch_type) is A.TypeName:
                ctype = e.catch_type.name
            b.handlers.append((start, body_end, catch_label, "catch", cslot, ctype))
            cv = self.block(e.catch_body, want_value=res is not None)  # type: ignore[arg-type]
            if res is not None:
                b.emit(I.op_store, res, cv or _const(None))
            b.pop_scope()
        b.place(region_end)
        if has_finally:
            b.finallies.pop()
            b.emit(I.op_set_pending, pending, I.PENDING_NORMAL, None, finally_label, nxt=False)
            b.place(finally_handler)
            b.handlers.append((start, region_end, finally_handler, "finally", pending, None))
            b.place(finally_label)
            self.block(e.finally_body)  # type: ignore[arg-type]
            outer = (_OuterFinally(b.finallies[-1]),) if b.finallies else None
            b.emit(I.op_end_finally, pending, outer)
        b.place(end)
        return _slot_ev(res) if res is not None else _const(None)

    def _try_result(self: Compiler, e: A.TryExpr, res: int) -> Ev:
        b = self.b
        start = Label()
        body_end = Label()
        handler = Label()
        end = Label()
        b.place(start)
        v = self.block(e.body, want_value=True)
        b.emit(I.op_store, res, _wrap_ok_ev(v or _const(None)))
        b.place(body_end)
        b.emit(I.op_jump, end, nxt=False)
        b.place(handler)
        b.handlers.append((start, body_end, handler, "result", res, None))
        b.place(end)
        return _slot_ev(res)

    def e_SpawnExpr(self: Compiler, e: A.SpawnExpr) -> Ev:
        node = A.ClosureExpr((), e.body, span=e.span)
        make = self.closure_expr(node, None)
        target = self.b.temp()
        self.b.emit(I.op_call, _runtime_builtin("__spawn"), [make], [False], target)
        return _slot_ev(target)

    def e_ParallelExpr(self: Compiler, e: A.ParallelExpr) -> Ev:
        params = (A.Param(e.param),) if e.param else ()
        node = A.ClosureExpr(params, e.body, span=e.span)
        make = self.closure_expr(node, None)
        value = self.expr(e.value)
        limit = self.expr(e.max_concurrent) if e.max_concurrent is not None else _const(None)
        mode = e.mode + ("_stream" if e.as_stream else "")
        target = self.b.temp()
        self.b.emit(
            I.op_call,
            _runtime_builtin("__parallel"),
            [_const(mode), value, make, limit],
            [False] * 4,
            target,
        )
        return _slot_ev(target)

    def e_RetryExpr(self: Compiler, e: A.RetryExpr) -> Ev:
        """``retry n { body }`` inline (the body sees and updates the enclosing variables):
        run the body up to ``n`` times until it completes; rethrow the last error."""
        b = self.b
        count = b.temp()
        attempt = b.temp()
        pending = b.temp()
        res = b.temp()
        b.emit(I.op_store, count, self.expr(e.count))
        b.emit(I.op_set_const, attempt, 0)
        top = Label()
        start = Label()
        body_end = Label()
        handler = Label()
        end = Label()
        b.place(top)
        b.emit(_op_incr, attempt)
        b.place(start)
        v = self.block(e.body, want_value=True)
        b.emit(I.op_store, res, v or _const(None))
        b.place(body_end)
        b.emit(I.op_jump, end, nxt=False)
        b.place(handler)
        b.handlers.append((start, body_end, handler, "finally", pending, None))
        b.emit(_op_retry_again, attempt, count, pending, top)
        b.place(end)
        return _slot_ev(res)

    def e_DeadlineExpr(self: Compiler, e: A.DeadlineExpr) -> Ev:
        """``deadline d { body }`` inline: the body's value, or throw ``Deadline exceeded``
        when it ran longer than ``d`` (measured on the runtime clock when it completes)."""
        b = self.b
        limit = b.temp()
        started = b.temp()
        res = b.temp()
        b.emit(I.op_store, limit, self.expr(e.duration))
        b.emit(I.op_store, started, _monotonic_ev)
        v = self.block(e.body, want_value=True)
        b.emit(I.op_store, res, v or _const(None))
        b.emit(_op_deadline_check, limit, started)
        return _slot_ev(res)

    def select_expr(self: Compiler, st: A.SelectStmt) -> Ev:
        """Compile ``select`` (spec 2.9, 3.16): each case body becomes a closure and the
        ``__select`` runtime builtin runs the first ready case; returns an ev of the call's
        result."""
        cases = []
        for c in st.cases:
            params = (A.Param(c.name),) if c.name else ()
            make = self.closure_expr(A.ClosureExpr(params, c.body, span=c.span), None)
            value = self.expr(c.value) if c.value is not None else _const(None)
            cases.append((c.kind, value, make))
        target = self.b.temp()

        def build(f: Frame) -> list[Any]:
            return [{"kind": k, "value": v(f), "body": m(f)} for k, v, m in cases]

        self.b.emit(I.op_call, _runtime_builtin("__select"), [build], [False], target)
        return _slot_ev(target)

    # ================================================================ analysis

    def suspends(self: Compiler, e: Any) -> bool:
        """True when compiling ``e`` emits instructions (calls or control flow); memoized
        per node, so repeated queries over nested operands stay linear."""
        if e is None or isinstance(e, str):
            return False
        key = id(e)
        hit = self._suspends_memo.get(key)
        if hit is not None:
            return hit
        r = self._suspends(e)
        self._suspends_memo[key] = r
        return r

    def _suspends(self: Compiler, e: Any) -> bool:
        t = type(e)
        if t in (A.Literal, A.DurationLit, A.Name, A.ClosureExpr):
            return False
        if t is A.Call:
            if not self._is_pure_call(e):
                return True
        elif t is A.MethodCall:
            if not (type(e.obj) is A.Name and self._enum_variants(e.obj.id) is not None):
                return True
        elif t in (
            A.IfExpr,
            A.MatchExpr,
            A.TryExpr,
            A.TryPropagate,
            A.SpawnExpr,
            A.ParallelExpr,
            A.RetryExpr,
            A.DeadlineExpr,
            A.Pipe,
        ):
            return True
        for c in A.children(e):
            if isinstance(c, _CODE_NODES):
                continue
            if self.suspends(c):
                return True
        return False
