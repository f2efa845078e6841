"""Stream operators: the ``stream.*`` builtins (``stream.map``, ``stream.merge``, ...).

Every operator takes *stream-like* sources: lists, iters, ranges, dicts, sets, strings,
generators/streams and channels. Combinators are lazy: they return a Harn ``stream``
(``type_of`` gives ``"stream"``; usable with ``for``/``.next()``) whose items are pulled
from the sources on demand. Sinks (``collect``, ``fold``, ``first``) pull to the end.

Readiness: lists, iters and generators always have their next item (or their end) at once;
an open channel without messages is *not ready*. ``merge`` takes the next item from the
next ready source in round-robin order (waiting for a channel only when none is ready);
``race`` lets the first source to produce an item win and then follows only that source;
``interleave`` strictly alternates. A failure inside a source surfaces at the consumer.

Timing (runtime clock): ``throttle(s, per_sec)`` spaces items ``ceil(1000 / per_sec)`` ms
apart; ``debounce(s, window_ms)`` emits an item only when no further item arrives within
``window_ms`` (items that are already there collapse to the last one).

The builtins have dotted names (``"stream.map"``); :func:`stream_namespace` builds the
``stream`` dict (``{_namespace: "stream", map: <builtin>, ...}``) that Harn code reaches as
``stream.map(...)``.
"""

from __future__ import annotations

import math
from collections.abc import Generator as PyGenerator
from pathlib import Path
from typing import Any

from harnpy.runtime.errors import HarnError, runtime_error, type_error
from harnpy.runtime.ops import truthy
from harnpy.runtime.scheduler import Block, Waker
from harnpy.runtime.values import (
    BoundMethod,
    CallRequest,
    Channel,
    Generator,
    HostObject,
    HSet,
    IterValue,
    Pair,
    RangeValue,
    type_name,
)
from harnpy.stdlib.registry import BUILTINS, builtin

Gen = PyGenerator[Any, Any, Any]
Pulled = tuple[bool, Any]
_END: Pulled = (False, None)

NAMES = (
    "map",
    "filter",
    "tap",
    "scan",
    "fold",
    "collect",
    "take",
    "take_until",
    "first",
    "merge",
    "interleave",
    "zip",
    "broadcast",
    "race",
    "throttle",
    "debounce",
)


def stream_namespace() -> dict[str, Any]:
    """The ``stream`` namespace dict: ``_namespace`` plus every ``stream.*`` builtin."""
    ns: dict[str, Any] = {"_namespace": "stream"}
    for n in NAMES:
        ns[n] = BUILTINS[f"stream.{n}"]
    return ns


# ------------------------------------------------------------------------ nodes


class _Node:
    """A pull-based source: ``pull`` returns ``(True, item)`` or ``(False, None)``."""

    done = False

    def pull(self, thread: Any) -> Gen:
        raise NotImplementedError
        yield  # pragma: no cover

    def ready(self) -> bool:
        """True when ``pull`` would not wait for a channel."""
        return True

    def channels(self) -> list[Channel]:
        """Channels a wait for readiness should watch."""
        return []


class _ListNode(_Node):
    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.i = 0

    def pull(self, thread: Any) -> Gen:
        if self.i >= len(self.items):
            self.done = True
            return _END
        self.i += 1
        return (True, self.items[self.i - 1])
        yield  # pragma: no cover


class _IterNode(_Node):
    def __init__(self, it: IterValue) -> None:
        self.it = it

    def pull(self, thread: Any) -> Gen:
        from harnpy.stdlib.iters import iter_pull

        r = yield from iter_pull(self.it, thread)
        if not r[0]:
            self.done = True
        return r


class _GenNode(_Node):
    def __init__(self, gen: Generator) -> None:
        self.gen = gen

    def pull(self, thread: Any) -> Gen:
        if self.gen.done:
            self.done = True
            return _END
        r = yield CallRequest(BoundMethod(self.gen, "next"), [])
        if type(r) is dict and not truthy(r.get("done")):
            return (True, r.get("value"))
        self.done = True
        return _END


