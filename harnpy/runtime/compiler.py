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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnpy.runtime import fastops, ops
from harnpy.runtime import instrs as I
from harnpy.runtime.code import MISSING, UNBOUND, CodeObject, Frame, Handler
from harnpy.runtime.display import display
from harnpy.runtime.errors import (
    HarnError,
    HarnRuntimeError,
    plain_error,
    runtime_error,
    type_error,
)
from harnpy.runtime.outcomes import WATCHED_KEYS
from harnpy.runtime.outcomes import checked as outcome_checked
from harnpy.runtime.values import (
    Closure,
    Duration,
    EnumNamespace,
    EnumValue,
    HSet,
    RangeValue,
    StructType,
    StructValue,
    is_result,
    ok,
    type_name,
)
from harnpy.syntax import ast as A

if TYPE_CHECKING:
    from harnpy.runtime import direct
else:  # imported when the first fn or loop is compiled: a program with neither never needs it
    from harnpy._lazy import lazy_module

    direct = lazy_module("harnpy.runtime.direct")

Ev = Callable[[Frame], Any]


class CompileError(Exception):
    """A static error found while compiling (message, node span)."""

    def __init__(self, message: str, span: A.Span, code: str = "E201") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code


# ------------------------------------------------------------------- IR


class Label:
    """A jump target; ``pos`` is set when the label is placed."""

    __slots__ = ("pos",)

    def __init__(self) -> None:
        self.pos = -1


@dataclass
class IRIns:
    """One instruction before assembly: :meth:`FnBuilder.assemble` calls ``factory(*args, nxt)``
    once labels have pcs (a :class:`Label` in ``args`` becomes its pc). ``wants_nxt`` is False
    for instructions that never fall through (jumps, returns), whose factory takes no next pc;
    ``span`` feeds the line table."""

    factory: Callable[..., Callable[[Frame], int]]
    args: tuple[Any, ...]
    span: A.Span
    wants_nxt: bool = True


@dataclass
class Binding:
    """A local name of the function being compiled: its frame ``slot``, whether it may be
    reassigned (``mutable``) and how it was bound (``kind``)."""

    slot: int
    mutable: bool
    kind: str  # "let" | "var" | "param" | "fn" | "capture" | "struct" | "catch" | "for"


@dataclass
class LoopCtx:
    """The loop that ``break``/``continue`` leave: their target labels, and how many ``finally``
    regions were already open when the loop started (leaving the loop from a ``try`` opened
    inside it runs that ``try``'s finally block first, spec 3.12)."""

    break_label: Label
    continue_label: Label
    finally_depth: int


@dataclass
class FinallyCtx:
    """An open ``try ... finally`` region (spec 2.7, 3.12): ``pending_slot`` holds how the
    protected code is being left, a ``(kind, payload)`` record of ``instrs.PENDING_*`` (normal,
    throw, return, jump) that the finally block resumes with; ``finally_label`` starts the
    finally block; ``start_label``/``end_label`` bound the protected region."""

    pending_slot: int
    finally_label: Label
    start_label: Label
    end_label: Label  # end of the protected region (try body + catch)


@dataclass
class ModuleContext:
    """Compile-time facts about one module: declared globals, enums, structs."""

    module: Any  # ModuleInstance
    global_names: set[str]
    enums: dict[str, dict[str, int]] = field(default_factory=dict)
    structs: dict[str, A.StructDecl] = field(default_factory=dict)
    builtins: dict[str, Any] = field(default_factory=dict)
    pure_builtins: set[str] = field(default_factory=set)
    codes: list[CodeObject] = field(default_factory=list)
    #: ``code.id -> code`` of every function compiled so far (direct translation).
    code_ids: dict[int, CodeObject] = field(default_factory=dict)
    #: In files that use ``const`` (later Harn revisions) ``let`` bindings are reassignable.
    let_mutable: bool = False
    #: Closures capture top-level let/var by value (the main program); library modules
    #: keep them as shared module state (spec 3.10, 3.18).
    capture_globals: bool = False
    type_aliases: dict[str, Any] = field(default_factory=dict)
    structs_decl: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------- analysis

_CODE_NODES = (A.FnDecl, A.ClosureExpr, A.ToolDecl, A.PipelineDecl)


