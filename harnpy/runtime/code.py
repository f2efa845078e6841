"""Compiled code and frames: the data that makes up a running program.

A :class:`CodeObject` is one compiled function body (a ``fn``, closure, pipeline, module
initialiser or generator body): a flat list of instructions plus tables describing its slots,
exception handlers and source positions. Instructions are Python closures built by the
assembler (:mod:`harnpy.runtime.compiler`); they are *not* data and are never serialized.
A code object is referenced from snapshots by ``(module path, source hash, code id)`` and
``pc`` indexes its instruction list, so a snapshot is only valid for the same source text
and the same :data:`CODEGEN_VERSION`.

A :class:`Frame` is one activation: the code, the instruction index (``pc``), the slot list
(parameters, captured values, locals and pending temporaries) and the link to its caller.
All of a running program's state lives in frames and the values they reach; nothing lives
on the Python stack between two instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Bumped whenever the compiler's instruction layout changes; part of every snapshot.
CODEGEN_VERSION = 2

#: Instruction return value meaning "the thread's top frame changed; reload it".
SWITCH = -1
#: Instruction return value meaning "stop running this thread now" (blocked, parked, done).
STOP = -2

#: Slot value of a parameter that was not passed (before defaults are applied).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()
#: Captured value of a function declared later in the enclosing scope (late-bound name).
UNBOUND: Any = type("Unbound", (), {"__repr__": lambda self: "UNBOUND"})()

Instr = Callable[["Frame"], int]


class Handler:
    """An exception-handler range: ``start <= pc < end`` jumps to ``target``.

    ``kind`` is ``"catch"`` (store the caught value in ``slot``), ``"result"`` (try-expression:
    store ``Result.Err(caught)`` in ``slot``), or ``"finally"`` (store the pending throw in
    ``slot`` and run the finally block). Handlers are listed innermost first.
    ``catch_type`` restricts a catch to thrown enum values of that enum name.
    """

    __slots__ = ("start", "end", "target", "kind", "slot", "catch_type")

    def __init__(
        self, start: int, end: int, target: int, kind: str, slot: int, catch_type: str | None
    ):
        self.start = start
        self.end = end
        self.target = target
        self.kind = kind
        self.slot = slot
        self.catch_type = catch_type


class CodeObject:
    """One compiled function body.

    Attributes:
        id: the code id within its module (the owning AST node's start offset; the module
            initialiser uses ``-1``).
        name: function name for traces (``"<closure>"``, ``"<module>"``, pipeline name).
        module: the :class:`~harnpy.runtime.modules.ModuleInstance` it belongs to.
        param_names: parameter names in order (for display ``<fn(a, b)>``).
        nparams: number of positional parameter slots (a rest parameter counts as one).
        rest: True when the last parameter collects surplus arguments.
        has_defaults: True when some parameter has a default (missing args become MISSING).
        capture_names / capture_from: names captured at closure creation and, for each, the
            slot in the *enclosing* frame to copy from.
        nslots: total slot count; slots are laid out params, captures, locals/temporaries.
        slot_names: debug name of each slot (None for temporaries).
        instrs: the instruction list; ``instrs[pc](frame)`` returns the next pc.
        handlers: exception-handler ranges, innermost first.
        lines: ``(line, col)`` of each instruction, for traces.
        is_generator: calling it returns a Generator (``"generator"`` or ``"stream"``) instead
            of running the body; ``gen_kind`` says which.
        returns_last: closures return their last statement's value; named fns return nil.
    """

    __slots__ = (
        "id",
        "name",
        "module",
        "param_names",
        "nparams",
        "rest",
        "has_defaults",
        "capture_names",
        "capture_from",
        "nslots",
        "slot_names",
        "instrs",
        "handlers",
        "lines",
        "is_generator",
        "gen_kind",
        "returns_last",
        "param_checks",
        "simple",
        "defer_slot",
        "defer_discard",
        "defer_trampoline",
        "pure_ev",
        "pure_run",
        "call_pad",
        "direct",
        "direct_source",
    )

    def __init__(self, id: int, name: str, module: Any) -> None:
        self.id = id
        self.name = name
        self.module = module
        self.param_names: list[str] = []
        self.nparams = 0
        self.rest = False
        self.has_defaults = False
        self.capture_names: list[str] = []
        self.capture_from: list[int | str] = []
        self.nslots = 0
        self.slot_names: list[str | None] = []
        self.instrs: list[Instr] = []
        self.handlers: list[Handler] = []
        self.lines: list[tuple[int, int]] = []
        self.is_generator = False
        self.gen_kind = "generator"
        self.returns_last = False
        self.param_checks: list[tuple[int, Any]] = []
        self.simple = True
        self.defer_slot: int | None = None
        self.defer_discard = -1
        self.defer_trampoline = -1
        #: For a closure whose body is one call-free expression: that expression's ev, so
        #: callback builtins (``map``, ``filter``...) may evaluate it without a frame switch.
        self.pure_ev: Any = None
        #: Built on first use from ``pure_ev`` (:func:`harnpy.runtime.calls.pure_runner`):
        #: ``pure_run(captures, thread, *args)`` evaluates the body for one closure's captures.
        self.pure_run: Any = None
        #: Set by the assembler for a plain function (no defaults, rest parameter, parameter
        #: checks; not a generator): the ``None`` slots after its parameters and captures, so
        #: a call with exactly ``nparams`` arguments builds its slot list in one step. None
        #: when calls must go through :func:`harnpy.runtime.calls.closure_slots`.
        self.call_pad: tuple[None, ...] | None = None
        #: The direct form ``direct(thread, depth budget, closure, *args)`` of an
        #: effect-free function that cannot suspend (:mod:`harnpy.runtime.direct`), or None.
        self.direct: Any = None
        #: The Python source of ``direct`` (diagnostics and tests).
        self.direct_source: str | None = None

    def line_at(self, pc: int) -> tuple[int, int]:
        """Source ``(line, col)`` of instruction ``pc`` (clamped into range)."""
        if not self.lines:
            return (0, 0)
        return self.lines[max(0, min(pc, len(self.lines) - 1))]

    def __repr__(self) -> str:
        return f"<code {self.name} #{self.id}>"


class Frame:
    """One activation of a :class:`CodeObject`.

    ``slots`` holds parameters, captured values, locals and temporaries; ``pc`` is the next
    instruction to run when this frame is resumed; ``parent`` is the caller's frame (None for
    a thread's bottom frame or a suspended generator body); ``ret_slot`` says where the
    caller receives the return value (a slot index, or one of the ``RET_*`` modes);
    ``generator`` is set when the frame is a generator body; ``defers`` holds closures
    registered by ``defer`` (run LIFO at exit).
    """

    # ``tail_calls`` (how many callers this frame replaced by ``return f(x)``) is set only by
    # a tail call and read with getattr: error traces note the callers it left out. It is
    # diagnostics only, not snapshot data.
    __slots__ = (
        "code",
        "slots",
        "pc",
        "parent",
        "ret_slot",
        "thread",
        "generator",
        "defers",
        "tail_calls",
    )

    tail_calls: int
    native = False

    def __init__(
        self,
        code: CodeObject,
        slots: list[Any],
        thread: Any,
        parent: Frame | NativeFrame | None = None,
        ret_slot: int = -1,
    ) -> None:
        self.code = code
        self.slots = slots
        self.pc = 0
        self.parent = parent
        self.ret_slot = ret_slot
        self.thread = thread
        self.generator: Any = None
        self.defers: list[Any] | None = None

    def __repr__(self) -> str:
        return f"<frame {self.code.name} pc={self.pc}>"


class NativeFrame:
    """A builtin that calls back into Harn code, running as a frame of its own.

    ``gen`` is the Python generator of a ``callback=True`` builtin; ``pending`` is the value
    to send into it when it is resumed (the result of the Harn call it requested). Native
    frames are not snapshot data: a snapshot that finds one on a thread's stack fails with
    an error naming ``builtin``.
    """

    __slots__ = (
        "gen",
        "builtin",
        "pending",
        "pending_exc",
        "parent",
        "ret_slot",
        "thread",
        "started",
    )

    native = True

    def __init__(self, gen: Any, builtin: str, thread: Any) -> None:
        self.gen = gen
        self.builtin = builtin
        self.pending: Any = None
        self.pending_exc: BaseException | None = None
        self.parent: Frame | NativeFrame | None = None
        self.ret_slot = RET_DISCARD
        self.thread = thread
        self.started = False

    def __repr__(self) -> str:
        return f"<native frame {self.builtin}>"


# Return modes (negative ret_slot values).
RET_DISCARD = -1  # caller ignores the value
RET_GEN_NEXT = -2  # generator body: deliver {done, value} to the caller's recorded slot
RET_THREAD = -3  # bottom frame of a thread: the value is the thread's result
