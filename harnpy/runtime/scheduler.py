"""Cooperative scheduling of threads: spawned tasks, agent workers, timers and futures.

One Python thread runs Harn threads one at a time. A thread runs until it finishes or
blocks; it blocks by having a callback builtin yield a :class:`Block` request (``await``,
``receive``, ``sleep``, ``wait_agent``, an LLM call in flight...). The scheduler then runs
other ready threads; when none is ready it waits for the earliest timer (on the runtime
clock: a mock clock jumps instantly) or for a host future (model calls run concurrently
in a thread pool) and wakes the threads waiting on them.

A blocked thread's state is still plain data: its top native frame records the pending
request, and waking it delivers a value (or an error) into that frame.
"""

from __future__ import annotations

import heapq
import itertools
import queue
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import concurrent.futures

from harnpy.runtime.code import STOP, NativeFrame
from harnpy.runtime.errors import HarnError, plain_error

#: Longest single wait for a host future (seconds); a longer wait is several.
_MAX_WAIT_S = 86400.0


def _cancelled() -> None:
    """Placeholder callback of a cancelled timer."""


class Waker:
    """Resumes one blocked native frame exactly once, with a value or an error."""

    __slots__ = ("scheduler", "frame", "done")

    def __init__(self, scheduler: Scheduler, frame: NativeFrame) -> None:
        self.scheduler = scheduler
        self.frame = frame
        self.done = False

    def wake(self, value: Any = None) -> None:
        """Resume the frame: ``value`` is sent into the builtin's generator. Ignored after the
        first wake or fail."""
        if self.done:
            return
        self.done = True
        self.frame.pending = value
        self.scheduler.make_ready(self.frame.thread)

    def fail(self, exc: HarnError) -> None:
        """Resume the frame by throwing ``exc`` into the builtin's generator. Ignored after the
        first wake or fail."""
        if self.done:
            return
        self.done = True
        self.frame.pending_exc = exc
        self.scheduler.make_ready(self.frame.thread)


class ControlWaker:
    """Resumes a thread blocked inside a *control* builtin (see :func:`block_control`):
    the value lands in the calling frame's result slot, an error is raised at the call."""

    __slots__ = ("scheduler", "thread", "frame", "target", "done")

    def __init__(self, scheduler: Scheduler, thread: Any, frame: Any, target: int) -> None:
        self.scheduler = scheduler
        self.thread = thread
        self.frame = frame
        self.target = target
        self.done = False

    def wake(self, value: Any = None) -> None:
        """Resume the thread; ``value`` lands in the blocked call's result slot (when it has
        one). Ignored after the first wake or fail."""
        if self.done:
            return
        self.done = True
        if self.target >= 0:
            self.frame.slots[self.target] = value
        self.scheduler.make_ready(self.thread)

    def fail(self, exc: HarnError) -> None:
        """Resume the thread with ``exc`` raised at the blocked call. Ignored after the first
        wake or fail."""
        if self.done:
            return
        self.done = True
        self.thread.pending_error = exc
        self.scheduler.make_ready(self.thread)


def block_control(thread: Any, describe: str) -> ControlWaker:
    """Block ``thread`` from inside a control builtin; returns the waker to resume it.

    Call it from a ``control=True`` builtin, then return: the call instruction has
    already saved the frame's resume pc, so the thread's state stays plain data (frames
    and slots) while it waits — a thread parked this way can be snapshotted.
    """
    sched: Scheduler = thread.runtime.scheduler
    frame = thread.current_frame()
    waker = ControlWaker(sched, thread, frame, thread.pending_target)
    thread.blocked_on = describe
    sched.blocked.add(thread)
    return waker


class Block:
    """Yielded by a callback builtin to block its thread.

    ``register(waker)`` is called at once; it must arrange for ``waker.wake(value)`` (or
    ``waker.fail(error)``) to be called later — possibly immediately. ``describe`` names
    what the thread waits for (deadlock messages).
    """

    __slots__ = ("register", "describe")

    def __init__(self, register: Callable[[Waker], None], describe: str = "an event") -> None:
        self.register = register
        self.describe = describe

    def handle(self, nf: NativeFrame) -> int:
        """Block the thread of native frame ``nf`` (``blocked_on`` = ``describe``) and call
        ``register`` with a :class:`Waker` for ``nf``; returns ``STOP`` so that the thread's run
        loop returns to the scheduler."""
        th = nf.thread
        sched: Scheduler = th.runtime.scheduler
        waker = Waker(sched, nf)
        th.blocked_on = self.describe
        sched.blocked.add(th)
        self.register(waker)
        return STOP


class ReadyQueue:
    """FIFO of runnable threads with O(1) membership.

    The deque keeps the order; a count of each thread's queued entries answers ``thread in
    queue`` without scanning (waking one of 10,000 workers must not look at the other 9,999).
    """

    __slots__ = ("_order", "_count")

    def __init__(self) -> None:
        self._order: deque[Any] = deque()
        self._count: dict[Any, int] = {}

    def append(self, thread: Any) -> None:
        """Queue ``thread`` at the back (even when it is queued already)."""
        self._order.append(thread)
        self._count[thread] = self._count.get(thread, 0) + 1

    def append_once(self, thread: Any) -> None:
        """Queue ``thread`` at the back unless it is queued already."""
        if thread not in self._count:
            self._order.append(thread)
            self._count[thread] = 1

    def popleft(self) -> Any:
        """Remove and return the front thread; raises IndexError when empty."""
        thread = self._order.popleft()
        left = self._count[thread] - 1
        if left:
            self._count[thread] = left
        else:
            del self._count[thread]
        return thread

    def remove(self, thread: Any) -> None:
        """Drop every queued entry of ``thread`` (O(queue)); raises ValueError when not queued."""
        if self._count.pop(thread, 0) == 0:
            raise ValueError("thread not queued")
        self._order = deque(t for t in self._order if t is not thread)

    def clear(self) -> None:
        """Empty the queue."""
        self._order.clear()
        self._count.clear()

    def __contains__(self, thread: object) -> bool:
        return thread in self._count

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __bool__(self) -> bool:
        return bool(self._order)


