"""The ``Harness`` capability object (lifecycle.md 0, "Call forms").

``harness`` is a :class:`~harnpy.runtime.values.StructValue` named ``Harness`` whose fields
are member objects (``HarnessStdio``, ``HarnessLlm``, ``HarnessAgent``, ``HarnessRuntime``,
``HarnessTesting``, ``HarnessRandom``, ``HarnessEnv``, ``HarnessFs``, ``HarnessProcess``,
``HarnessObs``, ``HarnessClock``) and top-level methods (``emit_audit``...). Every method is
a registered :class:`~harnpy.runtime.values.Builtin`, so ``harness.stdio.println(x)``
dispatches through the evaluator's ordinary method-call path (control and callback builtins
keep their calling protocol) and the value snapshots by builtin name. ``type_of(harness)``
is ``"struct"``.

Pipelines receive it for a parameter named ``harness``; it is also the global ``harness`` (a
runtime constant). Both are bound through :func:`harness_value`, which
:func:`harnpy.stdlib.load_core` declares to the runtime (a program that never names the
Harness does not import this module). Builtins that accept the harness-first
form drop a leading Harness or member argument (:func:`harnpy.lifecycle._common.
strip_harness`). A member whose builtin does not exist in this build raises
``harness.<group>.<name> is not available in harnpy`` when called.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import HARNESS_STRUCTS, arg, strip_harness
from harnpy.lifecycle.services import services
from harnpy.runtime.display import display
from harnpy.runtime.errors import runtime_error
from harnpy.runtime.values import Builtin, StructValue
from harnpy.stdlib.registry import BUILTINS, builtin

#: member group -> {method -> builtin name}; ``None`` groups are top-level methods.
MEMBERS: dict[str, dict[str, str]] = {
    "stdio": {
        "println": "println",
        "print": "print",
        "eprintln": "eprintln",
        "eprint": "eprint",
        "log": "log",
        "read_line": "read_line",
    },
    "llm": {
        "call": "llm_call",
        "mock": "llm_mock",
        "mock_enqueue": "llm_mock",
        "mock_calls": "llm_mock_calls",
        "mock_clear": "llm_mock_clear",
        "mock_push_scope": "llm_mock_push_scope",
        "mock_pop_scope": "llm_mock_pop_scope",
        "agent_loop": "agent_loop",
    },
    "agent": {
        "agent_loop": "agent_loop",
        "spawn_agent": "spawn_agent",
        "sub_agent_run": "sub_agent_run",
        "wait_agent": "wait_agent",
        "send_input": "send_input",
        "worker_trigger": "worker_trigger",
        "list_agents": "list_agents",
        "close_agent": "close_agent",
        "suspend_agent": "suspend_agent",
        "resume_agent": "resume_agent",
        "worker_events": "worker_events",
        "register_session_hook": "register_session_hook",
        "clear_session_hooks": "clear_session_hooks",
        "pipeline_on_finish": "pipeline_on_finish",
        "daemon_resume": "daemon_resume",
        "unsettled_state": "__harness_unsettled_state",
    },
    "runtime": {
        "trigger_register": "trigger_register",
        "trigger_fire": "trigger_fire",
        "yield_now": "yield_now",
        "sleep": "sleep",
        "shared_get": "shared_get",
        "shared_set": "shared_set",
    },
    "testing": {
        "clock_set": "mock_time",
        "clock_advance": "advance_time",
        "clock_reset": "unmock_time",
    },
    "random": {
        "uuid": "uuid",
        "uuid_v4": "uuid_v4",
        "uuid_v7": "uuid_v7",
        "range": "__harness_random_range",
        "float": "random",
    },
    "env": {"get": "env", "get_or": "env_or"},
    "fs": {
        "exists": "file_exists",
        "read_text": "read_file",
        "write_text": "write_file",
        "append_text": "append_file",
        "mkdir": "mkdir",
        "list_dir": "list_dir",
        "delete": "delete_file",
        "workspace_temp_dir": "__harness_workspace_temp_dir",
    },
    "process": {
        "exec": "exec",
        "exec_at": "__harness_exec_at",
        "shell": "shell",
    },
    "obs": {
        "enable_tracing": "enable_tracing",
        "trace_spans": "trace_spans",
        "trace_start": "trace_start",
        "trace_end": "trace_end",
        "trace_summary": "trace_summary",
        "start_span": "__lifecycle_span_start",
        "end_span": "__lifecycle_span_end",
    },
    "clock": {
        "timestamp": "timestamp",
        "now_ms": "now_ms",
        "monotonic_ms": "monotonic_ms",
    },
}

#: Top-level methods of ``harness`` (besides the member groups).
TOP_LEVEL: dict[str, str] = {
    "emit_audit": "__harness_emit_audit",
    "unsettled_state": "__harness_unsettled_state",
    "handoff_to": "harness_handoff_to",
    "counts": "harness_counts",
    "is_empty": "harness_is_empty",
    "acknowledge_trigger": "harness_acknowledge_trigger",
    "wait_for_any_settlement": "harness_wait_for_any_settlement",
    "cloud_session_id": "__harness_cloud_session_id",
    "summary": "__harness_summary",
    "acknowledge_handoff": "__harness_acknowledge_handoff",
    "defer_trigger": "__harness_defer_trigger",
    "finalize": "__harness_finalize",
    "spawn_settlement_agent": "__harness_spawn_settlement_agent",
    "current_pipeline_id": "__harness_current_pipeline_id",
    "resume_subagent": "__harness_resume_subagent",
    "cancel_subagent": "__harness_cancel_subagent",
}

GROUP_STRUCTS = {group: "Harness" + group.capitalize() for group in MEMBERS}
assert set(GROUP_STRUCTS.values()) | {"Harness"} == HARNESS_STRUCTS


@builtin("__harness_unavailable")
def harness_unavailable(thread: Any, *args: Any) -> Any:
    """A Harness member whose builtin this build lacks: always raises."""
    raise runtime_error("this harness member is not available in harnpy")


def _unavailable(path: str) -> Builtin:
    def fn(thread: Any, *args: Any) -> Any:
        raise runtime_error(f"{path} is not available in harnpy")

    # Same name as the registered fallback, so a snapshot restores a working value.
    return Builtin("__harness_unavailable", fn)


def _member(path: str, name: str) -> Builtin:
    b = BUILTINS.get(name)
    return b if b is not None else _unavailable(path)


def build() -> StructValue:
    """A fresh ``Harness`` value (members bound to the registered builtins)."""
    fields: dict[str, Any] = {}
    for group, methods in MEMBERS.items():
        fields[group] = StructValue(
            GROUP_STRUCTS[group],
            {m: _member(f"harness.{group}.{m}", b) for m, b in methods.items()},
        )
    for m, b in TOP_LEVEL.items():
        if b in BUILTINS:
            fields[m] = BUILTINS[b]
    return StructValue("Harness", fields)


def harness_value(runtime: Any) -> StructValue:
    """The runtime's Harness (built once per runtime)."""
    svc = services(runtime)
    if svc.harness is None:
        svc.harness = build()
    return svc.harness  # type: ignore[no-any-return]


