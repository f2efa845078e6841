"""Where worker checkpoints live, and the store behind a worker's checkpoint reference.

A worker's ``snapshot_path`` is a *checkpoint reference*:

* a file path: the worker state directory (``HARN_WORKER_STATE_DIR``, ``.harn/workers``, or
  a private per-user fallback) holds ``<id>.json``, read, claimed and written by the
  :class:`~harnpy.store.directory.DirectoryStore` of that directory (the ``directory``
  backend of the checkpoint-store interface);
* ``<store url>#<worker id>`` when the program runs with an SQL store (``--store`` /
  ``HARNPY_STORE`` naming ``sqlite:///...`` or ``postgresql://...``): the checkpoint is the
  store's ``checkpoints`` row of that id, so any process (on any machine) that reaches the
  store can resume it, exactly once (issue 10 point 1).

:func:`checkpoint_for` gives the backend and key of either kind; the suspend / resume code
asks it and never opens a snapshot file itself."""

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
from harnpy.store.checkpoint_api import CheckpointStore
from harnpy.store.directory import DirectoryStore

#: One directory backend per directory (absolute path) for this process.
_DIRECTORIES: dict[str, DirectoryStore] = {}

#: URL schemes of a store checkpoint reference (``<url>#<worker id>``).
_REF_SCHEMES = ("sqlite:", "postgres://", "postgresql://")


def is_store_ref(ref: object) -> bool:
    """Whether ``ref`` is a store checkpoint reference ``<sqlite:|postgresql:...>#<id>``
    rather than a snapshot file path."""
    if type(ref) is not str or "#" not in ref:
        return False
    low = ref[:16].lower()
    return low.startswith(_REF_SCHEMES) and bool(ref.rpartition("#")[2])


def split_store_ref(ref: str) -> tuple[str, str]:
    """``(store url as shown, worker id)`` of a store checkpoint reference."""
    url, _, key = ref.rpartition("#")
    return url, key


def checkpoint_for(ref: str, runtime: Any = None) -> tuple[CheckpointStore, str]:
    """The backend holding checkpoint reference ``ref`` and its key there: the directory
    backend of a snapshot file (:func:`directory_for`), or the SQL store of a
    ``<url>#<id>`` reference. The store configured for this process (``runtime``'s
    ``--store``, else ``HARNPY_STORE``) is used when its URL is the reference's (a
    reference shows a PostgreSQL password masked, so only the configured URL can open such
    a store); otherwise the reference's URL is opened, if it names an existing harnpy
    store (:func:`~harnpy.lifecycle.waitpoints.stores.existing_store`: a reference never
    creates a database).

    Raises:
        StoreError: the name cannot be a checkpoint file (``kind="config"``), or the store
            cannot be opened (a masked password: ``kind="config"`` saying to configure it).
    """
    if not is_store_ref(ref):
        return directory_for(ref)
    from harnpy.lifecycle.waitpoints.stores import existing_store, shared_store
    from harnpy.store import StoreError

    url, key = split_store_ref(ref)
    configured = configured_sql_url(runtime)
    if configured is not None and configured.display == url:
        return shared_store(configured), key
    if ":***@" in url:
        raise StoreError(
            f"checkpoint {ref} is in a store whose password is not shown: run with "
            "--store URL (or HARNPY_STORE) naming that store",
            "config",
        )
    return existing_store(url), key


#: The ``--store`` of the command this process runs (:func:`use_store_option`).
_PROCESS_STORE: list[str | None] = [None]


def use_store_option(option: str | None) -> None:
    """Remember the command's ``--store`` for checkpoint references resolved without a
    runtime at hand (a claim, a listing)."""
    _PROCESS_STORE[0] = option


def configured_sql_url(runtime: Any = None) -> Any:
    """The SQL store URL (:class:`~harnpy.store.StoreURL`) this process runs with: the
    ``--store`` of ``runtime``'s command, else ``HARNPY_STORE``; None when none is named
    or it names a ``directory`` store (worker checkpoints then stay files).

    Raises:
        StoreError: an unknown URL scheme.
    """
    from harnpy.store import configured_store_url

    option = getattr(runtime, "store_option", None)
    url = configured_store_url(option if option is not None else _PROCESS_STORE[0])
    if url is None or url.kind not in ("sqlite", "postgresql"):
        return None
    return url


