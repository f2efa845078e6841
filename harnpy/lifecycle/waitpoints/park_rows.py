"""A parked program's growing lists as transcript rows in the store, appended per park.

A program parked on a durable waitpoint inside an agent loop used to write its whole
transcript into every checkpoint: the bytes of a park grew with the transcript and a park
was refused past the 4 MiB checkpoint cap (~6,000 messages). The lists that grow with every
turn are stored apart instead, as rows of the store's ``transcript_rows`` table committed
with the checkpoint (:class:`~harnpy.store.records.TranscriptAppend`, the same transaction
as the checkpoint and its waiter rows), each park appending only the entries that are new
since the last park of this run:

* of every agent loop on the main thread's stack (``loop<k>``, ``k`` counted from the
  bottom of the stack): its transcript's ``messages`` (stream ``loop<k>.m``) and
  ``events`` (``loop<k>.e``: a ``message`` event derived from its message is stored as
  ``["E", i]``) and the loop's tool-call ``records`` (``.r``) and ``text_parts`` (``.t``)
  — the lists :func:`harnpy.lifecycle.transcript_store.streams_of` names;
* the mock provider's call log (``mock.calls``, runtime state ``llm_mock``): part of the
  program's state — a resumed run's ``llm_mock_calls()`` answers with every call — and
  it grows with every model call;
* the run's ``agent_trace()`` events (``agent.trace``, runtime state ``agent_trace``:
  :func:`harnpy.lifecycle.structured_calls.trace_events`), which grow with every turn of
  an agent loop (model calls, tool executions...).

Each row's body is ``[tag, value]`` in the snapshot encoding, self-contained
(:func:`~harnpy.runtime.snapshot.encode_standalone`). The snapshot refers to each list as
``{"$ext": name}`` (:func:`~harnpy.runtime.snapshot.snapshot` ``detached``) and records
``extra.transcript_rows = {generation, streams: {name: count}, sha256: {name: hex}}``,
the SHA-256 of each stream's row bodies joined by newlines: the checkpoint's seal covers
the rows too, and a resume refuses rows that were changed, lost or added to (``E404``).

This process remembers the entry objects it stored (or restored): the lists are immutable
values, so a list that extends the stored one holds the very same objects first (checked
by identity, at C speed). A list that does not (a transcript replaced or compacted, a loop
that ended and another that started) starts a new *generation*: all lists are written
again and the rows of older generations are dropped in the same transaction. A list with
an entry that is not self-contained snapshot data (a closure that holds a frame...) is
left inside the checkpoint, as before.
"""

from __future__ import annotations

import hashlib
import operator
import uuid
from dataclasses import dataclass, field
from typing import Any

from harnpy.runtime.snapshot import SnapshotError

__all__ = [
    "MOCK_CALLS",
    "TRACE",
    "RowsPlan",
    "collect",
    "load_rows",
    "plan",
    "remember_restored",
    "unpin",
]

#: Name of the mock provider's call log among the detached lists.
MOCK_CALLS = "mock.calls"
#: Name of the run's agent trace among the detached lists.
TRACE = "agent.trace"
#: Row tag of the entries of the lists that are not a loop's (a mock call record, a trace
#: event); a loop's list ``loop<k>.<tag>`` has the tag its name ends with.
_TAGS = {MOCK_CALLS: "c", TRACE: "a"}


@dataclass
class _Stored:
    """What this process committed (or restored) of one checkpoint's rows."""

    worker_id: str
    generation: str
    #: list name -> the entry objects stored, in order
    lists: dict[str, list[Any]]
    hashers: dict[str, Any]


