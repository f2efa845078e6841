"""Human in the loop (Harn ``hitl.md``): ``ask_user``, ``request_approval``,
``dual_control``, ``hitl_pending``, ``hitl_respond`` and the host mocks of ``std/testing``
(``mock_host_response`` / ``clear_host_mocks``).

A HITL primitive asks the *host* — whoever embeds the program — and waits for its answer:

* a **host mock** registered with ``mock_host_response("hitl", op, response)`` answers at
  once (``op``: ``question`` for ``ask_user``, ``approval`` for ``request_approval``,
  ``dual_control``; ``response`` is one reviewer's answer ``{approved, reviewer, reason?}``
  or a list of them; an ``ask_user`` answer is the value itself or ``{answer}``);
* otherwise the request becomes **pending** (``hitl_pending()`` lists it, newest first, as
  ``{request_id, request_kind, agent, prompt, trace_id, timestamp, approvers, metadata}``)
  and the calling thread blocks as data until ``hitl_respond(request_id, response)``
  answers it, or its timeout (``timeout`` / ``deadline``, default 24 hours, on the runtime
  clock) passes: ``ask_user`` then returns its ``default`` or throws
  ``HumanTimeoutError``, an approval throws ``ApprovalDeniedError``.

``request_approval(action, {quorum?, reviewers?, reason?...})`` counts approvals of
distinct reviewers (named ``reviewers`` only, when given) until ``quorum`` (default 1): the
result is ``{approved: true, reviewers, approved_at, reason, signatures: [{reviewer,
signed_at, signature: "sha256:<hex>"}]}`` (a receipt over request id, reviewer, verdict,
reason and time); a denial throws ``{name: "ApprovalDeniedError", message, reviewer,
reason}``. ``dual_control(n, m, action, approvers?)`` needs ``n`` approvals of ``m`` and
then returns ``action()``.

Every request and response is appended to the runtime's HITL event log
(``hitl.questions``, ``hitl.approvals``, ``hitl.dual_control`` topics). The mocks, the
pending requests and the log are runtime state carried by program snapshots (provider
``hitl``); a blocked waiter is a thread blocked in a control builtin, i.e. data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import now_rfc3339, push_call, require_instruction_call, thrown
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnThrow
from harnpy.runtime.extensions import register_state
from harnpy.runtime.scheduler import block_control
from harnpy.runtime.values import Builtin, Closure, Duration
from harnpy.stdlib.registry import builtin

Gen = Generator[Any, Any, Any]

DEFAULT_TIMEOUT_MS = 24 * 60 * 60 * 1000
BUILTINS_MODULE = "std/agent/_builtins"
_TOPICS = {
    "question": "hitl.questions",
    "approval": "hitl.approvals",
    "dual_control": "hitl.dual_control",
    "escalation": "hitl.escalations",
}


class HitlState:
    """The runtime's HITL state: ``mocks`` (``"capability.op"`` -> response), ``pending``
    (request id -> request row), ``log`` (events), ``seq`` (request counter). ``waiters``
    (request id -> (waker, cancel timer)) is process state: the blocked threads are data,
    their wake-ups are not."""

    def __init__(self) -> None:
        self.mocks: dict[str, Any] = {}
        self.pending: dict[str, dict[str, Any]] = {}
        self.log: list[dict[str, Any]] = []
        self.seq = 0
        self.waiters: dict[str, Any] = {}


def state(runtime: Any) -> HitlState:
    """The runtime's :class:`HitlState` (created on first use)."""
    st = getattr(runtime, "hitl_state", None)
    if st is None:
        st = HitlState()
        runtime.hitl_state = st
    return st


def _emit(runtime: Any, kind: str, topic_kind: str, payload: dict[str, Any]) -> None:
    st = state(runtime)
    st.log.append(
        {
            "topic": _TOPICS[topic_kind],
            "kind": kind,
            "timestamp": now_rfc3339(runtime),
            "payload": payload,
        }
    )


def _timeout_ms(v: Any, where: str) -> int:
    if v is None:
        return DEFAULT_TIMEOUT_MS
    if type(v) is Duration:
        return int(v.ms)
    if type(v) is int and v >= 0:
        return v
    raise thrown(f"{where}: timeout must be a duration (e.g. 5m) or milliseconds")


