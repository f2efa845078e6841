"""``assemble_context``: pack artifacts into a token budget as content-addressed chunks.

``assemble_context({artifacts, budget_tokens?, strategy?, query?, dedup?,
microcompact_threshold?, ranker_callback?})`` returns ``{budget_tokens, total_tokens,
strategy, dedup, chunks: [chunk], reasons: [reason], dropped: [drop]}``:

* *chunking*: an artifact whose estimated tokens exceed ``microcompact_threshold`` is
  split into paragraphs (blank-line separated), and a paragraph still over the threshold
  into lines; otherwise it is one chunk. A chunk is ``{id, artifact_id, artifact_kind,
  index, text, tokens, score}``; ``id`` is ``chunk_`` + 16 hex digits of the sha256 of its
  text, so the same text has the same id in every call;
* *dedup*: ``"chunked"`` drops chunks whose (whitespace-normalized) text was already
  seen, ``"exact"`` drops artifacts whose whole text was already seen, ``"none"`` keeps
  all; a dropped duplicate is reported with reason ``duplicate``;
* *ordering*: ``"relevance"`` (default with a query) by the share of query words a chunk
  contains — or by the scores ``ranker_callback(query, chunks)`` returns, one number per
  chunk — highest first, ties in input order; ``"recency"`` newest artifact first;
  ``"round_robin"`` one chunk of each artifact in turn;
* *budget*: chunks are taken in that order while they fit ``budget_tokens`` (a chunk that
  does not fit is skipped with reason ``budget_exceeded``; later smaller ones may fit).

``reasons`` has one entry per chunk considered, in ranked order: ``{chunk_id,
artifact_id, strategy, score, included, reason}`` (``reason`` ``"selected"``,
``"budget_exceeded"`` or ``"duplicate"``).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.workflows.artifacts import artifact_text, estimate_tokens
from harnpy.runtime.display import display
from harnpy.runtime.values import CallRequest
from harnpy.stdlib.registry import builtin

STRATEGIES = ("relevance", "recency", "round_robin")
DEDUP_MODES = ("chunked", "exact", "none")


def chunk_id(text: str) -> str:
    """The content address of a chunk's text."""
    return "chunk_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def split_text(text: str, threshold: int | None) -> list[str]:
    """Paragraphs (then lines) of ``text`` when it is over ``threshold`` tokens."""
    if threshold is None or estimate_tokens(text) <= threshold:
        return [text] if text else []
    out: list[str] = []
    for para in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not para:
            continue
        if estimate_tokens(para) > threshold and "\n" in para:
            out.extend(line.strip() for line in para.split("\n") if line.strip())
        else:
            out.append(para)
    return out


_WORD = re.compile(r"[a-z0-9]+")


def keyword_score(query: str, text: str) -> float:
    """The share of distinct query words (lowercased, alphanumeric) found in ``text``."""
    words = set(_WORD.findall(query.lower()))
    if not words:
        return 0.0
    have = set(_WORD.findall(text.lower()))
    return len(words & have) / len(words)


def _spec(v: Any) -> dict[str, Any]:
    if type(v) is not dict:
        raise thrown(f"assemble_context: expects a dict, got {display(v)}")
    strategy = v.get("strategy") or ("relevance" if v.get("query") else "recency")
    if strategy not in STRATEGIES:
        raise thrown(
            f"assemble_context: unknown strategy {display(strategy)} (expected one of "
            f"{', '.join(STRATEGIES)})"
        )
    dedup = v.get("dedup") or "chunked"
    if dedup not in DEDUP_MODES:
        raise thrown(
            f"assemble_context: unknown dedup {display(dedup)} (expected chunked, exact or none)"
        )
    budget = v.get("budget_tokens", 4000)
    if type(budget) is not int or budget < 0:
        raise thrown(
            f"assemble_context: budget_tokens must be a non-negative int, got {display(budget)}"
        )
    threshold = v.get("microcompact_threshold")
    if threshold is not None and (type(threshold) is not int or threshold < 1):
        raise thrown("assemble_context: microcompact_threshold must be a positive int")
    arts = v.get("artifacts") or []
    if type(arts) is not list or any(type(a) is not dict for a in arts):
        raise thrown("assemble_context: artifacts must be a list of artifacts")
    return {**v, "strategy": strategy, "dedup": dedup, "budget_tokens": budget, "artifacts": arts}


