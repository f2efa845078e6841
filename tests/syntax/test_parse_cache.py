"""The parsed-module cache (harnpy.syntax.cache): unchanged files are not parsed again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnpy.syntax import HarnSyntaxError, cache, parse
from harnpy.syntax import ast as A
from harnpy.syntax import parser as lark_parser

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import { filter_nil } from "std/collections"
fn greet(name: string, n = 2) -> string {
  let parts = range(n).map({ i -> "hi ${name} #${i + 1}" })
  return match parts.len() { 0 -> { "none" } _ -> { parts.join(", ") } }
}
pipeline main() {
  var total = 0.5
  try { total += 1000.25 } catch (e) { println(e) }
  println(greet("ada") + " é 😀 ${total}")
}
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("HARNPY_CACHE_DIR", str(d))
    monkeypatch.delenv("HARNPY_NO_CACHE", raising=False)
    return d


def _same(a: Any, b: Any) -> bool:
    """Structural equality that also compares spans (node ``==`` ignores them)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, A.Node):
        if (a.span is A.NO_SPAN) != (b.span is A.NO_SPAN) or a.span != b.span:
            return False
        return all(_same(getattr(a, f), getattr(b, f)) for f in type(a)._fields if f != "span")
    if type(a) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _entries(d: Path) -> list[Path]:
    return sorted((d / "ast").glob("*.json"))


def test_second_parse_is_a_cache_hit_equal_to_a_fresh_parse(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = parse(PROGRAM, "/proj/main.harn")
    assert len(_entries(cache_dir)) == 1

    def no_parsing(*args: Any) -> Any:
        raise AssertionError("parsed again despite a cache entry")

    monkeypatch.setattr(lark_parser, "parse", no_parsing)
    again = parse(PROGRAM, "/proj/main.harn")
    assert again is not first and _same(first, again)


@pytest.mark.parametrize(
    "path",
    sorted(str(p) for p in [*REPO.glob("stdlib/**/*.harn"), *REPO.glob("examples/**/*.harn")]),
)
def test_encoding_round_trips_every_shipped_file(path: str) -> None:
    module = lark_parser.parse(Path(path).read_text(encoding="utf-8"), path)
    decoded = cache.decode(json.loads(json.dumps(cache.encode(module))))
    assert _same(module, decoded)


def test_changed_source_is_a_miss(cache_dir: Path) -> None:
    parse("let x = 1\n", "/proj/a.harn")
    changed = parse("let y = 22\n", "/proj/a.harn")
    (stmt,) = changed.body
    assert isinstance(stmt, A.LetStmt) and stmt.value == A.Literal(22)
    assert len(_entries(cache_dir)) == 1  # one entry per path, rewritten


def test_same_source_under_another_path_keeps_its_own_path(cache_dir: Path) -> None:
    parse("let x = 1\n", "/proj/a.harn")
    other = parse("let x = 1\n", "/proj/b.harn")
    assert other.path == "/proj/b.harn"


def test_corrupt_or_foreign_entry_is_a_miss_and_is_rewritten(cache_dir: Path) -> None:
    parse("let x = 1\n", "/proj/a.harn")
    (entry,) = _entries(cache_dir)
    doc = json.loads(entry.read_text())
    for bad in ["{not json", json.dumps({**doc, "module": [9999, 0]}), json.dumps([1, 2])]:
        entry.write_text(bad)
        module = parse("let x = 1\n", "/proj/a.harn")
        assert isinstance(module.body[0], A.LetStmt)
        assert json.loads(entry.read_text()) == doc


def test_other_parser_version_is_a_miss(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parse("let x = 1\n", "/proj/a.harn")
    monkeypatch.setattr(cache, "_fingerprint", "another-parser")
    assert cache.load_module("let x = 1\n", "/proj/a.harn") is None


def test_syntax_errors_are_not_cached(cache_dir: Path) -> None:
    for _ in range(2):
        with pytest.raises(HarnSyntaxError):
            parse("let = \n", "/proj/bad.harn")
    assert _entries(cache_dir) == []


def test_pseudo_paths_are_not_cached(cache_dir: Path) -> None:
    parse("let x = 1\n", "<repl>")
    assert _entries(cache_dir) == []


def test_no_cache_setting_turns_it_off(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNPY_NO_CACHE", "1")
    parse("let x = 1\n", "/proj/a.harn")
    assert not cache_dir.exists() or _entries(cache_dir) == []


@pytest.mark.skipif(os.name != "posix", reason="permission bits")
def test_directory_writable_by_others_is_not_used(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir.mkdir()
    cache_dir.chmod(0o777)
    assert cache_dir not in cache.cache_dirs()
    parse("let x = 1\n", "/proj/a.harn")
    assert not (cache_dir / "ast").exists()


def test_directory_is_pruned(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 4)
    for i in range(7):
        parse(f"let x = {i}\n", f"/proj/f{i}.harn")
    assert 0 < len(_entries(cache_dir)) <= 4
    # the newest entry survives pruning
    assert cache.load_module("let x = 6\n", "/proj/f6.harn") is not None


def test_run_with_every_file_cached_does_not_load_lark(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text('import "std/agent/resume_by"\npipeline main() { println(1 + 1) }\n')
    env = {**os.environ, "HARNPY_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("HARNPY_NO_CACHE", None)
    code = (
        "import sys, runpy\n"
        "sys.argv = ['harnpy', 'run', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('harnpy', run_name='__main__')\n"
        "finally:\n"
        "    print('lark' in sys.modules)\n"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code, str(prog)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
        )
        for _ in range(2)
    ]
    assert [o.stdout.split() for o in outs] == [["2", "True"], ["2", "False"]], outs