def _agent(thread: Any) -> str:
    wid = getattr(thread, "worker_id", None)
    if wid is not None:
        return str(wid)
    from harnpy.lifecycle.sessions import agent_session_current_id

    sid = agent_session_current_id(thread)
    return sid if type(sid) is str else ""


def _mock(runtime: Any, op: str) -> tuple[bool, Any]:
    mocks = state(runtime).mocks
    key = f"hitl.{op}"
    if key in mocks:
        return True, mocks[key]
    return False, None


def _new_request(
    thread: Any, kind: str, prompt: str, approvers: list[str], meta: dict[str, Any]
) -> dict[str, Any]:
    rt = thread.runtime
    st = state(rt)
    st.seq += 1
    rid = f"hitl_{kind}_{st.seq}"
    return {
        "request_id": rid,
        "request_kind": kind,
        "agent": _agent(thread),
        "prompt": prompt,
        "trace_id": f"trace_{rid}",
        "timestamp": now_rfc3339(rt),
        "approvers": list(approvers),
        "metadata": meta,
    }


def _denied(message: str, **extra: Any) -> HarnThrow:
    return HarnThrow({"name": "ApprovalDeniedError", "message": message, **extra})


def _signature(rid: str, reviewer: str, approved: bool, reason: Any, signed_at: str) -> str:
    body = "\x1f".join(
        [rid, reviewer, "approved" if approved else "denied", display(reason), signed_at]
    )
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


class _Quorum:
    """Counting approvals of one request (``request_approval`` / ``dual_control``)."""

    def __init__(self, rid: str, quorum: int, reviewers: list[str]) -> None:
        self.rid = rid
        self.quorum = quorum
        self.allowed = reviewers
        self.approved: list[str] = []
        self.signatures: list[dict[str, Any]] = []
        self.reason: Any = None

    def add(self, runtime: Any, response: Any) -> None:
        """Count one reviewer's response; raises ApprovalDeniedError for a denial."""
        if type(response) is not dict:
            raise thrown(f"hitl: an approval response must be a dict, got {display(response)}")
        reviewer = response.get("reviewer")
        reviewer = reviewer if type(reviewer) is str else display(reviewer)
        if self.allowed and reviewer not in self.allowed:
            return  # not one of the named reviewers: does not count
        if reviewer in self.approved:
            return  # one principal counts once
        reason = response.get("reason")
        if not response.get("approved"):
            raise _denied(
                f"approval denied by {reviewer}" + (f": {reason}" if reason else ""),
                reviewer=reviewer,
                reason=reason,
                request_id=self.rid,
            )
        signed_at = response.get("signed_at")
        signed_at = signed_at if type(signed_at) is str else now_rfc3339(runtime)
        sig = response.get("signature")
        if type(sig) is not str:
            sig = _signature(self.rid, reviewer, True, reason, signed_at)
        self.approved.append(reviewer)
        self.signatures.append({"reviewer": reviewer, "signed_at": signed_at, "signature": sig})
        if reason is not None:
            self.reason = reason

    def to_data(self) -> dict[str, Any]:
        """The counter as snapshot data (a parked worker carries it in its frames)."""
        return {"rid": self.rid, "quorum": self.quorum, "allowed": list(self.allowed)}

    @classmethod
    def from_data(cls, data: Any) -> _Quorum:
        """The counter of :meth:`to_data`."""
        if type(data) is not dict or type(data.get("rid")) is not str:
            raise thrown("hitl: internal: malformed approval state")
        return cls(data["rid"], int(data.get("quorum") or 1), list(data.get("allowed") or []))

    def done(self) -> bool:
        return len(self.approved) >= self.quorum

    def record(self, runtime: Any) -> dict[str, Any]:
        return {
            "approved": True,
            "reviewers": list(self.approved),
            "approved_at": now_rfc3339(runtime),
            "reason": self.reason,
            "signatures": list(self.signatures),
            "request_id": self.rid,
        }


