"""Where worker checkpoints live: the worker state directory (``HARN_WORKER_STATE_DIR``,
``.harn/workers``, or a private per-user fallback), a worker's snapshot path, and the
:class:`~harnpy.store.directory.DirectoryStore` (the ``directory`` backend of the
checkpoint-store interface) that reads, claims and writes a snapshot file."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from typing import Any

from harnpy.lifecycle.services import services
from harnpy.lifecycle.workers import (
    WorkerRecord,
    state_dir,
)
from harnpy.security import private_dir
from harnpy.store.directory import DirectoryStore

#: One directory backend per directory (absolute path) for this process.
_DIRECTORIES: dict[str, DirectoryStore] = {}


def directory_for(path: str) -> tuple[DirectoryStore, str]:
    """The directory backend holding snapshot file ``path`` and the file's key there
    (``<dir>/<key>.json``; a file of another name is its own key).

    Raises:
        StoreError: the name cannot be a checkpoint file (``kind="config"``).
    """
    d, name = os.path.split(os.path.abspath(path))
    store = _DIRECTORIES.get(d)
    if store is None:
        from harnpy.runtime.snapshot import open_document, seal_document

        store = _DIRECTORIES[d] = DirectoryStore(d, open_body=open_document, seal=seal_document)
    return store, store.key_for(name)


def snapshot_dir(runtime: Any) -> str:
    """The directory worker snapshots are written to (created when missing).

    ``HARN_WORKER_STATE_DIR`` when set: it is used as given, or refused. Otherwise
    ``.harn/workers`` when it can be created and written, else
    ``<tmp>/harnpy-<uid>/workers/<hash of the working directory>`` (a read-only checkout
    still parks; the summary's ``snapshot_path`` says where).

    Raises:
        OSError: ``HARN_WORKER_STATE_DIR`` names a directory that cannot be used (not a
            directory, not writable, cannot be created); ``strerror`` names it.
    """
    explicit = bool(os.environ.get("HARN_WORKER_STATE_DIR"))
    preferred = state_dir()
    cache: dict[str, str] = _cache(runtime, "worker_dirs")
    hit = cache.get(preferred)
    if hit is not None:
        return hit
    chosen = preferred
    try:
        if os.path.exists(preferred) and not os.path.isdir(preferred):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory")
        if not _writable(preferred):
            raise PermissionError(errno.EACCES, "not writable")
        _private_missing(preferred)
    except OSError as e:
        if explicit:  # the user chose it: never put durable state elsewhere behind their back
            raise OSError(
                e.errno,
                f"HARN_WORKER_STATE_DIR `{preferred}` cannot be used: {e.strerror or e}",
            ) from None
        tag = hashlib.sha256(os.path.abspath(preferred).encode()).hexdigest()[:12]
        base = os.path.join(tempfile.gettempdir(), f"harnpy-{os.getuid()}")
        chosen = os.path.join(base, "workers", tag)
        # every level below the shared temp directory must be ours and private: a directory
        # another user created there first (to read or swap our snapshots) is refused
        for d in (base, os.path.join(base, "workers"), chosen):
            private_dir(d)
    cache[preferred] = chosen
    return chosen


def _private_missing(path: str) -> None:
    """Create ``path`` and its missing parents with mode 0700 whatever the umask (the
    default ``.harn/workers``: ``.harn`` too holds private state). An existing directory is
    left as it is (one the user made, or chose with ``HARN_WORKER_STATE_DIR``)."""
    if os.path.isdir(path):
        return
    private_dir(path)


def _writable(path: str) -> bool:
    """Whether ``path`` (or, when missing, its nearest existing ancestor) may be written:
    ``os.access`` and, so that a superuser does not write into a read-only checkout, at
    least one write permission bit."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            return False
        p = parent
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return bool(mode & 0o222) and os.access(p, os.W_OK)


def _cache(runtime: Any, name: str) -> Any:
    svc = services(runtime)
    value = getattr(svc, "_suspend_" + name, None)
    if value is None:
        value = {}
        setattr(svc, "_suspend_" + name, value)
    return value


def _target_path(runtime: Any, rec: WorkerRecord) -> str:
    """Where ``rec``'s snapshot goes (and set ``rec.snapshot_path`` to it).

    Raises:
        OSError: the state directory cannot be used (:func:`snapshot_dir`).
    """
    if getattr(rec, "snapshot_fixed", False):
        return rec.snapshot_path
    d = snapshot_dir(runtime)
    if os.path.dirname(rec.snapshot_path) != d:
        rec.snapshot_path = os.path.join(d, f"{rec.id}.json")
    rec.snapshot_fixed = True  # type: ignore[attr-defined]
    return rec.snapshot_path


def _dumps(doc: dict[str, Any]) -> bytes:
    """A worker document as written to its file: compact UTF-8 JSON, sealed with the
    snapshot key (:func:`harnpy.runtime.snapshot.seal_document`).

    Raises:
        SnapshotError: the key cannot be used, or a value is nested too deeply.
    """
    from harnpy.runtime.snapshot import seal_document

    return seal_document(doc)


def _loads(data: bytes) -> Any:
    """A worker snapshot file's bytes, seal checked first, then parsed.

    Raises:
        ValueError: not sealed by our key, changed since it was written, or not JSON (the
            message says which).
    """
    from harnpy.runtime.snapshot import SnapshotError, open_document

    try:
        return open_document(data, "the file")
    except SnapshotError as e:
        raise ValueError(e.message) from None
