"""Direct loops (issue 15): a ``while``/``for`` loop whose body qualifies runs its iterations
as one Python loop inside its back-edge instruction (see dev/impl.md "Direct loops").

:class:`_LoopTranslator` extends the function translator of :mod:`harnpy.runtime.direct`
with the loop's outer variables (slots and module globals written back when the loop
stops); :func:`loop_body` translates a body, :func:`op_direct_loop` is the back-edge
instruction that runs it.
"""

from __future__ import annotations

from typing import Any

from harnpy.runtime.direct import (
    _HELPERS,
    ENABLED,
    PURE_BUILTINS,
    NotDirect,
    _Translator,
)
from harnpy.syntax import ast as A

#: After this many aborted iterations a direct loop leaves its loop to the frame path.
LOOP_ABORTS = 16


class _LoopTranslator(_Translator):
    """Translates the body of a ``while``/``for`` loop to a Python function ``body(f)`` of
    the loop's frame (see :func:`loop_body`). Names the loop reads or assigns from outside
    the body are the frame's slots or the module's globals, resolved by the compiler's own
    scopes (``resolve``), read into Python locals when an iteration starts and written back
    when it ends; names the body declares are Python locals. Only builtins and methods are
    called (no Harn function, which could read a global the iteration has not written back
    yet); no closure is created, no nested loop, no ``return``."""

    def __init__(self, comp: Any, resolve: Any) -> None:
        self.comp = comp
        self.ctx = comp.ctx
        self.resolve = resolve
        self.scopes = [{}]  # type: ignore[list-item]
        self.mutable = set()
        self.consts = {}
        self.lines = []
        self.tmp = 0
        self.loops = 1
        self.watch = not str(getattr(self.ctx.module, "path", "")).startswith("std/")
        self.outer: dict[str, tuple[str, Any, bool]] = {}  # py var -> (kind, key, check)
        self.written: set[str] = set()
        self.nlocals = 0
        self.continues = False
        self.quiet = False
        #: Outer variables assigned by index (``d[k] = v``), and those read any other way.
        self.containers: set[str] = set()
        self.escaped: set[str] = set()

    def declare(self, name: str, mutable: bool) -> str:
        self.nlocals += 1
        var = f"b{self.nlocals}"
        self.scopes[-1][name] = (var, mutable)  # type: ignore[index]
        return var

    def local(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            hit = scope.get(name)  # type: ignore[attr-defined]
            if hit is not None:
                return str(hit[0])
        return None

    def _outer(self, name: str, assign: bool) -> str:
        r = self.resolve(name)
        if r is None:
            raise NotDirect(f"name {name}")
        kind, key, mutable, check = r
        if assign and not mutable:
            raise NotDirect("assignment to an immutable binding")
        var = f"o{key}" if kind == "s" else f"g_{len(self.outer)}"
        for v, (k2, key2, _c) in self.outer.items():
            if k2 == kind and key2 == key:
                var = v
                break
        else:
            self.outer[var] = (kind, key, check)
        if assign:
            self.written.add(var)
        return var

    def name(self, name: str) -> str:
        if name == "_":
            raise NotDirect("placeholder")
        var = self.local(name)
        if var is not None:
            return var
        if self.resolve(name) is not None:
            var = self._outer(name, False)
            if not self.quiet:
                self.escaped.add(var)
            return var
        if name in self.ctx.enums:
            raise NotDirect("enum namespace")
        bi = self.ctx.builtins.get(name)
        if bi is not None:
            return self.const(bi)
        raise NotDirect(f"name {name}")

    def index_assign(self, st: Any, depth: int) -> None:
        """``d[k] = v`` on an outer dict or list the body reads only by index or ``len``:
        the first assignment of a loop run copies the container (it may be shared), later
        ones update that private copy in place; each change is recorded so that an aborted
        iteration undoes it before the frame path runs the iteration again."""
        target = st.target
        if st.op or target.optional or type(target.obj) is not A.Name:
            raise NotDirect("index assignment")
        name = target.obj.id
        if self.local(name) is not None:
            raise NotDirect("index assignment to a body local")
        var = self._outer(name, True)
        self.containers.add(var)
        kk, vv = self.temp(), self.temp()
        own = f"own_{var}"
        d = depth
        self.emit(d, f"{kk} = {self.expr(target.index)}")
        self.emit(d, f"{vv} = {self.expr(st.value)}")
        self.emit(d, f"if type({var}) is dict and type({kk}) is str:")
        self.emit(d + 1, f"if {own} is not {var}:")
        self.emit(d + 2, f"{var} = {own} = {var}.copy()")
        self.emit(d + 1, f"undo.append(({var}, {kk}, {var}.get({kk}, NOITEM)))")
        self.emit(
            d,
            f"elif type({var}) is list and type({kk}) is int and -len({var}) <= {kk} < len({var}):",
        )
        self.emit(d + 1, f"if {own} is not {var}:")
        self.emit(d + 2, f"{var} = {own} = {var}.copy()")
        self.emit(d + 1, f"undo.append(({var}, {kk}, {var}[{kk}]))")
        self.emit(d, "else:")
        self.emit(d + 1, "raise ABORT")
        self.emit(d, f"{var}[{kk}] = {vv}")

    def assign(self, st: Any, depth: int) -> None:
        target = st.target
        if type(target) is A.Index:
            self.index_assign(st, depth)
            return
        if type(target) is not A.Name:
            raise NotDirect("assignment to a property or index")
        name = target.id
        var = self.local(name)
        if var is not None:
            for scope in reversed(self.scopes):
                hit = scope.get(name)  # type: ignore[attr-defined]
                if hit is not None:
                    if not hit[1]:
                        raise NotDirect("assignment to an immutable binding")
                    break
        else:
            var = self._outer(name, True)
        self.emit(depth, f"{var} = {self.assigned(st, var)}")

    def call(self, e: Any) -> str:
        name = e.func.id
        if self.local(name) is not None or self.resolve(name) is not None:
            raise NotDirect("call of a Harn value in a loop body")
        if name in self.ctx.enums:
            raise NotDirect("enum call")
        bi = self.ctx.builtins.get(name)
        if bi is None or name not in PURE_BUILTINS or bi.callback or bi.control:
            raise NotDirect(f"call of {name}")
        return self.builtin_call(name, bi, e.args)

    def method(self, e: Any) -> str:
        if type(e.obj) is A.Name and self.local(e.obj.id) is None:
            if self.resolve(e.obj.id) is None:
                raise NotDirect("namespace method")
        if e.optional:
            raise NotDirect("optional method call")
        return f"METHOD(th, {self.expr(e.obj)}, {e.name!r}{self.args(e.args)})"

    def closure(self, node: Any, self_name: str | None) -> str:
        raise NotDirect("closure in a loop body")

    def block(self, blk: Any, depth: int, tail: bool = False) -> None:
        self.scopes.append({})  # type: ignore[arg-type]
        try:
            self.block_stmts(list(blk.body), depth, tail)
        finally:
            self.scopes.pop()

    def source_of(self, body: Any, cond: Any, var_slot: int | None) -> str:
        """The source of ``loop(f)``: the iterations of a ``while cond`` (``cond``) or of a
        ``for`` whose item goes to slot ``var_slot`` (see :func:`op_direct_loop`)."""
        if var_slot is not None:
            self.outer[f"o{var_slot}"] = ("s", var_slot, False)
            self.written.add(f"o{var_slot}")
        self.continues = False
        self.block(body, 3)
        test = self.cond(cond) if cond is not None else None
        if self.containers & self.escaped:
            raise NotDirect("a container assigned by index is also read as a value")
        written = sorted(self.written)

        def store(v: str, value: str) -> str:
            kind, key, _c = self.outer[v]
            return f"s[{key}] = {value}" if kind == "s" else f"G[{key!r}] = {value}"

        # The outer values are read inside a ``try``: a capture still unbound or a module
        # global not assigned yet (declared further down) leaves the iteration to the frame
        # path, which raises the error only if the iteration really reads the name.
        head = ["def loop(f):", "    s = f.slots", "    th = f.thread", "    try:"]
        for var, (kind, key, check) in self.outer.items():
            if kind == "s":
                head.append(f"        {var} = s[{key}]")
                if check:
                    head += [f"        if {var} is UNBOUND:", "            raise ABORT"]
            else:
                head.append(f"        {var} = G[{key!r}]")
        if var_slot is not None:
            head.append("        it = s[IT]")
        head += [
            "        pass",
            "    except Exception:",
            "        ABORTED[0] += 1",
            "        return BODY",
        ]
        saved = [f"k_{v}" for v in written]
        now = [store(v, v) for v in written]
        back = [store(v, k) for v, k in zip(written, saved)]
        head += [f"    own_{v} = None" for v in sorted(self.containers)]
        if self.containers:
            head.append("    undo = []")
        undo = []
        if self.containers:
            undo = [
                "for _o, _x, _old in reversed(undo):",
                "    if _old is NOITEM:",
                "        del _o[_x]",
                "    else:",
                "        _o[_x] = _old",
            ]
            back = undo + back
        lines = head + ["    ph = 0", "    try:", "        while True:"]
        if written:
            lines.append(f"            {', '.join(saved)}, = {', '.join(written)},")
        lines.append("            ph = 0")
        if self.containers:
            lines.append("            undo = []")
        body_lines: list[str] = []
        for line in self.lines:
            stripped = line.strip()
            indent = line[: len(line) - len(line.lstrip())]
            if stripped == "WRITEBACK":
                body_lines.extend(indent + x for x in now)
            else:
                body_lines.append(line)
        if self.continues:
            lines.append("            for _once in ONCE:")
            body_lines = ["    " + x for x in body_lines]
        lines += body_lines
        lines += [
            "            ph = 1",
            "            if th.interrupt_requested:",
            "                break",
        ]
        if test is not None:
            lines += [f"            if not {test}:", "                break"]
        else:
            lines += [
                "            item = next(it, END)",
                "            if item is END:",
                "                break",
                f"            o{var_slot} = item",
            ]
        lines += ["    except KeyboardInterrupt:"]
        lines += ["        " + x for x in back] or ["        pass"]
        lines += ["        raise", "    except Exception:", "        if ph == 0:"]
        lines += ["            " + x for x in back]
        lines += ["            ABORTED[0] += 1", "            return BODY"]
        lines += ["        " + x for x in now]
        lines += ["        return BACK(f)"]
        lines += ["    " + x for x in now]
        lines += ["    return BACK(f)"]
        return "\n".join(lines) + "\n"

    def stmt(self, st: Any, depth: int) -> None:
        t = type(st)
        if t in (A.WhileStmt, A.ForStmt, A.ReturnStmt):
            raise NotDirect(f"{t.__name__} in a loop body")
        if t is A.BreakStmt:
            self.emit(depth, "WRITEBACK")
            self.emit(depth, "return END_PC")
            return
        if t is A.ContinueStmt:
            self.continues = True
            self.emit(depth, "break")
            return
        _Translator.stmt(self, st, depth)


def loop_body(
    comp: Any, body: Any, resolve: Any, cond: Any = None, var_slot: int | None = None
) -> Any:
    """The translated iterations of a loop (see :class:`_LoopTranslator`), or None when the
    loop does not qualify: ``(source, namespace)`` for :func:`op_direct_loop`.
    ``resolve(name)`` is the compiler's view of an outer name: ``("s", slot, mutable,
    may_be_unbound)``, ``("g", name, mutable, False)`` or None. ``cond`` is a ``while``
    loop's condition, ``var_slot`` a ``for`` loop's item slot."""
    if not ENABLED:
        return None
    try:
        tr = _LoopTranslator(comp, resolve)
        text = tr.source_of(body, cond, var_slot)
    except NotDirect:
        return None
    ns = dict(_HELPERS)
    ns.update(tr.consts)
    ns["G"] = comp.ctx.module.globals
    ns["ONCE"] = (None,)
    return (text, ns)


_PLAIN_ITERATORS: tuple[type, ...] = (type(iter([])), type(iter(range(0))), type(iter(())))


def op_direct_loop(
    back_factory: Any, body: Any, body_pc: int, end_pc: int, it_slot: int, *args: Any
) -> Any:
    """A loop back-edge that runs the following iterations as one Python loop.

    ``back_factory(*args)`` builds the loop's ordinary back-edge (it notices interrupts and
    park requests, tests the condition or takes the next item, and returns ``body_pc`` to
    run an iteration). This instruction calls it; when it answers ``body_pc`` (and a ``for``
    loop iterates a plain list/range iterator, ``it_slot`` >= 0), the translated ``loop(f)``
    (:func:`loop_body`) runs the iterations with the variables the loop assigns held in
    Python locals, and writes them back (slots, module globals) when it stops. It stops
    before testing the condition or taking an item when an interrupt or park request is
    pending, and its last test always goes through the ordinary back-edge again (which
    raises the interrupt, answers ``end_pc``, or raises the condition's error at this
    instruction, as without direct loops). An iteration that aborts (any exception inside
    it: an error, a callee not allowed, an unbound value) writes back the values the
    variables had when it started and returns ``body_pc``, so the frame path runs that
    iteration again from its start (and produces the error with its trace); after
    :data:`LOOP_ABORTS` aborts the instruction leaves the loop to the frame path. A
    ``break`` returns ``end_pc``."""
    back = back_factory(*args)
    text, ns = body
    aborted = [0]
    state: list[Any] = [None]

    def instr(f: Any) -> int:
        r = back(f)
        if r != body_pc:
            return r
        fn = state[0]
        if fn is None:
            ns.update(BACK=back, BODY=body_pc, END_PC=end_pc, IT=it_slot, END=_END_ITEM)
            ns["ABORTED"] = aborted
            exec(compile(text, "<direct loop>", "exec"), ns)  # noqa: S102 - our source
            fn = state[0] = ns["loop"]
        elif fn is False:
            return r
        if aborted[0] >= LOOP_ABORTS:
            state[0] = False
            return r
        if it_slot >= 0 and type(f.slots[it_slot]) not in _PLAIN_ITERATORS:
            return r
        return int(fn(f))

    instr.direct_loop_source = text  # type: ignore[attr-defined]
    return instr


_END_ITEM = object()
