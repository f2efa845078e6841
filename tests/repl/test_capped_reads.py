"""``Session.load_file``, the REPL's ``:edit`` and the history file read through the capped
reader (issue 13 point 4): a FIFO or a device is refused instead of blocking the session, a
file over the limit is refused before it is read."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from harnpy.repl import ReplCore
from harnpy.repl.history import HistoryFile
from harnpy.runtime.session import Session
from harnpy.security import FileTooLarge, NotRegularFile
from tests.blocking import within

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def test_session_load_file_refuses_a_fifo_and_a_huge_file(tmp_path: Path) -> None:
    s = Session(stdout=lambda _t: None, stderr=lambda _t: None, handle_sigint=False)
    os.mkfifo(tmp_path / "pipe.harn")
    with pytest.raises(NotRegularFile, match="is a FIFO"):
        within(5, lambda: s.load_file(str(tmp_path / "pipe.harn")))
    big = tmp_path / "big.harn"
    with open(big, "wb") as fh:  # sparse: 17 MiB of nothing, over the 16 MiB source limit
        fh.truncate(17 * 1024 * 1024)
    with pytest.raises(FileTooLarge, match="over the 16777216-byte limit"):
        s.load_file(str(big))
    (tmp_path / "ok.harn").write_text("let v = 6 * 7\nv\n")
    assert s.load_file(str(tmp_path / "ok.harn")).value == 42


def test_edit_refuses_a_saved_fifo_instead_of_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an "editor" that replaces the file it was given with a FIFO
    editor = tmp_path / "fifo-editor.sh"
    editor.write_text('#!/bin/sh\nrm -f "$1"\nmkfifo "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    out, err = io.StringIO(), io.StringIO()
    c = ReplCore(out.write, err.write)
    c.session = Session(stdout=c.program_out, stderr=c.program_err, handle_sigint=False)
    c.last_entry = "1 + 1"
    ok = within(10, lambda: c.cmd_edit(""))
    assert ok is False
    assert ":edit: cannot read what was saved" in err.getvalue(), err.getvalue()
    assert "FIFO" in err.getvalue()
    assert c.handle("println(40 + 2)") is True and "42" in out.getvalue()


def test_a_history_file_that_is_a_fifo_warns_instead_of_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "hist")
    warnings: list[str] = []
    h = HistoryFile(str(tmp_path / "hist"), warnings.append)
    assert within(5, h.load) == []
    assert warnings and "FIFO" in warnings[0], warnings


def test_a_history_file_over_the_limit_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNPY_MAX_READ_BYTES", "100")
    p = tmp_path / "hist"
    p.write_text("+x\n" * 100)
    warnings: list[str] = []
    assert HistoryFile(str(p), warnings.append).load() == []
    assert warnings and "over the 100-byte limit" in warnings[0], warnings
