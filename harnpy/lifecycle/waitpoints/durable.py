"""Parking a program on a durable waitpoint and resuming it, through the store.

Park (the main program's ``waitpoint_wait`` on an open waitpoint, with a store):

1. with a timeout, a *timer* waitpoint is created (key ``<wait key>:timeout``,
   ``timeout_at_ms`` the deadline, metadata ``kind: "timeout"``);
2. the whole program is snapshotted (the same document ``__snapshot_exit`` writes, sealed)
   with ``extra.waitpoint_park`` = ``{target, park_id, wait_id, ids, single, timer,
   timeout_ms}`` and committed as the checkpoint ``prog-<run id>`` (status ``suspended``,
   mode ``program``, reason ``waitpoint``) — the first park inserts it, a later one commits
   under the claim this process resumed it with (its fence);
3. the program is recorded as a waiter of each waitpoint (and of the timer) at this park;
4. the waitpoints are read again: when they are final already (a completion that came in
   between the first check and the commit), this process claims its own checkpoint and
   goes on at once; otherwise it exits with status 3 (``SnapshotExit``).

Either order works because every step is its own transaction and a completion is one
conditional update: a completer that commits before step 3 is seen by step 4; one that
commits after it sees the waiter and whoever resumes claims the checkpoint — exactly one
claim wins (``claim_checkpoint`` takes a suspended row at that park with no live claim).

Resume (:func:`resume_checkpoint`): the park is *ready* when every waitpoint it waits on
is completed, or one is cancelled / timed out, or its timer timed out. The resumer claims
the checkpoint (a fence, a lease renewed by a :class:`~.state.LeaseKeeper`), restores the
program in a fresh runtime, puts the wait's result into the call's result slot (or raises
the WaitpointCancelledError / WaitpointTimeoutError at the call) and runs it. When it ends,
its outcome is committed under the fence (status ``completed`` / ``failed``; a park again
commits the new park); a commit after another process took over is refused (``Fenced``),
so outcomes are committed exactly once while the code between two parks runs at least
once. A resume that cannot restore the program gives its claim back: the park stays as it
was.
"""

from __future__ import annotations

import os
import shlex
import uuid
from dataclasses import dataclass
from typing import Any

from harnpy.lifecycle.waitpoints.builtins import readiness, store_record
from harnpy.lifecycle.waitpoints.model import iso_ms, timeout_error
from harnpy.lifecycle.waitpoints.state import LeaseKeeper, checkpoint_lease_ms, state_of
from harnpy.runtime.errors import HarnError, HarnThrow, SnapshotExit, plain_error, runtime_error

__all__ = [
    "CannotPark",
    "MODE",
    "SHUTDOWN_REASON",
    "ResumeResult",
    "checkpoint_ready",
    "park",
    "park_for_shutdown",
    "park_ready",
    "resume_checkpoint",
    "resume_ready",
    "resume_waiters",
    "settle",
    "time_out_due",
]

#: ``checkpoints.mode`` of a parked program.
MODE = "program"
#: ``checkpoints.reason`` of a program parked because its process was stopping: ready at
#: once (nothing to wait for), it goes on wherever it is resumed.
SHUTDOWN_REASON = "shutdown"
#: Largest JSON of a final value kept in the outcome document (bytes); bigger: dropped.
_MAX_OUTCOME_VALUE = 256 * 1024


def _holder() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _owner() -> dict[str, Any]:
    import socket

    return {"pid": os.getpid(), "host": socket.gethostname()}


def _store_error(e: Exception) -> HarnError:
    msg = getattr(e, "message", str(e))
    return runtime_error(f"waitpoint store: {msg}", "E411")


# ------------------------------------------------------------------ park


class CannotPark(Exception):
    """The program's state cannot be snapshotted now (a value that is not snapshot data,
    such as a running task, E402): the wait goes on in this process, polling the store."""