class _ChanNode(_Node):
    def __init__(self, ch: Channel) -> None:
        self.ch = ch

    def pull(self, thread: Any) -> Gen:
        from harnpy.stdlib.concurrency import receive_item

        r = yield from receive_item(thread, self.ch)
        if not r[0]:
            self.done = True
        return r

    def ready(self) -> bool:
        return bool(self.ch.items) or self.ch.closed

    def channels(self) -> list[Channel]:
        return [self.ch]


class _Stage(_Node):
    """A combinator over one source."""

    def __init__(self, src: _Node) -> None:
        self.src = src

    def ready(self) -> bool:
        return self.done or self.src.ready()

    def channels(self) -> list[Channel]:
        return self.src.channels()


class _Map(_Stage):
    def __init__(self, src: _Node, f: Any, kind: str) -> None:
        super().__init__(src)
        self.f = f
        self.kind = kind  # map | filter | tap

    def pull(self, thread: Any) -> Gen:
        while True:
            ok, v = yield from self.src.pull(thread)
            if not ok:
                self.done = True
                return _END
            r = yield CallRequest(self.f, [v])
            if self.kind == "map":
                return (True, r)
            if self.kind == "tap" or truthy(r):
                return (True, v)


class _Scan(_Stage):
    def __init__(self, src: _Node, acc: Any, f: Any) -> None:
        super().__init__(src)
        self.acc = acc
        self.f = f

    def pull(self, thread: Any) -> Gen:
        ok, v = yield from self.src.pull(thread)
        if not ok:
            self.done = True
            return _END
        self.acc = yield CallRequest(self.f, [self.acc, v])
        return (True, self.acc)


class _Take(_Stage):
    def __init__(self, src: _Node, n: int) -> None:
        super().__init__(src)
        self.n = n

    def pull(self, thread: Any) -> Gen:
        if self.n <= 0:
            self.done = True
            return _END
        ok, v = yield from self.src.pull(thread)
        if not ok:
            self.done = True
            return _END
        self.n -= 1
        return (True, v)

    def ready(self) -> bool:
        return self.n <= 0 or super().ready()


class _TakeUntil(_Stage):
    def __init__(self, src: _Node, p: Any) -> None:
        super().__init__(src)
        self.p = p

    def pull(self, thread: Any) -> Gen:
        if self.done:
            return _END
        ok, v = yield from self.src.pull(thread)
        if ok and not truthy((yield CallRequest(self.p, [v]))):
            return (True, v)
        self.done = True
        return _END


class _Multi(_Node):
    """A combinator over several sources."""

    def __init__(self, sources: list[_Node]) -> None:
        self.sources = sources
        self.cursor = 0

    def ready(self) -> bool:
        return self.done or not self.sources or any(s.ready() for s in self.sources)

    def channels(self) -> list[Channel]:
        return [c for s in self.sources for c in s.channels()]


def _wait_ready(thread: Any, nodes: list[_Node]) -> Gen:
    """Block until a channel under ``nodes`` has a message or closes."""
    from harnpy.stdlib.concurrency import _channel_state

    chans = [c for n in nodes for c in n.channels()]
    if not chans:
        return

    def register(w: Waker) -> None:
        for c in chans:
            _channel_state(c, thread.runtime)["recv"].append(w)

    yield Block(register, "stream source")


class _Merge(_Multi):
    def pull(self, thread: Any) -> Gen:
        while self.sources:
            n = len(self.sources)
            picked = None
            for k in range(n):
                i = (self.cursor + k) % n
                if self.sources[i].ready():
                    picked = i
                    break
            if picked is None:
                yield from _wait_ready(thread, self.sources)
                continue
            src = self.sources[picked]
            ok, v = yield from src.pull(thread)
            if ok:
                self.cursor = (picked + 1) % n
                return (True, v)
            del self.sources[picked]
            self.cursor = picked % len(self.sources) if self.sources else 0
        self.done = True
        return _END


