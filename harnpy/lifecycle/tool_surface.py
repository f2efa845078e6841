"""Tool-surface checks and synthesized tools: ``tool_surface_validate``,
``tool_synthesize``, ``tool_synthesis_cache``, ``tool_synthesis_clear``.

``tool_surface_validate({tools, policy?, approval_policy?, system?})`` lints the tools an
agent would see against its policy and prompt and returns ``{valid, diagnostics: [{code,
severity, message, tool?}]}`` (``valid`` is false when any diagnostic is an error). Codes:

* ``TOOL_SURFACE_MISSING_RESULT_READER`` (error): a tool whose annotations say it
  ``emits_artifacts`` but no tool of ``kind: "read"`` can read them back;
* ``TOOL_SURFACE_SIDE_EFFECT_EXCEEDS_POLICY`` (error): a tool's
  ``annotations.side_effect_level`` is above ``policy.side_effect_level``;
* ``TOOL_SURFACE_UNKNOWN_POLICY_TOOL`` (warning): ``policy.tools`` names a tool that is
  not in the surface;
* ``TOOL_SURFACE_UNKNOWN_ARG_CONSTRAINT_KEY`` (warning): a ``tool_arg_constraints`` entry
  names an argument the tool does not take (or a tool that does not exist);
* ``TOOL_SURFACE_UNKNOWN_PROMPT_TOOL`` (warning): the system prompt shows a call
  ``name({...})`` of a tool that is not in the surface;
* ``TOOL_SURFACE_APPROVAL_PATTERN_NO_MATCH`` (warning): an ``approval_policy`` pattern
  (``auto_approve`` / ``auto_deny`` / ``require_approval``, globs) matches no tool.

A synthesized tool is a closure over its spec (plain data, so it survives snapshots);
calling it checks the arguments and answers a dry run (``executor: "dry_run"``, the
default) or refuses a ``host_bridge`` call when no host is attached. Specs are cached per
run by a deterministic id (sha256 of the canonical spec, capability order ignored); the
cache is runtime state carried by program snapshots (section ``tool_synthesis``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from typing import Any

from harnpy.lifecycle._common import push_call, require_instruction_call, thrown
from harnpy.runtime.display import display
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin

ENGINE_MODULE = "std/workflow/_engine"

#: Side-effect levels from least to most powerful.
SIDE_EFFECT_LEVELS = ("none", "read_only", "workspace_write", "process_exec", "network")


def engine_function(runtime: Any, name: str) -> Any:
    """The closure ``name`` of the internal module ``std/workflow/_engine`` (loaded on first
    use like any ``std`` module, so snapshots can refer to its code)."""
    from harnpy.runtime.errors import runtime_error
    from harnpy.runtime.modules import resolve_import

    mod = runtime.modules.get(ENGINE_MODULE)
    if mod is None:
        key, path = resolve_import(ENGINE_MODULE, None)  # type: ignore[arg-type]
        mod = runtime.import_module(key, path)
    fn = mod.globals.get(name)
    if fn is None:
        raise runtime_error(f"internal: {ENGINE_MODULE} has no function {name}")
    return fn


def level_rank(level: Any) -> int | None:
    """Position of a side-effect level in :data:`SIDE_EFFECT_LEVELS`, None when unknown."""
    return SIDE_EFFECT_LEVELS.index(level) if level in SIDE_EFFECT_LEVELS else None


# ----------------------------------------------------------------------------- surface


def _entries(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if type(tools) is dict and type(tools.get("tools")) is list:
        tools = tools["tools"]
    if type(tools) is not list:
        raise thrown(
            f"tool_surface_validate: tools must be a registry or list, got {display(tools)}"
        )
    return [t for t in tools if type(t) is dict and type(t.get("name")) is str]


def _param_names(entry: dict[str, Any]) -> set[str]:
    params = entry.get("parameters")
    if type(params) is not dict:
        return set()
    if params.get("type") == "object" and type(params.get("properties")) is dict:
        return set(params["properties"])
    return set(params)


def _diag(code: str, severity: str, message: str, tool: Any = None) -> dict[str, Any]:
    return {"code": code, "severity": severity, "message": message, "tool": tool}


_PROMPT_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\s*\{")


def surface_diagnostics(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The diagnostics of :func:`tool_surface_validate` (see the module docstring)."""
    entries = _entries(spec.get("tools"))
    policy: dict[str, Any] = spec["policy"] if type(spec.get("policy")) is dict else {}
    allowed = policy.get("tools")
    if type(allowed) is list:
        active = [e for e in entries if e["name"] in allowed]
    else:
        active = entries
    names = {e["name"] for e in entries}
    out: list[dict[str, Any]] = []
    ann: dict[str, dict[str, Any]] = {
        e["name"]: (e["annotations"] if type(e.get("annotations")) is dict else {}) for e in entries
    }

    readers = [e for e in active if ann[e["name"]].get("kind") == "read"]
    for e in active:
        a = ann[e["name"]]
        if a.get("emits_artifacts") is True and not readers:
            out.append(
                _diag(
                    "TOOL_SURFACE_MISSING_RESULT_READER",
                    "error",
                    f"tool {e['name']!r} emits artifacts but no read tool (annotations.kind: "
                    '"read") can read them back',
                    e["name"],
                )
            )
    ceiling = level_rank(policy.get("side_effect_level"))
    if ceiling is not None:
        for e in active:
            lvl = ann[e["name"]].get("side_effect_level")
            rank = level_rank(lvl)
            if rank is not None and rank > ceiling:
                out.append(
                    _diag(
                        "TOOL_SURFACE_SIDE_EFFECT_EXCEEDS_POLICY",
                        "error",
                        f"tool {e['name']!r} has side_effect_level {lvl!r} above the policy's "
                        f"{policy.get('side_effect_level')!r}",
                        e["name"],
                    )
                )
    if type(allowed) is list:
        for n in allowed:
            if n not in names:
                out.append(
                    _diag(
                        "TOOL_SURFACE_UNKNOWN_POLICY_TOOL",
                        "warning",
                        f"policy.tools names {display(n)}, which is not a tool of this surface",
                        n,
                    )
                )
    constraints = policy.get("tool_arg_constraints")
    for c in constraints if type(constraints) is list else []:
        if type(c) is not dict:
            continue
        tool, key = c.get("tool"), c.get("arg_key")
        entry = next((e for e in entries if e["name"] == tool), None)
        if entry is None or (key is not None and key not in _param_names(entry)):
            what = f"tool {display(tool)}" if entry is None else f"argument {display(key)}"
            out.append(
                _diag(
                    "TOOL_SURFACE_UNKNOWN_ARG_CONSTRAINT_KEY",
                    "warning",
                    f"tool_arg_constraints for {display(tool)} names unknown {what}",
                    tool,
                )
            )
    system = spec.get("system")
    if type(system) is str:
        seen: set[str] = set()
        for m in _PROMPT_CALL.finditer(system):
            n = m.group(1)
            if n not in names and n not in seen:
                seen.add(n)
                out.append(
                    _diag(
                        "TOOL_SURFACE_UNKNOWN_PROMPT_TOOL",
                        "warning",
                        f"the system prompt shows a call of {n!r}, which is not a tool of this "
                        "surface",
                        n,
                    )
                )
    approval = spec.get("approval_policy")
    if type(approval) is dict:
        for field in ("auto_approve", "auto_deny", "require_approval"):
            patterns = approval.get(field)
            for p in patterns if type(patterns) is list else []:
                if type(p) is str and not any(fnmatch.fnmatchcase(n, p) for n in names):
                    out.append(
                        _diag(
                            "TOOL_SURFACE_APPROVAL_PATTERN_NO_MATCH",
                            "warning",
                            f"approval_policy.{field} pattern {p!r} matches no tool",
                            None,
                        )
                    )
    return out