def _outcome(store: Any, pk: dict[str, Any]) -> tuple[str, Any] | None:
    """The result of a park's wait as it is in the store now (None: not over).

    With a timeout, whichever came first on the store clock wins, whenever a resumer looks:
    the waitpoints finishing (every one completed, or the first cancelled) at or before
    the deadline give their value or error; finishing after it (a late completion, before
    any poller fired the timer) or not at all by then is ``WaitpointTimeoutError``, and the
    timer is marked ``timed_out`` (a timer fired by a poller after an earlier completion
    does not turn that completion into a timeout)."""
    ids = list(pk["ids"])
    recs = [store_record(store, i) for i in ids]
    r = readiness(pk["wait_id"], ids, bool(pk["single"]), recs)
    t = store.get_waitpoint(pk["timer"]) if pk.get("timer") else None
    if t is None or t.timeout_at_ms is None:
        return r
    deadline = int(t.timeout_at_ms)
    if r is not None:
        when = _finished_at(store, ids, r[0] == "value")
        if when is None or when <= deadline:
            return r
    elif t.status != "timed_out" and store.now_ms() < deadline:
        return None
    if t.status == "open":
        store.time_out_waitpoint(t.id)
    return "throw", timeout_error(pk["wait_id"], ids, pk.get("timeout_ms"))


def _finished_at(store: Any, ids: list[str], completed: bool) -> int | None:
    """When (store clock, ms) the waitpoints ``ids`` ended a wait: the last completion
    when every one completed, else the first cancellation or timeout; None when unknown."""
    times: list[int] = []
    for i in ids:
        rec = store.get_waitpoint(i)
        if rec is None or rec.completed_at_ms is None:
            continue
        if completed or rec.status in ("cancelled", "timed_out"):
            times.append(int(rec.completed_at_ms))
    if not times:
        return None
    return max(times) if completed else min(times)


def _main_name(rt: Any) -> str | None:
    m = rt.main_module
    return os.path.basename(m.path) if m is not None else None


def park(
    thread: Any, store: Any, wait_key: str, ids: list[str], single: bool, ms: int | None
) -> Any:
    """Park the main program on ``ids`` (module docstring); returns the wait's value when
    the waitpoints turned final meanwhile and this process won its own checkpoint back.

    Raises:
        SnapshotExit: parked (the process ends with status 3).
        HarnThrow: the wait's error, when it ended while parking.
        HarnError: the program cannot be snapshotted (E402, named), the store failed
            (E411) or this process's claim was lost (E412).
    """
    from harnpy.runtime.snapshot import SnapshotError
    from harnpy.store import CheckpointMeta, ClaimRefused, Fenced, StoreError

    rt = thread.runtime
    st = state_of(rt)
    run_id = st.ensure_run_id()
    worker_id = st.worker_id()
    st.checkpoint_id = worker_id
    park_id = f"park_{uuid.uuid4().hex[:16]}"
    timer = None
    deadline_ms: int | None = None
    try:
        if ms is not None:
            # the store's clock, not this host's: every replica agrees when the wait is over
            deadline_ms = store.now_ms() + ms
            trec, _ = store.create_waitpoint(
                submission_key=f"{wait_key}:timeout",
                run_id=run_id,
                worker_id=worker_id,
                timeout_at_ms=deadline_ms,
                metadata={"kind": "timeout", "wait_id": wait_key, "timeout_ms": ms},
            )
            timer = trec.id
    except StoreError as e:
        raise _store_error(e) from None
    pk = {
        "target": thread.pending_target,
        "park_id": park_id,
        "wait_id": wait_key,
        "ids": list(ids),
        "single": single,
        "timer": timer,
        "timeout_ms": ms,
    }
    try:
        snap, body, rows = _snapshot_park(thread, worker_id, {"waitpoint_park": pk})
    except SnapshotError as e:
        if e.code == "E402":  # e.g. a live task: wait in this process instead
            if timer is not None:
                _cancel_timer(store, pk)
            raise CannotPark(e.message) from None
        raise plain_error(
            f"Runtime error: waitpoint_wait: cannot park the program: {e.message}", e.code
        ) from None
    wake = [f"waitpoint {i}" for i in ids]
    if deadline_ms is not None:
        wake.append(f"timeout {iso_ms(deadline_ms)}")
    meta = CheckpointMeta(
        status="suspended",
        park_id=park_id,
        name=_main_name(rt),
        mode=MODE,
        reason="waitpoint",
        run_id=run_id,
        wake=wake,
    )
    waiters = [*ids, *([timer] if timer else [])]
    try:  # the checkpoint and its waiter rows commit together (nothing strands a park)
        _commit_park(thread, store, worker_id, snap, body, meta, rows, waiters)
        outcome = _outcome(store, pk)
    except Fenced as e:
        st.settled = True
        raise runtime_error(f"waitpoint_wait: {e.message}", "E412") from None
    except StoreError as e:
        raise _store_error(e) from None
    ref = store.checkpoint_ref(worker_id)
    if outcome is not None:
        try:
            lease = checkpoint_lease_ms()
            claim = store.claim_checkpoint(
                worker_id, _holder(), park_id=park_id, lease_ms=lease, owner=_owner()
            )
        except ClaimRefused:
            raise SnapshotExit(ref) from None  # another process resumes it
        except StoreError as e:
            raise _store_error(e) from None
        st.fence = claim.fence
        st.keeper = LeaseKeeper(store, worker_id, claim.fence, lease)
        _cancel_timer(store, pk)
        kind, v = outcome
        if kind == "throw":
            raise HarnThrow(v)
        return v
    thread.runtime.write_err(
        f"harnpy: parked on waitpoint{'s' if len(ids) > 1 else ''} {', '.join(ids)} "
        f"(checkpoint {ref}); "
        + (
            f"complete it with `harnpy waitpoint complete {shlex.quote(ids[0])} JSON`"
            if len(ids) == 1
            else "complete each with `harnpy waitpoint complete ID JSON`"
        )
        + ", then `harnpy waitpoint resume`\n"
    )
    raise SnapshotExit(ref)


