"""Helpers for the agent-layer tests: run Harn programs in-process and inspect the runtime.

``run_harn(source)`` runs a program (pipeline or script mode) on a fresh
:class:`~harnpy.runtime.runtime.Runtime` with stdout captured and returns ``(output,
runtime)``; the runtime keeps the agent services (workers, events, mock calls) for
assertions. Model calls use the ``mock`` provider unless a test installs another provider
on the runtime's LLM host.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.runtime import Runtime
from tests.conftest import snapshot_everywhere_mode

LLM_TESTS = Path(__file__).resolve().parent.parent / "llm"
if str(LLM_TESTS) not in sys.path:
    sys.path.insert(0, str(LLM_TESTS))

RunHarn = Callable[..., tuple[str, Runtime]]


def _run(
    source: str,
    *,
    argv: list[str] | None = None,
    setup: Callable[[Runtime], Any] | None = None,
    path: str = "<test>",
) -> tuple[str, Runtime]:
    out: list[str] = []
    rt = Runtime(argv=argv, stdout=out.append, stderr=out.append)
    if setup is not None:
        setup(rt)
    mod = rt.load_main(path, source)
    rt.run_module(mod)
    return "".join(out), rt


@pytest.fixture
def run_harn(monkeypatch: pytest.MonkeyPatch) -> RunHarn:
    """Run a Harn program in-process; returns ``(stdout, runtime)``. Real providers are
    disabled (``HARN_LLM_CALLS_DISABLED=1``) so nothing can reach the network. The
    snapshot-everywhere mode is off unless the session runs with ``--snapshot-everywhere``."""
    monkeypatch.setenv("HARN_LLM_CALLS_DISABLED", "1")
    if not snapshot_everywhere_mode():
        monkeypatch.delenv("HARNPY_SNAPSHOT_EVERYWHERE", raising=False)
    monkeypatch.delenv("HARN_LLM_PROVIDER", raising=False)
    return _run


def lines(output: str) -> list[str]:
    """The output's lines (no trailing empty line), without the ``harnpy: `` notes on
    stderr, which shares the sink (a root loop's failure, ``harnpy: agent_loop ... ended
    with budget_exhausted ...``, is asserted where it is the subject)."""
    if not output:
        return []
    return [x for x in output.rstrip("\n").split("\n") if not x.startswith("harnpy: ")]