def _wait(
    thread: Any, row: dict[str, Any], timeout_ms: int, on_response: Any, on_timeout: Any
) -> None:
    """Block ``thread`` on the pending request ``row``: ``on_response(value)`` returns
    ``(done, result)`` for each ``hitl_respond``; ``on_timeout()`` gives the value (or
    raises) when the timeout passes."""
    rt = thread.runtime
    st = state(rt)
    rid = row["request_id"]
    st.pending[rid] = row
    waker = block_control(thread, f"a human ({row['request_kind']} {rid})")

    def fire() -> None:
        if rid not in st.pending:
            return
        st.pending.pop(rid, None)
        st.waiters.pop(rid, None)
        _emit(rt, "hitl.timeout", row["request_kind"], {"request_id": rid})
        try:
            waker.wake(on_timeout())
        except HarnThrow as exc:
            waker.fail(exc)

    cancel = rt.scheduler.at(rt.clock.monotonic_ms() + timeout_ms, fire)
    st.waiters[rid] = (waker, cancel, on_response)


def _worker_record(thread: Any) -> Any:
    """The worker record whose thread is ``thread`` (None outside an agent worker)."""
    from harnpy.lifecycle.services import services

    wid = getattr(thread, "worker_id", None)
    rec = services(thread.runtime).workers.get(wid) if wid else None
    return rec if rec is not None and rec.thread is thread else None


def _park_via_harn(thread: Any, fn: str, args: list[Any]) -> None:
    from harnpy.lifecycle.compaction import std_function

    push_call(thread, std_function(thread.runtime, BUILTINS_MODULE, fn), args)


@builtin("__hitl_park", control=True)
def hitl_park(thread: Any, row: Any = None) -> Any:
    """``__hitl_park(row)``: park the calling agent worker on the HITL request ``row`` (its
    snapshot is written, the wait listed by ``hitl_pending`` with ``metadata.worker_id``
    and ``snapshot_path``); the call returns the resume payload when a resume (``
    hitl_respond``, ``resume_agent(handle, answer)``, ``harnpy run --resume`` with
    ``HARNPY_RESUME_INPUT``) delivers the answer."""
    from harnpy.lifecycle.parking import _caller_loop_state, park_worker

    rec = _worker_record(thread)
    if rec is None or type(row) is not dict:
        raise thrown("hitl: internal: only an agent worker parks on a human")
    st = _caller_loop_state(thread) or {}
    kind = row.get("request_kind")
    req = {
        "reason": f"waiting for a human ({kind}): {row.get('prompt')}",
        "initiator": "self",
        "conditions": None,
    }
    park_worker(thread, rec, st, req, None)
    pending = {
        **row,
        "metadata": {
            **(row.get("metadata") or {}),
            "worker_id": rec.id,
            "snapshot_path": rec.snapshot_path,
        },
    }
    state(thread.runtime).pending[str(row.get("request_id"))] = pending
    return None


def _resume_input(payload: Any) -> Any:
    return payload.get("input") if type(payload) is dict else None


@builtin("__hitl_parked_answer")
def hitl_parked_answer(
    thread: Any, row: Any = None, options: Any = None, payload: Any = None
) -> Any:
    """``__hitl_parked_answer(row, options, payload)``: the ``ask_user`` answer of a worker
    resumed from a HITL park (its resume input; ``default`` or ``HumanTimeoutError`` when
    the resume carried none)."""
    rid = row.get("request_id") if type(row) is dict else None
    state(thread.runtime).pending.pop(str(rid), None)
    opts = options if type(options) is dict else {}
    value = _resume_input(payload)
    _emit(
        thread.runtime, "hitl.response_received", "question", {"request_id": rid, "response": value}
    )
    if value is None:
        if "default" in opts:
            return opts["default"]
        raise HarnThrow(
            {"name": "HumanTimeoutError", "message": "the worker was resumed without an answer"}
        )
    return _answer(value, opts)


