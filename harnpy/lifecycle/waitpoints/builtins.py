"""The waitpoint builtins: ``waitpoint_create``, ``waitpoint_wait``, ``waitpoint_complete``,
``waitpoint_cancel`` (``std/waitpoint`` wraps them as ``create`` / ``wait`` / ``complete``
/ ``cancel``).

Without a store (no ``--store`` / ``HARNPY_STORE``) waitpoints live in the runtime: a wait
blocks its task until another task completes or cancels the waitpoint (or the timeout
passes), and they are snapshot data (``__snapshot_exit`` carries them). With an SQL store
they are rows of the store, shared by every process on it: a wait of the main program on
an open waitpoint *parks* the program (:mod:`harnpy.lifecycle.waitpoints.durable`: the
whole program is checkpointed into the store, the process exits with status 3, and
whoever resumes it after the completion continues right after the wait); a wait in a
spawned task or an agent worker polls the store instead.
"""

from __future__ import annotations

from typing import Any

from harnpy.lifecycle.waitpoints.model import (
    cancelled_error,
    handle_ids,
    iso_ms,
    record_value,
    timeout_error,
    timeout_ms,
)
from harnpy.lifecycle.waitpoints.state import site_key, state_of
from harnpy.runtime.errors import HarnError, HarnThrow, runtime_error, type_error
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib.registry import builtin

__all__ = ["readiness"]

#: How often a wait that cannot park (a spawned task, a worker) polls the store (ms).
POLL_MS = 200


def _now_ms(thread: Any) -> int:
    clock = thread.runtime.clock
    return int(clock.now_ms()) if clock is not None else 0


def _store_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    from harnpy.store import StoreError, TimerWaitpoint

    try:
        return fn(*args, **kwargs)
    except TimerWaitpoint as e:  # the store is fine: this waitpoint is not to be finished
        raise runtime_error(f"waitpoint: {e.message}", "E413") from None
    except StoreError as e:
        raise runtime_error(f"waitpoint store: {e.message}", "E411") from None


def _store(thread: Any) -> Any:
    from harnpy.store import StoreError

    try:
        return state_of(thread.runtime).store()
    except StoreError as e:
        raise runtime_error(f"waitpoint store: {e.message}", "E411") from None


def readiness(
    wait_id: str, ids: list[str], single: bool, records: list[dict[str, Any] | None]
) -> tuple[str, Any] | None:
    """Whether a wait on ``ids`` is over: ``("value", waitpoint or list)`` when every
    waitpoint completed, ``("throw", error dict)`` when one was cancelled or timed out (or
    is unknown), None while some is still open."""
    for wid, rec in zip(ids, records, strict=True):
        if rec is None:
            return "throw", cancelled_error(wait_id, ids, wid, "no such waitpoint")
        if rec["status"] == "cancelled":
            return "throw", cancelled_error(wait_id, ids, wid, rec.get("reason"))
        if rec["status"] == "timed_out":
            return "throw", timeout_error(wait_id, ids, None)
    if all(r is not None and r["status"] == "completed" for r in records):
        return "value", (records[0] if single else list(records))
    return None


def _deliver(outcome: tuple[str, Any]) -> Any:
    kind, v = outcome
    if kind == "throw":
        raise HarnThrow(v)
    return v


# ------------------------------------------------------------------ create


