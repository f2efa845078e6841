"""Instruction factories: each returns the Python closure that executes one instruction.

An instruction is ``instr(frame) -> next_pc``. Factories receive already-resolved operands
(slot indices, jump targets, expression closures ``ev(frame) -> value``) and ``nxt``, the
index of the following instruction. Expression closures never push frames; anything that
may run Harn code (a call, a method call, a generator step) is an instruction of its own,
so every suspension point has a pc and the frame's state is complete between instructions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from harnpy.runtime import calls, fastops
from harnpy.runtime.calls import (
    call_method,
    call_value,
    finish_frame,
    generator_finish,
    generator_next,
    generator_yield,
    stack_overflow,
)
from harnpy.runtime.code import MISSING, SWITCH, Frame
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow, plain_error, runtime_error, type_error
from harnpy.runtime.ops import dict_key, truthy, values_equal
from harnpy.runtime.values import (
    Builtin,
    Closure,
    EnumValue,
    Generator,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    StructValue,
    is_result,
    type_name,
)

Ev = Callable[[Frame], Any]
Instr = Callable[[Frame], int]

_getrc = sys.getrefcount


def _calibrate_unique_refcount() -> int:
    """Refcount seen by the in-place update fast path for an unshared container.

    Value semantics (spec 3.8) say ``xs[0] = 9`` rebinds ``xs`` to a modified copy; when
    nothing else references the container the copy is unobservable, so it is updated in
    place. The threshold is measured with the exact code shape used by the instructions,
    so it adapts to the Python version; if the probe is inconsistent, always copy.
    """

    def probe(s: list[Any], i: int) -> int:
        obj = s[i]
        return _getrc(obj)

    s: list[Any] = [[]]
    base = probe(s, 0)
    extra = s[0]
    shared = probe(s, 0)
    del extra
    if shared != base + 1:
        return -1
    return base


UNIQUE_RC = _calibrate_unique_refcount()


# ----------------------------------------------------------------- basics


def op_eval(ev: Ev, nxt: int) -> Instr:
    """Evaluate an expression for its effects (an expression statement)."""

    def instr(f: Frame) -> int:
        ev(f)
        return nxt

    return instr


def op_store(slot: int, ev: Ev, nxt: int) -> Instr:
    """``slots[slot] = ev()``."""

    def instr(f: Frame) -> int:
        f.slots[slot] = ev(f)
        return nxt

    fused = fastops.fused_store(("s", slot), ev, nxt, instr)
    return fused if fused is not None else instr


def op_store_global(g: dict[str, Any], name: str, ev: Ev, nxt: int) -> Instr:
    """``module.globals[name] = ev()`` (a top-level binding)."""

    def instr(f: Frame) -> int:
        g[name] = ev(f)
        return nxt

    fused = fastops.fused_store(("g", g, name), ev, nxt, instr)
    return fused if fused is not None else instr


def op_set_const(slot: int, value: Any, nxt: int) -> Instr:
    """``slots[slot] = value`` for a compile-time constant."""

    def instr(f: Frame) -> int:
        f.slots[slot] = value
        return nxt

    return instr


def op_jump(target: int) -> Instr:
    """Unconditional jump to ``target``."""

    def instr(f: Frame) -> int:
        return target

    return instr


def op_loop_back(target: int) -> Instr:
    """Backward jump of a loop: the place where an interrupt (Ctrl-C) is noticed."""

    def instr(f: Frame) -> int:
        if f.thread.interrupt_requested:
            f.thread.raise_interrupt()
        return target

    return instr


def op_loop_back_if(cond: Ev, is_bool: bool, body: int, end: int) -> Instr:
    """Backward jump of a ``while`` loop whose condition is one ev: notice an interrupt (as
    :func:`op_loop_back`), then test ``cond`` and go to ``body`` or to ``end``."""
    fused = fastops.fused_jump(cond, body, end, jump_if=True, back_edge=True)
    if fused is not None:
        return fused

    def instr(f: Frame) -> int:
        if f.thread.interrupt_requested:
            f.thread.raise_interrupt()
        c = cond(f)
        return body if (c if is_bool else truthy(c)) else end

    return instr


def op_jump_if_false(cond: Ev, is_bool: bool, target: int, nxt: int) -> Instr:
    """Jump to ``target`` unless ``cond`` holds (``is_bool``: cond is already a bool)."""
    fused = fastops.fused_jump(cond, target, nxt, jump_if=False)
    if fused is not None:
        return fused
    if is_bool:

        def instr(f: Frame) -> int:
            return nxt if cond(f) else target

    else:

        def instr(f: Frame) -> int:
            return nxt if truthy(cond(f)) else target

    return instr


def op_jump_if_true(cond: Ev, is_bool: bool, target: int, nxt: int) -> Instr:
    """Jump to ``target`` when ``cond`` holds (``is_bool``: cond is already a bool)."""

    fused = fastops.fused_jump(cond, target, nxt, jump_if=True)
    if fused is not None:
        return fused
    if is_bool:

        def instr(f: Frame) -> int:
            return target if cond(f) else nxt

    else:

        def instr(f: Frame) -> int:
            return target if truthy(cond(f)) else nxt

    return instr


def op_jump_if_nil(slot: int, target: int, nxt: int) -> Instr:
    """Jump to ``target`` when ``slots[slot]`` is nil."""

    def instr(f: Frame) -> int:
        return target if f.slots[slot] is None else nxt

    return instr


def op_jump_if_not_nil(slot: int, target: int, nxt: int) -> Instr:
    """Jump to ``target`` unless ``slots[slot]`` is nil (``??``)."""

    def instr(f: Frame) -> int:
        return nxt if f.slots[slot] is None else target

    return instr


def op_raise(make_error: Callable[[Frame], BaseException], nxt: int) -> Instr:
    """Raise the error ``make_error(frame)`` builds (statically known errors)."""

    def instr(f: Frame) -> int:
        raise make_error(f)

    return instr


def op_throw(ev: Ev, nxt: int) -> Instr:
    """``throw v``: raise :class:`HarnThrow` with the value (spec 3.12)."""

    def instr(f: Frame) -> int:
        raise HarnThrow(ev(f))

    return instr


# ------------------------------------------------------------------ calls


def _args_builder(argevs: list[Ev], spread: list[bool]) -> Callable[[Frame], list[Any]]:
    if any(spread):

        def build(f: Frame) -> list[Any]:
            out: list[Any] = []
            for ev, sp in zip(argevs, spread):
                v = ev(f)
                if sp:
                    if type(v) is not list:
                        raise runtime_error(f"spread argument must be a list, got {type_name(v)}")
                    out.extend(v)
                else:
                    out.append(v)
            return out

        return build
    n = len(argevs)
    if n == 0:
        return lambda f: []
    if n == 1:
        a0 = argevs[0]
        return lambda f: [a0(f)]
    if n == 2:
        a0, a1 = argevs
        return lambda f: [a0(f), a1(f)]
    if n == 3:
        a0, a1, a2 = argevs
        return lambda f: [a0(f), a1(f), a2(f)]
    return lambda f: [a(f) for a in argevs]


def op_call(callee: Ev, argevs: list[Ev], spread: list[bool], target: int, nxt: int) -> Instr:
    """Call the value of ``callee`` with the argument evs; result to ``slots[target]``."""
    if not any(spread):
        fast = fastops.call_instr("ev", {"callee_ev": callee}, argevs, target, nxt, call_value)
        if fast is not None:
            return fast
    build = _args_builder(argevs, spread)

    def instr(f: Frame) -> int:
        return call_value(f, callee(f), build(f), target, nxt)

    return instr


def op_call_global(
    g: dict[str, Any],
    name: str,
    fallback: Any,
    argevs: list[Ev],
    spread: list[bool],
    target: int,
    nxt: int,
) -> Instr:
    """Call a module-level name; ``fallback`` (a builtin or None) is used when unset."""
    if not any(spread):
        env = {"g": g, "name": name, "fallback": fallback}
        fast = fastops.call_instr("global", env, argevs, target, nxt, call_value)
        if fast is not None:
            return fast
    build = _args_builder(argevs, spread)
    if not any(spread) and len(argevs) == 1:
        a0 = argevs[0]

        def instr1(f: Frame) -> int:
            callee = g.get(name, fallback)
            if callee is None:
                callee = f.thread.late_bound(name, True)
            return call_value(f, callee, [a0(f)], target, nxt)

        return instr1

    def instr(f: Frame) -> int:
        callee = g.get(name, fallback)
        if callee is None:
            callee = f.thread.late_bound(name, True)
        return call_value(f, callee, build(f), target, nxt)

    return instr


def op_call_dynamic(
    name: str, argevs: list[Ev], spread: list[bool], target: int, nxt: int
) -> Instr:
    """Call a name not resolvable at compile time (late-bound function name)."""
    build = _args_builder(argevs, spread)

    def instr(f: Frame) -> int:
        callee = f.thread.late_bound(name, True)
        return call_value(f, callee, build(f), target, nxt)

    return instr


def op_method(
    obj: Ev,
    name: str,
    argevs: list[Ev],
    spread: list[bool],
    optional: bool,
    target: int,
    nxt: int,
) -> Instr:
    """``obj.name(args)`` / ``obj?.name(args)``; result to ``slots[target]``."""

    build = _args_builder(argevs, spread)

    def instr(f: Frame) -> int:
        o = obj(f)
        if o is None and optional:
            f.slots[target] = None
            return nxt
        return call_method(f, o, name, build(f), target, nxt)

    return instr


def op_tail_call(callee: Ev, argevs: list[Ev], spread: list[bool], target: int, nxt: int) -> Instr:
    """``return f(args)``: reuse the frame slot on the stack for a plain closure call."""
    build = _args_builder(argevs, spread)

    def instr(f: Frame) -> int:
        fn = callee(f)
        args = build(f)
        if (
            type(fn) is Closure
            and not fn.code.is_generator
            and f.generator is None
            and not f.defers
        ):
            th = f.thread
            nf = Frame(fn.code, calls.closure_slots(fn, args), th)
            nf.parent = f.parent
            nf.ret_slot = f.ret_slot
            nf.tail_calls = getattr(f, "tail_calls", 0) + 1
            th.frame = nf
            return SWITCH
        return call_value(f, fn, args, target, nxt)

    return instr


def op_tail_call_global(
    g: dict[str, Any],
    name: str,
    fallback: Any,
    argevs: list[Ev],
    spread: list[bool],
    target: int,
    nxt: int,
) -> Instr:
    """``return name(args)`` for a module-level name (see :func:`op_tail_call`)."""

    def callee(f: Frame) -> Any:
        c = g.get(name, fallback)
        if c is None:
            c = f.thread.late_bound(name, True)
        return c

    return op_tail_call(callee, argevs, spread, target, nxt)


# ----------------------------------------------------------------- returns


def do_return(f: Frame, value: Any) -> int:
    """Leave frame ``f`` with ``value``: run pending defers, finish generators, pop."""
    if f.defers:
        return run_next_defer(f, value)
    if f.generator is not None:
        return generator_finish(f)
    return finish_frame(f, value)


def run_next_defer(f: Frame, value: Any) -> int:
    """Pop one deferred closure and call it; the frame resumes at its return trampoline."""
    code = f.code
    clo = f.defers.pop()  # type: ignore[union-attr]
    f.slots[code.defer_slot] = value  # type: ignore[index]
    return call_value(f, clo, [], code.defer_discard, code.defer_trampoline)


def op_return(ev: Ev) -> Instr:
    """``return v``: leave the frame (running defers, finishing generators); a plain frame
    is finished inline (:func:`~harnpy.runtime.fastops.return_instr`)."""
    return fastops.return_instr(ev, do_return)


class RaiseAfterDefers:
    """Marker in a frame's defer slot: the frame is leaving by a throw; once its deferred
    blocks have run, the error continues unwinding (spec 3.12)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def op_return_trampoline(slot: int) -> Instr:
    """Continue a return (or a throw) that was interrupted to run a deferred block."""

    def instr(f: Frame) -> int:
        v = f.slots[slot]
        if f.defers:
            return run_next_defer(f, v)
        if type(v) is RaiseAfterDefers:
            f.slots[slot] = None
            raise v.exc
        return do_return(f, v)

    return instr