@builtin("__hitl_parked_approval")
def hitl_parked_approval(
    thread: Any, row: Any = None, quorum: Any = None, payload: Any = None
) -> Any:
    """``__hitl_parked_approval(row, quorum, payload)``: the ApprovalRecord of a worker
    resumed from an approval park; the resume input is one reviewer's response or a list.
    Throws ``ApprovalDeniedError`` for a denial or a quorum the responses do not reach."""
    rt = thread.runtime
    rid = row.get("request_id") if type(row) is dict else None
    state(rt).pending.pop(str(rid), None)
    q = _Quorum.from_data(quorum)
    value = _resume_input(payload)
    kind = row.get("request_kind") if type(row) is dict else "approval"
    kind = kind if kind in _TOPICS else "approval"
    for response in value if type(value) is list else ([] if value is None else [value]):
        _emit(rt, "hitl.response_received", kind, {"request_id": rid, "response": response})
        q.add(rt, response)
        if q.done():
            break
    if not q.done():
        raise _denied(
            f"approval quorum not reached: {len(q.approved)} of {q.quorum} approvals",
            request_id=rid,
        )
    _emit(rt, f"hitl.{kind}_approved", kind, {"request_id": rid, "reviewers": q.approved})
    return q.record(rt)


@builtin("hitl_respond", callback=True)
def hitl_respond(thread: Any, request_id: Any = None, response: Any = None) -> Gen:
    """``hitl_respond(request_id, response)``: answer a pending HITL request (what a host's
    ``harn.hitl.respond`` does): an ``ask_user`` answer, or one reviewer's ``{approved,
    reviewer, reason?}`` (a list of them for a parked worker). A worker parked on the
    request is resumed with ``response`` as its input. Returns whether the request is now
    settled; throws for an unknown request id."""
    rt = thread.runtime
    st = state(rt)
    if type(request_id) is not str or request_id not in st.pending:
        raise thrown(f"hitl_respond: no pending HITL request {display(request_id)}")
    row = st.pending[request_id]
    meta: dict[str, Any] = row["metadata"] if type(row.get("metadata")) is dict else {}
    if meta.get("worker_id") is not None and request_id not in st.waiters:
        # a worker parked on it: resume the worker with the answer as its input
        from harnpy.lifecycle.resuming import parse_resume_args, resume_gen

        ra = parse_resume_args((meta["worker_id"], {"input": response}))
        yield from resume_gen(thread, meta["worker_id"], ra, where="hitl_respond")
        return True
    waker, cancel, on_response = st.waiters.get(request_id, (None, None, None))
    _emit(
        rt,
        "hitl.response_received",
        row["request_kind"],
        {"request_id": request_id, "response": response},
    )
    if on_response is None:
        st.pending.pop(request_id, None)
        return True
    try:
        done, value = on_response(response)
    except HarnThrow as exc:
        st.pending.pop(request_id, None)
        st.waiters.pop(request_id, None)
        cancel()
        waker.fail(exc)
        return True
    if done:
        st.pending.pop(request_id, None)
        st.waiters.pop(request_id, None)
        cancel()
        waker.wake(value)
    return bool(done)


def _answer(value: Any, opts: dict[str, Any]) -> Any:
    if type(value) is dict and "answer" in value:
        value = value["answer"]
    default = opts.get("default")
    if default is not None and type(value) is str and opts.get("schema") is None:
        if type(default) is bool:
            low = value.strip().lower()
            if low in ("true", "yes", "y", "1"):
                return True
            if low in ("false", "no", "n", "0"):
                return False
        elif type(default) is int:
            try:
                return int(value.strip())
            except ValueError:
                return value
    return value


@builtin("ask_user", control=True)
def ask_user(thread: Any, prompt: Any = None, options: Any = None) -> Any:
    """``ask_user(prompt, options?)``: ask the host a question and return its answer;
    options ``timeout`` (duration, default 24h), ``default`` (returned on timeout; a string
    answer is coerced toward its type), ``schema``. Waits (blocked as data, listed by
    ``hitl_pending``) until ``hitl_respond`` or a ``mock_host_response("hitl", "question",
    ...)`` answers. Throws ``HumanTimeoutError`` on a timeout without default."""
    require_instruction_call(thread, "ask_user")
    if type(prompt) is not str:
        raise thrown(f"ask_user: prompt must be a string, got {display(prompt)}")
    if options is not None and type(options) is not dict:
        raise thrown("ask_user: options must be a dict")
    opts = dict(options or {})
    timeout = _timeout_ms(opts.get("timeout"), "ask_user")
    rt = thread.runtime
    mocked, value = _mock(rt, "question")
    row = _new_request(thread, "question", prompt, [], {"timeout_ms": timeout})
    _emit(rt, "hitl.question_asked", "question", dict(row))
    if mocked:
        _emit(
            rt,
            "hitl.response_received",
            "question",
            {"request_id": row["request_id"], "response": value},
        )
        return _answer(value, opts)

    if _worker_record(thread) is not None:
        # an agent worker parks on the question, like agent_await_resumption: its snapshot
        # is written and the answer is the resume input (resume_agent / run --resume)
        _park_via_harn(thread, "__hitl_ask_in_worker", [row, opts])
        return None

    def on_response(v: Any) -> tuple[bool, Any]:
        return True, _answer(v, opts)

    def on_timeout() -> Any:
        if "default" in opts:
            return opts["default"]
        raise HarnThrow({"name": "HumanTimeoutError", "message": f"ask_user timed out: {prompt}"})

    _wait(thread, row, timeout, on_response, on_timeout)
    return None


