"""Agent values: ``agent(name, config)``, ``agent_config(agent, prompt)`` and
``agent_run(agent, prompt, options?)``.

An agent is plain data, ``{_type: "agent", name, system, tools, options}``: ``system`` and
``tools`` come out of the config and every other config key becomes an ``agent_loop``
option. ``agent_run`` runs the loop with them (the loop is the same Harn code
``agent_loop`` runs, so an agent run parks and resumes like any loop).
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import require_instruction_call, thrown
from harnpy.runtime.display import display
from harnpy.stdlib.registry import builtin


def _check_agent(v: Any, where: str) -> dict[str, Any]:
    if type(v) is not dict or v.get("_type") != "agent":
        raise thrown(f"{where}: first argument must be an agent (created with agent())")
    return v


@builtin("agent")
def agent(thread: Any, name: Any = None, config: Any = None) -> dict[str, Any]:
    """``agent(name, config?) -> {_type: "agent", name, system, tools, options}``: a named
    agent definition. ``config.system`` is its system prompt (nil when absent),
    ``config.tools`` its tool registry; every other key (``provider``, ``model``,
    ``max_iterations``, ``tool_format``...) is kept as an ``agent_loop`` option. Throws for a
    name that is not a non-empty string or a config that is not a dict."""
    if type(name) is not str or not name.strip():
        raise thrown(f"agent: name must be a non-empty string, got {display(name)}")
    if config is None:
        config = {}
    if type(config) is not dict:
        raise thrown(f"agent: config must be a dict, got {display(config)}")
    options = {k: v for k, v in config.items() if k not in ("system", "tools")}
    return {
        "_type": "agent",
        "name": name,
        "system": config.get("system"),
        "tools": config.get("tools"),
        "options": options,
    }


def _config(a: dict[str, Any], prompt: Any, overrides: Any) -> dict[str, Any]:
    options = dict(a.get("options") or {})
    if a.get("tools") is not None:
        options["tools"] = a["tools"]
    if type(overrides) is dict:
        options.update(overrides)
    return {"name": a.get("name"), "system": a.get("system"), "prompt": prompt, "options": options}


@builtin("agent_config")
def agent_config(thread: Any, a: Any = None, prompt: Any = None, overrides: Any = None) -> Any:
    """``agent_config(agent, prompt, overrides?) -> {name, system, prompt, options}``: the
    ``agent_loop`` arguments ``agent_run`` would use (``options`` includes ``tools``;
    ``overrides`` are merged over the agent's options). Throws ``agent_config: first
    argument must be an agent (created with agent())`` for anything else."""
    return _config(_check_agent(a, "agent_config"), prompt, overrides)


@builtin("agent_run", control=True)
def agent_run(thread: Any, a: Any = None, prompt: Any = None, overrides: Any = None) -> Any:
    """``agent_run(agent, prompt, overrides?) -> loop result``: run ``agent_loop(prompt,
    agent.system, options)`` with the agent's options (see ``agent_config``) and return the
    loop's result dict."""
    require_instruction_call(thread, "agent_run")
    cfg = _config(_check_agent(a, "agent_run"), prompt, overrides)
    from harnpy.lifecycle.agents import agent_loop

    return agent_loop(thread, cfg["prompt"], cfg["system"], cfg["options"])