def checkpoint_version(store: CheckpointStore, key: str) -> int | None:
    """The version of checkpoint ``key`` now (None: there is none): the directory backend's
    file token, the SQL row's commit counter."""
    if isinstance(store, DirectoryStore):
        return store.version(key)
    info = store.checkpoint_info(key)
    return None if info is None else info.version


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
    """Where ``rec``'s snapshot goes (and set ``rec.snapshot_path`` to it): the store
    reference ``<url>#<id>`` when this process runs with an SQL store
    (:func:`configured_sql_url`) and ``HARN_WORKER_STATE_DIR`` does not name a directory
    for them, else ``<state dir>/<id>.json``. Fixed at the first write.

    Raises:
        OSError: the state directory cannot be used (:func:`snapshot_dir`), or the store
            cannot be opened (``strerror`` says which).
    """
    if getattr(rec, "snapshot_fixed", False):
        return rec.snapshot_path
    from harnpy.store import StoreError

    try:
        # an explicit HARN_WORKER_STATE_DIR keeps checkpoints files in that directory
        explicit_dir = bool(os.environ.get("HARN_WORKER_STATE_DIR"))
        url = None if explicit_dir else configured_sql_url(runtime)
        if url is not None:
            from harnpy.lifecycle.waitpoints.stores import shared_store

            ref = shared_store(url).checkpoint_ref(rec.id)
    except StoreError as e:
        raise OSError(0, e.message) from None
    if url is not None:
        rec.snapshot_path = ref
        rec.snapshot_fixed = True  # type: ignore[attr-defined]
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


#: ``checkpoints.mode`` values of agent-worker checkpoints (a parked program is ``program``).
WORKER_MODES = ("workflow", "stage", "sub_agent", "delegated_stage", "top_level_agent")
#: ``checkpoints.mode`` of a program parked on a durable waitpoint (not an agent worker).
PROGRAM_MODE = "program"


def stored_worker_ref(
    target: str, runtime: Any = None, several: list[str] | None = None
) -> str | None:
    """The store reference of the agent-worker checkpoint a bare ``target`` names in the SQL
    store this process runs with (:func:`configured_sql_url`): its id, or a unique prefix of
    one with or without ``worker_`` (of several matches, the only parked one; any row but a
    parked program's, a damaged one too, so that its resume names the damage). None when no store is configured,
    nothing matches or several do (their ids, sorted, are then put in ``several`` when it
    is given).

    Raises:
        StoreError: the configured store cannot be opened.
    """
    url = configured_sql_url(runtime)
    if url is None or not target or "/" in target or "#" in target:
        return None
    from harnpy.lifecycle.waitpoints.stores import shared_store
    from harnpy.lifecycle.worker_listing import resolve_worker

    store = shared_store(url)
    infos = {}
    for prefix in (target, f"worker_{target}"):
        for i in store.find_checkpoints(prefix):
            info = store.checkpoint_info(i)
            # every row but a parked program's (`harnpy waitpoint resume` takes those): a
            # row whose mode is damaged or missing is found too, so its resume names it
            if info is not None and (info.mode != PROGRAM_MODE or info.status == "corrupt"):
                infos[i] = info
    hits = resolve_worker(target, infos, lambda i: infos[i].status == "suspended")
    if not hits and target.startswith("prog-"):
        # a program checkpoint named by its full id: found, so that the resume says how
        # such a run resumes (`harnpy waitpoint resume`), not that there is no such file
        info = store.checkpoint_info(target)
        if info is not None and info.mode == PROGRAM_MODE:
            return store.checkpoint_ref(target)
    if len(hits) == 1:
        return store.checkpoint_ref(hits[0])
    if hits and several is not None:
        several[:] = hits
    return None