def _approval_request(
    thread: Any,
    kind: str,
    action: str,
    quorum: int,
    reviewers: list[str],
    timeout: int,
    extra: dict[str, Any],
) -> Any:
    """Run one quorum request: returns the record now (mocked) or blocks the thread."""
    rt = thread.runtime
    row = _new_request(
        thread, kind, action, reviewers, {"quorum": quorum, "deadline_ms": timeout, **extra}
    )
    _emit(
        rt,
        f"hitl.{'approval' if kind == 'approval' else 'dual_control'}_requested",
        kind,
        dict(row),
    )
    q = _Quorum(row["request_id"], quorum, reviewers)
    mocked, value = _mock(rt, kind)
    if mocked:
        for response in value if type(value) is list else [value]:
            _emit(rt, "hitl.response_received", kind, {"request_id": q.rid, "response": response})
            q.add(rt, response)
            if q.done():
                break
        if not q.done():
            raise _denied(
                f"approval quorum not reached: {len(q.approved)} of {quorum} approvals",
                request_id=q.rid,
            )
        _emit(rt, f"hitl.{kind}_approved", kind, {"request_id": q.rid, "reviewers": q.approved})
        return q.record(rt)

    if _worker_record(thread) is not None:
        _park_via_harn(thread, "__hitl_approval_in_worker", [row, q.to_data()])
        return None

    def on_response(v: Any) -> tuple[bool, Any]:
        q.add(rt, v)
        if q.done():
            _emit(rt, f"hitl.{kind}_approved", kind, {"request_id": q.rid, "reviewers": q.approved})
            return True, q.record(rt)
        return False, None

    def on_timeout() -> Any:
        raise _denied(
            f"approval timed out: {len(q.approved)} of {quorum} approvals", request_id=q.rid
        )

    _wait(thread, row, timeout, on_response, on_timeout)
    return None


def _names(v: Any, where: str) -> list[str]:
    if v is None:
        return []
    if type(v) is not list or any(type(x) is not str for x in v):
        raise thrown(f"{where}: reviewers must be a list of names")
    return list(dict.fromkeys(v))


@builtin("request_approval", control=True)
def request_approval(thread: Any, action: Any = None, options: Any = None) -> Any:
    """``request_approval(action, options?)``: ask for ``quorum`` (default 1) approvals of
    distinct reviewers (``reviewers``: only those count) and return the ApprovalRecord
    ``{approved, reviewers, approved_at, reason, signatures: [{reviewer, signed_at,
    signature}]}``; ``deadline`` (duration, default 24h). A denial or a deadline throws
    ``ApprovalDeniedError``."""
    require_instruction_call(thread, "request_approval")
    if type(action) is not str:
        raise thrown(f"request_approval: action must be a string, got {display(action)}")
    if options is not None and type(options) is not dict:
        raise thrown("request_approval: options must be a dict")
    opts = dict(options or {})
    quorum = opts.get("quorum", 1)
    if type(quorum) is not int or quorum < 1:
        raise thrown("request_approval: quorum must be a positive int")
    reviewers = _names(opts.get("reviewers"), "request_approval")
    if reviewers and quorum > len(reviewers):
        raise thrown(f"request_approval: quorum {quorum} exceeds the {len(reviewers)} reviewers")
    timeout = _timeout_ms(opts.get("deadline", opts.get("timeout")), "request_approval")
    extra = {k: opts[k] for k in ("detail", "args", "principal") if opts.get(k) is not None}
    return _approval_request(thread, "approval", action, quorum, reviewers, timeout, extra)


