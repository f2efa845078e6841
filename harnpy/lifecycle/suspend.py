"""Suspend and resume of agent workers (lifecycle.md 1-4, 7-9, 11; seed 000 is the contract).

State machine (1.1, 1.2): ``running`` -> ``suspended`` (``suspend_agent``, a model-issued
``agent_await_resumption``, a daemon idling without a wake source, an ``InterruptAndSuspend``
broadcast) -> ``running`` (``resume_agent``, ``subagent_resume``, a trigger, a timeout) or
``cancelled`` (``close_agent``); ``running`` -> ``completed`` / ``failed``, or ``awaiting``
for a retriggerable worker (not suspended: ``resume_agent`` refuses it with ``-003``,
``worker_trigger`` / ``send_input`` restart it; see :mod:`harnpy.lifecycle.workers`). Invalid
transitions raise the catalog's codes (1.3, 1.4): ``HARN-SUS-001`` suspend of a worker that
is not running, ``-003`` resume of one that is not suspended, ``-004`` unreadable snapshot,
``-006`` a concurrent resume lost the race, ``-009`` blank resume input, ``-010`` resume of a
closed worker (``-002/005/007/008`` come from condition / request validation).

Parking (docs/impl.md "Agents, workers, suspension"): the loop of ``std/agent/_loop`` calls
the control builtin ``__agent_park`` at a turn boundary, so the parked thread's whole state
is frames and slots. Parking writes the worker snapshot — the 3.6 worker record plus the
evaluator snapshot of the loop's frames (``harnpy_thread``, with ``pending_slot``: the
result slot of the blocked ``__agent_park`` call) — atomically to
``<state dir>/<worker id>.json`` (``HARN_WORKER_STATE_DIR`` or ``.harn/workers``; a
per-user temporary directory when that one is not writable). The transcript and the worker
config are written once, at top level, and referenced from the frames (snapshot
externals). A root ``agent_loop`` (not a worker) snapshots only its own frames (T4) and
returns the ``Suspension`` to the script.

Resuming (2.4): a *warm* resume delivers the payload of ``__agent_apply_resume``
(``reminders`` / ``messages`` / ``transcript``) to the blocked call through its waker; a
*cold* resume (the worker's thread is gone: another process, or a root loop that already
returned) restores the thread from the file, puts the payload into the pending slot and
schedules it as a worker. Every resume first *claims* the snapshot file: under an exclusive
lock of its directory the status is re-checked (``suspended``, same ``park_id``) and
rewritten to ``running``, so of two processes resuming one snapshot exactly one continues
and the other gets ``HARN-SUS-006`` without writing anything. A resume that fails after the
claim writes the previous bytes back.

Hooks (7) run through :mod:`harnpy.lifecycle.hooks`: PreSuspend / PreResume may deny
(``false``, ``{block: true}``, ``{decision: "deny"}``; 13 Q21) or modify (``reason`` /
``resume_input``); PostSuspend / PostResume are advisory. Payloads carry ids, reasons and
flags, never transcript text. Trace spans (``suspension`` / ``resume``) are recorded while
tracing is enabled.

Modules (this module re-exports their API):

* :mod:`~harnpy.lifecycle.checkpoint_store` — where checkpoints live (state directory);
* :mod:`~harnpy.lifecycle.worker_documents` — the snapshot document: build, cap, write,
  read, rebuild a record;
* :mod:`~harnpy.lifecycle.claims` — claims, putting a claim back, adoption, noticing a
  park another process took over;
* :mod:`~harnpy.lifecycle.restore` — cold restore of a parked thread;
* :mod:`~harnpy.lifecycle.parking` — Suspensions, waits, spans, the parking builtins,
  ``suspend_agent``, the subagent tools;
* :mod:`~harnpy.lifecycle.continuity` — the resume payload and continuity reminder;
* :mod:`~harnpy.lifecycle.resuming` — ``resume_agent``, ``daemon_resume``, ``load_agent``;
* :mod:`~harnpy.lifecycle.wait_resumes` — trigger-driven resumes, close / finish writes;
* :mod:`~harnpy.lifecycle.cold_resume` — ``harnpy run --resume <worker snapshot>``.

Stable park / resume API (for the agent surface)
-------------------------------------------------

* Park: the agent loop calls ``__agent_suspend_begin(st, request)`` then
  ``__agent_park(st, request, resume_by_outcome)``; ``request`` is ``{reason, initiator
  ("self"), conditions (ResumeConditions dict or nil), resume_by?}``. A worker blocks as
  data until resumed; a root loop ends with the Suspension. From Python:
  :func:`request_suspend(runtime, rec, reason, initiator, conditions) <request_suspend>`
  asks a running worker to park at its next turn boundary (``suspend_agent`` T2).
* Resume: :func:`resume_sync(runtime, target, ResumeArgs) <resume_sync>` (``target``: a
  worker id, handle dict or snapshot reference; ``ResumeArgs.input`` /
  ``continue_transcript`` / ``initiator``), or the ``resume_agent`` builtin from Harn.
* Where it went: ``rec.snapshot_path`` (a file path, or ``<store url>#<worker id>`` with a
  store configured); :func:`read_document(path) <read_document>` reads and validates one.
"""

