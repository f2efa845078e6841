"""Tool search: deferred tools (``defer_loading: true``) found on demand.

The ``tool_search`` option of ``llm_call`` and ``agent_loop`` is ``{mode?: "auto" |
"client" | "native", variant?: "bm25" | "regex", name?, budget_tokens?, max_results?}``
(``tool_search: true`` means ``{}``). Deferred tools are not offered up front; how they
are found depends on the mode:

* ``client``: the model gets a synthetic search tool (default name
  ``__harn_tool_search``, argument ``query``) next to the non-deferred tools. When it
  calls it, harnpy searches the deferred tools in-process — ``bm25`` (Okapi BM25 over
  each tool's name words, description and parameter names) or ``regex`` (a
  case-insensitive RE2 pattern over name and description, no backreferences or
  lookaround) — answers with the matching names and *promotes* them: from the next turn
  they are offered like any other tool. With ``budget_tokens`` the promoted tools'
  schemas (estimated at 4 characters a token) must fit the budget; the oldest promotions
  are evicted first. Each search records a ``tool_search_query`` and a
  ``tool_search_result`` transcript event (``metadata.mode: "client"``, ``strategy``,
  ``query: {query}``, ``promoted``, ``evicted``). The system prompt lists the tools on
  offer and says how to find the others.
* ``native``: the provider searches. The request carries the provider's own payload: for
  the OpenAI family a ``{type: "tool_search", mode: "hosted", namespaces}`` meta-tool in
  slot 0 followed by ``{type: "function", function, defer_loading, namespace}`` tools; for
  Anthropic a ``tool_search_tool_<variant>`` tool followed by ``{name, description,
  input_schema, defer_loading}`` tools. It needs a (provider, model) pair whose
  capabilities list a tool-search variant (``provider_capabilities``), or the override
  ``<provider>: {force_native_tool_search: true}`` in the options (for gateways whose
  model ids the catalog cannot parse); otherwise the call throws, pointing at ``mode:
  "client"``. The mock provider records the payload; harnpy's OpenAI and Anthropic clients
  do not send it yet (they refuse with a config error).
* ``auto`` (default): native when the pair supports it, else client.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

DEFAULT_NAME = "__harn_tool_search"
MODES = ("auto", "client", "native")
VARIANTS = ("bm25", "regex")
DEFAULT_MAX_RESULTS = 5


def parse_config(raw: Any, where: str) -> dict[str, Any] | None:
    """The normalized ``tool_search`` option, or None when it is absent/false.

    Raises:
        HarnThrow: unknown mode or variant, a non-string name, a bad budget.
    """
    if raw is None or raw is False:
        return None
    if raw is True:
        raw = {}
    if type(raw) is not dict:
        raise thrown(f"{where}: tool_search must be a dict or true, got {display(raw)}")
    mode = raw.get("mode", "auto")
    if mode not in MODES:
        raise thrown(
            f'{where}: tool_search.mode must be "auto", "client" or "native", got {display(mode)}'
        )
    variant = raw.get("variant", raw.get("strategy", "bm25"))
    if variant not in VARIANTS:
        raise thrown(
            f'{where}: tool_search.variant must be "bm25" or "regex", got {display(variant)}'
        )
    name = raw.get("name", DEFAULT_NAME)
    if type(name) is not str or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
        raise thrown(f"{where}: tool_search.name must be a tool name, got {display(name)}")
    budget = raw.get("budget_tokens")
    if budget is not None and (type(budget) is not int or budget < 1):
        raise thrown(f"{where}: tool_search.budget_tokens must be a positive int")
    max_results = raw.get("max_results", DEFAULT_MAX_RESULTS)
    if type(max_results) is not int or max_results < 1:
        raise thrown(f"{where}: tool_search.max_results must be a positive int")
    return {
        "mode": mode,
        "variant": variant,
        "name": name,
        "budget_tokens": budget,
        "max_results": max_results,
    }


def _entries(tools: Any) -> list[dict[str, Any]]:
    if type(tools) is dict and type(tools.get("tools")) is list:
        tools = tools["tools"]
    return [t for t in tools or [] if type(t) is dict and type(t.get("name")) is str]


def is_deferred(entry: dict[str, Any]) -> bool:
    """True for a tool entry declared with ``defer_loading: true``."""
    return entry.get("defer_loading") is True


# ----------------------------------------------------------------------------- native


def native_family(provider: str, model: str | None, options: dict[str, Any]) -> str | None:
    """``"openai"`` / ``"anthropic"`` when the pair has native tool search (or the
    ``force_native_tool_search`` override is set for the provider), else None."""
    from harnpy.llm import catalog

    caps = catalog.capabilities(provider, model)
    override = options.get(provider)
    forced = type(override) is dict and override.get("force_native_tool_search") is True
    if caps.get("tool_search"):
        fam = caps.get("family")
        return "anthropic" if fam == "anthropic" else "openai"
    if forced:
        return "anthropic" if caps.get("family") == "anthropic" else "openai"
    return None


def _route(options: dict[str, Any]) -> tuple[str, str | None]:
    import os

    from harnpy.llm import LlmError
    from harnpy.llm.routing import resolve_route

    try:
        r = resolve_route(options, os.environ)
    except LlmError:
        return str(options.get("provider") or "unknown"), options.get("model")
    return r.provider, r.model


def native_payload(
    family: str, config: dict[str, Any], entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The provider-shaped tools array with the search meta-tool first."""
    from harnpy.lifecycle.tools import json_schema

    out: list[dict[str, Any]] = []
    if family == "openai":
        namespaces = sorted({e["namespace"] for e in entries if type(e.get("namespace")) is str})
        meta: dict[str, Any] = {"type": "tool_search", "mode": "hosted"}
        if namespaces:
            meta["namespaces"] = namespaces
        out.append(meta)
        for e in entries:
            tool: dict[str, Any] = {
                "type": "function",
                "function": {
                    "name": e["name"],
                    "description": e.get("description") or "",
                    "parameters": json_schema(e),
                },
                "defer_loading": is_deferred(e),
            }
            if type(e.get("namespace")) is str:
                tool["namespace"] = e["namespace"]
            out.append(tool)
        return out
    variant = config["variant"]
    out.append(
        {"type": f"tool_search_tool_{variant}_20251119", "name": f"tool_search_tool_{variant}"}
    )
    for e in entries:
        out.append(
            {
                "name": e["name"],
                "description": e.get("description") or "",
                "input_schema": json_schema(e),
                "defer_loading": is_deferred(e),
            }
        )
    return out


