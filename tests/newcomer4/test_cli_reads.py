"""Issue 13 point 4 at the CLI's own entry points (found trying it as an attacker): the
script of ``run`` / ``check`` / ``fmt`` / ``lint`` and the ``--llm-mock`` file are read
like every module source — regular files only, with a cap — so a device, a FIFO or a
directory is one line on stderr and exit 2, instead of reading ``/dev/zero`` until memory
runs out (a MemoryError traceback, or the kernel's kill) or waiting for a FIFO's writer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import harnpy

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")


def _limited() -> None:
    """Keeps a regression from eating the machine: an unbounded read of /dev/zero then ends
    in MemoryError (a traceback, which the assertions catch) instead of the OOM killer."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def harnpy_limited(
    *args: str, cwd: Path, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m harnpy ARGS`` with a 2 GiB address-space limit."""
    env = {k: v for k, v in os.environ.items() if k != "HARNPY_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "harnpy", *args],
        cwd=cwd,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "/dev/zero"],
        ["check", "/dev/zero"],
        ["fmt", "--check", "/dev/zero"],
        ["lint", "/dev/zero"],
        ["run", "--llm-mock", "/dev/zero", "one.harn"],
    ],
)
def test_a_device_is_refused_unread(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "one.harn").write_text("println(1)\n")
    r = harnpy_limited(*argv, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"harnpy {argv[0]}: error: ")
    assert line.endswith("/dev/zero is a device, not a regular file"), line
    assert r.stdout == ""


@pytest.mark.parametrize("command", ["run", "check", "lint"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, command: str) -> None:
    os.mkfifo(tmp_path / "pipe.harn")
    r = harnpy(command, "pipe.harn", cwd=tmp_path, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"harnpy {command}: error: pipe.harn is a FIFO, not a regular file\n"


def test_a_directory_given_to_run_says_so(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    r = harnpy("run", "d", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (
        2,
        "harnpy run: error: d is a directory, not a regular file\n",
    )


def test_a_script_over_the_source_cap_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.harn"
    with open(big, "wb") as fh:  # sparse: 17 MiB of nothing, over the 16 MiB cap
        fh.truncate(17 * 1024 * 1024)
    r = harnpy("check", "big.harn", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == (
        f"harnpy check: error: big.harn is {17 * 1024 * 1024} bytes, "
        f"over the {16 * 1024 * 1024}-byte limit\n"
    )


def test_check_names_a_file_given_twice_once(tmp_path: Path) -> None:
    (tmp_path / "a.harn").write_text("println(1)\n")
    r = harnpy("check", "a.harn", "./a.harn", ".", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (0, "a.harn: ok\n"), r.stderr
