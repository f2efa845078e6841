"""Module sources kept with the snapshots that reference them (resume across code changes).

A snapshot records, for every module it references, the path and the SHA-256 of the source
it ran (``modules: [{key, path, hash, ...}]``) and is sealed, so a source whose SHA-256 is
the recorded hash is exactly the code the parked run started with. Every writer of a
snapshot also stores those sources, content-addressed:

* beside the snapshot file, in a private directory of the snapshot's state directory
  (:func:`sources_dir`: ``.harn/sources/<sha256>.harn``, the directory 0700, the files 0600,
  written atomically), or ``HARNPY_SOURCES_DIR`` when set;
* in the durable store when the checkpoint lives there (``put_source`` / ``get_source``
  of :class:`harnpy.store.sql.SqlStore`; any object with those two methods works).

A resume (:mod:`harnpy.runtime.resume`) takes a module's source from its file when that
still has the recorded hash, else from a stored copy (:class:`SourceLookup`): a copy is
read with a cap (:data:`~harnpy.runtime.modules.MAX_SOURCE_BYTES`) and used only when its
SHA-256 is the recorded one, so a tampered or damaged copy is never run.

Bundled modules (``std/...``, ``harnpy/...``) are part of the installed harnpy and are not
stored; pseudo-path modules (``<-e>``, REPL entries) carry their source inline already.
"""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from typing import Any

#: Environment variable naming the directory stored sources go to (and are read from first).
SOURCES_DIR_ENV = "HARNPY_SOURCES_DIR"

_SHA_RE = re.compile(r"^[0-9a-f]{64}$")

#: (runtime -> {(place, sha)}) the sources a runtime already stored, so parks of a long run
#: do not write the same files again.
_WRITTEN: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()


def is_stored_kind(key: str, path: str) -> bool:
    """Whether a module record (``key``, ``path``) names a user source file that is stored:
    not a bundled module (``std/...``, ``harnpy/...``), not a pseudo-path (``<-e>``)."""
    if key.startswith(("std/", "harnpy/", "<")) or path.startswith("<"):
        return False
    return True


def sources_dir(snapshot_path: str | None) -> str:
    """The directory the sources of the snapshot at ``snapshot_path`` are stored in.

    ``HARNPY_SOURCES_DIR`` when set; else ``<state dir>/sources``, where the state directory
    is the nearest enclosing directory named ``.harn`` (``.harn/workers/w.json`` ->
    ``.harn/sources``) or, for a snapshot outside one, ``.harn`` beside it
    (``/tmp/x/snap.json`` -> ``/tmp/x/.harn/sources``). Without a snapshot path (a store
    checkpoint): ``.harn/sources`` of the working directory."""
    env = os.environ.get(SOURCES_DIR_ENV)
    if env:
        return os.path.abspath(env)
    if snapshot_path is None:
        return os.path.abspath(os.path.join(".harn", "sources"))
    d = os.path.dirname(os.path.abspath(snapshot_path))
    p = d
    while True:
        if os.path.basename(p) == ".harn":
            return os.path.join(p, "sources")
        up = os.path.dirname(p)
        if up == p:
            break
        p = up
    return os.path.join(d, ".harn", "sources")


def source_file(directory: str, sha256: str) -> str:
    """The file of the source with hash ``sha256`` in ``directory``.

    Raises:
        ValueError: ``sha256`` is not 64 lowercase hex digits (never a path of its own).
    """
    if not _SHA_RE.match(sha256):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return os.path.join(directory, f"{sha256}.harn")


def module_records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The module records of a snapshot document: a program snapshot's ``modules``, or the
    ``modules`` of a worker document's embedded thread (``harnpy_thread``)."""
    recs = doc.get("modules")
    if not isinstance(recs, list):
        inner = doc.get("harnpy_thread")
        recs = inner.get("modules") if isinstance(inner, dict) else None
    return [r for r in recs or [] if isinstance(r, dict)]