class _Interleave(_Multi):
    def pull(self, thread: Any) -> Gen:
        while self.sources:
            i = self.cursor % len(self.sources)
            ok, v = yield from self.sources[i].pull(thread)
            if ok:
                self.cursor = i + 1
                return (True, v)
            del self.sources[i]
            self.cursor = i
        self.done = True
        return _END


class _Race(_Multi):
    def __init__(self, sources: list[_Node]) -> None:
        super().__init__(sources)
        self.winner: _Node | None = None

    def pull(self, thread: Any) -> Gen:
        if self.winner is not None:
            r = yield from self.winner.pull(thread)
            if not r[0]:
                self.done = True
            return r
        while self.sources:
            picked = next((s for s in self.sources if s.ready()), None)
            if picked is None:
                yield from _wait_ready(thread, self.sources)
                continue
            ok, v = yield from picked.pull(thread)
            if ok:
                self.winner = picked
                self.sources = [picked]
                return (True, v)
            self.sources.remove(picked)
        self.done = True
        return _END


class _Zip(_Multi):
    def pull(self, thread: Any) -> Gen:
        if self.done:
            return _END
        a, b = self.sources
        ok, x = yield from a.pull(thread)
        if ok:
            ok, y = yield from b.pull(thread)
            if ok:
                return (True, Pair(x, y))
        self.done = True
        return _END


class _Hub:
    """The shared source of ``broadcast`` branches: items pulled once, kept for all."""

    def __init__(self, src: _Node, n: int) -> None:
        self.src = src
        self.buffer: list[Any] = []
        self.offset = 0  # items dropped from the front of ``buffer``
        self.cursors = [0] * n
        self.ended = False
        self.error: HarnError | None = None

    def trim(self) -> None:
        low = min(self.cursors)
        if low > self.offset:
            del self.buffer[: low - self.offset]
            self.offset = low


class _Branch(_Node):
    def __init__(self, hub: _Hub, i: int) -> None:
        self.hub = hub
        self.i = i

    def pull(self, thread: Any) -> Gen:
        h = self.hub
        pos = h.cursors[self.i]
        if pos - h.offset >= len(h.buffer):
            if h.error is not None:
                raise h.error
            if h.ended:
                self.done = True
                return _END
            try:
                ok, v = yield from h.src.pull(thread)
            except HarnError as e:
                h.error = e
                raise
            if not ok:
                h.ended = True
                self.done = True
                return _END
            h.buffer.append(v)
        v = h.buffer[pos - h.offset]
        h.cursors[self.i] = pos + 1
        h.trim()
        return (True, v)

    def ready(self) -> bool:
        h = self.hub
        return h.cursors[self.i] - h.offset < len(h.buffer) or h.ended or h.src.ready()

    def channels(self) -> list[Channel]:
        return self.hub.src.channels()


class _Throttle(_Stage):
    def __init__(self, src: _Node, interval_ms: float) -> None:
        super().__init__(src)
        self.interval = interval_ms
        self.next_ready: float | None = None

    def pull(self, thread: Any) -> Gen:
        ok, v = yield from self.src.pull(thread)
        if not ok:
            self.done = True
            return _END
        clock = thread.runtime.clock
        now = clock.monotonic_ms()
        if self.next_ready is not None and now < self.next_ready:
            yield thread.runtime.scheduler.sleep(self.next_ready - now)
        self.next_ready = clock.monotonic_ms() + self.interval
        return (True, v)


class _Debounce(_Stage):
    def __init__(self, src: _Node, window_ms: float) -> None:
        super().__init__(src)
        self.window = window_ms

    def pull(self, thread: Any) -> Gen:
        if self.done:
            return _END
        ok, v = yield from self.src.pull(thread)
        if not ok:
            self.done = True
            return _END
        clock = thread.runtime.clock
        while True:
            if not self.src.ready():
                deadline = clock.monotonic_ms() + self.window
                while not self.src.ready() and clock.monotonic_ms() < deadline:
                    yield from _wait_until(thread, self.src, deadline)
                if not self.src.ready():
                    return (True, v)
            ok, nxt = yield from self.src.pull(thread)
            if not ok:
                self.done = True
                return (True, v)
            v = nxt


