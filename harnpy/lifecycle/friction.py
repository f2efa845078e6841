"""Friction events and context-pack suggestions.

A *friction event* records something that slowed an agent or a person down (a repeated
query, a missing tool, a manual lookup): ``{_type: "friction_event", id, kind, source,
actor, tool, provider, redacted_summary, estimated_time_ms, estimated_cost_usd,
recurrence_hints: [string], metadata, recorded_at}``. ``friction_record`` redacts it
before it is kept: ``key=value`` secrets and ``sk-...`` keys in the summary become
``[redacted]``, and metadata values under secret-looking keys (``api_key``, ``token``,
``password``, ``secret``, ``authorization``, ``credential``; not ``*_ref`` / ``*_name`` /
``*_env``, which name a secret without holding it) are replaced by ``[redacted]``.

``context_pack_suggestions(events, {min_occurrences?: 2, owner?})`` groups events by
(kind, source, tool, provider, metadata.query) and suggests a *context pack* for each
group that recurs at least ``min_occurrences`` times: a manifest that would have
prefetched the repeated query (``context_pack_manifest``). ``estimated_savings`` counts
the time and cost of every occurrence after the first.

The events of a run are runtime state (section ``friction`` of program snapshots).
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.lifecycle._common import now_rfc3339, thrown
from harnpy.lifecycle.workflows.records import new_id
from harnpy.runtime.display import display
from harnpy.runtime.extensions import register_dict_list_state
from harnpy.stdlib.registry import builtin

STATE_ATTR = "friction_events"
REDACTED = "[redacted]"

_SECRET_KEY = re.compile(r"api[_-]?key|password|passwd|secret|token|authorization|credential", re.I)
_SAFE_SUFFIX = ("_ref", "_name", "_env", "_id")
_INLINE_SECRET = re.compile(
    r"(?i)\b(api[_-]?key|token|secret|password|passwd|authorization)\s*[=:]\s*([^\s,;]+)"
)
_KEY_LIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{6,}")


def redact_text(text: str) -> str:
    """``text`` with inline ``key=value`` secrets and ``sk-...`` keys replaced."""
    text = _INLINE_SECRET.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    return _KEY_LIKE.sub(REDACTED, text)


def _secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key)) and not key.lower().endswith(_SAFE_SUFFIX)


def redact_value(v: Any, key: str = "") -> Any:
    """A copy of ``v`` with secret-looking keys' values and inline secrets redacted."""
    if key and _secret_key(key):
        return REDACTED
    if type(v) is dict:
        return {k: redact_value(x, k) for k, x in v.items()}
    if type(v) is list:
        return [redact_value(x) for x in v]
    if type(v) is str:
        return redact_text(v)
    return v


def _events(runtime: Any) -> list[dict[str, Any]]:
    ev = getattr(runtime, STATE_ATTR, None)
    if ev is None:
        ev = []
        setattr(runtime, STATE_ATTR, ev)
    return ev  # type: ignore[no-any-return]


def _num(v: Any) -> float:
    return float(v) if type(v) in (int, float) and type(v) is not bool else 0.0