from __future__ import annotations

from harnpy.lifecycle.checkpoint_store import snapshot_dir
from harnpy.lifecycle.claims import (
    adopt,
    busy_elsewhere,
    claim,
    owner_alive,
    recover_stale_claim,
    refresh_from_disk,
    rollback,
    undo_resume,
)
from harnpy.lifecycle.cold_resume import drive_until_settled, resume_from_cli
from harnpy.lifecycle.continuity import continuity_reminder, resume_payload
from harnpy.lifecycle.parking import (
    cancel_wait,
    new_suspension,
    register_wait,
    request_suspend,
    subagent_tool_entries,
    suspend_agent,
    suspension_payload,
)
from harnpy.lifecycle.restore import bottom_frame, loop_frame, restore_thread
from harnpy.lifecycle.resuming import (
    ResumeArgs,
    commit_resume,
    drive_sync,
    load_agent,
    parse_resume_args,
    resume_agent,
    resume_gen,
    resume_sync,
)
from harnpy.lifecycle.wait_resumes import (
    fail_on_timeout,
    install,
    on_closed,
    on_finished,
    on_spawned,
)
from harnpy.lifecycle.worker_documents import (
    DAEMON_SNAPSHOT_TYPE,
    WORKER_FORMAT_VERSION,
    WORKER_SNAPSHOT_TYPE,
    SnapshotLoadError,
    build_document,
    canonical_snapshot,
    persist,
    persist_metadata,
    read_document,
    record_from_document,
    write_document,
)

__all__ = [
    "DAEMON_SNAPSHOT_TYPE",
    "WORKER_FORMAT_VERSION",
    "WORKER_SNAPSHOT_TYPE",
    "ResumeArgs",
    "SnapshotLoadError",
    "adopt",
    "bottom_frame",
    "build_document",
    "busy_elsewhere",
    "cancel_wait",
    "canonical_snapshot",
    "claim",
    "commit_resume",
    "continuity_reminder",
    "drive_sync",
    "drive_until_settled",
    "fail_on_timeout",
    "install",
    "load_agent",
    "loop_frame",
    "new_suspension",
    "on_closed",
    "on_finished",
    "on_spawned",
    "owner_alive",
    "parse_resume_args",
    "persist",
    "persist_metadata",
    "read_document",
    "record_from_document",
    "recover_stale_claim",
    "refresh_from_disk",
    "register_wait",
    "request_suspend",
    "restore_thread",
    "resume_agent",
    "resume_from_cli",
    "resume_gen",
    "resume_payload",
    "resume_sync",
    "rollback",
    "snapshot_dir",
    "subagent_tool_entries",
    "suspend_agent",
    "suspension_payload",
    "undo_resume",
    "write_document",
]
