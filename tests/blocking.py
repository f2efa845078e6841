"""Test helper: run a call that might block (a read of a FIFO) with a time limit."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``, failing the test (not hanging it) when it takes longer than ``seconds``;
    an exception ``fn`` raises is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