def sources_of(runtime: Any, doc: dict[str, Any]) -> list[tuple[str, str, bytes]]:
    """``(sha256, path, bytes)`` of every stored-kind module the snapshot ``doc`` references,
    taken from ``runtime``'s loaded modules (only those whose hash is the recorded one)."""
    out: list[tuple[str, str, bytes]] = []
    seen: set[str] = set()
    for rec in module_records(doc):
        key, path, want = rec.get("key"), rec.get("path"), rec.get("hash")
        if not (isinstance(key, str) and isinstance(path, str) and isinstance(want, str)):
            continue
        if want in seen or not is_stored_kind(key, path) or not _SHA_RE.match(want):
            continue
        mod = runtime.modules.get(key)
        if mod is None or mod.hash != want:  # Module.hash is the SHA-256 of its source
            continue
        seen.add(want)
        out.append((want, path, mod.source.encode("utf-8")))
    return out


def persist_sources(
    runtime: Any,
    doc: dict[str, Any],
    *,
    snapshot_path: str | None = None,
    store: Any = None,
    checkpoint_id: str | None = None,
) -> list[str]:
    """Store the sources ``doc`` references (module docstring): into the snapshot's sources
    directory when ``snapshot_path`` is given, into ``store`` when given (``put_source(sha,
    bytes, checkpoint_id=, path=)``: the store also records that checkpoint ``checkpoint_id``
    needs the source, so sources nobody needs can be pruned). Each source is written once
    per runtime and place; an existing file is left as it is, its mtime set to now (so
    :func:`prune_source_files` keeps it through its grace period).

    Returns the problems met, one line each (the caller warns: the snapshot itself is
    written, and a resume with the same files needs no stored copy). A store that refuses
    raises instead (the caller's checkpoint commit would fail the same way).
    """
    items = sources_of(runtime, doc)
    if not items:
        return []
    written = _WRITTEN.setdefault(runtime, set())
    problems: list[str] = []
    if snapshot_path is not None:
        d = sources_dir(snapshot_path)
        for sha, path, body in items:
            if (d, sha) in written and _touch(source_file(d, sha)):
                continue
            try:
                write_source_file(d, sha, body)
            except OSError as e:
                problems.append(f"cannot store the source of {path} in {d}: {e.strerror or e}")
                continue
            written.add((d, sha))
    if store is not None:
        place = f"store:{id(store)}:{checkpoint_id}"
        for sha, path, body in items:
            if (place, sha) in written:
                continue
            store.put_source(sha, body, checkpoint_id=checkpoint_id, path=path)
            written.add((place, sha))
    return problems


def write_source_file(directory: str, sha256: str, body: bytes) -> str:
    """Write ``body`` as ``<directory>/<sha256>.harn`` (directory made private, 0700; file
    0600, atomic) unless a file with exactly these bytes is there; returns its path.

    Raises:
        ValueError: ``sha256`` is not the SHA-256 of ``body``.
        OSError: the directory or file cannot be written (:class:`harnpy.security.
            UnsafePath` for a directory that is not ours).
    """
    from harnpy.security import private_dir, read_capped, write_private

    if hashlib.sha256(body).hexdigest() != sha256:
        raise ValueError("the source does not have the SHA-256 it is stored under")
    target = source_file(directory, sha256)
    if os.path.isfile(target):
        try:
            if hashlib.sha256(read_capped(target, len(body) + 1)).hexdigest() == sha256:
                _touch(target)  # needed again: young for prune_source_files' grace period
                return target
        except OSError:
            pass  # unreadable or damaged: replaced below
    private_dir(directory)
    write_private(target, body, durable=True, tmp_prefix=".source-")
    return target


def _touch(path: str) -> bool:
    """Set ``path``'s mtime to now (a stored source a new snapshot needs again is not pruned
    by :func:`prune_source_files` while that snapshot is being written); False when the
    file is gone or cannot be touched."""
    try:
        os.utime(path)
    except OSError:
        return False
    return True


