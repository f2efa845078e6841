"""Lifecycle receipts with signed timestamps (replay journal; lifecycle.md 1.4
``HARN-SUS-011/012/013``).

A receipt records one suspension, resumption or drain decision with a
``SignedLifecycleTimestamp`` ``{at_ms, at, algorithm: "hmac-sha256", key_id:
"local-session", signature: "sha256:<hex>"}``: an HMAC-SHA256, under a per-runtime random
salt, of ``(kind, at_ms, subject, initiator)``. ``at_ms`` comes from the runtime clock
(``mock_time`` applies), so a replay reads the journaled time, and any edit of the bound
fields fails verification with ``HARN-SUS-013``. Resumption receipts keep the resume input
(optionally redacted by JSON-pointer paths) and the SHA-256 of its canonical JSON (sorted
keys) so a replay detects drift (``HARN-SUS-011``); drain decisions keep a prompt hash
(``HARN-SUS-012``).

Builtins: ``lifecycle_receipt_record_suspension(receipt)``,
``lifecycle_receipt_record_resumption(receipt)``,
``lifecycle_receipt_record_drain_decision(receipt)`` (each returns the journal entry
``{seq, kind, payload}``), ``lifecycle_receipts_snapshot()``,
``verify_lifecycle_receipt_signature(kind, payload)`` (``{verified, error?}``),
``lifecycle_resume_input_hash(input)``, ``lifecycle_drain_decision_prompt_hash(prompt)``,
``lifecycle_replay_resume_input(receipt, candidate?)``,
``lifecycle_replay_drain_decision(receipt, candidate_prompt?)`` (``{ok, ...}`` or ``{ok:
false, error, code}``). The journal lives on the runtime (``runtime.lifecycle_receipts``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from typing import Any

from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.stdlib.jsonlib import from_json_data, to_json_data
from harnpy.stdlib.registry import builtin

ALGORITHM = "hmac-sha256"
KEY_ID = "local-session"
SUSPENSION = "suspension_receipt"
RESUMPTION = "resumption_receipt"
DRAIN_DECISION = "drain_decision_receipt"

SUSPEND_INITIATORS = ("self", "parent", "operator", "triggered")
RESUME_INITIATORS = ("parent", "operator", "triggered", "drain_agent", "timeout")
DRAIN_CATEGORIES = (
    "suspended_subagent",
    "queued_trigger",
    "partial_handoff",
    "in_flight_llm_call",
)
DRAIN_ACTIONS = ("resume", "cancel", "handoff", "acknowledge", "defer", "wait", "finalize")


class ReceiptError(Exception):
    """A failed verification or replay; ``code`` is the ``HARN-SUS-0xx`` code."""

    def __init__(self, message: str, code: str = "HARN-SUS-013") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ReceiptJournal:
    """Receipts of one runtime: the signing ``salt``, the entries and their counter."""

    def __init__(self) -> None:
        self.salt = b"harnpy-lifecycle-signing-salt:" + os.urandom(16).hex().encode()
        self.entries: list[dict[str, Any]] = []
        self.seq = 0

    def record(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Append ``{seq, kind, payload}`` and return it."""
        self.seq += 1
        entry = {"seq": self.seq, "kind": kind, "payload": payload}
        self.entries.append(entry)
        return entry


def journal(runtime: Any) -> ReceiptJournal:
    """The runtime's :class:`ReceiptJournal` (created on first use)."""
    j = getattr(runtime, "lifecycle_receipts", None)
    if j is None:
        j = ReceiptJournal()
        runtime.lifecycle_receipts = j
    return j


# ------------------------------------------------------------------ signing


def _material(kind: str, at_ms: int, subject: str, initiator: str) -> bytes:
    return (
        f"harn.lifecycle.timestamp.v1\nkind={kind}\nat_ms={at_ms}\nsubject={subject}\n"
        f"initiator={initiator}\n"
    ).encode()