def park_for_shutdown(thread: Any) -> None:
    """Park the running main program at this instruction boundary because its process is
    stopping (``harnpy serve`` on SIGTERM): the whole program is checkpointed with reason
    :data:`SHUTDOWN_REASON` (ready at once) and ``SnapshotExit`` raised, so another process
    resumes it mid-function instead of re-running it from its last park. Returns without
    parking when the program cannot be snapshotted now (a live task, E402) or the store
    refuses the commit: the program runs on and its process decides (it interrupts it).

    Raises:
        SnapshotExit: parked.
        HarnError: E412 when this process's claim on the run or its checkpoint was lost.
    """
    from harnpy.runtime.snapshot import SnapshotError
    from harnpy.store import CheckpointMeta, Fenced, StoreError

    rt = thread.runtime
    st = state_of(rt)
    try:
        store = st.store()
    except StoreError:
        return
    if store is None or st.settled:
        return
    run_id = st.ensure_run_id()
    worker_id = st.worker_id()
    park_id = f"park_{uuid.uuid4().hex[:16]}"
    try:
        snap, body, rows = _snapshot_park(
            thread, worker_id, {"shutdown_park": {"park_id": park_id}}
        )
    except SnapshotError:
        return
    meta = CheckpointMeta(
        status="suspended",
        park_id=park_id,
        name=_main_name(rt),
        mode=MODE,
        reason=SHUTDOWN_REASON,
        run_id=run_id,
        wake=["at once (its process stopped)"],
    )
    try:
        _commit_park(thread, store, worker_id, snap, body, meta, rows, [])
    except Fenced as e:
        st.settled = True
        raise runtime_error(f"shutdown park: {e.message}", "E412") from None
    except StoreError:
        return
    st.checkpoint_id = worker_id
    raise SnapshotExit(store.checkpoint_ref(worker_id))


def _snapshot_park(thread: Any, worker_id: str, extra: dict[str, Any]) -> tuple[Any, bytes, Any]:
    """``(snapshot, sealed body, rows plan)`` of the program on ``thread`` parking as
    checkpoint ``worker_id`` with ``extra``: the lists that grow every turn are detached and
    appended as rows, not rewritten (:mod:`.park_rows`; the plan is None when there are
    none).

    Raises:
        SnapshotError: the program cannot be snapshotted (E402 for a live task...)."""
    from harnpy.lifecycle.waitpoints import park_rows
    from harnpy.runtime.snapshot import seal_document, snapshot

    rt = thread.runtime
    rows = park_rows.plan(thread, worker_id, state_of(rt))
    if rows is not None:
        extra = {**extra, "transcript_rows": rows.record()}
    try:
        snap = snapshot(thread, extra, detached=None if rows is None else rows.detached)
    finally:
        park_rows.unpin(rt)
    return snap, seal_document(snap), rows


