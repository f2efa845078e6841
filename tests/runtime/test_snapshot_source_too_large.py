"""A module source a snapshot needs that is over the 16 MiB source limit is reported as too
large (its size and the limit), not as "cannot find the source" (issue 13 point 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnpy.runtime.modules import MAX_SOURCE_BYTES
from harnpy.runtime.resume import SourceRefused, checked_source, locate_source
from harnpy.runtime.snapshot import SnapshotError
from tests.conftest import harnpy


def _sparse(p: Path, size: int) -> None:
    with open(p, "wb") as fh:
        fh.truncate(size)


def test_locate_source_says_the_file_is_too_large(tmp_path: Path) -> None:
    big = tmp_path / "main.harn"
    _sparse(big, MAX_SOURCE_BYTES + 1)
    rec = {"key": str(big), "path": str(big), "hash": "0" * 64}
    with pytest.raises(SourceRefused) as e:
        locate_source(rec, str(tmp_path / "s.json"))
    msg = e.value.message
    assert e.value.code == "E406"
    assert "too large" in msg and f"is {MAX_SOURCE_BYTES + 1} bytes" in msg, msg
    assert f"over the {MAX_SOURCE_BYTES}-byte limit" in msg and "cannot find" not in msg, msg
    with pytest.raises(SourceRefused, match="too large"):
        checked_source(rec, str(tmp_path / "s.json"))


def test_a_missing_source_still_says_cannot_find(tmp_path: Path) -> None:
    rec = {"key": "/nowhere/x.harn", "path": "/nowhere/x.harn", "hash": "0" * 64}
    with pytest.raises(SnapshotError, match="cannot find the source") as e:
        locate_source(rec, str(tmp_path / "s.json"))
    assert not isinstance(e.value, SourceRefused)


def test_resume_names_the_size_and_the_limit(tmp_path: Path) -> None:
    prog = tmp_path / "p.harn"
    prog.write_text('let x = 1\n__snapshot_exit("s.json")\nprintln(x + 1)\n')
    sources = tmp_path / "sources"
    env = {"HARNPY_SOURCES_DIR": str(sources)}
    p = harnpy("run", str(prog), cwd=tmp_path, env=env)
    assert (tmp_path / "s.json").exists(), p.stderr
    shutil.rmtree(sources, ignore_errors=True)  # no stored copy to fall back on
    _sparse(prog, MAX_SOURCE_BYTES + 10)
    p = harnpy("run", "--resume", "s.json", cwd=tmp_path, env=env)
    assert p.returncode != 0
    assert "error[E406]" in p.stderr and "too large" in p.stderr, p.stderr
    assert f"{MAX_SOURCE_BYTES + 10} bytes, over the {MAX_SOURCE_BYTES}-byte limit" in p.stderr
    assert "cannot find" not in p.stderr and "Traceback" not in p.stderr
