"""The option keys ``agent_loop`` knows, and the warning for one that looks misspelt.

An options dict is open: ``agent_loop`` forwards what it does not read itself to the model
call (``llm_call``'s options, provider sub-dicts such as ``ollama: {...}``), and Harn keeps
adding keys. So an unknown key is not an error. But a key one or two letters away from a
known one (``tols``, ``max_iteration``, ``loop_untill_done``) is almost always a typo whose
option silently does nothing; :func:`warn_misspelt_options` names it once per process with
the key it resembles.

The names are those of Harn's ``agent_loop`` and ``llm_call`` option tables
(``docs/src/llm/agent_loop.md``, ``docs/src/llm/llm_call.md``), lifecycle.md §2.13, and
the keys harnpy's loop reads besides (worker, suspension and daemon options).
"""

from __future__ import annotations

import difflib
from typing import Any

__all__ = ["AGENT_LOOP_OPTIONS", "LLM_CALL_OPTIONS", "misspelt_options", "warn_misspelt_options"]

#: ``llm_call`` options (Harn's options table), which ``agent_loop`` accepts too.
LLM_CALL_OPTIONS: frozenset[str] = frozenset(
    """
    provider model model_role model_tier max_tokens temperature top_p top_k stop seed
    frequency_penalty presence_penalty logprobs top_logprobs response_format output_format
    schema json_schema output_schema output_validation schema_retries schema_stream_abort
    schema_retry_nudge llm_retries llm_backoff_ms retries backoff_ms reasoning_policy
    thinking_policy reasoning_scale problem_scale reasoning_task reasoning_effort thinking
    interleaved_thinking anthropic_beta_features vision tools tool_choice tool_search
    tool_format api_mode provider_tools hosted_tools previous_response_id response_store
    responses_store store background truncation compact include max_tool_calls budget cache
    fast speed stream timeout timeout_ms messages structural_experiment transcript system
    base_url api_key session_id mock_file record_file route_policy routing_policy
    """.split()
)

#: ``agent_loop``'s own options (Harn's table, lifecycle.md §2.13, and what harnpy reads).
AGENT_LOOP_OPTIONS: frozenset[str] = LLM_CALL_OPTIONS | frozenset(
    """
    profile loop_until_done persistent done_sentinel max_iterations iteration_budget
    loop_control max_nudges nudge llm_caller tool_retries tool_backoff_ms policy
    allowed_tools denied_tools approval_policy permissions capability_policy daemon
    persist_path resume_path wake_interval_ms watch_paths idle_watchdog_attempts
    consolidate_on_idle compaction compact_threshold compact_keep_first compact_keep_last
    compact_strategy compact_callback custom_compactor token_threshold keep_last keep_last_n
    microcompact_threshold summarize_prompt context_callback context_filter
    timestamp_messages message_decorator prompts prompt_overrides post_turn_callback
    verify_completion verify_completion_judge done_judge llm_transcript_dir turn_policy
    native_tool_fallback stop_after_successful_tools require_successful_tools
    stall_diagnostics skills skill_match working_files mcp_servers subagents subagent_tools
    reminders resume_by on_delta token_budget carry worker_id task name judge background
    max_verify_attempts llm_options tool_caller
    """.split()
)

#: how alike a key must be to a known one to be called a misspelling of it (difflib ratio)
_CUTOFF = 0.8

_warned: set[tuple[int, str, str]] = set()


def misspelt_options(opts: dict[str, Any], known: frozenset[str]) -> list[tuple[str, str]]:
    """``(key, the known key it resembles)`` for each string key of ``opts`` that is not in
    ``known`` but close to one (``tols`` → ``tools``), in the dict's order. Keys starting
    with ``_`` (internal) and keys like nothing known are left alone."""
    out: list[tuple[str, str]] = []
    for key in opts:
        if type(key) is not str or key in known or key.startswith("_"):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=_CUTOFF)
        if close:
            out.append((key, close[0]))
    return out


def warn_misspelt_options(
    runtime: Any, opts: dict[str, Any], where: str, known: frozenset[str] = AGENT_LOOP_OPTIONS
) -> None:
    """Write ``harnpy: warning: WHERE: unknown option `KEY` (did you mean `NAME`?); it is
    ignored`` to the runtime's stderr for each :func:`misspelt_options` hit, once per
    runtime, builtin and key (a loop in a loop does not repeat it)."""
    for key, near in misspelt_options(opts, known):
        mark = (id(runtime), where, key)
        if mark in _warned:
            continue
        _warned.add(mark)
        runtime.write_err(
            f"harnpy: warning: {where}: unknown option `{key}` (did you mean `{near}`?); "
            "it is ignored\n"
        )
