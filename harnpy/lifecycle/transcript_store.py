"""A parked worker's transcript, stored once and outside its 4 MiB snapshot (issue 15).

A worker snapshot used to carry the whole transcript twice (``messages`` and their
``message`` events) and re-encode it on every park. Now the lists that grow with every turn
— the transcript's ``messages`` and ``events`` and the loop's tool-call ``records`` and
``text_parts`` — are *detached* from the snapshot (:func:`harnpy.runtime.snapshot.snapshot`
``detached``: the frames and the document refer to them as ``{"$ext": name}``, names in
:data:`STREAMS`) and live in an append-only file beside the snapshot,
``<snapshot stem>.transcript-<generation>.jsonl`` (mode 0600), one JSON line per entry:

* ``[tag, value]``: the next entry of stream ``tag`` (``m`` messages, ``e`` events, ``r``
  records, ``t`` text parts; the value in the snapshot encoding, self-contained);
* ``["E", i]``: the next event is the ``message`` event of message ``i`` (``{kind:
  "message", ...message i, index: i, visibility: "public"}``, what
  :func:`~harnpy.lifecycle.transcript.append_message` records): each message is stored
  once, its event is derived from it;
* ``["a", event]``: the next event of the run's ``agent_trace()`` (stream ``a``: the
  runtime's trace, :func:`harnpy.lifecycle.structured_calls.trace_events`). A worker
  snapshot carries no runtime state, so the trace is stored here only: a resume in
  another process (``harnpy run --resume``, ``load_agent``) puts its events back in front
  of that process's trace (:func:`remember_restored`); a resume in the process that
  parked the worker keeps its trace as it is.

A park appends only the entries that are new since the last park of this process (the
lists are immutable values: a transcript that extends the stored one keeps the very same
entry objects, checked by identity), fsyncs the file and only then renames the snapshot
into place. The snapshot records ``transcript_file = {name, bytes, lines, streams,
sha256}`` (``streams``: entries per tag) — the SHA-256 of the file's first ``bytes`` bytes — so the seal that covers the
snapshot covers the transcript too. Lines past ``bytes`` (a crash after the append, before
the rename; a resume put back) are ignored when reading and cut off before the next
append. A file that is shorter than recorded or whose prefix does not hash to the record
is refused (``SnapshotError`` E404, which the resume reports as ``HARN-SUS-004``) and left
as it is. A transcript that does not extend the stored one (replaced, compacted) starts a
new generation (a new file); files of older generations are removed once a snapshot that
no longer needs them is committed (the worker left the park that used them).

Entries that are not self-contained snapshot data (a closure holding a frame...) cannot be
stored line by line: such a transcript stays inside the snapshot, as before.
"""

from __future__ import annotations

import errno
import hashlib
import operator
import os
import re
import stat
import uuid
from dataclasses import dataclass, field
from typing import Any

from harnpy.runtime.snapshot import SnapshotError

__all__ = [
    "EVENTS",
    "MESSAGES",
    "STREAMS",
    "TranscriptPlan",
    "forget",
    "load",
    "plan",
    "remember_restored",
    "sweep",
]

#: Names of the detached transcript lists in a worker snapshot (``{"$ext": name}``).
MESSAGES = "transcript.messages"
EVENTS = "transcript.events"
#: Stream tag -> the name its detached list has in the snapshot (in file order of a batch:
#: messages before the events that derive from them).
STREAMS = {
    "m": MESSAGES,
    "e": EVENTS,
    "r": "loop.records",
    "t": "loop.text_parts",
    "a": "agent.trace",
}
#: The stream of the run's agent trace (not referred to from the snapshot's frames).
TRACE_TAG = "a"
_NAME_RE = re.compile(r"^[^/\\]+\.transcript-[0-9a-f]{8,32}\.jsonl$")


@dataclass
class _Log:
    """What this process wrote (or read) of one snapshot's transcript file."""

    name: str
    #: stream tag -> the entry objects written, in order
    lists: dict[str, list[Any]] = field(default_factory=dict)
    lines: int = 0
    size: int = 0
    hasher: Any = field(default_factory=hashlib.sha256)
    ino: tuple[int, int] | None = None


def _logs(runtime: Any) -> dict[str, _Log]:
    from harnpy.lifecycle.checkpoint_store import _cache

    return _cache(runtime, "transcript_logs")  # type: ignore[no-any-return]