def _commit_park(
    thread: Any,
    store: Any,
    worker_id: str,
    snap: Any,
    body: bytes,
    meta: Any,
    rows: Any,
    waiters: list[str],
) -> None:
    """Commit a park (:func:`_snapshot_park`'s output) as checkpoint ``worker_id``: the code
    it runs first (any replica may resume it), then the checkpoint with its rows and waiter
    rows in one transaction — under this process's claim when it resumed the program (the
    claim is given up for it: a failed commit leaves the park to be claimed again once its
    lease ends), else as the first checkpoint while the served run's claim
    holds (``run_fence``).

    Raises:
        Fenced: a claim was lost; StoreError: the store failed (nothing committed)."""
    from harnpy.runtime.sources import persist_sources

    st = state_of(thread.runtime)
    append = None if rows is None else rows.append()
    persist_sources(thread.runtime, snap, store=store, checkpoint_id=worker_id)
    if st.fence is not None:
        fence, st.fence = st.fence, None
        st.release()
        store.put_checkpoint(worker_id, body, meta, fence=fence, waiters=waiters, transcript=append)
    else:
        store.put_checkpoint(
            worker_id,
            body,
            meta,
            expect_version=None,
            waiters=waiters,
            run_fence=st.run_fence,
            transcript=append,
        )
    if rows is not None:
        rows.commit(st)


def checkpoint_ready(store: Any, info: Any) -> bool:
    """Whether the parked program of checkpoint ``info`` (a ``CheckpointInfo``) can be
    resumed now: parked by a stopping process (:data:`SHUTDOWN_REASON`), or its wait is
    over (:func:`park_ready`)."""
    if info.status != "suspended":
        return False
    if info.reason == SHUTDOWN_REASON:
        return info.park_id is not None
    return park_ready(store, info.worker_id, info.park_id)


def _cancel_timer(store: Any, pk: dict[str, Any]) -> None:
    if pk.get("timer"):
        try:
            store.cancel_timer(pk["timer"])
        except Exception:  # noqa: BLE001 - a leftover timer only shows in `waitpoint ls`
            pass


# ------------------------------------------------------------------ settle


def settle(rt: Any, status: str, value: Any = None, error: str | None = None) -> None:
    """Commit the outcome of a run that holds a claim on its checkpoint (it resumed from
    a park): ``completed`` with its final value, or ``failed`` with the error message.
    A run that never parked, or settled already, is left alone. A lost claim is reported on
    stderr (another process took the run over; nothing is written)."""
    st = getattr(rt, "waitpoint_state", None)
    if st is None or st.fence is None or st.settled or st.checkpoint_id is None:
        return
    from harnpy.runtime.snapshot import seal_document
    from harnpy.stdlib.jsonlib import to_json_data
    from harnpy.store import CheckpointMeta, Fenced, StoreError

    st.settled = True
    fence, st.fence = st.fence, None
    st.release()
    data = to_json_data(value)
    import json

    if len(json.dumps(data, default=str)) > _MAX_OUTCOME_VALUE:
        data = None
    doc = {
        "_type": "harnpy_program_outcome",
        "run_id": st.run_id,
        "status": status,
        "value": data,
        "error": error,
    }
    meta = CheckpointMeta(
        status=status,
        name=_main_name(rt),
        mode=MODE,
        reason=None if error is None else error.splitlines()[0][:200],
        run_id=st.run_id,
    )
    try:
        store = st.store()
        store.put_checkpoint(st.checkpoint_id, seal_document(doc), meta, fence=fence)
    except Fenced as e:
        rt.write_err(f"harnpy: {e.message}\n")
    except StoreError as e:
        rt.write_err(f"harnpy: the outcome of run {st.run_id} was not committed: {e.message}\n")


def _on_finish(rt: Any, value: Any) -> Any:
    settle(rt, "completed", value)
    return value


from harnpy.runtime import extensions as _ext  # noqa: E402

_ext.PROGRAM_FINISH.append(_on_finish)


# ------------------------------------------------------------------ resume


@dataclass
class ResumeResult:
    """What one resume did: ``status`` ``completed`` / ``failed`` / ``parked`` (parked
    again) / ``refused`` (the program could not be restored; the park is left as it was) /
    ``error`` (an internal error; the park is left as it was); ``message`` for the last
    three; ``exit_code`` the code ``harnpy run`` would have exited with."""

    worker_id: str
    status: str
    message: str | None = None
    exit_code: int = 0


def park_ready(store: Any, worker_id: str, park_id: str | None) -> bool:
    """Whether the park ``park_id`` of ``worker_id`` can be resumed: the waitpoints it
    waits on (read from their waiter rows) are all completed, or one is cancelled / timed
    out, or its timer timed out."""
    if park_id is None:
        return False
    recs = [r for r in store.waitpoints_of(worker_id) if (worker_id, park_id) in r.waiters]
    if not recs:
        return False
    real = [r for r in recs if (r.metadata or {}).get("kind") != "timeout"]
    timers = [r for r in recs if (r.metadata or {}).get("kind") == "timeout"]
    if any(r.status in ("cancelled", "timed_out") for r in real):
        return True
    if any(t.status == "timed_out" for t in timers):
        return True
    return bool(real) and all(r.status == "completed" for r in real)


