"""Fakes for testing the data-format and host builtins without the evaluator.

``thread`` collects what builtins write; ``thread.runtime`` is a plain namespace holding a
real :class:`~harnpy.runtime.clock.Clock` plus whatever mock attributes builtins set.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harnpy.runtime.clock import Clock
from harnpy.stdlib.registry import BUILTINS

CONFORMANCE = Path(__file__).resolve().parents[3].parent / "shared" / "conformance" / "cases"


class FakeThread:
    """The slice of the evaluator's thread that builtins use."""

    def __init__(self, source: Path | None = None) -> None:
        self.out: list[str] = []
        self.err: list[str] = []
        self.runtime = SimpleNamespace(clock=Clock())
        self.source = source

    def write_out(self, text: str) -> None:
        self.out.append(text)

    def write_err(self, text: str) -> None:
        capture = getattr(self.runtime, "stderr_capture", None)
        if capture is not None:
            capture.append(text)
        else:
            self.err.append(text)

    def source_path(self) -> str | None:
        return str(self.source) if self.source is not None else None

    def call(self, name: str, *args: Any) -> Any:
        """Call builtin ``name`` the way the evaluator does (thread first)."""
        import harnpy.stdlib as stdlib

        stdlib.load_all()
        return BUILTINS[name].fn(self, *args)

    @property
    def stdout(self) -> str:
        return "".join(self.out)


@pytest.fixture
def thread(tmp_path: Path) -> FakeThread:
    """A fake thread whose calling source file lives in ``tmp_path``."""
    return FakeThread(tmp_path / "main.harn")