@dataclass
class RowsPlan:
    """The rows one park appends (:func:`plan`): ``detached`` goes to the snapshot,
    :meth:`append` to ``put_checkpoint``, :meth:`record` into the document's ``extra``;
    :meth:`commit` once the checkpoint is committed."""

    worker_id: str
    generation: str
    fresh: bool
    lists: dict[str, list[Any]]
    rows: list[tuple[str, int, bytes]]
    hashers: dict[str, Any]
    mock_calls: list[Any] | None = None
    #: the trace list detached (pinned for the snapshot's runtime state), if any
    trace: list[Any] | None = None
    #: older copies of the lists that frames hold (:func:`collect`)
    prefixes: dict[str, Any] = field(default_factory=dict)
    #: bytes of the new row bodies (what this park adds to the transcript)
    size: int = field(default=0)

    @property
    def detached(self) -> dict[str, Any]:
        """The lists the snapshot refers to as ``{"$ext": name}`` instead of encoding them."""
        return {**self.lists, **self.prefixes}

    def append(self) -> Any:
        """The :class:`~harnpy.store.records.TranscriptAppend` committed with the park."""
        from harnpy.store import TranscriptAppend

        return TranscriptAppend(self.generation, list(self.rows), drop_others=self.fresh)

    def record(self) -> dict[str, Any]:
        """``extra.transcript_rows`` of the snapshot (module docstring)."""
        return {
            "generation": self.generation,
            "streams": {n: len(lst) for n, lst in self.lists.items()},
            "sha256": {n: h.hexdigest() for n, h in self.hashers.items()},
        }

    def commit(self, wstate: Any) -> None:
        """The checkpoint holding these rows committed: remember what is stored."""
        wstate.rows = _Stored(
            self.worker_id,
            self.generation,
            {n: list(lst) for n, lst in self.lists.items()},
            self.hashers,
        )


def _loop_states(thread: Any) -> list[list[dict[str, Any]]]:
    """Per agent loop on ``thread``'s stack (bottom first): the loop state dicts held by
    its frames — the loop's own frame and those it called up to the next loop's (while a
    tool runs the loop frame still holds the state of the turn before; the tool call's
    frames hold the current one)."""
    from harnpy.lifecycle.restore import _is_loop_frame

    frames = []
    fr = getattr(thread, "frame", None)
    while fr is not None:
        frames.append(fr)
        fr = fr.parent
    loops: list[list[dict[str, Any]]] = []
    seen: set[int] = set()
    for fr in reversed(frames):
        if _is_loop_frame(fr):
            loops.append([])
        if not loops or fr.native:
            continue
        for v in fr.slots:
            if type(v) is dict and v.get("_type") == "agent_loop_state" and id(v) not in seen:
                seen.add(id(v))
                loops[-1].append(v)
    return loops


