"""Ctrl-C (SIGINT) in ``harnpy run``: the interrupt unwinding of the run loop
(harnpy.runtime.thread) also serves scripts — ``finally`` blocks run once, ``catch`` does
not swallow the interrupt, and the process exits with 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = """
fn spin() {
  try {
    var i = 0
    while true { i = i + 1 }
  } catch (e) {
    println("caught: " + to_string(e))
  } finally {
    println("finally 1")
  }
}
try {
  println("ready")
  spin()
} catch (e) {
  println("outer catch")
} finally {
  println("finally 2")
}
println("after")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_runs_finally_blocks_once_and_exits_130(tmp_path: Path) -> None:
    prog = tmp_path / "spin.harn"
    prog.write_text(SCRIPT)
    env = dict(os.environ)
    env.pop("HARNPY_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harnpy", "run", str(prog)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out == "finally 1\nfinally 2\n"
    assert "interrupted" in err