def op_defer(make: Ev, nxt: int) -> Instr:
    """``defer { ... }``: register the deferred closure on the frame (run LIFO at exit)."""

    def instr(f: Frame) -> int:
        clo = make(f)
        if f.defers is None:
            f.defers = []
        f.defers.append(clo)
        return nxt

    return instr


def op_yield(ev: Ev, nxt: int) -> Instr:
    """``yield v`` / ``emit v``: park the generator frame and hand ``v`` to its consumer."""

    def instr(f: Frame) -> int:
        if f.generator is None:
            raise runtime_error("yield outside of a generator")
        return generator_yield(f, ev(f), nxt)

    return instr


def op_propagate(slot: int, nxt: int) -> Instr:
    """Postfix ``?``: unwrap ``Ok``; return an ``Err`` from the function (spec 3.12)."""

    def instr(f: Frame) -> int:
        v = f.slots[slot]
        if not is_result(v):
            raise type_error(f"? operator requires a Result value, got {type_name(v)}")
        if v.variant == "Ok":
            f.slots[slot] = v.fields[0] if v.fields else None
            return nxt
        return do_return(f, v)

    return instr


# --------------------------------------------------------------- finally

PENDING_NORMAL = 0
PENDING_THROW = 1
PENDING_RETURN = 2
PENDING_JUMP = 3