def plan_call(options: dict[str, Any], where: str) -> dict[str, Any] | None:
    """For an ``llm_call`` / loop turn with ``tool_search``: ``{mode: "native", payload}``
    or ``{mode: "client", config}``; None without the option.

    Raises:
        HarnThrow: ``mode: "native"`` on a pair without native tool search.
    """
    config = parse_config(options.get("tool_search"), where)
    if config is None:
        return None
    provider, model = _route(options)
    family = native_family(provider, model, options) if config["mode"] != "client" else None
    if family is None and config["mode"] == "native":
        raise thrown(
            f'{where}: tool_search mode: "native" was requested, but provider "{provider}" with '
            f'model "{model}" does not expose native tool search; use mode: "client" (or '
            '"auto") to run the search in harnpy instead'
        )
    if family is not None:
        return {
            "mode": "native",
            "payload": native_payload(family, config, _entries(options.get("tools"))),
        }
    return {"mode": "client", "config": config}


# ----------------------------------------------------------------------------- client


def synthetic_entry(config: dict[str, Any]) -> dict[str, Any]:
    """The search tool the model calls in client mode."""
    how = (
        "a regular expression (case-insensitive) matched against tool names and descriptions"
        if config["variant"] == "regex"
        else "keywords describing the capability you need"
    )
    return {
        "name": config["name"],
        "description": f"Search for more tools. Pass `query`: {how}. Matching tools become "
        "available on your next turn.",
        "parameters": {"query": {"type": "string", "description": "what to search for"}},
        "executor": "harn",
        "handler": None,
    }