def _check_park(doc: Any) -> dict[str, Any]:
    from harnpy.runtime.snapshot import SnapshotError

    pk = (doc.get("extra") or {}).get("waitpoint_park") if isinstance(doc, dict) else None
    ok = (
        isinstance(pk, dict)
        and type(pk.get("target")) is int
        and isinstance(pk.get("ids"), list)
        and pk["ids"]
        and all(type(i) is str for i in pk["ids"])
        and type(pk.get("wait_id")) is str
        and type(pk.get("single")) is bool
        and (pk.get("timer") is None or type(pk["timer"]) is str)
        and (pk.get("timeout_ms") is None or type(pk["timeout_ms"]) is int)
    )
    if not ok:
        raise SnapshotError("the checkpoint is not a program parked on a waitpoint", "E404")
    return pk  # type: ignore[return-value]


def resume_checkpoint(
    store: Any,
    worker_id: str,
    *,
    llm_options: dict[str, Any] | None = None,
    stdout: Any = None,
    stderr: Any = None,
    lease_ms: int | None = None,
) -> ResumeResult | None:
    """Resume the program parked as checkpoint ``worker_id`` when its wait is over and this
    process wins the claim (module docstring). Returns None when there is nothing to do (not
    a parked program, not ready, or another process holds or took the claim).

    The program runs here, in a fresh runtime (``stdout`` / ``stderr``: its sinks; default
    the process's), until it ends or parks again, under a claim of ``lease_ms`` (ms; default
    :func:`~.state.checkpoint_lease_ms`) renewed every third of it."""
    from harnpy.runtime.resume import load_document_for_resume
    from harnpy.runtime.runtime import Runtime
    from harnpy.runtime.snapshot import SnapshotError, open_document, validate_document
    from harnpy.store import ClaimRefused, StoreError

    info = store.checkpoint_info(worker_id)
    if info is None or info.status != "suspended" or info.mode != MODE:
        return None
    if not checkpoint_ready(store, info):
        return None
    lease = checkpoint_lease_ms() if lease_ms is None else max(300, lease_ms)
    try:
        claim = store.claim_checkpoint(
            worker_id, _holder(), park_id=info.park_id, lease_ms=lease, owner=_owner()
        )
    except ClaimRefused:
        return None
    keeper = LeaseKeeper(store, worker_id, claim.fence, lease)
    ref = store.checkpoint_ref(worker_id)

    def give_back(status: str, message: str) -> ResumeResult:
        keeper.stop()
        try:
            store.release_checkpoint_claim(worker_id, claim.fence)
        except StoreError:
            pass  # the lease expires and the park is claimable again
        return ResumeResult(worker_id, status, message, 2 if status == "refused" else 1)

    rt = Runtime(stdout=stdout, stderr=stderr)
    if llm_options:
        rt.llm_cli_options = dict(llm_options)
    try:
        doc = open_document(claim.body, f"checkpoint {ref}")
        validate_document(doc, ref)
        shutdown = _shutdown_park(doc, info.park_id)
        pk = None if shutdown else _check_park(doc)
        rows_rec = (doc.get("extra") or {}).get("transcript_rows")
        hashers: dict[str, Any] = {}
        if rows_rec is not None:
            from harnpy.lifecycle.waitpoints.park_rows import load_rows

            lists, hashers = load_rows(store, worker_id, rows_rec)
            doc["externals"] = {**(doc.get("externals") or {}), **lists}
        th = load_document_for_resume(
            doc, os.path.join(os.getcwd(), ".harn", "checkpoint"), rt, store=store
        )
        frame = th.frame
        if frame is None or (
            pk is not None and (frame.native or not 0 <= pk["target"] < len(frame.slots))
        ):
            raise SnapshotError("the checkpoint's waiting call is not where it says", "E404")
        outcome = None if pk is None else _outcome(store, pk)
        if pk is not None and outcome is None:  # not after park_ready, unless undone by hand
            return give_back("refused", f"{ref}: its wait is not over")
    except SnapshotError as e:
        return give_back("refused", f"{ref}: error[{e.code}]: {e.message}")
    except HarnError as e:
        return give_back("refused", f"{ref}: error[{e.code}]: {e.message}")
    except StoreError as e:
        return give_back("error", e.message)
    except Exception as e:  # noqa: BLE001 - DiagnosticError (a module does not compile) or a bug
        render = getattr(e, "render", None)
        return give_back("refused", f"{ref}: {render() if callable(render) else e}")
    st = state_of(rt)
    st.use_store(store)
    st.checkpoint_id = worker_id
    if rows_rec is not None:
        from harnpy.lifecycle.waitpoints.park_rows import remember_restored

        remember_restored(th, worker_id, rows_rec, hashers, st)
    st.fence = claim.fence
    st.keeper = keeper
    if pk is not None and outcome is not None:
        _cancel_timer(store, pk)
        kind, v = outcome
        if kind == "value":
            frame.slots[pk["target"]] = v
        else:
            th.pending_error = HarnThrow(v)
    return _run_resumed(rt, th, worker_id)


