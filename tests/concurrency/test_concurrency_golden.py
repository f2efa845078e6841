"""Golden programs for the concurrency builtins (spec language.md 3.16, 4.15).

Each ``golden/*.harn`` program runs through ``python -m harnpy run`` in a fresh process;
it must exit 0 and its stdout must equal the sibling ``.expected`` file (trailing
whitespace of the whole text ignored, as in the conformance runner). The programs use the
mock clock, so sleeps and timeouts resolve instantly and in deadline order.

Set ``HARNPY_UPDATE_GOLDENS=1`` to rewrite the ``.expected`` files from the current output
(review the diff before committing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import harn_files

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAMS = harn_files(HERE / "golden")
UPDATE = os.environ.get("HARNPY_UPDATE_GOLDENS") == "1"


def _run(program: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HARNPY_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "harnpy", "run", str(program)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def results() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every program's run, started together (the runs are independent processes)."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(PROGRAMS, pool.map(_run, PROGRAMS), strict=True))


def test_programs_exist() -> None:
    assert len(PROGRAMS) >= 5


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_golden(program: Path, results: dict[Path, subprocess.CompletedProcess[str]]) -> None:
    proc = results[program]
    assert proc.returncode == 0, proc.stderr
    expected_path = program.with_suffix(".expected")
    if UPDATE:
        expected_path.write_text(proc.stdout, encoding="utf-8")
    assert proc.stdout.rstrip() == expected_path.read_text(encoding="utf-8").rstrip()
