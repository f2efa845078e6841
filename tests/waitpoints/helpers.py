"""Helpers of the waitpoint tests: run harnpy in a fresh process with or without a store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run(
    *args: str,
    cwd: Path,
    store: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``python -m harnpy ARGS`` in ``cwd``; ``store`` is ``HARNPY_STORE`` (None: unset,
    waitpoints in memory)."""
    full = dict(os.environ)
    full.pop("HARNPY_DEBUG", None)
    full.pop("HARNPY_STORE", None)
    if store is not None:
        full["HARNPY_STORE"] = store
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
