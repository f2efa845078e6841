"""End to end: the real ``harnpy repl`` under a pseudo-terminal (pexpect).

Types a multi-line function and calls it, presses Ctrl-C during a long loop and checks the
session still answers, saves the session, exits with Ctrl-D (status 0), then restores the
session in a new process and uses it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.slow


def spawn(tmp_path: Path) -> object:
    env = dict(os.environ)
    env.pop("HARNPY_DEBUG", None)
    env.update(
        {
            "HOME": str(tmp_path),
            "TERM": "xterm-256color",
            # pexpect does not answer cursor-position requests
            "PROMPT_TOOLKIT_NO_CPR": "1",
        }
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "harnpy", "repl"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    child.expect("Harn REPL")
    child.expect("harn> ")
    return child


def submit(child: object, line: str) -> None:
    """Type ``line`` and press Enter."""
    child.send(line)  # type: ignore[attr-defined]
    child.send("\r")  # type: ignore[attr-defined]


def test_interactive_session_end_to_end(tmp_path: Path) -> None:
    snap = tmp_path / "session.json"
    child = spawn(tmp_path)
    try:
        # a multi-line function: the entry stays open until the closing brace
        submit(child, "fn add(a, b) {")
        child.expect(r"\.\.\. ")  # continuation prompt
        submit(child, "return a + b")
        submit(child, "}")
        child.expect("harn> ")
        submit(child, "add(19, 23)")
        child.expect(r"(?<![0-9])42\r\n")
        child.expect("harn> ")

        # Ctrl-C interrupts a long loop; the session keeps its state
        submit(child, "var spins = 0")
        child.expect("harn> ")
        submit(child, "while true { spins = spins + 1 }")
        time.sleep(1.0)
        child.sendintr()  # type: ignore[attr-defined]
        child.expect("interrupted")
        child.expect("harn> ")
        submit(child, '"spins-" + to_string(spins > 0)')
        child.expect("spins-true")
        child.expect("harn> ")

        submit(child, f":save {snap}")
        child.expect("saved")
        child.expect("harn> ")

        # Ctrl-D on an empty line exits with status 0
        child.sendeof()  # type: ignore[attr-defined]
        child.expect(pexpect.EOF)
    finally:
        child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0, child.before  # type: ignore[attr-defined]
    assert snap.is_file()
    assert (tmp_path / ".harnpy" / "repl_history").is_file()

    child = spawn(tmp_path)
    try:
        submit(child, f":restore {snap}")
        child.expect("restored 5 entries")
        child.expect("harn> ")
        submit(child, "add(spins * 0, 4242)")
        child.expect(r"(?<![0-9])4242\r\n")
        child.expect("harn> ")
        submit(child, '"spins-" + to_string(spins > 0)')
        child.expect("spins-true")
        child.expect("harn> ")
        child.sendeof()  # type: ignore[attr-defined]
        child.expect(pexpect.EOF)
    finally:
        child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0  # type: ignore[attr-defined]
