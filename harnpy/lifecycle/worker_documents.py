"""The worker snapshot document (lifecycle.md 3.6, 3.7): building it from a worker record
and its parked frames, the 4 MiB cap, writing and reading it, and rebuilding a record from
it."""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle._common import now_rfc3339
from harnpy.lifecycle.checkpoint_store import (
    WORKER_MODES,
    _cache,
    _dumps,
    _loads,
    _target_path,
    checkpoint_for,
    is_store_ref,
    split_store_ref,
)
from harnpy.lifecycle.claims import _owner, commit_document
from harnpy.lifecycle.services import services
from harnpy.lifecycle.workers import (
    WorkerRecord,
)
from harnpy.runtime.errors import HarnError, runtime_error
from harnpy.runtime.snapshot import MAX_SNAPSHOT_BYTES, SnapshotError
from harnpy.store.errors import StoreError

WORKER_SNAPSHOT_TYPE = "worker_snapshot"
DAEMON_SNAPSHOT_TYPE = "daemon_snapshot"
#: Format version of worker snapshot files (the embedded thread has its own version).
WORKER_FORMAT_VERSION = 1
#: Event queue capacity reported in daemon snapshots (lifecycle.md 3.7).
EVENT_QUEUE_CAPACITY = 1024
_MODES = WORKER_MODES


class SnapshotLoadError(Exception):
    """A worker snapshot could not be loaded; ``str(e)`` is the cause (HARN-SUS-004)."""


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


