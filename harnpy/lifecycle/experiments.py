"""Structural prompt experiments: the ``structural_experiment`` option of ``llm_call``.

An experiment rewrites a call's messages and system prompt before it is sent, so the
effect of prompt *structure* can be measured with the same content. It is given as a
spec string (``"doubled_prompt"``, ``"prompt_order_permutation(seed: 42)"``) or as a
value made by ``std/experiments`` (``chain_of_draft()``, ``custom(label, fn)``): ``{_type:
"structural_experiment", kind, label, args, transform?}``. Built-in kinds:

* ``prompt_order_permutation(seed)``: the paragraphs (blank-line separated) of the last
  user message in a seeded shuffled order (never the original order when there are two
  or more distinct paragraphs);
* ``doubled_prompt``: the last user message repeated after an assistant acknowledgement
  (``[user, assistant, user]``);
* ``inverted_system``: system prompt and last user message swap places;
* ``chain_of_draft``: the last user message asks for minimal ``<draft>`` steps;
* ``custom``: ``transform(ctx)`` (a Harn closure) gets ``{messages, system, prompt,
  experiment}`` and returns ``{messages?, system?, metadata?}``.

When ``llm_call`` sees the option it runs ``__llm_experiment_call`` (Harn code in
``std/workflow/_engine``, so a custom transform is an ordinary Harn call): resolve,
apply, call ``llm_call`` with the rewritten ``messages``, then record ``{label, kind,
args, metadata}`` as ``metadata.structural_experiment`` of the transcript's
``provider_payload`` event.
"""

from __future__ import annotations

import random
import re
from typing import Any

from harnpy.lifecycle._common import push_call, thrown
from harnpy.lifecycle.tool_surface import engine_function
from harnpy.runtime.display import display
from harnpy.runtime.values import Closure
from harnpy.stdlib.registry import builtin

KINDS = (
    "prompt_order_permutation",
    "doubled_prompt",
    "inverted_system",
    "chain_of_draft",
    "custom",
)
OPTION = "structural_experiment"

CHAIN_OF_DRAFT = (
    "Think step by step, but keep only a minimal draft of each step (five words at most), "
    "each inside <draft>...</draft>. Then give the final answer after ####."
)

_SPEC = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def _parse_value(text: str) -> Any:
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?\d+\.\d*", t):
        return float(t)
    if t in ("true", "false"):
        return t == "true"
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    return t


def parse_spec(text: str) -> dict[str, Any]:
    """An experiment value from a spec string ``name`` or ``name(key: value, ...)``.

    Raises:
        HarnThrow: unknown names and malformed argument lists.
    """
    m = _SPEC.match(text)
    if m is None or m.group(1) not in KINDS or m.group(1) == "custom":
        raise thrown(
            f"llm_call: unknown structural_experiment {text!r} (expected one of "
            "prompt_order_permutation(seed: N), doubled_prompt, inverted_system, chain_of_draft)"
        )
    args: dict[str, Any] = {}
    body = (m.group(2) or "").strip()
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, sep, value = part.partition(":")
        if not sep or not key.strip().isidentifier():
            raise thrown(
                f"llm_call: structural_experiment {text!r}: expected `name: value` arguments"
            )
        args[key.strip()] = _parse_value(value)
    return {"_type": "structural_experiment", "kind": m.group(1), "label": m.group(1), "args": args}


def resolve(v: Any) -> dict[str, Any]:
    """The experiment value of an option value (string spec or experiment dict).

    Raises:
        HarnThrow: anything else, or a custom experiment without a closure.
    """
    if type(v) is str:
        return parse_spec(v)
    if type(v) is dict and v.get("_type") == "structural_experiment" and v.get("kind") in KINDS:
        if v["kind"] == "custom" and type(v.get("transform")) is not Closure:
            raise thrown("structural_experiment: a custom experiment needs a `transform` closure")
        return {"args": {}, "label": v["kind"], **v}
    raise thrown(
        f"llm_call: structural_experiment must be a spec string or an experiment value, got {display(v)}"
    )


