"""LLM cost tracking and budgets (Harn ``llm/llm_call.md``, "Cost tracking").

Prices come from the one price table, the provider catalog (``harnpy/llm/catalog.toml``,
read through :func:`harnpy.llm.catalog.pricing`), in USD per million tokens.

* ``llm_cost(model, input_tokens, output_tokens)``: the estimated cost of one call.
* ``llm_session_cost()``: the totals of every model answer of this run ``{total_cost,
  input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, call_count}``.
* ``llm_budget(usd)`` / ``llm_budget_remaining()`` / ``llm_budget_clear()``: a session
  budget; a call whose projected cost would take the session past it throws.
* The ``budget`` option of ``llm_call`` / ``agent_loop`` (``max_cost_usd``,
  ``max_input_tokens``, ``max_output_tokens``, ``total_budget_usd``): checked by
  :func:`preflight` before the request leaves the process. An exceeded limit throws
  Harn's terminal error envelope ``{kind: "terminal", reason: "budget_exceeded", category:
  "budget_exceeded", message, provider, model, limit, projected_input_tokens,
  projected_output_tokens, projected_cost_usd, <limit>: value}``; in an ``agent_loop``,
  ``total_budget_usd`` ends the loop with ``status: "budget_exhausted"`` instead.

Projections: prompt tokens are estimated as characters / 4 (rounded up) over the system
prompt, the message texts and the offered tool schemas (the estimate ``estimate_tokens``
uses; no tokenizer file is needed offline); output tokens are the request's
``max_tokens`` (else the provider default, :data:`DEFAULT_OUTPUT_TOKENS`). The projected
cost prices both at the model's catalog prices; a model without prices costs 0.

Prompt-cache accounting (:func:`cache_usage`): ``cache_creation_input_tokens`` (Anthropic's
name for ``cache_write_tokens``), ``cache_hit_ratio`` (cache reads over all prompt tokens)
and ``cache_savings_usd`` (what cache reads saved against the full input price, minus the
extra that cache writes cost), ``served_fast`` (always false: no fast tier is requested).

State (the session totals and the budget) lives on the runtime as
``runtime.llm_session_state`` — plain JSON data — and program snapshots carry it (runtime
state section ``llm_session``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.llm import catalog
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin

STATE_ATTR = "llm_session_state"
#: Projected output tokens of a request without ``max_tokens`` (Anthropic's default here).
DEFAULT_OUTPUT_TOKENS = 8192
BUDGET_EXCEEDED = "budget_exceeded"
_COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _fresh() -> dict[str, Any]:
    return {
        "budget_usd": None,
        "total_cost": 0.0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "call_count": 0,
    }


def state(runtime: Any) -> dict[str, Any]:
    """The runtime's session record ``{budget_usd, total_cost, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, call_count}`` (created on first use)."""
    st = getattr(runtime, STATE_ATTR, None)
    if st is None:
        st = _fresh()
        setattr(runtime, STATE_ATTR, st)
    return st  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- pricing


def _prompt_includes_cache(provider: str) -> bool:
    """Whether ``provider`` counts cached prompt tokens inside ``input_tokens`` (OpenAI's
    ``prompt_tokens`` does; Anthropic reports them apart)."""
    entry = catalog.provider_config(provider) if provider else None
    return entry is not None and entry.get("family") == "openai"


