"""``llm_call`` and the mock builtins (lifecycle.md 2.14, 2.15) over :mod:`harnpy.llm`.

A model call never holds the evaluator: :func:`submit_blocking` hands the request to the
runtime's :class:`~harnpy.llm.LlmHost` pool, blocks the calling thread with
:func:`~harnpy.runtime.scheduler.block_control` and registers a scheduler callback that
delivers the result (or a thrown error dict ``{category, message, ...}``) when the future
completes. Other threads, and other workers' model calls, run meanwhile.

``llm_call(prompt, system?, options?)`` returns ``{text, visible_text, prose, model,
provider, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tool_calls,
stop_reason, thinking, usage, transcript}`` plus ``data`` when ``response_format: "json"``
or ``output_schema`` is given; the JSON answer is validated against ``output_schema`` and
the model is asked again up to ``schema_retries`` times (default 1) before the call throws
``{category: "schema_validation", message, errors}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from harnpy.lifecycle._common import arg, require_instruction_call, strip_harness, thrown
from harnpy.lifecycle.services import services
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, HarnThrow
from harnpy.runtime.extensions import register_state
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib.registry import builtin

#: Default number of re-asks after a JSON/schema failure (Harn's ``schema_retries``).
DEFAULT_SCHEMA_RETRIES = 1
#: Default ``llm_retries`` of ``llm_call`` and its variants: none (Harn's raw ``llm_call`` is
#: fail-fast; ``agent_loop`` profiles default to 2).
DEFAULT_LLM_RETRIES = 0

# Opening and closing tags of the blocks visible_text handles (group 1 is "/" for a close).
_DONE_TAG = re.compile(r"<(/?)done>")
_THINK_TAG = re.compile(r"<(/?)think(?:ing)?>")
_TOOL_CALL_TAG = re.compile(r"<(/?)tool_call>")
_PROSE_TAG = re.compile(r"<(/?)assistant_prose>")
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n?```", re.DOTALL)


class Again:
    """Returned by a response handler to ask the model again with ``request`` (the calling
    thread stays blocked)."""

    __slots__ = ("request",)

    def __init__(self, request: Any) -> None:
        self.request = request


def llm_error_value(exc: Any) -> dict[str, Any]:
    """The Harn value thrown for an :class:`~harnpy.llm.LlmError`: the error envelope
    ``{kind, reason, category, message, retry_after_ms?, status?, provider, model}``
    (:func:`harnpy.llm.errors.llm_error_envelope`)."""
    return exc.envelope()  # type: ignore[no-any-return]


def call_retries(request: Any) -> tuple[int, int]:
    """``(retries, backoff_ms)`` of a request: ``llm_retries`` (default
    :data:`DEFAULT_LLM_RETRIES`, Harn's fail-fast ``llm_call``; ``agent_loop`` profiles set
    2) and ``llm_backoff_ms`` (default :data:`harnpy.llm.types.DEFAULT_BACKOFF_MS`)."""
    from harnpy.llm.types import DEFAULT_BACKOFF_MS

    retries = request.retries if request.retries is not None else DEFAULT_LLM_RETRIES
    backoff = request.backoff_ms if request.backoff_ms is not None else DEFAULT_BACKOFF_MS
    return retries, backoff


def submit_blocking(
    thread: Any,
    request: Any,
    finish: Callable[[Any], Any],
    describe: str = "llm call",
    on_retry: Callable[[Any], None] | None = None,
    on_error: Callable[[dict[str, Any]], Any] | None = None,
) -> Any:
    """Start ``request`` on the LLM pool and block ``thread`` (inside a control builtin).

    When the response arrives, ``finish(response)`` runs on the scheduler's thread: its
    return value is delivered to the blocked call; an :class:`Again` re-submits its request
    and keeps waiting; a raised :class:`HarnError` is thrown at the call.

    **Retries** (``llm_retries`` / ``llm_backoff_ms``, :func:`call_retries`): a transient
    failure (``err.retryable``: 429, 5xx, timeouts, network, an empty completion, a mock
    ``error`` entry of such a category or ``kind: "transient"``) is tried again up to
    ``retries`` times, whichever provider answered — a real one or the mock. Retry ``n``
    (0-based) waits ``backoff_ms * 2**n`` ms, or the server's ``retry_after_ms``
    (:func:`harnpy.llm._retry.backoff_delay`), on a scheduler timer of the runtime clock:
    the thread stays blocked as data, no pool thread sleeps, and a mock clock makes the wait
    virtual. ``on_retry(err)`` is called for each retry (agent loops count empty
    completions). The provider itself makes one attempt per submission.

    The final failure is thrown as the error envelope (:func:`llm_error_value`; its message
    gains `` (after N attempts)`` when retries happened). With ``on_error``, every failure
    — the provider's, or a ``HarnThrow`` / ``LlmError`` raised by ``finish`` — is instead
    turned into an envelope (:func:`harnpy.llm.errors.envelope_from_value`) and
    ``on_error(envelope)`` is delivered as the call's value (the ``*_safe`` variants); an
    :class:`Again` it returns submits its request instead (with a fresh retry budget).
    Returns the waker (its ``done`` flag set by :func:`cancel_waker` drops a late answer).
    """
    from harnpy.lifecycle.llm_session import preflight
    from harnpy.llm import LlmError
    from harnpy.llm._retry import backoff_delay
    from harnpy.llm.errors import envelope_from_value

    rt = thread.runtime
    preflight(rt, request)  # budgets (throws before anything is sent) and cost accounting
    svc = services(rt)
    waker = block_control(thread, describe)
    svc.inflight += 1
    current = [request]
    attempt = [0]

    def fail(exc: HarnError) -> None:
        if on_error is not None and isinstance(exc, HarnThrow):
            req = current[0]
            value = exc.value
            if not isinstance(value, dict):
                value = display(value)
            out = on_error(envelope_from_value(value, provider=req.provider, model=req.model))
            if isinstance(out, Again):  # e.g. a repair pass after a failed answer
                again(out)
                return
            waker.wake(out)
        else:
            waker.fail(exc)

    def submit() -> None:
        rt.scheduler.on_future(svc.llm.submit(current[0], one_attempt=True), done)

    def again(out: Again) -> None:
        svc.inflight += 1
        current[0] = out.request
        attempt[0] = 0  # a re-ask is a new call with its own retry budget
        submit()

    def resubmit() -> None:
        if waker.done:
            svc.inflight -= 1
            return
        submit()

    def failed(exc: Any) -> None:
        retries, backoff_ms = call_retries(current[0])
        n = attempt[0]
        if exc.retryable and n < retries:
            attempt[0] = n + 1
            if on_retry is not None:
                on_retry(exc)
            delay_ms = backoff_delay(n, backoff_ms, exc.retry_after_s) * 1000.0
            svc.inflight += 1  # the call stays in flight while it waits for its retry
            rt.scheduler.at(rt.clock.monotonic_ms() + delay_ms, resubmit)
            return
        if n > 0:
            exc.message = f"{exc.message} (after {n + 1} attempts)"
            exc.args = (exc.message,)
        fail(HarnThrow(llm_error_value(exc)))

    def done(fut: Any) -> None:
        svc.inflight -= 1
        if waker.done:
            return
        try:
            response = fut.result()
        except LlmError as exc:
            failed(exc)
            return
        except Exception as exc:  # noqa: BLE001 - never lose a waiting thread
            fail(HarnThrow(error_envelope("generic", f"llm: {exc}", current[0])))
            return
        for listener in svc.llm_listeners:
            listener(response)
        try:
            out = finish(response)
        except HarnError as exc:
            fail(exc)
            return
        except LlmError as exc:
            exc.provider = exc.provider or response.provider
            exc.model = exc.model or response.model
            fail(HarnThrow(llm_error_value(exc)))
            return
        if isinstance(out, Again):
            again(out)
            return
        waker.wake(out)

    submit()
    return waker


def error_envelope(category: str, message: str, request: Any = None, **extra: Any) -> Any:
    """:func:`harnpy.llm.errors.llm_error_envelope` for a failure of ``request`` (its
    provider and model; None before a request exists), e.g. a schema failure."""
    from harnpy.llm.errors import llm_error_envelope

    provider = getattr(request, "provider", None)
    model = getattr(request, "model", None)
    return llm_error_envelope(category, message, provider=provider, model=model, **extra)


def message_cache(rt: Any) -> Any:
    """The run's :class:`~harnpy.llm.options.MessageCache` once its LLM host exists, else
    None (the first call validates everything, as without a cache)."""
    host = services(rt)._llm
    return None if host is None else host.message_cache


def build(
    prompt: Any, system: Any, options: Any, where: str = "llm_call", cache: Any = None
) -> Any:
    """:func:`harnpy.llm.build_request` with LLM config errors thrown as Harn dicts;
    ``cache``: the run's :class:`~harnpy.llm.options.MessageCache` (validate new messages
    only)."""
    from harnpy.llm import LlmError, build_request

    if options is not None and type(options) is not dict:
        raise thrown(f"{where}: options must be a dict")
    if prompt is not None and type(prompt) is not str:
        from harnpy.runtime.display import display

        prompt = display(prompt)
    if system is not None and type(system) is not str:
        raise thrown(f"{where}: system must be a string or nil")
    try:
        request = build_request(prompt, system, options, where=where, cache=cache)
    except LlmError as exc:
        raise HarnThrow(llm_error_value(exc)) from None
    if options is not None and options.get("tool_search") is not None:
        from harnpy.lifecycle import tool_search

        request = tool_search.apply_to_request(request, options, where)
    return request


def _blocks(text: str, tag: re.Pattern[str]) -> list[tuple[int, int, int, int]]:
    """The ``open ... close`` blocks of ``text`` as ``(start, end, inner_start, inner_end)``:
    each block runs from an opening tag to the first closing tag after it, like the regex
    ``<t>.*?</t>`` but in one linear pass (the regex rescans the rest of the text for every
    unclosed opening tag: quadratic)."""
    out: list[tuple[int, int, int, int]] = []
    start = inner = -1
    for m in tag.finditer(text):
        if start < 0:
            if not m.group(1):
                start, inner = m.start(), m.end()
        elif m.group(1):
            out.append((start, m.end(), inner, m.start()))
            start = -1
    return out


def _strip_blocks(text: str, tag: re.Pattern[str]) -> str:
    """``text`` without its ``tag`` blocks (see :func:`_blocks`)."""
    blocks = _blocks(text, tag)
    if not blocks:
        return text
    parts, pos = [], 0
    for start, end, _, _ in blocks:
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def visible_text(text: str) -> str:
    """The human-visible part of a model answer: ``<think>``, ``<tool_call>`` and ``<done>``
    blocks removed, ``<assistant_prose>`` unwrapped, trimmed. A bare ``##DONE##`` sentinel
    outside a ``<done>`` block stays: it is part of the answer's text, as in Harn (the
    conformance case ``agent_loop_llm_retries_default``)."""
    if not text:
        return ""
    out = _strip_blocks(text, _THINK_TAG)
    out = _strip_blocks(out, _TOOL_CALL_TAG)
    out = _strip_blocks(out, _DONE_TAG)
    prose = _blocks(out, _PROSE_TAG)
    if prose:
        out = "\n".join(out[i:j].strip() for _, _, i, j in prose)
    return out.strip()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _strict_loads(text: str) -> Any:
    """``json.loads`` without the ``NaN`` / ``Infinity`` extensions (RFC 8259 JSON)."""
    return json.loads(text, parse_constant=_reject_constant)


def parse_json_answer(text: str) -> tuple[bool, Any, str]:
    """Parse the JSON value in a model answer: the whole text, a fenced block, or the span
    from the first ``{``/``[`` to the last matching bracket. Returns ``(ok, value,
    problem)``; ``problem`` (when not ok) says why, e.g. ``the answer is not valid JSON:
    nested too deeply``. ``NaN`` and ``Infinity`` are not JSON."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    for open_c, close_c in (("{", "}"), ("[", "]")):
        start, end = text.find(open_c), text.rfind(close_c)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    problem = "the answer is not valid JSON"
    for c in candidates:
        if not c:
            continue
        try:
            return True, _strict_loads(c), ""
        except ValueError:
            continue
        except RecursionError:
            problem = "the answer is not valid JSON: nested too deeply"
    return False, None, problem


def extract_json(text: str) -> tuple[bool, Any]:
    """:func:`parse_json_answer` without the reason: ``(ok, value)``."""
    ok, value, _ = parse_json_answer(text)
    return ok, value


def schema_issues(value: Any, schema: Any, *, strict_ints: bool = False) -> list[str]:
    """Violations of ``value`` against a JSON/Harn schema, rendered ``at <path>: <msg>``
    (empty when valid). Numbers are compared leniently (JSON has one number type: ``8``
    satisfies ``number``); with ``strict_ints`` only that way (spec 3.11: an int passes for
    a float, never a float for an int), as typed tool parameters need."""
    from harnpy.stdlib.schema import render_issue, validate

    try:
        if strict_ints:
            _, issues = validate(value, schema, int_as_float=True)
        else:
            _, issues = validate(value, schema, numeric_compat=True)
    except ValueError as exc:
        return [f"at root: invalid schema: {exc}"]
    except RecursionError:
        return ["at root: value or schema nested too deeply"]
    return [render_issue(i) for i in issues]


def usage_dict(resp: Any) -> dict[str, Any]:
    """``{input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
    total_tokens, cache_creation_input_tokens, cache_hit_ratio, cache_savings_usd,
    served_fast}`` of a response (the prompt-cache fields:
    :func:`harnpy.lifecycle.llm_session.cache_usage`)."""
    from harnpy.lifecycle.llm_session import cache_usage

    u = resp.usage
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_tokens": u.cache_read_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        **cache_usage(resp.model, resp.provider, u),
    }


def assistant_message(resp: Any) -> dict[str, Any]:
    """The transcript message of a response: ``{role: "assistant", content, tool_calls?,
    thinking_blocks?}`` (``thinking_blocks``: see :class:`harnpy.llm.Message`)."""
    msg: dict[str, Any] = {"role": "assistant", "content": resp.text}
    if resp.tool_calls:
        msg["tool_calls"] = [tc.to_dict() for tc in resp.tool_calls]
    if resp.thinking_blocks:
        msg["thinking_blocks"] = [dict(b) for b in resp.thinking_blocks]
    return msg


def result_dict(resp: Any, request: Any) -> dict[str, Any]:
    """The ``llm_call`` result for one response (without ``data``)."""
    from harnpy.lifecycle.transcript import new_transcript

    out = resp.to_harn_fields()
    vis = visible_text(resp.text)
    out["visible_text"] = vis
    out["prose"] = vis
    out["usage"] = usage_dict(resp)
    for key in ("cache_creation_input_tokens", "cache_hit_ratio", "cache_savings_usd"):
        out[key] = out["usage"][key]  # Harn's result also has them at the top level
    out["served_fast"] = False
    # Harn's canonical answer blocks: the visible text as one public text block
    out.setdefault("blocks", [{"type": "text", "text": vis, "visibility": "public"}] if vis else [])
    out.setdefault("private_reasoning", None)
    messages = [m.to_wire() for m in request.messages] + [assistant_message(resp)]
    out["transcript"] = new_transcript(messages=messages)
    return out


def start_llm_call(
    thread: Any,
    args: tuple[Any, ...],
    where: str = "llm_call",
    wrap: Callable[[dict[str, Any]], Any] | None = None,
    on_error: Callable[[dict[str, Any]], Any] | None = None,
) -> None:
    """Build and submit the request of ``llm_call(prompt, system?, options?)`` (``args``
    with any harness stripped) and block ``thread`` until the answer: the result dict of
    the module docstring, passed through ``wrap`` when given; failures go to ``on_error``
    when given (see :func:`submit_blocking`), else are thrown.

    Raises:
        HarnThrow: the error envelope of a malformed option (before any request).
    """
    prompt, system, options = arg(args, 0), arg(args, 1), arg(args, 2)
    from harnpy.lifecycle import experiments

    if experiments.wants_experiment(options):  # rewritten in Harn code, then called again
        experiments.start(thread, prompt, system, options)
        return None
    from harnpy.lifecycle import structured_calls

    options = structured_calls.normalize_output_options(thread, options, where)
    request = build(prompt, system, options, where=where, cache=message_cache(thread.runtime))
    loop = structured_calls.schema_loop(thread, options, request, where, DEFAULT_SCHEMA_RETRIES)

    def finish(resp: Any) -> Any:
        out = loop.answer(thread, resp, result_dict(resp, loop.current))
        return out if wrap is None or isinstance(out, Again) else wrap(out)

    submit_blocking(thread, request, finish, on_error=on_error)


@builtin("llm_call", control=True)
def llm_call(thread: Any, *args: Any) -> Any:
    """``llm_call(prompt, system?, options?)`` (also ``llm_call(harness, ...)``): one model
    request; returns the result dict described in the module docstring.

    Blocks only the calling thread. ``llm_retries`` (default 0) / ``llm_backoff_ms``
    (default 250) retry transient failures (429, 5xx, timeouts, network, a mock ``error``
    entry of such a category), from a real provider or the mock. A failure throws Harn's
    error envelope ``{kind: "transient"|"terminal", reason, category, message,
    retry_after_ms?, status?, provider, model}`` (``HARN_LLM_CALLS_DISABLED=1`` gives
    category ``disabled``); a JSON answer that stays invalid throws category
    ``schema_validation`` with ``errors`` and ``text``.
    """
    require_instruction_call(thread, "llm_call")
    start_llm_call(thread, strip_harness(args))
    return None


def _safe_ok(out: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "response": out, "error": None}


def _safe_error(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"ok": False, "response": None, "error": envelope}


@builtin("llm_call_safe", control=True)
def llm_call_safe(thread: Any, *args: Any) -> Any:
    """``llm_call_safe(prompt, system?, options?)``: ``llm_call`` that never throws
    (Harn ``llm/llm_call.md``). Returns ``{ok: true, response: <llm_call result>, error:
    nil}``, or ``{ok: false, response: nil, error: <envelope>}`` where the envelope is what
    ``llm_call`` would have thrown: ``{kind, reason, category, message, retry_after_ms?,
    provider, model}`` — for a provider failure (after ``llm_retries``), a mock ``error``
    entry, an invalid option or an answer that fails its ``output_schema``.
    """
    from harnpy.llm.errors import envelope_from_value

    require_instruction_call(thread, "llm_call_safe")
    args = strip_harness(args)
    try:
        start_llm_call(thread, args, "llm_call_safe", wrap=_safe_ok, on_error=_safe_error)
    except HarnThrow as exc:
        value = exc.value if isinstance(exc.value, dict) else display(exc.value)
        return _safe_error(envelope_from_value(value))
    return None


# ------------------------------------------------------------------------------- mocks


def _mock(thread: Any) -> Any:
    return services(thread.runtime).llm.mock


@builtin("llm_mock")
def llm_mock(thread: Any, *args: Any) -> None:
    """``llm_mock(response)``: queue one scripted reply for the ``mock`` provider
    (lifecycle.md 2.15). Throws ``{category: "config", message}`` for an invalid entry.

    A reply is a dict: ``{text: "..."}`` answers with a text; ``{tool_calls: [{name,
    arguments, id?}]}`` makes the "model" call tools (the loop runs them and asks again);
    ``{error: {category?, message, status?}}`` fails the call; ``match: "*glob*"`` answers
    only a conversation the glob matches. Queued replies answer in order, one per model
    call. The same entries, one JSON object a line, go in a ``--llm-mock FILE.jsonl``
    (docs: reference/mock-format.md)."""
    from harnpy.llm import LlmError

    args = strip_harness(args)
    try:
        _mock(thread).push(arg(args, 0))
    except LlmError as exc:
        raise HarnThrow(llm_error_value(exc)) from None


@builtin("llm_mock_calls")
def llm_mock_calls(thread: Any, *args: Any) -> list[Any]:
    """``llm_mock_calls()``: the calls the mock answered, oldest first:
    ``[{messages, system, tools, thinking}]``."""
    return _mock(thread).calls()  # type: ignore[no-any-return]


@builtin("llm_mock_clear")
def llm_mock_clear(thread: Any, *args: Any) -> None:
    """``llm_mock_clear()``: drop queued replies and recorded calls."""
    _mock(thread).clear()


@builtin("llm_mock_push_scope")
def llm_mock_push_scope(thread: Any, *args: Any) -> None:
    """``llm_mock_push_scope()``: save the mock queue and call log and start empty (used by
    ``with_llm_script`` in ``std/testing``)."""
    mock = _mock(thread)
    services(thread.runtime).mock_scopes.append(mock.export_state())
    mock.clear()


@builtin("llm_mock_pop_scope")
def llm_mock_pop_scope(thread: Any, *args: Any) -> None:
    """``llm_mock_pop_scope()``: restore the state saved by the matching push (no-op when
    no scope is open)."""
    scopes = services(thread.runtime).mock_scopes
    if scopes:
        _mock(thread).import_state(scopes.pop())


# ----------------------------------------------------------------------------- snapshots


def _save_mock(thread: Any) -> Any:
    """Runtime state ``llm_mock``: the queued entries, the call log and the scopes saved by
    ``llm_mock_push_scope`` (None when all are empty or no model call was set up)."""
    svc = services(thread.runtime)
    host = svc._llm
    if host is None:
        return None
    # a waitpoint park that stores the call log as rows pins the list it detaches
    state = host.mock.snapshot_state(getattr(svc, "snapshot_mock_calls", None))
    if state is None and not svc.mock_scopes:
        return None
    return {"mock": state, "scopes": list(svc.mock_scopes)}


def _load_mock(thread: Any, data: Any) -> Any:
    if type(data) is not dict or set(data) != {"mock", "scopes"}:
        raise TypeError("llm_mock state must be {mock, scopes}")
    if type(data["scopes"]) is not list or any(type(x) is not dict for x in data["scopes"]):
        raise TypeError("llm_mock scopes must be a list of dicts")
    rt = thread.runtime
    svc = services(rt)
    mock = svc.llm.mock
    install = None if data["mock"] is None else mock.check_snapshot_state(data["mock"])
    scopes = list(data["scopes"])

    def apply() -> None:
        if install is not None:
            install()
        svc.mock_scopes[:] = scopes

    return apply


register_state("llm_mock", _save_mock, _load_mock)