def _last_user(messages: list[dict[str, Any]]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if type(m) is dict and m.get("role") == "user" and type(m.get("content")) is str:
            return i
    return None


def apply(exp: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """``{messages, system, metadata}`` after a built-in experiment."""
    messages = [dict(m) for m in ctx["messages"]]
    system = ctx.get("system")
    idx = _last_user(messages)
    kind = exp["kind"]
    meta: dict[str, Any] = {}
    if idx is None:
        return {"messages": messages, "system": system, "metadata": {"skipped": "no user message"}}
    text = messages[idx]["content"]
    if kind == "prompt_order_permutation":
        seed = exp["args"].get("seed", 0)
        parts = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        order = list(range(len(parts)))
        random.Random(seed).shuffle(order)
        if order == sorted(order) and len({*parts}) > 1:
            order = order[1:] + order[:1]
        messages[idx]["content"] = "\n\n".join(parts[i] for i in order)
        meta = {"order": order, "seed": seed}
    elif kind == "doubled_prompt":
        messages = [
            *messages[: idx + 1],
            {"role": "assistant", "content": "Understood."},
            *messages[idx:],
        ]
    elif kind == "inverted_system":
        messages[idx]["content"] = system or ""
        system = text
        meta = {"swapped": True}
    elif kind == "chain_of_draft":
        messages[idx]["content"] = f"{text}\n\n{CHAIN_OF_DRAFT}"
    return {"messages": messages, "system": system, "metadata": meta}


def wants_experiment(options: Any) -> bool:
    """True when ``llm_call`` options carry a ``structural_experiment``."""
    return type(options) is dict and options.get(OPTION) is not None


def start(thread: Any, prompt: Any, system: Any, options: dict[str, Any]) -> None:
    """From ``llm_call``: run the call through ``__llm_experiment_call`` instead."""
    push_call(
        thread, engine_function(thread.runtime, "__llm_experiment_call"), [prompt, system, options]
    )


@builtin("__llm_experiment_begin")
def experiment_begin(
    thread: Any, prompt: Any = None, system: Any = None, options: Any = None
) -> Any:
    """``__llm_experiment_begin(prompt, system, options) -> {experiment, ctx}``."""
    exp = resolve((options or {}).get(OPTION))
    raw = (options or {}).get("messages")
    if type(raw) is list:
        messages = [dict(m) if type(m) is dict else m for m in raw]
    else:
        messages = [{"role": "user", "content": prompt if type(prompt) is str else display(prompt)}]
    ctx = {
        "messages": messages,
        "system": system,
        "prompt": prompt,
        "experiment": {k: v for k, v in exp.items() if k != "transform"},
    }
    return {"experiment": exp, "ctx": ctx}


@builtin("__llm_experiment_apply")
def experiment_apply(thread: Any, exp: Any = None, ctx: Any = None) -> Any:
    """``__llm_experiment_apply(experiment, ctx) -> {messages, system, metadata}``."""
    return apply(exp, ctx)


@builtin("__llm_experiment_options")
def experiment_options(
    thread: Any, options: Any = None, ctx: Any = None, applied: Any = None
) -> Any:
    """``__llm_experiment_options(options, ctx, applied) -> {system, options}``: the
    rewritten call (the experiment option removed)."""
    if type(applied) is not dict:
        raise thrown(
            f"structural_experiment: a transform must return a dict, got {display(applied)}"
        )
    messages = applied.get("messages", ctx["messages"])
    if type(messages) is not list:
        raise thrown("structural_experiment: `messages` must be a list of messages")
    system = applied["system"] if "system" in applied else ctx.get("system")
    opts = {k: v for k, v in (options or {}).items() if k != OPTION}
    opts["messages"] = messages
    return {"system": system, "options": opts}


@builtin("__llm_experiment_annotate")
def experiment_annotate(
    thread: Any, result: Any = None, exp: Any = None, applied: Any = None
) -> Any:
    """``__llm_experiment_annotate(result, experiment, applied)``: the ``llm_call`` result
    with the experiment recorded on the transcript's ``provider_payload`` event."""
    if type(result) is not dict or type(result.get("transcript")) is not dict:
        return result
    meta = applied.get("metadata") if type(applied) is dict else None
    record = {
        "label": exp.get("label"),
        "kind": exp.get("kind"),
        "args": exp.get("args") or {},
        "metadata": meta if type(meta) is dict else {},
    }
    t = result["transcript"]
    events = list(t.get("events") or [])
    for i, ev in enumerate(events):
        if type(ev) is dict and ev.get("kind") == "provider_payload":
            events[i] = {
                **ev,
                "metadata": {**(ev.get("metadata") or {}), "structural_experiment": record},
            }
            break
    else:
        events.append(
            {
                "kind": "provider_payload",
                "visibility": "internal",
                "metadata": {
                    "provider": result.get("provider"),
                    "model": result.get("model"),
                    "structural_experiment": record,
                },
            }
        )
    return {**result, "transcript": {**t, "events": events}, "structural_experiment": record}