def _key(snapshot_path: str) -> str:
    """What this process's logs are keyed by: a store reference as it is, a path made
    absolute."""
    from harnpy.lifecycle.checkpoint_store import is_store_ref

    return snapshot_path if is_store_ref(snapshot_path) else os.path.abspath(snapshot_path)


#: The stream of a store checkpoint's transcript rows: one row per line of the file format.
ROW_STREAM = "l"


def _stem(snapshot_path: str) -> str:
    from harnpy.lifecycle.checkpoint_store import is_store_ref, split_store_ref

    if is_store_ref(snapshot_path):
        return split_store_ref(snapshot_path)[1]
    base = os.path.basename(snapshot_path)
    return base[:-5] if base.endswith(".json") else base


def _extends(old: list[Any], new: list[Any]) -> bool:
    """Whether ``new`` starts with exactly the objects of ``old`` (identity, C speed)."""
    return len(new) >= len(old) and all(map(operator.is_, old, new))


def _message_event_index(ev: Any, messages: list[Any]) -> int:
    """``i`` when ``ev`` is the ``message`` event of ``messages[i]`` as
    :func:`~harnpy.lifecycle.transcript.append_message` builds it (same keys in the same
    order, the very same values), else -1."""
    if type(ev) is not dict or ev.get("kind") != "message" or ev.get("visibility") != "public":
        return -1
    i = ev.get("index")
    if type(i) is not int or not 0 <= i < len(messages):
        return -1
    m = messages[i]
    if type(m) is not dict or len(ev) != len(m) + 3:
        return -1
    if list(ev) != ["kind", *m, "index", "visibility"]:
        return -1
    for k, v in m.items():
        if ev[k] is not v:
            return -1
    return i


def _line(runtime: Any, tag: str, value: Any) -> bytes | None:
    from harnpy.runtime.snapshot import NOT_STANDALONE, dumps_bytes, encode_standalone

    enc = encode_standalone(runtime, value)
    if enc is NOT_STANDALONE:
        return None
    return dumps_bytes([tag, enc]) + b"\n"


