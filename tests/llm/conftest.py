"""Fixtures for the LLM layer tests: a scripted local HTTP server and a recording sleep."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The server helper sits beside the tests; make it importable under any pytest import mode.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

from fake_llm_server import FakeLlmServer  # noqa: E402

from tests.agents.conftest import RunHarn, run_harn  # noqa: E402, F401 - the fixture, shared


@pytest.fixture
def run(run_harn: RunHarn) -> RunHarn:  # noqa: F811 - the imported fixture, requested
    """:func:`tests.agents.conftest.run_harn` under the short name these tests use: a Harn
    program in-process, real providers disabled; returns ``(stdout, runtime)``."""
    return run_harn


@pytest.fixture
def server() -> Iterator[FakeLlmServer]:
    """A FakeLlmServer on 127.0.0.1 (random port), stopped after the test."""
    with FakeLlmServer() as srv:
        yield srv


class SleepLog:
    """Stands in for ``time.sleep``: records the requested delays, never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepLog:
    """A fresh SleepLog."""
    return SleepLog()
