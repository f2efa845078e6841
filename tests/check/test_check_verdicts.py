"""The on-disk cache of clean static-check verdicts (harnpy/check/verdicts.py): a warm run of
an unchanged clean file skips the checker; anything the verdict depends on (the text, the
runtime's names, imported files the check read) invalidates it; errors are never cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.check import _checker, static_errors
from harnpy.syntax import parse

NAMES = {"println", "len"}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("HARNPY_CACHE_DIR", str(d))
    monkeypatch.delenv("HARNPY_NO_CACHE", raising=False)
    return d


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the checker really ran on (a cache hit does not append)."""
    seen: list[str] = []
    real = _checker.Checker.run

    def counting(self: _checker.Checker) -> list:  # type: ignore[type-arg]
        seen.append(self.path)
        return real(self)

    monkeypatch.setattr(_checker.Checker, "run", counting)
    return seen


def _check(path: str, src: str, names: set[str] | None = NAMES) -> list[str]:
    return [d.code for d in static_errors(parse(src, path), path, src, names)]


def test_a_clean_file_is_checked_once_then_served_from_the_cache(
    cache: Path, runs: list[str]
) -> None:
    src = "fn f(x: int) -> int { return x + 1 }\nprintln(f(1))\n"
    assert _check("/p/a.harn", src) == []
    assert _check("/p/a.harn", src) == []
    assert runs == ["/p/a.harn"]
    assert list((cache / "check").glob("*.json"))


def test_an_edit_reruns_the_checker_and_its_error_is_reported_every_time(
    cache: Path, runs: list[str]
) -> None:
    assert _check("/p/a.harn", "let x: int = 1\nprintln(x)\n") == []
    bad = 'let x: int = "no"\nprintln(x)\n'
    first = _check("/p/a.harn", bad)
    assert first and all(c.startswith("E2") for c in first)
    assert _check("/p/a.harn", bad) == first
    assert len(runs) == 3


def test_other_runtime_names_or_another_path_miss(cache: Path, runs: list[str]) -> None:
    src = "println(1)\n"
    _check("/p/a.harn", src)
    _check("/p/a.harn", src, NAMES | {"extra"})
    _check("/p/b.harn", src)
    assert len(runs) == 3


def test_a_verdict_that_read_an_imported_file_is_not_cached(
    cache: Path, runs: list[str], tmp_path: Path
) -> None:
    (tmp_path / "lib.harn").write_text("pub fn helper() { return 1 }\n")
    main = tmp_path / "main.harn"
    src = 'import "./lib"\nprintln(helper())\n'
    assert _check(str(main), src) == []
    assert _check(str(main), src) == []
    assert len(runs) == 2  # the verdict depends on lib.harn: checked each time


def test_no_cache_setting_always_checks(
    cache: Path, runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNPY_NO_CACHE", "1")
    _check("/p/a.harn", "println(1)\n")
    _check("/p/a.harn", "println(1)\n")
    assert len(runs) == 2


def test_a_damaged_entry_is_a_miss(cache: Path, runs: list[str]) -> None:
    _check("/p/a.harn", "println(1)\n")
    for entry in (cache / "check").glob("*.json"):
        entry.write_text("{not json")
    assert _check("/p/a.harn", "println(1)\n") == []
    assert len(runs) == 2
