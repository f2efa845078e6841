"""The bound tool registry: ``tool_bind``, ``tool_ref``, ``tool_def`` (Harn ``builtins.md``).

A program binds one registry (``tool_bind(registry)``); ``tool_ref(name)`` then checks a tool
name against it (so a typo fails where it is written, not at the model call) and
``tool_def(name)`` returns the entry's metadata. The binding is runtime state that program
snapshots carry (section ``tool_binding``), so a restored program keeps it.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.tools import is_registry
from harnpy.runtime.display import display
from harnpy.runtime.extensions import register_state
from harnpy.stdlib.registry import builtin

#: Runtime attribute holding the bound registry (a Harn dict) or None.
STATE_ATTR = "bound_tool_registry"


def bound_registry(runtime: Any) -> dict[str, Any] | None:
    """The registry ``tool_bind`` installed on ``runtime``, or None."""
    return getattr(runtime, STATE_ATTR, None)


def _lookup(thread: Any, name: Any, where: str) -> dict[str, Any]:
    """The entry named ``name`` of the bound registry.

    Raises:
        HarnThrow: ``<where>: name must be a string literal``, ``<where>: no tool registry
            bound ...`` or ``<where>: unknown tool "<name>". Registered tools: a, b`` (or
            ``(none registered)``).
    """
    if type(name) is not str:
        raise thrown(f"{where}: name must be a string literal")
    reg = bound_registry(thread.runtime)
    if reg is None:
        raise thrown(f"{where}: no tool registry bound; call tool_bind(registry) first")
    names = []
    for t in reg["tools"]:
        if type(t) is dict:
            if t.get("name") == name:
                return t
            names.append(display(t.get("name")))
    listed = ", ".join(names) if names else "(none registered)"
    raise thrown(f'{where}: unknown tool "{name}". Registered tools: {listed}')


@builtin("tool_bind")
def tool_bind(thread: Any, registry: Any = None) -> Any:
    """``tool_bind(registry)``: make ``registry`` the bound registry that ``tool_ref`` and
    ``tool_def`` resolve names against, and return it; ``tool_bind(nil)`` unbinds (returns
    nil). A later bind replaces the earlier one. Throws ``tool_bind: argument must be a
    tool registry or nil`` for anything else."""
    if registry is None:
        setattr(thread.runtime, STATE_ATTR, None)
        return None
    if not is_registry(registry):
        raise thrown("tool_bind: argument must be a tool registry or nil")
    setattr(thread.runtime, STATE_ATTR, registry)
    return registry


@builtin("tool_ref")
def tool_ref(thread: Any, name: Any = None) -> str:
    """``tool_ref(name)``: ``name`` itself when the bound registry has a tool of that name
    (use it wherever a tool name is written, so a misspelt one fails at once). Throws when
    ``name`` is not a string, when no registry is bound (``no tool registry bound``) or for
    an unknown name (the message lists the registered tools)."""
    _lookup(thread, name, "tool_ref")
    return name  # type: ignore[no-any-return]


@builtin("tool_def")
def tool_def(thread: Any, name: Any = None) -> dict[str, Any]:
    """``tool_def(name)``: the bound registry's entry ``name`` without its handler
    (``{name, description, parameters, executor, ...}``). Throws like ``tool_ref``."""
    entry = _lookup(thread, name, "tool_def")
    return {k: v for k, v in entry.items() if k != "handler"}


def _save(thread: Any) -> Any:
    return bound_registry(thread.runtime)


def _load(thread: Any, data: Any) -> Any:
    if not is_registry(data):
        raise TypeError("the bound tool registry must be a tool registry dict")
    rt = thread.runtime
    return lambda: setattr(rt, STATE_ATTR, data)


register_state("tool_binding", _save, _load)