def tool_tokens(entry: dict[str, Any]) -> int:
    """Estimated tokens of a tool's schema (4 characters a token)."""
    from harnpy.lifecycle.tools import json_schema

    text = json.dumps(
        {
            "name": entry["name"],
            "description": entry.get("description") or "",
            "parameters": json_schema(entry),
        }
    )
    return max(1, (len(text) + 3) // 4)


def offered(entries: list[dict[str, Any]], state: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The tools offered this turn: non-deferred and promoted ones, then the search tool."""
    if state is None:
        return entries
    promoted = set(state["promoted"])
    out = [e for e in entries if not is_deferred(e)]
    # promoted tools are offered like the others (copies without the deferral flag)
    out += [
        {**e, "defer_loading": False} for e in entries if is_deferred(e) and e["name"] in promoted
    ]
    return [*out, synthetic_entry(state["config"])]


def system_text(entries: list[dict[str, Any]], state: dict[str, Any]) -> str:
    """The system-prompt section listing the offered tools and the search tool."""
    lines = ["## Tools", "You can call these tools:"]
    for e in offered(entries, state):
        lines.append(f"- {e['name']}: {e.get('description') or ''}".rstrip())
    hidden = len([e for e in entries if is_deferred(e) and e["name"] not in state["promoted"]])
    if hidden:
        lines.append(
            f"{hidden} more tool(s) are available on demand: call {state['config']['name']} "
            "with a query to find them."
        )
    return "\n".join(lines)


_WORDS = re.compile(r"[a-z0-9]+")


def _doc_words(e: dict[str, Any]) -> list[str]:
    params = e.get("parameters")
    pnames = list(params.get("properties", params)) if type(params) is dict else []
    text = " ".join(
        [e["name"].replace("_", " "), e.get("description") or "", " ".join(map(str, pnames))]
    )
    return _WORDS.findall(text.lower())


def bm25(
    query: str, docs: list[dict[str, Any]], k1: float = 1.2, b: float = 0.75
) -> list[tuple[float, str]]:
    """``(score, name)`` of the documents matching ``query`` (score > 0), best first."""
    terms = _WORDS.findall(query.lower())
    words = [_doc_words(d) for d in docs]
    n = len(docs)
    avg = (sum(len(w) for w in words) / n) if n else 0.0
    out = []
    for d, w in zip(docs, words):
        score = 0.0
        for t in set(terms):
            tf = w.count(t)
            if not tf:
                continue
            df = sum(1 for other in words if t in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(w) / (avg or 1)))
        if score > 0:
            out.append((score, d["name"]))
    return sorted(out, key=lambda p: -p[0])


def regex_search(pattern: str, docs: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """``(1.0, name)`` of the documents whose name or description the RE2 pattern matches.

    Raises:
        HarnThrow: an invalid pattern (RE2 syntax: no backreferences or lookaround).
    """
    import re2

    try:
        rx = re2.compile("(?i)" + pattern)
    except re2.error as exc:
        raise thrown(f"tool_search: invalid regex {pattern!r}: {exc}") from None
    return [
        (1.0, d["name"])
        for d in docs
        if rx.search(d["name"]) or rx.search(d.get("description") or "")
    ]


def loop_state(options: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``tool_search`` part of an agent-loop state (client mode only), or None."""
    plan = plan_call({**options, "tools": entries}, "agent_loop")
    if plan is None or plan["mode"] != "client":
        return None
    return {"config": plan["config"], "promoted": []}


def run_search(
    entries: list[dict[str, Any]], state: dict[str, Any], query: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One client-mode search: ``(new state, outcome)`` where outcome is ``{content,
    matches, promoted, evicted}`` (``content`` is what the model reads)."""
    config = state["config"]
    deferred = [e for e in entries if is_deferred(e)]
    q = query if type(query) is str else display(query)
    if config["variant"] == "regex":
        hits = regex_search(q, deferred)
    else:
        hits = bm25(q, deferred)
    names = [n for _, n in hits[: config["max_results"]]]
    promoted = [p for p in state["promoted"] if p not in names] + names
    evicted: list[str] = []
    budget = config.get("budget_tokens")
    if budget is not None:
        by_name = {e["name"]: e for e in deferred}
        while promoted and sum(tool_tokens(by_name[p]) for p in promoted if p in by_name) > budget:
            evicted.append(promoted.pop(0))
            if len(promoted) == 1:
                break
    if names:
        content = "Found tools (available from your next turn): " + ", ".join(names)
    else:
        content = f"No tools matched {q!r}."
    outcome = {
        "content": content,
        "matches": names,
        "promoted": [n for n in names if n in promoted],
        "evicted": evicted,
    }
    return {**state, "promoted": promoted}, outcome


@builtin("tool_search_run")
def tool_search_run(
    thread: Any, tools: Any = None, query: Any = None, options: Any = None
) -> list[str]:
    """``tool_search_run(registry, query, {variant?: "bm25" | "regex", max_results?}) ->
    [name]``: search a registry's deferred tools the way client-mode tool search does
    (best match first)."""
    cfg = parse_config(options if type(options) is dict else {}, "tool_search_run") or {}
    if type(query) is not str:
        raise thrown(f"tool_search_run: query must be a string, got {display(query)}")
    deferred = [e for e in _entries(tools) if is_deferred(e)]
    hits = regex_search(query, deferred) if cfg.get("variant") == "regex" else bm25(query, deferred)
    return [n for _, n in hits[: cfg.get("max_results", DEFAULT_MAX_RESULTS)]]


@builtin("__tool_search_pending")
def tool_search_pending(thread: Any, args: Any = None) -> None:
    """``__tool_search_pending(args)``: the handler of the synthetic search tool (the
    search itself runs when the loop records the call, against the loop's current
    state)."""
    return None


def prepare_search(call: dict[str, Any]) -> dict[str, Any]:
    """The loop's decision for a call of the synthetic search tool: dispatch (the result
    is computed by :func:`apply_search` when the call is recorded)."""
    from harnpy.stdlib.registry import BUILTINS

    args = call.get("arguments")
    if type(args) is not dict:
        args = {}
    return {
        "name": call.get("name"),
        "id": call.get("id"),
        "args": args,
        "action": "dispatch",
        "handler": BUILTINS["__tool_search_pending"],
        "positional": False,
        "argv": [],
        "tool_search": True,
    }


def apply_search(st: dict[str, Any], prep: dict[str, Any], emit: Any) -> tuple[dict[str, Any], str]:
    """Run one client-mode search for a loop: ``(state with the promotions and the two
    transcript events, the tool result text)``. ``emit(transcript, event)`` appends an
    event (and mirrors it to the session log)."""
    state = st["tool_search"]
    query = (prep.get("args") or {}).get("query", "")
    try:
        new_state, outcome = run_search(st["tools"], state, query)
    except Exception as exc:  # noqa: BLE001 - a bad pattern is the model's error to see
        return st, f"Error: {getattr(exc, 'value', exc)}"
    strategy = state["config"]["variant"]
    base = {"mode": "client", "strategy": strategy, "tool_use_id": prep.get("id")}
    t = emit(
        st["transcript"],
        {"kind": "tool_search_query", "metadata": {**base, "query": {"query": query}}},
    )
    t = emit(
        t,
        {
            "kind": "tool_search_result",
            "metadata": {
                **base,
                "matches": outcome["matches"],
                "promoted": outcome["promoted"],
                "evicted": outcome["evicted"],
            },
        },
    )
    return {**st, "tool_search": new_state, "transcript": t}, outcome["content"]


def apply_to_request(request: Any, options: dict[str, Any], where: str) -> Any:
    """The request of an ``llm_call`` (or native-mode loop turn) with ``tool_search``
    applied: the native payload attached, or (client mode) the deferred tools replaced by
    the synthetic search tool.

    Raises:
        HarnThrow: see :func:`plan_call`.
    """
    import attrs

    from harnpy.llm import ToolSpec

    plan = plan_call(options, where)
    if plan is None:
        return request
    if plan["mode"] == "native":
        return attrs.evolve(request, tool_payload=plan["payload"])
    entries = offered(_entries(options.get("tools")), {"config": plan["config"], "promoted": []})
    from harnpy.lifecycle.tools import json_schema

    specs = [
        ToolSpec(name=e["name"], description=e.get("description") or "", parameters=json_schema(e))
        for e in entries
    ]
    return attrs.evolve(request, tools=specs)