def sign(salt: bytes, kind: str, at_ms: int, subject: str, initiator: str) -> str:
    """``sha256:<hex>`` HMAC of the timestamp material."""
    mac = hmac.new(salt, _material(kind, at_ms, subject, initiator), hashlib.sha256)
    return "sha256:" + mac.hexdigest()


def signed_timestamp(runtime: Any, kind: str, subject: str, initiator: str) -> dict[str, Any]:
    """A fresh signed timestamp at the runtime clock's wall time."""
    at_ms = int(runtime.clock.now_ms())
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at_ms // 1000))
    frac = at_ms % 1000
    return {
        "at_ms": at_ms,
        "at": at + (f".{frac:03d}" if frac else "") + "Z",
        "algorithm": ALGORITHM,
        "key_id": KEY_ID,
        "signature": sign(journal(runtime).salt, kind, at_ms, subject, initiator),
    }


def verify_timestamp(runtime: Any, stamp: Any, kind: str, subject: str, initiator: str) -> None:
    """Check a signed timestamp against ``(kind, subject, initiator)``.

    Raises:
        ReceiptError: malformed stamp, algorithm / key / signature mismatch (HARN-SUS-013).
    """
    if type(stamp) is not dict:
        raise ReceiptError("lifecycle receipt persistence: missing signed timestamp")
    at_ms = stamp.get("at_ms")
    if type(at_ms) is not int:
        raise ReceiptError("lifecycle receipt persistence: at_ms must be an int")
    if stamp.get("algorithm") != ALGORITHM:
        raise ReceiptError(
            f"HARN-SUS-013 lifecycle signature algorithm mismatch (expected {ALGORITHM}, "
            f"found {display(stamp.get('algorithm'))})"
        )
    if stamp.get("key_id") != KEY_ID:
        raise ReceiptError(
            f"HARN-SUS-013 lifecycle signature key mismatch (expected {KEY_ID}, "
            f"found {display(stamp.get('key_id'))})"
        )
    expected = sign(journal(runtime).salt, kind, at_ms, subject, initiator)
    found = stamp.get("signature")
    if type(found) is not str or not hmac.compare_digest(expected, found):
        raise ReceiptError(
            f"HARN-SUS-013 lifecycle signature mismatch (expected {expected}, "
            f"found {display(found)})"
        )


