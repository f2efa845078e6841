"""``:load /dev/zero`` in the REPL read the device until the kernel killed the session
(exit 137); ``:load`` reads like ``harnpy run`` now (regular files only, capped): a device,
a FIFO or a directory is one line and the session goes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.newcomer4.test_cli_reads import harnpy_limited

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")


def test_load_of_a_device_or_fifo_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.harn")
    (tmp_path / "zero.harn").symlink_to("/dev/zero")
    entries = ":load /dev/zero\n:load pipe.harn\n:load zero.harn\nlet x = 41\nx + 1\n"
    r = harnpy_limited("repl", cwd=tmp_path, input=entries)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\n"
    assert r.stderr.splitlines() == [
        "/dev/zero is a device, not a regular file",
        "pipe.harn is a FIFO, not a regular file",
        "zero.harn is a device, not a regular file",
    ]
