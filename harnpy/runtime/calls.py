"""Calls, returns and method dispatch on the explicit frame stack.

Every function here runs *inside one instruction*: it either finishes the call at once
(builtins) and returns the next pc, or pushes a new frame onto the thread, saves the
caller's resume pc and returns :data:`SWITCH` so the run loop reloads the top frame. No Harn
call ever recurses on the Python stack.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from harnpy.runtime.code import MISSING, STOP, SWITCH, CodeObject, Frame, NativeFrame
from harnpy.runtime.direct_run import DIRECT_DEPTH, NO, run_direct
from harnpy.runtime.display import display
from harnpy.runtime.errors import (
    HarnError,
    HarnRuntimeError,
    TraceEntry,
    plain_error,
    type_error,
)
from harnpy.runtime.values import (
    BoundMethod,
    Builtin,
    CallRequest,
    Closure,
    EnumValue,
    Generator,
    HSet,
    IterValue,
    StructType,
    StructValue,
    type_name,
)
from harnpy.stdlib.registry import METHODS, surplus_error

_METHOD_TABLE_KEY: dict[type, str] = {
    str: "string",
    list: "list",
    dict: "dict",
    HSet: "set",
    StructValue: "struct",
    EnumValue: "enum",
    bytes: "bytes",
    int: "int",
    float: "float",
}


_SEQUENCE_METHOD = Builtin("sequence method", lambda *a: None, callback=True)


def stack_overflow() -> HarnRuntimeError:
    """The catchable error raised at the frame limit (spec 3.11 message)."""

    return plain_error("Stack overflow: too many nested calls", "E304")


# ---------------------------------------------------------------- arguments


def bind_args(code: CodeObject, args: list[Any], captures: list[Any], name: str) -> list[Any]:
    """Build the slot list of a new frame of ``code`` (spec language.md 3.11).

    Missing arguments become nil (or MISSING when the code applies defaults in its
    prologue); surplus arguments are dropped unless the last parameter is a rest parameter.
    """
    n = code.nparams
    if code.rest:
        fixed = n - 1
        head = args[:fixed]
        if len(head) < fixed:
            head = head + [MISSING if code.has_defaults else None] * (fixed - len(head))
        slots = head + [args[fixed:]]
    else:
        k = len(args)
        if k == n:
            slots = list(args)
        elif k > n:
            slots = args[:n]
        else:
            slots = args + [MISSING if code.has_defaults else None] * (n - k)
    slots.extend(captures)
    extra = code.nslots - len(slots)
    if extra:
        slots.extend([None] * extra)
    return slots


def closure_slots(callee: Closure, args: list[Any]) -> list[Any]:
    """The slot list of a new frame of ``callee`` called with ``args``.

    ``args`` must be a fresh list the caller does not reuse (it may become the slot list).
    """
    code = callee.code
    if code.simple and len(args) == code.nparams and callee.bound_self is None:
        slots = args + callee.captures
        if code.nslots > len(slots):
            slots.extend([None] * (code.nslots - len(slots)))
        return slots
    if callee.bound_self is not None:
        args = [callee.bound_self, *args]
    return bind_args(code, list(args), callee.captures, code.name)


def pure_runner(code: CodeObject) -> Any:
    """The direct Python callable ``run(captures, thread, *args)`` of a code object whose
    body is a single call-free expression (``code.pure_ev``), built once per code object and
    kept in ``code.pure_run``.

    It evaluates the expression on one frame kept for the code object, its slots set to
    ``[*args, *captures, padding]`` for the call (missing arguments are nil, surplus ones
    dropped) and put back afterwards, so a nested use of the same code (a builtin inside the
    expression running Harn code synchronously) leaves the outer evaluation's frame intact.
    The expression cannot suspend, so nothing snapshot-worthy happens inside it. An error
    gets the closure's trace entry here, as its frame's unwind would have added it."""
    run = code.pure_run
    if run is not None:
        return run
    ev = code.pure_ev
    n = code.nparams
    tail = (None,) * (code.nslots - n - len(code.capture_names))
    fr = Frame(code, [], None)

    def evaluate(caps: list[Any], thread: Any, *args: Any) -> Any:
        if len(args) != n:
            args = (args + (None,) * n)[:n]
        saved = fr.slots
        saved_thread = fr.thread
        fr.slots = [*args, *caps, *tail]
        fr.thread = thread
        try:
            return ev(fr)
        except HarnError as err:
            at = err.at
            err.at = None
            if at is None:
                line, col = code.line_at(0)
                at = (line, col, 0)
            err.trace.append(TraceEntry(code.name, code.module.path, *at))
            raise
        finally:
            fr.slots = saved
            fr.thread = saved_thread

    code.pure_run = evaluate
    return evaluate


def fast_function(f: Any) -> Any:
    """A direct Python callable ``call(thread, *args)`` for a closure whose body is a single
    call-free expression (``{ x -> x * 2 }``), or None (see :func:`pure_runner`).

    Callback builtins use it to evaluate such callbacks without a frame switch per item;
    the expression cannot suspend, so nothing snapshot-worthy happens inside it.
    """
    if type(f) is not Closure:
        return None
    fast = f.fast
    if fast is not None:
        return fast
    code = f.code
    if code.pure_ev is None or f.bound_self is not None:
        return None
    fast = partial(pure_runner(code), f.captures)
    if code.direct is not None:
        fast = _direct_fast(code, f, fast)
    f.fast = fast
    return fast


def _direct_fast(code: CodeObject, clo: Closure, slow: Any) -> Any:
    """``fast_function`` through the closure's direct form (:mod:`harnpy.runtime.direct`);
    when the direct run aborts, ``slow`` (the pure runner) evaluates it again, so errors
    and their traces are the pure runner's."""

    if code.nparams == 1:

        def call1(thread: Any, x: Any = None, *rest: Any) -> Any:
            if not rest:
                try:
                    return code.direct(thread, DIRECT_DEPTH, clo, x)
                except Exception:  # noqa: BLE001 - the pure runner decides
                    pass
            return slow(thread, x, *rest)

        return call1
    if code.nparams == 2:

        def call2(thread: Any, x: Any = None, y: Any = None, *rest: Any) -> Any:
            if not rest:
                try:
                    return code.direct(thread, DIRECT_DEPTH, clo, x, y)
                except Exception:  # noqa: BLE001 - the pure runner decides
                    pass
            return slow(thread, x, y, *rest)

        return call2

    def call(thread: Any, *args: Any) -> Any:
        if len(args) == code.nparams:
            try:
                return code.direct(thread, DIRECT_DEPTH, clo, *args)
            except Exception:  # noqa: BLE001 - the pure runner decides
                pass
        return slow(thread, *args)

    return call