def _wait_until(thread: Any, node: _Node, deadline: float) -> Gen:
    """Block until a channel under ``node`` changes or the runtime clock reaches
    ``deadline``."""
    from harnpy.stdlib.concurrency import _channel_state

    rt = thread.runtime

    def register(w: Waker) -> None:
        for c in node.channels():
            _channel_state(c, rt)["recv"].append(w)
        rt.scheduler.at(deadline, lambda: w.wake(None))

    yield Block(register, "debounce window")


# ----------------------------------------------------------------------- values


def _registry(rt: Any) -> dict[int, tuple[Generator, _Node]]:
    reg = getattr(rt, "stream_nodes", None)
    if reg is None:
        reg = rt.stream_nodes = {}
    return reg  # type: ignore[no-any-return]


def _node_of(thread: Any, v: Any, what: str) -> _Node:
    """The pull node of a stream-like value (type error for other values)."""
    from harnpy.stdlib.iters import make_iter

    t = type(v)
    if t is Generator:
        known = _registry(thread.runtime).get(id(v))
        if known is not None and known[0] is v:
            return known[1]
        return _GenNode(v)
    if t is list:
        return _ListNode(list(v))
    if t is Channel:
        return _ChanNode(v)
    if t is IterValue:
        return _IterNode(v)
    if t in (RangeValue, dict, HSet, str):
        return _IterNode(make_iter(v))
    raise type_error(f"{what}: expected a stream, list, iter or channel, got {type_name(v)}")


def _stream_fn(runtime: Any) -> Any:
    path = Path(__file__).resolve().parent / "harn" / "task_streams.harn"
    mod = runtime.import_module("harnpy/task_streams", path)
    return mod.globals["node_stream"]


def _as_stream(thread: Any, node: _Node) -> Gen:
    """Wrap ``node`` in a Harn ``stream`` value (a generator pulling the node)."""
    gen = yield CallRequest(_stream_fn(thread.runtime), [HostObject("stream_node", node)])
    _registry(thread.runtime)[id(gen)] = (gen, node)
    return gen


@builtin("__stream_pull", callback=True)
def stream_pull(thread: Any, h: Any = None) -> Gen:
    """Next item of a stream node as ``{done, value}`` (used by the stream helper)."""
    if type(h) is not HostObject or h.kind != "stream_node":
        raise runtime_error("__stream_pull: expected a stream node")
    ok, v = yield from h.obj.pull(thread)
    return {"done": not ok, "value": v if ok else None}


# ------------------------------------------------------------------- arguments


def _arg(args: tuple[Any, ...], i: int, what: str) -> Any:
    if i >= len(args):
        raise type_error(f"{what}: missing argument {i + 1}")
    return args[i]


def _callable(args: tuple[Any, ...], i: int, what: str) -> Any:
    from harnpy.stdlib._common import is_callable

    f = _arg(args, i, what)
    if not is_callable(f):
        raise type_error(f"{what}: argument {i + 1} must be callable, got {type_name(f)}")
    return f


def _count(args: tuple[Any, ...], i: int, what: str, positive: bool) -> int:
    n = _arg(args, i, what)
    if type(n) is not int or n < (1 if positive else 0):
        kind = "positive" if positive else "non-negative"
        raise type_error(f"{what}: argument {i + 1} must be a {kind} int, got {type_name(n)}")
    return n


# --------------------------------------------------------------------- builtins


