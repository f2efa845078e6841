"""``llm_completion`` (fill-in-the-middle text) and ``llm_stream`` (a channel of chunks).

Both are model calls at the level of ``llm_call`` (Harn ``llm/llm_call.md``,
``llm/streaming.md``) and take the same options (provider, model, ``model_tier``,
``max_tokens``, ``budget``, ``llm_retries``...).

``llm_completion(prefix, suffix, system?, options?)`` asks for the text between ``prefix``
and ``suffix``: chat models get the two parts in one user message and an instruction to
answer with the missing text only (:data:`COMPLETION_SYSTEM`, after the caller's system
prompt); the request carries ``completion: {prefix, suffix}`` so that the mock provider
answers deterministically. It blocks the calling thread like ``llm_call``; the result is
``llm_call``'s result dict.

``llm_stream(prompt, system?, options?)`` returns at once an open channel; the answer's
text arrives in it as the provider sends it and the channel closes after the last piece.
The call runs on the LLM pool with the provider's streaming API
(:meth:`harnpy.llm.LlmHost.submit_stream`: OpenAI-compatible ``stream: true`` events,
Anthropic Messages events; the mock hands its answer over word by word). The pool thread
puts each delta in a :class:`_Pump` buffer and completes a signal future; the scheduler's
thread moves the buffered deltas into the channel (waking a waiting receiver), so a
``for chunk in ch`` consumer gets the first chunk while the model is still writing.

A failure does not throw: the channel's last item is the error envelope ``llm_call``
would have thrown, with ``partial`` (the text streamed before the failure, "" when none),
as in Harn. A transient failure before any chunk is retried (``llm_retries``,
``llm_backoff_ms``, on scheduler timers); after a chunk it is not (the consumer has the
chunks already). An exceeded budget gives a channel holding only its envelope; a
malformed option throws at the call.

**Snapshots.** An open stream is live host state, not data: a snapshot (a worker's park, a
checkpoint, the snapshot-everywhere round trip) that reaches a channel an ``llm_stream``
is still filling is refused with ``E402`` (:func:`open_stream_reason`, registered as a
channel guard of :mod:`harnpy.runtime.snapshot`). Once the stream has closed its channel
is plain data (items and ``closed``) and snapshots like any channel.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future
from typing import Any

from harnpy.lifecycle._common import arg, require_instruction_call, strip_harness, thrown
from harnpy.llm.streaming import chunks
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.values import Channel
from harnpy.stdlib.registry import builtin

__all__ = ["COMPLETION_SYSTEM", "chunks", "completion_prompt", "open_stream_reason"]

#: The instruction a chat model gets for ``llm_completion``.
COMPLETION_SYSTEM = (
    "You fill in missing text. The user gives the text before the gap (PREFIX) and the "
    "text after it (SUFFIX). Reply with only the text that belongs in the gap: no "
    "explanations, no repetition of the prefix or suffix, no code fences."
)


def completion_prompt(prefix: str, suffix: str) -> str:
    """The user message of a completion request."""
    return f"PREFIX:\n{prefix}\n\nSUFFIX:\n{suffix}\n\nThe text of the gap:"


@builtin("llm_completion", control=True)
def llm_completion(thread: Any, *args: Any) -> Any:
    """``llm_completion(prefix, suffix?, system?, options?)``: ask the model for the text
    between ``prefix`` and ``suffix`` (fill in the middle; ``suffix`` nil or "" continues
    ``prefix``). Options as ``llm_call`` (``model_tier: "small"`` picks the tier's model).
    Returns ``llm_call``'s result dict (``text``: the missing text). Throws the error
    envelope of a failed call, and for a non-string prefix or suffix."""
    from harnpy.lifecycle.llm_builtins import build, message_cache, result_dict, submit_blocking

    require_instruction_call(thread, "llm_completion")
    args = strip_harness(args)
    prefix, suffix, system, options = arg(args, 0), arg(args, 1), arg(args, 2), arg(args, 3)
    if type(prefix) is not str:
        raise thrown(f"llm_completion: prefix must be a string, got {display(prefix)}")
    if suffix is None:
        suffix = ""
    if type(suffix) is not str:
        raise thrown(f"llm_completion: suffix must be a string or nil, got {display(suffix)}")
    if system is not None and type(system) is not str:
        raise thrown("llm_completion: system must be a string or nil")
    instruction = COMPLETION_SYSTEM if system is None else f"{system}\n\n{COMPLETION_SYSTEM}"
    opts = {k: v for k, v in (options or {}).items() if k != "messages"} if options else None
    request = build(
        completion_prompt(prefix, suffix),
        instruction,
        opts,
        where="llm_completion",
        cache=message_cache(thread.runtime),
    )
    import attrs

    request = attrs.evolve(request, completion={"prefix": prefix, "suffix": suffix})
    submit_blocking(thread, request, lambda resp: result_dict(resp, request), "llm completion")
    return None


#: The pumps of the streams still open, by ``id`` of their channel (a pump holds its
#: channel, so the id is not reused while the entry lives).
_OPEN: weakref.WeakValueDictionary[int, _Pump] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.Lock()


def open_stream_reason(ch: Channel) -> str | None:
    """Why ``ch`` cannot be snapshotted now: an ``llm_stream`` is still filling it (the
    provider's answer is in flight); None for any other channel. The snapshot layer's
    channel guard (module docstring)."""
    with _OPEN_LOCK:
        pump = _OPEN.get(id(ch))
    if pump is None or pump.channel is not ch or pump.finished:
        return None
    return (
        "an llm_stream is still filling it (the model's answer is in flight); "
        "drain the stream (for chunk in ch) before the snapshot"
    )


class _Pump:
    """Moves one streaming call's deltas from the pool thread into its channel.

    Pool side: :meth:`on_delta` and :meth:`on_result` append ``("delta", text)`` /
    ``("done", future)`` to ``buffer`` under ``lock`` and complete the armed signal future.
    Scheduler side: :meth:`_drain` (the signal future's callback) pushes the deltas into the
    channel in order, settles the call at ``done`` (retry, close, or the error item) and
    arms a new signal while the call is open. Exactly one signal future is registered with
    the scheduler at a time, so an idle scheduler waits for the next delta.
    """

    def __init__(self, thread: Any, channel: Channel, request: Any) -> None:
        self.runtime = thread.runtime
        self.channel = channel
        self.request = request
        self.lock = threading.Lock()
        self.buffer: list[tuple[str, Any]] = []
        self.signal: Future[None] | None = None
        self.texts: list[str] = []  # deltas delivered to the channel (scheduler thread)
        self.attempt = 0
        self.finished = False

    # -- pool thread
    def on_delta(self, text: str) -> None:
        """A text delta from the provider (any thread)."""
        if text:
            self._put(("delta", text))

    def on_result(self, fut: Future[Any]) -> None:
        """The call's future is done (any thread)."""
        self._put(("done", fut))

    def _put(self, item: tuple[str, Any]) -> None:
        with self.lock:
            self.buffer.append(item)
            sig, self.signal = self.signal, None
        if sig is not None:
            sig.set_result(None)

    # -- scheduler thread
    def start(self) -> None:
        """Submit the call (again, for a retry) and arm the signal."""
        from harnpy.lifecycle.services import services

        svc = services(self.runtime)
        svc.inflight += 1
        fut = svc.llm.submit_stream(self.request, self.on_delta)
        fut.add_done_callback(self.on_result)
        self._arm()

    def _arm(self) -> None:
        sig: Future[None] = Future()
        with self.lock:
            ready = bool(self.buffer)
            if not ready:
                self.signal = sig
        self.runtime.scheduler.on_future(sig, self._drain)
        if ready:
            sig.set_result(None)

    def _item(self, delta: str) -> Any:
        """The channel item of one text delta (``llm_stream``: the text itself; None: no
        item for it)."""
        return delta

    def _retrying(self, exc: Any) -> None:
        """A transient failure ``exc`` (an :class:`~harnpy.llm.LlmError`) is retried."""

    def _drain(self, _sig: Any) -> None:
        from harnpy.stdlib.concurrency import channel_push

        with self.lock:
            items, self.buffer = self.buffer, []
        waiting = True
        for kind, value in items:
            if kind == "delta":
                self.texts.append(value)
                item = self._item(value)
                if item is not None:
                    channel_push(self.runtime, self.channel, item)
            else:
                waiting = self._settle(value)
        if waiting and not self.finished:
            self._arm()

    def _settle(self, fut: Future[Any]) -> bool:
        """Handle the call's outcome; True while the stream stays open (a retry)."""
        from harnpy.lifecycle.llm_builtins import call_retries, error_envelope, llm_error_value
        from harnpy.lifecycle.services import services
        from harnpy.llm import LlmError
        from harnpy.llm._retry import backoff_delay

        svc = services(self.runtime)
        svc.inflight -= 1
        try:
            response = fut.result()
        except LlmError as exc:
            retries, backoff_ms = call_retries(self.request)
            n = self.attempt
            if exc.retryable and n < retries and not self.texts:
                self.attempt = n + 1
                self._retrying(exc)
                delay_ms = backoff_delay(n, backoff_ms, exc.retry_after_s) * 1000.0
                rt = self.runtime
                rt.scheduler.at(rt.clock.monotonic_ms() + delay_ms, self.start)
                return False  # start() arms again
            if n > 0:
                exc.message = f"{exc.message} (after {n + 1} attempts)"
            self._fail(llm_error_value(exc))
            return False
        except Exception as exc:  # noqa: BLE001 - never leave a consumer waiting
            self._fail(error_envelope("generic", f"llm: {exc}", self.request))
            return False
        for listener in svc.llm_listeners:  # usage and cost accounting, as llm_call
            listener(response)
        self._close()
        return False

    def _fail(self, envelope: dict[str, Any]) -> None:
        from harnpy.stdlib.concurrency import channel_push

        channel_push(self.runtime, self.channel, {**envelope, "partial": "".join(self.texts)})
        self._close()

    def _close(self) -> None:
        from harnpy.stdlib.concurrency import channel_close

        self.finished = True
        with _OPEN_LOCK:
            _OPEN.pop(id(self.channel), None)
        channel_close(self.runtime, self.channel)


def _closed_with(value: Any) -> Channel:
    ch = Channel("llm_stream", None)
    ch.items.append(value)
    ch.closed = True
    return ch


@builtin("llm_stream")
def llm_stream(thread: Any, *args: Any) -> Any:
    """``llm_stream(prompt, system?, options?) -> channel``: the model's answer as a
    channel of text chunks, filled as the provider sends them (the call runs in the
    background; the channel is returned at once) and closed after the last. Joined, the
    chunks are the answer's ``text``. Options as ``llm_call`` (``llm_retries`` retries a
    transient failure before the first chunk). A failed call does not throw: the channel's
    last item is the error envelope ``llm_call`` would have thrown, plus ``partial`` (the
    text streamed before the failure); an exceeded budget gives a channel holding only its
    envelope; a malformed option throws. A snapshot that reaches the channel while the
    stream is open is refused (E402); drain it first."""
    return _open_stream(thread, args, "llm_stream", _Pump)


def _open_stream(thread: Any, args: tuple[Any, ...], where: str, pump: type[_Pump]) -> Channel:
    """The channel of a streamed ``llm_call`` builtin ``where``: the call is built and
    budget-checked here (an exceeded budget: a closed channel holding only its envelope),
    then ``pump`` fills the channel in the background."""
    from harnpy.lifecycle.llm_builtins import build, message_cache
    from harnpy.lifecycle.llm_session import preflight

    args = strip_harness(args)
    prompt, system, options = arg(args, 0), arg(args, 1), arg(args, 2)
    request = build(prompt, system, options, where=where, cache=message_cache(thread.runtime))
    try:
        preflight(thread.runtime, request)  # budgets: the envelope is the only item
    except HarnThrow as exc:
        return _closed_with(exc.value)
    _install_guard()  # no stream is open before the first call
    ch = Channel(where, None)
    p = pump(thread, ch, request)
    with _OPEN_LOCK:
        _OPEN[id(ch)] = p
    p.start()
    return ch


def _snapshot_guard(ch: Channel) -> str | None:
    return open_stream_reason(ch)


def _install_guard() -> None:
    from harnpy.runtime import snapshot

    if _snapshot_guard not in snapshot.CHANNEL_GUARDS:
        snapshot.CHANNEL_GUARDS.append(_snapshot_guard)


def visible_text(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks; an unclosed ``<think>`` hides the
    rest (the model is still thinking). ``llm_stream_call``'s ``visible_delta``/``partial``."""
    out: list[str] = []
    pos = 0
    while True:
        start = text.find("<think>", pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find("</think>", start)
        if end < 0:
            break
        pos = end + len("</think>")
    return "".join(out)


class _ChunkPump(_Pump):
    """A :class:`_Pump` whose channel items are ``llm_stream_call`` chunk dicts."""

    def __init__(self, thread: Any, channel: Channel, request: Any) -> None:
        super().__init__(thread, channel, request)
        self.shown = ""  # the visible text delivered so far

    def _chunk(self, delta: str, stop_reason: Any) -> dict[str, Any]:
        visible = visible_text("".join(self.texts))
        # text hidden before may not show later (a closed think block only removes text)
        new = ""
        if visible.startswith(self.shown):
            new, self.shown = visible[len(self.shown) :], visible
        return {
            "delta": delta,
            "visible_delta": new,
            "partial": self.shown,
            "role": "assistant",
            "stop_reason": stop_reason,
        }

    def _item(self, delta: str) -> Any:
        return self._chunk(delta, None)

    def _settle(self, fut: Future[Any]) -> bool:
        if fut.exception() is None:
            from harnpy.stdlib.concurrency import channel_push

            stop = getattr(fut.result(), "stop_reason", None)
            channel_push(self.runtime, self.channel, self._chunk("", stop))
        return super()._settle(fut)


@builtin("llm_stream_call", callback=True)
def llm_stream_call(thread: Any, *args: Any) -> Any:
    """``llm_stream_call(prompt, system?, options?) -> stream``: ``llm_call`` as a Harn
    ``stream`` of chunk dicts ``{delta, visible_delta, partial, role, stop_reason}`` (Harn
    ``llm/streaming.md``, ``LlmStreamChunk``): ``delta`` is the provider's text delta,
    ``visible_delta`` the part of it outside ``<think>`` blocks (an open block hides what
    follows), ``partial`` the visible text so far, ``role`` ``"assistant"``; a terminal chunk
    (``delta`` "") carries the call's ``stop_reason`` (nil on the others). Options as
    ``llm_call``. A failed call does not throw: the last item is the error envelope plus
    ``partial`` (as ``llm_stream``); an exceeded budget gives a stream of only that envelope;
    a malformed option throws. The stream cannot be snapshotted while the call is open."""
    from harnpy.stdlib.streams import _as_stream, _ChanNode

    ch = _open_stream(thread, args, "llm_stream_call", _ChunkPump)
    result = yield from _as_stream(thread, _ChanNode(ch))
    return result