def op_set_pending(slot: int, kind: int, payload: Any, target: int) -> Instr:
    """Record how a try block is being left (normal / jump) and go run its finally."""
    rec = (kind, payload)

    def instr(f: Frame) -> int:
        f.slots[slot] = rec
        return target

    return instr


def op_pending_return(slot: int, ev: Ev, target: int) -> Instr:
    """``return v`` inside a try with finally: remember the value, run the finally first."""

    def instr(f: Frame) -> int:
        f.slots[slot] = (PENDING_RETURN, ev(f))
        return target

    return instr


def op_end_finally(slot: int, outer: tuple[int, int, int, int] | None, nxt: int) -> Instr:
    """End of a finally block: resume the pending way out of the try.

    ``outer`` is ``(pending_slot, finally_pc, region_start, region_end)`` of the next
    enclosing try-with-finally in the same function, through which returns and jumps that
    leave it must pass.
    """

    def instr(f: Frame) -> int:
        rec = f.slots[slot]
        f.slots[slot] = None
        if rec is None:
            return nxt
        kind, payload = rec
        if kind == PENDING_NORMAL:
            return nxt
        if kind == PENDING_THROW:
            raise payload
        if kind == PENDING_RETURN:
            if outer is not None:
                f.slots[outer[0]] = rec
                return outer[1]
            return do_return(f, payload)
        # PENDING_JUMP
        if outer is not None and not (outer[2] <= payload < outer[3]):
            f.slots[outer[0]] = rec
            return outer[1]
        return int(payload)

    return instr