@builtin("stream.map", callback=True)
def stream_map(thread: Any, *args: Any) -> Gen:
    """``stream.map(s, f)``: a stream of ``f(x)`` for each item."""
    src = _node_of(thread, _arg(args, 0, "stream.map"), "stream.map")
    return (yield from _as_stream(thread, _Map(src, _callable(args, 1, "stream.map"), "map")))


@builtin("stream.filter", callback=True)
def stream_filter(thread: Any, *args: Any) -> Gen:
    """``stream.filter(s, p)``: a stream of the items for which ``p(x)`` is truthy."""
    src = _node_of(thread, _arg(args, 0, "stream.filter"), "stream.filter")
    f = _callable(args, 1, "stream.filter")
    return (yield from _as_stream(thread, _Map(src, f, "filter")))


@builtin("stream.tap", callback=True)
def stream_tap(thread: Any, *args: Any) -> Gen:
    """``stream.tap(s, f)``: the same items; ``f(x)`` runs for each as it passes."""
    src = _node_of(thread, _arg(args, 0, "stream.tap"), "stream.tap")
    return (yield from _as_stream(thread, _Map(src, _callable(args, 1, "stream.tap"), "tap")))


@builtin("stream.scan", callback=True)
def stream_scan(thread: Any, *args: Any) -> Gen:
    """``stream.scan(s, init, f)``: the running accumulations ``acc = f(acc, x)``."""
    src = _node_of(thread, _arg(args, 0, "stream.scan"), "stream.scan")
    init = _arg(args, 1, "stream.scan")
    return (yield from _as_stream(thread, _Scan(src, init, _callable(args, 2, "stream.scan"))))


@builtin("stream.take", callback=True)
def stream_take(thread: Any, *args: Any) -> Gen:
    """``stream.take(s, n)``: at most the first ``n`` items (n a non-negative int)."""
    src = _node_of(thread, _arg(args, 0, "stream.take"), "stream.take")
    return (yield from _as_stream(thread, _Take(src, _count(args, 1, "stream.take", False))))


@builtin("stream.take_until", callback=True)
def stream_take_until(thread: Any, *args: Any) -> Gen:
    """``stream.take_until(s, p)``: the items before the first one for which ``p`` holds."""
    src = _node_of(thread, _arg(args, 0, "stream.take_until"), "stream.take_until")
    p = _callable(args, 1, "stream.take_until")
    return (yield from _as_stream(thread, _TakeUntil(src, p)))


def _sources(thread: Any, args: tuple[Any, ...], what: str) -> list[_Node]:
    return [_node_of(thread, a, what) for a in args]


@builtin("stream.merge", callback=True)
def stream_merge(thread: Any, *args: Any) -> Gen:
    """``stream.merge(s1, s2, ...)``: items of all sources as they become ready,
    round-robin among ready sources."""
    if not args:
        raise type_error("stream.merge: expected at least one stream")
    return (yield from _as_stream(thread, _Merge(_sources(thread, args, "stream.merge"))))


@builtin("stream.interleave", callback=True)
def stream_interleave(thread: Any, *args: Any) -> Gen:
    """``stream.interleave(s1, s2, ...)``: one item of each source in turn (ended sources
    drop out)."""
    if len(args) < 2:
        raise type_error("stream.interleave: expected at least two streams")
    nodes = _sources(thread, args, "stream.interleave")
    return (yield from _as_stream(thread, _Interleave(nodes)))


@builtin("stream.zip", callback=True)
def stream_zip(thread: Any, *args: Any) -> Gen:
    """``stream.zip(a, b)``: pairs ``(x, y)`` until either source ends."""
    if len(args) != 2:
        raise type_error(f"stream.zip: expected 2 streams, got {len(args)}")
    return (yield from _as_stream(thread, _Zip(_sources(thread, args, "stream.zip"))))


@builtin("stream.race", callback=True)
def stream_race(thread: Any, *args: Any) -> Gen:
    """``stream.race(s1, s2, ...)``: the items of the first source to produce one."""
    if not args:
        raise type_error("stream.race: expected at least one stream")
    return (yield from _as_stream(thread, _Race(_sources(thread, args, "stream.race"))))