class SourceLookup:
    """Where a resume looks for the stored copy of a module source: directories (the
    snapshot's sources directory, ``HARNPY_SOURCES_DIR``, the working directory's
    ``.harn/sources``) and optionally a store (``get_source(sha) -> bytes | None``; a
    callable returning the store is accepted, called on first use).

    ``refused`` collects one line per copy found but not used (wrong hash, unreadable),
    for the error a resume reports when no usable source is left."""

    def __init__(self, snapshot_path: str | None = None, store: Any = None) -> None:
        dirs: list[str] = []
        env = os.environ.get(SOURCES_DIR_ENV)
        for d in (
            os.path.abspath(env) if env else None,
            sources_dir(snapshot_path) if snapshot_path is not None else None,
            os.path.abspath(os.path.join(".harn", "sources")),
        ):
            if d is not None and d not in dirs:
                dirs.append(d)
        self.dirs = dirs
        self._store = store
        self.refused: list[str] = []

    def store(self) -> Any:
        """The store to ask (None: none); a callable given at construction is called once."""
        s = self._store
        if callable(s) and not hasattr(s, "get_source"):
            try:
                s = s()
            except Exception as e:  # noqa: BLE001 - the store is a fallback: say why, go on
                self.refused.append(f"the store could not be opened: {e}")
                s = None
            self._store = s
        return s

    def get(self, sha256: str, path: str) -> str | None:
        """The stored source whose SHA-256 is ``sha256`` (the module at ``path``), or None.
        A copy whose bytes do not hash to ``sha256`` is refused (recorded in ``refused``)."""
        from harnpy.runtime.modules import MAX_SOURCE_BYTES
        from harnpy.security import read_capped

        if not _SHA_RE.match(sha256):
            return None
        for d in self.dirs:
            f = source_file(d, sha256)
            if not os.path.lexists(f):
                continue
            try:
                body = read_capped(f, MAX_SOURCE_BYTES)
            except OSError as e:
                self.refused.append(f"the stored copy {f} cannot be read: {e}")
                continue
            if hashlib.sha256(body).hexdigest() != sha256:
                self.refused.append(
                    f"the stored copy {f} of {path} does not have the snapshot's hash "
                    "(it was changed); refusing it"
                )
                continue
            try:
                return body.decode("utf-8")
            except UnicodeDecodeError:
                self.refused.append(f"the stored copy {f} is not UTF-8")
        store = self.store()
        if store is not None:
            try:
                body = store.get_source(sha256)
            except Exception as e:  # noqa: BLE001 - CorruptRecord, an unreachable store...
                self.refused.append(str(getattr(e, "message", e)))
                return None
            if body is None:
                return None
            if hashlib.sha256(body).hexdigest() != sha256 or len(body) > MAX_SOURCE_BYTES:
                self.refused.append(f"the store's copy of {path} does not have the snapshot's hash")
                return None
            try:
                return bytes(body).decode("utf-8")
            except UnicodeDecodeError:
                self.refused.append(f"the store's copy of {path} is not UTF-8")
        return None


#: How long an unreferenced stored source file is kept (ms) before
#: :func:`prune_source_files` deletes it: a snapshot being written stores its sources first.
PRUNE_GRACE_MS = 3_600_000

#: ``status`` of a worker snapshot that will never run again (its sources are not needed).
SETTLED_STATUSES = ("completed", "failed", "cancelled")

#: The largest snapshot file :func:`prune_source_files` reads (a worker snapshot is at most
#: 4 MiB; a program snapshot has no cap of its own, so leave room).
_SCAN_CAP = 64 * 1024 * 1024

_SNAPSHOT_TYPES = (
    '"_type":"harnpy_snapshot"',
    '"_type":"worker_snapshot"',
    '"_type":"daemon_snapshot"',
)


class PruneRefused(Exception):
    """:func:`prune_source_files` deleted nothing: a snapshot of the state directory could
    not be read, so the sources it needs are unknown. ``str(e)`` names the file."""


