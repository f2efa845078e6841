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
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Generator
from typing import Any

from harnpy.lifecycle._common import LOOP_MODULE, arg, now_rfc3339, strip_harness
from harnpy.lifecycle.services import services
from harnpy.lifecycle.triggers.conditions import sus_error
from harnpy.lifecycle.workers import (
    WorkerRecord,
    emit,
    finished,
    lifecycle_error,
    resolve,
    state_dir,
    stop_thread,
)
from harnpy.runtime.display import display
from harnpy.runtime.errors import HarnError, runtime_error
from harnpy.runtime.scheduler import Block, block_control
from harnpy.runtime.snapshot import MAX_SNAPSHOT_BYTES, SnapshotError
from harnpy.runtime.values import CallRequest, Closure
from harnpy.stdlib.registry import builtin

Gen = Generator[Any, Any, Any]

WORKER_SNAPSHOT_TYPE = "worker_snapshot"
DAEMON_SNAPSHOT_TYPE = "daemon_snapshot"
#: Format version of worker snapshot files (the embedded thread has its own version).
WORKER_FORMAT_VERSION = 1
RESUME_CONTINUITY = "resume_continuity"
INITIATORS = ("self", "parent", "operator", "triggered")
#: Event queue capacity reported in daemon snapshots (lifecycle.md 3.7).
EVENT_QUEUE_CAPACITY = 1024
_MODES = ("workflow", "stage", "sub_agent", "delegated_stage", "top_level_agent")


class SnapshotLoadError(Exception):
    """A worker snapshot could not be loaded; ``str(e)`` is the cause (HARN-SUS-004)."""


# ====================================================================== paths


def snapshot_dir(runtime: Any) -> str:
    """The directory worker snapshots are written to (created when missing).

    ``HARN_WORKER_STATE_DIR`` when set: it is used as given, or refused. Otherwise
    ``.harn/workers`` when it can be created and written, else
    ``<tmp>/harnpy-<uid>/workers/<hash of the working directory>`` (a read-only checkout
    still parks; the summary's ``snapshot_path`` says where).

    Raises:
        OSError: ``HARN_WORKER_STATE_DIR`` names a directory that cannot be used (not a
            directory, not writable, cannot be created); ``strerror`` names it.
    """
    explicit = bool(os.environ.get("HARN_WORKER_STATE_DIR"))
    preferred = state_dir()
    cache: dict[str, str] = _cache(runtime, "worker_dirs")
    hit = cache.get(preferred)
    if hit is not None:
        return hit
    chosen = preferred
    try:
        if os.path.exists(preferred) and not os.path.isdir(preferred):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory")
        if not _writable(preferred):
            raise PermissionError(errno.EACCES, "not writable")
        os.makedirs(preferred, exist_ok=True)
    except OSError as e:
        if explicit:  # the user chose it: never put durable state elsewhere behind their back
            raise OSError(
                e.errno,
                f"HARN_WORKER_STATE_DIR `{preferred}` cannot be used: {e.strerror or e}",
            ) from None
        tag = hashlib.sha256(os.path.abspath(preferred).encode()).hexdigest()[:12]
        chosen = os.path.join(tempfile.gettempdir(), f"harnpy-{os.getuid()}", "workers", tag)
        os.makedirs(chosen, mode=0o700, exist_ok=True)
    cache[preferred] = chosen
    return chosen


def _writable(path: str) -> bool:
    """Whether ``path`` (or, when missing, its nearest existing ancestor) may be written:
    ``os.access`` and, so that a superuser does not write into a read-only checkout, at
    least one write permission bit."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            return False
        p = parent
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return bool(mode & 0o222) and os.access(p, os.W_OK)


def _cache(runtime: Any, name: str) -> Any:
    svc = services(runtime)
    value = getattr(svc, "_suspend_" + name, None)
    if value is None:
        value = {}
        setattr(svc, "_suspend_" + name, value)
    return value


def _target_path(runtime: Any, rec: WorkerRecord) -> str:
    """Where ``rec``'s snapshot goes (and set ``rec.snapshot_path`` to it).

    Raises:
        OSError: the state directory cannot be used (:func:`snapshot_dir`).
    """
    if getattr(rec, "snapshot_fixed", False):
        return rec.snapshot_path
    d = snapshot_dir(runtime)
    if os.path.dirname(rec.snapshot_path) != d:
        rec.snapshot_path = os.path.join(d, f"{rec.id}.json")
    rec.snapshot_fixed = True  # type: ignore[attr-defined]
    return rec.snapshot_path


# ====================================================================== documents


def _jsonable(v: Any) -> Any:
    from harnpy.lifecycle.triggers._util import jsonable

    return jsonable(v)


def mock_state(runtime: Any) -> dict[str, Any] | None:
    """The mock provider's queued replies and ``--llm-mock`` fixture (not its call log),
    so a cold resume in another process answers with the replies still queued; None when
    there are none."""
    host = getattr(services(runtime), "_llm", None)
    if host is None:
        return None
    mock = host.mock
    entries = list(getattr(mock, "_queue", []))
    fixture = getattr(mock, "_fixture", None)
    if not entries and fixture is None:
        return None
    # the plain form of each queued entry is kept between parks (entries are never changed
    # in place), so a park does not re-serialize a long queue every time
    old: dict[int, tuple[Any, Any]] = _cache(runtime, "mock_dicts")
    new: dict[int, tuple[Any, Any]] = {}

    def plain(e: Any) -> Any:
        hit = old.get(id(e))
        if hit is None or hit[0] is not e:
            hit = (e, e.to_dict())
        new[id(e)] = hit
        return hit[1]

    queue = [plain(e) for e in entries]
    out = {
        "queue": queue,
        "fixture": None if fixture is None else [plain(e) for e in list(fixture)],
    }
    old.clear()
    old.update(new)
    return out


def _record_fields(runtime: Any, rec: WorkerRecord) -> dict[str, Any]:
    from harnpy import __version__

    spec = rec.config.get("spec") if type(rec.config) is dict else None
    options = (spec or {}).get("options") if type(spec) is dict else None
    return {
        "_type": WORKER_SNAPSHOT_TYPE,
        "harnpy_snapshot_version": WORKER_FORMAT_VERSION,
        "harnpy_version": __version__,
        "id": rec.id,
        "name": rec.name,
        "task": rec.task,
        "status": rec.status,
        "created_at": rec.created_at,
        "started_at": rec.started_at,
        "finished_at": rec.finished_at,
        "awaiting_started_at": rec.awaiting_started_at,
        "mode": rec.mode,
        "history": list(rec.history),
        "request": {
            "task": rec.task,
            "system": (spec or {}).get("system") if type(spec) is dict else None,
            "payload": None,
            "research_questions": [],
            "action_items": [],
            "workflow_stages": [],
            "verification_steps": [],
        },
        "latest_payload": _jsonable(rec.result),
        "latest_error": rec.error,
        "error": rec.error,
        "artifacts": [],
        "parent_worker_id": rec.parent_worker_id,
        "parent_stage_id": None,
        "child_run_id": None,
        "child_run_path": None,
        "carry_policy": {
            **{k: _jsonable(v) for k, v in rec.carry.items()},
            "policy": _jsonable((options or {}).get("policy") if type(options) is dict else None),
        },
        "execution": _jsonable(rec.execution),
        "snapshot_path": rec.snapshot_path,
        "audit": _jsonable(rec.audit),
        "suspension": _jsonable(rec.suspension),
        "session_id": rec.session_id,
        "parent_session_id": rec.parent_session_id,
        "park_id": getattr(rec, "park_id", None),
        "resume_wait": _jsonable(getattr(rec, "resume_wait", None)),
        "reminders_enabled": getattr(rec, "reminders_enabled", True),
        "owner": _owner(),
    }


def _owner() -> dict[str, Any]:
    """The process writing a snapshot (``{pid, host}``): a ``running`` snapshot whose owner
    is alive is being resumed right now (``HARN-SUS-006``), otherwise it was interrupted."""
    return {"pid": os.getpid(), "host": os.uname().nodename}


def owner_alive(doc: dict[str, Any]) -> bool:
    """Whether the process recorded as ``owner`` of a snapshot still runs (same host)."""
    owner = doc.get("owner")
    if not isinstance(owner, dict) or owner.get("host") != os.uname().nodename:
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def busy_elsewhere(doc: dict[str, Any], worker_id: str) -> HarnError | None:
    """``HARN-SUS-006`` when a snapshot says ``running`` and its owner process is alive
    (another resume is in progress), else None."""
    if doc.get("status") == "running" and owner_alive(doc):
        owner = doc.get("owner") or {}
        return sus_error(
            6,
            f"resume_agent: worker {worker_id} changed before resume could complete "
            f"(status=running, owner pid {owner.get('pid')})",
        )
    return None


def bottom_frame(thread: Any) -> Any:
    """The bottom frame of ``thread``'s stack."""
    fr = thread.frame
    while fr is not None and fr.parent is not None:
        fr = fr.parent
    return fr


#: The functions of std/agent/_loop whose frame is the bottom of a running loop (the loop
#: is a chain of tail calls between them, reusing one frame).
LOOP_FRAMES = ("__agent_loop_run", "__agent_step")


def _is_loop_frame(fr: Any) -> bool:
    if fr.native:
        return False
    code = fr.code
    return code.name in LOOP_FRAMES and code.module.path == LOOP_MODULE


def loop_frame(thread: Any) -> Any:
    """The innermost frame of ``thread`` that is the bottom of an agent loop (running
    ``__agent_loop_run`` / ``__agent_step`` of std/agent/_loop).

    Raises:
        HarnRuntimeError: no agent loop is on the stack.
    """
    fr = thread.frame
    while fr is not None:
        if _is_loop_frame(fr):
            return fr
        fr = fr.parent
    raise runtime_error("internal: no agent loop frame on the stack")


def build_document(
    runtime: Any,
    rec: WorkerRecord,
    *,
    thread: Any = None,
    bottom: Any = None,
    pending_slot: int = -1,
    st: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The worker snapshot document of ``rec`` (lifecycle.md 3.6, 3.7).

    With ``thread``: the frames from its top down to ``bottom`` are embedded as
    ``harnpy_thread`` (an evaluator snapshot plus ``pending_slot``), and ``config`` and
    ``transcript`` are written in the evaluator's tagged encoding (lossless, shared with the
    frames). Without: a metadata document (``harnpy_thread: null``; ``config`` and
    ``transcript`` as plain JSON, closures shown by name).

    Raises:
        SnapshotError: a value held by the loop cannot be snapshotted (the message names
            the variable path).
    """
    from harnpy.runtime.snapshot import snapshot_chain

    doc = _record_fields(runtime, rec)
    if thread is not None:
        externals: dict[str, Any] = {}
        if type(rec.config) is dict:
            externals["config"] = rec.config
        if type(rec.transcript) is dict:
            externals["transcript"] = rec.transcript
        from harnpy.lifecycle.turns import thread_cache

        tdoc = snapshot_chain(thread, bottom, externals=externals, cache=thread_cache(thread))
        ext = tdoc.pop("externals", {})
        doc["config"] = ext["config"] if "config" in ext else _jsonable(rec.config)
        doc["transcript"] = ext["transcript"] if "transcript" in ext else _jsonable(rec.transcript)
        doc["harnpy_encoding"] = "tagged"
        tdoc["pending_slot"] = pending_slot
        tdoc["external_names"] = sorted(ext)
        doc["harnpy_thread"] = tdoc
    else:
        doc["config"] = _jsonable(rec.config)
        doc["transcript"] = _jsonable(rec.transcript)
        doc["harnpy_encoding"] = "json"
        doc["harnpy_thread"] = None
    doc["llm_mock"] = mock_state(runtime)
    doc["saved_at"] = now_rfc3339(runtime)
    if st is not None and st.get("daemon"):
        doc.update(daemon_fields(runtime, st))
    return doc


def daemon_fields(runtime: Any, st: dict[str, Any]) -> dict[str, Any]:
    """The daemon extension of a snapshot (lifecycle.md 3.7, seed "Daemon idle")."""
    t = st.get("transcript") or {}
    msgs = t.get("messages") or []
    events = t.get("events") or []
    used: list[str] = []
    rejected: list[str] = []
    for r in st.get("records") or []:
        name = r.get("name")
        if name not in used:
            used.append(name)
        if r.get("status") in ("error", "rejected", "denied") and name not in rejected:
            rejected.append(name)
    return {
        "daemon_state": st.get("daemon_state") or "idle",
        "visible_messages": len(msgs),
        "recorded_messages": len(msgs),
        "transcript_summary": t.get("summary") or "",
        "transcript_events": len(events),
        "total_text": "\n".join(p for p in st.get("text_parts") or [] if p),
        "last_iteration_text": st.get("last_text") or "",
        "all_tools_used": used,
        "rejected_tools": rejected,
        "deferred_user_messages": [],
        "total_iterations": st.get("iteration") or 0,
        "idle_backoff_ms": st.get("wake_interval_ms") or 0,
        "last_run_exit_code": None,
        "watch_state": {},
        "pending_event_count": 0,
        "queued_event_count": 0,
        "inflight_event": None,
        "wake_interval_ms": st.get("wake_interval_ms"),
        "watch_paths": list(st.get("watch_paths") or []),
        "event_queue_capacity": EVENT_QUEUE_CAPACITY,
    }


def _dumps(doc: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON bytes of a document (orjson when installed)."""
    from harnpy.runtime.snapshot import dumps_bytes

    return dumps_bytes(doc)