@builtin("tool_surface_validate")
def tool_surface_validate(thread: Any, spec: Any = None) -> dict[str, Any]:
    """``tool_surface_validate({tools, policy?, approval_policy?, system?}) -> {valid,
    diagnostics: [{code, severity: "error" | "warning", message, tool}]}``: lint a tool
    surface against its policy and prompt (codes ``TOOL_SURFACE_MISSING_RESULT_READER``,
    ``TOOL_SURFACE_SIDE_EFFECT_EXCEEDS_POLICY``, ``TOOL_SURFACE_UNKNOWN_POLICY_TOOL``,
    ``TOOL_SURFACE_UNKNOWN_ARG_CONSTRAINT_KEY``, ``TOOL_SURFACE_UNKNOWN_PROMPT_TOOL``,
    ``TOOL_SURFACE_APPROVAL_PATTERN_NO_MATCH``). ``valid`` is false when any diagnostic is
    an error. Throws when ``spec`` is not a dict."""
    if type(spec) is not dict:
        raise thrown(f"tool_surface_validate: expects a dict, got {display(spec)}")
    diags = surface_diagnostics(spec)
    return {"valid": not any(d["severity"] == "error" for d in diags), "diagnostics": diags}


# ----------------------------------------------------------------------------- synthesis

STATE_ATTR = "tool_synthesis_cache"


