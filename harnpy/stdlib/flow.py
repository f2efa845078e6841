"""Agent-facing reporting builtins: ``progress`` and the ``flow_*`` verdict builders.

``progress(phase, message, pct? | current?, total?)`` prints ``[phase] message`` with an
optional ``(50%)`` or ``(3/10)`` suffix. Flow invariant verdicts are plain dicts
``{verdict: {kind, ...}, confidence, evidence, remediation}`` built and read by the
``flow_invariant_*`` / ``flow_evidence_*`` / ``flow_with_*`` helpers.
"""

from __future__ import annotations

from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import type_error
from harnpy.stdlib.registry import builtin


@builtin()
def progress(
    thread: Any, phase: Any = None, message: Any = None, a: Any = None, b: Any = None
) -> None:
    """``progress(phase, message, pct?)`` / ``progress(phase, message, current, total)``:
    print a progress line ``[phase] message`` (plus ``(pct%)`` or ``(current/total)``)."""
    line = f"[{display(phase)}] {display(message) if message is not None else ''}".rstrip()
    if type(a) in (int, float) and type(b) in (int, float):
        line += f" ({display(a)}/{display(b)})"
    elif type(a) in (int, float):
        line += f" ({display(a)}%)"
    thread.write_out(line + "\n")


def _verdict(kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "verdict": {"kind": kind, **fields},
        "confidence": 1.0,
        "evidence": [],
        "remediation": None,
    }


@builtin()
def flow_invariant_allow(thread: Any) -> dict[str, Any]:
    """An ``allow`` verdict."""
    return _verdict("allow")


@builtin()
def flow_invariant_warn(thread: Any, reason: Any = None) -> dict[str, Any]:
    """A ``warn`` verdict with a reason."""
    return _verdict("warn", reason=reason)


@builtin()
def flow_invariant_block(thread: Any, code: Any = None, message: Any = None) -> dict[str, Any]:
    """A ``block`` verdict carrying ``error: {code, message}``."""
    return _verdict("block", error={"code": code, "message": message})


@builtin()
def flow_invariant_require_approval(
    thread: Any, kind: Any = None, who: Any = None
) -> dict[str, Any]:
    """A ``require_approval`` verdict; ``kind`` ``principal`` gives ``approver.id``, any
    other kind (``role``) gives ``approver.name``."""
    key = "id" if kind == "principal" else "name"
    return _verdict("require_approval", approver={"kind": kind, key: who})


def _need_verdict(v: Any, what: str) -> dict[str, Any]:
    if type(v) is not dict or type(v.get("verdict")) is not dict:
        raise type_error(f"{what}: expected a flow invariant result")
    return v


@builtin()
def flow_invariant_kind(thread: Any, v: Any = None) -> Any:
    """The verdict kind (``allow``/``warn``/``block``/``require_approval``)."""
    return _need_verdict(v, "flow_invariant_kind")["verdict"].get("kind")


@builtin()
def flow_invariant_is_blocking(thread: Any, v: Any = None) -> bool:
    """True for ``block`` and ``require_approval`` verdicts."""
    return _need_verdict(v, "flow_invariant_is_blocking")["verdict"].get("kind") in (
        "block",
        "require_approval",
    )


@builtin()
def flow_invariant_confidence(thread: Any, v: Any = None) -> Any:
    """The verdict's confidence in [0.0, 1.0]."""
    return _need_verdict(v, "flow_invariant_confidence").get("confidence", 1.0)


@builtin()
def flow_evidence_atom(
    thread: Any, atom: Any = None, start: Any = None, end: Any = None
) -> dict[str, Any]:
    """Evidence pointing at a byte range of an atom."""
    return {"kind": "atom_pointer", "atom": atom, "start": start, "end": end}


@builtin()
def flow_evidence_metadata(
    thread: Any, path: Any = None, namespace: Any = None, key: Any = None
) -> dict[str, Any]:
    """Evidence naming a metadata key."""
    return {"kind": "metadata_path", "path": path, "namespace": namespace, "key": key}


@builtin()
def flow_evidence_transcript(
    thread: Any, transcript_id: Any = None, start: Any = None, end: Any = None
) -> dict[str, Any]:
    """Evidence quoting a transcript excerpt."""
    return {
        "kind": "transcript_excerpt",
        "transcript_id": transcript_id,
        "start": start,
        "end": end,
    }


@builtin()
def flow_evidence_citation(
    thread: Any, url: Any = None, quote: Any = None, retrieved_at: Any = None
) -> dict[str, Any]:
    """Evidence citing an external source."""
    return {"kind": "external_citation", "url": url, "quote": quote, "retrieved_at": retrieved_at}


@builtin()
def flow_remediation(thread: Any, description: Any = None) -> dict[str, Any]:
    """A remediation suggestion."""
    return {"description": description}


@builtin()
def flow_with_evidence(thread: Any, v: Any = None, evidence: Any = None) -> dict[str, Any]:
    """A copy of the verdict with its evidence list replaced."""
    out = dict(_need_verdict(v, "flow_with_evidence"))
    out["evidence"] = list(evidence) if type(evidence) is list else []
    return out


@builtin()
def flow_with_remediation(thread: Any, v: Any = None, remediation: Any = None) -> dict[str, Any]:
    """A copy of the verdict with a remediation."""
    out = dict(_need_verdict(v, "flow_with_remediation"))
    out["remediation"] = remediation
    return out


@builtin()
def flow_with_confidence(thread: Any, v: Any = None, confidence: Any = None) -> dict[str, Any]:
    """A copy of the verdict with its confidence, clamped to [0.0, 1.0]."""
    out = dict(_need_verdict(v, "flow_with_confidence"))
    c = float(confidence) if type(confidence) in (int, float) else 1.0
    out["confidence"] = min(1.0, max(0.0, c))
    return out