def make_event(runtime: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """A normalized, redacted friction event.

    Raises:
        HarnThrow: ``kind`` missing or not a string; hints not a list; metadata not a dict.
    """
    kind = raw.get("kind")
    if type(kind) is not str or not kind:
        raise thrown("friction_record: `kind` must be a non-empty string")
    hints = raw.get("recurrence_hints") or []
    if type(hints) is not list:
        raise thrown("friction_record: `recurrence_hints` must be a list of strings")
    meta = raw.get("metadata") or {}
    if type(meta) is not dict:
        raise thrown("friction_record: `metadata` must be a dict")
    summary = raw.get("redacted_summary") or raw.get("summary") or ""
    event = {
        "_type": "friction_event",
        "id": raw.get("id") or new_id(runtime, "friction"),
        "kind": kind,
        "source": raw.get("source"),
        "actor": raw.get("actor"),
        "tool": raw.get("tool"),
        "provider": raw.get("provider"),
        "redacted_summary": redact_text(display(summary) if type(summary) is not str else summary),
        "estimated_time_ms": raw.get("estimated_time_ms"),
        "estimated_cost_usd": raw.get("estimated_cost_usd"),
        "recurrence_hints": [redact_text(str(h)) for h in hints],
        "metadata": redact_value(meta),
        "recorded_at": now_rfc3339(runtime),
    }
    return event


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "context_pack"


def manifest(spec: dict[str, Any]) -> dict[str, Any]:
    """A normalized context-pack manifest.

    Raises:
        HarnThrow: no name, or list fields that are not lists.
    """
    name = spec.get("name")
    if type(name) is not str or not name.strip():
        raise thrown("context_pack_manifest: `name` must be a non-empty string")
    out: dict[str, Any] = {
        "_type": "context_pack_manifest",
        "id": spec.get("id") or _slug(name),
        "name": name,
        "owner": spec.get("owner"),
        "version": spec.get("version") or 1,
        "description": spec.get("description"),
        "refresh_policy": spec.get("refresh_policy") or {"mode": "on_demand"},
    }
    for field in ("triggers", "included_queries", "secrets", "capabilities", "output_slots"):
        val = spec.get(field) or []
        if type(val) is not list:
            raise thrown(f"context_pack_manifest: `{field}` must be a list")
        out[field] = list(val)
    for k, v in spec.items():
        out.setdefault(k, v)
    return out


def suggestions(events: list[Any], options: Any) -> list[dict[str, Any]]:
    """Context-pack suggestions for recurring friction (see the module docstring)."""
    opts = options if type(options) is dict else {}
    min_n = opts.get("min_occurrences", 2)
    if type(min_n) is not int or min_n < 1:
        raise thrown("context_pack_suggestions: min_occurrences must be a positive int")
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for e in events:
        if type(e) is not dict or type(e.get("kind")) is not str:
            raise thrown("context_pack_suggestions: events must be friction events")
        meta: dict[str, Any] = e["metadata"] if type(e.get("metadata")) is dict else {}
        key = (
            e["kind"],
            e.get("source"),
            e.get("tool"),
            e.get("provider"),
            display(meta.get("query")),
        )
        groups.setdefault(key, []).append(e)
    out = []
    for (kind, source, tool, provider, _), evs in groups.items():
        if len(evs) < min_n:
            continue
        first = evs[0]
        meta = first["metadata"] if type(first.get("metadata")) is dict else {}
        hint = next((h for e in evs for h in e.get("recurrence_hints") or []), None)
        topic = hint or f"{kind} in {source or tool or 'unknown'}"
        title = f"Context pack: {topic}"
        slot = meta.get("output_slot") or f"{_slug(str(tool or kind))}_context"
        capability = meta.get("capability")
        queries = (
            [{"id": slot, "provider": provider, "query": meta["query"]}]
            if meta.get("query") is not None
            else []
        )
        secrets = (
            [{"name": meta["secret_ref"], "capability": capability, "required": True}]
            if meta.get("secret_ref")
            else []
        )
        cand = manifest(
            {
                "name": topic,
                "owner": opts.get("owner") or first.get("actor"),
                "triggers": [{"kind": kind, "source": source}],
                "included_queries": queries,
                "secrets": secrets,
                "capabilities": [capability] if capability else [],
                "output_slots": [{"name": slot, "artifact_kind": "context"}],
            }
        )
        repeats = evs[1:]
        out.append(
            {
                "id": f"suggestion_{cand['id']}",
                "title": title,
                "recommended_artifact": "context_pack",
                "kind": kind,
                "source": source,
                "occurrences": len(evs),
                "owner": cand["owner"],
                "evidence": [e.get("id") for e in evs],
                "candidate_manifest": cand,
                "estimated_savings": {
                    "estimated_time_saved_ms": int(
                        sum(_num(e.get("estimated_time_ms")) for e in repeats)
                    ),
                    "estimated_cost_saved_usd": sum(
                        _num(e.get("estimated_cost_usd")) for e in repeats
                    ),
                },
            }
        )
    return out


# ----------------------------------------------------------------------------- builtins


@builtin("friction_record")
def friction_record(thread: Any, event: Any = None, options: Any = None) -> dict[str, Any]:
    """``friction_record(event, options?) -> {recorded, sink, event}``: redact and keep one
    friction event ``{kind, source?, actor?, tool?, provider?, redacted_summary?,
    estimated_time_ms?, estimated_cost_usd?, recurrence_hints?, metadata?}`` for this run
    (``sink: "memory"``). ``options.enabled: false`` records nothing (``recorded:
    false``). Throws for an event without a string ``kind``."""
    if type(event) is not dict:
        raise thrown(f"friction_record: expects an event dict, got {display(event)}")
    opts = options if type(options) is dict else {}
    if opts.get("enabled") is False:
        return {"recorded": False, "sink": None, "event": None}
    ev = make_event(thread.runtime, event)
    _events(thread.runtime).append(ev)
    return {"recorded": True, "sink": "memory", "event": ev}


@builtin("friction_events")
def friction_events(thread: Any, filters: Any = None) -> list[dict[str, Any]]:
    """``friction_events(filters?) -> [event]``: the run's friction events, oldest first
    (``filters.kind`` / ``filters.source`` keep only matching ones)."""
    evs = list(_events(thread.runtime))
    if type(filters) is dict:
        for key in ("kind", "source", "tool"):
            if filters.get(key) is not None:
                evs = [e for e in evs if e.get(key) == filters[key]]
    return evs


@builtin("friction_clear")
def friction_clear(thread: Any) -> None:
    """``friction_clear()``: forget the run's friction events."""
    setattr(thread.runtime, STATE_ATTR, [])


@builtin("context_pack_suggestions")
def context_pack_suggestions(thread: Any, events: Any = None, options: Any = None) -> list[Any]:
    """``context_pack_suggestions(events, {min_occurrences?: 2, owner?}) -> [{id, title,
    recommended_artifact: "context_pack", kind, source, occurrences, owner, evidence,
    candidate_manifest, estimated_savings: {estimated_time_saved_ms,
    estimated_cost_saved_usd}}]``: suggest a context pack for each recurring group of
    friction events."""
    if type(events) is not list:
        raise thrown(f"context_pack_suggestions: expects a list of events, got {display(events)}")
    return suggestions(events, options)


@builtin("context_pack_manifest")
def context_pack_manifest(thread: Any, spec: Any = None) -> dict[str, Any]:
    """``context_pack_manifest({name, owner?, triggers?, included_queries?, secrets?,
    capabilities?, output_slots?, refresh_policy?}) -> manifest``: a normalized manifest
    (``id`` from the name, ``version`` 1, ``refresh_policy`` default ``{mode:
    "on_demand"}``)."""
    if type(spec) is not dict:
        raise thrown(f"context_pack_manifest: expects a dict, got {display(spec)}")
    return manifest(spec)


@builtin("friction_eval_fixture")
def friction_eval_fixture(thread: Any, fixture: Any = None) -> dict[str, Any]:
    """``friction_eval_fixture({events, options?, expected_suggestions: [{min_suggestions?,
    recommended_artifact?, title_contains?, required_capability?, required_output_slot?}]})
    -> {pass, suggestion_count, failures: [string], suggestions}``: check that the
    suggestions for ``events`` meet each expectation."""
    if type(fixture) is not dict or type(fixture.get("events")) is not list:
        raise thrown("friction_eval_fixture: expects {events: [event], expected_suggestions}")
    found = suggestions(fixture["events"], fixture.get("options"))
    failures = []
    for i, exp in enumerate(fixture.get("expected_suggestions") or []):
        if type(exp) is not dict:
            continue
        want = exp.get("min_suggestions", 1)
        matches = [
            s
            for s in found
            if (exp.get("recommended_artifact") in (None, s["recommended_artifact"]))
            and (exp.get("title_contains") is None or str(exp["title_contains"]) in s["title"])
            and (
                exp.get("required_capability") is None
                or exp["required_capability"] in s["candidate_manifest"]["capabilities"]
            )
            and (
                exp.get("required_output_slot") is None
                or any(
                    o.get("name") == exp["required_output_slot"]
                    for o in s["candidate_manifest"]["output_slots"]
                )
            )
        ]
        if len(matches) < want:
            failures.append(
                f"expectation {i}: wanted at least {want} matching suggestion(s), found {len(matches)}"
            )
    return {
        "pass": not failures,
        "suggestion_count": len(found),
        "failures": failures,
        "suggestions": found,
    }


register_dict_list_state(
    "friction", STATE_ATTR, "kind", "friction events must be a list of event dicts"
)