# ----------------------------------------------------------------- loops


def iterate_source(v: Any) -> Any:
    """A Python iterator over ``v`` for ``for`` loops, or the Generator / IterValue itself.

    Spec 3.13: lists, dict entries (``{key, value}`` in key order), sets, ranges, iters,
    generators and streams iterate; any other value iterates zero times.
    """
    t = type(v)
    if t is list:
        return iter(v)
    if t is RangeValue:
        return iter(v.py_range())
    if t is dict:
        return iter([{"key": k, "value": v[k]} for k in sorted(v)])
    if t is HSet:
        return iter(list(v.items))
    if t is Generator:
        return v
    if t is IterValue:
        if v.memo is not None:
            from harnpy.stdlib.iters import sequence_cursor

            return sequence_cursor(v)
        return v
    from harnpy.runtime.values import Channel

    if t is Channel:
        return v
    return iter(())


def op_iter_init(ev: Ev, slot: int, nxt: int) -> Instr:
    """``for`` loop set-up: the iteration source of the value into ``slots[slot]``."""

    def instr(f: Frame) -> int:
        f.slots[slot] = iterate_source(ev(f))
        return nxt

    return instr


_END = object()


def op_for_next(it_slot: int, var_slot: int, end: int, gen_pc: int, nxt: int) -> Instr:
    """Next item of a ``for`` loop into ``var_slot``; jump to ``end`` when exhausted.

    Generators are stepped by pushing their frame (``gen_pc`` receives the ``{done, value}``
    item in ``var_slot``); channels and iters are driven by the thread.
    """

    def instr(f: Frame) -> int:
        it = f.slots[it_slot]
        try:
            v = next(it, _END)
        except TypeError:
            return _for_next_slow(f, it, var_slot, end, nxt, gen_pc)
        if v is _END:
            f.slots[it_slot] = None
            return end
        f.slots[var_slot] = v
        return nxt

    return instr


