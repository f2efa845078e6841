"""The two SQL backends under :class:`harnpy.store.sql.SqlStore`: a connection, transactions,
the store clock and the dialect's few differences.

* :class:`SqliteBackend` — one ``sqlite3`` connection (WAL, ``synchronous=FULL``); every
  write transaction is ``BEGIN IMMEDIATE`` (the database write lock is taken before the
  first read, so a read-check-write is atomic across processes). The file and its
  ``-wal`` / ``-shm`` companions are created 0600 (SQLite gives the companions the
  database file's mode), the directory 0700 when harnpy creates it.
* :class:`PostgresBackend` — a ``psycopg_pool.ConnectionPool``; transactions at READ
  COMMITTED with row locks (``FOR UPDATE``, ``SKIP LOCKED`` for claims); the migration lock
  is ``pg_advisory_xact_lock``. The store clock is the database's (``clock_timestamp()``):
  lease arithmetic never uses a host clock, so host clock skew cannot break a lease.

SQL is written once with ``?`` placeholders (the PostgreSQL backend turns them into
``%s``). ``clock_offset_ms`` shifts the store clock (tests move time forward with it).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from harnpy.store.errors import StoreError, StoreUnavailable
from harnpy.store.url import StoreURL

__all__ = ["Backend", "Conn", "PostgresBackend", "SqliteBackend", "open_backend"]

#: Advisory-lock key of schema migrations (PostgreSQL): "harnpy" as an int.
MIGRATION_LOCK_KEY = 0x6861726E7079


class Conn:
    """One transaction's (or one read's) connection: ``all`` / ``one`` / ``run``, and the
    store clock ``now_ms()`` (read once per transaction)."""

    def __init__(self, backend: Backend, raw: Any) -> None:
        self.backend = backend
        self.raw = raw
        self._now: int | None = None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        cur = self.backend.execute(self.raw, sql, params)
        return list(cur.fetchall())

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        cur = self.backend.execute(self.raw, sql, params)
        row = cur.fetchone()
        return tuple(row) if row is not None else None

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute a statement; returns the number of rows it changed."""
        cur = self.backend.execute(self.raw, sql, params)
        return int(cur.rowcount or 0)

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Execute one statement for each parameter tuple of ``rows`` (batched: one
        round trip's worth on PostgreSQL, not one per row)."""
        if rows:
            self.backend.execute_many(self.raw, sql, rows)

    def now_ms(self) -> int:
        """The store clock in epoch milliseconds (the database's on PostgreSQL), the same
        value for the whole transaction."""
        if self._now is None:
            self._now = self.backend.db_now_ms(self) + self.backend.clock_offset_ms
        return self._now


class Backend:
    """What :class:`~harnpy.store.sql.SqlStore` needs from a database."""

    dialect = ""
    #: appended to a SELECT that locks the rows it reads (none on SQLite: the whole
    #: database is locked by BEGIN IMMEDIATE)
    for_update = ""
    #: the same, skipping rows another transaction holds (claims)
    skip_locked = ""

    def __init__(self, url: StoreURL) -> None:
        self.url = url
        self.clock_offset_ms = 0

    def execute(self, raw: Any, sql: str, params: Sequence[Any]) -> Any:  # pragma: no cover
        """Run one statement on a raw connection; returns its cursor."""
        raise NotImplementedError

    def execute_many(self, raw: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter tuple of ``rows`` on a raw connection."""
        for params in rows:
            self.execute(raw, sql, params)

    def db_now_ms(self, conn: Conn) -> int:  # pragma: no cover
        """The database's clock (epoch ms), without the offset."""
        raise NotImplementedError

    def txn(self) -> contextlib.AbstractContextManager[Conn]:  # pragma: no cover
        """A write transaction (committed when the block ends, rolled back on an error)."""
        raise NotImplementedError

    def read(self) -> contextlib.AbstractContextManager[Conn]:  # pragma: no cover
        """A read-only connection."""
        raise NotImplementedError

    def migration_lock(self, conn: Conn) -> None:
        """Serialize migrations (inside the migrating transaction)."""

    def close(self) -> None:
        """Release connections."""

    def error_types(self) -> tuple[type[BaseException], ...]:
        """Database exception types a store call may raise (wrapped as StoreError)."""
        return ()

    def integrity_error(self) -> tuple[type[BaseException], ...]:
        """The exception types of a unique-key violation."""
        return ()

    def table_names(self, conn: Conn) -> set[str]:  # pragma: no cover
        """The tables of the database."""
        raise NotImplementedError


# ===================================================================== SQLite


def _private_parent(path: str) -> None:
    """Create the directory of ``path`` 0700 (whatever the umask) when missing."""
    d = os.path.dirname(path) or "."
    missing = []
    p = d
    while p and not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    os.makedirs(d, mode=0o700, exist_ok=True)
    for m in missing:
        with contextlib.suppress(OSError):
            os.chmod(m, 0o700)


class SqliteBackend(Backend):
    """SQLite (module docstring). One connection, guarded by a lock so that a lease renewal
    thread may share the store object."""

    dialect = "sqlite"

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        path = url.target
        verb = "create"
        try:
            _private_parent(path)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                # an existing file keeps its mode until it proves to be a store (below)
                verb = "open"
                fd = os.open(path, os.O_RDWR)
            os.close(fd)
        except IsADirectoryError:
            raise StoreError(
                f"store {url}: {path} is a directory, not a database file", "config"
            ) from None
        except OSError as e:
            raise StoreError(
                f"store {url}: cannot {verb} {path}: {e.strerror or e}", "io"
            ) from None
        try:
            self._db = sqlite3.connect(
                path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise StoreError(f"store {url}: cannot open {path}: {e}", "io") from None
        self._lock = threading.RLock()
        try:
            self._db.execute("PRAGMA busy_timeout = 30000")
            with contextlib.suppress(sqlite3.OperationalError):  # e.g. a read-only mount
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            tables = [
                str(r[0])
                for r in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                ).fetchall()
            ]
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise StoreError(
                f"store {url}: {path} is not an SQLite database ({e}); name another file or "
                "move this one away",
                "config",
            ) from None
        legacy = {"waits", "resume_receipts"} <= set(tables)  # harnpy's wait store of old
        if tables and "harnpy_schema" not in tables and not legacy:
            # another program's database: harnpy's tables are not written into it
            self._db.close()
            shown = ", ".join(tables[:3]) + (", ..." if len(tables) > 3 else "")
            raise StoreError(
                f"store {url}: {path} is not a harnpy store but the SQLite database of "
                f"something else (tables {shown}; no harnpy_schema); name another file",
                "config",
            )
        os.chmod(path, 0o600)  # a store (or an empty file becoming one): private
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.chmod(path + suffix, 0o600)

    def execute(self, raw: Any, sql: str, params: Sequence[Any]) -> Any:
        return raw.execute(sql, tuple(params))

    def execute_many(self, raw: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raw.executemany(sql, [tuple(p) for p in rows])

    def db_now_ms(self, conn: Conn) -> int:
        return time.time_ns() // 1_000_000

    @contextlib.contextmanager
    def txn(self) -> Iterator[Conn]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield Conn(self, self._db)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def read(self) -> Iterator[Conn]:
        with self._lock:
            yield Conn(self, self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def error_types(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def integrity_error(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.IntegrityError,)

    def table_names(self, conn: Conn) -> set[str]:
        rows = conn.all("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(r[0]) for r in rows}


# ===================================================================== PostgreSQL

_PLACEHOLDER = re.compile(r"\?")


def classify_pg_error(url: StoreURL, e: BaseException) -> StoreError:
    """A one-line :class:`StoreError` for a failed PostgreSQL connection: unreachable,
    wrong credentials, or a database that does not exist."""
    text = " ".join(str(e).split())
    low = text.lower()
    if (
        "password authentication failed" in low
        or ("role" in low and "does not exist" in low)
        or "no pg_hba.conf entry" in low
        or "authentication" in low
    ):
        return StoreUnavailable(
            f"store {url}: the server refused the credentials ({text}); check the user and "
            "password in the URL",
            "auth",
        )
    if "database" in low and "does not exist" in low:
        return StoreError(
            f"store {url}: {text}; create it (createdb) or name an existing database", "config"
        )
    return StoreUnavailable(
        f"store {url}: cannot connect ({text}); is the server running and the host and port right?",
        "unreachable",
    )


class PostgresBackend(Backend):
    """PostgreSQL through psycopg 3 and psycopg_pool (module docstring)."""

    dialect = "postgresql"
    for_update = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: StoreURL, *, max_size: int = 4, connect_timeout: int = 10) -> None:
        super().__init__(url)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                f"store {url}: PostgreSQL needs psycopg 3 and psycopg_pool (pip install "
                "'psycopg[binary]' psycopg_pool)",
                "config",
            ) from None
        self._psycopg = psycopg
        try:
            # one direct connection first: it tells unreachable from refused credentials
            probe = psycopg.connect(url.target, connect_timeout=connect_timeout)
            probe.close()
        except psycopg.Error as e:
            raise classify_pg_error(url, e) from None
        except Exception as e:  # noqa: BLE001 - a malformed conninfo
            raise StoreError(f"store {url}: {e}", "config") from None
        self._pool = ConnectionPool(
            url.target,
            min_size=1,
            max_size=max_size,
            kwargs={"connect_timeout": connect_timeout},
            open=False,
            name="harnpy-store",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout + 5)
        except Exception as e:  # noqa: BLE001 - PoolTimeout and friends
            raise classify_pg_error(url, e) from None

    def execute(self, raw: Any, sql: str, params: Sequence[Any]) -> Any:
        return raw.execute(_PLACEHOLDER.sub("%s", sql), tuple(params), prepare=False)

    def execute_many(self, raw: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with raw.cursor() as cur:  # psycopg pipelines executemany: one round trip's worth
            cur.executemany(_PLACEHOLDER.sub("%s", sql), [tuple(p) for p in rows])

    def db_now_ms(self, conn: Conn) -> int:
        row = conn.one("SELECT floor(extract(epoch from clock_timestamp()) * 1000)::bigint")
        assert row is not None
        return int(row[0])

    @contextlib.contextmanager
    def txn(self) -> Iterator[Conn]:
        with self._pool.connection() as raw:
            with raw.transaction():
                yield Conn(self, raw)

    @contextlib.contextmanager
    def read(self) -> Iterator[Conn]:
        with self._pool.connection() as raw:
            with raw.transaction():
                yield Conn(self, raw)

    def migration_lock(self, conn: Conn) -> None:
        conn.one("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK_KEY,))

    def close(self) -> None:
        self._pool.close()

    def error_types(self) -> tuple[type[BaseException], ...]:
        from psycopg_pool import PoolTimeout

        return (self._psycopg.Error, PoolTimeout)

    def integrity_error(self) -> tuple[type[BaseException], ...]:
        return (self._psycopg.errors.UniqueViolation,)

    def table_names(self, conn: Conn) -> set[str]:
        rows = conn.all(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {str(r[0]) for r in rows}


def open_backend(url: StoreURL) -> Backend:
    """The backend of an ``sqlite`` / ``postgresql`` URL.

    Raises:
        StoreError: the database cannot be opened (one line naming the store).
    """
    if url.kind == "sqlite":
        return SqliteBackend(url)
    if url.kind == "postgresql":
        return PostgresBackend(url)
    raise StoreError(f"store {url}: not an SQL store", "config")
