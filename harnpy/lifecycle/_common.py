"""Helpers shared by the lifecycle builtins (private): harness-first arguments, pushing a
Harn call from a control builtin, the internal loop module, ids and timestamps."""

from __future__ import annotations

import os
import time
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnThrow, runtime_error, type_error
from harnpy.runtime.values import Closure, StructValue

#: Module holding the Harn side of agent loops and workers (internal, not for import).
LOOP_MODULE = "std/agent/_loop"


#: Struct names of the Harness value and its member objects (see harnpy.lifecycle.harness).
HARNESS_STRUCTS = frozenset(
    {
        "Harness",
        "HarnessStdio",
        "HarnessLlm",
        "HarnessAgent",
        "HarnessRuntime",
        "HarnessTesting",
        "HarnessRandom",
        "HarnessEnv",
        "HarnessFs",
        "HarnessProcess",
        "HarnessObs",
        "HarnessClock",
    }
)


def is_harness(v: Any) -> bool:
    """True for the ``Harness`` value and its member objects (``harness.llm``...)."""
    return type(v) is StructValue and v.name in HARNESS_STRUCTS


def strip_harness(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop a leading Harness (or Harness member) argument: the harness-first call form
    ``f(harness, x, y)`` becomes ``f(x, y)`` (lifecycle.md 0, "Call forms")."""
    if args and is_harness(args[0]):
        return args[1:]
    return args


def arg(args: tuple[Any, ...], i: int) -> Any:
    """``args[i]`` or nil."""
    return args[i] if i < len(args) else None


def require_instruction_call(thread: Any, name: str) -> None:
    """Refuse a control builtin called directly by a callback builtin (``xs.map(llm_call)``):
    it must run as an instruction of a Harn frame so the thread can block as data.

    Raises:
        HarnRuntimeError: ``<name> cannot be called directly from <builtin>; wrap it in a
            closure``.
    """
    fr = thread.frame
    if fr is not None and fr.native:
        raise runtime_error(
            f"{name} cannot be called directly from {fr.builtin}; wrap it in a closure "
            f"({{ x -> {name}(x) }})"
        )


def push_call(thread: Any, fn: Any, args: list[Any]) -> None:
    """From inside a control builtin: call the Harn closure ``fn(*args)`` as a new frame
    whose return value lands in the calling instruction's result slot.

    The control-call protocol has saved the caller's resume pc; after this the thread's top
    frame is the new one, so ``call_control`` switches to it. No Python frame stays between
    the caller and the callee (the callee's state is data).

    Raises:
        HarnRuntimeError: ``Type error: Cannot call X`` when ``fn`` is not a closure;
            ``Stack overflow`` at the frame limit.
    """
    from harnpy.runtime.calls import closure_slots, stack_overflow
    from harnpy.runtime.code import Frame

    if type(fn) is not Closure:
        raise type_error(f"Cannot call {display(fn)}")
    caller = thread.frame
    nf = Frame(fn.code, closure_slots(fn, list(args)), thread)
    if thread.depth >= thread.max_depth:
        raise stack_overflow()
    thread.depth += 1
    nf.parent = caller
    nf.ret_slot = thread.pending_target
    thread.frame = nf


def loop_function(runtime: Any, name: str) -> Any:
    """The closure ``name`` defined at the top level of ``std/agent/_loop`` (the module is
    loaded on first use, like any ``std`` module, so snapshots can refer to its code)."""
    from harnpy.runtime.modules import resolve_import

    mod = runtime.modules.get(LOOP_MODULE)
    if mod is None:
        key, path = resolve_import(LOOP_MODULE, None)  # type: ignore[arg-type]
        mod = runtime.import_module(key, path)
    fn = mod.globals.get(name)
    if fn is None:
        raise runtime_error(f"internal: {LOOP_MODULE} has no function {name}")
    return fn


def now_rfc3339(runtime: Any) -> str:
    """The runtime clock's wall time as RFC 3339 UTC with seconds (``2026-05-01T00:00:20Z``;
    lifecycle.md 13 Q2)."""
    ms = runtime.clock.now_ms()
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000.0))


class IdSource:
    """Time-ordered UUIDv7 strings from the runtime clock, strictly increasing within one
    runtime (a counter fills ``rand_a`` inside one millisecond), so ids sort in creation
    order (lifecycle.md 2.9)."""

    def __init__(self) -> None:
        self._last_ms = -1
        self._seq = 0

    def uuid7(self, runtime: Any) -> str:
        """Next id (RFC 9562 version 7 layout)."""
        import uuid as _uuid

        ms = runtime.clock.now_ms() & ((1 << 48) - 1)
        if ms <= self._last_ms:
            ms = self._last_ms
            self._seq += 1
            if self._seq >= 1 << 12:
                ms += 1
                self._seq = 0
        else:
            self._seq = 0
        self._last_ms = ms
        rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
        value = (ms << 80) | (0x7 << 76) | (self._seq << 64) | (0b10 << 62) | rand_b
        return str(_uuid.UUID(int=value))


def error_text(exc: HarnError) -> str:
    """The text of a caught error as a tool result or worker ``error`` shows it: a thrown
    string as is, a thrown dict's ``message``, else the display form of the thrown value, or
    the runtime error message."""
    if isinstance(exc, HarnThrow):
        v = exc.value
        if type(v) is str:
            return v
        if type(v) is dict and type(v.get("message")) is str:
            return v["message"]
        return display(v)
    return exc.message


def thrown(message: str) -> HarnThrow:
    """A thrown string (the reference's builtin failures: ``catch (e)`` binds the text)."""
    return HarnThrow(message)


def as_dict(v: Any, where: str) -> dict[str, Any]:
    """``v`` when it is a dict, ``{}`` for nil.

    Raises:
        HarnThrow: ``<where> must be a dict``.
    """
    if v is None:
        return {}
    if type(v) is not dict:
        raise thrown(f"{where} must be a dict")
    return v
