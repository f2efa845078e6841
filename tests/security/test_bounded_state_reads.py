"""harnpy's own reads of state files are bounded and never wait on a FIFO (issue 13 point 4):
the trigger runner's snapshot hash and log tail, the API key file of ``harnpy serve`` and the
sources pruner's look at a snapshot's head all go through :mod:`harnpy.security`'s one
regular-file check (``read_capped`` / ``read_part`` / ``file_digest``)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnpy.security import NotRegularFile, file_digest, read_part
from tests.blocking import within

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _fifo(tmp_path: Path, name: str = "pipe") -> str:
    p = tmp_path / name
    os.mkfifo(p)
    return str(p)


def _peak_mib(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------ the primitives


def test_read_part_reads_a_head_or_a_tail_and_refuses_a_fifo(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"0123456789")
    assert read_part(str(f), 4) == b"0123"
    assert read_part(str(f), 4, start=3) == b"3456"
    assert read_part(str(f), 4, last=True) == b"6789"
    assert read_part(str(f), 40, start=7, last=True) == b"789"
    with pytest.raises(NotRegularFile, match="FIFO"):
        within(5, lambda: read_part(_fifo(tmp_path), 4))


def test_file_digest_streams_and_refuses_a_fifo(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 3_000_000)
    assert file_digest(str(f)) == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    with pytest.raises(NotRegularFile):
        within(5, lambda: file_digest(_fifo(tmp_path)))


# ------------------------------------------------------------------ the callers


def test_trigger_snapshot_hash_of_a_fifo_is_none_not_a_hang(tmp_path: Path) -> None:
    from harnpy.lifecycle.triggers._util import file_sha256

    assert within(5, lambda: file_sha256(_fifo(tmp_path))) is None
    f = tmp_path / "s.json"
    f.write_bytes(b"{}")
    assert file_sha256(str(f)) == hashlib.sha256(b"{}").hexdigest()


def test_trigger_snapshot_hash_is_streamed(tmp_path: Path) -> None:
    from harnpy.lifecycle.triggers._util import file_sha256

    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    peak = _peak_mib(lambda: file_sha256(str(big)))
    assert peak < 8, f"hashing a 64 MiB snapshot used {peak:.1f} MiB"


def test_runner_log_tail_reads_only_the_tail(tmp_path: Path) -> None:
    from harnpy.lifecycle.triggers.runner import log_tail

    log = tmp_path / "w.log"
    with open(log, "wb") as fh:
        fh.seek(100 * 1024 * 1024)  # a (sparse) log that grew over many resumes
        fh.write(b"the end\n")
    got: list[str] = []
    peak = _peak_mib(lambda: got.append(log_tail(str(log), 0)))
    assert got[0].endswith("the end\n") and len(got[0]) == 8000
    assert peak < 4, f"reading the log's tail used {peak:.1f} MiB"
    log.write_bytes(b"old run\nnew run\n")
    assert log_tail(str(log), len(b"old run\n")) == "new run\n"
    assert within(5, lambda: log_tail(_fifo(tmp_path), 0)) == ""


def test_api_key_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from harnpy.serve.auth import AuthError, KeyRing

    fifo = _fifo(tmp_path, "keys.toml")
    with pytest.raises(AuthError, match="cannot read the API key file .*FIFO"):
        within(5, lambda: KeyRing.load(fifo))


def test_api_key_file_over_its_cap_is_refused(tmp_path: Path) -> None:
    from harnpy.serve.auth import KEY_FILE_CAP, AuthError, KeyRing

    f = tmp_path / "keys.toml"
    with open(f, "wb") as fh:
        fh.truncate(KEY_FILE_CAP + 1)
    with pytest.raises(AuthError, match="over the 1048576-byte limit"):
        KeyRing.load(str(f))


def test_sources_pruner_refuses_a_fifo_named_like_a_snapshot(tmp_path: Path) -> None:
    from harnpy.runtime.sources import PruneRefused, _needed_hashes

    fifo = _fifo(tmp_path, "w.json")
    with pytest.raises(PruneRefused, match="FIFO"):
        within(5, lambda: _needed_hashes(fifo))
