"""Workflow graphs: normalization, validation against capability ceilings, commits.

A graph is ``{_type: "workflow_graph", id, name, version, entry, nodes: {id: node}, edges:
[{from, to, branch, label}], capability_policy, metadata, history: [{version, reason,
at}]}``. A node is ``{id, kind, mode, prompt, system, model_policy, tools, context_policy,
input_contract, output_contract, capability_policy, verify, map_policy, join_policy,
metadata, ...}``; unknown keys are kept. Kinds: ``stage``, ``verify``, ``condition``,
``fork``, ``join``, ``map``, ``reduce``, ``subagent``. ``mode`` defaults to ``"llm"``
for model stages (stage, subagent) and ``"deterministic"`` for verify (checks only) and
the structural kinds. A node's ``tools`` registry is kept as is (handlers stay callable).

A *capability policy* is ``{capabilities?: {namespace: [operation]}, side_effect_level?,
tools?: [name]}``; a *host ceiling* has the same shape. :func:`validate` reports a node
whose policy (or tools) go beyond the workflow's policy or the ceiling.
"""

from __future__ import annotations

import re
from typing import Any

from harnpy.lifecycle._common import now_rfc3339, thrown
from harnpy.lifecycle.tool_surface import level_rank
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin

NODE_KINDS = ("stage", "verify", "condition", "fork", "join", "map", "reduce", "subagent")
MODEL_KINDS = ("stage", "subagent")
MODES = ("llm", "agent", "deterministic")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "workflow"


def _node(node_id: str, raw: Any) -> dict[str, Any]:
    if type(raw) is not dict:
        raise thrown(f"workflow_graph: node {node_id!r} must be a dict, got {display(raw)}")
    kind = raw.get("kind", "stage")
    if kind not in NODE_KINDS:
        raise thrown(
            f"workflow_graph: node {node_id!r} has unknown kind {display(kind)} "
            f"(expected one of {', '.join(NODE_KINDS)})"
        )
    mode = raw.get("mode") or ("llm" if kind in MODEL_KINDS else "deterministic")
    if mode not in MODES:
        raise thrown(f"workflow_graph: node {node_id!r} has unknown mode {display(mode)}")
    out: dict[str, Any] = {
        "id": node_id,
        "kind": kind,
        "mode": mode,
        "prompt": raw.get("prompt"),
        "system": raw.get("system"),
        "model_policy": raw.get("model_policy") or {},
        "tools": raw.get("tools"),
        "context_policy": raw.get("context_policy") or {},
        "input_contract": raw.get("input_contract") or {},
        "output_contract": raw.get("output_contract") or {},
        "capability_policy": raw.get("capability_policy"),
        "verify": raw.get("verify"),
        "map_policy": raw.get("map_policy") or {},
        "join_policy": raw.get("join_policy") or {},
        "metadata": raw.get("metadata") or {},
    }
    for k, v in raw.items():
        out.setdefault(k, v)
    out["id"] = node_id
    return out


def normalize(spec: Any) -> dict[str, Any]:
    """A normalized graph from a spec (an already normalized graph passes through).

    Raises:
        HarnThrow: not a dict, nodes not a dict of dicts, unknown kinds or modes, edges
            that are not ``{from, to}`` dicts.
    """
    if type(spec) is not dict:
        raise thrown(f"workflow_graph: expects a dict, got {display(spec)}")
    nodes_raw = spec.get("nodes") or {}
    if type(nodes_raw) is list:
        nodes_raw = {n.get("id"): n for n in nodes_raw if type(n) is dict}
    if type(nodes_raw) is not dict:
        raise thrown("workflow_graph: nodes must be a dict of node id -> node")
    nodes = {str(k): _node(str(k), v) for k, v in nodes_raw.items()}
    edges = []
    for e in spec.get("edges") or []:
        if type(e) is not dict or type(e.get("from")) is not str or type(e.get("to")) is not str:
            raise thrown(f"workflow_graph: an edge must be {{from, to, branch?}}, got {display(e)}")
        edges.append(
            {"from": e["from"], "to": e["to"], "branch": e.get("branch"), "label": e.get("label")}
        )
    name = spec.get("name") or "workflow"
    if type(name) is not str:
        raise thrown(f"workflow_graph: name must be a string, got {display(name)}")
    entry = spec.get("entry") or (next(iter(nodes)) if nodes else None)
    out: dict[str, Any] = {
        "_type": "workflow_graph",
        "id": spec.get("id") or _slug(name),
        "name": name,
        "version": spec.get("version") or 1,
        "entry": entry,
        "nodes": nodes,
        "edges": edges,
        "capability_policy": spec.get("capability_policy"),
        "metadata": spec.get("metadata") or {},
        "history": list(spec.get("history") or []),
    }
    for k, v in spec.items():
        out.setdefault(k, v)
    return out


