"""Direct calls: effect-free functions that cannot suspend run as one Python call (issue 15).

A Harn call normally pushes an explicit :class:`~harnpy.runtime.code.Frame`, so that the
thread can be snapshotted, descheduled or interrupted between any two instructions. A
function that can do none of those things inside — it cannot block, park, yield, write
output, change a global or call anything that could — gains nothing from its frames. For
such a function the compiler also translates the body to Python source (:func:`plan`,
built on first use), and a call from a frame instruction or a callback builtin runs it
like a builtin: one Python call inside the caller's instruction, returning the value.

What a direct body may contain (anything else leaves the function on frames): parameters,
captures and locals (``let``/``var``, assignment to a local), literals, operators,
``&&``/``||``/``??``/ternary/``!``/unary minus, interpolation, list and dict literals with
plain keys, property and index reads, ``if``/``else``, ``while``, ``for`` over lists,
ranges, dicts and sets, ``break``/``continue``/``return``, closure creation, calls of
values (checked when called: only another direct function), calls of the effect-free
builtins in :data:`PURE_BUILTINS` and the effect-free methods in :data:`PURE_METHODS`.

The direct run is only an optimisation; the frame path stays the meaning. It is abandoned
— and the call run again from its start on frames, which is safe because nothing it did
was observable — on *any* Python exception inside it: a Harn error (so every error, its
message and its trace come from the frame path, identically), a call of something that
is not direct (a closure on frames, an effectful builtin, a struct constructor), a
capture that is not bound yet, more than :data:`DIRECT_DEPTH` nested direct calls (or
fewer, near the thread's ``max_depth``: the frame path raises the ``Stack overflow``), and
an interrupt or park request (``thread.interrupt_requested``, checked at every direct call
and loop back-edge; the frame path then serves it at its next switch). After a depth
abort the thread does not try direct calls again for :data:`DIRECT_DEPTH` frames above the
aborted one (:func:`run_direct`), so deep linear recursion costs at most about twice.

``HARNPY_DIRECT_CALLS=0`` in the environment disables the translation (every call on
frames). Direct runs keep no state: they are never snapshot points (only functions that
cannot reach one are translated), and they hold no Harn state once they return.
"""

from __future__ import annotations

import math
import os
from typing import Any

from harnpy.runtime import ops
from harnpy.runtime.code import UNBOUND, CodeObject
from harnpy.runtime.direct_run import DIRECT_DEPTH, DepthAbort, DirectAbort  # noqa: F401 - DIRECT_DEPTH for readers of this module
from harnpy.runtime.display import display
from harnpy.runtime.values import Closure, HSet, RangeValue
from harnpy.syntax import ast as A

#: ``HARNPY_DIRECT_CALLS=0`` turns direct calls off (read once, at import).
ENABLED = os.environ.get("HARNPY_DIRECT_CALLS", "1").strip() != "0"

_ABORT = DirectAbort()
_DEPTH = DepthAbort()


class NotDirect(Exception):
    """The function cannot be translated (internal to :func:`plan`)."""


_MIN = -9223372036854775808
_MAX = 9223372036854775807

#: Builtins a direct body may call: no output, no state, no callbacks, no clock or rng,
#: no Harn code run from inside (``len`` of a lazy sequence is refused, see ``_len``).
PURE_BUILTINS = frozenset(
    {
        "len",
        "to_string",
        "abs",
        "min",
        "max",
        "floor",
        "ceil",
        "round",
        "sqrt",
        "pow",
        "split",
        "replace",
        "contains",
        "join",
        "trim",
        "starts_with",
        "ends_with",
        "substring",
        "type_of",
        "keys",
        "values",
        "to_int",
        "to_float",
        "range",
    }
)

