"""Cold restore of a parked worker: the loop frames of a thread, compiling the modules a
snapshot needs, rebuilding the thread and attaching it to its record."""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle._common import LOOP_MODULE
from harnpy.lifecycle.services import services
from harnpy.lifecycle.workers import (
    WorkerRecord,
    finished,
)
from harnpy.runtime.errors import HarnError, runtime_error
from harnpy.runtime.snapshot import SnapshotError


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


def source_lookup(snapshot_path: str) -> Any:
    """Where a worker resume finds stored module sources: beside the snapshot, and in the
    store ``HARNPY_STORE`` names (opened only when a source is not stored beside it). A
    checkpoint in an SQL store (``<url>#<id>``) finds them in that store."""
    from harnpy.lifecycle.checkpoint_store import checkpoint_for, is_store_ref
    from harnpy.runtime.sources import SourceLookup

    if is_store_ref(snapshot_path):
        return SourceLookup(None, lambda: checkpoint_for(snapshot_path)[0])

    def configured() -> Any:
        from harnpy.store import configured_store_url, open_store

        url = configured_store_url()
        if url is None or url.kind not in ("sqlite", "postgresql"):
            return None
        return open_store(url)

    return SourceLookup(snapshot_path, configured)


def ensure_modules(
    runtime: Any,
    tdoc: dict[str, Any],
    snapshot_path: str,
    *,
    fresh: bool,
    lookup: Any = None,
) -> set[str]:
    """Compile (without running) every module the embedded snapshot needs that ``runtime``
    has not loaded; returns their keys (their globals come from the snapshot). A ``fresh``
    runtime (``harnpy run --resume``) takes the snapshot's main module as its own. A module
    whose file changed or is gone is compiled from its stored copy (``lookup``,
    :func:`source_lookup`); a fresh runtime that opted into the new code
    (:func:`harnpy.runtime.resume.upgrade_requested`) compiles the current files.

    Raises:
        SnapshotError: a source cannot be found or changed and is not stored.
    """
    from harnpy.runtime.resume import (
        checked_source,
        compile_records,
        current_source,
        source_pins,
        upgrade_requested,
    )

    lookup = lookup if lookup is not None else source_lookup(snapshot_path)
    upgrade = fresh and upgrade_requested(runtime)
    records = [r for r in tdoc["modules"] if isinstance(r, dict)]
    pins = source_pins(records, snapshot_path, lookup, upgrade=upgrade)
    saved_pins = runtime.source_pins
    runtime.source_pins = pins

    def source_of(rec: dict[str, Any]) -> tuple[str, str]:
        if upgrade:
            return current_source(rec, snapshot_path, lookup)  # type: ignore[no-any-return]
        return checked_source(rec, snapshot_path, lookup)  # type: ignore[no-any-return]

    try:
        return compile_records(runtime, records, source_of, main_is_main=fresh)  # type: ignore[no-any-return]
    finally:
        runtime.source_pins = saved_pins


def precheck_sources(runtime: Any, doc: dict[str, Any], snapshot_path: str) -> None:
    """Before claiming a snapshot: every non-``std`` module it needs can be found with the
    recorded source hash, as a file or a stored copy (so a resume refused for a changed
    source writes nothing). A fresh runtime that opted into the new code checks the upgrade
    instead (:func:`harnpy.runtime.resume.upgraded_document`, on a scratch runtime).

    Raises:
        SnapshotError: ``E406`` naming the module (or the changed function on the stack).
    """
    from harnpy.runtime.resume import checked_source, upgrade_requested

    tdoc = doc.get("harnpy_thread")
    if not isinstance(tdoc, dict):
        return
    lookup = source_lookup(snapshot_path)
    records = [r for r in tdoc.get("modules") or [] if isinstance(r, dict)]
    if upgrade_requested(runtime) and not any(r.get("key") in runtime.modules for r in records):
        from harnpy.runtime.resume import upgraded_document
        from harnpy.runtime.runtime import Runtime

        scratch = Runtime(stdout=lambda _t: None, stderr=lambda _t: None)
        scratch.upgrade_code = True
        full = _with_externals(doc)
        ensure_modules(scratch, full, snapshot_path, fresh=True, lookup=lookup)
        upgraded_document(full, scratch, snapshot_path, lookup)
        return
    for rec in records:
        key = rec.get("key", "")
        if key.startswith("std/"):
            continue
        live = runtime.modules.get(key)
        if live is None:
            checked_source(rec, snapshot_path, lookup)
        elif live.hash != rec.get("hash"):
            raise other_version_error(rec, live.hash, snapshot_path, lookup)


def other_version_error(
    rec: dict[str, Any], live_hash: str, snapshot_path: str, lookup: Any
) -> Any:
    """The ``E406`` refusal of an in-process resume (``resume_agent``, ``daemon_resume``)
    of a snapshot that ran another version of a module this process has loaded (the file
    was edited between the park and the start of this process): one process runs one
    version of a module, so the message says how to resume it in a new one (``harnpy run
    --resume``: the code it parked with, or ``--upgrade-code``); when not even the stored
    copy of the code it ran is there, :func:`~harnpy.runtime.resume.changed_source_error`.
    """
    from harnpy.runtime.resume import changed_source_error
    from harnpy.runtime.snapshot import SnapshotError

    path = str(rec.get("path") or rec.get("key"))
    want = str(rec.get("hash") or "")
    if lookup is None or lookup.get(want, path) is None:
        return changed_source_error(path, lookup.refused if lookup is not None else None)
    return SnapshotError(
        f"the worker parked on another version of {path} (sha256 {want[:12]}…) than this "
        f"process has loaded ({live_hash[:12]}…: the file was edited since), and a process "
        "runs one version of a module; resume it in a new process: `harnpy run --resume "
        f"{snapshot_path}` runs the code it parked with (its stored copy), `--upgrade-code` "
        "the current file when the functions it is inside did not change (the snapshot file "
        "is left as it was)",
        "E406",
    )


