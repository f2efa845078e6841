"""Turn boundaries: the points where an agent loop's whole state is consistent data.

``__turn_boundary(st)`` ends every agent turn (``std/agent/_loop``). There:

* the thread blocks as data for one scheduling round (a timer due now wakes it after every
  other ready thread ran), so workers interleave at turn boundaries;
* a suspend request queued on the worker record (``WorkerRecord.suspend_request``, set by
  ``suspend_agent``) is handed to the loop as ``st.suspend_request``, which parks there;
* with ``HARNPY_SNAPSHOT_EVERYWHERE=1`` the loop's frames are snapshotted
  (:mod:`harnpy.runtime.snapshot`), serialized to JSON text, decoded into a fresh thread
  and spliced back into the running one, so every turn proves that the loop state is
  snapshot data. A value that cannot be snapshotted fails the turn with ``E402`` naming the
  variable that holds it.
"""

from __future__ import annotations

import os
from typing import Any

from harnpy.lifecycle.services import services
from harnpy.runtime.errors import HarnError, plain_error
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib.registry import builtin

SNAPSHOT_ENV = "HARNPY_SNAPSHOT_EVERYWHERE"


def snapshot_everywhere() -> bool:
    """True when ``HARNPY_SNAPSHOT_EVERYWHERE=1`` asks for a round trip at every boundary."""
    return os.environ.get(SNAPSHOT_ENV, "") not in ("", "0")


def roundtrip_thread(thread: Any) -> dict[str, Any]:
    """Snapshot the agent loop running on ``thread`` (its frames from the top down to the
    ``__agent_loop_run`` frame — the whole thread when no loop runs on it — with module
    globals), encode the document as JSON text,
    decode it into a fresh thread and splice the decoded frames back in place of the
    originals (same caller, same result slot). Module globals, the frames below the loop
    and other threads are untouched; channels, atomics and task handles keep their identity
    (they are shared with other threads).

    Must run inside a control builtin (the calling frame's resume point is saved). Returns
    the document (for tests and diagnostics).

    Raises:
        HarnRuntimeError: ``E402``/``E404`` from the snapshot layer, prefixed
            ``snapshot at turn boundary failed``.
    """
    from harnpy.lifecycle.suspend import bottom_frame, loop_frame
    from harnpy.runtime.code import Frame
    from harnpy.runtime.snapshot import (
        SnapshotError,
        _Decoder,
        dumps_bytes,
        loads,
        snapshot_chain,
    )
    from harnpy.runtime.thread import Thread

    try:
        bottom = loop_frame(thread)
    except HarnError:  # a turn boundary outside agent_loop: the whole thread
        bottom = bottom_frame(thread)
    live: list[Any] = []
    try:
        doc = loads(
            dumps_bytes(snapshot_chain(thread, bottom, live=live, cache=thread_cache(thread)))
        )
        fresh = Thread(thread.runtime, thread.name)
        decoder = _Decoder(doc, thread.runtime.modules, fresh, live)
        top = doc["thread"]["top"]
        frame = decoder.dec(top) if top is not None else None
    except SnapshotError as exc:
        raise plain_error(
            f"Runtime error: snapshot at turn boundary failed: {exc.message}", exc.code
        ) from None
    new_bottom = frame
    while new_bottom is not None and new_bottom.parent is not None:
        new_bottom = new_bottom.parent
    for obj in decoder.heap:
        if type(obj) is Frame:
            obj.thread = thread
    if new_bottom is not None:
        new_bottom.parent = bottom.parent
        new_bottom.ret_slot = bottom.ret_slot
    thread.frame = frame
    return doc  # type: ignore[no-any-return]


def thread_cache(thread: Any) -> Any:
    """The :class:`~harnpy.runtime.snapshot.SnapshotCache` of ``thread`` (successive
    snapshots of one loop re-encode only what changed)."""
    cache = getattr(thread, "snapshot_cache", None)
    if cache is None:
        from harnpy.runtime.snapshot import SnapshotCache

        cache = SnapshotCache()
        thread.snapshot_cache = cache
    return cache


def yield_with(thread: Any, value: Any, describe: str) -> None:
    """Block ``thread`` (inside a control builtin) and resume it with ``value`` once every
    thread that is ready now has had its turn."""
    rt = thread.runtime
    waker = block_control(thread, describe)
    rt.scheduler.at(rt.clock.monotonic_ms(), lambda: waker.wake(value))


@builtin("__turn_boundary", control=True)
def turn_boundary(thread: Any, st: Any = None) -> Any:
    """``__turn_boundary(st)``: the end of an agent turn (module docstring). Returns ``st``
    (with ``suspend_request`` set when the worker was asked to suspend, and the transcript
    line ``Worker suspended before the next turn: <reason>``)."""
    rt = thread.runtime
    wid = getattr(thread, "worker_id", None)
    if wid is not None and type(st) is dict:
        rec = services(rt).workers.get(wid)
        if rec is not None and rec.suspend_request is not None:
            req = rec.suspend_request
            st = {**st, "suspend_request": req}
            rec.suspend_request = None
            if not st.get("finished") and type(st.get("transcript")) is dict:
                # lifecycle.md 2.3: the loop records why it stops before the next turn
                from harnpy.lifecycle.agents import _with_transcript
                from harnpy.lifecycle.transcript import append_message

                line = f"Worker suspended before the next turn: {req.get('reason') or ''}"
                t = append_message(st["transcript"], {"role": "user", "content": line})
                st = _with_transcript(rt, st, t)
    if snapshot_everywhere():
        roundtrip_thread(thread)
    yield_with(thread, st, "turn boundary")
    return None