def response_cost(model: str, provider: str, usage: Any) -> float:
    """The cost in USD of one answer's ``usage`` (a :class:`harnpy.llm.types.Usage`):
    cache reads and writes at their own prices when the catalog has them."""
    inp = usage.input_tokens
    if _prompt_includes_cache(provider):
        inp = max(0, inp - usage.cache_read_tokens)
    return catalog.cost_usd(
        model,
        inp,
        usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def cache_usage(model: str, provider: str, usage: Any) -> dict[str, Any]:
    """``{cache_creation_input_tokens, cache_hit_ratio, cache_savings_usd, served_fast}``
    of one answer (see the module docstring); the ratio is 0.0 without prompt tokens."""
    read, write = usage.cache_read_tokens, usage.cache_write_tokens
    if _prompt_includes_cache(provider):
        prompt = usage.input_tokens
    else:
        prompt = usage.input_tokens + read + write
    ratio = read / prompt if prompt > 0 else 0.0
    savings = 0.0
    prices = catalog.pricing(model)
    if prices is not None:
        full = prices.get("input_per_mtok", 0.0)
        savings = read * (full - prices.get("cached_input_per_mtok", full))
        savings -= write * (prices.get("cache_write_per_mtok", full) - full)
        savings /= 1_000_000
    return {
        "cache_creation_input_tokens": write,
        "cache_hit_ratio": ratio,
        "cache_savings_usd": savings,
        "served_fast": False,
    }


def record(runtime: Any, response: Any) -> None:
    """Add one model answer (an :class:`~harnpy.llm.types.LlmResponse`) to the session
    totals."""
    st = state(runtime)
    usage = response.usage
    st["total_cost"] += response_cost(response.model, response.provider, usage)
    for key in _COUNTERS:
        st[key] += getattr(usage, key)
    st["call_count"] += 1


class _Recorder:
    """The LLM-answer listener that feeds :func:`record` (one per runtime)."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def __call__(self, response: Any) -> None:
        record(self.runtime, response)


def install(runtime: Any) -> None:
    """Make the runtime's LLM host report every answer to :func:`record` (idempotent;
    called before each request is submitted)."""
    from harnpy.lifecycle.services import services

    listeners = services(runtime).llm_listeners
    if not any(type(listener) is _Recorder for listener in listeners):
        listeners.append(_Recorder(runtime))


# ----------------------------------------------------------------------------- preflight


def estimate_request_tokens(request: Any) -> int:
    """Estimated prompt tokens of a request: characters / 4, rounded up, of its system
    prompt, message texts (tool calls as JSON) and offered tool schemas."""
    chars = len(request.system or "")
    for m in request.messages:
        chars += len(m.text())
        for tc in m.tool_calls:
            chars += len(tc.name) + len(json.dumps(tc.arguments, default=str))
    for t in request.native_tools():
        chars += len(t.name) + len(t.description) + len(json.dumps(t.parameters, default=str))
    return math.ceil(chars / 4)


def _priced_model(request: Any) -> str:
    """The model whose prices a request is projected with (the provider default when the
    request names none)."""
    if request.model:
        return str(catalog.resolve_model(request.model)["id"])
    defaults = catalog.bundled().get("qc_defaults", {}).get(request.provider or "", {})
    return str(defaults.get("model") or "")


def projection(request: Any) -> dict[str, Any]:
    """``{projected_input_tokens, projected_output_tokens, projected_cost_usd}`` of a
    request (module docstring)."""
    model = _priced_model(request)
    inp = estimate_request_tokens(request)
    out = request.max_tokens if request.max_tokens is not None else DEFAULT_OUTPUT_TOKENS
    return {
        "projected_input_tokens": inp,
        "projected_output_tokens": out,
        "projected_cost_usd": catalog.cost_usd(model, inp, out),
    }


def _envelope(request: Any, message: str, **extra: Any) -> dict[str, Any]:
    try:
        from harnpy.llm.errors import llm_error_envelope  # type: ignore[attr-defined]
    except ImportError:  # stand-in until the shared envelope builder lands
        return {
            "kind": "terminal",
            "reason": BUDGET_EXCEEDED,
            "category": BUDGET_EXCEEDED,
            "message": f"budget exceeded: {message}",
            "provider": request.provider,
            "model": request.model,
            **extra,
        }
    return llm_error_envelope(  # type: ignore[no-any-return]
        BUDGET_EXCEEDED,
        f"budget exceeded: {message}",
        provider=request.provider,
        model=request.model,
        kind="terminal",
        reason=BUDGET_EXCEEDED,
        **extra,
    )


def check(runtime: Any, request: Any) -> dict[str, Any] | None:
    """The error envelope of the first budget limit ``request`` would exceed, else None.

    Checked in order: the ``budget`` option's ``max_input_tokens``, ``max_output_tokens``
    (against the request's ``max_tokens``), ``max_cost_usd``, ``total_budget_usd`` (with
    the ``spent_usd`` an agent loop has already spent), then the session budget of
    ``llm_budget`` (limit ``llm_budget``, against the session's spend so far).
    """
    budget = request.budget or {}
    st = getattr(runtime, STATE_ATTR, None)
    session_budget = None if st is None else st.get("budget_usd")
    if not budget and session_budget is None:
        return None
    proj = projection(request)
    cost = proj["projected_cost_usd"]
    limit = budget.get("max_input_tokens")
    if limit is not None and proj["projected_input_tokens"] > limit:
        return _envelope(
            request,
            f"estimated {proj['projected_input_tokens']} input tokens exceed "
            f"max_input_tokens {limit}",
            limit="max_input_tokens",
            max_input_tokens=limit,
            **proj,
        )
    limit = budget.get("max_output_tokens")
    if limit is not None and request.max_tokens is not None and request.max_tokens > limit:
        return _envelope(
            request,
            f"max_tokens {request.max_tokens} exceeds max_output_tokens {limit}",
            limit="max_output_tokens",
            max_output_tokens=limit,
            **proj,
        )
    limit = budget.get("max_cost_usd")
    if limit is not None and cost > limit:
        return _envelope(
            request,
            f"projected cost ${cost:.6f} exceeds max_cost_usd ${limit}",
            limit="max_cost_usd",
            max_cost_usd=limit,
            **proj,
        )
    limit = budget.get("total_budget_usd")
    spent = float(budget.get("spent_usd") or 0.0)
    if limit is not None and spent + cost > limit:
        return _envelope(
            request,
            f"spent ${spent:.6f} plus the projected ${cost:.6f} exceed total_budget_usd ${limit}",
            limit="total_budget_usd",
            total_budget_usd=limit,
            spent_usd=spent,
            **proj,
        )
    if session_budget is not None and st is not None:
        spent = st["total_cost"]
        if spent + cost > session_budget:
            return _envelope(
                request,
                f"session spend ${spent:.6f} plus the projected ${cost:.6f} exceed the "
                f"llm_budget ${session_budget}",
                limit="llm_budget",
                llm_budget=session_budget,
                spent_usd=spent,
                **proj,
            )
    return None


def preflight(runtime: Any, request: Any) -> None:
    """Check ``request`` against its budgets (:func:`check`) before it is submitted and
    make sure its answer is counted (:func:`install`).

    Raises:
        HarnThrow: the budget error envelope (module docstring).
    """
    install(runtime)
    envelope = check(runtime, request)
    if envelope is not None:
        raise HarnThrow(envelope)


def loop_spent_usd(st: dict[str, Any]) -> float:
    """What an agent loop state has spent so far (its token counters at its model's
    prices)."""
    model = st.get("model") or (st.get("llm_options") or {}).get("model") or ""
    return catalog.cost_usd(str(model), st.get("input_tokens", 0), st.get("output_tokens", 0))


def loop_options(opts: dict[str, Any], st: dict[str, Any]) -> dict[str, Any]:
    """An agent turn's call options with the loop's spend so far in ``budget.spent_usd``
    (when the loop has a ``total_budget_usd``)."""
    budget = opts.get("budget")
    if type(budget) is not dict or budget.get("total_budget_usd") is None:
        return opts
    return {**opts, "budget": {**budget, "spent_usd": loop_spent_usd(st)}}


def is_loop_budget_error(err: Any) -> bool:
    """True for the envelope of an exceeded ``total_budget_usd`` (an agent loop then ends
    with ``status: "budget_exhausted"``)."""
    return (
        type(err) is dict
        and err.get("category") == BUDGET_EXCEEDED
        and err.get("limit") == "total_budget_usd"
    )


# ----------------------------------------------------------------------------- builtins


def _count(v: Any, where: str, what: str) -> int:
    if type(v) is not int or v < 0:
        raise thrown(f"{where}: {what} must be a non-negative int, got {display(v)}")
    return v


@builtin("llm_cost")
def llm_cost(
    thread: Any, model: Any = None, input_tokens: Any = None, output_tokens: Any = None
) -> float:
    """``llm_cost(model, input_tokens, output_tokens) -> float``: the estimated cost in USD
    of a call with these token counts at the catalog prices of ``model`` (a model id,
    dated id or alias); 0.0 for a model without prices. Throws for a non-string model or
    a negative / non-int count."""
    if type(model) is not str:
        raise thrown(f"llm_cost: model must be a string, got {display(model)}")
    inp = _count(input_tokens, "llm_cost", "input_tokens")
    out = _count(output_tokens, "llm_cost", "output_tokens")
    return catalog.cost_usd(model, inp, out)


@builtin("llm_session_cost")
def llm_session_cost(thread: Any) -> dict[str, Any]:
    """``llm_session_cost() -> {total_cost, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens, call_count}``: the totals of every model answer of this run
    (``total_cost`` in USD at catalog prices)."""
    st = state(thread.runtime)
    return {k: st[k] for k in ("total_cost", *_COUNTERS, "call_count")}


@builtin("llm_budget")
def llm_budget(thread: Any, usd: Any = None) -> None:
    """``llm_budget(max_cost_usd)``: set the session budget in USD (nil removes it). A
    later model call whose projected cost would take the session spend past it throws the
    terminal ``budget_exceeded`` envelope (``limit: "llm_budget"``). Throws for a negative
    or non-number amount."""
    if usd is not None and (type(usd) not in (int, float) or usd < 0 or math.isnan(usd)):
        raise thrown(f"llm_budget: the budget must be a non-negative number, got {display(usd)}")
    state(thread.runtime)["budget_usd"] = None if usd is None else float(usd)


@builtin("llm_budget_remaining")
def llm_budget_remaining(thread: Any) -> float | None:
    """``llm_budget_remaining() -> float | nil``: the session budget minus the session
    spend (never below 0.0), or nil when no budget is set."""
    st = state(thread.runtime)
    if st["budget_usd"] is None:
        return None
    return max(0.0, st["budget_usd"] - st["total_cost"])


@builtin("llm_budget_clear")
def llm_budget_clear(thread: Any) -> None:
    """``llm_budget_clear()``: remove the session budget (the spend totals stay)."""
    state(thread.runtime)["budget_usd"] = None


# ----------------------------------------------------------------------------- snapshots


def _save(thread: Any) -> Any:
    st = getattr(thread.runtime, STATE_ATTR, None)
    if st is None or st == _fresh():
        return None
    return dict(st)


def _load(thread: Any, data: Any) -> Any:
    if type(data) is not dict or set(data) != set(_fresh()):
        raise TypeError("llm_session state must be {budget_usd, total_cost, counters}")
    if data["budget_usd"] is not None and type(data["budget_usd"]) not in (int, float):
        raise TypeError("llm_session budget_usd must be a number or nil")
    if type(data["total_cost"]) not in (int, float):
        raise TypeError("llm_session total_cost must be a number")
    for key in (*_COUNTERS, "call_count"):
        if type(data[key]) is not int:
            raise TypeError(f"llm_session {key} must be an int")
    rt = thread.runtime
    return lambda: setattr(rt, STATE_ATTR, dict(data))


register_state("llm_session", _save, _load)