def build_document(
    runtime: Any,
    rec: WorkerRecord,
    *,
    thread: Any = None,
    bottom: Any = None,
    pending_slot: int = -1,
    st: dict[str, Any] | None = None,
    transcript_plan: Any = None,
) -> dict[str, Any]:
    """The worker snapshot document of ``rec`` (lifecycle.md 3.6, 3.7).

    With ``thread``: the frames from its top down to ``bottom`` are embedded as
    ``harnpy_thread`` (an evaluator snapshot plus ``pending_slot``), and ``config`` and
    ``transcript`` are written in the evaluator's tagged encoding (lossless, shared with the
    frames). Without: a metadata document (``harnpy_thread: null``; ``config`` and
    ``transcript`` as plain JSON, closures shown by name). With a ``transcript_plan``
    (:func:`harnpy.lifecycle.transcript_store.plan`, frames only) the transcript's message
    and event lists are left out — the file the plan appends to holds them — and
    ``transcript_file`` records the prefix the snapshot needs.

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

        detached = transcript_plan.detached() if transcript_plan is not None else None
        # with the growing lists detached what is left is small: encoded afresh, since the
        # incremental cache may hold encodings with those lists inline (from the snapshots
        # taken at turn boundaries)
        cache = thread_cache(thread) if detached is None else None
        tdoc = snapshot_chain(thread, bottom, externals=externals, cache=cache, detached=detached)
        ext = tdoc.pop("externals", {})
        doc["config"] = ext["config"] if "config" in ext else _jsonable(rec.config)
        doc["transcript"] = ext["transcript"] if "transcript" in ext else _jsonable(rec.transcript)
        doc["harnpy_encoding"] = "tagged"
        tdoc["pending_slot"] = pending_slot
        tdoc["external_names"] = sorted(ext)
        doc["harnpy_thread"] = tdoc
        if transcript_plan is not None:
            doc["transcript_file"] = transcript_plan.record()
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
    path: str,
    doc: dict[str, Any],
    *,
    durable: bool = True,
    runtime: Any = None,
    transcript_plan: Any = None,
    explain: bool = True,
    rec: WorkerRecord | None = None,
) -> None:
    """Write a worker snapshot atomically (temp file, fsync when ``durable``, rename, mode
    0600) after checking the 4 MiB cap. With ``rec`` it is that worker's checkpoint and is
    committed through the store interface (:func:`~harnpy.lifecycle.claims.commit_document`:
    under the worker's claim when it resumed here); without, a plain copy (a daemon's
    ``daemon.json``). With a ``transcript_plan`` its new transcript
    entries are appended (and fsynced) first, so the renamed snapshot never refers to a
    prefix that is not on disk. ``explain=False`` leaves the biggest parts out of the
    E403 message (the caller writes a reduced document instead; naming them walks the whole
    document).

    Raises:
        SnapshotError: ``E403`` naming the biggest parts when the document is too big.
        OSError: the file cannot be written (or another process's claim holds it).
    """
    from harnpy.runtime.snapshot import write_atomic

    text = _dumps(doc)
    size = len(text)
    if size > MAX_SNAPSHOT_BYTES:
        parts = "; largest parts: " + ", ".join(largest_parts(doc, runtime)) if explain else ""
        raise SnapshotError(
            f"worker snapshot of {doc.get('id')} is {size} bytes, over the "
            f"{MAX_SNAPSHOT_BYTES}-byte (4 MiB) limit{parts}",
            "E403",
        )
    if transcript_plan is not None:
        transcript_plan.write(durable)
    if rec is not None:
        rows = transcript_plan.append() if transcript_plan is not None else None
        commit_document(rec, path, text, doc, durable=durable, transcript=rows)
    else:
        write_atomic(path, text, max_bytes=None, fsync=durable)
    if transcript_plan is not None and runtime is not None:
        transcript_plan.commit(runtime)


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
    from harnpy.lifecycle import transcript_store

    path = rec.snapshot_path
    plan = None
    # the I/O messages name the snapshot file or store row once it is known (before that,
    # the store itself may be what failed, and its error names it)
    target = f"worker {rec.id}"
    try:
        path = _target_path(runtime, rec)
        target = f"worker {rec.id} to {path}"
        if thread is not None:
            plan = transcript_store.plan(runtime, path, rec.transcript, st)
        doc = build_document(
            runtime,
            rec,
            thread=thread,
            bottom=bottom,
            pending_slot=pending_slot,
            st=st,
            transcript_plan=plan,
        )
        try:
            write_document(
                path,
                doc,
                durable=durable,
                runtime=runtime,
                transcript_plan=plan,
                explain=not reduce,
                rec=rec,
            )
        except SnapshotError as e:
            if not reduce or e.code != "E403":
                raise
            doc, dropped = reduced_document(doc)
            write_document(path, doc, durable=durable, runtime=runtime, rec=rec)
            runtime.write_err(
                f"harnpy: warning: the final snapshot of worker {rec.id} ({rec.status}) was "
                f"over the 4 MiB limit; saved without {dropped} ({path})\n"
            )
    except SnapshotError as e:
        raise runtime_error(f"cannot snapshot worker {rec.id}: {e.message}") from None
    except OSError as e:
        if required:
            raise runtime_error(
                f"cannot write the checkpoint of {target}: {e.strerror or e}"
            ) from None
        warned = _cache(runtime, "io_warned")
        if target not in warned:
            warned[target] = True
            runtime.write_err(
                f"harnpy: warning: cannot write the checkpoint of {target}: {e.strerror or e}\n"
            )
        return False
    if isinstance(doc.get("harnpy_thread"), dict):  # a park: keep the code it runs
        from harnpy.runtime.sources import persist_sources

        if is_store_ref(path):
            try:
                store, key = checkpoint_for(path, runtime)
            except StoreError as e:
                store, key = None, ""
                runtime.write_err(f"harnpy: warning: {e.message}\n")
            problems = persist_sources(runtime, doc, store=store, checkpoint_id=key)
        else:
            problems = persist_sources(runtime, doc, snapshot_path=path)
        for problem in problems:
            runtime.write_err(f"harnpy: warning: {problem} (a resume then needs the same files)\n")
    if doc.get("status") != "running":
        if plan is not None and plan.fresh and not is_store_ref(path):
            # a new transcript generation: the files of earlier ones are no longer needed
            transcript_store.sweep(path, plan.new.name)
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
    if not rec.carry.get("persist_state", True) and not _checkpoint_exists(rec):
        return
    try:
        persist(runtime, rec, durable=False, reduce=rec.status != "running")
    except HarnError as e:
        if rec.status != "running":  # a settled worker whose final state was not saved
            runtime.write_err(f"harnpy: warning: {e.message}\n")


def _read_stored(ref: str) -> bytes:
    """The body of store checkpoint ``ref`` (the park while a resume holds it).

    Raises:
        SnapshotLoadError: no such checkpoint, the store cannot be reached, or the row
            fails the store's checks.
    """
    try:
        store, key = checkpoint_for(ref)
        got = store.get_checkpoint(key)
    except StoreError as e:
        raise SnapshotLoadError(e.message) from None
    if got is None:
        raise SnapshotLoadError("no such checkpoint in the store")
    return got[1]


def _checkpoint_exists(rec: WorkerRecord) -> bool:
    """Whether ``rec``'s checkpoint (file or store row) exists."""
    ref = rec.snapshot_path
    if not ref:
        return False
    if not is_store_ref(ref):
        return os.path.exists(ref)
    try:
        store, key = checkpoint_for(ref, rec.runtime)
        return store.checkpoint_info(key) is not None
    except StoreError:
        return False


def read_document(path: str) -> tuple[dict[str, Any], bytes]:
    """Read and validate a worker snapshot (a file path: a regular file within the size
    cap; a store reference ``<url>#<id>``: the store's row, at most 4 MiB), its seal,
    JSON, format version, config mode, the
    envelope shape :class:`~harnpy.lifecycle.documents.WorkerSnapshotDoc` — every field a
    resume reads — and the embedded evaluator snapshot's envelope). Never modifies the file.

    Raises:
        SnapshotLoadError: the cause, worded for ``HARN-SUS-004``.
    """
    from harnpy.lifecycle.documents import WorkerSnapshotDoc
    from harnpy.runtime.snapshot import validate_document
    from harnpy.security import FileTooLarge, read_capped
    from harnpy.shapes import ShapeError, structure

    if is_store_ref(path):
        raw = _read_stored(path)
    else:
        try:
            raw = read_capped(path, MAX_SNAPSHOT_BYTES)
        except FileTooLarge as e:
            raise SnapshotLoadError(
                f"snapshot is {e.size} bytes, over the {MAX_SNAPSHOT_BYTES}-byte limit"
            ) from None
        except OSError as e:
            raise SnapshotLoadError(e.strerror or str(e)) from None
    if not raw.strip():
        raise SnapshotLoadError("the file is empty")
    try:
        doc = _loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        if b'"_type":"agent_handle"' in raw[:512].replace(b" ", b""):
            # a worker handle saved by a script (never sealed): say so, without parsing it
            raise SnapshotLoadError(
                "a worker handle (_type='agent_handle'), not a worker snapshot: resume the "
                "snapshot its `snapshot_path` names"
            ) from None
        raise SnapshotLoadError(str(e)) from None
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
    if is_store_ref(path):
        # a row's body must be its own worker's: another worker's (sealed) body copied into
        # this row would resume that worker's park a second time under this row's claim
        key = split_store_ref(path)[1]
        if doc.get("id") != key:
            raise SnapshotLoadError(
                f"the checkpoint row {key} holds the snapshot of worker {doc.get('id')!r}"
            )
    tdoc = doc.get("harnpy_thread")
    if tdoc is not None:
        try:
            validate_document(tdoc, "embedded evaluator snapshot")
        except SnapshotError as e:
            raise SnapshotLoadError(e.message) from None
    return doc, raw


def resolve_links(path: str) -> str:
    """The file a resume of ``path`` claims: a symbolic link is followed to its target (so
    every name of a snapshot claims the same file; issue 13 point 2), except that a link
    inside the worker state directory must point inside it.

    Raises:
        SnapshotLoadError: a link out of the state directory.
    """
    if not os.path.islink(path):
        return path
    from harnpy.lifecycle.workers import state_dir

    real = os.path.realpath(path)
    here = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    states = os.path.realpath(state_dir())
    if here == states and os.path.dirname(real) != states:
        raise SnapshotLoadError(
            f"`{path}` is a link out of the worker state directory ({states}) to `{real}`; "
            "refusing to follow it"
        )
    return real


def canonical_snapshot(path: str, doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The file a resume of the snapshot read from ``path`` must claim, and its document:
    every name of one worker's snapshot claims the same file (lifecycle.md 10
    "exactly-once"; issue 13 point 2).

    * a symbolic link: its target (:func:`resolve_links`);
    * the worker's own snapshot file (``snapshot_path``, relative to the working directory)
      when it exists and is another name of the same file (a hard link) or another file of
      the same worker — a daemon's ``<persist_path>/daemon.json`` copy, or a hard link
      whose first rewrite left it holding the old park: the own file decides;
    * a file with several hard links and no own file to resolve them is refused (each
      name could be claimed on its own).

    Raises:
        SnapshotLoadError: a link out of the state directory, several hard links, or the
            worker's own file is unreadable.
    """
    if is_store_ref(path):
        return path, doc  # a row has one name
    real = resolve_links(path)
    if real != path:
        path = real
        doc, _ = read_document(path)
    own = doc.get("snapshot_path")
    if type(own) is str and own and os.path.exists(own):
        own = resolve_links(own)
        if os.path.samefile(own, path):
            return own, doc
        own_doc, _ = read_document(own)
        if own_doc.get("id") == doc.get("id") or doc.get("_type") == DAEMON_SNAPSHOT_TYPE:
            return own, own_doc
    try:
        links = os.stat(path).st_nlink
    except OSError:
        links = 1
    if links > 1:
        raise SnapshotLoadError(
            f"`{path}` has {links} names (hard links) and the worker's own snapshot "
            f"`{own}` is not one of them: resume it through one name only"
        )
    return path, doc


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
