"""Tool registries and tool-call checking for agent loops.

A registry is a Harn dict ``{_type: "tool_registry", tools: [entry]}`` (Harn's shape); an
entry is ``{name, description, parameters, handler, executor, outputSchema?, ...}`` where
``parameters`` is a JSON schema or Harn's short form (``{q: "string"}``, ``{q: {type,
description?, required?}}``) and ``handler`` a Harn closure taking the arguments dict.

A ``tool name(params) -> T { description "..." body }`` declaration binds ``name`` to its
own one-tool registry (as in Harn; built by :func:`entry_of_declaration` from the spec the
compiler derived): the entry's ``parameters`` is the object JSON schema of the declared
parameter types (:func:`harnpy.stdlib.schema.type_to_schema`: nested shapes, lists,
unions, structs, enums, aliases), a parameter with a default is optional and a literal
default appears as the property's ``default``; the return type gives ``outputSchema``; the
``handler`` is the declaration's closure, called with positional arguments (``positional``
lists the parameter names). ``tool_define(registry, decl)``, ``tool_registry([decl, ...])``
and the ``tools`` option of ``agent_loop`` (a registry or a list of registries and entries)
accept such declarations directly.

:func:`prepare_call` decides for one model-issued call: unknown tool, denied by the loop's
policy (``policy: {tools: [...]}`` allow-list, ``policy.deny`` / ``denied_tools``), or
arguments that do not match the schema are *rejections* whose error text goes back to the
model as the tool result; otherwise the call is dispatched by the Harn loop code.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from harnpy.lifecycle._common import arg, strip_harness, thrown
from harnpy.runtime.code import MISSING
from harnpy.runtime.display import display
from harnpy.runtime.values import Builtin, Closure, EnumValue
from harnpy.stdlib.registry import builtin

_TYPE_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "boolean": {"type": "boolean"},
    "list": {"type": "array"},
    "dict": {"type": "object"},
    "nil": {"type": "null"},
}


def new_registry() -> dict[str, Any]:
    """An empty registry."""
    return {"_type": "tool_registry", "tools": []}


def is_registry(v: Any) -> bool:
    """True for a tool registry dict."""
    return type(v) is dict and type(v.get("tools")) is list


def _check_registry(v: Any, where: str) -> dict[str, Any]:
    if not is_registry(v):
        raise thrown(f"{where}: first argument must be a tool registry")
    return v  # type: ignore[no-any-return]


def type_schema(label: str) -> dict[str, Any]:
    """JSON schema for a Harn type label (``list<string>`` -> array of strings; unions of
    checkable types become ``anyOf``; unknown types give ``{}``)."""
    label = label.strip()
    if label.endswith("?"):
        inner = type_schema(label[:-1])
        return {"anyOf": [inner, {"type": "null"}]} if inner else {}
    if " | " in label:
        parts = [type_schema(p) for p in label.split(" | ")]
        if all(parts):
            return {"anyOf": parts}
        return {}
    if label.startswith("list<") and label.endswith(">"):
        inner = type_schema(label[5:-1])
        return {"type": "array", **({"items": inner} if inner else {})}
    if label.startswith("dict<"):
        return {"type": "object"}
    return dict(_TYPE_SCHEMAS.get(label, {}))


def entry_of_declaration(spec: dict[str, Any], handler: Any) -> dict[str, Any]:
    """The registry entry of a ``tool`` declaration: ``{name, description, parameters,
    handler, executor: "harn", positional, outputSchema?}``.

    ``parameters`` is the object JSON schema of the declared parameters: each property is
    the schema the compiler derived from the parameter's type (nested shapes, lists,
    unions, structs, enums, aliases; ``{}`` for an untyped or ``any`` parameter) with the
    parameter's literal ``default``, if any; a parameter with a default is optional, every
    other one is ``required``. ``outputSchema`` is the schema of the declared return type.
    ``handler`` takes the arguments positionally (``positional`` lists the parameter names
    in order; the loop spreads a call's arguments into it).
    """
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in spec.get("params", []):
        schema = p.get("schema")
        schema = dict(schema) if type(schema) is dict else type_schema(p.get("type") or "any")
        if "default" in p:
            schema["default"] = copy.deepcopy(p["default"])  # the spec is shared by every run
        props[p["name"]] = schema
        if p.get("required"):
            required.append(p["name"])
    params: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    entry: dict[str, Any] = {
        "name": spec["name"],
        "description": spec.get("description") or "",
        "parameters": params,
        "handler": handler,
        "executor": "harn",
        "positional": [p["name"] for p in spec.get("params", [])],
    }
    if type(spec.get("returns")) is dict:
        entry["outputSchema"] = spec["returns"]
    return entry


@builtin("__tool_declaration")
def tool_declaration(thread: Any, spec: Any = None, handler: Any = None) -> dict[str, Any]:
    """``__tool_declaration(spec, handler)`` (internal): the value a ``tool`` declaration
    binds, its one-tool registry ``{_type: "tool_registry", tools: [entry]}`` (see
    :func:`entry_of_declaration`). Called by the runtime when the declaration runs."""
    if type(spec) is not dict or type(spec.get("name")) is not str:
        raise thrown("__tool_declaration: expected a tool declaration spec")
    return {**new_registry(), "tools": [entry_of_declaration(spec, handler)]}


def json_schema(entry: dict[str, Any]) -> dict[str, Any]:
    """The object JSON schema of an entry's ``parameters`` (short forms expanded)."""
    from harnpy.llm import LlmError, ToolSpec

    try:
        return ToolSpec.coerce(
            {"name": entry.get("name") or "tool", "parameters": entry.get("parameters")}
        ).parameters
    except LlmError as exc:
        raise thrown(f"tool {display(entry.get('name'))}: {exc.message}") from None


def to_entries(runtime: Any, tools: Any, where: str) -> list[dict[str, Any]]:
    """Registry entries from an ``agent_loop``/``llm_call`` ``tools`` value: a registry (a
    ``tool`` declaration binds a one-tool registry), a list of registries and tool dicts,
    or nil. A tool named like an earlier one replaces it (last wins, in the later one's
    place), as with ``tool_define``.

    Raises:
        HarnThrow: ``<where>: tools must be a tool registry or a list of tools``, or
            ``<where>: cannot use <value> as a tool`` for a list item that is neither.
    """
    if tools is None:
        return []
    if is_registry(tools):
        items = tools["tools"]
    elif type(tools) is list:
        items = tools
    else:
        raise thrown(f"{where}: tools must be a tool registry or a list of tools")
    by_name: dict[str, dict[str, Any]] = {}
    for item in items:
        if is_registry(item):
            found = [t for t in item["tools"] if type(t) is dict]
        elif type(item) is dict and type(item.get("name")) is str:
            found = [item]
        else:
            raise thrown(f"{where}: cannot use {display(item)} as a tool")
        for entry in found:
            # a tool named like an earlier one replaces it (as tool_define does)
            by_name.pop(entry["name"], None)
            by_name[entry["name"]] = entry
    return list(by_name.values())


def wire_tools(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool list sent to the model: ``{name, description, parameters}`` per entry."""
    return [
        {
            "name": e["name"],
            "description": e.get("description") or "",
            "parameters": json_schema(e),
        }
        for e in entries
        if not e.get("defer_loading")
    ]


# --------------------------------------------------------------------------- checking


def policy_denial(policy: Any, name: str) -> str | None:
    """Why ``policy`` denies tool ``name`` (None when allowed). ``policy`` is the loop's
    ``{tools?|allowed_tools?: [names], deny?|denied_tools?: [names]}``; every list given
    applies, and a list that is not a list denies everything (fail closed; ``agent_loop``
    rejects such a policy up front)."""
    if type(policy) is not dict:
        return None
    for key in ("deny", "denied_tools"):
        deny = policy.get(key)
        if deny is not None and (type(deny) is not list or name in deny):
            return f"tool '{name}' is denied by the agent policy"
    for key in ("tools", "allowed_tools"):
        allow = policy.get(key)
        if allow is None:
            continue
        if type(allow) is not list or name not in allow:
            shown = ", ".join(str(a) for a in allow) if type(allow) is list else ""
            return (
                f"tool '{name}' is not permitted by the agent policy (allowed: {shown or 'none'})"
            )
    return None


def argument_problems(entry: dict[str, Any], args: Any) -> list[str]:
    """Schema violations of a call's arguments (``at <path>: <message>``)."""
    from harnpy.lifecycle.llm_builtins import schema_issues

    if type(args) is not dict:
        return [f"at root: expected an arguments object, got {display(args)}"]
    return schema_issues(args, json_schema(entry), strict_ints=True)


def prepare_call(
    entries: list[dict[str, Any]], policy: Any, call: dict[str, Any]
) -> dict[str, Any]:
    """Decide how the loop handles one tool call ``{id, name, arguments}``.

    Returns ``{action: "dispatch", name, id, args, handler, positional, argv}`` or
    ``{action: "reject", name, id, args, reason: "unknown"|"policy"|"arguments",
    message}``; ``message`` is the text the model gets back.
    """
    name = call.get("name")
    name = name if type(name) is str else display(name)
    args = call.get("arguments")
    if args is None:
        args = {}
    base = {"name": name, "id": call.get("id"), "args": args}
    entry = next((e for e in entries if e.get("name") == name), None)
    if entry is None:
        known = ", ".join(e["name"] for e in entries) or "none"
        return {
            **base,
            "action": "reject",
            "reason": "unknown",
            "message": f"Error: unknown tool '{name}'. Available tools: {known}",
        }
    denied = policy_denial(policy, name)
    if denied is not None:
        return {**base, "action": "reject", "reason": "policy", "message": f"Error: {denied}"}
    bad_json = call.get("arguments_error")
    problems = [bad_json] if type(bad_json) is str else argument_problems(entry, args)
    if problems:
        return {
            **base,
            "action": "reject",
            "reason": "arguments",
            "message": f"Error: invalid arguments for tool '{name}': " + "; ".join(problems),
        }
    handler = entry.get("handler")
    if type(handler) not in (Closure, Builtin):
        return {
            **base,
            "action": "reject",
            "reason": "unknown",
            "message": f"Error: tool '{name}' has no handler that this runtime can run",
        }
    positional = entry.get("positional")
    argv: list[Any] = []
    if type(positional) is list:
        # A parameter the model left out takes its declared default: MISSING in its slot
        # makes the handler's prologue evaluate the default (only parameters with defaults
        # may be left out; the schema requires the others). Trailing ones are just omitted.
        gap = MISSING if type(handler) is Closure and handler.code.has_defaults else None
        for pname in positional:
            argv.append(args[pname] if pname in args else gap)
        while argv and argv[-1] is gap:
            argv.pop()
    return {
        **base,
        "action": "dispatch",
        "handler": handler,
        "positional": type(positional) is list,
        "argv": argv,
        **({"param_order": positional} if type(positional) is list else {}),
    }


def render_result(value: Any) -> str:
    """The text of a tool's return value as the model sees it: strings as is, other
    JSON-like values as JSON, anything else in display form."""
    if type(value) is str:
        return value
    if value is None:
        return "nil"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return display(value)


def outcome_of(result: Any) -> tuple[bool, Any]:
    """``(ok, value_or_error)`` of a try-expression ``Result`` from the loop."""
    if type(result) is EnumValue and result.enum == "Result":
        return result.variant == "Ok", (result.fields[0] if result.fields else None)
    return True, result


# --------------------------------------------------------------------------- tool_define


#: Executors ``tool_define`` accepts (Harn's names); ``harn_builtin`` is an alias of ``harn``.
EXECUTORS = ("harn", "host_bridge", "mcp_server", "provider_native")
_EXECUTOR_ALIASES = {"harn_builtin": "harn"}
#: Config keys ``tool_define`` maps itself; every other key is kept on the entry as is.
_MAPPED_KEYS = ("handler", "parameters", "returns", "annotations", "executor")


def _quoted(text: str) -> str:
    """``text`` in double quotes with JSON escapes (how Harn's messages show names)."""
    return json.dumps(text, ensure_ascii=False)


def _resolve_executor(config: dict[str, Any], name: str, has_handler: bool) -> str:
    """The canonical executor of a ``tool_define`` config, checked against the handler and
    the executor's own keys (``host_capability``, ``mcp_server``).

    Raises:
        HarnThrow: with Harn's message for a non-string or unknown executor, a tool with
            neither handler nor executor, a ``harn`` tool without handler or with a bridge
            or MCP binding, a ``host_bridge`` / ``mcp_server`` / ``provider_native`` tool
            with a handler, a ``host_bridge`` tool without ``host_capability`` and an
            ``mcp_server`` tool without ``mcp_server``.
    """
    raw = config.get("executor")
    if raw is not None and type(raw) is not str:
        raise thrown(
            "tool_define: `executor` must be a string "
            '("harn", "host_bridge", "mcp_server", or "provider_native")'
        )
    q = _quoted(name)
    if raw is None and not has_handler:
        raise thrown(
            f"tool_define: tool {q} has no `handler` and no `executor`. Either attach a "
            '`handler` fn (executor: "harn") or declare an alternate backend, e.g. '
            'executor: "host_bridge" + host_capability: "cap.op", executor: "mcp_server" '
            '+ mcp_server: "server-name", executor: "provider_native".'
        )
    executor = "harn" if raw is None else _EXECUTOR_ALIASES.get(raw, raw)
    if executor not in EXECUTORS:
        expected = ", ".join(_quoted(e) for e in EXECUTORS)
        raise thrown(
            f"tool_define: unknown executor {_quoted(str(raw))} for tool {q}. "
            f"Expected one of: {expected}"
        )
    capability = config.get("host_capability")
    server = config.get("mcp_server")
    declares = f'tool_define: tool {q} declares executor: "{executor}"'
    if executor == "harn":
        if not has_handler:
            raise thrown(
                f"{declares} but has no `handler`. Attach the handler fn or change the executor."
            )
        if capability is not None:
            raise thrown(
                f"{declares} but also sets `host_capability`. Drop one — the harn executor "
                "runs the handler in-VM and never reaches the host bridge."
            )
        if server is not None:
            raise thrown(
                f"{declares} but also sets `mcp_server`. Drop one — MCP-served tools must "
                'declare executor: "mcp_server".'
            )
    elif has_handler:
        why = {
            "host_bridge": "Drop the handler — host-bridge tools are dispatched by the host "
            "shell, not the VM.",
            "mcp_server": "Drop the handler — MCP-served tools route through the MCP transport.",
            "provider_native": "Provider-side tools are executed by the model server; the "
            "runtime never dispatches them locally.",
        }[executor]
        raise thrown(f"{declares} but also has a `handler`. {why}")
    elif executor == "host_bridge" and (type(capability) is not str or not capability):
        raise thrown(
            f"{declares} but is missing `host_capability`. Set it to the canonical bridge "
            'identifier (e.g. "interaction.ask") so `harn check` can validate the binding '
            "against the host capability manifest."
        )
    elif executor == "mcp_server" and (type(server) is not str or not server):
        raise thrown(f"{declares} but is missing `mcp_server` (the configured server name).")
    return executor


def _check_vault_keys(config: dict[str, Any]) -> None:
    """``defer_loading`` must be a bool and ``namespace`` a non-empty string (or nil).

    Raises:
        HarnThrow: Harn's message for either.
    """
    if "defer_loading" in config and type(config["defer_loading"]) is not bool:
        raise thrown(
            "tool_define: `defer_loading` must be a bool (true → hold schema back until a "
            "tool_search call surfaces it; false or absent → ship eagerly)"
        )
    ns = config.get("namespace")
    if ns is not None and (type(ns) is not str or not ns):
        raise thrown(
            "tool_define: `namespace` must be a non-empty string (groups deferred tools for "
            "OpenAI tool_search; Anthropic ignores it)"
        )


def entry_of_config(name: str, description: str, config: Any) -> dict[str, Any]:
    """The registry entry ``tool_define(registry, name, description, config)`` adds:
    ``{name, description, handler, parameters, executor, outputSchema?, annotations?,
    ...}`` (``returns`` becomes ``outputSchema``; other config keys are kept as they are).

    Raises:
        HarnThrow: Harn's messages for a config that is not a dict, ``params`` instead of
            ``parameters``, an executor problem (:func:`_resolve_executor`), a bad
            ``defer_loading`` / ``namespace`` (:func:`_check_vault_keys`) or malformed
            parameters.
    """
    if type(config) is not dict:
        raise thrown("tool_define: config must be a dict with parameters and handler")
    handler = config.get("handler")
    if "params" in config and "parameters" not in config:
        raise thrown("tool_define: use 'parameters', not 'params'")
    executor = _resolve_executor(config, name, handler is not None)
    _check_vault_keys(config)
    params = config.get("parameters")
    entry: dict[str, Any] = {
        "name": name,
        "description": description,
        "handler": handler,
        "parameters": {} if params is None else params,
        "executor": executor,
    }
    if config.get("returns") is not None:
        entry["outputSchema"] = config["returns"]
    if "annotations" in config:
        entry["annotations"] = config["annotations"]
    for k, v in config.items():
        if k not in _MAPPED_KEYS:
            entry[k] = v
    json_schema(entry)  # reject malformed parameter specs now
    return entry


# --------------------------------------------------------------------------- builtins


@builtin("tool_registry")
def tool_registry(thread: Any, *args: Any) -> dict[str, Any]:
    """``tool_registry()``: an empty registry ``{_type: "tool_registry", tools: []}``.
    ``tool_registry([decl, ...])`` starts it with ``tool`` declarations or entries; a tool
    named like an earlier one replaces it, as with ``tool_define``."""
    args = strip_harness(args)
    reg = new_registry()
    first = arg(args, 0)
    if type(first) is list:
        reg["tools"] = to_entries(thread.runtime, first, "tool_registry")
    elif type(first) is dict and not is_registry(first):
        reg["info"] = first
    return reg


@builtin("tool_define")
def tool_define(
    thread: Any, registry: Any = None, name: Any = None, description: Any = None, config: Any = None
) -> dict[str, Any]:
    """``tool_define(registry, name, description, {parameters?, handler?, returns?,
    executor?, ...})``: a copy of ``registry`` with the tool added (replacing one of the
    same name). ``parameters`` is a JSON schema or Harn's short form (``{q: "string"}``,
    ``{q: {type, description?, required?}}``); ``returns`` becomes the entry's
    ``outputSchema``; ``executor`` is ``"harn"`` (a ``handler`` closure taking the
    arguments dict; ``"harn_builtin"`` is an alias), ``"host_bridge"`` (needs
    ``host_capability``, no handler), ``"mcp_server"`` (needs ``mcp_server``, no handler)
    or ``"provider_native"`` (no handler); without it a handler means ``"harn"``.
    ``defer_loading`` must be a bool, ``namespace`` a non-empty string; other config keys
    are kept on the entry as they are.

    ``tool_define(registry, decl)`` adds the tools of a ``tool`` declaration (or of any
    registry); ``tool_define(registry, name, decl)`` / ``tool_define(registry, name,
    description, decl)`` rename / redescribe a one-tool declaration.

    Throws (Harn's messages): a first argument that is not a registry, a config that is
    not a dict (``tool_define: config must be a dict with parameters and handler``),
    ``params`` instead of ``parameters``, an unknown or non-string executor, an executor
    with a missing or forbidden key, a bad ``defer_loading`` / ``namespace``."""
    reg = _check_registry(registry, "tool_define")
    decl = next((c for c in (name, description, config) if is_registry(c)), None)
    if decl is not None:
        added = [dict(t) for t in decl["tools"] if type(t) is dict]
        if len(added) == 1:
            if type(name) is str:
                added[0]["name"] = name
            if type(description) is str:
                added[0]["description"] = description
    else:
        tname = name if type(name) is str else display(name)
        text = description if type(description) is str else display(description)
        added = [entry_of_config(tname, text, config)]
    names = {e["name"] for e in added}
    tools = [t for t in reg["tools"] if not (type(t) is dict and t.get("name") in names)]
    return {**reg, "tools": [*tools, *added]}


@builtin("tool_find")
def tool_find(thread: Any, registry: Any = None, name: Any = None) -> Any:
    """``tool_find(registry, name)``: the entry named ``name``, or nil."""
    reg = _check_registry(registry, "tool_find")
    want = name if type(name) is str else display(name)
    return next((t for t in reg["tools"] if type(t) is dict and t.get("name") == want), None)


@builtin("tool_list")
def tool_list(thread: Any, registry: Any = None) -> list[Any]:
    """``tool_list(registry)``: the entries without their handlers."""
    reg = _check_registry(registry, "tool_list")
    return [{k: v for k, v in t.items() if k != "handler"} for t in reg["tools"]]


@builtin("tool_count")
def tool_count(thread: Any, registry: Any = None) -> int:
    """``tool_count(registry)``: the number of tools."""
    return len(_check_registry(registry, "tool_count")["tools"])


@builtin("tool_remove")
def tool_remove(thread: Any, registry: Any = None, name: Any = None) -> dict[str, Any]:
    """``tool_remove(registry, name)``: a copy without the tool ``name``."""
    reg = _check_registry(registry, "tool_remove")
    return {**reg, "tools": [t for t in reg["tools"] if t.get("name") != name]}


@builtin("tool_select")
def tool_select(thread: Any, registry: Any = None, names: Any = None) -> dict[str, Any]:
    """``tool_select(registry, names)``: a copy holding only the named tools."""
    reg = _check_registry(registry, "tool_select")
    if type(names) is not list:
        raise thrown("tool_select: second argument must be a list of tool names")
    return {**reg, "tools": [t for t in reg["tools"] if t.get("name") in names]}


@builtin("tool_describe")
def tool_describe(thread: Any, registry: Any = None) -> str:
    """``tool_describe(registry)``: ``Available tools:`` then ``- name(p: type, ...):
    description`` lines, sorted by name."""
    reg = _check_registry(registry, "tool_describe")
    if not reg["tools"]:
        return "Available tools:\n(none)"
    lines = ["Available tools:"]
    for t in sorted(reg["tools"], key=lambda t: str(t.get("name"))):
        props = json_schema(t).get("properties") or {}
        params = ", ".join(
            f"{k}: {v.get('type', 'any') if type(v) is dict else 'any'}" for k, v in props.items()
        )
        lines.append(f"- {t.get('name')}({params}): {t.get('description') or ''}")
    return "\n".join(lines)


@builtin("tool_schema")
def tool_schema(thread: Any, registry: Any = None) -> dict[str, Any]:
    """``tool_schema(registry)``: ``{schema_version: "harn-tools/1.0", tools: [{name,
    description, inputSchema, outputSchema?}]}``."""
    reg = _check_registry(registry, "tool_schema")
    out = []
    for t in reg["tools"]:
        item = {
            "name": t.get("name"),
            "description": t.get("description") or "",
            "inputSchema": json_schema(t),
        }
        if t.get("outputSchema") is not None:
            item["outputSchema"] = t["outputSchema"]
        out.append(item)
    return {"schema_version": "harn-tools/1.0", "tools": out}
