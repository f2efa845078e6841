"""Golden tests: every ``examples/**/*.harn`` with a sibling ``.expected`` prints exactly it.

Set ``HARNPY_UPDATE_GOLDENS=1`` to rewrite the ``.expected`` files from the current output
(review the diff before committing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO, harn_files, harnpy

EXAMPLES = sorted(
    p for p in harn_files(REPO / "examples", recursive=True) if p.with_suffix(".expected").exists()
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


def test_lifecycle_example_parks_and_finishes_in_a_second_process(tmp_path: Path) -> None:
    """examples/lifecycle/approval.harn as its README runs it: the first process runs a tool
    and parks, a second one resumes the snapshot and prints the loop's answer; the tool does
    not run again."""
    src = REPO / "examples" / "lifecycle"
    for name in ("approval.harn", "approval.jsonl"):
        (tmp_path / name).write_text((src / name).read_text(encoding="utf-8"), encoding="utf-8")
    env = {"HARN_LLM_CALLS_DISABLED": "1", "HARN_WORKER_STATE_DIR": ""}
    first = harnpy("run", "--llm-mock", "approval.jsonl", "approval.harn", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[:3] == [
        "  [tool] check_tests ran",
        "status: suspended",
        "reason: waiting for a human to approve release 2.4",
    ]
    prefix = "resume with: harnpy run --resume "
    assert lines[3].startswith(prefix + ".harn/workers/worker_")
    snapshot = lines[3][len(prefix) :]
    second = harnpy("run", "--resume", snapshot, cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Release 2.4 is approved and shipped.\n"
    assert "Traceback" not in first.stderr + second.stderr