def _chunks(spec: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    chunks, dropped = [], []
    seen_artifacts: set[str] = set()
    seen_chunks: set[str] = set()
    for pos, a in enumerate(spec["artifacts"]):
        text = artifact_text(a)
        aid = a.get("id") or f"artifact_{pos}"
        if spec["dedup"] == "exact":
            if text in seen_artifacts:
                dropped.append(
                    {"chunk_id": chunk_id(text), "artifact_id": aid, "reason": "duplicate"}
                )
                continue
            seen_artifacts.add(text)
        for i, piece in enumerate(split_text(text, spec.get("microcompact_threshold"))):
            norm = " ".join(piece.split())
            if spec["dedup"] == "chunked" and norm in seen_chunks:
                dropped.append(
                    {"chunk_id": chunk_id(piece), "artifact_id": aid, "reason": "duplicate"}
                )
                continue
            seen_chunks.add(norm)
            chunks.append(
                {
                    "id": chunk_id(piece),
                    "artifact_id": aid,
                    "artifact_kind": a.get("kind"),
                    "index": i,
                    "text": piece,
                    "tokens": estimate_tokens(piece),
                    "score": 0.0,
                    "_pos": pos,
                }
            )
    return chunks, dropped


def _order(spec: dict[str, Any], chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    strategy = spec["strategy"]
    if strategy == "relevance":
        return [c for _, c in sorted(enumerate(chunks), key=lambda p: (-p[1]["score"], p[0]))]
    if strategy == "recency":
        return sorted(chunks, key=lambda c: (-c["_pos"], c["index"]))
    by_artifact: dict[int, list[dict[str, Any]]] = {}
    for c in chunks:
        by_artifact.setdefault(c["_pos"], []).append(c)
    out: list[dict[str, Any]] = []
    lanes = [by_artifact[k] for k in sorted(by_artifact)]
    depth = max((len(lane) for lane in lanes), default=0)
    for i in range(depth):
        out.extend(lane[i] for lane in lanes if i < len(lane))
    return out


def _pack(
    spec: dict[str, Any], chunks: list[dict[str, Any]], dropped: list[dict[str, Any]]
) -> dict[str, Any]:
    ordered = _order(spec, chunks)
    budget = spec["budget_tokens"]
    used = 0
    kept, reasons = [], []
    for c in ordered:
        public = {k: v for k, v in c.items() if k != "_pos"}
        fits = used + c["tokens"] <= budget
        if fits:
            used += c["tokens"]
            kept.append(public)
        else:
            dropped.append(
                {"chunk_id": c["id"], "artifact_id": c["artifact_id"], "reason": "budget_exceeded"}
            )
        reasons.append(
            {
                "chunk_id": c["id"],
                "artifact_id": c["artifact_id"],
                "strategy": spec["strategy"],
                "score": c["score"],
                "included": fits,
                "reason": "selected" if fits else "budget_exceeded",
            }
        )
    for d in dropped:
        if d["reason"] == "duplicate":
            reasons.append(
                {
                    "chunk_id": d["chunk_id"],
                    "artifact_id": d["artifact_id"],
                    "strategy": spec["strategy"],
                    "score": 0.0,
                    "included": False,
                    "reason": "duplicate",
                }
            )
    return {
        "budget_tokens": budget,
        "total_tokens": used,
        "strategy": spec["strategy"],
        "dedup": spec["dedup"],
        "chunks": kept,
        "reasons": reasons,
        "dropped": dropped,
    }


@builtin("assemble_context", callback=True)
def assemble_context(thread: Any, v: Any = None) -> Any:
    """``assemble_context({artifacts, budget_tokens?: 4000, strategy?: "relevance" |
    "recency" | "round_robin", query?, dedup?: "chunked" | "exact" | "none",
    microcompact_threshold?, ranker_callback?}) -> {budget_tokens, total_tokens, strategy,
    dedup, chunks: [{id, artifact_id, artifact_kind, index, text, tokens, score}], reasons:
    [{chunk_id, artifact_id, strategy, score, included, reason}], dropped: [{chunk_id,
    artifact_id, reason: "duplicate" | "budget_exceeded"}]}``: pack artifacts into a token
    budget (chunk ids are content addresses; ``ranker_callback(query, chunks)`` returns one
    score per chunk and replaces keyword scoring). Throws for unknown strategies or dedup
    modes, a bad budget, or a ranker that does not return one number per chunk."""
    spec = _spec(v)
    chunks, dropped = _chunks(spec)
    query = spec.get("query") if type(spec.get("query")) is str else ""
    ranker = spec.get("ranker_callback")
    if ranker is not None and chunks:
        public = [{k: x for k, x in c.items() if k != "_pos"} for c in chunks]
        scores = yield CallRequest(ranker, [query, public])
        if (
            type(scores) is not list
            or len(scores) != len(chunks)
            or any(type(s) not in (int, float) or type(s) is bool for s in scores)
        ):
            raise thrown("assemble_context: ranker_callback must return one number per chunk")
        for c, s in zip(chunks, scores):
            c["score"] = float(s)
    elif query:
        for c in chunks:
            c["score"] = keyword_score(query, c["text"])
    return _pack(spec, chunks, dropped)
