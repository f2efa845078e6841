"""Golden tests: every ``examples/**/*.harn`` with a sibling ``.expected`` prints exactly it.

Set ``HARNPY_UPDATE_GOLDENS=1`` to rewrite the ``.expected`` files from the current output
(review the diff before committing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO, harnpy

EXAMPLES = sorted(
    p for p in (REPO / "examples").rglob("*.harn") if p.with_suffix(".expected").exists()
)


@pytest.mark.parametrize("program", EXAMPLES, ids=lambda p: str(p.relative_to(REPO / "examples")))
def test_example_prints_its_golden_output(program: Path) -> None:
    res = harnpy("run", str(program), cwd=program.parent, env={"HARN_LLM_CALLS_DISABLED": "1"})
    assert res.returncode == 0, res.stderr
    golden = program.with_suffix(".expected")
    if os.environ.get("HARNPY_UPDATE_GOLDENS"):
        golden.write_text(res.stdout)
    assert res.stdout == golden.read_text()
    assert "Traceback" not in res.stderr
