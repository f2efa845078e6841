"""Loud failures of root agent loops (issue 14 §2; the rule is :mod:`harnpy.runtime.outcomes`).

When a root ``agent_loop`` (not an agent worker's loop: a worker's failure is its status,
reported by ``wait_agent`` and ``run --resume``) ends, :func:`report_root_outcome` looks at
its result:

* a failure status (:data:`FAILURE_HINTS`: ``provider_error``, ``budget_exhausted``,
  ``stuck``, ``watchdog``, ``failed``) prints one line on stderr — what happened, what to
  do — and registers the result, so ``harnpy run`` exits 1 unless the program reads the
  result's ``status`` or ``error``;
* tool calls the loop's policy refused (``denied`` records) print one line too (the loop
  itself may still have finished: no exit-status effect).

The line is ``harnpy: agent_loop (FILE:LINE) ended with STATUS: DETAIL; HINT``.
"""

from __future__ import annotations

from typing import Any

from harnpy.runtime.outcomes import register

#: Failure statuses of a loop and what the user can do about each.
FAILURE_HINTS: dict[str, str] = {
    "provider_error": (
        "check the provider settings (provider, model, API key, base URL), or run offline "
        'with provider: "mock" and --llm-mock FILE'
    ),
    "budget_exhausted": "raise max_iterations or give the agent a smaller task",
    "stuck": (
        "the model never wrote the done sentinel: raise max_nudges, change done_sentinel "
        "or drop loop_until_done"
    ),
    "watchdog": "give the daemon a wake source (wake_interval_ms, watch_paths) or more idle attempts",
    "failed": "the tools the loop required (require_successful_tools) did not all succeed",
}

#: Provider error categories whose message already says what to do.
_SELF_EXPLAINING = frozenset({"config", "auth", "disabled", "mock_unmatched"})

#: Provider error categories of a busy or failing service, and what to do then.
_TRANSIENT_HINT = "the provider is busy or failing: try again later or raise llm_retries"
#: A model call refused by the call's own budget (max_cost_usd, max_input_tokens, ...).
_BUDGET_HINT = (
    "raise the budget (max_cost_usd, max_input_tokens, budget.total_budget_usd), lower "
    "max_tokens or pick a cheaper model"
)
_TRANSIENT = frozenset({"rate_limit", "overloaded", "timeout", "transient_network", "server_error"})


def report_root_outcome(thread: Any, st: dict[str, Any], result: dict[str, Any]) -> None:
    """Report the end of a root loop (module docstring): one stderr line for a failure
    status (and register ``result`` for the exit-status rule), one for refused tool calls.
    Does nothing for a worker's loop or a loop that parked."""
    if st.get("worker_id") is not None or getattr(thread.runtime, "resuming_worker", False):
        return  # a worker's failure is its status (wait_agent; run --resume reports it)
    status = result.get("status")
    where = call_site(thread)
    at = f" ({where})" if where else ""
    denied = _denied_tools(st)
    if denied:
        names = ", ".join(f"{name} ({n}x)" if n > 1 else name for name, n in denied.items())
        thread.write_err(
            f"harnpy: agent_loop{at}: the loop's policy refused tool calls: {names}; allow "
            "them in the policy option or take them out of tools\n"
        )
    if not isinstance(status, str) or status not in FAILURE_HINTS:
        return
    detail = _detail(st, status)
    hint = FAILURE_HINTS[status]
    err = st.get("error")
    category = err.get("category") if type(err) is dict else None
    if status == "provider_error" and category in _SELF_EXPLAINING:
        hint = ""
    elif status == "provider_error" and category in _TRANSIENT:
        hint = _TRANSIENT_HINT
    elif status == "provider_error" and category == "budget_exceeded":
        hint = _BUDGET_HINT
    if status == "budget_exhausted" and type(st.get("budget_error")) is dict:
        hint = "raise budget.total_budget_usd, lower max_tokens or pick a cheaper model"
    message = f"agent_loop{at} ended with {status}" + (f": {detail}" if detail else "")
    if hint:
        message += f"; {hint}"
    thread.write_err(f"harnpy: {message}\n")
    register(thread.runtime, result, status, where, message)


def _detail(st: dict[str, Any], status: str) -> str:
    err = st.get("error")
    if status == "provider_error":
        if type(err) is dict:
            text = str(err.get("message") or "").strip()
            category = err.get("category")
            if category and category != "generic" and text:
                return f"{text} [{category}]"
            return text
        return ""
    if status == "budget_exhausted" and type(st.get("budget_error")) is dict:
        return str(st["budget_error"].get("message") or "")  # budget.total_budget_usd
    if status == "budget_exhausted":
        return f"{st.get('iteration', 0)} model calls (max_iterations: {st.get('max_iterations')})"
    if status == "stuck":
        return f"{st.get('nudges', 0)} answers in a row without {st.get('done_sentinel')!s}"
    if type(err) is dict and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err
    return ""


def _denied_tools(st: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rec in st.get("records") or []:
        if type(rec) is dict and rec.get("status") == "denied":
            name = str(rec.get("name"))
            out[name] = out.get(name, 0) + 1
    return out


def call_site(thread: Any) -> str:
    """``path:line`` of the innermost frame of the program's own code (not a bundled
    ``std/`` module) on ``thread``'s stack — where ``agent_loop`` was called — or ""."""
    import os

    fr = getattr(thread, "frame", None)
    while fr is not None:
        code = getattr(fr, "code", None)
        module = getattr(code, "module", None)
        path = str(getattr(module, "path", "") or "")
        if (
            code is not None
            and module is not None
            and not getattr(fr, "native", False)
            and not path.startswith("std/")
        ):
            line, _ = code.line_at(fr.pc - 1)
            shown = path
            if os.path.isabs(path):
                try:
                    rel = os.path.relpath(path)
                    shown = path if rel.startswith("..") else rel
                except ValueError:  # another drive (Windows)
                    shown = path
            return f"{shown}:{line}" if line else shown
        fr = getattr(fr, "parent", None)
    return ""


__all__ = ["FAILURE_HINTS", "call_site", "report_root_outcome"]
