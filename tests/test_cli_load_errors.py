"""``harnpy run`` while the program loads (parse, static checks, imports and their top-level
code, compile): a runtime error in an imported module exits 1 with the runtime diagnostic,
Ctrl-C exits 130, a program nested too deeply is a diagnostic, a harnpy bug is E999 —
never a Python traceback, and the documented exit statuses hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnpy.cli import run_source
from harnpy.runtime.runtime import Runtime
from tests.conftest import harnpy


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-2000:]


def test_a_runtime_error_in_an_imported_module_exits_1_with_the_runtime_diagnostic(
    tmp_path: Path,
) -> None:
    lib = tmp_path / "lib.harn"
    lib.write_text("pub fn f() { return 1 }\nlet boom = 1 / 0\n")
    (tmp_path / "main.harn").write_text('import "./lib"\nprintln(f())\n')
    p = harnpy("run", str(tmp_path / "main.harn"))
    no_traceback(p.stderr)
    assert p.returncode == 1, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert lines[0].startswith(f"{lib}:2:12: error[E"), lines
    assert lines[1] == "  2 | let boom = 1 / 0"
    assert lines[2].strip().startswith("| ") and "^" in lines[2]
    assert "stack trace (most recent call first):" in lines
    assert any(f"({lib}:2:12)" in line for line in lines)


def test_a_throw_in_an_imported_module_exits_1(tmp_path: Path) -> None:
    (tmp_path / "lib.harn").write_text('fn init() { throw "bad config" }\nlet x = init()\n')
    (tmp_path / "main.harn").write_text('import "./lib"\nprintln("never")\n')
    p = harnpy("run", str(tmp_path / "main.harn"))
    no_traceback(p.stderr)
    assert p.returncode == 1
    assert "bad config" in p.stderr
    assert "at init (" in p.stderr


def test_a_circular_import_stays_a_static_error_with_a_location(tmp_path: Path) -> None:
    (tmp_path / "a.harn").write_text('import "./b"\npub fn fa() { return 1 }\n')
    (tmp_path / "b.harn").write_text('import "./a"\npub fn fb() { return 2 }\n')
    (tmp_path / "main.harn").write_text('import "./a"\nprintln(fa())\n')
    p = harnpy("run", str(tmp_path / "main.harn"))
    no_traceback(p.stderr)
    assert p.returncode == 2
    assert p.stderr.startswith(f"{tmp_path / 'b.harn'}:1:1: error[E306]: ")
    assert "circular import" in p.stderr


def test_a_program_nested_too_deeply_is_a_diagnostic(tmp_path: Path) -> None:
    f = tmp_path / "deep.harn"
    f.write_text("let x = " + "-" * 20_000 + "1\nprintln(x)\n")
    p = harnpy("run", str(f))
    no_traceback(p.stderr)
    assert p.returncode == 2
    assert p.stderr == (
        f"{f}: error[E109]: program nested too deeply to compile (Python recursion limit reached)\n"
    )
    p = harnpy("check", str(f))
    no_traceback(p.stderr)
    assert p.returncode == 2
    assert "error[E109]" in p.stderr


def test_snapshot_exit_in_an_imported_module_is_refused(tmp_path: Path) -> None:
    # a snapshot of a module initialiser would resume into the initialiser alone: the main
    # program would never run
    (tmp_path / "lib.harn").write_text(
        'let _s = __snapshot_exit("lib.json")\npub fn hi() { return "hi" }\n'
    )
    (tmp_path / "main.harn").write_text('import "./lib"\nprintln(hi())\n')
    p = harnpy("run", str(tmp_path / "main.harn"), cwd=tmp_path)
    no_traceback(p.stderr)
    assert p.returncode == 1
    assert "__snapshot_exit: only the main program can be snapshotted" in p.stderr
    assert not (tmp_path / "lib.json").exists()


def _failing_load(exc: BaseException) -> object:
    def load_main(self: Runtime, path: str, source: str) -> object:
        raise exc

    return load_main


def test_ctrl_c_while_loading_exits_130_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Runtime, "load_main", _failing_load(KeyboardInterrupt()))
    assert run_source("<-e>", "1", []) == 130
    assert capsys.readouterr().err == "harnpy: interrupted\n"


def test_an_internal_error_while_loading_is_e999(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HARNPY_DEBUG", raising=False)
    monkeypatch.setattr(Runtime, "load_main", _failing_load(ValueError("boom")))
    assert run_source("<-e>", "1", []) == 1
    err = capsys.readouterr().err
    assert err.startswith("error[E999]: internal error in harnpy: ValueError: boom\n")


def test_json_and_quiet_without_resume_are_usage_errors(tmp_path: Path) -> None:
    for flag in ("--json", "--quiet"):
        p = harnpy("run", flag, "-e", 'println("x")', cwd=tmp_path)
        assert p.returncode == 2
        assert p.stdout == ""
        assert f"{flag} applies to --resume SNAPSHOT only" in p.stderr