@builtin("__dual_control_approve", control=True)
def dual_control_approve(thread: Any, n: Any = None, m: Any = None, approvers: Any = None) -> Any:
    """``__dual_control_approve(n, m, approvers)``: the quorum part of ``dual_control``."""
    if type(n) is not int or type(m) is not int or not 1 <= n <= m:
        raise thrown("dual_control: needs 1 <= n <= m")
    names = _names(approvers, "dual_control")
    if names and len(names) != m:
        raise thrown(f"dual_control: {m} approvers expected, got {len(names)}")
    return _approval_request(
        thread, "dual_control", f"dual control ({n} of {m})", n, names, DEFAULT_TIMEOUT_MS, {"m": m}
    )


@builtin("dual_control", control=True)
def dual_control(
    thread: Any, n: Any = None, m: Any = None, action: Any = None, approvers: Any = None
) -> Any:
    """``dual_control(n, m, action, approvers?)``: wait for ``n`` approvals out of ``m``
    approvers, then return ``action()`` (the closure does not run before the quorum). A
    denial throws ``ApprovalDeniedError``."""
    require_instruction_call(thread, "dual_control")
    if type(action) not in (Closure, Builtin):
        raise thrown(f"dual_control: action must be a function, got {display(action)}")
    from harnpy.lifecycle.compaction import std_function

    push_call(
        thread,
        std_function(thread.runtime, BUILTINS_MODULE, "__dual_control"),
        [n, m, action, approvers],
    )
    return None


def _escalation_handle(runtime: Any, row: dict[str, Any], response: Any) -> dict[str, Any]:
    """The EscalationHandle of an accepted escalation; raises for a refusal."""
    r = response if type(response) is dict else {"accepted": bool(response)}
    reviewer = r.get("reviewer")
    if not r.get("accepted"):
        raise HarnThrow(
            {
                "name": "EscalationRejectedError",
                "message": f"escalation to {row['metadata'].get('role')} was refused"
                + (f": {r.get('reason')}" if r.get("reason") else ""),
                "reviewer": reviewer,
                "request_id": row["request_id"],
            }
        )
    _emit(
        runtime,
        "hitl.escalation_accepted",
        "escalation",
        {"request_id": row["request_id"], "reviewer": reviewer},
    )
    return {
        "request_id": row["request_id"],
        "role": row["metadata"].get("role"),
        "reason": row["prompt"],
        "trace_id": row["trace_id"],
        "status": "accepted",
        "accepted_at": now_rfc3339(runtime),
        "reviewer": reviewer if type(reviewer) is str else None,
    }


@builtin("escalate_to", control=True)
def escalate_to(thread: Any, role: Any = None, reason: Any = None) -> Any:
    """``escalate_to(role, reason)``: raise the current work to a higher-trust ``role`` and
    wait until the host accepts (``hitl_respond(request_id, {accepted: true, reviewer})``,
    or ``mock_host_response("hitl", "escalation", ...)``); returns the EscalationHandle
    ``{request_id, role, reason, trace_id, status: "accepted", accepted_at, reviewer}``.
    A refusal throws ``EscalationRejectedError``. There is no timeout: the wait lasts until
    someone answers (an agent worker parks)."""
    require_instruction_call(thread, "escalate_to")
    if type(role) is not str or not role or type(reason) is not str:
        raise thrown("escalate_to: expects a role and a reason (strings)")
    rt = thread.runtime
    row = _new_request(thread, "escalation", reason, [], {"role": role})
    _emit(rt, "hitl.escalation_issued", "escalation", dict(row))
    mocked, value = _mock(rt, "escalation")
    if mocked:
        return _escalation_handle(rt, row, value)
    if _worker_record(thread) is not None:
        _park_via_harn(thread, "__hitl_escalation_in_worker", [row])
        return None

    def on_response(v: Any) -> tuple[bool, Any]:
        return True, _escalation_handle(rt, row, v)

    def on_timeout() -> Any:  # pragma: no cover - the timer is set beyond any run
        raise HarnThrow({"name": "HumanTimeoutError", "message": "escalation timed out"})

    _wait(thread, row, 100 * 365 * DEFAULT_TIMEOUT_MS, on_response, on_timeout)
    return None