def _tool_names(tools: Any) -> list[str]:
    if type(tools) is dict and type(tools.get("tools")) is list:
        tools = tools["tools"]
    if type(tools) is not list:
        return []
    return [t["name"] for t in tools if type(t) is dict and type(t.get("name")) is str]


def policy_excess(requested: Any, limit: Any, tools: list[str], label: str) -> list[str]:
    """What ``requested`` (a capability policy) and ``tools`` ask for beyond ``limit``,
    one message per excess, each ending with ``label`` (e.g. ``"host ceiling"``)."""
    if type(limit) is not dict:
        return []
    req = requested if type(requested) is dict else {}
    out = []
    want, cap = level_rank(req.get("side_effect_level")), level_rank(limit.get("side_effect_level"))
    if want is not None and cap is not None and want > cap:
        out.append(
            f"side_effect_level {req['side_effect_level']!r} exceeds the {label} "
            f"({limit['side_effect_level']!r})"
        )
    have = limit.get("capabilities")
    if type(have) is dict and type(req.get("capabilities")) is dict:
        for ns, ops in req["capabilities"].items():
            allowed = have.get(ns) or []
            for op in ops if type(ops) is list else []:
                if op not in allowed:
                    out.append(f"capability {ns}.{op} exceeds the {label}")
    allowed_tools = limit.get("tools")
    if type(allowed_tools) is list:
        for t in tools:
            if t not in allowed_tools:
                out.append(f"tool {t!r} is not allowed by the {label}")
    return out


def reachable(graph: dict[str, Any]) -> list[Any]:
    """Node ids reachable from the entry along edges, in breadth-first order."""
    entry = graph.get("entry")
    if entry not in graph["nodes"]:
        return []
    seen, queue = [entry], [entry]
    while queue:
        cur = queue.pop(0)
        for e in graph["edges"]:
            if e["from"] == cur and e["to"] in graph["nodes"] and e["to"] not in seen:
                seen.append(e["to"])
                queue.append(e["to"])
    return seen


def validate(graph: dict[str, Any], ceiling: Any = None) -> dict[str, Any]:
    """``{valid, errors, warnings, reachable_nodes, node_count}`` for a normalized graph
    (and an optional host ceiling)."""
    errors: list[str] = []
    warnings: list[str] = []
    nodes = graph["nodes"]
    if not nodes:
        errors.append("the workflow has no nodes")
    if graph.get("entry") not in nodes:
        errors.append(f"entry node {display(graph.get('entry'))} does not exist")
    for e in graph["edges"]:
        for end in ("from", "to"):
            if e[end] not in nodes:
                errors.append(f"edge {e['from']} -> {e['to']}: unknown node {e[end]!r}")
    for nid, node in nodes.items():
        out_edges = [e for e in graph["edges"] if e["from"] == nid]
        if node["kind"] == "condition" and out_edges:
            if not any(e.get("branch") is not None for e in out_edges):
                warnings.append(f"condition node {nid!r} has no branch-labelled edges")
        if node["kind"] == "join" and len([e for e in graph["edges"] if e["to"] == nid]) < 1:
            warnings.append(f"join node {nid!r} has no inputs")
        tools = _tool_names(node.get("tools"))
        requested = node.get("capability_policy")
        for msg in policy_excess(
            requested, graph.get("capability_policy"), [], "workflow capability_policy"
        ):
            errors.append(f"node {nid!r}: {msg}")
        for msg in policy_excess(
            requested or graph.get("capability_policy"), ceiling, tools, "host ceiling"
        ):
            errors.append(f"node {nid!r}: {msg}")
    live = reachable(graph)
    for nid in nodes:
        if live and nid not in live:
            warnings.append(f"node {nid!r} is not reachable from the entry")
    return {
        "valid": not errors,
        "errors": errors,
        "warnings": warnings,
        "reachable_nodes": live,
        "node_count": len(nodes),
    }


