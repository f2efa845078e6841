"""The parser is built lazily and loaded from Lark's on-disk cache (never rebuilt at start-up)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnpy.syntax import parse, parser

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_parser(monkeypatch: pytest.MonkeyPatch):
    """Forget the shared Lark object for the test, restoring it afterwards."""
    saved = parser._parser
    monkeypatch.setattr(parser, "_parser", None)
    yield
    parser._parser = saved


def test_importing_the_package_does_not_load_lark() -> None:
    code = "import sys, harnpy.syntax, harnpy.syntax.ast; print('lark' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False"


def test_grammar_file_is_found() -> None:
    assert parser.grammar_path().name == "harn.lark"
    assert parser.grammar_path().is_file()


def test_cache_written_then_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_parser, caplog
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parser.get_parser()
    files = list((tmp_path / "harnpy").glob("harn-grammar-*.lark-cache"))
    assert len(files) == 1 and files[0].stat().st_size > 0

    monkeypatch.setattr(parser, "_parser", None)
    lark_logger = logging.getLogger("lark")
    old_level = lark_logger.level
    lark_logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            parser.get_parser()
    finally:
        lark_logger.setLevel(old_level)
    assert any("Loading grammar from cache" in r.getMessage() for r in caplog.records)
    assert parse("println(1)").body


def test_unusable_cache_dir_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    chosen = parser._cache_file("grammar text")
    assert chosen is None or not chosen.startswith(str(blocker))


def test_cache_key_depends_on_grammar_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert parser._cache_file("a") != parser._cache_file("b")


def test_works_without_any_cache(monkeypatch: pytest.MonkeyPatch, fresh_parser) -> None:
    monkeypatch.setattr(parser, "_cache_file", lambda text: None)
    assert parse("let x = 1").body


def test_parse_in_subprocess_with_env_cache(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    code = "from harnpy.syntax import parse; print(len(parse('println(1)').body))"
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO
        )
        assert out.stdout.strip() == "1", out.stderr
    assert list((tmp_path / "harnpy").glob("*.lark-cache"))
