"""The durable wait store of the trigger layer: :mod:`harnpy.store` (one store interface,
SQLite and PostgreSQL), seen from the lifecycle.

Spec: lifecycle.md §10 (exactly-once resume: one replica atomically claims a wait before
resuming it), §5.1 (``ResumeBy.cloud_harness`` binds to it), §4.4 (trigger / timeout
resume).

There is no wait schema here: waits and resume receipts are tables of the one store
(:mod:`harnpy.store.sql_waits`, migrated by :mod:`harnpy.store.migrations`). This module
only says which store the lifecycle uses:

* ``HARNPY_STORE`` / ``--store`` unset or empty: no store (``cloud_harness`` declines with
  ``no_cloud_session``; ``harnpy worker`` then uses the default below);
* ``default`` (``sqlite``, ``1``...): ``.harn/harnpy.sqlite3`` under the working directory
  (``.harn/waits.sqlite3``, the wait store file of harnpy before the unified store, when
  only that one exists: it migrates in place);
* ``sqlite:///PATH`` or a plain path, ``postgresql://...``: that store
  (:func:`harnpy.store.url.parse_store_url`); ``directory:PATH`` names no SQL store, so no
  durable waits.

Life of a wait, the claim and the resume receipt: :mod:`harnpy.store.sql_waits`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harnpy.store import STORE_ENV, configured_store_url, parse_store_url
from harnpy.store import open_store as _open_sql_store
from harnpy.store.errors import StoreError
from harnpy.store.records import (
    ACTIVE_WAIT_STATUSES,
    FINAL_WAIT_STATUSES,
    Claim,
    WaitRecord,
)
from harnpy.store.url import DEFAULT_SQLITE_RELPATH, LEGACY_SQLITE_RELPATH, StoreURL

if TYPE_CHECKING:
    from harnpy.store.sql import SqlStore

__all__ = [
    "ACTIVE_STATUSES",
    "DEFAULT_STORE_RELPATH",
    "FINAL_STATUSES",
    "STORE_ENV",
    "Claim",
    "StoreError",
    "WaitRecord",
    "configured_store_path",
    "default_store_path",
    "open_store",
    "resolve_store_path",
    "store_log_dir",
]

DEFAULT_STORE_RELPATH = DEFAULT_SQLITE_RELPATH
#: Statuses a wait moves through.
ACTIVE_STATUSES = ACTIVE_WAIT_STATUSES
FINAL_STATUSES = FINAL_WAIT_STATUSES


def default_store_path(cwd: str | None = None) -> str:
    """The SQLite file of the default store under ``cwd``: ``.harn/harnpy.sqlite3``, or
    the legacy ``.harn/waits.sqlite3`` when only that one exists."""
    base = cwd or os.getcwd()
    new = os.path.join(base, DEFAULT_STORE_RELPATH)
    legacy = os.path.join(base, LEGACY_SQLITE_RELPATH)
    if not os.path.exists(new) and os.path.isfile(legacy):
        return legacy
    return new


def _sql_url(url: StoreURL | None, cwd: str | None) -> StoreURL | None:
    if url is None or url.kind == "directory":
        return None
    if url.is_default:
        path = default_store_path(cwd)
        return StoreURL("sqlite", path, f"sqlite://{path}", is_default=True)
    return url


def resolve_store_path(value: str | None, cwd: str | None = None) -> str | None:
    """What names the SQL store a setting names, to :func:`open_store` and to a child
    process's ``HARNPY_STORE``: the SQLite file path, or the PostgreSQL URL. None for no
    store (unset, empty, or a ``directory:`` URL).

    Raises:
        StoreError: an unknown URL scheme (``kind="config"``).
    """
    url = _sql_url(parse_store_url(value, cwd), cwd)
    return url.target if url is not None else None


def configured_store_path(option: str | None = None) -> str | None:
    """The store named by ``option`` or, when that is None, by ``HARNPY_STORE``
    (:func:`resolve_store_path`)."""
    url = _sql_url(configured_store_url(option), None)
    return url.target if url is not None else None


def is_sqlite_path(location: str) -> bool:
    """Whether a store location (:func:`resolve_store_path`) is an SQLite file path."""
    return not location.lower().startswith(("postgres://", "postgresql://"))


def open_store(location: str) -> SqlStore:
    """Open (creating and migrating if needed) the store at ``location`` (an SQLite path or
    a ``sqlite:`` / ``postgresql:`` URL).

    A path is the database file itself, as :func:`resolve_store_path` resolved it: it is
    not read again as a ``HARNPY_STORE`` setting, where a path naming a directory means
    ``harnpy.sqlite3`` inside it (``--store sqlite:///DIR`` named DIR, which the worker
    checkpoints refuse as a directory, while the waits went to ``DIR/harnpy.sqlite3``).

    Raises:
        StoreError: not a database / cannot be opened or reached (one line naming it).
    """
    if is_sqlite_path(location) and not location.lower().startswith("sqlite:"):
        path = os.path.abspath(location)
        return _open_sql_store(StoreURL("sqlite", path, f"sqlite://{path}"))
    return _open_sql_store(location)


def store_log_dir(location: str) -> str:
    """Where resume logs of a store's waits go: ``logs/`` beside an SQLite file, else
    ``.harn/logs`` under the working directory."""
    if is_sqlite_path(location):
        return os.path.join(os.path.dirname(os.path.abspath(location)), "logs")
    return os.path.join(os.getcwd(), ".harn", "logs")
