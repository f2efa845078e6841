"""Tool lifecycle hooks: ``register_tool_hook`` / ``clear_tool_hooks`` (Harn
``extensibility/hooks.md``, "Tool lifecycle hooks").

A hook is ``{pattern, deny?, max_output?, pre?, post?}``; ``pattern`` is a glob over tool
names (``*`` and ``?``; default ``"*"``). The hooks are runtime state that program snapshots
carry (section ``tool_hooks``; ``pre`` / ``post`` closures are ordinary snapshot values).

Enforcement in ``agent_loop`` (``std/agent/_loop`` and :mod:`harnpy.lifecycle.agents`):

* ``deny`` (PreToolUse): a call of a matching tool that would be dispatched is refused
  instead. The model gets Harn's structured denial ``{"error": "permission_denied",
  "tool", "reason"}`` as the tool result, the call record has status ``denied`` and the
  tool is listed in ``result.tools.rejected`` (:func:`screen`).
* ``pre`` closures (PreToolUse) run in registration order before the handler, each with
  ``{event: "PreToolUse", tool_name, tool_call_id, args}``; one answering ``{deny:
  reason}`` refuses the call as above, ``{args: replacement}`` replaces the arguments the
  handler gets; nil / true / other dicts change nothing. A pre closure that throws refuses
  the call (fail closed). The closures are called by the Harn loop (``pre_hooks`` on the
  dispatch decision), so they are ordinary Harn frames.
* ``post`` closures (PostToolUse) run after a handler that returned, with ``{event:
  "PostToolUse", tool_name, tool_call_id, args, result}``; a string or ``{result: r}``
  answer replaces the result; nil changes nothing; a throwing post closure is ignored.
* ``max_output`` (PostToolUse): the result text the model sees is cut to about that many
  characters around a ``[... N chars snipped ...]`` marker (:func:`limit_output`). Every
  matching hook applies, in registration order.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.lifecycle.compaction import snip
from harnpy.lifecycle.permissions import denied_content
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.extensions import register_dict_list_state
from harnpy.runtime.values import Closure, EnumValue, type_name
from harnpy.stdlib.registry import builtin

#: Runtime attribute holding the registered hooks (a list of hook dicts).
STATE_ATTR = "tool_hooks"


def hooks(runtime: Any) -> list[dict[str, Any]]:
    """The hooks registered on ``runtime``, in registration order."""
    return getattr(runtime, STATE_ATTR, None) or []


def matching(runtime: Any, name: Any) -> list[dict[str, Any]]:
    """The hooks whose pattern matches the tool name ``name``."""
    text = name if type(name) is str else display(name)
    return [h for h in hooks(runtime) if fnmatch.fnmatchcase(text, h["pattern"])]


def _deny(prep: dict[str, Any], reason: str) -> dict[str, Any]:
    """``prep`` turned into a refusal by a tool hook (the loop's ``denied`` record)."""
    out = {
        k: v
        for k, v in prep.items()
        if k not in ("handler", "argv", "positional", "param_order", "pre_hooks", "post_hooks")
    }
    out.update(
        action="reject",
        reason="policy",
        permission_reason=reason,
        message=denied_content(prep.get("name"), reason),
    )
    return out


def screen(runtime: Any, prep: dict[str, Any]) -> dict[str, Any]:
    """Apply the hooks to one dispatch decision of the loop (see the module docstring):
    a matching ``deny`` refuses it; matching ``pre`` / ``post`` closures are attached as
    ``pre_hooks`` / ``post_hooks`` for the Harn loop to call. Other decisions (rejections,
    parks) are returned unchanged."""
    if prep.get("action") != "dispatch" or not hooks(runtime):
        return prep
    found = matching(runtime, prep.get("name"))
    for h in found:
        if h.get("deny") is not None:
            return _deny(prep, h["deny"])
    pre = [h["pre"] for h in found if h.get("pre") is not None]
    post = [h["post"] for h in found if h.get("post") is not None]
    if not pre and not post:
        return prep
    out = dict(prep)
    if pre:
        out["pre_hooks"] = pre
    if post:
        out["post_hooks"] = post
    return out


def limit_output(runtime: Any, name: Any, content: str) -> str:
    """``content`` (a tool result as the model sees it) cut by every matching hook's
    ``max_output``, in registration order."""
    for h in matching(runtime, name) if hooks(runtime) else ():
        limit = h.get("max_output")
        if limit is not None and len(content) > limit:
            content = snip(content, limit)
    return content


def _positional_args(prep: dict[str, Any], args: dict[str, Any]) -> list[Any]:
    """The positional argument list of a declared tool's handler for ``args``."""
    order = prep.get("param_order") or []
    argv = [args.get(p) for p in order]
    while argv and argv[-1] is None and order[len(argv) - 1] not in args:
        argv.pop()
    return argv


@builtin("__tool_hook_event")
def tool_hook_event(thread: Any, prep: Any = None, event: Any = None, result: Any = None) -> Any:
    """``__tool_hook_event(prep, event, result?)``: the payload a ``pre`` / ``post`` tool
    hook closure gets: ``{event, tool_name, tool_call_id, args}`` plus ``result`` for
    ``PostToolUse``."""
    payload = {
        "event": event,
        "tool_name": prep.get("name"),
        "tool_call_id": prep.get("id"),
        "args": prep.get("args"),
    }
    if event == "PostToolUse":
        payload["result"] = result
    return payload


@builtin("__tool_hook_pre")
def tool_hook_pre(thread: Any, prep: Any = None, outcome: Any = None) -> Any:
    """``__tool_hook_pre(prep, outcome)``: the dispatch decision after one ``pre`` closure
    answered ``outcome`` (the try-expression ``Result`` of its call): a refusal for
    ``{deny: reason}`` or a thrown error, new arguments for ``{args: dict}``, else
    ``prep`` unchanged."""
    if type(outcome) is EnumValue and outcome.enum == "Result":
        if outcome.variant != "Ok":
            err = outcome.fields[0] if outcome.fields else None
            return _deny(prep, f"tool hook failed: {display(err)}")
        outcome = outcome.fields[0] if outcome.fields else None
    if type(outcome) is not dict:
        return prep
    if outcome.get("deny") is not None:
        return _deny(prep, display(outcome["deny"]))
    args = outcome.get("args")
    if args is None:
        return prep
    if type(args) is not dict:
        raise runtime_error(
            f"register_tool_hook: pre hook args must be a dict, got {type_name(args)}"
        )
    out = {**prep, "args": args}
    if prep.get("positional"):
        out["argv"] = _positional_args(prep, args)
    return out


@builtin("__tool_hook_post")
def tool_hook_post(thread: Any, outcome: Any = None, answer: Any = None) -> Any:
    """``__tool_hook_post(outcome, answer)``: the handler's ``Result`` after one ``post``
    closure answered ``answer`` (its own try ``Result``): ``Ok(s)`` for a string ``s``,
    ``Ok(r)`` for ``{result: r}``, else ``outcome`` unchanged (also when the closure
    threw or the handler had failed)."""
    if type(outcome) is not EnumValue or outcome.variant != "Ok":
        return outcome
    if type(answer) is EnumValue and answer.enum == "Result":
        if answer.variant != "Ok":
            return outcome
        answer = answer.fields[0] if answer.fields else None
    if type(answer) is str:
        return EnumValue("Result", "Ok", [answer])
    if type(answer) is dict and "result" in answer:
        return EnumValue("Result", "Ok", [answer["result"]])
    return outcome


@builtin("register_tool_hook")
def register_tool_hook(thread: Any, config: Any = None) -> None:
    """``register_tool_hook({pattern?, deny?, max_output?, pre?, post?})``: add a tool
    lifecycle hook for the tools whose name matches the glob ``pattern`` (default ``"*"``).
    ``deny: reason`` refuses matching calls in ``agent_loop`` (the model gets
    ``{"error": "permission_denied", tool, reason}``); ``max_output: n`` cuts longer
    results to about ``n`` characters around a ``[... N chars snipped ...]`` marker;
    ``pre`` / ``post`` closures run before / after the handler (``{deny}`` / ``{args}`` from
    ``pre``, a string or ``{result}`` from ``post``). Returns nil. Throws for a config that
    is not a dict, a ``max_output`` that is not a non-negative int, or ``pre`` / ``post``
    values that are not closures."""
    if type(config) is not dict:
        raise thrown(f"register_tool_hook: config must be a dict, got {type_name(config)}")
    pattern = config.get("pattern")
    hook: dict[str, Any] = {
        "pattern": "*"
        if pattern is None
        else (pattern if type(pattern) is str else display(pattern))
    }
    if config.get("deny") is not None:
        deny = config["deny"]
        hook["deny"] = deny if type(deny) is str else display(deny)
    limit = config.get("max_output")
    if limit is not None:
        if type(limit) is not int or limit < 0:
            raise thrown("register_tool_hook: max_output must be a non-negative int")
        hook["max_output"] = limit
    for key in ("pre", "post"):
        fn = config.get(key)
        if fn is None:
            continue
        if type(fn) is not Closure:
            raise runtime_error(f"register_tool_hook: {key} must be a closure, got {type_name(fn)}")
        hook[key] = fn
    setattr(thread.runtime, STATE_ATTR, [*hooks(thread.runtime), hook])


@builtin("clear_tool_hooks")
def clear_tool_hooks(thread: Any) -> None:
    """``clear_tool_hooks()``: remove every tool hook ``register_tool_hook`` added (session
    hooks are not touched). Returns nil."""
    setattr(thread.runtime, STATE_ATTR, [])


register_dict_list_state(
    "tool_hooks", STATE_ATTR, "pattern", "tool hooks must be a list of hook dicts with a pattern"
)
