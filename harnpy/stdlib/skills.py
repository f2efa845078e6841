"""Skill registries: ``skill_registry``, ``skill_define`` and friends (spec language.md 2,
"``skill NAME { field expr ... }`` ... lower to builtin calls (``skill_define(...)``)").

A skill bundles metadata (``description``, ``when_to_use``, ``prompt``, ``paths``, tools,
lifecycle closures such as ``on_activate``...) under a name. Registries have the tool
registry's shape, ``{_type: "skill_registry", skills: [entry, ...]}``, and are values: every
builtin returns a new registry and never changes its argument. An entry is the config dict
plus ``name`` and a ``description`` (``""`` when absent); other keys pass through. The
declaration ``skill NAME { ... }`` binds ``NAME`` to
``skill_define(skill_registry(), "NAME", {...})`` (the Harn reference lowers it the same
way). Failures throw the reference's message strings (``catch (e)`` binds the text).
"""

from __future__ import annotations

from typing import Any

from harnpy.runtime.display import display
from harnpy.stdlib._common import is_callable
from harnpy.stdlib._util import fail
from harnpy.stdlib.registry import builtin

_STRING_KEYS = ("description", "when_to_use", "prompt", "invocation", "model", "effort")
_LIST_KEYS = ("paths", "allowed_tools", "mcp", "requires_mcp")


def new_skill_registry() -> dict[str, Any]:
    """An empty registry ``{_type: "skill_registry", skills: []}``."""
    return {"_type": "skill_registry", "skills": []}


def _registry(value: Any, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise fail(f"{where}: first argument must be a skill registry")
    if value.get("_type") != "skill_registry":
        raise fail(f"{where}: argument must be a skill registry (created with skill_registry())")
    return value


def _skills(registry: dict[str, Any]) -> list[Any]:
    skills = registry.get("skills")
    return skills if type(skills) is list else []


def _name_of(entry: Any) -> Any:
    return entry.get("name") if type(entry) is dict else None


@builtin()
def skill_registry(thread: Any) -> dict[str, Any]:
    """``skill_registry()``: an empty skill registry."""
    return new_skill_registry()


@builtin()
def skill_define(
    thread: Any, registry: Any = None, name: Any = None, config: Any = None
) -> dict[str, Any]:
    """``skill_define(registry, name, config)``: a new registry with the skill ``name``
    added, or replacing the one of that name in place. ``config`` is a dict (or nil);
    ``description``, ``when_to_use``, ``prompt``, ``invocation``, ``model`` and ``effort``
    must be strings, ``paths``, ``allowed_tools``, ``mcp`` and ``requires_mcp`` lists.

    Throws: a missing argument, a non-registry, an empty name, a non-dict config or a
    mistyped known key.
    """
    if registry is None or name is None:
        raise fail("skill_define: requires registry, name, and config dict")
    reg = _registry(registry, "skill_define")
    skill_name = name if type(name) is str else display(name)
    if not skill_name:
        raise fail("skill_define: skill name must be a non-empty string")
    if config is None:
        config = {}
    if type(config) is not dict:
        raise fail("skill_define: third argument must be a config dict")
    for key in _STRING_KEYS:
        if config.get(key) is not None and type(config[key]) is not str:
            raise fail(f"skill_define: '{key}' must be a string")
    for key in _LIST_KEYS:
        if config.get(key) is not None and type(config[key]) is not list:
            raise fail(f"skill_define: '{key}' must be a list")
    entry: dict[str, Any] = {"name": skill_name}
    if "description" not in config:
        entry["description"] = ""
    entry.update(config)
    skills = list(_skills(reg))
    for i, existing in enumerate(skills):
        if _name_of(existing) == skill_name:
            skills[i] = entry
            break
    else:
        skills.append(entry)
    return {**reg, "skills": skills}


@builtin()
def skill_list(thread: Any, registry: Any = None) -> list[dict[str, Any]]:
    """``skill_list(registry)``: the entries without their closures (lifecycle hooks are not
    data), in definition order."""
    if type(registry) is not dict:
        raise fail("skill_list: requires a skill registry")
    reg = _registry(registry, "skill_list")
    return [
        {k: v for k, v in entry.items() if not is_callable(v)}
        for entry in _skills(reg)
        if type(entry) is dict
    ]


@builtin()
def skill_find(thread: Any, registry: Any = None, name: Any = None) -> Any:
    """``skill_find(registry, name)``: the entry named ``name``, or nil."""
    if registry is None or name is None:
        raise fail("skill_find: requires registry and name")
    reg = _registry(registry, "skill_find")
    target = name if type(name) is str else display(name)
    for entry in _skills(reg):
        if _name_of(entry) == target:
            return entry
    return None


@builtin()
def skill_select(thread: Any, registry: Any = None, names: Any = None) -> dict[str, Any]:
    """``skill_select(registry, names)``: a registry holding only the skills whose names
    are in the list ``names`` (registry order)."""
    if registry is None or names is None:
        raise fail("skill_select: requires registry and names list")
    reg = _registry(registry, "skill_select")
    if type(names) is not list:
        raise fail("skill_select: second argument must be a list of skill names")
    wanted = {n if type(n) is str else display(n) for n in names}
    return {**reg, "skills": [e for e in _skills(reg) if _name_of(e) in wanted]}


@builtin()
def skill_remove(thread: Any, registry: Any = None, name: Any = None) -> dict[str, Any]:
    """``skill_remove(registry, name)``: a registry without the skill ``name``."""
    if registry is None or name is None:
        raise fail("skill_remove: requires registry and name")
    reg = _registry(registry, "skill_remove")
    target = name if type(name) is str else display(name)
    return {**reg, "skills": [e for e in _skills(reg) if _name_of(e) != target]}


@builtin()
def skill_count(thread: Any, registry: Any = None) -> int:
    """``skill_count(registry)``: how many skills it holds."""
    if type(registry) is not dict:
        raise fail("skill_count: requires a skill registry")
    return len(_skills(_registry(registry, "skill_count")))


@builtin()
def skill_describe(thread: Any, registry: Any = None) -> str:
    """``skill_describe(registry)``: a prompt-ready listing, sorted by name::

    Available skills:
    - name: description
      when: when_to_use
    """
    if type(registry) is not dict:
        raise fail("skill_describe: requires a skill registry")
    reg = _registry(registry, "skill_describe")
    entries = [e for e in _skills(reg) if type(e) is dict]
    if not entries:
        return "Available skills:\n(none)"

    def text(v: Any) -> str:
        return "" if v is None else v if type(v) is str else display(v)

    lines = ["Available skills:"]
    for e in sorted(entries, key=lambda e: text(e.get("name"))):
        name, desc, when = (
            text(e.get("name")),
            text(e.get("description")),
            text(e.get("when_to_use")),
        )
        lines.append(f"- {name}: {desc}" if desc else f"- {name}")
        if when:
            lines.append(f"  when: {when}")
    return "\n".join(lines)
