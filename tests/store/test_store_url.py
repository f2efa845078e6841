"""Store URLs (harnpy/store/url.py): ``sqlite:///$PWD/x`` (four slashes when ``$PWD`` is
absolute) names the same file as ``sqlite:///abs/x``, shown with one leading slash."""

from __future__ import annotations

from harnpy.store.url import parse_store_url


def test_extra_leading_slashes_name_one_absolute_path() -> None:
    a = parse_store_url("sqlite:////tmp/x/s.db")
    b = parse_store_url("sqlite:///tmp/x/s.db")
    assert a is not None and b is not None
    assert a.target == b.target == "/tmp/x/s.db"
    assert a.display == "sqlite:///tmp/x/s.db"  # before: sqlite:////tmp/x/s.db, store //tmp/...


def test_relative_sqlite_paths_resolve_from_the_working_directory() -> None:
    u = parse_store_url("sqlite:rel/s.db", cwd="/w")
    assert u is not None and u.target == "/w/rel/s.db"