def collect(
    thread: Any, mock_calls: list[Any] | None, trace: list[Any] | None = None
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The growing lists of the program on ``thread`` by name (module docstring), each a
    distinct list object (``mock_calls``, ``trace``: the call log and the trace events as
    the snapshot's runtime state will hold them), and the older copies of them that frames still hold (each the
    first entries of one of them: :class:`~harnpy.runtime.snapshot.DetachedPrefix`, by a
    name of their own)."""
    from harnpy.lifecycle.transcript_store import streams_of
    from harnpy.runtime.snapshot import DetachedPrefix

    out: dict[str, list[Any]] = {}
    prefixes: dict[str, Any] = {}
    seen: set[int] = set()
    for k, states in enumerate(_loop_states(thread)):
        by_tag: dict[str, list[list[Any]]] = {}
        for st in states:
            for tag, lst in streams_of(st.get("transcript"), st).items():
                if id(lst) not in seen:
                    seen.add(id(lst))
                    by_tag.setdefault(tag, []).append(lst)
        for tag, cands in by_tag.items():
            main = max(cands, key=len)
            name = f"loop{k}.{tag}"
            out[name] = main
            for j, other in enumerate(cands):
                if other is not main and _extends(other, main):
                    prefixes[f"{name}@{j}"] = DetachedPrefix(other, name, len(other))
    if mock_calls:
        out[MOCK_CALLS] = mock_calls
    if trace:
        out[TRACE] = trace
    return out, prefixes


def _extends(old: list[Any], new: list[Any]) -> bool:
    return len(new) >= len(old) and all(map(operator.is_, old, new))


def _mock(runtime: Any) -> Any:
    from harnpy.lifecycle.services import services

    host = getattr(services(runtime), "_llm", None)
    return None if host is None else host.mock


def _body(runtime: Any, name: str, value: Any, lists: dict[str, list[Any]]) -> bytes | None:
    """The row body of ``value``, the next entry of list ``name`` (None: not standalone)."""
    from harnpy.lifecycle.transcript_store import _line, _message_event_index

    tag = _TAGS.get(name) or name.rsplit(".", 1)[1]
    if tag == "e":
        i = _message_event_index(value, lists.get(name[:-1] + "m", []))
        if i >= 0:
            return f'["E",{i}]'.encode()
    line = _line(runtime, tag, value)
    return None if line is None else line[:-1]


def plan(thread: Any, worker_id: str, wstate: Any) -> RowsPlan | None:
    """The rows a park of the program on ``thread`` (checkpoint ``worker_id``) appends,
    against what ``wstate`` (its :class:`~harnpy.lifecycle.waitpoints.state.
    WaitpointState`) remembers as stored; None when there is no list to store apart.
    Pins the mock call log and the trace it detaches for the snapshot (:func:`unpin`
    after it)."""
    from harnpy.lifecycle.structured_calls import pin_trace

    rt = thread.runtime
    mock = _mock(rt)
    calls = mock.snapshot_calls() if mock is not None else None
    trace = _trace_copy(rt)
    lists, prefixes = collect(thread, calls, trace)
    inline: set[str] = set()
    while True:
        for n in inline:
            lists.pop(n, None)
        if not lists:
            return None
        out = _plan(rt, worker_id, wstate, lists)
        if isinstance(out, RowsPlan):
            out.prefixes = {k: p for k, p in prefixes.items() if p.name in lists}
            if MOCK_CALLS in out.lists:
                out.mock_calls = calls
                from harnpy.lifecycle.services import services

                services(rt).snapshot_mock_calls = calls  # type: ignore[attr-defined]
            if TRACE in out.lists:
                out.trace = trace
                pin_trace(rt, trace)
            return out
        inline.add(out)  # that list holds an entry that is not standalone: keep it inline


def _trace_copy(runtime: Any) -> list[Any] | None:
    """The run's trace events as a new list of the same event objects (None: no trace)."""
    from harnpy.lifecycle.structured_calls import TRACE_ATTR

    events = getattr(runtime, TRACE_ATTR, None)
    return list(events) if events else None


def unpin(runtime: Any) -> None:
    """Stop pinning the mock call log and the trace (:func:`plan`)."""
    from harnpy.lifecycle.services import services
    from harnpy.lifecycle.structured_calls import TRACE_PIN_ATTR, pin_trace

    if getattr(runtime, TRACE_PIN_ATTR, None) is not None:
        pin_trace(runtime, None)
    svc = services(runtime)
    if getattr(svc, "snapshot_mock_calls", None) is not None:
        svc.snapshot_mock_calls = None  # type: ignore[attr-defined]


def _plan(rt: Any, worker_id: str, wstate: Any, lists: dict[str, list[Any]]) -> RowsPlan | str:
    old: _Stored | None = getattr(wstate, "rows", None)
    reuse = (
        old is not None
        and old.worker_id == worker_id
        and set(old.lists) == set(lists)
        and all(_extends(old.lists[n], lst) for n, lst in lists.items())
    )
    if not reuse:
        old = None
    generation = old.generation if old is not None else uuid.uuid4().hex[:16]
    rows: list[tuple[str, int, bytes]] = []
    hashers: dict[str, Any] = {}
    size = 0
    for n, lst in lists.items():
        start = len(old.lists[n]) if old is not None else 0
        h = old.hashers[n].copy() if old is not None else hashlib.sha256()
        for seq in range(start, len(lst)):
            body = _body(rt, n, lst[seq], lists)
            if body is None:
                return n
            h.update(body + b"\n")
            rows.append((n, seq, body))
            size += len(body)
        hashers[n] = h
    return RowsPlan(worker_id, generation, old is None, lists, rows, hashers, size=size)


def _bad(what: str) -> SnapshotError:
    return SnapshotError(f"the checkpoint's transcript rows {what}; refusing to resume", "E404")


def load_rows(store: Any, worker_id: str, rec: Any) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The lists a checkpoint's ``extra.transcript_rows`` record refers to, read from the
    store and checked against the record's hashes: ``(lists, hashers)``, the lists in the
    snapshot encoding by name (to put under the document's ``externals`` before restoring),
    derived message events rebuilt.

    Raises:
        SnapshotError: ``E404`` — a malformed record, rows missing, changed or damaged.
        StoreError: the store cannot be read (CorruptRecord: rows missing).
    """
    from harnpy.lifecycle.transcript_store import _derived_event
    from harnpy.runtime.snapshot import loads

    if (
        type(rec) is not dict
        or type(rec.get("generation")) is not str
        or type(rec.get("streams")) is not dict
        or type(rec.get("sha256")) is not dict
        or set(rec["streams"]) != set(rec["sha256"])
        or any(type(n) is not str for n in rec["streams"])
        or any(type(c) is not int or c < 0 for c in rec["streams"].values())
        or any(type(s) is not str for s in rec["sha256"].values())
    ):
        raise _bad("record is malformed")
    lists: dict[str, list[Any]] = {}
    hashers: dict[str, Any] = {}
    for n, count in rec["streams"].items():
        bodies = store.read_transcript(worker_id, rec["generation"], n, count)
        h = hashlib.sha256()
        for b in bodies:
            h.update(b + b"\n")
        if h.hexdigest() != rec["sha256"][n]:
            raise _bad(f"of {n} changed since the checkpoint was written (their hash differs)")
        hashers[n] = h
        tag = _TAGS.get(n) or n.rsplit(".", 1)[-1]
        out: list[Any] = []
        try:
            for b in bodies:
                entry = loads(b)
                if type(entry) is not list or len(entry) != 2:
                    raise ValueError("not a [tag, value] row")
                if entry[0] == "E" and tag == "e" and type(entry[1]) is int:
                    out.append(("E", entry[1]))
                elif entry[0] == tag:
                    out.append(entry[1])
                else:
                    raise ValueError(f"unexpected row tag {entry[0]!r} in {n}")
        except ValueError as e:
            raise _bad(f"of {n} are damaged ({e})") from None
        lists[n] = out
    for n, out in lists.items():
        if n.endswith(".e"):
            msgs = lists.get(n[:-1] + "m")
            for j, ev in enumerate(out):
                if type(ev) is tuple:
                    if msgs is None:
                        raise _bad(f"of {n} derive events from messages that are not stored")
                    out[j] = _derived_event(msgs, ev[1], f"rows {n}")
    return lists, hashers


def remember_restored(
    thread: Any, worker_id: str, rec: dict[str, Any], hashers: dict[str, Any], wstate: Any
) -> None:
    """After a restore from rows: remember the restored lists as what is stored, so the
    next park of the run appends to them. When the restored program's lists are not what
    the record names (they should be), nothing is remembered: the next park then writes a
    new generation."""
    mock = _mock(thread.runtime)
    calls = mock.snapshot_calls() if mock is not None else None
    lists, _ = collect(thread, calls, _trace_copy(thread.runtime))
    counts = rec["streams"]
    if set(lists) != set(counts) or any(len(lists[n]) != c for n, c in counts.items()):
        wstate.rows = None
        return
    wstate.rows = _Stored(
        worker_id, rec["generation"], {n: list(lst) for n, lst in lists.items()}, hashers
    )
