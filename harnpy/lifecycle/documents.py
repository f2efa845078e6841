"""The worker snapshot file's envelope as a validated shape (lifecycle.md 3.6, 3.7).

Read on every cold ``harnpy run --resume``, so it is an attrs shape (:mod:`harnpy.shapes`),
cheap to import and to check, like the evaluator snapshot's envelope
(:mod:`harnpy.runtime.snapshot_model`). The data shapes scripts see (Suspension,
ResumeConditions, worker summaries) are the pydantic models of :mod:`harnpy.lifecycle.models`,
validated at park time, off the start-up path.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from harnpy.shapes import min_len, shape

#: Worker modes (3.1).
WorkerMode = Literal["workflow", "stage", "sub_agent", "delegated_stage", "top_level_agent"]


@shape()
@attrs.define(kw_only=True)
class ConfigRecord:
    """``config`` of a worker snapshot: only ``mode`` is checked (3.6 load rules)."""

    mode: WorkerMode


@shape()
@attrs.define(kw_only=True)
class WorkerSnapshotDoc:
    """The envelope of ``.harn/workers/<id>.json`` (3.6, 3.7; extra keys allowed).

    ``harnpy_thread`` is the embedded evaluator snapshot (a ``harnpy_snapshot`` document plus
    ``pending_slot``) of a parked worker, or nil when the worker has not reached a suspend
    checkpoint.
    """

    type_: Literal["worker_snapshot", "daemon_snapshot"] = attrs.field(metadata={"key": "_type"})
    harnpy_snapshot_version: int = 1
    id: str = attrs.field(validator=min_len(1))
    name: str = "worker"
    task: str = ""
    status: str = "interrupted"
    mode: str = "workflow"
    history: list[Any] = attrs.field(factory=list)
    config: ConfigRecord
    snapshot_path: str | None = None
    suspension: dict[str, Any] | None = None
    harnpy_thread: dict[str, Any] | None = None