def op_for_back(it_slot: int, var_slot: int, end: int, top: int, body: int) -> Instr:
    """Back-edge of a ``for`` loop: notice an interrupt (as :func:`op_loop_back`), then take
    the next item of a plain iterator itself and jump straight into the body (``end`` when
    exhausted), as the loop's ``op_for_next`` at ``top`` followed by its jump would; any
    other iterable (a generator, an iter with stages, a channel) goes back to ``top``."""

    def instr(f: Frame) -> int:
        if f.thread.interrupt_requested:
            f.thread.raise_interrupt()
        s = f.slots
        try:
            v = next(s[it_slot], _END)
        except TypeError:
            return top
        if v is _END:
            s[it_slot] = None
            return end
        s[var_slot] = v
        return body

    return instr


def _for_next_slow(f: Frame, it: Any, var_slot: int, end: int, nxt: int, gen_pc: int) -> int:
    t = type(it)
    if t is Generator:
        if it.done:
            return end
        return generator_next(f, it, var_slot, gen_pc)
    if t is IterValue:
        return f.thread.iter_next_for(f, it, var_slot, end, nxt, gen_pc)
    from harnpy.runtime.values import Channel

    if t is Channel:
        return f.thread.channel_next_for(f, it, var_slot, end, nxt)
    raise TypeError(f"not iterable: {it!r}")


def op_for_gen_item(it_slot: int, var_slot: int, end: int, nxt: int) -> Instr:
    """After a generator step: unpack ``{done, value}`` or leave the loop."""

    def instr(f: Frame) -> int:
        item = f.slots[var_slot]
        if item["done"]:
            f.slots[it_slot] = None
            return end
        f.slots[var_slot] = item["value"]
        return nxt

    return instr


# ------------------------------------------------------------- assignment


def op_assign_slot_index(slot: int, key: Ev, value: Ev, op: Callable | None, nxt: int) -> Instr:
    """``x[k] = v`` / ``x[k] op= v`` on a local: update in place when unshared, else copy."""

    def instr(f: Frame) -> int:
        s = f.slots
        k = key(f)
        v = value(f)
        obj = s[slot]
        if op is not None:
            from harnpy.runtime.ops import index

            v = op(index(obj, k), v)
        if _getrc(obj) > UNIQUE_RC:
            obj = _copy_container(obj)
            s[slot] = obj
        _set_item(obj, k, v)
        return nxt

    return instr


def op_assign_global_index(
    g: dict[str, Any], name: str, key: Ev, value: Ev, op: Callable | None, nxt: int
) -> Instr:
    """``g[k] = v`` / ``g[k] op= v`` on a module global (see :func:`op_assign_slot_index`)."""

    def instr(f: Frame) -> int:
        k = key(f)
        v = value(f)
        if name not in g:
            raise plain_error(f"Undefined variable: {name}", "E301")
        obj = g[name]
        if op is not None:
            from harnpy.runtime.ops import index

            v = op(index(obj, k), v)
        if _getrc(obj) > UNIQUE_RC:
            obj = _copy_container(obj)
            g[name] = obj
        _set_item(obj, k, v)
        return nxt

    return instr


def op_push_in_place(slot: int, value: Ev, nxt: int) -> Instr:
    """``xs = xs.push(v)`` on a local slot: append in place when the list is unshared;
    otherwise a copy (value semantics). Non-lists dispatch ``.push`` as a normal method
    call. Module globals use :func:`op_push_global`."""

    def instr(f: Frame) -> int:
        v = value(f)
        s = f.slots
        obj = s[slot]
        if type(obj) is list:
            if _getrc(obj) <= UNIQUE_RC:
                obj.append(v)
            else:
                s[slot] = obj + [v]
            return nxt
        return call_method(f, obj, "push", [v], slot, nxt)

    return instr


def op_push_global(g: dict[str, Any], name: str, value: Ev, tmp: int, done: int, nxt: int) -> Instr:
    """``xs = xs.push(v)`` on a module global: like :func:`op_push_in_place`; a non-list
    receiver dispatches ``.push`` with the result in ``tmp``, and the next instruction
    moves it into the global (the list paths jump to ``done``, past that move)."""

    def instr(f: Frame) -> int:
        v = value(f)
        if name not in g:
            raise plain_error(f"Undefined variable: {name}", "E301")
        obj = g[name]
        if type(obj) is list:
            if _getrc(obj) <= UNIQUE_RC:
                obj.append(v)
            else:
                g[name] = obj + [v]
            return done
        return call_method(f, obj, "push", [v], tmp, nxt)

    return instr