#: Methods a direct body may call, per receiver type key (``calls._METHOD_TABLE_KEY``).
PURE_METHODS: dict[str, frozenset[str]] = {
    "string": frozenset(
        {
            "char_at",
            "chars",
            "contains",
            "count",
            "empty",
            "ends_with",
            "index_of",
            "last_index_of",
            "len",
            "lines",
            "lower",
            "lowercase",
            "pad_left",
            "pad_right",
            "repeat",
            "replace",
            "reverse",
            "split",
            "starts_with",
            "substring",
            "to_lower",
            "to_upper",
            "trim",
            "trim_end",
            "trim_start",
            "upper",
            "uppercase",
        }
    ),
    "list": frozenset(
        {
            "appending",
            "contains",
            "count",
            "empty",
            "first",
            "index_of",
            "join",
            "last",
            "max",
            "min",
            "prepending",
            "push",
            "reverse",
            "slice",
            "sum",
            "take",
            "skip",
            "unique",
            "flatten",
            "compact",
        }
    ),
    "dict": frozenset({"count", "get", "has", "keys", "values", "merge", "remove"}),
}

_PLAIN = (str, list, dict, HSet)


def _abort(*_args: Any) -> Any:
    raise _ABORT


def _truthy(v: Any) -> bool:
    return ops.truthy(v)


def _for_source(v: Any) -> Any:
    """What a direct ``for`` iterates: as :func:`harnpy.runtime.instrs.iterate_source`,
    but generators, iters and channels (which run Harn code or block) abort."""
    t = type(v)
    if t is list:
        return v
    if t is RangeValue:
        return v.py_range()
    if t is dict:
        return [{"key": k, "value": v[k]} for k in sorted(v)]
    if t is HSet:
        return list(v.items)
    from harnpy.runtime.values import Channel, Generator, IterValue

    if t is Generator or t is IterValue or t is Channel:
        raise _ABORT
    return ()


#: ``(receiver type, method name) -> Builtin`` of the allow-listed methods looked up so far
#: (None: not allowed).
_METHOD_CACHE: dict[tuple[type, str], Any] = {}


def _lookup_method(t: type, name: str) -> Any:
    from harnpy.runtime.calls import _METHOD_TABLE_KEY
    from harnpy.stdlib.registry import METHODS

    key = _METHOD_TABLE_KEY.get(t)
    m = None
    if key is not None and name in PURE_METHODS.get(key, ()):
        m = METHODS.get(key, {}).get(name)
        if m is not None and (m.callback or m.control):
            m = None
    _METHOD_CACHE[(t, name)] = m
    return m


def _method(th: Any, obj: Any, name: str, *args: Any) -> Any:
    """``obj.name(args)`` for an allow-listed method of a plain receiver, else abort."""
    t = type(obj)
    try:
        m = _METHOD_CACHE[(t, name)]
    except KeyError:
        m = _lookup_method(t, name)
    if m is None:
        raise _ABORT
    mx = m.max_args
    if mx is not None and len(args) > mx:
        raise _ABORT  # a surplus argument: the frame path raises the error
    return m.fn(th, obj, *args)


def _builtin_caller(name: str, bi: Any) -> Any:
    """The Python callable ``call(th, *args)`` of allow-listed builtin ``bi``."""
    fn = bi.fn
    mx = bi.max_args
    if name == "len":

        def call_len(th: Any, *args: Any) -> Any:
            if not args or type(args[0]) not in _PLAIN:
                raise _ABORT  # a lazy sequence's length runs Harn code
            return fn(th, args[0])

        return call_len
    if mx is None:
        return fn

    def call(th: Any, *args: Any) -> Any:
        if len(args) > mx:
            raise _ABORT  # a surplus argument: the frame path raises the error
        return fn(th, *args)

    return call


def _closure_self(code: CodeObject, caps: list[Any], module: Any, index: int) -> Closure:
    clo = Closure(code, caps, module)
    caps[index] = clo
    return clo


_HELPERS: dict[str, Any] = {
    # translated code counts as evaluator code: a first Ctrl-C inside it is served at the
    # next safe point (session._waiting_or_blocked), not raised mid-iteration
    "__name__": "harnpy.runtime.direct",
    "ABORT": _ABORT,
    "DEPTH": _DEPTH,
    "ABORTF": _abort,
    "UNBOUND": UNBOUND,
    "Closure": Closure,
    "CLOSELF": _closure_self,
    "MIN": _MIN,
    "MAX": _MAX,
    "TRUTHY": ops.truthy,
    "ADD": ops.add,
    "SUB": ops.sub,
    "MUL": ops.mul,
    "DIV": ops.div,
    "MOD": ops.mod,
    "POW": ops.power,
    "LT": ops.less,
    "LE": ops.less_eq,
    "GT": ops.greater,
    "GE": ops.greater_eq,
    "EQ": ops.values_equal,
    "CONTAINS": ops.contains,
    "NEG": ops.negate,
    "INDEX": ops.index,
    "GETPROP": ops.get_property,
    "DISPLAY": display,
    "FORSRC": _for_source,
    "NOITEM": UNBOUND,
    "METHOD": _method,
    "dict": dict,
    "list": list,
    "int": int,
    "str": str,
}

