"""Open stores shared within one process (one pool per URL)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harnpy.store import StoreURL
    from harnpy.store.sql import SqlStore

__all__ = ["shared_store"]

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
