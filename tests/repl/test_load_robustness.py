"""``:load FILE`` fails the way an entry typed at the prompt fails: a loaded file that calls
``__snapshot_exit``, nests too deeply for the compiler or hits an internal error is reported
and the session goes on (no Python traceback, no end of the REPL)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harnpy.repl import ReplCore, ReplExit
from harnpy.runtime.session import Session
from tests.conftest import harnpy


def core() -> tuple[ReplCore, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    c = ReplCore(out.write, err.write)
    c.session = Session(stdout=c.program_out, stderr=c.program_err, handle_sigint=False)
    return c, out, err


def test_snapshot_exit_in_a_loaded_file_is_refused_like_in_an_entry(tmp_path: Path) -> None:
    (tmp_path / "snap.harn").write_text('let kept = 1\n__snapshot_exit("s.json")\n')
    p = harnpy(
        "repl",
        input='__snapshot_exit("e.json")\n:load snap.harn\nprintln("still here")\nkept + 1\n',
        cwd=tmp_path,
    )
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 0
    assert p.stdout == "still here\n2\n"
    refusals = [ln for ln in p.stderr.splitlines() if "error[E300]" in ln]
    assert len(refusals) == 2, p.stderr
    assert all("__snapshot_exit is not available in the REPL" in ln for ln in refusals)
    assert "snap.harn:2:1: error[E300]" in refusals[1]  # located in the loaded file
    # nothing was written: no file that neither `:restore` nor `run --resume` could use
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "e.json").exists()
    # --strict counts it as a failed entry, as it does for a typed entry
    p = harnpy("repl", "--strict", input=":load snap.harn\n", cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr


def test_a_loaded_file_nested_too_deeply_is_reported_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "deep.harn").write_text("let x = " + "-" * 20_000 + "1\n")
    p = harnpy("repl", input=':load deep.harn\nprintln("alive")\n', cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 0
    assert p.stdout == "alive\n"
    assert "recursion limit" in p.stderr


@pytest.mark.parametrize("how", ["entry", "load"])
def test_internal_errors_are_reported_as_e999_and_the_session_goes_on(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, out, err = core()
    f = tmp_path / "f.harn"
    f.write_text("1\n")

    def broken(source: str, path: str | None = None) -> object:
        raise ValueError("boom")

    monkeypatch.setattr(c.session, "eval", broken)
    ok = c.handle("1 + 1" if how == "entry" else f":load {f}")
    assert ok is False and c.failed
    assert err.getvalue().startswith("error[E999]: internal error in harnpy: ValueError: boom\n")
    monkeypatch.undo()
    assert c.handle("println(40 + 2)") is True
    assert out.getvalue() == "42\n"


def test_load_exit_still_ends_the_session(tmp_path: Path) -> None:
    c, _, _ = core()
    f = tmp_path / "bye.harn"
    f.write_text("exit(4)\n")
    with pytest.raises(ReplExit) as ei:
        c.handle(f":load {f}")
    assert ei.value.code == 4


def test_load_of_a_missing_file_is_still_a_read_error(tmp_path: Path) -> None:
    c, _, err = core()
    assert c.handle(f":load {tmp_path / 'nope.harn'}") is False
    assert err.getvalue().startswith(f"cannot read {tmp_path / 'nope.harn'}: ")
