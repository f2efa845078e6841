"""``harnpy test .`` in a directory holding a FIFO named ``*.harn`` waited forever for a
writer (found probing the CLI's file reads): test files are read like ``harnpy run``'s
(regular files only, capped), so a FIFO case fails saying why and a FIFO helper is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import harnpy


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_named_like_tests_do_not_hang_the_run(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "helper.harn")
    os.mkfifo(tmp_path / "case.harn")
    (tmp_path / "case.expected").write_text("hi\n")
    (tmp_path / "ok.harn").write_text("println(1)\n")
    (tmp_path / "ok.expected").write_text("1\n")
    r = harnpy("test", ".", cwd=tmp_path, timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == [
        f"FAIL  case.harn: cannot read the test: {tmp_path / 'case.harn'} is a FIFO, "
        "not a regular file",
        "1 passed, 1 failed",
    ]