def op_add_in_place(where: Any, value: Ev, nxt: int) -> Instr:
    """``a += b`` on a local slot or module global: lists are extended and dicts updated
    in place when unshared (``a`` cannot be observed elsewhere); any other case is
    ``a = a + b`` with the usual arithmetic rules (spec 3.6)."""
    from harnpy.runtime.ops import add

    if type(where) is int:
        slot = where

        def instr(f: Frame) -> int:
            b = value(f)
            s = f.slots
            a = s[slot]
            ta = type(a)
            if ta is type(b) and (ta is list or ta is dict) and _getrc(a) <= UNIQUE_RC:
                if ta is list:
                    a.extend(b)
                else:
                    a.update(b)
                return nxt
            s[slot] = add(a, b)
            return nxt

        return instr
    g, name = where

    def instr_global(f: Frame) -> int:
        b = value(f)
        if name not in g:
            raise plain_error(f"Undefined variable: {name}", "E301")
        a = g[name]
        ta = type(a)
        if ta is type(b) and (ta is list or ta is dict) and _getrc(a) <= UNIQUE_RC:
            if ta is list:
                a.extend(b)
            else:
                a.update(b)
            return nxt
        g[name] = add(a, b)
        return nxt

    return instr_global


def _copy_container(obj: Any) -> Any:
    t = type(obj)
    if t is list:
        return obj.copy()
    if t is dict:
        return obj.copy()
    if t is StructValue:
        return StructValue(obj.name, obj.fields.copy())
    return obj


def _set_item(obj: Any, k: Any, v: Any) -> None:
    t = type(obj)
    if t is dict:
        obj[k if type(k) is str else dict_key(k)] = v
        return
    if t is list:
        if type(k) is not int:
            raise type_error(f"list index must be an int, got {type_name(k)}")
        n = len(obj)
        if not -n <= k < n:
            raise runtime_error(f"Index {k} out of bounds for list of length {n}")
        obj[k] = v
        return
    if t is StructValue:
        obj.fields[dict_key(k)] = v
        return
    if obj is None:
        raise type_error(f"cannot assign into nil with {type_name(k)}")
    raise type_error(f"cannot assign into {type_name(obj)} with {type_name(k)}")


# ----------------------------------------------------------- destructuring


def destructure_dict(v: Any, keys: list[tuple[str, bool]]) -> list[Any]:
    """Values for a dict pattern: one per ``(key, is_rest)``; rest gets remaining keys."""
    if type(v) is StructValue:
        v = v.fields
    if type(v) is not dict:
        if v is None:
            raise runtime_error("cannot destructure nil with {...} pattern")
        raise runtime_error(f"cannot destructure {type_name(v)} with {{...}} pattern")
    out: list[Any] = []
    named = {k for k, rest in keys if not rest}
    for k, rest in keys:
        if rest:
            out.append({kk: vv for kk, vv in v.items() if kk not in named})
        else:
            out.append(v.get(k))
    return out


def destructure_list(v: Any, n: int, rest: bool) -> list[Any]:
    """Values for a list pattern of ``n`` names (the last collects the rest if ``rest``)."""
    if type(v) is not list:
        if v is None:
            raise runtime_error("cannot destructure nil with [...] pattern")
        raise runtime_error(f"cannot destructure {type_name(v)} with [...] pattern")
    if rest:
        head = [v[i] if i < len(v) else None for i in range(n - 1)]
        return head + [v[n - 1 :]]
    return [v[i] if i < len(v) else None for i in range(n)]


# ------------------------------------------------------------------ match


def enum_matches(v: Any, enum: str, variant: str) -> bool:
    """Pattern test: ``v`` is variant ``variant`` of enum ``enum``."""

    return type(v) is EnumValue and v.enum == enum and v.variant == variant


def list_prefix_matches(v: Any, n: int) -> bool:
    """Pattern test: ``v`` is a list with at least ``n`` items (spec 2.6)."""

    return type(v) is list and len(v) >= n


def dict_matches(v: Any) -> bool:
    """Pattern test: ``v`` is a dict."""

    return type(v) is dict


__all__ = [
    "MISSING",
    "values_equal",
    "Builtin",
    "Pair",
    "display",
    "stack_overflow",
]