def referenced_names(node: A.Node, memo: dict[int, frozenset[str]] | None = None) -> set[str]:
    """All identifier names used anywhere under ``node`` (including nested functions).

    With ``memo`` (``id(code node) -> its names``, kept by the caller for one compilation
    while the nodes are alive), the names of each nested function are computed once and
    reused, so asking for every function of a deeply nested program stays linear in its
    size (times the number of distinct names) instead of re-walking each subtree.
    """
    out: set[str] = set()
    for n in _local_nodes(node):
        t = type(n)
        if t is A.Name:
            out.add(n.id)  # type: ignore[attr-defined]
        elif t is A.Call:
            out.add(n.func.id)  # type: ignore[attr-defined]
        elif n is not node and isinstance(n, _CODE_NODES):
            if memo is None:
                out |= referenced_names(n)
                continue
            inner = memo.get(id(n))
            if inner is None:
                inner = memo[id(n)] = frozenset(referenced_names(n, memo))
            out |= inner
    return out


def _local_nodes(node: A.Node) -> Iterator[A.Node]:
    """``node`` and its descendants that belong to the same function: nested functions
    and closures are yielded themselves, but not searched."""
    stack: list[A.Node] = [node]
    while stack:
        n = stack.pop()
        yield n
        if n is node or not isinstance(n, _CODE_NODES):
            stack.extend(A.children(n))


def contains_yield(body: A.Node) -> bool:
    """True when ``body`` (not counting nested functions) contains ``yield``/``emit``."""
    return any(isinstance(n, (A.YieldStmt, A.EmitStmt)) for n in _local_nodes(body))


def declares_nested_fns(body: A.Node) -> bool:
    """True when ``body`` (not counting nested closures' bodies) declares a ``fn``."""
    return any(type(n) is A.FnDecl and n is not body for n in _local_nodes(body))


def contains_placeholder(node: A.Node) -> bool:
    """True when a bare ``_`` appears in ``node`` outside nested closures (pipe rewrite)."""
    return any(type(n) is A.Name and n.id == "_" for n in _local_nodes(node))


# -------------------------------------------------------------- builder


class FnBuilder:
    """Compiles one function body into a :class:`CodeObject`."""

    def __init__(
        self,
        ctx: ModuleContext,
        code: CodeObject,
        parent: FnBuilder | None,
        module_level: bool,
    ) -> None:
        self.ctx = ctx
        self.code = code
        self.parent = parent
        self.module_level = module_level
        self.scopes: list[dict[str, Binding]] = [{}]
        self.ir: list[IRIns | Label] = []
        self.loops: list[LoopCtx] = []
        self.finallies: list[FinallyCtx] = []
        self.handlers: list[tuple[Label, Label, Label, str, int, str | None]] = []
        self.placeholder_slot: int | None = None
        self.span = A.NO_SPAN
        self.in_generator = False
        #: Captured names whose source is a module global (may be unbound at creation).
        self.global_captures: set[str] = set()
        #: The body declares nested functions: no tail calls, since a nested function may
        #: late-bind a sibling declared after it through this frame (spec 3.10).
        self.declares_fns = False

    # ---- slots and scopes

    def new_slot(self, name: str | None = None) -> int:
        """Allocate the next frame slot and return its index; ``name`` goes to
        ``code.slot_names`` (None for a temporary)."""
        i = self.code.nslots
        self.code.nslots += 1
        self.code.slot_names.append(name)
        return i

    def temp(self) -> int:
        """Allocate an unnamed slot for an intermediate value; returns its index."""
        return self.new_slot(None)

    def declare(self, name: str, mutable: bool, kind: str) -> int:
        """Bind ``name`` in the innermost scope to a new slot (replacing a binding of the same
        scope, shadowing outer ones); returns the slot. ``kind`` as in :class:`Binding`."""
        slot = self.new_slot(name)
        self.scopes[-1][name] = Binding(slot, mutable, kind)
        return slot

    def push_scope(self) -> None:
        """Open a block scope (spec 3.10)."""
        self.scopes.append({})

    def pop_scope(self) -> None:
        """Close the innermost block scope (its slots stay allocated)."""
        self.scopes.pop()

    def at_module_top(self) -> bool:
        """True in the outermost scope of a module initialiser, where bindings are module globals
        rather than slots."""
        return self.module_level and len(self.scopes) == 1

    def lookup_local(self, name: str) -> Binding | None:
        """The innermost binding of ``name`` in this function's scopes (parameters and captures
        included), or None; module globals are not searched."""
        for scope in reversed(self.scopes):
            b = scope.get(name)
            if b is not None:
                return b
        return None

    # ---- IR emission

    def emit(self, factory: Callable[..., Any], *args: Any, nxt: bool = True) -> None:
        """Append an instruction built by ``factory(*args[, nxt])`` at the current ``span``;
        ``nxt=False`` for one that never falls through (see :class:`IRIns`)."""
        self.ir.append(IRIns(factory, args, self.span, nxt))

    def store(self, slot: int, ev: Ev) -> None:
        """Emit ``slots[slot] = ev()``; a call result's temporary is moved instead (see
        :func:`_temp_ev`)."""
        tmp = getattr(ev, "_temp_slot", None)
        if tmp is not None:
            self.emit(_op_move, slot, tmp)
        else:
            self.emit(I.op_store, slot, ev)

    def place(self, label: Label) -> None:
        """Place ``label`` at the next instruction emitted."""
        self.ir.append(label)

    def mark(self) -> int:
        """The current IR length: a point to truncate back to (``del b.ir[mark:]``)."""
        return len(self.ir)

    # ---- assembly

    def assemble(self) -> CodeObject:
        """Give labels their pcs and build ``code.instrs``, the line table ``code.lines`` ((line,
        col) per instruction) and ``code.handlers``; returns ``code``."""
        pos = 0
        for item in self.ir:
            if type(item) is Label:
                item.pos = pos
            else:
                pos += 1
        code = self.code
        instrs = []
        lines = []
        i = 0
        for item in self.ir:
            if type(item) is Label:
                continue
            assert isinstance(item, IRIns)
            args = tuple(_resolve(a) for a in item.args)
            if item.wants_nxt:
                instrs.append(item.factory(*args, i + 1))
            else:
                instrs.append(item.factory(*args))
            lines.append((item.span.line, item.span.col))
            i += 1
        code.instrs = instrs
        code.lines = lines
        if code.simple and not code.is_generator:
            code.call_pad = (None,) * (code.nslots - code.nparams - len(code.capture_names))
        code.handlers = [
            Handler(s.pos, e.pos, t.pos, kind, slot, ctype)
            for (s, e, t, kind, slot, ctype) in self.handlers
        ]
        return code


