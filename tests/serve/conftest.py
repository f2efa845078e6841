"""Fixtures shared by the serve tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store URL per backend, shared by the module's tests (runs never collide: ids)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path_factory.mktemp('serve') / 'store.sqlite3'}"
    return str(request.getfixturevalue("pg_database"))