# ----------------------------------------------------------------- member builtins


@builtin("__harness_random_range")
def harness_random_range(thread: Any, lo: Any = None, hi: Any = None) -> int:
    """``harness.random.range(lo, hi)``: a random int in ``[lo, hi]``."""
    import random as _random

    a = lo if type(lo) is int else 0
    b = hi if type(hi) is int else a
    if b < a:
        a, b = b, a
    return _random.randint(a, b)


@builtin("__harness_workspace_temp_dir")
def harness_workspace_temp_dir(thread: Any) -> str:
    """``harness.fs.workspace_temp_dir()``: the system temporary directory."""
    import tempfile

    return tempfile.gettempdir()


@builtin("__harness_exec_at")
def harness_exec_at(thread: Any, cwd: Any = None, cmd: Any = None, *args: Any) -> dict[str, Any]:
    """``harness.process.exec_at(cwd, cmd, ...args)``: like ``exec`` with a working
    directory: ``{stdout, stderr, status, success}`` (status 127 when it cannot start)."""
    import subprocess

    argv = [display(cmd) if type(cmd) is not str else cmd]
    argv += [a if type(a) is str else display(a) for a in args]
    try:
        proc = subprocess.run(
            argv, cwd=cwd if type(cwd) is str else None, capture_output=True, check=False
        )
    except OSError as exc:
        return {"stdout": "", "stderr": str(exc), "status": 127, "success": False}
    return {
        "stdout": proc.stdout.decode("utf-8", errors="replace"),
        "stderr": proc.stderr.decode("utf-8", errors="replace"),
        "status": proc.returncode,
        "success": proc.returncode == 0,
    }


@builtin("__harness_emit_audit")
def harness_emit_audit(thread: Any, *args: Any) -> dict[str, Any]:
    """``harness.emit_audit(kind, payload?)``: append ``{seq, kind, payload, pipeline_id}``
    to the run's lifecycle audit log (lifecycle.md 2.16); returns the entry."""
    args = strip_harness(args)
    kind = arg(args, 0)
    return services(thread.runtime).audit(
        kind if type(kind) is str else display(kind), arg(args, 1)
    )


@builtin("pipeline_lifecycle_audit_log_take")
def pipeline_lifecycle_audit_log_take(thread: Any, *args: Any) -> list[Any]:
    """``pipeline_lifecycle_audit_log_take(harness?)``: the audit entries so far, then
    clear the log (2.16)."""
    svc = services(thread.runtime)
    out, svc.audit_log = svc.audit_log, []
    return out


@builtin("pipeline_lifecycle_audit_log_snapshot")
def pipeline_lifecycle_audit_log_snapshot(thread: Any, *args: Any) -> list[Any]:
    """``pipeline_lifecycle_audit_log_snapshot(harness?)``: the audit entries (kept)."""
    return list(services(thread.runtime).audit_log)


@builtin("__harness_cloud_session_id")
def harness_cloud_session_id(thread: Any, *args: Any) -> Any:
    """``harness.cloud_session_id()``: ``harnpy-store:<path>`` when a durable wait store is
    configured (``HARNPY_STORE``; :func:`harnpy.lifecycle.triggers.cloud_session_id`),
    else nil (``ResumeBy.cloud_harness`` then declines, lifecycle.md 5.1).

    Raises:
        HarnRuntimeError: ``HARNPY_STORE`` names an unsupported backend.
    """
    from harnpy.lifecycle.triggers import cloud_session_id
    from harnpy.lifecycle.triggers.store import StoreError

    try:
        return cloud_session_id(thread.runtime)
    except StoreError as e:
        raise runtime_error(f"wait store (HARNPY_STORE): {e}") from None


@builtin("__is_harness")
def is_harness_(thread: Any, v: Any = None) -> bool:
    """``__is_harness(v)``: true for the Harness or one of its members (for std wrappers
    that accept the harness-first form)."""
    return type(v) is StructValue and v.name in HARNESS_STRUCTS
