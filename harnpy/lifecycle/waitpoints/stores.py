"""Open stores shared within one process (one pool per URL)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harnpy.store import StoreURL
    from harnpy.store.sql import SqlStore

__all__ = ["existing_store", "shared_store"]

_OPEN: dict[str, SqlStore] = {}
_LOCK = threading.Lock()


def shared_store(url: StoreURL | str) -> SqlStore:
    """The store ``url`` names, opened (and migrated) once per process.

    Raises:
        StoreError: the store cannot be opened (one line naming it).
    """
    from harnpy.store import StoreURL as _URL
    from harnpy.store import open_store, parse_store_url

    parsed = url if isinstance(url, _URL) else parse_store_url(url)
    if parsed is None:
        from harnpy.store import StoreError

        raise StoreError(
            "no store named (give a URL: sqlite:///PATH or postgresql://...)", "config"
        )
    with _LOCK:
        st = _OPEN.get(parsed.target)
        if st is None:
            st = open_store(parsed)
            _OPEN[parsed.target] = st
        return st


def existing_store(url: StoreURL | str) -> SqlStore:
    """As :func:`shared_store`, for a store named by a checkpoint reference rather than
    configured: it must already be a harnpy store. A reference never creates a database:
    an SQLite file that does not exist (or a database without harnpy's tables) is an
    error, not an empty store made on the way (with its directory) that then has no such
    checkpoint.

    Raises:
        StoreError: ``kind="unreachable"`` for a missing SQLite file or a database that is
            not a harnpy store; else as :func:`shared_store`.
    """
    import os

    from harnpy.store import StoreError, open_store, parse_store_url

    parsed = url if not isinstance(url, str) else parse_store_url(url)
    if parsed is None:
        return shared_store(url)
    with _LOCK:
        if parsed.target in _OPEN:
            return _OPEN[parsed.target]
    if parsed.kind == "sqlite" and not os.path.isfile(parsed.target):
        raise StoreError(f"store {parsed.display}: no such database file", "unreachable")
    try:
        probe = open_store(parsed, migrate=False)
    except StoreError as e:
        if e.kind == "config" and parsed.kind == "sqlite":  # another program's file
            raise StoreError(e.message, "unreachable") from None
        raise
    try:
        empty = probe.schema_version() == 0
    finally:
        probe.close()
    if empty:
        raise StoreError(
            f"store {parsed.display}: not a harnpy store (the database has no harnpy tables)",
            "unreachable",
        )
    return shared_store(parsed)