def _create_options(v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if type(v) is str:
        if not v:
            raise runtime_error("waitpoint_create: the id must not be empty")
        return {"id": v}
    if type(v) is dict:
        for k in ("id", "key"):
            if v.get(k) is not None and (type(v[k]) is not str or not v[k]):
                raise type_error(f"waitpoint_create: {k} must be a non-empty string")
        meta = v.get("metadata")
        if meta is not None and type(meta) is not dict:
            raise type_error("waitpoint_create: metadata must be a dict")
        return dict(v)
    raise type_error("waitpoint_create: give nothing, an id (string) or {id?, key?, metadata?}")


@builtin("waitpoint_create", control=True)
def waitpoint_create(thread: Any, id_or_options: Any = None) -> Any:
    """``waitpoint_create(id_or_options?)``: create a waitpoint and return it (a dict ``{id,
    status, created_at, completed_at, cancelled_at, completed_by, cancelled_by, value,
    reason, metadata, key}``). The argument is nothing, an id, or ``{id?, key?,
    metadata?}``. Creation is idempotent: the same ``id``, or the same submission ``key``,
    returns the existing waitpoint. Without either, the key is derived from the run, the
    frames on the stack and the call site (and how many times this call ran), so a run
    resumed or retried from its checkpoint gets the waitpoint it created before instead of
    a second one. With a store (``--store`` / ``HARNPY_STORE``) the waitpoint is a store row
    any process can complete (``harnpy waitpoint complete ID JSON``); without one it lives
    in this program."""
    from harnpy.stdlib.jsonlib import to_json_data

    opts = _create_options(id_or_options)
    st = state_of(thread.runtime)
    key = opts.get("key")
    derived = site_key(thread, "create")
    if key is None and opts.get("id") is None:
        key = derived
    meta = opts.get("metadata")
    store = _store(thread)
    if store is not None:
        rec, _ = _store_call(
            store.create_waitpoint,
            waitpoint_id=opts.get("id"),
            submission_key=key,
            run_id=st.ensure_run_id(),
            metadata={"kind": "waitpoint", "user": to_json_data(meta) if meta else None},
        )
        out = record_value(rec)
        if out["metadata"] is not None:
            out["metadata"] = _harn(out["metadata"])
        return out
    if key is not None and key in st.by_key:
        return dict(st.memory[st.by_key[key]])
    wid = opts.get("id")
    if wid is not None and wid in st.memory:
        return dict(st.memory[wid])
    if wid is None:
        import uuid

        wid = f"wp_{uuid.uuid4().hex}"
    rec_v: dict[str, Any] = {
        "id": wid,
        "status": "open",
        "created_at": iso_ms(_now_ms(thread)),
        "completed_at": None,
        "cancelled_at": None,
        "completed_by": None,
        "cancelled_by": None,
        "value": None,
        "reason": None,
        "metadata": meta,
        "key": key,
    }
    st.memory[wid] = rec_v
    if key is not None:
        st.by_key[key] = wid
    return dict(rec_v)


def _harn(v: Any) -> Any:
    from harnpy.stdlib.jsonlib import from_json_data

    return from_json_data(v)


def store_record(store: Any, wid: str) -> dict[str, Any] | None:
    """The script-side dict of waitpoint ``wid`` in ``store`` (its value as a Harn value),
    or None when there is no such waitpoint."""
    rec = store.get_waitpoint(wid)
    if rec is None:
        return None
    out = record_value(rec)
    out["value"] = _harn(out["value"])
    if out["metadata"] is not None:
        out["metadata"] = _harn(out["metadata"])
    return out


# ------------------------------------------------------------------ complete / cancel


def _terminal_options(name: str, options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if type(options) is not dict:
        raise type_error(f'{name}: options must be a dict like {{by: "reviewer", reason: ...}}')
    for k in ("by", "reason"):
        if options.get(k) is not None and type(options[k]) is not str:
            raise type_error(f"{name}: {k} must be a string")
    return options


def _finish(thread: Any, name: str, waitpoint: Any, status: str, value: Any, options: Any) -> Any:
    from harnpy.stdlib.jsonlib import to_json_data

    ids, single = handle_ids(name, waitpoint)
    if not single:
        raise type_error(f"{name}: give one waitpoint (its id or the dict), not a list")
    wid = ids[0]
    opts = _terminal_options(name, options)
    by = opts.get("by")
    st = state_of(thread.runtime)
    store = _store(thread)
    if store is not None:
        if status == "completed":
            _store_call(store.complete_waitpoint, wid, to_json_data(value), by=by)
        else:
            _store_call(store.cancel_waitpoint, wid, error={"reason": opts.get("reason")}, by=by)
        rec = _store_call(store_record, store, wid)
        if rec is None:
            raise runtime_error(f"{name}: no waitpoint {wid}")
        return rec
    rec_m = st.memory.get(wid)
    if rec_m is None:
        raise runtime_error(f"{name}: no waitpoint {wid}")
    if rec_m["status"] == "open":
        at = iso_ms(_now_ms(thread))
        rec_m["status"] = status
        if status == "completed":
            rec_m.update(completed_at=at, completed_by=by, value=value)
        else:
            rec_m.update(cancelled_at=at, cancelled_by=by, reason=opts.get("reason"))
        if opts.get("metadata") is not None:
            rec_m["metadata"] = opts["metadata"]
        for check in list(st.waiters.pop(wid, [])):
            check()
    return dict(rec_m)


@builtin("waitpoint_complete")
def waitpoint_complete(
    thread: Any, waitpoint: Any = None, value: Any = None, options: Any = None
) -> Any:
    """``waitpoint_complete(waitpoint, value?, options?)``: complete an open waitpoint with
    ``value`` (with a store: JSON data) and wake what waits on it; returns the waitpoint as
    it is now. Completing a waitpoint that is no longer open changes nothing (of two
    completions exactly one wins; the returned ``status`` / ``value`` say which).
    ``options``: ``{by?: string, metadata?: dict}``. An unknown id is an error."""
    return _finish(thread, "waitpoint_complete", waitpoint, "completed", value, options)


@builtin("waitpoint_cancel")
def waitpoint_cancel(thread: Any, waitpoint: Any = None, options: Any = None) -> Any:
    """``waitpoint_cancel(waitpoint, options?)``: cancel an open waitpoint; its waits throw
    a ``WaitpointCancelledError`` (``{name, category: "cancelled", message, wait_id,
    waitpoint_ids, reason}``). ``options``: ``{by?: string, reason?: string}``. Returns
    the waitpoint as it is now; cancelling one that is no longer open changes nothing."""
    return _finish(thread, "waitpoint_cancel", waitpoint, "cancelled", None, options)


# ------------------------------------------------------------------ wait


@builtin("waitpoint_wait", control=True)
def waitpoint_wait(thread: Any, waitpoints: Any = None, options: Any = None) -> Any:
    """``waitpoint_wait(waitpoints, options?)``: wait until the waitpoint (an id or the dict
    ``waitpoint_create`` returned) — or every waitpoint of a list (fan-in) — is completed,
    and return it (the list of them for a list). A cancelled waitpoint makes the wait throw
    a ``WaitpointCancelledError``; ``{timeout: 1h}`` makes it throw a
    ``WaitpointTimeoutError`` (``{name, category: "timeout", message, wait_id,
    waitpoint_ids}``) when the time passes first. Several waits may wait on one waitpoint
    (fan-out). With a store, the main program *parks* on an open waitpoint: its whole state
    is checkpointed into the store and the process exits with status 3; after the
    waitpoint is completed (from any process), ``harnpy waitpoint resume`` (or a worker on
    the store) continues it right after this call with every local variable intact."""
    ids, single = handle_ids("waitpoint_wait", waitpoints)
    ms = timeout_ms("waitpoint_wait", options)
    wait_key = site_key(thread, "wait")
    st = state_of(thread.runtime)
    store = _store(thread)
    if store is None:
        return _wait_memory(thread, st, wait_key, ids, single, ms)
    records = [_store_call(store_record, store, i) for i in ids]
    outcome = readiness(wait_key, ids, single, records)
    if outcome is not None:
        return _deliver(outcome)
    rt = thread.runtime
    if (
        thread is rt.main_thread
        and thread.name != "init"
        and rt.snapshot_exit_refusal is None
        and ms != 0
    ):
        from harnpy.lifecycle.waitpoints.durable import CannotPark, park

        try:
            return park(thread, store, wait_key, ids, single, ms)
        except CannotPark as e:
            rt.write_err(
                f"harnpy: warning: waitpoint_wait cannot park the program ({e}); it waits in "
                "this process instead (the wait ends with the process)\n"
            )
    return _wait_polling(thread, store, wait_key, ids, single, ms)


def _wait_memory(
    thread: Any, st: Any, wait_key: str, ids: list[str], single: bool, ms: int | None
) -> Any:
    def current() -> tuple[str, Any] | None:
        recs = [dict(st.memory[i]) if i in st.memory else None for i in ids]
        return readiness(wait_key, ids, single, recs)

    outcome = current()
    if outcome is not None:
        return _deliver(outcome)
    if ms == 0:
        raise HarnThrow(timeout_error(wait_key, ids, ms))
    _hint_nothing_completes(thread, st, ids, ms)
    waker = block_control(thread, f"waitpoint {', '.join(ids)}")
    cancel_timer: list[Any] = []

    def done(result: tuple[str, Any]) -> None:
        for i in ids:
            lst = st.waiters.get(i)
            if lst is not None and check in lst:
                lst.remove(check)
        for c in cancel_timer:
            c()
        if result[0] == "value":
            waker.wake(result[1])
        else:
            waker.fail(HarnThrow(result[1]))

    def check() -> None:
        if waker.done:
            return
        r = current()
        if r is not None:
            done(r)
        else:  # still open: keep waiting on the others (re-register where it was popped)
            for i in ids:
                lst = st.waiters.setdefault(i, [])
                if check not in lst:
                    lst.append(check)

    for i in ids:
        st.waiters.setdefault(i, []).append(check)
    if ms is not None:
        sched = thread.runtime.scheduler
        clock = thread.runtime.clock

        def fire() -> None:
            if not waker.done:
                done(("throw", timeout_error(wait_key, ids, ms)))

        cancel_timer.append(sched.at(clock.monotonic_ms() + ms, fire))
    return None


def _hint_nothing_completes(thread: Any, st: Any, ids: list[str], ms: int | None) -> None:
    """The main program waits in memory (no store) while nothing else in it runs: no task,
    no worker, no model call in flight. Nothing can complete the waitpoint then (no other
    process can, without a store): say so once on stderr, with what to do. A timeout under
    a minute is taken as meant (a program that polls, a test)."""
    rt = thread.runtime
    sched = rt.scheduler
    if ms is not None and ms < 60_000:
        return
    if thread is not rt.main_thread or st.hinted:
        return
    if sched.ready or sched.futures or any(t is not thread for t in sched.blocked):
        return
    st.hinted = True
    until = "until the process is stopped" if ms is None else f"until it times out ({ms} ms)"
    rt.write_err(
        f"harnpy: warning: waiting on waitpoint {', '.join(ids)} in memory {until}: nothing "
        "else in this program runs to complete it and no store is configured, so no other "
        "process can; set HARNPY_STORE (or --store) to park the program durably and complete "
        "it with `harnpy waitpoint complete ID JSON`\n"
    )


def _wait_polling(
    thread: Any, store: Any, wait_key: str, ids: list[str], single: bool, ms: int | None
) -> Any:
    """A wait that cannot park (a spawned task, an agent worker, the REPL): block the task
    and poll the store every :data:`POLL_MS` ms."""
    if ms == 0:
        raise HarnThrow(timeout_error(wait_key, ids, ms))
    waker = block_control(thread, f"waitpoint {', '.join(ids)}")
    sched = thread.runtime.scheduler
    clock = thread.runtime.clock
    start = clock.monotonic_ms()

    def poll() -> None:
        if waker.done:
            return
        try:
            recs = [store_record(store, i) for i in ids]
        except HarnError as e:
            waker.fail(e)
            return
        except Exception as e:  # noqa: BLE001 - a store error: the wait fails with it
            waker.fail(runtime_error(f"waitpoint store: {e}", "E411"))
            return
        r = readiness(wait_key, ids, single, recs)
        if r is None and ms is not None and clock.monotonic_ms() - start >= ms:
            r = ("throw", timeout_error(wait_key, ids, ms))
        if r is None:
            sched.at(clock.monotonic_ms() + POLL_MS, poll)
        elif r[0] == "value":
            waker.wake(r[1])
        else:
            waker.fail(HarnThrow(r[1]))

    sched.at(clock.monotonic_ms() + POLL_MS, poll)
    return None
