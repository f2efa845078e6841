"""Input nested deeper than Python's stack allows is a diagnostic at every entry point, never
a Python traceback (issue: bad input never crashes).

``run``, ``check``, ``test``, ``repl`` and ``run --resume`` each get a program or a file nested
tens of thousands deep; each must exit with a Harn diagnostic (``E109`` where the nesting is in
the source, ``HARN-SUS-004`` for a snapshot file) and print no traceback.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.conftest import harnpy

DEEP = 20_000


def nested_interpolations(n: int) -> str:
    return "let d = " + '"${' * n + "1" + '}"' * n + "\nprintln(d)\n"


def deep_list(n: int) -> str:
    return "let d = " + "[" * n + "1" + "]" * n + "\nprintln(len(d))\n"


def assert_clean(proc: object, code: str) -> None:
    err = proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err, err[-2000:]
    assert "RecursionError" not in err, err[-2000:]
    assert f"error[{code}]" in err, err[-2000:]


def test_check_of_2400_nested_interpolations_is_e109(tmp_path: Path) -> None:
    prog = tmp_path / "interp.harn"
    prog.write_text(nested_interpolations(2400), encoding="utf-8")
    proc = harnpy("check", str(prog), env={"HARNPY_NO_CACHE": "1"})
    assert proc.returncode == 2
    assert_clean(proc, "E109")
    assert "interpolations nested more than" in proc.stderr
    # `run` of the same file says the same (before: run E109, check a traceback)
    proc = harnpy("run", str(prog), env={"HARNPY_NO_CACHE": "1"})
    assert proc.returncode == 2
    assert_clean(proc, "E109")


def test_run_and_check_of_a_list_nested_20000_deep_are_e109(tmp_path: Path) -> None:
    prog = tmp_path / "deep.harn"
    prog.write_text(deep_list(DEEP), encoding="utf-8")
    for command in ("run", "check"):
        proc = harnpy(command, str(prog), env={"HARNPY_NO_CACHE": "1"})
        assert proc.returncode == 2, (command, proc.stderr[-2000:])
        assert_clean(proc, "E109")


def test_harnpy_test_reports_a_deep_case_as_a_failure(tmp_path: Path) -> None:
    (tmp_path / "deep.harn").write_text(deep_list(DEEP), encoding="utf-8")
    (tmp_path / "deep.expected").write_text("1\n", encoding="utf-8")
    (tmp_path / "ok.harn").write_text('println("fine")\n', encoding="utf-8")
    (tmp_path / "ok.expected").write_text("fine\n", encoding="utf-8")
    proc = harnpy("test", str(tmp_path), "--timeout", "50", env={"HARNPY_NO_CACHE": "1"})
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-2000:]
    assert proc.returncode == 1
    assert "E109" in out
    assert "1 passed, 1 failed" in out


def test_repl_reports_a_deep_entry_and_goes_on(tmp_path: Path) -> None:
    entry = "let d = " + "[" * DEEP + "1" + "]" * DEEP
    proc = harnpy("repl", input=entry + '\nprintln("still here")\n')
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "error[E" in proc.stderr
    assert "still here" in proc.stdout


def test_resume_of_json_nested_31000_deep_is_refused_and_left_alone(tmp_path: Path) -> None:
    snap = tmp_path / "deep.json"
    snap.write_text("[" * 31_000 + "]" * 31_000 + "\n", encoding="utf-8")
    before = hashlib.sha256(snap.read_bytes()).hexdigest()
    proc = harnpy("run", "--resume", str(snap))
    assert proc.returncode in (1, 2)
    assert_clean(proc, "HARN-SUS-004")
    assert hashlib.sha256(snap.read_bytes()).hexdigest() == before