def _cache(runtime: Any) -> list[dict[str, Any]]:
    c = getattr(runtime, STATE_ATTR, None)
    if c is None:
        c = []
        setattr(runtime, STATE_ATTR, c)
    return c  # type: ignore[no-any-return]


def infer_side_effect(capabilities: list[str]) -> str:
    """The side-effect level implied by capability names: ``http``/``network``/``oauth:*``
    network; ``process``/``exec``/``shell`` process_exec; ``write``/``fs.write``
    workspace_write; otherwise read_only."""
    rank = 1
    for cap in capabilities:
        low = cap.lower()
        if low in ("http", "https", "network") or low.startswith(("oauth", "http.", "net.")):
            rank = max(rank, 4)
        elif low.startswith(("process", "exec", "shell")):
            rank = max(rank, 3)
        elif "write" in low:
            rank = max(rank, 2)
    return SIDE_EFFECT_LEVELS[rank]


def _synth_spec(raw: dict[str, Any]) -> dict[str, Any]:
    name = raw.get("name")
    desc = raw.get("description")
    if type(desc) is not str or not desc.strip():
        raise thrown("tool_synthesize: `description` must be a non-empty string")
    if name is None:
        name = re.sub(r"[^a-z0-9]+", "_", desc.lower()).strip("_")[:48] or "synthesized_tool"
    if type(name) is not str or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        raise thrown(f"tool_synthesize: `name` must be an identifier, got {display(name)}")
    params = raw.get("parameters") or {}
    if type(params) is not dict:
        raise thrown("tool_synthesize: `parameters` must be a dict of parameter schemas")
    caps = raw.get("capabilities") or []
    if type(caps) is not list or any(type(c) is not str for c in caps):
        raise thrown("tool_synthesize: `capabilities` must be a list of strings")
    executor = raw.get("executor") or "dry_run"
    if executor not in ("dry_run", "host_bridge"):
        raise thrown(
            f'tool_synthesize: unknown executor {display(executor)} (expected "dry_run" or '
            '"host_bridge")'
        )
    if executor == "host_bridge" and type(raw.get("host_tool")) is not str:
        raise thrown('tool_synthesize: executor "host_bridge" needs a `host_tool` name')
    level = raw.get("side_effect_level") or infer_side_effect(caps)
    if level not in SIDE_EFFECT_LEVELS:
        raise thrown(f"tool_synthesize: unknown side_effect_level {display(level)}")
    spec: dict[str, Any] = {
        "name": name,
        "description": desc,
        "parameters": params,
        "return_type": raw.get("return_type"),
        "capabilities": sorted(set(caps)),
        "executor": executor,
        "host_tool": raw.get("host_tool"),
        "side_effect_level": level,
    }
    canon = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=display)
    spec["id"] = "synth_" + hashlib.sha256(canon.encode()).hexdigest()[:16]
    return spec


