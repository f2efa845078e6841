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
    needs the source, so sources nobody needs can be pruned). Each source is written once per runtime and place; an existing file is
    left as it is.

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
            if (d, sha) in written:
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
                return target
        except OSError:
            pass  # unreadable or damaged: replaced below
    private_dir(directory)
    write_private(target, body, durable=True, tmp_prefix=".source-")
    return target


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