# -------------------------------------------------------------------- calls


def call_value(f: Frame, callee: Any, args: list[Any], target: int, nxt: int) -> int:
    """Call ``callee`` with ``args`` from frame ``f``; the result goes to ``f.slots[target]``.

    Returns ``nxt`` when the call completed inline, :data:`SWITCH` when a frame was pushed.
    Raises ``Type error: Cannot call X`` for non-callable values.
    """
    t = type(callee)
    if t is Closure:
        code = callee.code
        th = f.thread
        d = code.direct
        if d is not None and len(args) == code.nparams and callee.bound_self is None:
            v = run_direct(th, d, callee, *args)
            if v is not NO:
                f.slots[target] = v
                return nxt
        nf = Frame(code, closure_slots(callee, args), th)
        if code.is_generator:
            gen = Generator(nf, code.gen_kind)
            nf.generator = gen
            f.slots[target] = gen
            return nxt
        if th.depth >= th.max_depth:
            raise stack_overflow()
        th.depth += 1
        nf.parent = f
        nf.ret_slot = target
        f.pc = nxt
        th.frame = nf
        return SWITCH
    if t is Builtin:
        m = callee.max_args
        if m is not None and len(args) > m:
            raise surplus_error(callee, len(args))
        if callee.callback:
            return push_native(f, callee, callee.fn(f.thread, *args), target, nxt)
        if callee.control:
            return call_control(f, callee, args, target, nxt)
        f.slots[target] = callee.fn(f.thread, *args)
        return nxt
    if t is BoundMethod:
        return call_method(f, callee.receiver, callee.name, args, target, nxt)
    if t is StructType:
        f.slots[target] = callee.construct(args)
        return nxt
    raise type_error(f"Cannot call {display(callee)}")


def call_control(f: Frame, callee: Builtin, args: list[Any], target: int, nxt: int) -> int:
    """Call a control builtin with the caller's resume point saved: ``f.pc`` is the next
    instruction and the result slot already holds nil, so the thread can be snapshotted or
    descheduled inside the call. The builtin returns its value, or raises/blocks."""
    f.pc = nxt
    f.slots[target] = None
    th = f.thread
    th.pending_target = target
    value = callee.fn(th, *args)
    if th.frame is not f or th.blocked_on is not None:
        return STOP if th.blocked_on is not None else SWITCH
    f.slots[target] = value
    return nxt


