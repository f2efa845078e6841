"""Specialised evs and fused instructions for the commonest operand shapes.

The compiler builds an expression as a tree of *evs* (``ev(frame) -> value`` closures). A
binary operator whose operands are evs pays one Python call per operand, yet most operators
in loops and small functions read a local slot, a module global or an integer literal
(``n < 2``, ``i + 1``, ``total + i``). This module builds operator evs that read such operands
inline, and fused instructions for two frequent pairs: a comparison feeding a conditional
jump (``while i <= n``, ``if n < 2``) and an arithmetic result stored into a slot or global
(``i = i + 1``).

Each fast path only short-cuts the int case (and str for ``+``, ``==``, ``!=``) and otherwise
runs the generic operator of :mod:`harnpy.runtime.ops` (or the generic ev), so results and
errors are those of the generic evs. Nothing here keeps state outside the frame and module
globals: these are plain instructions between two snapshot points like every other.

The functions are generated from small source templates, one per operator and operand
shape, so every operand read is an inline ``s[3]`` or ``g["total"]`` (an unset global runs
the generic ev) rather than a call; each template is compiled once per process and reused as a closure factory.

An operand ev carries ``_operand``: ``("s", slot)`` for a slot read (:func:`slot_ev`),
``("g", globals, name)`` for a module global (:func:`mark_global`). A specialised operator
ev carries ``_shape = (op, left operand, right operand)``, an operand being one of those or
``("c", value)`` for an int literal; :func:`fused_jump` and :func:`fused_store` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harnpy.runtime import ops
from harnpy.runtime.code import Frame
from harnpy.runtime.errors import HarnError

Ev = Callable[[Frame], Any]
Operand = tuple[Any, ...]

_MIN = -9223372036854775808
_MAX = 9223372036854775807


def slot_ev(slot: int) -> Ev:
    """The ev reading ``f.slots[slot]`` (tagged as a slot operand)."""

    def read(f: Frame) -> Any:
        return f.slots[slot]

    read._operand = ("s", slot)  # type: ignore[attr-defined]
    return read


def slot_of(ev: Ev) -> int | None:
    """The slot a :func:`slot_ev` reads, else None."""
    operand = getattr(ev, "_operand", None)
    return operand[1] if operand is not None and operand[0] == "s" else None


def mark_global(ev: Ev, g: dict[str, Any], name: str) -> Ev:
    """Tag ``ev`` (the generic read of module global ``name``) as a global operand."""
    ev._operand = ("g", g, name)  # type: ignore[attr-defined]
    return ev


def _operand(ev: Ev, const: Any) -> Operand:
    if type(const) is int:
        return ("c", const)
    return getattr(ev, "_operand", None) or ("e", ev)


def shape_of(ev: Ev) -> tuple[str, Operand, Operand] | None:
    """The ``(op, left, right)`` of a specialised operator ev, else None."""
    return getattr(ev, "_shape", None)


# ---------------------------------------------------------------- templates

_ARITH_FAST = {
    "+": "if ta is int and type(b) is int:\n"
    "            r = a + b\n"
    "            if MIN <= r <= MAX:\n"
    "                return r\n"
    "        elif ta is str and type(b) is str:\n"
    "            return a + b\n",
    "-": "if ta is int and type(b) is int:\n"
    "            r = a - b\n"
    "            if MIN <= r <= MAX:\n"
    "                return r\n",
    "*": "if ta is int and type(b) is int:\n"
    "            r = a * b\n"
    "            if MIN <= r <= MAX:\n"
    "                return r\n",
    "%": "if ta is int and type(b) is int and a >= 0 and b > 0:\n            return a % b\n",
}

_CMP_OPS = ("<", "<=", ">", ">=")

#: The general operator on two values, for the slow path of a specialised ev.
_SLOW: dict[str, Callable[[Any, Any], Any]] = {
    "+": ops.add,
    "-": ops.sub,
    "*": ops.mul,
    "%": ops.mod,
    "<": ops.less,
    ">": ops.greater,
    "<=": ops.less_eq,
    ">=": ops.greater_eq,
    "==": ops.values_equal,
    "!=": lambda a, b: not ops.values_equal(a, b),
}


def _read(var: str, operand: Operand, name: str) -> str:
    """The statement reading ``operand`` into ``var`` (a global may raise KeyError)."""
    kind = operand[0]
    if kind == "s":
        return f"{var} = s[{name}]"
    if kind == "g":
        return f"{var} = {name}g[{name}]"
    if kind == "e":
        return f"{var} = {name}(f)"
    return f"{var} = {name}"


def _reads(left: Operand, right: Operand, on_miss: str) -> str:
    """Source reading the two operands, in order, into ``a`` and ``b`` (indented for a
    function body).

    An unset global runs the statement ``on_miss`` instead (nothing was evaluated yet: a
    global right operand only follows a slot, a global or a literal); an error raised by an
    operand ev is located at the operator, as the generic ev does."""
    out = "        s = f.slots\n"
    for var, operand, name in (("a", left, "la"), ("b", right, "rb")):
        read = _read(var, operand, name)
        if operand[0] == "g":
            out += f"        try:\n            {read}\n        except KeyError:\n"
            out += f"            {on_miss}\n"
        elif operand[0] == "e":
            out += f"        try:\n            {read}\n        except HarnError as err:\n"
            out += "            locate(err)\n            raise\n"
        else:
            out += f"        {read}\n"
    return out


def _args(left: Operand, right: Operand) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for prefix, operand in (("l", left), ("r", right)):
        key = prefix + ("a" if prefix == "l" else "b")
        if operand[0] == "g":
            env[key + "g"] = operand[1]
            env[key] = operand[2]
        else:
            env[key] = operand[1]
    return env


_FACTORIES: dict[tuple[Any, ...], Callable[..., Any]] = {}


def _factory(key: tuple[Any, ...], body: str, params: list[str]) -> Callable[..., Any]:
    """Compile (once) ``def make(params): <body>; return fn`` and return ``make``."""
    make = _FACTORIES.get(key)
    if make is None:
        src = f"def make({', '.join(params)}):\n{body}\n    return fn\n"
        ns: dict[str, Any] = {}
        exec(compile(src, f"<harnpy fastops {key[0]}>", "exec"), ns)  # noqa: S102 - own template
        make = ns["make"]
        _FACTORIES[key] = make
    return make


def _params(left: Operand, right: Operand) -> list[str]:
    out = []
    if left[0] == "g":
        out.append("lag")
    out.append("la")
    if right[0] == "g":
        out.append("rbg")
    out.append("rb")
    return out


_COMMON = ["slow", "generic", "locate", "HarnError", "MIN", "MAX"]


def _common(slow: Any, generic: Ev, locate: Callable[[HarnError], None]) -> dict[str, Any]:
    return {
        "slow": slow,
        "generic": generic,
        "locate": locate,
        "HarnError": HarnError,
        "MIN": _MIN,
        "MAX": _MAX,
    }


def binop_ev(
    op: str,
    left: Ev,
    right: Ev,
    rconst: Any,
    generic: Ev,
    locate: Callable[[HarnError], None],
) -> Ev | None:
    """A specialised ev for ``left op right`` (``+ - * %``, ``< <= > >=``, ``== !=``) whose
    operands are slots or globals (the right one may be an int literal); None for other
    shapes.

    ``generic`` is the ordinary ev of the same expression: it runs whenever a global operand is
    unset (so late binding and its errors are unchanged) and, for comparisons, for every
    operand that is not an int. ``locate`` records the operator's span on an error raised by
    the slow path of an arithmetic operator."""
    lo = _operand(left, None)
    ro = _operand(right, rconst)
    if lo[0] == "e" and ro[0] == "g":
        return None  # an unset global would run the generic ev: the left ev twice
    if lo[0] == "e" and ro[0] == "e" and op not in _ARITH_FAST:
        return None
    reads = _reads(lo, ro, "return generic(f)")
    slow: Any = _SLOW.get(op)
    if slow is None:
        return None
    if op in _ARITH_FAST:
        if op == "%" and ro[0] == "c" and ro[1] <= 0:
            return None
        fast = _ARITH_FAST[op]
    elif op in _CMP_OPS:
        fast = f"if ta is int and type(b) is int:\n            return a {op} b\n"
    else:
        fast = f"if ta is type(b) and (ta is int or ta is str):\n            return a {op} b\n"
    # the general case on the values already read (an operand ev never runs twice)
    tail = (
        "        try:\n"
        "            return slow(a, b)\n"
        "        except HarnError as err:\n"
        "            locate(err)\n"
        "            raise\n"
    )
    body = f"    def fn(f):\n{reads}        ta = type(a)\n        {fast}{tail}"
    make = _factory(("binop", op, lo[0], ro[0]), body, _params(lo, ro) + _COMMON)
    env = _args(lo, ro)
    env.update(_common(slow, generic, locate))
    fn: Ev = make(**env)
    fn._shape = (op, lo, ro)  # type: ignore[attr-defined]
    fn._slow = (slow, locate)  # type: ignore[attr-defined]
    return fn


def fused_jump(
    cond: Ev, target: int, nxt: int, jump_if: bool, back_edge: bool = False
) -> Callable[[Frame], int] | None:
    """One instruction for a specialised comparison (``< <= > >= == !=``) followed by a
    conditional jump to ``target`` when its truth equals ``jump_if`` (else ``nxt``), or None
    when ``cond`` is not such a comparison. Non-int operands take the generic comparison of
    the values read (each operand is evaluated once).

    ``back_edge``: the instruction is a loop's backward jump, where a requested interrupt is
    raised first (as :func:`~harnpy.runtime.instrs.op_loop_back` does)."""
    shape = shape_of(cond)
    if shape is None or shape[0] not in (*_CMP_OPS, "==", "!="):
        return None
    op, lo, ro = shape
    yes, no = (target, nxt) if jump_if else (nxt, target)
    reads = _reads(lo, ro, "return yes if cond(f) else no")
    slow, locate = cond._slow  # type: ignore[attr-defined]
    check = (
        "        if f.thread.interrupt_requested:\n            f.thread.raise_interrupt()\n"
        if back_edge
        else ""
    )
    body = (
        "    def fn(f):\n"
        f"{check}{reads}"
        "        if type(a) is int and type(b) is int:\n"
        f"            return yes if a {op} b else no\n"
        "        try:\n"
        "            return yes if slow(a, b) else no\n"
        "        except HarnError as err:\n"
        "            locate(err)\n"
        "            raise\n"
    )
    key = ("jump", op, lo[0], ro[0], back_edge)
    params = [*_params(lo, ro), "cond", "yes", "no", "slow", "locate", "HarnError"]
    make = _factory(key, body, params)
    env = _args(lo, ro)
    env.update(cond=cond, yes=yes, no=no, slow=slow, locate=locate, HarnError=HarnError)
    instr: Callable[[Frame], int] = make(**env)
    return instr


def fused_store(
    dest: Operand, ev: Ev, nxt: int, generic: Callable[[Frame], int], must_exist: bool = False
) -> Callable[[Frame], int] | None:
    """One instruction for ``dest = a op b`` (``+ - *`` of specialised operands: ``i = i + 1``,
    ``total = total + i``), or None for another ev.

    ``dest`` is ``("s", slot)`` or ``("g", globals, name)``; ``generic`` is the ordinary store
    instruction, run for anything but two ints with an int result; ``must_exist``: a global
    destination must already be bound (else ``generic`` runs and raises its error)."""
    shape = shape_of(ev)
    if shape is None or shape[0] not in ("+", "-", "*") or "e" in (shape[1][0], shape[2][0]):
        return None  # (its slow path runs the generic store: an operand ev would run twice)
    op, lo, ro = shape
    reads = _reads(lo, ro, "return generic(f)")
    if dest[0] == "s":
        store, check, dparams = "s[d] = ", "", ["d"]
    else:
        store, check, dparams = "dg[d] = ", (" and d in dg" if must_exist else ""), ["dg", "d"]
    body = (
        "    def fn(f):\n"
        f"{reads}"
        f"        if type(a) is int and type(b) is int{check}:\n"
        f"            r = a {op} b\n"
        "            if MIN <= r <= MAX:\n"
        f"                {store}r\n"
        "                return nxt\n"
        "        return generic(f)\n"
    )
    key = ("store", op, lo[0], ro[0], dest[0], must_exist)
    params = [*_params(lo, ro), *dparams, "generic", "nxt", "MIN", "MAX"]
    make = _factory(key, body, params)
    env = _args(lo, ro)
    if dest[0] == "g":
        env.update(dg=dest[1], d=dest[2])
    else:
        env.update(d=dest[1])
    env.update(generic=generic, nxt=nxt, MIN=_MIN, MAX=_MAX)
    instr: Callable[[Frame], int] = make(**env)
    return instr


# ------------------------------------------------------------------- calls


def inline_value(ev: Ev, var: str, i: int, env: dict[str, Any]) -> tuple[str, str]:
    """Source computing ``var`` = the value of ``ev`` inside a generated function body
    (which has ``f`` and ``s = f.slots``), and a key naming the shape of that source.

    A slot read becomes ``s[k]``; ``+``/``-``/``*`` of two slots or a slot and an int literal
    (``n - 1``) is computed inline for ints in the 64-bit range, and any other operand type
    (or an overflow) runs ``ev`` itself (operands are slot reads, so nothing is evaluated
    twice that could matter); any other ev is called. Names put into ``env`` end in ``i``."""
    operand = getattr(ev, "_operand", None)
    if operand is not None and operand[0] == "s":
        env[f"k{i}"] = operand[1]
        return f"        {var} = s[k{i}]\n", "s"
    env[f"e{i}"] = ev
    shape = shape_of(ev)
    if (
        shape is not None
        and shape[0] in ("+", "-", "*")
        and shape[1][0] in ("s", "c")
        and shape[2][0] in ("s", "c")
    ):
        op, lo, ro = shape
        reads = []
        for side, operand in (("l", lo), ("r", ro)):
            name = f"{side}{i}"
            env[name] = operand[1]
            reads.append(f"s[{name}]" if operand[0] == "s" else name)
        src = (
            f"        p{i} = {reads[0]}\n"
            f"        q{i} = {reads[1]}\n"
            f"        if type(p{i}) is int and type(q{i}) is int:\n"
            f"            {var} = p{i} {op} q{i}\n"
            f"            if not MIN <= {var} <= MAX:\n"
            f"                {var} = e{i}(f)\n"
            "        else:\n"
            f"            {var} = e{i}(f)\n"
        )
        return src, f"b{op}{lo[0]}{ro[0]}"
    return f"        {var} = e{i}(f)\n", "e"


_CALLEE = {
    "global": (
        "        try:\n"
        "            callee = g[name]\n"
        "        except KeyError:\n"
        "            callee = fallback\n"
        "        if callee is None:\n"
        "            callee = f.thread.late_bound(name, True)\n"
    ),
    "ev": "        callee = callee_ev(f)\n",
}


def call_instr(
    callee_kind: str,
    env: dict[str, Any],
    argevs: list[Ev],
    target: int,
    nxt: int,
    slow_call: Callable[..., int],
) -> Callable[[Frame], int] | None:
    """A call instruction with 0-3 plain (not spread) arguments and a fast path for a plain
    closure called with exactly its parameter count: the new frame is built here in one step
    (slot list ``[args..., captures..., padding]``, its fields stored directly rather than
    through ``Frame.__init__``) instead of through
    :func:`~harnpy.runtime.calls.call_value`, which handles every other callee.

    ``callee_kind`` ``"global"`` (``env``: ``g``, ``name``, ``fallback``: a module-level name,
    falling back to a builtin or a late-bound lookup) or ``"ev"`` (``env``: ``callee_ev``).
    The callee is evaluated before the arguments, the arguments (slot reads and int
    arithmetic on slots inline, see :func:`inline_value`) before the depth check, as in the
    generic call. A closure whose body is one call-free expression (``code.pure_ev``)
    runs inline, as callback builtins run it (:func:`~harnpy.runtime.calls.fast_function`):
    it cannot call, block or park, so no frame and no snapshot point is skipped
    (:func:`~harnpy.runtime.calls.pure_runner`). None for
    more than 3 arguments."""
    from harnpy.runtime.calls import pure_runner, stack_overflow
    from harnpy.runtime.code import SWITCH
    from harnpy.runtime.direct_run import NO, run_direct
    from harnpy.runtime.values import Closure

    n = len(argevs)
    if n > 3:
        return None
    args: dict[str, Any] = dict(env)
    evals = "        s = f.slots\n" if n else ""
    kinds = []
    for i, ev in enumerate(argevs):
        src, kind = inline_value(ev, f"x{i}", i, args)
        evals += src
        kinds.append(kind)
    xs = "".join(f"x{i}, " for i in range(n))
    body = (
        "    def fn(f):\n"
        f"{_CALLEE[callee_kind]}{evals}"
        "        if type(callee) is Closure:\n"
        "            code = callee.code\n"
        "            pad = code.call_pad\n"
        f"            if pad is not None and code.nparams == {n} and callee.bound_self is None:\n"
        "                d = code.direct\n"
        "                if d is not None:\n"
        f"                    v = run_direct(f.thread, d, callee, {xs.rstrip(', ')})\n"
        "                    if v is not NO:\n"
        "                        f.slots[target] = v\n"
        "                        return nxt\n"
        "                if code.pure_ev is not None:\n"
        "                    run = code.pure_run\n"
        "                    if run is None:\n"
        "                        run = pure_runner(code)\n"
        f"                    f.slots[target] = run(callee.captures, f.thread, {xs.rstrip(', ')})\n"
        "                    return nxt\n"
        "                th = f.thread\n"
        "                if th.depth >= th.max_depth:\n"
        "                    raise stack_overflow()\n"
        "                th.depth += 1\n"
        "                f.pc = nxt\n"
        "                nf = new(Frame)\n"
        "                nf.code = code\n"
        f"                nf.slots = [{xs}*callee.captures, *pad]\n"
        "                nf.pc = 0\n"
        "                nf.parent = f\n"
        "                nf.ret_slot = target\n"
        "                nf.thread = th\n"
        "                nf.generator = None\n"
        "                nf.defers = None\n"
        "                th.frame = nf\n"
        "                return SWITCH\n"
        f"        return slow_call(f, callee, [{xs.rstrip(', ')}], target, nxt)\n"
    )
    common = ["target", "nxt", "slow_call", "Closure", "Frame", "SWITCH", "new", "MIN", "MAX"]
    params = [*args, *common, "stack_overflow", "pure_runner", "run_direct", "NO"]
    make = _factory(("call", callee_kind, *kinds), body, params)
    args.update(
        target=target,
        nxt=nxt,
        slow_call=slow_call,
        Closure=Closure,
        Frame=Frame,
        SWITCH=SWITCH,
        new=object.__new__,
        MIN=_MIN,
        MAX=_MAX,
        stack_overflow=stack_overflow,
        pure_runner=pure_runner,
        run_direct=run_direct,
        NO=NO,
    )
    instr: Callable[[Frame], int] = make(**args)
    return instr


def return_instr(ev: Ev, slow_return: Callable[[Frame, Any], int]) -> Callable[[Frame], int]:
    """``return ev``: the value computed inline where :func:`inline_value` can, then the
    frame finished inline (the caller's result slot, a native caller's pending value, or the
    thread's result); a frame with defers or a generator body goes to ``slow_return``."""
    from harnpy.runtime.code import STOP, SWITCH

    env: dict[str, Any] = {}
    src, kind = inline_value(ev, "v", 0, env)
    body = (
        "    def fn(f):\n"
        "        s = f.slots\n"
        f"{src}"
        "        if f.defers or f.generator is not None:\n"
        "            return slow_return(f, v)\n"
        "        th = f.thread\n"
        "        p = f.parent\n"
        "        th.frame = p\n"
        "        th.depth -= 1\n"
        "        if p is None:\n"
        "            th.result = v\n"
        "            th.finished = True\n"
        "            return STOP\n"
        "        if p.native:\n"
        "            p.pending = v\n"
        "        else:\n"
        "            r = f.ret_slot\n"
        "            if r >= 0:\n"
        "                p.slots[r] = v\n"
        "        return SWITCH\n"
    )
    params = [*env, "slow_return", "STOP", "SWITCH", "MIN", "MAX"]
    make = _factory(("return", kind), body, params)
    env.update(slow_return=slow_return, STOP=STOP, SWITCH=SWITCH, MIN=_MIN, MAX=_MAX)
    instr: Callable[[Frame], int] = make(**env)
    return instr


# ------------------------------------------------------------- interpolation


def interp_ev(pieces: list[Any], display: Callable[[Any], str]) -> Ev | None:
    """A string-interpolation ev for ``pieces`` (literal strings and evs, at most 8): one
    f-string over the pieces, slot reads inline, str/int values converted without a call to
    ``display``; None for more pieces."""
    if not pieces or len(pieces) > 8:
        return None
    lines: list[str] = []
    names: list[str] = []
    env: dict[str, Any] = {"display": display}
    kinds: list[str] = []
    for i, p in enumerate(pieces):
        if type(p) is str:
            env[f"c{i}"] = p
            names.append(f"c{i}")
            kinds.append("c")
            continue
        k = slot_of(p)
        if k is not None:
            env[f"k{i}"] = k
            read = f"s[k{i}]"
            kinds.append("s")
        else:
            env[f"e{i}"] = p
            read = f"e{i}(f)"
            kinds.append("e")
        lines.append(
            f"        v{i} = {read}\n"
            f"        t = type(v{i})\n"
            f"        if t is not str:\n"
            f"            v{i} = str(v{i}) if t is int else display(v{i})\n"
        )
        names.append(f"v{i}")
    fstring = "f'" + "".join("{" + n + "}" for n in names) + "'"
    body = "    def fn(f):\n        s = f.slots\n" + "".join(lines) + f"        return {fstring}\n"
    make = _factory(("interp", *kinds), body, list(env))
    fn: Ev = make(**env)
    return fn
