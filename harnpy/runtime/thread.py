"""Threads of the evaluator and the run loop.

A :class:`Thread` is one running program (the main script, a spawned task, an agent
worker): the top :class:`~harnpy.runtime.code.Frame` of its stack (frames link to their
callers), the frame-depth counter, its output sink and its status. :meth:`Thread.run`
executes instructions of the top frame until the stack is empty (the thread finished), the
thread blocks, or an uncaught error escapes. Exceptions unwind the explicit frame stack
through the handler tables of the code objects; Python's own stack never holds Harn state.

Interrupts (Ctrl-C) take a separate unwinding path, :meth:`Thread._unwind_interrupt`: it
pops frames running only their ``finally`` handlers (never ``catch`` or try-expressions),
so a script cannot swallow an interrupt, and each ``finally`` block runs once. An interrupt
is requested by setting ``interrupt_requested`` (checked at loop back-edges and whenever the
top frame changes, i.e. at every call and return) or by a ``KeyboardInterrupt`` raised
into the run loop (a blocking builtin); either way the thread ends by raising
:class:`~harnpy.runtime.errors.HarnInterrupt` once the ``finally`` blocks have run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harnpy.diagnostics import did_you_mean
from harnpy.runtime.calls import resume_native
from harnpy.runtime.code import STOP, SWITCH, UNBOUND, CodeObject, Frame, NativeFrame
from harnpy.runtime.errors import (
    HarnError,
    HarnInterrupt,
    HarnThrow,
    TraceEntry,
    plain_error,
)
from harnpy.runtime.values import EnumValue, err

#: Default limit of nested Harn frames (issue: 10,000, independent of Python's limit).
DEFAULT_MAX_DEPTH = 10_000


class Thread:
    """One program being run by the evaluator.

    Attributes:
        runtime: shared interpreter services (:class:`~harnpy.runtime.runtime.Runtime`).
        frame: top frame (None when not started or finished).
        depth: number of frames on the stack; bounded by ``max_depth``.
        result: the value returned by the bottom frame once ``finished``.
        out: callable receiving stdout text (buffered for spawned tasks).
        status: ``"ready"``, ``"running"``, ``"blocked"``, ``"done"``, ``"failed"``.
        interrupt_requested: set asynchronously (Ctrl-C); checked at loop back-edges.
        park_request: with ``interrupt_requested``, asks the thread to park instead of
            unwinding: at its next instruction boundary (a loop back-edge or a frame
            switch) ``park_request(thread)`` is called with the stack as data and every
            frame's ``pc`` at its resume point; it snapshots the thread and raises
            ``SnapshotExit``, or returns when it cannot (the thread runs on, the request
            cleared). How a stopping ``harnpy serve`` replica hands a run over mid-function.
        name: human-readable label (``"main"``, ``"task 3"``, a worker id).
    """

    #: Direct calls (:mod:`harnpy.runtime.direct`) are not tried while
    #: ``direct_lo <= depth < direct_hi`` (set after a direct run nested too deep).
    direct_lo = 0
    direct_hi = 0

    def __init__(self, runtime: Any, name: str = "main", out: Callable[[str], Any] | None = None):
        self.runtime = runtime
        self.name = name
        self.frame: Frame | NativeFrame | None = None
        self.depth = 0
        self.max_depth: int = getattr(runtime, "max_depth", DEFAULT_MAX_DEPTH)
        self.result: Any = None
        self.finished = False
        self.status = "ready"
        self.error: HarnError | None = None
        self.interrupt_requested = False
        self.park_request: Callable[[Thread], None] | None = None
        self.out = out if out is not None else runtime.write_out
        self.blocked_on: Any = None
        self.pending_target = -1
        #: An error to raise at the blocked call when the thread resumes (ControlWaker).
        self.pending_error: HarnError | None = None
        self.locals: dict[str, Any] = {}
        #: While a ``finally`` block runs because of an interrupt: ``(frame, finally_pc,
        #: depth of that frame, the HarnInterrupt)``; see :meth:`_unwind_interrupt`.
        self._barrier: tuple[Frame, int, int, HarnInterrupt] | None = None

    # ---- services used by builtins

    def write_out(self, text: str) -> None:
        """Write to this thread's stdout (spawned tasks buffer it)."""
        self.out(text)

    def write_err(self, text: str) -> None:
        """Write to the runtime's stderr (never buffered per task)."""
        self.runtime.write_err(text)

    def source_path(self) -> str | None:
        """Path of the Harn source file of the innermost Harn frame, or None."""
        fr = self.frame
        while fr is not None:
            if not fr.native:
                return fr.code.module.path  # type: ignore[union-attr]
            fr = fr.parent
        return None

    def current_frame(self) -> Frame | None:
        """The innermost Harn (non-native) frame, or None."""
        fr = self.frame
        while fr is not None and fr.native:
            fr = fr.parent
        return fr  # type: ignore[return-value]

    def raise_interrupt(self) -> None:
        """Clear the interrupt request and raise :class:`HarnInterrupt` (called at loop
        back-edges)."""
        self.interrupt_requested = False
        if self.park_request is not None:
            raise _ParkRequested()
        raise HarnInterrupt()

    def _park_now(self) -> None:
        """Serve a park request at an instruction boundary (``park_request``)."""
        hook, self.park_request = self.park_request, None
        if hook is not None:
            hook(self)

    # ---- starting

    def start(self, code: CodeObject, slots: list[Any]) -> None:
        """Make a fresh frame of ``code`` the bottom of this thread's stack."""
        fr = Frame(code, slots, self)
        self.frame = fr
        self.depth = 1
        self.finished = False
        self.status = "ready"

    # ---- nested runs

    def drive_sync(self, gen: Any, name: str) -> Any:
        """Run a callback generator to completion *now*, on a nested run of this thread.

        For the few builtins that are inlined as pure expressions yet sometimes must call
        Harn code (``len`` of a lazy sequence). The nested run lives on the Python stack, so
        it must not block or be snapshotted: blocking raises a runtime error.
        """
        saved = (self.frame, self.depth, self.finished, self.result, self.status)
        nf = NativeFrame(gen, name, self)
        self.frame = nf
        self.finished = False
        try:
            result = self.run()
            if self.status == "blocked":
                raise plain_error(f"Runtime error: {name}: cannot wait inside this call", "E321")
            return result
        finally:
            self.frame, self.depth, self.finished, self.result, self.status = saved

    # ---- iteration helpers used by ``for`` loops

    def iter_next_for(
        self, f: Frame, it: Any, var_slot: int, end: int, nxt: int, gen_pc: int
    ) -> int:
        """``for x in iter``: pull the next item (running stage callbacks as frames)."""
        if it.source is not None and not it.stages:
            for v in it.source:
                f.slots[var_slot] = v
                return nxt
            it.exhausted = True
            return end
        if it.exhausted:
            return end
        from harnpy.runtime.calls import push_native
        from harnpy.stdlib.registry import METHODS

        m = METHODS["iter"]["next"]
        return push_native(f, m, m.fn(self, it), var_slot, gen_pc)

    def channel_next_for(self, f: Frame, ch: Any, var_slot: int, end: int, nxt: int) -> int:
        """``for x in channel``: see :func:`harnpy.stdlib.concurrency.channel_next_for`."""
        from harnpy.stdlib.concurrency import channel_next_for

        return channel_next_for(self, f, ch, var_slot, end, nxt)

    # ---- name lookup fallback

    def late_bound(self, name: str, calling: bool) -> Any:
        """Resolve a name that was not bound at compile time (spec 3.10: function names are
        late-bound): search the callers' frames, then module globals, then builtins.

        Raises ``Undefined variable`` / ``Undefined builtin`` with a did-you-mean hint.
        """
        fr = self.frame
        while fr is not None:
            if not fr.native:
                code = fr.code  # type: ignore[union-attr]
                names = code.slot_names
                for i in range(len(names) - 1, -1, -1):
                    if names[i] == name:
                        v = fr.slots[i]  # type: ignore[union-attr]
                        if v is not None and v is not UNBOUND:
                            return v
                g = code.module.globals
                if name in g:
                    return g[name]
            fr = fr.parent
        b = self.runtime.builtins.get(name)
        if b is not None:
            return b
        if name in self.runtime.constants:
            return self.runtime.constants[name]
        raise self._undefined(name, calling)

    def _undefined(self, name: str, calling: bool) -> HarnError:
        own: set[str] = set()
        fr = self.frame
        while fr is not None:
            if not fr.native:
                own.update(n for n in fr.code.slot_names if n)  # type: ignore[union-attr]
                own.update(fr.code.module.globals)  # type: ignore[union-attr]
            fr = fr.parent
        hint = did_you_mean(name, own | set(self.runtime.builtins), own)
        if calling:
            msg = f"Undefined builtin: {name}"
        else:
            msg = f"Undefined variable: {name}"
        if hint:
            msg = f"Runtime error: {msg} (did you mean `{hint}`?)"
        return plain_error(msg, "E301")

    # ---- the run loop

    def run(self) -> Any:
        """Run until the thread finishes (returns its result) or blocks (returns None with
        ``status == "blocked"``). Uncaught Harn errors propagate with ``trace`` filled; an
        interrupt propagates as :class:`HarnInterrupt` after the ``finally`` blocks of the
        active frames have run (status ``"interrupted"``)."""
        self.status = "running"
        self.runtime.current_thread = self
        frame = self.frame
        pc = 0
        if self.interrupt_requested and frame is not None and self.park_request is None:
            # Interrupted while blocked or before it started: unwind from where it waits.
            # (A park request stays pending: the first instruction boundary serves it.)
            self.interrupt_requested = False
            frame = self._unwind_interrupt(frame, None, HarnInterrupt())
        elif self.pending_error is not None and frame is not None and not frame.native:
            exc = self.pending_error
            self.pending_error = None
            frame = self._unwind(frame, frame.pc - 1, exc)  # type: ignore[union-attr]
        while True:
            try:
                while True:
                    if frame is None:
                        self.status = "done"
                        return self.result
                    if frame.native:
                        pc = resume_native(frame)  # type: ignore[arg-type]
                    else:
                        code = frame.code.instrs  # type: ignore[union-attr]
                        pc = frame.pc  # type: ignore[union-attr]
                        while True:
                            pc = code[pc](frame)  # type: ignore[arg-type]
                            if pc < 0:
                                # A call or return between two Harn frames switches here,
                                # without leaving the inner loop (the common case).
                                if pc != SWITCH or self.interrupt_requested:
                                    break
                                nxt = self.frame
                                if nxt is None or nxt.native or self._barrier is not None:
                                    break
                                frame = nxt
                                code = nxt.code.instrs  # type: ignore[union-attr]
                                pc = nxt.pc  # type: ignore[union-attr]
                    if pc == SWITCH:
                        frame = self.frame
                        if self.interrupt_requested or self._barrier is not None:
                            self._check_interrupt_at_switch()
                        continue
                    # STOP: finished, blocked or parked
                    if self.finished:
                        if self._barrier is not None:
                            # a ``finally`` run for an interrupt returned from the bottom frame
                            raise self._barrier[3]
                        self.status = "done"
                        self.frame = None
                        return self.result
                    self.status = "blocked"
                    return None
            except HarnError as exc:
                frame = self._unwind(frame, pc, exc)
            except RecursionError:
                # A builtin recursing over a pathologically nested value (display, ==).
                deep = plain_error("Runtime error: value nested too deeply", "E322")
                frame = self._unwind(frame, pc, deep)
            except MemoryError:
                # An allocation no size check foresaw (most are refused before allocating,
                # see errors.MAX_BUILD_SIZE): a catchable error at the current instruction.
                oom = plain_error("Runtime error: out of memory", "E323")
                frame = self._unwind(frame, pc, oom)
            except (TypeError, ValueError, OverflowError) as exc:
                # raised inside a builtin: an argument it could not handle, a catchable error
                # naming it (stdlib.registry.argument_error); else an evaluator bug (E999)
                from harnpy.stdlib.registry import argument_error

                bad = argument_error(exc)
                if bad is None:
                    raise
                frame = self._unwind(frame, pc, bad)
            except _ParkRequested:
                # raised by a loop back-edge before any effect: it runs again on resume
                if frame is self.frame and frame is not None and not frame.native and pc >= 0:
                    frame.pc = pc  # type: ignore[union-attr]
                    self._park_now()
                else:
                    self.park_request = None
                frame = self.frame
            except HarnInterrupt as exc:
                frame = self._unwind_interrupt(*self._interrupt_origin(frame, pc), exc)
            except KeyboardInterrupt:
                # Raised by a SIGINT handler inside an instruction or a blocking builtin.
                frame = self._unwind_interrupt(*self._interrupt_origin(frame, pc), HarnInterrupt())

    def _check_interrupt_at_switch(self) -> None:
        """At a frame switch: raise a requested interrupt, or resume an interrupt whose
        ``finally`` block left its frame early (``return`` inside ``finally``)."""
        if self.interrupt_requested:
            self.interrupt_requested = False
            if self.park_request is not None and self._barrier is None:
                self._park_now()  # every frame's pc is saved at a switch
                return
            raise HarnInterrupt()
        b = self._barrier
        if b is not None and self.depth < b[2]:
            raise b[3]

    def _interrupt_origin(
        self, frame: Frame | NativeFrame | None, pc: int
    ) -> tuple[Frame | NativeFrame | None, int | None]:
        """Where an interrupt caught by the run loop happened: the run loop's own frame and
        pc when they are current, else the thread's top frame at its saved resume point."""
        if frame is self.frame and pc >= 0:
            return frame, pc
        return self.frame, None

    def _unwind(self, frame: Frame | NativeFrame | None, pc: int, exc: HarnError) -> Frame:
        """Find a handler for ``exc`` starting at ``frame``/``pc``; pop frames without one.

        The trace entry of the frame the error happened in takes the failing expression's
        location (``exc.at``) when the compiled expression recorded one; ``exc.at`` is
        consumed here, so a rethrow or a handler never reuses it.
        """
        at_top = True
        at = exc.at
        exc.at = None
        barrier = self._barrier
        while frame is not None:
            if frame.native:
                nf: NativeFrame = frame  # type: ignore[assignment]
                if nf.started and nf.gen.gi_frame is not None and not at_top:
                    # Give the builtin a chance to handle the error (e.g. ``retry``).
                    nf.pending_exc = exc
                    self.frame = nf
                    return nf  # type: ignore[return-value]
            else:
                f: Frame = frame  # type: ignore[assignment]
                where = pc if at_top else f.pc - 1
                if barrier is not None and f is barrier[0]:
                    # An error inside a ``finally`` block that runs for an interrupt: only
                    # handlers nested in that block may catch it; otherwise the interrupt
                    # goes on (an error never replaces an interrupt).
                    h = _find_handler(f.code, where, exc, barrier[1])
                    if h is None:
                        return self._unwind_interrupt(f, where, barrier[3])
                else:
                    h = _find_handler(f.code, where, exc)
                if h is not None:
                    _enter_handler(f, h, exc)
                    self.frame = f
                    return f
                rethrown = where == f.code.defer_trampoline  # after this frame's defers ran
                if not rethrown:
                    if at_top and at is not None:
                        line, col, end_col = at
                    else:
                        (line, col), end_col = f.code.line_at(where), 0
                    exc.trace.append(
                        TraceEntry(
                            f.code.name,
                            f.code.module.path,
                            line,
                            col,
                            end_col,
                            getattr(f, "tail_calls", 0),
                        )
                    )
                if f.defers and f.code.defer_slot is not None and not rethrown:
                    # Leaving by a throw: run the frame's deferred blocks first, then go on
                    # unwinding from its return trampoline (spec 3.12).
                    from harnpy.runtime.instrs import RaiseAfterDefers

                    f.slots[f.code.defer_slot] = RaiseAfterDefers(exc)
                    f.pc = f.code.defer_trampoline
                    self.frame = f
                    return f
                if f.generator is not None:
                    gen = f.generator
                    gen.done = True
                    gen.running = False
                    gen.frame = None
            at_top = False
            parent = frame.parent
            self.depth -= 1
            frame = parent
        self.frame = None
        self.status = "failed"
        self.error = exc
        raise exc

    def _unwind_interrupt(
        self, frame: Frame | NativeFrame | None, where: int | None, exc: HarnInterrupt
    ) -> Frame:
        """Unwind for an interrupt, starting at ``frame`` (at instruction ``where``, or at
        its saved resume point when None): pop frames, entering only ``finally`` handlers.

        A ``finally`` handler is entered with the interrupt as its pending throw, so the
        end of the block re-raises it and unwinding continues outward; while the block runs,
        ``_barrier`` records it (errors escaping the block do not turn the interrupt into a
        catchable error, and a ``return`` out of the block does not end the interrupt).
        Native frames (callback builtins) are closed. When no frame is left the thread's
        status becomes ``"interrupted"`` and ``exc`` is raised.
        """
        self._barrier = None
        self.interrupt_requested = False
        first = True
        while frame is not None:
            if frame.native:
                gen = frame.gen  # type: ignore[union-attr]
                try:
                    gen.close()
                except Exception:  # noqa: BLE001 - a builtin's cleanup must not stop this
                    pass
            else:
                f: Frame = frame  # type: ignore[assignment]
                at = where if first and where is not None else f.pc - 1
                h = _find_finally(f.code, at)
                if h is not None:
                    from harnpy.runtime.instrs import PENDING_THROW

                    f.slots[h.slot] = (PENDING_THROW, exc)
                    f.pc = h.target
                    self.frame = f
                    self._barrier = (f, h.target, self.depth, exc)
                    return f
                if f.generator is not None:
                    g = f.generator
                    g.done = True
                    g.running = False
                    g.frame = None
            first = False
            frame = frame.parent
            self.depth -= 1
        self.frame = None
        self.depth = 0
        self.status = "interrupted"
        raise exc


def _find_finally(code: CodeObject, pc: int) -> Any:
    for h in code.handlers:
        if h.kind == "finally" and h.start <= pc < h.end:
            return h
    return None


def _find_handler(code: CodeObject, pc: int, exc: HarnError, min_start: int = -1) -> Any:
    for h in code.handlers:
        if h.start <= pc < h.end and h.start >= min_start:
            if h.catch_type is not None and h.kind == "catch":
                v = exc.catch_value if isinstance(exc, HarnThrow) else None
                if not (type(v) is EnumValue and v.enum == h.catch_type):
                    continue
            return h
    return None


def _enter_handler(f: Frame, h: Any, exc: HarnError) -> None:
    from harnpy.runtime.instrs import PENDING_THROW

    if h.kind == "catch":
        f.slots[h.slot] = exc.catch_value
    elif h.kind == "result":
        f.slots[h.slot] = err(exc.catch_value)
    else:
        f.slots[h.slot] = (PENDING_THROW, exc)
    f.pc = h.target


__all__ = ["Thread", "DEFAULT_MAX_DEPTH", "STOP"]


class _ParkRequested(Exception):
    """A loop back-edge noticed a park request (``Thread.park_request``)."""
