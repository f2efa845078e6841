"""Lifecycle conformance cases (``../shared/conformance/lifecycle``) that the agent layer
runs end to end, in both call forms where the case has a ``.plain`` copy. Skipped when
``../shared`` is absent (fresh clone). The remaining cases need the suspend/resume,
trigger, hook or on-finish layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import harnpy

PASSING = [
    "tests/agents/agent_await_resumption_invalid_feedback.harn",
    "tests/agents/agent_await_resumption_invalid_feedback.plain.harn",
    "tests/agents/agent_daemon_await_resumption.harn",
    "tests/agents/agent_daemon_await_resumption.plain.harn",
    "tests/agents/agent_lifecycle_tools.harn",
]


def _cases(shared_dir: Path) -> Path:
    root = shared_dir / "conformance" / "lifecycle" / "cases"
    if not root.is_dir():
        pytest.skip("lifecycle cases not present")
    return root


def _run(root: Path, rel: str) -> tuple[int, list[str], list[str], str]:
    case = root / rel
    proc = harnpy("run", str(case), cwd=case.parent, env={"HARN_LLM_CALLS_DISABLED": "1"})
    expected = case.with_suffix(".expected").read_text(encoding="utf-8").rstrip().split("\n")
    got = proc.stdout.rstrip().split("\n") if proc.stdout.strip() else []
    return proc.returncode, got, expected, proc.stderr


@pytest.mark.parametrize("rel", PASSING)
def test_case_passes(shared_dir: Path, rel: str) -> None:
    rc, got, expected, err = _run(_cases(shared_dir), rel)
    assert rc == 0, err
    assert got == expected