def _shutdown_park(doc: Any, park_id: str | None) -> bool:
    """Whether ``doc`` is a program parked by a stopping process (:func:`park_for_shutdown`)
    at ``park_id``; False for a waitpoint park."""
    from harnpy.runtime.snapshot import SnapshotError

    sp = (doc.get("extra") or {}).get("shutdown_park") if isinstance(doc, dict) else None
    if sp is None:
        return False
    if not isinstance(sp, dict) or sp.get("park_id") != park_id:
        raise SnapshotError("the checkpoint's shutdown park is not the stored park", "E404")
    return True


def _run_resumed(rt: Any, th: Any, worker_id: str) -> ResumeResult:
    from harnpy.runtime import extensions
    from harnpy.runtime.errors import HarnExit, HarnInterrupt, render_error

    try:
        value = rt.scheduler.run_until(th)
        for finish in extensions.PROGRAM_FINISH:
            value = finish(rt, value)
    except SnapshotExit:
        return ResumeResult(worker_id, "parked", None, 3)
    except HarnExit as e:
        settle(rt, "completed" if e.code == 0 else "failed", None, f"exit({e.code})")
        return ResumeResult(worker_id, "completed" if e.code == 0 else "failed", None, e.code)
    except HarnError as e:
        modules = rt.modules

        def source_of(path: str) -> str | None:
            mod = modules.get(path)
            return None if mod is None else mod.source  # type: ignore[no-any-return]

        text = render_error(e, source_of)
        rt.write_err(text + "\n")
        settle(rt, "failed", None, e.message)
        return ResumeResult(worker_id, "failed", e.message, 1)
    except (HarnInterrupt, KeyboardInterrupt):
        st = state_of(rt)
        st.release()
        raise
    except Exception as e:  # noqa: BLE001 - a harnpy bug: give the claim back, park intact
        st = state_of(rt)
        fence = st.fence
        st.release()
        st.fence = None
        store = st.store()
        if fence is not None and store is not None:
            try:
                store.release_checkpoint_claim(worker_id, fence)
            except Exception:  # noqa: BLE001
                pass
        return ResumeResult(worker_id, "error", f"internal error: {type(e).__name__}: {e}", 1)
    return ResumeResult(worker_id, "completed", None, 0)


def time_out_due(store: Any) -> int:
    """Mark every timer waitpoint whose deadline passed ``timed_out``; returns how many.
    Deadlines are read against the store's clock (the database's on PostgreSQL), as they
    were set, so replicas whose host clocks disagree fire a timeout at the same moment."""
    n = 0
    for wid in store.due_waitpoint_timeouts(store.now_ms()):
        if store.time_out_waitpoint(wid):
            n += 1
    return n


def resume_waiters(store: Any, waitpoint_id: str, **kwargs: Any) -> list[ResumeResult]:
    """Resume (here) the programs parked on ``waitpoint_id`` whose wait is over."""
    rec = store.get_waitpoint(waitpoint_id)
    out: list[ResumeResult] = []
    for worker_id, _ in rec.waiters if rec is not None else []:
        r = resume_checkpoint(store, worker_id, **kwargs)
        if r is not None:
            out.append(r)
    return out


def resume_ready(store: Any, **kwargs: Any) -> list[ResumeResult]:
    """One pass over the store: time out due timers, then resume (here, one after another)
    every parked program whose wait is over and whose claim this process wins. What a
    replica loop calls."""
    time_out_due(store)
    out: list[ResumeResult] = []
    for info in store.list_checkpoints(("suspended",)):
        if info.mode != MODE:
            continue
        r = resume_checkpoint(store, info.worker_id, **kwargs)
        if r is not None:
            out.append(r)
    return out
