"""``:save`` stores the sources of the modules a REPL session imported, content-addressed
beside the snapshot (``.harn/sources/``, as every snapshot does), so ``:restore`` in a new
process after the library was edited or deleted runs the code the session was saved with
(issue 10 point 5). Piped ``harnpy repl`` subprocesses."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.repl.test_piped import repl

LIB = 'pub fn greet(n) {\n  return "hello " + n\n}\n'


def _save(tmp_path: Path) -> None:
    (tmp_path / "lib.harn").write_text(LIB, encoding="utf-8")
    p = repl('import { greet } from "./lib"\nlet g = greet("a")\n:save s.json\n', cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "saved 2 entries to s.json" in p.stdout
    stored = tmp_path / ".harn" / "sources" / (hashlib.sha256(LIB.encode()).hexdigest() + ".harn")
    assert stored.read_text(encoding="utf-8") == LIB


def test_restore_after_the_imported_library_was_edited_runs_the_saved_code(
    tmp_path: Path,
) -> None:
    _save(tmp_path)
    (tmp_path / "lib.harn").write_text(LIB.replace('"hello "', '"HELLO "'), encoding="utf-8")
    p = repl(':restore s.json\ng\ngreet("b")\n', cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["restored 2 entries from s.json", '"hello a"', '"hello b"']
    assert p.stderr == ""


def test_restore_after_the_imported_library_was_deleted(tmp_path: Path) -> None:
    _save(tmp_path)
    (tmp_path / "lib.harn").unlink()
    p = repl(':restore s.json\ngreet("c")\n', cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1:] == ['"hello c"']


def test_a_tampered_stored_copy_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    _save(tmp_path)
    (tmp_path / "lib.harn").write_text(LIB.replace('"hello "', '"HELLO "'), encoding="utf-8")
    for f in (tmp_path / ".harn" / "sources").iterdir():
        f.write_text(LIB.replace('"hello "', '"evil "'), encoding="utf-8")
    p = repl(":restore s.json\n1 + 1\n", cwd=tmp_path)
    assert "error[E406]" in p.stderr
    assert "lib.harn changed since the snapshot was taken" in p.stderr
    assert "evil" not in p.stdout
    assert p.stdout.splitlines()[-1] == "2"