def _resolve(a: Any) -> Any:
    if type(a) is Label:
        return a.pos
    if type(a) is tuple and a and type(a[0]) is _OuterFinally:
        return a[0].resolve()
    return a


class _OuterFinally:
    __slots__ = ("ctx",)

    def __init__(self, ctx: FinallyCtx) -> None:
        self.ctx = ctx

    def resolve(self) -> tuple[int, int, int, int]:
        """``(pending_slot, finally_pc, region_start, region_end)`` of the enclosing finally
        region once its labels are placed: the ``outer`` argument of ``op_end_finally``."""
        c = self.ctx
        return (c.pending_slot, c.finally_label.pos, c.start_label.pos, c.end_label.pos)


# ------------------------------------------------------------- compiler


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


class Compiler:
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

    def s_ExprStmt(self, st: A.ExprStmt) -> None:
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

    def s_LetStmt(self, st: A.LetStmt) -> None:
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

    def bind_pattern(self, pat: A.Pattern, ev: Ev, mutable: bool) -> None:
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
        self, name: str, vals: int, i: int, default: A.Expr | None, mutable: bool
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

    def _check_redeclare(self, name: str, mutable: bool, span: A.Span) -> None:
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

    def s_AssignStmt(self, st: A.AssignStmt) -> None:
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

    def _grow_in_place(self, st: A.AssignStmt, name: str) -> bool:
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

    def store_name(self, name: str, ev: Ev, span: A.Span) -> None:
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
        b.emit(I.op_raise, _err_const(f"Undefined variable: {name}", "E301"))

    def s_FnDecl(self, st: A.FnDecl) -> None:
        b = self.b
        if b.at_module_top():
            ev = self.closure_expr(st, self_name=None)
            b.emit(I.op_store_global, self.ctx.module.globals, st.name, ev)
            self.ctx.module.global_kinds[st.name] = "fn"
            return
        slot = b.declare(st.name, False, "fn")
        ev = self.closure_expr(st, self_name=st.name)
        b.emit(I.op_store, slot, ev)

    def s_ToolDecl(self, st: A.ToolDecl) -> None:
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

    def s_StructDecl(self, st: A.StructDecl) -> None:
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

    def s_EnumDecl(self, st: A.EnumDecl) -> None:
        pass  # enums are resolved at compile time (ModuleContext.enums)

    def s_InterfaceDecl(self, st: A.InterfaceDecl) -> None:
        pass

    def s_TypeDecl(self, st: A.TypeDecl) -> None:
        self.ctx.module.type_aliases[st.name] = st.type

    def s_OverrideDecl(self, st: A.OverrideDecl) -> None:
        pass

    def s_ImportDecl(self, st: A.ImportDecl) -> None:
        pass  # imports are resolved before compilation (modules.py)

    def s_PipelineDecl(self, st: A.PipelineDecl) -> None:
        pass  # pipelines are entry points, handled by the module loader

    def s_AttributedDecl(self, st: A.AttributedDecl) -> None:
        self.stmt(st.decl)

    def s_ImplDecl(self, st: A.ImplDecl) -> None:
        b = self.b
        for m in st.methods:
            ev = self.closure_expr(m, self_name=None)
            type_name_ = st.type_name
            mname = m.name

            def make(f: Frame, ev: Ev = ev, t: str = type_name_, n: str = mname) -> None:
                f.thread.runtime.register_impl(t, n, ev(f))

            b.emit(I.op_eval, make)

    def s_SkillDecl(self, st: A.SkillDecl) -> None:
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

    def s_IfExpr(self, st: A.IfExpr) -> None:
        self.if_expr(st, None)

    def s_MatchExpr(self, st: A.MatchExpr) -> None:
        self.match_expr(st, None)

    def s_TryExpr(self, st: A.TryExpr) -> None:
        self.try_expr(st, None)

    def s_WhileStmt(self, st: A.WhileStmt) -> None:
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
            lb = direct.loop_body(self, st.body, self._direct_resolve, cond=st.cond)
            if lb is not None:
                # the iterations run as one Python loop (runtime/direct.py)
                b.emit(
                    direct.op_direct_loop,
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

    def s_ForStmt(self, st: A.ForStmt) -> None:
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
            lb = direct.loop_body(self, st.body, self._direct_resolve, var_slot=var_slot)
        if lb is not None:
            # the iterations run as one Python loop (runtime/direct.py)
            b.emit(
                direct.op_direct_loop,
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

    def s_GuardStmt(self, st: A.GuardStmt) -> None:
        b = self.b
        ok_label = Label()
        self.cond_jump(st.cond, ok_label, jump_if=True)
        self.block(st.otherwise)
        b.place(ok_label)

    def s_RequireStmt(self, st: A.RequireStmt) -> None:
        b = self.b
        ok_label = Label()
        self.cond_jump(st.cond, ok_label, jump_if=True)
        msg = (
            self.expr(st.message) if st.message is not None else _const("require condition failed")
        )
        b.emit(I.op_throw, msg)
        b.place(ok_label)

    def s_ThrowStmt(self, st: A.ThrowStmt) -> None:
        self.b.emit(I.op_throw, self.expr(st.value))

    def s_ReturnStmt(self, st: A.ReturnStmt) -> None:
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

    def s_BreakStmt(self, st: A.BreakStmt) -> None:
        self._loop_jump(st, is_break=True)

    def s_ContinueStmt(self, st: A.ContinueStmt) -> None:
        self._loop_jump(st, is_break=False)

    def _loop_jump(self, st: A.Node, is_break: bool) -> None:
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

    def s_DeferStmt(self, st: A.DeferStmt) -> None:
        b = self.b
        code = b.code
        if code.defer_slot is None:
            code.defer_slot = b.temp()
            code.defer_discard = b.temp()
        closure_node = A.ClosureExpr((), st.body, span=st.span)
        ev = self.closure_expr(closure_node, self_name=None)
        b.emit(I.op_defer, ev)

    def s_YieldStmt(self, st: A.YieldStmt) -> None:
        ev = self.expr(st.value) if st.value is not None else _const(None)
        self.b.emit(I.op_yield, ev)

    def s_EmitStmt(self, st: A.EmitStmt) -> None:
        self.b.emit(I.op_yield, self.expr(st.value))

    def s_MutexStmt(self, st: A.MutexStmt) -> None:
        """``mutex { body }``: hold the default mutex around the body (released on throw)."""
        b = self.b
        permit = b.temp()
        b.emit(I.op_call, _runtime_builtin("__mutex_enter"), [], [], permit)
        release = A.ExprStmt(A.Call(A.Name("__mutex_exit"), (A.Name(_PERMIT_NAME),)))
        b.push_scope()
        b.scopes[-1][_PERMIT_NAME] = Binding(permit, False, "let")
        self.try_expr(A.TryExpr(st.body, finally_body=A.Block((release,))), None)
        b.pop_scope()

    def s_SelectStmt(self, st: A.SelectStmt) -> None:
        ev = self.select_expr(st)
        self.b.emit(I.op_eval, ev)

    # ================================================================ helpers

    def _direct_resolve(self, name: str) -> tuple[str, Any, bool, bool] | None:
        """An outer name of a direct loop body (runtime/direct.py), resolved as
        :meth:`name_ev` would: ``("s", slot, mutable, may_be_unbound)`` for a local or a
        capture, ``("g", name, mutable, False)`` for a module global, None otherwise."""
        binding = self.b.lookup_local(name)
        if binding is not None:
            check = binding.kind == "capture" and self._capture_may_be_unbound(name)
            return ("s", binding.slot, binding.mutable, check)
        if name in self.ctx.enums or not self._is_global(name):
            return None
        return ("g", name, self.ctx.module.global_kinds.get(name) == "var", False)

    def _is_global(self, name: str) -> bool:
        return name in self.ctx.global_names or name in self.ctx.module.globals

    def cond_jump(self, cond: A.Expr, label: Label, jump_if: bool) -> None:
        """Emit a jump to ``label`` taken when the truthiness of ``cond`` (spec 3.4) equals
        ``jump_if``."""
        ev = self.expr(cond)
        is_bool = _is_bool_expr(cond)
        if jump_if:
            self.b.emit(I.op_jump_if_true, ev, is_bool, label)
        else:
            self.b.emit(I.op_jump_if_false, ev, is_bool, label)

    # ================================================================ expressions

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
        ``_is_pure_call``); arguments beyond the builtin's ``max_args`` are dropped."""
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
                        args = args[:mx]
                    return fn(f.thread, *args)
                except HarnError as err:
                    _locate(err, span)
                    raise

            return call_spread
        if mx is not None and len(argevs) > mx:
            argevs = argevs[:mx]
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

    # ---- control-flow expressions

    def e_IfExpr(self, e: A.IfExpr, discard: bool = False) -> Ev:
        return self.if_expr(e, None if discard else self.b.temp())

    def if_expr(self, e: A.IfExpr, res: int | None) -> Ev:
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

    def e_MatchExpr(self, e: A.MatchExpr, discard: bool = False) -> Ev:
        return self.match_expr(e, None if discard else self.b.temp())

    def match_expr(self, e: A.MatchExpr, res: int | None) -> Ev:
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

    def pattern_test(self, p: A.Expr, val: int, fail: Label, bind: bool = True) -> None:
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

    def e_TryExpr(self, e: A.TryExpr, discard: bool = False) -> Ev:
        return self.try_expr(e, None if discard else self.b.temp())

    def try_expr(self, e: A.TryExpr, res: int | None) -> Ev:
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

    def _try_result(self, e: A.TryExpr, res: int) -> Ev:
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

    def e_SpawnExpr(self, e: A.SpawnExpr) -> Ev:
        node = A.ClosureExpr((), e.body, span=e.span)
        make = self.closure_expr(node, None)
        target = self.b.temp()
        self.b.emit(I.op_call, _runtime_builtin("__spawn"), [make], [False], target)
        return _slot_ev(target)

    def e_ParallelExpr(self, e: A.ParallelExpr) -> Ev:
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

    def e_RetryExpr(self, e: A.RetryExpr) -> Ev:
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

    def e_DeadlineExpr(self, e: A.DeadlineExpr) -> Ev:
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

    def select_expr(self, st: A.SelectStmt) -> Ev:
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

    def suspends(self, e: Any) -> bool:
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

    def _suspends(self, e: Any) -> bool:
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


# ===================================================================== helpers

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


def _op_move(target: int, tmp: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        s = f.slots
        s[target] = s[tmp]
        s[tmp] = None
        return nxt

    return instr


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


__all__ = ["Compiler", "CompileError", "ModuleContext", "type_checker"]
_ = (HarnRuntimeError, runtime_error)