def _with_externals(doc: dict[str, Any]) -> dict[str, Any]:
    """The embedded thread snapshot of worker document ``doc`` with its externals (the
    transcript and config kept at the top of the worker file) put back in."""
    tdoc = dict(doc["harnpy_thread"])
    names = tdoc.get("external_names") or []
    tdoc["externals"] = {n: doc.get(n) for n in names}
    return tdoc


def restore_thread(
    runtime: Any, rec: WorkerRecord, doc: dict[str, Any], path: str, *, fresh: bool
) -> Any:
    """Rebuild ``rec``'s parked thread from snapshot ``doc`` (modules compiled as needed,
    ``config`` / ``transcript`` decoded into ``rec`` sharing the frames' objects; a
    transcript kept in a file beside the snapshot is read and checked against the hash the
    snapshot records). The thread is not scheduled yet.

    Raises:
        SnapshotError: incompatible snapshot (changed source, missing module...) or damaged
            data (frames, a transcript that is not a :class:`~harnpy.lifecycle.documents.
            TranscriptRecord`).
    """
    from harnpy.runtime.resume import upgrade_requested, upgraded_document
    from harnpy.runtime.snapshot import restore

    tdoc = _with_externals(doc)
    names = tdoc.get("external_names") or []
    log = None
    if doc.get("transcript_file") is not None:
        # the transcript's lists live in the file beside the snapshot (transcript_store)
        from harnpy.lifecycle import transcript_store

        lists, log = transcript_store.load(path, doc["transcript_file"])
        tdoc["externals"].update(lists)
    lookup = source_lookup(path)
    new = ensure_modules(runtime, tdoc, path, fresh=fresh, lookup=lookup)
    if fresh and upgrade_requested(runtime):
        tdoc = upgraded_document(tdoc, runtime, path, lookup)
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
        if log is None:
            # (a transcript file beside the snapshot is checked by transcript_store.load)
            check_messages(rec.transcript["messages"])
    if log is not None:
        from harnpy.lifecycle import transcript_store

        transcript_store.remember_restored(runtime, path, log, dec.external)
    if th.frame is None:
        raise SnapshotError("the embedded snapshot has no frames", "E404")
    check_loop_states(th.frame)
    slot = tdoc.get("pending_slot", -1)
    if not isinstance(slot, int) or not -1 <= slot < len(th.frame.slots):
        raise SnapshotError("the embedded snapshot's pending slot is out of range", "E404")
    th.pending_slot = slot
    return th


def check_messages(messages: list[Any]) -> None:
    """Check every message of a restored transcript as the agent loop will read it (the
    LLM message shape: a role, content, well-formed tool calls), so a damaged message is a
    load error, not a worker that fails on its next turn and overwrites its park.

    Raises:
        SnapshotError: ``E404`` naming the message and the problem.
    """
    from harnpy.llm.errors import LlmError
    from harnpy.llm.options import coerce_message

    for i, m in enumerate(messages):
        try:
            coerce_message(m, f"messages[{i}]")
        except LlmError as e:
            raise SnapshotError(
                f"the worker's transcript is malformed: {e.message}", "E404"
            ) from None


def check_loop_states(top: Any) -> None:
    """Check every ``agent_loop_state`` a restored frame (``top`` and its callers) holds in
    a slot against :class:`~harnpy.lifecycle.documents.AgentLoopStateRecord`.

    Raises:
        SnapshotError: ``E404`` naming the frame and the first bad key.
    """
    from harnpy.lifecycle.documents import AgentLoopStateRecord
    from harnpy.shapes import ShapeError, structure

    fr = top
    seen = 0
    while fr is not None and seen < 100_000:
        seen += 1
        for v in getattr(fr, "slots", ()):
            if type(v) is dict and "pending_calls" in v and "iteration" in v:
                if v.get("_type") != "agent_loop_state":  # a loop state lost its tag
                    raise SnapshotError(
                        f"the agent loop state in {fr.code.name} is damaged: its `_type` "
                        "is not agent_loop_state",
                        "E404",
                    )
            if type(v) is dict and v.get("_type") == "agent_loop_state":
                try:
                    structure(v, AgentLoopStateRecord)
                except ShapeError as e:
                    raise SnapshotError(
                        f"the agent loop state in {fr.code.name} is damaged: {e}", "E404"
                    ) from None
                from harnpy.llm.errors import LlmError
                from harnpy.llm.options import build_request
                from harnpy.llm.types import ToolSpec

                # the options every turn builds its request from: checked as a turn would
                opts = {k: x for k, x in v["llm_options"].items() if k != "messages"}
                try:
                    build_request("", None, opts, where="agent_loop")
                except LlmError as e:
                    raise SnapshotError(
                        f"the agent loop state in {fr.code.name} is damaged: {e.message}",
                        "E404",
                    ) from None

                for tool in v["tools"]:
                    try:
                        ToolSpec.coerce(tool)  # as the loop offers it to the model
                    except LlmError as e:
                        raise SnapshotError(
                            f"the agent loop state in {fr.code.name} is damaged: {e.message}",
                            "E404",
                        ) from None
        fr = fr.parent


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