@builtin("stream.broadcast", callback=True)
def stream_broadcast(thread: Any, *args: Any) -> Gen:
    """``stream.broadcast(s, n)``: a list of ``n`` streams that each yield every item of
    ``s`` (pulled once; kept until every branch has passed it)."""
    src = _node_of(thread, _arg(args, 0, "stream.broadcast"), "stream.broadcast")
    n = _count(args, 1, "stream.broadcast", True)
    hub = _Hub(src, n)
    out = []
    for i in range(n):
        out.append((yield from _as_stream(thread, _Branch(hub, i))))
    return out


@builtin("stream.throttle", callback=True)
def stream_throttle(thread: Any, *args: Any) -> Gen:
    """``stream.throttle(s, per_sec)``: at most ``per_sec`` items a second (a positive
    number); later items wait on the runtime clock."""
    src = _node_of(thread, _arg(args, 0, "stream.throttle"), "stream.throttle")
    rate = _arg(args, 1, "stream.throttle")
    if type(rate) not in (int, float) or type(rate) is bool:
        raise type_error(
            f"stream.throttle: argument 2 must be a positive number, got {type_name(rate)}"
        )
    if not (rate > 0 and math.isfinite(rate)):
        raise type_error("stream.throttle: argument 2 must be a positive finite number")
    interval = max(1.0, math.ceil(1000.0 / rate))
    return (yield from _as_stream(thread, _Throttle(src, interval)))


@builtin("stream.debounce", callback=True)
def stream_debounce(thread: Any, *args: Any) -> Gen:
    """``stream.debounce(s, window_ms)``: an item only once no further item came within
    ``window_ms`` (a non-negative int)."""
    src = _node_of(thread, _arg(args, 0, "stream.debounce"), "stream.debounce")
    window = _count(args, 1, "stream.debounce", False)
    return (yield from _as_stream(thread, _Debounce(src, float(window))))


def _collect_max(v: Any) -> int:
    if v is None:
        return 10_000
    if type(v) is dict:
        m = v.get("max")
        if m is None:
            return 10_000
        if type(m) is not int or m < 0:
            raise type_error(f"stream.collect: max must be a non-negative int, got {type_name(m)}")
        return m
    if type(v) is int and v >= 0:
        return v
    raise type_error(
        "stream.collect: second argument must be max int or options dict, got " + type_name(v)
    )


@builtin("stream.collect", callback=True)
def stream_collect(thread: Any, *args: Any) -> Gen:
    """``stream.collect(s, max?)``: every item as a list; ``max`` (int or ``{max}``,
    default 10000) caps the count: a stream with more items is a runtime error."""
    src = _node_of(thread, _arg(args, 0, "stream.collect"), "stream.collect")
    cap = _collect_max(args[1] if len(args) > 1 else None)
    out: list[Any] = []
    while True:
        ok, v = yield from src.pull(thread)
        if not ok:
            return out
        if len(out) >= cap:
            raise runtime_error(f"stream.collect: stream produced more than {cap} items")
        out.append(v)


@builtin("stream.fold", callback=True)
def stream_fold(thread: Any, *args: Any) -> Gen:
    """``stream.fold(s, init, f)``: the final ``acc = f(acc, x)`` over all items."""
    src = _node_of(thread, _arg(args, 0, "stream.fold"), "stream.fold")
    acc = _arg(args, 1, "stream.fold")
    f = _callable(args, 2, "stream.fold")
    while True:
        ok, v = yield from src.pull(thread)
        if not ok:
            return acc
        acc = yield CallRequest(f, [acc, v])


@builtin("stream.first", callback=True)
def stream_first(thread: Any, *args: Any) -> Gen:
    """``stream.first(s)``: the first item, or nil for an empty stream."""
    src = _node_of(thread, _arg(args, 0, "stream.first"), "stream.first")
    ok, v = yield from src.pull(thread)
    return v if ok else None
