"""Shared test helpers: run harnpy as a real process, locate ../shared.

Session options (see README, "Tests"):

* ``--snapshot-everywhere`` (or ``HARNPY_SNAPSHOT_EVERYWHERE=1`` in the environment): every
  agent turn boundary of every test snapshots the loop, restores it into a fresh thread
  and continues (lifecycle acceptance: outputs must match the plain run). The variable is
  exported, so harnpy subprocesses run in the same mode.
* worker snapshots go to a temporary ``HARN_WORKER_STATE_DIR`` of their own per test unless
  the variable is set, so tests never write ``.harn/workers`` into the working tree and
  never see each other's parked workers (``harnpy workers ls`` lists the directory);
* the snapshot key is a temporary key file (``HARNPY_SNAPSHOT_KEY_FILE``) unless a key is
  configured, so tests never create ``~/.config/harnpy/snapshot.key``. Tests that edit a
  snapshot file by hand re-seal it with :mod:`tests.sealing` (the check is never weakened).
* SIGINT is the default handler (``KeyboardInterrupt``) even when the test run was started
  with SIGINT ignored (a background job of a script inherits that, and so would every
  harnpy process a test starts): the Ctrl-C tests send SIGINT and expect an interrupt.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

pytest_plugins = ["tests.store_fixtures"]

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SNAPSHOT_EVERYWHERE_ENV = "HARNPY_SNAPSHOT_EVERYWHERE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--snapshot-everywhere",
        action="store_true",
        default=False,
        help="round-trip every agent loop through a snapshot at each turn boundary",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--snapshot-everywhere"):
        os.environ[SNAPSHOT_EVERYWHERE_ENV] = "1"


def snapshot_everywhere_mode() -> bool:
    """True when this test session runs in the snapshot-everywhere mode."""
    return os.environ.get(SNAPSHOT_EVERYWHERE_ENV, "") not in ("", "0")


@pytest.fixture(autouse=True, scope="session")
def _snapshot_key_file(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The session's snapshot key lives in a temporary key file (created on first use by
    harnpy, in-process and in subprocesses), never in the real home directory."""
    if os.environ.get("HARNPY_SNAPSHOT_KEY") or os.environ.get("HARNPY_SNAPSHOT_KEY_FILE"):
        yield None
        return
    d = tmp_path_factory.mktemp("harnpy-key")
    os.environ["HARNPY_SNAPSHOT_KEY_FILE"] = str(d / "keys" / "snapshot.key")
    try:
        yield d
    finally:
        os.environ.pop("HARNPY_SNAPSHOT_KEY_FILE", None)


#: A state directory the environment of the test run names (kept for every test).
_OUTER_STATE_DIR = os.environ.get("HARN_WORKER_STATE_DIR")


@pytest.fixture(autouse=True, scope="session")
def _session_state_dir(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Worker snapshots of module- and session-scoped fixtures go to a temporary directory
    (each test then gets its own: :func:`_worker_state_dir`)."""
    if _OUTER_STATE_DIR:
        yield None
        return
    d = tmp_path_factory.mktemp("harn-workers-session")
    os.environ["HARN_WORKER_STATE_DIR"] = str(d)
    try:
        yield d
    finally:
        os.environ.pop("HARN_WORKER_STATE_DIR", None)


@pytest.fixture(autouse=True)
def _worker_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> object:
    """Each test's worker snapshots go to a temporary directory of its own."""
    if _OUTER_STATE_DIR:
        return None
    d = tmp_path_factory.mktemp("harn-workers")
    monkeypatch.setenv("HARN_WORKER_STATE_DIR", str(d))
    return d


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


def harn_files(root: Path, recursive: bool = False) -> list[Path]:
    """The ``*.harn`` files under ``root`` (recursively when asked), sorted. State
    directories are skipped: running a program leaves a ``.harn/`` folder where it ran
    (worker snapshots), which ``glob("*.harn")`` would otherwise match (issue 14 §11)."""
    found = root.rglob("*.harn") if recursive else root.glob("*.harn")
    return sorted(
        p
        for p in found
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` next to the repository; the test is skipped when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    return SHARED
