"""Evaluator closures and instruction factories the compiler emits: ``ev(frame) -> value``
closures for constants, slots, globals, operators, interpolation, literals and patterns, and
the small instructions that are not in :mod:`harnpy.runtime.instrs`. They are code, not data:
never serialized (a snapshot stores frames as ``(code, pc, slots)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harnpy.runtime import fastops, ops
from harnpy.runtime import instrs as I
from harnpy.runtime.code import MISSING, UNBOUND, CodeObject, Frame
from harnpy.runtime.compiler.ir import (
    CompileError,
    Ev,
    ModuleContext,
)
from harnpy.runtime.display import display
from harnpy.runtime.errors import (
    HarnError,
    plain_error,
    runtime_error,
)
from harnpy.runtime.outcomes import checked as outcome_checked
from harnpy.runtime.values import (
    Closure,
    Duration,
    HSet,
    RangeValue,
    StructValue,
    is_result,
    ok,
    type_name,
)
from harnpy.syntax import ast as A

if TYPE_CHECKING:
    from harnpy.runtime.compiler.core import Compiler


_BIN_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": ops.add,
    "-": ops.sub,
    "*": ops.mul,
    "/": ops.div,
    "%": ops.mod,
    "**": ops.power,
    "<": ops.less,
    ">": ops.greater,
    "<=": ops.less_eq,
    ">=": ops.greater_eq,
}

_BOOL_OPS = {"<", ">", "<=", ">=", "==", "!=", "in", "not_in"}

_PRIMITIVE_CHECKS = {"int", "float", "string", "bool", "list", "dict", "set", "nil", "closure"}


_EXPR_NODE_NAMES = {
    n
    for n in (
        "Literal DurationLit InterpString Name ListLit DictLit ClosureExpr BinOp LogicalOp "
        "NilCoalesce UnaryOp Pipe Ternary RangeExpr Call MethodCall Attribute Index Slice "
        "TryPropagate TryStar StructLit IfExpr MatchExpr TryExpr SpawnExpr ParallelExpr "
        "RetryExpr DeadlineExpr"
    ).split()
}


def _const(v: Any) -> Ev:
    return lambda f: v


def _slot_ev(slot: int) -> Ev:
    return fastops.slot_ev(slot)


def _temp_ev(slot: int) -> Ev:
    """Read of a temporary holding a call result; a store of it *moves* the value (the
    temporary is cleared) so that stale copies neither keep values alive in snapshots nor
    defeat the in-place update of unshared containers."""
    ev = _slot_ev(slot)
    ev._temp_slot = slot  # type: ignore[attr-defined]
    return ev


def _op_move_global(g: dict[str, Any], name: str, tmp: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        s = f.slots
        g[name] = s[tmp]
        s[tmp] = None
        return nxt

    return instr


def _is_stable(e: Any) -> bool:
    """Expressions whose value cannot change while a later operand's call runs: literals,
    durations and closure expressions. Names are not stable: the call may reassign the
    variable (a captured ``var``, a module global), so their value is spilled first."""
    return type(e) in (A.Literal, A.DurationLit, A.ClosureExpr)


def _is_bool_expr(e: A.Expr) -> bool:
    t = type(e)
    if t is A.BinOp:
        return e.op in _BOOL_OPS  # type: ignore[union-attr]
    if t is A.LogicalOp:
        return True
    if t is A.UnaryOp:
        return e.op == "!"  # type: ignore[union-attr]
    if t is A.Literal:
        return type(e.value) is bool  # type: ignore[union-attr]
    return False


def _err_const(msg: str, code: str) -> Callable[[Frame], BaseException]:
    return lambda f: plain_error(msg, code)


_PERMIT_NAME = "__mutex_permit"


def _monotonic_ev(f: Frame) -> Any:
    return f.thread.runtime.clock.monotonic_ms()


def _op_incr(slot: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        f.slots[slot] += 1
        return nxt

    return instr


def _op_retry_again(
    attempt: int, count: int, pending: int, top: int, nxt: int
) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        n = f.slots[count]
        if type(n) is not int:
            n = 1
        if f.slots[attempt] < n:
            f.slots[pending] = None
            return top
        rec = f.slots[pending]
        f.slots[pending] = None
        raise rec[1]

    return instr


def _op_deadline_check(limit: int, started: int, nxt: int) -> Callable[[Frame], int]:
    from harnpy.runtime.errors import HarnThrow

    def instr(f: Frame) -> int:
        d = f.slots[limit]
        ms = d.ms if type(d) is Duration else d
        if type(ms) not in (int, float):
            raise runtime_error(f"deadline expects a duration, got {type_name(d)}")
        if f.thread.runtime.clock.monotonic_ms() - f.slots[started] > ms:
            raise HarnThrow("Deadline exceeded")
        return nxt

    return instr


def _pipeline_arg_ev(name: str) -> Ev:
    """Value passed for a pipeline parameter: the Harness for ``harness``, else nil."""

    def get(f: Frame) -> Any:
        make = getattr(f.thread.runtime, "pipeline_argument", None)
        return make(name) if make is not None else None

    return get


def _runtime_builtin(name: str) -> Ev:
    def get(f: Frame) -> Any:
        return f.thread.runtime.builtins[name]

    return get


def _global_ev(g: dict[str, Any], name: str, fallback: Any) -> Ev:
    def load(f: Frame) -> Any:
        try:
            return g[name]
        except KeyError:
            if fallback is not None:
                return fallback
            return f.thread.late_bound(name, False)

    return fastops.mark_global(load, g, name)


def _locate(err: HarnError, span: A.Span) -> None:
    """Record ``span`` as where ``err`` happened unless a more inner expression already did
    (the frame's unwind turns it into the trace entry's line, column and caret width)."""
    if err.at is None and span.line:
        end = span.end_col + 1 if span.end_line == span.line else 0
        err.at = (span.line, span.col, end)


def _dynamic_ev(name: str, span: A.Span) -> Ev:
    def load(f: Frame) -> Any:
        try:
            return f.thread.late_bound(name, False)
        except HarnError as err:
            _locate(err, span)
            raise

    return load


def _capture_checked_ev(slot: int, name: str, span: A.Span) -> Ev:
    def load(f: Frame) -> Any:
        v = f.slots[slot]
        if v is UNBOUND:
            try:
                v = f.thread.late_bound(name, False)
            except HarnError as err:
                _locate(err, span)
                raise
        return v

    return load


def _interp_ev(parts: list[Any]) -> Ev:
    pieces: list[Any] = []
    for p in parts:
        if isinstance(p, str):
            if p:
                pieces.append(p)
        else:
            pieces.append(p)
    fast = fastops.interp_ev(pieces, display)
    if fast is not None:
        return fast
    if len(pieces) == 2 and isinstance(pieces[0], str) and not isinstance(pieces[1], str):
        s0, e1 = pieces

        def two(f: Frame) -> str:
            v = e1(f)
            return s0 + (v if type(v) is str else display(v))

        return two

    def interp(f: Frame) -> str:
        out = []
        for p in pieces:
            if type(p) is str:
                out.append(p)
            else:
                v = p(f)
                out.append(v if type(v) is str else display(v))
        return "".join(out)

    return interp


def _list_spread_ev(items: list[tuple[bool, Ev]]) -> Ev:
    def build(f: Frame) -> list[Any]:
        out: list[Any] = []
        for sp, ev in items:
            v = ev(f)
            if sp:
                if type(v) is list:
                    out.extend(v)
                elif type(v) is HSet:
                    out.extend(v.items)
                elif type(v) is RangeValue:
                    out.extend(v.to_list("list spread"))
                else:
                    raise runtime_error(f"cannot spread {type_name(v)} into a list (expected list)")
            else:
                out.append(v)
        return out

    return build


def _dict_general_ev(entries: list[tuple[int, Any, Ev]]) -> Ev:
    def build(f: Frame) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, key, ev in entries:
            if kind == 0:
                out[key] = ev(f)
            elif kind == 1:
                k = key(f)
                out[k if type(k) is str else display(k)] = ev(f)
            else:
                v = ev(f)
                if type(v) is dict:
                    out.update(v)
                elif type(v) is StructValue:
                    out.update(v.fields)
                else:
                    raise runtime_error(f"cannot spread {type_name(v)} into a dict (expected dict)")
        return out

    return build


def _make_closure_ev(
    code: CodeObject, sources: list[int | str], module: Any, self_index: int | None
) -> Ev:
    """An ev creating the closure: captured values come from the creating frame's slots
    (int sources) or, for top-level bindings, from the module globals (str sources)."""
    if any(type(s) is str for s in sources):
        g = module.globals

        def make_mixed(f: Frame) -> Closure:
            s = f.slots
            caps = [s[src] if type(src) is int else g.get(src, UNBOUND) for src in sources]
            clo = Closure(code, caps, module)
            if self_index is not None:
                caps[self_index] = clo
            return clo

        return make_mixed
    cap_slots: list[int] = sources  # type: ignore[assignment]
    n = len(cap_slots)
    if self_index is not None:

        def make_self(f: Frame) -> Closure:
            s = f.slots
            caps = [s[i] for i in cap_slots]
            clo = Closure(code, caps, module)
            caps[self_index] = clo
            return clo

        return make_self
    if n == 0:
        return lambda f: Closure(code, [], module)
    if n == 1:
        c0 = cap_slots[0]
        return lambda f: Closure(code, [f.slots[c0]], module)

    def make(f: Frame) -> Closure:
        s = f.slots
        return Closure(code, [s[i] for i in cap_slots], module)

    return make


def _wrap_ok_ev(ev: Ev) -> Ev:
    def wrap(f: Frame) -> Any:
        v = ev(f)
        return v if is_result(v) else ok(v)

    return wrap


def _watching(obj: Ev) -> Ev:
    """``obj`` whose dict value is marked as checked (:mod:`harnpy.runtime.outcomes`)."""

    def ev(f: Frame) -> Any:
        o = obj(f)
        if type(o) is dict and f.thread.runtime.unchecked_outcomes:
            outcome_checked(f.thread.runtime, o)
        return o

    return ev


def _opt_index(o: Any, k: Any) -> Any:
    if o is None:
        return None
    return ops.index(o, k)


def _enum_field_ev(val: int, i: int) -> Ev:
    def get(f: Frame) -> Any:
        flds = f.slots[val].fields
        return flds[i] if i < len(flds) else None

    return get


def _dict_get_ev(val: int, key: str) -> Ev:
    return lambda f: f.slots[val].get(key)


def _list_item_ev(val: int, i: int) -> Ev:
    return lambda f: f.slots[val][i]


def _pair_part_ev(val: int, i: int) -> Ev:
    def get(f: Frame) -> Any:
        v = f.slots[val]
        return ops.get_property(v, "first" if i == 0 else "second")

    return get


def _eq_slot_ev(slot: int, want: Ev) -> Ev:
    return lambda f: ops.values_equal(f.slots[slot], want(f))


def _destructure_dict_ev(tmp: int, keys: list[tuple[str, bool]]) -> Ev:
    return lambda f: I.destructure_dict(f.slots[tmp], keys)


def _destructure_list_ev(tmp: int, n: int, rest: bool) -> Ev:
    return lambda f: I.destructure_list(f.slots[tmp], n, rest)


def _op_store_existing_global(
    g: dict[str, Any], name: str, ev: Ev, nxt: int
) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        v = ev(f)
        if name not in g:
            raise plain_error(f"Undefined variable: {name}", "E301")
        g[name] = v
        return nxt

    fused = fastops.fused_store(("g", g, name), ev, nxt, instr, must_exist=True)
    return fused if fused is not None else instr


def _op_skip_if_passed(i: int, target: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        return nxt if f.slots[i] is MISSING else target

    return instr


def _op_missing_to_nil(i: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        if f.slots[i] is MISSING:
            f.slots[i] = None
        return nxt

    return instr


def _op_check_param(
    i: int, name: str, quick: Callable[[Any], bool] | None, schema: dict[str, Any], nxt: int
) -> Callable[[Frame], int]:
    """Check parameter slot ``i`` against its declared type (spec 3.11); ``quick`` is an
    exact predicate for primitive types (the common case), the schema check gives the
    message (``parameter 'a' expected int, got string (hello)``)."""
    from harnpy.stdlib.schema import check_param

    def instr(f: Frame) -> int:
        v = f.slots[i]
        if quick is not None and quick(v):
            return nxt
        check_param(v, name, schema)
        return nxt

    return instr


def _is_primitive(t: A.TypeExpr) -> bool:
    return type(t) is A.TypeName and not t.args and t.name in _PRIMITIVE_CHECKS


def _op_pending_jump(slot: int, target: int, finally_pc: int) -> Callable[[Frame], int]:
    rec = (I.PENDING_JUMP, target)

    def instr(f: Frame) -> int:
        f.slots[slot] = rec
        return finally_pc

    return instr


def _binop_ev(
    op: str,
    left: Ev,
    right: Ev,
    lnode: Any = None,
    rnode: Any = None,
    comp: Compiler | None = None,
    span: A.Span = A.NO_SPAN,
) -> Ev:
    """Build the ev of a binary operator, with fast paths for int/str operands; an error
    raised by the operator is located at ``span`` (see :func:`_locate`). Operands that are
    slots, globals or an int literal get a specialised ev (:mod:`harnpy.runtime.fastops`)."""
    generic = _binop_ev_generic(op, left, right, lnode, rnode, comp, span)
    rconst = rnode.value if type(rnode) is A.Literal else MISSING

    def locate(err: HarnError) -> None:
        _locate(err, span)

    fast = fastops.binop_ev(op, left, right, rconst, generic, locate)
    return fast if fast is not None else generic


def _binop_ev_generic(
    op: str,
    left: Ev,
    right: Ev,
    lnode: Any = None,
    rnode: Any = None,
    comp: Compiler | None = None,
    span: A.Span = A.NO_SPAN,
) -> Ev:
    """The generic ev of a binary operator (see :func:`_binop_ev`)."""
    if op == "==":

        def eq(f: Frame) -> bool:
            try:
                a = left(f)
                b = right(f)
                ta = type(a)
                if ta is type(b) and (ta is int or ta is str):
                    return bool(a == b)
                return ops.values_equal(a, b)
            except HarnError as err:
                _locate(err, span)
                raise

        return eq
    if op == "!=":

        def ne(f: Frame) -> bool:
            try:
                a = left(f)
                b = right(f)
                ta = type(a)
                if ta is type(b) and (ta is int or ta is str):
                    return bool(a != b)
                return not ops.values_equal(a, b)
            except HarnError as err:
                _locate(err, span)
                raise

        return ne
    if op == "in":

        def in_(f: Frame) -> bool:
            try:
                return ops.contains(right(f), left(f))
            except HarnError as err:
                _locate(err, span)
                raise

        return in_
    if op == "not_in":

        def not_in(f: Frame) -> bool:
            try:
                return not ops.contains(right(f), left(f))
            except HarnError as err:
                _locate(err, span)
                raise

        return not_in
    if op == "|":
        raise CompileError(
            "'|' is only valid between match patterns", lnode.span if lnode else A.NO_SPAN
        )
    fn = _BIN_OPS.get(op)
    if fn is None:
        raise CompileError(f"unknown operator {op}", lnode.span if lnode else A.NO_SPAN)
    rconst = rnode.value if type(rnode) is A.Literal else MISSING

    if op == "+":
        if type(rconst) is int:
            c = rconst

            def add_c(f: Frame) -> Any:
                try:
                    a = left(f)
                    if type(a) is int:
                        r = a + c
                        if -9223372036854775808 <= r <= 9223372036854775807:
                            return r
                    return ops.add(a, c)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return add_c

        def add(f: Frame) -> Any:
            try:
                a = left(f)
                b = right(f)
                ta = type(a)
                if ta is type(b):
                    if ta is int:
                        r = a + b
                        if -9223372036854775808 <= r <= 9223372036854775807:
                            return r
                    elif ta is str:
                        return a + b
                return ops.add(a, b)
            except HarnError as err:
                _locate(err, span)
                raise

        return add
    if op == "-":
        if type(rconst) is int:
            c = rconst

            def sub_c(f: Frame) -> Any:
                try:
                    a = left(f)
                    if type(a) is int:
                        r = a - c
                        if -9223372036854775808 <= r <= 9223372036854775807:
                            return r
                    return ops.sub(a, c)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return sub_c

        def sub(f: Frame) -> Any:
            try:
                a = left(f)
                b = right(f)
                if type(a) is int and type(b) is int:
                    r = a - b
                    if -9223372036854775808 <= r <= 9223372036854775807:
                        return r
                return ops.sub(a, b)
            except HarnError as err:
                _locate(err, span)
                raise

        return sub
    if op == "*":

        def mul(f: Frame) -> Any:
            try:
                a = left(f)
                b = right(f)
                if type(a) is int and type(b) is int:
                    r = a * b
                    if -9223372036854775808 <= r <= 9223372036854775807:
                        return r
                return ops.mul(a, b)
            except HarnError as err:
                _locate(err, span)
                raise

        return mul
    if op == "%":
        if type(rconst) is int and rconst > 0:
            c = rconst

            def mod_c(f: Frame) -> Any:
                try:
                    a = left(f)
                    if type(a) is int and a >= 0:
                        return a % c
                    return ops.mod(a, c)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return mod_c
    if op in ("<", ">", "<=", ">="):
        return _compare_ev(op, left, right, rconst, span)

    def other(f: Frame) -> Any:
        try:
            return fn(left(f), right(f))
        except HarnError as err:
            _locate(err, span)
            raise

    return other


def _compare_ev(op: str, left: Ev, right: Ev, rconst: Any, span: A.Span) -> Ev:
    slow = _BIN_OPS[op]
    if type(rconst) is int:
        c = rconst
        if op == "<":

            def lt_c(f: Frame) -> bool:
                try:
                    a = left(f)
                    if type(a) is int:
                        return a < c
                    return slow(a, c)  # type: ignore[no-any-return]
                except HarnError as err:
                    _locate(err, span)
                    raise

            return lt_c
        if op == "<=":

            def le_c(f: Frame) -> bool:
                try:
                    a = left(f)
                    if type(a) is int:
                        return a <= c
                    return slow(a, c)  # type: ignore[no-any-return]
                except HarnError as err:
                    _locate(err, span)
                    raise

            return le_c
        if op == ">":

            def gt_c(f: Frame) -> bool:
                try:
                    a = left(f)
                    if type(a) is int:
                        return a > c
                    return slow(a, c)  # type: ignore[no-any-return]
                except HarnError as err:
                    _locate(err, span)
                    raise

            return gt_c

    def cmp(f: Frame) -> bool:
        try:
            a = left(f)
            b = right(f)
            ta = type(a)
            if ta is type(b) and (ta is int or ta is str or ta is float):
                if op == "<":
                    return bool(a < b)
                if op == "<=":
                    return bool(a <= b)
                if op == ">":
                    return bool(a > b)
                return bool(a >= b)
            return slow(a, b)  # type: ignore[no-any-return]
        except HarnError as err:
            _locate(err, span)
            raise

    return cmp


# ================================================================== types


def _literal_value(e: A.Expr | None) -> tuple[bool, Any]:
    """``(True, value)`` for an expression made of literals only (numbers, strings, bools,
    nil, negated numbers, lists and dicts with plain keys of such); ``(False, None)``
    otherwise (including no expression)."""
    if e is None:
        return False, None
    t = type(e)
    if t is A.Literal:
        return True, e.value
    if t is A.UnaryOp and e.op == "-" and type(e.operand) is A.Literal:
        v = e.operand.value
        if type(v) in (int, float):
            return True, -v
        return False, None
    if t is A.ListLit:
        items = []
        for item in e.items:
            ok, v = _literal_value(item) if type(item) is not A.Spread else (False, None)
            if not ok:
                return False, None
            items.append(v)
        return True, items
    if t is A.DictLit:
        out: dict[str, Any] = {}
        for entry in e.entries:
            if type(entry) is not A.DictEntry or entry.computed or type(entry.key) is not str:
                return False, None
            ok, v = _literal_value(entry.value)
            if not ok:
                return False, None
            out[entry.key] = v
        return True, out
    return False, None


def _type_label(t: A.TypeExpr | None) -> str:
    if t is None:
        return "any"
    if type(t) is A.TypeName:
        if t.args:
            return f"{t.name}<{', '.join(_type_label(a) for a in t.args)}>"
        return t.name
    if type(t) is A.TypeList:
        return f"list<{_type_label(t.elem)}>"
    if type(t) is A.TypeUnion:
        return " | ".join(_type_label(o) for o in t.options)
    if type(t) is A.TypeLiteral:
        return t.keyword or repr(t.value)
    if type(t) is A.TypeShape:
        return "{" + ", ".join(f"{f.name}: {_type_label(f.type)}" for f in t.fields) + "}"
    if type(t) is A.TypeFn:
        return "fn(" + ", ".join(_type_label(p) for p in t.params) + ") -> " + _type_label(t.ret)
    return "any"


def type_checker(t: A.TypeExpr, ctx: ModuleContext) -> Callable[[Any], bool] | None:
    """A predicate for run-time parameter checks (spec 3.11), or None when unchecked.

    Primitive names, unions of them, ``nil``, and shapes (dicts with the required fields)
    are checked; generics, aliases and user types are not.
    """
    tt = type(t)
    if tt is A.TypeName:
        name = t.name  # type: ignore[union-attr]
        if name == "int":
            return lambda v: type(v) is int
        if name == "float":
            return lambda v: type(v) is float or type(v) is int
        if name == "string":
            return lambda v: type(v) is str
        if name == "bool":
            return lambda v: type(v) is bool
        if name == "list":
            return lambda v: type(v) is list
        if name == "dict":
            return lambda v: type(v) is dict
        if name == "set":
            return lambda v: type(v) is HSet
        if name == "nil":
            return lambda v: v is None
        if name == "closure":
            from harnpy.stdlib._common import is_callable

            return is_callable
        alias = ctx.module.type_aliases.get(name) if ctx.module is not None else None
        if alias is not None and alias is not t:
            return type_checker(alias, ctx)
        return None
    if tt is A.TypeLiteral:
        if t.keyword == "nil":  # type: ignore[union-attr]
            return lambda v: v is None
        return None
    if tt is A.TypeUnion:
        checks = [type_checker(o, ctx) for o in t.options]  # type: ignore[union-attr]
        if any(c is None for c in checks):
            return None
        return lambda v: any(c(v) for c in checks)  # type: ignore[misc]
    if tt is A.TypeShape:
        required = [fl.name for fl in t.fields if not fl.optional]  # type: ignore[union-attr]
        return lambda v: type(v) is dict and all(k in v for k in required)
    if tt is A.TypeList:
        return lambda v: type(v) is list
    return None
