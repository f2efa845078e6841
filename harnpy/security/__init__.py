"""Trust primitives for state harnpy keeps on disk (or in a store): sealed documents, the
snapshot key, bounded reads and private files.

This package imports nothing else from harnpy; every layer may use it. The API is small
and stable:

Sealing (:mod:`harnpy.security.seal`, :mod:`harnpy.security.keys`):

* ``seal(body: bytes) -> bytes``: authenticate JSON object text (HMAC-SHA256 under the
  snapshot key); the result is still a JSON object, with ``"_seal": "hs1:<key id>:<mac>"``
  as its first member.
* ``unseal(data: bytes, what: str) -> bytes``: check a sealed document *before anything in
  it is decoded* and return the original bytes; :class:`SealError` (one line naming
  ``what``, the key and what to do) when the seal is missing, malformed, made with another
  key, or does not match (any changed byte).
* ``snapshot_key() -> SnapshotKey``: ``HARNPY_SNAPSHOT_KEY`` (share one key between
  machines) or a per-user key file (``HARNPY_SNAPSHOT_KEY_FILE``, default
  ``~/.config/harnpy/snapshot.key``) created 0600 on first use, race-free; a key file owned
  by another user or readable by others is refused (:class:`KeyUnavailable`, a
  :class:`SealError`).

Files (:mod:`harnpy.security.files`):

* ``read_capped(path, cap) -> bytes``: a regular file only (a FIFO, device or directory is
  refused without blocking: ``O_NONBLOCK`` + ``fstat``), its size checked before reading,
  at most ``cap + 1`` bytes read (:class:`NotRegularFile`, :class:`FileTooLarge`, both
  ``OSError``).
* ``read_limit() -> int``: the user read limit (``HARNPY_MAX_READ_BYTES``, default 64 MiB);
  ``read_limited(path)`` / ``read_text_limited(path, errors=, newline=)`` are
  ``read_capped`` under it (a refusal says how to raise it), ``read_stream_limited(stream,
  what, line=)`` reads stdin under it (:class:`StreamTooLarge`). Every read of a file a
  user or a program names goes through them. ``read_part(path, n, start=, last=)`` (a
  head or a log's tail) and ``file_digest(path)`` (streamed) read any size in bounded
  memory, refusing FIFOs and devices the same way.
* ``private_dir(path) -> str``: create directories 0700 whatever the umask; an existing one
  must belong to us (:class:`UnsafePath`) and is tightened to 0700.
* ``write_private(path, data, *, durable=True, tmp_prefix=".harnpy-")``: atomic 0600 write
  (temp file in the same directory, fsync, rename, fsync of the directory).

Who uses it: program snapshots (``__snapshot_exit``, REPL ``:save``), worker snapshots and
the durable store seal every document they write and unseal every one they read; see
dev/impl.md, "Snapshot trust".
"""

from __future__ import annotations

from harnpy.security.errors import KeyUnavailable, SealError
from harnpy.security.files import (
    DEFAULT_READ_LIMIT,
    READ_LIMIT_ENV,
    FileTooLarge,
    NotRegularFile,
    ReadRefused,
    StreamTooLarge,
    UnsafePath,
    file_digest,
    private_dir,
    read_capped,
    read_limit,
    read_limited,
    read_part,
    read_stream_limited,
    read_text_limited,
    write_private,
)
from harnpy.security.keys import KEY_ENV, KEY_FILE_ENV, SnapshotKey, key_file_path, snapshot_key
from harnpy.security.seal import SEAL_FIELD, is_sealed, seal, unseal

__all__ = [
    "DEFAULT_READ_LIMIT",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "SEAL_FIELD",
    "FileTooLarge",
    "KeyUnavailable",
    "NotRegularFile",
    "READ_LIMIT_ENV",
    "ReadRefused",
    "SealError",
    "SnapshotKey",
    "StreamTooLarge",
    "UnsafePath",
    "file_digest",
    "is_sealed",
    "key_file_path",
    "private_dir",
    "read_capped",
    "read_limit",
    "read_limited",
    "read_part",
    "read_stream_limited",
    "read_text_limited",
    "seal",
    "snapshot_key",
    "unseal",
    "write_private",
]
