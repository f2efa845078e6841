"""Store fixtures for every test directory (registered by the root conftest).

* ``pg_database`` (module scope): a fresh PostgreSQL database with a unique name on the
  server of ``HARNPY_TEST_POSTGRES`` (default ``postgresql://postgres@127.0.0.1:5432/test``),
  dropped after the module. No server: the test is skipped with the reason, or fails when
  ``HARNPY_REQUIRE_POSTGRES=1`` (CI).
* ``pg_url``: a URL on that database whose ``search_path`` is a fresh schema, so every test
  sees empty tables.
* ``store_url`` (parametrized ``sqlite`` / ``postgresql``): a store URL on each backend;
  every store test runs against both.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

PG_ENV = "HARNPY_TEST_POSTGRES"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
REQUIRE_ENV = "HARNPY_REQUIRE_POSTGRES"


def pg_admin_url() -> str:
    """The PostgreSQL server tests use (a URL naming an existing database)."""
    return os.environ.get(PG_ENV) or PG_DEFAULT


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead."""
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, "/" + name, p.query, ""))


def with_schema(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` as their search path."""
    opt = "options=" + quote(f"-csearch_path={schema}")
    sep = "&" if urlsplit(url).query else "?"
    return url + sep + opt


def _admin() -> object:
    try:
        import psycopg
    except ImportError:
        return _unavailable("psycopg is not installed")
    try:
        return psycopg.connect(pg_admin_url(), autocommit=True, connect_timeout=3)
    except psycopg.Error as e:
        return _unavailable(" ".join(str(e).split()))


def _unavailable(why: str) -> None:
    msg = f"PostgreSQL is not reachable at {pg_admin_url()} ({why}); set {PG_ENV}"
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(msg + f" ({REQUIRE_ENV} is set: PostgreSQL tests must run)")
    pytest.skip(msg)


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """A fresh database (module docstring); yields its URL."""
    conn = _admin()
    name = f"harnpy_test_{uuid.uuid4().hex[:12]}"
    conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[attr-defined]
    try:
        yield with_database(pg_admin_url(), name)
    finally:
        try:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[attr-defined]
        finally:
            conn.close()  # type: ignore[attr-defined]


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """A URL on the module's database with a fresh, empty schema."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_database, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    return with_schema(pg_database, schema)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL on each SQL backend (module docstring)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'store.sqlite3'}"
    return str(request.getfixturevalue("pg_url"))
