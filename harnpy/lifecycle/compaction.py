"""Context-size helpers and transcript compaction (Harn ``llm/agent_loop.md``, "Agent-loop
compaction"; ``builtins.md``, transcript lifecycle).

* ``estimate_tokens(messages)``: the characters of the messages' contents / 4 (the usual
  rough estimate; no tokenizer).
* ``microcompact(text, max_chars)``: a text over ``max_chars`` characters keeps its head
  and tail with a ``[... N chars snipped ...]`` marker between them.
* ``transcript_auto_compact(messages, options?)``: the agent-loop compaction pipeline over
  a message list: the older messages (all but ``keep_last``, default 12) are replaced by one
  user message ``[auto-compacted N older messages]`` followed by their summary. Strategies
  (``compact_strategy`` / ``strategy``): ``truncate`` (a deterministic digest of the older
  messages, the default), ``observation_mask`` (the digest with long tool / user outputs
  masked to their first line), ``custom`` (``compact_callback(archived)`` returns a string
  or ``{summary}``; runs as an ordinary Harn call), ``llm`` (asks the model named by
  ``provider`` / ``model`` for the summary; the default when a ``provider`` is given).

The Harn side (the callback and the model call) lives in ``std/agent/_compact``; the
builtin pushes it as a frame of the calling thread, so nothing here holds state.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import require_instruction_call, thrown
from harnpy.lifecycle.transcript import content_text, is_transcript
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.stdlib.registry import builtin

DEFAULT_KEEP_LAST = 12
MASK_OVER_CHARS = 200
STRATEGIES = ("truncate", "observation_mask", "custom", "llm")
COMPACT_MODULE = "std/agent/_compact"


def estimate(messages: Any) -> int:
    """Estimated tokens of a message list, a transcript or a string (characters / 4)."""
    if is_transcript(messages):
        messages = messages.get("messages") or []
    if type(messages) is str:
        return len(messages) // 4
    if type(messages) is not list:
        return 0
    chars = 0
    for m in messages:
        if type(m) is dict:
            chars += len(content_text(m.get("content")))
        elif type(m) is str:
            chars += len(m)
    return chars // 4


def snip(text: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars`` characters around a ``snipped`` marker."""
    if len(text) <= max_chars:
        return text
    keep = max(0, max_chars // 2)
    dropped = len(text) - 2 * keep
    return f"{text[:keep]}\n[... {dropped} chars snipped ...]\n{text[len(text) - keep :]}"


@builtin("estimate_tokens")
def estimate_tokens(thread: Any, messages: Any = None) -> int:
    """``estimate_tokens(messages)``: estimated tokens (content characters / 4) of a
    message list, a transcript or a string; 0 for anything else."""
    return estimate(messages)


@builtin("microcompact")
def microcompact(thread: Any, text: Any = None, max_chars: Any = None) -> str:
    """``microcompact(text, max_chars)``: ``text`` unchanged when it has at most
    ``max_chars`` characters (default 20,000), else its head and tail joined by ``[... N
    chars snipped ...]``. Throws for a non-string text or a negative ``max_chars``."""
    if type(text) is not str:
        raise thrown(f"microcompact: text must be a string, got {display(text)}")
    limit = 20000 if max_chars is None else max_chars
    if type(limit) is not int or limit < 0:
        raise thrown("microcompact: max_chars must be a non-negative int")
    return snip(text, limit)


def _role(m: Any) -> Any:
    return m.get("role") if type(m) is dict else None


def digest(messages: list[Any], mask: bool) -> str:
    """A deterministic summary of ``messages``: one ``role: text`` line each (cut to 160
    characters; with ``mask``, an output over 200 characters is masked to its first
    line)."""
    lines = []
    for m in messages:
        if type(m) is not dict:
            continue
        text = content_text(m.get("content"))
        if mask and m.get("role") in ("tool", "user") and len(text) > MASK_OVER_CHARS:
            first = text.split("\n", 1)[0]
            text = f"{first} [output masked: {len(text)} chars]"
        elif len(text) > 160:
            text = text[:157] + "..."
        lines.append(f"- {m.get('role')}: {text}")
    return "\n".join(lines)


@builtin("__compact_plan")
def compact_plan(thread: Any, messages: Any = None, options: Any = None) -> dict[str, Any]:
    """``__compact_plan(messages, options)``: ``{strategy, first, archived, kept,
    summary?}`` — the split of ``messages`` (``first``: the ``keep_first`` leading messages
    kept verbatim before the summary, default none; ``kept``: the ``keep_last`` trailing
    ones) and, for ``truncate`` / ``observation_mask``, the summary
    (``std/agent/_compact`` finishes ``custom`` and ``llm``). Throws for a bad option."""
    if is_transcript(messages):
        messages = messages.get("messages") or []
    if type(messages) is not list:
        raise thrown("transcript_auto_compact: messages must be a list of messages")
    opts = options if type(options) is dict else {}
    if options is not None and type(options) is not dict:
        raise thrown("transcript_auto_compact: options must be a dict")
    keep = opts.get("keep_last", opts.get("compact_keep_last", DEFAULT_KEEP_LAST))
    if type(keep) is not int or keep < 0:
        raise thrown("transcript_auto_compact: keep_last must be a non-negative int")
    first = opts.get("keep_first", opts.get("compact_keep_first", 0))
    if first is None:
        first = 0
    if type(first) is not int or first < 0:
        raise thrown("transcript_auto_compact: keep_first must be a non-negative int")
    strategy = opts.get("compact_strategy", opts.get("strategy"))
    if strategy is None:
        strategy = "llm" if opts.get("provider") is not None else "truncate"
    if strategy not in STRATEGIES:
        raise thrown(
            f"transcript_auto_compact: unknown compact_strategy {display(strategy)}; expected "
            + ", ".join(STRATEGIES)
        )
    if strategy == "custom" and opts.get("compact_callback") is None:
        raise thrown('transcript_auto_compact: compact_strategy "custom" needs compact_callback')
    first = min(first, len(messages))
    while first < len(messages) and _role(messages[first]) == "tool":
        first += 1  # a kept assistant message keeps the tool results it called for
    cut = max(first, len(messages) - keep)
    while first < cut < len(messages) and _role(messages[cut]) == "tool":
        cut -= 1  # a tool result stays with the assistant message that called it
    head, archived, kept = messages[:first], messages[first:cut], messages[cut:]
    plan: dict[str, Any] = {
        "strategy": strategy,
        "first": head,
        "archived": archived,
        "kept": kept,
    }
    if strategy in ("truncate", "observation_mask"):
        plan["summary"] = digest(archived, strategy == "observation_mask")
    return plan


@builtin("__compact_join")
def compact_join(thread: Any, plan: Any = None, summary: Any = None) -> list[Any]:
    """``__compact_join(plan, summary)``: the compacted message list — one user message
    ``[auto-compacted N older messages]`` with ``summary`` (a string, or a dict's
    ``summary``), then the kept messages — after the plan's ``first`` messages; the list
    unchanged when nothing was archived."""
    if type(plan) is not dict:
        raise runtime_error("internal: __compact_join needs a plan")
    first = plan.get("first") or []
    archived, kept = plan.get("archived") or [], plan.get("kept") or []
    if not archived:
        return [*first, *kept]
    text = summary if type(summary) is str else ("" if summary is None else display(summary))
    head = f"[auto-compacted {len(archived)} older messages]"
    return [*first, {"role": "user", "content": f"{head}\n{text}" if text else head}, *kept]


@builtin("transcript_auto_compact", control=True)
def transcript_auto_compact(thread: Any, messages: Any = None, options: Any = None) -> Any:
    """``transcript_auto_compact(messages, options?)``: the message list with all but the
    first ``keep_first`` (default 0) and the last ``keep_last`` (default 12) messages
    folded into one ``[auto-compacted N older messages]`` user message (module docstring: strategies ``truncate``,
    ``observation_mask``, ``custom`` with ``compact_callback``, ``llm`` with ``provider``).
    Throws for a bad option; a failing callback or model call propagates."""
    require_instruction_call(thread, "transcript_auto_compact")
    from harnpy.lifecycle._common import push_call

    push_call(
        thread, std_function(thread.runtime, COMPACT_MODULE, "__auto_compact"), [messages, options]
    )
    return None


def std_function(runtime: Any, module: str, name: str) -> Any:
    """The closure ``name`` defined at the top level of the bundled std module ``module``
    (loaded on first use, like an import).

    Raises:
        HarnRuntimeError: the module has no such function (an internal error).
    """
    from harnpy.runtime.modules import resolve_import

    mod = runtime.modules.get(module)
    if mod is None:
        key, path = resolve_import(module, None)  # type: ignore[arg-type]
        mod = runtime.import_module(key, path)
    fn = mod.globals.get(name)
    if fn is None:
        raise runtime_error(f"internal: {module} has no function {name}")
    return fn


# ------------------------------------------------------------ agent-loop compaction policy

#: Default estimated-token threshold of agent-loop compaction, for a model whose context
#: window the catalog does not know.
DEFAULT_LOOP_THRESHOLD = 96_000
#: Share of the model's context window a loop's context may fill before it compacts: the
#: threshold is lowered to this much of the window (``gpt-4o``'s 128,000 gives 96,000).
WINDOW_SHARE = 0.75


def context_window(model: Any) -> int | None:
    """The context window (tokens) the provider catalog (harnpy/llm/catalog.toml) gives
    for ``model`` (an id, alias or ``provider:id``); None when unknown or not a string."""
    if type(model) is not str or not model.strip():
        return None
    from harnpy.llm import catalog

    entry = catalog.model_entry(catalog.resolve_model(model)["id"])
    window = entry.get("context_window") if entry is not None else None
    return window if type(window) is int and window > 0 else None


def loop_threshold(threshold: int, model: Any) -> tuple[int, int | None]:
    """``(threshold, window)``: the compaction threshold of a loop on ``model`` —
    ``threshold`` (the ``compact_threshold`` option or :data:`DEFAULT_LOOP_THRESHOLD`)
    lowered to :data:`WINDOW_SHARE` of the model's context window when the catalog knows
    it (Harn ``llm/agent_loop.md``: "model-aware") — and that window (None: unknown)."""
    window = context_window(model)
    if window is None:
        return threshold, None
    return min(threshold, int(window * WINDOW_SHARE)), window


#: Loop strategies (Harn ``compaction``) -> the pipeline strategy that runs them.
LOOP_STRATEGIES = {
    "truncate": "truncate",
    "observation_mask": "observation_mask",
    "custom": "custom",
    "llm": "llm",
    "summarize_middle": "llm",
    "summarize_all": "llm",
    "hybrid": "llm",
}


def loop_policy(opts: dict[str, Any], where: str) -> dict[str, Any] | None:
    """The compaction policy of an ``agent_loop`` (None: off): ``compaction`` (``"none"`` /
    ``false`` off, a strategy name, or ``{strategy, keep_last_n}``; default ``hybrid``
    keeping 10), ``auto_compact``, ``compact_threshold`` (estimated tokens; default
    96,000; lowered to 3/4 of the ``model``'s context window when the catalog knows it,
    :func:`loop_threshold`), ``compact_keep_first`` (messages kept verbatim before the
    summary, default 0), ``compact_keep_last``, ``compact_strategy``, ``compact_callback``.

    Raises:
        HarnThrow: for an unknown strategy or a bad number.
    """
    spec = opts.get("compaction")
    if spec is False or spec == "none":
        return None
    strategy: Any = "hybrid"
    keep: Any = 10
    if type(spec) is str:
        strategy = spec
    elif type(spec) is dict:
        strategy = spec.get("strategy", strategy)
        keep = spec.get("keep_last_n", spec.get("keep_last", keep))
    elif spec is not None and spec is not True:
        raise thrown(f"{where}: compaction must be a strategy name, a dict, true or false")
    if opts.get("compact_strategy") is not None:
        strategy = opts["compact_strategy"]
    if opts.get("compact_keep_last") is not None:
        keep = opts["compact_keep_last"]
    if strategy not in LOOP_STRATEGIES:
        raise thrown(
            f"{where}: unknown compaction strategy {display(strategy)}; expected "
            + ", ".join(LOOP_STRATEGIES)
        )
    threshold = opts.get("compact_threshold", DEFAULT_LOOP_THRESHOLD)
    first = opts.get("compact_keep_first", 0)
    if first is None:
        first = 0
    for name, v in (
        ("compact_keep_last", keep),
        ("compact_keep_first", first),
        ("compact_threshold", threshold),
    ):
        if type(v) is not int or v < 0:
            raise thrown(f"{where}: {name} must be a non-negative int")
    threshold, window = loop_threshold(threshold, opts.get("model"))
    engine = LOOP_STRATEGIES[str(strategy)]
    if engine == "custom" and opts.get("compact_callback") is None:
        raise thrown(f'{where}: compaction strategy "custom" needs compact_callback')
    return {
        "strategy": strategy,
        "engine": engine,
        "keep_first": first,
        "keep_last": keep,
        "threshold": threshold,
        "context_window": window,
        "callback": opts.get("compact_callback"),
    }


@builtin("__agent_compaction_plan")
def agent_compaction_plan(thread: Any, st: Any = None) -> Any:
    """``__agent_compaction_plan(st)``: nil when the loop need not compact before its next
    model call, else ``{messages, options, before}`` for ``std/agent/_compact``."""
    if type(st) is not dict:
        return None
    policy = st.get("compaction")
    if type(policy) is not dict or st.get("iteration", 0) >= st.get("max_iterations", 0):
        return None  # off, or no model call follows (the loop ends on its budget)
    msgs = (st.get("transcript") or {}).get("messages") or []
    before = estimate(msgs)
    first = policy.get("keep_first") or 0
    if before <= policy["threshold"] or len(msgs) <= first + policy["keep_last"]:
        return None
    options: dict[str, Any] = {
        "keep_first": first,
        "keep_last": policy["keep_last"],
        "compact_strategy": policy["engine"],
        "compact_callback": policy["callback"],
    }
    llm = st.get("llm_options") or {}
    for key in ("provider", "model", "base_url", "api_key"):
        if llm.get(key) is not None:
            options[key] = llm[key]
    return {"messages": msgs, "options": options, "before": before}


@builtin("__agent_apply_compaction")
def agent_apply_compaction(thread: Any, st: Any = None, plan: Any = None, out: Any = None) -> Any:
    """``__agent_apply_compaction(st, plan, out)``: the state with the compacted messages,
    the transcript ``summary`` and a ``compaction`` event ``{strategy, engine_strategy,
    archived, estimated_tokens_before, estimated_tokens_after}``."""
    from harnpy.lifecycle import loop_trace
    from harnpy.lifecycle.services import services
    from harnpy.lifecycle.transcript import append_event

    if type(st) is not dict or type(out) is not dict or not out.get("archived"):
        return st
    t = st["transcript"]
    msgs = out.get("messages") or []
    summary = out.get("summary")
    t = {
        **t,
        "messages": list(msgs),
        "summary": summary if type(summary) is str else t.get("summary"),
    }
    event = {
        "kind": "compaction",
        "visibility": "internal",
        "strategy": st["compaction"]["strategy"],
        "engine_strategy": out.get("strategy"),
        "archived": out.get("archived"),
        "estimated_tokens_before": plan.get("before") if type(plan) is dict else None,
        "estimated_tokens_after": estimate(msgs),
    }
    t = append_event(t, event)
    loop_trace.compaction(thread.runtime, st, out.get("archived"), summary)
    svc = services(thread.runtime)
    svc.emit_session_event(st.get("session_id"), {"type": "transcript_compacted", **event})
    svc.sessions[st["session_id"]] = t
    return {**st, "transcript": t}


# ------------------------------------------------------------------- transcript_compact

#: ``keep_last`` of ``transcript_compact`` without one.
DEFAULT_TRANSCRIPT_KEEP_LAST = 4
#: ``media_type`` of the archive asset a compaction leaves on the transcript.
ARCHIVE_MEDIA_TYPE = "application/vnd.harn.transcript+json"


def _formatted(messages: list[Any]) -> str:
    return "\n".join(
        f"{m.get('role')}: {content_text(m.get('content'))}" for m in messages if type(m) is dict
    )


def _session_of(runtime: Any, t: dict[str, Any]) -> str | None:
    """The agent session a transcript belongs to: ``metadata.session_id``, else its id when
    that is a session (``agent_session_snapshot`` sets it), else None."""
    from harnpy.lifecycle.services import services

    meta = t.get("metadata") or {}
    sid = meta.get("session_id") if type(meta) is dict else None
    if type(sid) is str:
        return sid
    tid = t.get("id")
    return tid if type(tid) is str and tid in services(runtime).sessions else None


def _prompt_template(thread: Any, path: Any) -> str:
    """The text of a ``summarize_prompt`` template file (relative to the calling file's
    directory): a regular file of at most ``HARNPY_MAX_READ_BYTES`` (default 64 MiB).

    Raises:
        HarnThrow: the path is not a string, cannot be read, is not a regular file or is
            over the limit.
    """
    import os

    from harnpy.security import read_text_limited

    if type(path) is not str or not path:
        raise thrown("transcript_compact: summarize_prompt must be a template file path")
    src = thread.source_path()
    base = os.path.dirname(os.path.abspath(src)) if src else os.getcwd()
    full = path if os.path.isabs(path) else os.path.join(base, path)
    try:
        return read_text_limited(full)
    except OSError as exc:
        raise thrown(
            f"transcript_compact: cannot read summarize_prompt {path!r}: {exc.strerror or exc}"
        ) from None


@builtin("transcript_compact", control=True)
def transcript_compact(thread: Any, v: Any = None, options: Any = None) -> Any:
    """``transcript_compact(t, options?)``: ``t`` with its older messages folded into
    ``summary``; the last ``keep_last`` (default 4) messages stay.

    Options: ``summary`` (a string: the summary to use, no model call); ``strategy`` /
    ``compact_strategy`` — ``truncate`` (a ``[auto-compacted N older messages]`` digest),
    ``observation_mask`` (the digest with long user/tool outputs masked), ``custom``
    (``compact_callback(archived)``), ``llm`` (the model named by ``provider`` /
    ``model`` writes it; ``summarize_prompt``: a template file, relative to the calling
    file, rendered with ``archived_count``, ``formatted_messages`` and ``messages``);
    without a strategy the digest lists the older messages (``role: text`` lines). With a
    strategy the kept part starts at a user message (the turn boundary at or before the
    last ``keep_last``). ``target_tokens``: compact only when the estimated tokens
    (characters / 4) exceed it.

    The result keeps the id, metadata and state; it gets a ``compaction`` event
    ``{kind, visibility: "internal", dropped, metadata: {strategy, archived_messages,
    kept_messages, estimated_tokens_before, estimated_tokens_after, asset_id}}`` and an
    archive asset (``transcript_assets``) whose ``data`` is the transcript before the
    compaction. A transcript of an agent session tells the session's subscribers
    (``agent_subscribe``) with a ``transcript_compacted`` event. A transcript with nothing
    to fold comes back unchanged. Throws for a bad option, an unreadable prompt file, or a
    failing callback or model call."""
    from harnpy.lifecycle._common import push_call
    from harnpy.lifecycle.transcript import coerce

    require_instruction_call(thread, "transcript_compact")
    t = coerce(v, "transcript_compact")
    if options is not None and type(options) is not dict:
        raise thrown("transcript_compact: options must be a dict")
    opts = dict(options or {})
    if opts.get("summarize_prompt") is not None:
        opts["__prompt_template"] = _prompt_template(thread, opts["summarize_prompt"])
    push_call(
        thread, std_function(thread.runtime, COMPACT_MODULE, "__transcript_compact"), [t, opts]
    )
    return None


@builtin("__transcript_compact_begin")
def transcript_compact_begin(thread: Any, t: Any = None, options: Any = None) -> dict[str, Any]:
    """``__transcript_compact_begin(t, options)``: ``{plan, summary, options,
    before}`` for ``std/agent/_compact`` — ``plan`` nil when nothing is folded; ``summary``
    nil when the Harn side must produce it (``custom``, ``llm``)."""
    from harnpy.lifecycle.transcript import digest as transcript_digest
    from harnpy.lifecycle.transcript import new_transcript

    opts = options if type(options) is dict else {}
    msgs = list(t.get("messages") or []) if type(t) is dict else []
    before = estimate(msgs)
    none: dict[str, Any] = {"plan": None, "summary": None, "options": {}, "before": before}
    keep = opts.get("keep_last", DEFAULT_TRANSCRIPT_KEEP_LAST)
    if type(keep) is not int or keep < 0:
        raise thrown("transcript_compact: keep_last must be a non-negative int")
    target = opts.get("target_tokens")
    if target is not None and (type(target) is not int or target < 0):
        raise thrown("transcript_compact: target_tokens must be a non-negative int")
    strategy = opts.get("strategy", opts.get("compact_strategy"))
    if strategy is not None and strategy not in STRATEGIES:
        raise thrown(
            f"transcript_compact: unknown strategy {display(strategy)}; expected "
            + ", ".join(STRATEGIES)
        )
    if strategy == "custom" and opts.get("compact_callback") is None:
        raise thrown('transcript_compact: strategy "custom" needs compact_callback')
    if (target is not None and before <= target) or len(msgs) <= keep:
        return none
    cut = len(msgs) - keep
    if strategy is not None:
        while cut > 0 and _role(msgs[cut]) != "user":
            cut -= 1  # the kept part starts a user turn
        if cut == 0:
            return none
    archived, kept = msgs[:cut], msgs[cut:]
    given = opts.get("summary")
    summary: Any = None
    if type(given) is str:
        summary = given
    elif strategy is None:
        summary = transcript_digest(new_transcript(messages=archived, summary=t.get("summary")))
    elif strategy in ("truncate", "observation_mask"):
        head = f"[auto-compacted {len(archived)} older messages]"
        summary = f"{head}\n{digest(archived, strategy == 'observation_mask')}"
    harn_opts: dict[str, Any] = {
        k: opts[k]
        for k in ("provider", "model", "base_url", "api_key", "temperature", "max_tokens")
        if opts.get(k) is not None
    }
    harn_opts["compact_callback"] = opts.get("compact_callback")
    template = opts.get("__prompt_template")
    if type(template) is str:
        from harnpy.stdlib.templates import render_template

        harn_opts["__prompt"] = render_template(
            template,
            {
                "archived_count": len(archived),
                "kept_count": len(kept),
                "formatted_messages": _formatted(archived),
                "messages": archived,
            },
            ".",
            str(opts.get("summarize_prompt")),
        )
    plan = {"strategy": strategy or "truncate", "archived": archived, "kept": kept}
    return {"plan": plan, "summary": summary, "options": harn_opts, "before": before}


@builtin("__transcript_compact_end")
def transcript_compact_end(
    thread: Any, t: Any = None, begun: Any = None, summary: Any = None
) -> dict[str, Any]:
    """``__transcript_compact_end(t, begun, summary)``: ``{transcript, event}`` — the
    compacted transcript (see ``transcript_compact``) and the ``transcript_compacted``
    session event (``session_id`` nil outside a session; also logged with the session's
    agent events)."""
    from harnpy.lifecycle.services import services
    from harnpy.lifecycle.transcript import append_event, new_transcript

    if type(t) is not dict or type(begun) is not dict or type(begun.get("plan")) is not dict:
        raise runtime_error("internal: __transcript_compact_end needs a plan")
    plan = begun["plan"]
    archived, kept = plan["archived"], plan["kept"]
    if type(summary) is dict:
        summary = summary.get("summary")
    if summary is not None and type(summary) is not str:
        summary = display(summary)
    rt = thread.runtime
    asset_id = f"asset_{services(rt).ids.uuid7(rt)}"
    asset = {
        "_type": "transcript_asset",
        "id": asset_id,
        "kind": "compaction_archive",
        "media_type": ARCHIVE_MEDIA_TYPE,
        "data": {**t, "assets": []},
        "metadata": {"strategy": plan["strategy"], "archived_messages": len(archived)},
    }
    out = new_transcript(messages=kept, metadata=t.get("metadata"), tid=t.get("id"))
    out["summary"] = summary
    out["state"] = t.get("state", "active")
    out["assets"] = [*(t.get("assets") or []), asset]
    meta = {
        "strategy": plan["strategy"],
        "archived_messages": len(archived),
        "kept_messages": len(kept),
        "estimated_tokens_before": begun.get("before"),
        "estimated_tokens_after": estimate(kept),
        "asset_id": asset_id,
    }
    out = append_event(
        out,
        {
            "kind": "compaction",
            "visibility": "internal",
            "dropped": len(archived),
            "metadata": meta,
        },
    )
    sid = _session_of(rt, t)
    event = {"type": "transcript_compacted", "session_id": sid, **meta}
    if sid is not None:
        services(rt).emit_session_event(sid, dict(event))
    return {"transcript": out, "event": event}


@builtin("transcript_assets")
def transcript_assets(thread: Any, v: Any = None) -> list[Any]:
    """``transcript_assets(t) -> [asset]``: the assets a transcript carries, oldest first
    — e.g. the archive a ``transcript_compact`` leaves: ``{_type: "transcript_asset", id,
    kind: "compaction_archive", media_type, data: <the transcript before the compaction>,
    metadata: {strategy, archived_messages}}``. A message list or nil has none."""
    if is_transcript(v):
        return list(v.get("assets") or [])
    if v is None or type(v) is list:
        return []
    raise thrown(f"transcript_assets: expected a transcript, got {display(v)}")


def run_observability(run: dict[str, Any]) -> dict[str, Any]:
    """The ``observability`` section of a run record: ``{schema_version: 4,
    compaction_events: [{stage_id, node_id, strategy, archived_messages, asset_id,
    available}]}`` — one entry per ``compaction`` event of a stage transcript;
    ``available``: the archive asset it names is still on the transcript."""
    events: list[dict[str, Any]] = []
    for stage in run.get("stages") or []:
        t: Any = stage.get("transcript") if type(stage) is dict else None
        if not is_transcript(t):
            continue
        assets = {a.get("id") for a in t.get("assets") or [] if type(a) is dict}
        for ev in t.get("events") or []:
            if type(ev) is not dict or ev.get("kind") != "compaction":
                continue
            meta: dict[str, Any] = ev["metadata"] if type(ev.get("metadata")) is dict else {}
            asset_id = meta.get("asset_id")
            events.append(
                {
                    "stage_id": stage.get("id"),
                    "node_id": stage.get("node_id"),
                    "strategy": meta.get("strategy", ev.get("strategy")),
                    "archived_messages": meta.get("archived_messages", ev.get("dropped")),
                    "asset_id": asset_id,
                    "available": asset_id is not None and asset_id in assets,
                }
            )
    return {"schema_version": 4, "compaction_events": events}
