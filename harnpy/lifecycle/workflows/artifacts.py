"""Artifacts: typed, attributable pieces of context that workflow stages consume and
produce.

An artifact is ``{_type: "artifact", id, kind, title, text, data, source, stage,
relevance, priority, lineage: [id], estimated_tokens, created_at, metadata}``. ``lineage``
lists the ids of the artifacts it was derived from, oldest first. Selection
(:func:`select`) follows a *context policy* ``{include_kinds?, exclude_kinds?,
include_ids?, max_artifacts?, max_tokens?}``: filtered by kind, ordered by priority then
relevance (higher first, then newer), cut at the counts.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import now_rfc3339, thrown
from harnpy.lifecycle.workflows.records import new_id
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin


def estimate_tokens(text: str) -> int:
    """A rough token count: one token per 4 characters, at least 1 for non-empty text."""
    return 0 if not text else max(1, (len(text) + 3) // 4)


def artifact_text(a: dict[str, Any]) -> str:
    """The text an artifact contributes to a prompt: its ``text``, else its ``data`` as
    JSON, else ""."""
    if type(a.get("text")) is str:
        return a["text"]  # type: ignore[no-any-return]
    if a.get("data") is not None:
        from harnpy.stdlib.jsonlib import dumps

        return dumps(a["data"])
    return ""


def make(runtime: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """A normalized artifact from ``spec`` (a fresh id when it has none).

    Raises:
        HarnThrow: a non-string kind or text, a non-list lineage, non-dict metadata.
    """
    kind = spec.get("kind", "artifact")
    if type(kind) is not str or not kind:
        raise thrown(f"artifact: kind must be a non-empty string, got {display(kind)}")
    if spec.get("text") is not None and type(spec["text"]) is not str:
        raise thrown(f"artifact: text must be a string, got {display(spec['text'])}")
    lineage = spec.get("lineage", [])
    if type(lineage) is not list:
        raise thrown("artifact: lineage must be a list of artifact ids")
    metadata = spec.get("metadata", {})
    if type(metadata) is not dict:
        raise thrown("artifact: metadata must be a dict")
    out: dict[str, Any] = {
        "_type": "artifact",
        "id": spec.get("id") or new_id(runtime, "artifact"),
        "kind": kind,
        "title": spec.get("title"),
        "text": spec.get("text"),
        "data": spec.get("data"),
        "source": spec.get("source"),
        "stage": spec.get("stage"),
        "relevance": spec.get("relevance"),
        "priority": spec.get("priority"),
        "lineage": list(lineage),
        "created_at": spec.get("created_at") or now_rfc3339(runtime),
        "metadata": dict(metadata),
    }
    for k, v in spec.items():
        out.setdefault(k, v)
    out["estimated_tokens"] = (
        spec["estimated_tokens"]
        if type(spec.get("estimated_tokens")) is int
        else estimate_tokens(artifact_text(out))
    )
    return out


def check(v: Any, where: str) -> dict[str, Any]:
    """``v`` when it is an artifact dict (``_type: "artifact"`` and an id).

    Raises:
        HarnThrow: anything else.
    """
    if type(v) is not dict or v.get("_type") != "artifact" or v.get("id") is None:
        raise thrown(f"{where}: expected an artifact (made with artifact()), got {display(v)}")
    return v


def _num(v: Any) -> float:
    return float(v) if type(v) in (int, float) else 0.0


def select(artifacts: list[dict[str, Any]], policy: Any) -> list[dict[str, Any]]:
    """The artifacts a context policy admits, best first (see the module docstring)."""
    pol = policy if type(policy) is dict else {}
    include = pol.get("include_kinds")
    exclude = pol.get("exclude_kinds") or []
    ids = pol.get("include_ids")
    picked = [
        a
        for a in artifacts
        if (not include or a.get("kind") in include)
        and a.get("kind") not in exclude
        and (not ids or a.get("id") in ids)
    ]
    order = sorted(
        enumerate(picked),
        key=lambda p: (-_num(p[1].get("priority")), -_num(p[1].get("relevance")), -p[0]),
    )
    out = [a for _, a in order]
    cap = pol.get("max_artifacts")
    if type(cap) is int and cap >= 0:
        out = out[:cap]
    budget = pol.get("max_tokens")
    if type(budget) is int and budget >= 0:
        kept, used = [], 0
        for a in out:
            cost = a.get("estimated_tokens") or 0
            if used + cost > budget:
                continue
            kept.append(a)
            used += cost
        out = kept
    return out


def render(artifacts: list[dict[str, Any]]) -> str:
    """The prompt text of selected artifacts: one ``<artifact id kind>`` block each."""
    blocks = []
    for a in artifacts:
        title = f"{a['title']}\n" if type(a.get("title")) is str and a["title"] else ""
        blocks.append(
            f'<artifact id="{a.get("id")}" kind="{a.get("kind")}">\n{title}'
            f"{artifact_text(a)}\n</artifact>"
        )
    return "\n\n".join(blocks)


@builtin("artifact")
def artifact(thread: Any, spec: Any = None) -> dict[str, Any]:
    """``artifact({kind?, id?, title?, text?, data?, source?, relevance?, priority?,
    lineage?, metadata?}) -> artifact``: a normalized artifact (``_type: "artifact"``, a
    fresh ``id`` when none is given, ``kind`` default ``"artifact"``, ``estimated_tokens``
    from the text, ``created_at`` now). Throws for fields of the wrong type."""
    if type(spec) is not dict:
        raise thrown(f"artifact: expects a dict, got {display(spec)}")
    return make(thread.runtime, spec)


@builtin("artifact_derive")
def artifact_derive(thread: Any, parent: Any = None, kind: Any = None, extra: Any = None) -> Any:
    """``artifact_derive(parent, kind, fields?) -> artifact``: a new artifact of ``kind``
    derived from ``parent``: ``lineage`` is the parent's lineage plus its id,
    ``metadata.derived_from`` the parent id; ``fields`` (text, data, title...) fill the
    rest (the parent's text when none is given)."""
    p = check(parent, "artifact_derive")
    if type(kind) is not str or not kind:
        raise thrown(f"artifact_derive: kind must be a non-empty string, got {display(kind)}")
    fields = extra if type(extra) is dict else {}
    meta = {**(fields.get("metadata") or {}), "derived_from": p["id"]}
    spec = {
        "text": p.get("text"),
        "relevance": p.get("relevance"),
        **{k: v for k, v in fields.items() if k not in ("id", "lineage", "metadata")},
        "kind": kind,
        "lineage": [*p.get("lineage", []), p["id"]],
        "metadata": meta,
    }
    return make(thread.runtime, spec)


def _artifact_list(v: Any, where: str) -> list[dict[str, Any]]:
    if v is None:
        return []
    if type(v) is not list:
        raise thrown(f"{where}: expects a list of artifacts, got {display(v)}")
    return [check(a, where) for a in v]


@builtin("artifact_select")
def artifact_select(thread: Any, artifacts: Any = None, policy: Any = None) -> list[Any]:
    """``artifact_select(artifacts, policy?) -> [artifact]``: the artifacts a context
    policy ``{include_kinds?, exclude_kinds?, include_ids?, max_artifacts?, max_tokens?}``
    admits, highest priority/relevance first."""
    return select(_artifact_list(artifacts, "artifact_select"), policy)


@builtin("artifact_context")
def artifact_context(thread: Any, artifacts: Any = None, policy: Any = None) -> str:
    """``artifact_context(artifacts, policy?) -> string``: the selected artifacts (see
    ``artifact_select``) rendered for a prompt, one ``<artifact id=".." kind="..">``
    block each; "" when none is admitted."""
    return render(select(_artifact_list(artifacts, "artifact_context"), policy))