def _loads(data: bytes) -> Any:
    from harnpy.runtime.snapshot import loads

    return loads(data)


def largest_parts(doc: dict[str, Any], runtime: Any = None, limit: int = 3) -> list[str]:
    """``"<description> (<n> bytes)"`` for the biggest specific parts of a worker snapshot,
    heap objects (``$ref``) attributed to the variable, capture or field that holds them
    (:mod:`harnpy.lifecycle.snapshot_sizes`). Used to say what makes a snapshot too big."""
    from harnpy.lifecycle.snapshot_sizes import largest_parts as parts

    try:
        return parts(doc, runtime, limit)
    except RecursionError:  # a pathologically deep value: fall back to the record's fields
        sizes = sorted(
            ((len(_dumps({"v": v})) - 6, k) for k, v in doc.items() if v is not None),
            reverse=True,
        )
        return [f"the snapshot field `{k}` ({n} bytes)" for n, k in sizes[:limit]]


def write_document(
    path: str, doc: dict[str, Any], *, durable: bool = True, runtime: Any = None
) -> None:
    """Write a worker snapshot atomically (temp file, fsync when ``durable``, rename, mode
    0600) after checking the 4 MiB cap.

    Raises:
        SnapshotError: ``E403`` naming the biggest parts when the document is too big.
        OSError: the file cannot be written.
    """
    from harnpy.runtime.snapshot import write_atomic

    text = _dumps(doc)
    size = len(text)
    if size > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(
            f"worker snapshot of {doc.get('id')} is {size} bytes, over the "
            f"{MAX_SNAPSHOT_BYTES}-byte (4 MiB) limit; largest parts: "
            + ", ".join(largest_parts(doc, runtime)),
            "E403",
        )
    write_atomic(path, text, max_bytes=None, fsync=durable)


def persist(
    runtime: Any,
    rec: WorkerRecord,
    *,
    thread: Any = None,
    bottom: Any = None,
    pending_slot: int = -1,
    st: dict[str, Any] | None = None,
    durable: bool = True,
    required: bool = False,
    reduce: bool = False,
) -> bool:
    """Write ``rec``'s snapshot (:func:`build_document`); returns whether a file was written.

    A value that cannot be snapshotted, or a document over 4 MiB, always raises — except
    that with ``reduce`` (metadata writes of a settled worker: completion, failure, close)
    an over-cap document is written reduced instead (:func:`reduced_document`: no
    transcript, trimmed result) with a warning on stderr, so the file never keeps saying
    ``running``. An I/O failure raises only when ``required`` (a root loop's park: the file
    is the only copy); otherwise it is reported once on stderr and the in-memory state
    stays authoritative.

    Raises:
        HarnRuntimeError: ``E402`` / ``E403`` from the snapshot layer, or the I/O error.
    """
    path = rec.snapshot_path
    try:
        path = _target_path(runtime, rec)
        doc = build_document(
            runtime, rec, thread=thread, bottom=bottom, pending_slot=pending_slot, st=st
        )
        try:
            write_document(path, doc, durable=durable, runtime=runtime)
        except SnapshotError as e:
            if not reduce or e.code != "E403":
                raise
            doc, dropped = reduced_document(doc)
            write_document(path, doc, durable=durable, runtime=runtime)
            runtime.write_err(
                f"harnpy: warning: the final snapshot of worker {rec.id} ({rec.status}) was "
                f"over the 4 MiB limit; saved without {dropped} ({path})\n"
            )
    except SnapshotError as e:
        raise runtime_error(f"cannot snapshot worker {rec.id}: {e.message}") from None
    except OSError as e:
        if required:
            raise runtime_error(f"cannot write worker snapshot {path}: {e.strerror or e}") from None
        warned = _cache(runtime, "io_warned")
        if path not in warned:
            warned[path] = True
            runtime.write_err(
                f"harnpy: warning: cannot write worker snapshot {path}: {e.strerror or e}\n"
            )
        return False
    _remember_file(rec, path)
    if st is not None and st.get("daemon") and type(st.get("persist_path")) is str:
        daemon_doc = dict(doc)
        daemon_doc["_type"] = DAEMON_SNAPSHOT_TYPE
        daemon_path = os.path.join(st["persist_path"], "daemon.json")
        try:
            write_document(daemon_path, daemon_doc, durable=durable, runtime=runtime)
        except OSError as e:
            raise runtime_error(f"cannot write daemon snapshot {daemon_path}: {e}") from None
        rec.daemon_snapshot_path = daemon_path  # type: ignore[attr-defined]
    return True


