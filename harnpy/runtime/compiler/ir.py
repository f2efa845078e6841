"""The compiler's intermediate representation: IR instructions and labels, the
per-function builder that assembles them into a :class:`~harnpy.runtime.code.CodeObject`,
the per-module context, and the AST analyses the compiler asks (which names a subtree
references, whether it yields).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harnpy.runtime import instrs as I
from harnpy.runtime.code import CodeObject, Frame, Handler
from harnpy.syntax import ast as A

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


def _op_move(target: int, tmp: int, nxt: int) -> Callable[[Frame], int]:
    def instr(f: Frame) -> int:
        s = f.slots
        s[target] = s[tmp]
        s[tmp] = None
        return nxt

    return instr