class Scheduler:
    """Ready queue, timers and host futures of one runtime."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.ready = ReadyQueue()
        self.blocked: set[Any] = set()
        self.timers: list[Any] = []  # heap of [deadline_ms, seq, callback]
        self.futures: dict[concurrent.futures.Future[Any], Callable[[Any], None]] = {}
        # futures that completed (put by their done-callback, on any thread), drained here
        self._completed: queue.SimpleQueue[concurrent.futures.Future[Any]] = queue.SimpleQueue()
        self._seq = itertools.count()

    # ---- threads

    def add(self, thread: Any) -> None:
        """Queue a new (or woken) thread to run."""
        self.ready.append(thread)

    def make_ready(self, thread: Any) -> None:
        """Unblock ``thread`` and queue it to run (at most once in the queue)."""
        thread.blocked_on = None
        self.blocked.discard(thread)
        self.ready.append_once(thread)

    # ---- timers and futures

    def at(self, deadline_ms: float, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn`` once the runtime clock's monotonic time reaches ``deadline_ms``.

        Returns a function that cancels the timer (a no-op once it has fired)."""
        entry: list[Any] = [deadline_ms, next(self._seq), fn]
        heapq.heappush(self.timers, entry)  # type: ignore[arg-type]

        def cancel() -> None:
            entry[2] = _cancelled

        return cancel

    def fire_due_timers(self) -> None:
        """Run every timer whose deadline has passed on the runtime clock."""
        if not self.timers:
            return
        now = self.runtime.clock.monotonic_ms()
        while self.timers and self.timers[0][0] <= now:
            _, _, fn = heapq.heappop(self.timers)
            fn()

    def on_future(self, fut: concurrent.futures.Future[Any], fn: Callable[[Any], None]) -> None:
        """Call ``fn(future)`` on the scheduler's thread once ``fut`` is done."""
        self.futures[fut] = fn
        fut.add_done_callback(self._completed.put)

    def sleep(self, ms: float) -> Block:
        """A Block request that resumes after ``ms`` milliseconds on the runtime clock."""
        clock = self.runtime.clock

        def register(w: Waker) -> None:
            if ms <= 0:
                w.wake(None)
            else:
                self.at(clock.monotonic_ms() + ms, lambda: w.wake(None))

        return Block(register, f"sleep({ms:g}ms)")

    # ---- running

    def run_until(self, main: Any) -> Any:
        """Run ready threads until ``main`` finishes; return its result or raise its error."""
        self.add(main)
        while True:
            while self.ready:
                self.fire_due_timers()
                th = self.ready.popleft()
                self._step(th)
                if main.finished:
                    return main.result
            if main.finished:
                return main.result
            try:
                woke = self._wait_for_event()
            except KeyboardInterrupt:
                # Ctrl-C (or SIGTERM, see harnpy.cli) while every thread waits: interrupt
                # main where it waits, so its ``finally`` blocks run before the interrupt
                # propagates (language.md 3.12; a busy thread is interrupted in its loop)
                if main.status == "interrupted" or main.frame is None:
                    raise
                main.interrupt_requested = True
                self.make_ready(main)
                continue
            if not woke:
                raise plain_error(
                    "Runtime error: deadlock: every task is blocked "
                    f"(main is waiting for {main.blocked_on or 'an event'})",
                    "E320",
                )

    def run_thread(self, th: Any) -> None:
        """Run one thread as part of the scheduler loop (used by ``run_until``)."""
        self._step(th)

    def _step(self, th: Any) -> None:
        on_done = getattr(th, "on_done", None)
        try:
            th.run()
        except HarnError as e:
            if on_done is not None:
                on_done(None, e)
                return
            raise
        if th.finished and on_done is not None:
            on_done(th.result, None)

    def _wait_for_event(self) -> bool:
        """Block until a timer or future fires; False when nothing can ever wake anyone."""
        while self.futures:
            timeout = None
            if self.timers:
                timeout = max(0.0, (self.timers[0][0] - self.runtime.clock.monotonic_ms()) / 1000)
            # wait in steps the host can represent; a step that ends early just loops
            stepped = timeout is None or timeout > _MAX_WAIT_S
            # completed futures arrive on a queue (O(1) per completion, not a scan of every
            # future in flight); a future dropped from ``futures`` meanwhile is skipped
            done: list[Any] = []
            try:
                done.append(self._completed.get(timeout=_MAX_WAIT_S if stepped else timeout))
                while True:
                    done.append(self._completed.get_nowait())
            except queue.Empty:
                pass
            ran = False
            for fut in done:
                cb = self.futures.pop(fut, None)
                if cb is not None:
                    ran = True
                    cb(fut)
            if ran or stepped:
                return True
            if not done:
                break  # the timeout passed: a timer is due
        while self.timers and self.timers[0][2] is _cancelled:
            heapq.heappop(self.timers)
        if self.timers:
            deadline, _, fn = heapq.heappop(self.timers)
            clock = self.runtime.clock
            now = clock.monotonic_ms()
            if deadline > now:
                clock.sleep_ms(deadline - now)
            fn()
            # fire every other timer that is due as well
            now = clock.monotonic_ms()
            while self.timers and self.timers[0][0] <= now:
                _, _, fn2 = heapq.heappop(self.timers)
                fn2()
            return True
        return False
