"""Small helpers of the trigger package: ids, timestamps, atomic snapshot edits (private)."""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from harnpy.store.directory import dir_lock


def uuid7(ms: int) -> str:
    """A version-7 UUID whose time part is ``ms`` (epoch milliseconds)."""
    ms &= (1 << 48) - 1
    rand = int.from_bytes(os.urandom(10), "big")
    value = (
        (ms << 80) | (0x7 << 76) | ((rand >> 68) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


def rfc3339(ms: int) -> str:
    """``2026-05-01T00:00:20Z`` (milliseconds shown only when non-zero)."""
    d = datetime.fromtimestamp(ms / 1000, tz=UTC)
    if ms % 1000:
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def sanitize_id(text: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` by ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _stored(ref: str) -> tuple[Any, bytes] | None:
    """``(listing columns, body)`` of store checkpoint ``ref``; None when there is none or
    the store cannot be read."""
    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.store.errors import StoreError

    try:
        store, key = checkpoint_for(ref)
        return store.get_checkpoint(key)
    except StoreError:
        return None


def file_sha256(path: str | None) -> str | None:
    """Hex SHA-256 of a snapshot's bytes (a file, or the body of a store checkpoint
    ``<url>#<id>``), or None when it cannot be read. A file is hashed in chunks and must be
    a regular file (a FIFO or a device is None, never waited on:
    :func:`harnpy.security.file_digest`)."""
    if not path:
        return None
    from harnpy.lifecycle.checkpoint_store import is_store_ref

    if is_store_ref(path):
        got = _stored(path)
        return None if got is None else hashlib.sha256(got[1]).hexdigest()
    from harnpy.security import file_digest

    try:
        return file_digest(path)
    except OSError:
        return None


def rewrite_snapshot_status(
    path: str,
    status: str,
    error: str | None,
    now_ms: int,
    extra: dict[str, Any] | None = None,
    *,
    expect_status: str | None = None,
    expect_park_id: str | None = None,
) -> bool:
    """Atomically set a worker snapshot's ``status`` (and ``error``/``latest_error``), drop
    its ``suspension`` record and stamp ``finished_at``. With ``expect_status`` /
    ``expect_park_id`` the file is only rewritten while it still has that status / park id
    (checked under :func:`dir_lock`: a worker resumed, completed or parked again meanwhile
    is left alone). False when nothing was written (missing file, not a JSON object, or an
    expectation not met)."""
    from harnpy.lifecycle.checkpoint_store import is_store_ref
    from harnpy.runtime.snapshot import write_atomic

    def rewrite(doc: dict[str, Any], target: dict[str, Any]) -> bool:
        if expect_status is not None and target.get("status") != expect_status:
            return False
        if expect_park_id is not None and target.get("park_id") != expect_park_id:
            return False
        target["status"] = status
        if error is not None:
            target["error"] = error
            target["latest_error"] = error
        target["suspension"] = None
        target["finished_at"] = rfc3339(now_ms)
        if extra:
            target.update(extra)
        return True

    if is_store_ref(path):
        return _rewrite_stored(path, rewrite, expect_status, expect_park_id)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path)) or "."):
        return False
    with dir_lock(path):
        read = _read_worker_record(path)
        if read is None:
            return False
        doc, target = read
        if not rewrite(doc, target):
            return False
        from harnpy.runtime.snapshot import seal_document

        write_atomic(path, seal_document(doc), max_bytes=None)
        return True


def _rewrite_stored(
    ref: str,
    rewrite: Any,
    expect_status: str | None,
    expect_park_id: str | None,
) -> bool:
    """:func:`rewrite_snapshot_status` of a store checkpoint: one conditional update
    (``update_checkpoint_if``: only while no live claim holds it and it still has the
    expected status / park)."""
    from harnpy.lifecycle.checkpoint_store import checkpoint_for
    from harnpy.runtime.snapshot import SnapshotError, open_document, seal_document
    from harnpy.store import CheckpointMeta
    from harnpy.store.errors import StoreError

    def transform(body: bytes) -> tuple[bytes, CheckpointMeta] | None:
        try:
            doc = open_document(body, f"checkpoint {ref}")
        except SnapshotError:
            return None
        if not isinstance(doc, dict):
            return None
        inner = doc.get("worker")
        target = inner if isinstance(inner, dict) else doc
        if not rewrite(doc, target):
            return None
        park = target.get("park_id")
        meta = CheckpointMeta(
            status=str(target.get("status")),
            park_id=park if isinstance(park, str) else None,
            name=target.get("name") if isinstance(target.get("name"), str) else None,
            mode=target.get("mode") if isinstance(target.get("mode"), str) else None,
        )
        return seal_document(doc), meta

    try:
        store, key = checkpoint_for(ref)
        return store.update_checkpoint_if(
            key, transform, expect_status=expect_status, expect_park_id=expect_park_id
        )
    except StoreError:
        return False


def _read_worker_record(path: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(document, worker record)`` of a worker snapshot file: the record is the document's
    ``worker`` object when it has one, else the document itself. None when the file cannot
    be read, is not sealed with our key (or was changed since) or is not a JSON object."""
    from harnpy.lifecycle.checkpoint_store import is_store_ref
    from harnpy.runtime.snapshot import (
        MAX_SNAPSHOT_BYTES,
        SnapshotError,
        open_document,
        read_snapshot_bytes,
    )

    try:
        if is_store_ref(path):
            got = _stored(path)
            if got is None:
                return None
            doc = open_document(got[1], f"checkpoint {path}")
            if got[0].status == "running" and isinstance(doc, dict):
                # a live claim holds it (the body shown is the park): a resume runs now
                doc = {**doc, "status": "running", "owner": got[0].claim_owner}
        else:
            doc = open_document(read_snapshot_bytes(path, MAX_SNAPSHOT_BYTES), f"snapshot {path}")
    except SnapshotError:
        return None
    if not isinstance(doc, dict):
        return None
    inner = doc.get("worker")
    return doc, (inner if isinstance(inner, dict) else doc)


def snapshot_park(path: str | None) -> tuple[str | None, str | None]:
    """``(status, park_id)`` recorded in a worker snapshot file; ``(None, None)`` when it
    cannot be read."""
    read = _read_worker_record(path) if path else None
    if read is None:
        return None, None
    target = read[1]
    st, park = target.get("status"), target.get("park_id")
    return (st if isinstance(st, str) else None), (park if isinstance(park, str) else None)


def snapshot_status(path: str | None) -> str | None:
    """The ``status`` recorded in a worker snapshot file (top level or under ``worker``)."""
    return snapshot_park(path)[0]


def is_callable(v: Any) -> bool:
    """Whether ``v`` can be called as a handler, predicate or factory: the same values every
    callback builtin accepts (:func:`harnpy.stdlib._common.is_callable`)."""
    from harnpy.stdlib._common import is_callable as callable_value

    return callable_value(v)


def callable_name(v: Any) -> str:
    """The name a callable is stored under (closures keep no code in trigger records)."""
    return str(getattr(v, "name", "closure"))


def jsonable(v: Any) -> Any:
    """A JSON-able copy of a Harn value for stored payloads: closures become
    ``"<fn name>"``, other non-JSON values their display text."""
    t = type(v)
    if v is None or t in (bool, int, float, str):
        return v
    if t is list:
        return [jsonable(x) for x in v]
    if t is dict:
        return {str(k): jsonable(x) for k, x in v.items()}
    if is_callable(v):
        return f"<fn {callable_name(v)}>"
    from harnpy.runtime.display import display

    return display(v)