# ------------------------------------------------------------------ hashing


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys (the hashed form)."""
    return json.dumps(
        to_json_data(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def hash_input(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of a resume input (nil hashes ``null``)."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def hash_prompt(prompt: str) -> str:
    """``sha256:<hex>`` of a drain-decision prompt."""
    return "sha256:" + hashlib.sha256(prompt.encode()).hexdigest()


def redact(value: Any, policy: Any) -> Any:
    """``value`` with each ``{pointer, reason?}`` of ``policy.paths`` replaced by
    ``{"$harn_redacted": reason}`` (default reason ``redacted``); unknown paths are
    skipped."""
    paths = policy.get("paths") if type(policy) is dict else None
    if type(paths) is not list:
        return value
    data = to_json_data(value)
    for rule in paths:
        if type(rule) is not dict or type(rule.get("pointer")) is not str:
            continue
        pointer = rule["pointer"]
        segs = [] if pointer in ("", "/") else pointer.lstrip("/").split("/")
        reason = rule.get("reason")
        data = _redact_at(data, segs, reason if type(reason) is str else "redacted")
    return from_json_data(data)


def _redact_at(node: Any, segs: list[str], reason: str) -> Any:
    if not segs:
        return {"$harn_redacted": reason}
    head, rest = segs[0], segs[1:]
    if type(node) is dict and head in node:
        out = dict(node)
        out[head] = _redact_at(node[head], rest, reason)
        return out
    if type(node) is list and head.isdigit() and int(head) < len(node):
        items = list(node)
        items[int(head)] = _redact_at(node[int(head)], rest, reason)
        return items
    return node


# ------------------------------------------------------------------ argument parsing


def _opt_str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is None:
        return None
    text = v if type(v) is str else display(v)
    return text or None


def _req_str(d: dict[str, Any], key: str) -> str:
    v = _opt_str(d, key)
    if v is None:
        raise runtime_error(f"lifecycle receipt: missing {key}")
    return v


def _dict_arg(v: Any, where: str, what: str = "first argument") -> dict[str, Any]:
    if type(v) is not dict:
        raise runtime_error(f"{where}: {what} must be a dict")
    return v


def _suspend_initiator(v: Any) -> str:
    text = (display(v) if v is not None else "").strip()
    if text in ("self", "self_initiated"):
        return "self"
    return text if text in ("parent", "triggered") else "operator"


def _resume_initiator(v: Any) -> str:
    text = (display(v) if v is not None else "").strip()
    if text in ("trigger", "triggered"):
        return "triggered"
    if text in ("drain_agent", "drain-agent", "settlement"):
        return "drain_agent"
    return text if text in ("operator", "timeout") else "parent"


def _subject_fields(kind: str, payload: Any) -> tuple[str, str, str]:
    """``(stamp key, subject, initiator)`` of a receipt payload, validating its shape.

    Raises:
        ReceiptError: the payload does not have the receipt's shape.
    """
    if type(payload) is not dict:
        raise ReceiptError("lifecycle receipt persistence: payload must be a dict")
    if kind == SUSPENSION:
        stamp, subject_key, initiator_key = "suspended_at", "handle", "initiator_id"
        if payload.get("initiator") not in SUSPEND_INITIATORS:
            raise ReceiptError("lifecycle receipt persistence: unknown initiator")
    elif kind == RESUMPTION:
        stamp, subject_key, initiator_key = "resumed_at", "handle", "initiator_id"
        if payload.get("initiator") not in RESUME_INITIATORS:
            raise ReceiptError("lifecycle receipt persistence: unknown initiator")
        if type(payload.get("input_hash")) is not str:
            raise ReceiptError("lifecycle receipt persistence: missing field `input_hash`")
    elif kind == DRAIN_DECISION:
        stamp, subject_key, initiator_key = "decided_at", "pipeline_id", "decided_by"
        if payload.get("action") not in DRAIN_ACTIONS:
            raise ReceiptError("lifecycle receipt persistence: unknown action")
    else:
        raise ReceiptError(f"lifecycle receipt persistence: unknown lifecycle receipt kind: {kind}")
    for key in (subject_key, initiator_key):
        if type(payload.get(key)) is not str:
            raise ReceiptError(f"lifecycle receipt persistence: missing field `{key}`")
    return stamp, payload[subject_key], payload[initiator_key]


def verify_receipt(runtime: Any, kind: str, payload: Any) -> None:
    """Verify a receipt payload's signed timestamp.

    Raises:
        ReceiptError: shape or signature failure (HARN-SUS-013).
    """
    stamp, subject, initiator = _subject_fields(kind, payload)
    verify_timestamp(runtime, payload.get(stamp), kind, subject, initiator)


def _failure(e: ReceiptError) -> dict[str, Any]:
    return {"ok": False, "error": e.message, "code": e.code}


# ------------------------------------------------------------------ builtins


@builtin()
def lifecycle_receipt_record_suspension(thread: Any, receipt: Any = None) -> dict[str, Any]:
    """``lifecycle_receipt_record_suspension({handle, initiator_id, session_id?, initiator?,
    reason?, conditions?, span_id?})``: journal a suspension receipt signed at the current
    (mock-aware) time; returns ``{seq, kind: "suspension_receipt", payload}``.

    Raises:
        HarnRuntimeError: not a dict; ``lifecycle receipt: missing handle|initiator_id``.
    """
    d = _dict_arg(receipt, "lifecycle_receipt_record_suspension")
    handle = _req_str(d, "handle")
    initiator_id = _req_str(d, "initiator_id")
    payload: dict[str, Any] = {
        "handle": handle,
        "session_id": _opt_str(d, "session_id"),
        "initiator": _suspend_initiator(d.get("initiator")),
        "initiator_id": initiator_id,
        "reason": _opt_str(d, "reason") or "",
    }
    if d.get("conditions") is not None:
        payload["conditions"] = d["conditions"]
    rt = thread.runtime
    payload["suspended_at"] = signed_timestamp(rt, SUSPENSION, handle, initiator_id)
    if _opt_str(d, "span_id") is not None:
        payload["span_id"] = _opt_str(d, "span_id")
    return journal(rt).record(SUSPENSION, payload)


@builtin()
def lifecycle_receipt_record_resumption(thread: Any, receipt: Any = None) -> dict[str, Any]:
    """``lifecycle_receipt_record_resumption({handle, initiator_id, session_id?,
    initiator?, input?, redact?: {paths: [{pointer, reason?}]}, continue_transcript?,
    linked_suspension_span_id?, trigger_match?})``: journal a resumption receipt; the input
    hash covers the unredacted input, the journaled ``input`` is the redacted one."""
    d = _dict_arg(receipt, "lifecycle_receipt_record_resumption")
    handle = _req_str(d, "handle")
    initiator_id = _req_str(d, "initiator_id")
    raw_input = d.get("input")
    payload: dict[str, Any] = {
        "handle": handle,
        "session_id": _opt_str(d, "session_id"),
        "initiator": _resume_initiator(d.get("initiator")),
        "initiator_id": initiator_id,
    }
    if raw_input is not None:
        payload["input"] = redact(raw_input, d.get("redact"))
    payload["input_hash"] = hash_input(raw_input)
    ct = d.get("continue_transcript")
    payload["continue_transcript"] = True if ct is None else bool(ct)
    if _opt_str(d, "linked_suspension_span_id") is not None:
        payload["linked_suspension_span_id"] = _opt_str(d, "linked_suspension_span_id")
    tm = d.get("trigger_match")
    if type(tm) is dict:
        payload["trigger_match"] = {
            k: _opt_str(tm, k) or "" for k in ("source", "event_id", "filter_summary")
        }
    rt = thread.runtime
    payload["resumed_at"] = signed_timestamp(rt, RESUMPTION, handle, initiator_id)
    return journal(rt).record(RESUMPTION, payload)


@builtin()
def lifecycle_receipt_record_drain_decision(thread: Any, receipt: Any = None) -> dict[str, Any]:
    """``lifecycle_receipt_record_drain_decision({pipeline_id, item: {category, id,
    summary}, action, reason?, decided_by, prompt? | prompt_hash?})``: journal a drain
    decision (``prompt`` is stored as its hash)."""
    d = _dict_arg(receipt, "lifecycle_receipt_record_drain_decision")
    pipeline_id = _req_str(d, "pipeline_id")
    item = _dict_arg(d.get("item"), "lifecycle_receipt_record_drain_decision", "item")
    category = _opt_str(item, "category")
    action = _opt_str(d, "action")
    decided_by = _req_str(d, "decided_by")
    payload: dict[str, Any] = {
        "pipeline_id": pipeline_id,
        "item": {
            "category": category if category in DRAIN_CATEGORIES else "suspended_subagent",
            "id": _opt_str(item, "id") or "",
            "summary": _opt_str(item, "summary") or "",
        },
        "action": action if action in DRAIN_ACTIONS else "resume",
        "reason": _opt_str(d, "reason") or "",
        "decided_by": decided_by,
    }
    rt = thread.runtime
    payload["decided_at"] = signed_timestamp(rt, DRAIN_DECISION, pipeline_id, decided_by)
    prompt = _opt_str(d, "prompt")
    ph = hash_prompt(prompt) if prompt is not None else _opt_str(d, "prompt_hash")
    if ph is not None:
        payload["prompt_hash"] = ph
    return journal(rt).record(DRAIN_DECISION, payload)


@builtin()
def lifecycle_receipts_snapshot(thread: Any) -> list[dict[str, Any]]:
    """``lifecycle_receipts_snapshot()``: every journaled receipt in ``seq`` order."""
    return [dict(e) for e in journal(thread.runtime).entries]


@builtin()
def verify_lifecycle_receipt_signature(
    thread: Any, kind: Any = None, payload: Any = None
) -> dict[str, Any]:
    """``verify_lifecycle_receipt_signature(kind, payload)``: ``{verified: true}`` or
    ``{verified: false, error}``; a tampered receipt's error contains ``HARN-SUS-013``."""
    try:
        verify_receipt(thread.runtime, display(kind) if kind is not None else "", payload)
    except ReceiptError as e:
        return {"verified": False, "error": e.message}
    return {"verified": True}


