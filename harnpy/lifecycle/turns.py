"""Turn boundaries: the points where an agent loop's whole state is consistent data.

``__turn_boundary(st)`` ends every agent turn (``std/agent/_loop``). There:

* the thread blocks as data for one scheduling round (a timer due now wakes it after every
  other ready thread ran), so workers interleave at turn boundaries;
* a suspend request queued on the worker record (``WorkerRecord.suspend_request``, set by
  ``suspend_agent``) is handed to the loop as ``st.suspend_request``, which parks there;
* with ``HARNPY_SNAPSHOT_EVERYWHERE=1`` the thread's frame chain is snapshotted
  (:mod:`harnpy.runtime.snapshot`), serialized to JSON text, decoded and put back into the
  running thread, so every turn proves that the loop state is snapshot data. A value that
  cannot be snapshotted fails the turn with ``E402`` naming the variable that holds it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from harnpy.lifecycle.services import services
from harnpy.runtime.errors import plain_error
from harnpy.runtime.scheduler import block_control
from harnpy.stdlib.registry import builtin

SNAPSHOT_ENV = "HARNPY_SNAPSHOT_EVERYWHERE"


def snapshot_everywhere() -> bool:
    """True when ``HARNPY_SNAPSHOT_EVERYWHERE=1`` asks for a round trip at every boundary."""
    return os.environ.get(SNAPSHOT_ENV, "") not in ("", "0")


def roundtrip_thread(thread: Any) -> dict[str, Any]:
    """Snapshot ``thread``, encode the document as JSON text, decode it and replace the
    thread's frames by the decoded ones (module globals and other threads are untouched).

    Must run inside a control builtin (the calling frame's resume point is saved). Returns
    the document (for tests and diagnostics).

    Raises:
        HarnRuntimeError: ``E402``/``E404`` from the snapshot layer, prefixed
            ``snapshot at turn boundary failed``.
    """
    from harnpy.runtime.code import Frame
    from harnpy.runtime.snapshot import SnapshotError, _Decoder, dumps, snapshot

    try:
        doc = json.loads(dumps(snapshot(thread)))
        decoder = _Decoder(doc, thread.runtime.modules, thread)
        top = doc["thread"]["top"]
        frame = decoder.dec(top) if top is not None else None
    except SnapshotError as exc:
        raise plain_error(
            f"Runtime error: snapshot at turn boundary failed: {exc.message}", exc.code
        ) from None
    for obj in decoder.heap:
        if type(obj) is Frame:
            obj.thread = thread
    thread.frame = frame
    thread.depth = int(doc["thread"]["depth"])
    return doc  # type: ignore[no-any-return]


def yield_with(thread: Any, value: Any, describe: str) -> None:
    """Block ``thread`` (inside a control builtin) and resume it with ``value`` once every
    thread that is ready now has had its turn."""
    rt = thread.runtime
    waker = block_control(thread, describe)
    rt.scheduler.at(rt.clock.monotonic_ms(), lambda: waker.wake(value))


@builtin("__turn_boundary", control=True)
def turn_boundary(thread: Any, st: Any = None) -> Any:
    """``__turn_boundary(st)``: the end of an agent turn (module docstring). Returns ``st``
    (with ``suspend_request`` set when the worker was asked to suspend)."""
    rt = thread.runtime
    wid = getattr(thread, "worker_id", None)
    if wid is not None and type(st) is dict:
        rec = services(rt).workers.get(wid)
        if rec is not None and rec.suspend_request is not None:
            st = {**st, "suspend_request": rec.suspend_request}
            rec.suspend_request = None
    if snapshot_everywhere():
        roundtrip_thread(thread)
    yield_with(thread, st, "turn boundary")
    return None