@builtin("tool_synthesize", control=True)
def tool_synthesize(thread: Any, raw: Any = None) -> Any:
    """``tool_synthesize({description, name?, parameters?, return_type?, capabilities?,
    executor?: "dry_run" | "host_bridge", host_tool?, side_effect_level?}) -> closure``: a
    callable tool made from a spec. Calling it with an arguments dict checks that every
    parameter without ``required: false`` / ``default`` is present (else throws
    ``missing required argument``) and returns ``{status: "dry_run", tool_id, name, args,
    side_effect_level, capabilities, executor}``; a ``host_bridge`` tool throws when no
    host is attached. The spec is cached under a deterministic id (capability order does
    not matter): see ``tool_synthesis_cache()``."""
    require_instruction_call(thread, "tool_synthesize")
    if type(raw) is not dict:
        raise thrown(f"tool_synthesize: expects a spec dict, got {display(raw)}")
    spec = _synth_spec(raw)
    cache = [c for c in _cache(thread.runtime) if c["id"] != spec["id"]]
    cache.append(spec)
    setattr(thread.runtime, STATE_ATTR, cache)
    push_call(thread, engine_function(thread.runtime, "__tool_synth_closure"), [dict(spec)])
    return None


@builtin("__tool_synth_invoke")
def tool_synth_invoke(thread: Any, spec: Any = None, args: Any = None) -> dict[str, Any]:
    """``__tool_synth_invoke(spec, args)``: run one call of a synthesized tool."""
    if type(spec) is not dict or type(spec.get("name")) is not str:
        raise thrown("tool_synthesize: internal: bad tool spec")
    name = spec["name"]
    if args is None:
        args = {}
    if type(args) is not dict:
        raise thrown(f"{name}: arguments must be a dict, got {display(args)}")
    params: dict[str, Any] = spec["parameters"] if type(spec.get("parameters")) is dict else {}
    for pname, pschema in params.items():
        optional = type(pschema) is dict and (
            pschema.get("required") is False or "default" in pschema
        )
        if pname not in args and not optional:
            raise thrown(f"{name}: missing required argument `{pname}`")
    if spec.get("executor") == "host_bridge":
        raise thrown(
            f"{name}: host_bridge tool {spec.get('host_tool')!r} needs a host; none is attached "
            "to this run"
        )
    return {
        "status": "dry_run",
        "tool_id": spec.get("id"),
        "name": name,
        "args": args,
        "side_effect_level": spec.get("side_effect_level"),
        "capabilities": spec.get("capabilities"),
        "executor": spec.get("executor"),
    }


@builtin("tool_synthesis_cache")
def tool_synthesis_cache(thread: Any) -> list[dict[str, Any]]:
    """``tool_synthesis_cache() -> [spec]``: the specs synthesized in this run, oldest first,
    each ``{id, name, description, parameters, return_type, capabilities, executor,
    host_tool, side_effect_level}``."""
    return [dict(s) for s in _cache(thread.runtime)]


@builtin("tool_synthesis_clear")
def tool_synthesis_clear(thread: Any) -> None:
    """``tool_synthesis_clear()``: empty the synthesis cache (tools already made keep
    working)."""
    setattr(thread.runtime, STATE_ATTR, [])


def _save(thread: Any) -> Any:
    c = getattr(thread.runtime, STATE_ATTR, None)
    return list(c) if c else None


def _load(thread: Any, data: Any) -> Any:
    if type(data) is not list or any(
        type(s) is not dict or type(s.get("id")) is not str or type(s.get("name")) is not str
        for s in data
    ):
        raise TypeError("the synthesis cache must be a list of specs with id and name")
    rt = thread.runtime
    return lambda: setattr(rt, STATE_ATTR, list(data))


register_state("tool_synthesis", _save, _load)
