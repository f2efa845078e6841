"""Store URLs: which backend a ``HARNPY_STORE`` / ``--store`` value names.

* unset or empty: no store (today's file snapshots: the ``directory`` backend);
* ``default`` (also ``sqlite``, ``1``, ``true``, ``yes``): ``sqlite:///<cwd>/.harn/harnpy.sqlite3``;
* ``sqlite:///ABS/PATH``, ``sqlite:REL/PATH``, or a plain file path: an SQLite database file
  (a plain path naming an existing directory, or ending in ``/``, gets ``harnpy.sqlite3``
  inside it);
* ``postgresql://user:pass@host:port/db?...`` (also ``postgres://``): PostgreSQL through
  psycopg 3 (any libpq URL parameters);
* ``directory:PATH``: worker snapshots as JSON files in ``PATH`` (the no-store default
  backend, named explicitly).

The display form of a URL (:attr:`StoreURL.display`) masks a password, so messages never
print one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from harnpy.store.errors import StoreError

__all__ = ["DEFAULT_SQLITE_RELPATH", "LEGACY_SQLITE_RELPATH", "StoreURL", "parse_store_url"]

DEFAULT_SQLITE_RELPATH = os.path.join(".harn", "harnpy.sqlite3")
#: The wait store file of harnpy before the unified store (read if named explicitly).
LEGACY_SQLITE_RELPATH = os.path.join(".harn", "waits.sqlite3")
_DEFAULT_WORDS = ("default", "sqlite", "1", "true", "yes")


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. ``kind`` is ``sqlite`` / ``postgresql`` / ``directory``;
    ``target`` the absolute file or directory path, or the libpq connection URL (with its
    password); ``display`` the URL to show (password masked); ``is_default`` whether it came
    from ``default``."""

    kind: str
    target: str
    display: str
    is_default: bool = False

    def __str__(self) -> str:
        return self.display


def _mask(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("@", 1)[-1] if "@" in url else url
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, f"{user}:***@{host}{port}", parts.path, parts.query, ""))


def parse_store_url(value: str | None, cwd: str | None = None) -> StoreURL | None:
    """The store ``value`` names (module docstring), or None for no store.

    Raises:
        StoreError: ``kind="config"`` for a scheme harnpy does not know.
    """
    if value is None:
        return None
    v = value.strip()
    if not v:
        return None
    base = cwd or os.getcwd()
    low = v.lower()
    if low in _DEFAULT_WORDS:
        path = os.path.join(base, DEFAULT_SQLITE_RELPATH)
        return StoreURL("sqlite", path, f"sqlite://{path}", is_default=True)
    if low.startswith(("postgres://", "postgresql://")):
        return StoreURL("postgresql", v, _mask(v))
    if low.startswith("directory:"):
        raw = v[len("directory:") :]
        if raw.startswith("//"):
            raw = raw[2:]
        if not raw:
            raise StoreError(f"store URL `{v}` names no directory", "config")
        path = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(base, raw))
        return StoreURL("directory", path, f"directory:{path}")
    if low.startswith("sqlite:"):
        raw = v[len("sqlite:") :]
        if raw.startswith("///"):
            raw = raw[2:]
        elif raw.startswith("//"):
            raw = raw[2:]
        if not raw:
            raise StoreError(f"store URL `{v}` names no database file", "config")
        if raw.startswith("/"):
            # `sqlite:///$PWD/x` has four slashes: one path, not POSIX's `//` root
            raw = "/" + raw.lstrip("/")
        path = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(base, raw))
        return StoreURL("sqlite", path, f"sqlite://{path}")
    if "://" in v:
        scheme = v.split("://", 1)[0]
        raise StoreError(
            f"store URL `{_mask(v)}`: unknown scheme `{scheme}` (use sqlite:///PATH, "
            "postgresql://..., or directory:PATH)",
            "config",
        )
    p = v if os.path.isabs(v) else os.path.join(base, v)
    if os.path.isdir(p) or v.endswith(("/", os.sep)):
        p = os.path.join(p, "harnpy.sqlite3")
    p = os.path.normpath(p)
    return StoreURL("sqlite", p, f"sqlite://{p}")
