"""Golden tests for the Harn-written ``std/*`` modules (stdlib/std/*.harn).

Each ``*.harn`` program in this directory runs through ``python -m harnpy run``. With a
sibling ``.expected`` file, the run must succeed and its stdout must equal the file (trailing
whitespace of the whole text ignored, as in the conformance runner). With a sibling
``.error`` file, the run must fail and its output must contain the file's text. Spec
language.md 3.18 (modules) and 4.9 (math).

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
PROGRAMS = harn_files(HERE)
UPDATE = os.environ.get("HARNPY_UPDATE_GOLDENS") == "1"


@pytest.fixture(scope="module")
def results() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every program's run, started together (the runs are independent processes)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = dict(zip(PROGRAMS, pool.map(_run, PROGRAMS), strict=True))
    return runs


def _run(program: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harnpy", "run", str(program)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_program_has_a_golden_file() -> None:
    """Every program states its expected result (.expected or .error, not both)."""
    assert PROGRAMS
    for program in PROGRAMS:
        goldens = [program.with_suffix(s).exists() for s in (".expected", ".error")]
        assert goldens.count(True) == 1, program.name


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_output_matches_golden(
    program: Path, results: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    """The program's stdout equals its .expected file, or it fails with the .error text."""
    proc = results[program]
    expected = program.with_suffix(".expected")
    if expected.exists():
        assert proc.returncode == 0, proc.stderr
        if UPDATE:
            expected.write_text(proc.stdout, encoding="utf-8")
        assert proc.stdout.rstrip() == expected.read_text(encoding="utf-8").rstrip()
    else:
        wanted = program.with_suffix(".error").read_text(encoding="utf-8").strip()
        assert proc.returncode != 0
        assert wanted in proc.stdout + proc.stderr
