"""``harnpy test conformance``, ``harnpy check`` and ``harnpy --version`` end to end."""

from __future__ import annotations

from pathlib import Path

from harnpy import __version__
from tests.conftest import harnpy


def _case(
    root: Path, name: str, source: str, expected: str | None = None, error: str | None = None
) -> None:
    (root / f"{name}.harn").write_text(source)
    if expected is not None:
        (root / f"{name}.expected").write_text(expected)
    if error is not None:
        (root / f"{name}.error").write_text(error)


def test_conformance_command_applies_the_case_rules(tmp_path: Path) -> None:
    _case(tmp_path, "ok", 'println("hi")\nprint("no newline")', expected="hi\nno newline\n\n")
    _case(tmp_path, "err", 'throw "fatal"', error="Thrown: fatal")
    _case(tmp_path, "regex", "let x = 1 / 0", error="re:Division by \\w+")
    _case(tmp_path, "wrong", "println(2)", expected="3")
    (tmp_path / "lib.harn").write_text("fn helper() { return 1 }\n")  # module, not a case
    res = harnpy("test", "conformance", str(tmp_path))
    assert res.returncode == 1
    assert res.stdout.splitlines()[-1] == "3 passed, 1 failed"
    assert "FAIL  wrong.harn: output differs" in res.stdout


def test_check_reports_every_static_error_with_location(tmp_path: Path) -> None:
    prog = tmp_path / "bad.harn"
    prog.write_text('let x = 1\nx = 2\nlet y: int = "s"\nnot_a_function(3)\n')
    res = harnpy("check", str(prog))
    assert res.returncode == 2
    assert f"{prog}:2:1: error[E204]" in res.stderr
    assert "'y' declared as int, but assigned string" in res.stderr
    assert "call target `not_a_function` is not defined or imported" in res.stderr
    ok = tmp_path / "ok.harn"
    ok.write_text("let x = 1\nprintln(x)\n")
    res = harnpy("check", str(ok))
    assert res.returncode == 0 and res.stdout.strip().endswith("ok")


def test_version_and_usage() -> None:
    res = harnpy("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"harnpy {__version__}"
    res = harnpy("run")
    assert res.returncode == 2 and "give a FILE" in res.stderr
    res = harnpy("run", "/no/such/file.harn")
    assert res.returncode == 2 and "cannot read" in res.stderr