@builtin()
def lifecycle_resume_input_hash(thread: Any, value: Any = None) -> str:
    """``lifecycle_resume_input_hash(input)``: ``sha256:<hex>`` of its canonical JSON."""
    return hash_input(value)


@builtin()
def lifecycle_drain_decision_prompt_hash(thread: Any, prompt: Any = None) -> str:
    """``lifecycle_drain_decision_prompt_hash(prompt)``: ``sha256:<hex>`` of the text."""
    return hash_prompt(prompt if type(prompt) is str else display(prompt))


@builtin()
def lifecycle_replay_resume_input(
    thread: Any, receipt: Any = None, candidate: Any = None
) -> dict[str, Any]:
    """``lifecycle_replay_resume_input(receipt, candidate?)``: ``{ok: true, input}`` (the
    journaled input) when the signature verifies and ``candidate`` hashes like the
    recorded input; else ``{ok: false, error, code}`` (HARN-SUS-011 / HARN-SUS-013)."""
    try:
        verify_receipt(thread.runtime, RESUMPTION, receipt)
        actual = hash_input(candidate)
        if actual != receipt["input_hash"]:
            raise ReceiptError(
                f"HARN-SUS-011 replay resume input hash mismatch for {receipt['handle']} "
                f"(expected {receipt['input_hash']}, got {actual})",
                "HARN-SUS-011",
            )
    except ReceiptError as e:
        return _failure(e)
    return {"ok": True, "input": receipt.get("input")}