@builtin("__hitl_parked_escalation")
def hitl_parked_escalation(thread: Any, row: Any = None, payload: Any = None) -> Any:
    """``__hitl_parked_escalation(row, payload)``: the EscalationHandle of a worker resumed
    from an escalation park (the resume input is ``{accepted, reviewer, reason?}``)."""
    if type(row) is not dict:
        raise thrown("hitl: internal: malformed escalation state")
    state(thread.runtime).pending.pop(str(row.get("request_id")), None)
    return _escalation_handle(thread.runtime, row, _resume_input(payload))


@builtin("hitl_pending")
def hitl_pending(thread: Any, filters: Any = None) -> list[dict[str, Any]]:
    """``hitl_pending(filters?)``: the pending HITL requests, newest first, as
    ``HitlPendingRequest`` rows ``{request_id, request_kind, agent, prompt, trace_id,
    timestamp, approvers, metadata}``. Filters: ``kinds`` (list of ``question`` /
    ``approval`` / ``dual_control`` / ``escalation``), ``agent``, ``since`` / ``until`` (RFC 3339,
    inclusive), ``limit`` (default 500, at most 5000)."""
    f = filters if type(filters) is dict else {}
    rows = list(state(thread.runtime).pending.values())
    kinds = f.get("kinds")
    if type(kinds) is list:
        rows = [r for r in rows if r["request_kind"] in kinds]
    if type(f.get("agent")) is str:
        rows = [r for r in rows if r["agent"] == f["agent"]]
    if type(f.get("since")) is str:
        rows = [r for r in rows if r["timestamp"] >= f["since"]]
    if type(f.get("until")) is str:
        rows = [r for r in rows if r["timestamp"] <= f["until"]]
    limit = f.get("limit", 500)
    limit = min(limit, 5000) if type(limit) is int and limit > 0 else 500
    rows.reverse()
    return [dict(r) for r in rows[:limit]]


@builtin("hitl_events")
def hitl_events(thread: Any) -> list[dict[str, Any]]:
    """``hitl_events()``: the HITL event log, oldest first (``{topic, kind, timestamp,
    payload}``; topics ``hitl.questions``, ``hitl.approvals``, ``hitl.dual_control``)."""
    return [dict(e) for e in state(thread.runtime).log]


@builtin("__host_mock_set")
def host_mock_set(
    thread: Any, capability: Any = None, op: Any = None, response: Any = None
) -> None:
    """``__host_mock_set(capability, op, response)``: answer host calls ``capability.op``
    with ``response`` until cleared (``std/testing`` ``mock_host_response``)."""
    if type(capability) is not str or type(op) is not str:
        raise thrown("mock_host_response: capability and operation must be strings")
    state(thread.runtime).mocks[f"{capability}.{op}"] = response


@builtin("__host_mock_clear")
def host_mock_clear(thread: Any) -> None:
    """``__host_mock_clear()``: drop every host mock (``std/testing`` ``clear_host_mocks``)."""
    state(thread.runtime).mocks.clear()


def _save(thread: Any) -> Any:
    st = getattr(thread.runtime, "hitl_state", None)
    if st is None or not (st.mocks or st.log or st.pending):
        return None
    if st.waiters:
        from harnpy.runtime.snapshot import SnapshotError

        raise SnapshotError(
            "a HITL request is waiting for a human in another task: answer it first", "E402"
        )
    return {
        "mocks": dict(st.mocks),
        "pending": dict(st.pending),
        "log": list(st.log),
        "seq": st.seq,
    }


def _load(thread: Any, data: Any) -> Any:
    if type(data) is not dict:
        raise TypeError("hitl must be a dict")
    if type(data.get("mocks")) is not dict or type(data.get("pending")) is not dict:
        raise TypeError("hitl needs `mocks` and `pending` dicts")
    if type(data.get("log")) is not list or type(data.get("seq")) is not int:
        raise TypeError("hitl needs a `log` list and an int `seq`")
    rt = thread.runtime

    def apply() -> None:
        st = HitlState()
        st.mocks = dict(data["mocks"])
        st.pending = dict(data["pending"])
        st.log = list(data["log"])
        st.seq = data["seq"]
        rt.hitl_state = st

    return apply


register_state("hitl", _save, _load)
