"""Plumbing of the SQL store (private): the backend, transactions, JSON columns, warnings."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from harnpy.store.backends import Backend, Conn, open_backend
from harnpy.store.errors import CorruptRecord, StoreError
from harnpy.store.url import StoreURL

__all__ = ["SqlBase"]


class SqlBase:
    """The plumbing every SQL store mixin relies on: the backend, transactions that turn
    database errors into one-line :class:`StoreError`, JSON columns, warnings.

    Raises:
        StoreError: the database cannot be opened or reached.
    """

    kind = "sql"

    def __init__(self, url: StoreURL, *, warn: Callable[[str], None] | None = None) -> None:
        self.url = url
        self.backend: Backend = open_backend(url)
        self.dialect = self.backend.dialect
        self._warn = warn or (lambda text: sys.stderr.write(text + "\n"))
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ plumbing

    @property
    def display(self) -> str:
        """The store's URL as shown in messages (password masked)."""
        return self.url.display

    @property
    def location(self) -> str:
        """What names this store to a child process (``HARNPY_STORE``): the database file
        of SQLite, the connection URL (with its password) of PostgreSQL."""
        return self.url.target

    @property
    def clock_offset_ms(self) -> int:
        """Shift of the store clock (tests move lease time forward with it)."""
        return self.backend.clock_offset_ms

    @clock_offset_ms.setter
    def clock_offset_ms(self, value: int) -> None:
        self.backend.clock_offset_ms = value

    def close(self) -> None:
        """Release the connections."""
        self.backend.close()

    def __enter__(self) -> SqlBase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def warn(self, key: str, text: str) -> None:
        """Write warning ``text`` once per ``key`` for this store object."""
        if key not in self._warned:
            self._warned.add(key)
            self._warn(f"harnpy: warning: store {self.display}: {text}")

    def _insert_waiter(
        self, c: Conn, waitpoint_id: str, worker_id: str, park_id: str | None
    ) -> None:
        """Inside the open transaction ``c``: record that ``worker_id`` (at ``park_id``)
        waits on the waitpoint, replacing an earlier row of the same worker.

        Raises:
            StoreError: no such waitpoint (the transaction rolls back).
        """
        got = c.one(
            "SELECT id FROM waitpoints WHERE id = ?" + self.backend.for_update, (waitpoint_id,)
        )
        if got is None:
            raise StoreError(f"store {self.display}: no waitpoint {waitpoint_id}", "config")
        c.run(
            "DELETE FROM waitpoint_waiters WHERE waitpoint_id = ? AND worker_id = ?",
            (waitpoint_id, worker_id),
        )
        c.run(
            "INSERT INTO waitpoint_waiters (waitpoint_id, worker_id, park_id, "
            "created_at_ms) VALUES (?, ?, ?, ?)",
            (waitpoint_id, worker_id, park_id, c.now_ms()),
        )

    def _error(self, e: BaseException) -> StoreError:
        text = " ".join(str(e).split()) or type(e).__name__
        if self.dialect == "postgresql":
            from harnpy.store.backends import classify_pg_error

            low = text.lower()
            if "connection" in low and ("closed" in low or "refused" in low or "lost" in low):
                return classify_pg_error(self.url, e)
        return StoreError(f"store {self.display}: {text}", "io")

    @contextlib.contextmanager
    def txn(self) -> Iterator[Conn]:
        """A write transaction; database errors become :class:`StoreError`."""
        errors = self.backend.error_types()
        try:
            with self.backend.txn() as c:
                yield c
        except StoreError:
            raise
        except errors as e:
            raise self._error(e) from None

    @contextlib.contextmanager
    def read(self) -> Iterator[Conn]:
        """A read; database errors become :class:`StoreError`."""
        errors = self.backend.error_types()
        try:
            with self.backend.read() as c:
                yield c
        except StoreError:
            raise
        except errors as e:
            raise self._error(e) from None

    def now_ms(self) -> int:
        """The store clock now (epoch ms; the database's on PostgreSQL)."""
        with self.read() as c:
            return c.now_ms()

    def blob(self, value: Any, what: str) -> bytes:
        """The bytes of a BLOB column. SQLite keeps whatever a hand edit or another program
        put there: a text, a number or a NULL in its place is :class:`CorruptRecord` naming
        ``what`` (table and key), never a ``bytes()`` of it (an int would become that many
        zero bytes, a str a TypeError)."""
        if type(value) is bytes:
            return value
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        raise CorruptRecord(
            f"store {self.display}: {what} is corrupted (stored as {type(value).__name__}, not "
            "bytes); it was left as it is"
        )

    def load_json(self, text: Any, what: str) -> Any:
        """Parse a JSON column; a value that does not parse is :class:`CorruptRecord`
        naming ``what`` (table and key)."""
        if text is None:
            return None
        try:
            return json.loads(text)
        except (ValueError, TypeError) as e:
            raise CorruptRecord(
                f"store {self.display}: {what} is corrupted (not JSON: {e}); it was left as it is"
            ) from None
