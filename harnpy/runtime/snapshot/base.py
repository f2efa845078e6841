"""The snapshot format's constants and its error type (see :mod:`harnpy.runtime.snapshot`)."""

from __future__ import annotations

FORMAT_VERSION = 1
SNAPSHOT_TYPE = "harnpy_snapshot"
#: Default cap on a snapshot file (lifecycle spec: snapshots are limited to 4 MiB).
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024

_LIST_ITER: type = type(iter([]))
_RANGE_ITER = type(iter(range(0)))
_EMPTY_TUPLE_ITER = type(iter(()))


class SnapshotError(Exception):
    """A snapshot cannot be taken or restored; ``code`` is a diagnostic code (E4xx)."""

    def __init__(self, message: str, code: str = "E401") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
