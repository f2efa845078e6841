"""Snapshot documents as bytes: JSON text, the seal that authenticates a document, capped
reads, atomic writes and the top-level validation.
"""

from __future__ import annotations

import json
import os
from typing import Any

from harnpy.runtime.code import (
    CODEGEN_VERSION,
)
from harnpy.runtime.snapshot.base import (
    FORMAT_VERSION,
    MAX_SNAPSHOT_BYTES,
    SnapshotError,
)


def dumps(doc: dict[str, Any]) -> str:
    """Serialize a snapshot document to JSON text (compact, UTF-8 kept)."""
    return dumps_bytes(doc).decode("utf-8")


def dumps_bytes(doc: Any) -> bytes:
    """Serialize a snapshot document to compact UTF-8 JSON bytes (orjson when installed,
    else the standard library; both refuse NaN/Infinity, which the encoder tags)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        pass
    else:
        try:
            return orjson.dumps(doc)
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. an int beyond 64 bits: the standard encoder handles it
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def loads(data: str | bytes) -> Any:
    """Parse JSON text or bytes (orjson when installed).

    Raises:
        ValueError: invalid JSON (``json.JSONDecodeError`` / ``orjson.JSONDecodeError``), or
            arrays/objects nested too deeply to parse (``ValueError``, never
            ``RecursionError``).
    """
    try:
        import orjson
    except ImportError:  # pragma: no cover
        return _std_loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # same verdict, with the standard library's message (or: nested past orjson's limit)
        return _std_loads(data)


def _std_loads(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def seal_document(doc: dict[str, Any]) -> bytes:
    """``doc`` as compact JSON bytes sealed with the snapshot key (:func:`harnpy.security.seal`):
    what every snapshot file harnpy writes holds.

    Raises:
        SnapshotError: ``E402`` when the document is nested too deeply to serialize;
            ``E401`` when the snapshot key cannot be used (the message says how to fix it).
    """
    from harnpy.security import SealError, seal

    try:
        body = dumps_bytes(doc)
    except RecursionError:
        raise SnapshotError("a value is nested too deeply to snapshot", "E402") from None
    try:
        return seal(body)
    except SealError as e:
        raise SnapshotError(f"cannot seal the snapshot: {e.message}", "E401") from None


def open_document(data: bytes, what: str) -> Any:
    """Check the seal of a snapshot file's bytes, then parse them (nothing is decoded before
    the seal matched).

    Args:
        data: the file's bytes (read with :func:`read_snapshot_bytes`).
        what: how messages name it (``"snapshot state.json"``).

    Raises:
        SnapshotError: ``E404``: not sealed, sealed with another key, changed after it was
            written (the :class:`~harnpy.security.SealError` message), or not JSON.
    """
    from harnpy.security import SealError, unseal

    try:
        body = unseal(data, what)
    except SealError as e:
        raise SnapshotError(e.message, "E404") from None
    try:
        return loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{what} is not valid JSON: {e}", "E404") from None


def read_snapshot_bytes(path: str, max_bytes: int = MAX_SNAPSHOT_BYTES) -> bytes:
    """The bytes of snapshot file ``path``: a regular file of at most ``max_bytes`` (its type
    and size are checked before anything is read; at most ``max_bytes + 1`` bytes are read,
    :func:`harnpy.security.read_capped`).

    Raises:
        SnapshotError: ``E403`` over the limit; ``E404`` not a regular file (a FIFO, a
            device, a directory) or unreadable.
    """
    from harnpy.security import FileTooLarge, read_capped

    try:
        return read_capped(path, max_bytes)
    except FileTooLarge as e:
        raise SnapshotError(
            f"snapshot {path} is {e.size} bytes, over the {max_bytes}-byte limit", "E403"
        ) from None
    except OSError as e:
        raise SnapshotError(f"cannot read snapshot {path}: {e.strerror or e}", "E404") from None


def write_atomic(
    path: str,
    text: str | bytes,
    max_bytes: int | None = MAX_SNAPSHOT_BYTES,
    *,
    fsync: bool = True,
    make_dirs: bool = True,
) -> None:
    """Write ``text`` to ``path`` atomically (:func:`harnpy.security.write_private`: temp file
    ``.snapshot-*.tmp`` in the same directory, fsync, rename, fsync of the directory, mode
    0600 whatever the umask). A crash mid-write leaves the previous file readable. With
    ``fsync=False`` the rename is still atomic for readers, but a power loss may lose the
    new version (used for advisory metadata writes). ``make_dirs=False`` (paths a user
    typed) does not create a missing directory; with it, missing directories are created
    0700. The bytes are written as given: seal documents first (:func:`seal_document`).

    Raises SnapshotError when the encoded size exceeds ``max_bytes``; OSError when the file
    cannot be written (FileNotFoundError for a missing directory with ``make_dirs=False``).
    """
    from harnpy.security import private_dir, write_private

    data = text if isinstance(text, bytes) else text.encode("utf-8")
    if max_bytes is not None and len(data) > max_bytes:
        raise SnapshotError(
            f"snapshot is {len(data)} bytes, over the {max_bytes}-byte limit", "E403"
        )
    d = os.path.dirname(os.path.abspath(path)) or "."
    if make_dirs and not os.path.isdir(d):
        private_dir(d)
    write_private(path, data, durable=fsync, tmp_prefix=".snapshot-")


def load_document(path: str, max_bytes: int = MAX_SNAPSHOT_BYTES) -> dict[str, Any]:
    """Read, unseal and validate a program snapshot file (type and size first, then the
    seal, then JSON and the envelope). Never modifies it.

    Raises:
        SnapshotError: E403 (too big), E404 (unreadable, not a regular file, not sealed or
            changed since it was written, not JSON, not a snapshot), E405 (other format).
    """
    data = read_snapshot_bytes(path, max_bytes)
    doc = open_document(data, f"snapshot {path}")
    validate_document(doc, path)
    return doc  # type: ignore[no-any-return]


def validate_document(doc: Any, where: str = "snapshot") -> None:
    """Check the envelope (:class:`~harnpy.runtime.snapshot_model.SnapshotEnvelope`).

    Raises:
        SnapshotError: E404 when ``doc`` is not a harnpy snapshot (the message names the
            first bad field), E405 when its format or codegen version differs from ours.
    """
    from harnpy.runtime.snapshot_model import SnapshotEnvelope
    from harnpy.shapes import ShapeError, structure

    try:
        env = structure(doc, SnapshotEnvelope)
    except ShapeError as e:
        raise SnapshotError(f"{where} is not a harnpy snapshot: {e}", "E404") from None
    if env.harnpy_snapshot_version != FORMAT_VERSION:
        raise SnapshotError(
            f"{where} has snapshot format version {env.harnpy_snapshot_version}; this harnpy "
            f"reads version {FORMAT_VERSION}",
            "E405",
        )
    if env.codegen_version != CODEGEN_VERSION:
        raise SnapshotError(
            f"{where} was written by a harnpy with codegen version {env.codegen_version}; "
            f"this harnpy uses {CODEGEN_VERSION} and cannot continue it",
            "E405",
        )
