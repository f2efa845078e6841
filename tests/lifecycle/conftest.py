"""Helpers for the suspend / resume tests (lifecycle.md 1-4, 7-9, 11).

``run_harn(source)`` runs a Harn program in-process on a fresh runtime (stdout and stderr
captured together) and returns ``(output, runtime)``; worker snapshots of the test go to
its own ``HARN_WORKER_STATE_DIR`` (``state_dir`` fixture). ``harnpy`` (from
``tests.conftest``) runs a real process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnpy.runtime.runtime import Runtime
from tests.conftest import snapshot_everywhere_mode

RunHarn = Callable[..., tuple[str, Runtime]]


def _run(source: str, *, path: str = "<test>", setup: Any = None) -> tuple[str, Runtime]:
    out: list[str] = []
    rt = Runtime(stdout=out.append, stderr=out.append)
    if setup is not None:
        setup(rt)
    rt.run_module(rt.load_main(path, source))
    return "".join(out), rt


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's worker snapshot directory (``HARN_WORKER_STATE_DIR``)."""
    d = tmp_path / "workers"
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", str(d))
    return d


@pytest.fixture
def run_harn(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> RunHarn:
    """Run a Harn program in-process; returns ``(output, runtime)``. No network: real
    providers are disabled."""
    monkeypatch.setenv("HARN_LLM_CALLS_DISABLED", "1")
    monkeypatch.delenv("HARNPY_STORE", raising=False)
    if not snapshot_everywhere_mode():
        monkeypatch.delenv("HARNPY_SNAPSHOT_EVERYWHERE", raising=False)
    return _run


def lines(output: str) -> list[str]:
    """The output's lines, without ``harnpy: warning:`` lines (stderr shares the sink)."""
    return [x for x in output.rstrip("\n").split("\n") if x and not x.startswith("harnpy: ")]


def snapshots(state_dir: Path) -> list[Path]:
    """The worker snapshot files of a state dir."""
    return sorted(state_dir.glob("worker_*.json"))


def load(path: Path) -> dict[str, Any]:
    """A snapshot file's JSON document, its seal checked (and the seal member left out)."""
    from tests.sealing import read_doc

    return read_doc(path)  # type: ignore[no-any-return]


#: A background sub-agent that parks at its first turn (model-issued
#: agent_await_resumption), then answers with text once resumed.
PARK_ONCE = """
  llm_mock({tool_calls: [{id: "park_1", name: "agent_await_resumption",
    arguments: {reason: "waiting on review"}}], input_tokens: 7, output_tokens: 3})
  llm_mock({text: "finished after resume"})
  const h = sub_agent_run("Park until review.", {provider: "mock", background: true,
    tool_format: "native", max_iterations: 3})
"""
