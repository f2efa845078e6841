"""The model call of an ``agent_loop`` turn: ``__agent_llm_turn`` (blocking) and, with the
loop option ``on_delta``, ``__agent_llm_stream`` / ``__agent_llm_stream_done`` (streamed).

``on_delta`` (Harn ``llm/agent_loop.md``, "Streaming visible-text deltas") is a closure
``delta -> nil`` called once per streamed chunk of the assistant's *visible* text of each
turn (``<think>`` blocks left out; tool calls are never streamed), as the chunks arrive:
the turn's call goes through the provider's streaming API (the mock hands its answer over
word by word; a provider without streaming gives its whole text as one chunk). It is
observational: its return value is ignored, a callback that throws changes nothing, and
the turn's result is the same complete answer (tool calls, usage) as without it. Retried
attempts (a transient failure before the first chunk, an empty completion) stream again.

The Harn side (``std/agent/_loop``) opens the stream, iterates the channel of visible
deltas calling the closure, then takes the turn's state from ``__agent_llm_stream_done``
(which throws the error envelope of a failed call, like ``__agent_llm_turn``). The
channel is live host state while the call is open (a snapshot reaching it is refused with
``E402``, as for ``llm_stream``); no turn boundary lies inside a model call.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from harnpy.lifecycle import text_tools
from harnpy.lifecycle.agents import _check_state, apply_response
from harnpy.lifecycle.llm_builtins import build, message_cache, submit_blocking
from harnpy.lifecycle.llm_stream import _OPEN, _OPEN_LOCK, _install_guard, _Pump, visible_text
from harnpy.lifecycle.tools import wire_tools
from harnpy.runtime.errors import HarnThrow, plain_error
from harnpy.runtime.values import Channel
from harnpy.stdlib.registry import builtin

#: Runtime attribute: the streamed turns under way, by ``id`` of their channel.
_TURNS_ATTR = "agent_streamed_turns"


@builtin("__agent_llm_turn", control=True)
def agent_llm_turn(thread: Any, st: Any = None) -> Any:
    """``__agent_llm_turn(st)``: send the transcript (plus pending reminders as a trailing
    user message) to the model and block until it answers; returns the state with the
    assistant message appended, ``pending_calls`` set and the counters advanced. Provider
    failures are thrown as ``{category, message}`` dicts."""
    st = _check_state(st, "__agent_llm_turn")
    rt = thread.runtime
    request = turn_request(rt, st)
    empty_retries = [0]
    started = int(rt.clock.monotonic_ms())

    def on_retry(err: Any) -> None:
        if err.classified()[1] == "empty_completion":
            empty_retries[0] += 1

    def finish(resp: Any) -> dict[str, Any]:
        took = int(rt.clock.monotonic_ms()) - started
        return apply_response(rt, st, resp, empty_retries[0], duration_ms=took)

    submit_blocking(thread, request, finish, "agent turn", on_retry=on_retry)
    return None


def turn_request(rt: Any, st: dict[str, Any]) -> Any:
    """The model request of the next turn of loop state ``st``: the transcript's messages
    (plus pending reminders as a trailing user message), the offered tools (the text-mode
    contract or the tool-search listing added to the system prompt) and the loop's LLM
    options (``total_budget_usd`` counting the loop's spend so far).

    Raises:
        HarnThrow: malformed options (as ``llm_call`` reports them).
    """
    messages = list(st["transcript"]["messages"])
    reminders = st["reminders"]
    if reminders:
        body = "\n\n".join(str(r.get("body", "")) for r in reminders)
        messages.append({"role": "user", "content": body})
    opts: dict[str, Any] = {**st["llm_options"], "messages": messages}
    from harnpy.lifecycle import tool_search

    search = st.get("tool_search")
    wire = wire_tools(tool_search.offered(st["tools"], search))
    system = st["system"]
    if search is not None:
        listing = tool_search.system_text(st["tools"], search)
        system = f"{system}\n\n{listing}" if system else listing
    if wire:
        opts["tools"] = wire
        opts["tool_format"] = st["tool_format"]
        if st["tool_format"] == "text":
            contract = text_tools.text_tool_contract(wire)
            system = f"{system}\n\n{contract}" if system else contract
    from harnpy.lifecycle.llm_session import loop_options

    opts = loop_options(opts, st)  # total_budget_usd counts the loop's spend so far
    return build(None, system, opts, where="agent_loop", cache=message_cache(rt))


class _TurnPump(_Pump):
    """A :class:`~harnpy.lifecycle.llm_stream._Pump` whose channel items are the visible
    text deltas of one turn's answer; it keeps the outcome (the response, or the error
    envelope) for :func:`agent_llm_stream_done` instead of putting it in the channel."""

    def __init__(self, thread: Any, channel: Channel, request: Any) -> None:
        super().__init__(thread, channel, request)
        self.shown = ""  # the visible text delivered so far (this attempt)
        self.started_ms = int(thread.runtime.clock.monotonic_ms())
        self.empty_retries = 0
        self.outcome: tuple[str, Any] | None = None

    def _item(self, delta: str) -> Any:
        visible = visible_text("".join(self.texts))
        if not visible.startswith(self.shown) or len(visible) == len(self.shown):
            return None  # hidden text (a <think> block) or nothing new
        new, self.shown = visible[len(self.shown) :], visible
        return new

    def _retrying(self, exc: Any) -> None:
        if exc.classified()[1] == "empty_completion":
            self.empty_retries += 1

    def _settle(self, fut: Future[Any]) -> bool:
        if fut.exception() is None:
            self.outcome = ("ok", fut.result())
        return super()._settle(fut)

    def _fail(self, envelope: dict[str, Any]) -> None:
        self.outcome = ("error", {**envelope, "partial": "".join(self.texts)})
        self._close()


def _turns(runtime: Any) -> dict[int, _TurnPump]:
    turns = getattr(runtime, _TURNS_ATTR, None)
    if turns is None:
        turns = {}
        setattr(runtime, _TURNS_ATTR, turns)
    return turns  # type: ignore[no-any-return]


@builtin("__agent_llm_stream")
def agent_llm_stream(thread: Any, st: Any = None) -> Channel:
    """``__agent_llm_stream(st)``: start the turn's model call streaming (the request of
    ``__agent_llm_turn``) and return at once the channel of its visible text deltas
    (strings), closed when the call has ended. Throws for an exceeded budget (before
    anything is sent) and malformed options."""
    from harnpy.lifecycle.llm_session import preflight

    st = _check_state(st, "__agent_llm_stream")
    rt = thread.runtime
    request = turn_request(rt, st)
    preflight(rt, request)  # budgets (throws before anything is sent) and cost accounting
    _install_guard()
    ch = Channel("agent_loop", None)
    pump = _TurnPump(thread, ch, request)
    with _OPEN_LOCK:
        _OPEN[id(ch)] = pump
    _turns(rt)[id(ch)] = pump
    pump.start()
    return ch


@builtin("__agent_llm_stream_done")
def agent_llm_stream_done(thread: Any, st: Any = None, ch: Any = None) -> dict[str, Any]:
    """``__agent_llm_stream_done(st, ch)``: after the channel ``ch`` of
    ``__agent_llm_stream`` closed, the state after the answer (as ``__agent_llm_turn``
    returns it). Throws the error envelope of a failed call (with ``partial``: the text
    streamed before the failure)."""
    st = _check_state(st, "__agent_llm_stream_done")
    rt = thread.runtime
    pump = _turns(rt).pop(id(ch), None)
    if pump is None or pump.channel is not ch or pump.outcome is None:
        raise plain_error(
            "Runtime error: __agent_llm_stream_done: internal: no finished streamed turn", "E300"
        )
    kind, value = pump.outcome
    if kind == "error":
        raise HarnThrow(value)
    took = int(rt.clock.monotonic_ms()) - pump.started_ms
    return apply_response(rt, st, value, pump.empty_retries, duration_ms=took)
