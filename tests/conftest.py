"""Shared test helpers: run harnpy as a real process, locate ../shared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def harnpy(
    *args: str,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m harnpy ARGS`` in a fresh process; returns the completed process."""
    full_env = dict(os.environ)
    full_env.pop("HARNPY_DEBUG", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd,
        env=full_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` next to the repository; the test is skipped when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    return SHARED
