"""Fakes for testing the data-format and host builtins without the evaluator.

``thread`` collects what builtins write; ``thread.runtime`` is a :class:`FakeRuntime` holding
a real :class:`~harnpy.runtime.clock.Clock` plus whatever mock attributes builtins set. As in
the real runtime, the thread's stderr goes through ``runtime.write_err``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.clock import Clock
from harnpy.stdlib.registry import BUILTINS

#: The builtin modules under test (imported directly so that unrelated modules cannot break
#: these tests).
MODULES = (
    "encoding",
    "formats",
    "fs",
    "jq",
    "jsonlib",
    "regexlib",
    "schema",
    "templates",
    "timelib",
    "tracing",
    "web",
)
for _m in MODULES:
    importlib.import_module(f"harnpy.stdlib.{_m}")


class FakeRuntime:
    """Shared services: a clock and a stderr sink (``err``)."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.err: list[str] = []

    def write_err(self, text: str) -> None:
        self.err.append(text)


class FakeThread:
    """The slice of the evaluator's thread that builtins use."""

    def __init__(self, source: Path | None = None) -> None:
        self.out: list[str] = []
        self.runtime = FakeRuntime()
        self.source = source

    def write_out(self, text: str) -> None:
        self.out.append(text)

    def write_err(self, text: str) -> None:
        self.runtime.write_err(text)

    def source_path(self) -> str | None:
        return str(self.source) if self.source is not None else None

    def call(self, name: str, *args: Any) -> Any:
        """Call builtin ``name`` the way the evaluator does (thread first)."""
        return BUILTINS[name].fn(self, *args)

    @property
    def stdout(self) -> str:
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        return "".join(self.runtime.err)


@pytest.fixture
def thread(tmp_path: Path) -> FakeThread:
    """A fake thread whose calling source file lives in ``tmp_path``."""
    return FakeThread(tmp_path / "main.harn")