def push_native(f: Frame | NativeFrame, builtin: Builtin, gen: Any, target: int, nxt: int) -> int:
    """Start a callback builtin's generator as a native frame above ``f``."""
    th = f.thread
    nf = NativeFrame(gen, builtin.name, th)
    if th.depth >= th.max_depth:
        raise stack_overflow()
    th.depth += 1
    nf.parent = f
    nf.ret_slot = target
    if not f.native:
        f.pc = nxt  # type: ignore[union-attr]
    th.frame = nf
    return SWITCH


def resume_native(nf: NativeFrame) -> int:
    """Advance a native frame: send it the pending result, act on what it yields next."""
    try:
        if nf.pending_exc is None and nf.started:
            req = nf.gen.send(nf.pending)
        elif nf.pending_exc is not None:
            exc = nf.pending_exc
            nf.pending_exc = None
            req = nf.gen.throw(exc)
        else:
            nf.started = True
            req = next(nf.gen)
    except StopIteration as stop:
        return finish_frame(nf, stop.value)
    nf.pending = None
    if type(req) is CallRequest:
        callee = req.fn
        if type(callee) is Closure:
            # Fast path of call_from_native for the common plain closure callback.
            code = callee.code
            args = req.args
            if (
                code.simple
                and not code.is_generator
                and len(args) == code.nparams
                and callee.bound_self is None
            ):
                d = code.direct
                if d is not None:
                    v = run_direct(nf.thread, d, callee, *args)
                    if v is not NO:
                        nf.pending = v
                        return SWITCH
                if code.pure_ev is not None:
                    # A call-free expression body: evaluated here (it cannot suspend); its
                    # result or error goes back into the builtin as a frame's would.
                    run = code.pure_run or pure_runner(code)
                    try:
                        nf.pending = run(callee.captures, nf.thread, *args)
                    except HarnError as exc:
                        nf.pending_exc = exc
                    return SWITCH
                th = nf.thread
                if th.depth >= th.max_depth:
                    raise stack_overflow()
                slots = args + callee.captures
                if code.nslots > len(slots):
                    slots.extend([None] * (code.nslots - len(slots)))
                fr = Frame(code, slots, th)
                th.depth += 1
                fr.parent = nf
                th.frame = fr
                return SWITCH
        return call_from_native(nf, callee, req.args)
    handler = getattr(req, "handle", None)
    if handler is not None:
        return int(handler(nf))
    raise RuntimeError(f"builtin {nf.builtin} yielded an unknown request {req!r}")


def call_from_native(nf: NativeFrame, callee: Any, args: list[Any]) -> int:
    """A Harn call requested by a native frame; the result is sent back into it."""
    t = type(callee)
    if t is Closure:
        code = callee.code
        fr = Frame(code, closure_slots(callee, args), nf.thread)
        if code.is_generator:
            gen = Generator(fr, code.gen_kind)
            fr.generator = gen
            nf.pending = gen
            return SWITCH
        th = nf.thread
        if th.depth >= th.max_depth:
            raise stack_overflow()
        th.depth += 1
        fr.parent = nf
        th.frame = fr
        return SWITCH
    if t is Builtin:
        m = callee.max_args
        if m is not None and len(args) > m:
            raise surplus_error(callee, len(args))
        if callee.callback:
            return push_native(nf, callee, callee.fn(nf.thread, *args), -1, 0)
        nf.pending = callee.fn(nf.thread, *args)
        return SWITCH
    if t is StructType:
        nf.pending = callee.construct(list(args))
        return SWITCH
    if t is BoundMethod:
        # Dispatch through a temporary slot-less path: run the method and deliver.
        return call_method(nf, callee.receiver, callee.name, list(args), -1, 0)  # type: ignore[arg-type]
    raise type_error(f"Cannot call {display(callee)}")


def finish_frame(fr: Frame | NativeFrame, value: Any) -> int:
    """Pop ``fr`` and deliver ``value`` to its caller (slot, native frame or thread)."""
    th = fr.thread
    p = fr.parent
    th.frame = p
    th.depth -= 1
    if p is None:
        th.result = value
        th.finished = True
        return STOP
    if p.native:
        p.pending = value  # type: ignore[union-attr]
    else:
        r = fr.ret_slot
        if r >= 0:
            p.slots[r] = value  # type: ignore[union-attr]
    return SWITCH