_ARITH = {"+": "ADD", "-": "SUB", "*": "MUL"}
_CMP = {"<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
_OTHER = {"/": "DIV", "%": "MOD", "**": "POW"}
_BOOL_OPS = {"<", "<=", ">", ">=", "==", "!=", "in", "not_in"}


class _Translator:
    """Translates one function body to the source of a Python function (see :func:`plan`).

    Locals are Python variables named after their frame slots (``v3`` for slot 3), found by
    name in ``code.slot_names``, which must name each slot at most once (no shadowing), so
    the name -> slot map is the compiler's. Names are resolved in the compiler's order:
    locals in scope, then module globals, then builtins; anything else is refused.
    """

    def __init__(self, comp: Any, node: Any, code: CodeObject) -> None:
        self.comp = comp
        self.ctx = comp.ctx
        self.code = code
        self.node = node
        names = [n for n in code.slot_names if n is not None]
        if len(names) != len(set(names)):
            raise NotDirect("a name is bound twice")
        self.slot_of = {n: i for i, n in enumerate(code.slot_names) if n is not None}
        self.scopes: list[set[str]] = [set()]
        self.mutable: set[str] = set()
        self.consts: dict[str, Any] = {}
        self.lines: list[str] = []
        self.tmp = 0
        self.loops = 0
        self.watch = not str(getattr(self.ctx.module, "path", "")).startswith("std/")
        self.quiet = False

    # ---- helpers

    def const(self, value: Any) -> str:
        name = f"K{len(self.consts)}"
        self.consts[name] = value
        return name

    def temp(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def declare(self, name: str, mutable: bool) -> str:
        slot = self.slot_of.get(name)
        if slot is None:
            raise NotDirect(f"no slot for {name}")
        self.scopes[-1].add(name)
        if mutable:
            self.mutable.add(name)
        else:
            self.mutable.discard(name)
        return f"v{slot}"

    def local(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return f"v{self.slot_of[name]}"
        return None

    # ---- entry

    def source(self) -> str:
        code = self.code
        node = self.node
        nparams = code.nparams
        params = [f"v{i}" for i in range(nparams)]
        for p in node.params:
            self.declare(p.name, True)
        caps = list(code.capture_names)
        for cname in caps:
            self.declare(cname, True)
        head = ", ".join(["th", "dd", "clo", *params])
        self.emit(1, "if dd <= 0:")
        self.emit(2, "raise DEPTH")
        self.emit(1, "if th.interrupt_requested:")
        self.emit(2, "raise ABORT")
        self.emit(1, "dd -= 1")
        if caps:
            cvars = [f"v{nparams + i}" for i in range(len(caps))]
            self.emit(1, f"{', '.join(cvars)}, = clo.captures")
            self.emit(1, f"if {' or '.join(f'{v} is UNBOUND' for v in cvars)}:")
            self.emit(2, "raise ABORT")
        body = list(node.body.body)
        self.block_stmts(body, 1, tail=code.returns_last)
        self.emit(1, "return None")
        return f"def direct({head}):\n" + "\n".join(self.lines) + "\n"

    # ---- statements

    def block_stmts(self, stmts: list[Any], depth: int, tail: bool) -> None:
        """Statements at indent ``depth``; with ``tail`` the last one's value is returned
        (a closure body's value, spec: the last statement of a closure)."""
        if not stmts:
            self.emit(depth, "pass")
            return
        n = len(stmts)
        for i, st in enumerate(stmts):
            if tail and i == n - 1:
                self.tail_stmt(st, depth)
            else:
                self.stmt(st, depth)

    def block(self, blk: Any, depth: int, tail: bool = False) -> None:
        self.scopes.append(set())
        try:
            self.block_stmts(list(blk.body), depth, tail)
        finally:
            self.scopes.pop()

    def tail_stmt(self, st: Any, depth: int) -> None:
        t = type(st)
        if t is A.ExprStmt:
            v = st.value
            if type(v) is A.IfExpr:
                self.if_stmt(v, depth, tail=True)
                self.emit(depth, "return None")
                return
            self.emit(depth, f"return {self.expr(v)}")
            return
        if t is A.IfExpr:
            self.if_stmt(st, depth, tail=True)
            self.emit(depth, "return None")
            return
        self.stmt(st, depth)
        self.emit(depth, "return None")

    def stmt(self, st: Any, depth: int) -> None:
        t = type(st)
        if t is A.ExprStmt:
            v = st.value
            if type(v) is A.IfExpr:
                self.if_stmt(v, depth, tail=False)
                return
            self.emit(depth, self.expr(v))
            return
        if t is A.IfExpr:
            self.if_stmt(st, depth, tail=False)
            return
        if t is A.LetStmt:
            self.let(st, depth)
            return
        if t is A.AssignStmt:
            self.assign(st, depth)
            return
        if t is A.ReturnStmt:
            value = "None" if st.value is None else self.expr(st.value)
            self.emit(depth, f"return {value}")
            return
        if t is A.WhileStmt:
            self.loops += 1
            self.emit(depth, f"while {self.cond(st.cond)}:")
            self.emit(depth + 1, "if th.interrupt_requested:")
            self.emit(depth + 2, "raise ABORT")
            self.block(st.body, depth + 1)
            self.loops -= 1
            return
        if t is A.ForStmt:
            if type(st.pattern) is not A.NamePattern or st.pattern.name == "_":
                raise NotDirect("for pattern")
            src = self.expr(st.iterable)
            self.scopes.append(set())
            try:
                var = self.declare(st.pattern.name, True)
                self.loops += 1
                self.emit(depth, f"for {var} in FORSRC({src}):")
                self.emit(depth + 1, "if th.interrupt_requested:")
                self.emit(depth + 2, "raise ABORT")
                self.block(st.body, depth + 1)
                self.loops -= 1
            finally:
                self.scopes.pop()
            return
        if t is A.BreakStmt or t is A.ContinueStmt:
            if not self.loops:
                raise NotDirect("break outside a loop")
            self.emit(depth, "break" if t is A.BreakStmt else "continue")
            return
        raise NotDirect(f"statement {t.__name__}")

    def if_stmt(self, e: Any, depth: int, tail: bool) -> None:
        self.emit(depth, f"if {self.cond(e.cond)}:")
        self.block(e.then, depth + 1, tail)
        other = e.otherwise
        while other is not None:
            if type(other) is A.IfExpr:
                self.emit(depth, f"elif {self.cond(other.cond)}:")
                self.block(other.then, depth + 1, tail)
                other = other.otherwise
            else:
                self.emit(depth, "else:")
                self.block(other, depth + 1, tail)
                other = None

    def let(self, st: Any, depth: int) -> None:
        pat = st.pattern
        if type(pat) is not A.NamePattern:
            raise NotDirect("destructuring")
        if st.type is not None:
            raise NotDirect("typed let")
        mutable = st.mutable or (self.ctx.let_mutable and not st.is_const)
        if pat.name == "_":
            self.emit(depth, self.expr(st.value))
            return
        if type(st.value) is A.ClosureExpr:
            var = self.declare(pat.name, mutable)
            self.emit(depth, f"{var} = {self.closure(st.value, self_name=pat.name)}")
            return
        value = self.expr(st.value)
        var = self.declare(pat.name, mutable)
        self.emit(depth, f"{var} = {value}")

    def assign(self, st: Any, depth: int) -> None:
        target = st.target
        if type(target) is not A.Name:
            raise NotDirect("assignment to a property or index")
        var = self.local(target.id)
        if var is None or target.id not in self.mutable:
            raise NotDirect("assignment to a global or an immutable binding")
        self.emit(depth, f"{var} = {self.assigned(st, var)}")

    def assigned(self, st: Any, var: str) -> str:
        """The value of ``var = ...`` / ``var op= ...``. ``xs = xs.push(v)`` is refused and
        ``xs += ys`` aborts on a list or dict: the frame path grows those in place."""
        value = st.value
        if (
            st.op is None
            and type(value) is A.MethodCall
            and value.name == "push"
            and type(value.obj) is A.Name
            and value.obj.id == st.target.id
        ):
            raise NotDirect("push in place")
        if not st.op:
            return self.expr(value)
        rhs = self.binop(st.op, var, self.expr(value), None)
        if st.op == "+":
            return f"(ABORTF() if type({var}) is list or type({var}) is dict else {rhs})"
        return rhs

    # ---- expressions

    def cond(self, e: Any) -> str:
        src, is_bool = self.expr_b(e)
        return src if is_bool else f"TRUTHY({src})"

    def expr(self, e: Any) -> str:
        return self.expr_b(e)[0]

    def expr_b(self, e: Any) -> tuple[str, bool]:
        """Python source of expression ``e`` and whether its value is always a bool."""
        t = type(e)
        if t is A.Literal:
            v = e.value
            if v is None or type(v) in (bool, int, str):
                return repr(v), type(v) is bool
            if type(v) is float and math.isfinite(v):
                return repr(v), False
            return self.const(v), False
        if t is A.Name:
            return self.name(e.id), False
        if t is A.BinOp:
            if e.op == "|":
                raise NotDirect("pattern operator")
            return self.binop(e.op, self.expr(e.left), self.expr(e.right), e.right), (
                e.op in _BOOL_OPS
            )
        if t is A.LogicalOp:
            a = self.cond(e.left)
            b = self.cond(e.right)
            op = "and" if e.op == "&&" else "or"
            return f"({a} {op} {b})", True
        if t is A.NilCoalesce:
            v = self.temp()
            return f"({v} if ({v} := {self.expr(e.left)}) is not None else {self.expr(e.right)})", (
                False
            )
        if t is A.UnaryOp:
            if e.op == "!":
                return f"(not {self.cond(e.operand)})", True
            if e.op == "-":
                if type(e.operand) is A.Literal and type(e.operand.value) in (int, float):
                    return self.const(ops.negate(e.operand.value)), False
                return f"NEG({self.expr(e.operand)})", False
            raise NotDirect("unary operator")
        if t is A.Ternary:
            return (
                f"({self.expr(e.then)} if {self.cond(e.cond)} else {self.expr(e.otherwise)})",
                False,
            )
        if t is A.InterpString:
            return self.interp(e), False
        if t is A.ListLit:
            if any(type(x) is A.Spread for x in e.items):
                raise NotDirect("spread")
            return "[" + "".join(f"{self.expr(x)}, " for x in e.items) + "]", False
        if t is A.DictLit:
            items = []
            for ent in e.entries:
                if type(ent) is not A.DictEntry or ent.computed or type(ent.key) is not str:
                    raise NotDirect("dict entry")
                items.append(f"{ent.key!r}: {self.expr(ent.value)}")
            return "{" + ", ".join(items) + "}", False
        if t is A.Attribute:
            return self.attribute(e), False
        if t is A.Index:
            if e.optional:
                raise NotDirect("optional index")
            if type(e.index) is A.Literal and e.index.value in _watched() and self.watch:
                raise NotDirect("watched key")
            self.quiet = True
            try:
                obj = self.expr(e.obj)
            finally:
                self.quiet = False
            return f"INDEX({obj}, {self.expr(e.index)})", False
        if t is A.Call:
            return self.call(e), False
        if t is A.MethodCall:
            return self.method(e), False
        if t is A.ClosureExpr:
            return self.closure(e, None), False
        if t is A.IfExpr:
            return self.if_value(e), False
        raise NotDirect(f"expression {t.__name__}")

    def if_value(self, e: Any) -> str:
        def branch(blk: Any) -> str:
            if blk is None:
                return "None"
            if type(blk) is A.IfExpr:
                return self.if_value(blk)
            body = list(blk.body)
            if not body:
                return "None"
            if len(body) != 1 or type(body[0]) is not A.ExprStmt:
                raise NotDirect("if expression with statements")
            return self.expr(body[0].value)

        return f"({branch(e.then)} if {self.cond(e.cond)} else {branch(e.otherwise)})"

    def name(self, name: str) -> str:
        if name == "_":
            raise NotDirect("placeholder")
        var = self.local(name)
        if var is not None:
            return var
        ctx = self.ctx
        if name in ctx.enums:
            raise NotDirect("enum namespace")
        if self.comp._is_global(name):
            return f"G[{name!r}]"
        bi = ctx.builtins.get(name)
        if bi is not None:
            return self.const(bi)
        raise NotDirect(f"name {name}")

    def binop(self, op: str, a: str, b: str, rnode: Any) -> str:
        x, y = self.temp(), self.temp()
        if op in _ARITH:
            slow = _ARITH[op]
            r = self.temp()
            py = op
            if type(rnode) is A.Literal and type(rnode.value) is int:
                return (
                    f"({r} if type({x} := {a}) is int and MIN <= ({r} := {x} {py} {b}) <= MAX"
                    f" else {slow}({x}, {b}))"
                )
            if op == "+":
                return (
                    f"({r} if type({x} := {a}) is type({y} := {b}) is int and MIN <= ({r} := "
                    f"{x} + {y}) <= MAX else {x} + {y} if type({x}) is str is type({y})"
                    f" else ADD({x}, {y}))"
                )
            return (
                f"({r} if type({x} := {a}) is type({y} := {b}) is int and MIN <= ({r} := "
                f"{x} {py} {y}) <= MAX else {slow}({x}, {y}))"
            )
        if op in _CMP:
            return f"({x} {op} {y} if type({x} := {a}) is type({y} := {b}) is int else {_CMP[op]}({x}, {y}))"
        if op == "==":
            return f"({x} == {y} if type({x} := {a}) is type({y} := {b}) is int else EQ({x}, {y}))"
        if op == "!=":
            return (
                f"({x} != {y} if type({x} := {a}) is type({y} := {b}) is int else not EQ({x}, {y}))"
            )
        if op == "in":
            return f"CONTAINS({b}, {a})"
        if op == "not_in":
            return f"(not CONTAINS({b}, {a}))"
        if op == "%":
            return (
                f"({x} % {y} if type({x} := {a}) is type({y} := {b}) is int and {x} >= 0 and {y} > 0"
                f" else MOD({x}, {y}))"
            )
        if op in _OTHER:
            return f"{_OTHER[op]}({a}, {b})"
        raise NotDirect(f"operator {op}")

    def interp(self, e: Any) -> str:
        pieces = []
        for p in e.parts:
            if isinstance(p, str):
                if p:
                    pieces.append(repr(p))
            else:
                v = self.temp()
                pieces.append(
                    f"({v} if (_k := type({v} := {self.expr(p)})) is str"
                    f" else str({v}) if _k is int else DISPLAY({v}))"
                )
        if not pieces:
            return "''"
        return "''.join((" + "".join(f"{x}, " for x in pieces) + "))"

    def attribute(self, e: Any) -> str:
        if e.optional:
            raise NotDirect("optional property")
        if type(e.obj) is A.Name and self.local(e.obj.id) is None and e.obj.id in self.ctx.enums:
            raise NotDirect("enum variant")
        if type(e.obj) is A.Name and e.obj.id == "Result":
            raise NotDirect("Result variant")
        if e.name in _watched() and self.watch:
            raise NotDirect("watched property")
        o = self.temp()
        return f"({o}.get({e.name!r}) if type({o} := {self.expr(e.obj)}) is dict else GETPROP({o}, {e.name!r}))"

    def builtin_call(self, name: str, bi: Any, args: Any) -> str:
        """A call of allow-listed builtin ``bi``: its function called directly; ``len`` of a
        string, list or dict inline. More arguments than its ``max_args`` (an error, raised
        by the frame path) leave the function on frames."""
        if any(type(a) is A.Spread for a in args):
            raise NotDirect("spread")
        mx = bi.max_args
        if mx is not None and len(args) > mx:
            raise NotDirect("surplus arguments")
        if name == "len":
            if len(args) != 1:
                raise NotDirect("len arity")
            x = self.temp()
            slow = self.const(_builtin_caller(name, bi))
            self.quiet = True
            try:
                arg = self.expr(args[0])
            finally:
                self.quiet = False
            return (
                f"(len({x}) if (_k := type({x} := {arg})) is str or _k is list"
                f" or _k is dict else {slow}(th, {x}))"
            )
        fn = self.const(bi.fn)
        return f"{fn}(th{self.args(args)})"

    def args(self, args: Any) -> str:
        if any(type(a) is A.Spread for a in args):
            raise NotDirect("spread")
        return "".join(f", {self.expr(a)}" for a in args)

    def call(self, e: Any) -> str:
        name = e.func.id
        var = self.local(name)
        if var is None:
            if name in self.ctx.enums or name == "_":
                raise NotDirect("enum call")
            if self.comp._is_global(name):
                var = f"G[{name!r}]"
            else:
                bi = self.ctx.builtins.get(name)
                if bi is None or name not in PURE_BUILTINS or bi.callback or bi.control:
                    raise NotDirect(f"call of {name}")
                return self.builtin_call(name, bi, e.args)
        c = self.temp()
        return (
            f"(({c}.code.direct if type({c} := {var}) is Closure and {c}.bound_self is None"
            f" else ABORTF) or ABORTF)(th, dd, {c}{self.args(e.args)})"
        )

    def method(self, e: Any) -> str:
        if type(e.obj) is A.Name and self.local(e.obj.id) is None:
            ns = e.obj.id
            if ns in self.ctx.enums or ns == "Result" or not self.comp._is_global(ns):
                raise NotDirect("namespace method")
        if e.optional:
            raise NotDirect("optional method call")
        return f"METHOD(th, {self.expr(e.obj)}, {e.name!r}{self.args(e.args)})"

    def closure(self, node: Any, self_name: str | None) -> str:
        code = self.ctx.code_ids.get(A.node_id(node))
        if code is None:
            raise NotDirect("closure code not found")
        sources = []
        self_index = None
        for i, (cname, src) in enumerate(zip(code.capture_names, code.capture_from)):
            if cname == self_name:
                self_index = i
                sources.append("None")
            elif type(src) is str:
                sources.append(f"G.get({src!r}, UNBOUND)")
            else:
                slot_name = self.code.slot_names[src] if src < len(self.code.slot_names) else None
                if slot_name is None or self.local(slot_name) != f"v{src}":
                    raise NotDirect("capture of a temporary")
                sources.append(f"v{src}")
        k = self.const(code)
        caps = "[" + "".join(f"{s}, " for s in sources) + "]"
        if self_index is not None:
            return f"CLOSELF({k}, {caps}, MODULE, {self_index})"
        return f"Closure({k}, {caps}, MODULE)"


def _watched() -> frozenset[str]:
    from harnpy.runtime.outcomes import WATCHED_KEYS

    return WATCHED_KEYS


def plan(comp: Any, node: Any, code: CodeObject) -> None:
    """Give ``code`` (just compiled from ``node`` by ``comp``) a direct form when its body
    qualifies (see the module docstring): ``code.direct`` becomes a stub that translates the
    prepared source on its first call. Leaves ``code.direct`` None otherwise."""
    if not ENABLED:
        return
    if (
        code.is_generator
        or not code.simple
        or code.defer_slot is not None
        or code.handlers
        or type(node) not in (A.FnDecl, A.ClosureExpr)
        or comp.b.declares_fns
    ):
        return
    try:
        src = _Translator(comp, node, code)
        text = src.source()
    except NotDirect:
        return
    ns = dict(_HELPERS)
    ns.update(src.consts)
    ns["G"] = code.module.globals
    ns["MODULE"] = code.module

    def build(th: Any, dd: int, clo: Any, *args: Any) -> Any:
        exec(compile(text, f"<direct {code.name}>", "exec"), ns)  # noqa: S102 - our source
        fn = ns["direct"]
        code.direct = fn
        return fn(th, dd, clo, *args)

    code.direct = build
    code.direct_source = text