@builtin()
def lifecycle_replay_drain_decision(
    thread: Any, receipt: Any = None, candidate_prompt: Any = None
) -> dict[str, Any]:
    """``lifecycle_replay_drain_decision(receipt, candidate_prompt?)``: ``{ok: true,
    action}`` when the signature verifies and the prompt (if both sides have one) hashes
    like the recorded one; else ``{ok: false, error, code}`` (HARN-SUS-012 / 013)."""
    try:
        verify_receipt(thread.runtime, DRAIN_DECISION, receipt)
        expected = receipt.get("prompt_hash")
        if candidate_prompt is not None and type(expected) is str:
            actual = hash_prompt(display(candidate_prompt))
            if actual != expected:
                item = receipt.get("item") or {}
                raise ReceiptError(
                    f"HARN-SUS-012 replay drain decision prompt hash mismatch for "
                    f"{display(item.get('id', ''))} (expected {expected}, got {actual})",
                    "HARN-SUS-012",
                )
    except ReceiptError as e:
        return _failure(e)
    return {"ok": True, "action": receipt["action"]}


__all__ = [
    "ReceiptError",
    "ReceiptJournal",
    "canonical_json",
    "hash_input",
    "hash_prompt",
    "journal",
    "redact",
    "sign",
    "signed_timestamp",
    "verify_receipt",
    "verify_timestamp",
]