def _snapshot_files(state_dir: str) -> list[str]:
    """The files that may be snapshots whose sources live in ``state_dir``'s ``sources``:
    every ``*.json`` / ``*.park`` under the state directory (``workers/``, ...) and beside it
    (a program snapshot ``/tmp/x/snap.json`` keeps its sources in ``/tmp/x/.harn``)."""
    out: list[str] = []
    sources = os.path.join(state_dir, "sources")
    for root, dirs, files in os.walk(state_dir):
        if os.path.abspath(root) == sources:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        out.extend(os.path.join(root, f) for f in files if f.endswith((".json", ".park")))
    parent = os.path.dirname(state_dir)
    try:
        beside = os.listdir(parent)
    except OSError:
        beside = []
    out.extend(
        os.path.join(parent, f)
        for f in beside
        if f.endswith((".json", ".park")) and os.path.isfile(os.path.join(parent, f))
    )
    return sorted(out)


def _needed_hashes(path: str) -> set[str] | None:
    """The source hashes the snapshot file ``path`` needs (empty for a settled worker), or
    None when it is not a snapshot (another JSON file).

    Raises:
        PruneRefused: it starts like a snapshot but cannot be read or parsed."""
    import json

    from harnpy.security import read_capped, read_part

    try:
        head = read_part(path, 512).decode("utf-8", "replace").replace(" ", "")
    except OSError as e:
        raise PruneRefused(f"{path} cannot be read ({e.strerror or e})") from None
    if not any(t in head for t in _SNAPSHOT_TYPES):
        return None
    try:
        doc = json.loads(read_capped(path, _SCAN_CAP))
    except (OSError, ValueError) as e:
        raise PruneRefused(f"the snapshot {path} cannot be read ({e})") from None
    if not isinstance(doc, dict):
        raise PruneRefused(f"the snapshot {path} is not a JSON object")
    if doc.get("status") in SETTLED_STATUSES and '"retriggerable": true' not in json.dumps(doc):
        return set()
    return {
        r["hash"]
        for r in module_records(doc)
        if isinstance(r.get("hash"), str) and _SHA_RE.match(r["hash"])
    }


def prune_source_files(
    state_dir: str, grace_ms: int = PRUNE_GRACE_MS, *, dry_run: bool = False
) -> dict[str, Any]:
    """Delete the stored source files of ``<state_dir>/sources`` (or ``HARNPY_SOURCES_DIR``)
    no snapshot needs: a source is kept when a snapshot file of the state directory or
    beside it (:func:`_snapshot_files`: parked, running, a ``.park`` copy, a program
    snapshot) records its hash, unless that snapshot is a worker that settled
    (:data:`SETTLED_STATUSES`); an unreferenced source younger than ``grace_ms`` (its
    mtime) is kept too. Snapshots elsewhere that share ``HARNPY_SOURCES_DIR`` are not seen:
    only the grace period protects them.

    Returns ``{"dir", "deleted": [sha...], "kept": n, "snapshots": n}`` (with ``dry_run``
    nothing is deleted; ``deleted`` lists what would be).

    Raises:
        PruneRefused: a snapshot could not be read; nothing was deleted.
        OSError: a source file cannot be deleted (those before it were).
    """
    import time

    state_dir = os.path.abspath(state_dir)
    env = os.environ.get(SOURCES_DIR_ENV)
    directory = os.path.abspath(env) if env else os.path.join(state_dir, "sources")
    needed: set[str] = set()
    snapshots = 0
    for f in _snapshot_files(state_dir):
        got = _needed_hashes(f)
        if got is not None:
            snapshots += 1
            needed |= got
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        names = []
    cutoff = time.time() - max(0, grace_ms) / 1000.0
    deleted: list[str] = []
    kept = 0
    for name in names:
        sha = name[: -len(".harn")] if name.endswith(".harn") else ""
        if not _SHA_RE.match(sha):
            continue  # not ours (a temporary file being written, another file)
        path = os.path.join(directory, name)
        try:
            young = os.lstat(path).st_mtime > cutoff
        except FileNotFoundError:
            continue
        if sha in needed or young:
            kept += 1
            continue
        if not dry_run:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
        deleted.append(sha)
    return {"dir": directory, "deleted": deleted, "kept": kept, "snapshots": snapshots}