@builtin("workflow_graph")
def workflow_graph(thread: Any, spec: Any = None) -> dict[str, Any]:
    """``workflow_graph({name, entry?, nodes: {id: node}, edges?: [{from, to, branch?}],
    capability_policy?, metadata?}) -> workflow_graph``: a normalized workflow graph (see
    the node fields and kinds in the user guide). ``entry`` defaults to the first node.
    Throws for unknown node kinds or modes and malformed edges."""
    return normalize(spec)


def _graph_arg(v: Any, where: str) -> dict[str, Any]:
    if type(v) is not dict:
        raise thrown(f"{where}: expects a workflow graph, got {display(v)}")
    return normalize(v)


@builtin("workflow_validate")
def workflow_validate(thread: Any, graph: Any = None, ceiling: Any = None) -> dict[str, Any]:
    """``workflow_validate(graph, host_ceiling?) -> {valid, errors: [string], warnings:
    [string], reachable_nodes, node_count}``: structural checks (entry and edge endpoints
    exist, conditions have branches, unreachable nodes) and policy checks: a node's
    ``capability_policy`` must stay within the workflow's, and (with a ceiling
    ``{capabilities?, side_effect_level?, tools?}``) within the host ceiling, tools
    included."""
    return validate(_graph_arg(graph, "workflow_validate"), ceiling)


@builtin("workflow_policy_report")
def workflow_policy_report(thread: Any, graph: Any = None, ceiling: Any = None) -> dict[str, Any]:
    """``workflow_policy_report(graph, host_ceiling?) -> {workflow_policy, ceiling, nodes:
    [{node_id, requested, tools, violations}], validation}``: each node's requested
    capabilities and tools next to what the ceiling allows."""
    g = _graph_arg(graph, "workflow_policy_report")
    nodes = []
    for nid, node in g["nodes"].items():
        tools = _tool_names(node.get("tools"))
        requested = node.get("capability_policy") or g.get("capability_policy")
        nodes.append(
            {
                "node_id": nid,
                "requested": requested,
                "tools": tools,
                "violations": policy_excess(requested, ceiling, tools, "host ceiling"),
            }
        )
    return {
        "workflow_policy": g.get("capability_policy"),
        "ceiling": ceiling,
        "nodes": nodes,
        "validation": validate(g, ceiling),
    }


@builtin("workflow_commit")
def workflow_commit(thread: Any, graph: Any = None, reason: Any = None) -> dict[str, Any]:
    """``workflow_commit(graph, reason?) -> workflow_graph``: the graph with ``version``
    incremented and ``{version, reason, at}`` appended to ``history`` (nodes, tools and
    their handlers unchanged). Throws when the graph does not validate."""
    g = _graph_arg(graph, "workflow_commit")
    report = validate(g)
    if not report["valid"]:
        raise thrown("workflow_commit: the graph is invalid: " + "; ".join(report["errors"]))
    version = (g["version"] if type(g["version"]) is int else 0) + 1
    entry = {"version": version, "reason": reason, "at": now_rfc3339(thread.runtime)}
    return {**g, "version": version, "history": [*g["history"], entry]}