@dataclass
class TranscriptPlan:
    """The entries one park appends to the transcript file (:func:`plan`); ``write`` them
    before the snapshot is renamed into place, ``commit`` once it was."""

    path: str
    snapshot_path: str
    base: _Log
    new: _Log
    data: bytes
    fresh: bool
    streams: dict[str, list[Any]]

    def detached(self) -> dict[str, Any]:
        """The lists the snapshot refers to (``{"$ext": name}``) instead of encoding them
        (the trace is in no frame: it is only stored)."""
        return {STREAMS[tag]: lst for tag, lst in self.streams.items() if tag != TRACE_TAG}

    def record(self) -> dict[str, Any]:
        """``transcript_file`` of the snapshot: ``{name, bytes, lines, streams, sha256}``."""
        return {
            "name": self.new.name,
            "bytes": self.new.size,
            "lines": self.new.lines,
            "streams": {tag: len(lst) for tag, lst in self.new.lists.items()},
            "sha256": self.new.hasher.hexdigest(),
        }

    def write(self, durable: bool = True) -> None:
        """Append the new entries (a new generation: create the file, 0600), cutting off
        whatever lies past the recorded prefix first; fsync when ``durable``.

        Raises:
            OSError: the file cannot be written (or is not a regular file).
        """
        if not self.path:
            return  # a store checkpoint: the rows commit with it (:meth:`append`)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{self.path} is not a regular file")
            if stat.S_IMODE(st.st_mode) != 0o600:
                os.fchmod(fd, 0o600)
            start = 0 if self.fresh else self.base.size
            if st.st_size != start:
                os.ftruncate(fd, start)
            os.lseek(fd, start, os.SEEK_SET)
            view = memoryview(self.data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if durable:
                os.fsync(fd)
            self.new.ino = (st.st_dev, st.st_ino)
        finally:
            os.close(fd)
        if self.fresh and durable:
            _fsync_dir(os.path.dirname(self.path))

    def append(self) -> Any:
        """The :class:`~harnpy.store.records.TranscriptAppend` a store checkpoint commits
        with (None for a file checkpoint): one row of stream :data:`ROW_STREAM` per line of
        the file format, numbered on from the committed prefix; a new generation drops the
        rows of the others."""
        if self.path:
            return None
        from harnpy.store.records import TranscriptAppend

        first = 0 if self.fresh else self.base.lines
        lines = self.data.split(b"\n")[:-1]
        return TranscriptAppend(
            generation=self.new.name,
            rows=[(ROW_STREAM, first + i, line) for i, line in enumerate(lines)],
            drop_others=self.fresh,
        )

    def commit(self, runtime: Any) -> None:
        """The snapshot referring to the new prefix is in place: remember it."""
        _logs(runtime)[_key(self.snapshot_path)] = self.new


def _fsync_dir(d: str) -> None:
    try:
        fd = os.open(d or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def streams_of(transcript: Any, st: Any = None) -> dict[str, list[Any]]:
    """The growing lists of a parked worker by stream tag: the transcript's ``messages``
    and ``events`` (both, or neither) and, from the loop state ``st``, ``records`` and
    ``text_parts`` (each a list, distinct objects)."""
    out: dict[str, list[Any]] = {}
    if type(transcript) is dict:
        ms, es = transcript.get("messages"), transcript.get("events")
        if type(ms) is list and type(es) is list and ms is not es:
            out["m"], out["e"] = ms, es
    if type(st) is dict:
        for tag, key in (("r", "records"), ("t", "text_parts")):
            v = st.get(key)
            if type(v) is list and all(v is not x for x in out.values()):
                out[tag] = v
    return out


def plan(
    runtime: Any, snapshot_path: str, transcript: Any, st: Any = None
) -> TranscriptPlan | None:
    """What a park of the worker whose snapshot is ``snapshot_path`` appends for its
    ``transcript`` (a transcript dict) and loop state ``st`` (:func:`streams_of`). None
    when there is nothing to keep in a file, or an entry is not self-contained snapshot
    data: the lists then stay inside the snapshot. For a checkpoint in an SQL store
    (``snapshot_path`` a ``<url>#<id>`` reference) the entries are rows committed with the
    checkpoint (:meth:`TranscriptPlan.append`) instead of a file."""
    from harnpy.lifecycle.checkpoint_store import is_store_ref

    streams = streams_of(transcript, st)
    trace = _trace_copy(runtime)
    if trace:
        streams[TRACE_TAG] = trace
    if not streams:
        return None
    stored = is_store_ref(snapshot_path)
    key = _key(snapshot_path)
    d = "" if stored else os.path.dirname(key)
    log = _logs(runtime).get(key)
    if log is not None:
        if stored:
            # the rows this process committed: a commit by anyone else since changed the
            # row's version, so this park's commit (fenced or versioned) is refused anyway
            on_disk = True
        else:
            try:
                fst = os.stat(os.path.join(d, log.name), follow_symlinks=False)
                on_disk = (
                    stat.S_ISREG(fst.st_mode)
                    and fst.st_size >= log.size
                    and (log.ino is None or log.ino == (fst.st_dev, fst.st_ino))
                )
            except OSError:
                on_disk = False
        if not (
            on_disk
            and set(log.lists) == set(streams)
            and all(_extends(log.lists[tag], lst) for tag, lst in streams.items())
        ):
            log = None
    fresh = log is None
    if log is None:
        log = _Log(
            name=f"{_stem(key)}.transcript-{uuid.uuid4().hex[:16]}.jsonl",
            lists={tag: [] for tag in streams},
        )
    chunks: list[bytes] = []
    ms = streams.get("m", [])
    for tag, lst in streams.items():  # STREAMS order: messages before their events
        for v in lst[len(log.lists[tag]) :]:
            i = _message_event_index(v, ms) if tag == "e" else -1
            line = f'["E",{i}]\n'.encode() if i >= 0 else _line(runtime, tag, v)
            if line is None:
                return None
            chunks.append(line)
    data = b"".join(chunks)
    hasher = log.hasher.copy()
    hasher.update(data)
    new = _Log(
        name=log.name,
        lists={tag: list(lst) for tag, lst in streams.items()},
        lines=log.lines + len(chunks),
        size=log.size + len(data),
        hasher=hasher,
        ino=log.ino,
    )
    return TranscriptPlan(
        path="" if stored else os.path.join(d, log.name),
        snapshot_path=key,
        base=log,
        new=new,
        data=data,
        fresh=fresh,
        streams=streams,
    )


def _trace_copy(runtime: Any) -> list[Any] | None:
    """The run's trace events as a new list of the same event objects (None: none)."""
    from harnpy.lifecycle.structured_calls import TRACE_ATTR

    events = getattr(runtime, TRACE_ATTR, None)
    return list(events) if events else None


def _bad(what: str) -> SnapshotError:
    return SnapshotError(f"the worker's transcript file {what}; refusing to resume", "E404")


def load(snapshot_path: str, rec: Any) -> tuple[dict[str, list[Any]], _Log]:
    """Read the prefix a snapshot records (``rec``: its ``transcript_file``) from beside
    ``snapshot_path``: the encoded lists by detached name (message events derived), to put
    under the embedded snapshot's ``externals``, and the log state to append to. Never
    modifies the file.

    Raises:
        SnapshotError: ``E404`` — a malformed record, a missing or shortened file, a prefix
            that does not hash to the record (changed since it was written), damaged lines.
    """

    if type(rec) is not dict:
        raise _bad("record is not a dict")
    name, size, lines = rec.get("name"), rec.get("bytes"), rec.get("lines")
    counts, sha = rec.get("streams"), rec.get("sha256")
    if type(name) is not str or not _NAME_RE.match(name):
        raise _bad(f"name {name!r} is not a transcript file name")
    if (
        any(type(x) is not int or x < 0 for x in (size, lines))
        or type(sha) is not str
        or type(counts) is not dict
        or not set(counts) <= set(STREAMS)
        or any(type(x) is not int or x < 0 for x in counts.values())
        or (("m" in counts) != ("e" in counts))
    ):
        raise _bad(f"record of {name} is malformed")
    size, lines = int(size or 0), int(lines or 0)
    from harnpy.lifecycle.checkpoint_store import is_store_ref

    if is_store_ref(snapshot_path):
        data, path, ino = _stored_lines(snapshot_path, name, lines), snapshot_path, None
    else:
        data, path, ino = _file_prefix(snapshot_path, name, size)
    hasher = hashlib.sha256(data)
    if len(data) != size or hasher.hexdigest() != sha:
        raise _bad(f"`{path}` changed since the snapshot was written (its hash differs)")
    return _parse(data, path, name, lines, size, counts, hasher, ino)


def _stored_lines(ref: str, name: str, lines: int) -> bytes:
    """The committed transcript rows of store checkpoint ``ref`` (generation ``name``) as
    the file format's bytes.

    Raises:
        SnapshotError: E404 — the rows are incomplete or the store cannot be read.
    """
    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.store.errors import StoreError

    try:
        store, key = checkpoint_for(ref)
        rows = store.read_transcript(key, name, ROW_STREAM, lines)
    except StoreError as e:
        raise _bad(f"rows of {ref} cannot be read ({e.message})") from None
    return b"".join(r + b"\n" for r in rows)


def _file_prefix(snapshot_path: str, name: str, size: int) -> tuple[bytes, str, tuple[int, int]]:
    """The first ``size`` bytes of transcript file ``name`` beside ``snapshot_path``, its
    path and ``(device, inode)``.

    Raises:
        SnapshotError: E404 — a link, not a regular file, shorter than recorded.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(snapshot_path)), name)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP and os.path.islink(path):  # what O_NOFOLLOW refuses
            raise _bad(f"`{path}` is a symbolic link, not the transcript file") from None
        raise _bad(f"`{path}` cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _bad(f"`{path}` is not a regular file")
        if st.st_size < size:
            raise _bad(
                f"`{path}` is shorter than the snapshot records ({st.st_size} of {size} bytes)"
            )
        chunks = []
        left = size
        while left:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                raise _bad(f"`{path}` is shorter than the snapshot records")
            chunks.append(b)
            left -= len(b)
    finally:
        os.close(fd)
    return b"".join(chunks), path, (st.st_dev, st.st_ino)


def _parse(
    data: bytes,
    path: str,
    name: str,
    lines: int,
    size: int,
    counts: dict[str, int],
    hasher: Any,
    ino: tuple[int, int] | None,
) -> tuple[dict[str, list[Any]], _Log]:
    """The encoded lists of a checked transcript prefix (:func:`load`).

    Raises:
        SnapshotError: E404 — damaged lines, or not the entries the snapshot records.
    """
    import json

    from harnpy.runtime.snapshot import loads

    lists: dict[str, list[Any]] = {tag: [] for tag in counts}
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if len(raw_lines) != lines or (data and not data.endswith(b"\n")):
        raise _bad(f"`{path}` has {len(raw_lines)} lines where the snapshot records {lines}")
    try:
        for raw in raw_lines:
            entry = loads(raw)
            if type(entry) is not list or len(entry) != 2:
                raise ValueError("not a [tag, value] line")
            tag, v = entry
            if tag == "E" and type(v) is int and "e" in lists:
                lists["e"].append(("E", v))
            elif type(tag) is str and tag in lists:
                lists[tag].append(v)
            else:
                raise ValueError(f"unexpected line tag {tag!r}")
    except (ValueError, json.JSONDecodeError) as e:
        raise _bad(f"`{path}` is damaged ({e})") from None
    if any(len(lists[tag]) != n for tag, n in counts.items()):
        raise _bad(f"`{path}` does not hold the entries the snapshot records")
    evs = lists.get("e", [])
    for j, ev in enumerate(evs):
        if type(ev) is tuple:
            evs[j] = _derived_event(lists["m"], ev[1], path)
    log = _Log(name=name, lines=lines, size=size, hasher=hasher, ino=ino)
    log.lists = {tag: [] for tag in counts}
    return {STREAMS[tag]: lst for tag, lst in lists.items()}, log


def _derived_event(msgs: list[Any], i: int, path: str) -> Any:
    """The encoded ``message`` event of encoded message ``i``."""
    if not 0 <= i < len(msgs):
        raise _bad(f"`{path}` refers to message {i}, which it does not hold")
    m = msgs[i]
    tail = {"index": i, "visibility": "public"}
    if type(m) is dict and "$dict" in m and len(m) == 1 and type(m["$dict"]) is list:
        return {"$dict": [["kind", "message"], *m["$dict"], *map(list, tail.items())]}
    if type(m) is not dict or any(k.startswith("$") for k in m):
        raise _bad(f"`{path}` derives an event from message {i}, which is not a dict")
    return {"kind": "message", **m, **tail}


def remember_restored(runtime: Any, snapshot_path: str, log: _Log, decoded: Any) -> None:
    """After a restore: ``decoded(name)`` gives each decoded detached list, which is what
    the file holds, so the next park of this worker appends to it.

    A stored agent trace (stream ``a``) that this process did not write (a resume in
    another process than the park's) is put back in front of the run's trace: its events
    happened before the park, so ``agent_trace()`` lists them first. When this process
    wrote it, the run's trace already holds those events and is left as it is.

    Raises:
        SnapshotError: ``E404`` — the stored trace is not a list of events with a ``type``.
    """
    key = _key(snapshot_path)
    previous = _logs(runtime).get(key)
    lists = {}
    for tag in log.lists:
        v = decoded(STREAMS[tag])
        if type(v) is not list:
            return
        lists[tag] = list(v)
    if TRACE_TAG in lists:
        lists[TRACE_TAG] = _restore_trace(runtime, lists[TRACE_TAG], previous)
    log.lists = lists
    _logs(runtime)[key] = log


def _restore_trace(runtime: Any, stored: list[Any], previous: _Log | None) -> list[Any]:
    """Merge the restored trace events ``stored`` into the run's trace (see
    :func:`remember_restored`); returns the entries to remember as stored (the run's own
    objects when its trace starts with them: the next park then appends)."""
    from harnpy.lifecycle.structured_calls import trace_events

    if any(type(e) is not dict or type(e.get("type")) is not str for e in stored):
        raise _bad("holds an agent trace that is not a list of events with a `type`")
    events = trace_events(runtime)
    old = previous.lists.get(TRACE_TAG) if previous is not None else None
    if old is not None:  # this process wrote the checkpoint: its trace holds the events
        if len(old) == len(stored) and _extends(old, events):
            return list(old)
        return stored  # the trace moved on (its oldest events dropped): the next park rewrites
    if not _extends(stored, events):
        events[:0] = stored  # a trace from another process: its events came first
    return stored


def forget(runtime: Any, snapshot_path: str) -> None:
    """Drop what this process knows of a snapshot's transcript file."""
    _logs(runtime).pop(_key(snapshot_path), None)


def sweep(snapshot_path: str, keep: str) -> None:
    """Remove the transcript files of ``snapshot_path`` other than ``keep`` (a committed
    snapshot that left the park using them started generation ``keep``). The current
    generation is never removed, so a snapshot put back in place of a later one of the same
    generation still resumes. Problems are ignored (a leftover file is only disk space)."""
    key = os.path.abspath(snapshot_path)
    d = os.path.dirname(key)
    prefix = _stem(key) + ".transcript-"
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        if n.startswith(prefix) and n != keep and _NAME_RE.match(n):
            try:
                os.unlink(os.path.join(d, n))
            except OSError:
                pass