def reduced_document(doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A metadata document (no evaluator state) cut down to fit the 4 MiB cap, and what was
    left out: the transcript first (``transcript_dropped: true``), then the result's text
    (``latest_payload`` keeps ``status`` and the first 2,000 characters of ``summary``),
    then the task history and the request options. Status, error and the other record
    fields are kept."""
    out = dict(doc)
    steps: list[str] = []

    def fits() -> bool:
        return len(_dumps(out)) <= MAX_SNAPSHOT_BYTES

    if out.get("transcript") is not None:
        out["transcript"] = None
        out["transcript_dropped"] = True
        steps.append("its transcript")
    if not fits() and out.get("latest_payload") is not None:
        lp = out["latest_payload"]
        summary = lp.get("summary") if isinstance(lp, dict) else None
        out["latest_payload"] = {
            "status": lp.get("status") if isinstance(lp, dict) else None,
            "summary": summary[:2000] if isinstance(summary, str) else None,
            "truncated": True,
        }
        steps.append("the full result")
    if not fits():
        hist = out.get("history") or []
        out["history"] = [h[:2000] if isinstance(h, str) else h for h in hist[-1:]]
        if isinstance(out.get("task"), str):
            out["task"] = out["task"][:2000]
        cfg = out.get("config")
        if isinstance(cfg, dict) and isinstance(cfg.get("spec"), dict):
            out["config"] = {**cfg, "spec": {**cfg["spec"], "options": {}, "task": out["task"]}}
        out["request"] = None
        steps.append("its task history and options")
    return out, " and ".join(steps) or "nothing"


def persist_metadata(runtime: Any, rec: WorkerRecord) -> None:
    """Advisory write of ``rec``'s metadata (spawn, completion, cancel): no evaluator state,
    no fsync, skipped unless ``carry.persist_state`` (default true) or a snapshot file
    already exists (a closed suspended worker must be marked so in its file)."""
    if not rec.carry.get("persist_state", True) and not os.path.exists(rec.snapshot_path):
        return
    try:
        persist(runtime, rec, durable=False, reduce=rec.status != "running")
    except HarnError as e:
        if rec.status != "running":  # a settled worker whose final state was not saved
            runtime.write_err(f"harnpy: warning: {e.message}\n")


# ====================================================================== loading


def read_document(path: str) -> tuple[dict[str, Any], bytes]:
    """Read and validate a worker snapshot (size cap, JSON, format version, config mode, the
    envelope shape :class:`~harnpy.lifecycle.documents.WorkerSnapshotDoc` — every field a
    resume reads — and the embedded evaluator snapshot's envelope). Never modifies the file.

    Raises:
        SnapshotLoadError: the cause, worded for ``HARN-SUS-004``.
    """
    from harnpy.lifecycle.documents import WorkerSnapshotDoc
    from harnpy.runtime.snapshot import validate_document
    from harnpy.shapes import ShapeError, structure

    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise SnapshotLoadError(e.strerror or str(e)) from None
    if size > MAX_SNAPSHOT_BYTES:
        raise SnapshotLoadError(
            f"snapshot is {size} bytes, over the {MAX_SNAPSHOT_BYTES}-byte limit"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise SnapshotLoadError(e.strerror or str(e)) from None
    if not raw.strip():
        raise SnapshotLoadError("the file is empty")
    try:
        doc = _loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotLoadError(f"invalid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise SnapshotLoadError("not a JSON object")
    typ = doc.get("_type")
    if typ == "agent_handle":
        # a worker handle (summary) saved as JSON: say what it lacks, and where its snapshot is
        try:
            structure({**doc, "_type": WORKER_SNAPSHOT_TYPE}, WorkerSnapshotDoc)
            lacks = ""
        except ShapeError as e:
            lacks = f": {e}"
        own = doc.get("snapshot_path")
        where = f"; its snapshot is `{own}`" if type(own) is str and own else ""
        raise SnapshotLoadError(
            f"a worker handle (_type='agent_handle'), not a worker snapshot{lacks}{where}"
        )
    if typ not in (WORKER_SNAPSHOT_TYPE, DAEMON_SNAPSHOT_TYPE):
        raise SnapshotLoadError(f"not a worker snapshot (_type={typ!r})")
    version = doc.get("harnpy_snapshot_version", WORKER_FORMAT_VERSION)
    if version != WORKER_FORMAT_VERSION:
        raise SnapshotLoadError(
            f"snapshot format version {version}; this harnpy reads version {WORKER_FORMAT_VERSION}"
        )
    cfg = doc.get("config")
    if not isinstance(cfg, dict) or cfg.get("mode") not in _MODES:
        raise SnapshotLoadError("worker snapshot is missing a valid config mode")
    try:
        structure(doc, WorkerSnapshotDoc)
    except ShapeError as e:
        raise SnapshotLoadError(f"malformed worker snapshot: {e}") from None
    tdoc = doc.get("harnpy_thread")
    if tdoc is not None:
        try:
            validate_document(tdoc, "embedded evaluator snapshot")
        except SnapshotError as e:
            raise SnapshotLoadError(e.message) from None
    return doc, raw


def canonical_snapshot(path: str, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A daemon's ``<persist_path>/daemon.json`` is a copy: resume through the worker's own
    snapshot file (``snapshot_path``) when it exists, so both names claim the same file.

    Raises:
        SnapshotLoadError: the worker's own file is unreadable.
    """
    if doc.get("_type") != DAEMON_SNAPSHOT_TYPE:
        return path, doc
    own = doc.get("snapshot_path")
    if type(own) is not str or not os.path.exists(own) or os.path.samefile(own, path):
        return path, doc
    own_doc, _ = read_document(own)
    return own, own_doc


def record_from_document(runtime: Any, doc: dict[str, Any], path: str) -> WorkerRecord:
    """A :class:`WorkerRecord` rebuilt from a snapshot (3.6 load rules: a missing or
    ``running`` status becomes ``interrupted``; ``config``/``transcript`` stay in their
    stored encoding until the thread is restored)."""
    raw_carry = doc.get("carry_policy")
    carry: dict[str, Any] = raw_carry if isinstance(raw_carry, dict) else {}
    rec = WorkerRecord(
        runtime,
        name=doc.get("name") or "worker",
        task=doc.get("task") or "",
        mode=doc.get("mode") or "workflow",
        session_id=doc.get("session_id") or "",
        parent_worker_id=doc.get("parent_worker_id"),
        config=doc.get("config") or {},
        carry={
            "artifact_mode": carry.get("artifact_mode", "inherit"),
            "transcript_mode": carry.get("transcript_mode", "inherit"),
            "context_policy": carry.get("context_policy"),
            "resume_workflow": carry.get("resume_workflow", True),
            "persist_state": carry.get("persist_state", True),
            "retriggerable": carry.get("retriggerable", False),
        },
        execution=doc.get("execution") or {"cwd": None, "env": None, "worktree": None},
        audit=doc.get("audit") or {},
    )
    rec.id = doc["id"]
    status = doc.get("status")
    rec.status = "interrupted" if status in (None, "running") else status
    for key in ("created_at", "started_at", "finished_at", "awaiting_started_at"):
        if doc.get(key) is not None or key in ("finished_at", "awaiting_started_at"):
            setattr(rec, key, doc.get(key))
    rec.history = list(doc.get("history") or [])
    rec.result = doc.get("latest_payload")
    rec.error = doc.get("latest_error", doc.get("error"))
    rec.transcript = doc.get("transcript")
    rec.suspension = doc.get("suspension") if rec.status == "suspended" else None
    rec.parent_session_id = doc.get("parent_session_id")
    rec.snapshot_path = path
    rec.snapshot_fixed = True  # type: ignore[attr-defined]
    rec.park_id = doc.get("park_id")  # type: ignore[attr-defined]
    rec.resume_wait = doc.get("resume_wait")  # type: ignore[attr-defined]
    rec.reminders_enabled = doc.get("reminders_enabled", True)  # type: ignore[attr-defined]
    return rec


# ====================================================================== other processes


def _remember_file(rec: WorkerRecord, path: str) -> None:
    """Remember the size and mtime of the snapshot this process just wrote, so that
    :func:`refresh_from_disk` does not read its own writes back (a park / resume cycle
    stays free of a full read of the growing file)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    rec.file_sig = (st.st_mtime_ns, st.st_size)  # type: ignore[attr-defined]


def refresh_from_disk(runtime: Any, rec: WorkerRecord) -> None:
    """Bring a ``suspended`` record up to date when another process took its park over
    (``harnpy run --resume``, ``harnpy workers resume``, ``load_agent`` elsewhere): its
    snapshot file then shows another status or another park. The record takes the file's
    outcome — ``completed`` / ``failed`` / ``cancelled`` / ``interrupted``, or ``awaiting``
    (a retriggerable worker that ended a cycle there), with the result and error, or
    ``suspended`` at the new park (this process can then resume it cold from the file) —
    its parked thread (if any) is dropped and its in-process wait cancelled. A
    file that says ``running`` (a resume in progress elsewhere) changes nothing: a resume
    here gets ``HARN-SUS-006``. Cheap when nothing changed (the file's size and mtime are
    remembered)."""
    path = rec.snapshot_path
    if rec.status != "suspended" or not path:
        return
    try:
        st = os.stat(path)
    except OSError:
        return
    sig = (st.st_mtime_ns, st.st_size)
    if getattr(rec, "file_sig", None) == sig:
        return
    try:
        with open(path, "rb") as fh:
            doc = _loads(fh.read())
    except (OSError, ValueError):
        return
    rec.file_sig = sig  # type: ignore[attr-defined]
    if not isinstance(doc, dict) or doc.get("id") != rec.id:
        return
    status = doc.get("status")
    park = doc.get("park_id")
    if status == "running" or (status == "suspended" and park == getattr(rec, "park_id", None)):
        return
    if status not in (
        "suspended",
        "awaiting",
        "completed",
        "failed",
        "cancelled",
        "interrupted",
        "stopped",
    ):
        return
    owner = doc.get("owner")
    if (
        status == "suspended"
        and isinstance(owner, dict)
        and owner.get("pid") != os.getpid()
        and owner_alive(doc)
    ):
        return  # adopted by a live process (load_agent): that process holds the park now
    stop_thread(runtime, rec)
    cancel_wait(runtime, rec, "resumed elsewhere")
    rec.result = doc.get("latest_payload", rec.result)
    if status == "suspended":
        rec.park_id = park  # type: ignore[attr-defined]
        sus = doc.get("suspension")
        rec.suspension = sus if isinstance(sus, dict) else None
        rec.resume_wait = doc.get("resume_wait")  # type: ignore[attr-defined]
    else:
        rec.status = status
        rec.suspension = None
        rec.error = doc.get("latest_error", doc.get("error"))
        rec.finished_at = doc.get("finished_at")
        rec.awaiting_started_at = doc.get("awaiting_started_at")
        if doc.get("harnpy_encoding") == "json" and doc.get("transcript") is not None:
            rec.transcript = doc["transcript"]
    rec.settle()


# ====================================================================== claims


def _dir_lock(path: str) -> contextlib.AbstractContextManager[None]:
    """An exclusive ``flock`` of the directory holding ``path`` (claims are short)."""
    from harnpy.lifecycle.triggers._util import dir_lock

    return dir_lock(path)


def claim(path: str, worker_id: str, park_id: str | None = None) -> bytes | None:
    """Claim a parked worker's snapshot for one resume (lifecycle.md 10 "exactly-once"):
    under an exclusive lock of its directory, re-read the file, require ``status:
    "suspended"`` (and ``park_id`` when given) and rewrite it with ``status: "running"``.

    Returns the previous bytes (see :func:`rollback`), or None when there is no file.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` when another resume got there first (the file is
            not modified); ``HARN-SUS-004`` when it is unreadable.
    """
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: {e}") from None
        try:
            doc = _loads(raw)
        except ValueError as e:
            raise sus_error(
                4, f"resume_agent: failed to load snapshot `{path}`: invalid JSON: {e}"
            ) from None
        status = doc.get("status") if isinstance(doc, dict) else None
        if status != "suspended" or (park_id is not None and doc.get("park_id") != park_id):
            shown = status if status != "suspended" else "suspended again elsewhere"
            raise sus_error(
                6,
                f"resume_agent: worker {worker_id} changed before resume could complete "
                f"(status={shown})",
            )
        doc["status"] = "running"
        doc["suspension"] = None
        doc["owner"] = _owner()
        write_atomic(path, _dumps(doc), max_bytes=None, fsync=True)
        return raw


def rollback(path: str, raw: bytes | None) -> None:
    """Put back the bytes a :func:`claim` replaced (a resume that failed before it took
    effect leaves the snapshot as it was)."""
    if raw is None:
        return
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        write_atomic(path, raw, max_bytes=None, fsync=True)


# ====================================================================== cold restore


def ensure_modules(
    runtime: Any, tdoc: dict[str, Any], snapshot_path: str, *, fresh: bool
) -> set[str]:
    """Compile (without running) every module the embedded snapshot needs that ``runtime``
    has not loaded; returns their keys (their globals come from the snapshot). A ``fresh``
    runtime (``harnpy run --resume``) takes the snapshot's main module as its own.

    Raises:
        SnapshotError: a source cannot be found or changed since the snapshot.
    """
    from harnpy.runtime.modules import resolve_import
    from harnpy.runtime.resume import checked_source

    before = set(runtime.modules)
    saved_restoring = runtime.restoring
    runtime.restoring = True
    try:
        records = sorted(tdoc["modules"], key=lambda r: r.get("role") != "main")
        for rec in records:
            key = rec["key"]
            if key in runtime.modules:
                continue
            if key.startswith("std/"):
                k, p = resolve_import(key, None)  # type: ignore[arg-type]
                runtime.import_module(k, p)
                continue
            path, source = checked_source(rec, snapshot_path)
            saved_main = runtime.main_module
            mod = runtime.load_main(path, source)
            if not fresh or rec.get("role") != "main":
                runtime.main_module = saved_main
            if mod.path != key:
                runtime.modules[key] = mod
    finally:
        runtime.restoring = saved_restoring
    return set(runtime.modules) - before


def precheck_sources(runtime: Any, doc: dict[str, Any], snapshot_path: str) -> None:
    """Before claiming a snapshot: every non-``std`` module it needs can be found and has
    the recorded source hash (so a resume refused for a changed source writes nothing).

    Raises:
        SnapshotError: ``E406`` naming the module.
    """
    from harnpy.runtime.resume import changed_source_error, checked_source

    tdoc = doc.get("harnpy_thread")
    if not isinstance(tdoc, dict):
        return
    for rec in tdoc.get("modules") or []:
        key = rec.get("key", "")
        if key.startswith("std/"):
            continue
        live = runtime.modules.get(key)
        if live is None:
            checked_source(rec, snapshot_path)
        elif live.hash != rec.get("hash"):
            raise changed_source_error(rec.get("path", key))


def restore_thread(
    runtime: Any, rec: WorkerRecord, doc: dict[str, Any], path: str, *, fresh: bool
) -> Any:
    """Rebuild ``rec``'s parked thread from snapshot ``doc`` (modules compiled as needed,
    ``config`` / ``transcript`` decoded into ``rec`` sharing the frames' objects). The
    thread is not scheduled yet.

    Raises:
        SnapshotError: incompatible snapshot (changed source, missing module...) or damaged
            data (frames, a transcript that is not a :class:`~harnpy.lifecycle.documents.
            TranscriptRecord`).
    """
    from harnpy.runtime.snapshot import restore

    tdoc = dict(doc["harnpy_thread"])
    names = tdoc.get("external_names") or []
    tdoc["externals"] = {n: doc.get(n) for n in names}
    new = ensure_modules(runtime, tdoc, path, fresh=fresh)
    if fresh:
        runtime.argv = list(tdoc["thread"].get("argv", []))
    decoders: list[Any] = []
    th = restore(tdoc, runtime, globals_for=None if fresh else new, decoder_out=decoders)
    if new:
        runtime.relink_imports()
    dec = decoders[0]
    if "config" in names:
        rec.config = dec.external("config")
    if "transcript" in names:
        rec.transcript = dec.external("transcript")
        from harnpy.lifecycle.documents import TranscriptRecord
        from harnpy.shapes import ShapeError, structure

        try:
            structure(rec.transcript, TranscriptRecord)
        except ShapeError as e:
            raise SnapshotError(f"the worker's transcript is malformed: {e}", "E404") from None
    if th.frame is None:
        raise SnapshotError("the embedded snapshot has no frames", "E404")
    slot = tdoc.get("pending_slot", -1)
    if not isinstance(slot, int) or not -1 <= slot < len(th.frame.slots):
        raise SnapshotError("the embedded snapshot's pending slot is out of range", "E404")
    th.pending_slot = slot
    return th


def attach_thread(runtime: Any, rec: WorkerRecord, th: Any) -> None:
    """Make ``th`` the worker thread of ``rec`` (named after it; its end settles ``rec``)."""
    th.worker_id = rec.id
    th.name = rec.id
    rec.thread = th

    def on_done(result: Any, error: HarnError | None) -> None:
        finished(runtime, rec, th, result, error)

    th.on_done = on_done


def import_mock_state(runtime: Any, doc: dict[str, Any]) -> None:
    """Queue the mock replies a snapshot carried (a fresh process only). A ``--llm-mock``
    fixture given on the command line replaces them: the snapshot's queue and fixture are
    then ignored."""
    state = doc.get("llm_mock")
    if not isinstance(state, dict):
        return
    opts = getattr(runtime, "llm_cli_options", None) or {}
    if opts.get("mock_file"):
        return
    mock = services(runtime).llm.mock
    for entry in state.get("queue") or []:
        mock.push(entry)
    if state.get("fixture") is not None:
        from harnpy.llm.mock import parse_mock_entry

        mock.load_fixture([parse_mock_entry(e, "snapshot") for e in state["fixture"]])


# ====================================================================== suspensions


def parse_initiator(value: Any, default: str, where: str, *, allow_timeout: bool = True) -> str:
    """``self`` / ``parent`` / ``operator`` / ``triggered`` (``self_initiated`` = self), and
    ``timeout`` for resumes (``allow_timeout``; a suspension has no timeout initiator).

    Raises:
        HarnRuntimeError: ``<where>: unknown initiator `<x>```.
    """
    if value is None:
        return default
    text = value.strip().lower() if type(value) is str else display(value)
    if text == "self_initiated":
        return "self"
    if text not in INITIATORS and not (allow_timeout and text == "timeout"):
        raise lifecycle_error(
            f"{where}: unknown initiator `{text}`; expected self, parent, operator or triggered"
        )
    return text


def new_suspension(
    runtime: Any, rec: WorkerRecord, reason: str, initiator: str, conditions: Any, turn: Any
) -> dict[str, Any]:
    """A WorkerSuspension record (3.2; ``self`` shows as ``self_initiated``, 13 Q1)."""
    return {
        "reason": reason,
        "initiator": "self_initiated" if initiator == "self" else initiator,
        "suspended_at": now_rfc3339(runtime),
        "snapshot_ref": rec.snapshot_path,
        "suspended_at_turn": turn,
        "conditions": conditions,
        "auto_resume_trigger": None,
        "prior_span_link": None,
        "pipeline_span_link": None,
    }


def redacted_handle(rec: WorkerRecord) -> dict[str, Any]:
    """``rec``'s summary without transcript, task history, task text, request or result:
    the resumable reference a Suspension carries (seed: the envelope never holds transcript
    text or resume input)."""
    from harnpy.lifecycle.models import PRIVATE_HANDLE_KEYS

    return {k: v for k, v in rec.summary().items() if k not in PRIVATE_HANDLE_KEYS}


def suspension_payload(
    rec: WorkerRecord,
    *,
    reason: str,
    initiator: str,
    conditions: Any,
    iterations: int,
    mechanism: Any = None,
    validate: bool = True,
) -> dict[str, Any]:
    """The Suspension returned to the parent / caller (3.3), validated with
    :class:`harnpy.lifecycle.models.Suspension`. ``conditions`` that are not a dict (raw
    ``suspend_agent`` path, 4.2: nothing was registered, an open park) show as nil.

    Raises:
        HarnRuntimeError: the envelope does not match the shape (never a ShapeError).
    """
    sus = rec.suspension or {}
    if conditions is not None and type(conditions) is not dict:
        conditions = None
    trig = sus.get("auto_resume_trigger")
    payload = {
        "status": "suspended",
        "final_status": "suspended",
        "handle": redacted_handle(rec),
        "reason": reason,
        "initiator": "self" if initiator == "self_initiated" else initiator,
        "conditions": conditions,
        "iterations_completed": iterations,
        "suspended_at": sus.get("suspended_at"),
        "suspended_at_turn": sus.get("suspended_at_turn"),
        "snapshot_path": rec.snapshot_path,
        "resume_by_mechanism": mechanism if type(mechanism) is str else None,
        "auto_resume_trigger": trig.get("id") if type(trig) is dict else None,
    }
    if validate:
        from harnpy.lifecycle import models

        models.validate(models.Suspension, payload, "the Suspension of worker " + rec.id)
    return payload


def _dispatcher(runtime: Any) -> Any:
    from harnpy.lifecycle.triggers import get_dispatcher

    d = get_dispatcher(runtime)
    install(d)
    return d


def register_wait(runtime: Any, rec: WorkerRecord, conditions: Any, durable: bool) -> None:
    """Register the auto-resume wait of ``conditions`` (raw suspend path, 4.2) and record
    ``suspension.auto_resume_trigger = {id, version}`` and the absolute deadlines
    (``rec.resume_wait``). Open parks register nothing.

    Raises:
        HarnRuntimeError: ``HARN-SUS-002`` / ``-007`` / ``-008``.
    """
    rec.resume_wait = None  # type: ignore[attr-defined]
    if type(conditions) is not dict or not conditions:
        return
    d = _dispatcher(runtime)
    handle = d.register_resume_wait(
        rec.id,
        conditions,
        rec.snapshot_path,
        durable=durable and d.store is not None,
        park_id=getattr(rec, "park_id", None),
    )
    if handle is None:
        return
    if rec.suspension is not None:
        rec.suspension["auto_resume_trigger"] = {"id": handle["id"], "version": handle["version"]}
    rec.resume_wait = {  # type: ignore[attr-defined]
        **handle,
        "conditions": _jsonable(conditions),
        "registered_at_ms": runtime.clock.now_ms(),
    }


def cancel_wait(runtime: Any, rec: WorkerRecord, reason: str = "resumed") -> None:
    """Unregister ``rec``'s auto-resume wait (any resume or close, lifecycle.md 4.4; a late
    timer is a no-op). A durable wait this process does not hold — the worker was parked by
    another process and is resumed here (``harnpy run --resume``, ``load_agent``) — is
    cancelled in the wait store it was recorded in, so ``harnpy worker`` never fires it."""
    wait = getattr(rec, "resume_wait", None)
    rec.resume_wait = None  # type: ignore[attr-defined]
    if type(wait) is not dict:
        return
    d = getattr(runtime, "trigger_dispatcher", None)
    wid = wait.get("id")
    held = d is not None and type(wid) is str and wid in d.waits
    if d is not None and held:
        d.cancel_resume_wait(wid, reason=reason)
    origin = wait.get("durable_origin")
    if origin is None and wait.get("durable") and not held:
        origin = {"id": wid, "store": wait.get("store")}
    if type(origin) is dict and type(origin.get("id")) is str:
        if _store_call(runtime, origin, "cancel", reason):
            rec.cancelled_durable_wait = origin  # type: ignore[attr-defined]


def _store_call(runtime: Any, origin: dict[str, Any], op: str, reason: str = "") -> bool:
    """``cancel`` / ``reopen`` durable wait ``origin`` (``{id, store}``) in its store (the
    recorded file, else the configured one); problems are warnings, never errors."""
    from harnpy.lifecycle.triggers.store import StoreError, configured_store_path, open_store

    try:
        path = origin.get("store") or configured_store_path(
            getattr(runtime, "wait_store_path", None)
        )
        if not path or not os.path.exists(path):
            return False
        store = open_store(path)
        try:
            now = runtime.clock.now_ms()
            if op == "cancel":
                return bool(store.cancel(origin["id"], now, reason))
            return bool(store.reopen(origin["id"], now))
        finally:
            store.close()
    except (StoreError, OSError, Exception) as e:  # noqa: BLE001 - sqlite3 errors too
        runtime.write_err(f"harnpy: warning: could not {op} durable wait {origin.get('id')}: {e}\n")
        return False


def _new_park_id() -> str:
    return os.urandom(12).hex()


def _span_link(span: dict[str, Any] | None) -> dict[str, Any] | None:
    if span is None:
        return None
    return {"trace_id": span["trace_id"], "span_id": span["span_id"], "kind": span["kind"]}


def _record_span(
    runtime: Any,
    kind: str,
    metadata: dict[str, Any],
    *,
    parented: bool,
    links: list[dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Record a finished ``suspension`` / ``resume`` trace span while tracing is enabled
    (a resume span has no parent and links back to the suspension and pipeline spans)."""
    if not getattr(runtime, "trace_enabled", False):
        return None
    stack = getattr(runtime, "trace_stack", None) or []
    parent = stack[-1] if (stack and parented) else None
    now = runtime.clock.now_ms()
    span = {
        "name": kind,
        "kind": kind,
        "trace_id": parent["trace_id"] if parent else os.urandom(16).hex(),
        "span_id": os.urandom(8).hex(),
        "parent_id": parent["span_id"] if parent else None,
        "start_ms": now,
        "end_ms": now,
        "duration_ms": 0,
        "metadata": metadata,
        "attributes": metadata,
        "links": list(links or []),
    }
    done = getattr(runtime, "trace_finished", None)
    if done is None:
        done = []
        runtime.trace_finished = done
    done.append(span)
    return span


def _suspension_span(runtime: Any, rec: WorkerRecord, reason: str, initiator: str) -> None:
    stack = getattr(runtime, "trace_stack", None) or []
    span = _record_span(
        runtime,
        "suspension",
        {
            "handle": rec.id,
            "reason": reason,
            "initiator": initiator,
            "pipeline_id": getattr(runtime, "pipeline_id", None) or "main",
        },
        parented=True,
    )
    if span is not None and rec.suspension is not None:
        rec.suspension["prior_span_link"] = _span_link(span)
        rec.suspension["pipeline_span_link"] = (
            {"trace_id": stack[-1]["trace_id"], "span_id": stack[-1]["span_id"]} if stack else None
        )


def _resume_span(
    runtime: Any, rec: WorkerRecord, sus: dict[str, Any], cont: bool, had_input: bool, ini: str
) -> None:
    links = [x for x in (sus.get("prior_span_link"), sus.get("pipeline_span_link")) if x]
    _record_span(
        runtime,
        "resume",
        {
            "handle": rec.id,
            "continue_transcript": cont,
            "had_resume_input": had_input,
            "initiator": ini,
        },
        parented=False,
        links=links,
    )


def _advisory_hooks(runtime: Any, event: str, payload: dict[str, Any]) -> None:
    """Run the hooks of an advisory event (PostSuspend) on detached threads."""
    from harnpy.lifecycle import hooks

    if not hooks.has_hooks(runtime, (event,)):
        return
    from harnpy.stdlib.concurrency import start_thread

    body = {"event": event, **payload}
    for hook in hooks.matching(runtime, event, body):
        fn = hook.handler
        args: list[Any] = [body]
        if type(fn) is Closure and fn.code.nparams >= 2 and not fn.code.rest:
            from harnpy.lifecycle.harness import harness_value

            args = [harness_value(runtime), body]
        th = start_thread(runtime, fn, args, f"hook:{event}")

        def done(result: Any, error: Any, ev: str = event) -> None:
            if error is not None:
                runtime.write_err(f"warning: {ev} hook failed: {error.message}\n")

        th.on_done = done
        if not th.finished:
            hooks.track_detached(runtime, th)
            runtime.scheduler.add(th)


def _pending_top(runtime: Any) -> dict[str, WorkerRecord]:
    return _cache(runtime, "pending_top")  # type: ignore[no-any-return]


def new_top_level_record(runtime: Any, st: dict[str, Any]) -> WorkerRecord:
    """The worker record of a root ``agent_loop`` that parks (T4): ``name:
    "top-level-agent"``, ``mode: "top_level_agent"``."""
    from harnpy.lifecycle.workers import _carry

    prompt = st.get("prompt")
    task = prompt if type(prompt) is str else display(prompt) if prompt is not None else ""
    session_id = str(st.get("session_id") or "")
    spec = {
        "name": "top-level-agent",
        "task": task,
        "system": st.get("system"),
        "options": dict(st.get("llm_options") or {}),
        "returns_schema": None,
        "session_id": session_id,
        "parent_session_id": None,
    }
    return WorkerRecord(
        runtime,
        name="top-level-agent",
        task=task,
        mode="top_level_agent",
        session_id=session_id,
        parent_worker_id=None,
        config={"mode": "top_level_agent", "spec": spec},
        carry=_carry(None, "agent_loop"),
        execution={"cwd": os.getcwd(), "env": None, "worktree": None},
        audit={
            "session_id": session_id,
            "parent_session_id": None,
            "mutation_scope": None,
            "approval_policy": None,
        },
    )


# ---------------------------------------------------------------- parking builtins


def _preview(rec: WorkerRecord, request: dict[str, Any], st: dict[str, Any]) -> dict[str, Any]:
    """The Suspension handed to ``resume_by`` before the park commits."""
    saved = rec.status
    rec.status = "suspended"
    try:
        payload = suspension_payload(
            rec,
            reason=request.get("reason", ""),
            initiator=request.get("initiator") or "self",
            conditions=request.get("conditions"),
            iterations=st.get("iteration", 0),
            validate=False,
        )
    finally:
        rec.status = saved
    payload["suspended_at"] = now_rfc3339(rec.runtime)
    payload["suspended_at_turn"] = st.get("iteration")
    return payload


@builtin("__agent_suspend_begin", callback=True)
def agent_suspend_begin(thread: Any, st: Any = None, request: Any = None) -> Gen:
    """``__agent_suspend_begin(st, request)``: the first half of a park (std/agent/_loop).
    Runs the PreSuspend hooks of a self-park (T3; a request accepted by ``suspend_agent``
    ran them already, a root loop's park skips them, T4) and returns ``{denied, request,
    suspension}``: ``denied`` is the block reason (the park is cancelled, the worker keeps
    running), ``suspension`` the Suspension preview handed to ``resume_by``."""
    from harnpy.lifecycle import hooks
    from harnpy.lifecycle.agents import current_worker_id

    rt = thread.runtime
    svc = services(rt)
    s: dict[str, Any] = st if type(st) is dict else {}
    req = dict(request) if type(request) is dict else {}
    req.setdefault("reason", "")
    req.setdefault("initiator", "self")
    if req.get("resume_by") is None and s.get("resume_by") is not None:
        req["resume_by"] = s["resume_by"]
    wid = current_worker_id(thread)
    rec = svc.workers.get(wid) if wid else None
    if rec is None or rec.thread is not thread:
        top = new_top_level_record(rt, s)
        _pending_top(rt)[top.id] = top
        req["top_level_id"] = top.id
        return {"denied": None, "request": req, "suspension": _preview(top, req, s)}
    if not req.get("accepted") and hooks.has_hooks(rt, ("PreSuspend",)):
        payload = {
            "event": "PreSuspend",
            "worker": {"id": rec.id},
            "reason": req["reason"],
            "initiator": req["initiator"],
            "conditions": req.get("conditions"),
        }
        ctl = yield from hooks.fire(thread, "PreSuspend", payload)
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreSuspend hook denied the suspend"
            svc.audit("pre_suspend_denied", {"worker": {"id": rec.id}, "reason": why})
            return {"denied": why, "request": req, "suspension": None}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and type(mod.get("reason")) is str:
            req["reason"] = mod["reason"]
    return {"denied": None, "request": req, "suspension": _preview(rec, req, s)}


@builtin("__agent_suspend_denied")
def agent_suspend_denied(thread: Any, st: Any = None, begin: Any = None) -> Any:
    """``__agent_suspend_denied(st, begin)``: a PreSuspend hook denied the loop's park; the
    model is told with a user message and the loop goes on."""
    from harnpy.lifecycle.agents import _with_transcript
    from harnpy.lifecycle.transcript import append_message

    why = begin.get("denied") if type(begin) is dict else None
    t = append_message(
        st["transcript"],
        {
            "role": "user",
            "content": f"[agent_await_resumption was denied by a PreSuspend hook: {why}. "
            "Continue working.]",
        },
    )
    return _with_transcript(thread.runtime, st, t, suspend_request=None, park_request=None)


@builtin("__agent_park", control=True)
def agent_park(thread: Any, st: Any = None, request: Any = None, outcome: Any = None) -> Any:
    """``__agent_park(st, request, resume_by_outcome)``: the loop parks (T2 at the boundary,
    T3, daemon idle). In a worker: the worker becomes ``suspended``, its snapshot is written
    and this call blocks, as data, until a resume delivers the payload it returns. In a
    root loop (T4): the loop's frames are written as a ``top_level_agent`` worker snapshot
    and the call returns ``{final: true, suspension}`` so the loop ends with the
    Suspension."""
    from harnpy.lifecycle.agents import current_worker_id

    rt = thread.runtime
    s: dict[str, Any] = st if type(st) is dict else {}
    req: dict[str, Any] = request if type(request) is dict else {}
    mechanism = outcome.get("mechanism") if type(outcome) is dict else None
    wid = current_worker_id(thread)
    rec = services(rt).workers.get(wid) if wid else None
    if rec is not None and rec.thread is thread:
        park_worker(thread, rec, s, req, mechanism)
        return None
    return {"final": True, "suspension": park_root(thread, s, req, mechanism)}


def _commit_park(
    thread: Any,
    rec: WorkerRecord,
    st: dict[str, Any],
    req: dict[str, Any],
    mechanism: Any,
    bottom: Any,
    *,
    required: bool,
) -> tuple[str, str]:
    """Shared part of T2-at-boundary / T3 / T4: register the wait, flip the record to
    ``suspended`` with its Suspension, write the snapshot (rolled back on failure)."""
    rt = thread.runtime
    accepted = bool(req.get("accepted")) and rec.suspension is not None
    reason = req.get("reason") or ""
    initiator = req.get("initiator") or "self"
    raw_conditions = req.get("raw_conditions", req.get("conditions"))
    conditions = req.get("conditions")
    old = (rec.status, rec.suspension, rec.transcript, rec.result, getattr(rec, "park_id", None))
    with contextlib.suppress(OSError):  # an unusable state dir: persist() reports it
        _target_path(rt, rec)
    if accepted:
        sus = dict(rec.suspension or {})
        sus["suspended_at_turn"] = st.get("iteration")
    else:
        sus = new_suspension(rt, rec, reason, initiator, raw_conditions, st.get("iteration"))
    sus["snapshot_ref"] = rec.snapshot_path
    rec.status = "suspended"
    rec.suspension = sus
    rec.transcript = st.get("transcript", rec.transcript)
    rec.park_id = _new_park_id()  # type: ignore[attr-defined]
    rec.reminders_enabled = st.get("reminders_enabled", True) is not False  # type: ignore[attr-defined]
    try:
        register_wait(rt, rec, raw_conditions, durable=mechanism == "ResumeBy.cloud_harness")
        if not accepted:
            _suspension_span(rt, rec, reason, initiator)
        rec.result = suspension_payload(
            rec,
            reason=reason,
            initiator=initiator,
            conditions=conditions,
            iterations=st.get("iteration", 0),
            mechanism=mechanism,
        )
        persist(
            rt,
            rec,
            thread=thread,
            bottom=bottom,
            pending_slot=thread.pending_target,
            st=st,
            durable=True,
            required=required,
        )
    except BaseException:
        cancel_wait(rt, rec, "park failed")
        rec.status, rec.suspension, rec.transcript, rec.result, rec.park_id = old  # type: ignore[attr-defined]
        raise
    return reason, initiator


def park_worker(
    thread: Any, rec: WorkerRecord, st: dict[str, Any], req: dict[str, Any], mechanism: Any
) -> None:
    """Park worker ``rec`` whose thread is blocked in ``__agent_park`` (see there)."""
    rt = thread.runtime
    accepted = bool(req.get("accepted")) and rec.suspension is not None
    reason, initiator = _commit_park(
        thread, rec, st, req, mechanism, bottom_frame(thread), required=False
    )
    rec.suspend_request = None
    rec.park_waker = block_control(thread, f"parked worker {rec.id}")
    if not accepted:
        emit(rt, rec, "WorkerSuspended", reason=reason, initiator=initiator)
        _advisory_hooks(
            rt,
            "PostSuspend",
            {"worker": {"id": rec.id}, "reason": reason, "snapshot_path": rec.snapshot_path},
        )
    rec.settle()


def park_root(
    thread: Any, st: dict[str, Any], req: dict[str, Any], mechanism: Any
) -> dict[str, Any]:
    """T4: a root loop parks; returns the Suspension (see ``__agent_park``)."""
    rt = thread.runtime
    rec = _pending_top(rt).pop(str(req.get("top_level_id")), None) or new_top_level_record(rt, st)
    reason, initiator = _commit_park(
        thread, rec, st, req, mechanism, loop_frame(thread), required=True
    )
    rec.thread = None
    services(rt).workers[rec.id] = rec
    emit(rt, rec, "WorkerSuspended", reason=reason, initiator=initiator)
    rec.settle()
    return rec.result  # type: ignore[no-any-return]


@builtin("__agent_daemon_park_request")
def agent_daemon_park_request(thread: Any, st: Any = None) -> dict[str, Any]:
    """``__agent_daemon_park_request(st)``: the internal ``agent_await_resumption`` request
    of a daemon loop that idles without a wake source (seed "Daemon idle")."""
    return {
        "reason": "daemon idle",
        "initiator": "self",
        "conditions": None,
        "raw_conditions": None,
        "resume_by": None,
        "daemon": True,
    }


# ====================================================================== suspend_agent


def request_suspend(
    runtime: Any, rec: WorkerRecord, reason: str, initiator: str, conditions: Any
) -> None:
    """T2 at call time (lifecycle.md 13 Q20): persist the snapshot saying ``suspended``,
    then flip the record, queue the request for the next turn boundary and emit
    ``WorkerSuspended``. The worker parks (snapshot with its frames) at that boundary."""
    sus = new_suspension(runtime, rec, reason, initiator, conditions, None)
    old = (rec.status, rec.suspension)
    rec.status, rec.suspension = "suspended", sus
    try:
        persist(runtime, rec, durable=True)
    except BaseException:
        rec.status, rec.suspension = old
        raise
    rec.suspend_request = {
        "reason": reason,
        "initiator": initiator,
        "conditions": conditions,
        "raw_conditions": conditions,
        "resume_by": None,
        "accepted": True,
    }
    emit(runtime, rec, "WorkerSuspended", reason=reason, initiator=initiator)
    _suspension_span(runtime, rec, reason, initiator)


def _caller_loop_state(thread: Any) -> dict[str, Any] | None:
    """The state dict of the innermost agent loop running on ``thread`` (None outside)."""
    fr = getattr(thread, "frame", None)
    while fr is not None:
        if _is_loop_frame(fr):
            for i, n in enumerate(fr.code.slot_names):
                if n in ("st", "state") and type(fr.slots[i]) is dict:
                    return fr.slots[i]  # type: ignore[no-any-return]
            return None
        fr = fr.parent
    return None


def _parent_audit(thread: Any, tool: str, rec: WorkerRecord, reason: Any) -> None:
    """``tool_call_audit`` session event of a parent-initiated pause/resume (2.10)."""
    st = _caller_loop_state(thread)
    session = st.get("session_id") if st is not None else rec.session_id
    services(thread.runtime).emit_session_event(
        session,
        {
            "type": "tool_call_audit",
            "kind": "tool_call_audit",
            "tool_name": tool,
            "audit": {"initiator": "parent", "reason": reason, "worker_id": rec.id},
        },
    )


@builtin("suspend_agent", aliases=("__suspend_agent",), callback=True)
def suspend_agent(thread: Any, *args: Any) -> Gen:
    """``suspend_agent(h, reason?, options?)`` (lifecycle.md 2.3, T2/T5): ask a running
    worker to park at its next turn boundary. ``options``: ``{initiator?, conditions?}``
    (initiator ``self|parent|operator|triggered``, default ``operator``; conditions take the
    raw suspend path of 4.2). Returns the summary (``status: "suspended"``; the snapshot is
    written before the status flips, 13 Q20; ``wait_agent`` returns once the worker has
    actually parked).

    PreSuspend hooks run first (also for terminal workers); a veto returns the summary with
    ``pre_suspend_denied`` and records a ``pre_suspend_denied`` audit. A second call on a
    suspended worker returns its summary unchanged (no event, no write).

    Raises:
        HarnRuntimeError: ``HARN-SUS-001`` (not running), ``HARN-SUS-002/007/008``
            (conditions), ``suspend_agent: missing worker handle``.
    """
    from harnpy.lifecycle import hooks
    from harnpy.lifecycle.triggers.conditions import parse_wait_conditions

    args = strip_harness(args)
    rt = thread.runtime
    if not args or args[0] is None:
        raise lifecycle_error("suspend_agent: missing worker handle")
    rec = resolve(rt, args[0], "suspend_agent")
    raw_reason = arg(args, 1)
    reason = (
        "" if raw_reason is None else raw_reason if type(raw_reason) is str else display(raw_reason)
    )
    opts = arg(args, 2)
    opts = opts if type(opts) is dict else {}
    initiator = parse_initiator(
        opts.get("initiator"), "operator", "suspend_agent", allow_timeout=False
    )
    conditions = opts.get("conditions")
    if hooks.has_hooks(rt, ("PreSuspend",)):
        ctl = yield from hooks.fire(
            thread,
            "PreSuspend",
            {
                "event": "PreSuspend",
                "worker": {"id": rec.id},
                "reason": reason,
                "initiator": initiator,
                "conditions": conditions,
            },
        )
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreSuspend hook denied the suspend"
            services(rt).audit("pre_suspend_denied", {"worker": {"id": rec.id}, "reason": why})
            return {**rec.summary(), "pre_suspend_denied": why}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and type(mod.get("reason")) is str:
            reason = mod["reason"]
    if rec.status == "suspended":
        return rec.summary()
    if rec.status != "running" or rec.thread is None:
        raise sus_error(1, f"suspend_agent: worker {rec.id} is not running (status={rec.status})")
    parse_wait_conditions(conditions)  # HARN-SUS-002/007/008 before anything changes
    if conditions is not None and type(conditions) is not dict:
        # raw suspend path (4.2): not a dict -> nothing is registered, the park is open
        from harnpy.runtime.values import type_name

        rt.write_err(
            f"harnpy: warning: suspend_agent: conditions must be a dict, got "
            f"{type_name(conditions)}; worker {rec.id} parks open (nothing registered)\n"
        )
    request_suspend(rt, rec, reason, initiator, conditions)
    if initiator == "parent":
        _parent_audit(thread, "subagent_pause", rec, reason)
    if hooks.has_hooks(rt, ("PostSuspend",)):
        yield from hooks.fire(
            thread,
            "PostSuspend",
            {
                "event": "PostSuspend",
                "worker": {"id": rec.id},
                "reason": reason,
                "snapshot_path": rec.snapshot_path,
            },
        )
    return rec.summary()


# ====================================================================== subagent tools


def subagent_tool_entries(runtime: Any) -> list[dict[str, Any]]:
    """The registry entries of the model-facing ``subagent_pause`` / ``subagent_resume``
    tools (lifecycle.md 2.10) that ``agent_loop`` adds with ``subagents: true`` (alias
    ``subagent_tools: true``); their handlers are the builtins below."""
    builtins = runtime.builtins
    return [
        {
            "name": "subagent_pause",
            "description": "Suspend a child agent worker.",
            "parameters": {
                "type": "object",
                "properties": {"handle": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["handle"],
            },
            "handler": builtins["__subagent_pause_tool"],
            "executor": "harn",
        },
        {
            "name": "subagent_resume",
            "description": "Resume a suspended child agent worker.",
            "parameters": {
                "type": "object",
                "properties": {
                    "handle": {"type": "string"},
                    "input": {"type": "string"},
                    "continue_transcript": {"type": "boolean"},
                },
                "required": ["handle"],
            },
            "handler": builtins["__subagent_resume_tool"],
            "executor": "harn",
        },
    ]


@builtin("__subagent_pause_tool", callback=True)
def subagent_pause_tool(thread: Any, args: Any = None) -> Gen:
    """Handler of the ``subagent_pause({handle, reason?})`` tool (2.10):
    ``suspend_agent(handle, reason, {initiator: "parent"})``; idempotent on a suspended
    child."""
    a: dict[str, Any] = args if type(args) is dict else {}
    reason = a.get("reason")
    return (
        yield from suspend_agent(
            thread, a.get("handle"), "" if reason is None else reason, {"initiator": "parent"}
        )
    )


@builtin("__subagent_resume_tool", callback=True)
def subagent_resume_tool(thread: Any, args: Any = None) -> Gen:
    """Handler of the ``subagent_resume({handle, input?, continue_transcript? = true})``
    tool (2.10): ``resume_agent`` with initiator ``parent``."""
    a: dict[str, Any] = args if type(args) is dict else {}
    cont = a.get("continue_transcript")
    opts = {
        "input": a.get("input"),
        "continue_transcript": True if cont is None else cont,
        "initiator": "parent",
    }
    return (yield from resume_agent(thread, a.get("handle"), opts))


# ====================================================================== resuming


def render_input(value: Any) -> str:
    """Resume input as text: strings as they are, other values as JSON."""
    if type(value) is str:
        return value
    from harnpy.stdlib.jsonlib import dumps

    return dumps(value)


def check_input(value: Any) -> str | None:
    """The resume input as text, None for nil.

    Raises:
        HarnRuntimeError: ``HARN-SUS-009`` for blank text.
    """
    if value is None:
        return None
    text = render_input(value)
    if not text.strip():
        raise sus_error(9, "resume_agent: resume input must be nil or non-empty text")
    return text


def _collapse(text: str) -> str:
    return " ".join(text.split())


def continuity_reminder(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """The one-shot ``resume_continuity`` system reminder of lifecycle.md 8."""
    turn = sus.get("suspended_at_turn")
    if type(turn) is not int:
        prev = rec.result if type(rec.result) is dict else {}
        turn = prev.get("iterations_completed") or prev.get("iterations") or 0
    reason = _collapse(str(sus.get("reason") or "")) or "unspecified"
    if initiator == "parent":
        cause = "You have been resumed by your parent agent"
    elif initiator == "timeout":
        cause = "Your timeout elapsed; resuming with summary"
    elif initiator == "triggered":
        tinfo = trigger_info or {}
        cause = (
            f"You have been resumed by trigger {tinfo.get('id') or 'unknown'} matching event "
            f"{tinfo.get('event_id') or 'unknown'}"
        )
    else:
        cause = "You have been resumed by the operator"
    if input_text is not None:
        rendered = _collapse(input_text) or "<unrenderable input>"
        input_part = f"The resumer provided input: {rendered}"
    else:
        input_part = "No input was provided"
    body = f"You were suspended at turn {turn} for reason: '{reason}'. {cause}. {input_part}."
    if not continue_transcript and digest:
        body += f" Pre-suspend conversation digest: {digest}"
    return {
        "body": body,
        "dedupe_key": RESUME_CONTINUITY,
        "tags": [RESUME_CONTINUITY],
        "ttl_turns": 1,
        "preserve_on_compact": True,
        "propagate": "none",
        "role_hint": "system",
        "fired_at_turn": 0,
        "source": RESUME_CONTINUITY,
    }


def _continuity_payload(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_value: Any,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """``options._resume_continuity`` (lifecycle.md 8)."""
    resume = {
        "initiator": initiator,
        "input": input_value,
        "input_rendered": input_text,
        "input_present": input_text is not None,
        "continue_transcript": continue_transcript,
        "digest": digest,
        "trigger": trigger_info,
    }
    return {
        "session_id": rec.session_id,
        "session": {"id": rec.session_id},
        "worker": {"id": rec.id, "name": rec.name, "mode": rec.mode},
        "suspension": {
            k: sus.get(k)
            for k in (
                "reason",
                "initiator",
                "suspended_at",
                "snapshot_ref",
                "suspended_at_turn",
                "conditions",
            )
        },
        "reason": sus.get("reason"),
        "suspended_at_turn": sus.get("suspended_at_turn") or 0,
        "resume": resume,
        **{k: v for k, v in resume.items() if k != "trigger"},
        "turn": 0,
        "iteration": 0,
    }


def resume_payload(
    rec: WorkerRecord,
    sus: dict[str, Any],
    *,
    input_value: Any,
    input_text: str | None,
    continue_transcript: bool,
    initiator: str,
    trigger_info: dict[str, Any] | None,
    digest: str | None,
) -> dict[str, Any]:
    """What the blocked ``__agent_park`` returns on resume (see ``__agent_apply_resume``):
    the continuity reminder (sub_agent / top_level_agent workers with reminders enabled),
    the input as a user message otherwise, and the replacement transcript when
    ``continue_transcript`` is false (one user message holding the digest)."""
    from harnpy.lifecycle.transcript import new_transcript

    payload: dict[str, Any] = {"reminders": [], "messages": []}
    if not continue_transcript:
        if digest:
            payload["transcript"] = new_transcript(
                messages=[{"role": "user", "content": digest}], summary=digest
            )
        else:
            payload["transcript"] = new_transcript()
    reminders = getattr(rec, "reminders_enabled", True) and rec.mode in (
        "sub_agent",
        "top_level_agent",
    )
    if reminders:
        payload["reminders"].append(
            continuity_reminder(
                rec,
                sus,
                input_text=input_text,
                continue_transcript=continue_transcript,
                initiator=initiator,
                trigger_info=trigger_info,
                digest=digest,
            )
        )
        cont = _continuity_payload(
            rec,
            sus,
            input_value=input_value,
            input_text=input_text,
            continue_transcript=continue_transcript,
            initiator=initiator,
            trigger_info=trigger_info,
            digest=digest,
        )
        spec = rec.config.get("spec") if type(rec.config) is dict else None
        if type(spec) is dict:
            options = dict(spec.get("options") or {})
            options["_resume_continuity"] = cont
            rec.config = {**rec.config, "spec": {**spec, "options": options}}
    elif input_text is not None:
        payload["messages"].append({"role": "user", "content": input_text})
    return payload


class ResumeArgs:
    """Parsed ``resume_agent`` arguments (lifecycle.md 2.4 parse_resume_options)."""

    __slots__ = ("input", "continue_transcript", "initiator", "trigger_event", "trigger_info")

    def __init__(self) -> None:
        self.input: Any = None
        self.continue_transcript = True
        self.initiator: str | None = None
        self.trigger_event: Any = None
        self.trigger_info: dict[str, Any] | None = None


_OPTION_KEYS = (
    "input",
    "resume_input",
    "continue_transcript",
    "initiator",
    "resume_initiator",
    "trigger_event",
)


def parse_resume_args(args: tuple[Any, ...]) -> ResumeArgs:
    """Arguments 2 and 3 of ``resume_agent``: an options dict (when it has one of
    ``input, resume_input, continue_transcript, initiator, resume_initiator,
    trigger_event``) or the input itself; argument 3 overrides ``continue_transcript``."""
    from harnpy.runtime.ops import truthy

    out = ResumeArgs()
    second = arg(args, 1)
    if type(second) is dict and any(k in second for k in _OPTION_KEYS):
        out.input = second.get("input", second.get("resume_input"))
        if second.get("continue_transcript") is not None:
            out.continue_transcript = bool(truthy(second["continue_transcript"]))
        ini = second.get("initiator", second.get("resume_initiator"))
        out.initiator = parse_initiator(ini, "operator", "resume_agent") if ini else None
        out.trigger_event = second.get("trigger_event")
    elif second is not None:
        out.input = second
    third = arg(args, 2)
    if third is not None:
        out.continue_transcript = bool(truthy(third))
    return out


def _snapshot_target(target: str) -> str:
    """A snapshot path for a target string (2.4 step 3)."""
    if "/" in target or target.endswith(".json"):
        return target
    return os.path.join(state_dir(), f"{target}.json")


def _live_worker(runtime: Any, target: Any) -> WorkerRecord | None:
    rec = _live_record(runtime, target)
    if rec is not None:
        refresh_from_disk(runtime, rec)
    return rec


def _live_record(runtime: Any, target: Any) -> WorkerRecord | None:
    workers = services(runtime).workers
    if type(target) is dict:
        wid = target.get("id")
        if wid is None:
            raise lifecycle_error("agent handle dict is missing an id field")
        return workers.get(wid) if type(wid) is str else None
    if type(target) is str:
        rec = workers.get(target)
        if rec is None:
            base = os.path.basename(target)
            if base.endswith(".json"):
                rec = workers.get(base[:-5])
        return rec
    if target is None:
        raise lifecycle_error("resume_agent: missing worker handle")
    raise lifecycle_error("expected agent handle or worker id")


def _load_failure(target: str, cause: Any) -> HarnError:
    return sus_error(4, f"resume_agent: failed to load snapshot `{target}`: {cause}")


def _unexpected(e: BaseException) -> str:
    """The cause shown for an unexpected exception while restoring a snapshot (a damaged
    file the load checks did not catch, or a harnpy bug)."""
    return f"the snapshot cannot be restored ({type(e).__name__}: {e})"


def resume_gen(
    thread: Any,
    target: Any,
    ra: ResumeArgs,
    *,
    where: str = "resume_agent",
) -> Gen:
    """``resume_agent`` (lifecycle.md 2.4): a callback-builtin generator (PreResume /
    PostResume hooks run as Harn calls) returning the summary. ``thread`` only needs
    ``runtime`` (sync callers pass a stand-in)."""
    from harnpy.lifecycle import hooks

    rt = thread.runtime
    input_text = check_input(ra.input)  # HARN-SUS-009 before anything happens
    rec = _live_worker(rt, target)
    doc: dict[str, Any] | None = None
    path: str | None = None
    if rec is None:
        ref = target.get("id") if type(target) is dict else target
        if type(ref) is not str or not ref.strip():
            raise sus_error(4, "resume_agent: missing worker id or snapshot path")
        # 2.4 step 3: a handle or id that is not live names <state_dir>/<id>.json (a handle
        # kept across a program snapshot or a REPL :save/:restore)
        path = _snapshot_target(ref)
        try:
            doc, _ = read_document(path)
            path, doc = canonical_snapshot(path, doc)
        except SnapshotLoadError as e:
            raise _load_failure(ref, e) from None
        live = services(rt).workers.get(doc["id"])
        if (
            live is not None
            and live.snapshot_path
            and os.path.abspath(live.snapshot_path) == os.path.abspath(path)
        ):
            rec, doc = live, None
        else:
            busy = busy_elsewhere(doc, doc["id"])
            if busy is not None:
                raise busy
            rec = record_from_document(rt, doc, path)
            if rec.status != "suspended":
                return _read_mode(rt, rec, input_text, ra)
            if doc.get("harnpy_thread") is None:
                raise _load_failure(
                    ref, "the worker has not reached its suspend checkpoint (no evaluator state)"
                )
            try:
                precheck_sources(rt, doc, path)
            except SnapshotError as e:
                raise _load_failure(ref, e.message) from None
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    if rec.status != "suspended":
        raise sus_error(3, f"resume_agent: worker {rec.id} is not suspended (status={rec.status})")
    cold = rec.thread is None
    if not cold and rec.park_waker is None:
        raise lifecycle_error(
            f"resume_agent: worker {rec.id} has not reached its suspend checkpoint yet"
        )
    initiator = ra.initiator or (
        "triggered"
        if ra.trigger_event is not None
        else "parent"
        if _caller_loop_state(thread) is not None
        else "operator"
    )
    if hooks.has_hooks(rt, ("PreResume",)):
        ctl = yield from hooks.fire(
            thread,
            "PreResume",
            {
                "event": "PreResume",
                "worker": {"id": rec.id},
                "resume_input": ra.input,
                "continue_transcript": ra.continue_transcript,
            },
        )
        if hooks.is_veto(ctl):
            why = ctl.get("reason") or "PreResume hook denied the resume"
            services(rt).audit("pre_resume_denied", {"worker": {"id": rec.id}, "reason": why})
            return {**rec.summary(), "pre_resume_denied": why}
        mod = ctl.get("modify") if ctl.get("control") == "modify" else None
        if type(mod) is dict and mod.get("resume_input") is not None:
            ra.input = mod["resume_input"]
            input_text = check_input(ra.input)
    digest_text = None
    if not ra.continue_transcript:
        from harnpy.lifecycle.transcript import coerce, digest

        t = rec.transcript
        if type(t) is dict and t.get("_type") == "transcript" and t.get("messages"):
            digest_text = digest(coerce(t, "resume_agent")) or None
    # re-check after the hooks (another resume may have won meanwhile)
    if rec.status != "suspended" or (not cold and rec.park_waker is None):
        raise sus_error(
            6,
            f"resume_agent: worker {rec.id} changed before resume could complete "
            f"(status={rec.status})",
        )
    commit_resume(
        rt,
        rec,
        doc=doc,
        input_value=ra.input,
        input_text=input_text,
        continue_transcript=ra.continue_transcript,
        initiator=initiator,
        trigger_event=ra.trigger_event,
        trigger_info=ra.trigger_info,
        digest_text=digest_text,
    )
    if initiator == "parent":
        _parent_audit(thread, "subagent_resume", rec, None)
    if hooks.has_hooks(rt, ("PostResume",)):
        yield from hooks.fire(
            thread, "PostResume", {"event": "PostResume", "worker": {"id": rec.id}}
        )
    return rec.summary()


def _read_mode(
    runtime: Any, rec: WorkerRecord, input_text: str | None, ra: ResumeArgs
) -> dict[str, Any]:
    """2.4 step 4 for a cold-loaded worker that is not suspended: register it, apply the
    input and the transcript policy, return its summary (no new run)."""
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    services(runtime).workers[rec.id] = rec
    if input_text is not None:
        rec.task = input_text
        rec.history.append(input_text)
    if not ra.continue_transcript and type(rec.transcript) is dict:
        from harnpy.lifecycle.transcript import coerce, digest, new_transcript

        d = digest(coerce(rec.transcript, "resume_agent")) if rec.transcript.get("messages") else ""
        rec.transcript = (
            new_transcript(messages=[{"role": "user", "content": d}], summary=d) if d else None
        )
    return rec.summary()


def commit_resume(
    runtime: Any,
    rec: WorkerRecord,
    *,
    doc: dict[str, Any] | None = None,
    input_value: Any = None,
    input_text: str | None = None,
    continue_transcript: bool = True,
    initiator: str = "operator",
    trigger_event: Any = None,
    trigger_info: dict[str, Any] | None = None,
    digest_text: str | None = None,
    fresh: bool = False,
    claimed: bool = False,
) -> None:
    """Steps 4-9 of the warm resume (2.4) once the checks passed: claim the snapshot file,
    restore the thread for a cold resume (``doc``, or the file when the record has no
    thread), flip the record to ``running``, build the payload and deliver it (waker, or the
    restored thread's pending slot), unregister the wait, emit ``WorkerResumed``.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` (lost the claim), ``HARN-SUS-004`` (the snapshot
            cannot be restored; the file is put back as it was).
    """
    cold = rec.thread is None
    path = rec.snapshot_path
    original: bytes | None = None
    if not claimed:
        park_id = None if doc is not None else getattr(rec, "park_id", None)
        original = claim(path, rec.id, park_id) if path else None
        if original is None and cold:
            raise sus_error(4, f"resume_agent: failed to load snapshot `{path}`: file not found")
        rec.claimed_bytes = original  # type: ignore[attr-defined]
    th = None
    if cold:
        try:
            if doc is None:
                doc, _ = read_document(path)
                if doc.get("harnpy_thread") is None:
                    raise SnapshotLoadError("the snapshot has no evaluator state")
            th = restore_thread(runtime, rec, doc, path, fresh=fresh)
        except (SnapshotLoadError, SnapshotError, HarnError) as e:
            rollback(path, original)
            msg = e.message if isinstance(e, (SnapshotError, HarnError)) else str(e)
            raise _load_failure(path, msg) from None
        except Exception as e:  # noqa: BLE001 - data the checks let through broke the restore
            rollback(path, original)
            raise _load_failure(path, _unexpected(e)) from None
        except BaseException:
            rollback(path, original)  # an interrupt: the park stays
            raise
    sus = dict(rec.suspension or {})
    if not sus and doc is not None and isinstance(doc.get("suspension"), dict):
        sus = dict(doc["suspension"])
    waker = rec.park_waker
    rec.park_waker = None
    rec.suspend_request = None
    rec.suspension = None
    rec.status = "running"
    rec.finished_at = None
    rec.error = None
    rec.pending_error = None
    if input_text is not None:
        rec.task = input_text
        rec.history.append(input_text)
    rec.cancelled_durable_wait = None  # type: ignore[attr-defined]
    cancel_wait(runtime, rec)
    if trigger_info is None and trigger_event is not None:
        ev = trigger_event if type(trigger_event) is dict else {}
        trigger_info = {
            "id": None,
            "event_id": ev.get("id"),
            "kind": ev.get("kind"),
            "provider": ev.get("provider"),
            "dedupe_key": ev.get("dedupe_key"),
            "timeout_action": None,
        }
    payload = resume_payload(
        rec,
        sus,
        input_value=input_value,
        input_text=input_text,
        continue_transcript=continue_transcript,
        initiator=initiator,
        trigger_info=trigger_info,
        digest=digest_text,
    )
    services(runtime).workers[rec.id] = rec
    emit(runtime, rec, "WorkerResumed", initiator=initiator)
    _resume_span(runtime, rec, sus, continue_transcript, input_text is not None, initiator)
    if th is not None:
        attach_thread(runtime, rec, th)
        if th.pending_slot >= 0:
            th.frame.slots[th.pending_slot] = payload
        runtime.scheduler.add(th)
    elif waker is not None:
        waker.wake(payload)


class _Caller:
    """Stand-in calling thread for resumes driven from Python (triggers, timers, CLI)."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.frame = None


def drive_sync(runtime: Any, gen: Gen) -> Any:
    """Run a callback-builtin generator from Python: each ``CallRequest`` (a hook) runs to
    completion on a fresh thread. A hook that would wait raises a runtime error (hooks of
    trigger- and timer-driven resumes must not block)."""
    from harnpy.stdlib.concurrency import start_thread

    value: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = gen.throw(exc) if exc is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        value, exc = None, None
        if type(req) is not CallRequest:
            gen.close()
            raise runtime_error("internal: a resume step tried to wait outside a Harn thread")
        try:
            th = start_thread(runtime, req.fn, list(req.args), "hook")
            if not th.finished:
                value = th.run()
                if not th.finished:
                    from harnpy.stdlib.concurrency import kill_thread

                    kill_thread(runtime, th)
                    raise runtime_error(
                        "a lifecycle hook of a trigger- or timer-driven resume cannot wait"
                    )
            else:
                value = th.result
        except HarnError as e:
            exc = e


def resume_sync(runtime: Any, target: Any, ra: ResumeArgs) -> Any:
    """``resume_agent`` from Python (see :func:`resume_gen`)."""
    gen = resume_gen(_Caller(runtime), target, ra)
    return drive_sync(runtime, gen)


@builtin("resume_agent", aliases=("__resume_agent",), callback=True)
def resume_agent(thread: Any, *args: Any) -> Gen:
    """``resume_agent(target, input_or_options?, continue_transcript?)`` (lifecycle.md 2.4,
    T6/T14): resume a suspended worker — a live handle (summary dict / id) or a snapshot
    (path, or an id under the state dir: cold load, then resume) — and return its summary
    (``status: "running"``). Options: ``{input, continue_transcript (default true),
    initiator, trigger_event}``; default initiator ``parent`` inside an agent loop, else
    ``operator``. With ``continue_transcript: false`` the worker continues from a digest of
    its transcript. The first resumed request carries the one-shot ``resume_continuity``
    reminder (8). A cold-loaded snapshot that is not suspended is registered and returned
    without running.

    Raises:
        HarnRuntimeError: ``HARN-SUS-003`` (not suspended), ``-004`` (snapshot missing /
            unreadable / invalid, or empty target), ``-006`` (another resume won),
            ``-009`` (blank input), ``-010`` (closed); ``has not reached its suspend
            checkpoint yet``; ``unknown worker: <id>``.
    """
    args = strip_harness(args)
    ra = parse_resume_args(args)
    return (yield from resume_gen(thread, arg(args, 0), ra))


@builtin("daemon_resume", callback=True)
def daemon_resume(thread: Any, *args: Any) -> Gen:
    """``daemon_resume(path, input?)``: cold-restore a parked daemon loop (or any worker
    snapshot) and run it until it settles again; returns its summary (``status:
    "suspended"`` when it idled again, ``completed`` when the loop ended). ``path`` is the
    daemon's state directory (holding ``daemon.json``), a snapshot file, or a worker id.

    Raises:
        HarnRuntimeError: as ``resume_agent`` (``HARN-SUS-004`` for a missing snapshot).
    """
    args = strip_harness(args)
    target = arg(args, 0)
    if type(target) is not str or not target.strip():
        raise sus_error(4, "daemon_resume: missing daemon state directory or snapshot path")
    path = os.path.join(target, "daemon.json") if os.path.isdir(target) else target
    ra = ResumeArgs()
    ra.input = arg(args, 1)
    ra.initiator = "operator"
    summary = yield from resume_gen(thread, path, ra, where="daemon_resume")
    rec = services(thread.runtime).workers.get(summary.get("id"))
    if rec is None or not rec.busy():
        return rec.summary() if rec is not None else summary

    def register(waker: Any) -> None:
        rec.waiters.append(lambda: waker.wake(rec.summary()))
        rec.settle()

    return (yield Block(register, f"daemon {rec.id}"))


def adopt(path: str, worker_id: str, park_id: Any) -> str:
    """Take over a parked worker's snapshot for this process (under the directory lock):
    it must still be ``suspended`` at ``park_id``; it gets a new park id and this process as
    owner, so a process that held the same park can no longer resume it (``HARN-SUS-006``).
    Returns the new park id."""
    from harnpy.runtime.snapshot import write_atomic

    with _dir_lock(path):
        with open(path, "rb") as fh:
            doc = _loads(fh.read())
        if doc.get("status") != "suspended" or doc.get("park_id") != park_id:
            raise sus_error(
                6,
                f"load_agent: worker {worker_id} changed before it could be loaded "
                f"(status={doc.get('status')})",
            )
        new_id = _new_park_id()
        doc["park_id"] = new_id
        doc["owner"] = _owner()
        write_atomic(path, _dumps(doc), max_bytes=None, fsync=True)
    return new_id


@builtin("load_agent", aliases=("__load_agent",))
def load_agent(thread: Any, *args: Any) -> dict[str, Any]:
    """``load_agent(path_or_id)`` (harnpy): cold-load a worker snapshot into this process
    *without* resuming it (lifecycle.md 1.2 T14; 2.9 "cold-loaded snapshots appear once
    loaded"). A parked worker's thread is restored and stays parked here — resumable with
    ``resume_agent`` — and its auto-resume wait is registered again at the *absolute*
    deadline stored in the snapshot (a timeout that already passed fires once, at the next
    poll; nothing is re-armed from "now"). Other statuses are registered as they are
    (``running`` becomes ``interrupted``). Returns the summary.

    Raises:
        HarnRuntimeError: ``HARN-SUS-004`` (unreadable snapshot), ``HARN-SUS-006`` (another
            process resumed or loaded it meanwhile).
    """
    args = strip_harness(args)
    rt = thread.runtime
    target = arg(args, 0)
    if type(target) is not str or not target.strip():
        raise sus_error(4, "load_agent: missing worker id or snapshot path")
    path = _snapshot_target(target)
    try:
        doc, _ = read_document(path)
        path, doc = canonical_snapshot(path, doc)
    except SnapshotLoadError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{target}`: {e}") from None
    svc = services(rt)
    live = svc.workers.get(doc["id"])
    if live is not None:
        return live.summary()
    busy = busy_elsewhere(doc, doc["id"])
    if busy is not None:
        raise busy
    rec = record_from_document(rt, doc, path)
    if rec.status != "suspended" or doc.get("harnpy_thread") is None:
        svc.workers[rec.id] = rec
        return rec.summary()
    from harnpy.runtime.scheduler import ControlWaker

    rec.park_id = adopt(path, rec.id, doc.get("park_id"))  # type: ignore[attr-defined]
    try:
        th = restore_thread(rt, rec, doc, path, fresh=False)
    except SnapshotError as e:
        raise sus_error(4, f"load_agent: failed to load snapshot `{target}`: {e.message}") from None
    attach_thread(rt, rec, th)
    th.status = "blocked"
    th.blocked_on = f"parked worker {rec.id}"
    rt.scheduler.blocked.add(th)
    rec.park_waker = ControlWaker(rt.scheduler, th, th.frame, th.pending_slot)
    svc.workers[rec.id] = rec
    wait = doc.get("resume_wait")
    if isinstance(wait, dict) and isinstance(wait.get("conditions"), dict):
        d = _dispatcher(rt)
        handle = d.register_resume_wait(
            rec.id,
            wait["conditions"],
            path,
            deadline_ms=wait.get("deadline_ms"),
            park_id=rec.park_id,  # type: ignore[attr-defined]
        )
        if handle is not None:
            if rec.suspension is not None:
                rec.suspension["auto_resume_trigger"] = {
                    "id": handle["id"],
                    "version": handle["version"],
                }
            origin = wait.get("durable_origin")
            if wait.get("durable") and type(wait.get("id")) is str:
                origin = {"id": wait["id"], "store": wait.get("store")}
            rec.resume_wait = {  # type: ignore[attr-defined]
                **wait,
                **handle,
                "durable_origin": origin,
            }
    return rec.summary()


# ====================================================================== triggers


def fail_on_timeout(runtime: Any, rec: WorkerRecord) -> dict[str, Any]:
    """T10: a timeout with ``on_timeout: "fail"`` fired: the parked worker fails (``error:
    "auto-resume timeout expired"``), its suspension is dropped.

    Raises:
        HarnRuntimeError: ``HARN-SUS-006`` when it is no longer suspended.
    """
    if rec.status != "suspended":
        raise sus_error(
            6,
            f"auto-resume timeout: worker {rec.id} is no longer suspended (status={rec.status})",
        )
    stop_thread(runtime, rec)
    rec.suspension = None
    rec.resume_wait = None  # type: ignore[attr-defined]
    rec.status = "failed"
    rec.error = "auto-resume timeout expired"
    rec.finished_at = now_rfc3339(runtime)
    persist_metadata(runtime, rec)
    emit(runtime, rec, "WorkerFailed", error=rec.error)
    rec.settle()
    return rec.summary()


def _on_wait_fired(runtime: Any, req: Any) -> Any:
    """The dispatcher's resume handler: a trigger, event or timeout of a parked worker's
    wait fired (lifecycle.md 4.4)."""
    rec = services(runtime).workers.get(req.worker_id)
    if rec is None:
        if req.snapshot_path and os.path.exists(req.snapshot_path):
            target: Any = req.snapshot_path
        else:
            raise runtime_error(f"unknown worker: {req.worker_id}")
    else:
        target = rec.id
        if rec.status != "suspended":
            what = "auto-resume timeout" if req.cause == "timeout" else "auto-resume"
            raise sus_error(
                6, f"{what}: worker {rec.id} is no longer suspended (status={rec.status})"
            )
    if req.action == "fail":
        if rec is None:
            raise runtime_error(f"unknown worker: {req.worker_id}")
        return fail_on_timeout(runtime, rec)
    ra = ResumeArgs()
    ra.input = req.input
    ra.continue_transcript = bool(req.continue_transcript)
    ra.initiator = req.initiator
    ra.trigger_event = req.trigger_event
    ra.trigger_info = req.trigger_info()
    return resume_sync(runtime, target, ra)


def install(dispatcher: Any) -> None:
    """Attach the worker layer to a trigger dispatcher: the resume handler of auto-resume
    waits (the ``interrupt_and_suspend`` variant lives in
    :mod:`harnpy.lifecycle.trigger_variants` and suspends through
    :func:`harnpy.lifecycle.workers.panic_suspend`). Idempotent."""
    rt = dispatcher.runtime
    if rt is None or getattr(dispatcher, "_worker_layer", False):
        return
    dispatcher._worker_layer = True
    dispatcher.resume_handler = lambda req: _on_wait_fired(rt, req)
    dispatcher.still_parked = lambda req: _still_parked(rt, req)


def _still_parked(runtime: Any, req: Any) -> bool:
    """Whether the worker of a wait whose resume just failed is still parked at the wait's
    park in this process (the failure changed nothing: the wait is kept)."""
    rec = services(runtime).workers.get(req.worker_id)
    if rec is None or rec.status != "suspended":
        return False
    park = getattr(req, "park_id", None)
    return park is None or getattr(rec, "park_id", None) == park


# ====================================================================== close / finish


def on_closed(runtime: Any, rec: WorkerRecord) -> None:
    """After ``close_agent`` (T11): unregister the wait, mark the snapshot ``cancelled``."""
    cancel_wait(runtime, rec, "closed")
    persist_metadata(runtime, rec)


def on_finished(runtime: Any, rec: WorkerRecord) -> None:
    """After a worker's loop ended (T7/T9): drop a suspend request the loop never honoured,
    unregister any wait, write the final metadata."""
    rec.suspend_request = None
    rec.suspension = None
    cancel_wait(runtime, rec, "finished")
    persist_metadata(runtime, rec)


def on_spawned(runtime: Any, rec: WorkerRecord) -> None:
    """After T1: write the metadata snapshot (``carry.persist_state``)."""
    persist_metadata(runtime, rec)


# ====================================================================== CLI support


def resume_from_cli(
    runtime: Any,
    path: str,
    doc: dict[str, Any],
    *,
    initiator: str = "operator",
    input_value: Any = None,
    continue_transcript: bool = True,
    trigger_event: Any = None,
) -> WorkerRecord:
    """``harnpy run --resume <worker snapshot>``: claim the file, restore the worker into
    the fresh ``runtime`` (its snapshot's main module becomes the program), queue its mock
    replies and resume it warm (initiator ``operator``, continuity reminder). The caller
    drives the scheduler until the record settles.

    Raises:
        HarnRuntimeError: ``HARN-SUS-003/004/006/009/010`` as ``resume_agent``.
    """
    busy = busy_elsewhere(doc, str(doc.get("id")))
    if busy is not None:
        raise busy
    rec = record_from_document(runtime, doc, path)
    if rec.status == "cancelled":
        raise sus_error(10, f"resume_agent: worker {rec.id} was closed and cannot be resumed")
    if rec.status != "suspended":
        raise sus_error(3, f"resume_agent: worker {rec.id} is not suspended (status={rec.status})")
    if doc.get("harnpy_thread") is None:
        raise _load_failure(path, "the worker has not reached its suspend checkpoint")
    input_text = check_input(input_value)
    park_id = _requested_park_id()
    if park_id is not None and doc.get("park_id") not in (None, park_id):
        raise sus_error(
            6,
            f"resume_agent: worker {rec.id} changed before resume could complete (the wait "
            "belongs to an earlier park; the worker parked again since)",
        )
    try:
        precheck_sources(runtime, doc, path)
    except SnapshotError as e:
        raise _load_failure(path, e.message) from None
    original = claim(path, rec.id, park_id if doc.get("park_id") is not None else None)
    rec.claimed_bytes = original  # type: ignore[attr-defined]
    # From the claim on, any failure puts the claimed bytes back (the park is not lost).
    try:
        try:
            import_mock_state(runtime, doc)
        except Exception as e:  # noqa: BLE001 - an invalid mock queue is a load failure
            raise _load_failure(path, e) from None
        digest_text = None
        if not continue_transcript:
            rec_doc_t = doc.get("transcript")
            if isinstance(rec_doc_t, dict) and rec_doc_t.get("messages"):
                from harnpy.lifecycle.transcript import digest

                digest_text = digest(rec_doc_t) or None
        commit_resume(
            runtime,
            rec,
            doc=doc,
            input_value=input_value,
            input_text=input_text,
            continue_transcript=continue_transcript,
            initiator=initiator,
            trigger_event=trigger_event,
            digest_text=digest_text,
            fresh=True,
            claimed=True,
        )
    except BaseException as e:
        rollback(path, original)
        if isinstance(e, Exception) and not isinstance(e, HarnError):
            # damaged data the load checks let through (or a harnpy bug)
            raise _load_failure(path, _unexpected(e)) from None
        raise
    return rec


def _requested_park_id() -> str | None:
    """The park id of the wait a ``harnpy worker`` resume is for (``park_id`` of the
    ``HARNPY_RESUME_REQUEST`` it sets), or None outside such a resume."""
    import json

    raw = os.environ.get("HARNPY_RESUME_REQUEST")
    if not raw or not os.environ.get("HARNPY_WAIT_ID"):
        return None
    try:
        req = json.loads(raw)
    except ValueError:
        return None
    park = req.get("park_id") if isinstance(req, dict) else None
    return park if isinstance(park, str) else None


def undo_resume(runtime: Any, rec: WorkerRecord) -> bool:
    """Put back the park a resume of ``rec`` claimed when that resume is abandoned before
    the worker settled (Ctrl-C during ``harnpy run --resume``): the snapshot file gets its
    bytes from before the claim (``suspended`` at the same park, so a later resume starts
    again from there) and a durable wait the resume cancelled is pending again. Only while
    the file still says ``running`` with this process as owner. Returns whether the file
    was put back."""
    raw = getattr(rec, "claimed_bytes", None)
    path = rec.snapshot_path
    if raw is None or not path or rec.status != "running":
        return False
    with _dir_lock(path):
        try:
            with open(path, "rb") as fh:
                doc = _loads(fh.read())
        except (OSError, ValueError):
            return False
        owner = doc.get("owner") if isinstance(doc, dict) else None
        if (
            not isinstance(doc, dict)
            or doc.get("status") != "running"
            or not isinstance(owner, dict)
            or owner.get("pid") != os.getpid()
        ):
            return False
        from harnpy.runtime.snapshot import write_atomic

        write_atomic(path, raw, max_bytes=None, fsync=True)
    rec.claimed_bytes = None  # type: ignore[attr-defined]
    origin = getattr(rec, "cancelled_durable_wait", None)
    if type(origin) is dict:
        _store_call(runtime, origin, "reopen")
        rec.cancelled_durable_wait = None  # type: ignore[attr-defined]
    return True


def drive_until_settled(runtime: Any, rec: WorkerRecord) -> bool:
    """Run the scheduler until ``rec`` is settled (not running, not mid-turn); False when
    every thread is blocked and nothing can wake them.

    An interrupt (Ctrl-C: ``KeyboardInterrupt`` / ``HarnInterrupt``) or an internal error
    (a Python exception other than a Harn error escaping the scheduler) while the worker runs puts its park back
    first (:func:`undo_resume`), then propagates: the worker stays resumable from the same
    snapshot."""
    from harnpy.runtime.errors import HarnInterrupt

    sched = runtime.scheduler
    try:
        while rec.busy():
            if sched.ready:
                sched.fire_due_timers()
                sched.run_thread(sched.ready.popleft())
                continue
            if not sched._wait_for_event():
                return False
    except (KeyboardInterrupt, HarnInterrupt, Exception) as e:
        if isinstance(e, HarnError):
            raise
        why = (
            "interrupted" if isinstance(e, (KeyboardInterrupt, HarnInterrupt)) else "internal error"
        )
        try:
            if undo_resume(runtime, rec):
                runtime.write_err(
                    f"harnpy: {why}; worker {rec.id} is parked again at {rec.snapshot_path}\n"
                )
        except OSError:
            pass
        raise
    return True


__all__ = [
    "DAEMON_SNAPSHOT_TYPE",
    "WORKER_SNAPSHOT_TYPE",
    "SnapshotLoadError",
    "build_document",
    "claim",
    "commit_resume",
    "continuity_reminder",
    "drive_until_settled",
    "install",
    "persist",
    "read_document",
    "record_from_document",
    "restore_thread",
    "resume_from_cli",
    "rollback",
    "snapshot_dir",
]
