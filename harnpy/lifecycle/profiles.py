"""``agent_loop`` profiles (Harn ``llm/agent_loop.md``, "agent_loop options"): named
presets of the loop-budget and retry options. ``profile`` (default ``tool_using``) picks
one; any option given explicitly overrides the profile's value. Every profile retries
with ``llm_backoff_ms`` 2000 (:data:`DEFAULT_LOOP_BACKOFF_MS`) unless the loop sets it.

| profile | max_iterations | max_nudges | tool_retries | llm_retries | schema_retries |
|---|---:|---:|---:|---:|---:|
| tool_using | 50 | 8 | 0 | 2 | 0 |
| researcher | 30 | 4 | 0 | 2 | 0 |
| verifier | 5 | 0 | 0 | 2 | 3 |
| completer | 1 | 0 | 0 | 2 | 0 |
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import thrown
from harnpy.runtime.display import display

PROFILES: dict[str, dict[str, int]] = {
    "tool_using": {
        "max_iterations": 50,
        "max_nudges": 8,
        "tool_retries": 0,
        "llm_retries": 2,
        "schema_retries": 0,
    },
    "researcher": {
        "max_iterations": 30,
        "max_nudges": 4,
        "tool_retries": 0,
        "llm_retries": 2,
        "schema_retries": 0,
    },
    "verifier": {
        "max_iterations": 5,
        "max_nudges": 0,
        "tool_retries": 0,
        "llm_retries": 2,
        "schema_retries": 3,
    },
    "completer": {
        "max_iterations": 1,
        "max_nudges": 0,
        "tool_retries": 0,
        "llm_retries": 2,
        "schema_retries": 0,
    },
}

DEFAULT_PROFILE = "tool_using"
#: ``llm_backoff_ms`` of an agent loop that does not set one, whatever its profile (Harn
#: ``llm/agent_loop.md``: 2000; a plain ``llm_call`` keeps 250). Retry ``n`` waits
#: ``2000 * 2**n`` ms on the runtime clock (a mock clock makes it virtual).
DEFAULT_LOOP_BACKOFF_MS = 2000


def apply_profile(opts: dict[str, Any], where: str) -> dict[str, Any]:
    """``opts`` with the defaults of its ``profile`` filled in (explicit keys win; the
    ``retries`` alias counts as ``llm_retries``, ``backoff_ms`` as ``llm_backoff_ms``),
    and ``llm_backoff_ms`` :data:`DEFAULT_LOOP_BACKOFF_MS` when neither is given.

    Raises:
        HarnThrow: ``<where>: profile must be one of tool_using, researcher, verifier,
            completer (got X)``.
    """
    name = opts.get("profile", DEFAULT_PROFILE)
    if name is None:
        name = DEFAULT_PROFILE
    if type(name) is not str or name not in PROFILES:
        raise thrown(f"{where}: profile must be one of {', '.join(PROFILES)} (got {display(name)})")
    out = dict(opts)
    for key, value in PROFILES[name].items():
        if key == "llm_retries" and out.get("retries") is not None:
            continue
        if out.get(key) is None:
            out[key] = value
    if out.get("llm_backoff_ms") is None and out.get("backoff_ms") is None:
        out["llm_backoff_ms"] = DEFAULT_LOOP_BACKOFF_MS
    return out