def deliver(f: Frame | NativeFrame, target: int, value: Any, nxt: int) -> int:
    """Store an inline result for a caller that may be a Harn frame or a native frame."""
    if f.native:
        f.pending = value  # type: ignore[union-attr]
        return SWITCH
    f.slots[target] = value  # type: ignore[union-attr]
    return nxt


# ------------------------------------------------------------------ methods


def call_method(f: Frame, obj: Any, name: str, args: list[Any], target: int, nxt: int) -> int:
    """``obj.name(args)`` (spec 3.7): builtin methods, dict-held callables, impl methods,
    generator ``next``; unknown methods give nil."""
    t = type(obj)
    if t is IterValue and obj.memo is not None:
        from harnpy.stdlib.iters import sequence_method

        return push_native(
            f, _SEQUENCE_METHOD, sequence_method(f.thread, obj, name, args), target, nxt
        )
    key = _METHOD_TABLE_KEY.get(t)
    if key is None:
        key = type_name(obj)
    table = METHODS.get(key)
    if table is not None:
        m = table.get(name)
        if m is not None:
            mx = m.max_args
            if mx is not None and len(args) > mx:
                raise surplus_error(m, len(args), method=True, called=name)
            if m.callback:
                return push_native(f, m, m.fn(f.thread, obj, *args), target, nxt)
            return deliver(f, target, m.fn(f.thread, obj, *args), nxt)
    if t is dict:
        v = obj.get(name)
        if type(v) in (Closure, Builtin, BoundMethod, StructType):
            return _call_any(f, v, args, target, nxt)
        return deliver(f, target, None, nxt)
    if t is StructValue or t is EnumValue:
        impl = f.thread.runtime.find_impl(obj, name)
        if impl is not None:
            return _call_any(f, impl, [obj, *args], target, nxt)
        if t is StructValue:
            v = obj.fields.get(name)
            if type(v) in (Closure, Builtin):
                return _call_any(f, v, args, target, nxt)
        return deliver(f, target, None, nxt)
    if t is Generator and name == "next":
        return generator_next(f, obj, target, nxt)
    return deliver(f, target, None, nxt)


def _call_any(f: Frame | NativeFrame, callee: Any, args: list[Any], target: int, nxt: int) -> int:
    if f.native:
        return call_from_native(f, callee, args)  # type: ignore[arg-type]
    return call_value(f, callee, args, target, nxt)  # type: ignore[arg-type]


# --------------------------------------------------------------- generators


def generator_next(f: Frame | NativeFrame, gen: Generator, target: int, nxt: int) -> int:
    """``gen.next()``: resume the generator body; its next ``yield`` (or end) delivers
    ``{done, value}`` to ``f.slots[target]`` (spec 3.15)."""
    if gen.done or gen.frame is None:
        return deliver(f, target, {"done": True, "value": None}, nxt)
    if gen.running:
        raise type_error("generator is already running")
    th = f.thread
    if th.depth >= th.max_depth:
        raise stack_overflow()
    gf = gen.frame
    gf.parent = f
    gf.ret_slot = target
    gf.thread = th
    gen.running = True
    th.depth += 1
    if not f.native:
        f.pc = nxt  # type: ignore[union-attr]
    th.frame = gf
    return SWITCH


def generator_yield(gf: Frame, value: Any, nxt: int) -> int:
    """``yield value`` inside generator frame ``gf``: park it and deliver to the consumer."""
    gen = gf.generator
    th = gf.thread
    p = gf.parent
    gf.pc = nxt
    gf.parent = None
    gen.running = False
    th.depth -= 1
    th.frame = p
    item = {"done": False, "value": value}
    if p is None:
        raise RuntimeError("generator resumed without a consumer")
    if p.native:
        p.pending = item  # type: ignore[union-attr]
    else:
        r = gf.ret_slot
        if r >= 0:
            p.slots[r] = item  # type: ignore[union-attr]
    return SWITCH


def generator_finish(gf: Frame) -> int:
    """The generator body ended: mark it done and deliver ``{done: true, value: nil}``."""
    gen = gf.generator
    gen.done = True
    gen.running = False
    gen.frame = None
    return finish_frame(gf, {"done": True, "value": None})
