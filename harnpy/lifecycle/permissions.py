"""Per-call tool permissions of an agent loop (Harn ``llm/agent_loop.md``, "sub_agent_run"
and "Delegated workers"; ``builtins.md``).

The capability ceiling (``policy``, ``allowed_tools``, ``denied_tools``:
:func:`harnpy.lifecycle.tools.policy_denial`) is checked first; its
``policy.tool_arg_constraints: [{tool, arg_key, arg_patterns}]`` (the argument must match
one of the globs) is checked here (:func:`constraint_denial`). Then two loop options decide
whether a tool call the model issued runs:

* ``approval_policy: {auto_approve?: [glob], auto_deny?: [glob], write_path_allowlist?:
  [glob]}`` — static rules over the tool name (``fnmatch`` globs, ``read*``). A name
  matching ``auto_deny`` is denied (``auto_denied``); one matching ``auto_approve`` runs;
  a tool whose ``metadata.path_params`` name arguments is denied when such an argument is a
  path outside ``write_path_allowlist``.
* ``permissions: {allow?, deny?, on_escalation?}`` — per-agent dynamic rules. ``allow`` and
  ``deny`` are a list of tool-name globs, or a dict ``{tool glob: rule}`` whose rule is
  ``true``, a list of argument globs (matched against the call's string arguments) or a
  Harn predicate ``{ args -> bool }``. A call matching ``deny``, or not matching a given
  ``allow``, is refused — unless ``on_escalation(request)`` (``request: {tool, args,
  reason, session_id}``) returns ``true``, ``{grant: "once"}`` or ``{grant: "session"}``
  (the tool is then granted for the rest of the loop). A call matching ``allow`` is
  granted.

Every decision of ``permissions`` is recorded as a transcript event: ``PermissionGrant``,
``PermissionDeny``, ``PermissionEscalation`` (``{kind, tool, tool_call_id, args, reason,
approver?, grant?, visibility: "internal"}``); ``approval_policy`` denials are recorded as
``PermissionDeny`` too. A refused call is answered with the tool result ``{"error":
"permission_denied", "tool", "reason"}`` (JSON) and counts as rejected; a ``sub_agent_run``
whose child was refused ends with ``error.category == "permission_denied"``.

The predicates and the escalation handler are Harn closures, so the decision runs as a
small state machine driven from ``std/agent/_loop`` (``__agent_perm_begin`` ->
``__agent_perm_next`` per callback result -> ``__agent_perm_end``): the callbacks are
ordinary Harn calls of the loop (snapshot data, no native frame in between). All state is
in the loop state dict (``approval_policy``, ``permissions``, ``permission_grants``).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.services import services
from harnpy.lifecycle.tools import outcome_of
from harnpy.lifecycle.transcript import append_event
from harnpy.runtime.display import display
from harnpy.runtime.values import Builtin, Closure
from harnpy.stdlib.registry import builtin

_APPROVAL_KEYS = ("auto_approve", "auto_deny", "write_path_allowlist", "require_approval")
_PERMISSION_KEYS = ("allow", "deny", "on_escalation")


def _callable(v: Any) -> bool:
    return type(v) in (Closure, Builtin)


def check_options(opts: dict[str, Any], where: str) -> tuple[Any, Any]:
    """The loop's ``(approval_policy, permissions)`` options, checked.

    Raises:
        HarnThrow: a malformed option (fail closed: a policy that cannot be read is a
            configuration error, never ignored).
    """
    approval = opts.get("approval_policy")
    if approval is not None:
        if type(approval) is not dict:
            raise thrown(f"{where}: option `approval_policy` must be a dict")
        for key in _APPROVAL_KEYS:
            v = approval.get(key)
            if v is not None and (type(v) is not list or any(type(x) is not str for x in v)):
                raise thrown(f"{where}: option `approval_policy.{key}` must be a list of globs")
    perms = opts.get("permissions")
    if perms is not None:
        if type(perms) is not dict:
            raise thrown(f"{where}: option `permissions` must be a dict")
        unknown = sorted(k for k in perms if k not in _PERMISSION_KEYS)
        if unknown:
            raise thrown(
                f"{where}: unknown key `permissions.{unknown[0]}` (expected allow, deny, "
                "on_escalation)"
            )
        for key in ("allow", "deny"):
            v = perms.get(key)
            if v is None or type(v) is dict:
                continue
            if type(v) is not list or any(type(x) is not str for x in v):
                raise thrown(
                    f"{where}: option `permissions.{key}` must be a list of tool globs or a "
                    "dict of rules"
                )
        esc = perms.get("on_escalation")
        if esc is not None and not _callable(esc):
            raise thrown(f"{where}: option `permissions.on_escalation` must be a function")
    return approval, perms


def _rule(spec: Any, name: str) -> Any:
    """The rule of ``spec`` (an allow/deny value) for tool ``name``: None (no match),
    True, a list of argument globs or a callable."""
    if type(spec) is list:
        return True if any(fnmatch.fnmatchcase(name, g) for g in spec) else None
    if type(spec) is dict:
        if name in spec:
            return spec[name]
        for pattern, rule in spec.items():
            if fnmatch.fnmatchcase(name, str(pattern)):
                return rule
    return None


def _string_args(args: Any) -> list[str]:
    out: list[str] = []
    if type(args) is dict:
        for v in args.values():
            out.extend(_string_args(v))
    elif type(args) is list:
        for v in args:
            out.extend(_string_args(v))
    elif type(args) is str:
        out.append(args)
    return out


def _static(rule: Any, args: Any) -> bool | None:
    """The verdict of a rule without a callback (None: it needs one)."""
    if rule is None or rule is False:
        return False
    if rule is True:
        return True
    if type(rule) is list:
        values = _string_args(args)
        return any(fnmatch.fnmatchcase(v, str(g)) for v in values for g in rule)
    if _callable(rule):
        return None
    return bool(rule)


def denied_content(tool: Any, reason: str) -> str:
    """The tool result text of a refused call: ``{"error": "permission_denied", "tool",
    "reason"}`` as JSON."""
    return json.dumps(
        {"error": "permission_denied", "tool": tool, "reason": reason}, ensure_ascii=False
    )


def _approval_verdict(approval: Any, entry: Any, name: str, args: Any) -> tuple[str, str] | None:
    """``("allow"|"deny", reason)`` from ``approval_policy``, or None (no rule applies)."""
    if type(approval) is not dict:
        return None
    for g in approval.get("auto_deny") or []:
        if fnmatch.fnmatchcase(name, g):
            return "deny", f"auto_denied: tool '{name}' matches deny pattern '{g}'"
    allowlist = approval.get("write_path_allowlist")
    meta = entry.get("metadata") if type(entry) is dict else None
    path_params = meta.get("path_params") if type(meta) is dict else None
    if type(allowlist) is list and type(path_params) is list and type(args) is dict:
        for p in path_params:
            value = args.get(p)
            if (
                type(value) is str
                and value
                and not any(fnmatch.fnmatchcase(value, g) for g in allowlist)
            ):
                return "deny", (
                    f"write_path_denied: argument '{p}' ({value}) is outside the write path "
                    f"allowlist ({', '.join(allowlist)})"
                )
    for g in approval.get("auto_approve") or []:
        if fnmatch.fnmatchcase(name, g):
            return "allow", f"auto_approved: tool '{name}' matches approve pattern '{g}'"
    return None


def _constraints(st: dict[str, Any]) -> list[Any]:
    policy = st.get("policy")
    rules = policy.get("tool_arg_constraints") if type(policy) is dict else None
    return rules if type(rules) is list else []


def constraint_denial(st: dict[str, Any], name: str, args: Any) -> str | None:
    """Why the capability ceiling's ``policy.tool_arg_constraints`` (``[{tool, arg_key,
    arg_patterns}]``: the argument must match one of the globs) refuses this call, or
    None. A rule whose argument is missing or not a string refuses the call too."""
    for rule in _constraints(st):
        if type(rule) is not dict or not fnmatch.fnmatchcase(name, str(rule.get("tool"))):
            continue
        key = rule.get("arg_key")
        patterns = rule.get("arg_patterns")
        if type(key) is not str or type(patterns) is not list:
            continue
        value = args.get(key) if type(args) is dict else None
        if type(value) is not str or not any(fnmatch.fnmatchcase(value, str(g)) for g in patterns):
            shown = ", ".join(str(g) for g in patterns)
            return (
                f"tool '{name}' argument '{key}' ({display(value)}) does not match allowed "
                f"patterns ({shown})"
            )
    return None


def active(st: dict[str, Any]) -> bool:
    """Whether the loop has per-call permission rules to apply."""
    return (
        st.get("approval_policy") is not None
        or st.get("permissions") is not None
        or bool(_constraints(st))
    )


def _event(step: dict[str, Any], kind: str, reason: str, **extra: Any) -> None:
    prep = step["prep"]
    step["events"].append(
        {
            "kind": kind,
            "tool": prep.get("name"),
            "tool_call_id": prep.get("id"),
            "args": prep.get("args"),
            "reason": reason,
            "visibility": "internal",
            **extra,
        }
    )


def _decide(step: dict[str, Any], decision: str, reason: str) -> dict[str, Any]:
    step["decision"] = decision
    step["reason"] = reason
    step["call"] = None
    return step


def _advance(step: dict[str, Any]) -> dict[str, Any]:
    """Run the machine until it needs a callback (``call`` set) or decided."""
    perms = step["permissions"] if type(step["permissions"]) is dict else {}
    prep = step["prep"]
    name = prep.get("name")
    while step["decision"] is None and step["call"] is None:
        phase = step["phase"]
        if phase == "deny":
            rule = _rule(perms.get("deny"), name)
            verdict = _static(rule, prep.get("args"))
            step["phase"] = "deny_result"
            if verdict is None:
                step["call"], step["arg"] = rule, prep.get("args")
            else:
                step["verdict"] = verdict
        elif phase == "deny_result":
            if step.pop("verdict", False):
                step["phase"] = "refused"
                step["refusal"] = f"tool '{name}' is denied by the agent's permissions"
            else:
                step["phase"] = "allow"
        elif phase == "allow":
            spec = perms.get("allow")
            if spec is None:
                return _decide(step, "allow", "")
            rule = _rule(spec, name)
            if rule is None:
                step["phase"] = "refused"
                step["refusal"] = f"tool '{name}' is not in the agent's allowed permissions"
                continue
            verdict = _static(rule, prep.get("args"))
            step["phase"] = "allow_result"
            if verdict is None:
                step["call"], step["arg"] = rule, prep.get("args")
            else:
                step["verdict"] = verdict
        elif phase == "allow_result":
            if step.pop("verdict", False):
                _event(step, "PermissionGrant", "allowed by the agent's permissions")
                return _decide(step, "allow", "allowed by the agent's permissions")
            step["phase"] = "refused"
            step["refusal"] = f"tool '{name}' was not allowed for these arguments"
        elif phase == "refused":
            reason = step["refusal"]
            if name in step["grants"]:
                _event(step, "PermissionGrant", "granted for the session", grant="session")
                return _decide(step, "allow", "granted for the session")
            esc = perms.get("on_escalation")
            if esc is None:
                _event(step, "PermissionDeny", reason)
                return _decide(step, "deny", reason)
            step["phase"] = "escalated"
            step["call"] = esc
            step["arg"] = {
                "tool": name,
                "args": prep.get("args"),
                "reason": reason,
                "session_id": step.get("session_id"),
                "tool_call_id": prep.get("id"),
            }
        else:  # pragma: no cover - the phases above are exhaustive
            return _decide(step, "deny", "internal: unknown permission phase")
    return step


@builtin("__agent_perm_begin")
def agent_perm_begin(thread: Any, st: Any = None, prep: Any = None) -> dict[str, Any]:
    """``__agent_perm_begin(st, prep)``: start deciding the dispatch ``prep`` under the
    loop's ``approval_policy`` / ``permissions`` (module docstring). Returns the machine
    state: ``call`` (a callback to run with ``arg``) or ``decision`` set."""
    assert type(st) is dict and type(prep) is dict
    entry = next((e for e in st.get("tools") or [] if e.get("name") == prep.get("name")), None)
    step: dict[str, Any] = {
        "prep": prep,
        "permissions": st.get("permissions"),
        "grants": list(st.get("permission_grants") or []),
        "session_id": st.get("session_id"),
        "events": [],
        "decision": None,
        "reason": "",
        "call": None,
        "arg": None,
        "phase": "deny",
    }
    ceiling = constraint_denial(st, str(prep.get("name")), prep.get("args"))
    if ceiling is not None:
        _event(step, "PermissionDeny", ceiling, source="policy")
        return _decide(step, "deny", ceiling)
    verdict = _approval_verdict(
        st.get("approval_policy"), entry, str(prep.get("name")), prep.get("args")
    )
    if verdict is not None and verdict[0] == "deny":
        _event(step, "PermissionDeny", verdict[1], source="approval_policy")
        return _decide(step, "deny", verdict[1])
    if st.get("permissions") is None:
        return _decide(step, "allow", verdict[1] if verdict else "")
    return _advance(step)


@builtin("__agent_perm_next")
def agent_perm_next(thread: Any, step: Any = None, outcome: Any = None) -> dict[str, Any]:
    """``__agent_perm_next(step, outcome)``: feed the try-expression result of the callback
    ``step.call`` back into the machine. A predicate or escalation handler that throws
    refuses the call (fail closed)."""
    assert type(step) is dict
    step = dict(step)
    ok, value = outcome_of(outcome)
    phase = step["phase"]
    name = step["prep"].get("name")
    step["call"] = None
    if not ok:
        failure = f"the permission callback for tool '{name}' failed: {display(value)}"
        _event(step, "PermissionDeny", failure)
        return _decide(step, "deny", failure)
    if phase in ("deny_result", "allow_result"):
        step["verdict"] = bool(value) if type(value) is not bool else value
        return _advance(step)
    # escalated
    grant: str | None = None
    approver: Any = None
    reason: Any = None
    if value is True:
        grant = "once"
    elif type(value) is dict and value.get("grant") in ("once", "session"):
        grant = value["grant"]
        approver, reason = value.get("approver"), value.get("reason")
    elif type(value) is dict and value.get("grant") is True:
        grant = "once"
    refusal = step.get("refusal") or "escalation refused"
    if type(value) is dict and value.get("reason") is not None and reason is None:
        reason = value.get("reason")
    text = reason if type(reason) is str else (refusal if grant is None else "escalation granted")
    _event(
        step,
        "PermissionEscalation",
        refusal,
        outcome="granted" if grant else "refused",
        grant=grant,
        approver=approver,
        decision_reason=text,
    )
    if grant is None:
        _event(step, "PermissionDeny", text)
        return _decide(step, "deny", text)
    if grant == "session" and name not in step["grants"]:
        step["grants"] = [*step["grants"], name]
    _event(step, "PermissionGrant", text, grant=grant, approver=approver)
    return _decide(step, "allow", text)


@builtin("__agent_perm_end")
def agent_perm_end(thread: Any, st: Any = None, step: Any = None) -> dict[str, Any]:
    """``__agent_perm_end(st, step)``: ``{st, prep}`` after the decision — the transcript
    with the permission events, the session grants, and ``prep`` turned into a
    ``permission`` rejection (tool result ``{error: "permission_denied", tool, reason}``)
    when the call was refused."""
    assert type(st) is dict and type(step) is dict
    t = st["transcript"]
    svc = services(thread.runtime)
    for e in step.get("events") or []:
        svc.emit_session_event(st.get("session_id"), {"type": e["kind"], **e})
        t = append_event(t, e)
    svc.sessions[st["session_id"]] = t
    new_st = {**st, "transcript": t, "permission_grants": step.get("grants") or []}
    prep = step["prep"]
    if step.get("decision") != "allow":
        prep = {
            **prep,
            "action": "reject",
            "reason": "policy",
            "permission_reason": step.get("reason") or "denied",
            "message": denied_content(prep.get("name"), step.get("reason") or "denied"),
        }
    return {"st": new_st, "prep": prep}


@builtin("__agent_perm_active")
def agent_perm_active(thread: Any, st: Any = None) -> bool:
    """``__agent_perm_active(st)``: whether the loop applies per-call permission rules."""
    return type(st) is dict and active(st)
