"""The records a store holds (plain dataclasses; times are UTC epoch milliseconds)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ACTIVE_WAIT_STATUSES",
    "FINAL_WAIT_STATUSES",
    "RUN_STATUSES",
    "WAITPOINT_STATUSES",
    "CheckpointClaim",
    "CheckpointInfo",
    "CheckpointMeta",
    "Claim",
    "RunEvent",
    "RunRecord",
    "SessionRecord",
    "TranscriptAppend",
    "WaitRecord",
    "WaitpointRecord",
]

#: Statuses a wait moves through (``pending`` -> ``claimed`` -> one of the final ones).
ACTIVE_WAIT_STATUSES = ("pending", "claimed")
FINAL_WAIT_STATUSES = ("completed", "failed", "cancelled")
#: Statuses of a run (issue 11's responses): ``queued`` (runnable, not claimed yet),
#: ``in_progress`` (claimed, or parked on external work), then a final one.
RUN_STATUSES = ("queued", "in_progress", "completed", "failed", "cancelled")
#: Statuses of a durable waitpoint.
WAITPOINT_STATUSES = ("open", "completed", "cancelled", "timed_out")


@dataclass
class WaitRecord:
    """One parked worker's wait (lifecycle.md §4, §10).

    ``conditions`` is the normalized ResumeConditions dict; ``trigger`` the parsed trigger
    spec as JSON (None for on_event-only waits); ``match_events`` the event kinds the
    trigger matches; ``schedule``/``timezone``/``catchup_mode`` and
    ``next_fire_ms``/``last_tick_ms`` describe a cron trigger; ``deadline_ms``/``on_timeout``
    the absolute timeout. ``snapshot_path`` is the worker's checkpoint reference (a file
    path, or ``<store url>#<worker id>``); ``park_id`` the park that registered the wait (a
    wait only ever resumes that park; a checkpoint commit that leaves the park consumes its
    waits). ``lease_until_ms`` is in the store's clock (the database's on PostgreSQL).
    """

    id: str
    worker_id: str
    version: int = 1
    snapshot_path: str | None = None
    snapshot_sha256: str | None = None
    park_id: str | None = None
    conditions: dict[str, Any] = field(default_factory=dict)
    trigger: dict[str, Any] | None = None
    provider: str | None = None
    kind: str | None = None
    match_events: list[str] = field(default_factory=list)
    on_event: str | None = None
    deadline_ms: int | None = None
    on_timeout: str | None = None
    schedule: str | None = None
    timezone: str | None = None
    catchup_mode: str | None = None
    next_fire_ms: int | None = None
    last_tick_ms: int | None = None
    status: str = "pending"
    due_reason: str | None = None
    due_payload: Any = None
    due_at_ms: int | None = None
    claimed_by: str | None = None
    claim_token: str | None = None
    claimed_at_ms: int | None = None
    lease_until_ms: int | None = None
    attempts: int = 0
    last_error: str | None = None
    created_at_ms: int = 0
    updated_at_ms: int = 0
    completed_at_ms: int | None = None
    outcome: Any = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)

    def due_instant(self, now_ms: int) -> tuple[str, int] | None:
        """``(reason, at_ms)`` of the earliest due cause at ``now_ms`` (``event`` /
        ``trigger``, ``cron`` or ``timeout``), or None when nothing is due yet."""
        causes: list[tuple[int, int, str]] = []
        if self.due_reason is not None:
            causes.append((self.due_at_ms or 0, 0, self.due_reason))
        if self.next_fire_ms is not None and self.next_fire_ms <= now_ms:
            causes.append((self.next_fire_ms, 1, "cron"))
        if self.deadline_ms is not None and self.deadline_ms <= now_ms:
            causes.append((self.deadline_ms, 2, "timeout"))
        if not causes:
            return None
        at, _, reason = min(causes)
        return reason, at


@dataclass
class Claim:
    """A runner's exclusive hold on a wait: the record as claimed and its ``token`` (the
    fencing token every later write for this claim must present). ``previous_token`` is set
    when the claim took over an expired one."""

    record: WaitRecord
    token: str
    previous_token: str | None = None


@dataclass
class CheckpointInfo:
    """The listing columns of one worker checkpoint (no body).

    ``status`` / ``park_id`` / ``reason`` are those of the stored document; ``claim_holder``
    and ``claim_expires_at_ms`` describe a live or stale claim (a resume in progress:
    the stored document is the park it resumes, kept until the resume commits), ``version``
    counts commits. ``ref`` is the reference ``harnpy run --resume`` accepts.
    """

    worker_id: str
    ref: str
    status: str
    version: int = 0
    park_id: str | None = None
    name: str | None = None
    mode: str | None = None
    reason: str | None = None
    run_id: str | None = None
    size: int = 0
    updated_at_ms: int = 0
    claim_holder: str | None = None
    claim_expires_at_ms: int | None = None
    claim_owner: dict[str, Any] | None = None
    wake: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


@dataclass
class CheckpointClaim:
    """One resume's hold on a parked checkpoint: ``fence`` (strictly increasing per worker)
    must be presented by every commit made for this resume; ``body`` is the parked document
    (as stored: sealed bytes), ``version`` its commit number."""

    worker_id: str
    fence: int
    holder: str
    body: bytes
    version: int
    park_id: str | None = None


@dataclass
class SessionRecord:
    """A session (issue 11): belongs to ``owner_user``; ``metadata`` is caller data."""

    id: str
    owner_user: str
    created_at_ms: int = 0
    updated_at_ms: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunRecord:
    """A durable run (issue 11's response): ``status`` in :data:`RUN_STATUSES`; ``input`` /
    ``output`` (the completion snapshot, at most 4 MiB of JSON) / ``error`` (sanitized
    ``{category, message}``) are JSON values; ``event_seq`` the sequence number of its last
    event; ``lease_*`` the claim of the replica running it (``lease_fence`` increases with
    every claim)."""

    id: str
    owner_user: str
    session_id: str | None = None
    idempotency_key: str | None = None
    entry: str | None = None
    status: str = "queued"
    input: Any = None
    output: Any = None
    error: Any = None
    worker_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at_ms: int = 0
    updated_at_ms: int = 0
    completed_at_ms: int | None = None
    lease_holder: str | None = None
    lease_fence: int = 0
    lease_expires_at_ms: int | None = None
    event_seq: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


@dataclass
class RunEvent:
    """One event of a run: ``seq`` from 1 with no gaps (SSE ``id``), ``event_type`` and its
    JSON ``data``."""

    run_id: str
    seq: int
    event_type: str
    data: Any
    created_at_ms: int = 0


@dataclass
class WaitpointRecord:
    """A durable waitpoint (issue 10 item 2): ``status`` in :data:`WAITPOINT_STATUSES`;
    ``submission_key`` (unique when set) makes creation idempotent; ``value`` / ``error``
    the completion; ``timeout_at_ms`` the absolute deadline; ``waiters`` the
    ``(worker_id, park_id)`` pairs parked on it (fan-in / fan-out)."""

    id: str
    status: str = "open"
    submission_key: str | None = None
    owner_user: str | None = None
    run_id: str | None = None
    worker_id: str | None = None
    value: Any = None
    error: Any = None
    timeout_at_ms: int | None = None
    created_at_ms: int = 0
    completed_at_ms: int | None = None
    completed_by: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    waiters: list[tuple[str, str | None]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


@dataclass
class CheckpointMeta:
    """The columns a checkpoint commit sets besides the body: the document's ``status``,
    ``park_id``, worker ``name`` / ``mode``, the park ``reason``, the ``run_id`` it
    belongs to (issue 11) and ``wake`` — one line per wake condition (``workers ls``)."""

    status: str
    park_id: str | None = None
    name: str | None = None
    mode: str | None = None
    reason: str | None = None
    run_id: str | None = None
    wake: list[str] = field(default_factory=list)


@dataclass
class TranscriptAppend:
    """Transcript entries committed with a checkpoint: ``rows`` are ``(stream, seq, body)``
    (``stream`` ``"m"`` messages / ``"e"`` events, ``seq`` from 0, ``body`` the encoded
    entry) of transcript ``generation``; rows of other generations of the worker are
    dropped (``drop_others``) when the transcript was replaced."""

    generation: str
    rows: list[tuple[str, int, bytes]] = field(default_factory=list)
    drop_others: bool = False
